// SPDX-License-Identifier: GPL-2.0

//! What the generic crate takes from the architecture at compile time,
//! compiled in from the architecture's directory
//! (arch/$(SRCARCH)/kernel/rftrace/, the `RFTRACE_ARCH_DIR` the Makefile
//! exports) so that the hot path inlines it, as C inlines its
//! `<asm/ftrace.h>`: [`percpu`], the current task and the preempt count;
//! [`defs`], the call sites' geometry, the trampolines' register frame
//! and the architecture's name. The calls between the two crates are
//! [`crate::ops::archif`]; the instruction size is the kernel's
//! `MCOUNT_INSN_SIZE`, and whether a full-regs trampoline exists its
//! `CONFIG_DYNAMIC_FTRACE_WITH_REGS`.
//!
//! This is the one module of the generic crate that depends on the
//! architecture. What each architecture must define, with its type, is
//! checked below, so a second architecture that misses an item fails here
//! rather than at a use.

use kernel::bindings::{ftrace_regs, task_struct};
use kernel::ffi::c_ulong;

/// The current task and the preempt count, read as C's `current` and
/// `preempt_count()` do.
pub(crate) mod percpu {
    include!(concat!(env!("RFTRACE_ARCH_DIR"), "/percpu.rs"));
}

/// The architecture's constants and register-frame accessors.
pub(crate) mod defs {
    include!(concat!(env!("RFTRACE_ARCH_DIR"), "/defs.rs"));
}

// The interface, item by item.
const _: fn() -> *mut task_struct = percpu::current;
const _: fn() -> u32 = percpu::preempt_count;
const _: fn() = percpu::preempt_disable;
const _: fn() = percpu::preempt_enable;
const _: &str = defs::NAME;
const _: Option<u64> = defs::MCOUNT_MAX_OFFSET;
const _: fn(u64) -> Option<u64> = defs::call_adjust;
const _: unsafe fn(*const ftrace_regs) -> bool = defs::has_pt_regs;
const _: unsafe fn(*mut ftrace_regs, c_ulong) = defs::set_direct_caller;
const _: unsafe fn(*const ftrace_regs) -> c_ulong = defs::return_value;
