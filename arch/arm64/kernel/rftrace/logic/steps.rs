// SPDX-License-Identifier: GPL-2.0
//! The writes that take an arm64 call site from one state to another.
//!
//! A site's state is its instruction (a `NOP`, or a `BL` to a trampoline)
//! and its ops literal: the `ftrace_ops` the common trampoline loads and
//! calls. While the site's instruction is a `BL`, the literal names an
//! ops that lives (the list ops, a group's, or the one ops on the site),
//! so that any CPU that reaches the common trampoline through the site
//! finds something to call; a `NOP` keeps the literal it had (see
//! [`writes`]). The literal is written first, the instruction after it: a
//! CPU between the two runs the old instruction with the new literal,
//! which the common trampoline accepts (any live ops) and a direct
//! trampoline ignores; a CPU that runs the new instruction finds the new
//! literal. C's arm64 layer keeps the same order.

use crate::insn::{bl, literal_of, NOP};

/// The state of one site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct State {
    /// The trampoline the site's `BL` calls, or `None`: a `NOP`.
    pub call: Option<u64>,
    /// The ops literal: the address of an `ftrace_ops`.
    pub ops: u64,
}

/// One write to text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Write {
    /// The 8-byte literal at `at` becomes `ops`.
    Literal { at: u64, ops: u64 },
    /// The instruction at `at` becomes `word`.
    Insn { at: u64, word: u32 },
}

/// Why a site cannot take the state asked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The trampoline is out of a `BL`'s reach from the site and no PLT
    /// entry for it was given (a module's site needs its PLT).
    OutOfRange,
}

/// The instruction of `state` at `ip`: `via` is the module PLT entry
/// that branches to the state's trampoline, where the site has one.
pub fn word(ip: u64, state: State, via: Option<u64>) -> Result<u32, Error> {
    match state.call {
        None => Ok(NOP),
        Some(t) => bl(ip, t)
            .or_else(|| via.and_then(|p| bl(ip, p)))
            .ok_or(Error::OutOfRange),
    }
}

/// The writes, in order, that take the site at `ip` from `old` to `new`
/// (`via`: a PLT entry reaching `new`'s trampoline, for a module's
/// site): the literal first if it changes, then the instruction if it
/// changes; none when both stay. Nothing is written when the new
/// instruction cannot be made.
///
/// A site that becomes a `NOP` keeps its literal: only a `BL` leads a CPU
/// to read it, and the literal is written before any `BL` that needs
/// another ops, so a stale one (an ops that may be gone) is never read
/// but by a CPU that took the old `BL` before the `NOP` was written,
/// which reads what it read before (the core waits for such CPUs before
/// an ops goes). Turning a tracer off then writes one word per site, and
/// on again, with the same ops, one too.
pub fn writes(
    ip: u64,
    old: State,
    new: State,
    via: Option<u64>,
) -> Result<[Option<Write>; 2], Error> {
    let word_new = word(ip, new, via)?;
    // The old word is what the site holds: only whether it differs from
    // the new one matters, and a site whose old trampoline is out of
    // reach holds a branch to its PLT, which the new one may reuse.
    let word_old = word(ip, old, via).ok();
    let lit = (new.call.is_some() && old.ops != new.ops).then_some(Write::Literal {
        at: literal_of(ip),
        ops: new.ops,
    });
    let ins = (word_old != Some(word_new)).then_some(Write::Insn {
        at: ip,
        word: word_new,
    });
    Ok([lit, ins])
}

/// The state a site gets from the core's (call target, literal ops)
/// pair, `0` meaning none for either: no call is the `NOP`; a target
/// other than the common trampoline `caller` that a `BL` at `ip` cannot
/// reach is reached through `caller`, which goes to the direct target the
/// literal's ops names; a literal of no ops names `nop_ops` on a `NOP`
/// site and `list_ops` on a calling one.
pub fn resolve(ip: u64, target: u64, ops: u64, caller: u64, nop_ops: u64, list_ops: u64) -> State {
    let call = match target {
        0 => None,
        t if t != caller && bl(ip, t).is_none() => Some(caller),
        t => Some(t),
    };
    let ops = match (ops, call) {
        (0, None) => nop_ops,
        (0, Some(_)) => list_ops,
        (o, _) => o,
    };
    State { call, ops }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::insn::{decode, Decoded, BRANCH_RANGE};
    use proptest::prelude::*;

    const FUNC: u64 = 0xffff_8000_8001_0040;
    const IP: u64 = FUNC + 4;
    const CALLER: u64 = 0xffff_8000_8000_1000;
    const LIST: u64 = 0xffff_8000_8200_0000;
    const OPS_A: u64 = 0xffff_0000_1234_0000;

    fn st(call: Option<u64>, ops: u64) -> State {
        State { call, ops }
    }

    #[test]
    fn literal_then_instruction() {
        let w = writes(IP, st(None, LIST), st(Some(CALLER), OPS_A), None).unwrap();
        assert_eq!(w[0], Some(Write::Literal { at: FUNC - 8, ops: OPS_A }));
        let Some(Write::Insn { at, word }) = w[1] else { panic!("{w:?}") };
        assert_eq!(at, IP);
        assert_eq!(decode(IP, word), Decoded::Call(CALLER));
    }

    #[test]
    fn only_what_changes() {
        // Same trampoline, another ops: the literal alone (the fast
        // path C's per-site ops gives).
        let w = writes(IP, st(Some(CALLER), LIST), st(Some(CALLER), OPS_A), None).unwrap();
        assert_eq!(w, [Some(Write::Literal { at: FUNC - 8, ops: OPS_A }), None]);
        // Off, the literal kept.
        let w = writes(IP, st(Some(CALLER), LIST), st(None, LIST), None).unwrap();
        assert_eq!(w, [None, Some(Write::Insn { at: IP, word: NOP })]);
        // Off: the literal stays; on again with the same ops: no literal.
        let w = writes(IP, st(Some(CALLER), OPS_A), st(None, LIST), None).unwrap();
        assert_eq!(w, [None, Some(Write::Insn { at: IP, word: NOP })]);
        let w = writes(IP, st(None, OPS_A), st(Some(CALLER), OPS_A), None).unwrap();
        assert_eq!(w[0], None);
        // Nothing.
        assert_eq!(writes(IP, st(None, LIST), st(None, LIST), None).unwrap(), [None, None]);
    }

    #[test]
    fn far_targets_need_a_plt() {
        let far = IP + BRANCH_RANGE as u64;
        assert_eq!(writes(IP, st(None, LIST), st(Some(far), LIST), None), Err(Error::OutOfRange));
        let plt = IP + 0x1000;
        let w = writes(IP, st(None, LIST), st(Some(far), LIST), Some(plt)).unwrap();
        let Some(Write::Insn { word, .. }) = w[1] else { panic!("{w:?}") };
        assert_eq!(decode(IP, word), Decoded::Call(plt));
    }

    #[test]
    fn far_direct_targets_go_through_the_caller() {
        const NOP_OPS: u64 = LIST + 0x40;
        let far = IP + BRANCH_RANGE as u64;
        let near = IP + 0x2000;
        assert_eq!(resolve(IP, far, OPS_A, CALLER, NOP_OPS, LIST), st(Some(CALLER), OPS_A));
        assert_eq!(resolve(IP, near, OPS_A, CALLER, NOP_OPS, LIST), st(Some(near), OPS_A));
        assert_eq!(resolve(IP, 0, 0, CALLER, NOP_OPS, LIST), st(None, NOP_OPS));
        assert_eq!(resolve(IP, CALLER, 0, CALLER, NOP_OPS, LIST), st(Some(CALLER), LIST));
        // The caller itself out of reach stays the caller: a module's PLT
        // reaches it (`writes`' `via`).
        let far_caller = IP - BRANCH_RANGE as u64 - 4;
        assert_eq!(resolve(IP, far_caller, 0, far_caller, NOP_OPS, LIST), st(Some(far_caller), LIST));
    }

    proptest! {
        // Applying the writes in order to a model site gives the new
        // state; the literal never comes after the instruction.
        #[test]
        fn writes_reach_the_new_state(
            old_on in any::<bool>(), new_on in any::<bool>(),
            old_t in 0u64..4, new_t in 0u64..4, old_ops in 0u64..3, new_ops in 0u64..3,
        ) {
            let t = |k: u64| CALLER + k * 0x100;
            let old = st(old_on.then(|| t(old_t)), LIST + old_ops * 8);
            let new = st(new_on.then(|| t(new_t)), LIST + new_ops * 8);
            let mut lit = old.ops;
            let mut insn = word(IP, old, None).unwrap();
            let w = writes(IP, old, new, None).unwrap();
            let mut seen_insn = false;
            for x in w.into_iter().flatten() {
                match x {
                    Write::Literal { at, ops } => {
                        prop_assert!(!seen_insn);
                        prop_assert_eq!(at, literal_of(IP));
                        lit = ops;
                    }
                    Write::Insn { at, word } => {
                        prop_assert_eq!(at, IP);
                        seen_insn = true;
                        insn = word;
                    }
                }
            }
            // A NOP keeps whatever literal it had; a call has its own.
            prop_assert_eq!(lit, if new_on { new.ops } else { old.ops });
            prop_assert_eq!(insn, word(IP, new, None).unwrap());
        }
    }
}
