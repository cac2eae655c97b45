// SPDX-License-Identifier: GPL-2.0

//! Registering and unregistering an ops (`register_ftrace_function()`),
//! with the sharing of functions between IPMODIFY and direct ops. The
//! upper layers import what they use of the ops layer from the module
//! that defines it (`registry`, `update`, ...): nothing is re-exported
//! here.

use crate::base::sys::{dead, enabled, to_errno, CoreGuard, Held, StateKey};
use crate::ops::arch::{self, Target};
use crate::ops::update::{
    ipmodify_conflict, own_sites, reserve_plan, slot_alloc, slot_free, update_scope,
};
use core::ptr;
use kernel::bindings;
use kernel::ffi::c_int;
use kernel::prelude::*;

use crate::ops::registry::{
    list, DirectGuard, OpsRef, DIRECT_LOCK, F_ADDING, F_DELETED, F_DIRECT, F_DYNAMIC, F_ENABLED,
    F_IPMODIFY, F_PERMANENT, F_REMOVING, F_SAVE_REGS, F_SAVE_REGS_IF, WITH_REGS,
};

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

/// Registers `ops` and patches the sites it wants (`ftrace_startup()`).
pub(crate) fn startup(held: &Held, key: &mut StateKey, ops: OpsRef<'_>) -> Result {
    if dead() {
        return Err(ENODEV);
    }
    ops.init(held);
    let flags = ops.flags();
    if flags & F_DELETED != 0 {
        return Err(EINVAL);
    }
    if flags & F_ENABLED != 0 {
        pr_warn!("ops {:p} registered twice\n", ops.as_ptr());
        return Err(EBUSY);
    }
    // Without a full-regs trampoline, an ops that needs one is refused
    // unless it said it can do without, as in C.
    if !WITH_REGS && flags & F_SAVE_REGS != 0 && flags & F_SAVE_REGS_IF == 0 {
        return Err(EINVAL);
    }
    // An ops that must not be stopped (livepatch) cannot come while the
    // sysctl keeps the tracer off: it would not run, as in C.
    if flags & F_PERMANENT != 0 && !enabled() {
        return Err(EBUSY);
    }
    if flags & F_IPMODIFY != 0 {
        let (f, _) = ops.sets(held);
        // Changing the ip of every function is refused, as in C.
        if f.is_empty() {
            return Err(EINVAL);
        }
        if ipmodify_conflict(held, ops, f) {
            return Err(EBUSY);
        }
    }
    // Room in the plan for this ops, so that no update made while it is
    // registered, its removal included, needs memory.
    reserve_plan(held, key, 1)?;
    // Everything the dispatchers read is set before the ops is published.
    let mut add = F_ENABLED | F_ADDING;
    if flags & F_SAVE_REGS_IF != 0 {
        add |= F_SAVE_REGS;
    }
    if !is_core_data(ops.as_ptr() as u64) {
        add |= F_DYNAMIC;
    }
    ops.set(add);
    ops.set_saved_func(held, ops.func());
    if crate::ops::pidstate::pids_enabled(ops) {
        ops.set_func(crate::ops::registry::ops_fn::<crate::ops::pidstate::PidFunc>());
    }
    let mut tx = Publishing::publish(held, key, ops, add & F_DYNAMIC != 0);
    if flags & F_DIRECT != 0 {
        // Alone on a site, a direct ops' site calls its direct trampoline.
        slot_alloc(tx.key(), ops, Target::direct_of(ops));
    } else {
        arch::update_trampoline(held, ops);
        let tramp = Target::trampoline_of(ops);
        if ops.trampoline().0 != tx.before_tramp {
            arch::perf_trampoline(held, ops, false);
        }
        if !tramp.is_nop() {
            slot_alloc(tx.key(), ops, tramp);
        }
    }
    let r = update_scope(held, tx.key(), &own_sites(held, ops));
    ops.clear(F_ADDING);
    // On an error the update failed before writing a site (or tracing is
    // dead), and dropping the transaction takes the ops off again.
    r?;
    tx.commit();
    Ok(())
}

/// An ops `startup` has published and not committed yet: dropping it
/// unpublishes the ops and releases what the startup gave it (its slot,
/// the groups made with it, and a dynamic ops' trampoline made by this
/// startup, which its owner may free with the ops on the error), through
/// the same [`release`] as [`shutdown`], and waits for the CPUs that may
/// have found a dynamic ops on the list. No site was written to call any
/// of them: the update that failed writes none, or tracing is dead.
struct Publishing<'h, 'o> {
    held: &'h Held,
    key: &'h mut StateKey,
    ops: OpsRef<'o>,
    /// The ops' trampoline before the startup.
    before_tramp: u64,
    dynamic: bool,
}

impl<'h, 'o> Publishing<'h, 'o> {
    fn publish(held: &'h Held, key: &'h mut StateKey, ops: OpsRef<'o>, dynamic: bool) -> Self {
        ops.publish(held);
        Publishing {
            held,
            key,
            ops,
            before_tramp: ops.trampoline().0,
            dynamic,
        }
    }

    /// The key to the core's state, while the transaction holds it.
    fn key(&mut self) -> &mut StateKey {
        self.key
    }

    /// The ops stays registered.
    fn commit(self) {
        core::mem::forget(self);
    }
}

impl Drop for Publishing<'_, '_> {
    fn drop(&mut self) {
        let (held, ops) = (self.held, self.ops);
        ops.unlink(held);
        ops.clear(F_ENABLED);
        let made = self.dynamic && ops.trampoline().0 != self.before_tramp;
        release(held, self.key, ops, made);
        // Published, the ops was on the list: a CPU walking it for a site
        // of other ops may be in its callback now, and a dynamic ops is
        // its owner's to free as soon as the error reaches it. `release`
        // waited if it freed a trampoline; otherwise wait here. (An ops of
        // the kernel's own data is never freed.)
        if self.dynamic && !made {
            arch::wait_trampolines_left();
        }
    }
}

/// Releases what an ops that no site calls any more was given: its slot,
/// its groups (taken out of the list) and, for `own`, its own trampoline,
/// which go after the waits of `groups::retire`; and gives it back the
/// function it was registered with. The last step of both [`shutdown`]
/// and a failed [`startup`].
fn release(held: &Held, key: &mut StateKey, ops: OpsRef<'_>, own: bool) {
    slot_free(key, ops);
    let gone = take_groups(held, key, ops);
    // Out of the dispatch now (a failed startup never set it).
    ops.clear(F_REMOVING);
    if ops.saved_func().is_some() {
        ops.set_func(ops.saved_func());
    }
    crate::ops::groups::retire(held, key, gone, own.then_some(ops));
}

/// Takes the groups of `ops`, which is going and whose sites no longer call
/// them, out of the list and their slots, for `groups::retire`.
fn take_groups(held: &Held, key: &mut StateKey, ops: OpsRef<'_>) -> crate::ops::groups::Groups {
    let gone = crate::ops::groups::take_with(held, key, ops);
    for g in gone.iter().flatten() {
        slot_free(key, g.ops());
    }
    gone
}

/// Unregisters `ops` (`ftrace_shutdown()`); when it returns, no CPU runs
/// the ops' callback through the core any more.
pub(crate) fn shutdown(held: &Held, key: &mut StateKey, ops: OpsRef<'_>) -> Result {
    if dead() {
        return Err(ENODEV);
    }
    if !ops.has(F_ENABLED) {
        pr_warn!("ops {:p} unregistered but not registered\n", ops.as_ptr());
        return Err(EBUSY);
    }
    if !ops.unlink(held) {
        return Err(ENOENT);
    }
    ops.set(F_REMOVING);
    ops.clear(F_ENABLED);
    if let Err(e) = update_scope(held, key, &own_sites(held, ops)) {
        // A site did not hold what its record said: tracing is dead now
        // (`ftrace_bug()`), and sites of this ops may still call its
        // trampoline. It stays, slot and all, for as long as the kernel
        // runs; the caller learns that the ops could not be taken off.
        pr_err!(
            "ops {:p}: sites not moved off, its trampoline is kept\n",
            ops.as_ptr()
        );
        return Err(e);
    }
    // No site calls its trampoline now, nor those of its groups.
    release(held, key, ops, ops.has(F_DYNAMIC));
    Ok(())
}

/// Registers an ops with the core.
pub(crate) fn register_ftrace_function(ops: OpsRef<'_>) -> c_int {
    let d = DirectGuard::lock();
    if let Err(e) = share_with_direct(&d, ops, Share::Enable) {
        return e.to_errno();
    }
    let mut g = CoreGuard::lock();
    let (held, key) = g.parts();
    to_errno(startup(held, key, ops))
}

/// Unregisters an ops.
pub(crate) fn unregister_ftrace_function(ops: OpsRef<'_>) -> c_int {
    let d = DirectGuard::lock();
    let r = {
        let mut g = CoreGuard::lock();
        let (held, key) = g.parts();
        shutdown(held, key, ops)
    };
    let _ = share_with_direct(&d, ops, Share::Disable);
    to_errno(r)
}

/// Initialises the locks of this module (boot, before any use).
pub(crate) fn init_locks() {
    crate::base::sys::cmutex_init!(DIRECT_LOCK, "direct_mutex");
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
/// The direct lock is held and `ftrace_lock` is not (the owners' answers
/// change direct ops). The ops' own filter does not change meanwhile: its
/// owner is registering or unregistering it.
fn share_with_direct(d: &DirectGuard, ops: OpsRef<'_>, what: Share) -> Result {
    if !ops.has(F_IPMODIFY) {
        return Ok(());
    }
    let cmd = match what {
        Share::Enable => bindings::ftrace_ops_cmd_FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_PEER,
        Share::Disable => bindings::ftrace_ops_cmd_FTRACE_OPS_CMD_DISABLE_SHARE_IPMODIFY_PEER,
    };
    // The functions, copied: the owners' answers are asked without
    // `ftrace_lock`.
    let ips = {
        let g = CoreGuard::lock();
        let mut ips = KVec::new();
        for ip in ops.sets(g.held()).0.ips() {
            ips.push(ip, GFP_KERNEL)?;
        }
        ips
    };
    for &ip in ips.iter() {
        let Some(peer) = crate::ops::directmap::peer(d, ip) else {
            continue;
        };
        match what {
            Share::Enable => peer.ask(cmd)?,
            Share::Disable => {
                let _ = peer.ask(cmd);
            }
        }
    }
    Ok(())
}

/// `enabled_functions`: the trampoline of the one ops a site calls, and
/// the function it calls.
pub(crate) fn describe_tramp(held: &Held, o: &mut crate::base::tracefs::Out, ip: u64) {
    for op in list(held) {
        let (tramp, func) = (op.trampoline().0, op.func());
        if tramp == 0 || !op.wants(held, ip) {
            continue;
        }
        o.bytes(b"\ttramp: ");
        o.sym(tramp, true);
        o.bytes(b" (");
        o.sym(func.map_or(0, |f| f as *const () as u64), true);
        o.bytes(b")");
        let t = arch::trampoline_func(held, op);
        if t != 0 {
            o.bytes(b" ->");
            o.sym(t, true);
        }
        return;
    }
    o.bytes(b"\ttramp: ERROR!");
}

/// `enabled_functions`: the ops a site's literal names (the one listed
/// ops that wants the site) and its callback, as C prints it.
pub(crate) fn describe_ops(held: &Held, o: &mut crate::base::tracefs::Out, ip: u64) {
    match list(held).find(|op| op.wants(held, ip)) {
        Some(op) => {
            o.bytes(b"\tops: ");
            o.sym(op.as_ptr() as u64, true);
            o.bytes(b" (");
            o.sym(op.func().map_or(0, |f| f as *const () as u64), true);
            o.bytes(b")");
        }
        None => o.bytes(b"\tops: ERROR!"),
    }
}

/// `enabled_functions`: the direct trampoline of `op`, the direct ops of
/// a site, on a line of its own, as C prints it.
pub(crate) fn describe_direct(o: &mut crate::base::tracefs::Out, op: OpsRef<'_>) {
    let to = op.direct_call();
    if to != 0 {
        o.bytes(b"\n\tdirect-->");
        o.sym(to as u64, true);
    }
}

/// Frees the sets of an ops that is not registered.
pub(crate) fn ftrace_free_filter(ops: OpsRef<'_>) {
    let g = CoreGuard::lock();
    if ops.has(F_ENABLED) {
        pr_warn!("ftrace_free_filter() on a registered ops\n");
        return;
    }
    drop(ops.swap_set(g.held(), false, None));
    drop(ops.swap_set(g.held(), true, None));
}
