// SPDX-License-Identifier: GPL-2.0

//! The entry points C calls whose arguments or context no Rust type can
//! carry: a buffer and its length, an array of names, a file the VFS is
//! opening, a sysctl's user buffer, a callback C passes, a task that is
//! gone, and the boot hooks that run before anything else can. Each one
//! turns its raw arguments into typed values once, arguing the contract C
//! calls it under, and calls a safe function of its module.
//!
//! This is the upper face of the crate's abstraction layer; the lower one
//! (the C the core calls, and the handles of C objects) is `ffi`, `sys`
//! and their kin. The entry points whose arguments a handle type carries
//! (`OpsRef`, `TraceArray`, `Dir`, ...) are the other files of `abi`.

use crate::base::archdep::defs;
use crate::base::ffi::{CStrArg, ModuleRef};
use crate::base::sys::{global_ops, CGlobal, TraceArray};
use crate::base::task::TaskRef;
use crate::graph::shadow::Fresh;
use crate::ops::arch::UnrunSites;
use crate::ops::registry::OpsRef;
use crate::sites::hash::Mapper;
use crate::{abi::module, fs::filterfile, graph::fgstacks, logic, ops::sysctl};
use core::ptr;
use kernel::bindings;
use kernel::ffi::{c_char, c_int, c_uchar, c_ulong, c_void};
use kernel::prelude::*;

// --- the filter API ----------------------------------------------------------

/// The `len` bytes at `buf` (none when null or empty).
///
/// # Safety
///
/// `buf` is null or `len` readable bytes that stay for `'a`.
unsafe fn bytes<'a>(buf: *const c_uchar, len: c_int) -> Option<&'a [u8]> {
    let len = usize::try_from(len)
        .ok()
        .filter(|&l| l > 0 && !buf.is_null())?;
    // SAFETY: `buf` is not null here, so it holds `len` readable bytes
    // for `'a` (the contract); `len` is positive, and bytes need no
    // alignment.
    Some(unsafe { core::slice::from_raw_parts(buf, len) })
}

/// Sets (`reset`) or extends the filter of `ops` with the functions that
/// match the pattern `buf`.
///
/// # Safety
///
/// `buf` is null or `len` bytes, readable during the call (the C API's
/// rule: its callers pass a string they own).
#[no_mangle]
pub unsafe extern "C" fn ftrace_set_filter(
    ops: OpsRef<'_>,
    buf: *mut c_uchar,
    len: c_int,
    reset: c_int,
) -> c_int {
    // SAFETY: the caller's bytes (the contract), read before this returns.
    let pattern = unsafe { bytes(buf, len) };
    crate::filter::api::set_pattern(ops, pattern, reset != 0, false)
}

/// As [`ftrace_set_filter`], for the notrace set.
///
/// # Safety
///
/// As for [`ftrace_set_filter`].
#[no_mangle]
pub unsafe extern "C" fn ftrace_set_notrace(
    ops: OpsRef<'_>,
    buf: *mut c_uchar,
    len: c_int,
    reset: c_int,
) -> c_int {
    // SAFETY: the caller's bytes (the contract), read before this returns.
    let pattern = unsafe { bytes(buf, len) };
    crate::filter::api::set_pattern(ops, pattern, reset != 0, true)
}

/// Adds (or removes) functions, by address, to the filter of `ops`.
///
/// # Safety
///
/// `ips` is null or holds `cnt` addresses, readable during the call.
#[no_mangle]
pub unsafe extern "C" fn ftrace_set_filter_ips(
    ops: OpsRef<'_>,
    ips: *mut c_ulong,
    cnt: u32,
    remove: c_int,
    reset: c_int,
) -> c_int {
    let ips: &[c_ulong] = if ips.is_null() || cnt == 0 {
        &[]
    } else {
        // SAFETY: `cnt` addresses at `ips`, not null (the contract), read
        // before this returns.
        unsafe { core::slice::from_raw_parts(ips, cnt as usize) }
    };
    crate::filter::api::set_ips(ops, ips, remove != 0, reset != 0)
}

/// The filter of `global_ops` (the function tracer's top level).
///
/// # Safety
///
/// `buf` is null or `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn ftrace_set_global_filter(buf: *mut c_uchar, len: c_int, reset: c_int) {
    // SAFETY: the caller's bytes (the contract), read before this returns.
    crate::filter::api::set_global(unsafe { bytes(buf, len) }, reset != 0, false)
}

/// The notrace set of `global_ops`.
///
/// # Safety
///
/// `buf` is null or `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn ftrace_set_global_notrace(buf: *mut c_uchar, len: c_int, reset: c_int) {
    // SAFETY: the caller's bytes (the contract), read before this returns.
    crate::filter::api::set_global(unsafe { bytes(buf, len) }, reset != 0, true)
}

/// Fills `addrs[i]` with the address of the traceable function named
/// `sorted_syms[i]`, looking at the kernel's symbols, then the modules'.
/// Returns 0 when every name was found, -ESRCH otherwise (the found ones
/// are filled in, the others 0).
///
/// # Safety
///
/// `sorted_syms` holds `cnt` NUL-terminated names sorted by `strcmp`, and
/// `addrs` room for `cnt` addresses; both live through the call. Sleeps.
#[no_mangle]
pub unsafe extern "C" fn ftrace_lookup_symbols(
    sorted_syms: *mut *const c_char,
    cnt: usize,
    addrs: *mut c_ulong,
) -> c_int {
    if cnt == 0 || sorted_syms.is_null() || addrs.is_null() {
        return 0;
    }
    // SAFETY: `cnt` names and `cnt` address slots (the contract), which
    // the caller does not touch during the call; a name pointer has the
    // layout of a `CStrArg`, an unsigned long that of a u64 on x86_64.
    let (names, out) = unsafe {
        (
            core::slice::from_raw_parts(sorted_syms.cast_const().cast::<CStrArg<'_>>(), cnt),
            core::slice::from_raw_parts_mut(addrs.cast::<u64>(), cnt),
        )
    };
    crate::sites::lookup::lookup_symbols(names, out)
}

/// Frees a func mapper, first giving each function's data to `free_func`
/// when there is one.
///
/// # Safety
///
/// `m` is null or a mapper of `allocate_ftrace_func_mapper()` that nobody
/// uses any more; `free_func` takes the data words its owner stored.
#[no_mangle]
pub unsafe extern "C" fn free_ftrace_func_mapper(
    m: *mut Mapper,
    free_func: Option<unsafe extern "C" fn(data: *mut c_void) -> c_int>,
) {
    if m.is_null() {
        return;
    }
    // SAFETY: the box `allocate_ftrace_func_mapper` gave C, handed back
    // for good (the contract).
    let m = unsafe { KBox::from_raw(m) };
    if let Some(f) = free_func {
        for data in m.datas() {
            // SAFETY: the owner's callback, with a data word it stored.
            unsafe { f(data) };
        }
    }
}

// --- the filter files, for other tracers' files -------------------------------

/// Opens a filter file of trace array `tr` (none: the one of `ops`, or of
/// `global_ops`) and ops `ops` (none: the trace array's), with the
/// `FTRACE_ITER_*` flags in `flag`.
///
/// # Safety
///
/// Called from a file's open with the VFS's live inode and file, being
/// opened; an ops given lives while the file is open.
#[no_mangle]
pub unsafe extern "C" fn ftrace_regex_open(
    tr: Option<TraceArray>,
    ops: Option<OpsRef<'static>>,
    flag: c_int,
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: the VFS's file, live (the contract).
    let mode = unsafe { kernel::tracefs::OpenMode::new((*file).f_mode, (*file).f_flags) };
    match filterfile::RegexFile::open(tr, ops, flag, mode) {
        // SAFETY: the VFS's file, being opened, by nothing else yet.
        Ok(f) => unsafe { kernel::seq_file::open_with(file, f) },
        Err(e) => e.to_errno(),
    }
}

/// `write()` of a filter file: at most one token per call.
///
/// # Safety
///
/// Called by the VFS on a file that [`ftrace_regex_open`] opened.
#[no_mangle]
pub unsafe extern "C" fn ftrace_filter_write(
    file: *mut bindings::file,
    ubuf: *const c_char,
    cnt: usize,
    ppos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: `ftrace_regex_open` opened `file` with
    // `open_with::<RegexFile>` (the contract), and the VFS passes the
    // file's position: what `write_adapter::<RegexFile>` needs.
    unsafe { kernel::seq_file::write_adapter::<filterfile::RegexFile>(file, ubuf, cnt, ppos) }
}

/// Closes a filter file.
///
/// # Safety
///
/// Called by the VFS at the last close of a file that
/// [`ftrace_regex_open`] opened.
#[no_mangle]
pub unsafe extern "C" fn ftrace_regex_release(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: `ftrace_regex_open` opened `file` with
    // `open_with::<RegexFile>` (the contract), and this is its last close.
    unsafe { kernel::seq_file::release_adapter::<filterfile::RegexFile>(inode, file) }
}

// --- the tracers' output -------------------------------------------------------

/// The path of the Rust function named `name` (kallsyms' name), for the
/// tracers' output with the `rust-demangle` trace option
/// (`kernel/trace/trace_output.c`): written into `buf` with a NUL after
/// it. Returns the path's length, 0 for a name that is no Rust symbol, a
/// negative errno for one that does not demangle into `size` bytes
/// (`names::demangled`); the caller then prints the name. Only computes:
/// callable with preemption or interrupts off.
///
/// # Safety
///
/// `name` is null or a NUL-terminated string, unchanged during the call
/// (the prototype's contract, which `CStrArg` carries); `buf` is null or
/// `size` writable bytes that nothing else reads or writes during the call.
#[no_mangle]
pub unsafe extern "C" fn rftrace_demangle(
    name: CStrArg<'_>,
    buf: *mut c_char,
    size: usize,
) -> c_int {
    if buf.is_null() {
        // No room, not even for the NUL: the name is only classified.
        return crate::sites::names::demangled(name.bytes(), &mut []);
    }
    // SAFETY: `buf` is not null, so it is `size` writable bytes that only
    // this call uses until it returns (the contract); one C object, so
    // `size` is below `isize::MAX`; bytes need no alignment and any value
    // is a valid `u8`. The slice is dropped before the call returns.
    let out = unsafe { core::slice::from_raw_parts_mut(buf.cast::<u8>(), size) };
    crate::sites::names::demangled(name.bytes(), out)
}

// --- kernel.ftrace_enabled ----------------------------------------------------

/// The sysctl's handler.
///
/// # Safety
///
/// Called by the sysctl core for the table [`SYSCTL`], with its
/// arguments.
unsafe extern "C" fn enabled_sysctl(
    table: *const bindings::ctl_table,
    write: c_int,
    buffer: *mut c_void,
    lenp: *mut usize,
    ppos: *mut bindings::loff_t,
) -> c_int {
    sysctl::enabled_sysctl(write != 0, || {
        // SAFETY: the sysctl core's arguments for our table (the
        // contract); its data, `ftrace_enabled`, is written only here and
        // under `ftrace_lock`, which `enabled_sysctl` holds around this.
        unsafe { bindings::proc_dointvec(table, write, buffer, lenp, ppos) }
    })
}

static SYSCTL: CGlobal<[bindings::ctl_table; 1]> = CGlobal::new([bindings::ctl_table {
    procname: c"ftrace_enabled".as_ptr().cast(),
    data: crate::base::sys::ftrace_enabled.as_ptr().cast(),
    maxlen: core::mem::size_of::<c_int>() as c_int,
    mode: 0o644,
    proc_handler: Some(enabled_sysctl),
    poll: ptr::null_mut(),
    extra1: ptr::null_mut(),
    extra2: ptr::null_mut(),
}]);

/// Registers `kernel.ftrace_enabled`.
pub(crate) fn register_sysctl() {
    // SAFETY: a static table that lives for ever, whose handler is made
    // for it, and a static path.
    let h =
        unsafe { bindings::register_sysctl_sz(c"kernel".as_ptr().cast(), SYSCTL.get().cast(), 1) };
    if h.is_null() {
        pr_warn!("cannot register kernel.ftrace_enabled\n");
    }
}

// --- tasks ----------------------------------------------------------------------

/// An idle task (at boot or CPU bring-up): keeps the stack it had.
///
/// # Safety
///
/// `t` is the idle task of `cpu`, being initialised.
#[no_mangle]
pub unsafe extern "C" fn ftrace_graph_init_idle_task(t: TaskRef<'_>, _cpu: c_int) {
    fgstacks::init_idle(t, |t| -> Option<Fresh> {
        // SAFETY: the idle task being initialised (the contract): it does
        // not run traced code meanwhile, and nobody unwinds an idle task
        // then.
        t.take_stack().map(|s| unsafe { s.unread() })
    });
}

/// A task being freed.
///
/// # Safety
///
/// `t` is a task nobody runs or unwinds any more.
#[no_mangle]
pub unsafe extern "C" fn ftrace_graph_exit_task(t: TaskRef<'_>) {
    // SAFETY: the stack of a task that nobody runs or unwinds any more
    // (the contract); freed here.
    drop(t.take_stack().map(|s| unsafe { s.unread() }));
}

// --- modules and boot -------------------------------------------------------------

/// A module is being loaded: its sites join the table, as NOPs.
///
/// # Safety
///
/// `m` is a module being loaded, its text not yet running.
#[no_mangle]
pub unsafe extern "C" fn ftrace_module_init(m: ModuleRef<'_>) {
    let Some(ips) = module::sorted_sites(m) else {
        return;
    };
    // SAFETY: the sites of a module the loader has not started (the
    // contract): no CPU runs its text yet, which is still writable.
    let sites = unsafe { UnrunSites::new(&ips) };
    module::add_module(m, &sites);
}

/// Boot: take the call sites of `__mcount_loc`, make them NOPs, start the
/// table.
///
/// # Safety
///
/// Called once, by `start_kernel()`, before other CPUs run and before
/// anything else uses the core.
#[no_mangle]
pub unsafe extern "C" fn ftrace_init() {
    // SAFETY: the linker delimits `__mcount_loc` with these symbols; it is
    // init data, ours to sort until init memory is freed, which nothing
    // else reads (the contract: boot, before any other user).
    let locs = unsafe {
        let start = ptr::addr_of_mut!(crate::base::ffi::__start_mcount_loc).cast::<u64>();
        let stop = ptr::addr_of_mut!(crate::base::ffi::__stop_mcount_loc).cast::<u64>();
        let n = (stop as usize - start as usize) / 8;
        core::slice::from_raw_parts_mut(start, n)
    };
    // Each entry names its site as the architecture says (C's
    // `ftrace_call_adjust()`); only sites in the kernel's text (or init
    // text) are kept: what else the table holds (zeros of replaced weak
    // functions, moved by KASLR; entries naming no site) is skipped, as
    // in C.
    logic::sites::adjust(locs, defs::call_adjust);
    let n = logic::sites::retain(locs, crate::base::ktext::image);
    let locs = &mut locs[..n];
    let n = if logic::sites::is_sorted_unique(locs) {
        locs.len()
    } else {
        logic::sites::sort_unique(locs)
    };
    // SAFETY: early boot (the contract): the kernel's text is still
    // writable and nothing runs the sites but this CPU, which is here.
    let sites = unsafe { UnrunSites::new(&locs[..n]) };
    crate::boot(&sites);
}

/// The top-level trace array gets `global_ops`.
///
/// # Safety
///
/// `tr` is the global trace array, at boot, its graph ops set up.
#[no_mangle]
#[link_section = ".init.text"]
pub unsafe extern "C" fn ftrace_init_global_array_ops(tr: *mut c_void) {
    // SAFETY: the global trace array at boot (the contract), before any
    // other user of it or of `global_ops`; `global_ops` is static.
    unsafe {
        crate::base::ffi::rftrace_tr_set_ops(tr, global_ops.get());
        (*global_ops.get()).private = tr;
        crate::base::ffi::init_array_fgraph_ops(tr, global_ops.get());
    }
}

/// Boot: init memory is going away; so are its call sites.
///
/// # Safety
///
/// Called once, at the end of boot, before init memory is freed.
#[no_mangle]
#[link_section = ".init.text"]
pub unsafe extern "C" fn ftrace_free_init_mem() {
    // SAFETY: the tracing core's boot snapshot hook, init code called at
    // boot (the contract).
    unsafe { bindings::ftrace_boot_snapshot() };
    // Linker symbols; only their addresses are used.
    let (start, end) = (
        ptr::addr_of!(bindings::__init_begin) as u64,
        ptr::addr_of!(bindings::__init_end) as u64,
    );
    module::free_range(ptr::null_mut(), start, end);
}
