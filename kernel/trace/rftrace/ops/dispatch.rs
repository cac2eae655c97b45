// SPDX-License-Identifier: GPL-2.0

//! The list dispatcher the shared trampolines call, and the lookups of
//! the trampolines the ops own. Hot path: no locks, no allocation,
//! nothing traced or kprobed.

use crate::base::sys::{Keeps, NoPreempt, PreemptOff};
use crate::base::task::guarded as recursion_guarded;
use crate::logic::recursion;
use crate::ops::registry::{list, needs_regs, Fregs, OpsRef, F_DIRECT};
use kernel::ffi::{c_int, c_ulong, c_void};

/// The callback of the shared trampolines when several ops, or an ops
/// without its own trampoline, trace a site: calls every registered ops
/// that wants `ip`. Installed by its C name (`update::set_list_func`).
#[inline(always)]
pub(crate) fn arch_ftrace_ops_list_func(
    ip: c_ulong,
    parent_ip: c_ulong,
    _op: OpsRef<'_>,
    fregs: Fregs<'_>,
) {
    // The list's own recursion bits, as C's list function (the callbacks
    // take the function bits); preemption off while held.
    recursion_guarded(recursion::LIST_START, |np| {
        // A full `pt_regs` is there only when the full-regs trampoline saved
        // it.
        let has_regs = fregs.has_pt_regs();
        let visit = |op: OpsRef<'_>| {
            if op.callable(has_regs) && op.wants(np, ip as u64) {
                op.call(false, ip, parent_ip, fregs);
            }
        };
        // The direct ops come last: the function's own is found by its
        // address, not by asking each of them.
        list(np).take_while(|op| !op.has(F_DIRECT)).for_each(&visit);
        if let Some(op) = crate::ops::directmap::find(np, ip as u64) {
            visit(op);
        }
    });
}
crate::base::nokprobe::nokprobe!(arch_ftrace_ops_list_func);

/// Whether `ops` traces `ip` (fgraph.c asks this of its sub-ops).
pub(crate) fn ftrace_ops_test(ops: OpsRef<'_>, ip: c_ulong, regs: *mut c_void) -> c_int {
    let p = PreemptOff::new();
    c_int::from(ops_test(p.token(), ops, ip as u64, !regs.is_null()))
}

/// Whether `ops` traces `ip`, asked with or without a full `pt_regs`
/// (`regs`): what the graph entry asks of its graph ops. Hot path.
#[inline(always)]
pub(crate) fn ops_test(k: &impl Keeps, ops: OpsRef<'_>, ip: u64, regs: bool) -> bool {
    (regs || !needs_regs(ops.flags())) && ops.wants(k, ip)
}

/// The registered ops, or the group, whose own trampoline holds `a`.
pub(crate) fn trampoline_ops(np: &NoPreempt, a: u64) -> Option<OpsRef<'_>> {
    list(np)
        .find(|op| {
            let (at, size) = op.trampoline();
            at != 0 && a >= at && a - at < size
        })
        .or_else(|| crate::ops::groups::trampoline_ops(np, a))
}

/// The `n`th (from 0) trampoline of a registered ops or a group, for
/// kallsyms.
pub(crate) fn nth_trampoline(np: &NoPreempt, n: usize) -> Option<(u64, u64)> {
    list(np)
        .map(OpsRef::trampoline)
        .filter(|&(at, _)| at != 0)
        .chain(crate::ops::groups::trampolines(np))
        .nth(n)
}
