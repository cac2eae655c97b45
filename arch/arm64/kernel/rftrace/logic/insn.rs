// SPDX-License-Identifier: GPL-2.0
//! arm64 instructions of a call site. With `-fpatchable-function-entry=4,2`
//! and the per-call-site ops, a function starts as
//!
//! ```text
//! func-8:  NOP        \ the ops literal: the 8-byte address of the
//! func-4:  NOP        / ftrace_ops the trampoline calls for this site
//! func+0:  [BTI c]
//!          NOP        -> MOV X9, X30 (once, at boot: the return address)
//! site:    NOP        -> BL trampoline, or NOP again
//! ```
//!
//! A site is one 4-byte instruction, written with a single-copy atomic
//! store: no breakpoint protocol as on x86_64.

/// The bytes of an instruction.
pub const INSN_SIZE: u64 = 4;

/// `NOP`.
pub const NOP: u32 = 0xd503_201f;

/// `MOV X9, X30` (`ORR X9, XZR, X30`): keeps the traced function's
/// return address for the trampoline, which the `BL` after it replaces
/// in X30.
pub const MOV_X9_LR: u32 = 0xaa1e_03e9;

/// `BTI c`.
pub const BTI_C: u32 = 0xd503_245f;

const BL: u32 = 0x9400_0000;
const B: u32 = 0x1400_0000;
const OP_MASK: u32 = 0xfc00_0000;
const IMM26: u32 = 0x03ff_ffff;

/// How far a `B` or `BL` reaches: a signed 26-bit count of instructions,
/// [-128 MiB, +128 MiB).
pub const BRANCH_RANGE: i64 = 1 << 27;

/// The branch offset from `pc` to `target`, if a `B`/`BL` at `pc` reaches
/// it: both instruction-aligned, within [`BRANCH_RANGE`].
fn offset(pc: u64, target: u64) -> Option<u32> {
    if pc % INSN_SIZE != 0 || target % INSN_SIZE != 0 {
        return None;
    }
    let d = target.wrapping_sub(pc) as i64;
    if !(-BRANCH_RANGE..BRANCH_RANGE).contains(&d) {
        return None;
    }
    Some(((d >> 2) as u32) & IMM26)
}

/// `BL target` at `pc`, or `None` out of reach (a module's site then
/// goes through its PLT) or misaligned.
pub fn bl(pc: u64, target: u64) -> Option<u32> {
    offset(pc, target).map(|imm| BL | imm)
}

/// `B target` at `pc`, or `None` out of reach or misaligned.
pub fn b(pc: u64, target: u64) -> Option<u32> {
    offset(pc, target).map(|imm| B | imm)
}

/// What the word at a site is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// `NOP`.
    Nop,
    /// `BL` to this address.
    Call(u64),
    /// `B` to this address.
    Jump(u64),
    /// Anything else.
    Other,
}

/// Decodes the word `w` found at `pc`.
pub fn decode(pc: u64, w: u32) -> Decoded {
    if w == NOP {
        return Decoded::Nop;
    }
    let target = || {
        // Sign-extend the 26-bit count, in bytes.
        let imm = (((w & IMM26) << 6) as i32 >> 6) as i64 * INSN_SIZE as i64;
        pc.wrapping_add(imm as u64)
    };
    match w & OP_MASK {
        BL => Decoded::Call(target()),
        B => Decoded::Jump(target()),
        _ => Decoded::Other,
    }
}

/// Where the ops literal of the site at `ip` lies: the 8-aligned pair of
/// NOPs before the function, 12 bytes before the site without `BTI c`,
/// 16 with it (C's `ALIGN_DOWN(ip - 12, 8)`).
pub fn literal_of(ip: u64) -> u64 {
    ip.wrapping_sub(12) & !7
}

/// The most bytes of a site's [`Window`].
pub const WINDOW_MAX: usize = 20;

/// How many bytes a site's [`Window`] spans: from its literal to the end
/// of its instruction (16, or 20 with `BTI c`), for a 4-aligned `ip`.
pub fn window_len(ip: u64) -> usize {
    (ip.wrapping_add(INSN_SIZE).wrapping_sub(literal_of(ip))) as usize
}

/// What a site's bytes hold, read in one go from its literal on: the
/// literal, the instruction before the site and the site's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// The ops literal.
    pub literal: u64,
    /// The instruction before the site (`MOV X9, X30` once set).
    pub before: u32,
    /// The site's instruction.
    pub site: u32,
}

/// Reads the [`Window`] out of `bytes`, the [`window_len`] bytes from the
/// site's literal on (little-endian), or `None` when they are fewer than
/// a literal and two instructions.
pub fn parse_window(bytes: &[u8]) -> Option<Window> {
    let n = bytes.len();
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    if n < 16 {
        return None;
    }
    Some(Window {
        literal: u64::from_le_bytes(bytes.get(..8)?.try_into().ok()?),
        before: word(n - 8)?,
        site: word(n - 4)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_words() {
        // `bl .+8` and `b .-4`, as an assembler encodes them.
        assert_eq!(bl(0x1000, 0x1008), Some(0x9400_0002));
        assert_eq!(b(0x1000, 0x0ffc), Some(0x17ff_ffff));
        assert_eq!(decode(0x1000, 0x9400_0002), Decoded::Call(0x1008));
        assert_eq!(decode(0x1000, 0x17ff_ffff), Decoded::Jump(0x0ffc));
        assert_eq!(decode(0x1000, NOP), Decoded::Nop);
        assert_eq!(decode(0x1000, MOV_X9_LR), Decoded::Other);
        assert_eq!(decode(0x1000, BTI_C), Decoded::Other);
    }

    #[test]
    fn reach() {
        let pc = 0xffff_8000_8000_0000u64;
        assert!(bl(pc, pc + (BRANCH_RANGE as u64) - 4).is_some());
        assert!(bl(pc, pc + BRANCH_RANGE as u64).is_none());
        assert!(bl(pc, pc - BRANCH_RANGE as u64).is_some());
        assert!(bl(pc, pc - BRANCH_RANGE as u64 - 4).is_none());
        assert!(bl(pc + 2, pc + 8).is_none());
        assert!(bl(pc, pc + 6).is_none());
    }

    #[test]
    fn literal_before_the_function() {
        let func = 0xffff_8000_8001_0040u64;
        // No BTI: the site is func+4; with BTI c, func+8.
        assert_eq!(literal_of(func + 4), func - 8);
        assert_eq!(literal_of(func + 8), func - 8);
    }

    proptest! {
        #[test]
        fn branch_round_trips(pc in any::<u64>(), d in -(1i64 << 25)..(1i64 << 25)) {
            let pc = pc & !3;
            let target = pc.wrapping_add((d * 4) as u64);
            prop_assert_eq!(bl(pc, target).map(|w| decode(pc, w)), Some(Decoded::Call(target)));
            prop_assert_eq!(b(pc, target).map(|w| decode(pc, w)), Some(Decoded::Jump(target)));
        }
    }

    #[test]
    fn windows_with_and_without_bti() {
        // Function at 0x1000, literal at 0xff8.
        let plain = 0x1004;
        let bti = 0x1008;
        assert_eq!((window_len(plain), window_len(bti)), (16, 20));
        assert!(window_len(bti) <= WINDOW_MAX);
        let mut b = std::vec::Vec::new();
        b.extend_from_slice(&0x1122_3344_5566_7788u64.to_le_bytes());
        b.extend_from_slice(&MOV_X9_LR.to_le_bytes());
        b.extend_from_slice(&NOP.to_le_bytes());
        let w = Window { literal: 0x1122_3344_5566_7788, before: MOV_X9_LR, site: NOP };
        assert_eq!(parse_window(&b), Some(w));
        let mut with_bti = b.clone();
        with_bti.splice(8..8, BTI_C.to_le_bytes());
        assert_eq!(parse_window(&with_bti), Some(w));
        assert_eq!(parse_window(&b[..12]), None);
    }
}

