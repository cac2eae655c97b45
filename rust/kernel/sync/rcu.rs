// SPDX-License-Identifier: GPL-2.0

//! Read-copy update: read-side sections and the waits for them.
//!
//! A reader holds a [`Guard`] while it uses what an updater may retire; an
//! updater that took an object out of readers' reach waits with
//! [`synchronize_rcu`] before freeing it. The tasks flavours wait for what
//! a plain grace period does not cover: [`synchronize_rcu_tasks`] for every
//! task to be off the CPU voluntarily (no task still runs code being
//! retired), [`synchronize_rcu_tasks_rude`] for every CPU to schedule (also
//! those where RCU does not watch).
//!
//! Waiting for a grace period sleeps, which a caller in atomic context must
//! not do; lockdep and `might_sleep()` report that, it corrupts no memory,
//! so the waits are safe functions.
//!
//! An [`RcuBox`] is a value readers find inside a read side ([`ReadSide`])
//! and writers replace whole; what a writer takes out is [`Retired`]:
//! freed after a grace period, by the writer's wait or by RCU's callback.
//!
//! C header: [`include/linux/rcupdate.h`](srctree/include/linux/rcupdate.h)
//!
//! # Examples
//!
//! ```
//! use kernel::sync::rcu;
//!
//! assert!(rcu::is_watching());
//! let guard = rcu::read_lock();
//! // What RCU protects may be read here.
//! drop(guard);
//! rcu::synchronize_rcu();
//! rcu::synchronize_rcu_tasks();
//! ```

use crate::alloc::{flags::GFP_KERNEL, KBox};
use crate::bindings;
use crate::types::Opaque;
use core::marker::PhantomData;
use core::ptr::{self, NonNull};
use core::sync::atomic::{AtomicPtr, Ordering};

/// An RCU read-side section, for as long as the guard lives on this task
/// (it cannot move to another: it is not `Send`).
pub struct Guard(PhantomData<*mut ()>);

impl Guard {
    /// Enters a read-side section.
    #[inline]
    pub fn new() -> Self {
        // SAFETY: paired with the unlock in `drop`, on this task.
        unsafe { bindings::rcu_read_lock() };
        Guard(PhantomData)
    }

    /// Leaves the section.
    #[inline]
    pub fn unlock(self) {}
}

impl Default for Guard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the section `new` entered, on this task.
        unsafe { bindings::rcu_read_unlock() };
    }
}

/// Enters a read-side section, until the guard is dropped.
#[inline]
pub fn read_lock() -> Guard {
    Guard::new()
}

/// Waits until every CPU left the read-side (and preemption-off) sections
/// it was in when called.
pub fn synchronize_rcu() {
    // SAFETY: no precondition; it sleeps.
    unsafe { bindings::synchronize_rcu() };
}

/// Waits until every task was off the CPU voluntarily (or in user space,
/// or idle) since the call.
pub fn synchronize_rcu_tasks() {
    #[cfg(CONFIG_TASKS_RCU)]
    // SAFETY: no precondition; it sleeps.
    unsafe {
        bindings::synchronize_rcu_tasks()
    };
    #[cfg(not(CONFIG_TASKS_RCU))]
    synchronize_rcu();
}

/// Waits until every online CPU scheduled since the call, those where RCU
/// does not watch included.
#[cfg(CONFIG_TASKS_RUDE_RCU)]
pub fn synchronize_rcu_tasks_rude() {
    // SAFETY: no precondition; it sleeps.
    unsafe { bindings::synchronize_rcu_tasks_rude() };
}

/// Whether RCU watches this CPU now (not in the idle loop, nor on the way
/// into or out of user space or an NMI where it does not). Callable in any
/// context, and not traced.
#[inline]
pub fn is_watching() -> bool {
    #[cfg(not(CONFIG_TINY_RCU))]
    // SAFETY: no precondition.
    return unsafe { bindings::rcu_is_watching() };
    #[cfg(CONFIG_TINY_RCU)]
    return true;
}

/// What RCU's grace periods wait for while a reference to it lives: a
/// read-side section ([`Guard`]), or what RCU counts as one (preemption or
/// interrupts off, which a user of this trait proves with a type of its
/// own).
///
/// # Safety
///
/// While a reference to a value of the implementing type lives, the task
/// is in a section that [`synchronize_rcu`] waits for.
pub unsafe trait ReadSide {}

// SAFETY: a guard is a read-side section for as long as it lives.
unsafe impl ReadSide for Guard {}

/// A value readers find inside a read side, replaced whole by writers
/// that serialize among themselves (a lock all of them take); a replaced
/// value is freed after a grace period ([`Retired`]).
///
/// # Examples
///
/// ```
/// use kernel::prelude::*;
/// use kernel::sync::rcu::{self, RcuBox};
///
/// let b = RcuBox::new();
/// // SAFETY: this example is the box's only writer.
/// let old = unsafe { b.swap(Some(KBox::new(7u32, GFP_KERNEL)?)) };
/// assert!(old.is_none());
/// let guard = rcu::read_lock();
/// assert_eq!(b.get(&guard), Some(&7));
/// drop(guard);
/// // SAFETY: as above.
/// let old = unsafe { b.swap(Some(KBox::new(8u32, GFP_KERNEL)?)) };
/// // Waits for the readers of 7, then frees it.
/// drop(old);
/// // SAFETY: as above.
/// assert_eq!(unsafe { b.get_locked() }, Some(&8));
/// # Ok::<(), Error>(())
/// ```
///
/// # Invariants
///
/// `ptr` is null or from `KBox::into_raw`, owned by the box. It changes
/// only in [`RcuBox::swap`], and the value it replaces is freed only
/// after a grace period that began after the change.
pub struct RcuBox<T> {
    ptr: AtomicPtr<T>,
    _owns: PhantomData<KBox<T>>,
}

// SAFETY: readers on any CPU share the value (`T: Sync`); a writer on any
// CPU may take it out and free it, or have RCU free it (`T: Send`).
unsafe impl<T: Send + Sync> Sync for RcuBox<T> {}

impl<T> RcuBox<T> {
    /// An empty box.
    pub const fn new() -> Self {
        // INVARIANT: null.
        RcuBox {
            ptr: AtomicPtr::new(ptr::null_mut()),
            _owns: PhantomData,
        }
    }
}

impl<T> Default for RcuBox<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Sync> RcuBox<T> {
    /// The value, for as long as the reader's read side lasts.
    pub fn get<'a>(&'a self, _r: &'a impl ReadSide) -> Option<&'a T> {
        // SAFETY: null or a live box (the invariants): one replaced while
        // `'a` lasts is freed only after a grace period, which waits for
        // the read side `_r` proves.
        unsafe { self.ptr.load(Ordering::Acquire).as_ref() }
    }

    /// The value, for a writer.
    ///
    /// # Safety
    ///
    /// The caller holds the lock every writer of this box takes, for as
    /// long as the reference lives.
    pub unsafe fn get_locked(&self) -> Option<&T> {
        // SAFETY: null or a live box (the invariants), which no writer
        // replaces while the caller holds the writers' lock.
        unsafe { self.ptr.load(Ordering::Acquire).as_ref() }
    }

    /// Publishes `new` (complete: the release orders it before a reader's
    /// load) and gives back the value it replaces, to be freed after a
    /// grace period.
    ///
    /// # Safety
    ///
    /// The caller holds the lock every writer of this box takes.
    pub unsafe fn swap(&self, new: Option<KBox<T>>) -> Option<Retired<T>> {
        let raw = new.map_or(ptr::null_mut(), KBox::into_raw);
        let old = self.ptr.swap(raw, Ordering::AcqRel);
        // SAFETY: owned by the box (the invariants) and unpublished just
        // now; writers are serialized (the contract), so no other writer
        // took it; readers of before may still hold it.
        NonNull::new(old).map(|p| unsafe { Retired::from_raw(p) })
    }
}

impl<T> Drop for RcuBox<T> {
    fn drop(&mut self) {
        let p = *self.ptr.get_mut();
        if !p.is_null() {
            // SAFETY: owned by the box (the invariants); dropping it needs
            // the box exclusively, so no reader's borrow of it lives.
            drop(unsafe { KBox::from_raw(p) });
        }
    }
}

/// A value taken out of where RCU readers find it: readers that found it
/// before may use it until a grace period has passed. [`Retired::defer`]
/// has RCU free it once one has; dropped, it waits itself (sleeps).
///
/// # Invariants
///
/// `0` came from `KBox::into_raw`, is published nowhere any more, and is
/// referred to only by readers that found it before it was unpublished,
/// each inside a read side.
#[must_use]
pub struct Retired<T>(NonNull<T>);

impl<T> Retired<T> {
    /// The value at `p`, just unpublished.
    ///
    /// # Safety
    ///
    /// `p` came from `KBox::into_raw`, its owner has just unpublished it,
    /// and nothing but readers that found it before refers to it.
    pub unsafe fn from_raw(p: NonNull<T>) -> Self {
        // INVARIANT: the contract.
        Retired(p)
    }

    /// Frees `self` now that a grace period `_gp` has passed since it was
    /// unpublished.
    fn free_after(self, _gp: &Grace) {
        let p = core::mem::ManuallyDrop::new(self).0;
        // SAFETY: from `KBox::into_raw` and unpublished (the invariants);
        // `_gp` outlasted every reader that could still see it.
        drop(unsafe { KBox::from_raw(p.as_ptr()) });
    }
}

impl<T: Send> Retired<T> {
    /// Frees `self` once a grace period has passed, without waiting for
    /// it: RCU calls back, and `T`'s drop runs there (softirq or an RCU
    /// callback thread: it must not sleep). Without memory for that, it
    /// waits and frees it now (sleeps).
    pub fn defer(self) {
        let note = Deferred {
            head: Opaque::uninit(),
            value: self,
        };
        // Failed, the note is dropped, and with it the value: it waits.
        let Ok(note) = KBox::new(note, GFP_KERNEL) else {
            return;
        };
        let raw = KBox::into_raw(note);
        // SAFETY: `raw` is a live `Deferred<T>` owned by this call, given
        // to RCU once here; its head is its first field (`repr(C)`), so
        // `reclaim::<T>` gets the note's address back, after a grace
        // period that begins now, after the value was unpublished.
        unsafe {
            bindings::call_rcu(
                Opaque::raw_get(ptr::addr_of!((*raw).head)),
                Some(reclaim::<T>),
            )
        };
    }
}

impl<T> Drop for Retired<T> {
    fn drop(&mut self) {
        let gp = Grace::wait();
        // A copy of the pointer: the value is not used again.
        Retired(self.0).free_after(&gp);
    }
}

// SAFETY: the retired value moves with it (`T: Send`).
unsafe impl<T: Send> Send for Retired<T> {}

/// A retired value on its way through RCU's callbacks.
///
/// # Invariants
///
/// Given to `call_rcu()` once, with `head` for its head, from
/// `KBox::into_raw`.
#[repr(C)]
struct Deferred<T> {
    /// First: RCU hands its address back to [`reclaim`].
    head: Opaque<bindings::callback_head>,
    value: Retired<T>,
}

/// Frees a [`Deferred`] and its value: RCU calls it once a grace period
/// has passed since [`Retired::defer`] (in softirq context or an RCU
/// callback thread).
///
/// # Safety
///
/// Called by RCU for a head that [`Retired::defer`] gave to `call_rcu()`.
unsafe extern "C" fn reclaim<T: Send>(head: *mut bindings::callback_head) {
    // SAFETY: `head` is the head of a `Deferred<T>`, at its start, from
    // `KBox::into_raw` (the invariants), and RCU calls back once.
    let note = unsafe { KBox::from_raw(head.cast::<Deferred<T>>()) };
    let Deferred { value, .. } = KBox::into_inner(note);
    // The grace period `call_rcu()` promised has passed.
    value.free_after(&Grace(()));
}

/// A grace period has passed since it was made: every value unpublished
/// before that can go. Made only by [`Grace::wait`] and, for the value
/// whose grace period RCU waited for, by [`reclaim`].
struct Grace(());

impl Grace {
    fn wait() -> Grace {
        synchronize_rcu();
        Grace(())
    }
}
