// SPDX-License-Identifier: GPL-2.0

//! The C entry points of the tracefs files: the filter files of an ops,
//! the pid files of a trace array, the profiler's graph-time option.
//!
//! Each is the exported symbol of a safe function of its module, with the
//! same typed parameters (the handle types whose invariants the C
//! prototype's contract gives: `OpsRef`, `GopsRef`, `TraceArray`, ...).

use crate::base::sys::TraceArray;
use crate::ops::registry::OpsRef;
use kernel::tracefs::Dir;

/// [`crate::fs::filterfile::ftrace_create_filter_files`], for C.
#[no_mangle]
pub extern "C" fn ftrace_create_filter_files(tr: Option<TraceArray>, parent: Dir) {
    crate::fs::filterfile::ftrace_create_filter_files(tr, parent)
}

/// [`crate::fs::filterfile::ftrace_destroy_filter_files`], for C.
#[no_mangle]
pub extern "C" fn ftrace_destroy_filter_files(ops: OpsRef<'_>) {
    crate::fs::filterfile::ftrace_destroy_filter_files(ops)
}

/// [`crate::fs::profile::ftrace_graph_graph_time_control`], for C.
#[no_mangle]
pub extern "C" fn ftrace_graph_graph_time_control(enable: bool) {
    crate::fs::profile::ftrace_graph_graph_time_control(enable)
}

/// [`crate::fs::pid::ftrace_pid_follow_fork`], for C.
#[no_mangle]
pub extern "C" fn ftrace_pid_follow_fork(tr: Option<TraceArray>, enable: bool) {
    crate::fs::pid::ftrace_pid_follow_fork(tr, enable)
}

/// [`crate::fs::pid::ftrace_clear_pids`], for C.
#[no_mangle]
pub extern "C" fn ftrace_clear_pids(tr: Option<TraceArray>) {
    crate::fs::pid::ftrace_clear_pids(tr)
}

/// [`crate::fs::pid::ftrace_init_tracefs`], for C.
#[no_mangle]
pub extern "C" fn ftrace_init_tracefs(tr: Option<TraceArray>, d: Dir) {
    crate::fs::pid::ftrace_init_tracefs(tr, d)
}
