// SPDX-License-Identifier: GPL-2.0

//! The tracing fields of `struct task_struct` the hot paths use, and the
//! recursion guard built on them. The field offsets come from the C
//! compiler (task_offsets.c, at build time): the Rust bindings' layout of
//! `task_struct` is not trusted here (it was found wrong for `pid`).

use crate::base::ffi::rftrace_walk_threads;
use crate::base::archdep::percpu;
use crate::base::sys::{InRcu, NoPreempt};
use crate::logic::recursion;
use core::marker::PhantomData;
use core::ptr::NonNull;
use core::sync::atomic::{compiler_fence, AtomicI32, AtomicPtr, AtomicU64, Ordering};
use kernel::bindings;
use kernel::ffi::c_void;

/// A task, as C passes it.
pub(crate) type Task = *mut bindings::task_struct;

/// The offsets of the fields, from the C compiler (task_offsets.c).
#[allow(dead_code)]
mod off {
    include!(env!("RFTRACE_TASK_OFFSETS"));
}

/// A task that lives for `'a`.
///
/// The task hooks C calls (`ftrace_graph_init_task()` and the like) take
/// it as their `struct task_struct *` parameter (the ABI of a non-null
/// pointer): the fork, exit and idle paths pass a live task.
///
/// # Invariants
///
/// `0` points to a `task_struct` that is alive for `'a`; its tracing
/// fields are accessed atomically, or by the task itself only.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct TaskRef<'a>(NonNull<bindings::task_struct>, PhantomData<&'a ()>);

macro_rules! accessor {
    ($(#[$m:meta])* $name:ident, $field:ident, $ty:ty) => {
        $(#[$m])*
        #[inline(always)]
        #[allow(dead_code)]
        pub(crate) fn $name(self) -> &'a $ty {
            self.field::<$ty>(off::$field)
        }
    };
}

impl<'a> TaskRef<'a> {
    /// The handle of `t`.
    ///
    /// # Safety
    ///
    /// `t` is non-null and points to a task that is alive for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn from_raw(t: Task) -> Self {
        // SAFETY: non-null per the function's contract.
        // INVARIANT: alive for `'a` (the contract).
        TaskRef(unsafe { NonNull::new_unchecked(t) }, PhantomData)
    }

    /// The task, for C.
    #[inline(always)]
    pub(crate) fn as_ptr(self) -> Task {
        self.0.as_ptr()
    }

    #[inline(always)]
    fn field<T>(self, off: usize) -> &'a T {
        let p = self.as_ptr().cast::<u8>().wrapping_add(off).cast::<T>();
        // SAFETY: the task is alive for `'a` (the invariants); the offset
        // comes from the C compiler and the field has the size and
        // alignment of `T`, an atomic of the field's type, through which
        // every access of ours goes.
        unsafe { &*p }
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
}

/// The task this code runs on: alive while the code runs, so while this
/// value, a local of that code (it cannot be sent), lives.
pub(crate) struct Current(PhantomData<*mut ()>);

impl Current {
    #[inline(always)]
    pub(crate) fn get() -> Current {
        Current(PhantomData)
    }

    /// The current task, for as long as `self` is borrowed.
    #[inline(always)]
    pub(crate) fn task(&self) -> TaskRef<'_> {
        // SAFETY: `current` is never null, and the task outlives the code
        // running on it, which `self` does not leave.
        unsafe { TaskRef::from_raw(percpu::current()) }
    }
}

/// Runs `f` holding the current context's recursion bit of the group at
/// `start`, with preemption off (C's `trace_test_and_set_recursion()` and
/// `trace_clear_recursion()`, inlined); `None`, without running it, when
/// the caller is recursing.
#[inline(always)]
pub(crate) fn guarded<R>(start: u32, f: impl FnOnce(&NoPreempt) -> R) -> Option<R> {
    let cur = Current::get();
    let rec = cur.task().recursion();
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

// A `TaskRef` is a pointer to a `task_struct`, whose bindgen type has
// members that are empty C structs: fine behind a pointer.
#[allow(improper_ctypes)]
unsafe extern "C" {
    /// The idle task of a CPU (none for a number that is no possible CPU,
    /// which abi.c checks); an idle task is never freed.
    pub(crate) safe fn rftrace_idle_task(cpu: kernel::ffi::c_int) -> Option<TaskRef<'static>>;
}

/// Calls `f` on every thread, in an RCU read-side section, until it
/// returns false.
pub(crate) fn for_each_thread<F: FnMut(TaskRef<'_>, &InRcu) -> bool>(mut f: F) {
    /// # Safety
    ///
    /// Called by `rftrace_walk_threads()`, in an RCU read-side section,
    /// with a live task and the `arg` given below.
    unsafe extern "C" fn thunk<F: FnMut(TaskRef<'_>, &InRcu) -> bool>(
        t: Task,
        arg: *mut c_void,
    ) -> bool {
        // SAFETY: `arg` is the caller's `F`, alive and not otherwise used
        // during the walk; `t` is a live task, the walk is under RCU.
        unsafe { (*arg.cast::<F>())(TaskRef::from_raw(t), InRcu::assume()) }
    }
    // SAFETY: the callback matches the helper's prototype; `f` outlives
    // the walk.
    unsafe { rftrace_walk_threads(thunk::<F>, core::ptr::addr_of_mut!(f).cast()) };
}
