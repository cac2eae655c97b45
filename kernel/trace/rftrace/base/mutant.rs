// SPDX-License-Identifier: GPL-2.0

//! Deliberate breaks of the core, for testing its tests
//! (`CONFIG_FTRACE_CORE_RUST_MUTANTS`, never in a kernel that ships).
//!
//! `make mutants` boots one kernel built with the option, switches one
//! break on at a time (the `rftrace_mutant` parameter,
//! `/sys/module/kernel/parameters/rftrace_mutant`, or the boot command
//! line) and runs the tests that must catch it. Without the option every
//! test here is a constant `false` and the breaks compile away.
//!
//! The numbers are shared with the trampolines (`trampolines_64.S`),
//! which test the same word for the register breaks.

use core::sync::atomic::{AtomicU32, Ordering};

/// One break of the core; its number is what `rftrace_mutant` holds.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(i32)]
pub(crate) enum Mutant {
    /// Drops one call of a callback in 64.
    DropOne = 1,
    /// Calls a callback twice.
    CallTwice = 2,
    /// Skips the RCU-tasks waits before a trampoline or ops is freed.
    SkipTasksWait = 3,
    /// The trampolines clobber a callee-saved register (`rbx`, one call
    /// in 256).
    ClobberCallee = 4,
    /// The trampolines clobber an argument register (`r9`, the sixth).
    ClobberArg = 5,
    /// `return_to_handler` clobbers the return value (bit 0 of `rax`).
    ClobberRet = 6,
    /// Plans every ops as if its filter were empty (every function).
    IgnoreFilter = 7,
    /// The graph return hook returns one frame's address too far out
    /// (the caller's caller).
    GraphWrongRet = 8,
    /// The graph return hook drops one return callback in 64.
    GraphDropRet = 9,
    /// A batch of site changes skips its last sync of the CPUs.
    SkipLastSync = 10,
    /// An update frees idle site groups without checking that no site
    /// calls them.
    FreeCalledGroup = 11,
    /// `kernel::ftrace` frees a registration the tracer may still call
    /// (rust/kernel/ftrace.rs tests the number itself).
    FreeLostRegistration = 12,
    /// The dispatcher finds no direct ops for a function in the direct-ops
    /// table: a direct call is lost where other ops share the site.
    DirectLost = 13,
    /// A graph ops' unregistration returns without waiting for the
    /// entries and returns that may still call it.
    SkipGraphWait = 14,
}

// The numbers the trampolines and the arch crate test for the breaks
// that only they make (they cannot name this type).
const _: () = assert!(
    Mutant::ClobberCallee as i32 == 4
        && Mutant::ClobberArg as i32 == 5
        && Mutant::ClobberRet as i32 == 6
        && Mutant::SkipLastSync as i32 == 10
        && Mutant::FreeLostRegistration as i32 == 12
);

/// How rare the breaks that hit one call in so many are.
const ONE_IN: u32 = 64;

/// The calls the one-in-[`ONE_IN`] breaks counted (touched only in a
/// mutants kernel with such a break on).
static COUNT: AtomicU32 = AtomicU32::new(0);

/// Whether break `m` is on. Hot path: a load and a compare in a mutants
/// kernel, `false` otherwise.
#[inline(always)]
pub(crate) fn is(m: Mutant) -> bool {
    #[cfg(CONFIG_FTRACE_CORE_RUST_MUTANTS)]
    return kernel::ftrace::mutant() == m as i32;
    #[cfg(not(CONFIG_FTRACE_CORE_RUST_MUTANTS))]
    {
        let _ = m;
        false
    }
}

/// Whether break `m` is on and hits this call (one in [`ONE_IN`]).
#[inline(always)]
pub(crate) fn hits(m: Mutant) -> bool {
    is(m) && COUNT.fetch_add(1, Ordering::Relaxed) % ONE_IN == 0
}
