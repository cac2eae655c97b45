// SPDX-License-Identifier: GPL-2.0

//! The registered ftrace_ops: their flags, first-use setup, filter sets,
//! and the list every CPU walks. Below everything that registers,
//! dispatches or plans.

use crate::clist::list_init;
use crate::hash::{self, FtraceHash};
use crate::sys::{ftrace_list_end, ftrace_ops_list, Guard};
use crate::view;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::bindings;
use kernel::ffi::c_ulong;

pub(crate) type Ops = bindings::ftrace_ops;

const fn fl(f: u32) -> c_ulong {
    f as c_ulong
}
pub(crate) const F_ENABLED: c_ulong = fl(bindings::FTRACE_OPS_FL_ENABLED);
pub(crate) const F_DYNAMIC: c_ulong = fl(bindings::FTRACE_OPS_FL_DYNAMIC);
pub(crate) const F_SAVE_REGS: c_ulong = fl(bindings::FTRACE_OPS_FL_SAVE_REGS);
pub(crate) const F_SAVE_REGS_IF: c_ulong = fl(bindings::FTRACE_OPS_FL_SAVE_REGS_IF_SUPPORTED);
pub(crate) const F_RECURSION: c_ulong = fl(bindings::FTRACE_OPS_FL_RECURSION);
pub(crate) const F_STUB: c_ulong = fl(bindings::FTRACE_OPS_FL_STUB);
pub(crate) const F_INITIALIZED: c_ulong = fl(bindings::FTRACE_OPS_FL_INITIALIZED);
pub(crate) const F_DELETED: c_ulong = fl(bindings::FTRACE_OPS_FL_DELETED);
pub(crate) const F_ADDING: c_ulong = fl(bindings::FTRACE_OPS_FL_ADDING);
pub(crate) const F_REMOVING: c_ulong = fl(bindings::FTRACE_OPS_FL_REMOVING);
pub(crate) const F_IPMODIFY: c_ulong = fl(bindings::FTRACE_OPS_FL_IPMODIFY);
pub(crate) const F_RCU: c_ulong = fl(bindings::FTRACE_OPS_FL_RCU);
pub(crate) const F_SUBOP: c_ulong = fl(bindings::FTRACE_OPS_FL_SUBOP);
pub(crate) const F_DIRECT: c_ulong = fl(bindings::FTRACE_OPS_FL_DIRECT);
pub(crate) const F_ALLOC_TRAMP: c_ulong = fl(bindings::FTRACE_OPS_FL_ALLOC_TRAMP);
pub(crate) const F_PERMANENT: c_ulong = fl(bindings::FTRACE_OPS_FL_PERMANENT);

/// Gives an ops its lock, sub-op list and hash pointer the first time the
/// core sees it.
///
/// # Safety
///
/// `ops` is valid; callers serialize (they hold `ftrace_lock`, or it is
/// early boot).
pub(crate) unsafe fn ops_init(ops: *mut Ops) {
    // SAFETY: per the function's contract.
    unsafe {
        if view::has(ops, F_INITIALIZED) {
            return;
        }
        crate::sys::mutex_init!(
            ptr::addr_of_mut!((*ops).local_hash.regex_lock),
            "ftrace_ops regex_lock"
        );
        list_init(ptr::addr_of_mut!((*ops).subop_list));
        (*ops).func_hash = ptr::addr_of_mut!((*ops).local_hash);
        view::set(ops, F_INITIALIZED);
    }
}

/// [`ops_init`] taking `ftrace_lock` itself.
///
/// # Safety
///
/// `ops` is valid; `ftrace_lock` is not held.
pub(crate) unsafe fn ops_init_locked(ops: *mut Ops) {
    let _g = Guard::lock();
    // SAFETY: per the function's contract; serialized by the lock.
    unsafe { ops_init(ops) };
}

/// A published pointer slot, read locklessly.
///
/// # Safety
///
/// `p` is a valid, aligned pointer slot.
pub(crate) unsafe fn slot<'a, T>(p: *mut *mut T) -> &'a AtomicPtr<T> {
    // SAFETY: per the function's contract; `AtomicPtr` has the layout of
    // a pointer.
    unsafe { AtomicPtr::from_ptr(p) }
}

/// The filter and notrace sets of `ops` (null: empty).
///
/// # Safety
///
/// `ops` is valid; the sets are used under RCU or `ftrace_lock`.
#[inline]
pub(crate) unsafe fn sets(ops: *const Ops) -> (*mut FtraceHash, *mut FtraceHash) {
    // SAFETY: per the function's contract.
    unsafe {
        let fh = (*ops).func_hash;
        if fh.is_null() {
            return (ptr::null_mut(), ptr::null_mut());
        }
        let f = slot(ptr::addr_of_mut!((*fh).filter_hash)).load(Ordering::Acquire);
        let n = slot(ptr::addr_of_mut!((*fh).notrace_hash)).load(Ordering::Acquire);
        (f.cast(), n.cast())
    }
}

/// Publishes `new` as the filter (or notrace) set of `ops` and returns the
/// old one, which the caller frees with [`hash::free_rcu`].
///
/// # Safety
///
/// `ftrace_lock` is held; `ops` is initialised.
pub(crate) unsafe fn set_hash(
    ops: *mut Ops,
    notrace: bool,
    new: *mut FtraceHash,
) -> *mut FtraceHash {
    // SAFETY: per the function's contract.
    unsafe {
        let fh = (*ops).func_hash;
        let p = if notrace {
            ptr::addr_of_mut!((*fh).notrace_hash)
        } else {
            ptr::addr_of_mut!((*fh).filter_hash)
        };
        slot(p).swap(new.cast(), Ordering::AcqRel).cast()
    }
}

/// Whether `ip` passes the sets of `ops`.
///
/// # Safety
///
/// As for [`sets`].
#[inline]
pub(crate) unsafe fn ops_wants(ops: *const Ops, ip: u64) -> bool {
    // SAFETY: per the function's contract.
    unsafe {
        let (f, n) = sets(ops);
        (hash::is_empty(f) || hash::contains(f, ip)) && !hash::contains(n, ip)
    }
}

/// The registered ops, newest first. Under `ftrace_lock`, or with
/// preemption off (an unregistered dynamic ops is freed only after every
/// CPU scheduled).
pub(crate) fn list() -> impl Iterator<Item = *mut Ops> {
    let end = ftrace_list_end.get();
    let mut p = ftrace_ops_list.load(Ordering::Acquire);
    core::iter::from_fn(move || {
        if p.is_null() || p == end {
            return None;
        }
        let cur = p;
        // SAFETY: a listed ops is valid; see above.
        p = unsafe { slot(ptr::addr_of_mut!((*cur).next)) }.load(Ordering::Acquire);
        Some(cur)
    })
}
