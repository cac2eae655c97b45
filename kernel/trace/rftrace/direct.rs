// SPDX-License-Identifier: GPL-2.0

//! The direct-call API: an ops whose sites call a trampoline of its
//! owner (BPF) directly.

use crate::hash;
use crate::ops::{ftrace_free_filter, shutdown, startup, DIRECT_LOCK};
use crate::registry::*;
use crate::sys::{addr, assert_held, to_errno, Guard, Held};
use crate::update::{own_sites, slot_of, update_scope, SLOTS};
use crate::view;
use core::ptr;
use kernel::bindings;
use kernel::error::to_result;
use kernel::ffi::{c_int, c_ulong};
use kernel::prelude::*;

/// The callback of a direct ops on a site it shares: makes the full-regs
/// trampoline return into the ops' direct trampoline.
///
/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn call_direct_funcs(
    _ip: c_ulong,
    _parent_ip: c_ulong,
    op: *mut Ops,
    fregs: *mut bindings::ftrace_regs,
) {
    // SAFETY: the list dispatcher passes a live ops and, since the ops
    // saves regs, the full `pt_regs` frame of ftrace_regs_caller.
    unsafe {
        let a = ptr::read_volatile(ptr::addr_of!((*op).direct_call));
        if a != 0 && !fregs.is_null() {
            (*fregs.cast::<bindings::pt_regs>()).orig_ax = a;
        }
    }
}
crate::nokprobe::nokprobe!(call_direct_funcs);

/// Attaches the direct trampoline `target` to the functions of the filter
/// of `ops`.
///
/// # Safety
///
/// `ops` is valid until unregistered; `addr` is a direct trampoline.
#[no_mangle]
pub unsafe extern "C" fn register_ftrace_direct(ops: *mut Ops, target: c_ulong) -> c_int {
    let _d = Guard::of(DIRECT_LOCK.get());
    let _g = Guard::lock();
    // SAFETY: per the function's contract; both locks held.
    to_errno(unsafe { register_direct(ops, target) })
}

/// [`register_ftrace_direct`] with its locks held.
///
/// # Safety
///
/// As for [`register_ftrace_direct`]; the direct lock and `ftrace_lock`
/// are held.
unsafe fn register_direct(ops: *mut Ops, target: c_ulong) -> Result {
    // SAFETY: per the function's contract.
    unsafe {
        ops_init(ops);
        if view::has(ops, F_ENABLED) || target == 0 {
            return Err(EINVAL);
        }
        let (f, _) = sets(ops);
        if hash::is_empty(f) {
            return Err(EINVAL);
        }
        // One pass over the functions: one direct trampoline per function
        // (`busy`), and whether an IPMODIFY ops redirects any of them
        // (`shared`).
        let (mut busy, mut shared) = (false, false);
        hash::for_each(f, |e| {
            let ip = (*e).ip as u64;
            for x in list(Held::assume()).filter(|x| x.as_ptr() != ops && x.wants(ip)) {
                busy |= x.has(F_DIRECT);
                shared |= x.has(F_IPMODIFY);
            }
        });
        if busy {
            return Err(EBUSY);
        }
        // A function an IPMODIFY ops redirects is shared only if the
        // direct ops' owner agrees (`ENABLE_SHARE_IPMODIFY_SELF`; BPF
        // answers EAGAIN, rebuilds its trampoline to call the redirected
        // function and registers again), else refused, as in C. One call
        // does for all such functions: the answer is about the ops.
        if shared {
            let Some(ask) = (*ops).ops_func else {
                return Err(EBUSY);
            };
            to_result(ask(
                ops,
                bindings::ftrace_ops_cmd_FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_SELF,
            ))?;
        }
        // Not registered yet (checked above): no dispatcher reads it.
        view::set_func(ops, Some(call_direct_funcs));
        view::set_trampoline(ops, addr(bindings::ftrace_regs_caller), 0);
        (*ops).direct_call = target;
        view::set(ops, F_DIRECT | F_SAVE_REGS);
        let r = startup(ops);
        if r.is_err() {
            view::clear(ops, F_DIRECT);
            (*ops).direct_call = 0;
            view::set_trampoline(ops, 0, 0);
        }
        r
    }
}

/// Detaches a direct ops.
///
/// # Safety
///
/// `ops` is valid.
#[no_mangle]
pub unsafe extern "C" fn unregister_ftrace_direct(
    ops: *mut Ops,
    _addr: c_ulong,
    free_filters: bool,
) -> c_int {
    let r = {
        let _d = Guard::of(DIRECT_LOCK.get());
        let _g = Guard::lock();
        // SAFETY: per the function's contract; `ftrace_lock` held.
        unsafe {
            if !view::has(ops, F_ENABLED) || !view::has(ops, F_DIRECT) {
                return EINVAL.to_errno();
            }
            let r = shutdown(ops);
            view::clear(ops, F_DIRECT);
            (*ops).direct_call = 0;
            view::set_trampoline(ops, 0, 0);
            r
        }
    };
    if free_filters {
        // SAFETY: per the function's contract; unregistered now.
        unsafe { ftrace_free_filter(ops) };
    }
    to_errno(r)
}

/// Points the direct ops `ops` at the direct trampoline `target`: its
/// sites alone call `target` from the next batch on (each site changes
/// with int3 from one call to the other, so a CPU runs either); sites it
/// shares go through the full-regs trampoline, which reads the ops'
/// `direct_call` at every call. The old trampoline must stay until this
/// returns (the caller frees it after).
///
/// # Safety
///
/// `ops` is valid; `ftrace_lock` is held.
unsafe fn modify_direct(ops: *mut Ops, target: c_ulong) -> Result {
    // No reference to the ops is held across the update: the plan reads
    // every registered ops, this one included. Its fields are read and
    // written through the pointer.
    // SAFETY: per the function's contract.
    let (flags, old) = unsafe { (view::flags(ops), (*ops).direct_call) };
    if flags & F_ENABLED == 0 || flags & F_DIRECT == 0 || target == 0 {
        return Err(EINVAL);
    }
    // Read locklessly by `call_direct_funcs`.
    // SAFETY: a valid field of a live ops.
    let set_call =
        |to: c_ulong| unsafe { ptr::write_volatile(ptr::addr_of_mut!((*ops).direct_call), to) };
    set_call(target);
    // SAFETY: `ftrace_lock` is held (the contract).
    let slot = unsafe { slot_of(ops) } as usize;
    let retarget = |tramp: u64, was: u64| {
        if let Some(i) = slot.checked_sub(1) {
            // SAFETY: `ftrace_lock` is held; no other reference to the
            // slots lives here.
            let x = &mut unsafe { SLOTS.get() }[i];
            x.tramp = tramp;
            x.was = was;
        }
    };
    // The plan sees the sites call `old` and moves them to `target`.
    retarget(target as u64, old as u64);
    // SAFETY: as above.
    let r = unsafe { update_scope(&own_sites(ops)) };
    if let Err(e) = r {
        // Nothing was written (planning failed): back to the old target.
        set_call(old);
        retarget(old as u64, 0);
        return Err(e);
    }
    retarget(target as u64, 0);
    Ok(())
}

/// Changes the direct trampoline of a registered direct ops.
///
/// # Safety
///
/// `ops` is a valid ops.
#[no_mangle]
pub unsafe extern "C" fn modify_ftrace_direct(ops: *mut Ops, addr: c_ulong) -> c_int {
    let _d = Guard::of(DIRECT_LOCK.get());
    // SAFETY: the same contract; the direct lock is held.
    unsafe { modify_ftrace_direct_nolock(ops, addr) }
}

/// [`modify_ftrace_direct`] for callers that hold the direct lock: an
/// ops' owner answering [`share_with_direct`] (BPF's trampoline update
/// inside `register_ftrace_function()`).
///
/// # Safety
///
/// `ops` is a valid ops; the direct lock is held.
#[no_mangle]
pub unsafe extern "C" fn modify_ftrace_direct_nolock(ops: *mut Ops, addr: c_ulong) -> c_int {
    assert_held(DIRECT_LOCK.get());
    let _g = Guard::lock();
    // SAFETY: per the function's contract; `ftrace_lock` held.
    to_errno(unsafe { modify_direct(ops, addr) })
}
