// SPDX-License-Identifier: GPL-2.0

//! The ftrace_ops list: registration, sub-ops (the function graph's
//! manager ops), the per-site plan and its application, and the list
//! dispatcher the shared trampolines call.
//!
//! Every change (an ops comes or goes, a filter changes, a module comes)
//! recomputes what every site must call from the registered ops and their
//! sets ([`update_sites`]): nothing, the one ops' own trampoline, or the
//! shared list trampoline (saving a full `pt_regs` when an ops on the
//! site needs them). The sites whose call changes are written as one
//! batch by the arch layer.

use crate::archif::Change;
use crate::hash::{self, FtraceHash, SetRef};
use crate::logic::plan::{self, OpsSites, Shared};
use crate::logic::recursion;
use crate::logic::sites::{flags as sf, Site};
use crate::table::{self, Cell, Group};
use crate::task::guarded as recursion_guarded;
use crate::view;
use crate::{
    addr, assert_held, dead, enabled, err, ftrace_list_end, ftrace_ops_list, Guard, Locked,
};
use crate::{EBUSY, EINVAL, ENODEV, ENOMEM};
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use kernel::bindings;
use kernel::ffi::{c_int, c_ulong, c_void};
use kernel::prelude::*;

pub(crate) type Ops = bindings::ftrace_ops;

const fn fl(f: u32) -> c_ulong {
    f as c_ulong
}
pub(crate) const F_ENABLED: c_ulong = fl(bindings::FTRACE_OPS_FL_ENABLED);
const F_DYNAMIC: c_ulong = fl(bindings::FTRACE_OPS_FL_DYNAMIC);
pub(crate) const F_SAVE_REGS: c_ulong = fl(bindings::FTRACE_OPS_FL_SAVE_REGS);
const F_SAVE_REGS_IF: c_ulong = fl(bindings::FTRACE_OPS_FL_SAVE_REGS_IF_SUPPORTED);
const F_RECURSION: c_ulong = fl(bindings::FTRACE_OPS_FL_RECURSION);
const F_STUB: c_ulong = fl(bindings::FTRACE_OPS_FL_STUB);
const F_INITIALIZED: c_ulong = fl(bindings::FTRACE_OPS_FL_INITIALIZED);
const F_DELETED: c_ulong = fl(bindings::FTRACE_OPS_FL_DELETED);
const F_ADDING: c_ulong = fl(bindings::FTRACE_OPS_FL_ADDING);
const F_REMOVING: c_ulong = fl(bindings::FTRACE_OPS_FL_REMOVING);
pub(crate) const F_IPMODIFY: c_ulong = fl(bindings::FTRACE_OPS_FL_IPMODIFY);
const F_RCU: c_ulong = fl(bindings::FTRACE_OPS_FL_RCU);
pub(crate) const F_SUBOP: c_ulong = fl(bindings::FTRACE_OPS_FL_SUBOP);
pub(crate) const F_DIRECT: c_ulong = fl(bindings::FTRACE_OPS_FL_DIRECT);
const F_ALLOC_TRAMP: c_ulong = fl(bindings::FTRACE_OPS_FL_ALLOC_TRAMP);

// --- intrusive list_head helpers (the C inlines) -------------------------

/// # Safety
///
/// `l` is valid.
pub(crate) unsafe fn list_init(l: *mut bindings::list_head) {
    // SAFETY: per the function's contract.
    unsafe {
        (*l).next = l;
        (*l).prev = l;
    }
}

/// # Safety
///
/// `new` is valid and not on a list; `head` is a valid list.
pub(crate) unsafe fn list_add(new: *mut bindings::list_head, head: *mut bindings::list_head) {
    // SAFETY: per the function's contract.
    unsafe {
        let next = (*head).next;
        (*next).prev = new;
        (*new).next = next;
        (*new).prev = head;
        (*head).next = new;
    }
}

/// # Safety
///
/// `e` is on a valid list.
pub(crate) unsafe fn list_del(e: *mut bindings::list_head) {
    // SAFETY: per the function's contract.
    unsafe {
        (*(*e).prev).next = (*e).next;
        (*(*e).next).prev = (*e).prev;
        list_init(e);
    }
}

/// # Safety
///
/// `l` is a valid list head, or one never initialised (all zero).
pub(crate) unsafe fn list_empty(l: *const bindings::list_head) -> bool {
    // SAFETY: per the function's contract.
    unsafe { (*l).next.is_null() || ptr::eq((*l).next, l) }
}

/// The entries of a list of `T` linked through the `list_head` at byte
/// offset `off`.
///
/// # Safety
///
/// `head` is a valid list of such entries that does not change while the
/// iterator is used.
pub(crate) unsafe fn list_entries<T>(
    head: *mut bindings::list_head,
    off: usize,
) -> impl Iterator<Item = *mut T> {
    // SAFETY: per the function's contract.
    let mut p = unsafe { (*head).next };
    core::iter::from_fn(move || {
        if p.is_null() || p == head {
            return None;
        }
        let e = p.cast::<u8>().wrapping_sub(off).cast::<T>();
        // SAFETY: `p` is a live node of the list.
        p = unsafe { (*p).next };
        Some(e)
    })
}

// --- ops basics ----------------------------------------------------------

/// Gives an ops its lock, sub-op list and hash pointer the first time the
/// core sees it.
///
/// # Safety
///
/// `ops` is valid; callers serialize (they hold `ftrace_lock`, or it is
/// early boot).
pub(crate) unsafe fn ops_init(ops: *mut Ops) {
    // SAFETY: per the function's contract.
    unsafe {
        if view::has(ops, F_INITIALIZED) {
            return;
        }
        crate::mutex_init!(
            ptr::addr_of_mut!((*ops).local_hash.regex_lock),
            "ftrace_ops regex_lock"
        );
        list_init(ptr::addr_of_mut!((*ops).subop_list));
        (*ops).func_hash = ptr::addr_of_mut!((*ops).local_hash);
        view::set(ops, F_INITIALIZED);
    }
}

/// [`ops_init`] taking `ftrace_lock` itself.
///
/// # Safety
///
/// `ops` is valid; `ftrace_lock` is not held.
pub(crate) unsafe fn ops_init_locked(ops: *mut Ops) {
    let _g = Guard::lock();
    // SAFETY: per the function's contract; serialized by the lock.
    unsafe { ops_init(ops) };
}

/// A published pointer slot, read locklessly.
///
/// # Safety
///
/// `p` is a valid, aligned pointer slot.
unsafe fn slot<'a, T>(p: *mut *mut T) -> &'a AtomicPtr<T> {
    // SAFETY: per the function's contract; `AtomicPtr` has the layout of
    // a pointer.
    unsafe { AtomicPtr::from_ptr(p) }
}

/// The filter and notrace sets of `ops` (null: empty).
///
/// # Safety
///
/// `ops` is valid; the sets are used under RCU or `ftrace_lock`.
#[inline]
pub(crate) unsafe fn sets(ops: *const Ops) -> (*mut FtraceHash, *mut FtraceHash) {
    // SAFETY: per the function's contract.
    unsafe {
        let fh = (*ops).func_hash;
        if fh.is_null() {
            return (ptr::null_mut(), ptr::null_mut());
        }
        let f = slot(ptr::addr_of_mut!((*fh).filter_hash)).load(Ordering::Acquire);
        let n = slot(ptr::addr_of_mut!((*fh).notrace_hash)).load(Ordering::Acquire);
        (f.cast(), n.cast())
    }
}

/// Publishes `new` as the filter (or notrace) set of `ops` and returns the
/// old one, which the caller frees with [`hash::free_rcu`].
///
/// # Safety
///
/// `ftrace_lock` is held; `ops` is initialised.
pub(crate) unsafe fn set_hash(
    ops: *mut Ops,
    notrace: bool,
    new: *mut FtraceHash,
) -> *mut FtraceHash {
    // SAFETY: per the function's contract.
    unsafe {
        let fh = (*ops).func_hash;
        let p = if notrace {
            ptr::addr_of_mut!((*fh).notrace_hash)
        } else {
            ptr::addr_of_mut!((*fh).filter_hash)
        };
        slot(p).swap(new.cast(), Ordering::AcqRel).cast()
    }
}

/// Whether `ip` passes the sets of `ops`.
///
/// # Safety
///
/// As for [`sets`].
#[inline]
pub(crate) unsafe fn ops_wants(ops: *const Ops, ip: u64) -> bool {
    // SAFETY: per the function's contract.
    unsafe {
        let (f, n) = sets(ops);
        (hash::is_empty(f) || hash::contains(f, ip)) && !hash::contains(n, ip)
    }
}

/// The registered ops, newest first. Under `ftrace_lock`, or with
/// preemption off (an unregistered dynamic ops is freed only after every
/// CPU scheduled).
pub(crate) fn list() -> impl Iterator<Item = *mut Ops> {
    let end = ftrace_list_end.get();
    let mut p = ftrace_ops_list.load(Ordering::Acquire);
    core::iter::from_fn(move || {
        if p.is_null() || p == end {
            return None;
        }
        let cur = p;
        // SAFETY: a listed ops is valid; see above.
        p = unsafe { slot(ptr::addr_of_mut!((*cur).next)) }.load(Ordering::Acquire);
        Some(cur)
    })
}

// --- dispatch (hot path: no locks, no allocation, nothing traced) -------

// Bindgen types of empty C structs are fine behind pointers.
#[allow(improper_ctypes)]
extern "C" {
    fn rcu_is_watching() -> bool;
}

/// The callback of the shared trampolines when several ops, or an ops
/// without its own trampoline, trace a site: calls every registered ops
/// that wants `ip`.
///
/// # Safety
///
/// Called by a trampoline; `fregs` is its frame.
#[no_mangle]
pub unsafe extern "C" fn arch_ftrace_ops_list_func(
    ip: c_ulong,
    parent_ip: c_ulong,
    _op: *mut Ops,
    fregs: *mut bindings::ftrace_regs,
) {
    // The list's own recursion bits, as C's list function (the callbacks
    // take the function bits); preemption off while held.
    recursion_guarded(crate::task::current(), recursion::LIST_START, || {
        // A full `pt_regs` is there only when the full-regs trampoline saved
        // it (it sets `cs`).
        // SAFETY: `fregs` is the trampoline's frame, a `pt_regs` on x86_64.
        let has_regs = !fregs.is_null()
            && unsafe { (*fregs.cast::<bindings::pt_regs>()).__bindgen_anon_1.csx } != 0;
        for op in list() {
            // SAFETY: listed ops are valid while preemption is off.
            let flags = unsafe { view::flags(op) };
            if flags & F_STUB != 0 || (flags & F_SAVE_REGS != 0 && !has_regs) {
                continue;
            }
            // SAFETY: `rcu_is_watching()` is notrace and callable anywhere.
            if flags & F_RCU != 0 && !unsafe { rcu_is_watching() } {
                continue;
            }
            // SAFETY: sets are freed only after a grace period.
            if unsafe { ops_wants(op, ip as u64) } {
                // SAFETY: listed, as above.
                if let Some(f) = unsafe { view::func(op) } {
                    // SAFETY: the ops' callback, called as the ABI says.
                    unsafe { f(ip, parent_ip, op, fregs) };
                }
            }
        }
    });
}
crate::nokprobe::nokprobe!(arch_ftrace_ops_list_func);

/// Wraps an ops' callback that asks for recursion protection or needs
/// RCU watching.
///
/// # Safety
///
/// Called by the trampoline of `op`, with `op` and the trampoline's frame.
unsafe extern "C" fn ftrace_ops_assist_func(
    ip: c_ulong,
    parent_ip: c_ulong,
    op: *mut Ops,
    fregs: *mut bindings::ftrace_regs,
) {
    // The recursion guard, inlined (the list bits, as C); preemption off
    // while held.
    recursion_guarded(crate::task::current(), recursion::LIST_START, || {
        // SAFETY: the trampoline passes its own, live, ops; notrace,
        // callable anywhere.
        if unsafe { !view::has(op, F_RCU) || rcu_is_watching() } {
            // SAFETY: as above.
            if let Some(f) = unsafe { view::func(op) } {
                // SAFETY: the ops' callback, called as the ABI says.
                unsafe { f(ip, parent_ip, op, fregs) };
            }
        }
    });
}
crate::nokprobe::nokprobe!(ftrace_ops_assist_func);

/// What a trampoline dedicated to `ops` calls.
///
/// # Safety
///
/// `ops` is valid.
#[no_mangle]
pub unsafe extern "C" fn ftrace_ops_get_func(ops: *mut Ops) -> bindings::ftrace_func_t {
    // RECURSION asks the core for recursion protection.
    // SAFETY: per the function's contract.
    if unsafe { view::has(ops, F_RECURSION | F_RCU) } {
        Some(ftrace_ops_assist_func)
    } else {
        // SAFETY: as above.
        unsafe { view::func(ops) }
    }
}

/// Whether `ops` traces `ip` (fgraph.c asks this of its sub-ops).
///
/// # Safety
///
/// `ops` is valid.
#[no_mangle]
pub unsafe extern "C" fn ftrace_ops_test(ops: *mut Ops, ip: c_ulong, regs: *mut c_void) -> c_int {
    // SAFETY: per the function's contract.
    unsafe {
        if regs.is_null() && view::has(ops, F_SAVE_REGS) {
            return 0;
        }
        c_int::from(ops_wants(ops, ip as u64))
    }
}

/// The registered ops whose own trampoline holds `a`, or null. Any
/// context; the ops stays valid only while the caller keeps preemption
/// off (as for `ftrace_ops_trampoline()` in C).
pub(crate) fn trampoline_ops(a: u64) -> *mut Ops {
    list()
        .find(|&op| {
            // SAFETY: listed ops are valid while preemption is off (see
            // `list`), which the caller keeps.
            let (at, size) = unsafe { view::trampoline(op) };
            at != 0 && a >= at && a < at + size
        })
        .unwrap_or(ptr::null_mut())
}

/// The `n`th (from 0) registered ops with a trampoline of its own, for
/// kallsyms; the same condition as [`trampoline_ops`] on the caller.
pub(crate) fn nth_trampoline(n: usize) -> Option<(u64, u64)> {
    list()
        .filter_map(|op| {
            // SAFETY: as in `trampoline_ops`.
            let (at, size) = unsafe { view::trampoline(op) };
            (at != 0).then_some((at, size))
        })
        .nth(n)
}

// --- trampoline slots ----------------------------------------------------

/// The ops a site may call directly, by slot number - 1 (the number is
/// kept in the site's flags).
struct Slot {
    ops: *mut Ops,
    tramp: u64,
    /// While a direct ops changes trampoline: the one its sites still
    /// call, until the update that moves them (0 otherwise).
    was: u64,
}

static SLOTS: Locked<KVec<Slot>> = Locked::new(KVec::new());

/// # Safety
///
/// `ftrace_lock` is held.
unsafe fn slot_of(ops: *mut Ops) -> u32 {
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
unsafe fn slot_alloc(ops: *mut Ops, tramp: u64) -> u32 {
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
unsafe fn slot_free(ops: *mut Ops) {
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
        *crate::function_trace_op.get() = ftrace_list_end.get();
        *crate::ftrace_trace_function.get() = f;
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
    fn rftrace_arch_init_site(ip: u64, target: u64) -> c_int;
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
unsafe fn reserve_plan(extra: usize) -> Result<(), c_int> {
    // SAFETY: per the function's contract.
    let planned = unsafe { PLANNED.get() };
    let want = list().count() + extra;
    planned
        .reserve(want.saturating_sub(planned.len()), GFP_KERNEL)
        .map_err(|_| ENOMEM)
}

/// Writes the gathered sites, then their records; empties the batch.
///
/// # Safety
///
/// `ftrace_lock` is held; the context may sleep.
unsafe fn flush(b: &mut Batch) -> Result<(), c_int> {
    let n = core::mem::replace(&mut b.len, 0);
    if n == 0 {
        return Ok(());
    }
    set_list_func();
    let mut bad = 0u64;
    // SAFETY: `changes` holds `n` changes; sleepable, `ftrace_lock` held.
    let r = unsafe { rftrace_arch_apply(b.changes.as_ptr(), n, &mut bad) };
    if r != 0 {
        // The arch layer wrote nothing of this batch: it found a site not
        // holding what its record says (or could not read it).
        crate::report_bug(r, bad);
        return Err(r);
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
pub(crate) unsafe fn update_sites() -> Result<(), c_int> {
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
pub(crate) unsafe fn update_scope(scope: &[*const FtraceHash]) -> Result<(), c_int> {
    let on = enabled() && !dead();
    // SAFETY: `ftrace_lock` is held.
    let planned = unsafe { fill_plan() }?;
    // SAFETY: `ftrace_lock` is held; nothing else borrows the batch.
    let b = unsafe { BATCH_BUF.get() };
    b.len = 0;
    let mut visit = |cell: &'static Cell| -> Result<(), c_int> {
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
pub(crate) unsafe fn update_ips(ips: &[u64]) -> Result<(), c_int> {
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
unsafe fn fill_plan() -> Result<&'static [Planned], c_int> {
    // SAFETY: per the function's contract.
    let planned = unsafe { PLANNED.get() };
    // SAFETY: `Planned` is `Copy` (no drop glue); length 0 is in bounds.
    unsafe { planned.set_len(0) };
    for op in list() {
        // SAFETY: listed ops are valid under `ftrace_lock`.
        let flags = unsafe { view::flags(op) };
        if flags & F_STUB != 0 {
            continue;
        }
        // SAFETY: as above.
        let (filter, notrace) = unsafe { sets(op) };
        // SAFETY: `ftrace_lock` is held.
        let slot = unsafe { slot_of(op) };
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
///
/// # Safety
///
/// `ftrace_lock` is held.
pub(crate) unsafe fn any_manager() -> bool {
    // SAFETY: listed ops are valid and initialised under `ftrace_lock`.
    list().any(|op| unsafe { !list_empty(ptr::addr_of!((*op).subop_list)) })
}

/// Plans one site: its record is set at once when its instruction stays,
/// else the change joins the batch (written when the batch is full).
///
/// # Safety
///
/// `ftrace_lock` is held; the context may sleep.
unsafe fn plan_site(
    cell: &'static Cell,
    on: bool,
    planned: &[Planned],
    b: &mut Batch,
) -> Result<(), c_int> {
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
        crate::report_bug(EINVAL, ip);
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
    let candidates = unsafe { SetRef::new(filter) }.ips();
    let others = || {
        list()
            // SAFETY: listed ops are valid under `ftrace_lock`.
            .filter(move |&o| o != ops && unsafe { view::has(o, F_IPMODIFY) })
            .map(|o| {
                // SAFETY: as above; their sets stay while the lock is held.
                let (f, n) = unsafe { sets(o) };
                // SAFETY: as above.
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

fn is_core_data(a: u64) -> bool {
    // Linker symbols; only their addresses are used.
    let (sd, ed, sb, eb) = (
        ptr::addr_of!(bindings::_sdata) as u64,
        ptr::addr_of!(bindings::_edata) as u64,
        ptr::addr_of!(bindings::__bss_start) as u64,
        ptr::addr_of!(bindings::__bss_stop) as u64,
    );
    (sd..ed).contains(&a) || (sb..eb).contains(&a)
}

/// The sites an ops alone can change, for [`update_scope`]: its filter,
/// when it has one and no notrace set (else every site: empty).
fn own_sites(ops: *mut Ops) -> KVec<*const FtraceHash> {
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

/// Registers `ops` and patches the sites it wants (`ftrace_startup()`).
///
/// # Safety
///
/// `ftrace_lock` is held; `ops` is valid and stays so until unregistered.
pub(crate) unsafe fn startup(ops: *mut Ops) -> c_int {
    if dead() {
        return ENODEV;
    }
    // The ops is read through `view` only: while it is unpublished its
    // owner may still read it, and once on the list every CPU may.
    // SAFETY: per the function's contract.
    unsafe { ops_init(ops) };
    // SAFETY: as above, for every `view` call below.
    let flags = unsafe { view::flags(ops) };
    if flags & F_DELETED != 0 {
        return EINVAL;
    }
    if flags & F_ENABLED != 0 {
        pr_warn!("ops {:p} registered twice\n", ops);
        return EBUSY;
    }
    // An ops that must not be stopped (livepatch) cannot come while the
    // sysctl keeps the tracer off: it would not run, as in C.
    if flags & F_PERMANENT != 0 && !enabled() {
        return EBUSY;
    }
    if flags & F_IPMODIFY != 0 {
        // SAFETY: `ftrace_lock` is held.
        let (f, _) = unsafe { sets(ops) };
        // Changing the ip of every function is refused, as in C.
        // SAFETY: a set of a live ops, under `ftrace_lock`.
        if unsafe { hash::is_empty(f) } {
            return EINVAL;
        }
        // SAFETY: as above.
        if unsafe { ipmodify_conflict(ops, f) } {
            return EBUSY;
        }
    }
    // Room in the plan for this ops, so that no update made while it is
    // registered, its removal included, needs memory.
    // SAFETY: `ftrace_lock` is held.
    if let Err(e) = unsafe { reserve_plan(1) } {
        return e;
    }
    // Everything the dispatchers read is set before the ops is published.
    let mut add = F_ENABLED | F_ADDING;
    if flags & F_SAVE_REGS_IF != 0 {
        add |= F_SAVE_REGS;
    }
    if !is_core_data(ops as u64) {
        add |= F_DYNAMIC;
    }
    // SAFETY: the ops is valid; it is not on the list, so no dispatcher
    // reads `saved_func`, `next` or `func` of it yet.
    unsafe {
        view::set(ops, add);
        let own = view::func(ops);
        (*ops).saved_func = own;
        if crate::pid::ftrace_pids_enabled(ops) {
            view::set_func(ops, Some(crate::pid::ftrace_pid_func));
        }
        (*ops).next = ftrace_ops_list.load(Ordering::Acquire);
    }
    ftrace_ops_list.store(ops, Ordering::Release);
    // SAFETY: the ops is valid.
    let before_tramp = unsafe { view::trampoline(ops).0 };
    if flags & F_DIRECT != 0 {
        // Alone on a site, a direct ops' site calls its direct trampoline.
        // SAFETY: `ftrace_lock` is held; `direct_call` changes only under
        // it.
        unsafe { slot_alloc(ops, (*ops).direct_call as u64) };
    } else {
        // SAFETY: a registered ops; the arch layer creates or updates its
        // trampoline (calling `ftrace_ops_get_func()`).
        unsafe { bindings::arch_ftrace_update_trampoline(ops) };
        // SAFETY: the ops is valid.
        let tramp = unsafe { view::trampoline(ops).0 };
        if tramp != before_tramp {
            // SAFETY: `ftrace_lock` is held; the ops is valid.
            unsafe { perf_trampoline(ops, false) };
        }
        if tramp != 0 {
            // SAFETY: `ftrace_lock` is held.
            unsafe { slot_alloc(ops, tramp) };
        }
    }
    // SAFETY: `ftrace_lock` is held, sleepable.
    let r = unsafe { update_scope(&own_sites(ops)) };
    // SAFETY: the ops is valid.
    unsafe { view::clear(ops, F_ADDING) };
    if let Err(e) = r {
        // SAFETY: as above.
        unsafe {
            remove(ops);
            view::clear(ops, F_ENABLED);
            view::set_func(ops, (*ops).saved_func);
            slot_free(ops);
        }
        // The update failed before writing a site (or tracing is dead):
        // no site calls the trampoline made above. A dynamic ops' goes
        // now, as in C; its owner may free the ops on this error.
        // SAFETY: the ops is valid.
        if add & F_DYNAMIC != 0 && unsafe { view::trampoline(ops).0 } != before_tramp {
            // SAFETY: `ftrace_lock` is held; the ops is valid.
            unsafe { perf_trampoline(ops, true) };
            // SAFETY: no site calls it, no CPU runs it.
            unsafe { bindings::arch_ftrace_trampoline_free(ops) };
        }
        return e;
    }
    0
}

/// Unlinks `ops` from the list.
///
/// # Safety
///
/// `ftrace_lock` is held.
unsafe fn remove(ops: *mut Ops) -> bool {
    // SAFETY: per the function's contract.
    let next = unsafe { (*ops).next };
    if ftrace_ops_list.load(Ordering::Acquire) == ops {
        ftrace_ops_list.store(next, Ordering::Release);
        return true;
    }
    for p in list() {
        // SAFETY: listed ops are valid under `ftrace_lock`.
        let s = unsafe { slot(ptr::addr_of_mut!((*p).next)) };
        if s.load(Ordering::Acquire) == ops {
            s.store(next, Ordering::Release);
            return true;
        }
    }
    false
}

/// Unregisters `ops` (`ftrace_shutdown()`); when it returns, no CPU runs
/// the ops' callback through the core any more.
///
/// # Safety
///
/// `ftrace_lock` is held; `ops` is valid.
pub(crate) unsafe fn shutdown(ops: *mut Ops) -> c_int {
    if dead() {
        return ENODEV;
    }
    // The ops is read and changed through `view` only: dispatchers on other
    // CPUs may read it until the waits below.
    // SAFETY: per the function's contract, for every `view` call below.
    if !unsafe { view::has(ops, F_ENABLED) } {
        pr_warn!("ops {:p} unregistered but not registered\n", ops);
        return EBUSY;
    }
    // SAFETY: `ftrace_lock` is held.
    if !unsafe { remove(ops) } {
        return err(bindings::ENOENT);
    }
    // SAFETY: as above.
    unsafe {
        view::set(ops, F_REMOVING);
        view::clear(ops, F_ENABLED);
    }
    // SAFETY: `ftrace_lock` is held, sleepable.
    if let Err(e) = unsafe { update_scope(&own_sites(ops)) } {
        // A site did not hold what its record said: tracing is dead now
        // (`ftrace_bug()`), and sites of this ops may still call its
        // trampoline. It stays, slot and all, for as long as the kernel
        // runs; the caller learns that the ops could not be taken off.
        pr_err!(
            "ops {:p}: sites not moved off, its trampoline is kept\n",
            ops
        );
        return e;
    }
    // SAFETY: no site calls its trampoline now; `saved_func` is written
    // under `ftrace_lock` only.
    unsafe {
        slot_free(ops);
        view::clear(ops, F_REMOVING);
        if (*ops).saved_func.is_some() {
            view::set_func(ops, (*ops).saved_func);
        }
    }
    // SAFETY: as above.
    if unsafe { view::has(ops, F_DYNAMIC) } {
        // SAFETY: sleepable. The first waits out every CPU that may be in
        // the callback with preemption off or RCU not watching; the second
        // every task preempted on the trampoline.
        unsafe {
            bindings::synchronize_rcu_tasks_rude();
            bindings::synchronize_rcu_tasks();
        }
        // SAFETY: `ftrace_lock` is held; the ops is valid.
        unsafe { perf_trampoline(ops, true) };
        // SAFETY: no task runs the trampoline any more (waited above).
        unsafe { bindings::arch_ftrace_trampoline_free(ops) };
    }
    0
}

/// Tells perf about the trampoline an ops allocated for itself, as the C
/// core does: when it appears, a KSYMBOL record (`ftrace_trampoline`,
/// out-of-line code, listed in kallsyms by then) and a TEXT_POKE record of
/// its whole body, so that a decoder of an instruction trace knows the
/// bytes; when it goes, the KSYMBOL unregister record, before it is freed.
///
/// # Safety
///
/// `ops` is valid and `ftrace_lock` is held.
#[cfg(CONFIG_PERF_EVENTS)]
unsafe fn perf_trampoline(ops: *mut Ops, gone: bool) {
    // SAFETY: per the function's contract.
    let ((at, len), mine) = unsafe { (view::trampoline(ops), view::has(ops, F_ALLOC_TRAMP)) };
    if at == 0 || !mine {
        return;
    }
    let Ok(len32) = u32::try_from(len) else {
        return;
    };
    // SAFETY: `at..at + len` is the ops' trampoline, allocated and written
    // by the arch layer and not freed before the unregister record; perf
    // copies the bytes and the name (a static string) into its records.
    unsafe {
        bindings::perf_event_ksymbol(
            bindings::perf_record_ksymbol_type_PERF_RECORD_KSYMBOL_TYPE_OOL as u16,
            at,
            len32,
            gone,
            crate::TRAMPOLINE_SYM.as_char_ptr(),
        );
        if !gone {
            let body = at as *const c_void;
            bindings::perf_event_text_poke(body, ptr::null(), 0, body, len as usize);
        }
    }
}

#[cfg(not(CONFIG_PERF_EVENTS))]
unsafe fn perf_trampoline(_ops: *mut Ops, _gone: bool) {}

/// Registers an ops with the core.
///
/// # Safety
///
/// `ops` is valid until unregistered.
#[no_mangle]
pub unsafe extern "C" fn register_ftrace_function(ops: *mut Ops) -> c_int {
    let _d = Guard::of(DIRECT_LOCK.get());
    // SAFETY: per the function's contract; the direct lock is held.
    let r = unsafe { share_with_direct(ops, Share::Enable) };
    if r != 0 {
        return r;
    }
    let _g = Guard::lock();
    // SAFETY: per the function's contract, `ftrace_lock` held.
    unsafe { startup(ops) }
}

/// Unregisters an ops.
///
/// # Safety
///
/// `ops` is valid.
#[no_mangle]
pub unsafe extern "C" fn unregister_ftrace_function(ops: *mut Ops) -> c_int {
    let _d = Guard::of(DIRECT_LOCK.get());
    let r = {
        let _g = Guard::lock();
        // SAFETY: per the function's contract, `ftrace_lock` held.
        unsafe { shutdown(ops) }
    };
    // SAFETY: per the function's contract; the direct lock is held.
    unsafe { share_with_direct(ops, Share::Disable) };
    r
}

/// Serialises the direct-call API and the sharing of functions between
/// direct and IPMODIFY ops (C's `direct_mutex`): taken before
/// `ftrace_lock`, and held while an ops' owner is asked to share, so that
/// no direct ops comes or goes meanwhile.
pub(crate) static DIRECT_LOCK: crate::CGlobal<bindings::mutex> = crate::CGlobal::new(
    // SAFETY: all-zero, then initialised by `init_locks()` before use.
    unsafe { core::mem::zeroed() },
);

/// Initialises the locks of this module (boot, before any use).
///
/// # Safety
///
/// Called once, before anything takes them.
pub(crate) unsafe fn init_locks() {
    // SAFETY: per the function's contract.
    unsafe { crate::mutex_init!(DIRECT_LOCK.get(), "direct_mutex") };
}

/// What an IPMODIFY ops coming or going asks of the direct ops on its
/// functions.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Share {
    Enable,
    Disable,
}

/// Before an IPMODIFY ops registers, every direct ops on one of its
/// functions is asked to share it (`ops_func(ENABLE_SHARE_IPMODIFY_PEER)`:
/// BPF rebuilds its trampoline to call the function through the address
/// the IPMODIFY ops sets, changing it with `modify_ftrace_direct_nolock()`);
/// a direct ops that cannot be asked refuses (`EBUSY`), and so does one
/// whose owner says no. After it unregistered, they are told
/// (`DISABLE_SHARE_IPMODIFY_PEER`, answers ignored). As in C, one call per
/// function of the IPMODIFY ops' filter that a direct ops traces.
///
/// # Safety
///
/// `ops` is valid; the direct lock is held and `ftrace_lock` is not (the
/// owners' answers change direct ops).
unsafe fn share_with_direct(ops: *mut Ops, what: Share) -> c_int {
    assert_held(DIRECT_LOCK.get());
    // SAFETY: per the function's contract.
    if unsafe { !view::has(ops, F_IPMODIFY) } {
        return 0;
    }
    let cmd = match what {
        Share::Enable => bindings::ftrace_ops_cmd_FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_PEER,
        Share::Disable => bindings::ftrace_ops_cmd_FTRACE_OPS_CMD_DISABLE_SHARE_IPMODIFY_PEER,
    };
    let mut r = 0;
    // SAFETY: the ops' own filter, which its owner does not change while
    // registering it.
    let (filter, _) = unsafe { sets(ops) };
    // SAFETY: as above.
    unsafe {
        hash::for_each(filter, |e| {
            if r != 0 {
                return;
            }
            let ip = (*e).ip as u64;
            let peer = {
                let _g = Guard::lock();
                // SAFETY: listed ops are valid under `ftrace_lock`.
                list().find(|&x| view::has(x, F_DIRECT) && ops_wants(x, ip))
            };
            // A direct ops found stays registered: the direct lock keeps
            // the direct API out until this returns.
            let Some(peer) = peer else {
                return;
            };
            match ((*peer).ops_func, what) {
                (None, Share::Enable) => r = EBUSY,
                (None, Share::Disable) => {}
                (Some(ask), Share::Enable) => r = ask(peer, cmd),
                (Some(ask), Share::Disable) => {
                    let _ = ask(peer, cmd);
                }
            }
        });
    }
    r
}

// --- sub-ops (fgraph.c's manager ops) ----------------------------------

const LIST_OFF: usize = core::mem::offset_of!(Ops, list);

/// The sub-ops of manager `m`.
///
/// # Safety
///
/// `ftrace_lock` is held; `m` is initialised.
pub(crate) unsafe fn subops(m: *mut Ops) -> impl Iterator<Item = *mut Ops> {
    // SAFETY: per the function's contract.
    unsafe { list_entries::<Ops>(ptr::addr_of_mut!((*m).subop_list), LIST_OFF) }
}

/// Gives manager `m` the union of its sub-ops' filters and the
/// intersection of their notrace sets.
///
/// # Safety
///
/// `ftrace_lock` is held; `m` is initialised.
unsafe fn rebuild_manager(m: *mut Ops) -> c_int {
    let mut filter: *mut FtraceHash = ptr::null_mut();
    let mut notrace: *mut FtraceHash = ptr::null_mut();
    let mut any_empty_filter = false;
    let mut any_empty_notrace = false;
    // SAFETY: per the function's contract.
    for s in unsafe { subops(m) } {
        // SAFETY: sub-ops are valid while listed.
        let (f, n) = unsafe { sets(s) };
        // SAFETY: as above.
        unsafe {
            any_empty_filter |= hash::is_empty(f);
            any_empty_notrace |= hash::is_empty(n);
        }
    }
    let fail = |f: *mut FtraceHash, n: *mut FtraceHash| {
        // SAFETY: private sets.
        unsafe {
            hash::free(f);
            hash::free(n);
        }
        ENOMEM
    };
    if !any_empty_filter {
        filter = hash::alloc(hash::DEFAULT_BITS);
        if filter.is_null() {
            return ENOMEM;
        }
        let mut ok = true;
        // SAFETY: as above; `filter` is private.
        for s in unsafe { subops(m) } {
            // SAFETY: listed sub-ops are valid; `filter` is private.
            unsafe {
                let (f, _) = sets(s);
                hash::for_each(f, |e| ok &= hash::add(filter, (*e).ip as u64));
            }
        }
        if !ok {
            return fail(filter, notrace);
        }
    }
    if !any_empty_notrace {
        // SAFETY: as above.
        let first = unsafe { subops(m) }.next();
        if let Some(first) = first {
            // SAFETY: as above.
            notrace = unsafe { hash::copy(sets(first).1, hash::DEFAULT_BITS) };
            if notrace.is_null() {
                return fail(filter, notrace);
            }
            // SAFETY: as above; `notrace` is private.
            unsafe {
                hash::for_each(notrace, |e| {
                    let ip = (*e).ip as u64;
                    if subops(m).any(|s| !hash::contains(sets(s).1, ip)) {
                        hash::remove_entry(notrace, e);
                    }
                });
            }
        }
    }
    // SAFETY: `ftrace_lock` is held; the old sets are unpublished.
    unsafe {
        hash::free_rcu(set_hash(m, false, filter));
        hash::free_rcu(set_hash(m, true, notrace));
    }
    0
}

/// Rebuilds every registered manager's sets from its sub-ops (a sub-op's
/// set, or one it shares with another ops, changed). Returns how many
/// managers there are, or an error.
///
/// # Safety
///
/// `ftrace_lock` is held.
pub(crate) unsafe fn refresh_managers() -> Result<usize, c_int> {
    let mut n = 0;
    for op in list() {
        // SAFETY: listed ops are valid and initialised.
        unsafe {
            if !list_empty(ptr::addr_of!((*op).subop_list)) {
                let r = rebuild_manager(op);
                if r != 0 {
                    return Err(r);
                }
                n += 1;
            }
        }
    }
    Ok(n)
}

/// Adds `sub` to manager `ops`, registering the manager with the first.
///
/// # Safety
///
/// `ftrace_lock` is held; both are valid.
#[no_mangle]
pub unsafe extern "C" fn ftrace_startup_subops(
    ops: *mut Ops,
    sub: *mut Ops,
    _command: c_int,
) -> c_int {
    if dead() {
        return ENODEV;
    }
    // SAFETY: per the function's contract.
    unsafe {
        ops_init(ops);
        ops_init(sub);
        if view::has(sub, F_ENABLED) {
            return EBUSY;
        }
        list_add(
            ptr::addr_of_mut!((*sub).list),
            ptr::addr_of_mut!((*ops).subop_list),
        );
        let mut r = rebuild_manager(ops);
        if r == 0 {
            r = if !view::has(ops, F_ENABLED) {
                startup(ops)
            } else {
                update_sites().err().unwrap_or(0)
            };
        }
        if r != 0 {
            pr_warn!("cannot add sub-ops {:p} to {:p}: {}\n", sub, ops, r);
            list_del(ptr::addr_of_mut!((*sub).list));
            let _ = rebuild_manager(ops);
            return r;
        }
        view::set(sub, F_ENABLED | F_SUBOP);
        (*sub).managed = ops;
    }
    0
}

/// Removes `sub` from manager `ops`, unregistering the manager with the
/// last.
///
/// # Safety
///
/// `ftrace_lock` is held; both are valid.
#[no_mangle]
pub unsafe extern "C" fn ftrace_shutdown_subops(
    ops: *mut Ops,
    sub: *mut Ops,
    _command: c_int,
) -> c_int {
    if dead() {
        return ENODEV;
    }
    // SAFETY: per the function's contract.
    unsafe {
        if !view::has(sub, F_ENABLED) {
            return EINVAL;
        }
        list_del(ptr::addr_of_mut!((*sub).list));
        if list_empty(ptr::addr_of!((*ops).subop_list)) {
            let r = shutdown(ops);
            if r < 0 {
                list_add(
                    ptr::addr_of_mut!((*sub).list),
                    ptr::addr_of_mut!((*ops).subop_list),
                );
                return r;
            }
            hash::free_rcu(set_hash(ops, false, ptr::null_mut()));
            hash::free_rcu(set_hash(ops, true, ptr::null_mut()));
        } else {
            let r = rebuild_manager(ops);
            if r == 0 {
                let _ = update_sites();
            }
        }
        view::clear(sub, F_ENABLED | F_SUBOP);
        (*sub).managed = ptr::null_mut();
    }
    0
}

// --- the table: boot, modules, freed init memory -----------------------

fn update_counts() {
    let (mut pages, mut groups, mut total) = (0usize, 0usize, 0usize);
    for g in table::groups() {
        groups += 1;
        total += g.live_len();
        pages += (g.sites.len() * core::mem::size_of::<Cell>()).div_ceil(bindings::PAGE_SIZE);
    }
    crate::ftrace_update_tot_cnt.store(total, Ordering::Relaxed);
    crate::ftrace_number_of_pages.store(pages, Ordering::Relaxed);
    crate::ftrace_number_of_groups.store(groups, Ordering::Relaxed);
}

/// Makes the sites `ips` (sorted, unique) NOPs and adds them to the table
/// as a group of module `m` (null: the kernel). Module sites stay
/// disabled until the module is enabled. Returns how many were added and
/// how many of them had to be rewritten (the rest were NOPs already).
///
/// # Safety
///
/// `ftrace_lock` is held; the sites' code does not run yet and is still
/// writable.
pub(crate) unsafe fn add_sites(m: *mut bindings::module, ips: &[u64]) -> Result<(usize, usize)> {
    let g = Group::new(m, ips)?;
    let mut written = 0;
    for c in g.sites.iter() {
        // SAFETY: per the function's contract.
        let r = unsafe { rftrace_arch_init_site(c.ip(), 0) };
        if r > 0 {
            written += 1;
        }
        let add = if r < 0 {
            crate::report_bug(r, c.ip());
            sf::DISABLED
        } else if !m.is_null() {
            sf::DISABLED | sf::INIT
        } else {
            0
        };
        // SAFETY: the group is ours until published.
        unsafe { c.update(|s| s.flags |= add) };
    }
    let n = g.sites.len();
    // SAFETY: `ftrace_lock` is held.
    unsafe { table::publish(g) };
    update_counts();
    Ok((n, written))
}

/// Drops the sites in `[start, end)` of module `m` (null: the kernel),
/// whose text is being freed.
pub(crate) fn free_range(m: *mut bindings::module, start: u64, end: u64) {
    let _g = Guard::lock();
    let g = if m.is_null() {
        table::core_group()
    } else {
        table::of_module(m)
    };
    let Some(g) = g else {
        return;
    };
    let r = crate::logic::sites::range(&g.sites, start, end);
    if r.is_empty() {
        return;
    }
    // The records that stay go to a new, smaller group; without memory
    // for it they stay where they are, marked gone, which needs none.
    let stays = |i: &usize| !r.contains(i) && !g.sites[*i].is_gone();
    let mut keep = KVVec::<u64>::new();
    let mut oom = false;
    for (i, c) in g.sites.iter().enumerate() {
        if stays(&i) && keep.push(c.ip(), GFP_KERNEL).is_err() {
            oom = true;
            break;
        }
    }
    let new = if oom { None } else { Group::new(m, &keep).ok() };
    let Some(new) = new else {
        // SAFETY: `ftrace_lock` is held; `r` is a range of the group.
        unsafe { g.mark_gone(r) };
        update_counts();
        return;
    };
    for (c, i) in new.sites.iter().zip((0..g.sites.len()).filter(stays)) {
        // SAFETY: `ftrace_lock` is held; `new` is unpublished.
        unsafe { c.set(g.sites[i].read()) };
    }
    // SAFETY: `ftrace_lock` is held; sleepable.
    unsafe { table::replace(g, Some(new)) };
    update_counts();
}

/// A module is being loaded: its sites join the table, as NOPs.
///
/// # Safety
///
/// `m` is a module being loaded, its text not yet running.
#[no_mangle]
pub unsafe extern "C" fn ftrace_module_init(m: *mut bindings::module) {
    if dead() {
        return;
    }
    // SAFETY: per the function's contract.
    let (locs, n) = unsafe { ((*m).ftrace_callsites, (*m).num_ftrace_callsites as usize) };
    if locs.is_null() || n == 0 {
        return;
    }
    let mut ips = KVVec::<u64>::new();
    for i in 0..n {
        // SAFETY: the module loader gives `n` entries.
        let ip = unsafe { *locs.add(i) } as u64;
        if ips.push(ip, GFP_KERNEL).is_err() {
            pr_err!("out of memory for the call sites of a module\n");
            return;
        }
    }
    let k = crate::logic::sites::sort_unique(&mut ips);
    let _g = Guard::lock();
    // SAFETY: `ftrace_lock` held; the module's text does not run yet.
    if let Err(e) = unsafe { add_sites(m, &ips[..k]) } {
        pr_err!("cannot add the call sites of a module: {:?}\n", e);
    }
}

/// A module is about to run: its sites get what the registered ops want.
///
/// # Safety
///
/// `m` is a module.
#[no_mangle]
pub unsafe extern "C" fn ftrace_module_enable(m: *mut bindings::module) {
    {
        let _g = Guard::lock();
        let Some(g) = table::of_module(m) else {
            return;
        };
        for c in g.live() {
            // SAFETY: `ftrace_lock` is held.
            unsafe { c.update(|s| s.flags &= !sf::DISABLED) };
        }
        // SAFETY: `ftrace_lock` is held; sleepable. Failures are reported.
        let _ = unsafe { update_sites() };
    }
    // SAFETY: per the function's contract `m` is a module; its name is
    // NUL-terminated.
    let name = unsafe { CStr::from_char_ptr((*m).name.as_ptr()) }.as_bytes();
    // SAFETY: no core lock is held here.
    unsafe { crate::probe::process_cached_mods(name) };
}

/// A module is gone: so are its sites.
///
/// # Safety
///
/// `m` is a module.
#[no_mangle]
pub unsafe extern "C" fn ftrace_release_mod(m: *mut bindings::module) {
    // SAFETY: per the function's contract; no core lock is held yet.
    unsafe { crate::probe::scrub_module(m) };
    let _g = Guard::lock();
    if let Some(g) = table::of_module(m) {
        // SAFETY: `ftrace_lock` is held; sleepable.
        unsafe { table::replace(g, None) };
        update_counts();
    }
}

/// `enabled_functions`: the trampoline of the one ops a site calls, and
/// the function it calls.
pub(crate) fn describe_tramp(o: &mut crate::files::Out, ip: u64) {
    // Under `ftrace_lock` (the caller renders with it held).
    for op in list() {
        // SAFETY: listed ops are valid under `ftrace_lock`.
        let (tramp, func, wants) =
            unsafe { (view::trampoline(op).0, view::func(op), ops_wants(op, ip)) };
        if tramp == 0 || !wants {
            continue;
        }
        o.bytes(b"\ttramp: ");
        o.sym(tramp, true);
        o.bytes(b" (");
        o.sym(func.map_or(0, |f| f as *const () as u64), true);
        o.bytes(b")");
        // SAFETY: `op` is a listed ops.
        let t = unsafe { bindings::arch_ftrace_trampoline_func(op, ptr::null_mut()) };
        if !t.is_null() {
            o.bytes(b" ->");
            o.sym(t as u64, true);
        }
        return;
    }
    o.bytes(b"\ttramp: ERROR!");
}

// --- direct calls ------------------------------------------------------

/// The callback of a direct ops on a site it shares: makes the full-regs
/// trampoline return into the ops' direct trampoline.
///
/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn call_direct_funcs(
    _ip: c_ulong,
    _parent_ip: c_ulong,
    op: *mut Ops,
    fregs: *mut bindings::ftrace_regs,
) {
    // SAFETY: the list dispatcher passes a live ops and, since the ops
    // saves regs, the full `pt_regs` frame of ftrace_regs_caller.
    unsafe {
        let a = ptr::read_volatile(ptr::addr_of!((*op).direct_call));
        if a != 0 && !fregs.is_null() {
            (*fregs.cast::<bindings::pt_regs>()).orig_ax = a;
        }
    }
}
crate::nokprobe::nokprobe!(call_direct_funcs);

/// Attaches the direct trampoline `target` to the functions of the filter
/// of `ops`.
///
/// # Safety
///
/// `ops` is valid until unregistered; `addr` is a direct trampoline.
#[no_mangle]
pub unsafe extern "C" fn register_ftrace_direct(ops: *mut Ops, target: c_ulong) -> c_int {
    let _d = Guard::of(DIRECT_LOCK.get());
    let _g = Guard::lock();
    // SAFETY: per the function's contract; `ftrace_lock` held.
    unsafe {
        ops_init(ops);
        if view::has(ops, F_ENABLED) || target == 0 {
            return EINVAL;
        }
        let (f, _) = sets(ops);
        if hash::is_empty(f) {
            return EINVAL;
        }
        // One pass over the functions: one direct trampoline per function
        // (`busy`), and whether an IPMODIFY ops redirects any of them
        // (`shared`).
        let (mut busy, mut shared) = (false, false);
        hash::for_each(f, |e| {
            let ip = (*e).ip as u64;
            for x in list().filter(|&x| x != ops && ops_wants(x, ip)) {
                busy |= view::has(x, F_DIRECT);
                shared |= view::has(x, F_IPMODIFY);
            }
        });
        if busy {
            return EBUSY;
        }
        // A function an IPMODIFY ops redirects is shared only if the
        // direct ops' owner agrees (`ENABLE_SHARE_IPMODIFY_SELF`; BPF
        // answers EAGAIN, rebuilds its trampoline to call the redirected
        // function and registers again), else refused, as in C. One call
        // does for all such functions: the answer is about the ops.
        if shared {
            let Some(ask) = (*ops).ops_func else {
                return EBUSY;
            };
            let r = ask(
                ops,
                bindings::ftrace_ops_cmd_FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_SELF,
            );
            if r != 0 {
                return r;
            }
        }
        // Not registered yet (checked above): no dispatcher reads it.
        view::set_func(ops, Some(call_direct_funcs));
        view::set_trampoline(ops, addr(bindings::ftrace_regs_caller), 0);
        (*ops).direct_call = target;
        view::set(ops, F_DIRECT | F_SAVE_REGS);
        let r = startup(ops);
        if r != 0 {
            view::clear(ops, F_DIRECT);
            (*ops).direct_call = 0;
            view::set_trampoline(ops, 0, 0);
        }
        r
    }
}

/// Detaches a direct ops.
///
/// # Safety
///
/// `ops` is valid.
#[no_mangle]
pub unsafe extern "C" fn unregister_ftrace_direct(
    ops: *mut Ops,
    _addr: c_ulong,
    free_filters: bool,
) -> c_int {
    let r = {
        let _d = Guard::of(DIRECT_LOCK.get());
        let _g = Guard::lock();
        // SAFETY: per the function's contract; `ftrace_lock` held.
        unsafe {
            if !view::has(ops, F_ENABLED) || !view::has(ops, F_DIRECT) {
                return EINVAL;
            }
            let r = shutdown(ops);
            view::clear(ops, F_DIRECT);
            (*ops).direct_call = 0;
            view::set_trampoline(ops, 0, 0);
            r
        }
    };
    if free_filters {
        // SAFETY: per the function's contract; unregistered now.
        unsafe { crate::filter::ftrace_free_filter(ops) };
    }
    r
}

// --- /proc/sys/kernel/ftrace_enabled -------------------------------------

/// Points the direct ops `ops` at the direct trampoline `target`: its
/// sites alone call `target` from the next batch on (each site changes
/// with int3 from one call to the other, so a CPU runs either); sites it
/// shares go through the full-regs trampoline, which reads the ops'
/// `direct_call` at every call. The old trampoline must stay until this
/// returns (the caller frees it after).
///
/// # Safety
///
/// `ops` is valid; `ftrace_lock` is held.
unsafe fn modify_direct(ops: *mut Ops, target: c_ulong) -> c_int {
    // No reference to the ops is held across the update: the plan reads
    // every registered ops, this one included. Its fields are read and
    // written through the pointer.
    // SAFETY: per the function's contract.
    let (flags, old) = unsafe { (view::flags(ops), (*ops).direct_call) };
    if flags & F_ENABLED == 0 || flags & F_DIRECT == 0 || target == 0 {
        return EINVAL;
    }
    // Read locklessly by `call_direct_funcs`.
    // SAFETY: a valid field of a live ops.
    let set_call =
        |to: c_ulong| unsafe { ptr::write_volatile(ptr::addr_of_mut!((*ops).direct_call), to) };
    set_call(target);
    // SAFETY: `ftrace_lock` is held (the contract).
    let slot = unsafe { slot_of(ops) } as usize;
    let retarget = |tramp: u64, was: u64| {
        if let Some(i) = slot.checked_sub(1) {
            // SAFETY: `ftrace_lock` is held; no other reference to the
            // slots lives here.
            let x = &mut unsafe { SLOTS.get() }[i];
            x.tramp = tramp;
            x.was = was;
        }
    };
    // The plan sees the sites call `old` and moves them to `target`.
    retarget(target as u64, old as u64);
    // SAFETY: as above.
    let r = unsafe { update_scope(&own_sites(ops)) };
    if let Err(e) = r {
        // Nothing was written (planning failed): back to the old target.
        set_call(old);
        retarget(old as u64, 0);
        return e;
    }
    retarget(target as u64, 0);
    0
}

/// Changes the direct trampoline of a registered direct ops.
///
/// # Safety
///
/// `ops` is a valid ops.
#[no_mangle]
pub unsafe extern "C" fn modify_ftrace_direct(ops: *mut Ops, addr: c_ulong) -> c_int {
    let _d = Guard::of(DIRECT_LOCK.get());
    // SAFETY: the same contract; the direct lock is held.
    unsafe { modify_ftrace_direct_nolock(ops, addr) }
}

/// [`modify_ftrace_direct`] for callers that hold the direct lock: an
/// ops' owner answering [`share_with_direct`] (BPF's trampoline update
/// inside `register_ftrace_function()`).
///
/// # Safety
///
/// `ops` is a valid ops; the direct lock is held.
#[no_mangle]
pub unsafe extern "C" fn modify_ftrace_direct_nolock(ops: *mut Ops, addr: c_ulong) -> c_int {
    assert_held(DIRECT_LOCK.get());
    let _g = Guard::lock();
    // SAFETY: per the function's contract; `ftrace_lock` held.
    unsafe { modify_direct(ops, addr) }
}

const F_PERMANENT: c_ulong = fl(bindings::FTRACE_OPS_FL_PERMANENT);

/// The sysctl: turning it off unpatches every site (the ops stay
/// registered), turning it on patches them back; refused with `EBUSY`
/// while an ops that must not be stopped (`PERMANENT`) is registered.
///
/// # Safety
///
/// Called by the sysctl core for our table, with its arguments.
unsafe extern "C" fn enabled_sysctl(
    table: *const bindings::ctl_table,
    write: c_int,
    buffer: *mut c_void,
    lenp: *mut usize,
    ppos: *mut bindings::loff_t,
) -> c_int {
    let _g = Guard::lock();
    if dead() {
        return ENODEV;
    }
    let last = enabled();
    // SAFETY: the sysctl core's arguments; the table's data is
    // `ftrace_enabled`, which `ftrace_lock` serializes here.
    let r = unsafe { bindings::proc_dointvec(table, write, buffer, lenp, ppos) };
    if r != 0 || write == 0 || last == enabled() {
        return r;
    }
    // SAFETY: listed ops are valid under `ftrace_lock`.
    if !enabled() && list().any(|o| unsafe { view::has(o, F_PERMANENT) }) {
        // SAFETY: `ftrace_lock` serializes writers.
        unsafe { ptr::write_volatile(crate::ftrace_enabled.get(), 1) };
        return EBUSY;
    }
    // SAFETY: `ftrace_lock` is held; sleepable.
    match unsafe { update_sites() } {
        Ok(()) => 0,
        Err(e) => e,
    }
}

static SYSCTL: crate::CGlobal<[bindings::ctl_table; 1]> =
    crate::CGlobal::new([bindings::ctl_table {
        procname: c"ftrace_enabled".as_ptr().cast(),
        data: crate::ftrace_enabled.get().cast(),
        maxlen: core::mem::size_of::<c_int>() as c_int,
        mode: 0o644,
        proc_handler: Some(enabled_sysctl),
        poll: ptr::null_mut(),
        extra1: ptr::null_mut(),
        extra2: ptr::null_mut(),
    }]);

/// Registers `kernel.ftrace_enabled`.
pub(crate) fn register_sysctl() {
    // SAFETY: a static table that lives forever.
    let h =
        unsafe { bindings::register_sysctl_sz(c"kernel".as_ptr().cast(), SYSCTL.get().cast(), 1) };
    if h.is_null() {
        pr_warn!("cannot register kernel.ftrace_enabled\n");
    }
}
