// SPDX-License-Identifier: GPL-2.0
//! The per-task return-address shadow stack ("ret_stack") of the function
//! graph core, as a plain array of words and an offset.
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
//! upward from word 0; [`RetStack::top`] is the index of the first free
//! word (C's `curr_ret_stack`). A frame pushed at `s` is:
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
//!                          callback runs (bit 0 is always set, as in C)
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
//! Words 496..=511 hold one task variable per ops index
//! ([`RetStack::task_var`], C's `fgraph_get_task_var`). Frames and data
//! never reach word [`STACK_LIMIT`] (490): a push needs its six words to
//! end below it and a reservation its words to end below it, leaving six
//! spare words between the highest possible frame and the task variables.
//! Without data that is 81 nested frames.
//!
//! # Memory per task
//!
//! 4096 bytes of words, as in C. The model also keeps the offset, the
//! depth and the overrun count, which C keeps in `task_struct`
//! (`curr_ret_stack`, `curr_ret_depth`, `trace_overrun`):
//! `size_of::<RetStack>()` is 4112.
//!
//! # Use
//!
//! At entry, [`RetStack::enter`] pushes a frame, runs the entry callback
//! of each candidate ops (which may reserve data through [`OpsCtx`]) and
//! commits the frame with the bitmap of the ops that accepted, or removes
//! it when none did. The lower-level steps it is made of ([`RetStack::push`],
//! [`RetStack::mark`], [`RetStack::reserve_data`], [`RetStack::rollback`],
//! [`RetStack::commit`]) are public for glue code whose callbacks reach the
//! stack through `current`. At return, [`RetStack::leave`] (or
//! [`RetStack::return_begin`], the callbacks, [`RetStack::return_finish`])
//! does the reverse. Ops registration indices come from [`OpsSlots`].
//!
//! # Against 6.12
//!
//! Same: the word encoding, the budget and limits (4096 bytes, data up to
//! 256 bytes in whole words, 16 ops indices, the push and reservation
//! limits), the walk and its sanity test (a link of 0 or one reaching
//! below word 0 means a corrupted stack), the bit-0 quirk of the committed
//! bitmap, the overrun count on a full stack, the depth accounting, the
//! unwinder lookup (tail calls included) and the frames left in place when
//! an ops is unregistered (its bit stays; the return path skips indices
//! that are not live, see [`return_targets`]).
//!
//! Different:
//! - a zero-byte reservation is refused (C writes a malformed data word);
//! - a second reservation by one ops in one frame is refused (C documents
//!   this but does not check it);
//! - reserving is refused unless the top frame is being entered, and for
//!   an ops index of 16 or more (C does not check);
//! - a push stores 0 in `subtime` and a reservation zeroes its words (C
//!   leaves what was there);
//! - the return can check the return slot address ([`RetStack::pop`]'s
//!   `expect_retp`): x86_64 6.12 checks nothing but the link; the other
//!   architectures' frame-pointer test needs an `fp` word the x86_64
//!   structure does not have;
//! - [`RetStack::retrieve_parent_data`] is the 6.13
//!   `fgraph_retrieve_parent_data()`, absent from 6.12;
//! - an unwinder start offset above the top finds nothing.
//!
//! 6.12 has no depth limit of its own: a push fails only when the stack is
//! full; `max_graph_depth` is the tracer's entry callback declining. The
//! C code orders its stores and barriers so an interrupt on the same task
//! sees a walkable stack at every instant; this model takes `&mut self`,
//! and its kernel user must publish `top` only after the words below it
//! are written, as [`RetStack::push`] and [`RetStack::reserve_data`] do.

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
const KIND_RESERVED: u64 = 0;
const KIND_BITMAP: u64 = 1;
const KIND_DATA: u64 = 2;
const BITMAP_SHIFT: u32 = 12;
const BITMAP_MASK: u64 = 0xffff;
const DSIZE_SHIFT: u32 = 12;
const DSIZE_MASK: u64 = 0x1f;
const DIDX_SHIFT: u32 = 17;
const DIDX_MASK: u64 = 0xf;

const fn link_of(w: u64) -> usize {
    (w & LINK_MASK) as usize
}

const fn kind_of(w: u64) -> u64 {
    (w >> KIND_SHIFT) & KIND_MASK
}

const fn data_len_of(w: u64) -> usize {
    ((w >> DSIZE_SHIFT) & DSIZE_MASK) as usize + 1
}

const fn data_idx_of(w: u64) -> usize {
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

/// A header or data word, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Word {
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
pub const fn decode(w: u64) -> Word {
    let link = link_of(w);
    match kind_of(w) {
        KIND_RESERVED => Word::Reserved { link },
        KIND_BITMAP => Word::Bitmap {
            link,
            bitmap: ((w >> BITMAP_SHIFT) & BITMAP_MASK) as u16,
        },
        KIND_DATA => Word::Data {
            link,
            idx: data_idx_of(w),
            words: data_len_of(w),
        },
        _ => Word::Unknown(w),
    }
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
    /// The frame to commit is not the top frame being entered: the stack
    /// was misused or corrupted; the caller should stop graph tracing.
    Corrupted,
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
    start: usize,
    depth: i32,
}

impl PendingFrame {
    /// Offset of the frame's first word.
    pub fn offset(&self) -> usize {
        self.start
    }

    /// Call depth of the entry (0 for the outermost traced call).
    pub fn depth(&self) -> i32 {
        self.depth
    }
}

/// A successful entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entered {
    /// Call depth of the entry.
    pub depth: i32,
    /// The committed bitmap (bit 0 always set).
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
    start: usize,
}

impl Returning {
    /// Offset of the frame's first word.
    pub fn offset(&self) -> usize {
        self.start
    }
}

/// The ops indices of a return bitmap whose callback runs: the set bits
/// whose index is still registered (`live`). An unregistered ops leaves
/// its bit in the frames; its index then holds the stub, which is skipped.
pub const fn return_targets(bitmap: u16, live: u16) -> u16 {
    bitmap & live
}

/// The set bits of `mask`, lowest first.
pub fn bits(mask: u16) -> impl Iterator<Item = usize> {
    (0..OPS_SLOTS).filter(move |&i| mask & (1u16 << i) != 0)
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

/// The ops bitmap of the committed frame starting at `start`.
pub fn frame_bitmap<W: Words + ?Sized>(w: &W, start: usize) -> Option<u16> {
    Some(bitmap_of(w.word(start.checked_add(FRAME_WORDS)?)?))
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

/// The first word of the `depth`-th frame below `top` (0: the top frame).
pub fn nth_frame<W: Words + ?Sized>(w: &W, top: usize, depth: usize) -> Option<usize> {
    let mut start = frame_below(w, top)?;
    for _ in 0..depth {
        start = frame_below(w, start)?;
    }
    Some(start)
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
    data_word(idx, words, link_of(below) + words + 1)
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

/// One task's shadow stack.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetStack {
    words: [u64; SHADOW_STACK_WORDS],
    top: usize,
    depth: i32,
    overrun: u32,
}

impl Default for RetStack {
    fn default() -> Self {
        Self::new()
    }
}

impl RetStack {
    /// An empty stack, all words zero (C's `graph_init_task()` on a fresh
    /// allocation).
    pub const fn new() -> Self {
        Self {
            words: [0; SHADOW_STACK_WORDS],
            top: 0,
            depth: -1,
            overrun: 0,
        }
    }

    /// Empties the stack and clears the task variables and the overrun
    /// count, leaving the other words as they are (C's `graph_init_task()`).
    pub fn reset(&mut self) {
        self.top = 0;
        self.depth = -1;
        self.overrun = 0;
        self.init_task_vars();
    }

    /// The first free word (C's `curr_ret_stack`).
    pub fn top(&self) -> usize {
        self.top
    }

    /// The call depth of the top frame, -1 when empty (C's
    /// `curr_ret_depth`).
    pub fn depth(&self) -> i32 {
        self.depth
    }

    /// How many pushes failed for lack of room (C's `trace_overrun`).
    pub fn overrun(&self) -> u32 {
        self.overrun
    }

    /// No frame on the stack.
    pub fn is_empty(&self) -> bool {
        self.top == 0
    }

    /// The raw words.
    pub fn words(&self) -> &[u64; SHADOW_STACK_WORDS] {
        &self.words
    }

    fn word(&self, i: usize) -> Option<u64> {
        self.words.get(i).copied()
    }

    fn frame_below(&self, end: usize) -> Option<usize> {
        frame_below(&self.words[..], end)
    }

    fn read_frame(&self, start: usize) -> Option<RetFrame> {
        read_frame(&self.words[..], start)
    }

    /// The top frame if it is being entered (its header is reserved).
    fn pending(&self) -> Option<usize> {
        let start = self.frame_below(self.top)?;
        let header = start.checked_add(FRAME_WORDS)?;
        if header >= self.top {
            return None;
        }
        let w = self.word(header)?;
        if kind_of(w) == KIND_RESERVED && link_of(w) == FRAME_WORDS {
            Some(start)
        } else {
            None
        }
    }

    /// Pushes a frame at function entry (C's `ftrace_push_return_trace()`
    /// and the depth count of `function_graph_enter()`). The frame stays
    /// reserved until [`RetStack::commit`]. Fails, counting an overrun,
    /// when its record and header would not end below [`STACK_LIMIT`].
    pub fn push(
        &mut self,
        ret: u64,
        func: u64,
        calltime: u64,
        retp: u64,
    ) -> Result<PendingFrame, PushError> {
        let start = self.top;
        let new_top = match start.checked_add(FRAME_WORDS + 1) {
            Some(t) if t < STACK_LIMIT => t,
            _ => {
                self.overrun = self.overrun.wrapping_add(1);
                return Err(PushError::Full);
            }
        };
        let Some(slot) = self.words.get_mut(start..new_top) else {
            self.overrun = self.overrun.wrapping_add(1);
            return Err(PushError::Full);
        };
        let rec = [ret, func, calltime, 0, retp, reserved_word()];
        slot.copy_from_slice(&rec);
        self.top = new_top;
        self.depth = self.depth.wrapping_add(1);
        Ok(PendingFrame {
            start,
            depth: self.depth,
        })
    }

    /// The current top, to give back to [`RetStack::rollback`] when the
    /// ops about to be asked declines.
    pub fn mark(&self) -> usize {
        self.top
    }

    /// Reserves `size_bytes` (1..=256, rounded up to words) for ops `idx`
    /// on the top frame while it is being entered (C's
    /// `fgraph_reserve_data()`). `None` when the size or index is out of
    /// range, the top frame is not being entered, `idx` already reserved
    /// in it, or the words would not end below [`STACK_LIMIT`].
    pub fn reserve_data(&mut self, idx: usize, size_bytes: usize) -> Option<&mut [u64]> {
        if idx >= OPS_SLOTS || size_bytes == 0 || size_bytes > MAX_DATA_SIZE {
            return None;
        }
        let n = size_bytes.div_ceil(WORD_BYTES);
        self.pending()?;
        if self.find_data(self.top, idx).is_some() {
            return None;
        }
        let below = link_of(self.word(self.top.checked_sub(1)?)?);
        let new_top = self.top.checked_add(n + 1)?;
        if new_top >= STACK_LIMIT {
            return None;
        }
        let first = self.top;
        let desc = data_word(idx, n, below + n + 1);
        let area = self.words.get_mut(first..new_top)?;
        let (data, last) = area.split_at_mut(n);
        data.fill(0);
        *last.first_mut()? = desc;
        self.top = new_top;
        self.words.get_mut(first..first + n)
    }

    /// Drops what was reserved on the top frame being entered since
    /// `mark` (what C does when an entry callback returns 0). False, and
    /// nothing changed, unless `mark` is a top this frame had.
    pub fn rollback(&mut self, mark: usize) -> bool {
        let Some(start) = self.pending() else {
            return false;
        };
        let floor = start + FRAME_WORDS + 1;
        let mut end = self.top;
        loop {
            if end == mark {
                self.top = mark;
                return true;
            }
            if end <= floor {
                return false;
            }
            let Some(w) = self.word(end - 1) else {
                return false;
            };
            if kind_of(w) != KIND_DATA {
                return false;
            }
            match end.checked_sub(data_len_of(w) + 1) {
                Some(e) if e >= floor => end = e,
                _ => return false,
            }
        }
    }

    /// Ends an entry. With a non-zero `bitmap` of accepting ops, the frame
    /// is committed with `bitmap | 1` (6.12 always sets bit 0) and that
    /// value returned; with zero, the frame and its data are removed and
    /// the depth restored (`NotWanted`).
    pub fn commit(&mut self, p: PendingFrame, bitmap: u16) -> Result<u16, EnterError> {
        if self.pending() != Some(p.start) {
            return Err(EnterError::Corrupted);
        }
        if bitmap == 0 {
            self.top = p.start;
            self.depth = self.depth.wrapping_sub(1);
            return Err(EnterError::NotWanted);
        }
        let b = bitmap | 1;
        let header = self
            .words
            .get_mut(p.start + FRAME_WORDS)
            .ok_or(EnterError::Corrupted)?;
        *header = bitmap_word(b);
        Ok(b)
    }

    /// A whole entry (C's `function_graph_enter()`): pushes the frame,
    /// asks the ops of `candidates` in index order through `entry` (true:
    /// hook the return; a declining ops' reservations are dropped) and
    /// commits. Any error means "do not hook this return".
    pub fn enter<F>(
        &mut self,
        ret: u64,
        func: u64,
        calltime: u64,
        retp: u64,
        candidates: u16,
        mut entry: F,
    ) -> Result<Entered, EnterError>
    where
        F: FnMut(&mut OpsCtx<'_>) -> bool,
    {
        let p = self
            .push(ret, func, calltime, retp)
            .map_err(|_| EnterError::Full)?;
        let mut bitmap = 0u16;
        for i in bits(candidates) {
            let mark = self.mark();
            let wanted = entry(&mut OpsCtx {
                stack: self,
                idx: i,
            });
            if wanted {
                bitmap |= 1 << i;
            } else {
                self.rollback(mark);
            }
        }
        let bitmap = self.commit(p, bitmap)?;
        Ok(Entered {
            depth: p.depth,
            bitmap,
            offset: p.start,
        })
    }

    /// Reads the top frame at function return (C's
    /// `ftrace_pop_return_trace()`), without removing it: the return
    /// callbacks still see its data. With `expect_retp`, the frame must
    /// have been pushed for that return slot.
    pub fn return_begin(&self, expect_retp: Option<u64>) -> Result<Returning, PopError> {
        if self.top == 0 {
            return Err(PopError::Empty);
        }
        let bad = PopError::BadLink { top: self.top };
        let start = self.frame_below(self.top).ok_or(bad)?;
        let header = start + FRAME_WORDS;
        if header >= self.top {
            return Err(bad);
        }
        let frame = self.read_frame(start).ok_or(bad)?;
        let hw = self.word(header).ok_or(bad)?;
        if let Some(got) = expect_retp {
            if got != frame.retp {
                return Err(PopError::WrongSlot {
                    expected: frame.retp,
                    got,
                });
            }
        }
        Ok(Returning {
            frame,
            bitmap: ((hw >> BITMAP_SHIFT) & BITMAP_MASK) as u16,
            depth: self.depth,
            overrun: self.overrun,
            start,
        })
    }

    /// Removes the frame read by [`RetStack::return_begin`] and its data.
    /// False, and nothing changed, if that frame is no longer below the
    /// top.
    pub fn return_finish(&mut self, r: &Returning) -> bool {
        if r.start >= self.top {
            return false;
        }
        self.top = r.start;
        self.depth = self.depth.wrapping_sub(1);
        true
    }

    /// [`RetStack::return_begin`] and [`RetStack::return_finish`] at once.
    pub fn pop(&mut self, expect_retp: Option<u64>) -> Result<Returning, PopError> {
        let r = self.return_begin(expect_retp)?;
        self.return_finish(&r);
        Ok(r)
    }

    /// A whole return (C's `__ftrace_return_to_handler()`): reads the top
    /// frame, runs `ret` for each index of its bitmap registered in `live`
    /// in index order, then removes the frame. The real return address is
    /// in the result's `frame.ret`.
    pub fn leave<F>(
        &mut self,
        expect_retp: Option<u64>,
        live: u16,
        mut ret: F,
    ) -> Result<Returning, PopError>
    where
        F: FnMut(&mut OpsCtx<'_>, &Returning),
    {
        let r = self.return_begin(expect_retp)?;
        for i in bits(return_targets(r.bitmap, live)) {
            ret(
                &mut OpsCtx {
                    stack: self,
                    idx: i,
                },
                &r,
            );
        }
        self.return_finish(&r);
        Ok(r)
    }

    fn find_data(&self, end: usize, idx: usize) -> Option<(usize, usize)> {
        find_data(&self.words[..], end, idx)
    }

    /// The data ops `idx` reserved in the top frame (C's
    /// `fgraph_retrieve_data()`); its length in bytes is 8 times the
    /// slice's.
    pub fn retrieve_data(&self, idx: usize) -> Option<&[u64]> {
        if idx >= OPS_SLOTS {
            return None;
        }
        let (s, n) = self.find_data(self.top, idx)?;
        self.words.get(s..s + n)
    }

    /// [`RetStack::retrieve_data`], writable.
    pub fn retrieve_data_mut(&mut self, idx: usize) -> Option<&mut [u64]> {
        if idx >= OPS_SLOTS {
            return None;
        }
        let (s, n) = self.find_data(self.top, idx)?;
        self.words.get_mut(s..s + n)
    }

    /// The end (one past the last word) of the frame `depth` frames below
    /// the top one.
    fn frame_end(&self, depth: usize) -> Option<usize> {
        let mut end = self.top;
        let mut d = depth;
        loop {
            let start = self.frame_below(end)?;
            if d == 0 {
                return Some(end);
            }
            d -= 1;
            end = start;
        }
    }

    /// The data ops `idx` reserved in the frame `depth` levels below the
    /// top one (0: the top frame). 6.13's `fgraph_retrieve_parent_data()`.
    pub fn retrieve_parent_data(&self, idx: usize, depth: usize) -> Option<&[u64]> {
        if idx >= OPS_SLOTS {
            return None;
        }
        let end = self.frame_end(depth)?;
        let (s, n) = self.find_data(end, idx)?;
        self.words.get(s..s + n)
    }

    /// Offset of the first word of the `idx`-th frame from the top (0:
    /// the top frame).
    pub fn ret_stack_offset(&self, idx: usize) -> Option<usize> {
        let end = self.frame_end(idx)?;
        self.frame_below(end)
    }

    /// The `idx`-th frame from the top (C's `ftrace_graph_get_ret_stack()`).
    pub fn ret_stack(&self, idx: usize) -> Option<RetFrame> {
        self.read_frame(self.ret_stack_offset(idx)?)
    }

    /// Sets `subtime` of the `idx`-th frame from the top (what the
    /// function profiler writes through `ftrace_graph_get_ret_stack()`).
    pub fn set_subtime(&mut self, idx: usize, subtime: u64) -> bool {
        let Some(start) = self.ret_stack_offset(idx) else {
            return false;
        };
        match self.words.get_mut(start + FRAME_SUBTIME) {
            Some(w) => {
                *w = subtime;
                true
            }
            None => false,
        }
    }

    /// Adds `delta` (wrapping) to the entry time of every frame: the sleep
    /// time correction of 6.12's sched_switch probe when `sleep-time` is
    /// off.
    pub fn add_calltime(&mut self, delta: u64) {
        let mut end = self.top;
        while let Some(start) = self.frame_below(end) {
            if let Some(w) = self.words.get_mut(start + FRAME_CALLTIME) {
                *w = w.wrapping_add(delta);
            }
            end = start;
        }
    }

    /// The frames from the top down, with their offsets.
    pub fn frames(&self) -> Frames<'_> {
        Frames {
            stack: self,
            end: self.top,
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
        find_ret_addr(&self.words[..], self.top, start, retp, return_handler)
    }

    /// C's `ftrace_graph_ret_addr()`: `ret` unless it is `return_handler`
    /// and a frame saved the real address of slot `retp`, searching from
    /// `*idx` (0: the top), which is then advanced past that frame. As in
    /// C, a frame found at offset 0 sets `*idx` to 0, so the next search
    /// starts at the top again.
    pub fn ret_addr(
        &self,
        idx: Option<&mut usize>,
        ret: u64,
        retp: u64,
        return_handler: u64,
    ) -> u64 {
        match idx {
            Some(idx) => ret_addr(&self.words[..], self.top, idx, ret, retp, return_handler),
            None => ret,
        }
    }

    /// The task variable of ops `idx` (C's `fgraph_get_task_var()`).
    pub fn task_var(&self, idx: usize) -> Option<u64> {
        if idx >= OPS_SLOTS {
            return None;
        }
        self.word(TASK_VARS + idx)
    }

    /// The task variable of ops `idx`, writable.
    pub fn task_var_mut(&mut self, idx: usize) -> Option<&mut u64> {
        if idx >= OPS_SLOTS {
            return None;
        }
        self.words.get_mut(TASK_VARS + idx)
    }

    /// Zeroes the task variable of ops `idx` (done for every task when
    /// the ops registers).
    pub fn init_task_var(&mut self, idx: usize) -> bool {
        match self.task_var_mut(idx) {
            Some(v) => {
                *v = 0;
                true
            }
            None => false,
        }
    }

    /// Zeroes all task variables.
    pub fn init_task_vars(&mut self) {
        if let Some(vars) = self.words.get_mut(TASK_VARS..) {
            vars.fill(0);
        }
    }
}

/// Iterator over the frames of a [`RetStack`], top first: `(offset,
/// record)`.
pub struct Frames<'a> {
    stack: &'a RetStack,
    end: usize,
}

impl Iterator for Frames<'_> {
    type Item = (usize, RetFrame);

    fn next(&mut self) -> Option<Self::Item> {
        let start = self.stack.frame_below(self.end)?;
        let f = self.stack.read_frame(start)?;
        self.end = start;
        Some((start, f))
    }
}

/// What an ops callback may do with the stack, for its own index.
pub struct OpsCtx<'a> {
    stack: &'a mut RetStack,
    idx: usize,
}

impl OpsCtx<'_> {
    /// The ops index.
    pub fn idx(&self) -> usize {
        self.idx
    }

    /// Call depth of the top frame.
    pub fn depth(&self) -> i32 {
        self.stack.depth
    }

    /// [`RetStack::reserve_data`] for this ops (entry only).
    pub fn reserve_data(&mut self, size_bytes: usize) -> Option<&mut [u64]> {
        self.stack.reserve_data(self.idx, size_bytes)
    }

    /// [`RetStack::retrieve_data`] for this ops.
    pub fn retrieve_data(&self) -> Option<&[u64]> {
        self.stack.retrieve_data(self.idx)
    }

    /// [`RetStack::retrieve_data_mut`] for this ops.
    pub fn retrieve_data_mut(&mut self) -> Option<&mut [u64]> {
        self.stack.retrieve_data_mut(self.idx)
    }

    /// [`RetStack::retrieve_parent_data`] for this ops.
    pub fn retrieve_parent_data(&self, depth: usize) -> Option<&[u64]> {
        self.stack.retrieve_parent_data(self.idx, depth)
    }

    /// [`RetStack::ret_stack`].
    pub fn ret_stack(&self, idx: usize) -> Option<RetFrame> {
        self.stack.ret_stack(idx)
    }

    /// [`RetStack::set_subtime`].
    pub fn set_subtime(&mut self, idx: usize, subtime: u64) -> bool {
        self.stack.set_subtime(idx, subtime)
    }

    /// This ops' task variable.
    pub fn task_var_mut(&mut self) -> Option<&mut u64> {
        self.stack.task_var_mut(self.idx)
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

    /// The indices in use.
    pub fn used(&self) -> u16 {
        self.used
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec;
    use std::vec::Vec;

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
        assert_eq!(core::mem::size_of::<RetStack>(), 4112);
        let mut s = RetStack::new();
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
        let mut s = RetStack::new();
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
            // Bit 0 is set even when ops 0 declined, as in 6.12.
            assert_eq!(e.bitmap, 0b1011);
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
                .leave(Some(slot(d)), live, |c, r| {
                    assert_eq!(r.frame.func, 0x100 + d);
                    seen.push((c.idx(), c.retrieve_data().map(|x| x.to_vec())));
                })
                .unwrap();
            assert_eq!(r.frame.ret, real(d));
            assert_eq!(r.frame.calltime, 1000 + d);
            assert_eq!(r.depth, d as i32);
            assert_eq!(
                seen,
                [
                    (0, None),
                    (1, Some(vec![d])),
                    (3, Some(vec![30 + d, 31 + d]))
                ]
            );
        }
        assert!(s.is_empty());
        assert_eq!(s.depth(), -1);
        assert_eq!(s.pop(None), Err(PopError::Empty));
    }

    #[test]
    fn low_level_entry() {
        let mut s = RetStack::new();
        let p = s.push(real(0), 0x10, 5, slot(0)).unwrap();
        assert_eq!(p.depth(), 0);
        let m = s.mark();
        assert!(s.reserve_data(2, 24).is_some());
        let m2 = s.mark();
        assert!(s.reserve_data(4, 8).is_some());
        // A mark in the middle of a data area is refused.
        assert!(!s.rollback(m2 - 1));
        assert!(s.rollback(m2));
        assert_eq!(s.retrieve_data(4), None);
        assert_eq!(s.retrieve_data(2).map(|d| d.len()), Some(3));
        assert!(s.rollback(m));
        assert_eq!(s.top(), FRAME_WORDS + 1);
        // Nothing accepted: the frame goes away.
        assert_eq!(s.commit(p, 0), Err(EnterError::NotWanted));
        assert!(s.is_empty());
        assert_eq!(s.depth(), -1);
        assert_eq!(s.commit(p, 1), Err(EnterError::Corrupted));

        let p = s.push(real(0), 0x10, 5, slot(0)).unwrap();
        assert_eq!(s.commit(p, 0b100), Ok(0b101));
        // Committed: no more reservations or rollbacks, no second commit.
        assert!(s.reserve_data(2, 8).is_none());
        assert!(!s.rollback(s.mark()));
        assert_eq!(s.commit(p, 1), Err(EnterError::Corrupted));
        let r = s.pop(None).unwrap();
        assert_eq!((r.frame.ret, r.bitmap, r.offset()), (real(0), 0b101, 0));
    }

    #[test]
    fn overflow() {
        let mut s = RetStack::new();
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
        let mut s = RetStack::new();
        while s.top() + 6 + 6 < STACK_LIMIT {
            let p = s.push(1, 1, 1, 1).unwrap();
            s.commit(p, 1).unwrap();
        }
        let p = s.push(2, 2, 2, 2).unwrap();
        let room = STACK_LIMIT - s.top() - 1;
        assert!(room < 6);
        assert!(s.reserve_data(1, 8 * room).is_none());
        assert!(s.reserve_data(1, 8 * (room - 1)).is_some());
        assert_eq!(s.top(), STACK_LIMIT - 1);
        assert_eq!(s.commit(p, 2), Ok(3));
        assert_eq!(s.push(3, 3, 3, 3), Err(PushError::Full));
        assert_eq!(s.pop(Some(2)).unwrap().frame.ret, 2);
    }

    #[test]
    fn data_limits() {
        let mut s = RetStack::new();
        s.push(1, 2, 3, 4).unwrap();
        assert!(s.reserve_data(0, 0).is_none());
        assert!(s.reserve_data(0, MAX_DATA_SIZE + 1).is_none());
        assert!(s.reserve_data(16, 8).is_none());
        assert_eq!(s.reserve_data(0, MAX_DATA_SIZE).map(|d| d.len()), Some(32));
        assert!(s.reserve_data(0, 8).is_none(), "one reservation per ops");
        assert_eq!(s.reserve_data(1, 1).map(|d| d.len()), Some(1));
        assert_eq!(s.reserve_data(2, 9).map(|d| d.len()), Some(2));
        assert_eq!(s.retrieve_data(0).map(|d| d.len()), Some(32));
        assert_eq!(s.retrieve_data(3), None);
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
        let mut e = RetStack::new();
        assert!(e.reserve_data(0, 8).is_none());
        assert_eq!(e.retrieve_data(0), None);
        assert_eq!(e.retrieve_parent_data(0, 0), None);
    }

    #[test]
    fn declined_ops_data_is_dropped() {
        let mut s = RetStack::new();
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
        s.leave(Some(slot(0)), 0xffff, |c, _| {
            seen |= 1 << c.idx();
            // Return callbacks cannot reserve.
            assert!(c.reserve_data(8).is_none());
        })
        .unwrap();
        assert_eq!(seen, 0b1011);
    }

    #[test]
    fn parent_data() {
        let mut s = RetStack::new();
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
        s.leave(None, 0xffff, |c, _| {
            if c.idx() == 2 {
                got = c.retrieve_parent_data(2).map(|x| x.to_vec());
            }
        })
        .unwrap();
        assert_eq!(got, Some(vec![102]));
    }

    #[test]
    fn corruption() {
        let mut s = RetStack::new();
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
        assert!(s.leave(Some(slot(0)), 0xffff, |_, _| seen = true).is_err());
        assert!(!seen);
        assert_eq!(s, before);
        // A broken link below the top.
        let top = s.top();
        s.words[top - 1] = 0;
        assert_eq!(s.pop(None), Err(PopError::BadLink { top }));
        s.words[top - 1] = data_word(0, 1, top);
        assert_eq!(s.pop(None), Err(PopError::BadLink { top }));
        assert_eq!(s.ret_stack(0), None);
        assert_eq!(s.frames().count(), 0);
        s.words = before.words;
        assert_eq!(s.pop(Some(slot(2))).unwrap().frame.ret, real(2));
    }

    #[test]
    fn unwinder_lookups() {
        let mut s = RetStack::new();
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
        let mut s = RetStack::new();
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
        let mut s = RetStack::new();
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
        let mut s = RetStack::new();
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
        s.leave(None, 1, |c, _| *c.task_var_mut().unwrap() = 1)
            .unwrap_err();
    }

    #[test]
    fn unregistered_ops() {
        let mut slots = OpsSlots::new();
        let a = slots.alloc().unwrap();
        let b = slots.alloc().unwrap();
        assert_eq!((a, b), (0, 1));
        let mut s = RetStack::new();
        s.enter(real(0), 0, 0, slot(0), slots.used(), |c| {
            c.reserve_data(8).unwrap()[0] = 5;
            c.idx() == b
        })
        .unwrap();
        // b goes away while its frame is on the stack: the bit stays in the
        // frame, the return path skips the index, which holds the stub.
        assert!(slots.release(b));
        assert!(!slots.release(b));
        let mut got = Vec::new();
        let r = s
            .leave(None, slots.used(), |c, _| got.push(c.idx()))
            .unwrap();
        assert_eq!(r.bitmap, 0b11);
        // Only a's callback runs (bit 0 is set although a declined).
        assert_eq!(got, [a]);
        // The LRU hands b's index out again only after every other free
        // index.
        let mut got = Vec::new();
        for _ in 0..14 {
            got.push(slots.alloc().unwrap());
        }
        assert_eq!(got, (2..16).collect::<Vec<_>>());
        assert_eq!(slots.alloc(), Some(b));
        assert_eq!(slots.alloc(), None);
        assert_eq!(slots.used(), 0xffff);
        assert_eq!(return_targets(0b1011, 0b0110), 0b0010);
        assert_eq!(bits(0x8005).collect::<Vec<_>>(), [0, 2, 15]);
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

    fn check(
        s: &RetStack,
        model: &[MFrame],
        overrun: u32,
        deep: bool,
    ) -> Result<(), TestCaseError> {
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
            let mut s = RetStack::new();
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
                            let n_words = sz.div_ceil(8);
                            let fits = sz > 0 && sz <= MAX_DATA_SIZE
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
                                m.bitmap |= 1;
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
                        let r = s.leave(expect, 0xffff, |c, _| {
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
                                let want: Vec<(usize, Option<Vec<u64>>)> = bits(m.bitmap)
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
}
