// SPDX-License-Identifier: GPL-2.0

//! The generic part of the Rust ftrace core: what `kernel/trace/ftrace.c`
//! is in the C core (CONFIG_FTRACE_CORE_RUST_GENERIC).
//!
//! - [`table`]: the call-site table, from `__mcount_loc` and each module.
//! - [`hash`]: the function sets (`struct ftrace_hash`) of filters.
//! - [`ops`]: the ftrace_ops list, registration, the per-site plan
//!   (which trampoline each site calls), the list dispatcher;
//!   [`opsview`]: the atomic view of a registered ops' shared fields.
//! - [`filter`]: the filter APIs and the tracefs filter files.
//! - [`files`]: the read-only tracefs files.
//! - [`probe`]: commands, function probes and the func mapper.
//! - [`pid`]: set_ftrace_pid and set_ftrace_notrace_pid.
//! - [`fgraph`]: the function graph core (shadow stacks, graph ops).
//! - [`profile`]: the function profiler.
//! - [`task`]: the tracing fields of `task_struct` and the recursion
//!   guard; [`lookup`]: symbol lookups; [`layout`]: the build-time checks
//!   of the C structs the core reads; [`nokprobe`]: the kprobe blacklist.
//!
//! It serves the unchanged C callers through `include/linux/ftrace.h`;
//! the x86_64 layer (arch/x86/kernel/rftrace/) writes the sites and owns
//! the trampolines. The pure logic (patterns, parser, plan, table search)
//! is shared with the host tests (`logic/`).

#![allow(unreachable_pub)]

use core::cell::UnsafeCell;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicUsize, Ordering};
use kernel::bindings;
use kernel::c_str;
use kernel::ffi::{c_char, c_int, c_ulong, c_void};
use kernel::prelude::*;

/// The portable logic, the same files the host tests run (logic/).
#[allow(missing_docs)]
mod logic {
    #[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
    #[path = "fgraph.rs"]
    pub mod fgraph;
    #[path = "glob.rs"]
    pub mod glob;
    // The x86_64 crate's instruction encoding: here only its site size.
    #[allow(dead_code)]
    #[path = "insn.rs"]
    pub mod insn;
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

#[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
mod fgraph;
mod files;
mod filter;
pub mod hash;
mod layout;
mod lookup;
mod nokprobe;
mod ops;
mod opsview;
use opsview as view;
/// The interface to the x86_64 layer, shared with it.
#[path = "../../../arch/x86/kernel/rftrace/archif.rs"]
mod archif;
/// The x86_64 per-CPU reads the hot path inlines (`current`, preempt count).
#[path = "../../../arch/x86/kernel/rftrace/percpu.rs"]
mod percpu;
mod pid;
mod probe;
mod profile;
#[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
mod shadow;
mod table;
mod task;

const __LOG_PREFIX: &[u8] = b"ftrace\0";

pub(crate) const fn err(e: u32) -> c_int {
    -(e as c_int)
}
pub(crate) const EINVAL: c_int = err(bindings::EINVAL);
pub(crate) const ENOMEM: c_int = err(bindings::ENOMEM);
pub(crate) const ENODEV: c_int = err(bindings::ENODEV);
pub(crate) const EBUSY: c_int = err(bindings::EBUSY);

/// A C-visible global with interior mutability: same layout as `T`.
#[repr(transparent)]
pub struct CGlobal<T>(UnsafeCell<T>);

// SAFETY: every access goes through raw pointers, under the locking rule
// stated where each global is defined.
unsafe impl<T> Sync for CGlobal<T> {}

impl<T> CGlobal<T> {
    /// A global holding `v`.
    pub const fn new(v: T) -> Self {
        CGlobal(UnsafeCell::new(v))
    }
    /// Where the value is.
    pub const fn get(&self) -> *mut T {
        self.0.get()
    }
}

/// Data of the core only touched with `ftrace_lock` held.
pub(crate) struct Locked<T>(UnsafeCell<T>);

// SAFETY: every access goes through `get`, whose callers hold `ftrace_lock`.
unsafe impl<T> Sync for Locked<T> {}

impl<T> Locked<T> {
    pub(crate) const fn new(v: T) -> Self {
        Locked(UnsafeCell::new(v))
    }
    /// The data, for as long as the guard of `ftrace_lock` is borrowed
    /// mutably: the guard proves the lock held, and its one mutable borrow
    /// makes this the only reference reached through it.
    pub(crate) fn access<'a>(&'a self, _g: &'a mut CoreGuard) -> &'a mut T {
        // SAFETY: `ftrace_lock` is held while `_g` lives (`CoreGuard`'s
        // invariant) and `_g` is borrowed mutably for as long as the
        // result: no other `access` can run meanwhile; `get`'s callers
        // (the paths not yet holding a `CoreGuard`) promise not to run
        // while a reference from here is alive.
        unsafe { &mut *self.0.get() }
    }

    /// # Safety
    ///
    /// `ftrace_lock` is held for as long as the reference lives, and no
    /// other reference from `get` or [`Locked::access`] is alive.
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn get(&self) -> &mut T {
        // Lockdep checks the contract where it runs (a warning if not).
        assert_held(ftrace_lock.get());
        // SAFETY: per the function's contract.
        unsafe { &mut *self.0.get() }
    }
}

/// `lockdep_assert_held(m)`: warns when lockdep runs and `m` is not held
/// by this task (nothing without lockdep).
pub(crate) fn assert_held(m: *mut bindings::mutex) {
    extern "C" {
        fn rftrace_assert_held(m: *mut bindings::mutex);
    }
    // SAFETY: the C helper only reads the lock's lockdep map; `m` is one
    // of our static mutexes.
    unsafe { rftrace_assert_held(m) };
}

pub(crate) const fn zeroed_ops() -> bindings::ftrace_ops {
    // SAFETY: all-zero is a valid `ftrace_ops` (null pointers, no
    // function, no flags); the core initialises it before use.
    unsafe { core::mem::zeroed() }
}

// --- The C core's global data (include/linux/ftrace.h, ftrace_internal.h) --

/// `ftrace_enabled`, the sysctl: read fresh at every update (the boot
/// selftests store to it directly).
#[no_mangle]
pub static ftrace_enabled: CGlobal<c_int> = CGlobal::new(0);

/// Set by `ftrace_filter=` / `ftrace_notrace=` on the command line.
#[no_mangle]
pub static ftrace_filter_param: CGlobal<bool> = CGlobal::new(false);

/// The function graph filter sets, read by the inline helpers of trace.h.
#[no_mangle]
pub static ftrace_graph_hash: AtomicPtr<hash::FtraceHash> = AtomicPtr::new(ptr::null_mut());
/// The function graph notrace set.
#[no_mangle]
pub static ftrace_graph_notrace_hash: AtomicPtr<hash::FtraceHash> = AtomicPtr::new(ptr::null_mut());

/// `dyn_ftrace_total_info`: records, and the pages and groups they use.
#[no_mangle]
pub static ftrace_update_tot_cnt: AtomicUsize = AtomicUsize::new(0);
/// Pages the call-site records take.
#[no_mangle]
pub static ftrace_number_of_pages: AtomicUsize = AtomicUsize::new(0);
/// Groups of call-site records (the kernel, each module).
#[no_mangle]
pub static ftrace_number_of_groups: AtomicUsize = AtomicUsize::new(0);

/// What the shared trampolines pass their callback as the ops.
#[no_mangle]
pub static function_trace_op: CGlobal<*mut bindings::ftrace_ops> = CGlobal::new(ptr::null_mut());

/// What the shared trampolines call (the list dispatcher once an ops is
/// registered).
#[no_mangle]
pub static ftrace_trace_function: CGlobal<bindings::ftrace_func_t> =
    CGlobal::new(Some(bindings::ftrace_stub));

/// The end of the ops list: a stub ops.
#[no_mangle]
pub static ftrace_list_end: CGlobal<bindings::ftrace_ops> = CGlobal::new(bindings::ftrace_ops {
    func: Some(bindings::ftrace_stub),
    flags: (bindings::FTRACE_OPS_FL_STUB | bindings::FTRACE_OPS_FL_INITIALIZED) as c_ulong,
    ..zeroed_ops()
});

/// The registered ops, newest first, ending at `ftrace_list_end`. Written
/// under `ftrace_lock`, read locklessly by the dispatcher.
#[no_mangle]
pub static ftrace_ops_list: AtomicPtr<bindings::ftrace_ops> = AtomicPtr::new(ftrace_list_end.get());

/// The core's mutex; fgraph.c takes it too. Initialised by `ftrace_init()`.
#[no_mangle]
pub static ftrace_lock: CGlobal<bindings::mutex> = CGlobal::new(
    // SAFETY: all-zero, then initialised by `ftrace_init()` before use.
    unsafe { core::mem::zeroed() },
);

/// The ops of the function tracer's top-level trace array.
#[no_mangle]
pub static global_ops: CGlobal<bindings::ftrace_ops> = CGlobal::new(bindings::ftrace_ops {
    func: Some(bindings::ftrace_stub),
    ..zeroed_ops()
});

/// The bytes a failed site check expected, for `ftrace_bug()`.
#[no_mangle]
pub static ftrace_expected: CGlobal<*const c_void> = CGlobal::new(ptr::null());

/// What `ftrace_bug()` reports; nobody else reads it.
#[no_mangle]
pub static ftrace_bug_type: CGlobal<c_int> = CGlobal::new(0);

/// Set when the core met something it cannot trust (`ftrace_kill()`).
pub(crate) static DEAD: AtomicBool = AtomicBool::new(false);

pub(crate) fn dead() -> bool {
    DEAD.load(Ordering::Relaxed)
}

pub(crate) fn enabled() -> bool {
    // SAFETY: a plain int other code stores to at any time; read it fresh.
    unsafe { ptr::read_volatile(ftrace_enabled.get()) != 0 }
}

/// Initialises a mutex of ours in a lockdep class of its own, keyed by a
/// static key of the call site: what `DEFINE_MUTEX()` and `mutex_init()`
/// give C (every ops' `regex_lock` shares the class of the one place that
/// initialises them, as in C).
///
/// # Safety
///
/// `$m` is valid and not in use.
macro_rules! mutex_init {
    ($m:expr, $name:literal) => {{
        let key: &'static kernel::sync::LockClassKey = kernel::static_lock_class!();
        $crate::mutex_init_keyed($m, kernel::c_str!($name), key)
    }};
}
pub(crate) use mutex_init;

/// The body of [`mutex_init!`].
///
/// # Safety
///
/// `m` is valid and not in use.
pub(crate) unsafe fn mutex_init_keyed(
    m: *mut bindings::mutex,
    name: &'static CStr,
    key: &'static kernel::sync::LockClassKey,
) {
    // `LockClassKey` is a transparent wrapper of an `Opaque` key, itself
    // transparent: the cast gives the C key.
    let key = ptr::from_ref(key)
        .cast_mut()
        .cast::<bindings::lock_class_key>();
    // SAFETY: `m` is valid and unused (the contract); the key is static,
    // as lockdep requires of a class key, and names this call site only.
    unsafe { bindings::__mutex_init(m, name.as_char_ptr(), key) };
}

/// `ftrace_lock`, held for the life of the guard.
pub(crate) struct Guard(*mut bindings::mutex);

impl Guard {
    pub(crate) fn lock() -> Guard {
        Self::of(ftrace_lock.get())
    }
    pub(crate) fn of(m: *mut bindings::mutex) -> Guard {
        // SAFETY: our mutexes are initialised in `ftrace_init()`, before
        // anything can call into the core; callers may sleep.
        unsafe { bindings::mutex_lock(m) };
        Guard(m)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // SAFETY: locked by `Guard::of`.
        unsafe { bindings::mutex_unlock(self.0) };
    }
}

/// `ftrace_lock`, held for the life of the guard: what [`Locked::access`]
/// asks for.
///
/// # Invariants
///
/// `ftrace_lock` is held by this task while the value lives.
pub(crate) struct CoreGuard {
    _held: Guard,
}

impl CoreGuard {
    pub(crate) fn lock() -> CoreGuard {
        CoreGuard {
            _held: Guard::lock(),
        }
    }
}

/// A function's address.
pub(crate) fn addr(f: unsafe extern "C" fn()) -> u64 {
    f as *const () as u64
}

// Bindgen types of empty C structs are fine behind pointers.
#[allow(improper_ctypes)]
extern "C" {
    static mut __start_mcount_loc: [c_ulong; 0];
    static mut __stop_mcount_loc: [c_ulong; 0];
    fn kprobe_ftrace_kill();
    fn sched_clock() -> u64;
}

/// Whether `ip` is in the kernel's text or init text (C's
/// `is_kernel_text() || is_kernel_inittext()`).
fn is_kernel_text(ip: u64) -> bool {
    // Linker symbols: only their addresses are taken.
    let (st, et, si, ei) = (
        ptr::addr_of!(bindings::_stext) as u64,
        ptr::addr_of!(bindings::_etext) as u64,
        ptr::addr_of!(bindings::_sinittext) as u64,
        ptr::addr_of!(bindings::_einittext) as u64,
    );
    (st..et).contains(&ip) || (si..ei).contains(&ip)
}

/// Boot: take the call sites of `__mcount_loc`, make them NOPs, start the
/// table.
#[no_mangle]
pub extern "C" fn ftrace_init() {
    // SAFETY: single-threaded early boot; our mutexes are not in use yet.
    unsafe {
        mutex_init!(ftrace_lock.get(), "ftrace_lock");
        filter::init_locks();
        ops::init_locks();
        #[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
        fgraph::init_locks();
        ops::ops_init(global_ops.get());
        crate::view::set(global_ops.get(), bindings::FTRACE_OPS_FL_PID as c_ulong);
    }
    // SAFETY: the linker delimits `__mcount_loc` with these symbols; it is
    // init data, ours to sort until init memory is freed.
    let locs = unsafe {
        let start = ptr::addr_of_mut!(__start_mcount_loc).cast::<u64>();
        let stop = ptr::addr_of_mut!(__stop_mcount_loc).cast::<u64>();
        let n = (stop as usize - start as usize) / 8;
        core::slice::from_raw_parts_mut(start, n)
    };
    // Only entries in the kernel's text (or init text) are sites; what
    // else the table holds (zeros of replaced weak functions, moved by
    // KASLR) is skipped, as in C.
    let n = logic::sites::retain(locs, is_kernel_text);
    let locs = &mut locs[..n];
    let n = if logic::sites::is_sorted_unique(locs) {
        locs.len()
    } else {
        logic::sites::sort_unique(locs)
    };
    let _g = Guard::lock();
    pr_info!("taking {} call sites from __mcount_loc\n", n);
    // SAFETY: a clock that works this early.
    let t0 = unsafe { sched_clock() };
    // SAFETY: early boot, the kernel's text is still writable and nothing
    // runs the sites but this CPU, which is here.
    match unsafe { ops::add_sites(ptr::null_mut(), &locs[..n]) } {
        Ok((count, written)) => {
            // SAFETY: as above.
            let us = unsafe { sched_clock() }.wrapping_sub(t0) / 1000;
            // SAFETY: nothing else writes it yet.
            unsafe { ptr::write_volatile(ftrace_enabled.get(), 1) };
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

/// Stops all function tracing for good, after something went wrong.
#[no_mangle]
pub extern "C" fn ftrace_kill() {
    DEAD.store(true, Ordering::Relaxed);
    // SAFETY: the kprobes core's hook for exactly this.
    unsafe { kprobe_ftrace_kill() };
}

/// Whether tracing was stopped for good by [`ftrace_kill`].
#[no_mangle]
pub extern "C" fn ftrace_is_dead() -> c_int {
    c_int::from(dead())
}

/// Reports a site that could not be patched, as the C core does, and
/// stops tracing.
///
/// # Safety
///
/// `rec` is null or points to a record (only its `ip` is read).
#[no_mangle]
pub unsafe extern "C" fn ftrace_bug(failed: c_int, rec: *mut bindings::dyn_ftrace) {
    // SAFETY: per the function's contract.
    let ip = unsafe { rec.as_ref() }.map_or(0, |r| r.ip as u64);
    report_bug(failed, ip);
}

pub(crate) fn report_bug(failed: c_int, ip: u64) {
    let mut cur = [0u8; 5];
    // SAFETY: reads 5 bytes of text without faulting.
    let ok = unsafe {
        bindings::copy_from_kernel_nofault(cur.as_mut_ptr().cast(), ip as *const c_void, 5)
    } == 0;
    // SAFETY: set by the arch layer to 5 static bytes, or null.
    let exp = unsafe { *ftrace_expected.get() }.cast::<[u8; 5]>();
    // SAFETY: as above.
    let exp = unsafe { exp.as_ref() };
    let what = match failed {
        e if e == err(bindings::EFAULT) => "faulted on modifying",
        e if e == EINVAL => "failed to modify",
        e if e == err(bindings::EPERM) => "faulted on writing",
        _ => "failed on",
    };
    pr_err!(
        "ftrace {} [<{:#x}>]: actual {:02x?}, expected {:02x?}\n",
        what,
        ip,
        if ok { Some(cur) } else { None },
        exp
    );
    ftrace_kill();
}

/// The ops of a trace array's function tracer calls `func`.
///
/// # Safety
///
/// `tr` is a valid trace array with an ops.
#[no_mangle]
pub unsafe extern "C" fn ftrace_init_array_ops(tr: *mut c_void, func: bindings::ftrace_func_t) {
    // SAFETY: per the function's contract.
    unsafe {
        let ops = rftrace_tr_ops(tr);
        if ops.is_null() {
            return;
        }
        crate::view::set_func(ops, func);
        (*ops).private = tr;
    }
}

/// Puts a trace array's ops back to the stub.
///
/// # Safety
///
/// `tr` is a valid trace array with an ops.
#[no_mangle]
pub unsafe extern "C" fn ftrace_reset_array_ops(tr: *mut c_void) {
    // SAFETY: per the function's contract.
    unsafe {
        let ops = rftrace_tr_ops(tr);
        if !ops.is_null() {
            // Just unregistered: a dispatcher may still read it.
            crate::view::set_func(ops, Some(bindings::ftrace_stub));
        }
    }
}

// Bindgen types of empty C structs are fine behind pointers.
#[allow(improper_ctypes)]
extern "C" {
    fn init_array_fgraph_ops(tr: *mut c_void, ops: *mut bindings::ftrace_ops);
    pub(crate) fn rftrace_tr_ops(tr: *mut c_void) -> *mut bindings::ftrace_ops;
    fn rftrace_tr_set_ops(tr: *mut c_void, ops: *mut bindings::ftrace_ops);
    pub(crate) fn rftrace_tr_func_probes(tr: *mut c_void) -> *mut bindings::list_head;
    pub(crate) fn rftrace_tr_mod_list(tr: *mut c_void, notrace: bool) -> *mut bindings::list_head;
    pub(crate) fn tracing_check_open_get_tr(tr: *mut c_void) -> c_int;
    pub(crate) fn tracing_lseek(
        file: *mut bindings::file,
        off: bindings::loff_t,
        whence: c_int,
    ) -> bindings::loff_t;
    pub(crate) fn trace_array_put(tr: *mut c_void);
}

/// The top-level trace array gets `global_ops`.
///
/// # Safety
///
/// `tr` is the global trace array.
#[no_mangle]
#[link_section = ".init.text"]
pub unsafe extern "C" fn ftrace_init_global_array_ops(tr: *mut c_void) {
    // SAFETY: per the function's contract.
    unsafe {
        rftrace_tr_set_ops(tr, global_ops.get());
        (*global_ops.get()).private = tr;
        ftrace_init_trace_array(tr);
        init_array_fgraph_ops(tr, global_ops.get());
    }
}

/// Initialises the core's lists in a new trace array.
///
/// # Safety
///
/// `tr` is a valid trace array.
#[no_mangle]
pub unsafe extern "C" fn ftrace_init_trace_array(tr: *mut c_void) {
    // SAFETY: per the function's contract.
    unsafe {
        ops::list_init(rftrace_tr_func_probes(tr));
        ops::list_init(rftrace_tr_mod_list(tr, false));
        ops::list_init(rftrace_tr_mod_list(tr, true));
    }
}

/// Boot: init memory is going away; so are its call sites.
#[no_mangle]
#[link_section = ".init.text"]
pub extern "C" fn ftrace_free_init_mem() {
    // SAFETY: boot snapshot hook of the tracing core.
    unsafe { bindings::ftrace_boot_snapshot() };
    // Linker symbols; only their addresses are used.
    let (start, end) = (
        ptr::addr_of!(bindings::__init_begin) as u64,
        ptr::addr_of!(bindings::__init_end) as u64,
    );
    ops::free_range(ptr::null_mut(), start, end);
}

/// A module's init memory `[start, end)` is being freed.
///
/// # Safety
///
/// `m` is the module.
#[no_mangle]
pub unsafe extern "C" fn ftrace_free_mem(
    m: *mut bindings::module,
    start: *mut c_void,
    end: *mut c_void,
) {
    ops::free_range(m, start as u64, end as u64);
}

/// The call-site address of the function at `ip`: `ip` itself when it is a
/// site, else the site within the function that starts at `ip`; 0 if none.
#[no_mangle]
pub extern "C" fn ftrace_location(ip: c_ulong) -> c_ulong {
    let ip = ip as u64;
    let loc = table::location_range(ip, ip);
    if loc != 0 {
        return loc as c_ulong;
    }
    let (mut size, mut off): (c_ulong, c_ulong) = (0, 0);
    // SAFETY: plain symbol lookup into locals.
    let found =
        unsafe { bindings::kallsyms_lookup_size_offset(ip as c_ulong, &mut size, &mut off) } != 0;
    if found && off == 0 && size > 0 {
        return table::location_range(ip, ip + size as u64 - 1) as c_ulong;
    }
    0
}

/// The address of the first call site in `[start, end]`, or 0.
#[no_mangle]
pub extern "C" fn ftrace_location_range(start: c_ulong, end: c_ulong) -> c_ulong {
    table::location_range(start as u64, end as u64) as c_ulong
}

/// Whether `[start, end]` holds a call site (kprobes must not touch it).
#[no_mangle]
pub extern "C" fn ftrace_text_reserved(start: *const c_void, end: *const c_void) -> c_int {
    c_int::from(table::location_range(start as u64, end as u64) != 0)
}

/// The entry for `ip` in `hash`, or null.
///
/// # Safety
///
/// `hash` is null or a valid set (read under RCU or preemption off).
#[no_mangle]
pub unsafe extern "C" fn ftrace_lookup_ip(
    h: *mut hash::FtraceHash,
    ip: c_ulong,
) -> *mut bindings::ftrace_func_entry {
    // SAFETY: per the function's contract.
    unsafe { hash::lookup(h, ip as u64) }
}

/// Whether `addr` is in a trampoline the core made.
#[no_mangle]
pub extern "C" fn is_ftrace_trampoline(addr: c_ulong) -> bool {
    !ftrace_ops_trampoline(addr).is_null()
}

/// Names for addresses in our trampolines: none are exported to kallsyms.
#[no_mangle]
pub extern "C" fn ftrace_mod_address_lookup(
    _addr: c_ulong,
    _size: *mut c_ulong,
    _off: *mut c_ulong,
    _modname: *mut *mut c_char,
    _modbuildid: *mut *const u8,
    _sym: *mut c_char,
) -> c_int {
    0
}

/// The ops whose own trampoline holds `addr`, or null: the ORC unwinder
/// finds the unwind data of the code the trampoline was copied from
/// through it. Callers keep preemption off while they use the ops.
#[no_mangle]
pub extern "C" fn ftrace_ops_trampoline(addr: c_ulong) -> *mut bindings::ftrace_ops {
    // SAFETY: preemption off keeps the listed ops alive while we look.
    unsafe { bindings::ftrace_preempt_disable_notrace() };
    let op = ops::trampoline_ops(addr as u64);
    // SAFETY: paired with the disable above.
    unsafe { bindings::ftrace_preempt_enable_notrace() };
    op
}

/// The symbol `symnum` (from 0) of the core's trampolines for kallsyms:
/// each ops' own trampoline is `ftrace_trampoline` of the pseudo-module
/// `__builtin__ftrace`, a local text symbol, as the C core names them.
///
/// # Safety
///
/// The pointers are valid for writes: `name` of `KSYM_NAME_LEN` bytes,
/// `module_name` of `MODULE_NAME_LEN` (kallsyms' buffers).
#[no_mangle]
pub unsafe extern "C" fn ftrace_mod_get_kallsym(
    symnum: u32,
    value: *mut c_ulong,
    ty: *mut c_char,
    name: *mut c_char,
    module_name: *mut c_char,
    exported: *mut c_int,
) -> c_int {
    // SAFETY: preemption off keeps the listed ops alive while we look.
    unsafe { bindings::ftrace_preempt_disable_notrace() };
    let found = ops::nth_trampoline(symnum as usize);
    // SAFETY: paired with the disable above.
    unsafe { bindings::ftrace_preempt_enable_notrace() };
    let Some((start, _)) = found else {
        return err(bindings::ERANGE);
    };
    // SAFETY: writable buffers of kallsyms' sizes (the contract); the
    // names are shorter than either and NUL-terminated.
    unsafe {
        *value = start as c_ulong;
        *ty = b't' as c_char;
        *exported = 0;
        copy_cstr(name, TRAMPOLINE_SYM, bindings::KSYM_NAME_LEN as usize);
        copy_cstr(module_name, TRAMPOLINE_MOD, MODULE_NAME_LEN);
    }
    0
}

/// kallsyms' name of an ops trampoline and of its pseudo-module.
pub(crate) const TRAMPOLINE_SYM: &CStr = c_str!("ftrace_trampoline");
const TRAMPOLINE_MOD: &CStr = c_str!("__builtin__ftrace");
/// `MODULE_NAME_LEN` of include/linux/module.h (a macro bindgen skips).
const MODULE_NAME_LEN: usize = 64 - core::mem::size_of::<c_ulong>();

/// Copies `s` with its NUL into `dst`, at most `cap` bytes (truncated,
/// still terminated).
///
/// # Safety
///
/// `dst` is valid for `cap` (> 0) bytes of writes.
unsafe fn copy_cstr(dst: *mut c_char, s: &CStr, cap: usize) {
    let b = s.as_bytes();
    let n = b.len().min(cap - 1);
    // SAFETY: `n + 1 <= cap` bytes of `dst` (the contract).
    unsafe {
        ptr::copy_nonoverlapping(b.as_ptr().cast::<c_char>(), dst, n);
        *dst.add(n) = 0;
    }
}
