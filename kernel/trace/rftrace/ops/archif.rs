// SPDX-License-Identifier: GPL-2.0

//! The calls between the generic Rust core and an architecture layer
//! (arch/$(SRCARCH)/kernel/rftrace/): the one definition both crates
//! compile, this one by module, the arch crate by path. The arch crate
//! defines the functions; the generic crate declares them; each checks
//! its side against the types here at build time, so the two cannot
//! drift apart. What the generic crate takes from the architecture at
//! compile time (constants, register frames, per-CPU reads) is
//! [`crate::base::archdep`].

use kernel::ffi::c_int;

/// One call-site change planned by the generic core: the call target the
/// site has now and the one it gets, 0 meaning the NOP; and, where the
/// sites have an ops literal (`DYNAMIC_FTRACE_WITH_CALL_OPS`), the ops it
/// names now and the one it gets (0: the core's stub ops; always 0
/// without the literal).
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Change {
    /// Address of the site.
    pub ip: u64,
    /// Target now, or 0.
    pub old: u64,
    /// Target wanted, or 0.
    pub new: u64,
    /// The ops the literal names now, or 0.
    pub old_ops: u64,
    /// The ops the literal gets, or 0.
    pub new_ops: u64,
}

/// `rftrace_arch_apply(changes, n, bad_ip)`: writes `n` changes to live
/// text (see the arch layer).
pub(crate) type ApplyFn = unsafe extern "C" fn(*const Change, usize, *mut u64) -> c_int;

/// `rftrace_arch_init_site(ip, target)`: sets a site of code that does not
/// run yet (see the arch layer).
pub(crate) type InitSiteFn = unsafe extern "C" fn(u64, u64) -> c_int;

/// One member of a site group: the callback its own trampoline would call
/// and its ops.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Member {
    /// The callback.
    pub func: u64,
    /// The ops (`struct ftrace_ops *`).
    pub ops: u64,
}

/// `rftrace_arch_group_trampoline(ops, members, n)`: gives the group ops
/// `ops` a trampoline that calls the `n` members directly (see the arch
/// layer).
pub(crate) type GroupFn =
    unsafe extern "C" fn(*mut kernel::bindings::ftrace_ops, *const Member, usize) -> c_int;

/// `rftrace_graph_entry(func, parent, retp)`: the graph tracer's entry
/// from the architecture's graph callback (see the generic core's
/// `graph::fgraph::rftrace_graph_entry`): `parent` is the slot that holds
/// the traced function's return address now, `retp` what the frame
/// records as its place (the slot itself, or the frame pointer where the
/// unwinder names frames by it).
pub(crate) type GraphEntryFn =
    unsafe extern "C" fn(kernel::ffi::c_ulong, &mut kernel::ffi::c_ulong, kernel::ffi::c_ulong);
