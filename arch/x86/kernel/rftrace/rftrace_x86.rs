// SPDX-License-Identifier: GPL-2.0

//! x86_64 architecture layer of the Rust ftrace core.
//!
//! It rewrites call sites live, in batches of any size: an `int3` over the
//! first byte of every site of the batch, a sync of all CPUs, the tails,
//! a sync, the first bytes, a sync. A CPU that meets a site in the middle
//! of this traps, and [`rftrace_int3_handler`] makes it behave as the new
//! instruction. No `stop_machine`.
//!
//! It serves the Rust generic core (`kernel/trace/rftrace/`) through
//! [`rftrace_arch_apply`], [`rftrace_arch_init_site`] and the per-ops
//! trampoline functions; with `CONFIG_FTRACE_CORE_RUST_GENERIC=n` it serves
//! the C core (`kernel/trace/ftrace.c`) instead, through the architecture
//! interface of `include/linux/ftrace.h` (`ftrace_replace_code()`,
//! `ftrace_make_call()`, ...).

use core::cell::UnsafeCell;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use kernel::bindings;
use kernel::ffi::{c_int, c_ulong, c_void};
use kernel::prelude::*;

#[cfg(CONFIG_FTRACE_CORE_RUST_GENERIC)]
mod archif;
#[allow(unreachable_pub, missing_docs)]
#[path = "../../../../kernel/trace/rftrace/logic/insn.rs"]
// `jmp` is the return of a trampoline through the return thunk: unused
// without return thunks.
#[cfg_attr(not(CONFIG_MITIGATION_RETHUNK), allow(dead_code))]
mod insn;
// Each crate uses the part it needs.
#[allow(dead_code)]
#[path = "../../../../kernel/trace/rftrace/base/ktext.rs"]
mod ktext;
#[path = "../../../../kernel/trace/rftrace/base/nokprobe.rs"]
mod nokprobe;
/// The generic crate's modules this crate shares, at the paths they name
/// themselves by (`nokprobe!` names `$crate::base::nokprobe`).
mod base {
    pub(crate) use super::nokprobe;
}
mod runs;
#[allow(dead_code)]
#[path = "../../../../kernel/trace/rftrace/base/opsview.rs"]
mod view;

#[cfg(CONFIG_FTRACE_CORE_RUST_GENERIC)]
use archif::Change;
use insn::{Decoded, GroupLayout, INT3, NOP5, SITE_SIZE};
use runs::{write_step, Poke};

const __LOG_PREFIX: &[u8] = b"ftrace\0";

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
struct BatchDesc {
    pokes: AtomicPtr<Poke>,
    len: AtomicUsize,
    refs: AtomicU32,
}

static DESC: BatchDesc = BatchDesc {
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
unsafe fn emulate(regs: &mut bindings::pt_regs, pokes: *const Poke, len: usize) -> c_int {
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
fn read_site(ip: u64) -> Option<[u8; SITE_SIZE]> {
    if ktext::holds(&ktext::core(), ip, SITE_SIZE) {
        // SAFETY: five bytes within the kernel's core text, which stays
        // mapped and readable for as long as the kernel runs.
        return Some(unsafe { ptr::read_unaligned(ip as *const [u8; SITE_SIZE]) });
    }
    read_bytes(ip)
}

/// Reads the `N` bytes at `ip`.
fn read_bytes<const N: usize>(ip: u64) -> Option<[u8; N]> {
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
unsafe fn step(pokes: &[Poke], k: usize) {
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

/// Makes every CPU serialize its instruction stream.
fn sync_cores() {
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
unsafe fn write_batch(pokes: &mut [Poke]) -> core::result::Result<(), usize> {
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
    // SAFETY: as above.
    unsafe { step(pokes, 2) };
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
fn perf_text_poke(p: &Poke) {
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
fn perf_text_poke(_p: &Poke) {}

/// Data only touched with `text_mutex` held.
struct TextLocked<T>(UnsafeCell<T>);

// SAFETY: every access goes through `get`, whose callers hold `text_mutex`.
unsafe impl<T: Send> Sync for TextLocked<T> {}

impl<T> TextLocked<T> {
    /// # Safety
    ///
    /// `text_mutex` is held for as long as the reference lives.
    #[allow(clippy::mut_from_ref)]
    unsafe fn get(&self) -> &mut T {
        // SAFETY: `text_mutex` serializes all users.
        unsafe { &mut *self.0.get() }
    }
}

/// Sites per int3 batch. The generic core's batch has the same size
/// (`BATCH` in kernel/trace/rftrace/update.rs).
const QUEUE_LEN: usize = 512;

/// Site rewrites requested one at a time while patching is "late"
/// (between `ftrace_arch_code_modify_prepare()` and
/// `ftrace_arch_code_modify_post_process()`), written as one batch; with
/// the generic core, the batch [`rftrace_arch_apply`] builds.
struct Queue {
    len: usize,
    pokes: [Poke; QUEUE_LEN],
}

static QUEUE: TextLocked<Queue> = TextLocked(UnsafeCell::new(Queue {
    len: 0,
    pokes: [Poke::EMPTY; QUEUE_LEN],
}));

/// Set while the core holds `text_mutex` to patch live text.
#[cfg_attr(CONFIG_FTRACE_CORE_RUST_GENERIC, allow(dead_code))]
static POKE_LATE: AtomicBool = AtomicBool::new(false);

/// Writes the queued rewrites.
///
/// # Safety
///
/// `text_mutex` is held.
#[cfg_attr(CONFIG_FTRACE_CORE_RUST_GENERIC, allow(dead_code))]
unsafe fn flush_queue() {
    // SAFETY: `text_mutex` is held.
    let q = unsafe { QUEUE.get() };
    let n = q.len;
    q.len = 0;
    // SAFETY: `text_mutex` is held; the callers of the ftrace arch
    // interface may sleep.
    if let Err(i) = unsafe { write_batch(&mut q.pokes[..n]) } {
        pr_err!(
            "site {:#x} changed while queued; not patched\n",
            q.pokes[i].ip
        );
    }
}

/// Rewrites one site: at once before SMP and for code not yet running,
/// else through the queue.
#[cfg_attr(CONFIG_FTRACE_CORE_RUST_GENERIC, allow(dead_code))]
fn rewrite_site(ip: u64, old: [u8; SITE_SIZE], new: [u8; SITE_SIZE]) -> c_int {
    match read_site(ip) {
        None => return EFAULT.to_errno(),
        Some(cur) if cur != old => {
            // SAFETY: `ftrace_expected` is read by `ftrace_bug()` only,
            // which the C core calls right after this returns; point it at
            // static bytes.
            unsafe { bindings::ftrace_expected = expected_bytes(&old) };
            return EINVAL.to_errno();
        }
        Some(_) => {}
    }
    let Some(p) = Poke::new(ip, old, new) else {
        return EINVAL.to_errno();
    };
    if !POKE_LATE.load(Ordering::Relaxed) {
        // SAFETY: early boot or a module whose code does not run yet:
        // nothing executes the site while it is written.
        unsafe { bindings::text_poke_early(ip as *mut c_void, new.as_ptr().cast(), SITE_SIZE) };
        return 0;
    }
    // SAFETY: POKE_LATE is only set with `text_mutex` held.
    let q = unsafe { QUEUE.get() };
    if q.len == QUEUE_LEN {
        // SAFETY: `text_mutex` is held.
        unsafe { flush_queue() };
    }
    q.pokes[q.len] = p;
    q.len += 1;
    0
}

/// The bytes a failed check expected, kept for `ftrace_bug()`'s report.
static EXPECTED: TextLocked<[u8; SITE_SIZE]> = TextLocked(UnsafeCell::new(NOP5));

fn expected_bytes(b: &[u8; SITE_SIZE]) -> *const c_void {
    // SAFETY: reports are made under `ftrace_lock` by the core, one at a
    // time; the buffer is only read by `ftrace_bug()`.
    let e = unsafe { EXPECTED.get() };
    *e = *b;
    e.as_ptr().cast()
}

fn call_bytes(ip: u64, target: u64) -> Option<[u8; SITE_SIZE]> {
    insn::call(ip, target)
}

/// The `__fentry__` call every site holds in the object files.
fn mcount_addr() -> c_ulong {
    addr(bindings::__fentry__) as c_ulong
}

#[cfg(not(CONFIG_FTRACE_CORE_RUST_GENERIC))]
/// Takes `text_mutex` for a series of live text changes.
#[no_mangle]
pub extern "C" fn ftrace_arch_code_modify_prepare() {
    // SAFETY: `text_mutex` is a valid, initialised global mutex; the core
    // calls this from a sleepable context.
    unsafe { bindings::mutex_lock(ptr::addr_of_mut!(bindings::text_mutex)) };
    POKE_LATE.store(true, Ordering::Relaxed);
}

#[cfg(not(CONFIG_FTRACE_CORE_RUST_GENERIC))]
/// Writes what was queued and releases `text_mutex`.
#[no_mangle]
pub extern "C" fn ftrace_arch_code_modify_post_process() {
    // SAFETY: paired with `ftrace_arch_code_modify_prepare()`, which took
    // `text_mutex`.
    unsafe { flush_queue() };
    POKE_LATE.store(false, Ordering::Relaxed);
    // SAFETY: this context holds `text_mutex` since the prepare call.
    unsafe { bindings::mutex_unlock(ptr::addr_of_mut!(bindings::text_mutex)) };
}

#[cfg(not(CONFIG_FTRACE_CORE_RUST_GENERIC))]
/// Turns the compiler's `call __fentry__` at a site into the NOP, at boot
/// and at module load.
///
/// # Safety
///
/// `rec` points to a valid call-site record.
#[no_mangle]
pub unsafe extern "C" fn ftrace_make_nop(
    _module: *mut bindings::module,
    rec: *mut bindings::dyn_ftrace,
    addr: c_ulong,
) -> c_int {
    // SAFETY: per the function's contract.
    let ip = unsafe { (*rec).ip } as u64;
    if addr != mcount_addr() {
        // The generic core only asks this for `__fentry__` calls here; the
        // rest goes through `ftrace_replace_code()`.
        pr_err!(
            "ftrace_make_nop({:#x}) for a call to {:#x}: not supported\n",
            ip,
            addr
        );
        return EINVAL.to_errno();
    }
    match call_bytes(ip, addr as u64) {
        Some(old) => rewrite_site(ip, old, NOP5),
        None => EINVAL.to_errno(),
    }
}

#[cfg(not(CONFIG_FTRACE_CORE_RUST_GENERIC))]
/// Turns the NOP at a site into a call of `addr` (module load).
///
/// # Safety
///
/// `rec` points to a valid call-site record.
#[no_mangle]
pub unsafe extern "C" fn ftrace_make_call(rec: *mut bindings::dyn_ftrace, addr: c_ulong) -> c_int {
    // SAFETY: per the function's contract.
    let ip = unsafe { (*rec).ip } as u64;
    match call_bytes(ip, addr as u64) {
        Some(new) => rewrite_site(ip, NOP5, new),
        None => EINVAL.to_errno(),
    }
}

#[cfg(not(CONFIG_FTRACE_CORE_RUST_GENERIC))]
/// Never used on x86_64: `ftrace_replace_code()` changes calls itself.
///
/// # Safety
///
/// `rec` points to a valid call-site record.
#[no_mangle]
pub unsafe extern "C" fn ftrace_modify_call(
    rec: *mut bindings::dyn_ftrace,
    _old_addr: c_ulong,
    _addr: c_ulong,
) -> c_int {
    // SAFETY: per the function's contract.
    let ip = unsafe { (*rec).ip };
    pr_err!("ftrace_modify_call({:#x}): not supported on x86_64\n", ip);
    EINVAL.to_errno()
}

/// Points the callback calls of both trampolines at `func`.
#[no_mangle]
pub extern "C" fn ftrace_update_ftrace_func(func: bindings::ftrace_func_t) -> c_int {
    let Some(func) = func else {
        return EINVAL.to_errno();
    };
    let target = func as usize as u64;
    let mut pokes = [Poke::EMPTY; 2];
    let calls = [
        addr(bindings::ftrace_call),
        addr(bindings::ftrace_regs_call),
    ];
    for (p, &ip) in pokes.iter_mut().zip(calls.iter()) {
        let (Some(old), Some(new)) = (read_site(ip), call_bytes(ip, target)) else {
            return EFAULT.to_errno();
        };
        if !matches!(insn::decode(ip, &old), Decoded::Call(_)) {
            pr_err!("trampoline call at {:#x} is not a call\n", ip);
            return EINVAL.to_errno();
        }
        match Poke::new(ip, old, new) {
            Some(x) => *p = x,
            None => return EINVAL.to_errno(),
        }
    }
    // SAFETY: the core calls this between `ftrace_arch_code_modify_prepare()`
    // and `..._post_process()`, with `text_mutex` held, in a sleepable
    // context.
    match unsafe { write_batch(&mut pokes) } {
        Ok(()) => 0,
        Err(_) => EINVAL.to_errno(),
    }
}

#[cfg(not(CONFIG_FTRACE_CORE_RUST_GENERIC))]
/// What one record needs, as the generic core says: the bytes now and the
/// bytes wanted. `None` when it needs nothing.
///
/// # Safety
///
/// `rec` points to a valid call-site record; `ftrace_lock` is held.
unsafe fn record_change(
    rec: *mut bindings::dyn_ftrace,
    enable: bool,
) -> Option<([u8; SITE_SIZE], [u8; SITE_SIZE])> {
    // SAFETY: per the function's contract.
    let ip = unsafe { (*rec).ip } as u64;
    // SAFETY: as above.
    let what = unsafe { bindings::ftrace_test_record(rec, enable) } as u32;
    let curr = || {
        // SAFETY: as above.
        let a = unsafe { bindings::ftrace_get_addr_curr(rec) };
        call_bytes(ip, a as u64)
    };
    let new = || {
        // SAFETY: as above.
        let a = unsafe { bindings::ftrace_get_addr_new(rec) };
        call_bytes(ip, a as u64)
    };
    match what {
        bindings::FTRACE_UPDATE_MAKE_CALL => Some((NOP5, new()?)),
        bindings::FTRACE_UPDATE_MODIFY_CALL => Some((curr()?, new()?)),
        bindings::FTRACE_UPDATE_MAKE_NOP => Some((curr()?, NOP5)),
        _ => None,
    }
}

#[cfg(not(CONFIG_FTRACE_CORE_RUST_GENERIC))]
/// Applies what the generic core decided for every record, as one batch:
/// check every site first and report the first that is not what the core
/// believes (`ftrace_bug()`), then rewrite them all at once.
#[no_mangle]
pub extern "C" fn ftrace_replace_code(mod_flags: c_int) {
    // Bit 0 of the flags the generic core passes: enable (its private
    // FTRACE_MODIFY_ENABLE_FL).
    let enable = mod_flags & 1 != 0;

    // Pass 1: count, and check each site's bytes before touching any.
    let mut count = 0usize;
    let mut iter = {
        // SAFETY: called by the core with `ftrace_lock` held.
        unsafe { bindings::ftrace_rec_iter_start() }
    };
    while !iter.is_null() {
        // SAFETY: `iter` is a live iterator of the core.
        let rec = unsafe { bindings::ftrace_rec_iter_record(iter) };
        // SAFETY: a record of the core, `ftrace_lock` held.
        if let Some((old, _)) = unsafe { record_change(rec, enable) } {
            // SAFETY: as above.
            let ip = unsafe { (*rec).ip } as u64;
            match read_site(ip) {
                Some(cur) if cur == old => count += 1,
                cur => {
                    // SAFETY: `ftrace_bug()` reads `ftrace_expected`, set
                    // here to static bytes, and reports `rec`.
                    unsafe {
                        bindings::ftrace_expected = expected_bytes(&old);
                        bindings::ftrace_bug(
                            if cur.is_none() {
                                EFAULT.to_errno()
                            } else {
                                EINVAL.to_errno()
                            },
                            rec,
                        );
                        bindings::ftrace_expected = ptr::null();
                    }
                    return;
                }
            }
        }
        // SAFETY: `iter` is live.
        iter = unsafe { bindings::ftrace_rec_iter_next(iter) };
    }
    if count == 0 {
        return;
    }

    // Pass 2: collect the batch and update the records, then write. When
    // memory for one batch is short, write in queue-sized pieces.
    let mut big = KVVec::<Poke>::with_capacity(count, GFP_KERNEL).ok();
    // SAFETY: called by the core with `text_mutex` held (prepare).
    let q = unsafe { QUEUE.get() };
    // SAFETY: as above.
    unsafe { flush_queue() };
    // SAFETY: as above.
    iter = unsafe { bindings::ftrace_rec_iter_start() };
    while !iter.is_null() {
        // SAFETY: `iter` is live.
        let rec = unsafe { bindings::ftrace_rec_iter_record(iter) };
        // SAFETY: a record of the core, `ftrace_lock` held.
        if let Some((old, new)) = unsafe { record_change(rec, enable) } {
            // SAFETY: as above.
            let ip = unsafe { (*rec).ip } as u64;
            if let Some(p) = Poke::new(ip, old, new) {
                let pushed = match big.as_mut() {
                    Some(v) if v.len() < v.capacity() => v.push(p, GFP_KERNEL).is_ok(),
                    _ => false,
                };
                if !pushed {
                    if q.len == QUEUE_LEN {
                        // SAFETY: `text_mutex` is held.
                        unsafe { flush_queue() };
                    }
                    q.pokes[q.len] = p;
                    q.len += 1;
                }
            }
            // SAFETY: as above.
            unsafe { bindings::ftrace_update_record(rec, enable) };
        }
        // SAFETY: `iter` is live.
        iter = unsafe { bindings::ftrace_rec_iter_next(iter) };
    }
    if let Some(mut v) = big {
        // SAFETY: `text_mutex` is held, sleepable context.
        if let Err(i) = unsafe { write_batch(v.as_mut_slice()) } {
            pr_err!(
                "site {:#x} changed under the batch; nothing written\n",
                v[i].ip
            );
        }
    }
    // SAFETY: `text_mutex` is held.
    unsafe { flush_queue() };
}

#[cfg(not(CONFIG_FTRACE_CORE_RUST_GENERIC))]
/// The whole update the core asked for, with `text_mutex` held by the
/// caller; x86_64 needs no `stop_machine`.
#[no_mangle]
pub extern "C" fn arch_ftrace_update_code(command: c_int) {
    // SAFETY: the core calls this with its locks held and the command it
    // built.
    unsafe { bindings::ftrace_modify_all_code(command) };
}

/// Called when kernel rodata becomes read-only. Per-ops trampolines are
/// made read-only when they are created, so there is nothing left to do.
#[no_mangle]
pub extern "C" fn set_ftrace_ops_ro() {}

// Labels of trampolines_64.S that delimit what a per-ops trampoline copies.
extern "C" {
    fn ftrace_caller_op_ptr();
    fn ftrace_caller_ip();
    fn ftrace_caller_ip_end();
    fn ftrace_caller_end();
    fn ftrace_caller_more();
    fn ftrace_caller_slot0();
    fn ftrace_caller_slot1();
    fn ftrace_caller_tail();
    fn ftrace_caller_more_end();
    fn ftrace_regs_caller_op_ptr();
    fn ftrace_regs_caller_ip();
    fn ftrace_regs_caller_direct();
    fn ftrace_regs_caller_jmp();
    fn ftrace_regs_caller_direct_end();
    fn ftrace_regs_caller_end();
    fn ftrace_regs_caller_more();
    fn ftrace_regs_caller_slot0();
    fn ftrace_regs_caller_slot1();
    fn ftrace_regs_caller_tail();
    fn ftrace_regs_caller_more_end();
}

/// Slots of a group trampoline (`RFT_GROUP_SLOTS` in trampolines_64.S).
const GROUP_SLOTS: usize = 8;

/// Where things are in a trampoline's code, as offsets from its start.
struct Template {
    start: u64,
    /// Where a copy's own return goes: the template's final `ret`.
    len: usize,
    /// Bytes copied: up to the end of the group calls, after the `ret`.
    copy: usize,
    /// The group calls.
    group: GroupLayout,
    /// The 7-byte `movq function_trace_op(%rip), %rdx`.
    op_load: usize,
    /// The 5-byte callback call.
    call: usize,
    /// The 2-byte `jnz` to the direct-call path (full-regs trampoline).
    jnz: Option<usize>,
    /// Code after the callback a per-ops trampoline jumps over: from the
    /// first offset to the third for an ops that does not move the ip
    /// (the copy of `regs->ip` to the return slot, and in
    /// `ftrace_regs_caller` the direct-call test after it), from the
    /// second (if any) for one that does (the direct-call test: a per-ops
    /// trampoline is never direct).
    skip: (usize, Option<usize>, usize),
}

fn addr(f: Label) -> u64 {
    f as *const () as u64
}

/// A template's labels (trampolines_64.S).
type Label = unsafe extern "C" fn();

/// The labels of both templates alike, and what only one has.
struct Labels {
    start: Label,
    call: Label,
    end: Label,
    more: Label,
    slot0: Label,
    slot1: Label,
    tail: Label,
    more_end: Label,
    op_ptr: Label,
    ip: Label,
    /// `ftrace_regs_caller`: the direct-call test and its jnz.
    direct: Option<(Label, Label)>,
    /// Where the ip copy (and the direct test) ends.
    after: Label,
}

fn template(save_regs: bool) -> Template {
    let l = if save_regs {
        Labels {
            start: bindings::ftrace_regs_caller,
            call: bindings::ftrace_regs_call,
            end: ftrace_regs_caller_end,
            more: ftrace_regs_caller_more,
            slot0: ftrace_regs_caller_slot0,
            slot1: ftrace_regs_caller_slot1,
            tail: ftrace_regs_caller_tail,
            more_end: ftrace_regs_caller_more_end,
            op_ptr: ftrace_regs_caller_op_ptr,
            ip: ftrace_regs_caller_ip,
            direct: Some((ftrace_regs_caller_direct, ftrace_regs_caller_jmp)),
            after: ftrace_regs_caller_direct_end,
        }
    } else {
        Labels {
            start: bindings::ftrace_caller,
            call: bindings::ftrace_call,
            end: ftrace_caller_end,
            more: ftrace_caller_more,
            slot0: ftrace_caller_slot0,
            slot1: ftrace_caller_slot1,
            tail: ftrace_caller_tail,
            more_end: ftrace_caller_more_end,
            op_ptr: ftrace_caller_op_ptr,
            ip: ftrace_caller_ip,
            direct: None,
            after: ftrace_caller_ip_end,
        }
    };
    let start = addr(l.start);
    let off = |f: Label| (addr(f) - start) as usize;
    let call = off(l.call);
    Template {
        start,
        len: off(l.end),
        copy: off(l.more_end),
        group: GroupLayout {
            call,
            entry: off(l.more),
            slot0: off(l.slot0),
            slot1: off(l.slot1),
            tail: off(l.tail),
            slots: GROUP_SLOTS,
        },
        op_load: off(l.op_ptr),
        call,
        jnz: l.direct.map(|(_, jmp)| off(jmp)),
        skip: (off(l.ip), l.direct.map(|(test, _)| off(test)), off(l.after)),
    }
}

/// `movq disp32(%rip), %rdx`, without the displacement.
const OP_LOAD: [u8; 3] = [0x48, 0x8b, 0x15];
const JNZ8: u8 = 0x75;
const JMP8: u8 = 0xeb;
const NOP2: [u8; 2] = [0x66, 0x90];
const RET_INT3: [u8; 2] = [0xc3, 0xcc];

/// # Safety
///
/// `ops` is a live ops.
unsafe fn ops_flag(ops: *mut bindings::ftrace_ops, flag: u32) -> bool {
    // SAFETY: per the function's contract.
    let f = unsafe { view::OpsView::from_raw(ops) }.flags();
    f & flag as c_ulong != 0
}

/// Room for the return of a per-ops trampoline: a `jmp` to the return
/// thunk, or `ret; int3` (the int3 stops straight-line speculation).
const RET_ROOM: usize = SITE_SIZE;

/// The return of a per-ops trampoline whose return is at `ip`: through
/// the return thunk where the CPU wants one there (return thunks, ITS),
/// else `ret; int3` (C's create_trampoline makes the same choice).
fn trampoline_return(ip: u64) -> Option<[u8; RET_ROOM]> {
    #[cfg(CONFIG_MITIGATION_RETHUNK)]
    {
        // SAFETY: a query of the CPU's mitigation state about an address.
        if unsafe { bindings::cpu_wants_rethunk_at(ip as *mut c_void) } {
            // SAFETY: a function pointer the mitigation code sets at boot.
            let thunk = unsafe { bindings::x86_return_thunk }?;
            return insn::jmp(ip, thunk as *const () as u64);
        }
    }
    let mut b = [INT3; RET_ROOM];
    b[..RET_INT3.len()].copy_from_slice(&RET_INT3);
    let _ = ip;
    Some(b)
}

/// The first step on a fresh copy of template `t` in `buf`: a per-ops
/// trampoline never continues into a direct trampoline, so the `jnz` to
/// that path (past the copied code) becomes a NOP. Before the copy's
/// rip-relative operands are moved: that jump could not reach its target
/// from the copy. `None` when the `jnz` is not where it should be.
fn drop_direct_jump(buf: &mut [u8], t: &Template) -> Option<()> {
    if let Some(j) = t.jnz {
        if *buf.get(j)? != JNZ8 {
            return None;
        }
        buf.get_mut(j..j + 2)?.copy_from_slice(&NOP2);
    }
    Some(())
}

/// A per-ops copy jumps over what its ops does not need (`t.skip`): a
/// short `jmp` at its start, the rest left as it is, never run. The code
/// keeps the template's layout, so the unwinder reads the trampoline with
/// the template's unwind data.
fn skip_unneeded(buf: &mut [u8], t: &Template, moves_ip: bool) -> Option<()> {
    let (ip, always, to) = t.skip;
    let from = match (moves_ip, always) {
        (false, _) => ip,
        (true, Some(from)) => from,
        (true, None) => return Some(()),
    };
    let disp = i8::try_from(to.checked_sub(from + 2)?).ok()?;
    buf.get_mut(from..from + 2)?
        .copy_from_slice(&[JMP8, disp as u8]);
    Some(())
}

/// What a per-ops trampoline calls: the ops' callback (at the callback
/// call), or the members of a site group (through the group calls).
#[derive(Clone, Copy)]
enum Calls<'a> {
    Func(u64),
    Group(&'a [(u64, u64)]),
}

/// Builds the code of a per-ops trampoline in `buf` (at address `at`):
/// a copy of the template (its rip-relative operands already moved) that
/// loads `ops` from the slot after its code and makes `calls`; `moves_ip`:
/// the ops may move the ip (`IPMODIFY`). Returns `None` when the template
/// is not as expected.
fn build_trampoline(
    buf: &mut [u8],
    at: u64,
    t: &Template,
    ops: u64,
    calls: Calls<'_>,
    moves_ip: bool,
) -> Option<()> {
    skip_unneeded(buf, t, moves_ip)?;
    if t.len + RET_ROOM > t.group.entry {
        return None;
    }
    let slot = t.copy.next_multiple_of(8);
    let ret = trampoline_return(at + t.len as u64)?;
    buf.get_mut(t.len..t.len + RET_ROOM)?.copy_from_slice(&ret);
    buf.get_mut(slot..slot + 8)?
        .copy_from_slice(&ops.to_le_bytes());
    let load = buf.get_mut(t.op_load..t.op_load + 7)?;
    if load[..3] != OP_LOAD {
        return None;
    }
    let next = at + (t.op_load + 7) as u64;
    let disp = i32::try_from((at + slot as u64) as i64 - next as i64).ok()?;
    load[3..].copy_from_slice(&disp.to_le_bytes());
    match calls {
        Calls::Func(func) => {
            // The trampoline counts the call depth itself before this call,
            // so it calls the function, not its call-depth thunk.
            let call = insn::call(at + t.call as u64, func)?;
            buf.get_mut(t.call..t.call + SITE_SIZE)?
                .copy_from_slice(&call);
            Some(())
        }
        Calls::Group(members) => insn::fill_group(buf, at, &t.group, members),
    }
}

/// Size of a per-ops trampoline for template `t`.
fn trampoline_size(t: &Template) -> usize {
    t.copy.next_multiple_of(8) + 8
}

/// Creates the trampoline of `ops` that makes `calls` (`None`: the ops'
/// callback, as `ftrace_ops_get_func()` gives it). Returns its address,
/// or 0.
///
/// # Safety
///
/// `ops` is a registered ops (or the core's group ops), under
/// `ftrace_lock`.
unsafe fn create_trampoline(ops: *mut bindings::ftrace_ops, group: Option<&[(u64, u64)]>) -> u64 {
    // SAFETY: per the function's contract.
    let t = template(unsafe { ops_flag(ops, bindings::FTRACE_OPS_FL_SAVE_REGS) });
    let size = trampoline_size(&t);
    // SAFETY: plain allocation of executable memory.
    let mem = unsafe { bindings::execmem_alloc(bindings::execmem_type_EXECMEM_FTRACE, size) };
    if mem.is_null() {
        return 0;
    }
    let at = mem as u64;
    // SAFETY: `execmem_alloc` returned `size` writable bytes, not yet
    // executable or visible to anyone else.
    let buf = unsafe { core::slice::from_raw_parts_mut(mem.cast::<u8>(), size) };
    // SAFETY: copies the template, which is kernel text; fails instead of
    // faulting.
    let copied =
        unsafe { bindings::copy_from_kernel_nofault(mem, t.start as *const c_void, t.copy) } == 0;
    let copied = copied && drop_direct_jump(buf, &t).is_some();
    if copied {
        // The copy runs elsewhere: its rip-relative operands (the per-CPU
        // call-depth count, the ops load, the callback calls) are moved to
        // reach what they reached from the template; its jumps inside
        // itself stay.
        // SAFETY: `buf` holds the `t.copy` bytes just copied from the
        // template at `t.start`, and `at` is where they will run.
        unsafe {
            bindings::text_poke_apply_relocation(
                buf.as_mut_ptr(),
                at as *const u8,
                t.copy,
                t.start as *mut u8,
                t.copy,
            )
        };
    }
    let calls = match group {
        Some(members) => Some(Calls::Group(members)),
        // SAFETY: `ops` is live.
        None => unsafe { bindings::ftrace_ops_get_func(ops) }
            .map(|f| Calls::Func(f as *const () as u64)),
    };
    let ops_addr = ops as u64;
    // SAFETY: `ops` is live.
    let moves_ip = unsafe { ops_flag(ops, bindings::FTRACE_OPS_FL_IPMODIFY) };
    let built = calls.and_then(|c| build_trampoline(buf, at, &t, ops_addr, c, moves_ip));
    if !copied || built.is_none() {
        pr_err!("cannot build a trampoline for ops {:#x}\n", ops_addr);
        // SAFETY: allocated above and not published.
        unsafe { bindings::execmem_free(mem) };
        return 0;
    }
    // SAFETY: `ops` is live; other CPUs may read its flags.
    unsafe { view::OpsView::from_raw(ops) }.set(bindings::FTRACE_OPS_FL_ALLOC_TRAMP as c_ulong);
    let pages = size.div_ceil(bindings::PAGE_SIZE) as c_int;
    // SAFETY: the trampoline is complete; make it read-only and executable.
    unsafe { bindings::set_memory_rox(at as c_ulong, pages) };
    at
}

/// Gives `ops` its own trampoline, which calls its function directly and
/// passes it the ops without going through `function_trace_op`; or points
/// the trampoline it has at its current function.
///
/// # Safety
///
/// `ops` is a valid ops, under `ftrace_lock`.
#[no_mangle]
pub unsafe extern "C" fn arch_ftrace_update_trampoline(ops: *mut bindings::ftrace_ops) {
    // The ops is registered: other CPUs read its flags and trampoline
    // meanwhile, so every access goes through `view`.
    // SAFETY: per the function's contract, for every `view` and
    // `ops_flag` call below.
    let (tramp, _) = unsafe { view::OpsView::from_raw(ops) }.trampoline();
    // SAFETY: as above.
    let regs = unsafe { ops_flag(ops, bindings::FTRACE_OPS_FL_SAVE_REGS) };
    let t = template(regs);
    if tramp == 0 {
        // SAFETY: as above.
        let at = unsafe { create_trampoline(ops, None) };
        if at != 0 {
            // SAFETY: as above.
            unsafe { view::OpsView::from_raw(ops) }.set_trampoline(at, trampoline_size(&t) as u64);
        }
        return;
    }
    // A trampoline the ops' owner made is not ours to change.
    // SAFETY: as above.
    if !unsafe { ops_flag(ops, bindings::FTRACE_OPS_FL_ALLOC_TRAMP) } {
        return;
    }
    let ip = tramp + t.call as u64;
    let mut pokes = [None; GROUP_SLOTS];
    if insn::jmp(ip, tramp + t.group.entry as u64) == read_site(ip) {
        // A group's: point each member's call at what its own trampoline
        // calls now.
        for (i, p) in pokes.iter_mut().enumerate() {
            let Some((start, _)) = t.group.slot(i) else {
                break;
            };
            let Some(member) = read_bytes(tramp + start as u64).and_then(|h| insn::slot_ops(i, &h))
            else {
                break;
            };
            // SAFETY: a member of the group, live while its trampoline
            // may run (the generic core's group rules).
            let f = unsafe { bindings::ftrace_ops_get_func(member as *mut bindings::ftrace_ops) };
            *p = t
                .group
                .slot_call(i)
                .and_then(|c| repoint(tramp + c as u64, f));
        }
    } else {
        // SAFETY: `ops` is live.
        pokes[0] = repoint(ip, unsafe { bindings::ftrace_ops_get_func(ops) });
    }
    let mut q = [Poke::default(); GROUP_SLOTS];
    let mut n = 0;
    for p in pokes.into_iter().flatten() {
        q[n] = p;
        n += 1;
    }
    if n == 0 {
        return;
    }
    // SAFETY: `text_mutex` is a valid global mutex, not held here.
    unsafe { bindings::mutex_lock(ptr::addr_of_mut!(bindings::text_mutex)) };
    // SAFETY: `text_mutex` is held; the trampoline may be running, which is
    // what the int3 protocol is for.
    if unsafe { write_batch(&mut q[..n]) }.is_err() {
        pr_err!("trampoline call at {:#x} changed under us\n", tramp);
    }
    // SAFETY: taken above.
    unsafe { bindings::mutex_unlock(ptr::addr_of_mut!(bindings::text_mutex)) };
}

/// The rewrite of the trampoline call at `ip` to `func`, if it calls
/// something else now.
fn repoint(ip: u64, func: bindings::ftrace_func_t) -> Option<Poke> {
    let new = insn::call(ip, func? as *const () as u64)?;
    let old = read_site(ip)?;
    if old == new || !matches!(insn::decode(ip, &old), Decoded::Call(_)) {
        return None;
    }
    Poke::new(ip, old, new)
}

/// Gives the site group `ops` (an ops of the generic core's own, not yet
/// published: no CPU runs its trampoline) a trampoline that calls the `n`
/// members at `members` one after the other, each with its ops, the site,
/// its parent and the frame, as each member's own trampoline would.
/// Returns 0, or `-ENOMEM` (no memory, or the template is not as
/// expected), `-EINVAL` (no room for `n`), `-EBUSY` (it has one).
///
/// # Safety
///
/// `ops` is a valid ops and `members` points to `n` members whose ops
/// and callbacks outlive the trampoline (the generic core's group rules),
/// under `ftrace_lock`.
#[cfg(CONFIG_FTRACE_CORE_RUST_GENERIC)]
#[no_mangle]
pub unsafe extern "C" fn rftrace_arch_group_trampoline(
    ops: *mut bindings::ftrace_ops,
    members: *const archif::Member,
    n: usize,
) -> c_int {
    if n == 0 || n > GROUP_SLOTS {
        return EINVAL.to_errno();
    }
    // SAFETY: per the function's contract, for every `view` here.
    let v = unsafe { view::OpsView::from_raw(ops) };
    if v.trampoline().0 != 0 {
        return EBUSY.to_errno();
    }
    // SAFETY: per the function's contract.
    let members = unsafe { core::slice::from_raw_parts(members, n) };
    let mut m = [(0u64, 0u64); GROUP_SLOTS];
    for (d, s) in m.iter_mut().zip(members) {
        *d = (s.func, s.ops);
    }
    // SAFETY: per the function's contract.
    let at = unsafe { create_trampoline(ops, Some(&m[..n])) };
    if at == 0 {
        return ENOMEM.to_errno();
    }
    // SAFETY: as above.
    let regs = unsafe { ops_flag(ops, bindings::FTRACE_OPS_FL_SAVE_REGS) };
    v.set_trampoline(at, trampoline_size(&template(regs)) as u64);
    0
}

/// The function a trampoline calls: for `enabled_functions`.
fn call_target(ip: u64) -> *mut c_void {
    match read_site(ip).map(|b| insn::decode(ip, &b)) {
        Some(Decoded::Call(t)) => t as *mut c_void,
        _ => ptr::null_mut(),
    }
}

/// The function that the trampoline serving `rec` for `ops` calls.
///
/// # Safety
///
/// `ops` is null or a valid ops; `rec` is a valid record.
#[no_mangle]
pub unsafe extern "C" fn arch_ftrace_trampoline_func(
    ops: *mut bindings::ftrace_ops,
    rec: *mut bindings::dyn_ftrace,
) -> *mut c_void {
    // A non-null `ops` is live (the function's contract) for the unsafe
    // calls here; a null one has no flags and no trampoline.
    // SAFETY: as said.
    let of = |f| !ops.is_null() && unsafe { ops_flag(ops, f) };
    let tramp = if ops.is_null() {
        0
    } else {
        // SAFETY: as said.
        unsafe { view::OpsView::from_raw(ops) }.trampoline().0
    };
    if of(bindings::FTRACE_OPS_FL_ALLOC_TRAMP) {
        let t = template(of(bindings::FTRACE_OPS_FL_SAVE_REGS));
        call_target(tramp + t.call as u64)
    } else if tramp != 0 {
        // Someone else's trampoline: unknown.
        ptr::null_mut()
    } else {
        // SAFETY: per the function's contract.
        let regs = unsafe { (*rec).flags } & bindings::FTRACE_FL_REGS_EN as c_ulong != 0;
        call_target(template(regs).start + template(regs).call as u64)
    }
}

/// Frees the trampoline this layer made for `ops`.
///
/// # Safety
///
/// `ops` is null or a valid ops whose trampoline no CPU can be running
/// (the core waits for that before calling).
#[no_mangle]
pub unsafe extern "C" fn arch_ftrace_trampoline_free(ops: *mut bindings::ftrace_ops) {
    if ops.is_null() {
        return;
    }
    // SAFETY: per the function's contract, for both `view` calls here.
    let (tramp, _) = unsafe { view::OpsView::from_raw(ops) }.trampoline();
    // SAFETY: as above.
    if !unsafe { ops_flag(ops, bindings::FTRACE_OPS_FL_ALLOC_TRAMP) } || tramp == 0 {
        return;
    }
    // SAFETY: made by `create_trampoline()` with `execmem_alloc()`; no
    // longer in use per the function's contract.
    unsafe {
        bindings::execmem_free(tramp as *mut c_void);
        view::OpsView::from_raw(ops).set_trampoline(0, 0);
    }
}

#[cfg(not(CONFIG_FTRACE_CORE_RUST_GENERIC))]
/// Architecture setup at `ftrace_init()`: says which core runs.
#[no_mangle]
pub extern "C" fn ftrace_dyn_arch_init() -> c_int {
    pr_info!("function tracer core: Rust (x86_64 arch layer in Rust; generic core still kernel/trace/ftrace.c)\n");
    0
}

/// Hooks the return of the traced function whose return address is at
/// `parent`: records it with the graph core and replaces it with
/// `return_to_handler`.
///
/// # Safety
///
/// `parent` points to the return address slot of the traced function on
/// the current stack.
#[no_mangle]
pub unsafe extern "C" fn prepare_ftrace_return(
    ip: c_ulong,
    parent: *mut c_ulong,
    frame_pointer: c_ulong,
) {
    // A CPU resuming from suspend can get here in real mode, on a stack
    // that is not a kernel virtual address.
    let marker = 0u8;
    if (ptr::addr_of!(marker) as isize) >= 0 {
        return;
    }
    // The Rust graph core does the rest, with the guards inlined.
    #[cfg(CONFIG_FTRACE_CORE_RUST_GENERIC)]
    {
        extern "C" {
            fn rftrace_graph_entry(func: c_ulong, parent: *mut c_ulong);
        }
        let _ = frame_pointer;
        // SAFETY: per the function's contract.
        unsafe { rftrace_graph_entry(ip, parent) };
    }
    #[cfg(not(CONFIG_FTRACE_CORE_RUST_GENERIC))]
    // SAFETY: per the function's contract.
    unsafe {
        prepare_return_c(ip, parent, frame_pointer)
    };
}
crate::nokprobe::nokprobe!(prepare_ftrace_return);

/// [`prepare_ftrace_return`] for C's graph core (kernel/trace/fgraph.c).
///
/// # Safety
///
/// As for [`prepare_ftrace_return`].
#[cfg(not(CONFIG_FTRACE_CORE_RUST_GENERIC))]
unsafe fn prepare_return_c(ip: c_ulong, parent: *mut c_ulong, frame_pointer: c_ulong) {
    // SAFETY: a plain read of the graph core's state.
    if unsafe { bindings::ftrace_graph_is_dead() } {
        return;
    }
    // Not `get_current()`: the general helpers are traced, and calling a
    // traced function from here would recurse.
    // SAFETY: reads the current task's pause counter.
    if unsafe { bindings::ftrace_graph_paused() } {
        return;
    }
    // SAFETY: per the function's contract `parent` is readable.
    let ret = unsafe { *parent };
    // SAFETY: the recursion protection of the tracing core.
    let bit = unsafe { bindings::ftrace_test_recursion_trylock(ip, ret) };
    if bit < 0 {
        return;
    }
    // SAFETY: the graph core records `ret` for this frame; `parent` is
    // the slot it is taken from.
    if unsafe { bindings::function_graph_enter(ret, ip, frame_pointer, parent) } == 0 {
        // SAFETY: per the function's contract `parent` is writable.
        unsafe { *parent = bindings::return_to_handler as *const () as c_ulong };
    }
    // SAFETY: paired with the trylock above.
    unsafe { bindings::ftrace_test_recursion_unlock(bit) };
}

/// The callback of the function graph tracer's ops.
///
/// # Safety
///
/// Called by a trampoline: `fregs` is its frame.
#[no_mangle]
pub unsafe extern "C" fn ftrace_graph_func(
    ip: c_ulong,
    _parent_ip: c_ulong,
    _op: *mut bindings::ftrace_ops,
    fregs: *mut bindings::ftrace_regs,
) {
    // SAFETY: on x86_64 `struct ftrace_regs` is a `struct pt_regs`, and
    // `sp` is the stack pointer at the traced function's entry, where its
    // return address is.
    let sp = unsafe { (*fregs.cast::<bindings::pt_regs>()).sp };
    // SAFETY: see above.
    unsafe { prepare_ftrace_return(ip, sp as *mut c_ulong, 0) };
}
crate::nokprobe::nokprobe!(ftrace_graph_func);

/// The bytes of a site that calls `target`, or holds the NOP for 0.
fn site_bytes(ip: u64, target: u64) -> Option<[u8; SITE_SIZE]> {
    if target == 0 {
        Some(NOP5)
    } else {
        call_bytes(ip, target)
    }
}

/// Applies `n` changes to live text in int3 batches of at most
/// [`QUEUE_LEN`] sites (the generic core hands over no more than that at
/// once), after checking that every site of a batch holds what its change
/// says it holds now. Allocates nothing: the batch is built in the static
/// queue, under `text_mutex`. On a mismatch nothing of that batch is
/// written, `*bad_ip` names the site, `ftrace_expected` points at the
/// bytes that were expected, and the result is `-EINVAL` (`-EFAULT` when
/// the site cannot be read).
///
/// # Safety
///
/// `changes` points to `n` valid changes and `bad_ip` to a writable u64;
/// the context may sleep; the caller serializes call-site changes
/// (`ftrace_lock`).
#[cfg(CONFIG_FTRACE_CORE_RUST_GENERIC)]
#[no_mangle]
pub unsafe extern "C" fn rftrace_arch_apply(
    changes: *const Change,
    n: usize,
    bad_ip: *mut u64,
) -> c_int {
    if n == 0 {
        return 0;
    }
    // SAFETY: per the function's contract.
    let changes = unsafe { core::slice::from_raw_parts(changes, n) };
    let poke = |c: &Change| Poke::new(c.ip, site_bytes(c.ip, c.old)?, site_bytes(c.ip, c.new)?);
    // SAFETY: `text_mutex` is a valid global mutex, not held here.
    unsafe { bindings::mutex_lock(ptr::addr_of_mut!(bindings::text_mutex)) };
    // SAFETY: `text_mutex` is held until the unlock below.
    let q = unsafe { QUEUE.get() };
    let mut ret = 0;
    'batches: for part in changes.chunks(QUEUE_LEN) {
        for (slot, c) in q.pokes.iter_mut().zip(part) {
            let Some(p) = poke(c) else {
                // SAFETY: per the function's contract.
                unsafe { *bad_ip = c.ip };
                ret = EINVAL.to_errno();
                break 'batches;
            };
            *slot = p;
        }
        // SAFETY: `text_mutex` is held; the caller may sleep.
        if let Err(i) = unsafe { write_batch(&mut q.pokes[..part.len()]) } {
            let p = q.pokes[i];
            // SAFETY: per the function's contract; `ftrace_expected` is
            // only read by `ftrace_bug()`, which the caller calls next.
            unsafe {
                *bad_ip = p.ip;
                bindings::ftrace_expected = expected_bytes(&p.old);
            }
            ret = if read_site(p.ip).is_none() {
                EFAULT.to_errno()
            } else {
                EINVAL.to_errno()
            };
            break;
        }
    }
    // SAFETY: taken above.
    unsafe { bindings::mutex_unlock(ptr::addr_of_mut!(bindings::text_mutex)) };
    ret
}

/// Sets a site of code that does not run yet (the kernel at boot, a
/// module being loaded) to call `target`, or to the NOP for 0, after
/// checking that it holds the compiler's `call __fentry__` or the NOP
/// (what the build's recordmcount left there). Returns 1 when it wrote
/// the site, 0 when the site already was as asked, or an error.
///
/// # Safety
///
/// No CPU executes the site's code yet, and its text is still writable.
#[cfg(CONFIG_FTRACE_CORE_RUST_GENERIC)]
#[no_mangle]
pub unsafe extern "C" fn rftrace_arch_init_site(ip: u64, target: u64) -> c_int {
    // The kernel's init text is read directly (its sites are set at boot,
    // while it is mapped); everything else as [`read_site`] reads it.
    let cur = if ktext::holds(&ktext::init(), ip, SITE_SIZE) {
        // SAFETY: 5 bytes of the image's init text, mapped until
        // `free_initmem()`: the contract says no CPU ran this code yet,
        // so this is boot, before the init text is freed.
        unsafe { ptr::read_unaligned(ip as *const [u8; SITE_SIZE]) }
    } else {
        let Some(b) = read_site(ip) else {
            return EFAULT.to_errno();
        };
        b
    };
    // The common case at boot: the build left the NOP and the NOP is asked.
    if target == 0 && cur == NOP5 {
        return 0;
    }
    let Some(fentry) = call_bytes(ip, mcount_addr() as u64) else {
        return EINVAL.to_errno();
    };
    if cur != fentry && cur != NOP5 {
        // SAFETY: read by `ftrace_bug()` only, which the caller calls next.
        unsafe { bindings::ftrace_expected = expected_bytes(&fentry) };
        return EINVAL.to_errno();
    }
    let Some(new) = site_bytes(ip, target) else {
        return EINVAL.to_errno();
    };
    if new == cur {
        return 0;
    }
    // SAFETY: per the function's contract nothing runs this code, and
    // `text_poke_early()` is meant for exactly that.
    unsafe { bindings::text_poke_early(ip as *mut c_void, new.as_ptr().cast(), SITE_SIZE) };
    1
}

/// What the site at `ip` calls now, 0 for the NOP, `u64::MAX` for bytes
/// that are neither (for `enabled_functions` and checks).
#[cfg(CONFIG_FTRACE_CORE_RUST_GENERIC)]
#[no_mangle]
pub extern "C" fn rftrace_arch_site_target(ip: u64) -> u64 {
    match read_site(ip).map(|b| insn::decode(ip, &b)) {
        Some(Decoded::Nop) => 0,
        Some(Decoded::Call(t)) => t,
        _ => u64::MAX,
    }
}

// The functions the generic core calls have the types it declares them
// with (archif.rs).
#[cfg(CONFIG_FTRACE_CORE_RUST_GENERIC)]
const _: (archif::ApplyFn, archif::InitSiteFn, archif::GroupFn) = (
    rftrace_arch_apply,
    rftrace_arch_init_site,
    rftrace_arch_group_trampoline,
);
