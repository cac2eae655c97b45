// SPDX-License-Identifier: GPL-2.0

//! The C entry points that ask about call sites: `ftrace_location()`,
//! `ftrace_location_range()` and `ftrace_text_reserved()`.
//!
//! Each is the exported symbol of a safe function of its module, with the
//! same typed parameters (the handle types whose invariants the C
//! prototype's contract gives: `OpsRef`, `GopsRef`, `TraceArray`, ...).

use core::ptr;
use kernel::bindings;
use kernel::ffi::{c_int, c_ulong, c_void};

/// [`crate::sites::table::ftrace_location`], for C.
#[no_mangle]
pub extern "C" fn ftrace_location(ip: c_ulong) -> c_ulong {
    crate::sites::table::ftrace_location(ip)
}

/// [`crate::sites::table::ftrace_location_range`], for C.
#[no_mangle]
pub extern "C" fn ftrace_location_range(start: c_ulong, end: c_ulong) -> c_ulong {
    crate::sites::table::ftrace_location_range(start, end)
}

/// [`crate::sites::table::ftrace_text_reserved`], for C.
#[no_mangle]
pub extern "C" fn ftrace_text_reserved(start: *const c_void, end: *const c_void) -> c_int {
    crate::sites::table::ftrace_text_reserved(start, end)
}

/// The entry for `ip` in `h`, or null. C passes null or a set it reads
/// under RCU or with preemption off (`Option<&_>`: that pointer's ABI).
#[no_mangle]
pub extern "C" fn ftrace_lookup_ip(
    h: Option<&crate::sites::hash::FtraceHash>,
    ip: c_ulong,
) -> *mut bindings::ftrace_func_entry {
    h.map_or(ptr::null_mut(), |h| h.lookup(ip as u64))
}
