// SPDX-License-Identifier: GPL-2.0
//! x86_64 instructions of a call site: the 5-byte `call rel32` to a
//! trampoline, the 5-byte NOP that replaces it, and the `int3` used while
//! rewriting it live.

/// Size of a call site: `call rel32` and the NOP that replaces it.
pub const SITE_SIZE: usize = 5;

/// The 5-byte NOP a disabled site holds (`nopl 0x0(%rax,%rax,1)`), the one
/// the kernel's `x86_nops[5]` gives on x86_64.
pub const NOP5: [u8; SITE_SIZE] = [0x0f, 0x1f, 0x44, 0x00, 0x00];

/// The breakpoint written over a site's first byte while it changes.
pub const INT3: u8 = 0xcc;

const CALL: u8 = 0xe8;

/// `call target` placed at `ip`, or `None` when `target` is out of reach
/// of a rel32 displacement.
pub fn call(ip: u64, target: u64) -> Option<[u8; SITE_SIZE]> {
    let next = ip.checked_add(SITE_SIZE as u64)?;
    let disp = target.wrapping_sub(next) as i64;
    let rel = i32::try_from(disp).ok()?;
    let r = rel.to_le_bytes();
    Some([CALL, r[0], r[1], r[2], r[3]])
}

/// `jmp target` (5-byte `jmp rel32`) placed at `ip`, or `None` when
/// `target` is out of reach: the return of a trampoline that goes through
/// the return thunk.
pub fn jmp(ip: u64, target: u64) -> Option<[u8; SITE_SIZE]> {
    let mut b = call(ip, target)?;
    b[0] = JMP;
    Some(b)
}

const JMP: u8 = 0xe9;

/// What a site's bytes are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoded {
    /// The 5-byte NOP.
    Nop,
    /// A `call rel32`, with its absolute target.
    Call(u64),
    /// Anything else: a site the core must not touch.
    Other,
}

/// Decodes the 5 bytes at `ip`.
pub fn decode(ip: u64, bytes: &[u8; SITE_SIZE]) -> Decoded {
    if *bytes == NOP5 {
        return Decoded::Nop;
    }
    if bytes[0] == CALL {
        let rel = i32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]);
        let next = ip.wrapping_add(SITE_SIZE as u64);
        return Decoded::Call(next.wrapping_add(rel as i64 as u64));
    }
    Decoded::Other
}

/// One step of rewriting a site live: write `bytes` at `ip + offset`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Write<'a> {
    pub offset: usize,
    pub bytes: &'a [u8],
}

/// The three phases of changing a site from `old` to `new` while other CPUs
/// may execute it. Between phases every CPU must serialize (a sync IPI):
///
/// 1. an `int3` over the first byte: a CPU that arrives now traps, and the
///    trap handler emulates the old or the new instruction;
/// 2. the tail (bytes 1..5) of the new instruction, where it differs;
/// 3. the first byte of the new instruction, which removes the `int3`.
///
/// A phase is `None` when it has nothing to write. Returns `None` for all
/// three when `old == new`.
pub fn phases<'a>(old: &[u8; SITE_SIZE], new: &'a [u8; SITE_SIZE]) -> [Option<Write<'a>>; 3] {
    if old == new {
        return [None, None, None];
    }
    let tail = (old[1..] != new[1..]).then_some(Write {
        offset: 1,
        bytes: &new[1..],
    });
    [
        Some(Write {
            offset: 0,
            bytes: &[INT3],
        }),
        tail,
        Some(Write {
            offset: 0,
            bytes: &new[..1],
        }),
    ]
}

/// How the trap handler makes a CPU that hit the `int3` of a site being
/// rewritten behave: as the instruction it emulates.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Emulate {
    /// Skip the site: continue at `ip + 5`.
    Skip,
    /// Push `ip + 5` and continue at the target.
    Call(u64),
}

/// The emulation for a site whose new instruction is `new` (the handler
/// emulates the new one: by the time a CPU sees the `int3`, the old one
/// may already have been partly overwritten).
pub fn emulate(ip: u64, new: &[u8; SITE_SIZE]) -> Option<Emulate> {
    match decode(ip, new) {
        Decoded::Nop => Some(Emulate::Skip),
        Decoded::Call(t) => Some(Emulate::Call(t)),
        Decoded::Other => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn encodes_jumps() {
        assert_eq!(jmp(0x1000, 0x1005), Some([0xe9, 0, 0, 0, 0]));
        assert_eq!(jmp(0x1000, 0x0ff0), Some([0xe9, 0xeb, 0xff, 0xff, 0xff]));
        assert_eq!(jmp(0x1000, 0x1005 + 0x8000_0000), None);
    }

    #[test]
    fn encodes_calls() {
        assert_eq!(call(0x1000, 0x1005), Some([0xe8, 0, 0, 0, 0]));
        assert_eq!(call(0x1000, 0x1000), Some([0xe8, 0xfb, 0xff, 0xff, 0xff]));
        let ip = 0xffff_ff00_8100_0000u64;
        assert_eq!(call(ip, ip + 5 + 0x7fff_ffff).map(|c| c[0]), Some(0xe8));
        assert_eq!(call(ip, ip + 5 + 0x8000_0000), None);
        assert_eq!(call(ip, ip + 5 - 0x8000_0000).map(|c| c[0]), Some(0xe8));
        assert_eq!(call(ip, ip + 5 - 0x8000_0001), None);
        assert_eq!(call(u64::MAX - 2, 0), None);
    }

    #[test]
    fn decodes() {
        assert_eq!(decode(0, &NOP5), Decoded::Nop);
        assert_eq!(
            decode(0x1000, &[0xe8, 0xfb, 0xff, 0xff, 0xff]),
            Decoded::Call(0x1000)
        );
        assert_eq!(decode(0, &[0x66, 0x90, 0x90, 0x90, 0x90]), Decoded::Other);
        assert_eq!(decode(0, &[0xcc, 0, 0, 0, 0]), Decoded::Other);
    }

    #[test]
    fn phases_of_nop_to_call() {
        let new = call(0x1000, 0x2000).unwrap_or(NOP5);
        let ph = phases(&NOP5, &new);
        assert_eq!(
            ph[0],
            Some(Write {
                offset: 0,
                bytes: &[INT3]
            })
        );
        assert_eq!(
            ph[1],
            Some(Write {
                offset: 1,
                bytes: &new[1..]
            })
        );
        assert_eq!(
            ph[2],
            Some(Write {
                offset: 0,
                bytes: &[0xe8]
            })
        );
        assert_eq!(phases(&new, &new), [None, None, None]);
    }

    /// Applies the phases to a copy and checks every state a CPU can see
    /// is the old instruction, the new one, or starts with `int3`.
    fn check_states(old: [u8; 5], new: [u8; 5]) {
        let mut cur = old;
        for w in phases(&old, &new).into_iter().flatten() {
            cur[w.offset..w.offset + w.bytes.len()].copy_from_slice(w.bytes);
            assert!(cur == old || cur == new || cur[0] == INT3, "{cur:x?}");
        }
        assert_eq!(cur, new);
    }

    proptest! {
        #[test]
        fn call_roundtrips(ip in 0u64..u64::MAX - 10, rel in any::<i32>()) {
            let target = ip.wrapping_add(5).wrapping_add(rel as i64 as u64);
            let c = call(ip, target);
            prop_assert!(c.is_some());
            if let Some(c) = c {
                prop_assert_eq!(decode(ip, &c), Decoded::Call(target));
            }
        }

        #[test]
        fn patch_states(ip in 0u64..1 << 40, a in any::<i32>(), b in any::<i32>(), which in 0u8..4) {
            let ca = call(ip, ip.wrapping_add(5).wrapping_add(a as i64 as u64)).unwrap_or(NOP5);
            let cb = call(ip, ip.wrapping_add(5).wrapping_add(b as i64 as u64)).unwrap_or(NOP5);
            let (old, new) = match which { 0 => (NOP5, ca), 1 => (ca, NOP5), 2 => (ca, cb), _ => (NOP5, NOP5) };
            check_states(old, new);
        }
    }
}
