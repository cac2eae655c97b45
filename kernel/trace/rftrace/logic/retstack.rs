// SPDX-License-Identifier: GPL-2.0
//! The operations on one shadow stack, generic over where its words and
//! counters live ([`StackMem`]): the kernel instantiates them over a
//! task's live stack (kernel/trace/rftrace/fgraph.rs), the host tests over
//! a plain array ([`Array`], [`Model`]). The layout and the word encoding
//! are in [`super::fgraph`].
//!
//! # Interrupts
//!
//! In the kernel, an interrupt on the same task can enter and leave traced
//! functions at any instant, pushing and popping frames above the current
//! `top`. The stores below are ordered so that such an interrupt always
//! finds a walkable stack: a new top word is written before `top` moves
//! over it (an unwinder in the interrupt follows its link), and written
//! again after (an interrupt that came before `top` moved may have pushed
//! over it and popped). A compiler fence is enough: the interrupt runs on
//! the same CPU. On the host the fences cost nothing.

use super::fgraph::{
    bitmap_of, bitmap_word, data_words_for, find_data, frame_below, kind_of, link_of, read_frame,
    reserve_word, reserved_word, ret_addr, Bits, EnterError, Entered, PendingFrame, PopError,
    PushError, Returning, Words, FRAME_CALLTIME, FRAME_FUNC, FRAME_RET, FRAME_RETP, FRAME_SUBTIME,
    FRAME_WORDS, KIND_RESERVED, OPS_SLOTS, SHADOW_STACK_WORDS, STACK_LIMIT, TASK_VARS,
};
use core::sync::atomic::{compiler_fence, Ordering};

/// Where a shadow stack lives: its `SHADOW_STACK_WORDS` words and the three
/// counters 6.12 keeps in `task_struct` (`curr_ret_stack`,
/// `curr_ret_depth`, `trace_overrun`).
///
/// The code here checks every index it stores to against [`STACK_LIMIT`]
/// or the task variable range first; `set_word` past the end is ignored.
pub trait StackMem: Words {
    /// Stores word `i`.
    fn set_word(&mut self, i: usize, v: u64);
    /// The first free word. A corrupted (negative) stored value must read
    /// as some value above [`STACK_LIMIT`], which every user refuses.
    fn top(&self) -> usize;
    /// Moves the top.
    fn set_top(&mut self, top: usize);
    /// The call depth of the top frame, -1 when empty.
    fn depth(&self) -> i32;
    /// Sets the depth.
    fn set_depth(&mut self, depth: i32);
    /// How many pushes failed for lack of room.
    fn overrun(&self) -> u32;
    /// Sets the overrun count.
    fn set_overrun(&mut self, n: u32);
}

/// One shadow stack over storage `M`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetStack<M> {
    mem: M,
}

impl<M: StackMem> Words for RetStack<M> {
    #[inline(always)]
    fn word(&self, i: usize) -> Option<u64> {
        self.mem.word(i)
    }
}

impl<M: StackMem> RetStack<M> {
    /// The stack stored in `mem`.
    #[inline(always)]
    pub const fn on(mem: M) -> Self {
        Self { mem }
    }

    /// The storage.
    pub fn mem(&self) -> &M {
        &self.mem
    }

    /// Empties the stack and clears the task variables and the overrun
    /// count, leaving the other words as they are (C's `graph_init_task()`).
    pub fn reset(&mut self) {
        self.mem.set_top(0);
        self.mem.set_depth(-1);
        self.mem.set_overrun(0);
        self.init_task_vars();
    }

    /// The first free word (C's `curr_ret_stack`).
    #[inline(always)]
    pub fn top(&self) -> usize {
        self.mem.top()
    }

    /// The call depth of the top frame, -1 when empty (C's
    /// `curr_ret_depth`).
    pub fn depth(&self) -> i32 {
        self.mem.depth()
    }

    /// How many pushes failed for lack of room (C's `trace_overrun`).
    pub fn overrun(&self) -> u32 {
        self.mem.overrun()
    }

    /// Where the walks start: the top, or 0 (nothing to walk) if the top
    /// is out of range (a corrupted counter).
    fn walk_top(&self) -> usize {
        let top = self.top();
        if top > STACK_LIMIT {
            0
        } else {
            top
        }
    }

    /// The top frame if it is being entered (its header is reserved).
    fn pending(&self) -> Option<usize> {
        let top = self.top();
        let start = frame_below(self, top)?;
        let header = start.checked_add(FRAME_WORDS)?;
        if header >= top {
            return None;
        }
        let w = self.word(header)?;
        (kind_of(w) == KIND_RESERVED && link_of(w) == FRAME_WORDS).then_some(start)
    }

    /// Pushes a frame at function entry (C's `ftrace_push_return_trace()`
    /// and the depth count of `function_graph_enter()`). The frame stays
    /// reserved until [`RetStack::enter`] commits it. Fails, counting an overrun,
    /// when its record and header would not end below [`STACK_LIMIT`].
    #[inline(always)]
    pub fn push(
        &mut self,
        ret: u64,
        func: u64,
        calltime: u64,
        retp: u64,
    ) -> Result<PendingFrame, PushError> {
        let start = self.top();
        let new_top = match start.checked_add(FRAME_WORDS + 1) {
            Some(t) if t < STACK_LIMIT => t,
            _ => {
                self.mem.set_overrun(self.mem.overrun().wrapping_add(1));
                return Err(PushError::Full);
            }
        };
        let hdr = start + FRAME_WORDS;
        self.mem.set_word(hdr, reserved_word());
        self.mem.set_word(start + FRAME_RET, ret);
        compiler_fence(Ordering::SeqCst);
        self.mem.set_top(new_top);
        compiler_fence(Ordering::SeqCst);
        self.mem.set_word(hdr, reserved_word());
        self.mem.set_word(start + FRAME_RET, ret);
        self.mem.set_word(start + FRAME_FUNC, func);
        self.mem.set_word(start + FRAME_CALLTIME, calltime);
        self.mem.set_word(start + FRAME_SUBTIME, 0);
        self.mem.set_word(start + FRAME_RETP, retp);
        let depth = self.mem.depth().wrapping_add(1);
        self.mem.set_depth(depth);
        Ok(PendingFrame { start, depth })
    }

    /// Reserves `size_bytes` (0..=256, rounded up to words, at least one)
    /// for ops `idx` on the top frame while it is being entered (C's
    /// `fgraph_reserve_data()`); the words are zeroed. Gives the first
    /// word's offset. `None` when the size or index is out of range, the
    /// top frame is not being entered, `idx` already reserved in it, or
    /// the words would not end below [`STACK_LIMIT`].
    pub fn reserve(&mut self, idx: usize, size_bytes: usize) -> Option<usize> {
        let n = data_words_for(size_bytes)?;
        if idx >= OPS_SLOTS {
            return None;
        }
        self.pending()?;
        let first = self.top();
        if find_data(self, first, idx).is_some() {
            return None;
        }
        let new_top = first.checked_add(n + 1)?;
        if new_top >= STACK_LIMIT {
            return None;
        }
        let desc = reserve_word(idx, n, self.word(first.checked_sub(1)?)?);
        for i in first..first + n {
            self.mem.set_word(i, 0);
        }
        self.mem.set_word(new_top - 1, desc);
        compiler_fence(Ordering::SeqCst);
        self.mem.set_top(new_top);
        compiler_fence(Ordering::SeqCst);
        self.mem.set_word(new_top - 1, desc);
        Some(first)
    }

    /// Ends the entry of frame `p`, this stack's own push: committed with
    /// `bitmap`, or removed with the depth restored when `bitmap` is 0.
    #[inline(always)]
    fn finish_entry(&mut self, p: PendingFrame, bitmap: u16) -> Result<u16, EnterError> {
        if bitmap == 0 {
            self.mem.set_top(p.start);
            self.mem.set_depth(p.depth.wrapping_sub(1));
            return Err(EnterError::NotWanted);
        }
        self.mem
            .set_word(p.start + FRAME_WORDS, bitmap_word(bitmap));
        Ok(bitmap)
    }

    /// A whole entry (C's `function_graph_enter()`): pushes the frame,
    /// asks the ops of `candidates` in index order through `entry` (true:
    /// hook the return; a declining ops' reservations are dropped) and
    /// commits. Any error means "do not hook this return". Only the ops
    /// that accepted get the return (6.12 also sets bit 0 in every frame,
    /// running index 0's return callback for calls it declined).
    #[inline(always)]
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
        F: FnMut(&mut OpsCtx<'_, M>) -> bool,
    {
        let p = self
            .push(ret, func, calltime, retp)
            .map_err(|_| EnterError::Full)?;
        let mut bitmap = 0u16;
        if candidates & candidates.wrapping_sub(1) == 0 {
            // One candidate (or none): what it reserves and then declines
            // goes with the frame, so no mark to return to.
            let i = candidates.trailing_zeros() as usize;
            if i < OPS_SLOTS
                && entry(&mut OpsCtx {
                    stack: self,
                    idx: i,
                })
            {
                bitmap = 1 << i;
            }
            // Its own tail: merged with the loop's below, the built graph
            // entry measured 7 instructions more per call.
            let bitmap = self.finish_entry(p, bitmap)?;
            return Ok(Entered {
                depth: p.depth,
                bitmap,
                offset: p.start,
            });
        }
        for i in Bits(candidates) {
            let mark = self.top();
            if entry(&mut OpsCtx {
                stack: self,
                idx: i,
            }) {
                bitmap |= 1 << i;
            } else if self.top() != mark {
                // Drop what the declining ops reserved.
                self.mem.set_top(mark);
            }
        }
        // The callbacks could only add data above the frame: it is still
        // the top frame being entered.
        let bitmap = self.finish_entry(p, bitmap)?;
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
    #[inline(always)]
    pub fn return_begin(&self, expect_retp: Option<u64>) -> Result<Returning, PopError> {
        let top = self.top();
        if top == 0 {
            return Err(PopError::Empty);
        }
        let bad = PopError::BadLink { top };
        if top > STACK_LIMIT {
            return Err(bad);
        }
        let start = frame_below(self, top).ok_or(bad)?;
        let header = start.checked_add(FRAME_WORDS).ok_or(bad)?;
        if header >= top {
            return Err(bad);
        }
        let frame = read_frame(self, start).ok_or(bad)?;
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
            bitmap: bitmap_of(hw),
            depth: self.depth(),
            overrun: self.overrun(),
            start,
        })
    }

    /// Removes the frame read by [`RetStack::return_begin`] and its data.
    /// False, and nothing changed, if that frame is no longer below the
    /// top.
    #[inline(always)]
    pub fn return_finish(&mut self, r: &Returning) -> bool {
        if r.start >= self.top() {
            return false;
        }
        // The callbacks read the frame: it goes only now.
        compiler_fence(Ordering::SeqCst);
        self.mem.set_top(r.start);
        self.mem.set_depth(r.depth.wrapping_sub(1));
        true
    }

    /// A whole return (C's `__ftrace_return_to_handler()`): reads the top
    /// frame, makes the callbacks' shared record from it with `init`, runs
    /// `ret` for each index of its bitmap registered in `live` in index
    /// order, then removes the frame. The real return address is in the
    /// result's `frame.ret`.
    #[inline(always)]
    pub fn leave<T, I, F>(
        &mut self,
        expect_retp: Option<u64>,
        live: u16,
        init: I,
        mut ret: F,
    ) -> Result<Returning, PopError>
    where
        I: FnOnce(&Returning) -> T,
        F: FnMut(&mut OpsCtx<'_, M>, &Returning, &mut T),
    {
        let r = self.return_begin(expect_retp)?;
        let mut shared = init(&r);
        for i in Bits(super::fgraph::return_targets(r.bitmap, live)) {
            ret(
                &mut OpsCtx {
                    stack: self,
                    idx: i,
                },
                &r,
                &mut shared,
            );
        }
        self.return_finish(&r);
        Ok(r)
    }

    /// Where the data ops `idx` reserved in the top frame lies (C's
    /// `fgraph_retrieve_data()`): first word and number of words.
    pub fn retrieve(&self, idx: usize) -> Option<(usize, usize)> {
        if idx >= OPS_SLOTS {
            return None;
        }
        find_data(self, self.walk_top(), idx)
    }

    /// The end (one past the last word) of the frame `depth` frames below
    /// the top one.
    fn frame_end(&self, depth: usize) -> Option<usize> {
        let mut end = self.walk_top();
        let mut d = depth;
        loop {
            let start = frame_below(self, end)?;
            if d == 0 {
                return Some(end);
            }
            d -= 1;
            end = start;
        }
    }

    /// Offset of the first word of the `idx`-th frame from the top (0:
    /// the top frame; C's `ftrace_graph_get_ret_stack()`).
    pub fn ret_stack_offset(&self, idx: usize) -> Option<usize> {
        frame_below(self, self.frame_end(idx)?)
    }

    /// Adds `delta` (wrapping) to the entry time of every frame: the sleep
    /// time correction of 6.12's sched_switch probe when `sleep-time` is
    /// off.
    pub fn add_calltime(&mut self, delta: u64) {
        let mut end = self.walk_top();
        while let Some(start) = frame_below(self, end) {
            let at = start.wrapping_add(FRAME_CALLTIME);
            if let Some(w) = self.word(at) {
                self.mem.set_word(at, w.wrapping_add(delta));
            }
            end = start;
        }
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
            Some(idx) => ret_addr(self, self.walk_top(), idx, ret, retp, return_handler),
            None => ret,
        }
    }

    /// The offset of the task variable of ops `idx` (C's
    /// `fgraph_get_task_var()`).
    pub const fn task_var_offset(idx: usize) -> Option<usize> {
        if idx < OPS_SLOTS {
            Some(TASK_VARS + idx)
        } else {
            None
        }
    }

    /// Sets the task variable of ops `idx` (false: no such index).
    pub fn set_task_var(&mut self, idx: usize, v: u64) -> bool {
        match Self::task_var_offset(idx) {
            Some(at) => {
                self.mem.set_word(at, v);
                true
            }
            None => false,
        }
    }

    /// Zeroes the task variable of ops `idx` (done for every task when
    /// the ops registers).
    pub fn init_task_var(&mut self, idx: usize) -> bool {
        self.set_task_var(idx, 0)
    }

    /// Zeroes all task variables.
    pub fn init_task_vars(&mut self) {
        for i in TASK_VARS..SHADOW_STACK_WORDS {
            self.mem.set_word(i, 0);
        }
    }
}

/// What an ops callback may do with the stack, for its own index.
pub struct OpsCtx<'a, M> {
    stack: &'a mut RetStack<M>,
    idx: usize,
}

impl<M: StackMem> OpsCtx<'_, M> {
    /// The ops index.
    pub fn idx(&self) -> usize {
        self.idx
    }

    /// Call depth of the top frame.
    pub fn depth(&self) -> i32 {
        self.stack.depth()
    }
}

#[cfg(test)]
#[path = "retstack_tests.rs"]
mod tests;
