// SPDX-License-Identifier: GPL-2.0

//! The registered ftrace_ops: their flags, first-use setup, filter sets,
//! and the list every CPU walks. Below everything that registers,
//! dispatches or plans.

use crate::clist::list_init;
use crate::hash::{self, FtraceHash};
use crate::sys::{ftrace_list_end, ftrace_ops_list, Guard, Keeps};
use crate::view;
use core::marker::PhantomData;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};
use kernel::bindings;
use kernel::ffi::c_ulong;

pub(crate) type Ops = bindings::ftrace_ops;

const fn fl(f: u32) -> c_ulong {
    f as c_ulong
}
pub(crate) const F_ENABLED: c_ulong = fl(bindings::FTRACE_OPS_FL_ENABLED);
pub(crate) const F_DYNAMIC: c_ulong = fl(bindings::FTRACE_OPS_FL_DYNAMIC);
pub(crate) const F_SAVE_REGS: c_ulong = fl(bindings::FTRACE_OPS_FL_SAVE_REGS);
pub(crate) const F_SAVE_REGS_IF: c_ulong = fl(bindings::FTRACE_OPS_FL_SAVE_REGS_IF_SUPPORTED);
pub(crate) const F_RECURSION: c_ulong = fl(bindings::FTRACE_OPS_FL_RECURSION);
pub(crate) const F_STUB: c_ulong = fl(bindings::FTRACE_OPS_FL_STUB);
pub(crate) const F_INITIALIZED: c_ulong = fl(bindings::FTRACE_OPS_FL_INITIALIZED);
pub(crate) const F_DELETED: c_ulong = fl(bindings::FTRACE_OPS_FL_DELETED);
pub(crate) const F_ADDING: c_ulong = fl(bindings::FTRACE_OPS_FL_ADDING);
pub(crate) const F_REMOVING: c_ulong = fl(bindings::FTRACE_OPS_FL_REMOVING);
pub(crate) const F_IPMODIFY: c_ulong = fl(bindings::FTRACE_OPS_FL_IPMODIFY);
pub(crate) const F_RCU: c_ulong = fl(bindings::FTRACE_OPS_FL_RCU);
pub(crate) const F_SUBOP: c_ulong = fl(bindings::FTRACE_OPS_FL_SUBOP);
pub(crate) const F_DIRECT: c_ulong = fl(bindings::FTRACE_OPS_FL_DIRECT);
pub(crate) const F_ALLOC_TRAMP: c_ulong = fl(bindings::FTRACE_OPS_FL_ALLOC_TRAMP);
pub(crate) const F_PERMANENT: c_ulong = fl(bindings::FTRACE_OPS_FL_PERMANENT);

/// Gives an ops its lock, sub-op list and hash pointer the first time the
/// core sees it.
///
/// # Safety
///
/// `ops` is valid; callers serialize (they hold `ftrace_lock`, or it is
/// early boot).
pub(crate) unsafe fn ops_init(ops: *mut Ops) {
    // SAFETY: per the function's contract.
    unsafe {
        if view::has(ops, F_INITIALIZED) {
            return;
        }
        crate::sys::mutex_init!(
            ptr::addr_of_mut!((*ops).local_hash.regex_lock),
            "ftrace_ops regex_lock"
        );
        list_init(ptr::addr_of_mut!((*ops).subop_list));
        (*ops).func_hash = ptr::addr_of_mut!((*ops).local_hash);
        view::set(ops, F_INITIALIZED);
    }
}

/// [`ops_init`] taking `ftrace_lock` itself.
///
/// # Safety
///
/// `ops` is valid; `ftrace_lock` is not held.
pub(crate) unsafe fn ops_init_locked(ops: *mut Ops) {
    let _g = Guard::lock();
    // SAFETY: per the function's contract; serialized by the lock.
    unsafe { ops_init(ops) };
}

/// A published pointer slot, read locklessly.
///
/// # Safety
///
/// `p` is a valid, aligned pointer slot.
pub(crate) unsafe fn slot<'a, T>(p: *mut *mut T) -> &'a AtomicPtr<T> {
    // SAFETY: per the function's contract; `AtomicPtr` has the layout of
    // a pointer.
    unsafe { AtomicPtr::from_ptr(p) }
}

/// The filter and notrace sets of `ops` (null: empty).
///
/// # Safety
///
/// `ops` is valid; the sets are used under RCU or `ftrace_lock`.
#[inline]
pub(crate) unsafe fn sets(ops: *const Ops) -> (*mut FtraceHash, *mut FtraceHash) {
    // SAFETY: per the function's contract.
    unsafe {
        let fh = (*ops).func_hash;
        if fh.is_null() {
            return (ptr::null_mut(), ptr::null_mut());
        }
        let f = slot(ptr::addr_of_mut!((*fh).filter_hash)).load(Ordering::Acquire);
        let n = slot(ptr::addr_of_mut!((*fh).notrace_hash)).load(Ordering::Acquire);
        (f.cast(), n.cast())
    }
}

/// Publishes `new` as the filter (or notrace) set of `ops` and returns the
/// old one, which the caller frees with [`hash::free_rcu`].
///
/// # Safety
///
/// `ftrace_lock` is held; `ops` is initialised.
pub(crate) unsafe fn set_hash(
    ops: *mut Ops,
    notrace: bool,
    new: *mut FtraceHash,
) -> *mut FtraceHash {
    // SAFETY: per the function's contract.
    unsafe {
        let fh = (*ops).func_hash;
        let p = if notrace {
            ptr::addr_of_mut!((*fh).notrace_hash)
        } else {
            ptr::addr_of_mut!((*fh).filter_hash)
        };
        slot(p).swap(new.cast(), Ordering::AcqRel).cast()
    }
}

/// Whether `ip` passes the sets of `ops`.
///
/// # Safety
///
/// As for [`sets`].
#[inline]
pub(crate) unsafe fn ops_wants(ops: *const Ops, ip: u64) -> bool {
    // SAFETY: per the function's contract.
    unsafe {
        let (f, n) = sets(ops);
        (hash::is_empty(f) || hash::contains(f, ip)) && !hash::contains(n, ip)
    }
}

/// A registered ops, alive for `'a`: the lock or preempt-off section it
/// was listed in ([`list`]).
///
/// # Invariants
///
/// `0` points to an ops that is live, and whose published sets stay
/// valid, for `'a`; every access to its shared fields is atomic
/// (`opsview`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct OpsRef<'a>(ptr::NonNull<Ops>, PhantomData<&'a Ops>);

impl<'a> OpsRef<'a> {
    /// The ops, for what takes it by pointer.
    #[inline(always)]
    pub(crate) fn as_ptr(self) -> *mut Ops {
        self.0.as_ptr()
    }

    /// Its flags (`FTRACE_OPS_FL_*`).
    #[inline(always)]
    pub(crate) fn flags(self) -> c_ulong {
        // SAFETY: live for `'a` (the type's invariants).
        unsafe { view::flags(self.as_ptr()) }
    }

    /// Whether any of `f` is set.
    #[inline(always)]
    pub(crate) fn has(self, f: c_ulong) -> bool {
        self.flags() & f != 0
    }

    /// Its callback.
    #[inline(always)]
    pub(crate) fn func(self) -> bindings::ftrace_func_t {
        // SAFETY: as above.
        unsafe { view::func(self.as_ptr()) }
    }

    /// Its own trampoline, `(address, size)`; address 0 for none.
    pub(crate) fn trampoline(self) -> (u64, u64) {
        // SAFETY: as above.
        unsafe { view::trampoline(self.as_ptr()) }
    }

    /// Its filter and notrace sets (null: empty), valid for `'a`.
    #[inline(always)]
    pub(crate) fn sets(self) -> (*mut FtraceHash, *mut FtraceHash) {
        // SAFETY: as above; the sets stay for `'a`.
        unsafe { sets(self.as_ptr()) }
    }

    /// Whether `ip` passes its sets.
    #[inline(always)]
    pub(crate) fn wants(self, ip: u64) -> bool {
        // SAFETY: as above.
        unsafe { ops_wants(self.as_ptr(), ip) }
    }

    /// Whether it manages sub-ops.
    pub(crate) fn is_manager(self) -> bool {
        // SAFETY: live, and initialised before it was listed; the sub-op
        // list changes under `ftrace_lock` only.
        unsafe { !crate::clist::list_empty(ptr::addr_of!((*self.as_ptr()).subop_list)) }
    }

    /// The sets it reads (shared by several ops for a trace array).
    pub(crate) fn func_hash(self) -> *mut bindings::ftrace_ops_hash {
        // SAFETY: live; `func_hash` is set before the ops is listed and
        // not changed while it is.
        unsafe { (*self.as_ptr()).func_hash }
    }
}

/// The registered ops, newest first, alive while `_k` is: under
/// `ftrace_lock`, or with preemption off (an unregistered dynamic ops is
/// freed only after every CPU scheduled).
#[inline(always)]
pub(crate) fn list<'a>(_k: &'a impl Keeps) -> impl Iterator<Item = OpsRef<'a>> {
    let end = ftrace_list_end.get();
    let mut p = ftrace_ops_list.load(Ordering::Acquire);
    core::iter::from_fn(move || {
        if p == end {
            return None;
        }
        let cur = ptr::NonNull::new(p)?;
        // SAFETY: a listed ops is live while `_k` is (see above).
        p = unsafe { slot(ptr::addr_of_mut!((*cur.as_ptr()).next)) }.load(Ordering::Acquire);
        // INVARIANT: listed, so live for `'a`, and its sets with it.
        Some(OpsRef(cur, PhantomData))
    })
}
