// SPDX-License-Identifier: GPL-2.0

//! The architecture interface the C core (`kernel/trace/ftrace.c`) calls
//! when it runs on this layer (`CONFIG_FTRACE_CORE_RUST_GENERIC=n`):
//! `ftrace_make_nop()`, `ftrace_make_call()`, `ftrace_replace_code()` and
//! the rest, over a queue of rewrites written as one batch; and the
//! checks of a site's bytes both cores use.

use crate::insn;
use crate::insn::Decoded;
use crate::insn::NOP5;
use crate::insn::SITE_SIZE;
use crate::int3::read_site;
use crate::int3::write_batch;
use crate::int3::TextLocked;
use crate::int3::QUEUE;
use crate::int3::QUEUE_LEN;
use crate::runs::Poke;
use crate::tramp::addr;
#[cfg(not(CONFIG_FTRACE_CORE_RUST_GENERIC))]
use core::ptr;
use core::sync::atomic::AtomicBool;
use core::sync::atomic::Ordering;
use kernel::bindings;
use kernel::ffi::c_int;
use kernel::ffi::c_ulong;
use kernel::ffi::c_void;
use kernel::prelude::*;
/// Set while the core holds `text_mutex` to patch live text.
#[cfg_attr(CONFIG_FTRACE_CORE_RUST_GENERIC, allow(dead_code))]
pub(crate) static POKE_LATE: AtomicBool = AtomicBool::new(false);

/// Writes the queued rewrites.
///
/// # Safety
///
/// `text_mutex` is held.
#[cfg_attr(CONFIG_FTRACE_CORE_RUST_GENERIC, allow(dead_code))]
pub(crate) unsafe fn flush_queue() {
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
pub(crate) fn rewrite_site(ip: u64, old: [u8; SITE_SIZE], new: [u8; SITE_SIZE]) -> c_int {
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
pub(crate) static EXPECTED: TextLocked<[u8; SITE_SIZE]> = TextLocked::new(NOP5);

pub(crate) fn expected_bytes(b: &[u8; SITE_SIZE]) -> *const c_void {
    // SAFETY: reports are made under `ftrace_lock` by the core, one at a
    // time; the buffer is only read by `ftrace_bug()`.
    let e = unsafe { EXPECTED.get() };
    *e = *b;
    e.as_ptr().cast()
}

pub(crate) fn call_bytes(ip: u64, target: u64) -> Option<[u8; SITE_SIZE]> {
    insn::call(ip, target)
}

/// The `__fentry__` call every site holds in the object files.
pub(crate) fn mcount_addr() -> c_ulong {
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
pub(crate) unsafe fn record_change(
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
