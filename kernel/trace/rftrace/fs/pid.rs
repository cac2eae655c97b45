// SPDX-License-Identifier: GPL-2.0

//! set_ftrace_pid and set_ftrace_notrace_pid: which tasks a trace
//! array's function tracer (and function graph) traces.
//!
//! The pid lists are the tracing core's (`trace_pid_write()` and
//! friends). A `sched_switch` probe records, per CPU, whether the task
//! that runs is traced; ops with `FTRACE_OPS_FL_PID` on such a trace array
//! call [`ftrace_pid_func`] first, which checks that record.

use crate::base::ffi::{rftrace_tr_reset_ignore_pid, rftrace_tr_set_ignore_pid, PidList};
use crate::base::sys::{CoreGuard, Held, PreemptOff, StateKey, TraceArray};
use crate::base::task::{Current, TaskRef};
use crate::base::tp;
use crate::base::trarray::{pid_lists, replace_pid_list, write_pid_list, TrOpen};
use crate::ops::pidstate::{
    pids_enabled, trace_filter_add_remove_task, trace_ignore_this_task, trace_pid_next,
    trace_pid_show, trace_pid_start, PidFunc, PID_IGNORE,
};
use core::ptr;
use core::sync::atomic::Ordering;
use kernel::bindings;
use kernel::error::{code::EINVAL, Result};
use kernel::ffi::{c_char, c_int, c_uint, c_ulong, c_void};
use kernel::seq_file::{SeqFile, SeqText};
use kernel::tracefs::{seq_fops, Dir, Fops, OpenMode, SeqOpen};

const TRACE_PIDS: c_int = 1;
const TRACE_NO_PIDS: c_int = 2;

/// Records for this CPU whether `tr` traces the task `t` now running
/// (the `sched_switch` probe's verdict). The pid lists are read where
/// they cannot be freed: a tracepoint probe (preemption off) or under
/// `ftrace_lock`, which their writers hold before the grace period that
/// precedes a free.
fn record_verdict(tr: TraceArray, t: TaskRef<'_>) {
    // Nested in the probe's or IPI's own preempt-off section: the proof.
    let np = PreemptOff::new();
    let (p, n) = pid_lists(tr, np.token());
    let ignore = trace_ignore_this_task(p, n, t);
    let pid = if ignore {
        PID_IGNORE
    } else {
        t.pid().load(Ordering::Relaxed)
    };
    // This CPU's field of a live trace array.
    rftrace_tr_set_ignore_pid(tr, pid);
}

/// Points every pid-aware ops at the pid filter or back at its own
/// callback, as the pid lists say.
pub(crate) fn update_pid_funcs(held: &Held, key: &StateKey) {
    for op in crate::ops::registry::list(held) {
        if !op.has(bindings::FTRACE_OPS_FL_PID as c_ulong) {
            continue;
        }
        let f: bindings::ftrace_func_t = if pids_enabled(op) {
            crate::ops::registry::ops_fn::<PidFunc>()
        } else {
            op.saved_func()
        };
        // Listed: the dispatchers read it meanwhile.
        op.set_func(f);
        if !op.has(bindings::FTRACE_OPS_FL_DIRECT as c_ulong) {
            crate::ops::arch::update_trampoline(held, op);
            crate::ops::groups::refresh(held, key, op);
        }
    }
    // The graph core's counterpart.
    #[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
    crate::graph::fgraph::update_pid_funcs(key);
}

// The tracepoint probes below have the prototypes of their tracepoints
// (`TP_PROTO` after the data pointer) with typed handles: the data is the
// trace array that registered the probe (it unregisters it before it
// goes), the tasks are the live ones the tracepoint passes.

/// sched_switch: records whether the task switched to is traced.
extern "C" fn sched_switch_probe(
    tr: Option<TraceArray>,
    _preempt: bool,
    _prev: TaskRef<'_>,
    next: TaskRef<'_>,
    _prev_state: c_uint,
) {
    if let Some(tr) = tr {
        record_verdict(tr, next);
    }
}

/// A traced task forked (`parent`) or is freed (none): the child follows
/// its parent in both lists, or the freed task leaves them.
fn follow(tr: TraceArray, parent: Option<TaskRef<'_>>, task: TaskRef<'_>) {
    let np = PreemptOff::new();
    let (p, n) = pid_lists(tr, np.token());
    trace_filter_add_remove_task(p, parent, task);
    trace_filter_add_remove_task(n, parent, task);
}

/// sched_process_fork: the child follows its parent.
extern "C" fn fork_probe(tr: Option<TraceArray>, selff: TaskRef<'_>, task: TaskRef<'_>) {
    if let Some(tr) = tr {
        follow(tr, Some(selff), task);
    }
}

/// sched_process_free: the task leaves the lists.
extern "C" fn exit_probe(tr: Option<TraceArray>, task: TaskRef<'_>) {
    if let Some(tr) = tr {
        follow(tr, None, task);
    }
}

/// Makes forks of traced tasks traced too (the `function-fork` option).
pub(crate) fn ftrace_pid_follow_fork(tr: Option<TraceArray>, enable: bool) {
    let Some(tr) = tr else {
        return;
    };
    let _ = tp::set(tp::Probe::Fork(fork_probe), Some(tr), enable);
    let _ = tp::set(tp::Probe::Free(exit_probe), Some(tr), enable);
}

fn switch_probe(tr: TraceArray, on: bool) {
    let _ = tp::set(tp::Probe::Switch(sched_switch_probe), Some(tr), on);
}

/// Drops the pid lists of `type` (TRACE_PIDS, TRACE_NO_PIDS).
fn clear(held: &Held, tr: TraceArray, kind: c_int) {
    let (p, n) = pid_lists(tr, held);
    let has = (kind & TRACE_PIDS != 0 && p.is_some()) || (kind & TRACE_NO_PIDS != 0 && n.is_some());
    if !has {
        return;
    }
    let keep =
        (kind & TRACE_PIDS == 0 && p.is_some()) || (kind & TRACE_NO_PIDS == 0 && n.is_some());
    if !keep {
        switch_probe(tr, false);
        rftrace_tr_reset_ignore_pid(tr);
    }
    if kind & TRACE_PIDS != 0 {
        replace_pid_list(held, tr, false, None);
    }
    if kind & TRACE_NO_PIDS != 0 {
        replace_pid_list(held, tr, true, None);
    }
}

/// Drops both pid lists of `tr`.
pub(crate) fn ftrace_clear_pids(tr: Option<TraceArray>) {
    let g = CoreGuard::lock();
    if let Some(tr) = tr {
        clear(g.held(), tr, TRACE_PIDS | TRACE_NO_PIDS);
    }
}

/// The marker for "no list": greater than any pid the iterator gives
/// (`PID_MAX_LIMIT` is at most 4M).
const NO_PIDS: *mut c_void = (4 * 1024 * 1024 + 1) as *mut c_void;

/// An open pid file of kind `KIND` (`TRACE_PIDS` or `TRACE_NO_PIDS`) of a
/// trace array, referenced while the file is open. A read walks the list
/// with `ftrace_lock` held and preemption off, from `start` to `stop`.
struct PidFile<const KIND: c_int> {
    tr: TrOpen,
    /// Held from `start` to `stop` (dropped in this order: preemption
    /// back on, then the lock).
    locked: Option<(PreemptOff, CoreGuard)>,
}

impl<const KIND: c_int> PidFile<KIND> {
    /// The list the file shows (none: no list), between `start` and
    /// `stop`, whose lock keeps it.
    fn list(&self) -> Option<PidList<'_>> {
        let (_, g) = self.locked.as_ref()?;
        let (p, n) = pid_lists(self.tr.tr()?, g.held());
        if KIND == TRACE_NO_PIDS {
            n
        } else {
            p
        }
    }
}

impl<const KIND: c_int> SeqText for PidFile<KIND> {
    fn start(&mut self, _m: &SeqFile, pos: &mut bindings::loff_t) -> *mut c_void {
        // Released in `stop`, which seq_file calls after every `start`.
        let g = CoreGuard::lock();
        self.locked = Some((PreemptOff::new(), g));
        match self.list() {
            Some(l) => trace_pid_start(l, pos),
            None if *pos == 0 => NO_PIDS,
            None => ptr::null_mut(),
        }
    }

    fn next(&mut self, _m: &SeqFile, v: *mut c_void, pos: &mut bindings::loff_t) -> *mut c_void {
        if v == NO_PIDS {
            *pos = pos.wrapping_add(1);
            return ptr::null_mut();
        }
        self.list()
            .map_or(ptr::null_mut(), |l| trace_pid_next(l, v, pos))
    }

    fn stop(&mut self) {
        self.locked = None;
    }

    fn show(&mut self, m: &SeqFile, v: *mut c_void) -> c_int {
        if v == NO_PIDS {
            m.write(b"no pid\n");
            return 0;
        }
        trace_pid_show(m, v)
    }

    fn write(&mut self, ubuf: *const c_char, cnt: usize, pos: &mut bindings::loff_t) -> isize {
        let Some(tr) = self.tr.tr() else {
            return EINVAL.to_errno() as isize;
        };
        write_pids(tr, KIND == TRACE_NO_PIDS, ubuf, cnt, pos)
    }
}

impl<const KIND: c_int> SeqOpen for PidFile<KIND> {
    /// The file's trace array.
    type Data = Option<TraceArray>;
    type State = Self;

    fn open(tr: Option<TraceArray>, mode: OpenMode) -> Result<Self> {
        let tr = TrOpen::get(tr)?;
        if mode.write && mode.trunc {
            truncate(tr.tr(), KIND);
        }
        Ok(PidFile { tr, locked: None })
    }
}

/// An `O_TRUNC` open of a pid file: its list goes.
fn truncate(tr: Option<TraceArray>, kind: c_int) {
    let mut g = CoreGuard::lock();
    let (held, key) = g.parts();
    if let Some(tr) = tr {
        clear(held, tr, kind);
    }
    update_pid_funcs(held, key);
    let _ = crate::ops::update::update_sites(held, key);
}

/// Runs on every CPU after a pid list of `tr` changed: records this
/// CPU's verdict for the task it runs.
fn ignore_task_cpu(tr: TraceArray) {
    // The lists are stable: the writer holds `ftrace_lock`.
    record_verdict(tr, Current::get().task());
}

/// A write of `cnt` user bytes at `ubuf` to the pid list (`no`: the
/// notrace one) of `tr`.
fn write_pids(
    tr: TraceArray,
    no: bool,
    ubuf: *const c_char,
    cnt: usize,
    pos: &mut bindings::loff_t,
) -> isize {
    let mut g = CoreGuard::lock();
    let (held, key) = g.parts();
    let (p, n) = pid_lists(tr, held);
    let (filtered, other) = if no { (n, p) } else { (p, n) };
    let had = filtered.is_some();
    let (r, new) = write_pid_list(filtered, ubuf, cnt);
    if r < 0 {
        return r as isize;
    }
    let first = !had && new.is_some() && other.is_none();
    replace_pid_list(held, tr, no, new);
    if first {
        switch_probe(tr, true);
    }
    // The array is referenced by the open file.
    crate::base::sys::on_each_online_cpu(&|| ignore_task_cpu(tr));
    update_pid_funcs(held, key);
    let _ = crate::ops::update::update_sites(held, key);
    if r > 0 {
        *pos = pos.wrapping_add(r as bindings::loff_t);
    }
    r as isize
}

static PID_FOPS: Fops<Option<TraceArray>> =
    seq_fops::<PidFile<TRACE_PIDS>>(crate::base::ffi::tracing_lseek);
static NO_PID_FOPS: Fops<Option<TraceArray>> =
    seq_fops::<PidFile<TRACE_NO_PIDS>>(crate::base::ffi::tracing_lseek);

/// The per trace array files of the core: C passes a trace array and its
/// directory, which lives no longer than the array.
pub(crate) fn ftrace_init_tracefs(tr: Option<TraceArray>, d: Dir) {
    let pid = kernel::c_str!("set_ftrace_pid");
    crate::base::tracefs::create(pid, 0o640, d, tr, &PID_FOPS);
    let no_pid = kernel::c_str!("set_ftrace_notrace_pid");
    crate::base::tracefs::create(no_pid, 0o640, d, tr, &NO_PID_FOPS);
}
