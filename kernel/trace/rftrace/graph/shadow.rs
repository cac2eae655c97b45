// SPDX-License-Identifier: GPL-2.0

//! A task's shadow stack as the generic code of `logic/retstack.rs` sees
//! it: the words of the stack the task points to and the three counters in
//! its `task_struct`. The operations themselves (push, reserve, commit,
//! return, the walks) are that module's, the code the host tests run.
//!
//! Every word and counter is read and written one at a time with relaxed
//! atomics: an interrupt on the task pushes and pops above the top while
//! the task is between two stores, and unwinders on other CPUs walk the
//! stack at any time.

use crate::base::cells::Retired;
use crate::base::sys::ReadSide;
use crate::base::task::{Current, TaskRef};
use crate::logic::fgraph::{Words, SHADOW_STACK_SIZE, SHADOW_STACK_WORDS};
use crate::logic::retstack::{RetStack, StackMem};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::bindings;
use kernel::prelude::*;

/// The storage of one task's shadow stack.
///
/// # Invariants
///
/// `p` points to `SHADOW_STACK_WORDS` aligned words that stay allocated
/// for `'a`: either the stack `t` published (the core frees a published
/// stack only after taking it out of its task and waiting for an RCU
/// grace period that the holders of this value, which run with
/// preemption off, in an RCU read-side section, or are the task itself,
/// delay), or one not yet published.
pub(crate) struct TaskStack<'a> {
    t: TaskRef<'a>,
    p: NonNull<u64>,
}

/// A task's shadow stack.
pub(crate) type Shadow<'a> = RetStack<TaskStack<'a>>;

impl<'a> TaskStack<'a> {
    #[inline(always)]
    fn published(t: TaskRef<'a>) -> Option<Shadow<'a>> {
        // Acquire: the counters the task's stack was published with.
        let p = NonNull::new(t.stack().load(Ordering::Acquire))?;
        // INVARIANT: the callers hold what keeps a published stack (see
        // the type).
        Some(RetStack::on(TaskStack { t, p }))
    }

    /// The stack of `t`, if it has one, read where a grace period waits
    /// for the reader (`_rs`: preemption off, or RCU).
    #[inline(always)]
    pub(crate) fn of(t: TaskRef<'a>, _rs: &'a impl ReadSide) -> Option<Shadow<'a>> {
        Self::published(t)
    }

    /// The current task's stack, if it has one (it cannot lose it while
    /// it runs).
    #[inline(always)]
    pub(crate) fn of_current(cur: &'a Current) -> Option<Shadow<'a>> {
        Self::published(cur.task())
    }

    /// The address of word `i`, for the C callers that are given one.
    pub(crate) fn word_ptr(&self, i: usize) -> *mut u64 {
        self.p.as_ptr().wrapping_add(i)
    }

    /// Word `i`, for the callers that read or change one in place.
    #[inline(always)]
    pub(crate) fn cell(&self, i: usize) -> Option<&AtomicU64> {
        // SAFETY: in range, and alive by the type's invariant; every
        // access to the words is atomic.
        (i < SHADOW_STACK_WORDS).then(|| unsafe { AtomicU64::from_ptr(self.p.as_ptr().add(i)) })
    }
}

impl Words for TaskStack<'_> {
    #[inline(always)]
    fn word(&self, i: usize) -> Option<u64> {
        self.cell(i).map(|c| c.load(Ordering::Relaxed))
    }
}

impl StackMem for TaskStack<'_> {
    #[inline(always)]
    fn set_word(&mut self, i: usize, v: u64) {
        if let Some(c) = self.cell(i) {
            c.store(v, Ordering::Relaxed);
        }
    }

    #[inline(always)]
    fn top(&self) -> usize {
        // A negative value reads as 2^31 or more: above `STACK_LIMIT`, as
        // the trait asks, in one zero extension.
        self.t.top().load(Ordering::Relaxed) as u32 as usize
    }

    #[inline(always)]
    fn set_top(&mut self, top: usize) {
        // The generic code stores offsets below `STACK_LIMIT` only.
        self.t.top().store(top as i32, Ordering::Relaxed);
    }

    #[inline(always)]
    fn depth(&self) -> i32 {
        self.t.depth().load(Ordering::Relaxed)
    }

    #[inline(always)]
    fn set_depth(&mut self, depth: i32) {
        self.t.depth().store(depth, Ordering::Relaxed);
    }

    #[inline(always)]
    fn overrun(&self) -> u32 {
        self.t.overrun().load(Ordering::Relaxed) as u32
    }

    #[inline(always)]
    fn set_overrun(&mut self, n: u32) {
        self.t.overrun().store(n as i32, Ordering::Relaxed);
    }
}

/// A shadow stack no task holds and nobody reads: freshly allocated, or
/// taken out of its task and waited for. Freed when dropped.
///
/// # Invariants
///
/// `0` is a `kmalloc` allocation of `SHADOW_STACK_SIZE` bytes (aligned
/// words) that only this value refers to.
pub(crate) struct Fresh(NonNull<u64>);

impl Fresh {
    /// A new stack; none when memory is short.
    pub(crate) fn alloc() -> Option<Fresh> {
        // SAFETY: plain allocation; null is checked.
        let p = unsafe { bindings::__kmalloc_noprof(SHADOW_STACK_SIZE, bindings::GFP_KERNEL) };
        // INVARIANT: a new allocation of that size, ours alone.
        NonNull::new(p.cast()).map(Fresh)
    }

    /// Gives the stack, empty, to `t` if `t` has none; gives it back if
    /// `t` has one. The givers are serialized by their callers (fork, the
    /// idle lock, `ftrace_lock`); should two race anyway, one publishes
    /// and the other gets its stack back.
    pub(crate) fn give(self, t: TaskRef<'_>) -> Result<(), Fresh> {
        let slot = t.stack();
        if !slot.load(Ordering::Relaxed).is_null() {
            return Err(self);
        }
        // INVARIANT: ours alone, alive while `self` is; only the counters
        // of `t` (atomics) and words of this stack are written.
        RetStack::on(TaskStack { t, p: self.0 }).reset();
        t.timestamp().store(0, Ordering::Relaxed);
        // Release: the fields above before the stack.
        match slot.compare_exchange(
            core::ptr::null_mut(),
            self.0.as_ptr(),
            Ordering::Release,
            Ordering::Relaxed,
        ) {
            Ok(_) => {
                // Published: the task owns it now.
                core::mem::forget(self);
                Ok(())
            }
            Err(_) => Err(self),
        }
    }
}

impl Drop for Fresh {
    fn drop(&mut self) {
        // SAFETY: ours alone (the invariants), unused from now on.
        unsafe { bindings::kfree(self.0.as_ptr().cast()) };
    }
}

/// A shadow stack taken out of its task: an unwinder of another task may
/// still be reading it (under RCU, with preemption off) until a grace
/// period has passed. Never freed while it may be read: [`Taken::free_after_grace`]
/// hands it to RCU; dropped otherwise, it is leaked.
///
/// # Invariants
///
/// `0` is a stack of [`Fresh::alloc`] that a task was given and that was
/// taken out of it; nothing refers to it but such readers.
pub(crate) struct Taken(NonNull<u64>);

impl TaskRef<'_> {
    /// Takes the task's shadow stack out of it (none: it had none). The
    /// exit path and the reaper may both try: one of them gets it.
    pub(crate) fn take_stack(self) -> Option<Taken> {
        let p = self.stack().swap(core::ptr::null_mut(), Ordering::AcqRel);
        // INVARIANT: the stacks tasks hold come from `Fresh::alloc` (given
        // by `Fresh::give`); the swap made it ours alone but for readers.
        NonNull::new(p).map(Taken)
    }
}

impl Taken {
    /// Frees the stacks of `stacks` once a grace period, which waits out
    /// every reader, has passed, without waiting for it: RCU frees them
    /// together in one callback. Without memory for that, it waits here
    /// and frees them now (sleeps).
    pub(crate) fn free_after_grace(stacks: &mut [Option<Taken>]) {
        let n = stacks.iter().flatten().count();
        if n == 0 {
            return;
        }
        let room = KVVec::with_capacity(n, GFP_KERNEL)
            .ok()
            .zip(KBox::<TakenBatch>::new_uninit(GFP_KERNEL).ok());
        let Some((mut batch, b)) = room else {
            crate::base::sys::synchronize_rcu();
            for t in stacks.iter_mut().filter_map(Option::take) {
                // SAFETY: every reader that could see it began before it
                // was taken out of its task, and the grace period above
                // waited them out.
                drop(unsafe { t.unread() });
            }
            return;
        };
        for t in stacks.iter_mut().filter_map(Option::take) {
            // Within the capacity: it does not fail (had it, the stack
            // would be dropped, so leaked, which is safe).
            let _ = batch.push_within_capacity(t);
        }
        let b = KBox::into_raw(KBox::write(b, TakenBatch(batch)));
        // SAFETY: from `KBox::into_raw`, published nowhere; its stacks are
        // referred to only by readers that found them in their tasks
        // before they were taken out, which a grace period begun now
        // waits out before `TakenBatch` drops (its invariant).
        unsafe { Retired::from_raw(NonNull::new_unchecked(b)) }.defer();
    }

    /// The stack as one nobody reads, at once.
    ///
    /// # Safety
    ///
    /// No unwinder can be reading it: its task is gone (nobody runs or
    /// unwinds it any more), or it is an idle task being initialised.
    pub(crate) unsafe fn unread(self) -> Fresh {
        // INVARIANT: nobody reads it (the contract).
        Fresh(core::mem::ManuallyDrop::new(self).0)
    }
}

/// Stacks taken out of their tasks, freed together when it drops.
///
/// # Invariants
///
/// It drops only once a grace period has passed since each of its stacks
/// was taken out of its task: made only by [`Taken::free_after_grace`],
/// which hands it to RCU at once (`Retired::defer`, whose fallback waits
/// for one before it drops it).
struct TakenBatch(KVVec<Taken>);

// SAFETY: the stacks are plain memory that the batch alone owns (their
// readers only read); RCU may free them on another CPU.
unsafe impl Send for TakenBatch {}

impl Drop for TakenBatch {
    fn drop(&mut self) {
        for t in core::mem::replace(&mut self.0, KVVec::new()) {
            // SAFETY: a grace period has passed since it was taken out of
            // its task (the invariants): no reader is left.
            drop(unsafe { t.unread() });
        }
    }
}
