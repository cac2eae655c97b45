// SPDX-License-Identifier: GPL-2.0

//! An ops' links: the list every CPU walks, a manager's sub-ops, the
//! direct lock and the tables of ops the hot path reads ([`OpsTable`]).

use crate::base::cells::Locked;
use crate::base::sys::{
    ftrace_list_end, ftrace_ops_list, CMutex, Guard, Held, Keeps, NoPreempt, StateKey,
};
use core::marker::PhantomData;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::prelude::*;

use super::{Ops, OpsRef, F_DIRECT};

impl<'a> OpsRef<'a> {
    /// Whether it manages sub-ops.
    pub(crate) fn is_manager(self, key: &StateKey) -> bool {
        SUBOPS.get(key).iter().any(|&SubLink(m, _)| m == self.0)
    }

    /// Its sub-ops (a manager's), newest first.
    ///
    /// The links stay as they are while the walk borrows `key`.
    pub(crate) fn subops<'h>(self, key: &'h StateKey) -> impl Iterator<Item = OpsRef<'h>>
    where
        'a: 'h,
    {
        SUBOPS
            .get(key)
            .iter()
            .rev()
            .filter_map(move |&SubLink(m, sub)| {
                // INVARIANT: a linked sub-op is live until its owner unlinks
                // it (under `ftrace_lock`, held for `'h`) before it goes.
                (m == self.0).then_some(OpsRef(sub, PhantomData))
            })
    }

    /// Links `sub` (on no manager's list) to its sub-ops.
    pub(crate) fn add_subop(self, held: &Held, key: &mut StateKey, sub: OpsRef<'_>) -> Result {
        self.init(held);
        sub.init(held);
        SUBOPS
            .borrow(key)
            .push(SubLink(self.0, sub.0), GFP_KERNEL)?;
        Ok(())
    }

    /// Unlinks it from its manager's sub-ops.
    pub(crate) fn del_subop(self, key: &mut StateKey) {
        let v = SUBOPS.borrow(key);
        if let Some(i) = v.iter().position(|&SubLink(_, sub)| sub == self.0) {
            let last = v.len() - 1;
            v.as_mut_slice()[i..].rotate_left(1);
            // The room stays: a relink after a failed removal does not
            // allocate.
            crate::base::sys::truncate(v, last);
        }
    }

    /// Records its manager (null: none).
    pub(crate) fn set_managed(self, _held: &Held, m: *mut Ops) {
        self.view().managed().store(m, Ordering::Release)
    }

    #[inline(always)]
    fn next_slot(self) -> &'a AtomicPtr<Ops> {
        self.view().next()
    }

    /// Puts it on the ops list: every CPU may call it from now on. A
    /// direct ops goes after every other ops, any other at the head: the
    /// list dispatcher stops at the first direct ops (`ops::directmap`).
    pub(crate) fn publish(self, held: &Held) {
        let mut link: &AtomicPtr<Ops> = &ftrace_ops_list;
        if self.has(F_DIRECT) {
            for p in list(held) {
                if p.has(F_DIRECT) {
                    break;
                }
                link = p.next_slot();
            }
        }
        // Its link first: a CPU that finds it walks on to the rest.
        self.next_slot()
            .store(link.load(Ordering::Acquire), Ordering::Release);
        link.store(self.as_ptr(), Ordering::Release);
    }

    /// Takes it off the ops list (dispatchers already in it may still
    /// run it until a grace period); whether it was there.
    pub(crate) fn unlink(self, held: &Held) -> bool {
        let next = self.next_slot().load(Ordering::Acquire);
        if ftrace_ops_list.load(Ordering::Acquire) == self.as_ptr() {
            ftrace_ops_list.store(next, Ordering::Release);
            return true;
        }
        for p in list(held) {
            let s = p.next_slot();
            if s.load(Ordering::Acquire) == self.as_ptr() {
                s.store(next, Ordering::Release);
                return true;
            }
        }
        false
    }
}

/// The links of managers to their sub-ops, `(manager, sub)`, oldest
/// first; a sub-op is on at most one manager's list.
static SUBOPS: Locked<KVec<SubLink>> = Locked::new(KVec::new());

/// A link of [`SUBOPS`]: `(manager, sub)`.
#[derive(Clone, Copy)]
struct SubLink(ptr::NonNull<Ops>, ptr::NonNull<Ops>);

// SAFETY: two ops addresses, compared and turned back into an `OpsRef`
// only under `ftrace_lock` (the only way to reach [`SUBOPS`]), whichever
// task holds it; the ops they name are live while linked (`subops`).
unsafe impl Send for SubLink {}

/// The registered ops, newest first, alive while `_k` is: under
/// `ftrace_lock`, or with preemption off (an unregistered dynamic ops is
/// freed only after every CPU scheduled).
#[inline(always)]
pub(crate) fn list<'a>(_k: &'a impl Keeps) -> impl Iterator<Item = OpsRef<'a>> {
    let end = ftrace_list_end.get();
    let mut p = ftrace_ops_list.load(Ordering::Acquire);
    core::iter::from_fn(move || {
        if p == end {
            return None;
        }
        // INVARIANT: listed, so live for `'a`.
        let cur = OpsRef(ptr::NonNull::new(p)?, PhantomData);
        p = cur.next_slot().load(Ordering::Acquire);
        Some(cur)
    })
}

/// The lock of the direct-call API (C's `direct_mutex`), taken before
/// `ftrace_lock`: every registration and unregistration of a direct ops
/// holds it (`direct` and `ops`), so a direct ops registered while it is
/// held stays registered.
pub(crate) static DIRECT_LOCK: CMutex = CMutex::new();

/// [`DIRECT_LOCK`], held for the life of the guard.
pub(crate) struct DirectGuard(#[allow(dead_code)] Guard);

impl DirectGuard {
    /// Takes the direct lock (sleeps).
    pub(crate) fn lock() -> Self {
        DirectGuard(DIRECT_LOCK.lock())
    }
}

/// Ops the core makes for itself and publishes for lockless readers: the
/// groups' ops, which the unwinder and kallsyms find by their trampolines.
///
/// # Invariants
///
/// A non-null word points to a live ops published by
/// [`OpsTable::publish`], which stays live until a rude RCU-tasks grace
/// period after [`OpsTable::remove`] took it out.
pub(crate) struct OpsTable<const N: usize>([AtomicPtr<Ops>; N]);

impl<const N: usize> OpsTable<N> {
    /// No ops.
    pub(crate) const fn new() -> Self {
        OpsTable([const { AtomicPtr::new(ptr::null_mut()) }; N])
    }

    /// The published ops, live while preemption stays off (`_np`): their
    /// removal waits for every CPU to schedule before they go.
    pub(crate) fn iter<'k>(&self, _np: &'k NoPreempt) -> impl Iterator<Item = OpsRef<'k>> + '_ {
        self.0.iter().filter_map(|w| {
            let p = ptr::NonNull::new(w.load(Ordering::Acquire))?;
            // INVARIANT: published and live until a rude grace period
            // after its removal, which `_np` holds off for `'k`.
            Some(OpsRef(p, PhantomData))
        })
    }

    /// Publishes `ops`; `false` when the table is full.
    ///
    /// # Safety
    ///
    /// `ops` lives until a rude RCU-tasks grace period after its
    /// [`OpsTable::remove`].
    pub(crate) unsafe fn publish(&self, _held: &Held, ops: OpsRef<'_>) -> bool {
        self.0.iter().any(|w| {
            // INVARIANT: it lives as long (the contract).
            w.compare_exchange(
                ptr::null_mut(),
                ops.as_ptr(),
                Ordering::Release,
                Ordering::Relaxed,
            )
            .is_ok()
        })
    }

    /// Takes `ops` out; readers may still see it until the caller's rude
    /// RCU-tasks wait.
    pub(crate) fn remove(&self, _held: &Held, ops: OpsRef<'_>) {
        for w in self.0.iter() {
            let _ = w.compare_exchange(
                ops.as_ptr(),
                ptr::null_mut(),
                Ordering::Release,
                Ordering::Relaxed,
            );
        }
    }
}
