// SPDX-License-Identifier: GPL-2.0

//! x86_64 architecture layer of the Rust ftrace core.
//!
//! It rewrites call sites live, in batches of any size: an `int3` over the
//! first byte of every site of the batch, a sync of all CPUs, the tails,
//! a sync, the first bytes, a sync. A CPU that meets a site in the middle
//! of this traps, and [`rftrace_int3_handler`] makes it behave as the new
//! instruction. No `stop_machine`.
//!
//! It serves the Rust generic core (`kernel/trace/rftrace/`) through
//! [`rftrace_arch_apply`], [`rftrace_arch_init_site`] and the per-ops
//! trampoline functions; with `CONFIG_FTRACE_CORE_RUST_GENERIC=n` it serves
//! the C core (`kernel/trace/ftrace.c`) instead, through the architecture
//! interface of `include/linux/ftrace.h` (`ftrace_replace_code()`,
//! `ftrace_make_call()`, ...).
//!
//! Its modules: [`int3`] (the batch writer and the `int3` handler),
//! [`tramp`] (per-ops and group trampolines), [`graph`] (the graph
//! tracer's entry), [`capi`] (the C core's architecture interface and the
//! checks of a site's bytes), [`runs`] (runs of sites written together),
//! and [`sites`] (the Rust core's entry points for the sites).

// The C entry points are `pub` for the linker, in private modules.
#![allow(unreachable_pub)]

#[cfg(CONFIG_FTRACE_CORE_RUST_GENERIC)]
#[path = "../../../../kernel/trace/rftrace/ops/archif.rs"]
mod archif;
#[allow(unreachable_pub, missing_docs)]
#[path = "logic/insn.rs"]
// `jmp` is the return of a trampoline through the return thunk: unused
// without return thunks.
#[cfg_attr(not(CONFIG_MITIGATION_RETHUNK), allow(dead_code))]
mod insn;
// Each crate uses the part it needs.
#[allow(dead_code)]
#[path = "../../../../kernel/trace/rftrace/base/ktext.rs"]
mod ktext;
#[path = "../../../../kernel/trace/rftrace/base/nokprobe.rs"]
mod nokprobe;
/// The generic crate's modules this crate shares, at the paths they name
/// themselves by (`nokprobe!` names `$crate::base::nokprobe`).
mod base {
    pub(crate) use super::nokprobe;
}
mod capi;
mod graph;
mod int3;
mod runs;
#[cfg(CONFIG_FTRACE_CORE_RUST_GENERIC)]
mod sites;
mod tramp;
#[allow(dead_code)]
#[path = "../../../../kernel/trace/rftrace/base/opsview.rs"]
mod view;

const __LOG_PREFIX: &[u8] = b"ftrace\0";
