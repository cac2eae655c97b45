// SPDX-License-Identifier: GPL-2.0

//! set_ftrace_pid and set_ftrace_notrace_pid: which tasks a trace
//! array's function tracer (and function graph) traces.
//!
//! The pid lists are the tracing core's (`trace_pid_write()` and
//! friends). A `sched_switch` probe records, per CPU, whether the task
//! that runs is traced; ops with `FTRACE_OPS_FL_PID` on such a trace array
//! call [`ftrace_pid_func`] first, which checks that record.

use crate::ffi::{
    __tracepoint_sched_process_fork, __tracepoint_sched_process_free, rftrace_tr_reset_ignore_pid,
    rftrace_tr_set_ignore_pid, trace_filter_add_remove_task, trace_ignore_this_task,
    trace_pid_list_free, trace_pid_next, trace_pid_show, trace_pid_start, trace_pid_write,
};
use crate::ops;
use crate::pidstate::{
    __tracepoint_sched_switch, ftrace_pid_func, lists, pids_enabled, slot,
    tracepoint_probe_register, tracepoint_probe_unregister, PID_IGNORE,
};
use crate::sys::{to_errno, CGlobal, CoreGuard, Held, TraceArray};
use crate::task::{Current, TaskRef};
use core::ptr;
use core::sync::atomic::Ordering;
use kernel::bindings;
use kernel::error::{code::EINVAL, to_result};
use kernel::ffi::{c_char, c_int, c_uint, c_ulong, c_void};

const TRACE_PIDS: c_int = 1;
const TRACE_NO_PIDS: c_int = 2;

/// Records for this CPU whether `tr` traces the task `t` now running
/// (the `sched_switch` probe's verdict). The pid lists are read where
/// they cannot be freed: a tracepoint probe (preemption off) or under
/// `ftrace_lock`, which their writers hold before the grace period that
/// precedes a free.
fn record_verdict(tr: TraceArray, t: TaskRef<'_>) {
    let (p, n) = lists(tr);
    // SAFETY: the lists are live (see above); `t` is a live task.
    let ignore = unsafe { trace_ignore_this_task(p, n, t.as_ptr()) };
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
pub(crate) fn update_pid_funcs(held: &Held) {
    for op in ops::list(held) {
        if !op.has(bindings::FTRACE_OPS_FL_PID as c_ulong) {
            continue;
        }
        let f: bindings::ftrace_func_t = if pids_enabled(op) {
            Some(ftrace_pid_func)
        } else {
            op.saved_func()
        };
        // Listed: the dispatchers read it meanwhile.
        op.set_func(f);
        if !op.has(bindings::FTRACE_OPS_FL_DIRECT as c_ulong) {
            ops::arch_update_trampoline(held, op);
        }
    }
    // The graph core's counterpart.
    #[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
    crate::fgraph::update_pid_funcs(held);
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
fn follow(tr: TraceArray, parent: *mut bindings::task_struct, task: *mut bindings::task_struct) {
    let (p, n) = lists(tr);
    // SAFETY: a tracepoint probe (preemption off): the lists are live;
    // the tasks are the tracepoint's.
    unsafe {
        trace_filter_add_remove_task(p, parent, task);
        trace_filter_add_remove_task(n, parent, task);
    }
}

/// sched_process_fork: the child follows its parent.
extern "C" fn fork_probe(
    tr: Option<TraceArray>,
    selff: *mut bindings::task_struct,
    task: *mut bindings::task_struct,
) {
    if let Some(tr) = tr {
        follow(tr, selff, task);
    }
}

/// sched_process_free: the task leaves the lists.
extern "C" fn exit_probe(tr: Option<TraceArray>, task: *mut bindings::task_struct) {
    if let Some(tr) = tr {
        follow(tr, ptr::null_mut(), task);
    }
}

/// Registers (or unregisters) `probe` on the static tracepoint `tp`, with
/// the trace array as its data. The probe matches the tracepoint's
/// prototype, and the array unregisters it before it goes.
fn probe_on(tp: *mut bindings::tracepoint, probe: *mut c_void, tr: TraceArray, on: bool) {
    // SAFETY: as above: a static tracepoint, a matching probe, data that
    // outlives the registration.
    unsafe {
        if on {
            tracepoint_probe_register(tp, probe, tr.as_ptr());
        } else {
            tracepoint_probe_unregister(tp, probe, tr.as_ptr());
        }
    }
}

/// Makes forks of traced tasks traced too (the `function-fork` option).
#[no_mangle]
pub extern "C" fn ftrace_pid_follow_fork(tr: Option<TraceArray>, enable: bool) {
    let Some(tr) = tr else {
        return;
    };
    let fork = ptr::addr_of_mut!(__tracepoint_sched_process_fork);
    let free = ptr::addr_of_mut!(__tracepoint_sched_process_free);
    probe_on(fork, fork_probe as *const () as *mut c_void, tr, enable);
    probe_on(free, exit_probe as *const () as *mut c_void, tr, enable);
}

fn switch_probe(tr: TraceArray, on: bool) {
    let tp = ptr::addr_of_mut!(__tracepoint_sched_switch);
    probe_on(tp, sched_switch_probe as *const () as *mut c_void, tr, on);
}

/// Frees a pid list nobody can read any more (null: none).
fn free_list(l: *mut c_void) {
    if !l.is_null() {
        // SAFETY: unpublished, and a grace period passed (the callers).
        unsafe { trace_pid_list_free(l) };
    }
}

/// Drops the pid lists of `type` (TRACE_PIDS, TRACE_NO_PIDS).
fn clear(_held: &Held, tr: TraceArray, kind: c_int) {
    let (p, n) = lists(tr);
    let has =
        (kind & TRACE_PIDS != 0 && !p.is_null()) || (kind & TRACE_NO_PIDS != 0 && !n.is_null());
    if !has {
        return;
    }
    let keep =
        (kind & TRACE_PIDS == 0 && !p.is_null()) || (kind & TRACE_NO_PIDS == 0 && !n.is_null());
    if !keep {
        switch_probe(tr, false);
        rftrace_tr_reset_ignore_pid(tr);
    }
    if kind & TRACE_PIDS != 0 {
        slot(tr, false).store(ptr::null_mut(), Ordering::Release);
    }
    if kind & TRACE_NO_PIDS != 0 {
        slot(tr, true).store(ptr::null_mut(), Ordering::Release);
    }
    // Then nobody uses the old lists.
    crate::sys::synchronize_rcu();
    if kind & TRACE_PIDS != 0 {
        free_list(p);
    }
    if kind & TRACE_NO_PIDS != 0 {
        free_list(n);
    }
}

/// Drops both pid lists of `tr`.
#[no_mangle]
pub extern "C" fn ftrace_clear_pids(tr: Option<TraceArray>) {
    let g = CoreGuard::lock();
    if let Some(tr) = tr {
        clear(g.held(), tr, TRACE_PIDS | TRACE_NO_PIDS);
    }
}

/// The pid list a file shows: the seq_file private is the trace array,
/// and the file kind is in the inode's position of the op table.
fn kind_of(m: *mut bindings::seq_file) -> bool {
    // SAFETY: our seq files' `op` is one of the two tables.
    unsafe { ptr::eq((*m).op, NO_PID_SOPS.get()) }
}

/// The marker for "no list": greater than any pid the iterator gives
/// (`PID_MAX_LIMIT` is at most 4M).
const NO_PIDS: *mut c_void = (4 * 1024 * 1024 + 1) as *mut c_void;

/// The list a pid file's seq_file shows (null: none).
///
/// # Safety
///
/// `m` is one of our pid seq files, between its start and stop.
unsafe fn list_of(m: *mut bindings::seq_file) -> *mut c_void {
    // SAFETY: per the function's contract, the seq_file's private is the
    // trace array its open referenced.
    unsafe { TraceArray::from_raw((*m).private) }.map_or(ptr::null_mut(), |tr| {
        slot(tr, kind_of(m)).load(Ordering::Acquire)
    })
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn pid_start(
    m: *mut bindings::seq_file,
    pos: *mut bindings::loff_t,
) -> *mut c_void {
    // SAFETY: `ftrace_lock` and an RCU-sched section for the walk, until
    // `pid_stop`; our seq file, its position.
    unsafe {
        bindings::mutex_lock(crate::sys::ftrace_lock.as_ptr());
        bindings::ftrace_preempt_disable_notrace();
        let l = list_of(m);
        if l.is_null() {
            return if *pos == 0 { NO_PIDS } else { ptr::null_mut() };
        }
        trace_pid_start(l, pos)
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn pid_next(
    m: *mut bindings::seq_file,
    v: *mut c_void,
    pos: *mut bindings::loff_t,
) -> *mut c_void {
    // SAFETY: inside start/stop; the position is the seq_file's.
    unsafe {
        if v == NO_PIDS {
            *pos = (*pos).wrapping_add(1);
            return ptr::null_mut();
        }
        trace_pid_next(list_of(m), v, pos)
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn pid_stop(_m: *mut bindings::seq_file, _v: *mut c_void) {
    // SAFETY: paired with `pid_start`.
    unsafe {
        bindings::ftrace_preempt_enable_notrace();
        bindings::mutex_unlock(crate::sys::ftrace_lock.as_ptr());
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn pid_show(m: *mut bindings::seq_file, v: *mut c_void) -> c_int {
    // SAFETY: a live seq_file; `v` came from the pid list iterator.
    unsafe {
        if v == NO_PIDS {
            bindings::seq_write(m, c"no pid\n".as_ptr().cast(), 7);
            return 0;
        }
        trace_pid_show(m, v)
    }
}

static PID_SOPS: CGlobal<bindings::seq_operations> = CGlobal::new(bindings::seq_operations {
    start: Some(pid_start),
    next: Some(pid_next),
    stop: Some(pid_stop),
    show: Some(pid_show),
});

static NO_PID_SOPS: CGlobal<bindings::seq_operations> = CGlobal::new(bindings::seq_operations {
    start: Some(pid_start),
    next: Some(pid_next),
    stop: Some(pid_stop),
    show: Some(pid_show),
});

/// Opens a pid file of kind `KIND`.
///
/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn pid_open<const KIND: c_int>(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: the VFS's inode and file; the inode data is the trace array,
    // referenced here until release, and made the seq_file's private.
    let r = unsafe {
        let tr = (*inode).i_private;
        to_result(crate::ffi::tracing_check_open_get_tr(tr)).and_then(|()| {
            if (*file).f_mode & 2 != 0 && (*file).f_flags & bindings::O_TRUNC != 0 {
                truncate(TraceArray::from_raw(tr), KIND);
            }
            let sops = if KIND == TRACE_PIDS {
                PID_SOPS.get()
            } else {
                NO_PID_SOPS.get()
            };
            let r = to_result(bindings::seq_open(file, sops));
            if r.is_err() {
                crate::ffi::trace_array_put(tr);
            } else {
                (*(*file).private_data.cast::<bindings::seq_file>()).private = tr;
            }
            r
        })
    };
    to_errno(r)
}

/// An `O_TRUNC` open of a pid file: its list goes.
fn truncate(tr: Option<TraceArray>, kind: c_int) {
    let g = CoreGuard::lock();
    if let Some(tr) = tr {
        clear(g.held(), tr, kind);
    }
    update_pid_funcs(g.held());
    let _ = ops::update_sites(g.held());
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn ignore_task_cpu(data: *mut c_void) {
    // SAFETY: the data is the writer's trace array, referenced by its
    // open file while the call waits for every CPU.
    if let Some(tr) = unsafe { TraceArray::from_raw(data) } {
        // The lists are stable: the writer holds `ftrace_lock`.
        record_verdict(tr, Current::get().task());
    }
}

/// Writes a pid file of kind `KIND`.
///
/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn pid_write<const KIND: c_int>(
    file: *mut bindings::file,
    ubuf: *const c_char,
    cnt: usize,
    ppos: *mut bindings::loff_t,
) -> isize {
    if cnt == 0 {
        return 0;
    }
    // SAFETY: a seq file opened by `pid_open`, whose private is the
    // trace array it holds a reference to; the file's position.
    let (tr, pos) = unsafe {
        (
            TraceArray::from_raw((*(*file).private_data.cast::<bindings::seq_file>()).private),
            &mut *ppos,
        )
    };
    let Some(tr) = tr else {
        return EINVAL.to_errno() as isize;
    };
    let no = KIND == TRACE_NO_PIDS;
    let g = CoreGuard::lock();
    let filtered = slot(tr, no).load(Ordering::Acquire);
    let other = slot(tr, !no).load(Ordering::Acquire);
    let mut new: *mut c_void = ptr::null_mut();
    // SAFETY: the tracing core parses the user's pids (`cnt` bytes at the
    // user pointer `ubuf`) into a new list.
    let r = unsafe { trace_pid_write(filtered, &mut new, ubuf, cnt) };
    if r < 0 {
        return r as isize;
    }
    slot(tr, no).store(new, Ordering::Release);
    if !filtered.is_null() {
        crate::sys::synchronize_rcu();
        free_list(filtered);
    } else if !new.is_null() && other.is_null() {
        switch_probe(tr, true);
    }
    // SAFETY: runs `ignore_task_cpu` on every online CPU, with the trace
    // array, referenced by the open file, and waits for them.
    unsafe {
        bindings::on_each_cpu_cond_mask(
            None,
            Some(ignore_task_cpu),
            tr.as_ptr(),
            true,
            ptr::addr_of!(bindings::__cpu_online_mask),
        );
    }
    update_pid_funcs(g.held());
    let _ = ops::update_sites(g.held());
    if r > 0 {
        *pos = pos.wrapping_add(r as bindings::loff_t);
    }
    r as isize
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn pid_release(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: the reference taken at open; then the seq_file goes.
    unsafe {
        crate::ffi::trace_array_put((*inode).i_private);
        bindings::seq_release(inode, file)
    }
}

/// The file operations of a pid file of kind `KIND`.
const fn pid_fops<const KIND: c_int>() -> bindings::file_operations {
    bindings::file_operations {
        open: Some(pid_open::<KIND>),
        write: Some(pid_write::<KIND>),
        read: Some(bindings::seq_read),
        llseek: Some(crate::ffi::tracing_lseek),
        release: Some(pid_release),
        ..crate::tracefs::zeroed_fops()
    }
}

static PID_FOPS: CGlobal<bindings::file_operations> = CGlobal::new(pid_fops::<TRACE_PIDS>());
static NO_PID_FOPS: CGlobal<bindings::file_operations> = CGlobal::new(pid_fops::<TRACE_NO_PIDS>());
/// The per trace array files of the core.
///
/// # Safety
///
/// `tr` is a trace array, `d` its directory.
#[no_mangle]
pub unsafe extern "C" fn ftrace_init_tracefs(tr: *mut c_void, d: *mut bindings::dentry) {
    crate::tracefs::create(
        kernel::c_str!("set_ftrace_pid"),
        0o640,
        d,
        tr,
        PID_FOPS.get(),
    );
    crate::tracefs::create(
        kernel::c_str!("set_ftrace_notrace_pid"),
        0o640,
        d,
        tr,
        NO_PID_FOPS.get(),
    );
}
