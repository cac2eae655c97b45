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

use crate::archif::Change;
use crate::dispatch::arch_ftrace_ops_list_func;
use crate::hash::{self, FtraceHash, SetRef};
use crate::logic::plan::{self, OpsSites, Shared};
use crate::logic::sites::{flags as sf, Site};
use crate::registry::*;
use crate::sys::{addr, dead, enabled, ftrace_list_end, Held, Locked};
use crate::table::{self, Cell};
use core::ptr;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::bindings;
use kernel::error::to_result;
use kernel::ffi::c_int;
use kernel::prelude::*;

/// The ops a site may call directly, by slot number - 1 (the number is
/// kept in the site's flags).
pub(crate) struct Slot {
    ops: *mut Ops,
    pub(crate) tramp: u64,
    /// While a direct ops changes trampoline: the one its sites still
    /// call, until the update that moves them (0 otherwise).
    pub(crate) was: u64,
}

pub(crate) static SLOTS: Locked<KVec<Slot>> = Locked::new(KVec::new());

/// # Safety
///
/// `ftrace_lock` is held.
pub(crate) unsafe fn slot_of(ops: *mut Ops) -> u32 {
    // SAFETY: per the function's contract.
    let s = unsafe { SLOTS.get() };
    s.iter()
        .position(|x| x.ops == ops)
        .map_or(0, |i| i as u32 + 1)
}

/// What the sites of slot `slot` (0: none) call.
///
/// # Safety
///
/// `ftrace_lock` is held.
unsafe fn slot_target(slot: u32) -> u64 {
    // SAFETY: per the function's contract.
    let s = unsafe { SLOTS.get() };
    (slot as usize)
        .checked_sub(1)
        .and_then(|i| s.get(i))
        .map_or(0, |x| x.tramp)
}

/// # Safety
///
/// `ftrace_lock` is held.
pub(crate) unsafe fn slot_alloc(ops: *mut Ops, tramp: u64) -> u32 {
    // SAFETY: per the function's contract.
    let s = unsafe { SLOTS.get() };
    if let Some(i) = s.iter().position(|x| x.ops == ops) {
        s[i].tramp = tramp;
        return i as u32 + 1;
    }
    if let Some(i) = s.iter().position(|x| x.ops.is_null()) {
        s[i] = Slot { ops, tramp, was: 0 };
        return i as u32 + 1;
    }
    if s.len() + 1 >= crate::logic::sites::MAX_SLOTS as usize
        || s.push(Slot { ops, tramp, was: 0 }, GFP_KERNEL).is_err()
    {
        // The ops then goes through the list trampoline.
        return 0;
    }
    s.len() as u32
}

/// # Safety
///
/// `ftrace_lock` is held and no site calls the ops' trampoline any more.
pub(crate) unsafe fn slot_free(ops: *mut Ops) {
    // SAFETY: per the function's contract.
    let s = unsafe { SLOTS.get() };
    for x in s.iter_mut().filter(|x| x.ops == ops) {
        x.ops = ptr::null_mut();
        x.tramp = 0;
    }
}

// --- the plan ------------------------------------------------------------

/// What an update needs to know of one registered ops: its sets are read
/// under `ftrace_lock`, which the whole update holds.
type Planned = plan::Planned<SetRef>;

static LIST_FUNC_SET: AtomicBool = AtomicBool::new(false);

/// Points the shared trampolines' callback calls at the list dispatcher,
/// once.
fn set_list_func() {
    if LIST_FUNC_SET.load(Ordering::Relaxed) {
        return;
    }
    let f: bindings::ftrace_func_t = Some(arch_ftrace_ops_list_func);
    // SAFETY: written before the first site calls a shared trampoline.
    unsafe {
        *crate::sys::function_trace_op.get() = ftrace_list_end.get();
        *crate::sys::ftrace_trace_function.get() = f;
        bindings::mutex_lock(ptr::addr_of_mut!(bindings::text_mutex));
    }
    // SAFETY: `text_mutex` is held, as the arch layer requires.
    let r = unsafe { bindings::ftrace_update_ftrace_func(f) };
    // SAFETY: taken above.
    unsafe { bindings::mutex_unlock(ptr::addr_of_mut!(bindings::text_mutex)) };
    if r == 0 {
        LIST_FUNC_SET.store(true, Ordering::Relaxed);
    } else {
        pr_err!(
            "cannot point the trampolines at the list dispatcher: {}\n",
            r
        );
    }
}

extern "C" {
    fn rftrace_arch_apply(changes: *const Change, n: usize, bad_ip: *mut u64) -> c_int;
    pub(crate) fn rftrace_arch_init_site(ip: u64, target: u64) -> c_int;
}
// Declared as the arch layer defines them (archif.rs).
const _: (crate::archif::ApplyFn, crate::archif::InitSiteFn) =
    (rftrace_arch_apply, rftrace_arch_init_site);

/// The address the site calls now, by its flags.
///
/// # Safety
///
/// `ftrace_lock` is held.
unsafe fn current_target(s: &Site, list: u64, regs: u64) -> Option<u64> {
    if !s.has(sf::ENABLED) {
        return Some(0);
    }
    if s.has(sf::DIRECT_OPS) {
        // SAFETY: per the function's contract.
        let slots = unsafe { SLOTS.get() };
        let i = (s.slot() as usize).checked_sub(1)?;
        return slots
            .get(i)
            .map(|x| if x.was != 0 { x.was } else { x.tramp })
            .filter(|&t| t != 0);
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
    len: usize,
    changes: [Change; BATCH],
    cells: [Option<&'static Cell>; BATCH],
    next: [Site; BATCH],
}

static BATCH_BUF: Locked<Batch> = Locked::new(Batch {
    len: 0,
    changes: [Change {
        ip: 0,
        old: 0,
        new: 0,
    }; BATCH],
    cells: [None; BATCH],
    next: [Site::new(0); BATCH],
});

/// What every registered ops wants, for one update: filled anew by each
/// update within the capacity [`reserve_plan`] made, so that it does not
/// allocate either.
static PLANNED: Locked<KVec<Planned>> = Locked::new(KVec::new());

/// Makes room in the plan for the registered ops and `extra` more, before
/// an ops is published. Fails with `ENOMEM` while nothing has changed yet.
///
/// # Safety
///
/// `ftrace_lock` is held.
pub(crate) unsafe fn reserve_plan(extra: usize) -> Result {
    // SAFETY: per the function's contract.
    let (planned, held) = unsafe { (PLANNED.get(), Held::assume()) };
    let want = list(held).count().saturating_add(extra);
    planned
        .reserve(want.saturating_sub(planned.len()), GFP_KERNEL)
        .map_err(|_| ENOMEM)
}

/// Writes the gathered sites, then their records; empties the batch.
///
/// # Safety
///
/// `ftrace_lock` is held; the context may sleep.
unsafe fn flush(b: &mut Batch) -> Result {
    let n = core::mem::replace(&mut b.len, 0);
    if n == 0 {
        return Ok(());
    }
    set_list_func();
    let mut bad = 0u64;
    // SAFETY: `changes` holds `n` changes; sleepable, `ftrace_lock` held.
    let r = unsafe { rftrace_arch_apply(b.changes.as_ptr(), n, &mut bad) };
    if let Err(e) = to_result(r) {
        // The arch layer wrote nothing of this batch: it found a site not
        // holding what its record says (or could not read it).
        crate::sys::report_bug(e, bad);
        return Err(e);
    }
    for (cell, s) in b.cells[..n].iter().zip(b.next[..n].iter()) {
        if let Some(cell) = cell {
            // SAFETY: `ftrace_lock` is held; `s` was planned for `cell`.
            unsafe { cell.set(*s) };
        }
    }
    Ok(())
}

/// Recomputes what every site must call and writes the sites that change,
/// in batches.
///
/// # Safety
///
/// `ftrace_lock` is held; the context may sleep.
pub(crate) unsafe fn update_sites() -> Result {
    // SAFETY: per the function's contract.
    unsafe { update_scope(&[]) }
}

/// [`update_sites`] for the sites of the sets of `scope` only (all sites
/// when empty):
/// when one ops with an explicit filter comes, goes or changes its filter,
/// no other site can change.
///
/// Allocates nothing: the plan's room was reserved when the ops now
/// registered came, and the batch is static. It fails only when a site
/// does not hold what its record says, which kills tracing (`ftrace_bug()`).
///
/// # Safety
///
/// `ftrace_lock` is held; the sets are valid; the context may sleep.
pub(crate) unsafe fn update_scope(scope: &[*const FtraceHash]) -> Result {
    let on = enabled() && !dead();
    // SAFETY: `ftrace_lock` is held.
    let planned = unsafe { fill_plan() }?;
    // SAFETY: `ftrace_lock` is held; nothing else borrows the batch.
    let b = unsafe { BATCH_BUF.get() };
    b.len = 0;
    let mut visit = |cell: &'static Cell| -> Result {
        // SAFETY: `ftrace_lock` is held; sleepable.
        unsafe { plan_site(cell, on, planned, b) }
    };
    if scope.is_empty() {
        for cell in table::all() {
            visit(cell)?;
        }
    } else {
        let mut r = Ok(());
        for (i, &h) in scope.iter().enumerate() {
            // SAFETY: per the function's contract.
            unsafe {
                hash::for_each(h, |e| {
                    let ip = (*e).ip as u64;
                    // A site in two of the sets is taken once.
                    if r.is_err() || scope[..i].iter().any(|&p| hash::contains(p, ip)) {
                        return;
                    }
                    if let Some(c) = table::find(ip) {
                        r = visit(c);
                    }
                });
            }
            r?;
        }
    }
    // SAFETY: `ftrace_lock` is held; sleepable.
    unsafe { flush(b) }
}

/// [`update_sites`] for the sites at `ips` only (each once, no other
/// site can have changed), allocation-free like it.
///
/// # Safety
///
/// `ftrace_lock` is held; the context may sleep.
pub(crate) unsafe fn update_ips(ips: &[u64]) -> Result {
    let on = enabled() && !dead();
    // SAFETY: `ftrace_lock` is held.
    let planned = unsafe { fill_plan() }?;
    // SAFETY: `ftrace_lock` is held; nothing else borrows the batch.
    let b = unsafe { BATCH_BUF.get() };
    b.len = 0;
    for (i, &ip) in ips.iter().enumerate() {
        // SAFETY: `ftrace_lock` is held.
        let cell = unsafe { table::find(ip) };
        if let Some(c) = cell.filter(|_| !ips[..i].contains(&ip)) {
            // SAFETY: `ftrace_lock` is held; sleepable.
            unsafe { plan_site(c, on, planned, b) }?;
        }
    }
    // SAFETY: `ftrace_lock` is held; sleepable.
    unsafe { flush(b) }
}

/// Fills the plan with what every registered ops wants, within the room
/// [`reserve_plan`] made: no allocation.
///
/// # Safety
///
/// `ftrace_lock` is held, and the plan is not borrowed elsewhere.
unsafe fn fill_plan() -> Result<&'static [Planned]> {
    // SAFETY: per the function's contract.
    let (planned, held) = unsafe { (PLANNED.get(), Held::assume()) };
    // SAFETY: `Planned` is `Copy` (no drop glue); length 0 is in bounds.
    unsafe { planned.set_len(0) };
    for op in list(held) {
        let flags = op.flags();
        if flags & F_STUB != 0 {
            continue;
        }
        let (filter, notrace) = op.sets();
        // SAFETY: `ftrace_lock` is held.
        let slot = unsafe { slot_of(op.as_ptr()) };
        // Within the capacity reserved for every listed ops: no allocation.
        planned
            .push(
                Planned {
                    // SAFETY: the sets of a listed ops stay while
                    // `ftrace_lock`, held for the whole update, is.
                    sites: unsafe {
                        OpsSites {
                            filter: SetRef::new(filter),
                            notrace: SetRef::new(notrace),
                            regs: flags & F_SAVE_REGS != 0,
                            ipmodify: flags & F_IPMODIFY != 0,
                        }
                    },
                    direct: flags & F_DIRECT != 0,
                    slot,
                    // SAFETY: `ftrace_lock` is held.
                    tramp: unsafe { slot_target(slot) },
                },
                GFP_KERNEL,
            )
            .map_err(|_| ENOMEM)?;
    }
    Ok(planned.as_slice())
}

/// Whether any registered ops manages sub-ops (their filters are then
/// rebuilt from the sub-ops' on every change).
pub(crate) fn any_manager(held: &Held) -> bool {
    list(held).any(OpsRef::is_manager)
}

/// Plans one site: its record is set at once when its instruction stays,
/// else the change joins the batch (written when the batch is full).
///
/// # Safety
///
/// `ftrace_lock` is held; the context may sleep.
unsafe fn plan_site(cell: &'static Cell, on: bool, planned: &[Planned], b: &mut Batch) -> Result {
    // SAFETY: `ftrace_lock` is held.
    let site = unsafe { cell.read() };
    if site.has(sf::DISABLED) {
        return Ok(());
    }
    let ip = site.ip;
    let list_tramp = addr(bindings::ftrace_caller);
    let regs_tramp = addr(bindings::ftrace_regs_caller);
    let shared = Shared {
        list: list_tramp,
        regs: regs_tramp,
    };
    let (new, next) = plan::plan_site(&site, on, planned, shared);
    // SAFETY: `ftrace_lock` is held.
    let Some(cur) = (unsafe { current_target(&site, list_tramp, regs_tramp) }) else {
        pr_err!("site {:#x}: lost track of its trampoline\n", ip);
        crate::sys::report_bug(EINVAL, ip);
        return Err(EINVAL);
    };
    if cur == new {
        // SAFETY: `ftrace_lock` is held; `next` is this site's.
        unsafe { cell.set(next) };
        return Ok(());
    }
    let i = b.len;
    b.changes[i] = Change { ip, old: cur, new };
    b.cells[i] = Some(cell);
    b.next[i] = next;
    b.len += 1;
    if b.len == BATCH {
        // SAFETY: `ftrace_lock` is held; sleepable.
        unsafe { flush(b) }?;
    }
    Ok(())
}

/// Whether enabling `ops` with filter `filter` would put two ops that may
/// change the return address on one function (refused with `EBUSY`).
/// Only explicit filter entries count, as in the C core.
///
/// # Safety
///
/// `ftrace_lock` is held; `filter` is null or a valid set.
pub(crate) unsafe fn ipmodify_conflict(ops: *mut Ops, filter: *const FtraceHash) -> bool {
    // SAFETY: per the function's contract, `filter` stays for the call.
    let (candidates, held) = unsafe { (SetRef::new(filter).ips(), Held::assume()) };
    let others = || {
        list(held)
            .filter(move |o| o.as_ptr() != ops && o.has(F_IPMODIFY))
            .map(|o| {
                let (f, n) = o.sets();
                // SAFETY: the sets of a listed ops stay while the lock,
                // held for the call, is.
                unsafe {
                    OpsSites {
                        filter: SetRef::new(f),
                        notrace: SetRef::new(n),
                        regs: false,
                        ipmodify: true,
                    }
                }
            })
    };
    plan::ipmodify_conflict(candidates, others).is_some()
}

/// The sites an ops alone can change, for [`update_scope`]: its filter,
/// when it has one and no notrace set (else every site: empty).
pub(crate) fn own_sites(ops: *mut Ops) -> KVec<*const FtraceHash> {
    let mut v = KVec::new();
    // SAFETY: callers hold `ftrace_lock`; `ops` is valid.
    let (f, n) = unsafe { sets(ops) };
    // SAFETY: as above.
    if unsafe { !hash::is_empty(f) && hash::is_empty(n) } {
        // Without memory, every site is visited: slower, still right.
        let _ = v.push(f.cast_const(), GFP_KERNEL);
    }
    v
}
