// SPDX-License-Identifier: GPL-2.0

//! How function sets are published and retired: a set lives in a slot
//! (an ops' filter or notrace pointer, a graph filter global) that
//! readers load locklessly (under RCU or with preemption off) and that
//! one writer at a time replaces ([`PubSlot`]); a set taken out is freed
//! after a grace period ([`RetiredSet`], [`Unlinked`]). Also the room an
//! update's plan borrows the registered ops' sets in ([`PlanRoom`]) and
//! the slots of the function graph filter ([`GraphSlot`]).

use crate::base::sys::{CMutex, Guard, Held};
use crate::sites::hash::{free_rcu, Entry, FnSet, FtraceHash, SetRef};
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::error::{
    code::{EINVAL, ENOMEM},
    Result,
};
use kernel::prelude::*;

/// Where a published set lives (an ops' filter or notrace pointer, a graph
/// filter global), in the hands of its writer: read locklessly by
/// everyone, swapped only by writers that exclude each other.
///
/// # Invariants
///
/// For `'a`, this task holds the lock that serializes the slot's writers,
/// and the slot holds null or a valid set that only RCU (preempt-off)
/// readers and the slot's writers reference.
pub(crate) struct PubSlot<'a>(&'a AtomicPtr<FtraceHash>);

impl<'a> PubSlot<'a> {
    /// # Safety
    ///
    /// `p` is such a slot, and this task holds its writers' lock for `'a`
    /// (the type's invariants).
    pub(crate) unsafe fn new(p: &'a AtomicPtr<FtraceHash>) -> Self {
        Self(p)
    }

    /// The set published now, for as long as the slot is borrowed (only
    /// its holder replaces it, which takes the slot).
    pub(crate) fn load(&self) -> SetRef<'_> {
        // SAFETY: valid until a writer replaces it and a grace period
        // passes; the writer is this holder, whose `swap` consumes the
        // slot (the invariants).
        unsafe { SetRef::new(self.0.load(Ordering::Acquire)) }
    }

    /// Publishes `new` (none: the empty set); the old set is freed once
    /// every reader that may see it has gone (when the result drops).
    pub(crate) fn swap(self, new: Option<FnSet>) -> RetiredSet {
        let new = new.map_or(ptr::null_mut(), FnSet::into_raw);
        // INVARIANT: `new` was private; from now on only readers and the
        // slot's writers see it. The old set is unpublished.
        RetiredSet(self.0.swap(new, Ordering::AcqRel))
    }

    /// Takes `ips` (each in the set, once: the caller checked) out of the
    /// published set in place, without memory. A reader standing on an
    /// entry taken out still reaches the rest of its bucket; the entries
    /// are freed when the result drops, after a grace period.
    pub(crate) fn unlink(&mut self, ips: &[u64]) -> Unlinked {
        let mut gone = Unlinked {
            e: [ptr::null_mut(); UNLINK_MAX],
            n: 0,
        };
        let Some(h) = self.load().get() else {
            return gone;
        };
        for &ip in ips.iter().take(UNLINK_MAX) {
            let e = h.lookup(ip);
            if !e.is_null() {
                // SAFETY: `e` is an entry of `h`; the slot's writers are
                // excluded (the invariants); readers are RCU (preempt-off)
                // readers, whom `Unlinked` waits out before the free.
                unsafe { h.unlink(e) };
                // An entry of the set's blocks stays with the set (freed
                // with it, after its own grace period); a loose one goes
                // after this one.
                if !h.frees_alone(e) {
                    continue;
                }
                if let Some(slot) = gone.e.get_mut(gone.n) {
                    *slot = e;
                    gone.n = gone.n.wrapping_add(1);
                }
            }
        }
        gone
    }

    /// Adds `ips` (none in the set, no two alike, at most
    /// [`crate::sites::hash::LINK_MAX`]) to the published set in place: an entry
    /// allocated for each, no copy of the set. A reader finds each entry
    /// whole or not at all. `ENOMEM` changes nothing; `EINVAL` when no
    /// set is published (the empty set stands for every function: adding
    /// to it is a change of meaning, which the copying path makes).
    pub(crate) fn link(&mut self, ips: &[u64]) -> Result {
        let Some(h) = self.load().get() else {
            return Err(EINVAL);
        };
        // SAFETY: the slot's writers are excluded (the invariants), and
        // the caller gives addresses not in the set, each once; readers are
        // RCU (preempt-off) readers, which `link_published` lets find an
        // entry whole or not at all.
        unsafe { h.link_published(ips) }
    }

    /// Makes the entries whose address `gone` says yes to match nothing,
    /// in place (their address becomes 0, as C does when a module goes): a
    /// reader sees the old address or 0, both harmless.
    pub(crate) fn scrub(&mut self, gone: impl Fn(u64) -> bool) {
        let Some(h) = self.load().get() else {
            return;
        };
        for (ip, e) in h.entries() {
            if gone(ip) {
                // SAFETY: a live entry, changed only by the slot's
                // writers, excluded; the address is one aligned word,
                // written whole.
                unsafe { ptr::write_volatile(ptr::addr_of_mut!((*e).ip), 0) };
            }
        }
    }
}

/// The most addresses [`PubSlot::unlink`] takes out at once.
pub(crate) const UNLINK_MAX: usize = 8;

/// Entries taken out of a published set: handed to RCU when dropped, which
/// frees them after a grace period (the drop sleeps only when RCU has no
/// memory to queue them, and then waits for the grace period itself).
///
/// # Invariants
///
/// `e[..n]` are entries unlinked from a published set, referenced by
/// nothing but readers that started before they were unlinked.
pub(crate) struct Unlinked {
    e: [*mut Entry; UNLINK_MAX],
    n: usize,
}

impl Drop for Unlinked {
    fn drop(&mut self) {
        for &e in self.e.iter().take(self.n) {
            // SAFETY: a `kmalloc` entry, unlinked (the invariants): only
            // readers that started before may still stand on it, under RCU
            // or with preemption off, which the grace period RCU frees it
            // after waits out. Process context: it may sleep.
            unsafe { kernel::bindings::kvfree_call_rcu(ptr::null_mut(), e.cast()) };
        }
    }
}

/// A set taken out of its slot: freed after an RCU grace period when
/// dropped (readers may still be walking it). Unlike a
/// [`crate::base::cells::Retired`] (a Rust box, which has no RCU head: dropped,
/// it waits; deferred, it needs a note), a set carries its own RCU head
/// (C's `struct ftrace_hash`), so dropping one hands it to `call_rcu()`
/// and never sleeps.
///
/// # Invariants
///
/// `0` is null or a valid set no longer published, that nothing but
/// readers which started before it was unpublished can reference.
#[must_use]
pub(crate) struct RetiredSet(*mut FtraceHash);

impl RetiredSet {
    /// Nothing retired.
    pub(crate) fn none() -> Self {
        RetiredSet(ptr::null_mut())
    }

    /// The set until it is freed (readers, and the writer that took it
    /// out, may still look).
    pub(crate) fn as_set(&self) -> SetRef<'_> {
        // SAFETY: null or valid until `self` drops (the invariants).
        unsafe { SetRef::new(self.0) }
    }
}

impl Drop for RetiredSet {
    fn drop(&mut self) {
        free_rcu(self.as_set().get());
    }
}

// --- the plan's room ----------------------------------------------------------

/// What the planner knows of one registered ops, its sets borrowed for
/// `'h`, with call targets `T`.
pub(crate) type Planned<'h, T> = crate::logic::plan::Planned<SetRef<'h>, T>;

/// Room for one update's plan, reserved ahead so that an update never
/// allocates: it holds the sets of the registered ops only during the
/// update, which holds `ftrace_lock` throughout (the room is core state,
/// kept in a `Locked` cell).
///
/// # Invariants
///
/// The vector is empty but during [`PlanRoom::with`].
pub(crate) struct PlanRoom<T: 'static>(KVec<Planned<'static, T>>);

impl<T: 'static> PlanRoom<T> {
    /// No room yet.
    pub(crate) const fn new() -> Self {
        PlanRoom(KVec::new())
    }

    /// Makes room for `n` ops in all.
    pub(crate) fn reserve(&mut self, n: usize) -> Result {
        let more = n.saturating_sub(self.0.len());
        self.0.reserve(more, GFP_KERNEL).map_err(|_| ENOMEM)
    }

    /// Runs `f` on the room, empty, as a vector of plans whose sets are
    /// borrowed for `'h` (as long as `ftrace_lock` is held); empties it
    /// after.
    pub(crate) fn with<'h, R>(
        &mut self,
        _held: &'h Held,
        f: impl FnOnce(&mut KVec<Planned<'h, T>>) -> Result<R>,
    ) -> Result<R> {
        let v = &mut self.0;
        crate::base::sys::truncate(v, 0);
        // SAFETY: the same type but for a lifetime, which does not change
        // the layout. The vector is empty now and is emptied before this
        // returns (below), so no set borrowed for `'h` stays in the room
        // after `'h`; whatever `f` puts in its place is emptied alike.
        let v = unsafe { &mut *ptr::from_mut(v).cast::<KVec<Planned<'h, T>>>() };
        let r = f(v);
        // INVARIANT: empty again.
        crate::base::sys::truncate(v, 0);
        r
    }
}

// --- the function graph filter sets ------------------------------------------

/// The function graph filter set, read by the inline helpers of trace.h
/// and written under [`GRAPH_LOCK`].
#[no_mangle]
pub static ftrace_graph_hash: AtomicPtr<FtraceHash> = AtomicPtr::new(ptr::null_mut());
/// The function graph notrace set.
#[no_mangle]
pub static ftrace_graph_notrace_hash: AtomicPtr<FtraceHash> = AtomicPtr::new(ptr::null_mut());

/// Serializes the graph filter sets' writers.
static GRAPH_LOCK: CMutex = CMutex::new();

/// Initialises [`GRAPH_LOCK`] (boot).
pub(crate) fn init_graph_lock() {
    crate::base::sys::cmutex_init!(GRAPH_LOCK, "ftrace_graph_lock");
}

/// A graph filter set's slot, its writers' lock held.
pub(crate) struct GraphSlot {
    _l: Guard,
    slot: &'static AtomicPtr<FtraceHash>,
}

impl GraphSlot {
    pub(crate) fn lock(notrace: bool) -> Self {
        GraphSlot {
            _l: GRAPH_LOCK.lock(),
            slot: if notrace {
                &ftrace_graph_notrace_hash
            } else {
                &ftrace_graph_hash
            },
        }
    }

    pub(crate) fn get(&mut self) -> PubSlot<'_> {
        // SAFETY: a published-set slot (C reads it under RCU) that is
        // written only here, by the holder of `GRAPH_LOCK`, which `self`
        // holds while the result borrows it.
        unsafe { PubSlot::new(self.slot) }
    }
}
