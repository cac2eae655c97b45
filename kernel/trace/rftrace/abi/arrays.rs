// SPDX-License-Identifier: GPL-2.0

//! The C entry points of the trace arrays: the ops of an array's function
//! tracer, and the top-level tracefs files of the core.

use crate::base::sys::{CoreGuard, TraceArray};
use core::ptr;
use kernel::bindings;

/// The ops of a trace array's function tracer calls `func`.
#[no_mangle]
pub extern "C" fn ftrace_init_array_ops(tr: Option<TraceArray>, func: bindings::ftrace_func_t) {
    let Some(ops) = tr.and_then(TraceArray::ops_ref) else {
        return;
    };
    ops.set_func(func);
    let g = CoreGuard::lock();
    ops.set_private(g.held(), tr.map_or(ptr::null_mut(), TraceArray::as_ptr));
}

/// Puts a trace array's ops back to the stub.
#[no_mangle]
pub extern "C" fn ftrace_reset_array_ops(tr: Option<TraceArray>) {
    if let Some(ops) = tr.and_then(TraceArray::ops_ref) {
        // Just unregistered: a dispatcher may still read it.
        ops.set_func(Some(bindings::ftrace_stub));
    }
}

/// Creates the top-level files of the core (C passes the global trace
/// array and its directory).
#[no_mangle]
pub extern "C" fn ftrace_init_tracefs_toplevel(_tr: Option<TraceArray>, d: kernel::tracefs::Dir) {
    crate::fs::files::create_listings(d);
    // The top-level filter files belong to `global_ops` (no trace array).
    crate::fs::filterfile::ftrace_create_filter_files(None, d);
    crate::fs::graphfile::create_graph_files(d);
    crate::fs::profile::init(d);
    crate::abi::entry::register_sysctl();
}

/// A new trace array: the core keeps its probes and cached entries in
/// lists of its own, so there is nothing to set up.
#[no_mangle]
pub extern "C" fn ftrace_init_trace_array(_tr: Option<TraceArray>) {}
