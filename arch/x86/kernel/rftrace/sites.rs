// SPDX-License-Identifier: GPL-2.0

//! The Rust generic core's entry points for the sites
//! (`CONFIG_FTRACE_CORE_RUST_GENERIC`): a batch of changes written live
//! ([`rftrace_arch_apply`]), a site set before its code runs
//! ([`rftrace_arch_init_site`]) and what a site calls now
//! ([`rftrace_arch_site_target`]).

use crate::capi::call_bytes;
use crate::capi::expected_bytes;
use crate::capi::mcount_addr;
use crate::int3::read_site;
use crate::int3::write_batch;
use crate::int3::QUEUE;
use crate::int3::QUEUE_LEN;
use crate::tramp::rftrace_arch_group_trampoline;
use core::ptr;
use kernel::bindings;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

use crate::archif::{self, Change};
use crate::insn;
use crate::insn::{Decoded, NOP5, SITE_SIZE};
use crate::ktext;
use crate::runs::Poke;

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
const _: (archif::ApplyFn, archif::InitSiteFn, archif::GroupFn) = (
    rftrace_arch_apply,
    rftrace_arch_init_site,
    rftrace_arch_group_trampoline,
);
