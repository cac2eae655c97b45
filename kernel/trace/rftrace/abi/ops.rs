// SPDX-License-Identifier: GPL-2.0

//! The C entry points of the ops layer (`include/linux/ftrace.h`): registering
//! ops, their callbacks, the list dispatcher the trampolines call, direct
//! calls and the pid filter's question.
//!
//! Each is the exported symbol of a safe function of its module, with the
//! same typed parameters (the handle types whose invariants the C
//! prototype's contract gives: `OpsRef`, `GopsRef`, `TraceArray`, ...).

use crate::base::sys::{assert_held, to_errno, CoreGuard};
use crate::ops::registry::{Fregs, OpsRef, DIRECT_LOCK};
use kernel::bindings;
use kernel::ffi::{c_int, c_ulong, c_void};

/// [`crate::ops::assist::ftrace_ops_get_func`], for C.
#[no_mangle]
pub extern "C" fn ftrace_ops_get_func(ops: OpsRef<'_>) -> bindings::ftrace_func_t {
    crate::ops::assist::ftrace_ops_get_func(ops)
}

/// [`crate::ops::register::register_ftrace_function`], for C.
#[no_mangle]
pub extern "C" fn register_ftrace_function(ops: OpsRef<'_>) -> c_int {
    crate::ops::register::register_ftrace_function(ops)
}

/// [`crate::ops::register::unregister_ftrace_function`], for C.
#[no_mangle]
pub extern "C" fn unregister_ftrace_function(ops: OpsRef<'_>) -> c_int {
    crate::ops::register::unregister_ftrace_function(ops)
}

/// [`crate::ops::register::ftrace_free_filter`], for C.
#[no_mangle]
pub extern "C" fn ftrace_free_filter(ops: OpsRef<'_>) {
    crate::ops::register::ftrace_free_filter(ops)
}

/// [`crate::ops::dispatch::arch_ftrace_ops_list_func`], for C.
#[no_mangle]
pub extern "C" fn arch_ftrace_ops_list_func(
    ip: c_ulong,
    parent_ip: c_ulong,
    op: OpsRef<'_>,
    fregs: Fregs<'_>,
) {
    crate::ops::dispatch::arch_ftrace_ops_list_func(ip, parent_ip, op, fregs)
}
crate::base::nokprobe::nokprobe!(arch_ftrace_ops_list_func);

/// [`crate::ops::dispatch::ftrace_ops_test`], for C.
#[no_mangle]
pub extern "C" fn ftrace_ops_test(ops: OpsRef<'_>, ip: c_ulong, regs: *mut c_void) -> c_int {
    crate::ops::dispatch::ftrace_ops_test(ops, ip, regs)
}

/// [`crate::ops::direct::unregister_ftrace_direct`], for C.
#[no_mangle]
pub extern "C" fn unregister_ftrace_direct(
    ops: OpsRef<'_>,
    addr: c_ulong,
    free_filters: bool,
) -> c_int {
    crate::ops::direct::unregister_ftrace_direct(ops, addr, free_filters)
}

/// [`crate::ops::pidstate::ftrace_pids_enabled`], for C.
#[no_mangle]
pub extern "C" fn ftrace_pids_enabled(ops: OpsRef<'_>) -> bool {
    crate::ops::pidstate::ftrace_pids_enabled(ops)
}

/// Attaches the direct trampoline `target` to the functions of the filter
/// of `ops`.
///
/// # Safety
///
/// `target` is a direct trampoline: code that takes the traced
/// function's call as its own.
#[no_mangle]
pub unsafe extern "C" fn register_ftrace_direct(ops: OpsRef<'_>, target: c_ulong) -> c_int {
    let _d = DIRECT_LOCK.lock();
    to_errno(CoreGuard::with(|held, key| {
        crate::ops::direct::register_direct(held, key, ops, target)
    }))
}

/// Changes the direct trampoline of a registered direct ops.
///
/// # Safety
///
/// `addr` is a direct trampoline.
#[no_mangle]
pub unsafe extern "C" fn modify_ftrace_direct(ops: OpsRef<'_>, addr: c_ulong) -> c_int {
    let _d = DIRECT_LOCK.lock();
    to_errno(CoreGuard::with(|held, key| {
        crate::ops::direct::modify_direct(held, key, ops, addr)
    }))
}

/// [`modify_ftrace_direct`] for callers that hold the direct lock: an
/// ops' owner answering `share_with_direct` (BPF's trampoline update
/// inside `register_ftrace_function()`).
///
/// # Safety
///
/// `addr` is a direct trampoline; `direct_mutex` is held.
#[no_mangle]
pub unsafe extern "C" fn modify_ftrace_direct_nolock(ops: OpsRef<'_>, addr: c_ulong) -> c_int {
    assert_held(&DIRECT_LOCK);
    to_errno(CoreGuard::with(|held, key| {
        crate::ops::direct::modify_direct(held, key, ops, addr)
    }))
}
