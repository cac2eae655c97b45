// SPDX-License-Identifier: GPL-2.0

//! The C the crate calls that the kernel's bindings do not give: the
//! helpers of `abi.c` (accessors of `struct trace_array`, private to
//! kernel/trace/trace.h, and what C has only as macros), the tracing
//! core's own functions and data (private to kernel/trace/trace.h), and
//! data bindgen gives untyped or not at all, declared once, here. What the
//! kernel's headers declare comes from bindgen (`kernel::bindings`) or the
//! kernel crate's abstractions (`kernel::kallsyms`, `kernel::sync::rcu`,
//! `kernel::seq_file`, `kernel::tracefs`). The declarations
//! that name types of higher modules stay beside those types:
//! `register_stat_tracer` (profile.rs), `rftrace_arch_apply` (update.rs),
//! `rftrace_idle_task` (task.rs), `rftrace_assert_held` (sys.rs) and the
//! pid list functions that take tasks and seq_files (pidstate.rs).
//!
//! A function is declared `safe` when no argument of its type can make
//! the call unsound: it takes no pointer, or only handles whose
//! invariants promise live objects ([`TraceArray`], [`PidList`], a task,
//! a seq_file, references), and what it does with them
//! needs nothing more (a user address is copied with checks). The others
//! stay `unsafe`, and their callers argue their pointers.

use core::ptr::NonNull;
use kernel::bindings;
use kernel::ffi::{c_char, c_int, c_uint, c_ulong, c_void};

/// A trace array (`struct trace_array`, private to kernel/trace/trace.h):
/// only the tracing core's accessors touch it.
///
/// An exported function that C calls with a `struct trace_array *` takes
/// an `Option<TraceArray>` (the ABI of a nullable pointer): the C caller,
/// bound by the prototype's contract, gives a live array or null.
///
/// # Invariants
///
/// `0` points to a trace array that lives while the handle, or a copy of
/// it, is used: the creator holds a reference, or the tracing core keeps
/// the array for as long (an ops' `private`, a probe's data, the data of
/// a file in its directory).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct TraceArray(NonNull<c_void>);

// SAFETY: a handle of a C trace array, whose functions any task may call
// with it (they take the array's own locks), and which lives for as long
// as the invariants say whichever task holds the handle: moving or sharing
// the handle moves or shares nothing else.
unsafe impl Send for TraceArray {}
// SAFETY: as for `Send`; the handle itself is an address, never written.
unsafe impl Sync for TraceArray {}

impl TraceArray {
    /// The handle of `tr`, `None` for null.
    ///
    /// # Safety
    ///
    /// `tr` is null or a trace array that lives while the handle (and its
    /// copies) are used; see the type's invariants.
    #[inline(always)]
    pub(crate) unsafe fn from_raw(tr: *mut c_void) -> Option<Self> {
        NonNull::new(tr).map(Self)
    }

    /// The array, for C.
    #[inline(always)]
    pub(crate) fn as_ptr(self) -> *mut c_void {
        self.0.as_ptr()
    }

    /// Its function tracer's ops (null: none).
    pub(crate) fn ops(self) -> *mut bindings::ftrace_ops {
        rftrace_tr_ops(self)
    }
}

/// A trace array as the data of the files of its directory, which it
/// outlives.
impl kernel::tracefs::Handle for TraceArray {
    fn as_ptr(self) -> NonNull<c_void> {
        self.0
    }

    unsafe fn from_ptr(p: NonNull<c_void>) -> Self {
        // INVARIANT: the address of a live array (the contract of
        // `from_ptr`), which its files' creator keeps while they exist.
        TraceArray(p)
    }
}

/// A pid list of the tracing core (`struct trace_pid_list`, private to
/// kernel/trace/): only the tracing core's functions touch it.
///
/// A trace array publishes its two lists in pointer slots; a list taken
/// out of its slot is freed only after a grace period, by the writer
/// that holds `ftrace_lock` (see `pid`). So a list read from its slot is
/// live while the reader holds a proof that delays that free
/// ([`crate::base::sys::Keeps`]: the lock, or preemption off).
///
/// # Invariants
///
/// `0` points to a pid list that is not freed while `'a` lasts.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct PidList<'a>(NonNull<c_void>, core::marker::PhantomData<&'a ()>);

impl PidList<'_> {
    /// The handle of `p`, `None` for null.
    ///
    /// # Safety
    ///
    /// `p` is null or a pid list that is not freed while `'a` lasts.
    #[inline(always)]
    pub(crate) unsafe fn from_raw(p: *mut c_void) -> Option<Self> {
        // INVARIANT: the contract.
        NonNull::new(p).map(|p| PidList(p, core::marker::PhantomData))
    }
}

/// A table of static C strings that a C function indexes (the messages
/// of the error_log, which keeps the table rather than copying it).
///
/// # Invariants
///
/// Each word points to a static NUL-terminated string.
pub(crate) struct CStrTable<const N: usize>([*const c_char; N]);

// SAFETY: the words point to static strings nobody writes.
unsafe impl<const N: usize> Sync for CStrTable<N> {}

impl<const N: usize> CStrTable<N> {
    /// The table of `s`, each NUL-terminated (checked when the constant
    /// is evaluated, at build time).
    pub(crate) const fn new(s: &'static [&'static [u8]; N]) -> Self {
        let mut a = [core::ptr::null::<c_char>(); N];
        let mut i = 0;
        while i < N {
            let b = s[i];
            assert!(!b.is_empty() && b[b.len() - 1] == 0);
            a[i] = b.as_ptr().cast();
            i += 1;
        }
        // INVARIANT: static strings, NUL-terminated (checked above).
        CStrTable(a)
    }
}

/// Adds an entry to the error_log of `tr` (none: the top level's): the
/// message `errs[ty]` and the command `cmd` from `loc`, a caret under its
/// byte `pos`. Sleeps.
pub(crate) fn log_err<const N: usize>(
    tr: Option<TraceArray>,
    loc: &'static kernel::str::CStr,
    cmd: &core::ffi::CStr,
    errs: &'static CStrTable<N>,
    ty: u8,
    pos: u16,
) {
    if usize::from(ty) >= N {
        return;
    }
    // SAFETY: `tr` is null or live (the handle's invariants); `loc` and
    // `cmd` are C strings the call copies; `errs` is a static table whose
    // index `ty` (checked) is a static C string (its invariants), which
    // the error_log keeps and only reads.
    unsafe {
        tracing_log_err(
            tr.map_or(core::ptr::null_mut(), TraceArray::as_ptr),
            loc.as_char_ptr(),
            cmd.as_ptr().cast(),
            errs.0.as_ptr().cast_mut(),
            ty,
            pos,
        )
    };
}

/// A module the module loader hands the core (`struct module *`).
///
/// A module hook C calls takes it as its parameter (the ABI of a non-null
/// pointer): the loader, bound by the hook's contract, passes a live
/// module whose name and call-site array it no longer writes.
///
/// # Invariants
///
/// `0` points to a module that lives for `'a`, whose `name` is a
/// NUL-terminated array and whose `ftrace_callsites` holds
/// `num_ftrace_callsites` addresses (or is null), neither written
/// meanwhile.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct ModuleRef<'a>(NonNull<bindings::module>, core::marker::PhantomData<&'a ()>);

impl<'a> ModuleRef<'a> {
    /// The module, for what compares or keeps its address.
    pub(crate) fn as_ptr(self) -> *mut bindings::module {
        self.0.as_ptr()
    }

    /// Its name.
    pub(crate) fn name(self) -> &'a [u8] {
        let p = self
            .as_ptr()
            .cast::<u8>()
            .wrapping_add(core::mem::offset_of!(bindings::module, name))
            .cast::<c_char>();
        // SAFETY: the NUL-terminated name of a module that lives, its name
        // unwritten, for `'a` (the invariants).
        unsafe { kernel::str::CStr::from_char_ptr(p) }.as_bytes()
    }

    /// The addresses of its call sites, as the loader found them in its
    /// `__mcount_loc` section.
    pub(crate) fn callsites(self) -> &'a [u64] {
        // SAFETY: the fields of a live module (the invariants), which the
        // loader filled in before it handed the module over and does not
        // change; the array holds `n` addresses (an unsigned long is a u64
        // on the 64-bit architectures the core builds for).
        unsafe {
            let m = self.as_ptr();
            let (p, n) = ((*m).ftrace_callsites, (*m).num_ftrace_callsites as usize);
            if p.is_null() || n == 0 {
                return &[];
            }
            core::slice::from_raw_parts(p.cast::<u64>(), n)
        }
    }
}

/// A symbol name for kallsyms, NUL-terminated by construction: its last
/// byte is never written, and the name ends at its first NUL.
#[repr(transparent)]
pub(crate) struct SymName([u8; bindings::KSYM_NAME_LEN as usize + 1]);

impl SymName {
    /// The name `parts` make one after the other; none if it is longer
    /// than a symbol's or holds a NUL (which would name a shorter one).
    pub(crate) fn of(parts: &[&[u8]]) -> Option<Self> {
        let mut b = [0u8; bindings::KSYM_NAME_LEN as usize + 1];
        let mut n = 0;
        for p in parts {
            if p.contains(&0) {
                return None;
            }
            // The last byte stays 0: `n + p.len()` stays below it.
            b.get_mut(n..n + p.len())
                .filter(|_| n + p.len() < bindings::KSYM_NAME_LEN as usize + 1)?
                .copy_from_slice(p);
            n += p.len();
        }
        Some(SymName(b))
    }

    /// The name, up to its NUL.
    pub(crate) fn as_cstr(&self) -> Option<&kernel::str::CStr> {
        let n = self.0.iter().position(|&c| c == 0)?;
        kernel::str::CStr::from_bytes_with_nul(&self.0[..=n]).ok()
    }
}

/// A mutex C defines and initialises at build time (`DEFINE_MUTEX()`):
/// declared `safe`, as only the kernel's mutex functions touch it
/// (`Opaque`: they change it under Rust's feet), through
/// `StaticMutex::lock` (sys.rs).
#[repr(transparent)]
pub(crate) struct StaticMutex(kernel::types::Opaque<bindings::mutex>);

impl StaticMutex {
    /// The mutex, for the kernel's mutex functions.
    pub(crate) fn as_ptr(&self) -> *mut bindings::mutex {
        self.0.get()
    }
}

/// A string C passes by `const char *`: NUL-terminated, or null.
///
/// An exported function (or callback) whose C prototype takes a string
/// takes a `CStrArg` (the same ABI: a pointer): the C caller, bound by
/// the prototype's contract, gives a NUL-terminated string that stays
/// unchanged for the call, or null where the prototype allows it. The
/// `#[repr(C)]` mirror of a C struct whose contract says the same of a
/// string field (a command's name) types the field so, for as long as
/// the struct is valid.
///
/// # Invariants
///
/// `0` is null or points to a NUL-terminated string that is not written
/// while the handle is used (`'a`).
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct CStrArg<'a>(*const c_char, core::marker::PhantomData<&'a [u8]>);

impl<'a> CStrArg<'a> {
    /// The string at `p`, for a callback whose type is fixed by C.
    ///
    /// # Safety
    ///
    /// `p` is null or a NUL-terminated string unchanged for `'a`.
    pub(crate) unsafe fn from_raw(p: *const c_char) -> Self {
        // INVARIANT: the contract.
        CStrArg(p, core::marker::PhantomData)
    }

    /// Its bytes without the NUL (empty for null).
    pub(crate) fn bytes(self) -> &'a [u8] {
        if self.0.is_null() {
            return &[];
        }
        // SAFETY: non-null, so NUL-terminated and unchanged for `'a` (the
        // type's invariants).
        unsafe { kernel::str::CStr::from_char_ptr(self.0) }.as_bytes()
    }
}

// Bindgen types of empty C structs are fine behind pointers.
#[allow(improper_ctypes)]
unsafe extern "C" {
    // --- abi.c: struct trace_array ---
    pub(crate) safe fn rftrace_tr_ops(tr: TraceArray) -> *mut bindings::ftrace_ops;
    pub(crate) safe fn rftrace_tr_pid_slot(tr: TraceArray, no: bool) -> *mut *mut c_void;
    pub(crate) safe fn rftrace_tr_ignore_pid(tr: TraceArray) -> c_int;
    pub(crate) safe fn rftrace_tr_set_ignore_pid(tr: TraceArray, pid: c_int);
    pub(crate) safe fn rftrace_tr_reset_ignore_pid(tr: TraceArray);
    pub(crate) fn rftrace_tr_set_ops(tr: *mut c_void, ops: *mut bindings::ftrace_ops);
    /// The trace array after `tr` (null: the first); `trace_types_lock`
    /// held.
    pub(crate) fn rftrace_tr_next(tr: *mut c_void) -> *mut c_void;

    // --- abi.c: what C has as macros ---
    pub(crate) safe fn rftrace_irq_save() -> c_ulong;
    pub(crate) fn rftrace_irq_restore(flags: c_ulong);
    pub(crate) safe fn rftrace_cpu() -> c_int;
    /// The first online CPU after `prev` (any value), or at least
    /// `nr_cpu_ids`.
    pub(crate) safe fn rftrace_next_online_cpu(prev: c_int) -> c_int;
    pub(crate) fn rftrace_walk_threads(
        f: unsafe extern "C" fn(t: *mut bindings::task_struct, arg: *mut c_void) -> bool,
        arg: *mut c_void,
    );
    /// Disables the graph entry for good (may sleep).
    pub(crate) safe fn rftrace_kill_graph();
    /// Whether the fault injection `fail_rftrace_patch` fails this batch
    /// of site changes (never without CONFIG_FAULT_INJECTION_DEBUG_FS).
    pub(crate) safe fn rftrace_should_fail_patch() -> bool;

    // --- the tracing core (kernel/trace/) ---
    /// Checks lockdown and takes a reference on `tr` (none: no array).
    pub(crate) safe fn tracing_check_open_get_tr(tr: Option<TraceArray>) -> c_int;
    pub(crate) fn trace_array_put(tr: *mut c_void);
    pub(crate) fn tracing_lseek(
        file: *mut bindings::file,
        off: bindings::loff_t,
        whence: c_int,
    ) -> bindings::loff_t;
    fn tracing_log_err(
        tr: *mut c_void,
        loc: *const c_char,
        cmd: *const c_char,
        errs: *mut *const c_char,
        ty: u8,
        pos: u16,
    );
    pub(crate) fn init_array_fgraph_ops(tr: *mut c_void, ops: *mut bindings::ftrace_ops);
    /// The tracing core's lock over its trace arrays.
    pub(crate) safe static trace_types_lock: StaticMutex;
    /// The kernel's lock over text patching (kernel/extable.c).
    pub(crate) safe static text_mutex: StaticMutex;
    /// `tracing_thresh`, a word the tracing core writes with plain stores
    /// (its file); read atomically here, which is what a word-sized C
    /// load of it is.
    pub(crate) safe static tracing_thresh: core::sync::atomic::AtomicUsize;

    // --- the rest of the kernel: data bindgen gives untyped (a C
    // `DEFINE_MUTEX()` as a `static mut`), or not at all (the tracepoints
    // `DECLARE_TRACE()` makes, the linker's section bounds) ---
    /// Set once while the boot CPU brings up the kernel, read-only after.
    pub(crate) safe static nr_cpu_ids: c_uint;
    pub(crate) static mut __tracepoint_sched_switch: bindings::tracepoint;
    pub(crate) static mut __tracepoint_sched_process_fork: bindings::tracepoint;
    pub(crate) static mut __tracepoint_sched_process_free: bindings::tracepoint;
    pub(crate) static mut __start_mcount_loc: [c_ulong; 0];
    pub(crate) static mut __stop_mcount_loc: [c_ulong; 0];
}
