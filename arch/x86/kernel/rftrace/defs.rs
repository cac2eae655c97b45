// SPDX-License-Identifier: GPL-2.0

// What the generic core takes from x86_64 at compile time besides the
// per-CPU reads: the call sites' geometry, the trampolines' register
// frame, the banner's name. Compiled into the generic core
// (`crate::base::archdep::defs`, by `include!`: no inner attributes
// here), which checks the items and their types.

use kernel::bindings;
use kernel::ffi::c_ulong;

/// The architecture, as the core's banner names it.
pub(crate) const NAME: &str = "x86_64";

/// How far into its function a call site may be, if the architecture
/// bounds it (C's `FTRACE_MCOUNT_MAX_OFFSET`): after the `endbr64` (4
/// bytes) with IBT, else at the entry. A site further in belongs to no
/// function (a weak function's leftover).
pub(crate) const MCOUNT_MAX_OFFSET: Option<u64> =
    Some(if cfg!(CONFIG_X86_KERNEL_IBT) { 4 } else { 0 });

/// The call site that an entry of `__mcount_loc` (or of a module's table
/// of sites) names, or `None` if it names none (C's
/// `ftrace_call_adjust()`): on x86_64 the entry is the `call __fentry__`
/// itself.
#[inline]
pub(crate) fn call_adjust(entry: u64) -> Option<u64> {
    Some(entry)
}

// The register frame. The trampolines hand their callbacks a `struct
// ftrace_regs`, which on x86_64 is a `struct pt_regs`: the list and
// per-ops trampolines save the argument registers in it and leave `cs`
// 0; the full-regs trampoline (`ftrace_regs_caller`) saves all of it and
// sets `cs`; `return_to_handler`'s saves the return value registers.

/// Whether the frame `f` is a whole `pt_regs` (C's
/// `arch_ftrace_get_regs()` being non-null).
///
/// # Safety
///
/// `f` is a frame of this layer's trampolines, live for the call.
#[inline(always)]
pub(crate) unsafe fn has_pt_regs(f: *const bindings::ftrace_regs) -> bool {
    // SAFETY: a trampoline's frame has room for a `pt_regs` and its
    // `cs` written (0 unless the full-regs one saved everything), by the
    // contract.
    unsafe { (*f.cast::<bindings::pt_regs>()).__bindgen_anon_1.csx != 0 }
}

/// Makes the full-regs trampoline return into `addr` (a direct
/// trampoline) instead of the traced function (C's
/// `arch_ftrace_set_direct_caller()`: `orig_ax`, which only
/// `ftrace_regs_caller` tests on its way out); nothing in the frame of
/// another trampoline, which would not act on it.
///
/// # Safety
///
/// `f` is a frame of this layer's trampolines, live for the call, which
/// nothing but this call chain uses meanwhile.
#[inline]
pub(crate) unsafe fn set_direct_caller(f: *mut bindings::ftrace_regs, addr: c_ulong) {
    // SAFETY: a frame of our trampolines, live for the call (the
    // contract).
    if unsafe { has_pt_regs(f) } {
        // SAFETY: a whole `pt_regs` of the full-regs trampoline, which
        // this call chain alone uses (the contract).
        unsafe { (*f.cast::<bindings::pt_regs>()).orig_ax = addr };
    }
}

/// The return value in `return_to_handler`'s frame (C's
/// `ftrace_regs_get_return_value()`).
///
/// # Safety
///
/// `f` is the frame of `return_to_handler`, live for the call.
#[inline(always)]
pub(crate) unsafe fn return_value(f: *const bindings::ftrace_regs) -> c_ulong {
    // SAFETY: that frame is laid out as a `pt_regs`, `ax` saved (the
    // contract).
    unsafe { (*f.cast::<bindings::pt_regs>()).ax }
}

/// What names the returning function's frame to the graph core, for a
/// frame test of the return: nothing on x86_64, whose frames are named by
/// the return address slot, which the return no longer sees (C has no
/// `HAVE_FUNCTION_GRAPH_FP_TEST` here either).
///
/// # Safety
///
/// None; the signature is the one the arm64 layer's reads need.
#[inline(always)]
pub(crate) unsafe fn return_frame(_f: *const bindings::ftrace_regs) -> Option<u64> {
    None
}

// The `pt_regs` fields read above, where the C compiler puts them
// (arch_offsets.h, through the generic core's abi_offsets.c).
const _: () = {
    use crate::base::layout::c;
    use core::mem::{offset_of, size_of};
    assert!(size_of::<bindings::pt_regs>() == c::PT_REGS_SIZE);
    assert!(offset_of!(bindings::pt_regs, ax) == c::PT_REGS_AX);
    assert!(offset_of!(bindings::pt_regs, orig_ax) == c::PT_REGS_ORIG_AX);
    assert!(offset_of!(bindings::pt_regs, __bindgen_anon_1) == c::PT_REGS_CS);
};
