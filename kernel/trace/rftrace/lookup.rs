// SPDX-License-Identifier: GPL-2.0

//! `ftrace_lookup_symbols()`: function names to the addresses fprobe and
//! BPF's kprobe_multi attach to, over kallsyms and then the modules'
//! symbols (the matching itself is `logic::symbols`, host-tested).

use crate::ffi::CStrArg;
use crate::logic::symbols::Lookup;
use kernel::error::code::ESRCH;
use kernel::ffi::{c_char, c_int, c_ulong};

/// The bytes of one of the caller's names.
fn name_bytes<'x>(p: &'x CStrArg<'_>) -> &'x [u8] {
    p.bytes()
}

/// Fills `addrs[i]` with the address of the traceable function named
/// `sorted_syms[i]`, looking at the kernel's symbols, then the modules'.
/// Returns 0 when every name was found, -ESRCH otherwise (the found ones
/// are filled in, the others 0).
///
/// # Safety
///
/// `sorted_syms` holds `cnt` NUL-terminated names sorted by `strcmp`, and
/// `addrs` room for `cnt` addresses; both live through the call. Sleeps.
#[no_mangle]
pub unsafe extern "C" fn ftrace_lookup_symbols(
    sorted_syms: *mut *const c_char,
    cnt: usize,
    addrs: *mut c_ulong,
) -> c_int {
    if cnt == 0 {
        return 0;
    }
    // SAFETY: `cnt` names and `cnt` address slots (the contract); an
    // unsigned long is a u64 on x86_64.
    let (names, out) = unsafe {
        (
            core::slice::from_raw_parts(sorted_syms.cast_const().cast::<CStrArg<'_>>(), cnt),
            core::slice::from_raw_parts_mut(addrs.cast::<u64>(), cnt),
        )
    };
    let mut lookup = Lookup::new(names, out);
    let traceable = |a: u64| crate::table::ftrace_location(a as c_ulong) != 0;
    // The lookup stops the walks once every name is found.
    if crate::names::each_symbol(true, |name, addr| {
        lookup.offer(name, addr, name_bytes, traceable)
    }) {
        return 0;
    }
    ESRCH.to_errno()
}
