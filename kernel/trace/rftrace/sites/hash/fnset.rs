// SPDX-License-Identifier: GPL-2.0

//! A set being built by its one writer ([`FnSet`]), a set as readers see
//! it ([`SetRef`]), and its addresses ([`Ips`]).

use core::ptr;
use core::sync::atomic::Ordering;
use kernel::error::{code::ENOMEM, Result};
use kernel::prelude::*;

use super::{
    alloc, committed_bits, kfree, Entries, Entry, FtraceHash, DEFAULT_BITS, FL_MOD, LINK_LOAD,
};

/// A private set: made here, edited by its one owner, freed when
/// dropped, unless it is published ([`PubSlot::swap`]). What the filter
/// files, the filter APIs, probes and the sub-ops edit before they
/// publish a set.
///
/// # Invariants
///
/// `0` is a valid set (from [`alloc`] or [`copy`]) that nothing else
/// references: no reader can see it.
pub(crate) struct FnSet(KBox<FtraceHash>);

impl FnSet {
    /// An empty set.
    pub(crate) fn new() -> Result<Self> {
        alloc(DEFAULT_BITS).map(Self).ok_or(ENOMEM)
    }

    /// A private copy of `src`, flags included.
    pub(crate) fn copy_of(src: SetRef<'_>) -> Result<Self> {
        copy(src.0, DEFAULT_BITS)
    }

    fn set(&self) -> &FtraceHash {
        &self.0
    }

    /// The set, for what reads it through a pointer (C callbacks); valid
    /// while `self` is.
    pub(crate) fn as_ptr(&self) -> *mut FtraceHash {
        ptr::from_ref::<FtraceHash>(&self.0).cast_mut()
    }

    /// The set to read, for as long as it is borrowed.
    pub(crate) fn as_set(&self) -> SetRef<'_> {
        SetRef(Some(self.set()))
    }

    /// Inserts a new entry for `ip` (not in the set: the caller checked).
    fn insert(&mut self, ip: u64) -> Result<*mut Entry> {
        // SAFETY: private (the type's invariants), borrowed mutably: this
        // borrow alone changes it.
        let e = unsafe { self.set().insert(ip, core::mem::size_of::<Entry>()) };
        if e.is_null() {
            Err(ENOMEM)
        } else {
            Ok(e)
        }
    }

    /// Adds `ip` unless it is there.
    pub(crate) fn add(&mut self, ip: u64) -> Result {
        if !self.set().lookup(ip).is_null() {
            return Ok(());
        }
        self.insert(ip).map(|_| ())
    }

    /// Removes the entry `e` of the set. A shared borrow suffices: the set
    /// is private and the type neither `Send` nor `Sync`, so no other
    /// borrow can change or read it during the call, and the iterator
    /// over it ([`Self::retain`]'s) has read past `e`.
    fn remove_entry(&self, e: *mut Entry) {
        // SAFETY: private (the type's invariants) and reached by this
        // thread only (see above); `e` is one of its entries (the callers
        // found it), which no reader can have seen: freed once unlinked.
        unsafe {
            self.set().unlink(e);
            if self.set().frees_alone(e) {
                kfree(e);
            }
        }
    }

    /// Removes `ip`; whether it was there.
    pub(crate) fn remove(&mut self, ip: u64) -> bool {
        let e = self.set().lookup(ip);
        if e.is_null() {
            return false;
        }
        self.remove_entry(e);
        true
    }

    /// Keeps the addresses `keep` says yes to.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(u64) -> bool) {
        // `Entries` reads an entry's successor before it yields the
        // entry, which may then be removed and freed.
        for (ip, e) in self.set().entries() {
            if !keep(ip) {
                self.remove_entry(e);
            }
        }
    }

    /// Whether the set holds `ip`.
    pub(crate) fn contains(&self, ip: u64) -> bool {
        self.as_set().contains(ip)
    }

    /// Whether the set is empty (no address, no cached `:mod:` entry).
    pub(crate) fn is_empty(&self) -> bool {
        self.as_set().is_empty()
    }

    /// How many addresses the set holds.
    pub(crate) fn count(&self) -> usize {
        self.as_set().count()
    }

    /// The addresses, in bucket order.
    pub(crate) fn ips(&self) -> impl Iterator<Item = u64> + '_ {
        self.as_set().ips()
    }

    /// Marks the set as standing for cached `:mod:` entries (or not).
    pub(crate) fn set_mod(&mut self, on: bool) {
        let f = &self.set().flags;
        if on {
            f.fetch_or(FL_MOD, Ordering::Relaxed);
        } else {
            f.fetch_and(!FL_MOD, Ordering::Relaxed);
        }
    }

    /// The set to publish for this one: none (the empty set) when it is
    /// empty and not standing for cached `:mod:` entries, else a copy
    /// sized for its count.
    pub(crate) fn for_commit(&self) -> Result<Option<FnSet>> {
        if self.is_empty() {
            return Ok(None);
        }
        copy(Some(self.set()), committed_bits(self.count())).map(Some)
    }

    /// Gives the set away: the caller publishes it (and [`free`]s it).
    pub(crate) fn into_raw(self) -> *mut FtraceHash {
        KBox::into_raw(self.0)
    }
}

/// A set read where it may be published: a copyable handle on a set that
/// is empty (none) or valid for `'a`. What the planner reads
/// (`logic::plan::SiteSet`), and what an ops' sets are seen as.
///
/// # Invariants
///
/// The set is valid, and not freed, for `'a`: its creator holds
/// `ftrace_lock` (which every change of a published set's identity takes)
/// or the writer's lock of the set, or reads it in an RCU (preempt-off)
/// section, for `'a`; or it borrows a [`FnSet`].
#[derive(Clone, Copy)]
pub(crate) struct SetRef<'a>(Option<&'a FtraceHash>);

impl<'a> SetRef<'a> {
    /// The empty set.
    pub(crate) const EMPTY: SetRef<'static> = SetRef(None);

    /// # Safety
    ///
    /// `h` is null or a valid set that stays valid for `'a`; see the
    /// type's invariants.
    #[inline(always)]
    pub(crate) unsafe fn new(h: *const FtraceHash) -> Self {
        // SAFETY: per the function's contract.
        Self(unsafe { h.as_ref() })
    }

    /// The set (none: empty), for as long as the reference lasts.
    pub(crate) fn get(self) -> Option<&'a FtraceHash> {
        self.0
    }

    /// Whether it is empty: null, or no entry and no cached `:mod:`
    /// entries (the C `ftrace_hash_empty()`).
    #[inline(always)]
    pub(crate) fn is_empty(self) -> bool {
        self.0.map_or(true, FtraceHash::is_empty)
    }

    /// How many addresses it holds.
    pub(crate) fn count(self) -> usize {
        self.0.map_or(0, FtraceHash::count)
    }

    /// Whether `n` more entries may be linked into it in place
    /// ([`FtraceHash::link_published`]): it holds entries already, and its
    /// buckets stay short enough.
    pub(crate) fn room_to_link(self, n: usize) -> bool {
        self.0.is_some_and(|h| {
            h.count() > 0 && h.count().saturating_add(n) <= LINK_LOAD * h.buckets()
        })
    }

    /// Whether it stands for cached `:mod:` entries.
    pub(crate) fn has_mod(self) -> bool {
        self.0
            .is_some_and(|h| h.flags.load(Ordering::Relaxed) & FL_MOD != 0)
    }

    /// Whether it holds `ip`. Lock- and allocation-free: the dispatcher
    /// calls it.
    #[inline(always)]
    pub(crate) fn contains(self, ip: u64) -> bool {
        self.0.is_some_and(|h| !h.lookup(ip).is_null())
    }

    /// Whether, as a filter, it lets `ip` through: it is empty (the C
    /// `ftrace_hash_empty()`) or holds `ip`. One read of the count for
    /// both questions: the dispatcher asks it of every ops.
    #[inline(always)]
    pub(crate) fn admits(self, ip: u64) -> bool {
        self.0.map_or(true, |h| {
            if h.count.load(Ordering::Relaxed) == 0 {
                h.flags.load(Ordering::Relaxed) & FL_MOD == 0
            } else {
                !h.find(ip).is_null()
            }
        })
    }

    /// Its addresses, in bucket order.
    pub(crate) fn ips(self) -> Ips<'a> {
        Ips(self.0.map(FtraceHash::entries))
    }
}

/// The addresses of a set, in bucket order (a named type: the symbols of
/// the iterator chains built on it stay short enough for kallsyms).
pub(crate) struct Ips<'a>(Option<Entries<'a>>);

impl Iterator for Ips<'_> {
    type Item = u64;

    fn next(&mut self) -> Option<u64> {
        self.0.as_mut()?.next().map(|(ip, _)| ip)
    }
}

impl crate::logic::plan::SiteSet for SetRef<'_> {
    fn is_empty(&self) -> bool {
        SetRef::is_empty(*self)
    }
    fn contains(&self, ip: u64) -> bool {
        SetRef::contains(*self, ip)
    }
}

/// A copy of `src` (none: an empty set) with `1 << bits` buckets and the
/// same flags and entries.
pub(super) fn copy(src: Option<&FtraceHash>, bits: u32) -> Result<FnSet> {
    let mut new = FnSet(alloc(bits).ok_or(ENOMEM)?);
    if let Some(src) = src {
        let set = new.set();
        set.flags
            .store(src.flags.load(Ordering::Relaxed), Ordering::Relaxed);
        for (ip, e) in src.entries() {
            let n = new.insert(ip)?;
            // SAFETY: `e` a live entry of `src`, `n` a fresh one of the
            // private `new`, which this borrow alone writes.
            unsafe { (*n).direct = (*e).direct };
        }
    }
    Ok(new)
}
