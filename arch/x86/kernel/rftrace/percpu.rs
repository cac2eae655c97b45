// SPDX-License-Identifier: GPL-2.0

//! The x86_64 per-CPU reads the tracing hot path inlines: the current task
//! and the preempt count, both in `pcpu_hot`, read through `%gs` as the C
//! `current` and `preempt_count()` do. Compiled into the generic core
//! (kernel/trace/rftrace) by path, so the reads inline there instead of
//! being calls to C helpers.

use core::sync::atomic::{compiler_fence, Ordering};
use kernel::bindings;

/// Offset of the preempt count in `pcpu_hot`.
const PREEMPT_COUNT: usize = core::mem::offset_of!(
    bindings::pcpu_hot__bindgen_ty_1__bindgen_ty_1,
    preempt_count
);

/// The current task (C's `current`).
#[inline(always)]
pub(crate) fn current() -> *mut bindings::task_struct {
    let t: *mut bindings::task_struct;
    // SAFETY: `pcpu_hot` is a per-CPU variable: its symbol is an offset in
    // the zero-based x86_64 per-CPU area that `%gs` points at; the task
    // pointer is its first field. The read has no side effect.
    unsafe {
        core::arch::asm!(
            "mov {t}, qword ptr gs:[rip + {hot}]",
            t = out(reg) t,
            hot = sym bindings::pcpu_hot,
            options(nostack, preserves_flags, readonly),
        )
    };
    t
}

/// `preempt_count()`: the count without x86's inverted need-resched bit.
#[inline(always)]
pub(crate) fn preempt_count() -> u32 {
    let pc: u32;
    // SAFETY: as in `current()`, a read of this CPU's preempt count.
    unsafe {
        core::arch::asm!(
            "mov {pc:e}, dword ptr gs:[rip + {hot} + {off}]",
            pc = out(reg) pc,
            hot = sym bindings::pcpu_hot,
            off = const PREEMPT_COUNT,
            options(nostack, preserves_flags, readonly),
        )
    };
    pc & !bindings::PREEMPT_NEED_RESCHED
}

/// `preempt_disable_notrace()`.
#[inline(always)]
pub(crate) fn preempt_disable() {
    // SAFETY: one increment of this CPU's preempt count, undone by
    // `preempt_enable()`.
    unsafe {
        core::arch::asm!(
            "add dword ptr gs:[rip + {hot} + {off}], 1",
            hot = sym bindings::pcpu_hot,
            off = const PREEMPT_COUNT,
            options(nostack),
        )
    };
    compiler_fence(Ordering::SeqCst);
}

/// `preempt_enable_notrace()`: reschedules if that was the last level and
/// a reschedule is pending (the count word reads 0 then), through the
/// thunk that keeps every register, as C's `__preempt_schedule_notrace()`.
#[inline(always)]
pub(crate) fn preempt_enable() {
    compiler_fence(Ordering::SeqCst);
    // SAFETY: undoes one `preempt_disable()`; the thunk saves and restores
    // all registers, so only the flags change; it may schedule, which the
    // compiler sees as a call that reads and writes memory.
    unsafe {
        core::arch::asm!(
            "sub dword ptr gs:[rip + {hot} + {off}], 1",
            "jnz 2f",
            "call {thunk}",
            "2:",
            hot = sym bindings::pcpu_hot,
            off = const PREEMPT_COUNT,
            thunk = sym bindings::preempt_schedule_notrace_thunk,
        )
    };
}
