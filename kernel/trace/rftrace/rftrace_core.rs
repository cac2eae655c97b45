// SPDX-License-Identifier: GPL-2.0

//! The generic part of the Rust ftrace core: what `kernel/trace/ftrace.c`
//! is in the C core (CONFIG_FTRACE_CORE_RUST_GENERIC).
//!
//! Its modules form layers without import cycles, one folder each
//! (Documentation/rust-core.rst, "How the crate is layered"), from the
//! bottom: [`logic`] (pure, host-tested), [`base`] (the C the core calls,
//! the kernel objects it handles, its lock guards and cells), [`sites`]
//! (the call-site table, names, function sets), [`ops`] (the registered
//! ops, what the sites call, the updates), [`filter`] and [`graph`] (the
//! filter APIs and probes; the function graph core), [`fs`] (the tracefs
//! files) and [`abi`] (every function exported to C, the table's
//! life). A module uses its own folder's earlier modules and the folders
//! below; all `unsafe` code is in the boundary modules: [`base`], the
//! typed handles of [`sites`], [`ops`] and [`graph`] that own C memory,
//! and [`abi`].
//!
//! It serves the unchanged C callers through `include/linux/ftrace.h`;
//! the x86_64 layer (arch/x86/kernel/rftrace/) writes the sites and owns
//! the trampolines. The pure logic (patterns, parser, plan, table search)
//! is shared with the host tests (`logic/`).

#![allow(unreachable_pub)]

use core::ptr;
use core::sync::atomic::Ordering;
use kernel::bindings;
use kernel::ffi::c_ulong;
use kernel::prelude::*;

/// The portable logic, the same files the host tests run (logic/).
#[allow(missing_docs)]
mod logic {
    #[path = "demangle.rs"]
    pub mod demangle;
    #[path = "explain.rs"]
    pub mod explain;
    #[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
    #[path = "fgraph.rs"]
    pub mod fgraph;
    #[path = "glob.rs"]
    pub mod glob;
    #[path = "iptable.rs"]
    pub mod iptable;
    #[path = "parser.rs"]
    pub mod parser;
    #[path = "plan.rs"]
    pub mod plan;
    #[path = "profile.rs"]
    pub mod profile;
    #[path = "recursion.rs"]
    pub mod recursion;
    #[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
    #[path = "retstack.rs"]
    pub mod retstack;
    #[path = "seek.rs"]
    pub mod seek;
    #[path = "sites.rs"]
    pub mod sites;
    #[path = "symbols.rs"]
    pub mod symbols;
    #[path = "wantindex.rs"]
    pub mod wantindex;
}

mod abi;
mod base;
mod filter;
mod fs;
mod graph;
mod ops;
mod sites;

const __LOG_PREFIX: &[u8] = b"ftrace\0";

use base::sys::{
    ftrace_enabled, ftrace_lock, ftrace_number_of_groups, ftrace_number_of_pages, global_ops,
    CoreGuard, DEAD,
};
use ops::registry::OpsRef;

/// Boot, with the kernel's call sites (sorted, unique), which no CPU runs
/// yet: make them NOPs and start the table.
pub(crate) fn boot(sites: &ops::arch::UnrunSites<'_>) {
    crate::base::sys::cmutex_init!(ftrace_lock, "ftrace_lock");
    fs::filterfile::init_locks();
    fs::graphfile::init_locks();
    ops::register::init_locks();
    #[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
    graph::fgstacks::init_locks();
    let g = CoreGuard::lock();
    let global = OpsRef::of_static(&global_ops);
    global.init(g.held());
    global.set(bindings::FTRACE_OPS_FL_PID as c_ulong);
    let n = sites.ips().len();
    pr_info!("taking {} call sites from __mcount_loc\n", n);
    // A clock that works this early.
    let sched_clock = crate::base::sys::sched_clock;
    let t0 = sched_clock();
    match abi::module::add_sites(g.held(), ptr::null_mut(), sites) {
        Ok((count, written)) => {
            let us = sched_clock().wrapping_sub(t0) / 1000;
            // Nothing else writes it yet.
            ftrace_enabled.store(1, Ordering::Relaxed);
            pr_info!(
                "function tracer core: Rust (generic core and {} layer); {} call sites, {} pages, {} groups; {} made NOPs at boot, {} were NOPs from the build; {} us\n",
                crate::base::archdep::defs::NAME,
                count,
                ftrace_number_of_pages.load(Ordering::Relaxed),
                ftrace_number_of_groups.load(Ordering::Relaxed),
                written,
                count - written,
                us
            );
        }
        Err(e) => {
            pr_err!(
                "cannot set up the call-site table ({:?}); tracing disabled\n",
                e
            );
            DEAD.store(true, Ordering::Relaxed);
        }
    }
}
