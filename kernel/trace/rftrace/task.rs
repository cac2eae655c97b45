// SPDX-License-Identifier: GPL-2.0

//! The tracing fields of `struct task_struct` the hot paths use, and the
//! recursion guard built on them. The field offsets come from the C
//! compiler (task_offsets.c, at build time): the Rust bindings' layout of `task_struct` is not
//! trusted here (it was found wrong for `pid`).

use crate::logic::recursion;
use crate::percpu;
use crate::sys::NoPreempt;
use core::sync::atomic::{compiler_fence, AtomicI32, AtomicPtr, AtomicU64, Ordering};
use kernel::bindings;

/// A task.
pub(crate) type Task = *mut bindings::task_struct;

/// The offsets of the fields, from the C compiler (task_offsets.c).
#[allow(dead_code)]
mod off {
    include!(env!("RFTRACE_TASK_OFFSETS"));
}

fn at<T>(t: Task, off: usize) -> *mut T {
    t.cast::<u8>().wrapping_add(off).cast()
}

macro_rules! accessor {
    ($(#[$m:meta])* $name:ident, $field:ident, $ty:ty) => {
        $(#[$m])*
        ///
        /// # Safety
        ///
        /// `t` is a live task; the reference is not used after it is freed.
        #[inline(always)]
        #[allow(dead_code)]
        pub(crate) unsafe fn $name<'a>(t: Task) -> &'a $ty {
            // SAFETY: the offset comes from the C compiler; the
            // field has the size and alignment of `$ty`; every access to
            // it is atomic or by the owning task.
            unsafe { <$ty>::from_ptr(at(t, off::$field)) }
        }
    };
}

accessor!(
    /// `ret_stack`: the shadow stack, or null.
    stack, RET_STACK, AtomicPtr<u64>);
accessor!(
    /// `curr_ret_stack`: the first free word of the shadow stack.
    top, CURR_RET_STACK, AtomicI32);
accessor!(
    /// `curr_ret_depth`: depth of the top frame, -1 when empty.
    depth, CURR_RET_DEPTH, AtomicI32);
accessor!(
    /// `trace_overrun`: pushes refused for lack of room.
    overrun, TRACE_OVERRUN, AtomicI32);
accessor!(
    /// `ftrace_timestamp`: when the task was switched out.
    timestamp, FTRACE_TIMESTAMP, AtomicU64);
accessor!(
    /// `tracing_graph_pause`: graph tracing paused for the task.
    pause, TRACING_GRAPH_PAUSE, AtomicI32);
accessor!(
    /// `trace_recursion`: the recursion guard's bits.
    recursion, TRACE_RECURSION, AtomicU64);
accessor!(
    /// `pid`: set when the task is made.
    pid, PID, AtomicI32);

/// The current task.
#[inline(always)]
pub(crate) fn current() -> Task {
    percpu::current()
}

/// Runs `f` holding the current context's recursion bit of the group at
/// `start`, with preemption off (C's `trace_test_and_set_recursion()` and
/// `trace_clear_recursion()`, inlined); `None`, without running it, when
/// the caller is recursing.
#[inline(always)]
pub(crate) fn guarded<R>(t: Task, start: u32, f: impl FnOnce(&NoPreempt) -> R) -> Option<R> {
    // SAFETY: `t` is the current task, alive while this runs.
    let rec = unsafe { recursion(t) };
    let val = rec.load(Ordering::Relaxed);
    let bit = recursion::take_bit(val, percpu::preempt_count(), start)?;
    rec.store(val | (1 << bit), Ordering::Relaxed);
    compiler_fence(Ordering::SeqCst);
    percpu::preempt_disable();
    // SAFETY: preemption is off until after `f` returns.
    let r = f(unsafe { NoPreempt::assume() });
    percpu::preempt_enable();
    compiler_fence(Ordering::SeqCst);
    rec.store(rec.load(Ordering::Relaxed) & !(1 << bit), Ordering::Relaxed);
    Some(r)
}
