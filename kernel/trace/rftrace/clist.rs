// SPDX-License-Identifier: GPL-2.0

//! The C `list_head` inlines (include/linux/list.h) the core needs for
//! the lists C shares with it: sub-ops, probes, cached `:mod:` entries.

use core::ptr;
use kernel::bindings;

/// # Safety
///
/// `l` is valid.
pub(crate) unsafe fn list_init(l: *mut bindings::list_head) {
    // SAFETY: per the function's contract.
    unsafe {
        (*l).next = l;
        (*l).prev = l;
    }
}

/// # Safety
///
/// `new` is valid and not on a list; `head` is a valid list.
pub(crate) unsafe fn list_add(new: *mut bindings::list_head, head: *mut bindings::list_head) {
    // SAFETY: per the function's contract.
    unsafe {
        let next = (*head).next;
        (*next).prev = new;
        (*new).next = next;
        (*new).prev = head;
        (*head).next = new;
    }
}

/// # Safety
///
/// `e` is on a valid list.
pub(crate) unsafe fn list_del(e: *mut bindings::list_head) {
    // SAFETY: per the function's contract.
    unsafe {
        (*(*e).prev).next = (*e).next;
        (*(*e).next).prev = (*e).prev;
        list_init(e);
    }
}

/// # Safety
///
/// `l` is a valid list head, or one never initialised (all zero).
pub(crate) unsafe fn list_empty(l: *const bindings::list_head) -> bool {
    // SAFETY: per the function's contract.
    unsafe { (*l).next.is_null() || ptr::eq((*l).next, l) }
}

/// The entries of a list of `T` linked through the `list_head` at byte
/// offset `off`.
///
/// # Safety
///
/// `head` is a valid list of such entries that does not change while the
/// iterator is used.
pub(crate) unsafe fn list_entries<T>(
    head: *mut bindings::list_head,
    off: usize,
) -> impl Iterator<Item = *mut T> {
    // SAFETY: per the function's contract.
    let mut p = unsafe { (*head).next };
    core::iter::from_fn(move || {
        if p.is_null() || p == head {
            return None;
        }
        let e = p.cast::<u8>().wrapping_sub(off).cast::<T>();
        // SAFETY: `p` is a live node of the list.
        p = unsafe { (*p).next };
        Some(e)
    })
}
