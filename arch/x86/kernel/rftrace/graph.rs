// SPDX-License-Identifier: GPL-2.0

//! The function graph tracer's entry on x86_64: the return address hijack
//! ([`prepare_ftrace_return`]) and the graph ops' callback
//! ([`ftrace_graph_func`]).

use core::ptr;
use kernel::bindings;
use kernel::ffi::c_ulong;
/// Hooks the return of the traced function whose return address is at
/// `parent`: records it with the graph core and replaces it with
/// `return_to_handler`.
///
/// # Safety
///
/// `parent` points to the return address slot of the traced function on
/// the current stack.
#[no_mangle]
pub unsafe extern "C" fn prepare_ftrace_return(
    ip: c_ulong,
    parent: *mut c_ulong,
    frame_pointer: c_ulong,
) {
    // A CPU resuming from suspend can get here in real mode, on a stack
    // that is not a kernel virtual address.
    let marker = 0u8;
    if (ptr::addr_of!(marker) as isize) >= 0 {
        return;
    }
    // The Rust graph core does the rest, with the guards inlined.
    #[cfg(CONFIG_FTRACE_CORE_RUST_GENERIC)]
    {
        extern "C" {
            fn rftrace_graph_entry(func: c_ulong, parent: &mut c_ulong, retp: c_ulong);
        }
        const _: crate::archif::GraphEntryFn = rftrace_graph_entry;
        let _ = frame_pointer;
        // SAFETY: per the function's contract `parent` is the current
        // task's return address slot, which nothing else uses meanwhile;
        // the frame is named by that slot's address, as the unwinder
        // passes it.
        unsafe { rftrace_graph_entry(ip, &mut *parent, parent as c_ulong) };
    }
    #[cfg(not(CONFIG_FTRACE_CORE_RUST_GENERIC))]
    // SAFETY: per the function's contract.
    unsafe {
        prepare_return_c(ip, parent, frame_pointer)
    };
}
crate::nokprobe::nokprobe!(prepare_ftrace_return);

/// [`prepare_ftrace_return`] for C's graph core (kernel/trace/fgraph.c).
///
/// # Safety
///
/// As for [`prepare_ftrace_return`].
#[cfg(not(CONFIG_FTRACE_CORE_RUST_GENERIC))]
pub(crate) unsafe fn prepare_return_c(ip: c_ulong, parent: *mut c_ulong, frame_pointer: c_ulong) {
    // SAFETY: a plain read of the graph core's state.
    if unsafe { bindings::ftrace_graph_is_dead() } {
        return;
    }
    // Not `get_current()`: the general helpers are traced, and calling a
    // traced function from here would recurse.
    // SAFETY: reads the current task's pause counter.
    if unsafe { bindings::ftrace_graph_paused() } {
        return;
    }
    // SAFETY: per the function's contract `parent` is readable.
    let ret = unsafe { *parent };
    // SAFETY: the recursion protection of the tracing core.
    let bit = unsafe { bindings::ftrace_test_recursion_trylock(ip, ret) };
    if bit < 0 {
        return;
    }
    // SAFETY: the graph core records `ret` for this frame; `parent` is
    // the slot it is taken from.
    if unsafe { bindings::function_graph_enter(ret, ip, frame_pointer, parent) } == 0 {
        // SAFETY: per the function's contract `parent` is writable.
        unsafe { *parent = bindings::return_to_handler as *const () as c_ulong };
    }
    // SAFETY: paired with the trylock above.
    unsafe { bindings::ftrace_test_recursion_unlock(bit) };
}

/// The callback of the function graph tracer's ops.
///
/// # Safety
///
/// Called by a trampoline: `fregs` is its frame.
#[no_mangle]
pub unsafe extern "C" fn ftrace_graph_func(
    ip: c_ulong,
    _parent_ip: c_ulong,
    _op: *mut bindings::ftrace_ops,
    fregs: *mut bindings::ftrace_regs,
) {
    // SAFETY: on x86_64 `struct ftrace_regs` is a `struct pt_regs`, and
    // `sp` is the stack pointer at the traced function's entry, where its
    // return address is.
    let sp = unsafe { (*fregs.cast::<bindings::pt_regs>()).sp };
    // SAFETY: see above.
    unsafe { prepare_ftrace_return(ip, sp as *mut c_ulong, 0) };
}
crate::nokprobe::nokprobe!(ftrace_graph_func);
