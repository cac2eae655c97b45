// SPDX-License-Identifier: GPL-2.0

//! The C entry points of the core's own life: `ftrace_kill()`,
//! `ftrace_is_dead()` and `ftrace_bug()`.
//!
//! Each is the exported symbol of a safe function of its module, with the
//! same typed parameters (the handle types whose invariants the C
//! prototype's contract gives: `OpsRef`, `GopsRef`, `TraceArray`, ...).

use kernel::bindings;
use kernel::ffi::c_int;

/// [`crate::base::sys::ftrace_kill`], for C.
#[no_mangle]
pub extern "C" fn ftrace_kill() {
    crate::base::sys::ftrace_kill()
}

/// [`crate::base::sys::ftrace_is_dead`], for C.
#[no_mangle]
pub extern "C" fn ftrace_is_dead() -> c_int {
    crate::base::sys::ftrace_is_dead()
}

/// [`crate::base::sys::ftrace_bug`], for C.
#[no_mangle]
pub extern "C" fn ftrace_bug(failed: c_int, rec: Option<&bindings::dyn_ftrace>) {
    crate::base::sys::ftrace_bug(failed, rec)
}
