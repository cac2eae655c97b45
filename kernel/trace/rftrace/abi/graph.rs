// SPDX-License-Identifier: GPL-2.0

//! The C entry points of the graph core: the entry and return the
//! trampolines call, the graph ops' registration, and the fgraph API of
//! `include/linux/ftrace.h`.
//!
//! Each is the exported symbol of a safe function of its module, with the
//! same typed parameters (the handle types whose invariants the C
//! prototype's contract gives: `OpsRef`, `GopsRef`, `TraceArray`, ...).

use crate::base::task::TaskRef;
use crate::graph::fgstacks::ftrace_graph_active;
use crate::graph::gops::{Gops, GopsRef};
use crate::graph::shadow::Fresh;
use crate::ops::registry::OpsRef;
use core::ptr;
use core::sync::atomic::Ordering;
use kernel::bindings;
use kernel::ffi::{c_int, c_ulong, c_void};

/// [`crate::graph::fgraph::rftrace_graph_entry`], for C.
#[no_mangle]
pub extern "C" fn rftrace_graph_entry(func: c_ulong, parent: &mut c_ulong, retp: c_ulong) {
    crate::graph::fgraph::rftrace_graph_entry(func, parent, retp)
}
// Defined as the arch layer declares it (archif.rs).
const _: crate::ops::archif::GraphEntryFn = rftrace_graph_entry;

/// [`crate::graph::fgraph::function_graph_enter`], for C.
#[no_mangle]
pub extern "C" fn function_graph_enter(
    ret: c_ulong,
    func: c_ulong,
    frame_pointer: c_ulong,
    retp: *mut c_ulong,
) -> c_int {
    crate::graph::fgraph::function_graph_enter(ret, func, frame_pointer, retp)
}
crate::base::nokprobe::nokprobe!(function_graph_enter);

/// [`crate::graph::fgraph::ftrace_return_to_handler`], for the
/// architecture's `return_to_handler`.
///
/// # Safety
///
/// Called by `return_to_handler` alone, with its frame.
#[no_mangle]
pub unsafe extern "C" fn ftrace_return_to_handler(fregs: *const bindings::ftrace_regs) -> c_ulong {
    // SAFETY: from `return_to_handler`, with its frame (the contract).
    unsafe { crate::graph::fgraph::ftrace_return_to_handler(fregs) }
}
crate::base::nokprobe::nokprobe!(ftrace_return_to_handler);

/// [`crate::graph::fgraph::fgraph_reserve_data`], for C.
#[no_mangle]
pub extern "C" fn fgraph_reserve_data(idx: c_int, size_bytes: c_int) -> *mut c_void {
    crate::graph::fgraph::fgraph_reserve_data(idx, size_bytes)
}

/// [`crate::graph::fgraph::fgraph_retrieve_data`], for C.
#[no_mangle]
pub extern "C" fn fgraph_retrieve_data(idx: c_int, size_bytes: Option<&mut c_int>) -> *mut c_void {
    crate::graph::fgraph::fgraph_retrieve_data(idx, size_bytes)
}

/// [`crate::graph::fgraph::fgraph_get_task_var`], for C.
#[no_mangle]
pub extern "C" fn fgraph_get_task_var(g: GopsRef<'_>) -> *mut c_ulong {
    crate::graph::fgraph::fgraph_get_task_var(g)
}

/// [`crate::graph::fgraph::ftrace_graph_get_ret_stack`], for C.
#[no_mangle]
pub extern "C" fn ftrace_graph_get_ret_stack(
    t: TaskRef<'_>,
    idx: c_int,
) -> *mut bindings::ftrace_ret_stack {
    crate::graph::fgraph::ftrace_graph_get_ret_stack(t, idx)
}

/// [`crate::graph::fgraph::ftrace_graph_ret_addr`], for C.
#[no_mangle]
pub extern "C" fn ftrace_graph_ret_addr(
    t: TaskRef<'_>,
    idx: Option<&mut c_int>,
    ret: c_ulong,
    retp: *mut c_ulong,
) -> c_ulong {
    crate::graph::fgraph::ftrace_graph_ret_addr(t, idx, ret, retp)
}

/// [`crate::graph::fgraph::ftrace_graph_stop`], for C.
#[no_mangle]
pub extern "C" fn ftrace_graph_stop() {
    crate::graph::fgraph::ftrace_graph_stop()
}

/// [`crate::graph::fgraph::ftrace_graph_sleep_time_control`], for C.
#[no_mangle]
pub extern "C" fn ftrace_graph_sleep_time_control(enable: bool) {
    crate::graph::fgraph::ftrace_graph_sleep_time_control(enable)
}

/// [`crate::graph::fgraph::ftrace_graph_entry_stub`], for C.
#[no_mangle]
pub extern "C" fn ftrace_graph_entry_stub(
    trace: *mut bindings::ftrace_graph_ent,
    gops: *mut Gops,
) -> c_int {
    crate::graph::fgraph::ftrace_graph_entry_stub(trace, gops)
}

/// [`crate::graph::fgraph::register_ftrace_graph`], for C.
#[no_mangle]
pub extern "C" fn register_ftrace_graph(g: GopsRef<'_>) -> c_int {
    crate::graph::fgraph::register_ftrace_graph(g)
}

/// [`crate::graph::fgraph::unregister_ftrace_graph`], for C.
#[no_mangle]
pub extern "C" fn unregister_ftrace_graph(g: GopsRef<'_>) {
    crate::graph::fgraph::unregister_ftrace_graph(g)
}

/// [`crate::graph::fgraph::fgraph_init_ops`], for C.
#[no_mangle]
pub extern "C" fn fgraph_init_ops<'a>(dst: OpsRef<'a>, src: Option<OpsRef<'a>>) {
    crate::graph::fgraph::fgraph_init_ops(dst, src)
}

/// A new task: it does not share its parent's stack, and gets its own
/// while graph tracing runs.
///
/// # Safety
///
/// `t` is a task being created.
#[no_mangle]
pub unsafe extern "C" fn ftrace_graph_init_task(t: TaskRef<'_>) {
    t.stack().store(ptr::null_mut(), Ordering::Relaxed);
    t.top().store(0, Ordering::Relaxed);
    t.depth().store(-1, Ordering::Relaxed);
    if ftrace_graph_active.load(Ordering::Relaxed) != 0 {
        if let Some(s) = Fresh::alloc() {
            // A new task has none: it takes this one.
            let _ = s.give(t);
        }
    }
}
