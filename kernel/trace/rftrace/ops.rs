// SPDX-License-Identifier: GPL-2.0

//! Registering and unregistering an ops (`register_ftrace_function()`),
//! with the sharing of functions between IPMODIFY and direct ops, and
//! the one path by which the other modules reach the ops layer: the
//! registry, the plan, sub-ops and the direct calls are re-exported here.

use crate::hash;
use crate::sys::{assert_held, dead, enabled, ftrace_ops_list, to_errno, CoreGuard, Guard, Held};
use crate::update::*;
use crate::view;
use core::ptr;
use core::sync::atomic::Ordering;
use kernel::bindings;
use kernel::error::to_result;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

pub(crate) use crate::clist::{list_add, list_del, list_entries, list_init};
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
///
/// # Safety
///
/// `ftrace_lock` is held; `ops` is valid and stays so until unregistered.
pub(crate) unsafe fn startup(ops: *mut Ops) -> Result {
    if dead() {
        return Err(ENODEV);
    }
    // The ops is read through `view` only: while it is unpublished its
    // owner may still read it, and once on the list every CPU may.
    // SAFETY: per the function's contract.
    unsafe { ops_init(ops) };
    // SAFETY: as above, for every `view` call below.
    let flags = unsafe { view::flags(ops) };
    if flags & F_DELETED != 0 {
        return Err(EINVAL);
    }
    if flags & F_ENABLED != 0 {
        pr_warn!("ops {:p} registered twice\n", ops);
        return Err(EBUSY);
    }
    // An ops that must not be stopped (livepatch) cannot come while the
    // sysctl keeps the tracer off: it would not run, as in C.
    if flags & F_PERMANENT != 0 && !enabled() {
        return Err(EBUSY);
    }
    if flags & F_IPMODIFY != 0 {
        // SAFETY: `ftrace_lock` is held.
        let (f, _) = unsafe { sets(ops) };
        // Changing the ip of every function is refused, as in C.
        // SAFETY: a set of a live ops, under `ftrace_lock`.
        if unsafe { hash::is_empty(f) } {
            return Err(EINVAL);
        }
        // SAFETY: as above.
        if unsafe { ipmodify_conflict(ops, f) } {
            return Err(EBUSY);
        }
    }
    // Room in the plan for this ops, so that no update made while it is
    // registered, its removal included, needs memory.
    // SAFETY: `ftrace_lock` is held.
    unsafe { reserve_plan(1) }?;
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
        if crate::pidstate::ftrace_pids_enabled(ops) {
            view::set_func(ops, Some(crate::pidstate::ftrace_pid_func));
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
        return Err(e);
    }
    Ok(())
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
    // SAFETY: per the function's contract.
    for p in list(unsafe { Held::assume() }) {
        // SAFETY: a listed ops, live under `ftrace_lock`.
        let s = unsafe { slot(ptr::addr_of_mut!((*p.as_ptr()).next)) };
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
pub(crate) unsafe fn shutdown(ops: *mut Ops) -> Result {
    if dead() {
        return Err(ENODEV);
    }
    // The ops is read and changed through `view` only: dispatchers on other
    // CPUs may read it until the waits below.
    // SAFETY: per the function's contract, for every `view` call below.
    if !unsafe { view::has(ops, F_ENABLED) } {
        pr_warn!("ops {:p} unregistered but not registered\n", ops);
        return Err(EBUSY);
    }
    // SAFETY: `ftrace_lock` is held.
    if !unsafe { remove(ops) } {
        return Err(ENOENT);
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
        return Err(e);
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
    Ok(())
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
            crate::sys::TRAMPOLINE_SYM.as_char_ptr(),
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
    if let Err(e) = unsafe { share_with_direct(ops, Share::Enable) } {
        return e.to_errno();
    }
    let _g = Guard::lock();
    // SAFETY: per the function's contract, `ftrace_lock` held.
    to_errno(unsafe { startup(ops) })
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
    let _ = unsafe { share_with_direct(ops, Share::Disable) };
    to_errno(r)
}

/// Serialises the direct-call API and the sharing of functions between
/// direct and IPMODIFY ops (C's `direct_mutex`): taken before
/// `ftrace_lock`, and held while an ops' owner is asked to share, so that
/// no direct ops comes or goes meanwhile.
pub(crate) static DIRECT_LOCK: crate::sys::CGlobal<bindings::mutex> = crate::sys::CGlobal::new(
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
    unsafe { crate::sys::mutex_init!(DIRECT_LOCK.get(), "direct_mutex") };
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
unsafe fn share_with_direct(ops: *mut Ops, what: Share) -> Result {
    assert_held(DIRECT_LOCK.get());
    // SAFETY: per the function's contract.
    if unsafe { !view::has(ops, F_IPMODIFY) } {
        return Ok(());
    }
    let cmd = match what {
        Share::Enable => bindings::ftrace_ops_cmd_FTRACE_OPS_CMD_ENABLE_SHARE_IPMODIFY_PEER,
        Share::Disable => bindings::ftrace_ops_cmd_FTRACE_OPS_CMD_DISABLE_SHARE_IPMODIFY_PEER,
    };
    let mut r = Ok(());
    // SAFETY: the ops' own filter, which its owner does not change while
    // registering it.
    let (filter, _) = unsafe { sets(ops) };
    // SAFETY: as above.
    unsafe {
        hash::for_each(filter, |e| {
            if r.is_err() {
                return;
            }
            let ip = (*e).ip as u64;
            let peer = {
                let g = CoreGuard::lock();
                let found = list(g.held())
                    .find(|x| x.has(F_DIRECT) && x.wants(ip))
                    .map(OpsRef::as_ptr);
                found
            };
            // A direct ops found stays registered: the direct lock keeps
            // the direct API out until this returns.
            let Some(peer) = peer else {
                return;
            };
            match ((*peer).ops_func, what) {
                (None, Share::Enable) => r = Err(EBUSY),
                (None, Share::Disable) => {}
                (Some(ask), Share::Enable) => r = to_result(ask(peer, cmd)),
                (Some(ask), Share::Disable) => {
                    let _ = ask(peer, cmd);
                }
            }
        });
    }
    r
}

/// `enabled_functions`: the trampoline of the one ops a site calls, and
/// the function it calls.
pub(crate) fn describe_tramp(held: &Held, o: &mut crate::tracefs::Out, ip: u64) {
    for op in list(held) {
        let (tramp, func) = (op.trampoline().0, op.func());
        if tramp == 0 || !op.wants(ip) {
            continue;
        }
        o.bytes(b"\ttramp: ");
        o.sym(tramp, true);
        o.bytes(b" (");
        o.sym(func.map_or(0, |f| f as *const () as u64), true);
        o.bytes(b")");
        // SAFETY: `op` is a listed ops.
        let t = unsafe { bindings::arch_ftrace_trampoline_func(op.as_ptr(), ptr::null_mut()) };
        if !t.is_null() {
            o.bytes(b" ->");
            o.sym(t as u64, true);
        }
        return;
    }
    o.bytes(b"\ttramp: ERROR!");
}

/// Frees the sets of an ops that is not registered.
///
/// # Safety
///
/// `ops` is valid and not registered.
#[no_mangle]
pub unsafe extern "C" fn ftrace_free_filter(ops: *mut Ops) {
    let _g = Guard::lock();
    // SAFETY: per the function's contract.
    unsafe {
        ops_init(ops);
        if view::has(ops, F_ENABLED) {
            pr_warn!("ftrace_free_filter() on a registered ops\n");
            return;
        }
        hash::free(set_hash(ops, false, ptr::null_mut()));
        hash::free(set_hash(ops, true, ptr::null_mut()));
    }
}
