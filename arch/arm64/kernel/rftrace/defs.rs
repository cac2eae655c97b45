// SPDX-License-Identifier: GPL-2.0

// What the generic core takes from arm64 at compile time besides the
// per-CPU reads: the call sites' geometry, the trampoline's register
// frame, the banner's name. Compiled into the generic core
// (`crate::base::archdep::defs`, by `include!`: no inner attributes
// here), which checks the items and their types.

use crate::base::layout::c;
use kernel::bindings;
use kernel::ffi::c_ulong;

/// The architecture, as the core's banner names it.
pub(crate) const NAME: &str = "arm64";

/// How far into its function a call site may be: arm64 sets no bound (C
/// defines no `FTRACE_MCOUNT_MAX_OFFSET` there): its site is one or two
/// instructions in.
pub(crate) const MCOUNT_MAX_OFFSET: Option<u64> = None;

/// The bytes of an instruction.
const INSN: u64 = 4;

/// The call site that an entry of the compiler's table
/// (`__patchable_function_entries`, which the linker puts between the
/// `__mcount_loc` bounds) names, or `None` if it names none (C's
/// `ftrace_call_adjust()`). The site is the NOP that becomes `BL`, after
/// the one that becomes `mov x9, x30`.
///
/// With `-fpatchable-function-entry=2` (no per-call-site ops) the entry
/// is the function's first NOP, any `BTI c` before it. With `=4,2` (the
/// per-call-site ops, `DYNAMIC_FTRACE_WITH_CALL_OPS`) it is the first of
/// the two NOPs before the function that hold its ops literal: 8-byte
/// aligned, or it names nothing; the function then starts with a
/// `BTI c` where the kernel has BTI and the compiler gave it one (not
/// every function has one), which is read to know.
#[inline]
pub(crate) fn call_adjust(entry: u64) -> Option<u64> {
    if !cfg!(CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS) {
        return Some(entry + INSN);
    }
    if entry % 8 != 0 {
        return None;
    }
    // The function's first instruction, past the literal.
    let mut site = entry + 2 * INSN;
    if cfg!(CONFIG_ARM64_BTI_KERNEL) {
        let mut insn: u32 = 0;
        // SAFETY: reads four bytes into `insn` without faulting: an
        // address that is not mapped text gives an error, not a fault.
        let read = unsafe {
            bindings::copy_from_kernel_nofault(
                core::ptr::addr_of_mut!(insn).cast(),
                site as *const core::ffi::c_void,
                INSN as usize,
            )
        };
        if read != 0 {
            return None;
        }
        if u32::from_le(insn) & BTI_MASK == BTI {
            site += INSN;
        }
    }
    Some(site + INSN)
}

/// `BTI` with any target (`c`, `j`, `jc` or none): `HINT #32..#38`, even.
const BTI: u32 = 0xd503_241f;
const BTI_MASK: u32 = 0xffff_ff3f;

// The register frame: the trampoline saves a `struct __arch_ftrace_regs`
// (x0 to x8, the direct-call slot, fp, lr, sp, pc), never a whole
// `pt_regs`: arm64 has no DYNAMIC_FTRACE_WITH_REGS.

/// Whether the frame `f` is a whole `pt_regs`: never on arm64 (C's
/// `arch_ftrace_get_regs()` is null).
///
/// # Safety
///
/// None needed: the frame is not read.
#[inline(always)]
pub(crate) unsafe fn has_pt_regs(_f: *const bindings::ftrace_regs) -> bool {
    false
}

/// Makes the trampoline return into `addr` (a direct trampoline)
/// instead of the traced function (C's
/// `arch_ftrace_set_direct_caller()`: the frame's direct-call slot).
///
/// # Safety
///
/// `f` is a frame of this layer's trampoline, live for the call, which
/// nothing but this call chain uses meanwhile.
#[inline]
pub(crate) unsafe fn set_direct_caller(f: *mut bindings::ftrace_regs, addr: c_ulong) {
    // SAFETY: the trampoline's frame has the slot at this offset, from
    // the C compiler (the contract; the assertions below).
    unsafe { f.cast::<u8>().add(c::FREGS_DIRECT_TRAMP).cast::<c_ulong>().write(addr) };
}

/// The return value in `return_to_handler`'s frame (C's
/// `ftrace_regs_get_return_value()`: x0).
///
/// # Safety
///
/// `f` is the frame of `return_to_handler`, live for the call.
#[inline(always)]
pub(crate) unsafe fn return_value(f: *const bindings::ftrace_regs) -> c_ulong {
    // SAFETY: that frame holds x0 at this offset, from the C compiler (the
    // contract).
    unsafe { f.cast::<u8>().add(c::FREGS_X0).cast::<c_ulong>().read() }
}

/// What names the returning function's frame to the graph core, for the
/// frame-pointer test of the return (C's `HAVE_FUNCTION_GRAPH_FP_TEST`):
/// the frame pointer `return_to_handler` saved, which the function's
/// epilogue restored to its caller's, the one the entry saw and named the
/// frame by (graph.rs).
///
/// # Safety
///
/// `f` is the frame of `return_to_handler`, live for the call.
#[inline(always)]
pub(crate) unsafe fn return_frame(f: *const bindings::ftrace_regs) -> Option<u64> {
    // SAFETY: that frame holds x29 at this offset, from the C compiler
    // (the contract).
    Some(unsafe { f.cast::<u8>().add(c::FREGS_FP).cast::<u64>().read() })
}

// The slots read above lie in the frame, which is word-aligned.
const _: () = {
    let word = core::mem::size_of::<c_ulong>();
    assert!(c::FREGS_X0 % word == 0 && c::FREGS_X0 + word <= c::FREGS_SIZE);
    assert!(c::FREGS_FP % word == 0 && c::FREGS_FP + word <= c::FREGS_SIZE);
    assert!(c::FREGS_DIRECT_TRAMP % word == 0 && c::FREGS_DIRECT_TRAMP + word <= c::FREGS_SIZE);
};
