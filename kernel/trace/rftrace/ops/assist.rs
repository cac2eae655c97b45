// SPDX-License-Identifier: GPL-2.0

//! What a trampoline dedicated to one ops calls (its own, or a member's
//! call in a site group): the ops' callback, or the assist callback that
//! wraps it for an ops asking the core for recursion protection or RCU.
//! Hot path: no locks, no allocation, nothing traced or kprobed.

use crate::base::task::guarded as recursion_guarded;
use crate::logic::recursion;
use crate::ops::registry::{c_callback, ops_fn, Fregs, OpsCallback, OpsRef, F_RCU, F_RECURSION};
use kernel::bindings;
use kernel::ffi::c_ulong;

/// Calls the callback of `ops` under the list's recursion bits (as C's
/// assist function: the callbacks take the function bits), preemption off
/// while held. Hot path.
#[inline(always)]
fn guarded_call(ip: c_ulong, parent_ip: c_ulong, ops: OpsRef<'_>, fregs: Fregs<'_>) {
    recursion_guarded(recursion::LIST_START, |_| {
        ops.call(false, ip, parent_ip, fregs)
    });
}

/// The callback that wraps an ops' callback that asks for recursion
/// protection or needs RCU watching. The RCU test is out of line: the
/// common path makes one call, and keeps only the recursion word and bit
/// across it.
struct AssistFunc;

impl OpsCallback for AssistFunc {
    #[inline(always)]
    fn call(ip: c_ulong, parent_ip: c_ulong, ops: OpsRef<'_>, fregs: Fregs<'_>) {
        if ops.has(F_RCU) {
            assist_rcu(ip, parent_ip, ops, fregs);
        } else {
            guarded_call(ip, parent_ip, ops, fregs);
        }
    }
}
crate::base::nokprobe::nokprobe!(c_callback::<AssistFunc>);

/// The assist of an ops that needs RCU watching: not called where RCU
/// does not watch (`rcu_is_watching()` is notrace, callable anywhere).
#[cold]
#[inline(never)]
fn assist_rcu(ip: c_ulong, parent_ip: c_ulong, ops: OpsRef<'_>, fregs: Fregs<'_>) {
    if kernel::sync::rcu::is_watching() {
        guarded_call(ip, parent_ip, ops, fregs);
    }
}
crate::base::nokprobe::nokprobe!(assist_rcu);

/// What a trampoline dedicated to `ops` calls.
pub(crate) fn ftrace_ops_get_func(ops: OpsRef<'_>) -> bindings::ftrace_func_t {
    // RECURSION asks the core for recursion protection.
    if ops.has(F_RECURSION | F_RCU) {
        ops_fn::<AssistFunc>()
    } else {
        ops.func()
    }
}
