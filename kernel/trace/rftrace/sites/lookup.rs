// SPDX-License-Identifier: GPL-2.0

//! `ftrace_lookup_symbols()`: function names to the addresses fprobe and
//! BPF's kprobe_multi attach to, over kallsyms and then the modules'
//! symbols (the matching itself is `logic::symbols`, host-tested).

use crate::base::ffi::CStrArg;
use crate::logic::symbols::Lookup;
use kernel::error::code::ESRCH;
use kernel::ffi::{c_int, c_ulong};
use kernel::prelude::*;

/// Fills `out[i]` with the address of the traceable function named
/// `names[i]` (sorted by `strcmp`), looking at the kernel's symbols, then
/// the modules'. Returns 0 when every name was found, -ESRCH otherwise
/// (the found ones are filled in, the others 0). Sleeps.
///
/// The kernel's functions with a site are looked up first among the kept
/// site names (`names`, built once by a kallsyms walk): one pass over the
/// sites, a binary search each, where a kallsyms walk decompresses every
/// symbol of the kernel (some 150,000) and compares it. They are in
/// kallsyms' order, so the first function of a name found is the one the
/// walk finds first. What is left (a module's function, an alias that is
/// not the first name at its address, a name not kept) goes through the
/// walks as before. Each name's length is taken once, not at each
/// comparison of the searches.
pub(crate) fn lookup_symbols(names: &[CStrArg<'_>], out: &mut [u64]) -> c_int {
    let traceable = |a: u64| crate::sites::table::ftrace_location(a as c_ulong) != 0;
    let mut bytes = KVVec::<&[u8]>::new();
    if bytes.reserve(names.len(), GFP_KERNEL).is_err() {
        // No memory for the lengths: the walks alone, a length each time.
        let mut lookup = Lookup::new(names, out);
        return result(crate::sites::names::each_symbol(true, |name, addr| {
            lookup.offer(name, addr, |n| n.bytes(), traceable)
        }));
    }
    for n in names {
        // Cannot fail: the room was reserved above.
        let _ = bytes.push(n.bytes(), GFP_KERNEL);
    }
    let mut lookup = Lookup::new(&bytes[..], out);
    crate::sites::names::prepare();
    if crate::sites::names::each_kept_function(|name, addr| {
        lookup.offer(name, addr, |n| *n, traceable)
    }) == Some(true)
    {
        return 0;
    }
    // The walks stop once every name is found.
    result(crate::sites::names::each_symbol(true, |name, addr| {
        lookup.offer(name, addr, |n| *n, traceable)
    }))
}

fn result(found_all: bool) -> c_int {
    if found_all {
        0
    } else {
        ESRCH.to_errno()
    }
}
