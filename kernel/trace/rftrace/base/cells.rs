// SPDX-License-Identifier: GPL-2.0

//! The cells of the core's own state, each with the rule that keeps it
//! sound: [`Forever`] (a value published once and kept), [`RcuBox`] (a
//! value replaced whole under `ftrace_lock`, freed after a grace period:
//! the kernel crate's, with the core's lock) and [`Locked`] (data
//! reachable only with `ftrace_lock` held). Built on the proofs of `sys`.

use crate::base::sys::{Held, ReadSide, StateKey};
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
/// with the lock's [`StateKey`], shared to read ([`Locked::get`]) and
/// mutably to change ([`Locked::borrow`]), as `kernel::sync::LockedBy`
/// gives its data through its owner. The key stays borrowed while the
/// data is: a second borrow of core state while a mutable one lives does
/// not compile. State used together is borrowed together
/// ([`Locked::borrow_pair`]); `ID` tells the cells apart for it.
///
/// # Invariants
///
/// `data` is reached only through the methods below, with a borrow of
/// the one [`StateKey`] there is while `ftrace_lock` is held
/// (`CoreGuard`'s invariants) that lasts as long as the reference.
pub(crate) struct Locked<T, const ID: u32 = 0> {
    data: UnsafeCell<T>,
}

// SAFETY: every access happens under `ftrace_lock` (the invariants),
// which orders it with every other; the data may be reached from any task
// that takes the lock (`T: Send`). A shared reference handed out is
// `Send` only when `T: Sync`.
unsafe impl<T: Send, const ID: u32> Sync for Locked<T, ID> {}

impl<T, const ID: u32> Locked<T, ID> {
    pub(crate) const fn new(v: T) -> Self {
        Locked {
            data: UnsafeCell::new(v),
        }
    }

    /// The data, shared, while the key stays borrowed.
    pub(crate) fn get<'a>(&'a self, _key: &'a StateKey) -> &'a T {
        // SAFETY: only the holder of `ftrace_lock` has a key (the
        // invariants), so no other task reaches the data; this task's one
        // key is borrowed shared for `'a`, so no mutable borrow (which
        // takes it mutably) exists or can be made before the result is
        // gone.
        unsafe { &*self.data.get() }
    }

    /// The data, while the key stays borrowed.
    pub(crate) fn borrow<'a>(&'a self, _key: &'a mut StateKey) -> &'a mut T {
        // SAFETY: no other task reaches the data (as in `get`), and this
        // task's one key is borrowed mutably for `'a`: no other reference
        // to the data of any `Locked`, this one's included, exists or can
        // be made before the result is gone.
        unsafe { &mut *self.data.get() }
    }

    /// The data of two cells at once, while the key stays borrowed. The
    /// cells' `ID`s must differ, which the compiler checks.
    pub(crate) fn borrow_pair<'a, U, const J: u32>(
        &'a self,
        other: &'a Locked<U, J>,
        _key: &'a mut StateKey,
    ) -> (&'a mut T, &'a mut U) {
        const { assert!(ID != J, "borrow_pair of one Locked cell") };
        // SAFETY: as in `borrow`, for both. The two are distinct objects:
        // their types differ (`ID != J`), and neither is inside the
        // other's data, which cannot be reached while the key is borrowed
        // for the call.
        unsafe { (&mut *self.data.get(), &mut *other.data.get()) }
    }
}
