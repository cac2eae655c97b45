// SPDX-License-Identifier: GPL-2.0

//! The function graph core's task memory: every task's shadow stack,
//! given to all tasks when the first graph ops comes, to new tasks and
//! CPUs while one is registered, and taken back when the last goes.

use crate::logic::fgraph::SHADOW_STACK_SIZE;
use crate::shadow::TaskStack;
use crate::sys::{CGlobal, Guard};
use crate::task::{self as field, Task};
use core::ptr;
use core::sync::atomic::{AtomicI32, Ordering};
use kernel::bindings;
use kernel::ffi::{c_int, c_uint, c_void};
use kernel::prelude::*;

/// How many graph ops are registered (C's `ftrace_graph_active`).
#[no_mangle]
pub static ftrace_graph_active: AtomicI32 = AtomicI32::new(0);

// Bindgen types of C structs are fine behind pointers.
#[allow(improper_ctypes)]
extern "C" {
    fn rftrace_idle_task(cpu: c_int) -> Task;
    fn rftrace_next_online_cpu(prev: c_int) -> c_int;
    fn rftrace_walk_threads(
        f: unsafe extern "C" fn(t: Task, arg: *mut c_void) -> bool,
        arg: *mut c_void,
    );
}

fn alloc_stack() -> *mut u64 {
    // SAFETY: plain allocation; null is handled by the callers.
    unsafe { bindings::__kmalloc_noprof(SHADOW_STACK_SIZE, bindings::GFP_KERNEL) }.cast()
}

/// Gives `t` the empty stack `p`.
///
/// # Safety
///
/// `t` is a live task without a stack; `p` is an unused stack.
unsafe fn give_stack(t: Task, p: *mut u64) {
    // SAFETY: per the function's contract.
    unsafe { TaskStack::unpublished(t, p) }.reset();
    // SAFETY: per the function's contract.
    unsafe {
        field::timestamp(t).store(0, Ordering::Relaxed);
        // Release: the fields above before the stack.
        field::stack(t).store(p, Ordering::Release);
    }
}

/// A new task: it does not share its parent's stack, and gets its own
/// while graph tracing runs.
///
/// # Safety
///
/// `t` is a task being created.
#[no_mangle]
pub unsafe extern "C" fn ftrace_graph_init_task(t: Task) {
    // SAFETY: per the function's contract.
    unsafe {
        field::stack(t).store(ptr::null_mut(), Ordering::Relaxed);
        field::top(t).store(0, Ordering::Relaxed);
        field::depth(t).store(-1, Ordering::Relaxed);
    }
    if ftrace_graph_active.load(Ordering::Relaxed) != 0 {
        let p = alloc_stack();
        if !p.is_null() {
            // SAFETY: a new task, a new stack.
            unsafe { give_stack(t, p) };
        }
    }
}

/// An idle task (at boot or CPU bring-up): keeps the stack it had.
///
/// # Safety
///
/// `t` is the idle task of `cpu`.
#[no_mangle]
pub unsafe extern "C" fn ftrace_graph_init_idle_task(t: Task, _cpu: c_int) {
    // SAFETY: per the function's contract.
    unsafe {
        field::top(t).store(0, Ordering::Relaxed);
        field::depth(t).store(-1, Ordering::Relaxed);
    }
    if ftrace_graph_active.load(Ordering::Relaxed) == 0 {
        return;
    }
    // SAFETY: as above.
    let mut p = unsafe { field::stack(t) }.swap(ptr::null_mut(), Ordering::Relaxed);
    if p.is_null() {
        p = alloc_stack();
    }
    if !p.is_null() {
        // SAFETY: the stack is out of the task and reset.
        unsafe { give_stack(t, p) };
    }
}

/// A task being freed.
///
/// # Safety
///
/// `t` is a task nobody runs or unwinds any more.
#[no_mangle]
pub unsafe extern "C" fn ftrace_graph_exit_task(t: Task) {
    // SAFETY: per the function's contract.
    let p = unsafe { field::stack(t) }.swap(ptr::null_mut(), Ordering::AcqRel);
    if !p.is_null() {
        // SAFETY: the task's own allocation, taken out of it.
        unsafe { bindings::kfree(p.cast()) };
    }
}

const POOL: usize = 32;

struct Pool {
    stacks: [*mut u64; POOL],
    used: usize,
    short: bool,
}

/// Gives `t` a stack from the pool `arg`, if it has none.
///
/// # Safety
///
/// Called by `rftrace_walk_threads()`, under RCU, with a live task
/// and the `arg` its caller passed.
unsafe extern "C" fn give_from_pool(t: Task, arg: *mut c_void) -> bool {
    // SAFETY: `arg` is the caller's pool; `t` is alive under RCU.
    unsafe {
        let pool = &mut *arg.cast::<Pool>();
        if !field::stack(t).load(Ordering::Relaxed).is_null() {
            return true;
        }
        let Some(&p) = pool.stacks.get(pool.used) else {
            pool.short = true;
            return false;
        };
        pool.used += 1;
        give_stack(t, p);
    }
    true
}

fn online_cpus() -> impl Iterator<Item = c_int> {
    let mut cpu: c_int = -1;
    core::iter::from_fn(move || {
        // SAFETY: reads the online mask.
        let next = unsafe { rftrace_next_online_cpu(cpu) };
        // SAFETY: reads a boot-time constant.
        if next < 0 || next as c_uint >= unsafe { bindings::nr_cpu_ids } {
            return None;
        }
        cpu = next;
        Some(next)
    })
}

/// Gives every task a stack.
///
/// # Safety
///
/// `ftrace_lock` is held; `ftrace_graph_active` is not 0.
pub(crate) unsafe fn give_stacks() -> Result {
    for cpu in online_cpus() {
        // SAFETY: an online CPU.
        unsafe { give_idle_stack(cpu) };
    }
    loop {
        let mut pool = Pool {
            stacks: [ptr::null_mut(); POOL],
            used: 0,
            short: false,
        };
        let mut oom = false;
        for s in pool.stacks.iter_mut() {
            *s = alloc_stack();
            oom |= s.is_null();
        }
        if !oom {
            // SAFETY: the callback matches; `pool` outlives the walk.
            unsafe { rftrace_walk_threads(give_from_pool, ptr::addr_of_mut!(pool).cast()) };
        }
        for s in pool.stacks.iter().skip(pool.used) {
            // SAFETY: unused allocations (kfree(NULL) is fine).
            unsafe { bindings::kfree(s.cast()) };
        }
        if oom {
            return Err(ENOMEM);
        }
        if !pool.short {
            return Ok(());
        }
    }
}

/// Stacks taken back per pass when no list of the task count's size can
/// be allocated: each pass then costs one grace period.
const REAP: usize = 64;

/// The stacks one pass takes back, into `buf[..n]`.
struct Reap<'a> {
    buf: &'a mut [*mut u64],
    n: usize,
    full: bool,
}

/// Counts the tasks (`arg` points at a `usize`).
///
/// # Safety
///
/// Called by `rftrace_walk_threads()` with the `arg` its caller passed.
unsafe extern "C" fn count_task(_t: Task, arg: *mut c_void) -> bool {
    // SAFETY: `arg` is the caller's counter.
    unsafe { *arg.cast::<usize>() += 1 };
    true
}

/// Takes `t`'s stack into the list `arg`, unless `t` is inside a traced
/// function.
///
/// # Safety
///
/// Called by `rftrace_walk_threads()`, under RCU, with a live task
/// and the `arg` its caller passed.
unsafe extern "C" fn take_idle_stack(t: Task, arg: *mut c_void) -> bool {
    // SAFETY: `arg` is the caller's list; `t` is alive under RCU.
    unsafe {
        let r = &mut *arg.cast::<Reap<'_>>();
        let stack = field::stack(t);
        if stack.load(Ordering::Relaxed).is_null() || field::top(t).load(Ordering::Relaxed) != 0 {
            // None, or still inside a traced function: it needs it to return.
            return true;
        }
        let Some(slot) = r.buf.get_mut(r.n) else {
            r.full = true;
            return false;
        };
        // The exit path may take it at the same time: one of us gets it.
        let p = stack.swap(ptr::null_mut(), Ordering::AcqRel);
        if !p.is_null() {
            *slot = p;
            r.n += 1;
        }
    }
    true
}

/// Takes their stacks back from the tasks not inside a traced function,
/// and frees them after one wait for every reader: normally one pass over
/// the tasks and one wait, whatever their number; a pass per [`REAP`]
/// stacks only when the list for all of them cannot be allocated.
///
/// # Safety
///
/// `ftrace_lock` is held; no graph ops is registered and no CPU is in
/// the entry path any more.
pub(crate) unsafe fn take_stacks() {
    let mut tasks = 0usize;
    // SAFETY: the callback matches; `tasks` outlives the walk.
    unsafe { rftrace_walk_threads(count_task, ptr::addr_of_mut!(tasks).cast()) };
    // Room for the tasks forked since the count too; a pass that runs out
    // of room is followed by another.
    let want = tasks + tasks / 8 + REAP;
    let mut list = KVVec::<*mut u64>::new();
    let whole = list.extend_with(want, ptr::null_mut(), GFP_KERNEL).is_ok();
    let mut fallback = [ptr::null_mut(); REAP];
    let buf: &mut [*mut u64] = if whole {
        list.as_mut_slice()
    } else {
        &mut fallback
    };
    loop {
        let mut r = Reap {
            buf: &mut *buf,
            n: 0,
            full: false,
        };
        // SAFETY: the callback matches; `r` outlives the walk.
        unsafe { rftrace_walk_threads(take_idle_stack, ptr::addr_of_mut!(r).cast()) };
        let (n, full) = (r.n, r.full);
        if n == 0 {
            return;
        }
        // No CPU is in the entry path (the caller waited for that): who
        // may still read a stack just taken is the unwinder of another
        // task, under RCU with preemption off.
        // SAFETY: may sleep; `ftrace_lock` is a mutex.
        unsafe { bindings::synchronize_rcu() };
        for p in buf.iter().take(n) {
            // SAFETY: taken out of their tasks, no reader left.
            unsafe { bindings::kfree(p.cast()) };
        }
        if !full {
            return;
        }
    }
}

/// Zeroes `t`'s task variable of index `arg`.
///
/// # Safety
///
/// Called by `rftrace_walk_threads()`, under RCU, with a live task
/// and the `arg` its caller passed.
unsafe extern "C" fn zero_task_var(t: Task, arg: *mut c_void) -> bool {
    let idx = arg as usize;
    // SAFETY: `t` is alive under RCU, whose grace period a stack's free
    // waits for; only the variable of an index no callback uses yet is
    // written.
    let s = unsafe { TaskStack::of(t) };
    if let Some(mut s) = s {
        s.init_task_var(idx);
    }
    true
}

/// Zeroes every task's variable of index `idx`.
///
/// # Safety
///
/// `ftrace_lock` is held; `idx` is being registered.
pub(crate) unsafe fn zero_task_vars(idx: usize) {
    for cpu in online_cpus() {
        // SAFETY: the idle task of an online CPU.
        unsafe {
            let idle = rftrace_idle_task(cpu);
            if !idle.is_null() {
                zero_task_var(idle, idx as *mut c_void);
            }
        }
    }
    // SAFETY: the callback matches.
    unsafe { rftrace_walk_threads(zero_task_var, idx as *mut c_void) };
}

/// CPU hotplug: a CPU coming online gets a stack for its idle task.
///
/// # Safety
///
/// Called by the CPU hotplug core for that CPU.
pub(crate) unsafe extern "C" fn cpu_online(cpu: c_uint) -> c_int {
    // SAFETY: a CPU coming online.
    unsafe { give_idle_stack(cpu as c_int) };
    0
}

/// Serializes giving the idle tasks their stacks. A CPU coming online
/// does it without `ftrace_lock`, which it may not take (a holder of
/// `ftrace_lock` can wait for CPU hotplug: the cpuhp registration below,
/// the rude RCU-tasks grace period of an unregistration), while a graph
/// registration does it with `ftrace_lock`. Without this lock both could
/// find the idle task without a stack and both give one: the second
/// would reset the first while the idle task already runs on it.
static IDLE_LOCK: CGlobal<bindings::mutex> = CGlobal::new(
    // SAFETY: all-zero, then initialised by `init_locks()` at boot.
    unsafe { core::mem::zeroed() },
);

/// # Safety
///
/// Early boot, once.
pub(crate) unsafe fn init_locks() {
    // SAFETY: per the function's contract.
    unsafe { crate::sys::mutex_init!(IDLE_LOCK.get(), "ftrace_graph_idle_lock") };
}

/// Gives the idle task of `cpu` a stack if it has none.
///
/// # Safety
///
/// `cpu` is online or coming online.
unsafe fn give_idle_stack(cpu: c_int) {
    let _i = Guard::of(IDLE_LOCK.get());
    // SAFETY: the idle task of such a CPU exists for good; `IDLE_LOCK`
    // makes the test and the gift one step.
    unsafe {
        let idle = rftrace_idle_task(cpu);
        if !idle.is_null() && field::stack(idle).load(Ordering::Relaxed).is_null() {
            ftrace_graph_init_idle_task(idle, cpu);
        }
    }
}
