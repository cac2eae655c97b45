// SPDX-License-Identifier: GPL-2.0

//! What the dispatch reads of pid filtering: a trace array's pid lists,
//! the verdict its `sched_switch` probe records per CPU for the task
//! that runs, and the callback of a pid-filtered ops. Between the ops
//! registry and the registration (`ops`), which installs
//! [`ftrace_pid_func`]; the files and probes that keep the lists and
//! verdicts are in `pid`.

use crate::base::ffi::{rftrace_tr_ignore_pid, PidList};
use crate::base::sys::TraceArray;
use crate::base::task::{Current, TaskRef};
use crate::ops::registry::{Fregs, OpsCallback, OpsRef};
use core::sync::atomic::Ordering;
use kernel::bindings;
use kernel::ffi::{c_int, c_ulong, c_void};
use kernel::seq_file::SeqFile;

// The pid list functions of the tracing core (kernel/trace/trace.c) that
// take a task or a seq_file, typed with their handles: see `ffi` for
// when a declaration is `safe`.
#[allow(improper_ctypes)]
unsafe extern "C" {
    /// Whether `task` is not traced by the lists (none: no list).
    pub(crate) safe fn trace_ignore_this_task(
        pids: Option<PidList<'_>>,
        no_pids: Option<PidList<'_>>,
        task: TaskRef<'_>,
    ) -> bool;
    /// A fork (`selff` the parent) adds `task` to `pids` if the parent is
    /// in it; an exit (`selff` none) takes `task` out.
    pub(crate) safe fn trace_filter_add_remove_task(
        pids: Option<PidList<'_>>,
        selff: Option<TaskRef<'_>>,
        task: TaskRef<'_>,
    );
    /// The seq_file iterator over a list: `v` is a pid plus one, never
    /// dereferenced.
    pub(crate) safe fn trace_pid_start(
        pids: PidList<'_>,
        pos: &mut bindings::loff_t,
    ) -> *mut c_void;
    pub(crate) safe fn trace_pid_next(
        pids: PidList<'_>,
        v: *mut c_void,
        pos: &mut bindings::loff_t,
    ) -> *mut c_void;
    pub(crate) safe fn trace_pid_show(m: &SeqFile, v: *mut c_void) -> c_int;
}

pub(crate) const PID_IGNORE: c_int = -1;
pub(crate) const PID_TRACE: c_int = -2;

/// Whether pid filtering applies to `ops` (its trace array has pid lists).
pub(crate) fn pids_enabled(ops: OpsRef<'_>) -> bool {
    let Some(tr) = ops
        .trace_array()
        .filter(|_| ops.has(bindings::FTRACE_OPS_FL_PID as c_ulong))
    else {
        return false;
    };
    crate::base::trarray::has_pid_lists(tr)
}

/// Whether pid filtering applies to `ops`.
pub(crate) fn ftrace_pids_enabled(ops: OpsRef<'_>) -> bool {
    pids_enabled(ops)
}

/// Whether trace array `tr` (none: no filter) traces the current task,
/// as its `sched_switch` probe recorded for this CPU. Hot path.
#[inline(always)]
pub(crate) fn traces_current(tr: Option<TraceArray>) -> bool {
    let Some(tr) = tr else {
        return true;
    };
    // The accessor is notrace.
    let pid = rftrace_tr_ignore_pid(tr);
    pid != PID_IGNORE
        && (pid == PID_TRACE || pid == Current::get().task().pid().load(Ordering::Relaxed))
}

/// The callback of a pid-filtered ops: calls the real one only for the
/// tasks the trace array traces. Hot path; installed through
/// [`crate::ops::registry::ops_fn`].
pub(crate) struct PidFunc;

impl OpsCallback for PidFunc {
    #[inline(always)]
    fn call(ip: c_ulong, parent_ip: c_ulong, ops: OpsRef<'_>, fregs: Fregs<'_>) {
        if traces_current(ops.trace_array()) {
            ops.call(true, ip, parent_ip, fregs);
        }
    }
}
crate::base::nokprobe::nokprobe!(crate::ops::registry::c_callback::<PidFunc>);
