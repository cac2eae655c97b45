// SPDX-License-Identifier: GPL-2.0

//! The graph tracer's entry: the callback of the graph manager's ops,
//! which `ftrace_caller` calls with its `struct ftrace_regs`.

use kernel::bindings;
use kernel::ffi::c_ulong;

/// The callback of the function graph tracer's ops: hands the traced
/// function's return address, which `ftrace_caller` saved in its frame
/// as the link register and restores from there, to the generic graph
/// core, which may replace it with `return_to_handler`. The frame is named
/// by the traced function's caller's frame pointer, as the arm64
/// unwinder names it (`ftrace_graph_ret_addr()`).
///
/// # Safety
///
/// Called by `ftrace_caller` on the current task: `fregs` is its frame,
/// live for the call and used by nothing else meanwhile.
#[no_mangle]
pub unsafe extern "C" fn ftrace_graph_func(
    ip: c_ulong,
    _parent_ip: c_ulong,
    _op: *mut bindings::ftrace_ops,
    fregs: *mut bindings::ftrace_regs,
) {
    extern "C" {
        fn rftrace_graph_entry(func: c_ulong, parent: &mut c_ulong, retp: c_ulong);
    }
    const _: crate::archif::GraphEntryFn = rftrace_graph_entry;
    let f = fregs.cast::<bindings::__arch_ftrace_regs>();
    // SAFETY: on arm64 `struct ftrace_regs` is a `struct
    // __arch_ftrace_regs` (C's `arch_ftrace_regs()` cast), here
    // `ftrace_caller`'s frame, live and this call chain's alone (the
    // contract).
    unsafe {
        let fp = (*f).fp;
        rftrace_graph_entry(ip, &mut (*f).lr, fp)
    };
}
crate::nokprobe::nokprobe!(ftrace_graph_func);
