// SPDX-License-Identifier: GPL-2.0

//! set_ftrace_pid and set_ftrace_notrace_pid: which tasks a trace
//! array's function tracer (and function graph) traces.
//!
//! The pid lists are the tracing core's (`trace_pid_write()` and
//! friends). A `sched_switch` probe records, per CPU, whether the task
//! that runs is traced; ops with `FTRACE_OPS_FL_PID` on such a trace array
//! call [`ftrace_pid_func`] first, which checks that record.

use crate::ops;
use crate::pidstate::{
    __tracepoint_sched_switch, ftrace_pid_func, ftrace_pids_enabled, lists, slot, task_pid,
    tracepoint_probe_register, tracepoint_probe_unregister, PID_IGNORE,
};
use crate::sys::{to_errno, CGlobal, Guard, Held, TraceArray};
use core::ptr;
use core::sync::atomic::Ordering;
use kernel::bindings;
use kernel::error::{code::EINVAL, to_result, Result};
use kernel::ffi::{c_char, c_int, c_uint, c_ulong, c_void};

const TRACE_PIDS: c_int = 1;
const TRACE_NO_PIDS: c_int = 2;

// Bindgen types of empty C structs are fine behind pointers.
#[allow(improper_ctypes)]
extern "C" {
    fn rftrace_tr_set_ignore_pid(tr: *mut c_void, pid: c_int);
    fn rftrace_tr_reset_ignore_pid(tr: *mut c_void);
    fn trace_ignore_this_task(
        pids: *mut c_void,
        no_pids: *mut c_void,
        task: *mut bindings::task_struct,
    ) -> bool;
    fn trace_filter_add_remove_task(
        pids: *mut c_void,
        selff: *mut bindings::task_struct,
        task: *mut bindings::task_struct,
    );
    fn trace_pid_write(
        filtered: *mut c_void,
        new: *mut *mut c_void,
        ubuf: *const c_char,
        cnt: usize,
    ) -> c_int;
    fn trace_pid_start(pids: *mut c_void, pos: *mut bindings::loff_t) -> *mut c_void;
    fn trace_pid_next(pids: *mut c_void, v: *mut c_void, pos: *mut bindings::loff_t)
        -> *mut c_void;
    fn trace_pid_show(m: *mut bindings::seq_file, v: *mut c_void) -> c_int;
    fn trace_pid_list_free(pids: *mut c_void);
    static mut __tracepoint_sched_process_fork: bindings::tracepoint;
    static mut __tracepoint_sched_process_free: bindings::tracepoint;
}

/// Points every pid-aware ops at the pid filter or back at its own
/// callback, as the pid lists say.
///
/// # Safety
///
/// `ftrace_lock` is held.
pub(crate) unsafe fn update_pid_funcs() {
    // SAFETY: per the function's contract.
    for op in ops::list(unsafe { Held::assume() }) {
        let op = op.as_ptr();
        // SAFETY: a listed ops, live under `ftrace_lock`.
        unsafe {
            if !crate::view::has(op, bindings::FTRACE_OPS_FL_PID as c_ulong) {
                continue;
            }
            let f: bindings::ftrace_func_t = if ftrace_pids_enabled(op) {
                Some(ftrace_pid_func)
            } else {
                (*op).saved_func
            };
            // Listed: the dispatchers read it meanwhile.
            crate::view::set_func(op, f);
            if !crate::view::has(op, bindings::FTRACE_OPS_FL_DIRECT as c_ulong) {
                bindings::arch_ftrace_update_trampoline(op);
            }
        }
    }
    // SAFETY: the graph core's counterpart, under `ftrace_lock`.
    #[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
    unsafe {
        crate::fgraph::fgraph_update_pid_func()
    };
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn sched_switch_probe(
    data: *mut c_void,
    _preempt: bool,
    _prev: *mut bindings::task_struct,
    next: *mut bindings::task_struct,
    _prev_state: c_uint,
) {
    // SAFETY: the probe's data is the trace array that registered it,
    // which unregisters it before it goes.
    let Some(tr) = (unsafe { TraceArray::from_raw(data) }) else {
        return;
    };
    let (p, n) = lists(tr);
    // SAFETY: a tracepoint probe: preemption is off, the lists are freed
    // after a grace period; `next` is the task switched to.
    unsafe {
        if trace_ignore_this_task(p, n, next) {
            rftrace_tr_set_ignore_pid(data, PID_IGNORE);
        } else {
            rftrace_tr_set_ignore_pid(data, task_pid(next));
        }
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn fork_probe(
    data: *mut c_void,
    selff: *mut bindings::task_struct,
    task: *mut bindings::task_struct,
) {
    // SAFETY: as for `sched_switch_probe`.
    let Some(tr) = (unsafe { TraceArray::from_raw(data) }) else {
        return;
    };
    let (p, n) = lists(tr);
    // SAFETY: a tracepoint probe; the lists are live (see above).
    unsafe {
        trace_filter_add_remove_task(p, selff, task);
        trace_filter_add_remove_task(n, selff, task);
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn exit_probe(data: *mut c_void, task: *mut bindings::task_struct) {
    // SAFETY: as for `sched_switch_probe`.
    let Some(tr) = (unsafe { TraceArray::from_raw(data) }) else {
        return;
    };
    let (p, n) = lists(tr);
    // SAFETY: as above.
    unsafe {
        trace_filter_add_remove_task(p, ptr::null_mut(), task);
        trace_filter_add_remove_task(n, ptr::null_mut(), task);
    }
}

/// Makes forks of traced tasks traced too (the `function-fork` option).
///
/// # Safety
///
/// `tr` is a valid trace array.
#[no_mangle]
pub unsafe extern "C" fn ftrace_pid_follow_fork(tr: *mut c_void, enable: bool) {
    // SAFETY: the tracepoints are static; the probes match their
    // prototypes; `tr` outlives the registration.
    unsafe {
        let fork = ptr::addr_of_mut!(__tracepoint_sched_process_fork);
        let free = ptr::addr_of_mut!(__tracepoint_sched_process_free);
        if enable {
            tracepoint_probe_register(fork, fork_probe as *mut c_void, tr);
            tracepoint_probe_register(free, exit_probe as *mut c_void, tr);
        } else {
            tracepoint_probe_unregister(fork, fork_probe as *mut c_void, tr);
            tracepoint_probe_unregister(free, exit_probe as *mut c_void, tr);
        }
    }
}

fn switch_probe(tr: TraceArray, on: bool) {
    let (tp, probe) = (
        ptr::addr_of_mut!(__tracepoint_sched_switch),
        sched_switch_probe as *mut c_void,
    );
    // SAFETY: the tracepoint is static; the probe matches its prototype;
    // the array outlives the registration (it unregisters on its way).
    unsafe {
        if on {
            tracepoint_probe_register(tp, probe, tr.as_ptr());
        } else {
            tracepoint_probe_unregister(tp, probe, tr.as_ptr());
        }
    }
}

/// Drops the pid lists of `type` (TRACE_PIDS, TRACE_NO_PIDS).
///
/// # Safety
///
/// `ftrace_lock` is held.
unsafe fn clear(tr: TraceArray, kind: c_int) {
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
        // SAFETY: a live trace array, `ftrace_lock` held.
        unsafe { rftrace_tr_reset_ignore_pid(tr.as_ptr()) };
    }
    if kind & TRACE_PIDS != 0 {
        slot(tr, false).store(ptr::null_mut(), Ordering::Release);
    }
    if kind & TRACE_NO_PIDS != 0 {
        slot(tr, true).store(ptr::null_mut(), Ordering::Release);
    }
    // SAFETY: sleepable; then nobody uses the old lists.
    unsafe {
        bindings::synchronize_rcu();
        if kind & TRACE_PIDS != 0 && !p.is_null() {
            trace_pid_list_free(p);
        }
        if kind & TRACE_NO_PIDS != 0 && !n.is_null() {
            trace_pid_list_free(n);
        }
    }
}

/// Drops both pid lists of `tr`.
///
/// # Safety
///
/// `tr` is valid.
#[no_mangle]
pub unsafe extern "C" fn ftrace_clear_pids(tr: *mut c_void) {
    let _g = Guard::lock();
    // SAFETY: per the function's contract; `ftrace_lock` held.
    unsafe {
        if let Some(tr) = TraceArray::from_raw(tr) {
            clear(tr, TRACE_PIDS | TRACE_NO_PIDS);
        }
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

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn pid_start(
    m: *mut bindings::seq_file,
    pos: *mut bindings::loff_t,
) -> *mut c_void {
    // SAFETY: `ftrace_lock` and an RCU-sched section for the walk; the
    // seq_file's private is the trace array.
    unsafe {
        bindings::mutex_lock(crate::sys::ftrace_lock.get());
        bindings::ftrace_preempt_disable_notrace();
        let l = TraceArray::from_raw((*m).private).map_or(ptr::null_mut(), |tr| {
            slot(tr, kind_of(m)).load(Ordering::Acquire)
        });
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
    // SAFETY: inside start/stop.
    unsafe {
        if v == NO_PIDS {
            *pos += 1;
            return ptr::null_mut();
        }
        let l = TraceArray::from_raw((*m).private).map_or(ptr::null_mut(), |tr| {
            slot(tr, kind_of(m)).load(Ordering::Acquire)
        });
        trace_pid_next(l, v, pos)
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
        bindings::mutex_unlock(crate::sys::ftrace_lock.get());
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn pid_show(m: *mut bindings::seq_file, v: *mut c_void) -> c_int {
    if v == NO_PIDS {
        // SAFETY: a live seq_file.
        unsafe { bindings::seq_write(m, c"no pid\n".as_ptr().cast(), 7) };
        return 0;
    }
    // SAFETY: `v` came from the pid list iterator.
    unsafe { trace_pid_show(m, v) }
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

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe fn pid_open(inode: *mut bindings::inode, file: *mut bindings::file, kind: c_int) -> Result {
    // SAFETY: the VFS's inode and file; the inode data is the trace array.
    unsafe {
        let tr = (*inode).i_private;
        to_result(crate::sys::tracing_check_open_get_tr(tr))?;
        if (*file).f_mode & 2 != 0 && (*file).f_flags & bindings::O_TRUNC != 0 {
            let _g = Guard::lock();
            if let Some(tr) = TraceArray::from_raw(tr) {
                clear(tr, kind);
            }
            update_pid_funcs();
            let _ = ops::update_sites();
        }
        let sops = if kind == TRACE_PIDS {
            PID_SOPS.get()
        } else {
            NO_PID_SOPS.get()
        };
        let r = to_result(bindings::seq_open(file, sops));
        if r.is_err() {
            crate::sys::trace_array_put(tr);
        } else {
            (*(*file).private_data.cast::<bindings::seq_file>()).private = tr;
        }
        r
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn pid_open_trace(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: per the VFS contract.
    to_errno(unsafe { pid_open(inode, file, TRACE_PIDS) })
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn pid_open_notrace(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: per the VFS contract.
    to_errno(unsafe { pid_open(inode, file, TRACE_NO_PIDS) })
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn ignore_task_cpu(data: *mut c_void) {
    // SAFETY: the data is the writer's trace array, referenced by its
    // open file while the call waits for every CPU.
    let Some(tr) = (unsafe { TraceArray::from_raw(data) }) else {
        return;
    };
    let (p, n) = lists(tr);
    // SAFETY: runs on each CPU with the lists stable (`ftrace_lock`).
    unsafe {
        let cur = crate::task::current();
        if trace_ignore_this_task(p, n, cur) {
            rftrace_tr_set_ignore_pid(data, PID_IGNORE);
        } else {
            rftrace_tr_set_ignore_pid(data, task_pid(cur));
        }
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe fn pid_write(
    file: *mut bindings::file,
    ubuf: *const c_char,
    cnt: usize,
    ppos: *mut bindings::loff_t,
    kind: c_int,
) -> isize {
    if cnt == 0 {
        return 0;
    }
    // SAFETY: a seq file opened by `pid_open`, whose private is the
    // trace array it holds a reference to.
    let tr = unsafe {
        TraceArray::from_raw((*(*file).private_data.cast::<bindings::seq_file>()).private)
    };
    let Some(tr) = tr else {
        return EINVAL.to_errno() as isize;
    };
    let no = kind == TRACE_NO_PIDS;
    let _g = Guard::lock();
    let filtered = slot(tr, no).load(Ordering::Acquire);
    let other = slot(tr, !no).load(Ordering::Acquire);
    let mut new: *mut c_void = ptr::null_mut();
    // SAFETY: the tracing core parses the user's pids into a new list.
    let r = unsafe { trace_pid_write(filtered, &mut new, ubuf, cnt) };
    if r < 0 {
        return r as isize;
    }
    slot(tr, no).store(new, Ordering::Release);
    // SAFETY: sleepable, `ftrace_lock` held.
    unsafe {
        if !filtered.is_null() {
            bindings::synchronize_rcu();
            trace_pid_list_free(filtered);
        } else if !new.is_null() && other.is_null() {
            switch_probe(tr, true);
        }
        bindings::on_each_cpu_cond_mask(
            None,
            Some(ignore_task_cpu),
            tr.as_ptr(),
            true,
            ptr::addr_of!(bindings::__cpu_online_mask),
        );
        update_pid_funcs();
        let _ = ops::update_sites();
        if r > 0 {
            *ppos += r as bindings::loff_t;
        }
    }
    r as isize
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn pid_write_trace(
    f: *mut bindings::file,
    u: *const c_char,
    c: usize,
    p: *mut bindings::loff_t,
) -> isize {
    // SAFETY: per the VFS contract.
    unsafe { pid_write(f, u, c, p, TRACE_PIDS) }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn pid_write_notrace(
    f: *mut bindings::file,
    u: *const c_char,
    c: usize,
    p: *mut bindings::loff_t,
) -> isize {
    // SAFETY: per the VFS contract.
    unsafe { pid_write(f, u, c, p, TRACE_NO_PIDS) }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn pid_release(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: the reference taken at open; then the seq_file goes.
    unsafe {
        crate::sys::trace_array_put((*inode).i_private);
        bindings::seq_release(inode, file)
    }
}

static PID_FOPS: CGlobal<bindings::file_operations> = CGlobal::new(bindings::file_operations {
    open: Some(pid_open_trace),
    write: Some(pid_write_trace),
    read: Some(bindings::seq_read),
    llseek: Some(crate::sys::tracing_lseek),
    release: Some(pid_release),
    ..crate::tracefs::zeroed_fops()
});

static NO_PID_FOPS: CGlobal<bindings::file_operations> = CGlobal::new(bindings::file_operations {
    open: Some(pid_open_notrace),
    write: Some(pid_write_notrace),
    read: Some(bindings::seq_read),
    llseek: Some(crate::sys::tracing_lseek),
    release: Some(pid_release),
    ..crate::tracefs::zeroed_fops()
});

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
