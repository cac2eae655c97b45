// SPDX-License-Identifier: GPL-2.0

//! The C entry points of the filter API: filters set by address, the
//! function probes, the filter commands and the func mapper.
//!
//! Each is the exported symbol of a safe function of its module, with the
//! same typed parameters (the handle types whose invariants the C
//! prototype's contract gives: `OpsRef`, `GopsRef`, `TraceArray`, ...).

use crate::base::ffi::CStrArg;
use crate::base::sys::TraceArray;
use crate::ops::clients::{Command, ProbeData, ProbeOps};
use crate::ops::registry::OpsRef;
use crate::sites::hash::Mapper;
use kernel::ffi::{c_int, c_ulong, c_void};

/// [`crate::filter::funcprobe::register_ftrace_function_probe`], for C.
#[no_mangle]
pub extern "C" fn register_ftrace_function_probe(
    glob: CStrArg<'_>,
    tr: Option<TraceArray>,
    probe_ops: Option<ProbeOps>,
    data: ProbeData,
) -> c_int {
    crate::filter::funcprobe::register_ftrace_function_probe(glob, tr, probe_ops, data)
}

/// [`crate::filter::funcprobe::unregister_ftrace_function_probe_func`], for C.
#[no_mangle]
pub extern "C" fn unregister_ftrace_function_probe_func(
    glob: CStrArg<'_>,
    tr: Option<TraceArray>,
    probe_ops: Option<ProbeOps>,
) -> c_int {
    crate::filter::funcprobe::unregister_ftrace_function_probe_func(glob, tr, probe_ops)
}

/// [`crate::filter::funcprobe::clear_ftrace_function_probes`], for C.
#[no_mangle]
pub extern "C" fn clear_ftrace_function_probes(tr: Option<TraceArray>) {
    crate::filter::funcprobe::clear_ftrace_function_probes(tr)
}

/// [`crate::filter::api::ftrace_set_filter_ip`], for C.
#[no_mangle]
pub extern "C" fn ftrace_set_filter_ip(
    ops: OpsRef<'_>,
    ip: c_ulong,
    remove: c_int,
    reset: c_int,
) -> c_int {
    crate::filter::api::ftrace_set_filter_ip(ops, ip, remove, reset)
}

/// [`crate::filter::api::ftrace_ops_set_global_filter`], for C.
#[no_mangle]
pub extern "C" fn ftrace_ops_set_global_filter(ops: OpsRef<'_>) {
    crate::filter::api::ftrace_ops_set_global_filter(ops)
}

/// [`crate::filter::api::ftrace_set_early_filter`], for C.
#[no_mangle]
pub extern "C" fn ftrace_set_early_filter(ops: OpsRef<'_>, buf: CStrArg<'_>, enable: c_int) {
    crate::filter::api::ftrace_set_early_filter(ops, buf, enable)
}

/// [`crate::filter::mapper::allocate_ftrace_func_mapper`], for C.
#[no_mangle]
pub extern "C" fn allocate_ftrace_func_mapper() -> *mut Mapper {
    crate::filter::mapper::allocate_ftrace_func_mapper()
}

/// [`crate::filter::mapper::ftrace_func_mapper_find_ip`], for C.
#[no_mangle]
pub extern "C" fn ftrace_func_mapper_find_ip(m: Option<&Mapper>, ip: c_ulong) -> *mut *mut c_void {
    crate::filter::mapper::ftrace_func_mapper_find_ip(m, ip)
}

/// [`crate::filter::mapper::ftrace_func_mapper_add_ip`], for C.
#[no_mangle]
pub extern "C" fn ftrace_func_mapper_add_ip(
    m: Option<&Mapper>,
    ip: c_ulong,
    data: *mut c_void,
) -> c_int {
    crate::filter::mapper::ftrace_func_mapper_add_ip(m, ip, data)
}

/// [`crate::filter::mapper::ftrace_func_mapper_remove_ip`], for C.
#[no_mangle]
pub extern "C" fn ftrace_func_mapper_remove_ip(m: Option<&Mapper>, ip: c_ulong) -> *mut c_void {
    crate::filter::mapper::ftrace_func_mapper_remove_ip(m, ip)
}

/// [`crate::filter::probe::register_ftrace_command`], for C.
#[no_mangle]
pub extern "C" fn register_ftrace_command(cmd: Option<Command>) -> c_int {
    crate::filter::probe::register_ftrace_command(cmd)
}

/// [`crate::filter::probe::unregister_ftrace_command`], for C.
#[no_mangle]
pub extern "C" fn unregister_ftrace_command(cmd: Option<Command>) -> c_int {
    crate::filter::probe::unregister_ftrace_command(cmd)
}
