// SPDX-License-Identifier: GPL-2.0
//! Tests of the shadow stack: unit cases and a property test against a
//! model of frames, run on the host over [`Model`] (the same generic code
//! the kernel runs over a task's stack).

use super::super::fgraph::*;
use super::*;
use proptest::prelude::*;
use std::vec;
use std::vec::Vec;

// --- the host model and what only the tests use ---------------------------

/// A header or data word, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Word {
    /// Header of a frame being entered.
    Reserved {
        /// Distance to the first word of the frame.
        link: usize,
    },
    /// Header of a committed frame.
    Bitmap {
        /// Distance to the first word of the frame.
        link: usize,
        /// Ops indices whose return callback runs.
        bitmap: u16,
    },
    /// Describes the data words just below it.
    Data {
        /// Distance to the first word of the frame.
        link: usize,
        /// Owner ops index.
        idx: usize,
        /// Number of data words.
        words: usize,
    },
    /// Kind 3, never written.
    Unknown(u64),
}

/// Decodes a header or data word.
const fn decode(w: u64) -> Word {
    let link = link_of(w);
    match kind_of(w) {
        KIND_RESERVED => Word::Reserved { link },
        KIND_BITMAP => Word::Bitmap {
            link,
            bitmap: bitmap_of(w),
        },
        KIND_DATA => Word::Data {
            link,
            idx: data_idx_of(w),
            words: data_len_of(w),
        },
        _ => Word::Unknown(w),
    }
}

/// The host model's storage: an array and three counters, 4112 bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Array {
    words: [u64; SHADOW_STACK_WORDS],
    top: usize,
    depth: i32,
    overrun: u32,
}

impl Words for Array {
    fn word(&self, i: usize) -> Option<u64> {
        self.words.get(i).copied()
    }
}

impl StackMem for Array {
    fn set_word(&mut self, i: usize, v: u64) {
        if let Some(w) = self.words.get_mut(i) {
            *w = v;
        }
    }
    fn top(&self) -> usize {
        self.top
    }
    fn set_top(&mut self, top: usize) {
        self.top = top;
    }
    fn depth(&self) -> i32 {
        self.depth
    }
    fn set_depth(&mut self, depth: i32) {
        self.depth = depth;
    }
    fn overrun(&self) -> u32 {
        self.overrun
    }
    fn set_overrun(&mut self, n: u32) {
        self.overrun = n;
    }
}

/// The host model: a shadow stack in an array.
type Model = RetStack<Array>;

impl<M: StackMem> RetStack<M> {
    /// No frame on the stack.
    pub fn is_empty(&self) -> bool {
        self.top() == 0
    }

    /// Where the data ops `idx` reserved in the frame `depth` levels below
    /// the top one lies (0: the top frame). 6.13's
    /// `fgraph_retrieve_parent_data()`.
    pub fn retrieve_parent(&self, idx: usize, depth: usize) -> Option<(usize, usize)> {
        if idx >= OPS_SLOTS {
            return None;
        }
        find_data(self, self.frame_end(depth)?, idx)
    }

    /// The `idx`-th frame from the top.
    pub fn ret_stack(&self, idx: usize) -> Option<RetFrame> {
        read_frame(self, self.ret_stack_offset(idx)?)
    }

    /// Sets `subtime` of the `idx`-th frame from the top (what the
    /// function profiler writes through `ftrace_graph_get_ret_stack()`).
    pub fn set_subtime(&mut self, idx: usize, subtime: u64) -> bool {
        match self.ret_stack_offset(idx) {
            Some(start) => {
                self.mem.set_word(start + FRAME_SUBTIME, subtime);
                true
            }
            None => false,
        }
    }

    /// Looks for the frame that saved the return address of slot `retp`,
    /// walking down from `start` (0: from the top), skipping frames whose
    /// saved address is `return_handler` itself (tail calls). Gives the
    /// real return address and the offset to start the next lookup from.
    pub fn find_ret_addr(
        &self,
        start: usize,
        retp: u64,
        return_handler: u64,
    ) -> Option<(u64, usize)> {
        find_ret_addr(self, self.walk_top(), start, retp, return_handler)
    }

    /// The task variable of ops `idx`.
    pub fn task_var(&self, idx: usize) -> Option<u64> {
        self.word(Self::task_var_offset(idx)?)
    }

    /// [`RetStack::return_begin`] and [`RetStack::return_finish`] at once.
    pub fn pop(&mut self, expect_retp: Option<u64>) -> Result<Returning, PopError> {
        let r = self.return_begin(expect_retp)?;
        self.return_finish(&r);
        Ok(r)
    }

    /// The frames from the top down, with their offsets.
    pub fn frames(&self) -> Frames<'_, M> {
        Frames {
            stack: self,
            end: self.walk_top(),
        }
    }
}

/// Iterator over the frames of a [`RetStack`], top first: `(offset,
/// record)`.
pub struct Frames<'a, M> {
    stack: &'a RetStack<M>,
    end: usize,
}

impl<M: StackMem> Iterator for Frames<'_, M> {
    type Item = (usize, RetFrame);

    fn next(&mut self) -> Option<Self::Item> {
        let start = frame_below(self.stack, self.end)?;
        let f = read_frame(self.stack, start)?;
        self.end = start;
        Some((start, f))
    }
}

impl<M: StackMem> OpsCtx<'_, M> {
    /// The stack.
    pub fn stack(&self) -> &RetStack<M> {
        self.stack
    }

    /// [`RetStack::reserve`] for this ops (entry only).
    pub fn reserve(&mut self, size_bytes: usize) -> Option<usize> {
        self.stack.reserve(self.idx, size_bytes)
    }

    /// [`RetStack::ret_stack`].
    pub fn ret_stack(&self, idx: usize) -> Option<RetFrame> {
        self.stack.ret_stack(idx)
    }

    /// [`RetStack::set_subtime`].
    pub fn set_subtime(&mut self, idx: usize, subtime: u64) -> bool {
        self.stack.set_subtime(idx, subtime)
    }
}

impl Default for Model {
    fn default() -> Self {
        Self::new()
    }
}

impl Model {
    /// An empty stack, all words zero (C's `graph_init_task()` on a fresh
    /// allocation).
    pub const fn new() -> Self {
        Self::on(Array {
            words: [0; SHADOW_STACK_WORDS],
            top: 0,
            depth: -1,
            overrun: 0,
        })
    }

    /// The raw words.
    pub fn words(&self) -> &[u64; SHADOW_STACK_WORDS] {
        &self.mem.words
    }

    fn area(&self, at: Option<(usize, usize)>) -> Option<&[u64]> {
        let (s, n) = at?;
        self.mem.words.get(s..s + n)
    }

    fn area_mut(&mut self, at: Option<(usize, usize)>) -> Option<&mut [u64]> {
        let (s, n) = at?;
        self.mem.words.get_mut(s..s + n)
    }

    /// [`RetStack::reserve`], as a slice.
    pub fn reserve_data(&mut self, idx: usize, size_bytes: usize) -> Option<&mut [u64]> {
        let first = self.reserve(idx, size_bytes)?;
        let at = find_data(self, self.top(), idx).filter(|&(s, _)| s == first);
        self.area_mut(at)
    }

    /// [`RetStack::retrieve`], as a slice.
    pub fn retrieve_data(&self, idx: usize) -> Option<&[u64]> {
        self.area(self.retrieve(idx))
    }

    /// [`RetStack::retrieve`], as a writable slice.
    pub fn retrieve_data_mut(&mut self, idx: usize) -> Option<&mut [u64]> {
        let at = self.retrieve(idx);
        self.area_mut(at)
    }

    /// [`RetStack::retrieve_parent`], as a slice.
    pub fn retrieve_parent_data(&self, idx: usize, depth: usize) -> Option<&[u64]> {
        self.area(self.retrieve_parent(idx, depth))
    }

    /// The task variable of ops `idx`, writable.
    pub fn task_var_mut(&mut self, idx: usize) -> Option<&mut u64> {
        self.mem.words.get_mut(Self::task_var_offset(idx)?)
    }
}

impl OpsCtx<'_, Array> {
    /// [`Model::reserve_data`] for this ops (entry only).
    pub fn reserve_data(&mut self, size_bytes: usize) -> Option<&mut [u64]> {
        self.stack.reserve_data(self.idx, size_bytes)
    }

    /// [`Model::retrieve_data`] for this ops.
    pub fn retrieve_data(&self) -> Option<&[u64]> {
        self.stack.retrieve_data(self.idx)
    }

    /// [`Model::retrieve_data_mut`] for this ops.
    pub fn retrieve_data_mut(&mut self) -> Option<&mut [u64]> {
        self.stack.retrieve_data_mut(self.idx)
    }

    /// [`Model::retrieve_parent_data`] for this ops.
    pub fn retrieve_parent_data(&self, depth: usize) -> Option<&[u64]> {
        self.stack.retrieve_parent_data(self.idx, depth)
    }

    /// This ops' task variable.
    pub fn task_var_mut(&mut self) -> Option<&mut u64> {
        self.stack.task_var_mut(self.idx)
    }
}

const HANDLER: u64 = 0xffff_ffff_8100_0000;

fn slot(i: u64) -> u64 {
    0xffff_c900_0000_8000 - 8 * i
}

fn real(i: u64) -> u64 {
    0xffff_ffff_8200_0000 + 0x10 * i
}

#[test]
fn budget() {
    assert_eq!(SHADOW_STACK_WORDS, 512);
    assert_eq!(STACK_LIMIT, 490);
    assert_eq!(TASK_VARS, 496);
    assert_eq!(MAX_DATA_SIZE, 256);
    assert_eq!(core::mem::size_of::<Model>(), 4112);
    let mut s = Model::new();
    let mut n = 0;
    while s.push(real(n), 1, 2, slot(n)).is_ok() {
        n += 1;
    }
    assert_eq!(n, 81);
    assert!(s.top() < STACK_LIMIT);
}

#[test]
fn words_round_trip() {
    assert_eq!(decode(reserved_word()), Word::Reserved { link: 5 });
    assert_eq!(
        decode(bitmap_word(0x8009)),
        Word::Bitmap {
            link: 5,
            bitmap: 0x8009
        }
    );
    assert_eq!(bitmap_word(9), (9 << 12) | (1 << 10) | 5);
    for idx in 0..16 {
        for words in 1..=32 {
            let w = data_word(idx, words, 5 + words + 1);
            assert_eq!(
                decode(w),
                Word::Data {
                    link: 5 + words + 1,
                    idx,
                    words
                }
            );
            assert!(w < 1 << 21);
        }
    }
    assert_eq!(decode(3 << 10), Word::Unknown(3 << 10));
}

#[test]
fn nested_round_trip() {
    let mut s = Model::new();
    let mut live = 0u16;
    let mut slots = OpsSlots::new();
    for _ in 0..4 {
        live |= 1 << slots.alloc().unwrap();
    }
    // Three nested calls; ops 1 stores the depth, ops 3 two words.
    for d in 0..3u64 {
        let e = s
            .enter(real(d), 0x100 + d, 1000 + d, slot(d), live, |c| {
                match c.idx() {
                    0 => d != 1,
                    1 => {
                        c.reserve_data(8).unwrap()[0] = d;
                        true
                    }
                    2 => false,
                    _ => {
                        let w = c.reserve_data(16).unwrap();
                        w[0] = 30 + d;
                        w[1] = 31 + d;
                        true
                    }
                }
            })
            .unwrap();
        assert_eq!(e.depth, d as i32);
        // Only the ops that accepted (6.12 sets bit 0 always).
        assert_eq!(e.bitmap, if d == 1 { 0b1010 } else { 0b1011 });
    }
    assert_eq!(s.depth(), 2);
    assert_eq!(s.ret_stack(0).unwrap().func, 0x102);
    assert_eq!(s.ret_stack(2).unwrap().func, 0x100);
    assert_eq!(s.ret_stack(3), None);
    assert_eq!(s.retrieve_parent_data(3, 1), Some(&[31, 32][..]));
    assert_eq!(s.retrieve_parent_data(1, 2), Some(&[0][..]));
    assert_eq!(s.retrieve_parent_data(2, 0), None);
    for d in (0..3u64).rev() {
        let mut seen = Vec::new();
        let r = s
            .leave(
                Some(slot(d)),
                live,
                |_| (),
                |c, r, _| {
                    assert_eq!(r.frame.func, 0x100 + d);
                    seen.push((c.idx(), c.retrieve_data().map(|x| x.to_vec())));
                },
            )
            .unwrap();
        assert_eq!(r.frame.ret, real(d));
        assert_eq!(r.frame.calltime, 1000 + d);
        assert_eq!(r.depth, d as i32);
        let mut want = vec![(1, Some(vec![d])), (3, Some(vec![30 + d, 31 + d]))];
        if d != 1 {
            want.insert(0, (0, None));
        }
        assert_eq!(seen, want);
    }
    assert!(s.is_empty());
    assert_eq!(s.depth(), -1);
    assert_eq!(s.pop(None), Err(PopError::Empty));
}

#[test]
fn low_level_entry() {
    let mut s = Model::new();
    let p = s.push(real(0), 0x10, 5, slot(0)).unwrap();
    assert_eq!(p.depth, 0);
    assert!(s.reserve_data(2, 24).is_some());
    assert!(s.reserve_data(4, 8).is_some());
    assert_eq!(s.retrieve_data(2).map(|d| d.len()), Some(3));
    // Nothing accepted: the frame and its data go away.
    assert_eq!(s.finish_entry(p, 0), Err(EnterError::NotWanted));
    assert!(s.is_empty());
    assert_eq!(s.depth(), -1);

    let p = s.push(real(0), 0x10, 5, slot(0)).unwrap();
    assert_eq!(s.finish_entry(p, 0b100), Ok(0b100));
    // Committed: no more reservations.
    assert!(s.reserve_data(2, 8).is_none());
    let r = s.pop(None).unwrap();
    assert_eq!((r.frame.ret, r.bitmap, r.start), (real(0), 0b100, 0));
}

#[test]
fn overflow() {
    let mut s = Model::new();
    let mut n = 0u64;
    loop {
        let e = s.enter(real(n), n, n, slot(n), 0b11, |c| {
            c.idx() == 0 || c.reserve_data(40).is_some()
        });
        match e {
            Ok(_) => n += 1,
            Err(err) => {
                assert_eq!(err, EnterError::Full);
                break;
            }
        }
    }
    let full = s.clone();
    assert_eq!(s.overrun(), 1);
    // Once full, further pushes fail the same way and change nothing
    // but the overrun count.
    for k in 2..5 {
        assert_eq!(s.push(1, 2, 3, 4), Err(PushError::Full));
        assert_eq!(s.overrun(), k);
    }
    assert_eq!(s.words(), full.words());
    assert_eq!(s.top(), full.top());
    assert_eq!(s.depth(), n as i32 - 1);
    // The frames under the full top still come back in order.
    for k in (0..n).rev() {
        let r = s.pop(Some(slot(k))).unwrap();
        assert_eq!(r.frame.ret, real(k));
        assert_eq!(r.overrun, 4);
        if k == n - 1 {
            s.push(7, 7, 7, 7).unwrap();
            assert_eq!(s.pop(Some(7)).unwrap().frame.ret, 7);
        }
    }
    assert!(s.is_empty());
}

#[test]
fn reservation_hits_limit_but_frame_commits() {
    let mut s = Model::new();
    while s.top() + 6 + 6 < STACK_LIMIT {
        let p = s.push(1, 1, 1, 1).unwrap();
        s.finish_entry(p, 1).unwrap();
    }
    let p = s.push(2, 2, 2, 2).unwrap();
    let room = STACK_LIMIT - s.top() - 1;
    assert!(room < 6);
    assert!(s.reserve_data(1, 8 * room).is_none());
    assert!(s.reserve_data(1, 8 * (room - 1)).is_some());
    assert_eq!(s.top(), STACK_LIMIT - 1);
    assert_eq!(s.finish_entry(p, 2), Ok(2));
    assert_eq!(s.push(3, 3, 3, 3), Err(PushError::Full));
    assert_eq!(s.pop(Some(2)).unwrap().frame.ret, 2);
}

#[test]
fn data_limits() {
    let mut s = Model::new();
    s.push(1, 2, 3, 4).unwrap();
    // Zero bytes take one word (C would write a malformed word).
    assert_eq!(s.reserve_data(3, 0).map(|d| d.len()), Some(1));
    assert!(s.reserve_data(0, MAX_DATA_SIZE + 1).is_none());
    assert!(s.reserve_data(16, 8).is_none());
    assert_eq!(s.reserve_data(0, MAX_DATA_SIZE).map(|d| d.len()), Some(32));
    assert!(s.reserve_data(0, 8).is_none(), "one reservation per ops");
    assert_eq!(s.reserve_data(1, 1).map(|d| d.len()), Some(1));
    assert_eq!(s.reserve_data(2, 9).map(|d| d.len()), Some(2));
    assert_eq!(s.retrieve_data(0).map(|d| d.len()), Some(32));
    assert_eq!(s.retrieve_data(4), None);
    assert_eq!(s.retrieve_data(16), None);
    s.retrieve_data_mut(1).unwrap()[0] = 77;
    assert_eq!(s.retrieve_data(1), Some(&[77][..]));
    // The data word of the last reservation links to the frame start.
    let top = s.top();
    assert_eq!(
        decode(s.words()[top - 1]),
        Word::Data {
            link: top - 1,
            idx: 2,
            words: 2
        }
    );
    // Nothing to reserve on without a frame being entered.
    let mut e = Model::new();
    assert!(e.reserve_data(0, 8).is_none());
    assert_eq!(e.retrieve_data(0), None);
    assert_eq!(e.retrieve_parent_data(0, 0), None);
}

#[test]
fn declined_ops_data_is_dropped() {
    let mut s = Model::new();
    s.enter(1, 1, 1, slot(0), 0b1110, |c| {
        c.reserve_data(8).unwrap()[0] = c.idx() as u64;
        c.idx() != 2
    })
    .unwrap();
    assert_eq!(s.retrieve_data(1), Some(&[1][..]));
    assert_eq!(s.retrieve_data(2), None);
    assert_eq!(s.retrieve_data(3), Some(&[3][..]));
    // A frame nobody wants leaves the stack as it was.
    let before = s.top();
    let e = s.enter(2, 2, 2, slot(1), 0b110, |c| {
        c.reserve_data(64).unwrap();
        false
    });
    assert_eq!(e, Err(EnterError::NotWanted));
    assert_eq!(s.top(), before);
    assert_eq!(s.depth(), 0);
    let mut seen = 0u16;
    s.leave(
        Some(slot(0)),
        0xffff,
        |_| (),
        |c, _, _| {
            seen |= 1 << c.idx();
            // Return callbacks cannot reserve.
            assert!(c.reserve_data(8).is_none());
        },
    )
    .unwrap();
    assert_eq!(seen, 0b1010);
}

#[test]
fn parent_data() {
    let mut s = Model::new();
    for d in 0..5u64 {
        s.enter(real(d), d, d, slot(d), 0b101, |c| {
            if c.idx() == 2 && d & 1 == 0 {
                c.reserve_data(8).unwrap()[0] = 100 + d;
            }
            if c.idx() == 2 {
                // The frame being entered is depth 0.
                assert_eq!(c.ret_stack(0).unwrap().func, d);
            }
            true
        })
        .unwrap();
    }
    for depth in 0..5usize {
        let d = 4 - depth as u64;
        let want = (d & 1 == 0).then(|| vec![100 + d]);
        assert_eq!(s.retrieve_parent_data(2, depth).map(|x| x.to_vec()), want);
        assert_eq!(s.retrieve_parent_data(0, depth), None);
    }
    assert_eq!(s.retrieve_parent_data(2, 5), None);
    let mut got = None;
    s.leave(
        None,
        0xffff,
        |_| (),
        |c, _, _| {
            if c.idx() == 2 {
                got = c.retrieve_parent_data(2).map(|x| x.to_vec());
            }
        },
    )
    .unwrap();
    assert_eq!(got, Some(vec![102]));
}

#[test]
fn corruption() {
    let mut s = Model::new();
    for d in 0..3 {
        s.enter(real(d), d, d, slot(d), 1, |_| true).unwrap();
    }
    let before = s.clone();
    assert_eq!(
        s.pop(Some(slot(1))),
        Err(PopError::WrongSlot {
            expected: slot(2),
            got: slot(1)
        })
    );
    assert_eq!(s, before);
    let mut seen = false;
    assert!(s
        .leave(Some(slot(0)), 0xffff, |_| (), |_, _, _| seen = true)
        .is_err());
    assert!(!seen);
    assert_eq!(s, before);
    // A broken link below the top.
    let top = s.top();
    s.mem.words[top - 1] = 0;
    assert_eq!(s.pop(None), Err(PopError::BadLink { top }));
    s.mem.words[top - 1] = data_word(0, 1, top);
    assert_eq!(s.pop(None), Err(PopError::BadLink { top }));
    assert_eq!(s.ret_stack(0), None);
    assert_eq!(s.frames().count(), 0);
    s.mem.words = before.mem.words;
    assert_eq!(s.pop(Some(slot(2))).unwrap().frame.ret, real(2));
}

#[test]
fn unwinder_lookups() {
    let mut s = Model::new();
    let k = 6u64;
    for d in 0..k {
        s.enter(real(d), d, d, slot(d), 1, |_| true).unwrap();
    }
    // Each slot on its own, from the top.
    for d in 0..k {
        let (ret, off) = s.find_ret_addr(0, slot(d), HANDLER).unwrap();
        assert_eq!(ret, real(d));
        assert_eq!(Some(off), s.ret_stack_offset((k - 1 - d) as usize));
    }
    assert_eq!(s.find_ret_addr(0, slot(99), HANDLER), None);
    assert_eq!(s.find_ret_addr(s.top() + 1, slot(0), HANDLER), None);
    // An unwinder walking the real stack, innermost first.
    let mut idx = 0;
    for d in (0..k).rev() {
        assert_eq!(
            s.ret_addr(Some(&mut idx), HANDLER, slot(d), HANDLER),
            real(d)
        );
    }
    assert_eq!(idx, 0);
    // Unknown slots and unhijacked addresses come back unchanged.
    let mut idx = 0;
    assert_eq!(
        s.ret_addr(Some(&mut idx), HANDLER, slot(99), HANDLER),
        HANDLER
    );
    assert_eq!(idx, 0);
    assert_eq!(s.ret_addr(Some(&mut idx), 0x1234, slot(0), HANDLER), 0x1234);
    assert_eq!(s.ret_addr(None, HANDLER, slot(0), HANDLER), HANDLER);
    // Once past a slot, the walk does not find it again.
    let mut idx = 0;
    assert_eq!(
        s.ret_addr(Some(&mut idx), HANDLER, slot(2), HANDLER),
        real(2)
    );
    assert_eq!(
        s.ret_addr(Some(&mut idx), HANDLER, slot(4), HANDLER),
        HANDLER
    );
    assert_eq!(
        s.ret_addr(Some(&mut idx), HANDLER, slot(1), HANDLER),
        real(1)
    );
}

#[test]
fn tail_call_lookup() {
    let mut s = Model::new();
    s.enter(real(0), 1, 0, slot(0), 1, |_| true).unwrap();
    // A tail call from 1 to 2: the slot already holds the handler.
    s.enter(HANDLER, 2, 0, slot(0), 1, |_| true).unwrap();
    let mut idx = 0;
    assert_eq!(
        s.ret_addr(Some(&mut idx), HANDLER, slot(0), HANDLER),
        real(0)
    );
    assert_eq!(idx, 0);
    assert_eq!(s.pop(Some(slot(0))).unwrap().frame.ret, HANDLER);
    assert_eq!(s.pop(Some(slot(0))).unwrap().frame.ret, real(0));
}

#[test]
fn frames_subtime_calltime() {
    let mut s = Model::new();
    for d in 0..4 {
        s.enter(real(d), d, 10 * d, slot(d), 1, |_| true).unwrap();
    }
    let funcs: Vec<u64> = s.frames().map(|(_, f)| f.func).collect();
    assert_eq!(funcs, [3, 2, 1, 0]);
    assert!(s.set_subtime(1, 55));
    assert!(!s.set_subtime(4, 1));
    assert_eq!(s.ret_stack(1).unwrap().subtime, 55);
    s.add_calltime(7);
    let times: Vec<u64> = s.frames().map(|(_, f)| f.calltime).collect();
    assert_eq!(times, [37, 27, 17, 7]);
}

#[test]
fn task_vars() {
    let mut s = Model::new();
    for i in 0..16 {
        *s.task_var_mut(i).unwrap() = 1000 + i as u64;
    }
    assert_eq!(s.task_var(16), None);
    assert!(s.task_var_mut(16).is_none());
    while s
        .enter(1, 2, 3, 4, 0b11, |c| {
            let _ = c.reserve_data(256);
            true
        })
        .is_ok()
    {}
    for i in 0..16 {
        assert_eq!(s.task_var(i), Some(1000 + i as u64));
    }
    assert!(s.init_task_var(3));
    assert!(!s.init_task_var(16));
    assert_eq!(s.task_var(3), Some(0));
    s.enter(0, 0, 0, 0, 0, |_| true).unwrap_err();
    s.reset();
    assert!(s.is_empty());
    assert_eq!(s.overrun(), 0);
    assert!((0..16).all(|i| s.task_var(i) == Some(0)));
    s.leave(None, 1, |_| (), |c, _, _| *c.task_var_mut().unwrap() = 1)
        .unwrap_err();
}

#[test]
fn unregistered_ops() {
    let mut slots = OpsSlots::new();
    let a = slots.alloc().unwrap();
    let b = slots.alloc().unwrap();
    assert_eq!((a, b), (0, 1));
    let mut s = Model::new();
    let mut used = (1u16 << a) | (1 << b);
    s.enter(real(0), 0, 0, slot(0), used, |c| {
        c.reserve_data(8).unwrap()[0] = 5;
        c.idx() == b
    })
    .unwrap();
    // b goes away while its frame is on the stack: the bit stays in the
    // frame, the return path skips the index, which holds the stub.
    assert!(slots.release(b));
    assert!(!slots.release(b));
    used &= !(1 << b);
    let mut got = Vec::new();
    let r = s
        .leave(None, used, |_| (), |c, _, _| got.push(c.idx()))
        .unwrap();
    assert_eq!(r.bitmap, 0b10);
    // a declined, and b's callback does not run any more.
    assert!(got.is_empty());
    // The LRU hands b's index out again only after every other free
    // index.
    let mut got = Vec::new();
    for _ in 0..14 {
        got.push(slots.alloc().unwrap());
    }
    assert_eq!(got, (2..16).collect::<Vec<_>>());
    assert_eq!(slots.alloc(), Some(b));
    assert_eq!(slots.alloc(), None);
    assert_eq!(return_targets(0b1011, 0b0110), 0b0010);
    assert_eq!(Bits(0x8005).collect::<Vec<_>>(), [0, 2, 15]);
}

#[derive(Clone, Debug)]
enum Op {
    /// Ask the ops of `cand`; ops i first tries to reserve `sizes[i]`
    /// bytes, then accepts when bit i of `accept` is set.
    Enter {
        cand: u16,
        accept: u16,
        sizes: [u16; 16],
    },
    Leave,
    LeaveWrong,
}

fn cand() -> impl Strategy<Value = u16> {
    prop_oneof![any::<u16>(), (0..16u32).prop_map(|i| 1u16 << i)]
}

fn op() -> impl Strategy<Value = Op> {
    let size = prop_oneof![
        4 => Just(0u16),
        4 => 1u16..=64,
        1 => 200u16..=300,
    ];
    prop_oneof![
        6 => (cand(), any::<u16>(), proptest::array::uniform16(size))
            .prop_map(|(cand, accept, sizes)| Op::Enter { cand, accept, sizes }),
        3 => Just(Op::Leave),
        1 => Just(Op::LeaveWrong),
    ]
}

#[derive(Clone, Debug)]
struct MFrame {
    ret: u64,
    func: u64,
    calltime: u64,
    retp: u64,
    bitmap: u16,
    data: Vec<(usize, Vec<u64>)>,
    words: usize,
}

fn check(s: &Model, model: &[MFrame], overrun: u32, deep: bool) -> Result<(), TestCaseError> {
    let top: usize = model.iter().map(|f| f.words).sum();
    prop_assert_eq!(s.top(), top);
    prop_assert!(s.top() < STACK_LIMIT);
    prop_assert_eq!(s.depth(), model.len() as i32 - 1);
    prop_assert_eq!(s.overrun(), overrun);
    let frames: Vec<(usize, RetFrame)> = s.frames().collect();
    prop_assert_eq!(frames.len(), model.len());
    let mut off = top;
    for (i, (f, m)) in frames.iter().zip(model.iter().rev()).enumerate() {
        off -= m.words;
        prop_assert_eq!(f.0, off);
        let want = RetFrame {
            ret: m.ret,
            func: m.func,
            calltime: m.calltime,
            subtime: 0,
            retp: m.retp,
        };
        prop_assert_eq!(f.1, want);
        prop_assert_eq!(
            decode(s.words()[off + FRAME_WORDS]),
            Word::Bitmap {
                link: 5,
                bitmap: m.bitmap
            }
        );
        prop_assert_eq!(s.find_ret_addr(0, m.retp, HANDLER), Some((m.ret, off)));
        if deep || i < 2 {
            prop_assert_eq!(s.ret_stack(i), Some(want));
            for idx in 0..OPS_SLOTS {
                let d = m.data.iter().find(|(x, _)| *x == idx).map(|(_, v)| &v[..]);
                prop_assert_eq!(s.retrieve_parent_data(idx, i), d);
            }
        }
    }
    prop_assert_eq!(s.ret_stack(model.len()), None);
    prop_assert_eq!(s.find_ret_addr(0, 1, HANDLER), None);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn matches_model(ops in proptest::collection::vec(op(), 1..300)) {
        let mut s = Model::new();
        let mut model: Vec<MFrame> = Vec::new();
        let mut overrun = 0u32;
        let mut n = 0u64;
        for o in ops {
            match o {
                Op::Enter { cand, accept, sizes } => {
                    n += 1;
                    let base: usize = model.iter().map(|f| f.words).sum();
                    let mut m = MFrame {
                        ret: real(n),
                        func: n,
                        calltime: 3 * n,
                        retp: slot(n),
                        bitmap: 0,
                        data: Vec::new(),
                        words: FRAME_WORDS + 1,
                    };
                    if base + m.words >= STACK_LIMIT {
                        overrun += 1;
                    }
                    let mut asked = 0u16;
                    let e = s.enter(m.ret, m.func, m.calltime, m.retp, cand, |c| {
                        let i = c.idx();
                        asked |= 1 << i;
                        let sz = usize::from(sizes[i]);
                        let n_words = sz.div_ceil(8).max(1);
                        let fits = sz <= MAX_DATA_SIZE
                            && base + m.words + n_words + 1 < STACK_LIMIT;
                        let got = c.reserve_data(sz).map(|d| {
                            for (k, w) in d.iter_mut().enumerate() {
                                *w = (n << 8) | ((i as u64) << 4) | k as u64;
                            }
                            d.to_vec()
                        });
                        assert_eq!(got.is_some(), fits, "size {} at {}", sz, base + m.words);
                        let yes = accept & (1 << i) != 0;
                        if yes {
                            m.bitmap |= 1 << i;
                            if let Some(d) = got {
                                m.words += d.len() + 1;
                                m.data.push((i, d));
                            }
                        }
                        yes
                    });
                    if base + FRAME_WORDS + 1 >= STACK_LIMIT {
                        prop_assert_eq!(e, Err(EnterError::Full));
                        prop_assert_eq!(asked, 0);
                    } else {
                        prop_assert_eq!(asked, cand);
                        if m.bitmap == 0 {
                            prop_assert_eq!(e, Err(EnterError::NotWanted));
                        } else {
                            let e = e.unwrap();
                            prop_assert_eq!(e.bitmap, m.bitmap);
                            prop_assert_eq!(e.depth, model.len() as i32);
                            prop_assert_eq!(e.offset, base);
                            model.push(m);
                        }
                    }
                }
                Op::Leave => {
                    let expect = model.last().map(|m| m.retp);
                    let mut seen = Vec::new();
                    let r = s.leave(expect, 0xffff, |_| (), |c, _, _| {
                        seen.push((c.idx(), c.retrieve_data().map(|d| d.to_vec())));
                    });
                    match model.pop() {
                        None => prop_assert_eq!(r, Err(PopError::Empty)),
                        Some(m) => {
                            let r = r.unwrap();
                            prop_assert_eq!(r.frame.ret, m.ret);
                            prop_assert_eq!(r.bitmap, m.bitmap);
                            prop_assert_eq!(r.depth, model.len() as i32);
                            prop_assert_eq!(r.overrun, overrun);
                            let want: Vec<(usize, Option<Vec<u64>>)> = Bits(m.bitmap)
                                .map(|i| (i, m.data.iter().find(|(x, _)| *x == i).map(|(_, v)| v.clone())))
                                .collect();
                            prop_assert_eq!(seen, want);
                        }
                    }
                }
                Op::LeaveWrong => {
                    let before = s.clone();
                    let r = s.pop(Some(1));
                    if model.is_empty() {
                        prop_assert_eq!(r, Err(PopError::Empty));
                    } else {
                        let is_wrong_slot = matches!(r, Err(PopError::WrongSlot { .. }));
                        prop_assert!(is_wrong_slot);
                    }
                    prop_assert_eq!(&s, &before);
                }
            }
            check(&s, &model, overrun, false)?;
        }
        check(&s, &model, overrun, true)?;
        // Everything left unwinds in order.
        while let Some(m) = model.pop() {
            prop_assert_eq!(s.pop(Some(m.retp)).unwrap().frame.ret, m.ret);
        }
        prop_assert!(s.is_empty());
    }
}
