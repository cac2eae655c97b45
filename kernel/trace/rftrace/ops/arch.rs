// SPDX-License-Identifier: GPL-2.0

//! What the core asks of the architecture layer, as safe functions: the
//! addresses a call site may be given ([`Target`]), the batches of site
//! changes written to live text ([`Changes`]), the first NOP of code that
//! does not run yet ([`UnrunSites`]), the shared trampolines' callback,
//! and the trampolines the arch layer makes for ops.
//!
//! The rule that makes writing text safe is carried by [`Target`]: a site
//! is only ever made to call the NOP, a shared trampoline, the trampoline
//! the arch layer made for a registered ops, or the direct-call target an
//! ops' owner registered; and the arch layer writes a site only after it
//! checked that the site holds the call (or NOP) the change says it holds.

use crate::base::sys::{addr, dead, Held, TextGuard};
use crate::ops::archif::{Change, Member};
use crate::ops::registry::{Ops, OpsRef, F_ALLOC_TRAMP};
use core::ptr;
use kernel::bindings;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

// Pointers only: on PREEMPT_RT an ops' mutex points to a `task_struct`,
// whose `struct sched_statistics` is empty without SCHEDSTATS, which the
// lint flags through the pointers.
#[allow(improper_ctypes)]
unsafe extern "C" {
    fn rftrace_arch_apply(changes: *const Change, n: usize, bad_ip: *mut u64) -> c_int;
    fn rftrace_arch_init_site(ip: u64, target: u64) -> c_int;
    fn rftrace_arch_group_trampoline(ops: *mut Ops, members: *const Member, n: usize) -> c_int;
}
// Declared as the arch layer defines them (archif.rs).
const _: (
    crate::ops::archif::ApplyFn,
    crate::ops::archif::InitSiteFn,
    crate::ops::archif::GroupFn,
) = (
    rftrace_arch_apply,
    rftrace_arch_init_site,
    rftrace_arch_group_trampoline,
);

/// What a call site may be made to call: an address, and where the
/// architecture has a per-call-site ops literal
/// (`DYNAMIC_FTRACE_WITH_CALL_OPS`) the ops it names.
///
/// # Invariants
///
/// The address is `0`, the NOP, or code that takes an entry call and
/// stays for as long as a site calls it: a shared trampoline of the arch
/// layer (kernel text), the trampoline the arch layer made for an ops
/// (freed only by [`retire_dynamic`], once no site calls it), or the
/// direct-call target an ops' owner gave (kept while the ops is
/// registered: the contract of `register_ftrace_direct()` and
/// `modify_ftrace_direct()`).
///
/// The ops is `0` (none: the literal then names the core's stub ops, or
/// there is no literal) or an ops that stays as long as a site calls
/// through its literal (a site made a NOP may keep naming it, unread): the core's list or stub ops (static), or a registered ops,
/// freed by its owner only after it left every site and the waits of
/// [`retire_dynamic`] (dynamic ops) or never (static ones).
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
pub(crate) struct Target {
    addr: u64,
    ops: u64,
}

/// Whether the sites have an ops literal that the shared trampoline reads.
pub(crate) const CALL_OPS: bool = cfg!(CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS);

impl Target {
    /// No call.
    pub(crate) const NOP: Target = Target { addr: 0, ops: 0 };

    const fn call(addr: u64) -> Target {
        Target { addr, ops: 0 }
    }

    /// The shared list trampoline (with the literal: the shared
    /// trampoline, the literal naming the list ops, whose callback walks
    /// the list).
    pub(crate) fn list() -> Target {
        let addr = addr(bindings::ftrace_caller);
        #[cfg(CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS)]
        return Target {
            addr,
            ops: crate::base::sys::ftrace_list_ops.get() as u64,
        };
        #[cfg(not(CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS))]
        return Target::call(addr);
    }

    /// The shared list trampoline that saves a full `pt_regs` (C's
    /// `FTRACE_REGS_ADDR`): the list one where the architecture has no
    /// such trampoline (no `DYNAMIC_FTRACE_WITH_REGS`).
    pub(crate) fn regs() -> Target {
        #[cfg(CONFIG_DYNAMIC_FTRACE_WITH_REGS)]
        return Target::call(addr(bindings::ftrace_regs_caller));
        #[cfg(not(CONFIG_DYNAMIC_FTRACE_WITH_REGS))]
        return Target::list();
    }

    /// What a site that `ops` alone wants may call in place of the list
    /// (the NOP: nothing). The trampoline the arch layer made for `ops`;
    /// with the literal, the shared trampoline with the literal naming
    /// `ops`, when that trampoline may call the ops' callback itself (it
    /// needs no recursion guard or RCU check from the core: C's rule).
    pub(crate) fn trampoline_of(ops: OpsRef<'_>) -> Target {
        if CALL_OPS {
            let own = crate::ops::assist::ftrace_ops_get_func(ops).map(|f| f as usize);
            if own.is_some() && own == ops.func().map(|f| f as usize) {
                return Target {
                    addr: addr(bindings::ftrace_caller),
                    ops: ops.as_ptr() as u64,
                };
            }
            return Target::NOP;
        }
        Target::call(ops.trampoline().0)
    }

    /// The direct-call target of a direct ops (the NOP: none); with the
    /// literal, naming the ops, whose `direct_call` the shared trampoline
    /// reads where the site cannot reach the target itself.
    pub(crate) fn direct_of(ops: OpsRef<'_>) -> Target {
        let addr = ops.direct_call() as u64;
        if CALL_OPS && addr != 0 {
            return Target {
                addr,
                ops: ops.as_ptr() as u64,
            };
        }
        Target::call(addr)
    }

    /// Its address (0: the NOP).
    pub(crate) fn addr(self) -> u64 {
        self.addr
    }

    /// Whether it is the NOP.
    pub(crate) fn is_nop(self) -> bool {
        self.addr == 0
    }
}

/// Call-site changes gathered for one write by the arch layer.
pub(crate) struct Changes<const N: usize> {
    len: usize,
    changes: [Change; N],
}

impl<const N: usize> Changes<N> {
    /// No change.
    pub(crate) const fn new() -> Self {
        Changes {
            len: 0,
            changes: [Change {
                ip: 0,
                old: 0,
                new: 0,
                old_ops: 0,
                new_ops: 0,
            }; N],
        }
    }

    /// How many changes are gathered.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Forgets the gathered changes.
    pub(crate) fn clear(&mut self) {
        self.len = 0;
    }

    /// Adds the change of the site at `ip` from calling `old` to calling
    /// `new`; `false` when the batch is full.
    pub(crate) fn push(&mut self, ip: u64, old: Target, new: Target) -> bool {
        let Some(c) = self.changes.get_mut(self.len) else {
            return false;
        };
        *c = Change {
            ip,
            old: old.addr,
            new: new.addr,
            old_ops: old.ops,
            new_ops: new.ops,
        };
        self.len += 1;
        true
    }

    /// Writes the gathered changes to live text and forgets them (sleeps).
    /// On a site that does not hold the call its change says it holds,
    /// nothing of the batch is written: the error and that site.
    pub(crate) fn apply(&mut self, _held: &Held) -> core::result::Result<(), (Error, u64)> {
        let n = core::mem::replace(&mut self.len, 0);
        if n == 0 {
            return Ok(());
        }
        if crate::base::ffi::rftrace_should_fail_patch() {
            // An injected failure: as a first site that does not hold
            // what its change says, nothing of the batch is written.
            let first = self.changes.first().map_or(0, |c| c.ip);
            return Err((crate::base::sys::injected(), first));
        }
        let mut bad = 0u64;
        // SAFETY: `n` changes (at most `N`) at `changes`, and a writable
        // word for the bad site; sleepable, with `ftrace_lock` held
        // (`_held`), as the arch layer requires. Each change moves a site
        // between `Target`s (their invariants), and the arch layer checks
        // that each site holds the call to `old` before it writes.
        let r = unsafe { rftrace_arch_apply(self.changes.as_ptr(), n, &mut bad) };
        kernel::error::to_result(r).map_err(|e| (e, bad))
    }
}

/// Call sites of code that does not run yet and is still writable (the
/// kernel's at boot, before other CPUs run; a module's the loader has not
/// started), which may be written without the live patching protocol.
///
/// # Invariants
///
/// The sorted addresses `0` are such sites for the life of the value.
pub(crate) struct UnrunSites<'a>(&'a [u64]);

impl<'a> UnrunSites<'a> {
    /// The sites at `ips`, sorted and unique.
    ///
    /// # Safety
    ///
    /// No CPU runs the code of the sites at `ips` while the value lives,
    /// and that code is writable.
    pub(crate) unsafe fn new(ips: &'a [u64]) -> Self {
        // INVARIANT: the contract.
        UnrunSites(ips)
    }

    /// The sites.
    pub(crate) fn ips(&self) -> &'a [u64] {
        self.0
    }

    /// Makes the `i`-th site a NOP: true when it wrote it, false when it
    /// was one, or an error (the site holds neither the compiler's call
    /// nor the NOP, or there is no `i`-th site).
    pub(crate) fn make_nop(&self, i: usize) -> Result<bool> {
        let ip = *self.0.get(i).ok_or(EINVAL)?;
        // SAFETY: a site of code no CPU runs yet, still writable (the
        // invariants); the arch layer checks its bytes before it writes.
        let r = unsafe { rftrace_arch_init_site(ip, 0) };
        // Not `to_result()`: a traced function of the kernel crate, once
        // for each site of a module being loaded under the tracer.
        if r < 0 {
            return Err(Error::from_errno(r));
        }
        Ok(r > 0)
    }
}

/// Points the shared trampolines' callback call at `f` (`text_mutex` is
/// taken here).
pub(crate) fn point_shared(f: bindings::ftrace_func_t) -> Result {
    let _t = TextGuard::lock();
    // SAFETY: `text_mutex` is held, as the arch layer requires; `f` is a
    // callback of the C type the trampolines call.
    kernel::error::to_result(unsafe { bindings::ftrace_update_ftrace_func(f) })
}

/// Has the arch layer create or update the trampoline of a registered
/// ops (it calls `ftrace_ops_get_func()`).
pub(crate) fn update_trampoline(_held: &Held, ops: OpsRef<'_>) {
    // SAFETY: a live ops, under `ftrace_lock` as the arch layer requires;
    // it changes the ops' trampoline fields, which the core reads
    // atomically.
    unsafe { bindings::arch_ftrace_update_trampoline(ops.as_ptr()) };
}

/// The most members of a group trampoline (its slots).
pub(crate) const GROUP_MEMBERS: usize = 8;

/// The fewest members of a group. With the literal, an ops alone on a
/// site whose callback needs the core's recursion guard or RCU check
/// cannot be named by the literal (the shared trampoline calls its
/// callback bare); a group of one, whose callback calls the assist
/// callback, costs a call where the list would test every registered ops.
/// Without it, such an ops has a trampoline of its own, and a group
/// serves only several ops.
pub(crate) const GROUP_MIN: usize = if CALL_OPS { 1 } else { 2 };

/// Gives the group ops `ops` (the core's own, not yet published) a
/// trampoline that calls each of `members` (registered ops, at most
/// [`GROUP_MEMBERS`]) as its own trampoline would.
pub(crate) fn group_trampoline(_held: &Held, ops: OpsRef<'_>, members: &[OpsRef<'_>]) -> Result {
    let mut m = [Member { func: 0, ops: 0 }; GROUP_MEMBERS];
    let n = members.len();
    for (d, o) in m.iter_mut().zip(members) {
        let f = crate::ops::assist::ftrace_ops_get_func(*o).ok_or(EINVAL)?;
        *d = Member {
            func: f as *const () as u64,
            ops: o.as_ptr() as u64,
        };
    }
    let m = m.get(..n).ok_or(EINVAL)?;
    // SAFETY: `ops` is live and unpublished, under `ftrace_lock` as the
    // arch layer requires; the members are registered ops with the
    // callbacks their own trampolines call, and they outlive the group's
    // trampoline: a member that goes first moves every site off the group
    // and retires it (`groups::take_with`, `groups::retire`), and a
    // member's changed callback is written into it (`groups::refresh`).
    let r = unsafe { rftrace_arch_group_trampoline(ops.as_ptr(), m.as_ptr(), m.len()) };
    kernel::error::to_result(r)
}

/// The function the trampoline of `ops` calls (0: none or not known).
pub(crate) fn trampoline_func(_held: &Held, ops: OpsRef<'_>) -> u64 {
    // SAFETY: a live ops under `ftrace_lock`; the arch layer only reads
    // its trampoline's bytes.
    unsafe { bindings::arch_ftrace_trampoline_func(ops.as_ptr(), ptr::null_mut()) as u64 }
}

/// Tells perf about the trampoline the arch layer made for `ops`, as the C
/// core does: when it appears, a KSYMBOL record (`ftrace_trampoline`,
/// out-of-line code, listed in kallsyms by then) and a TEXT_POKE record of
/// its whole body, so that a decoder of an instruction trace knows the
/// bytes; when it goes (`gone`), the KSYMBOL unregister record, before it
/// is freed.
#[cfg(CONFIG_PERF_EVENTS)]
pub(crate) fn perf_trampoline(_held: &Held, ops: OpsRef<'_>, gone: bool) {
    let (at, len) = ops.trampoline();
    if at == 0 || !ops.has(F_ALLOC_TRAMP) {
        return;
    }
    let Ok(len32) = u32::try_from(len) else {
        return;
    };
    // SAFETY: `at..at + len` is the ops' trampoline, allocated and written
    // by the arch layer (`F_ALLOC_TRAMP`) and freed only by
    // `retire_dynamic`, after its unregister record; the lock, held,
    // serializes both. perf copies the bytes and the name (a static
    // string) into its records.
    unsafe {
        bindings::perf_event_ksymbol(
            bindings::perf_record_ksymbol_type_PERF_RECORD_KSYMBOL_TYPE_OOL as u16,
            at,
            len32,
            gone,
            crate::base::sys::TRAMPOLINE_SYM.as_char_ptr(),
        );
        if !gone {
            let body = at as *const c_void;
            bindings::perf_event_text_poke(body, ptr::null(), 0, body, len as usize);
        }
    }
}

#[cfg(not(CONFIG_PERF_EVENTS))]
pub(crate) fn perf_trampoline(_held: &Held, _ops: OpsRef<'_>, _gone: bool) {}

/// Dynamic ops (ones their owners may free once unregistered, or the
/// core's own groups) have left the list and their sites: waits until no
/// CPU or task can still be in their trampolines or callbacks, then frees
/// the trampolines the arch layer made for them (sleeps). Returns whether
/// it freed them.
///
/// The trampolines stay if tracing died, or for an ops listed again: an
/// update that fails either wrote nothing (sites still call what they
/// called) or kills tracing, and sites may then still call them.
/// Otherwise no site calls them: every update plans only listed ops' and
/// their groups' trampolines, and an ops' groups are retired with it.
pub(crate) fn retire_dynamic<'a>(held: &Held, ops: impl Iterator<Item = OpsRef<'a>>) -> bool {
    wait_trampolines_left();
    free_trampolines(held, ops)
}

/// Waits until every CPU and task that was in a trampoline or callback
/// when this was called has left it (sleeps; seconds at times). The
/// first wait is for every CPU that may be in a callback with preemption
/// off or RCU not watching; the second for every task preempted on a
/// trampoline.
pub(crate) fn wait_trampolines_left() {
    if crate::base::mutant::is(crate::base::mutant::Mutant::SkipTasksWait) {
        return;
    }
    crate::base::sys::wait_cpus_scheduled();
    crate::base::sys::synchronize_rcu_tasks();
}

/// The second half of [`retire_dynamic`]: frees the trampolines of `ops`
/// that are not listed, which no site calls and which no CPU or task has
/// been in since a [`wait_trampolines_left`] that began after they left
/// their sites and the lookups; whether it freed them (not if tracing
/// died).
pub(crate) fn free_trampolines<'a>(held: &Held, ops: impl Iterator<Item = OpsRef<'a>>) -> bool {
    if dead() {
        return false;
    }
    for o in ops {
        if crate::ops::registry::list(held).any(|l| l == o) {
            continue;
        }
        perf_trampoline(held, o, true);
        // SAFETY: a live ops under `ftrace_lock`; no site calls its
        // trampoline (not listed, tracing alive: see above) and no CPU or
        // task runs it (the waits); the arch layer frees only a
        // trampoline it allocated (`F_ALLOC_TRAMP`).
        unsafe { bindings::arch_ftrace_trampoline_free(o.as_ptr()) };
    }
    true
}
