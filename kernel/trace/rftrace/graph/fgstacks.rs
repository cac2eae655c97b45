// SPDX-License-Identifier: GPL-2.0

//! The function graph core's task memory: every task's shadow stack,
//! given to all tasks when the first graph ops comes, to new tasks and
//! CPUs while one is registered, and taken back when the last goes.

use crate::base::ffi::rftrace_next_online_cpu;
use crate::base::sys::{CMutex, Held, PreemptOff};
use crate::base::task::{for_each_thread, rftrace_idle_task, TaskRef};
use crate::graph::shadow::{Fresh, Taken, TaskStack};
use core::sync::atomic::{AtomicI32, Ordering};
use kernel::ffi::{c_int, c_uint};
use kernel::prelude::*;

/// How many graph ops are registered (C's `ftrace_graph_active`).
#[no_mangle]
pub static ftrace_graph_active: AtomicI32 = AtomicI32::new(0);

/// Initialises the graph state of idle task `t`; while graph tracing
/// runs it gets a stack: the one `reuse` takes back from it, or a new one.
pub(crate) fn init_idle(t: TaskRef<'_>, reuse: impl FnOnce(TaskRef<'_>) -> Option<Fresh>) {
    t.top().store(0, Ordering::Relaxed);
    t.depth().store(-1, Ordering::Relaxed);
    if ftrace_graph_active.load(Ordering::Relaxed) == 0 {
        return;
    }
    if let Some(s) = reuse(t).or_else(Fresh::alloc) {
        // Out of the task now; `IDLE_LOCK` or boot keeps other givers out.
        let _ = s.give(t);
    }
}

const POOL: usize = 32;

fn online_cpus() -> impl Iterator<Item = c_int> {
    let mut cpu: c_int = -1;
    core::iter::from_fn(move || {
        let next = rftrace_next_online_cpu(cpu);
        if next < 0 || next as c_uint >= crate::base::ffi::nr_cpu_ids {
            return None;
        }
        cpu = next;
        Some(next)
    })
}

/// Gives every task a stack (`ftrace_lock` is held; `ftrace_graph_active`
/// is not 0).
pub(crate) fn give_stacks(_held: &Held) -> Result {
    for cpu in online_cpus() {
        give_idle_stack(cpu);
    }
    loop {
        // What is not given away is freed when the pool drops.
        let mut pool: [Option<Fresh>; POOL] = [const { None }; POOL];
        let mut oom = false;
        for s in pool.iter_mut() {
            *s = Fresh::alloc();
            oom |= s.is_none();
        }
        let mut short = false;
        if !oom {
            let mut next = pool.iter_mut();
            for_each_thread(|t, _| {
                if !t.stack().load(Ordering::Relaxed).is_null() {
                    return true;
                }
                let Some(s) = next.next().and_then(Option::take) else {
                    short = true;
                    return false;
                };
                // A task without a stack; `ftrace_lock` (held) keeps the
                // other givers out, and a task forked meanwhile got its
                // own stack before it was listed.
                let _ = s.give(t);
                true
            });
        }
        if oom {
            return Err(ENOMEM);
        }
        if !short {
            return Ok(());
        }
    }
}

/// Stacks taken back per pass when no list of the task count's size can
/// be allocated.
const REAP: usize = 64;

/// Takes their stacks back from the tasks not inside a traced function,
/// and hands them to RCU, which frees them once every reader is gone (no
/// wait here): normally one pass over the tasks, whatever their number;
/// a pass per [`REAP`] stacks only when the list for all of them cannot
/// be allocated.
/// `ftrace_lock` is held; no graph ops is registered and no CPU is in the
/// entry path any more.
pub(crate) fn take_stacks(_held: &Held) {
    let mut tasks = 0usize;
    for_each_thread(|_, _| {
        tasks = tasks.wrapping_add(1);
        true
    });
    // Room for the tasks forked since the count too; a pass that runs out
    // of room is followed by another.
    let want = tasks.saturating_add(tasks / 8).saturating_add(REAP);
    let mut list = KVVec::<Option<Taken>>::new();
    let whole = list.reserve(want, GFP_KERNEL).is_ok()
        && (0..want).all(|_| list.push(None, GFP_KERNEL).is_ok());
    let mut fallback = [const { None }; REAP];
    let buf: &mut [Option<Taken>] = if whole {
        list.as_mut_slice()
    } else {
        &mut fallback
    };
    loop {
        let (mut n, mut full) = (0, false);
        for_each_thread(|t, _| {
            let stack = t.stack();
            if stack.load(Ordering::Relaxed).is_null() || t.top().load(Ordering::Relaxed) != 0 {
                // None, or still inside a traced function: it needs it to
                // return.
                return true;
            }
            let Some(slot) = buf.get_mut(n) else {
                full = true;
                return false;
            };
            // The exit path may take it at the same time: one of us gets it.
            if let Some(s) = t.take_stack() {
                *slot = Some(s);
                n = n.wrapping_add(1);
            }
            true
        });
        if n == 0 {
            return;
        }
        // No CPU is in the entry path (the caller waited for that): who
        // may still read a stack just taken is the unwinder of another
        // task, under RCU with preemption off.
        Taken::free_after_grace(&mut buf[..n]);
        if !full {
            return;
        }
    }
}

/// Zeroes every task's variable of index `idx`, which is being registered
/// (`ftrace_lock` is held): no callback uses it yet.
pub(crate) fn zero_task_vars(_held: &Held, idx: usize) {
    for cpu in online_cpus() {
        if let Some(idle) = rftrace_idle_task(cpu) {
            let p = PreemptOff::new();
            if let Some(mut s) = TaskStack::of(idle, p.token()) {
                s.init_task_var(idx);
            }
        }
    }
    for_each_thread(|t, rcu| {
        if let Some(mut s) = TaskStack::of(t, rcu) {
            s.init_task_var(idx);
        }
        true
    });
}

/// CPU hotplug: a CPU coming online gets a stack for its idle task.
pub(crate) extern "C" fn cpu_online(cpu: c_uint) -> c_int {
    give_idle_stack(cpu as c_int);
    0
}

/// Serializes giving the idle tasks their stacks. A CPU coming online
/// does it without `ftrace_lock`, which it may not take (a holder of
/// `ftrace_lock` can wait for CPU hotplug: the cpuhp registration below,
/// the rude RCU-tasks grace period of an unregistration), while a graph
/// registration does it with `ftrace_lock`. Without this lock both could
/// find the idle task without a stack and both give one: the second
/// would reset the first while the idle task already runs on it.
static IDLE_LOCK: CMutex = CMutex::new();

/// Initialises the lock of the idle tasks' stacks (boot).
pub(crate) fn init_locks() {
    crate::base::sys::cmutex_init!(IDLE_LOCK, "ftrace_graph_idle_lock");
}

/// Gives the idle task of `cpu` (online or coming online) a stack if it
/// has none.
fn give_idle_stack(cpu: c_int) {
    let _i = IDLE_LOCK.lock();
    // `IDLE_LOCK` makes the test and the gift one step.
    if let Some(idle) = rftrace_idle_task(cpu) {
        if idle.stack().load(Ordering::Relaxed).is_null() {
            // It has none to reuse.
            init_idle(idle, |_| None);
        }
    }
}
