// SPDX-License-Identifier: GPL-2.0

//! An ops' filter and notrace sets: where they are published, who keeps
//! them ([`SetsKept`]), their writers' lock ([`RegexGuard`]).

use crate::base::sys::{Guard, Held, Keeps};
use crate::sites::hash::{FnSet, FtraceHash, SetRef};
use crate::sites::publish::{PubSlot, RetiredSet};
use core::marker::PhantomData;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};

use super::OpsRef;

impl<'a> OpsRef<'a> {
    /// Takes the lock of its sets' writers (`regex_lock`), initialising
    /// the ops first if need be.
    pub(crate) fn lock_regex(self) -> RegexGuard<'a> {
        self.init_locked();
        let m = crate::base::opsview::regex_lock_of(self.func_hash());
        // SAFETY: initialised (above): `func_hash` points to live sets
        // (its own, or those of an ops that outlives it) whose lock is
        // initialised. The lock outlives the guard: it is in the sets,
        // which outlive the ops (`'a`), which outlives the guard. The
        // callers may sleep.
        RegexGuard(unsafe { Guard::of(m) }, self)
    }

    fn set_slot(self, notrace: bool) -> Option<&'a AtomicPtr<FtraceHash>> {
        self.set_slots().map(|(f, n)| if notrace { n } else { f })
    }

    /// Its filter and notrace set slots (none before the core gave it
    /// sets), from one read of `func_hash`.
    #[inline(always)]
    fn set_slots(self) -> Option<(&'a AtomicPtr<FtraceHash>, &'a AtomicPtr<FtraceHash>)> {
        let fh = self.func_hash();
        if fh.is_null() {
            return None;
        }
        // SAFETY: the sets of a live, initialised ops (its own or those
        // of an ops that outlives it), alive for `'a`: two aligned pointer
        // slots, read and written atomically only (`AtomicPtr` has a
        // pointer's layout).
        Some(unsafe {
            (
                AtomicPtr::from_ptr(ptr::addr_of_mut!((*fh).filter_hash).cast()),
                AtomicPtr::from_ptr(ptr::addr_of_mut!((*fh).notrace_hash).cast()),
            )
        })
    }

    /// Its filter and notrace sets, valid while `_k` keeps them: a set
    /// is replaced under `ftrace_lock` and freed a grace period later.
    #[inline(always)]
    pub(crate) fn sets<'k>(self, _k: &'k impl Keeps) -> (SetRef<'k>, SetRef<'k>) {
        // INVARIANT: a set is freed only a grace period after it is
        // replaced under `ftrace_lock`: `_k` keeps both for `'k`.
        self.published_sets(SetsKept(PhantomData))
    }

    /// Its filter and notrace sets as published now, from one read of
    /// `func_hash`.
    #[inline(always)]
    fn published_sets<'k>(self, _kept: SetsKept<'k>) -> (SetRef<'k>, SetRef<'k>) {
        self.set_slots()
            .map_or((SetRef::EMPTY, SetRef::EMPTY), |(f, n)| {
                // SAFETY: null or published sets of this ops, which stay
                // allocated for `'k` (`_kept`'s invariants).
                unsafe {
                    (
                        SetRef::new(f.load(Ordering::Acquire)),
                        SetRef::new(n.load(Ordering::Acquire)),
                    )
                }
            })
    }

    /// Whether `ip` passes its sets.
    #[inline(always)]
    pub(crate) fn wants(self, k: &impl Keeps, ip: u64) -> bool {
        let (f, n) = self.sets(k);
        f.admits(ip) && !n.contains(ip)
    }

    /// Its filter (or notrace) set's slot, for the writer, who holds
    /// `ftrace_lock` while it is used.
    pub(crate) fn set_slot_mut<'h>(self, held: &'h Held, notrace: bool) -> Option<PubSlot<'h>>
    where
        'a: 'h,
    {
        self.init(held);
        // SAFETY: a published-set slot whose writers hold `ftrace_lock`
        // (held for `'h`).
        self.set_slot(notrace).map(|s| unsafe { PubSlot::new(s) })
    }

    /// Publishes `new` (none: empty) as its filter (or notrace) set; the
    /// old one is freed a grace period after the result drops (a set
    /// read before is not used after: see `hash`).
    pub(crate) fn swap_set(self, held: &Held, notrace: bool, new: Option<FnSet>) -> RetiredSet {
        match self.set_slot_mut(held, notrace) {
            Some(s) => s.swap(new),
            None => RetiredSet::none(),
        }
    }
}

/// The writers' lock of an ops' sets (`regex_lock`), held: the sets stay
/// as they are, except by a commit of this holder.
pub(crate) struct RegexGuard<'a>(#[allow(dead_code)] Guard, OpsRef<'a>);

impl<'a> RegexGuard<'a> {
    /// The sets, as published now, for as long as the lock is held.
    pub(crate) fn sets(&self) -> (SetRef<'_>, SetRef<'_>) {
        // INVARIANT: writers of this ops' sets hold its regex lock (held
        // while `self` is borrowed): the published sets stay.
        self.1.published_sets(SetsKept(PhantomData))
    }
}

/// What keeps the sets an ops publishes now allocated for `'k`: made only
/// here, for one ops, from a [`Keeps`] proof, from that ops' regex lock
/// ([`RegexGuard`]), or in its owner's own call ([`OpsRef::owner_filter`]).
///
/// # Invariants
///
/// While `'k` lasts, the sets published in the slots of the ops it is
/// given to ([`OpsRef::published_sets`]) are not freed.
#[derive(Clone, Copy)]
struct SetsKept<'k>(PhantomData<&'k ()>);
