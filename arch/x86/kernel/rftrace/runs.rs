// SPDX-License-Identifier: GPL-2.0

//! The writes of one step of a batch, gathered into runs of at most two
//! pages, each written through one mapping.
//!
//! A step (the `int3`s, the tails, the first bytes) writes one to four
//! bytes at each of many call sites, some tens to a page. Each run goes to
//! `text_poke_scatter()`, which maps its pages in the poking mm (seen only
//! by the writing CPU, interrupts off: no writable alias of kernel text
//! exists that another CPU could use), lets [`write_pieces`] store the
//! run's pieces there, and unmaps them. No byte between two pieces is read
//! or written, so a run costs one mapping however far apart its sites are.
//!
//! Measured on the tiny kernel (guest instructions; the function tracer
//! enabled on all 16,029 sites), the batches take 10.9 ms this way. With
//! one `text_poke()` per run of nearby sites, the bytes between read and
//! written back, they took 37.8 to 66.7 ms whatever the largest gap
//! between sites of a run (0 to 2,048 bytes): each `text_poke()` maps,
//! copies and compares its whole range.

use crate::insn::SITE_SIZE;
use crate::TextLocked;
use core::cell::UnsafeCell;
use core::ptr;
use kernel::bindings;
use kernel::ffi::c_void;

const PAGE_SIZE: usize = bindings::PAGE_SIZE;

/// A run's bytes lie within the page of its first byte and the next.
const SPAN: u64 = 2 * PAGE_SIZE as u64;

/// The most pieces a run holds: sites do not overlap, and a run spans two
/// pages at most.
const MAX_PIECES: usize = 2 * PAGE_SIZE / SITE_SIZE + 1;

/// The bytes of one site that one step writes.
#[derive(Clone, Copy)]
struct Piece {
    /// From the run's first byte (below [`SPAN`]).
    off: u16,
    /// How many of `bytes` (1 to [`SITE_SIZE`]).
    len: u8,
    bytes: [u8; SITE_SIZE],
}

const NO_PIECE: Piece = Piece {
    off: 0,
    len: 0,
    bytes: [0; SITE_SIZE],
};

/// What `text_poke_scatter()` hands to [`write_pieces`]: the pieces of
/// the run being written.
///
/// # Invariants
///
/// `ptr` points to `len` pieces that stay unchanged while this lives; each
/// piece's bytes lie within the run, `off + len` at most the run's length.
#[repr(C)]
struct Pieces {
    ptr: *const Piece,
    len: usize,
}

/// The pieces of the run being gathered (one run at a time, as every
/// writer holds `text_mutex`).
static PIECES: TextLocked<[Piece; MAX_PIECES]> =
    TextLocked(UnsafeCell::new([NO_PIECE; MAX_PIECES]));

/// One step's writes, in rising address order, flushed run by run.
pub(crate) struct Runs {
    pieces: &'static mut [Piece; MAX_PIECES],
    n: usize,
    /// The first byte of the run.
    start: u64,
    /// One past its last byte.
    end: u64,
}

impl Runs {
    /// The runs of one step.
    ///
    /// # Safety
    ///
    /// `text_mutex` is held for as long as the value lives.
    pub(crate) unsafe fn new() -> Self {
        Runs {
            // SAFETY: `text_mutex` is held (the contract), and the one
            // `Runs` alive at a time is the only user of the pieces.
            pieces: unsafe { PIECES.get() },
            n: 0,
            start: 0,
            end: 0,
        }
    }

    /// Adds the write of `bytes` (1 to [`SITE_SIZE`] of them) at `addr`,
    /// above every write added since the last [`Runs::flush`].
    ///
    /// # Safety
    ///
    /// `text_mutex` is held and `addr..addr + bytes.len()` lies within a
    /// call site of the batch being written: live text, unchanged by
    /// anyone else while the mutex is held.
    pub(crate) unsafe fn add(&mut self, addr: u64, bytes: &[u8]) {
        let len = bytes.len().min(SITE_SIZE);
        let end = addr + len as u64;
        let page = self.start & !(PAGE_SIZE as u64 - 1);
        if self.n > 0 && (addr < self.end || end > page + SPAN || self.n == MAX_PIECES) {
            // SAFETY: per the function's contract.
            unsafe { self.flush() };
        }
        if self.n == 0 {
            self.start = addr;
        }
        let mut piece = Piece {
            // Below `SPAN` (checked above), which fits.
            off: (addr - self.start) as u16,
            len: len as u8,
            bytes: [0; SITE_SIZE],
        };
        piece.bytes[..len].copy_from_slice(&bytes[..len]);
        self.pieces[self.n] = piece;
        self.n += 1;
        self.end = end;
    }

    /// Writes the run gathered so far.
    ///
    /// # Safety
    ///
    /// `text_mutex` is held; the run was gathered by [`Runs::add`].
    pub(crate) unsafe fn flush(&mut self) {
        let n = core::mem::replace(&mut self.n, 0);
        if n == 0 {
            return;
        }
        // INVARIANT: `add` placed every piece within `start..end`, and the
        // pieces are not touched until this call returns.
        let pieces = Pieces {
            ptr: self.pieces.as_ptr(),
            len: n,
        };
        // SAFETY: `text_mutex` is held; `start..end` lies within the page
        // of `start` and the next (`add`) and is live text: call sites of
        // the batch and the text between them. `write_pieces` stores only
        // the pieces' bytes, and `pieces` outlives the call.
        unsafe {
            bindings::text_poke_scatter(
                self.start as *mut c_void,
                (self.end - self.start) as usize,
                Some(write_pieces),
                ptr::from_ref(&pieces).cast(),
            )
        };
    }
}

/// Stores the pieces of a run: `text_poke_scatter()` calls it with `dst`,
/// where the run's first byte is mapped writable for `len` bytes, and the
/// run's [`Pieces`] as `ctx`.
///
/// # Safety
///
/// As `text_poke_scatter()` calls it for [`Runs::flush`].
unsafe extern "C" fn write_pieces(dst: *mut c_void, ctx: *const c_void, len: usize) {
    // SAFETY: `ctx` is the `Pieces` that `Runs::flush` passed, alive for
    // the call.
    let p = unsafe { &*ctx.cast::<Pieces>() };
    // SAFETY: `len` initialized pieces at `ptr`, unchanged meanwhile (the
    // invariants of `Pieces`).
    let pieces = unsafe { core::slice::from_raw_parts(p.ptr, p.len) };
    let dst = dst.cast::<u8>();
    for w in pieces {
        let (off, n) = (usize::from(w.off), usize::from(w.len));
        if off + n > len {
            // Not from `Runs::add`; nothing outside the run is written.
            continue;
        }
        for (i, b) in w.bytes[..n].iter().enumerate() {
            // SAFETY: `dst..dst + len` is mapped writable for this call,
            // and `off + i` is below `len`. Volatile: live text, one byte
            // at a time, no call out (this runs in the poking mm).
            unsafe { ptr::write_volatile(dst.add(off + i), *b) };
        }
    }
}
crate::nokprobe::nokprobe!(write_pieces);
