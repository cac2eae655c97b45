// SPDX-License-Identifier: GPL-2.0

//! The cells of the core's own state, each with the rule that keeps it
//! sound: [`Forever`] (a value published once and kept), [`RcuBox`] (a
//! value replaced whole under `ftrace_lock`, freed after a grace period:
//! the kernel crate's, with the core's lock) and [`Locked`] (data
//! reachable only with `ftrace_lock` held). Built on the proofs of `sys`.

use crate::base::sys::{Held, ReadSide};
use core::cell::UnsafeCell;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::prelude::*;
use kernel::sync::rcu;
pub(crate) use kernel::sync::rcu::Retired;

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
/// after a grace period: `kernel::sync::rcu::RcuBox`, whose writers'
/// lock is `ftrace_lock`.
///
/// # Invariants
///
/// The box is replaced only by [`RcuBox::swap`], with `ftrace_lock` held.
pub(crate) struct RcuBox<T>(rcu::RcuBox<T>);

impl<T: Send + Sync> RcuBox<T> {
    pub(crate) const fn new() -> Self {
        RcuBox(rcu::RcuBox::new())
    }

    /// The value, for as long as the reader's read side lasts (or the
    /// writers' lock is held).
    pub(crate) fn get<'a>(&'a self, k: &'a impl KeepsRcuBox) -> Option<&'a T> {
        k.load(self)
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
        // SAFETY: `ftrace_lock` is held (`held`), the lock of every writer
        // of the box (the invariants).
        Ok(unsafe { self.0.swap(new) })
    }
}

/// What keeps the value of an [`RcuBox`]: a read side (a replaced value
/// is freed after a grace period) or `ftrace_lock` (which replacing it
/// takes).
pub(crate) trait KeepsRcuBox {
    /// The value of `b`, for as long as `self` keeps it.
    fn load<'a, T: Send + Sync>(&'a self, b: &'a RcuBox<T>) -> Option<&'a T>;
}

impl<R: ReadSide> KeepsRcuBox for R {
    fn load<'a, T: Send + Sync>(&'a self, b: &'a RcuBox<T>) -> Option<&'a T> {
        b.0.get(self)
    }
}

impl KeepsRcuBox for Held {
    fn load<'a, T: Send + Sync>(&'a self, b: &'a RcuBox<T>) -> Option<&'a T> {
        // SAFETY: `ftrace_lock` is held for `'a`, the lock of every
        // writer of the box (its invariants).
        unsafe { b.0.get_locked() }
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
