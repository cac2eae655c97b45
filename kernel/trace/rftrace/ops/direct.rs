// SPDX-License-Identifier: GPL-2.0

//! The direct-call API: an ops whose sites call a trampoline of its
//! owner (BPF) directly.

use crate::base::sys::{to_errno, CoreGuard, Held, StateKey};
use crate::ops::arch::Target;
use crate::ops::register::{ftrace_free_filter, shutdown, startup};
use crate::ops::registry::{
    c_callback, list, ops_fn, Fregs, OpsCallback, OpsRef, DIRECT_LOCK, F_DIRECT, F_ENABLED,
    F_IPMODIFY, F_SAVE_ARGS,
};
use crate::ops::update::{own_sites, retarget_slot, update_scope};
use kernel::bindings;
use kernel::ffi::{c_int, c_ulong};
use kernel::prelude::*;

/// The callback of a direct ops on a site it shares: makes the shared
/// trampoline return into the ops' direct trampoline (the ops saves
/// args, so the list dispatcher calls it from the full-regs trampoline
/// where the architecture has one).
struct CallDirect;

impl OpsCallback for CallDirect {
    #[inline(always)]
    fn call(_ip: c_ulong, _parent_ip: c_ulong, op: OpsRef<'_>, fregs: Fregs<'_>) {
        let a = op.direct_call();
        if a != 0 {
            fregs.set_direct_caller(a);
        }
    }
}
crate::base::nokprobe::nokprobe!(c_callback::<CallDirect>);

/// [`register_ftrace_direct`] with its locks held (the direct lock too).
pub(crate) fn register_direct(
    held: &Held,
    key: &mut StateKey,
    ops: OpsRef<'_>,
    target: c_ulong,
) -> Result {
    ops.init(held);
    if ops.has(F_ENABLED) || target == 0 {
        return Err(EINVAL);
    }
    let (f, _) = ops.sets(held);
    if f.is_empty() {
        return Err(EINVAL);
    }
    // One pass over the functions: one direct trampoline per function
    // (`busy`), and whether an IPMODIFY ops redirects any of them
    // (`shared`).
    let (mut busy, mut shared) = (false, false);
    // The direct ops of a function are found in the table by address,
    // not by asking each registered one (they come last in the list).
    for ip in f.ips() {
        busy |=
            crate::ops::directmap::holder(held, ip).is_some_and(|d| d != ops && d.wants(held, ip));
        shared |= list(held)
            .take_while(|x| !x.has(F_DIRECT))
            .any(|x| x != ops && x.has(F_IPMODIFY) && x.wants(held, ip));
    }
    if busy {
        return Err(EBUSY);
    }
    // A function an IPMODIFY ops redirects is shared only if the direct
    // ops' owner agrees (`ENABLE_SHARE_IPMODIFY_SELF`; BPF answers EAGAIN,
    // rebuilds its trampoline to call the redirected function and
    // registers again), else refused, as in C. One call does for all such
    // functions: the answer is about the ops.
    if shared {
        ops.ask(bindings::ftrace_ops_cmd_FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_SELF)?;
    }
    // Not registered yet (checked above): no dispatcher reads it.
    ops.set_func(ops_fn::<CallDirect>());
    ops.set_trampoline(held, Target::regs().addr(), 0);
    ops.set_direct_call(held, target);
    ops.set(F_DIRECT | F_SAVE_ARGS);
    // Found by its functions before it is published (the list
    // dispatcher looks for it there).
    let r = crate::ops::directmap::add(held, ops).and_then(|()| {
        startup(held, key, ops).inspect_err(|_| {
            crate::ops::directmap::remove(held, ops);
            // A CPU may have found it in the table before that, and its
            // owner frees it on the error.
            crate::ops::arch::wait_trampolines_left();
        })
    });
    if r.is_err() {
        ops.clear(F_DIRECT);
        ops.set_direct_call(held, 0);
        ops.set_trampoline(held, 0, 0);
    }
    r
}

/// Detaches a direct ops.
pub(crate) fn unregister_ftrace_direct(
    ops: OpsRef<'_>,
    _addr: c_ulong,
    free_filters: bool,
) -> c_int {
    let op = ops;
    let r = {
        let _d = DIRECT_LOCK.lock();
        let mut g = CoreGuard::lock();
        let (held, key) = g.parts();
        if !op.has(F_ENABLED) || !op.has(F_DIRECT) {
            return EINVAL.to_errno();
        }
        // Out of the table before it leaves the list: the waits of its
        // shutdown cover the CPUs that found it there.
        crate::ops::directmap::remove(held, op);
        let r = shutdown(held, key, op);
        op.clear(F_DIRECT);
        op.set_direct_call(held, 0);
        op.set_trampoline(held, 0, 0);
        r
    };
    if free_filters {
        // Unregistered now.
        ftrace_free_filter(op);
    }
    to_errno(r)
}

/// Points the direct ops `ops` at the direct trampoline `target`: its
/// sites alone call `target` from the next batch on (each site changes
/// with int3 from one call to the other, so a CPU runs either); sites it
/// shares go through the full-regs trampoline, which reads the ops'
/// `direct_call` at every call. The old trampoline must stay until this
/// returns (the caller frees it after).
pub(crate) fn modify_direct(
    held: &Held,
    key: &mut StateKey,
    ops: OpsRef<'_>,
    target: c_ulong,
) -> Result {
    let (flags, old) = (ops.flags(), ops.direct_call());
    if flags & F_ENABLED == 0 || flags & F_DIRECT == 0 || target == 0 {
        return Err(EINVAL);
    }
    let was = Target::direct_of(ops);
    // Read locklessly by `call_direct_funcs`.
    ops.set_direct_call(held, target);
    let now = Target::direct_of(ops);
    // The plan sees the sites call `old` and moves them to `target`.
    retarget_slot(key, ops, now, was);
    if let Err(e) = update_scope(held, key, &own_sites(held, ops)) {
        // Nothing was written (planning failed): back to the old target.
        ops.set_direct_call(held, old);
        retarget_slot(key, ops, was, Target::NOP);
        return Err(e);
    }
    retarget_slot(key, ops, now, Target::NOP);
    Ok(())
}
