// SPDX-License-Identifier: GPL-2.0

//! Registering and unregistering an ops (`register_ftrace_function()`),
//! with the sharing of functions between IPMODIFY and direct ops, and
//! the one path by which the other modules reach the ops layer: the
//! registry, the plan, sub-ops and the direct calls are re-exported here.

use crate::sys::{assert_held, dead, enabled, to_errno, CMutex, CoreGuard, Held};
use crate::update::*;
use core::ptr;
use kernel::bindings;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

pub(crate) use crate::dispatch::arch_ftrace_ops_list_func;
pub(crate) use crate::registry::*;
pub(crate) use crate::update::{
    any_manager, ipmodify_conflict, update_ips, update_scope, update_sites,
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
pub(crate) fn startup(held: &Held, ops: OpsRef<'_>) -> Result {
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
    reserve_plan(held, 1)?;
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
    if crate::pidstate::pids_enabled(ops) {
        ops.set_func(crate::registry::ops_fn(crate::pidstate::ftrace_pid_func));
    }
    ops.publish(held);
    let before_tramp = ops.trampoline().0;
    if flags & F_DIRECT != 0 {
        // Alone on a site, a direct ops' site calls its direct trampoline.
        slot_alloc(held, ops, ops.direct_call() as u64);
    } else {
        arch_update_trampoline(held, ops);
        let tramp = ops.trampoline().0;
        if tramp != before_tramp {
            perf_trampoline(held, ops, false);
        }
        if tramp != 0 {
            slot_alloc(held, ops, tramp);
        }
    }
    let r = update_scope(held, &own_sites(held, ops));
    ops.clear(F_ADDING);
    if let Err(e) = r {
        ops.unlink(held);
        ops.clear(F_ENABLED);
        ops.set_func(ops.saved_func());
        slot_free(held, ops);
        // The update failed before writing a site (or tracing is dead):
        // no site calls the trampoline made above. A dynamic ops' goes
        // now, as in C; its owner may free the ops on this error.
        if add & F_DYNAMIC != 0 && ops.trampoline().0 != before_tramp {
            perf_trampoline(held, ops, true);
            arch_free_trampoline(held, ops);
        }
        return Err(e);
    }
    Ok(())
}

/// Has the arch layer create or update the trampoline of a registered
/// ops (it calls `ftrace_ops_get_func()`).
pub(crate) fn arch_update_trampoline(_held: &Held, ops: OpsRef<'_>) {
    // SAFETY: a live ops, under `ftrace_lock` as the arch layer requires;
    // it changes the ops' trampoline fields through `opsview` only.
    unsafe { bindings::arch_ftrace_update_trampoline(ops.as_ptr()) };
}

/// Frees the trampoline the arch layer made for `ops`, which no site
/// calls and no task runs any more (the callers' waits).
fn arch_free_trampoline(_held: &Held, ops: OpsRef<'_>) {
    // SAFETY: a live ops under `ftrace_lock`; the arch layer frees only a
    // trampoline it allocated (`FTRACE_OPS_FL_ALLOC_TRAMP`), which nothing
    // runs (the callers' contract, argued at each call).
    unsafe { bindings::arch_ftrace_trampoline_free(ops.as_ptr()) };
}

/// Unregisters `ops` (`ftrace_shutdown()`); when it returns, no CPU runs
/// the ops' callback through the core any more.
pub(crate) fn shutdown(held: &Held, ops: OpsRef<'_>) -> Result {
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
    if let Err(e) = update_scope(held, &own_sites(held, ops)) {
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
    // No site calls its trampoline now.
    slot_free(held, ops);
    ops.clear(F_REMOVING);
    if ops.saved_func().is_some() {
        ops.set_func(ops.saved_func());
    }
    if ops.has(F_DYNAMIC) {
        // The first waits out every CPU that may be in the callback with
        // preemption off or RCU not watching; the second every task
        // preempted on the trampoline.
        crate::sys::synchronize_rcu_tasks_rude();
        crate::sys::synchronize_rcu_tasks();
        perf_trampoline(held, ops, true);
        arch_free_trampoline(held, ops);
    }
    Ok(())
}

/// Tells perf about the trampoline an ops allocated for itself, as the C
/// core does: when it appears, a KSYMBOL record (`ftrace_trampoline`,
/// out-of-line code, listed in kallsyms by then) and a TEXT_POKE record of
/// its whole body, so that a decoder of an instruction trace knows the
/// bytes; when it goes, the KSYMBOL unregister record, before it is freed.
#[cfg(CONFIG_PERF_EVENTS)]
fn perf_trampoline(_held: &Held, ops: OpsRef<'_>, gone: bool) {
    let (at, len) = ops.trampoline();
    if at == 0 || !ops.has(F_ALLOC_TRAMP) {
        return;
    }
    let Ok(len32) = u32::try_from(len) else {
        return;
    };
    // SAFETY: `at..at + len` is the ops' trampoline, allocated and written
    // by the arch layer and not freed before the unregister record (the
    // lock, held, serializes both); perf copies the bytes and the name (a
    // static string) into its records.
    unsafe {
        bindings::perf_event_ksymbol(
            bindings::perf_record_ksymbol_type_PERF_RECORD_KSYMBOL_TYPE_OOL as u16,
            at,
            len32,
            gone,
            crate::sys::TRAMPOLINE_SYM.as_char_ptr(),
        );
        if !gone {
            let body = at as *const c_void;
            bindings::perf_event_text_poke(body, ptr::null(), 0, body, len as usize);
        }
    }
}

#[cfg(not(CONFIG_PERF_EVENTS))]
fn perf_trampoline(_held: &Held, _ops: OpsRef<'_>, _gone: bool) {}

/// Registers an ops with the core.
#[no_mangle]
pub extern "C" fn register_ftrace_function(ops: OpsRef<'_>) -> c_int {
    let _d = DIRECT_LOCK.lock();
    if let Err(e) = share_with_direct(ops, Share::Enable) {
        return e.to_errno();
    }
    let g = CoreGuard::lock();
    to_errno(startup(g.held(), ops))
}

/// Unregisters an ops.
#[no_mangle]
pub extern "C" fn unregister_ftrace_function(ops: OpsRef<'_>) -> c_int {
    let _d = DIRECT_LOCK.lock();
    let r = shutdown(CoreGuard::lock().held(), ops);
    let _ = share_with_direct(ops, Share::Disable);
    to_errno(r)
}

/// Serialises the direct-call API and the sharing of functions between
/// direct and IPMODIFY ops (C's `direct_mutex`): taken before
/// `ftrace_lock`, and held while an ops' owner is asked to share, so that
/// no direct ops comes or goes meanwhile.
pub(crate) static DIRECT_LOCK: CMutex = CMutex::new();

/// Initialises the locks of this module (boot, before any use).
pub(crate) fn init_locks() {
    crate::sys::cmutex_init!(DIRECT_LOCK, "direct_mutex");
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
fn share_with_direct(ops: OpsRef<'_>, what: Share) -> Result {
    assert_held(&DIRECT_LOCK);
    if !ops.has(F_IPMODIFY) {
        return Ok(());
    }
    let cmd = match what {
        Share::Enable => bindings::ftrace_ops_cmd_FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_PEER,
        Share::Disable => bindings::ftrace_ops_cmd_FTRACE_OPS_CMD_DISABLE_SHARE_IPMODIFY_PEER,
    };
    // SAFETY: only its owner changes the filter of an IPMODIFY ops (no
    // sub-op, no manager), and the owner is in this call.
    let filter = unsafe { ops.owner_filter() };
    for ip in filter.ips() {
        let peer = {
            let g = CoreGuard::lock();
            let found = list(g.held())
                .find(|x| x.has(F_DIRECT) && x.wants(g.held(), ip))
                .map(OpsRef::as_ptr);
            found
        };
        // A direct ops found stays registered: the direct lock keeps the
        // direct API out until this returns.
        let Some(peer) = peer else {
            continue;
        };
        // SAFETY: registered, and kept so by the direct lock (above).
        let peer = unsafe { OpsRef::from_raw(peer) };
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
pub(crate) fn describe_tramp(held: &Held, o: &mut crate::tracefs::Out, ip: u64) {
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
        // SAFETY: `op` is a listed ops, live under `ftrace_lock`.
        let t = unsafe { bindings::arch_ftrace_trampoline_func(op.as_ptr(), ptr::null_mut()) };
        if !t.is_null() {
            o.bytes(b" ->");
            o.sym(t as u64, true);
        }
        return;
    }
    o.bytes(b"\ttramp: ERROR!");
}

/// `enabled_functions`: the direct trampoline a direct ops gives the site
/// at `ip`, on a line of its own, as C prints it.
pub(crate) fn describe_direct(held: &Held, o: &mut crate::tracefs::Out, ip: u64) {
    let to = list(held)
        .find(|op| op.has(F_DIRECT) && op.wants(held, ip))
        .map_or(0, |op| op.direct_call());
    if to != 0 {
        o.bytes(b"\n\tdirect-->");
        o.sym(to as u64, true);
    }
}

/// Frees the sets of an ops that is not registered.
#[no_mangle]
pub extern "C" fn ftrace_free_filter(ops: OpsRef<'_>) {
    let g = CoreGuard::lock();
    if ops.has(F_ENABLED) {
        pr_warn!("ftrace_free_filter() on a registered ops\n");
        return;
    }
    drop(ops.swap_set(g.held(), false, None));
    drop(ops.swap_set(g.held(), true, None));
}
