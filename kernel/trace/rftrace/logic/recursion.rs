// SPDX-License-Identifier: GPL-2.0
//! The arithmetic of the tracing recursion guard
//! (include/linux/trace_recursion.h): which bit of a task's
//! `trace_recursion` word a callback takes, given the context the CPU is
//! in, so that the hot path can inline the guard instead of calling the C
//! helpers.
//!
//! A callback running in a context (normal, softirq, hardirq, NMI) takes
//! that context's bit. If the bit is already taken, either the callback
//! recursed or an interrupt arrived before the preempt count said so; the
//! "transition" bit lets one such entry through, a second one is refused.

/// `preempt_count()` bits (include/linux/preempt.h).
pub const SOFTIRQ_OFFSET: u32 = 1 << 8;
/// Hard interrupt nesting count.
pub const HARDIRQ_MASK: u32 = 0xf << 16;
/// NMI nesting count.
pub const NMI_MASK: u32 = 0xf << 20;

/// First bit of the function callbacks' group (`TRACE_FTRACE_START`).
pub const FTRACE_START: u32 = 0;
/// First bit of the list dispatcher's group (`TRACE_LIST_START`).
pub const LIST_START: u32 = 5;

const CTX_NORMAL: u32 = 3;
const CTX_TRANSITION: u32 = 4;

/// 0 normal, 1 softirq, 2 hardirq, 3 NMI (`interrupt_context_level()`).
#[inline(always)]
pub const fn context_level(pc: u32) -> u32 {
    (pc & NMI_MASK != 0) as u32
        + (pc & (NMI_MASK | HARDIRQ_MASK) != 0) as u32
        + (pc & (NMI_MASK | HARDIRQ_MASK | SOFTIRQ_OFFSET) != 0) as u32
}

/// The bit of `val` (a task's `trace_recursion`) a callback of the group
/// starting at `start` takes in the context of preempt count `pc`, or
/// `None` when it must not run (recursion).
#[inline(always)]
pub const fn take_bit(val: u64, pc: u32, start: u32) -> Option<u32> {
    let bit = CTX_NORMAL - context_level(pc) + start;
    if val & (1 << bit) == 0 {
        return Some(bit);
    }
    let t = CTX_TRANSITION + start;
    if val & (1 << t) != 0 {
        None
    } else {
        Some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn levels() {
        assert_eq!(context_level(0), 0);
        assert_eq!(context_level(3), 0); // preemption disabled: still normal
        assert_eq!(context_level(SOFTIRQ_OFFSET), 1);
        assert_eq!(context_level(2 * SOFTIRQ_OFFSET), 0); // bh disabled only
        assert_eq!(context_level(1 << 16), 2);
        assert_eq!(context_level((1 << 16) | SOFTIRQ_OFFSET), 2);
        assert_eq!(context_level(1 << 20), 3);
        assert_eq!(context_level(0x8000_0000), 0); // x86 need-resched bit
    }

    #[test]
    fn bits() {
        assert_eq!(take_bit(0, 0, FTRACE_START), Some(3));
        assert_eq!(take_bit(0, 1 << 20, FTRACE_START), Some(0));
        assert_eq!(take_bit(1 << 3, 0, FTRACE_START), Some(4));
        assert_eq!(take_bit((1 << 3) | (1 << 4), 0, FTRACE_START), None);
        assert_eq!(take_bit(0, 0, LIST_START), Some(8));
        assert_eq!(take_bit(1 << 3, 0, LIST_START), Some(8));
    }

    proptest! {
        #[test]
        fn taken_bit_was_free(val in any::<u64>(), pc in any::<u32>(), list in any::<bool>()) {
            let start = if list { LIST_START } else { FTRACE_START };
            match take_bit(val, pc, start) {
                Some(b) => {
                    prop_assert_eq!(val & (1 << b), 0);
                    prop_assert!(b >= start && b < start + 5);
                }
                None => {
                    let ctx = 3 - context_level(pc) + start;
                    prop_assert!(val & (1 << ctx) != 0 && val & (1 << (start + 4)) != 0);
                }
            }
        }
    }
}
