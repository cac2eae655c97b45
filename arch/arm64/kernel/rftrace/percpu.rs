// SPDX-License-Identifier: GPL-2.0

// The arm64 reads the tracing hot path inlines: the current task, which
// arm64 keeps in `sp_el0` while in the kernel, and the preempt count,
// which is per task, in its `thread_info` (the first field of the
// `task_struct`), as C's `current` and `preempt_count()` read them.
// Compiled into the generic core (`crate::base::archdep::percpu`, by
// `include!`: no inner attributes here).

use crate::base::layout::c;
use core::sync::atomic::{compiler_fence, Ordering};
use kernel::bindings;

/// The current task (C's `current`).
#[inline(always)]
pub(crate) fn current() -> *mut bindings::task_struct {
    let t: *mut bindings::task_struct;
    // SAFETY: in the kernel, `sp_el0` holds the current task (arm64's
    // `get_current()`); reading it has no side effect.
    unsafe {
        core::arch::asm!(
            "mrs {t}, sp_el0",
            t = out(reg) t,
            options(nomem, nostack, preserves_flags),
        )
    };
    t
}

/// The current task's preempt count word: the count (low half) and the
/// inverted need-resched flag (high half) together.
#[inline(always)]
fn word() -> *mut u64 {
    // The thread_info is at the start of the task (THREAD_INFO_IN_TASK).
    current().cast::<u8>().wrapping_add(c::TI_PREEMPT_WORD).cast()
}

/// The count alone.
#[inline(always)]
fn count() -> *mut u32 {
    current().cast::<u8>().wrapping_add(c::TI_PREEMPT_COUNT).cast()
}

/// `preempt_count()`: the count, without the need-resched flag.
#[inline(always)]
pub(crate) fn preempt_count() -> u32 {
    // SAFETY: the current task's count, which only this task writes (an
    // interrupt that does undoes it before returning); a volatile read
    // as C's READ_ONCE.
    unsafe { count().read_volatile() }
}

/// `preempt_disable_notrace()`: one level more in the current task's
/// count where the kernel counts (CONFIG_PREEMPT_COUNT), else only a
/// compiler barrier, as in C.
#[inline(always)]
pub(crate) fn preempt_disable() {
    #[cfg(CONFIG_PREEMPT_COUNT)]
    // SAFETY: as in `preempt_count()`; the increment is undone by
    // `preempt_enable()`.
    unsafe {
        count().write_volatile(count().read_volatile().wrapping_add(1))
    };
    compiler_fence(Ordering::SeqCst);
}

/// `preempt_enable_notrace()`: one level less; with CONFIG_PREEMPTION, a
/// reschedule if that was the last level and one is pending (the whole
/// word then reads 0: the flag is inverted), through what C's
/// `__preempt_schedule_notrace()` calls.
#[inline(always)]
pub(crate) fn preempt_enable() {
    compiler_fence(Ordering::SeqCst);
    #[cfg(CONFIG_PREEMPT_COUNT)]
    // SAFETY: as in `preempt_disable()`, whose level this drops; only the
    // count half is written, so a need-resched flag an interrupt set
    // meanwhile stays.
    let pc = unsafe {
        let pc = word().read_volatile().wrapping_sub(1);
        count().write_volatile(pc as u32);
        pc
    };
    #[cfg(CONFIG_PREEMPTION)]
    // SAFETY: a read as in `preempt_count()` (the word again: an interrupt
    // may have cleared the flag since); the call may schedule, which
    // preemption now allows.
    unsafe {
        if pc == 0 || word().read_volatile() == 0 {
            #[cfg(CONFIG_PREEMPT_DYNAMIC)]
            bindings::dynamic_preempt_schedule_notrace();
            #[cfg(not(CONFIG_PREEMPT_DYNAMIC))]
            bindings::preempt_schedule_notrace();
        }
    }
    #[cfg(all(CONFIG_PREEMPT_COUNT, not(CONFIG_PREEMPTION)))]
    let _ = pc;
}
