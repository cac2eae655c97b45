// SPDX-License-Identifier: GPL-2.0

//! A graph ops (`struct fgraph_ops`) as the function graph core uses it:
//! its callbacks, its index, and the ops inside it.

use crate::base::opsview::FnWord;
use crate::base::sys::{Held, NoPreempt, TraceArray};
use crate::ops::registry::OpsRef;
use core::marker::PhantomData;
use core::mem::offset_of;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicI32, AtomicPtr, Ordering};
use kernel::bindings;
use kernel::ffi::c_int;
use kernel::types::Opaque;

pub(crate) type Gops = bindings::fgraph_ops;

/// A graph ops that lives for `'a`: from its registration to the end of
/// its unregistration, which waits for the entries and returns in flight.
///
/// The exported functions C calls with a `struct fgraph_ops *` take a
/// `GopsRef` (the ABI of a non-null pointer); the C caller, bound by
/// `include/linux/ftrace.h`'s contract, passes a live graph ops that stays
/// valid from its registration until it is unregistered.
///
/// # Invariants
///
/// `0` points to a live `fgraph_ops` for `'a`; its `entryfunc` and
/// `saved_func` words, which the entry path reads while the pid filter
/// changes them, are accessed atomically; `idx` is written only under
/// `ftrace_lock` before the graph ops is published; `retfunc` does not
/// change while the core holds it.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct GopsRef<'a>(NonNull<Gops>, PhantomData<&'a Gops>);

impl<'a> GopsRef<'a> {
    /// # Safety
    ///
    /// `g` is non-null and points to a graph ops that lives for `'a`, whose
    /// owner does not write it meanwhile (the C API's contract).
    #[inline(always)]
    pub(crate) unsafe fn from_raw(g: *mut Gops) -> Self {
        // SAFETY: non-null per the function's contract.
        // INVARIANT: alive for `'a` (the contract).
        GopsRef(unsafe { NonNull::new_unchecked(g) }, PhantomData)
    }

    /// The handle of one of the core's own static graph ops.
    pub(crate) fn of_static(g: &'static crate::base::sys::CGlobal<Gops>) -> GopsRef<'static> {
        // INVARIANT: a static lives for ever; the core reaches it only
        // through handles like this one.
        GopsRef(NonNull::from(g).cast(), PhantomData)
    }

    #[inline(always)]
    pub(crate) fn as_ptr(self) -> *mut Gops {
        self.0.as_ptr()
    }

    /// The graph ops whose ops is `op` (a sub-ops of the graph manager).
    pub(crate) fn of_ops(op: OpsRef<'a>) -> Self {
        let g = op
            .as_ptr()
            .cast::<u8>()
            .wrapping_sub(offset_of!(Gops, ops))
            .cast::<Gops>();
        // SAFETY: the graph manager's sub-ops are the `ops` of graph ops,
        // which live as long as their ops.
        unsafe { Self::from_raw(g) }
    }

    /// The field at byte offset `off`, seen as a `T`.
    #[inline(always)]
    fn field<T>(self, off: usize) -> &'a T {
        let p = self.as_ptr().cast::<u8>().wrapping_add(off).cast::<T>();
        // SAFETY: the callers below pass the offset of a field of a live
        // graph ops (the invariants) with the size and alignment of `T`:
        // an atomic of the field's type for the words others change
        // meanwhile (`idx`; the callbacks as `FnWord`s), the field's
        // own type for `retfunc`, which does not change (the invariants),
        // and for the embedded ops an `Opaque` of it, which others may
        // change through handles.
        unsafe { &*p }
    }

    #[inline(always)]
    fn word(self, off: usize) -> &'a FnWord<bindings::trace_func_graph_ent_t> {
        self.field(off)
    }

    /// The ops inside it.
    #[inline(always)]
    pub(crate) fn ops(self) -> OpsRef<'a> {
        OpsRef::of_opaque(self.field::<Opaque<bindings::ftrace_ops>>(offset_of!(Gops, ops)))
    }

    /// Its trace array (none for graph ops without one).
    #[inline(always)]
    pub(crate) fn trace_array(self) -> Option<TraceArray> {
        self.ops().trace_array()
    }

    /// Its index in the graph core (-1 or what registration gave).
    pub(crate) fn idx(self) -> c_int {
        self.field::<AtomicI32>(offset_of!(Gops, idx))
            .load(Ordering::Acquire)
    }

    /// Sets its index (under `ftrace_lock`, before it is published).
    pub(crate) fn set_idx(self, _held: &Held, i: c_int) {
        self.field::<AtomicI32>(offset_of!(Gops, idx))
            .store(i, Ordering::Release)
    }

    /// The entry callback the core calls.
    #[inline(always)]
    pub(crate) fn entry(self) -> bindings::trace_func_graph_ent_t {
        self.word(offset_of!(Gops, entryfunc)).load()
    }

    pub(crate) fn set_entry(self, f: bindings::trace_func_graph_ent_t) {
        self.word(offset_of!(Gops, entryfunc)).store(f);
    }

    /// The owner's entry callback while the pid filter stands in front.
    #[inline(always)]
    pub(crate) fn saved(self) -> bindings::trace_func_graph_ent_t {
        self.word(offset_of!(Gops, saved_func)).load()
    }

    pub(crate) fn set_saved(self, f: bindings::trace_func_graph_ent_t) {
        self.word(offset_of!(Gops, saved_func)).store(f);
    }

    /// Runs its entry callback (`saved`: the one the pid filter stands in
    /// front of): whether it wants the return.
    #[inline(always)]
    pub(crate) fn call_entry(self, saved: bool, trace: &mut bindings::ftrace_graph_ent) -> bool {
        let f = if saved { self.saved() } else { self.entry() };
        // SAFETY: a callback of this graph ops, called as its type says
        // with the entry record and the graph ops, live (the invariants).
        matches!(f, Some(f) if unsafe { f(trace, self.as_ptr()) } != 0)
    }

    /// Its return callback, read once (none: it has none).
    #[inline(always)]
    pub(crate) fn ret_callback(self) -> Option<RetCallback<'a>> {
        let f = (*self.field::<bindings::trace_func_graph_ret_t>(offset_of!(Gops, retfunc)))?;
        Some(RetCallback { f, g: self })
    }
}

/// An entry callback of the core's own graph ops, its arguments typed;
/// [`entry_fn`] gives its C function.
pub(crate) trait GraphEntry {
    /// The entry of the function `trace` records: whether the graph ops
    /// wants its return.
    fn entry(trace: &mut bindings::ftrace_graph_ent, g: GopsRef<'_>) -> c_int;
}

/// A return callback of the core's own graph ops, its arguments typed;
/// [`return_fn`] gives its C function.
pub(crate) trait GraphReturn {
    /// The return of the function `trace` records.
    fn ret(trace: &mut bindings::ftrace_graph_ret, g: GopsRef<'_>);
}

/// The C function of the entry callback `T`.
///
/// # Safety
///
/// Called as a graph ops' entry callback, by this crate's graph core
/// (`call_entry`): with a live record, borrowed for the call, and the live
/// graph ops it is the callback of.
unsafe extern "C" fn c_entry<T: GraphEntry>(
    trace: *mut bindings::ftrace_graph_ent,
    g: *mut Gops,
) -> c_int {
    // SAFETY: the function's contract.
    let (trace, g) = unsafe { (&mut *trace, GopsRef::from_raw(g)) };
    T::entry(trace, g)
}

/// The C function of the return callback `T`.
///
/// # Safety
///
/// As for [`c_entry`], from `RetCallback::call`, with the return record.
unsafe extern "C" fn c_return<T: GraphReturn>(
    trace: *mut bindings::ftrace_graph_ret,
    g: *mut Gops,
) {
    // SAFETY: the function's contract.
    let (trace, g) = unsafe { (&mut *trace, GopsRef::from_raw(g)) };
    T::ret(trace, g)
}

/// The C function of the entry callback `T`.
pub(crate) const fn entry_fn<T: GraphEntry>() -> bindings::trace_func_graph_ent_t {
    Some(c_entry::<T>)
}

/// The C function of the return callback `T`.
pub(crate) const fn return_fn<T: GraphReturn>() -> bindings::trace_func_graph_ret_t {
    Some(c_return::<T>)
}

/// The return callback of a live graph ops, as read from it.
pub(crate) struct RetCallback<'a> {
    f: unsafe extern "C" fn(*mut bindings::ftrace_graph_ret, *mut Gops),
    g: GopsRef<'a>,
}

impl RetCallback<'_> {
    /// Runs it with the return record.
    #[inline(always)]
    pub(crate) fn call(&self, trace: &mut bindings::ftrace_graph_ret) {
        // SAFETY: the callback of a live graph ops, called as its type
        // says with the return record and that graph ops.
        unsafe { (self.f)(trace, self.g.as_ptr()) }
    }
}

/// What keeps a graph ops read from a [`GopsArray`] alive: its
/// unregistration takes it out, then waits, as C's does, for every CPU to
/// schedule (rude RCU-tasks) before its owner may free it.
///
/// # Safety
///
/// A value of the implementing type exists only where that wait cannot
/// finish while it lives: with preemption off, or in the return handler,
/// which the unregistration's wait covers as C's does.
pub(crate) unsafe trait KeepsGops {}

// SAFETY: preemption off: the rude RCU-tasks wait of the unregistration
// needs this CPU to schedule, which it does not while the token lives.
unsafe impl KeepsGops for NoPreempt {}

/// The registered graph ops by index, which the entry and return paths
/// read without a lock.
///
/// # Invariants
///
/// A non-null word points to a graph ops published by [`GopsArray::publish`]
/// and not yet through the wait that follows [`GopsArray::remove`].
pub(crate) struct GopsArray<const N: usize>([AtomicPtr<Gops>; N]);

impl<const N: usize> GopsArray<N> {
    /// No graph ops.
    pub(crate) const fn new() -> Self {
        GopsArray([const { AtomicPtr::new(core::ptr::null_mut()) }; N])
    }

    /// The registered graph ops of index `i`, alive while `_k` keeps it.
    #[inline(always)]
    pub(crate) fn get<'k>(&self, _k: &'k impl KeepsGops, i: usize) -> Option<GopsRef<'k>> {
        let g = NonNull::new(self.0.get(i)?.load(Ordering::Acquire))?;
        // INVARIANT: published and not yet waited for (the type's
        // invariants), which `_k` delays for `'k` (see `KeepsGops`).
        Some(GopsRef(g, PhantomData))
    }

    /// Whether index `i` holds no graph ops.
    pub(crate) fn is_free(&self, _held: &Held, i: usize) -> bool {
        self.0
            .get(i)
            .is_some_and(|w| w.load(Ordering::Relaxed).is_null())
    }

    /// Whether index `i` holds `g`.
    pub(crate) fn holds(&self, _held: &Held, i: usize, g: GopsRef<'_>) -> bool {
        self.0
            .get(i)
            .is_some_and(|w| w.load(Ordering::Relaxed) == g.as_ptr())
    }

    /// Publishes the registered graph ops `g` at index `i`.
    pub(crate) fn publish(&self, _held: &Held, i: usize, g: GopsRef<'_>) {
        if let Some(w) = self.0.get(i) {
            // INVARIANT: `g` lives until its unregistration (the C API's
            // contract of a `GopsRef`), which calls `remove` first.
            w.store(g.as_ptr(), Ordering::Release);
        }
    }

    /// Takes index `i` out; its graph ops may still be read until the
    /// caller's rude RCU-tasks wait.
    pub(crate) fn remove(&self, _held: &Held, i: usize) {
        if let Some(w) = self.0.get(i) {
            w.store(core::ptr::null_mut(), Ordering::Release);
        }
    }
}
