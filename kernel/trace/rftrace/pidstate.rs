// SPDX-License-Identifier: GPL-2.0

//! What the dispatch reads of pid filtering: a trace array's pid lists,
//! the verdict its `sched_switch` probe records per CPU for the task
//! that runs, and the callback of a pid-filtered ops. Below the ops
//! registry, which installs [`ftrace_pid_func`]; the files and probes
//! that keep the lists and verdicts are in `pid`.

use crate::sys::TraceArray;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::bindings;
use kernel::bindings::ftrace_ops as Ops;
use kernel::ffi::{c_int, c_ulong, c_void};

pub(crate) const PID_IGNORE: c_int = -1;
pub(crate) const PID_TRACE: c_int = -2;

// Bindgen types of empty C structs are fine behind pointers.
#[allow(improper_ctypes)]
extern "C" {
    fn rftrace_tr_pid_slot(tr: *mut c_void, no: bool) -> *mut *mut c_void;
    pub(crate) fn rftrace_tr_ignore_pid(tr: *mut c_void) -> c_int;
    pub(crate) fn tracepoint_probe_register(
        tp: *mut bindings::tracepoint,
        probe: *mut c_void,
        data: *mut c_void,
    ) -> c_int;
    pub(crate) fn tracepoint_probe_unregister(
        tp: *mut bindings::tracepoint,
        probe: *mut c_void,
        data: *mut c_void,
    ) -> c_int;
    pub(crate) static mut __tracepoint_sched_switch: bindings::tracepoint;
}

/// The pid list slot of `tr` (`no`: the notrace one).
pub(crate) fn slot(tr: TraceArray, no: bool) -> &'static AtomicPtr<c_void> {
    // SAFETY: the accessor returns the address of a pointer field of the
    // live trace array (the handle's invariants), which outlives every
    // user here.
    unsafe { AtomicPtr::from_ptr(rftrace_tr_pid_slot(tr.as_ptr(), no)) }
}

/// Its pid list and notrace pid list (null: none).
pub(crate) fn lists(tr: TraceArray) -> (*mut c_void, *mut c_void) {
    (
        slot(tr, false).load(Ordering::Acquire),
        slot(tr, true).load(Ordering::Acquire),
    )
}

/// Whether pid filtering applies to `ops`.
///
/// # Safety
///
/// `ops` is valid; its `private`, if set, is its trace array.
#[no_mangle]
pub unsafe extern "C" fn ftrace_pids_enabled(ops: *mut Ops) -> bool {
    // SAFETY: per the function's contract, `private` is null or the
    // trace array, which the tracing core keeps while the ops lives.
    let (flags, tr) = unsafe {
        (
            crate::view::flags(ops),
            TraceArray::from_raw((*ops).private),
        )
    };
    let Some(tr) = tr.filter(|_| flags & bindings::FTRACE_OPS_FL_PID as c_ulong != 0) else {
        return false;
    };
    let (p, n) = lists(tr);
    !p.is_null() || !n.is_null()
}

/// The pid of `t` (through the offset C gives: the Rust bindings'
/// `task_struct` layout is not to be trusted for it).
///
/// # Safety
///
/// `t` is a live task.
pub(crate) unsafe fn task_pid(t: *mut bindings::task_struct) -> c_int {
    // SAFETY: per the function's contract.
    unsafe { crate::task::pid(t) }.load(Ordering::Relaxed)
}

/// Whether trace array `tr` (none: no filter) traces the current task,
/// as its `sched_switch` probe recorded for this CPU. Hot path.
#[inline(always)]
pub(crate) fn traces_current(tr: Option<TraceArray>) -> bool {
    let Some(tr) = tr else {
        return true;
    };
    // SAFETY: a live trace array; the accessor is notrace.
    let pid = unsafe { rftrace_tr_ignore_pid(tr.as_ptr()) };
    // SAFETY: the current task.
    pid != PID_IGNORE && (pid == PID_TRACE || pid == unsafe { task_pid(crate::task::current()) })
}

/// The callback of a pid-filtered ops: calls the real one only for the
/// tasks the trace array traces. Hot path.
///
/// # Safety
///
/// Called by a trampoline or the list dispatcher with a live ops.
pub(crate) unsafe extern "C" fn ftrace_pid_func(
    ip: c_ulong,
    parent_ip: c_ulong,
    op: *mut Ops,
    fregs: *mut bindings::ftrace_regs,
) {
    // SAFETY: per the function's contract; `private` is the ops' trace
    // array, kept while the ops is.
    unsafe {
        if !traces_current(TraceArray::from_raw((*op).private)) {
            return;
        }
        if let Some(f) = (*op).saved_func {
            f(ip, parent_ip, op, fregs);
        }
    }
}
crate::nokprobe::nokprobe!(ftrace_pid_func);
