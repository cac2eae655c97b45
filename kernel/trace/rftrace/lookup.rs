// SPDX-License-Identifier: GPL-2.0

//! `ftrace_lookup_symbols()`: function names to the addresses fprobe and
//! BPF's kprobe_multi attach to, over kallsyms and then the modules'
//! symbols (the matching itself is `logic::symbols`, host-tested).

use crate::ffi::CStrArg;
use crate::logic::symbols::Lookup;
use kernel::error::code::ESRCH;
use kernel::ffi::{c_int, c_ulong};

/// The bytes of one of the caller's names.
fn name_bytes<'x>(p: &'x CStrArg<'_>) -> &'x [u8] {
    p.bytes()
}

/// Fills `out[i]` with the address of the traceable function named
/// `names[i]` (sorted by `strcmp`), looking at the kernel's symbols, then
/// the modules'. Returns 0 when every name was found, -ESRCH otherwise
/// (the found ones are filled in, the others 0). Sleeps.
pub(crate) fn lookup_symbols(names: &[CStrArg<'_>], out: &mut [u64]) -> c_int {
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
