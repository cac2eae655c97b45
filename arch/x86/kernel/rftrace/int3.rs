// SPDX-License-Identifier: GPL-2.0

//! Live rewriting of call sites in batches: the batch the `int3` handler
//! consults ([`DESC`]), the handler ([`rftrace_int3_handler`]) and its
//! emulation of a site being written, and the three-step writer
//! ([`write_batch`]) with its syncs and perf records.

use crate::insn::SITE_SIZE;
use crate::ktext;
use crate::runs::write_step;
use crate::runs::Poke;
use core::cell::UnsafeCell;
use core::ptr;
use core::sync::atomic::AtomicPtr;
use core::sync::atomic::AtomicU32;
use core::sync::atomic::AtomicUsize;
use core::sync::atomic::Ordering;
use kernel::bindings;
use kernel::ffi::c_int;
use kernel::ffi::c_ulong;
use kernel::ffi::c_void;
use kernel::prelude::*;
/// The batch the `int3` handler consults while it is being written.
///
/// # Invariants
///
/// While `refs` is non-zero, `pokes` points to `len` pokes, sorted by
/// address, that stay valid and unchanged: the writer holds one reference
/// from publishing the batch until after its last sync, and each handler
/// in flight one more; the writer waits for `refs` to reach zero before
/// it returns (and so before the pokes, the caller's, can go). `pokes`
/// and `len` change only while `refs` is zero.
///
/// Who is where, and what the writer waits for:
/// - A CPU that traps on an `int3` of the batch does so between the first
///   step and the last sync. Its handler runs with interrupts off, so the
///   sync after each step (an IPI every CPU must take) finds it gone; and
///   it holds a reference meanwhile.
/// - A CPU that enters the handler for an `int3` of someone else (a kprobe,
///   a debugger, the C core's `text_poke_bp()`) may do so at any moment,
///   also after the last sync, and may then be held up as long as an NMI
///   or a hypervisor likes. It takes a reference only if `refs` is not
///   zero (never from zero: a batch that has ended cannot be revived), and
///   the writer, having dropped its own, waits for that reference to go.
///   A handler that finds `refs` zero does not look at the batch.
pub(crate) struct BatchDesc {
    pokes: AtomicPtr<Poke>,
    len: AtomicUsize,
    refs: AtomicU32,
}

pub(crate) static DESC: BatchDesc = BatchDesc {
    pokes: AtomicPtr::new(ptr::null_mut()),
    len: AtomicUsize::new(0),
    refs: AtomicU32::new(0),
};

impl BatchDesc {
    /// Publishes `pokes` to the handler, with the writer's reference.
    ///
    /// # Safety
    ///
    /// `refs` is zero (no batch is published: `text_mutex` serializes the
    /// writers), and `pokes` stay valid and unchanged until
    /// [`BatchDesc::retire`] returns.
    unsafe fn publish(&self, pokes: &[Poke]) {
        self.pokes
            .store(pokes.as_ptr().cast_mut(), Ordering::Relaxed);
        self.len.store(pokes.len(), Ordering::Relaxed);
        // Pairs with the acquiring increment in `try_get`.
        self.refs.store(1, Ordering::Release);
    }

    /// Drops the writer's reference and waits until no handler holds one.
    fn retire(&self) {
        if self.refs.fetch_sub(1, Ordering::AcqRel) != 1 {
            // A handler is in the middle of its search: some hundred
            // instructions, interrupts off (an NMI or a preempted vCPU
            // can make it longer; nothing here can make it shorter).
            while self.refs.load(Ordering::Acquire) != 0 {
                core::hint::spin_loop();
            }
        }
    }

    /// A reference to the published batch, if one is.
    #[inline(always)]
    fn try_get(&self) -> Option<(*const Poke, usize)> {
        let mut r = self.refs.load(Ordering::Relaxed);
        loop {
            if r == 0 {
                return None;
            }
            match self.refs.compare_exchange_weak(
                r,
                r.wrapping_add(1),
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => break,
                Err(now) => r = now,
            }
        }
        Some((
            self.pokes.load(Ordering::Relaxed),
            self.len.load(Ordering::Relaxed),
        ))
    }

    /// Drops a reference [`BatchDesc::try_get`] took.
    #[inline(always)]
    fn put(&self) {
        // Orders the handler's reads of the batch before the writer's
        // return (pairs with the acquire in `retire`).
        self.refs.fetch_sub(1, Ordering::Release);
    }
}

/// Makes a CPU that hit the `int3` of a site being rewritten behave as the
/// site's new instruction. Called from `exc_int3()` before anything else
/// that could itself hit an `int3`; calls nothing.
///
/// # Safety
///
/// `regs` is the trap frame of an `int3`, with the gap below it that the
/// x86_64 entry code leaves for emulating a call.
#[no_mangle]
#[link_section = ".noinstr.text"]
// noinstr code: no sanitizer call in it (see the Makefile).
#[cfg_attr(rftrace_noinstr_sanitize, sanitize(address = "off"))]
pub unsafe extern "C" fn rftrace_int3_handler(regs: *mut bindings::pt_regs) -> c_int {
    // SAFETY: the caller passes a valid trap frame.
    let regs = unsafe { &mut *regs };
    // SAFETY: `csx` covers the whole cs slot, which entry code wrote.
    if unsafe { regs.__bindgen_anon_1.csx } & 3 != 0 {
        return 0;
    }
    let Some((pokes, len)) = DESC.try_get() else {
        return 0;
    };
    // SAFETY: the reference keeps the batch valid and unchanged until
    // `put` (the invariants of `BatchDesc`).
    let r = unsafe { emulate(regs, pokes, len) };
    DESC.put();
    r
}
crate::nokprobe::nokprobe!(rftrace_int3_handler);

/// The handler's search of the batch for the site of the trap.
///
/// # Safety
///
/// `pokes` points to `len` pokes sorted by address, valid and unchanged
/// for the call; `regs` as for [`rftrace_int3_handler`].
#[inline(always)]
pub(crate) unsafe fn emulate(
    regs: &mut bindings::pt_regs,
    pokes: *const Poke,
    len: usize,
) -> c_int {
    let ip = regs.ip.wrapping_sub(1) as u64;
    let (mut lo, mut hi) = (0usize, len);
    while lo < hi {
        let mid = lo.wrapping_add(hi.wrapping_sub(lo) / 2);
        // SAFETY: `mid < len`, and the batch holds `len` pokes.
        let p = unsafe { &*pokes.add(mid) };
        if p.ip < ip {
            lo = mid.wrapping_add(1);
        } else if p.ip > ip {
            hi = mid;
        } else {
            // Wrapping arithmetic: nothing here may call out, not even to
            // an overflow panic.
            let next = p.ip.wrapping_add(SITE_SIZE as u64);
            if p.emulate_call == 0 {
                regs.ip = next as c_ulong;
            } else {
                regs.sp = regs.sp.wrapping_sub(8);
                // SAFETY: the entry code left room below the trap frame to
                // push a return address; `sp` now points into it.
                unsafe { ptr::write(regs.sp as *mut u64, next) };
                regs.ip = p.emulate_call as c_ulong;
            }
            return 1;
        }
    }
    0
}

/// Reads the 5 bytes at `ip`: in the kernel's core text directly (a
/// batch checks every site it writes, and the fault-checking copy, a
/// traced C function, costs a fifth of the batch), anywhere else through
/// the fault-checking copy.
pub(crate) fn read_site(ip: u64) -> Option<[u8; SITE_SIZE]> {
    if ktext::holds(&ktext::core(), ip, SITE_SIZE) {
        // SAFETY: five bytes within the kernel's core text, which stays
        // mapped and readable for as long as the kernel runs.
        return Some(unsafe { ptr::read_unaligned(ip as *const [u8; SITE_SIZE]) });
    }
    read_bytes(ip)
}

/// Reads the `N` bytes at `ip`.
pub(crate) fn read_bytes<const N: usize>(ip: u64) -> Option<[u8; N]> {
    let mut b = [0u8; N];
    // SAFETY: `copy_from_kernel_nofault` checks the source and fails
    // rather than faulting; the destination is a local buffer of `N` bytes.
    let r = unsafe {
        bindings::copy_from_kernel_nofault(b.as_mut_ptr().cast(), ip as *const c_void, N)
    };
    (r == 0).then_some(b)
}

/// Writes step `k` of a batch and syncs every CPU; with the harness's
/// `text_poke_twice` (glue in alternative.c, for guests under
/// multi-threaded TCG, which can keep running code it translated from
/// bytes a store was replacing at that moment) writes the step's bytes a
/// second time after the sync, when no CPU is in the middle of a
/// translation, and syncs again.
///
/// # Safety
///
/// As [`write_step`].
pub(crate) unsafe fn step(pokes: &[Poke], k: usize) {
    // SAFETY: per the function's contract.
    unsafe { write_step(pokes, k) };
    sync_cores();
    // SAFETY: a flag set once at boot, before any CPU but the first runs.
    if unsafe { bindings::text_poke_twice } {
        // SAFETY: the sites hold the bytes of step `k` now, which this
        // writes again: what the contract allows for step `k` still holds.
        unsafe { write_step(pokes, k) };
        sync_cores();
    }
}

/// Whether a mutants kernel's break `SkipLastSync` (number 10) is on: a
/// batch then returns without its last sync of the CPUs.
fn skip_last_sync() -> bool {
    #[cfg(CONFIG_FTRACE_CORE_RUST_MUTANTS)]
    return kernel::ftrace::mutant() == 10;
    #[cfg(not(CONFIG_FTRACE_CORE_RUST_MUTANTS))]
    false
}

/// Makes every CPU serialize its instruction stream.
pub(crate) fn sync_cores() {
    // SAFETY: callable from any sleepable context.
    unsafe { bindings::text_poke_sync() };
}

/// Rewrites the sites of `pokes`, sorted by address and without
/// duplicates, from their `old` to their `new` bytes, checking first that
/// every site holds its `old` bytes. Returns the index of the first site
/// that does not; nothing is written then.
///
/// A site that does not hold its `new` bytes afterwards (the writes
/// failed: C's `text_poke()` would `BUG()`) kills tracing, so that
/// nothing rewrites sites again, and is reported.
///
/// # Safety
///
/// `text_mutex` is held, and the context may sleep.
pub(crate) unsafe fn write_batch(pokes: &mut [Poke]) -> core::result::Result<(), usize> {
    pokes.sort_unstable_by_key(|p| p.ip);
    for (i, p) in pokes.iter().enumerate() {
        if read_site(p.ip) != Some(p.old) || (i > 0 && pokes[i - 1].ip == p.ip) {
            return Err(i);
        }
    }
    if pokes.is_empty() {
        return Ok(());
    }
    // SAFETY: `text_mutex` serializes the batches, each of which retires
    // its publication before it returns; `pokes` is borrowed, unchanged,
    // until then.
    unsafe { DESC.publish(pokes) };
    // SAFETY: `text_mutex` is held; every site holds its `old` bytes
    // (checked above), and each step is written after the ones before it.
    unsafe { step(pokes, 0) };
    if pokes.iter().any(|p| p.writes_in(1)) {
        // SAFETY: as above.
        unsafe { step(pokes, 1) };
    }
    // Every changed site now runs through its int3: from this record's
    // time stamp on, a decoder of an instruction trace may take the new
    // bytes (as the text_poke_bp() batches of the C core record it).
    for p in pokes.iter() {
        perf_text_poke(p);
    }
    if skip_last_sync() {
        // SAFETY: as above (a break of a mutants kernel: no sync after).
        unsafe { write_step(pokes, 2) };
    } else {
        // SAFETY: as above.
        unsafe { step(pokes, 2) };
    }
    // No CPU traps on the batch's sites any more; wait for the handlers
    // that still look at it (`BatchDesc`).
    DESC.retire();
    if let Some((p, now)) = pokes
        .iter()
        .map(|p| (p, read_site(p.ip)))
        .find(|(p, now)| *now != Some(p.new))
    {
        pr_crit!(
            "site {:#x} holds {:02x?} after the write of {:02x?}; tracing stops\n",
            p.ip,
            now,
            p.new
        );
        // SAFETY: callable in any context; it only sets flags.
        unsafe { bindings::ftrace_kill() };
    }
    Ok(())
}

/// A TEXT_POKE record for perf: site `p` goes from its old to its new
/// bytes.
#[cfg(CONFIG_PERF_EVENTS)]
pub(crate) fn perf_text_poke(p: &Poke) {
    if p.old == p.new {
        return;
    }
    // SAFETY: both buffers live in `p` for the call; perf copies them and
    // only records the address.
    unsafe {
        bindings::perf_event_text_poke(
            p.ip as *const c_void,
            p.old.as_ptr().cast(),
            SITE_SIZE,
            p.new.as_ptr().cast(),
            SITE_SIZE,
        )
    };
}

#[cfg(not(CONFIG_PERF_EVENTS))]
pub(crate) fn perf_text_poke(_p: &Poke) {}

/// Data only touched with `text_mutex` held.
pub(crate) struct TextLocked<T>(UnsafeCell<T>);

// SAFETY: every access goes through `get`, whose callers hold `text_mutex`.
unsafe impl<T: Send> Sync for TextLocked<T> {}

impl<T> TextLocked<T> {
    pub(crate) const fn new(v: T) -> Self {
        TextLocked(UnsafeCell::new(v))
    }

    /// # Safety
    ///
    /// `text_mutex` is held for as long as the reference lives.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn get(&self) -> &mut T {
        // SAFETY: `text_mutex` serializes all users.
        unsafe { &mut *self.0.get() }
    }
}

/// Sites per int3 batch. The generic core's batch has the same size
/// (`BATCH` in kernel/trace/rftrace/update.rs).
pub(crate) const QUEUE_LEN: usize = 512;

/// Site rewrites requested one at a time while patching is "late"
/// (between `ftrace_arch_code_modify_prepare()` and
/// `ftrace_arch_code_modify_post_process()`), written as one batch; with
/// the generic core, the batch `rftrace_arch_apply()` builds.
pub(crate) struct Queue {
    pub(crate) len: usize,
    pub(crate) pokes: [Poke; QUEUE_LEN],
}

pub(crate) static QUEUE: TextLocked<Queue> = TextLocked::new(Queue {
    len: 0,
    pokes: [Poke::EMPTY; QUEUE_LEN],
});
