// SPDX-License-Identifier: GPL-2.0

//! The top: every function the crate exports to C. The entry points
//! whose arguments or context no Rust type can carry convert their raw
//! arguments once and call a safe function ([`entry`]); those whose
//! arguments the handle types carry (`OpsRef`, `GopsRef`, `TraceArray`,
//! `Dir`, ...) are the exported symbols of safe functions of their layer,
//! by area: [`ops`], [`graph`], [`filter`], [`sites`], [`fs`], the trace
//! arrays ([`arrays`]), kallsyms and the unwinders ([`kallsyms`]) and the
//! core's health ([`health`]). The table's life as C drives it, boot,
//! module load and unload, freed init text, is [`module`], with the names
//! kept of freed module init functions ([`initnames`]). The C-visible
//! data (`ftrace_enabled`, `function_trace_op`, the graph filter sets, ...)
//! stays with the module that owns it.
//!
//! May use every layer below.

pub(crate) mod arrays;
pub(crate) mod entry;
pub(crate) mod filter;
pub(crate) mod fs;
pub(crate) mod graph;
pub(crate) mod health;
pub(crate) mod initnames;
pub(crate) mod kallsyms;
pub(crate) mod module;
pub(crate) mod ops;
pub(crate) mod sites;
