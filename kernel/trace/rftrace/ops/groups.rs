// SPDX-License-Identifier: GPL-2.0

//! Site groups: the per-site dispatch of sites that several ops want.
//!
//! A site that one ops wants calls that ops' own trampoline; a site that
//! several want would call the shared list trampoline, whose dispatcher
//! tests every registered ops' sets at every call. Instead, the plan gives
//! such a site the trampoline of a group made of exactly the ops that want
//! it: the group's trampoline calls those ops, in list order, each as its
//! own trampoline would (its callback, or the assist callback for one
//! that asks the core for recursion protection or RCU), and tests no set.
//! Where the sites have an ops literal, an ops alone on a site whose
//! callback the shared trampoline may not call bare has a group of one
//! (`arch::GROUP_MIN`).
//! A group is an ops of the core's own (its trampoline made by the arch
//! layer, `SAVE_REGS` when a member needs a full `pt_regs`), found in
//! the plan by its members, and retired when one of them goes
//! (`ops::shutdown`, after its sites have moved) or, once the groups fill
//! [`COLLECT_AT`] places, when an update leaves no site calling it
//! (`update::collect_idle_groups`). Without a group (no memory, no room, a direct ops on the site,
//! more than [`MAX_MEMBERS`] ops) the site goes through the list
//! trampoline as before.

use crate::base::cells::Locked;
use crate::base::sys::{dead, CoreGuard, Held, NoPreempt, StateKey, StaticWork};
use crate::ops::arch::Target;
use crate::ops::registry::{list, Ops, OpsRef, OpsTable, F_IPMODIFY, F_SAVE_REGS};
use kernel::bindings;
use kernel::prelude::*;
use kernel::types::Opaque;

/// The most ops a group holds (the arch layer's slots).
pub(crate) const MAX_MEMBERS: usize = crate::ops::arch::GROUP_MEMBERS;
/// The most groups at once (each has a trampoline).
pub(crate) const MAX_GROUPS: usize = 64;

/// A group of ops that sites share.
///
/// # Invariants
///
/// `members[..n]` are the addresses of registered ops, in list order,
/// which stay live while the group's trampoline may run: a member that
/// goes takes its groups out first ([`take_with`], in its shutdown) and
/// is freed by its owner only after the waits that also let the groups go
/// ([`retire`]); a static member is never freed. The trampoline calls
/// what each member's own trampoline calls: made so, and repointed when
/// that changes ([`refresh`]).
pub(crate) struct Group {
    ops: Opaque<Ops>,
    members: [usize; MAX_MEMBERS],
    n: usize,
    regs: bool,
    ipmodify: bool,
}

// SAFETY: the group's ops is shared with every CPU by design (its sites
// call its trampoline, which reads it; the core reads it through
// `OpsRef`, whose accessors are atomic or under `ftrace_lock`); the
// pointers in it are the C fields of an ops, which no task owns. A group
// moves between tasks only inside the core's lock, and is freed after
// the waits of a retired trampoline (`retire`).
unsafe impl Send for Group {}

impl Group {
    /// Its ops.
    pub(crate) fn ops(&self) -> OpsRef<'_> {
        OpsRef::of_opaque(&self.ops)
    }

    fn members(&self) -> &[usize] {
        &self.members[..self.n.min(MAX_MEMBERS)]
    }

    /// Whether `o` is a member.
    fn has(&self, o: OpsRef<'_>) -> bool {
        self.members().contains(&(o.as_ptr() as usize))
    }

    /// Whether it is the group of exactly these.
    fn is(&self, members: &[usize], regs: bool, ipmodify: bool) -> bool {
        self.regs == regs && self.ipmodify == ipmodify && self.members() == members
    }
}

/// Room for the groups (a free place: `None`).
pub(crate) type Groups = [Option<KBox<Group>>; MAX_GROUPS];

/// The groups: those listed, those waiting for the reaper ([`reap`]),
/// and those it parked. An update borrows them with its own state
/// ([`GROUPS_ID`]).
pub(crate) struct Tables {
    /// The listed groups.
    live: Groups,
    /// Groups taken out of the list that no site calls, waiting for the
    /// reaper to free them after its waits.
    retiring: Groups,
    /// Retired groups the reaper kept rather than freed (their
    /// trampolines no CPU is in), for [`revive`]; at most [`PARK_MAX`]:
    /// the first retired while there is room, the rest freed.
    parked: Groups,
    /// How many groups the last collection left, every one of them
    /// called; zero once a group found no room.
    collected: usize,
}

/// The [`Locked`] identity of [`GROUPS`].
pub(crate) const GROUPS_ID: u32 = 2;

/// The groups' tables.
pub(crate) static GROUPS: Locked<Tables, GROUPS_ID> = Locked::new(Tables {
    live: [const { None }; MAX_GROUPS],
    retiring: [const { None }; MAX_GROUPS],
    parked: [const { None }; MAX_GROUPS],
    collected: 0,
});
/// Their ops, for the lockless lookups of trampolines.
static PUBLISHED: OpsTable<MAX_GROUPS> = OpsTable::new();

/// The trampoline and ops (its address: an identity for the slots) of the
/// group of exactly `members` (ops addresses, in list order) whose
/// trampoline saves a full `pt_regs` when `regs` and returns to the ip a
/// member sets when `ipmodify`; made if there is none (none when it
/// cannot be had: the caller uses the list trampoline).
///
/// In the tables `t`, which the caller's update borrowed.
pub(crate) fn find_or_make(
    held: &Held,
    t: &mut Tables,
    members: &[usize],
    regs: bool,
    ipmodify: bool,
) -> Option<(Target, *mut Ops)> {
    if members.len() < crate::ops::arch::GROUP_MIN || members.len() > MAX_MEMBERS {
        return None;
    }
    if let Some(g) = t
        .live
        .iter()
        .flatten()
        .find(|g| g.is(members, regs, ipmodify))
    {
        let o = g.ops();
        return Some((Target::trampoline_of(o), o.as_ptr()));
    }
    if let Some(found) = revive(held, t, members, regs, ipmodify) {
        return Some(found);
    }
    make(held, t, members, regs, ipmodify)
}

/// Takes the group of `members` back into the list from the reaper's
/// places or the parked groups, if it is there: the same ops want the
/// same sites again (a kprobe turned off and on under the function
/// tracer), and its trampoline is as good as a new one.
///
/// What a group's trampoline does depends on its key (the members'
/// addresses, in list order; `regs`; `ipmodify`) and on each member's
/// callback, nothing else: its calls are pointed at what each member's
/// own trampoline calls now (which may have changed while it was out of
/// the list: [`refresh`] sees listed groups only) before it is published.
/// The members the plan asks for are registered ops; should one of them
/// be a new ops at the address of a freed one, the repointed trampoline
/// serves the new one, as a new group would. A group waiting for the
/// reaper may still have CPUs inside (calls that entered before its
/// sites moved off): they run code that stays as it is, and a member they
/// may call is still live: a member that went waited for them in its
/// shutdown (`retire` with it), which a dynamic member's unregistration
/// does before its owner may free it. A parked one was waited out.
fn revive(
    held: &Held,
    t: &mut Tables,
    members: &[usize],
    regs: bool,
    ipmodify: bool,
) -> Option<(Target, *mut Ops)> {
    let place = t.live.iter_mut().find(|p| p.is_none())?;
    let mut g = None;
    let mut was_parked = false;
    for (waiting, parked) in [(&mut t.retiring, false), (&mut t.parked, true)] {
        if let Some(p) = waiting
            .iter_mut()
            .find(|p| p.as_deref().is_some_and(|g| g.is(members, regs, ipmodify)))
        {
            g = p.take();
            was_parked = parked;
            break;
        }
    }
    let g = g?;
    crate::ops::arch::update_trampoline(held, g.ops());
    // perf heard that a parked one went (`park`); one of the reaper's
    // places never left for perf.
    install(held, place, g, was_parked)
}

/// Makes the group of `members`, its trampoline and its listing.
fn make(
    held: &Held,
    t: &mut Tables,
    members: &[usize],
    regs: bool,
    ipmodify: bool,
) -> Option<(Target, *mut Ops)> {
    let Some(place) = t.live.iter_mut().find(|p| p.is_none()) else {
        // The next update looks for idle groups to make room.
        t.collected = 0;
        return None;
    };
    let mut ops = crate::base::zeroed::zeroed_ops();
    // Never called: the trampoline calls the members.
    ops.func = Some(bindings::ftrace_stub);
    if regs {
        ops.flags |= F_SAVE_REGS;
    }
    if ipmodify {
        ops.flags |= F_IPMODIFY;
    }
    let mut m = [0usize; MAX_MEMBERS];
    m.get_mut(..members.len())?.copy_from_slice(members);
    let g = KBox::new(
        Group {
            ops: Opaque::new(ops),
            members: m,
            n: members.len(),
            regs,
            ipmodify,
        },
        GFP_KERNEL,
    )
    .ok()?;
    // The members are the listed ops of these addresses (the plan's), in
    // list order.
    let mut listed = [None; MAX_MEMBERS];
    let mut n = 0;
    for o in list(held).filter(|o| members.contains(&(o.as_ptr() as usize))) {
        *listed.get_mut(n)? = Some(o);
        n += 1;
    }
    let mut calls = [g.ops(); MAX_MEMBERS];
    for (c, o) in calls.iter_mut().zip(listed.iter().flatten()) {
        *c = *o;
    }
    if n != members.len() {
        return None;
    }

    crate::ops::arch::group_trampoline(held, g.ops(), calls.get(..n)?).ok()?;
    install(held, place, g, true)
}

/// Publishes group `g`, whose trampoline calls its members, and lists it
/// in `place`; `perf`: tell perf of its trampoline. Returns the group's
/// trampoline and ops.
fn install(
    held: &Held,
    place: &mut Option<KBox<Group>>,
    g: KBox<Group>,
    perf: bool,
) -> Option<(Target, *mut Ops)> {
    let o = g.ops();
    // SAFETY: the group's ops lives in its box, which `take_with` takes
    // out of the list only after removing it from `PUBLISHED`, and which
    // is freed only after the rude RCU-tasks wait of `retire` (or never).
    if !unsafe { PUBLISHED.publish(held, o) } {
        // Never: the table has room for every listed group. The trampoline
        // no site calls is kept, and so is its ops.
        core::mem::forget(g);
        return None;
    }
    if perf {
        crate::ops::arch::perf_trampoline(held, o, false);
    }
    let found = (Target::trampoline_of(o), o.as_ptr());
    *place = Some(g);
    Some(found)
}

/// Points the groups of `ops` at what its own trampoline calls now: its
/// callback changed while it is registered (the pid filter).
pub(crate) fn refresh(held: &Held, key: &StateKey, ops: OpsRef<'_>) {
    for g in GROUPS.get(key).live.iter().flatten().filter(|g| g.has(ops)) {
        crate::ops::arch::update_trampoline(held, g.ops());
    }
}

/// Takes the groups `ops` is a member of out of the list: `ops` is going,
/// and no site calls their trampolines any more (the update that moved
/// its sites covered every site of those groups, which all want `ops`).
/// The caller frees their slots, then [`retire`]s them.
pub(crate) fn take_with(held: &Held, key: &mut StateKey, ops: OpsRef<'_>) -> Groups {
    take_where(held, &mut GROUPS.borrow(key).live, |g| g.has(ops))
}

/// How many groups there are when the update that just ended leaves
/// some idle: [`take_idle`] is worth its wait from here on. A group stays
/// while any member is registered, even when the filters moved every site
/// away from it; without this, some combinations of ops coming and going
/// would fill the room for good, and every new site of several ops would
/// then go through the list trampoline.
pub(crate) const COLLECT_AT: usize = MAX_GROUPS * 3 / 4;

/// How many groups there are.
fn count(t: &Tables) -> usize {
    t.live.iter().flatten().count()
}

/// Whether an update should look for idle groups: [`COLLECT_AT`] or
/// more exist, and a group was made since the last look, or wanted and
/// found no room.
pub(crate) fn collect_due(t: &Tables) -> bool {
    let live = count(t);
    live >= COLLECT_AT && live > t.collected
}

/// Notes that a look for idle groups left the ones there are now.
pub(crate) fn collected(t: &mut Tables) {
    t.collected = count(t);
}

/// Takes the groups whose ops `idle` says no site calls out of the list,
/// as [`take_with`]; the caller frees their slots, then [`retire`]s them.
pub(crate) fn take_idle(
    held: &Held,
    t: &mut Tables,
    mut idle: impl FnMut(OpsRef<'_>) -> bool,
) -> Groups {
    take_where(held, &mut t.live, |g| idle(g.ops()))
}

fn take_where(held: &Held, all: &mut Groups, mut pick: impl FnMut(&Group) -> bool) -> Groups {
    let mut gone: Groups = [const { None }; MAX_GROUPS];
    for (place, out) in all.iter_mut().zip(gone.iter_mut()) {
        if place.as_deref().is_some_and(&mut pick) {
            *out = place.take();
            if let Some(g) = out {
                PUBLISHED.remove(held, g.ops());
            }
        }
    }
    gone
}

/// The most groups parked.
const PARK_MAX: usize = 8;
/// The reaper's work item.
static REAPER: StaticWork = StaticWork::new(reap);

/// Frees groups taken out by [`take_with`] (whose slots are free), with
/// `also` (an ops whose trampoline goes with them): waits until no CPU or
/// task can be in their trampolines, then frees the trampolines and the
/// groups. If tracing died meanwhile, sites may still call them: kept.
///
/// Without `also` the caller need not wait: the groups are the core's
/// own, and every member of a group outlives the waits its own
/// unregistration makes, which come after the group left the list. They
/// go to the reaper, which waits and frees them later, so that turning a
/// kprobe off under the function tracer (whose group of the two ops goes)
/// does not wait for RCU-tasks grace periods (seconds under TCG) where
/// the C core waits for none; the caller waits only when the reaper's
/// places are full.
pub(crate) fn retire(held: &Held, key: &mut StateKey, gone: Groups, also: Option<OpsRef<'_>>) {
    if gone.iter().all(Option::is_none) && also.is_none() {
        return;
    }
    let gone = if also.is_none() {
        match defer(held, &mut GROUPS.borrow(key).retiring, gone) {
            None => return,
            Some(kept) => kept,
        }
    } else {
        gone
    };
    let groups = gone.iter().flatten().map(|g| g.ops());
    let freed = crate::ops::arch::retire_dynamic(held, Iterator::chain(also.into_iter(), groups));
    if !freed {
        for g in gone {
            core::mem::forget(g);
        }
    }
}

/// Hands `gone` to the reaper if its places hold them all (`None`), else
/// gives them back.
fn defer(held: &Held, waiting: &mut Groups, gone: Groups) -> Option<Groups> {
    let free = waiting.iter().filter(|p| p.is_none()).count();
    if free < gone.iter().flatten().count() {
        return Some(gone);
    }
    let mut places = waiting.iter_mut().filter(|p| p.is_none());
    for g in gone.into_iter().flatten() {
        if let Some(p) = places.next() {
            *p = Some(g);
        }
    }
    REAPER.queue(held);
    None
}

/// The reaper: takes the groups waiting, waits without the lock until no
/// CPU or task can be in their trampolines (they left the list and their
/// sites before they were handed over, so the waits begun here cover
/// every call into them), then frees them under the lock. Groups handed
/// over meanwhile queue the work again.
extern "C" fn reap(_work: *mut bindings::work_struct) {
    let taken = {
        let mut g = CoreGuard::lock();
        let t = GROUPS.borrow(g.parts().1);
        core::mem::replace(&mut t.retiring, [const { None }; MAX_GROUPS])
    };
    if taken.iter().all(Option::is_none) {
        return;
    }
    crate::ops::arch::wait_trampolines_left();
    let mut guard = CoreGuard::lock();
    let (held, key) = guard.parts();
    let mut taken = taken;
    if !dead() {
        park(held, &mut GROUPS.borrow(key).parked, &mut taken);
    }
    if !crate::ops::arch::free_trampolines(held, taken.iter().flatten().map(|g| g.ops())) {
        for g in taken {
            core::mem::forget(g);
        }
    }
}

/// Moves the groups of `gone` (waited out, no site calling them) to the
/// parked ones while there is room among the first [`PARK_MAX`] places;
/// perf hears they went, as for a freed one.
fn park(held: &Held, parked: &mut Groups, gone: &mut Groups) {
    for p in gone.iter_mut() {
        if p.is_none() {
            continue;
        }
        let Some(room) = parked.iter_mut().take(PARK_MAX).find(|q| q.is_none()) else {
            return;
        };
        if let Some(g) = p.take() {
            crate::ops::arch::perf_trampoline(held, g.ops(), true);
            *room = Some(g);
        }
    }
}

/// The group ops whose trampoline holds `a`, for the unwinder.
pub(crate) fn trampoline_ops(np: &NoPreempt, a: u64) -> Option<OpsRef<'_>> {
    PUBLISHED.iter(np).find(|op| {
        let (at, size) = op.trampoline();
        at != 0 && a >= at && a - at < size
    })
}

/// The groups' trampolines, for kallsyms.
pub(crate) fn trampolines(np: &NoPreempt) -> impl Iterator<Item = (u64, u64)> + '_ {
    PUBLISHED
        .iter(np)
        .map(OpsRef::trampoline)
        .filter(|&(at, _)| at != 0)
}
