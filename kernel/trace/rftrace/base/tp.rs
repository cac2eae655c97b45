// SPDX-License-Identifier: GPL-2.0

//! The scheduler tracepoints the core probes (`sched_switch` for the pid
//! verdicts and graph sleep time, `sched_process_fork`/`_free` for
//! `function-fork`), with their probes typed: a probe of one of the types
//! below has the prototype its tracepoint calls (the data pointer, then
//! `TP_PROTO`), so registering it is safe.

use crate::base::ffi::{
    __tracepoint_sched_process_fork, __tracepoint_sched_process_free, __tracepoint_sched_switch,
};
use crate::base::sys::TraceArray;
use crate::base::task::TaskRef;
use core::ptr;
use kernel::bindings;
use kernel::bindings::{tracepoint_probe_register, tracepoint_probe_unregister};
use kernel::error::{to_result, Result};
use kernel::ffi::{c_uint, c_void};

/// A probe of `sched_switch(preempt, prev, next, prev_state)`.
pub(crate) type SwitchProbe =
    extern "C" fn(Option<TraceArray>, bool, TaskRef<'_>, TaskRef<'_>, c_uint);
/// A probe of `sched_process_fork(parent, child)`.
pub(crate) type ForkProbe = extern "C" fn(Option<TraceArray>, TaskRef<'_>, TaskRef<'_>);
/// A probe of `sched_process_free(task)`.
pub(crate) type FreeProbe = extern "C" fn(Option<TraceArray>, TaskRef<'_>);

/// A probe and the tracepoint it is for.
#[derive(Clone, Copy)]
pub(crate) enum Probe {
    Switch(SwitchProbe),
    Fork(ForkProbe),
    Free(FreeProbe),
}

/// Registers (`on`) or unregisters `p` with `data` (a trace array, which
/// unregisters its probes before it goes, or none).
pub(crate) fn set(p: Probe, data: Option<TraceArray>, on: bool) -> Result {
    let (tp, f): (*mut bindings::tracepoint, *const ()) = match p {
        Probe::Switch(f) => (ptr::addr_of_mut!(__tracepoint_sched_switch), f as *const ()),
        Probe::Fork(f) => (
            ptr::addr_of_mut!(__tracepoint_sched_process_fork),
            f as *const (),
        ),
        Probe::Free(f) => (
            ptr::addr_of_mut!(__tracepoint_sched_process_free),
            f as *const (),
        ),
    };
    let data = data.map_or(ptr::null_mut(), TraceArray::as_ptr);
    let f = f.cast_mut().cast::<c_void>();
    // SAFETY: a static tracepoint and a probe of its prototype (the
    // probe types above); the data outlives the registration (a trace
    // array's invariants: it is used while registered).
    to_result(unsafe {
        if on {
            tracepoint_probe_register(tp, f, data)
        } else {
            tracepoint_probe_unregister(tp, f, data)
        }
    })
}
