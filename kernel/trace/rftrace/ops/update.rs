// SPDX-License-Identifier: GPL-2.0

//! What every site calls, and the writing of it: the trampoline slots,
//! the plan (`logic::plan`) filled from the registered ops, and the
//! batches the arch layer writes.
//!
//! Every change (an ops comes or goes, a filter changes, a module comes)
//! recomputes what every site must call from the registered ops and their
//! sets ([`update_sites`]): nothing, the one ops' own trampoline, or the
//! shared list trampoline (saving a full `pt_regs` when an ops on the
//! site needs them). The sites whose call changes are written as one
//! batch by the arch layer.

use crate::base::cells::Locked;
use crate::base::sys::{dead, enabled, Held, StateKey};
use crate::logic::plan::{self, OpsSites, Shared, Want};
use crate::logic::sites::{flags as sf, Site};
use crate::logic::wantindex::{self, Entry, Index};
use crate::ops::arch::{Changes, Target};
use crate::ops::groups::{self, Tables, GROUPS};
use crate::ops::registry::{list, Ops, OpsRef, F_DIRECT, F_IPMODIFY, F_SAVE_REGS, F_STUB};
use crate::sites::hash::SetRef;
use crate::sites::publish::PlanRoom;
use crate::sites::table::{self, Cell};
use core::ptr;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::prelude::*;

/// The ops a site may call directly, by slot number - 1 (the number is
/// kept in the site's flags).
pub(crate) struct Slot {
    ops: *mut Ops,
    pub(crate) tramp: Target,
    /// While a direct ops changes trampoline: the one its sites still
    /// call, until the update that moves them (the NOP otherwise).
    pub(crate) was: Target,
}

// SAFETY: `ops` is the address of a registered ops, read and turned back
// into an `OpsRef` only under `ftrace_lock` (the only way to reach
// [`UPDATE`]), whichever task holds it; the rest is plain data.
unsafe impl Send for Slot {}

/// What updates keep under `ftrace_lock`: the slots, the batch, the
/// plan's room and the want index's. An update borrows the groups' tables
/// with it.
struct Update {
    slots: KVec<Slot>,
    batch: Batch,
    planned: PlanRoom<Target>,
    /// Room for the index of what the registered ops want
    /// ([`wantindex`]), filled with blank entries: an update builds the
    /// index in it without allocating ([`reserve_index`]).
    index: KVVec<Entry>,
}

/// The [`Locked`] identity of [`UPDATE`] (not [`groups::GROUPS_ID`]).
const UPDATE_ID: u32 = 1;

static UPDATE: Locked<Update, UPDATE_ID> = Locked::new(Update {
    slots: KVec::new(),
    batch: Batch {
        changes: Changes::new(),
        cells: [None; BATCH],
        next: [Site::new(0); BATCH],
    },
    planned: PlanRoom::new(),
    index: KVVec::new(),
});

/// The slot number of `ops` in `slots` (0: none).
fn slot_in(slots: &[Slot], ops: OpsRef<'_>) -> u32 {
    slots
        .iter()
        .position(|x| x.ops == ops.as_ptr())
        .map_or(0, |i| i as u32 + 1)
}

/// Points the slot of `ops` (if it has one) at `tramp`, `was` being the
/// trampoline its sites still call until the next update moves them.
pub(crate) fn retarget_slot(key: &mut StateKey, ops: OpsRef<'_>, tramp: Target, was: Target) {
    let slots = &mut UPDATE.borrow(key).slots;
    if let Some(i) = slot_in(slots, ops).checked_sub(1) {
        if let Some(x) = slots.get_mut(i as usize) {
            x.tramp = tramp;
            x.was = was;
        }
    }
}

/// What the sites of slot `slot` (0: none) call.
fn slot_target(slots: &[Slot], slot: u32) -> Target {
    (slot as usize)
        .checked_sub(1)
        .and_then(|i| slots.get(i))
        .map_or(Target::NOP, |x| x.tramp)
}

/// Gives `ops` a slot whose sites call `tramp` (0: none could be had; the
/// ops then goes through the list trampoline).
pub(crate) fn slot_alloc(key: &mut StateKey, ops: OpsRef<'_>, tramp: Target) -> u32 {
    slot_alloc_in(&mut UPDATE.borrow(key).slots, ops.as_ptr(), tramp)
}

/// [`slot_alloc`] in the slots `s`, for the ops at `ops`.
fn slot_alloc_in(s: &mut KVec<Slot>, ops: *mut Ops, tramp: Target) -> u32 {
    if let Some(i) = s.iter().position(|x| x.ops == ops) {
        s[i].tramp = tramp;
        return i as u32 + 1;
    }
    if let Some(i) = s.iter().position(|x| x.ops.is_null()) {
        s[i] = Slot {
            ops,
            tramp,
            was: Target::NOP,
        };
        return i as u32 + 1;
    }
    if s.len() + 1 >= crate::logic::sites::MAX_SLOTS as usize
        || s.push(
            Slot {
                ops,
                tramp,
                was: Target::NOP,
            },
            GFP_KERNEL,
        )
        .is_err()
    {
        return 0;
    }
    s.len() as u32
}

/// Frees the slot of `ops`, whose trampoline no site calls any more.
pub(crate) fn slot_free(key: &mut StateKey, ops: OpsRef<'_>) {
    slot_free_in(&mut UPDATE.borrow(key).slots, ops)
}

/// [`slot_free`] in the slots `s`.
fn slot_free_in(s: &mut [Slot], ops: OpsRef<'_>) {
    for x in s.iter_mut().filter(|x| x.ops == ops.as_ptr()) {
        x.ops = ptr::null_mut();
        x.tramp = Target::NOP;
    }
}

// --- the plan ------------------------------------------------------------

/// What an update needs to know of one registered ops: its sets are read
/// under `ftrace_lock`, which the whole update holds.
type Planned<'h> = crate::sites::publish::Planned<'h, Target>;

static LIST_FUNC_SET: AtomicBool = AtomicBool::new(false);

/// Points the shared trampolines' callback calls at the list dispatcher,
/// once.
fn set_list_func() {
    if LIST_FUNC_SET.load(Ordering::Relaxed) {
        return;
    }
    // The dispatcher is an exported function: its C prototype is the
    // callback type.
    let list_func: kernel::bindings::ftrace_func_t =
        Some(kernel::bindings::arch_ftrace_ops_list_func);
    crate::base::sys::set_trace_function(list_func);
    let r = crate::ops::arch::point_shared(list_func);
    match r {
        Ok(()) => LIST_FUNC_SET.store(true, Ordering::Relaxed),
        Err(e) => pr_err!(
            "cannot point the trampolines at the list dispatcher: {:?}\n",
            e
        ),
    }
}

/// The address the site calls now, by its flags.
fn current_target(slots: &[Slot], s: &Site, list: Target, regs: Target) -> Option<Target> {
    if !s.has(sf::ENABLED) {
        return Some(Target::NOP);
    }
    if s.has(sf::DIRECT_OPS) {
        let i = (s.slot() as usize).checked_sub(1)?;
        return slots
            .get(i)
            .map(|x| if x.was.is_nop() { x.tramp } else { x.was })
            .filter(|t| !t.is_nop());
    }
    Some(if s.has(sf::REGS) { regs } else { list })
}

/// How many sites one patch batch rewrites at most. An update of more
/// sites goes out as several batches, each of which the records follow as
/// soon as it is written (as the C core flushes its text_poke queue).
const BATCH: usize = 512;

/// The sites an update rewrites, gathered until the batch is full. Static,
/// so that an update never allocates: once an update has started, its
/// plan has been published (an ops unlinked, a filter swapped), and a
/// failure could leave sites calling a trampoline about to be freed.
struct Batch {
    changes: Changes<BATCH>,
    cells: [Option<&'static Cell>; BATCH],
    next: [Site; BATCH],
}

/// Makes room in the plan for the registered ops and `extra` more, before
/// an ops is published. Fails with `ENOMEM` while nothing has changed yet.
/// The plan, what every registered ops wants for one update, is filled
/// anew by each update within that room, so that it does not allocate
/// either. The want index's room is made here too, at best
/// ([`reserve_index`]): without it, updates are slower, not wrong, so its
/// shortage fails nothing.
pub(crate) fn reserve_plan(held: &Held, key: &mut StateKey, extra: usize) -> Result {
    let n = list(held).count().saturating_add(extra);
    let u = UPDATE.borrow(key);
    u.planned.reserve(n)?;
    reserve_index(&mut u.index, index_need(held, extra));
    Ok(())
}

/// The entries a want index of the registered ops takes, and a marker for
/// each of them and of `extra` more ops ([`wantindex::build`]): an ops
/// with a filter indexes it, one without its notrace set.
fn index_need(held: &Held, extra: usize) -> usize {
    list(held).fold(extra, |n, op| {
        let (filter, notrace) = op.sets(held);
        let c = if filter.is_empty() {
            notrace.count()
        } else {
            filter.count()
        };
        n.saturating_add(c).saturating_add(1)
    })
}

/// Under this many entries (16 bytes each) the index's room is kept as it
/// is when it could shrink.
const INDEX_KEEP: usize = 1024;

/// Gives the index's room `need` entries, and half as many again for the
/// ops and entries to come; a room over four times what is needed is
/// replaced by a smaller one (a filter of every function, indexed once,
/// does not keep its megabyte). Best effort, and only here, with the
/// plan's room, when an ops registers: without the memory, or when a
/// filter grows after its ops registered (filter changes do not reserve:
/// that would add an allocation, and a failure to handle, to every filter
/// write and kprobe arm for little), the ops that do not fit are asked at
/// each site, as without an index (one set lookup per site each), which
/// is right, only slower. The room itself is not an update's allocation:
/// an update only fills it.
fn reserve_index(room: &mut KVVec<Entry>, need: usize) {
    let have = room.len();
    if need <= have && (have <= INDEX_KEEP || need.saturating_mul(4) >= have) {
        return;
    }
    let n = need.saturating_add(need / 2);
    // Quiet: nothing fails for it.
    if let Ok(v) = KVVec::from_elem(Entry::default(), n, GFP_KERNEL | __GFP_NOWARN) {
        // The old room (no update is running: `ftrace_lock` is held) goes.
        *room = v;
    }
}

/// Writes the gathered sites, then their records; empties the batch.
fn flush(held: &Held, b: &mut Batch) -> Result {
    let n = b.changes.len();
    if n == 0 {
        return Ok(());
    }
    set_list_func();
    if let Err((e, bad)) = b.changes.apply(held) {
        // The arch layer wrote nothing of this batch: it found a site not
        // holding what its record says (or could not read it).
        crate::base::sys::report_bug(e, bad);
        return Err(e);
    }
    for (cell, s) in b.cells[..n].iter().zip(b.next[..n].iter()) {
        if let Some(cell) = cell {
            cell.set(held, *s);
        }
    }
    Ok(())
}

/// Recomputes what every site must call and writes the sites that change,
/// in batches (sleeps).
pub(crate) fn update_sites(held: &Held, key: &mut StateKey) -> Result {
    update_scope(held, key, &[])
}

/// How many sites of the sets of a scoped update make it walk the whole
/// table (in address order) rather than the sets: eight batches.
const WALK_TABLE_AT: usize = 8 * BATCH;

/// [`update_sites`] for the sites of the sets of `scope` only (all sites
/// when empty):
/// when one ops with an explicit filter comes, goes or changes its filter,
/// no other site can change.
///
/// Allocates nothing: the plan's room (and the index's) was reserved when
/// the ops now registered came, and the batch is static. It fails only when a site
/// does not hold what its record says, which kills tracing (`ftrace_bug()`).
pub(crate) fn update_scope(held: &Held, key: &mut StateKey, scope: &[SetRef<'_>]) -> Result {
    // How many sites it plans, about (a site in two sets counts twice),
    // for the choice of the index.
    let total = table::TOTAL.load(Ordering::Relaxed);
    let visits = if scope.is_empty() {
        total
    } else {
        scope.iter().map(|h| h.count()).sum::<usize>().min(total)
    };
    run_update(held, key, visits, |visit| {
        if scope.is_empty() {
            for cell in table::all() {
                visit(cell)?;
            }
        } else if scope.iter().map(|h| h.count()).sum::<usize>() >= WALK_TABLE_AT {
            // Many sites: taken in the table's (address) order, so that
            // the sites of each batch lie close together and each of its
            // steps is a few runs of pages; a set's own order is its
            // hash's, which spreads every batch over the whole text.
            for cell in table::all() {
                let ip = cell.ip();
                if scope.iter().any(|h| h.contains(ip)) {
                    visit(cell)?;
                }
            }
        } else {
            // In a set's (hash) order: the finder's group kept saves
            // searching the others for most addresses.
            let mut finder = table::Finder::new(held);
            for (i, h) in scope.iter().enumerate() {
                for ip in h.ips() {
                    // A site in two of the sets is taken once.
                    if scope[..i].iter().any(|p| p.contains(ip)) {
                        continue;
                    }
                    if let Some(c) = finder.find(ip) {
                        visit(c)?;
                    }
                }
            }
        }
        Ok(())
    })
}

/// [`update_sites`] for the sites at `ips` only (no other site can have
/// changed), allocation-free like it. `ips` holds no address twice: the
/// callers pass the two halves of the difference of two sets, which are
/// disjoint, or a few addresses they made unique; sorted, when many, so
/// that each batch's sites lie close together (a batch's steps are runs
/// of nearby pages). Linear in `ips` when sorted: they are merged with
/// the site tables ([`table::Finder`] goes on from the last record found),
/// not searched for one by one in every group; a filter of one function
/// replaced by `*` passes every site. Unsorted (a few), each is searched.
pub(crate) fn update_ips(held: &Held, key: &mut StateKey, ips: &[u64]) -> Result {
    run_update(held, key, ips.len(), |visit| {
        let mut finder = table::Finder::new(held);
        for &ip in ips {
            if let Some(c) = finder.find(ip) {
                visit(c)?;
            }
        }
        Ok(())
    })
}

/// [`update_sites`] for the `n` sites of `cells` only (no other site can
/// have changed: a module's, when it is about to run), allocation-free
/// like it.
pub(crate) fn update_cells(
    held: &Held,
    key: &mut StateKey,
    n: usize,
    cells: impl Iterator<Item = &'static Cell>,
) -> Result {
    run_update(held, key, n, |visit| {
        for c in cells {
            visit(c)?;
        }
        Ok(())
    })
}

/// One update: fills the plan and indexes it, plans each site `walk`
/// hands to its visitor (writing the batch whenever it is full), writes
/// the rest, then looks for idle groups. The update's state and the
/// groups are borrowed together for the walk. `visits`: about how many
/// sites `walk` visits, which says whether the index is worth building.
fn run_update(
    held: &Held,
    key: &mut StateKey,
    visits: usize,
    walk: impl FnOnce(&mut dyn FnMut(&'static Cell) -> Result) -> Result,
) -> Result {
    let on = enabled() && !dead();
    let (u, t) = UPDATE.borrow_pair(&GROUPS, key);
    let Update {
        slots,
        batch: b,
        planned,
        index,
    } = u;
    // No set of this update is read after it: the room is emptied.
    planned.with(held, |planned| {
        fill_plan(held, slots, planned)?;
        let planned = planned.as_slice();
        // In the room `reserve_index` made, no allocation; none (too few
        // ops or sites, no room), each site asks every ops.
        let ix = wantindex::build(
            index.as_mut_slice(),
            planned,
            visits,
            SetRef::count,
            SetRef::ips,
        );
        let mut wanted = Plan { planned, index: ix };
        b.changes.clear();
        walk(&mut |cell| plan_site(held, slots, t, cell, on, &mut wanted, b))?;
        flush(held, b)
    })?;
    collect_idle_groups(held, key);
    Ok(())
}

/// Frees the groups no site calls after an update, once there are
/// [`groups::COLLECT_AT`] of them: one pass over the sites (a binary
/// search of the groups' slots each) and the wait of
/// [`groups::retire`], taken only when the room runs short.
///
/// A group no site calls may still have a CPU or task inside its
/// trampoline (a call that entered before its last site moved): the
/// groups are taken out of the list and the unwinder's table first, and
/// freed only after `retire`'s wait, as when a member goes.
///
/// A pass leaves every remaining group called; the next one waits until
/// a group was made since or found no room ([`groups::collect_due`]), so
/// that an update of one site does not walk every site each time while
/// many groups are in use.
fn collect_idle_groups(held: &Held, key: &mut StateKey) {
    if !groups::collect_due(GROUPS.get(key)) {
        return;
    }
    // The slots that group sites call, sorted: at most one per group.
    let mut called = [0u32; groups::MAX_GROUPS];
    let mut n = 0;
    for cell in table::all() {
        let site = cell.read(held);
        if !(site.has(sf::GROUP) && site.has(sf::ENABLED)) {
            continue;
        }
        let slot = site.slot();
        if let Err(at) = called[..n].binary_search(&slot) {
            if n == called.len() {
                // More slots than groups: the records are not what this
                // expects; free nothing.
                return;
            }
            called.copy_within(at..n, at + 1);
            called[at] = slot;
            n += 1;
        }
    }
    // A mutants kernel's break: every group is taken for idle.
    let n = if crate::base::mutant::is(crate::base::mutant::Mutant::FreeCalledGroup) {
        0
    } else {
        n
    };
    let called = &called[..n];
    let (u, t) = UPDATE.borrow_pair(&GROUPS, key);
    let slots = &mut u.slots;
    let idle = |o: OpsRef<'_>| {
        slots
            .iter()
            .position(|x| x.ops == o.as_ptr())
            // A group without a slot (none was to be had) is called by
            // no site either.
            .map_or(true, |i| called.binary_search(&(i as u32 + 1)).is_err())
    };
    let gone = groups::take_idle(held, t, idle);
    for g in gone.iter().flatten() {
        slot_free_in(slots, g.ops());
    }
    groups::retire(held, key, gone, None);
    groups::collected(GROUPS.borrow(key));
}

/// Fills the plan with what every registered ops wants, within the room
/// [`reserve_plan`] made: no allocation.
fn fill_plan<'h>(held: &'h Held, slots: &[Slot], planned: &mut KVec<Planned<'h>>) -> Result {
    crate::base::sys::truncate(planned, 0);
    for op in list(held) {
        let flags = op.flags();
        if flags & F_STUB != 0 {
            continue;
        }
        let (filter, notrace) = op.sets(held);
        // A mutants kernel's break: every ops planned on every site.
        let filter = if crate::base::mutant::is(crate::base::mutant::Mutant::IgnoreFilter) {
            SetRef::EMPTY
        } else {
            filter
        };
        let slot = slot_in(slots, op);
        // Within the capacity reserved for every listed ops: no allocation.
        planned
            .push(
                Planned {
                    sites: OpsSites {
                        filter,
                        notrace,
                        regs: flags & F_SAVE_REGS != 0,
                        ipmodify: flags & F_IPMODIFY != 0,
                    },
                    direct: flags & F_DIRECT != 0,
                    slot,
                    tramp: slot_target(slots, slot),
                    id: op.as_ptr() as usize,
                },
                GFP_KERNEL,
            )
            .map_err(|_| ENOMEM)?;
    }
    Ok(())
}

/// Whether any registered ops manages sub-ops (their filters are then
/// rebuilt from the sub-ops' on every change).
pub(crate) fn any_manager(held: &Held, key: &StateKey) -> bool {
    list(held).any(|o| o.is_manager(key))
}

/// What an update plans the sites from: what each registered ops wants,
/// and the index of it, when one was built.
struct Plan<'p, 'h> {
    planned: &'p [Planned<'h>],
    index: Option<Index<'p>>,
}

/// Plans one site: its record is set at once when its instruction stays,
/// else the change joins the batch (written when the batch is full).
fn plan_site(
    held: &Held,
    slots: &mut KVec<Slot>,
    tables: &mut Tables,
    cell: &'static Cell,
    on: bool,
    wanted: &mut Plan<'_, '_>,
    b: &mut Batch,
) -> Result {
    let site = cell.read(held);
    if site.has(sf::DISABLED) {
        return Ok(());
    }
    let ip = site.ip;
    let list_tramp = Target::list();
    let regs_tramp = Target::regs();
    let shared = Shared {
        list: list_tramp,
        regs: regs_tramp,
    };
    let planned = wanted.planned;
    let group = |mask: u64, regs: bool| group_target(held, slots, tables, planned, mask, regs);
    // The index gives what `plan::want` would, without asking every ops.
    let (new, next) = match wanted.index.as_mut() {
        Some(index) => {
            let w: Want = index.want(ip, planned);
            plan::plan_wanted(&site, &w, on, planned, shared, group)
        }
        None => plan::plan_site(&site, on, planned, shared, group),
    };
    let Some(cur) = current_target(slots, &site, list_tramp, regs_tramp) else {
        pr_err!("site {:#x}: lost track of its trampoline\n", ip);
        crate::base::sys::report_bug(EINVAL, ip);
        return Err(EINVAL);
    };
    if cur == new {
        cell.set(held, next);
        return Ok(());
    }
    let i = b.changes.len();
    if !b.changes.push(ip, cur, new) {
        // Flushed when full, below: never here.
        return Err(EINVAL);
    }
    b.cells[i] = Some(cell);
    b.next[i] = next;
    if i + 1 == BATCH {
        flush(held, b)?;
    }
    Ok(())
}

/// The trampoline and slot of the group of the planned ops of `mask`
/// (full `pt_regs`: `regs`), made if need be: none when it cannot be had.
fn group_target(
    held: &Held,
    slots: &mut KVec<Slot>,
    tables: &mut Tables,
    planned: &[Planned<'_>],
    mask: u64,
    regs: bool,
) -> Option<(Target, u32)> {
    // Too few members for a group here (one, where sites have no
    // literal): nothing to look up.
    if (mask.count_ones() as usize) < crate::ops::arch::GROUP_MIN {
        return None;
    }
    let mut ids = [0usize; groups::MAX_MEMBERS];
    let (mut n, mut ipmodify) = (0, false);
    // The set bits only: a site of one or two ops among many registered
    // looks at those.
    let mut bits = mask;
    while bits != 0 {
        let p = planned.get(bits.trailing_zeros() as usize)?;
        bits &= bits - 1;
        *ids.get_mut(n)? = p.id;
        n += 1;
        ipmodify |= p.sites.ipmodify;
    }
    let (tramp, ops) = groups::find_or_make(held, tables, &ids[..n], regs, ipmodify)?;
    let slot = slot_alloc_in(slots, ops, tramp);
    (slot != 0).then_some((tramp, slot))
}

/// Whether enabling `ops` with filter `filter` would put two ops that may
/// change the return address on one function (refused with `EBUSY`).
/// Only explicit filter entries count, as in the C core.
pub(crate) fn ipmodify_conflict(held: &Held, ops: OpsRef<'_>, filter: SetRef<'_>) -> bool {
    let others = || {
        list(held)
            .filter(move |o| *o != ops && o.has(F_IPMODIFY))
            .map(|o| {
                let (filter, notrace) = o.sets(held);
                OpsSites {
                    filter,
                    notrace,
                    regs: false,
                    ipmodify: true,
                }
            })
    };
    plan::ipmodify_conflict(filter.ips(), others).is_some()
}

/// The sites an ops alone can change, for [`update_scope`]: its filter,
/// when it has one and no notrace set (else every site: empty).
pub(crate) fn own_sites<'h>(held: &'h Held, ops: OpsRef<'_>) -> KVec<SetRef<'h>> {
    let mut v = KVec::new();
    let (f, n) = ops.sets(held);
    if !f.is_empty() && n.is_empty() {
        // Without memory, every site is visited: slower, still right.
        let _ = v.push(f, GFP_KERNEL);
    }
    v
}
