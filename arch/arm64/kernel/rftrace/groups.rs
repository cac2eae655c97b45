// SPDX-License-Identifier: GPL-2.0

//! Site groups on arm64: where the generic core gives several ops a
//! group of their own (the sites that exactly those ops want), x86_64
//! makes a trampoline that calls each member; here the group's ops gets
//! a callback that does, [`group_call`], which `ftrace_caller` calls
//! through the sites' literals like any other ops' callback. Two ops on
//! a site then cost two calls, not a walk of the whole list with each
//! ops' filter looked up.
//!
//! A group's calls are a table ([`Calls`]) that the group's ops points
//! to (its `private`, which the core leaves to the arch layer for its own
//! group ops), made before the ops is published, pointed at each
//! member's current callback by [`refresh`] (`arch_ftrace_update_trampoline`:
//! a member's pid filter changed its callback), and freed by [`free`]
//! (`arch_ftrace_trampoline_free`) only once no site names the group and
//! the core waited for every CPU and task that could be inside it.

use crate::archif::Member;
use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::bindings;
use kernel::ffi::{c_int, c_ulong};
use kernel::prelude::*;

/// The most members of a group: the generic core's `GROUP_MEMBERS`.
const SLOTS: usize = 8;

/// One member: its callback (what its own site would call: C's
/// `ftrace_ops_get_func()`), which [`refresh`] may change while CPUs
/// call it, and its ops.
struct Call {
    func: AtomicUsize,
    ops: *mut bindings::ftrace_ops,
}

/// The calls of one group.
///
/// # Invariants
///
/// `calls[..n]` are the members, registered ops whose callbacks and ops
/// outlive the table (the generic core's group rules: a member that goes
/// first moves every site off the group and retires it); `n <= SLOTS`.
struct Calls {
    n: usize,
    calls: [Call; SLOTS],
}

/// A callback of an ops, as C calls it (`ftrace_func_t` without the
/// `Option`).
type Callback = unsafe extern "C" fn(
    c_ulong,
    c_ulong,
    *mut bindings::ftrace_ops,
    *mut bindings::ftrace_regs,
);

/// The callback of a group's ops: calls each member with its own ops,
/// the site, its parent and the frame, as its own site would.
///
/// # Safety
///
/// Called by `ftrace_caller` with `op` the group ops its site's literal
/// names, whose table the core keeps until no CPU can be here.
unsafe extern "C" fn group_call(
    ip: c_ulong,
    parent_ip: c_ulong,
    op: *mut bindings::ftrace_ops,
    fregs: *mut bindings::ftrace_regs,
) {
    // SAFETY: the group ops names its table, alive while a CPU may be
    // here (the contract); a table is written only before it is
    // published, and its callbacks atomically.
    let t = unsafe { &*(*op).private.cast::<Calls>() };
    for c in t.calls.iter().take(t.n) {
        let f = c.func.load(Ordering::Acquire);
        if f == 0 {
            continue;
        }
        // SAFETY: `f` is a member's callback of the C type, set by
        // `make` or `refresh` from `ftrace_ops_get_func()`; the member
        // and its ops are alive (the type's invariants), and the frame
        // is `ftrace_caller`'s, as the member's own site would pass it.
        unsafe { core::mem::transmute::<usize, Callback>(f)(ip, parent_ip, c.ops, fregs) }
    }
}
crate::nokprobe::nokprobe!(group_call);

/// The address of [`group_call`], which marks a group ops of this layer.
fn group_call_addr() -> usize {
    group_call as *const () as usize
}

/// Whether `ops` is a group ops this layer made.
///
/// # Safety
///
/// `ops` is a valid ops.
unsafe fn is_group(ops: *mut bindings::ftrace_ops) -> bool {
    // SAFETY: a valid ops (the contract); its callback is written before
    // it is published and never after, for a group.
    unsafe { (*ops).func }.is_some_and(|f| f as *const () as usize == group_call_addr())
}

/// Gives the group ops `ops` (the core's own, not yet published) the
/// callback that calls the `n` members, each as its own site would.
/// Returns 0, `-EINVAL` (no room for `n` or none), `-EBUSY` (it has
/// one), or `-ENOMEM`.
///
/// # Safety
///
/// `ops` is a valid ops, not published, and `members` points to `n`
/// members whose ops and callbacks outlive the group (the generic core's
/// group rules), under `ftrace_lock`.
pub(crate) unsafe fn make(
    ops: *mut bindings::ftrace_ops,
    members: *const Member,
    n: usize,
) -> c_int {
    if n == 0 || n > SLOTS {
        return EINVAL.to_errno();
    }
    // SAFETY: a valid ops (the contract).
    if unsafe { is_group(ops) } {
        return EBUSY.to_errno();
    }
    // SAFETY: `n` members (the contract).
    let members = unsafe { core::slice::from_raw_parts(members, n) };
    let calls = core::array::from_fn(|i| Call {
        func: AtomicUsize::new(members.get(i).map_or(0, |m| m.func as usize)),
        ops: members
            .get(i)
            .map_or(core::ptr::null_mut(), |m| m.ops as *mut bindings::ftrace_ops),
    });
    // INVARIANT: the members as the core gives them, `n <= SLOTS`.
    let Ok(t) = KBox::new(Calls { n, calls }, GFP_KERNEL) else {
        return ENOMEM.to_errno();
    };
    // SAFETY: the ops is not published (the contract): nothing reads
    // these fields yet; publishing it orders them before any reader.
    unsafe {
        (*ops).private = KBox::into_raw(t).cast();
        (*ops).func = Some(group_call);
    }
    0
}

/// Points the calls of group ops `ops` at what each member's own site
/// would call now; nothing for another ops.
///
/// # Safety
///
/// `ops` is a valid ops, under `ftrace_lock`.
pub(crate) unsafe fn refresh(ops: *mut bindings::ftrace_ops) {
    // SAFETY: a valid ops (the contract).
    if !unsafe { is_group(ops) } {
        return;
    }
    // SAFETY: a group ops of this layer names its table (`make`), which
    // only `free` takes away, under the same lock.
    let t = unsafe { &*(*ops).private.cast::<Calls>() };
    for c in t.calls.iter().take(t.n) {
        // SAFETY: a member, registered while the group is (the type's
        // invariants).
        let f = unsafe { bindings::ftrace_ops_get_func(c.ops) };
        c.func
            .store(f.map_or(0, |f| f as *const () as usize), Ordering::Release);
    }
}

/// Frees the calls of group ops `ops`; nothing for another ops.
///
/// # Safety
///
/// `ops` is a valid ops that no site names and no CPU or task can be
/// calling through (the core waited for that), under `ftrace_lock`.
pub(crate) unsafe fn free(ops: *mut bindings::ftrace_ops) {
    // SAFETY: a valid ops (the contract).
    if !unsafe { is_group(ops) } {
        return;
    }
    // SAFETY: the table `make` gave it, which nothing can read any more
    // (the contract); the ops keeps no pointer to it.
    unsafe {
        let t = core::mem::replace(&mut (*ops).private, core::ptr::null_mut());
        if !t.is_null() {
            drop(KBox::from_raw(t.cast::<Calls>()));
        }
        (*ops).func = Some(bindings::ftrace_stub);
    }
}
