// SPDX-License-Identifier: GPL-2.0

//! The generic core's entry points for the sites: a batch of changes
//! written live ([`rftrace_arch_apply`]), a site set before its code runs
//! ([`rftrace_arch_init_site`]) and a site group's callback
//! ([`rftrace_arch_group_trampoline`]).
//!
//! A site is its instruction (at `ip`), the `mov x9, x30` before it (set
//! once, at boot or module load) and its ops literal ([`literal_of`]).
//! Text is only ever written through the kernel's arm64 patching
//! functions, which map the page writable for the write, serialize the
//! writers (a raw spinlock) and do the cache maintenance.

use crate::archif::{self, Change};
use crate::insn::{literal_of, parse_window, window_len, Window, MOV_X9_LR, NOP, WINDOW_MAX};
use crate::steps::{resolve, word, writes, State, Write};
use core::ffi::c_void;
use core::ptr;
use kernel::bindings;
use kernel::ffi::{c_int, c_ulong};
use kernel::prelude::*;

/// The address of the common trampoline.
fn caller() -> u64 {
    bindings::ftrace_caller as *const () as u64
}

/// The core's stub ops and list ops (the literal of a site no ops wants,
/// and of one several ops want): their addresses only.
fn nop_ops() -> u64 {
    ptr::addr_of!(bindings::ftrace_nop_ops) as u64
}

fn list_ops() -> u64 {
    ptr::addr_of!(bindings::ftrace_list_ops) as u64
}

/// What the site at `ip` holds, from its literal to its instruction, in
/// one read, if it can be read.
fn read_window(ip: u64) -> Option<Window> {
    let mut buf = [0u8; WINDOW_MAX];
    let bytes = buf.get_mut(..window_len(ip))?;
    // SAFETY: reads `bytes.len()` bytes into `bytes` without faulting: an
    // address that is not mapped gives an error.
    let r = unsafe {
        bindings::copy_from_kernel_nofault(
            bytes.as_mut_ptr().cast(),
            literal_of(ip) as *const c_void,
            bytes.len(),
        )
    };
    if r != 0 {
        return None;
    }
    parse_window(bytes)
}

/// The literal of the site at `ip`, whose [`read_window`] succeeded
/// under the same hold of `ftrace_lock`.
///
/// # Safety
///
/// The window of `ip` was read under the caller's hold of `ftrace_lock`.
unsafe fn literal_now(ip: u64) -> u64 {
    // SAFETY: the literal is in text that the window read found mapped;
    // text with a site the core has a record of stays mapped while the
    // lock is held (a module's goes after `ftrace_release_mod()`, init
    // text after `ftrace_free_mem()`, both under the lock), and kernel
    // text is readable. 8-aligned: `literal_of`. Only this layer writes
    // it, under the same lock, so a plain read sees the last write.
    unsafe { ptr::read_volatile(literal_of(ip) as *const u64) }
}

/// The module PLT entry that reaches the common trampoline from the site
/// at `ip`, for a module placed out of a `BL`'s reach (none: the kernel's
/// own sites, which always reach it, or no PLT).
fn plt_for(ip: u64) -> Option<u64> {
    if crate::insn::bl(ip, caller()).is_some() {
        return None;
    }
    // SAFETY: looks the module up with preemption off; the site's module
    // stays while the core (`ftrace_lock`, held by the callers) has its
    // records, which it drops before the module's text goes.
    let plt = unsafe { bindings::rftrace_arm64_module_plt(ip as c_ulong) };
    (plt != 0).then_some(plt as u64)
}

/// The (instruction, literal) state the core's target for a site means.
fn state(ip: u64, target: u64, ops: u64) -> State {
    resolve(ip, target, ops, caller(), nop_ops(), list_ops())
}

/// The bytes the last failed check expected, for `ftrace_bug()`.
static mut EXPECTED: u32 = 0;

/// Records `w` as what a site was expected to hold, for `ftrace_bug()`.
fn expected(w: u32) {
    // SAFETY: written by the callers of this layer only, which the core
    // serializes (`ftrace_lock`); read by `ftrace_bug()`, which the core
    // calls next under the same lock.
    unsafe {
        EXPECTED = w.to_le();
        bindings::ftrace_expected = ptr::addr_of!(EXPECTED).cast();
    }
}

/// Performs one write of a site's change.
fn perform(w: Write) -> c_int {
    match w {
        // SAFETY: the literal of a live site (8 bytes, 8-aligned, in
        // kernel or module text), written through the patching map; it
        // names a live ops (the core's `Target` invariant) whichever CPU
        // reads it, before or after.
        Write::Literal { at, ops } => unsafe {
            bindings::aarch64_insn_write_literal_u64(at as *mut c_void, ops)
        },
        // SAFETY: the site's instruction, which the caller checked holds
        // the instruction the change starts from; `NOP` and `BL` may be
        // swapped under running CPUs; the call does the cache
        // maintenance.
        Write::Insn { at, word } => unsafe {
            bindings::aarch64_insn_patch_text_nosync(at as *mut c_void, word)
        },
    }
}

/// Applies `n` changes to live text: first checks that every site holds
/// the instruction its change starts from, then writes each site's
/// literal (when it changes) and then its instruction (when it changes).
/// Allocates nothing. On a mismatch nothing is written, `*bad_ip` names
/// the site, `ftrace_expected` points at the instruction that was
/// expected, and the result is `-EINVAL` (`-EFAULT` when the site cannot
/// be read). A failed write (never, for text the checks could read) stops
/// the batch with its error and site.
///
/// # Safety
///
/// `changes` points to `n` valid changes and `bad_ip` to a writable u64;
/// the context may sleep; the caller serializes call-site changes
/// (`ftrace_lock`), and every
/// target and ops of the changes stays while a site calls or names it.
#[no_mangle]
pub unsafe extern "C" fn rftrace_arch_apply(
    changes: *const Change,
    n: usize,
    bad_ip: *mut u64,
) -> c_int {
    if n == 0 {
        return 0;
    }
    // SAFETY: per the function's contract.
    let changes = unsafe { core::slice::from_raw_parts(changes, n) };
    let fail = |ip: u64, e: Error| {
        // SAFETY: per the function's contract.
        unsafe { *bad_ip = ip };
        e.to_errno()
    };
    for c in changes {
        let old = state(c.ip, c.old, c.old_ops);
        let Ok(want) = word(c.ip, old, plt_for(c.ip)) else {
            return fail(c.ip, EINVAL);
        };
        match read_window(c.ip) {
            None => return fail(c.ip, EFAULT),
            Some(w) if w.site != want => {
                expected(want);
                return fail(c.ip, EINVAL);
            }
            Some(_) => {}
        }
    }
    for c in changes {
        // SAFETY: the check above read its window, under the lock the
        // caller holds since (the contract).
        let lit = unsafe { literal_now(c.ip) };
        // What the literal holds, not what the change says it holds: a
        // write is skipped only when it would change nothing.
        let old = State {
            ops: lit,
            ..state(c.ip, c.old, c.old_ops)
        };
        let new = state(c.ip, c.new, c.new_ops);
        let Ok(ws) = writes(c.ip, old, new, plt_for(c.ip)) else {
            return fail(c.ip, EINVAL);
        };
        // The literal first (the order `writes` gives), so that a CPU
        // that takes the new instruction reads the new literal: each
        // write ends with the patching lock's release, and the next one
        // begins with its acquire.
        for w in ws.into_iter().flatten() {
            let r = perform(w);
            if r != 0 {
                return fail(c.ip, Error::from_errno(r));
            }
        }
        // A whole tracer's start writes tens of thousands of sites: let
        // others run between them (the context may sleep).
        // SAFETY: a sleepable context (the contract).
        unsafe { bindings::rftrace_cond_resched() };
    }
    // SAFETY: a flag set once at boot, before any CPU but the first runs.
    if unsafe { bindings::rftrace_text_poke_twice() } {
        // SAFETY: the batch just written, under the caller's hold of the
        // lock, in a context that may sleep (the contract).
        if let Err((ip, e)) = unsafe { write_again(changes) } {
            return fail(ip, e);
        }
    }
    0
}

/// The harness's `text_poke_twice` (twice.c, for guests under
/// multi-threaded TCG, which can keep running code it translated from a
/// word a store was replacing): once every CPU has taken an interrupt
/// after the batch `changes`, so that none is in the middle of a
/// translation, writes each site's instruction again with the word it now
/// holds, which drops any translation made from an old word, and has
/// every CPU take an interrupt again. On a failure, the site and the
/// error.
///
/// # Safety
///
/// `changes` is the batch [`rftrace_arch_apply`] just wrote, under the
/// same hold of `ftrace_lock`; the context may sleep.
unsafe fn write_again(changes: &[Change]) -> core::result::Result<(), (u64, Error)> {
    // SAFETY: the context may sleep (the contract).
    unsafe { bindings::rftrace_kick_all_cpus() };
    for c in changes {
        let w = read_window(c.ip).ok_or((c.ip, EFAULT))?;
        let r = perform(Write::Insn {
            at: c.ip,
            word: w.site,
        });
        if r != 0 {
            return Err((c.ip, Error::from_errno(r)));
        }
    }
    // SAFETY: as above.
    unsafe { bindings::rftrace_kick_all_cpus() };
    Ok(())
}

/// Sets a site of code that does not run yet (the kernel at boot, a
/// module being loaded) to the NOP: its literal names the stub ops, the
/// instruction before it becomes `mov x9, x30` (which the common
/// trampoline relies on), after checking that the site and that
/// instruction hold the compiler's NOPs (or what this function wrote).
/// Returns 1 when it wrote, 0 when the site already was set, or an
/// error; a site asked to call anything (`target` not 0) is refused.
///
/// # Safety
///
/// No CPU executes the site's code yet.
#[no_mangle]
pub unsafe extern "C" fn rftrace_arch_init_site(ip: u64, target: u64) -> c_int {
    if target != 0 {
        return EINVAL.to_errno();
    }
    let before = ip.wrapping_sub(crate::insn::INSN_SIZE);
    let Some(Window {
        literal: lit,
        before: mov,
        site,
    }) = read_window(ip)
    else {
        return EFAULT.to_errno();
    };
    if site != NOP {
        expected(NOP);
        return EINVAL.to_errno();
    }
    if mov != NOP && mov != MOV_X9_LR {
        expected(NOP);
        return EINVAL.to_errno();
    }
    let mut wrote = 0;
    for w in [
        (lit != nop_ops()).then_some(Write::Literal {
            at: literal_of(ip),
            ops: nop_ops(),
        }),
        (mov != MOV_X9_LR).then_some(Write::Insn {
            at: before,
            word: MOV_X9_LR,
        }),
    ]
    .into_iter()
    .flatten()
    {
        let r = perform(w);
        if r != 0 {
            return r;
        }
        wrote = 1;
    }
    wrote
}

/// Gives the site group `ops` (the core's own, not yet published) a
/// callback that calls the `n` members at `members` (no trampoline: the
/// sites' literals name the group's ops; see [`crate::groups`]).
///
/// # Safety
///
/// `ops` is a valid ops, not published, and `members` points to `n`
/// members whose ops and callbacks outlive the group (the generic core's
/// group rules), under `ftrace_lock`.
#[no_mangle]
pub unsafe extern "C" fn rftrace_arch_group_trampoline(
    ops: *mut bindings::ftrace_ops,
    members: *const archif::Member,
    n: usize,
) -> c_int {
    // SAFETY: the function's contract.
    unsafe { crate::groups::make(ops, members, n) }
}

// The functions the generic core calls have the types it declares them
// with (archif.rs).
const _: (archif::ApplyFn, archif::InitSiteFn, archif::GroupFn) = (
    rftrace_arch_apply,
    rftrace_arch_init_site,
    rftrace_arch_group_trampoline,
);
