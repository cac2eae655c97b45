// SPDX-License-Identifier: GPL-2.0

//! The sites of a batch and the writes of each step, gathered into runs
//! of at most `TEXT_POKE_SCATTER_PAGES` pages, each written through one
//! mapping.
//!
//! A step (the `int3`s, the tails, the first bytes) writes one to four
//! bytes at each of many call sites, some ten to a page. Each run goes to
//! `text_poke_scatter()`, which maps its pages in the poking mm (seen only
//! by the writing CPU, interrupts off: no writable alias of kernel text
//! exists that another CPU could use) and lets [`write_run`] store the
//! step's bytes of the run's sites there. No byte between two sites is
//! read or written, so a run costs one mapping however far apart its sites
//! are, and the bytes go from the batch's [`Poke`]s straight to the text:
//! nothing is gathered or copied per site. Which steps write at a site is
//! found once, when its [`Poke`] is made ([`Steps`]).
//!
//! Measured on the tiny kernel (guest instructions; the function tracer
//! enabled on all 16,029 sites), the three steps take 2.9 ms: 99 runs,
//! whose mappings cost 0.3 ms together, and some 50 instructions per site
//! and step here. With runs of two pages (the span of one
//! `__text_poke()`) they took 7.0 ms: about 1,000 runs of some 4,400
//! instructions each. One `text_poke()` per run of nearby sites, the bytes
//! between read and written back, took 37.8 to 66.7 ms whatever the
//! largest gap between sites of a run (0 to 2,048 bytes).

use crate::insn::{self, Emulate, Steps, SITE_SIZE};
use core::ptr;
use kernel::bindings;
use kernel::ffi::c_void;

const PAGE_SIZE: u64 = bindings::PAGE_SIZE as u64;

/// A run's bytes lie within this many bytes from the start of the page of
/// its first byte: the pages `text_poke_scatter()` maps at once.
const SPAN: u64 = bindings::TEXT_POKE_SCATTER_PAGES as u64 * PAGE_SIZE;

/// One site of a batch: where, what must be there now, what comes.
#[repr(C)]
#[derive(Clone, Copy, Default)]
pub(crate) struct Poke {
    pub(crate) ip: u64,
    /// Where a CPU that traps on the site continues: the call target of
    /// the new instruction, or 0 to step over it (a NOP).
    pub(crate) emulate_call: u64,
    pub(crate) old: [u8; SITE_SIZE],
    pub(crate) new: [u8; SITE_SIZE],
    /// The steps that write at the site, from `old` and `new`.
    steps: Steps,
}

impl Poke {
    /// A rewrite of the site at `ip` from `old` to `new`; `None` when `new`
    /// is neither a call nor the NOP.
    pub(crate) fn new(ip: u64, old: [u8; SITE_SIZE], new: [u8; SITE_SIZE]) -> Option<Self> {
        let emulate_call = match insn::emulate(ip, &new)? {
            Emulate::Skip => 0,
            Emulate::Call(t) => t,
        };
        Some(Poke {
            ip,
            emulate_call,
            old,
            new,
            steps: Steps::of(&old, &new),
        })
    }

    /// A site that no step writes, to fill a queue.
    pub(crate) const EMPTY: Poke = Poke {
        ip: 0,
        emulate_call: 0,
        old: insn::NOP5,
        new: insn::NOP5,
        steps: Steps::NONE,
    };

    /// Whether step `step` writes at this site.
    pub(crate) fn writes_in(&self, step: usize) -> bool {
        self.steps.has(step)
    }

    /// What step `step` (0 to 2, [`Steps`]) writes at this site:
    /// the first byte's address and the bytes.
    #[inline(always)]
    fn write(&self, step: usize) -> Option<(u64, &[u8])> {
        let w = self.steps.write(&self.new, step)?;
        Some((self.ip + w.offset as u64, w.bytes))
    }
}

/// What `text_poke_scatter()` hands to [`write_run`]: the step and the
/// sites of the run being written.
///
/// # Invariants
///
/// `pokes` points to `len` pokes that stay unchanged while this lives;
/// what step `step` writes at each of them lies within the run, which
/// starts at `start`.
#[repr(C)]
struct Run {
    pokes: *const Poke,
    len: usize,
    step: usize,
    start: u64,
}

/// Writes step `step` (0 to 2: the `int3`s, the tails, the first bytes)
/// of rewriting `pokes`, sorted by address and without duplicates: one
/// `text_poke_scatter()` for each run of sites that lie within [`SPAN`]
/// and of which one or more write in this step. A site's writes all lie
/// within its instruction, so the runs follow from the addresses alone:
/// each step finds the same ones without looking at what it writes.
///
/// # Safety
///
/// `text_mutex` is held, and every poke's site is a call site of live
/// text that holds the poke's `old` bytes with the writes of the steps
/// before this one applied, unchanged by anyone else while the mutex is
/// held.
pub(crate) unsafe fn write_step(pokes: &[Poke], step: usize) {
    let mut rest = pokes;
    while let Some(first) = rest.first() {
        let limit = (first.ip & !(PAGE_SIZE - 1)).saturating_add(SPAN);
        let n = rest
            .iter()
            .position(|p| p.ip.saturating_add(SITE_SIZE as u64) > limit)
            .unwrap_or(rest.len())
            .max(1);
        let (run, after) = rest.split_at(n);
        rest = after;
        if !run.iter().any(|p| p.writes_in(step)) {
            continue;
        }
        let end = run
            .last()
            .unwrap_or(first)
            .ip
            .saturating_add(SITE_SIZE as u64);
        // SAFETY: per the function's contract; every write of `run` lies
        // within its sites' instructions, all within `first.ip..end`,
        // which ends within `SPAN` of the start of `first.ip`'s page.
        unsafe { write_run(run, step, first.ip, end) };
    }
}

/// Writes step `step` of `pokes`, whose writes lie within `start..end`,
/// through one mapping.
///
/// # Safety
///
/// As [`write_step`]; `start..end` lies within [`SPAN`] from the start of
/// the page of `start`.
unsafe fn write_run(pokes: &[Poke], step: usize, start: u64, end: u64) {
    // INVARIANT: `write_step` placed every write of `pokes` within
    // `start..end`, and `pokes` is borrowed until this call returns.
    let run = Run {
        pokes: pokes.as_ptr(),
        len: pokes.len(),
        step,
        start,
    };
    // SAFETY: `text_mutex` is held; `start..end` lies within the pages
    // `text_poke_scatter()` maps at once, and every byte `store_run` writes
    // there is a call site of the batch in live text.
    // `store_run` stores only the step's bytes of the run's sites, and
    // `run` outlives the call.
    let r = unsafe {
        bindings::text_poke_scatter(
            start as *mut c_void,
            (end - start) as usize,
            Some(store_run),
            ptr::from_ref(&run).cast(),
        )
    };
    if r != 0 {
        // Nothing of the run was written (the glue warned). The step must
        // be whole before the sync that follows it: a later step on a site
        // this one skipped would complete an instruction from stale bytes
        // (a NOP's tail behind a call opcode: a wild call). So each site's
        // bytes go through `text_poke()`, which stops the kernel if it
        // cannot write, as the C core's batches do.
        for p in pokes {
            if let Some((at, bytes)) = p.write(step) {
                // SAFETY: `text_mutex` is held; `at` is a call site of live
                // text and `bytes` the step's bytes for it, as above;
                // `text_poke()` copies them during the call.
                unsafe {
                    bindings::text_poke(at as *mut c_void, bytes.as_ptr().cast(), bytes.len())
                };
            }
        }
    }
}

/// Stores the bytes of a run: `text_poke_scatter()` calls it with `dst`,
/// where the run's first byte is mapped writable for `len` bytes, and the
/// run's [`Run`] as `ctx`.
///
/// # Safety
///
/// As `text_poke_scatter()` calls it for [`write_run`].
unsafe extern "C" fn store_run(dst: *mut c_void, ctx: *const c_void, len: usize) {
    // SAFETY: `ctx` is the `Run` that `write_run` passed, alive for the
    // call.
    let run = unsafe { &*ctx.cast::<Run>() };
    // SAFETY: `len` pokes at `pokes`, unchanged meanwhile (the invariants
    // of `Run`).
    let pokes = unsafe { core::slice::from_raw_parts(run.pokes, run.len) };
    let dst = dst.cast::<u8>();
    for p in pokes {
        let Some((at, bytes)) = p.write(run.step) else {
            continue;
        };
        let off = at.wrapping_sub(run.start) as usize;
        if off >= len || len - off < bytes.len() {
            // Not placed by `write_step`; nothing outside the run is
            // written.
            continue;
        }
        // SAFETY: `dst..dst + len` is mapped writable for this call, and
        // `off + bytes.len()` is at most `len`.
        let to = unsafe { dst.add(off) };
        for (i, b) in bytes.iter().enumerate() {
            // SAFETY: `i` is below `bytes.len()` (above), so the byte is
            // in the run, mapped writable.
            unsafe { poke_byte(to.add(i), *b) };
        }
    }
}
crate::nokprobe::nokprobe!(store_run);

/// Writes `b` at `p` with one `mov`: live text, a byte at a time, no call
/// out (this runs in the poking mm). In assembly, so that no sanitizer
/// instruments it: the poking mm's address lies in the user range, which
/// has no KASAN shadow (an instrumented store faults on the shadow).
///
/// # Safety
///
/// `p` is mapped writable.
#[inline(always)]
unsafe fn poke_byte(p: *mut u8, b: u8) {
    // SAFETY: a one-byte store to `p`, which the caller says is mapped
    // writable; no stack, flags kept.
    unsafe {
        core::arch::asm!(
            "mov byte ptr [{p}], {b}",
            p = in(reg) p,
            b = in(reg_byte) b,
            options(nostack, preserves_flags)
        )
    };
}
