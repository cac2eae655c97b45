// SPDX-License-Identifier: GPL-2.0

//! The trace arrays (`struct trace_array`) as the core holds them: the
//! reference an open file takes, the two pid lists an array publishes,
//! and the list of all arrays. The handle itself, [`TraceArray`], and
//! the tracing core's accessors are in `ffi`.

use crate::base::ffi::{rftrace_tr_pid_slot, trace_array_put, PidList};
use crate::base::sys::{synchronize_rcu, Guard, Held, Keeps};
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

pub(crate) use crate::base::ffi::TraceArray;

/// A reference on a trace array for an open file, taken by
/// `tracing_check_open_get_tr()` (which refuses under lockdown too) and
/// put when dropped; none for a file of no trace array.
pub(crate) struct TrOpen(Option<TraceArray>);

impl TrOpen {
    /// Opens for the trace array `tr` (none: only lockdown is checked).
    pub(crate) fn get(tr: Option<TraceArray>) -> Result<TrOpen> {
        // The reference taken is put by `drop`.
        kernel::error::to_result(crate::base::ffi::tracing_check_open_get_tr(tr))?;
        Ok(TrOpen(tr))
    }

    /// The trace array, referenced while `self` lives.
    pub(crate) fn tr(&self) -> Option<TraceArray> {
        self.0
    }
}

impl Drop for TrOpen {
    fn drop(&mut self) {
        if let Some(tr) = self.0 {
            // SAFETY: taken by `get`.
            unsafe { trace_array_put(tr.as_ptr()) };
        }
    }
}

// --- the pid lists -----------------------------------------------------------

unsafe extern "C" {
    /// Parses `cnt` bytes at the user address `ubuf` (copied with checks)
    /// into a new list made of `filtered` and the pids written; the new
    /// list (null: empty), which the caller owns, goes to `new`.
    safe fn trace_pid_write(
        filtered: Option<PidList<'_>>,
        new: &mut *mut c_void,
        ubuf: *const kernel::ffi::c_char,
        cnt: usize,
    ) -> c_int;
    fn trace_pid_list_free(pids: *mut c_void);
}

/// A pid list [`write_pid_list`] made, owned until it is published.
///
/// # Invariants
///
/// `0` is a pid list nobody else references.
pub(crate) struct NewPidList(core::ptr::NonNull<c_void>);

impl Drop for NewPidList {
    fn drop(&mut self) {
        // SAFETY: owned (the invariants) and dropped unpublished.
        unsafe { trace_pid_list_free(self.0.as_ptr()) };
    }
}

/// Parses `cnt` bytes at the user address `ubuf` into a new list of
/// `filtered` and the pids written: the bytes consumed (or the negative
/// errno) and the list (none: empty).
pub(crate) fn write_pid_list(
    filtered: Option<PidList<'_>>,
    ubuf: *const kernel::ffi::c_char,
    cnt: usize,
) -> (c_int, Option<NewPidList>) {
    let mut new = ptr::null_mut();
    let r = trace_pid_write(filtered, &mut new, ubuf, cnt);
    // INVARIANT: the list the call made for its caller.
    (r, core::ptr::NonNull::new(new).map(NewPidList))
}

/// The pid list slot of `tr` (`no`: the notrace one): written under
/// `ftrace_lock` by [`replace_pid_list`] only, read under a [`Keeps`].
fn pid_slot(tr: TraceArray, no: bool) -> &'static AtomicPtr<c_void> {
    // SAFETY: the accessor returns the address of an aligned pointer field
    // of the live trace array (the handle's invariants), which the core
    // accesses atomically only and which outlives every user here.
    unsafe { AtomicPtr::from_ptr(rftrace_tr_pid_slot(tr, no)) }
}

/// The pid list and notrace pid list of `tr` (none: no list), live while
/// `_k` is.
pub(crate) fn pid_lists<'k>(
    tr: TraceArray,
    _k: &'k impl Keeps,
) -> (Option<PidList<'k>>, Option<PidList<'k>>) {
    // SAFETY: null or published lists; a list leaves its slot under
    // `ftrace_lock` and is freed after a grace period (`replace_pid_list`),
    // which `_k` (the lock, or preemption off) delays for `'k`.
    unsafe {
        (
            PidList::from_raw(pid_slot(tr, false).load(Ordering::Acquire)),
            PidList::from_raw(pid_slot(tr, true).load(Ordering::Acquire)),
        )
    }
}

/// Whether `tr` has a pid list or a notrace pid list.
pub(crate) fn has_pid_lists(tr: TraceArray) -> bool {
    !pid_slot(tr, false).load(Ordering::Relaxed).is_null()
        || !pid_slot(tr, true).load(Ordering::Relaxed).is_null()
}

/// Publishes `new` (none: no list) in `tr`'s slot `no` and frees the list
/// it replaces after a grace period (sleeps).
pub(crate) fn replace_pid_list(_held: &Held, tr: TraceArray, no: bool, new: Option<NewPidList>) {
    let new = new.map_or(ptr::null_mut(), |l| {
        core::mem::ManuallyDrop::new(l).0.as_ptr()
    });
    let old = pid_slot(tr, no).swap(new, Ordering::AcqRel);
    if old.is_null() {
        return;
    }
    // Then no reader (preempt-off, or under the lock held) is left.
    synchronize_rcu();
    // SAFETY: a list published here, unpublished above, and every reader
    // that could see it has left its read side: nothing references it.
    unsafe { trace_pid_list_free(old) };
}

/// The tracing core's lock over its list of trace arrays, held.
pub(crate) struct TraceTypes(#[allow(dead_code)] Guard);

impl TraceTypes {
    pub(crate) fn lock() -> Self {
        // The callers (module notifiers) may sleep and hold no core lock.
        TraceTypes(crate::base::ffi::trace_types_lock.lock())
    }

    /// The trace arrays, alive while the lock is.
    pub(crate) fn arrays(&self) -> impl Iterator<Item = TraceArray> + '_ {
        let mut tr = ptr::null_mut();
        core::iter::from_fn(move || {
            // SAFETY: walked under `trace_types_lock` (held while `self`
            // is), which keeps every array on the list and alive.
            unsafe {
                tr = crate::base::ffi::rftrace_tr_next(tr);
                TraceArray::from_raw(tr)
            }
        })
    }
}
