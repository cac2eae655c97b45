// SPDX-License-Identifier: GPL-2.0

//! arm64 architecture layer of the Rust ftrace core.
//!
//! Every call site has an 8-byte ops literal before its function
//! (`DYNAMIC_FTRACE_WITH_CALL_OPS`), and one shared trampoline,
//! `ftrace_caller` (entry.S), calls the callback of the ops the literal
//! names, or goes to that ops' direct trampoline. So a site alone needs no
//! trampoline of its own, and this layer makes none: no per-ops
//! trampolines, no list walk for a site of one ops; and a site group (the
//! sites several ops want) gets a callback that calls them ([`groups`]).
//!
//! A site changes one 4-byte instruction at a time (`BL` or `NOP`), which
//! other CPUs may run while it changes (the architecture allows
//! concurrent changes between these), with the cache maintenance
//! `aarch64_insn_patch_text_nosync()` does; its literal is written before
//! the instruction that makes the site read it. No `stop_machine`, no
//! `int3`-like protocol.
//!
//! It serves the Rust generic core (`kernel/trace/rftrace/`) only: its
//! modules are [`sites`] (the batches of site changes, the sites set at
//! boot and module load), [`groups`] (site groups' calls), [`graph`] (the
//! graph tracer's entry) and [`capi`] (what include/linux/ftrace.h asks
//! of an architecture).

// The C entry points are `pub` for the linker, in private modules.
#![allow(unreachable_pub)]

#[path = "../../../../kernel/trace/rftrace/ops/archif.rs"]
mod archif;
#[allow(unreachable_pub, missing_docs, dead_code)]
#[path = "logic/insn.rs"]
mod insn;
#[allow(unreachable_pub, missing_docs, dead_code)]
#[path = "logic/steps.rs"]
mod steps;
#[path = "../../../../kernel/trace/rftrace/base/nokprobe.rs"]
mod nokprobe;
/// The generic crate's modules this crate shares, at the paths they name
/// themselves by (`nokprobe!` names `$crate::base::nokprobe`).
mod base {
    pub(crate) use super::nokprobe;
}
mod capi;
mod graph;
mod groups;
mod sites;

const __LOG_PREFIX: &[u8] = b"ftrace\0";
