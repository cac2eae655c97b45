// SPDX-License-Identifier: GPL-2.0

//! The objects the tracing core's C clients register with the core and
//! the core calls back: filter-file commands (`struct
//! ftrace_func_command`) and function probe types (`struct
//! ftrace_probe_ops`). Each is a handle over the C object with its
//! callbacks typed as the registration's contract allows; the users are
//! `probe` and `funcprobe`.

use crate::base::ffi::CStrArg;
use crate::base::sys::TraceArray;
use crate::sites::hash::{FnSet, FtraceHash};
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::bindings;
use kernel::error::to_result;
use kernel::ffi::{c_char, c_int, c_ulong, c_void};
use kernel::prelude::*;
use kernel::seq_file::SeqFile;

/// `struct ftrace_func_command` (kernel/trace/trace.h).
#[repr(C)]
pub struct FtraceFuncCommand {
    list: bindings::list_head,
    /// Valid while the command is registered (the contract of
    /// `register_ftrace_command()`).
    name: CStrArg<'static>,
    func: Option<
        unsafe extern "C" fn(
            tr: *mut c_void,
            hash: *mut FtraceHash,
            func: *mut c_char,
            cmd: *mut c_char,
            params: *mut c_char,
            enable: c_int,
        ) -> c_int,
    >,
}

/// A filter-file command its C owner registered.
///
/// At the C boundary the handle is the parameter itself (the ABI of a
/// pointer): the owner, bound by the contract of
/// `register_ftrace_command()`, keeps the command valid and unchanged
/// (its name a NUL-terminated string) while it is registered, and its
/// callback takes the arguments of its prototype in kernel/trace/trace.h.
///
/// # Invariants
///
/// `0` points to a valid `ftrace_func_command`, unchanged while the core
/// keeps the handle (in [`COMMANDS`], or copied out under `ftrace_lock`
/// for a call its owner's unregistration waits for: the owners are
/// built-in tracers that never unregister while their files are used).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub struct Command(ptr::NonNull<FtraceFuncCommand>);

// SAFETY: a handle of a command's C table, registered once and not
// written while registered; its function C calls from any task holding
// `ftrace_lock`, as the core does.
unsafe impl Send for Command {}
// SAFETY: as for `Send`: the table is only read.
unsafe impl Sync for Command {}

impl Command {
    fn get(&self) -> &FtraceFuncCommand {
        // SAFETY: valid and unchanged while the core keeps the handle (the
        // invariants).
        unsafe { self.0.as_ref() }
    }

    pub(crate) fn name(&self) -> &[u8] {
        self.get().name.bytes()
    }

    /// Runs `func:cmd:param`, split in place in `b` at `cmd` and `param`.
    pub(crate) fn call(
        &self,
        tr: Option<TraceArray>,
        h: &mut FnSet,
        b: &mut [u8],
        cmd: usize,
        param: Option<usize>,
        enable: bool,
    ) -> Result {
        let f = self.get().func.ok_or(EINVAL)?;
        let base = b.as_mut_ptr().cast::<c_char>();
        let at = |k: usize| base.wrapping_add(k);
        // SAFETY: the owner's callback with the arguments of its
        // prototype: the strings are NUL-terminated pieces of `b` (the
        // caller put the NULs), which outlives the call.
        to_result(unsafe {
            f(
                tr.map_or(ptr::null_mut(), TraceArray::as_ptr),
                h.as_ptr(),
                base,
                at(cmd),
                param.map_or(ptr::null_mut(), at),
                c_int::from(enable),
            )
        })
    }
}

/// The data a probe type keeps for its functions: what the data given to
/// the registration and its `init` made of it. Only the probe type's own
/// callbacks look behind it; the core hands back what it was given (the
/// field is this module's: a value comes from C, as the registration's
/// parameter, or out of a [`ProbeDataCell`] that the `init` wrote).
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct ProbeData(*mut c_void);

/// Where a probe keeps its type's data: its `init` stores into it (under
/// `ftrace_lock`, held by every caller), the probe's callback reads it.
#[repr(transparent)]
pub struct ProbeDataCell(AtomicPtr<c_void>);

impl ProbeDataCell {
    /// No data yet.
    pub(crate) const fn new() -> Self {
        ProbeDataCell(AtomicPtr::new(ptr::null_mut()))
    }

    /// The data now.
    #[inline(always)]
    pub(crate) fn get(&self) -> ProbeData {
        ProbeData(self.0.load(Ordering::Relaxed))
    }

    /// Forgets the data.
    pub(crate) fn reset(&self) {
        self.0.store(ptr::null_mut(), Ordering::Relaxed);
    }
}

/// `struct ftrace_probe_ops` (kernel/trace/trace.h), its callbacks typed
/// as their owner's contract says they may be called: with the probe
/// type itself, a trace array it is registered on, the probe data, and a
/// live seq_file (`print`). The owner, bound by the contract of
/// `register_ftrace_function_probe()`, gives callbacks that do nothing
/// unsound with such arguments, so calling them is safe.
#[repr(C)]
pub struct FtraceProbeOps {
    func: Option<extern "C" fn(c_ulong, c_ulong, TraceArray, ProbeOps, ProbeData)>,
    init: Option<extern "C" fn(ProbeOps, TraceArray, c_ulong, ProbeData, &ProbeDataCell) -> c_int>,
    free: Option<extern "C" fn(ProbeOps, TraceArray, c_ulong, ProbeData)>,
    print: Option<extern "C" fn(&SeqFile, c_ulong, ProbeOps, ProbeData) -> c_int>,
}

/// A probe type (`struct ftrace_probe_ops`) its C owner registered.
///
/// At the C boundary the handle is the parameter itself (the ABI of a
/// pointer): the owner of a probe type, bound by the contract of
/// `register_ftrace_function_probe()`, keeps it valid and unchanged
/// until it is unregistered from every trace array, and its callbacks
/// take the arguments their prototypes in kernel/trace/trace.h say.
///
/// # Invariants
///
/// `0` points to a valid `ftrace_probe_ops` that is not written while a
/// probe of it is registered, which every handle the core keeps is.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub struct ProbeOps(ptr::NonNull<FtraceProbeOps>);

// SAFETY: a handle of a probe type's C table, which is not written while
// the core holds the handle (the invariants) and whose functions C calls
// from any task: reading it from another thread changes nothing.
unsafe impl Send for ProbeOps {}
// SAFETY: as for `Send`: the table is only read.
unsafe impl Sync for ProbeOps {}

impl ProbeOps {
    fn get(&self) -> &FtraceProbeOps {
        // SAFETY: valid and unchanged while a probe of it is registered,
        // which it is while the core holds the handle (the invariants).
        unsafe { self.0.as_ref() }
    }

    /// Runs the probe on a hit of `ip` (called by `parent_ip`).
    pub(crate) fn call(self, ip: c_ulong, parent_ip: c_ulong, tr: TraceArray, data: ProbeData) {
        if let Some(f) = self.get().func {
            f(ip, parent_ip, tr, self, data)
        }
    }

    /// Sets up function `ip` (its `init`), which may store into `data`,
    /// the probe's data word (the owner reads and writes it under
    /// `ftrace_lock`, held by every caller: `ProbeRef` needs it).
    pub(crate) fn init(
        self,
        tr: TraceArray,
        ip: u64,
        init: ProbeData,
        data: &ProbeDataCell,
    ) -> Result {
        match self.get().init {
            Some(f) => to_result(f(self, tr, ip as c_ulong, init, data)),
            None => Ok(()),
        }
    }

    /// Gives back the data of function `ip` (0: all of it): its `free`.
    pub(crate) fn free(self, tr: TraceArray, ip: u64, data: ProbeData) {
        if let Some(f) = self.get().free {
            f(self, tr, ip as c_ulong, data)
        }
    }

    /// Lists function `ip` as set_ftrace_filter shows it, into `page`;
    /// `None` if the probe type has no `print`.
    pub(crate) fn print(self, ip: u64, data: ProbeData, page: &mut [u8; 512]) -> Option<usize> {
        let f = self.get().print?;
        let m = kernel::seq_file::SeqBuf::over(page);
        f(m.seq(), ip as c_ulong, self, data);
        Some(m.count())
    }

    /// Its function, for the listing of a type without `print`.
    pub(crate) fn func_addr(self) -> u64 {
        self.get().func.map_or(0, |f| f as *const () as u64)
    }
}
