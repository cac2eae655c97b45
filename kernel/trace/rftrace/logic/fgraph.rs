// SPDX-License-Identifier: GPL-2.0
//! The per-task return-address shadow stack ("ret_stack") of the function
//! graph core: its layout, its word encoding and the walks over it. The
//! operations that change a stack are in [`super::retstack`], generic over
//! where the stack lives.
//!
//! When a traced function is entered, the graph core saves the address the
//! function will return to, replaces it on the real stack by the address of
//! `return_to_handler`, and records a frame here. On return the frame is
//! taken back, the return callbacks of the interested graph ops run, and the
//! saved address is where execution continues. Unwinders use the frames to
//! translate `return_to_handler` back into the real return address.
//!
//! # Layout
//!
//! One task owns `SHADOW_STACK_WORDS` (512) 64-bit words, 4096 bytes: the
//! size of the page the 6.12 C code allocates per task. The stack grows
//! upward from word 0; `top` is the index of the first free word (C's
//! `curr_ret_stack`). A frame pushed at `s` is:
//!
//! ```text
//!   word s + 0   real return address             (RetFrame::ret)
//!   word s + 1   traced function address         (RetFrame::func)
//!   word s + 2   entry time                      (RetFrame::calltime)
//!   word s + 3   time of traced children         (RetFrame::subtime)
//!   word s + 4   address of the return slot      (RetFrame::retp)
//!   word s + 5   header word: link 5, kind, ops bitmap
//!   then, for each reservation: n data words, then a data word
//!   describing them (link, kind DATA, n - 1, ops index)
//! ```
//!
//! The five record words are, in this order, the fields of the x86_64 6.12
//! `struct ftrace_ret_stack` with `CONFIG_FUNCTION_PROFILER=y` (no `fp`
//! field: x86 does not define `HAVE_FUNCTION_GRAPH_FP_TEST`), so a pointer
//! to word `s` can be handed to C code as that structure.
//!
//! Every header and data word has the same low bits:
//!
//! ```text
//!   bits  0..=9    link: distance in words from this word down to the
//!                  first word of its frame (5 for a header word)
//!   bits 10..=11   kind: 0 reserved (frame being entered), 1 bitmap
//!                  (frame committed), 2 data
//!   kind 1: bits 12..=27  bitmap of the ops indices whose return
//!                          callback runs (only the ops that accepted;
//!                          6.12 always sets bit 0 too)
//!   kind 2: bits 12..=16  number of data words minus one (1..=32 words)
//!           bits 17..=20  ops index owning the data
//! ```
//!
//! (The big comment of 6.12 `fgraph.c` places the data size and index at
//! bits 12-17 and 18-23; its code, followed here, uses 12-16 and 17-20.)
//!
//! From the top, the word at `top - 1` is always a header or data word of
//! the top frame, so its link gives the frame's first word; the word below
//! that first word is the last word of the frame underneath, and so on down
//! to word 0. Frames cannot be found from the bottom: the first frame
//! starts at word 0, but nothing above a header tells a data word from the
//! record of the next frame (a data area's size is in the word after it),
//! so every walk starts at the top (or at an offset a previous walk
//! returned) and goes down.
//!
//! Words 496..=511 hold one task variable per ops index (C's
//! `fgraph_get_task_var`). Frames and data never reach word [`STACK_LIMIT`] (490): a push needs its six words to
//! end below it and a reservation its words to end below it, leaving six
//! spare words between the highest possible frame and the task variables.
//! Without data that is 81 nested frames.
//!
//! # Memory per task
//!
//! 4096 bytes of words, as in C, and the offset, the depth and the overrun
//! count, which the kernel keeps in `task_struct` (`curr_ret_stack`,
//! `curr_ret_depth`, `trace_overrun`) and the host model beside its array.
//!
//! # Use
//!
//! At entry, `RetStack::enter` pushes a frame, runs the entry callback of
//! each candidate ops (which may reserve data) and commits the frame with
//! the bitmap of the ops that accepted, or removes it when none did. The
//! lower-level steps (`push`, `mark`, `reserve`, `rollback`, `commit`) are
//! public for callbacks that reach the stack through `current`
//! (`fgraph_reserve_data()`). At return, `return_begin`, the callbacks and
//! `return_finish` do the reverse. Ops registration indices come from
//! [`OpsSlots`].
//!
//! # Against 6.12
//!
//! Same: the word encoding, the budget and limits (4096 bytes, data up to
//! 256 bytes in whole words, 16 ops indices, the push and reservation
//! limits), the walk and its sanity test (a link of 0 or one reaching
//! below word 0 means a corrupted stack), the overrun count on a full
//! stack, the depth accounting, the unwinder lookup (tail calls included) and the frames left in place when
//! an ops is unregistered (its bit stays; the return path skips indices
//! that are not live, see [`return_targets`]).
//!
//! Different:
//! - a zero-byte reservation takes one word (C writes a malformed data
//!   word);
//! - the committed bitmap holds only the ops that accepted: 6.12 also sets
//!   bit 0, running index 0's return callback for calls it declined;
//! - a second reservation by one ops in one frame is refused (C documents
//!   this but does not check it);
//! - reserving is refused unless the top frame is being entered, and for
//!   an ops index of 16 or more (C does not check);
//! - a push stores 0 in `subtime` and a reservation zeroes its words (C
//!   leaves what was there);
//! - the return can check the return slot address (`RetStack::pop`'s
//!   `expect_retp`): x86_64 6.12 checks nothing but the link; the other
//!   architectures' frame-pointer test needs an `fp` word the x86_64
//!   structure does not have;
//! - `RetStack::retrieve_parent` is the 6.13
//!   `fgraph_retrieve_parent_data()`, absent from 6.12;
//! - an unwinder start offset above the top finds nothing.
//!
//! 6.12 has no depth limit of its own: a push fails only when the stack is
//! full; `max_graph_depth` is the tracer's entry callback declining. How
//! the stores are ordered against interrupts on the same task: see
//! [`super::retstack`].

/// Bytes of one task's shadow stack (a page, as in 6.12).
pub const SHADOW_STACK_SIZE: usize = 4096;
/// Bytes per word.
pub const WORD_BYTES: usize = 8;
/// Words of one task's shadow stack (C's `SHADOW_STACK_OFFSET`).
pub const SHADOW_STACK_WORDS: usize = SHADOW_STACK_SIZE / WORD_BYTES;
/// Number of graph ops indices (C's `FGRAPH_ARRAY_SIZE`).
pub const OPS_SLOTS: usize = 16;
/// Words of the frame record, before the header word (C's
/// `FGRAPH_FRAME_OFFSET`).
pub const FRAME_WORDS: usize = 5;
/// Index of the real return address in a frame record.
pub const FRAME_RET: usize = 0;
/// Index of the traced function address in a frame record.
pub const FRAME_FUNC: usize = 1;
/// Index of the entry time in a frame record.
pub const FRAME_CALLTIME: usize = 2;
/// Index of the profiler's children time in a frame record.
pub const FRAME_SUBTIME: usize = 3;
/// Index of the return slot address in a frame record.
pub const FRAME_RETP: usize = 4;
/// Frames and data end strictly below this word (C's
/// `SHADOW_STACK_MAX_OFFSET`).
pub const STACK_LIMIT: usize = SHADOW_STACK_WORDS - (FRAME_WORDS + 1 + OPS_SLOTS);
/// First word of the per-ops task variables.
pub const TASK_VARS: usize = SHADOW_STACK_WORDS - OPS_SLOTS;
/// Most data words one reservation can hold.
pub const MAX_DATA_WORDS: usize = 32;
/// Most bytes one reservation can hold (C's `FGRAPH_MAX_DATA_SIZE`).
pub const MAX_DATA_SIZE: usize = MAX_DATA_WORDS * WORD_BYTES;

const LINK_MASK: u64 = (1 << 10) - 1;
const KIND_SHIFT: u32 = 10;
const KIND_MASK: u64 = 3;
pub(crate) const KIND_RESERVED: u64 = 0;
pub(crate) const KIND_BITMAP: u64 = 1;
pub(crate) const KIND_DATA: u64 = 2;
const BITMAP_SHIFT: u32 = 12;
const BITMAP_MASK: u64 = 0xffff;
const DSIZE_SHIFT: u32 = 12;
const DSIZE_MASK: u64 = 0x1f;
const DIDX_SHIFT: u32 = 17;
const DIDX_MASK: u64 = 0xf;

pub(crate) const fn link_of(w: u64) -> usize {
    (w & LINK_MASK) as usize
}

pub(crate) const fn kind_of(w: u64) -> u64 {
    (w >> KIND_SHIFT) & KIND_MASK
}

pub(crate) const fn data_len_of(w: u64) -> usize {
    ((w >> DSIZE_SHIFT) & DSIZE_MASK) as usize + 1
}

pub(crate) const fn data_idx_of(w: u64) -> usize {
    ((w >> DIDX_SHIFT) & DIDX_MASK) as usize
}

/// The header word of a frame being entered.
pub const fn reserved_word() -> u64 {
    (KIND_RESERVED << KIND_SHIFT) | FRAME_WORDS as u64
}

/// The header word of a committed frame with this ops bitmap.
pub const fn bitmap_word(bitmap: u16) -> u64 {
    ((bitmap as u64) << BITMAP_SHIFT) | (KIND_BITMAP << KIND_SHIFT) | FRAME_WORDS as u64
}

/// The word describing `words` (1..=32) data words of ops `idx` (0..16),
/// `link` words above the first word of the frame. Out-of-range fields are
/// masked to their widths.
pub const fn data_word(idx: usize, words: usize, link: usize) -> u64 {
    (((idx as u64) & DIDX_MASK) << DIDX_SHIFT)
        | (((words as u64).wrapping_sub(1) & DSIZE_MASK) << DSIZE_SHIFT)
        | (KIND_DATA << KIND_SHIFT)
        | ((link as u64) & LINK_MASK)
}

/// The record of one frame (C's `struct ftrace_ret_stack` on x86_64 with
/// the profiler).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RetFrame {
    /// The real return address.
    pub ret: u64,
    /// The traced function.
    pub func: u64,
    /// Entry time.
    pub calltime: u64,
    /// Time spent in traced children (the function profiler's).
    pub subtime: u64,
    /// Address of the stack slot holding the return address.
    pub retp: u64,
}

/// Why a push failed: the caller does not hook the return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PushError {
    /// No room for a frame; the overrun count went up (C: `-EBUSY`).
    Full,
}

/// Why an entry did not hook the return.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EnterError {
    /// No room for a frame (C: `-EBUSY` from the push).
    Full,
    /// No ops accepted the call; the frame was removed.
    NotWanted,
}

/// Why a return found no usable frame. Every variant means a corrupted
/// or mismatched stack: the caller stops graph tracing (C's
/// `ftrace_graph_stop()`); the stack is left as it was.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PopError {
    /// No frame at all.
    Empty,
    /// The word below the top does not lead to a frame.
    BadLink {
        /// The offset the walk started from.
        top: usize,
    },
    /// The frame was pushed for another return slot.
    WrongSlot {
        /// The slot recorded at entry.
        expected: u64,
        /// The slot given at return.
        got: u64,
    },
}

/// A frame just pushed and not committed yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PendingFrame {
    pub(crate) start: usize,
    pub(crate) depth: i32,
}

/// A successful entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entered {
    /// Call depth of the entry.
    pub depth: i32,
    /// The committed bitmap: the ops that accepted.
    pub bitmap: u16,
    /// Offset of the frame's first word.
    pub offset: usize,
}

/// A frame being returned from (C's `struct ftrace_graph_ret` plus what
/// the return path needs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Returning {
    /// The frame record.
    pub frame: RetFrame,
    /// Ops indices whose return callback runs, before skipping the ones
    /// no longer registered.
    pub bitmap: u16,
    /// Call depth of the frame.
    pub depth: i32,
    /// The task's overrun count.
    pub overrun: u32,
    pub(crate) start: usize,
}

/// The ops indices of a return bitmap whose callback runs: the set bits
/// whose index is still registered (`live`). An unregistered ops leaves
/// its bit in the frames; its index then holds the stub, which is skipped.
pub const fn return_targets(bitmap: u16, live: u16) -> u16 {
    bitmap & live
}

/// The set bits of a mask, lowest first.
#[derive(Clone, Copy, Debug)]
pub struct Bits(pub u16);

impl Iterator for Bits {
    type Item = usize;

    #[inline(always)]
    fn next(&mut self) -> Option<usize> {
        if self.0 == 0 {
            return None;
        }
        let i = self.0.trailing_zeros() as usize;
        self.0 &= self.0 - 1;
        Some(i)
    }
}

/// Read access to the words of a shadow stack: the model's array here, a
/// task's live stack in the kernel (read word by word, as interrupts on
/// that task and unwinders on other CPUs may be looking at it too). The
/// walks below are the same code for both.
pub trait Words {
    /// Word `i`, `None` past the end.
    fn word(&self, i: usize) -> Option<u64>;
}

impl Words for [u64] {
    fn word(&self, i: usize) -> Option<u64> {
        self.get(i).copied()
    }
}

/// The first word of the frame that ends just below `end` (C's
/// `get_ret_stack()`); `None` at the bottom or on a corrupted link.
pub fn frame_below<W: Words + ?Sized>(w: &W, end: usize) -> Option<usize> {
    let last = end.checked_sub(1)?;
    let link = link_of(w.word(last)?);
    if link == 0 || link > last {
        return None;
    }
    Some(last - link)
}

/// The record of the frame starting at `start`.
pub fn read_frame<W: Words + ?Sized>(w: &W, start: usize) -> Option<RetFrame> {
    let at = |k: usize| w.word(start.checked_add(k)?);
    Some(RetFrame {
        ret: at(FRAME_RET)?,
        func: at(FRAME_FUNC)?,
        calltime: at(FRAME_CALLTIME)?,
        subtime: at(FRAME_SUBTIME)?,
        retp: at(FRAME_RETP)?,
    })
}

/// The ops bitmap in a frame's header word.
#[inline(always)]
pub const fn bitmap_of(header: u64) -> u16 {
    ((header >> BITMAP_SHIFT) & BITMAP_MASK) as u16
}

/// Where the data of ops `idx` lies in the frame ending at `end`: first
/// word and number of words (C's `fgraph_retrieve_data()` walk).
pub fn find_data<W: Words + ?Sized>(w: &W, end: usize, idx: usize) -> Option<(usize, usize)> {
    let mut pos = end.checked_sub(1)?;
    loop {
        let v = w.word(pos)?;
        if kind_of(v) != KIND_DATA {
            return None;
        }
        let n = data_len_of(v);
        if data_idx_of(v) == idx {
            return Some((pos.checked_sub(n)?, n));
        }
        pos = pos.checked_sub(n + 1)?;
    }
}

/// Looks for the frame that saved the return address of slot `retp`,
/// walking down from `from` (0: from `top`), skipping frames whose saved
/// address is `return_handler` itself (tail calls). Gives the real return
/// address and the offset to start the next lookup from.
pub fn find_ret_addr<W: Words + ?Sized>(
    w: &W,
    top: usize,
    from: usize,
    retp: u64,
    return_handler: u64,
) -> Option<(u64, usize)> {
    let mut end = if from == 0 { top } else { from };
    if end > top {
        return None;
    }
    while let Some(s) = frame_below(w, end) {
        let f = read_frame(w, s)?;
        if f.retp == retp && f.ret != return_handler {
            return Some((f.ret, s));
        }
        end = s;
    }
    None
}

/// C's `ftrace_graph_ret_addr()` over a shadow stack: `ret` unless it is
/// `return_handler` and a frame saved the real address of slot `retp`,
/// searching from `*idx` (0: the top), which is then advanced past that
/// frame (a frame found at offset 0 sets it to 0, so the next search
/// starts at the top again, as in C).
pub fn ret_addr<W: Words + ?Sized>(
    w: &W,
    top: usize,
    idx: &mut usize,
    ret: u64,
    retp: u64,
    return_handler: u64,
) -> u64 {
    if ret != return_handler {
        return ret;
    }
    match find_ret_addr(w, top, *idx, retp, return_handler) {
        Some((real, next)) => {
            *idx = next;
            real
        }
        None => ret,
    }
}

/// The data word of a reservation of `words` words by ops `idx` on top of
/// a frame whose top word is `below` (C's `fgraph_reserve_data()`).
pub const fn reserve_word(idx: usize, words: usize, below: u64) -> u64 {
    // At most 1023 + 32 + 1: no overflow (and `data_word` masks the link).
    data_word(
        idx,
        words,
        link_of(below).wrapping_add(words).wrapping_add(1),
    )
}

/// Words needed for `size_bytes` of data, `None` when out of range
/// (1..=256 bytes; C also lets 0 through, as one word).
pub const fn data_words_for(size_bytes: usize) -> Option<usize> {
    if size_bytes > MAX_DATA_SIZE {
        None
    } else if size_bytes == 0 {
        Some(1)
    } else {
        Some(size_bytes.div_ceil(WORD_BYTES))
    }
}

/// The registration indices of graph ops (C's `fgraph_lru_*` and
/// `fgraph_array_bitmask`): a released index goes to the back of the
/// queue, so that frames still carrying its bit meet the stub for as long
/// as possible before another ops gets the index.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpsSlots {
    queue: [Option<u8>; OPS_SLOTS],
    next: usize,
    last: usize,
    used: u16,
}

impl Default for OpsSlots {
    fn default() -> Self {
        Self::new()
    }
}

impl OpsSlots {
    /// All indices free, handed out 0 first.
    pub const fn new() -> Self {
        let mut queue = [None; OPS_SLOTS];
        let mut i = 0;
        while i < OPS_SLOTS {
            queue[i] = Some(i as u8);
            i += 1;
        }
        Self {
            queue,
            next: 0,
            last: 0,
            used: 0,
        }
    }

    /// Takes the least recently released free index.
    pub fn alloc(&mut self) -> Option<usize> {
        let slot = self.queue.get_mut(self.next)?;
        let idx = slot.take()?;
        self.next = (self.next + 1) % OPS_SLOTS;
        self.used |= 1 << idx;
        Some(usize::from(idx))
    }

    /// Gives back an index in use. False, and nothing changed, if it is
    /// not in use.
    pub fn release(&mut self, idx: usize) -> bool {
        if idx >= OPS_SLOTS || self.used & (1 << idx) == 0 {
            return false;
        }
        let Some(slot) = self.queue.get_mut(self.last) else {
            return false;
        };
        if slot.is_some() {
            return false;
        }
        *slot = Some(idx as u8);
        self.last = (self.last + 1) % OPS_SLOTS;
        self.used &= !(1 << idx);
        true
    }
}
