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

/// Which of the three phases of changing a site from `old` to `new`
/// while other CPUs may execute it write at the site: bit `i` is phase
/// `i`, kept with a site being rewritten so that each phase's write is
/// found without comparing the instructions again. Between phases every
/// CPU must serialize (a sync IPI):
///
/// 1. an `int3` over the first byte: a CPU that arrives now traps, and the
///    trap handler emulates the old or the new instruction;
/// 2. the tail (bytes 1..5) of the new instruction, where it differs;
/// 3. the first byte of the new instruction, which removes the `int3`.
///
/// No phase writes when `old == new`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Steps(u8);

impl Steps {
    /// No phase: a site that stays as it is.
    pub const NONE: Steps = Steps(0);

    /// The phases that change a site from `old` to `new`.
    #[inline]
    pub fn of(old: &[u8; SITE_SIZE], new: &[u8; SITE_SIZE]) -> Steps {
        if old == new {
            Steps(0)
        } else if old[1..] != new[1..] {
            Steps(0b111)
        } else {
            Steps(0b101)
        }
    }

    /// What phase `i` (0 to 2) writes at a site going to `new`, if it
    /// writes there.
    #[inline(always)]
    pub fn write(self, new: &[u8; SITE_SIZE], i: usize) -> Option<Write<'_>> {
        if !self.has(i) {
            return None;
        }
        let (offset, bytes) = match i {
            0 => (0, &[INT3][..]),
            1 => (1, &new[1..]),
            _ => (0, &new[..1]),
        };
        Some(Write { offset, bytes })
    }

    /// Whether phase `i` writes at the site.
    #[inline(always)]
    pub fn has(self, i: usize) -> bool {
        i < 3 && self.0 & (1 << i) != 0
    }
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

/// Where a site group's calls are in a trampoline copy (offsets from its
/// start; `trampolines_64.S`, `rft_group_calls`): the callback call, the
/// group entry, slot 0 (`movabs $ops, %rdx`; `lea`; `call`), slots 1 and
/// on (`mov`; `mov`; `movabs $ops, %rdx`; `lea`; the call-depth count;
/// `call`), all of one size, and the tail that goes back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupLayout {
    pub call: usize,
    pub entry: usize,
    pub slot0: usize,
    pub slot1: usize,
    pub tail: usize,
    /// Slots in all, slot 0 included.
    pub slots: usize,
}

const MOVABS_RDX: [u8; 2] = [0x48, 0xba];
/// Where the `movabs` is in slot 0 and in the others.
const MOVABS_AT: [usize; 2] = [0, 6];

impl GroupLayout {
    /// Slot `i`: its start and end.
    pub fn slot(&self, i: usize) -> Option<(usize, usize)> {
        if i == 0 {
            return Some((self.slot0, self.slot1));
        }
        let size = (self.tail.checked_sub(self.slot1)?).checked_div(self.slots.checked_sub(1)?)?;
        let start = self.slot1 + (i - 1) * size;
        (i < self.slots).then_some((start, start + size))
    }

    /// Where the call of slot `i` is.
    pub fn slot_call(&self, i: usize) -> Option<usize> {
        self.slot(i)?.1.checked_sub(SITE_SIZE)
    }

    /// Whether the offsets are in order and the slots fill the room
    /// between slot 1 and the tail evenly.
    pub fn is_sane(&self) -> bool {
        self.call + SITE_SIZE <= self.entry
            && self.entry <= self.slot0
            && self.slot0 < self.slot1
            && self.slot1 < self.tail
            && self.slots >= 2
            && (self.tail - self.slot1) % (self.slots - 1) == 0
            && (self.tail - self.slot1) / (self.slots - 1) >= MOVABS_AT[1] + 10 + SITE_SIZE
            && self.slot1 - self.slot0 >= 10 + SITE_SIZE
    }
}

/// The ops slot `i` of a filled group trampoline calls with, from the
/// slot's first [`SLOT_HEAD`] bytes: `None` for a slot the group does not
/// use (a `jmp` to the tail) or bytes that are no slot.
pub fn slot_ops(i: usize, head: &[u8; SLOT_HEAD]) -> Option<u64> {
    let m = MOVABS_AT[usize::from(i > 0)];
    if (i > 0 && head[0] == JMP) || head[m..m + 2] != MOVABS_RDX {
        return None;
    }
    let mut imm = [0u8; 8];
    imm.copy_from_slice(&head[m + 2..m + 10]);
    Some(u64::from_le_bytes(imm))
}

/// Bytes of a slot that hold its ops.
pub const SLOT_HEAD: usize = MOVABS_AT[1] + 10;

/// Fills the copy `buf` of a trampoline at address `at` (the copy of a
/// template with layout `l`, its relative operands already moved) as a
/// group trampoline calling `members` (callback, ops) in order: a `jmp`
/// from the callback call to the group entry, each member's ops and call
/// in its slot, a `jmp` to the tail after the last. `None` (with `buf` in
/// any state) when the bytes are not the template's or a target is out of
/// reach.
pub fn fill_group(buf: &mut [u8], at: u64, l: &GroupLayout, members: &[(u64, u64)]) -> Option<()> {
    let n = members.len();
    if !l.is_sane() || n == 0 || n > l.slots {
        return None;
    }
    let place = |buf: &mut [u8], off: usize, bytes: [u8; SITE_SIZE], was: u8| {
        let b = buf.get_mut(off..off + SITE_SIZE)?;
        (b[0] == was).then(|| b.copy_from_slice(&bytes))
    };
    let to_entry = jmp(at + l.call as u64, at + l.entry as u64)?;
    place(buf, l.call, to_entry, CALL)?;
    for (i, &(func, ops)) in members.iter().enumerate() {
        let (start, _) = l.slot(i)?;
        let m = start + MOVABS_AT[usize::from(i > 0)];
        let imm = buf.get_mut(m..m + 10)?;
        if imm[..2] != MOVABS_RDX {
            return None;
        }
        imm[2..].copy_from_slice(&ops.to_le_bytes());
        let c = l.slot_call(i)?;
        place(buf, c, call(at + c as u64, func)?, CALL)?;
    }
    if n < l.slots {
        let (start, _) = l.slot(n)?;
        let was = *buf.get(start)?;
        place(buf, start, jmp(at + start as u64, at + l.tail as u64)?, was)?;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The three phases' writes of changing a site from `old` to `new`
    /// (`None`: the phase writes nothing there), as the x86 batches write
    /// them through [`Steps`].
    fn phases<'a>(old: &[u8; SITE_SIZE], new: &'a [u8; SITE_SIZE]) -> [Option<Write<'a>>; 3] {
        let steps = Steps::of(old, new);
        core::array::from_fn(|i| steps.write(new, i))
    }
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

    #[test]
    fn steps_of_a_first_byte_change() {
        // A call and a jmp to the same target differ in the first byte
        // only: no tail phase.
        let c = call(0x1000, 0x2000).unwrap_or(NOP5);
        let j = jmp(0x1000, 0x2000).unwrap_or(NOP5);
        let s = Steps::of(&c, &j);
        assert!(s.has(0) && !s.has(1) && s.has(2) && !s.has(3));
        assert_eq!(phases(&c, &j)[1], None);
        assert_eq!(s.write(&j, 2).map(|w| w.bytes), Some(&j[..1]));
        assert_eq!(Steps::of(&c, &c), Steps::NONE);
        assert_eq!(Steps::NONE.write(&c, 0), None);
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

    /// A template with the layout of `rft_group_calls`: slot 0 of 20
    /// bytes, the others of `size` (26 without the call-depth count).
    fn template(slots: usize, size: usize) -> (std::vec::Vec<u8>, GroupLayout) {
        let mut b = std::vec![0xccu8; 0x40];
        b[0x20..0x25].copy_from_slice(&[0xe8, 0, 0, 0, 0]);
        let entry = b.len();
        b.extend_from_slice(&[0x53, 0x41, 0x54, 0x48, 0x89, 0xfb, 0x49, 0x89, 0xf4]);
        let slot0 = b.len();
        b.extend_from_slice(&[0x48, 0xba, 0, 0, 0, 0, 0, 0, 0, 0]);
        b.extend_from_slice(&[0x48, 0x8d, 0x4c, 0x24, 0x10, 0xe8, 0, 0, 0, 0]);
        let slot1 = b.len();
        for _ in 1..slots {
            b.extend_from_slice(&[0x48, 0x89, 0xdf, 0x4c, 0x89, 0xe6]);
            b.extend_from_slice(&[0x48, 0xba, 0, 0, 0, 0, 0, 0, 0, 0]);
            b.extend_from_slice(&[0x48, 0x8d, 0x4c, 0x24, 0x10]);
            b.extend(core::iter::repeat(0x90).take(size - 26));
            b.extend_from_slice(&[0xe8, 0, 0, 0, 0]);
        }
        let tail = b.len();
        b.extend_from_slice(&[0x41, 0x5c, 0x5b, 0xeb, 0x00]);
        let l = GroupLayout {
            call: 0x20,
            entry,
            slot0,
            slot1,
            tail,
            slots,
        };
        (b, l)
    }

    fn call_at(b: &[u8], at: u64, off: usize) -> Decoded {
        let mut s = [0u8; SITE_SIZE];
        s.copy_from_slice(&b[off..off + SITE_SIZE]);
        decode(at + off as u64, &s)
    }

    #[test]
    fn fills_groups() {
        let at = 0xffff_ffff_a000_0000u64;
        for (slots, size) in [(8, 26), (8, 35), (2, 26)] {
            for n in 1..=slots {
                let (mut b, l) = template(slots, size);
                assert!(l.is_sane());
                let members: std::vec::Vec<(u64, u64)> = (0..n as u64)
                    .map(|i| (0xffff_ffff_8100_0000 + i * 16, 0xffff_8880_0000_1000 + i))
                    .collect();
                assert_eq!(fill_group(&mut b, at, &l, &members), Some(()));
                assert_eq!(b[l.call], 0xe9);
                let rel = i32::from_le_bytes([
                    b[l.call + 1],
                    b[l.call + 2],
                    b[l.call + 3],
                    b[l.call + 4],
                ]);
                assert_eq!(l.call as i64 + 5 + rel as i64, l.entry as i64);
                for (i, &(f, o)) in members.iter().enumerate() {
                    let (start, end) = l.slot(i).unwrap_or((0, 0));
                    let m = start + if i == 0 { 0 } else { 6 };
                    assert_eq!(b[m..m + 2], MOVABS_RDX);
                    assert_eq!(
                        u64::from_le_bytes(b[m + 2..m + 10].try_into().unwrap_or([0; 8])),
                        o
                    );
                    assert_eq!(call_at(&b, at, end - 5), Decoded::Call(f));
                }
                if n < slots {
                    let (start, _) = l.slot(n).unwrap_or((0, 0));
                    assert_eq!(b[start], 0xe9);
                    let head: [u8; SLOT_HEAD] = b[start..start + SLOT_HEAD]
                        .try_into()
                        .unwrap_or([0; SLOT_HEAD]);
                    assert_eq!(slot_ops(n, &head), None);
                    let rel = i32::from_le_bytes([
                        b[start + 1],
                        b[start + 2],
                        b[start + 3],
                        b[start + 4],
                    ]);
                    assert_eq!(start as i64 + 5 + rel as i64, l.tail as i64);
                } else {
                    assert_eq!(&b[l.tail..l.tail + 3], &[0x41, 0x5c, 0x5b]);
                }
            }
        }
    }

    #[test]
    fn refuses_what_is_not_the_template() {
        let at = 0xffff_ffff_a000_0000u64;
        let m = [(0xffff_ffff_8100_0000, 1), (0xffff_ffff_8100_0010, 2)];
        let (b0, l) = template(8, 26);
        let mut b = b0.clone();
        assert_eq!(fill_group(&mut b, at, &l, &[]), None);
        let nine = [(0xffff_ffff_8100_0000u64, 1u64); 9];
        assert_eq!(fill_group(&mut b, at, &l, &nine), None);
        let mut b = b0.clone();
        b[l.call] = 0x90;
        assert_eq!(fill_group(&mut b, at, &l, &m), None);
        let mut b = b0.clone();
        b[l.slot1 + 6] = 0x90;
        assert_eq!(fill_group(&mut b, at, &l, &m), None);
        let mut b = b0.clone();
        b[l.slot1 - 5] = 0x90;
        assert_eq!(fill_group(&mut b, at, &l, &m), None);
        let mut b = b0.clone();
        assert_eq!(
            fill_group(&mut b, 0x1000, &l, &[(0x0000_7fff_0000_0000, 1)]),
            None
        );
        let uneven = GroupLayout {
            tail: l.tail - 1,
            ..l
        };
        assert!(!uneven.is_sane());
        let mut b = b0;
        assert_eq!(fill_group(&mut b, at, &uneven, &m), None);
    }
}
