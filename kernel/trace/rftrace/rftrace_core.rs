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
//! files) and [`abi`] (the C entry points no type can carry, the table's
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
use kernel::c_str;
use kernel::ffi::{c_char, c_int, c_ulong, c_void};
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
    #[path = "sites.rs"]
    pub mod sites;
    #[path = "symbols.rs"]
    pub mod symbols;
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
    CoreGuard, PreemptOff, TraceArray, DEAD, TRAMPOLINE_SYM,
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
                "function tracer core: Rust (generic core and x86_64 layer); {} call sites, {} pages, {} groups; {} made NOPs at boot, {} were NOPs from the build; {} us\n",
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

/// The ops of a trace array's function tracer calls `func`.
#[no_mangle]
pub(crate) extern "C" fn ftrace_init_array_ops(
    tr: Option<TraceArray>,
    func: bindings::ftrace_func_t,
) {
    let Some(ops) = tr.and_then(TraceArray::ops_ref) else {
        return;
    };
    ops.set_func(func);
    let g = CoreGuard::lock();
    ops.set_private(g.held(), tr.map_or(ptr::null_mut(), TraceArray::as_ptr));
}

/// Puts a trace array's ops back to the stub.
#[no_mangle]
pub(crate) extern "C" fn ftrace_reset_array_ops(tr: Option<TraceArray>) {
    if let Some(ops) = tr.and_then(TraceArray::ops_ref) {
        // Just unregistered: a dispatcher may still read it.
        ops.set_func(Some(bindings::ftrace_stub));
    }
}

/// Creates the top-level files of the core (C passes the global trace
/// array and its directory).
#[no_mangle]
pub(crate) extern "C" fn ftrace_init_tracefs_toplevel(
    _tr: Option<TraceArray>,
    d: kernel::tracefs::Dir,
) {
    fs::files::create_listings(d);
    // The top-level filter files belong to `global_ops` (no trace array).
    fs::filterfile::ftrace_create_filter_files(None, d);
    fs::graphfile::create_graph_files(d);
    fs::profile::init(d);
    abi::entry::register_sysctl();
}

/// A new trace array: the core keeps its probes and cached entries in
/// lists of its own, so there is nothing to set up.
#[no_mangle]
pub(crate) extern "C" fn ftrace_init_trace_array(_tr: Option<TraceArray>) {}

/// A module's init memory `[start, end)` is being freed.
#[no_mangle]
pub extern "C" fn ftrace_free_mem(m: *mut bindings::module, start: *mut c_void, end: *mut c_void) {
    abi::module::free_range(m, start as u64, end as u64);
}

/// The entry for `ip` in `h`, or null. C passes null or a set it reads
/// under RCU or with preemption off (`Option<&_>`: that pointer's ABI).
#[no_mangle]
pub extern "C" fn ftrace_lookup_ip(
    h: Option<&sites::hash::FtraceHash>,
    ip: c_ulong,
) -> *mut bindings::ftrace_func_entry {
    h.map_or(ptr::null_mut(), |h| h.lookup(ip as u64))
}

/// Whether `addr` is in a trampoline the core made.
#[no_mangle]
pub extern "C" fn is_ftrace_trampoline(addr: c_ulong) -> bool {
    !ftrace_ops_trampoline(addr).is_null()
}

/// The symbol at `addr` among the freed init functions of loaded modules
/// (kallsyms asks when no other symbol holds it): its name into `sym`,
/// its size, the offset of `addr` in it and the module's name. 0 when
/// there is none, else the name's length. (The core's trampolines are
/// named through [`ftrace_mod_get_kallsym`].)
#[no_mangle]
pub extern "C" fn ftrace_mod_address_lookup(
    addr: c_ulong,
    size: Option<&mut c_ulong>,
    off: Option<&mut c_ulong>,
    modname: Option<&mut *const c_char>,
    modbuildid: Option<&mut *const u8>,
    sym: &mut [u8; bindings::KSYM_NAME_LEN as usize],
) -> c_int {
    let p = PreemptOff::new();
    let Some(f) = abi::initnames::find(p.token(), addr as u64) else {
        return 0;
    };
    let n = copy_bytes(sym, f.name);
    if let Some(size) = size {
        *size = f.size as c_ulong;
    }
    if let Some(off) = off {
        *off = (addr as u64 - f.start) as c_ulong;
    }
    if let Some(modname) = modname {
        // Kept until the module goes (`ftrace_release_mod`), as its name.
        *modname = f.module.as_ptr().cast();
    }
    if let Some(id) = modbuildid {
        *id = ptr::null();
    }
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

/// The ops whose own trampoline holds `addr`, or null: the ORC unwinder
/// finds the unwind data of the code the trampoline was copied from
/// through it. Callers keep preemption off while they use the ops.
#[no_mangle]
pub extern "C" fn ftrace_ops_trampoline(addr: c_ulong) -> *mut bindings::ftrace_ops {
    let p = PreemptOff::new();
    ops::dispatch::trampoline_ops(p.token(), addr as u64).map_or(ptr::null_mut(), OpsRef::as_ptr)
}

/// The symbol `symnum` (from 0) of the core's trampolines for kallsyms:
/// each ops' own trampoline is `ftrace_trampoline` of the pseudo-module
/// `__builtin__ftrace`, a local text symbol, as the C core names them.
/// kallsyms passes its buffers: `name` of `KSYM_NAME_LEN` bytes,
/// `module_name` of `MODULE_NAME_LEN` (the parameters' types).
#[no_mangle]
pub extern "C" fn ftrace_mod_get_kallsym(
    symnum: u32,
    value: &mut c_ulong,
    ty: &mut c_char,
    name: &mut [u8; bindings::KSYM_NAME_LEN as usize],
    module_name: &mut [u8; MODULE_NAME_LEN],
    exported: &mut c_int,
) -> c_int {
    let p = PreemptOff::new();
    // The freed init functions first, then the trampolines, as C.
    let inits = match abi::initnames::nth(p.token(), symnum as usize) {
        Ok(f) => {
            *value = f.start as c_ulong;
            *ty = b'T' as c_char;
            *exported = 1;
            copy_bytes(name, f.name);
            copy_bytes(module_name, f.module);
            return 0;
        }
        Err(count) => count,
    };
    let found = ops::dispatch::nth_trampoline(p.token(), symnum as usize - inits);
    let Some((start, _)) = found else {
        return ERANGE.to_errno();
    };
    *value = start as c_ulong;
    *ty = b't' as c_char;
    *exported = 0;
    copy_bytes(name, TRAMPOLINE_SYM.as_bytes());
    copy_bytes(module_name, TRAMPOLINE_MOD.as_bytes());
    0
}

/// kallsyms' name of an ops trampoline's pseudo-module.
const TRAMPOLINE_MOD: &CStr = c_str!("__builtin__ftrace");
/// `MODULE_NAME_LEN` of include/linux/module.h (a macro bindgen skips).
const MODULE_NAME_LEN: usize = 64 - core::mem::size_of::<c_ulong>();

/// Copies `s` (up to a NUL) into `dst`, truncated and terminated; the
/// length copied.
fn copy_bytes(dst: &mut [u8], s: &[u8]) -> usize {
    let s = s.split(|&b| b == 0).next().unwrap_or(&[]);
    let n = s.len().min(dst.len().saturating_sub(1));
    dst[..n].copy_from_slice(&s[..n]);
    if let Some(z) = dst.get_mut(n) {
        *z = 0;
    }
    n
}
