// SPDX-License-Identifier: GPL-2.0

//! What include/linux/ftrace.h asks of an architecture besides the sites:
//! the shared trampoline's callback, per-ops trampolines (none here: the
//! ops literal does their work), and the register names of
//! `struct ftrace_regs`.

use core::ffi::{c_char, c_void, CStr};
use core::mem::offset_of;
use core::ptr;
use kernel::bindings;
use kernel::bindings::__arch_ftrace_regs as Fregs;
use kernel::ffi::c_int;
use kernel::prelude::*;

/// Points the shared trampoline's callback call at `func`: nothing to
/// write, as `ftrace_caller` calls the callback of the ops the site's
/// literal names, read at every call.
#[no_mangle]
pub extern "C" fn ftrace_update_ftrace_func(_func: bindings::ftrace_func_t) -> c_int {
    0
}

/// Makes no trampoline for `ops`: its sites call `ftrace_caller` with
/// their literal naming it. A site group's calls are pointed at each
/// member's callback as it is now.
///
/// # Safety
///
/// `ops` is a valid ops, under `ftrace_lock`.
#[no_mangle]
pub unsafe extern "C" fn arch_ftrace_update_trampoline(ops: *mut bindings::ftrace_ops) {
    // SAFETY: the function's contract.
    unsafe { crate::groups::refresh(ops) }
}

/// The function the trampoline of `ops` calls: none (no trampolines).
///
/// # Safety
///
/// None needed: nothing is read.
#[no_mangle]
pub unsafe extern "C" fn arch_ftrace_trampoline_func(
    _ops: *mut bindings::ftrace_ops,
    _rec: *mut bindings::dyn_ftrace,
) -> *mut c_void {
    ptr::null_mut()
}

/// Frees the trampoline of `ops`: there is none; a site group's calls.
///
/// # Safety
///
/// `ops` is a valid ops that no site names and no CPU or task can be
/// calling through (the core waited), under `ftrace_lock`.
#[no_mangle]
pub unsafe extern "C" fn arch_ftrace_trampoline_free(ops: *mut bindings::ftrace_ops) {
    // SAFETY: the function's contract.
    unsafe { crate::groups::free(ops) }
}

/// The registers of `struct ftrace_regs` by name, with their offsets.
const REGS: [(&CStr, usize); 14] = [
    (c"x0", offset_of!(Fregs, regs)),
    (c"x1", offset_of!(Fregs, regs) + 8),
    (c"x2", offset_of!(Fregs, regs) + 16),
    (c"x3", offset_of!(Fregs, regs) + 24),
    (c"x4", offset_of!(Fregs, regs) + 32),
    (c"x5", offset_of!(Fregs, regs) + 40),
    (c"x6", offset_of!(Fregs, regs) + 48),
    (c"x7", offset_of!(Fregs, regs) + 56),
    (c"x8", offset_of!(Fregs, regs) + 64),
    (c"x29", offset_of!(Fregs, fp)),
    (c"x30", offset_of!(Fregs, lr)),
    (c"lr", offset_of!(Fregs, lr)),
    (c"sp", offset_of!(Fregs, sp)),
    (c"pc", offset_of!(Fregs, pc)),
];

/// The offset in `struct ftrace_regs` of the register called `name`, or
/// `-EINVAL` (for probe events that fetch registers by name).
///
/// # Safety
///
/// `name` is a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn ftrace_regs_query_register_offset(name: *const c_char) -> c_int {
    // SAFETY: a NUL-terminated string (the contract).
    let name = unsafe { CStr::from_ptr(name) };
    REGS.iter()
        .find(|(n, _)| *n == name)
        .map_or(EINVAL.to_errno(), |&(_, off)| off as c_int)
}
