// SPDX-License-Identifier: GPL-2.0

// The x86_64 per-CPU reads the tracing hot path inlines: the current task
// and the preempt count, both in `pcpu_hot`, read through `%gs` as the C
// `current` and `preempt_count()` do. Compiled into the generic core
// (`crate::base::archdep::percpu`, by `include!`: no inner attributes
// here), so the reads inline there instead of being calls to C helpers.

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

/// `preempt_disable_notrace()`: one level more in this CPU's preempt
/// count where the kernel counts (CONFIG_PREEMPT_COUNT), else only a
/// compiler barrier, as in C.
#[inline(always)]
pub(crate) fn preempt_disable() {
    #[cfg(CONFIG_PREEMPT_COUNT)]
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

/// The call of `preempt_enable()`'s reschedule: the static call's
/// trampoline with PREEMPT_DYNAMIC, else the thunk.
#[cfg(CONFIG_PREEMPT_DYNAMIC)]
macro_rules! PREEMPT_CALL {
    () => {
        "call __SCT__preempt_schedule_notrace"
    };
}
#[cfg(not(CONFIG_PREEMPT_DYNAMIC))]
macro_rules! PREEMPT_CALL {
    () => {
        "call preempt_schedule_notrace_thunk"
    };
}

/// `preempt_enable_notrace()`. With CONFIG_PREEMPTION it reschedules if
/// that was the last level and a reschedule is pending (the count word
/// reads 0 then), through what C's `__preempt_schedule_notrace()` calls:
/// the static call of the preemption model chosen at boot
/// (CONFIG_PREEMPT_DYNAMIC: none or voluntary make it a plain return),
/// else the thunk that keeps every register. Without CONFIG_PREEMPTION
/// it only drops the level; without CONFIG_PREEMPT_COUNT there is none.
#[inline(always)]
pub(crate) fn preempt_enable() {
    compiler_fence(Ordering::SeqCst);
    #[cfg(all(CONFIG_PREEMPT_COUNT, not(CONFIG_PREEMPTION)))]
    // SAFETY: undoes one `preempt_disable()`.
    unsafe {
        core::arch::asm!(
            "sub dword ptr gs:[rip + {hot} + {off}], 1",
            hot = sym bindings::pcpu_hot,
            off = const PREEMPT_COUNT,
            options(nostack),
        )
    };
    #[cfg(CONFIG_PREEMPTION)]
    // SAFETY: undoes one `preempt_disable()`; the callee (thunk or static
    // call trampoline to it) saves and restores all registers, so only
    // the flags change; it may schedule, which the compiler sees as a call
    // that reads and writes memory.
    unsafe {
        core::arch::asm!(
            "sub dword ptr gs:[rip + {hot} + {off}], 1",
            "jnz 2f",
            PREEMPT_CALL!(),
            "2:",
            hot = sym bindings::pcpu_hot,
            off = const PREEMPT_COUNT,
        )
    };
}
