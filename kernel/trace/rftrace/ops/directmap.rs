// SPDX-License-Identifier: GPL-2.0

//! The registered direct ops by function, for the list dispatcher.
//!
//! On 6.12 every BPF trampoline is one direct ops. A function that one of
//! them shares with another ops (the function tracer) goes through the
//! full-regs list trampoline, whose dispatcher asked every registered ops
//! whether it wants the function: with a thousand programs attached, a
//! thousand filter lookups at every call. The direct ops come last in the
//! ops list ([`OpsRef::publish`]); the dispatcher stops at the first one
//! and finds the function's own (there is at most one per function) in
//! this table, by address ([`crate::logic::iptable`]).
//!
//! Who is inside, when:
//!
//! - Readers: the list dispatcher, with preemption off, on any CPU and in
//!   any context (NMI, RCU not watching). It reads the published table and
//!   the ops a word names, and calls that ops only while it is
//!   `F_ENABLED`.
//! - The writer: the registration and unregistration of a direct ops, with
//!   the direct lock and `ftrace_lock` held ([`add`], [`remove`]).
//!
//! What the writer waits for:
//!
//! - A word names an ops from before its publication until [`remove`],
//!   which comes before the ops is unlinked when it unregisters, and
//!   before a wait for every CPU in a callback
//!   ([`crate::ops::arch::wait_trampolines_left`]) when its registration
//!   fails. An unregistration's own waits (`groups::retire`) follow the
//!   unlinking. So a reader that found a word before it was removed is
//!   out of its preemption-off section before the ops' owner may free the
//!   ops.
//! - A table replaced by a larger one is freed after a rude RCU-tasks
//!   grace period (every CPU scheduled, RCU watching or not) and a plain
//!   one.

use crate::base::cells::RcuBox;
use crate::base::mutant::{self, Mutant};
use crate::base::sys::{CoreGuard, Held, NoPreempt};
use crate::logic::iptable::{self, Set, Slot};
use crate::ops::registry::{DirectGuard, OpsRef, F_ENABLED};
use core::sync::atomic::{AtomicUsize, Ordering};
use kernel::prelude::*;

/// A published table.
struct Table {
    slots: KVVec<Slot>,
    /// How many slots hold an address; written by the writer only.
    used: AtomicUsize,
}

impl Table {
    /// An empty table of `n` slots, `n` a power of two.
    fn new(n: usize) -> Result<KBox<Table>> {
        let mut slots = KVVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            // Within the capacity: no allocation.
            slots.push(Slot::new(), GFP_KERNEL)?;
        }
        Ok(KBox::new(
            Table {
                slots,
                used: AtomicUsize::new(0),
            },
            GFP_KERNEL,
        )?)
    }
}

/// The table; none until a direct ops first registers.
static MAP: RcuBox<Table> = RcuBox::new();

/// The registered direct ops that traces `ip`, if any. Hot path: one
/// search, no lock.
#[inline(always)]
pub(crate) fn find(np: &NoPreempt, ip: u64) -> Option<OpsRef<'_>> {
    if mutant::is(Mutant::DirectLost) {
        return None;
    }
    let t = MAP.get(np)?;
    let w = iptable::find(&t.slots, ip);
    if w == 0 {
        return None;
    }
    // SAFETY: a nonzero word is the address of a direct ops given to
    // `add`, live until the waits that follow its `remove` (see the module
    // documentation), which the preemption `np` keeps off hold back.
    let op = unsafe { OpsRef::from_raw(w as *mut _) };
    op.has(F_ENABLED).then_some(op)
}

/// The registered direct ops whose filter held `ip` when it registered,
/// as [`find`] gives it to the dispatcher, for the writer's checks and
/// `enabled_functions`.
pub(crate) fn holder<'h>(held: &'h Held, ip: u64) -> Option<OpsRef<'h>> {
    let w = iptable::find(&MAP.get(held)?.slots, ip);
    // SAFETY: a nonzero word is the address of a registered direct ops
    // (`add` comes before its publication, `remove` before it leaves the
    // list, both under `ftrace_lock`, which `held` holds).
    (w != 0).then(|| unsafe { OpsRef::from_raw(w as *mut _) })
}

/// The registered direct ops on function `ip`, if any, for an IPMODIFY
/// ops that asks its peers: it stays registered for as long as `_d`, the
/// direct lock, is held.
pub(crate) fn peer<'d>(_d: &'d DirectGuard, ip: u64) -> Option<OpsRef<'d>> {
    let found = {
        let g = CoreGuard::lock();
        holder(g.held(), ip).map(OpsRef::as_ptr)
    };
    // SAFETY: in the table under `ftrace_lock`, so registered and live
    // (see `holder`); and it stays so while the direct lock is held (every
    // registration and unregistration of a direct ops holds it: see
    // `DIRECT_LOCK`), which `_d` is for `'d`.
    found.map(|p| unsafe { OpsRef::from_raw(p) })
}

/// Enters every function of the filter of `ops`, a direct ops about to be
/// registered (it is not published yet, and its filter does not change
/// while it is registered), growing the table first if it must. On an
/// error nothing was entered.
pub(crate) fn add(held: &Held, ops: OpsRef<'_>) -> Result {
    let (f, _) = ops.sets(held);
    let more = f.count();
    let roomy = MAP
        .get(held)
        .is_some_and(|t| iptable::fits(t.slots.len(), t.used.load(Ordering::Relaxed), more));
    if !roomy {
        grow(held, more)?;
    }
    let t = MAP.get(held).ok_or(ENOMEM)?;
    for ip in f.ips() {
        match iptable::set(&t.slots, ip, ops.as_ptr() as usize) {
            Set::New => {
                t.used.fetch_add(1, Ordering::Relaxed);
            }
            Set::Kept => {}
            // Room was made above for every address.
            Set::Full => {
                remove(held, ops);
                return Err(ENOSPC);
            }
        }
    }
    Ok(())
}

/// Takes out every function of the filter of `ops` that names it.
pub(crate) fn remove(held: &Held, ops: OpsRef<'_>) {
    let Some(t) = MAP.get(held) else {
        return;
    };
    let (f, _) = ops.sets(held);
    for ip in f.ips() {
        if iptable::find(&t.slots, ip) == ops.as_ptr() as usize {
            iptable::clear(&t.slots, ip);
        }
    }
}

/// Replaces the table by one with room for `more` new addresses besides
/// those it holds (sleeps).
fn grow(held: &Held, more: usize) -> Result {
    let old = MAP.swap(held, |old| {
        let live = old.map_or(0, |t| iptable::live(&t.slots).count());
        let n = live
            .checked_add(more)
            .and_then(iptable::size_for)
            .ok_or(ENOMEM)?;
        let new = Table::new(n)?;
        if let Some(t) = old {
            if !iptable::copy_live(&t.slots, &new.slots) {
                return Err(ENOSPC);
            }
        }
        new.used.store(live, Ordering::Relaxed);
        Ok(Some(new))
    })?;
    if old.is_some() {
        // Readers may be where RCU does not watch: the rude wait covers
        // them; dropping the old table waits for a plain grace period.
        crate::base::sys::wait_cpus_scheduled();
    }
    drop(old);
    Ok(())
}
