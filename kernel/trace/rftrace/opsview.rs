// SPDX-License-Identifier: GPL-2.0

//! The fields of an `ftrace_ops` that other CPUs read while the core
//! changes them, as atomic words (shared by the generic and the arch
//! crate, as `nokprobe.rs` is).
//!
//! An ops is C-owned memory. Once it is on the ops list, or a site calls
//! its trampoline, any CPU may read its `flags`, `func`, `trampoline` and
//! `trampoline_size` at any time (the dispatchers, the unwinder asking
//! whether an address is a trampoline), while a registration, the pid
//! filter or the arch layer under `ftrace_lock` change them. Every access
//! to those four fields, by either crate and from the moment the ops is
//! handed to the core, goes through the functions here: one aligned
//! machine word each, loaded or stored atomically, so a reader sees the
//! old value or the new, never a torn one, and the core never forms a
//! `&` or `&mut` to a whole ops that another CPU may be reading or
//! writing. C callers that read the same fields with plain loads are
//! word-sized loads of the same words (the kernel's memory model).
//!
//! Every function has the same contract, stated once: `ops` points to a
//! live `ftrace_ops` for as long as the call runs (the callers' own
//! reasons: `ftrace_lock`, preemption off on a listed ops, the trampoline
//! passing its own ops).

use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use kernel::bindings;
use kernel::ffi::c_ulong;

type Ops = bindings::ftrace_ops;

/// # Safety
///
/// See the module's contract.
unsafe fn flags_word<'a>(ops: *mut Ops) -> &'a AtomicUsize {
    // SAFETY: `flags` is an `unsigned long` (`c_ulong`, a `usize`),
    // aligned inside a live ops (the module's contract); every concurrent
    // access to it goes through this atomic view (see the module).
    unsafe { AtomicUsize::from_ptr(core::ptr::addr_of_mut!((*ops).flags)) }
}

/// The ops' flags (`FTRACE_OPS_FL_*`).
///
/// # Safety
///
/// See the module's contract.
#[inline(always)]
pub(crate) unsafe fn flags(ops: *mut Ops) -> c_ulong {
    // SAFETY: per the module's contract.
    unsafe { flags_word(ops) }.load(Ordering::Acquire)
}

/// Whether any of `f` is set.
///
/// # Safety
///
/// See the module's contract.
#[inline(always)]
pub(crate) unsafe fn has(ops: *mut Ops, f: c_ulong) -> bool {
    // SAFETY: per the module's contract.
    let now = unsafe { flags(ops) };
    now & f != 0
}

/// Sets the flags `f`.
///
/// # Safety
///
/// See the module's contract.
pub(crate) unsafe fn set(ops: *mut Ops, f: c_ulong) {
    // SAFETY: per the module's contract.
    unsafe { flags_word(ops) }.fetch_or(f, Ordering::AcqRel);
}

/// Clears the flags `f`.
///
/// # Safety
///
/// See the module's contract.
pub(crate) unsafe fn clear(ops: *mut Ops, f: c_ulong) {
    // SAFETY: per the module's contract.
    unsafe { flags_word(ops) }.fetch_and(!f, Ordering::AcqRel);
}

/// # Safety
///
/// See the module's contract.
unsafe fn func_word<'a>(ops: *mut Ops) -> &'a AtomicPtr<()> {
    // SAFETY: `func` is an `Option` of a function pointer: one pointer
    // word with null for `None`, aligned, in a live ops; every concurrent
    // access goes through this view.
    unsafe { AtomicPtr::from_ptr(core::ptr::addr_of_mut!((*ops).func).cast()) }
}

/// The callback the core calls for the ops.
///
/// # Safety
///
/// See the module's contract.
#[inline(always)]
pub(crate) unsafe fn func(ops: *mut Ops) -> bindings::ftrace_func_t {
    // SAFETY: per the module's contract.
    let p = unsafe { func_word(ops) }.load(Ordering::Acquire);
    // SAFETY: the word holds an `ftrace_func_t` (null or a function of
    // that type), written by C or by `set_func`.
    unsafe { core::mem::transmute::<*mut (), bindings::ftrace_func_t>(p) }
}

/// Points the ops at another callback.
///
/// # Safety
///
/// See the module's contract.
pub(crate) unsafe fn set_func(ops: *mut Ops, f: bindings::ftrace_func_t) {
    let p = f.map_or(core::ptr::null_mut(), |f| f as *mut ());
    // SAFETY: per the module's contract.
    unsafe { func_word(ops) }.store(p, Ordering::Release);
}

/// # Safety
///
/// See the module's contract.
unsafe fn tramp_words<'a>(ops: *mut Ops) -> (&'a AtomicUsize, &'a AtomicUsize) {
    // SAFETY: `trampoline` and `trampoline_size` are `unsigned long`s,
    // aligned, in a live ops; every concurrent access goes through here.
    unsafe {
        (
            AtomicUsize::from_ptr(core::ptr::addr_of_mut!((*ops).trampoline)),
            AtomicUsize::from_ptr(core::ptr::addr_of_mut!((*ops).trampoline_size)),
        )
    }
}

/// The ops' own trampoline, `(address, size)`; address 0 when it has none.
///
/// # Safety
///
/// See the module's contract.
#[inline(always)]
pub(crate) unsafe fn trampoline(ops: *mut Ops) -> (u64, u64) {
    // SAFETY: per the module's contract.
    let (at, size) = unsafe { tramp_words(ops) };
    // The address first: `set_trampoline` publishes the size before it.
    let a = at.load(Ordering::Acquire);
    (a as u64, size.load(Ordering::Relaxed) as u64)
}

/// Gives the ops a trampoline (`at` 0 and `size` 0: none).
///
/// # Safety
///
/// See the module's contract.
pub(crate) unsafe fn set_trampoline(ops: *mut Ops, at: u64, size: u64) {
    // SAFETY: per the module's contract.
    let (a, s) = unsafe { tramp_words(ops) };
    if at == 0 {
        a.store(0, Ordering::Release);
        s.store(0, Ordering::Relaxed);
    } else {
        s.store(size as c_ulong, Ordering::Relaxed);
        a.store(at as c_ulong, Ordering::Release);
    }
}

// The callbacks are one pointer word each (`None` is null).
const _: () =
    assert!(core::mem::size_of::<bindings::ftrace_func_t>() == core::mem::size_of::<*mut ()>());

/// # Safety
///
/// `g` points to a live `fgraph_ops` for as long as the call runs.
#[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
unsafe fn entry_word<'a>(g: *mut bindings::fgraph_ops) -> &'a AtomicPtr<()> {
    // SAFETY: `entryfunc` is an `Option` of a function pointer: one
    // aligned pointer word (null: `None`) in a live graph ops; every
    // access while the graph ops is registered goes through this view.
    unsafe { AtomicPtr::from_ptr(core::ptr::addr_of_mut!((*g).entryfunc).cast()) }
}

/// The entry callback of a graph ops (the graph entry path reads it while
/// the pid filter changes it).
///
/// # Safety
///
/// `g` points to a live `fgraph_ops` for as long as the call runs.
#[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
#[inline(always)]
pub(crate) unsafe fn graph_entry(g: *mut bindings::fgraph_ops) -> bindings::trace_func_graph_ent_t {
    // SAFETY: per the function's contract.
    let p = unsafe { entry_word(g) }.load(Ordering::Acquire);
    // SAFETY: the word holds a `trace_func_graph_ent_t`, written by C or
    // by `set_graph_entry`.
    unsafe { core::mem::transmute::<*mut (), bindings::trace_func_graph_ent_t>(p) }
}

/// Points a graph ops at another entry callback.
///
/// # Safety
///
/// `g` points to a live `fgraph_ops` for as long as the call runs.
#[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
pub(crate) unsafe fn set_graph_entry(
    g: *mut bindings::fgraph_ops,
    f: bindings::trace_func_graph_ent_t,
) {
    let p = f.map_or(core::ptr::null_mut(), |f| f as *mut ());
    // SAFETY: per the function's contract.
    unsafe { entry_word(g) }.store(p, Ordering::Release);
}
