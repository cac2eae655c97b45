// SPDX-License-Identifier: GPL-2.0

//! The cells of the core's own state, each with the rule that keeps it
//! sound: [`Forever`] (a value published once and kept), [`RcuBox`] (a
//! value replaced whole under `ftrace_lock`, freed after a grace period)
//! and [`Locked`] (data reachable only with `ftrace_lock` held). Built on
//! the proofs of `sys`.

use crate::base::sys::{synchronize_rcu, Held, KeepsRcuBox};
use core::cell::UnsafeCell;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::bindings;
use kernel::prelude::*;
use kernel::types::Opaque;

/// A value made once, published to lockless readers and kept for ever
/// (the profiler's per-CPU tables): a `OnceLock` of `KBox`es, leaked.
///
/// # Invariants
///
/// `0` is null or a leaked `KBox<T>`, set once, never freed or changed.
pub(crate) struct Forever<T>(AtomicPtr<T>);

impl<T: Sync> Forever<T> {
    pub(crate) const fn new() -> Self {
        Forever(AtomicPtr::new(ptr::null_mut()))
    }

    /// The value, once published.
    pub(crate) fn get(&self) -> Option<&'static T> {
        // SAFETY: null or a leaked box, never freed or changed (the
        // invariants): shared for ever (`T: Sync`).
        unsafe { self.0.load(Ordering::Acquire).as_ref() }
    }

    /// Publishes `v` (complete: the release store orders it before any
    /// reader's load), unless a value was published first, which stays
    /// (and `v` goes). The value now published.
    pub(crate) fn publish(&self, v: KBox<T>) -> Option<&'static T> {
        let raw = KBox::into_raw(v);
        if let Err(_old) =
            self.0
                .compare_exchange(ptr::null_mut(), raw, Ordering::AcqRel, Ordering::Acquire)
        {
            // SAFETY: ours from `into_raw` above, never published.
            drop(unsafe { KBox::from_raw(raw) });
        }
        self.get()
    }
}

/// A value lockless readers see whole, replaced whole by writers that
/// hold `ftrace_lock` (copy, change, publish); a replaced value is freed
/// after a grace period (`synchronize_rcu()`), which waits for every
/// reader: readers hold a [`ReadSide`] proof for as long as they use it.
///
/// # Invariants
///
/// `0` is null or from `KBox::into_raw`, owned by this. It changes only
/// in [`RcuBox::swap`], with `ftrace_lock` held, and the value it
/// replaces is freed only after a grace period that began after the
/// change (it becomes a [`Retired`]).
pub(crate) struct RcuBox<T>(AtomicPtr<T>);

impl<T: Sync> RcuBox<T> {
    pub(crate) const fn new() -> Self {
        RcuBox(AtomicPtr::new(ptr::null_mut()))
    }

    /// The value, for as long as the reader's read side lasts (or the
    /// writers' lock is held).
    pub(crate) fn get<'a>(&'a self, _k: &'a impl KeepsRcuBox) -> Option<&'a T> {
        // SAFETY: null or a live box (the invariants): one replaced while
        // `'a` lasts is freed only after a grace period, which waits for
        // the read side `_k` proves; or `_k` is `ftrace_lock`, which every
        // replacement takes. `T: Sync` lets readers share it.
        unsafe { self.0.load(Ordering::Acquire).as_ref() }
    }

    /// Replaces the value by what `f` makes of the current one (`None`:
    /// nothing); an error of `f` leaves the value as it is. Sleeps.
    pub(crate) fn update(
        &self,
        held: &Held,
        f: impl FnOnce(Option<&T>) -> Result<Option<KBox<T>>>,
    ) -> Result {
        // Dropped, the replaced value waits for its readers.
        self.swap(held, f).map(drop)
    }

    /// [`RcuBox::update`], giving back the replaced value to be freed
    /// after a grace period the caller shares with others.
    pub(crate) fn swap(
        &self,
        held: &Held,
        f: impl FnOnce(Option<&T>) -> Result<Option<KBox<T>>>,
    ) -> Result<Option<Retired<T>>> {
        // The current value stays for the call of `f`, which cannot keep
        // the reference.
        let new = f(self.get(held))?;
        let raw = new.map_or(ptr::null_mut(), KBox::into_raw);
        let old = self.0.swap(raw, Ordering::AcqRel);
        // SAFETY: ours (the invariants), unpublished just now under
        // `ftrace_lock`; readers of before may still hold it.
        Ok(ptr::NonNull::new(old).map(|p| unsafe { Retired::new(p) }))
    }
}

/// A value taken out of where lockless readers find it (an [`RcuBox`],
/// the site table): readers that found it before may use it until a
/// grace period has passed. [`Retired::defer`] has RCU free it once one
/// has; dropped, it waits itself (sleeps).
///
/// # Invariants
///
/// `0` came from `KBox::into_raw`, is published nowhere any more, and is
/// referred to only by readers that found it before it was unpublished,
/// each inside an RCU read side or holding preemption off.
#[must_use]
pub(crate) struct Retired<T>(ptr::NonNull<T>);

impl<T> Retired<T> {
    /// # Safety
    ///
    /// `p` came from `KBox::into_raw`, its owner has just unpublished it,
    /// and nothing but readers of before refers to it.
    pub(crate) unsafe fn new(p: ptr::NonNull<T>) -> Self {
        // INVARIANT: the contract.
        Retired(p)
    }

    /// Frees `self` now that a grace period `_gp` has passed since it
    /// was unpublished.
    fn free_after(self, _gp: &Grace) {
        let p = core::mem::ManuallyDrop::new(self).0;
        // SAFETY: from `KBox::into_raw` and unpublished (the invariants);
        // `_gp` outlasted every reader that could still see it.
        drop(unsafe { KBox::from_raw(p.as_ptr()) });
    }
}

impl<T: Send> Retired<T> {
    /// Frees `self` once a grace period has passed, without waiting for
    /// it: RCU calls [`reclaim`] back. Without memory for that, it waits
    /// and frees it now (sleeps).
    pub(crate) fn defer(self) {
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
/// callback thread; the values' drops only free memory).
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

impl<T> Drop for Retired<T> {
    fn drop(&mut self) {
        let gp = Grace::wait();
        // A copy of the pointer: the value is not used again.
        Retired(self.0).free_after(&gp);
    }
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

/// Data of the core only touched with `ftrace_lock` held: reachable only
/// through [`Locked::borrow`], which asks for the proof ([`Held`]) and
/// refuses a second borrow while the first lives (as a `RefCell`).
///
/// # Invariants
///
/// `data` is accessed only while `ftrace_lock` is held and `busy` was
/// set by the accessor: at most one reference to it exists at a time.
pub(crate) struct Locked<T> {
    data: UnsafeCell<T>,
    busy: core::cell::Cell<bool>,
}

// SAFETY: every access happens under `ftrace_lock` (the invariants),
// which orders it with every other; `busy` too is touched only then.
unsafe impl<T: Send> Sync for Locked<T> {}

impl<T> Locked<T> {
    pub(crate) const fn new(v: T) -> Self {
        Locked {
            data: UnsafeCell::new(v),
            busy: core::cell::Cell::new(false),
        }
    }

    /// The data, while the result lives; `EBUSY` if it is borrowed
    /// already (a path that re-enters itself: a bug, refused without
    /// harm).
    pub(crate) fn borrow<'a>(&'a self, _held: &'a Held) -> Result<LockedMut<'a, T>> {
        if self.busy.replace(true) {
            pr_warn!("core state borrowed twice\n");
            return Err(EBUSY);
        }
        // SAFETY: the one reference to the data while `busy` is ours,
        // which the result gives back when it drops, and the lock is held
        // (`_held`) for as long (the invariants).
        let data = unsafe { &mut *self.data.get() };
        Ok(LockedMut {
            data,
            busy: &self.busy,
        })
    }
}

/// A borrow of [`Locked`] data.
pub(crate) struct LockedMut<'a, T> {
    data: &'a mut T,
    busy: &'a core::cell::Cell<bool>,
}

impl<T> core::ops::Deref for LockedMut<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.data
    }
}

impl<T> core::ops::DerefMut for LockedMut<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        self.data
    }
}

impl<T> Drop for LockedMut<'_, T> {
    fn drop(&mut self) {
        self.busy.set(false);
    }
}
