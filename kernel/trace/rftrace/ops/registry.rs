// SPDX-License-Identifier: GPL-2.0

//! The registered ftrace_ops: their flags, first-use setup, filter sets,
//! and the list every CPU walks. Below everything that registers,
//! dispatches or plans.

use crate::base::archdep::defs;
use crate::base::opsview::OpsView;
use crate::base::sys::{CGlobal, CoreGuard, Held, TraceArray};
use core::marker::PhantomData;
use core::ptr;
use core::sync::atomic::Ordering;
use kernel::bindings;
use kernel::ffi::{c_ulong, c_void};
use kernel::prelude::*;
use kernel::types::Opaque;

mod links;
mod sets;

pub(crate) use links::{list, DirectGuard, OpsTable, DIRECT_LOCK};

pub(crate) type Ops = bindings::ftrace_ops;

const fn fl(f: u32) -> c_ulong {
    f as c_ulong
}
pub(crate) const F_ENABLED: c_ulong = fl(bindings::FTRACE_OPS_FL_ENABLED);
pub(crate) const F_DYNAMIC: c_ulong = fl(bindings::FTRACE_OPS_FL_DYNAMIC);
pub(crate) const F_SAVE_REGS: c_ulong = fl(bindings::FTRACE_OPS_FL_SAVE_REGS);
/// `FTRACE_OPS_FL_SAVE_ARGS`: the flags an ops sets to have the argument
/// registers in its frame: `SAVE_REGS` where the architecture has a
/// full-regs trampoline (`DYNAMIC_FTRACE_WITH_REGS`), none where every
/// trampoline saves them.
pub(crate) const F_SAVE_ARGS: c_ulong = if WITH_REGS { F_SAVE_REGS } else { 0 };
/// Whether the architecture has a full-regs trampoline
/// (`CONFIG_DYNAMIC_FTRACE_WITH_REGS`): without one, `SAVE_REGS` asks
/// nothing of the sites and the dispatchers, as in C.
pub(crate) const WITH_REGS: bool = cfg!(CONFIG_DYNAMIC_FTRACE_WITH_REGS);
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

/// Whether an ops of `flags` is called only with a full `pt_regs` in its
/// frame (`SAVE_REGS`, where the architecture has the trampoline that
/// saves one; C's `ftrace_ops_test()`).
#[inline(always)]
pub(crate) const fn needs_regs(flags: c_ulong) -> bool {
    WITH_REGS && flags & F_SAVE_REGS != 0
}

/// The frame a trampoline hands an ops' callback (`struct ftrace_regs
/// *`; null when it saved none).
///
/// The core's own callbacks take it as their `struct ftrace_regs *`
/// parameter, through [`ops_fn`].
///
/// # Invariants
///
/// `0` is null or, for `'a` (the callback's call), the frame of the
/// architecture's trampoline that called, which nothing but this call
/// chain uses meanwhile: what the architecture's accessors
/// ([`crate::base::archdep::defs`]) read and write.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct Fregs<'a>(
    *mut bindings::ftrace_regs,
    PhantomData<&'a mut bindings::ftrace_regs>,
);

impl Fregs<'_> {
    /// The frame, for the callbacks C gave.
    #[inline(always)]
    fn as_ptr(self) -> *mut bindings::ftrace_regs {
        self.0
    }

    /// Whether the frame is a whole `pt_regs` (the full-regs trampoline
    /// saved it).
    #[inline(always)]
    pub(crate) fn has_pt_regs(self) -> bool {
        // SAFETY: not null, so a frame of the architecture's trampolines,
        // live for the call (the invariants).
        !self.0.is_null() && unsafe { defs::has_pt_regs(self.0) }
    }

    /// Makes the trampoline return into `a` (a direct trampoline)
    /// instead of the traced function, where the architecture's frame can
    /// say so (on x86_64 only the full-regs trampoline's); nothing without
    /// a frame.
    pub(crate) fn set_direct_caller(self, a: c_ulong) {
        if !self.0.is_null() {
            // SAFETY: not null, so a frame of the architecture's
            // trampolines, which this call chain alone uses (the
            // invariants).
            unsafe { defs::set_direct_caller(self.0, a) };
        }
    }
}

/// A callback of one of the core's own ops, its arguments typed: the
/// ops it was called for and the trampoline's frame. [`ops_fn`] gives its
/// C function.
pub(crate) trait OpsCallback {
    /// The call for the function at `ip`, called from `parent_ip`.
    fn call(ip: c_ulong, parent_ip: c_ulong, op: OpsRef<'_>, fregs: Fregs<'_>);
}

/// The C callback of `T`, which the trampolines and the dispatchers call.
///
/// # Safety
///
/// Called as an ops' callback: with that ops, live for the call, and the
/// frame of the trampoline that called (or null).
pub(crate) unsafe extern "C" fn c_callback<T: OpsCallback>(
    ip: c_ulong,
    parent_ip: c_ulong,
    op: *mut Ops,
    fregs: *mut bindings::ftrace_regs,
) {
    // SAFETY: every caller of an ops' callback passes a live ops and the
    // frame (the contract): the shared trampolines `function_trace_op` (a
    // static ops from boot on) or their own ops, the list dispatcher and
    // the assist callback a listed ops, with the trampoline's frame.
    let op = unsafe { OpsRef::from_raw(op) };
    // INVARIANT: the calling trampoline's frame, or null, for this call.
    T::call(ip, parent_ip, op, Fregs(fregs, PhantomData))
}

/// The C function of the callback `T`.
pub(crate) const fn ops_fn<T: OpsCallback>() -> bindings::ftrace_func_t {
    Some(c_callback::<T>)
}

/// A Rust object with an ops inside, which the ops' callback (`Self`'s)
/// finds again from the ops (as `container_of()` does in C).
///
/// # Safety
///
/// `Self` is `repr(C)` with the `Opaque<Ops>` as its first field; an ops
/// whose callback is `ops_fn::<Self>()` is that field of a `Self` that
/// outlives the ops' registration.
pub(crate) unsafe trait HasOps: OpsCallback + Sized {}

/// An ops the core was handed, alive for `'a`: by its C caller (the ops
/// of a registration lives until it is unregistered), by the lock or
/// preempt-off section it was listed in ([`list`]), or as the core's own
/// (`global_ops`, a probe's ops).
///
/// The handle never forms a `&` or `&mut` to the ops: other CPUs read
/// its shared fields while the core changes them; every access to those
/// is atomic (`opsview`). The fields only the core writes, and only under
/// `ftrace_lock`, are written through the methods that ask for [`Held`].
///
/// At the C boundary the handle is the parameter itself: an exported
/// function declared in `include/linux/ftrace.h` with a `struct ftrace_ops
/// *` takes an `OpsRef` (the same ABI: a non-null pointer), and the C
/// caller, bound by that header's contract, gives it its invariants: the
/// ops is valid, and stays so from its registration (or first filter
/// call) until it is unregistered and its filters are freed.
///
/// # Invariants
///
/// `0` points to an `ftrace_ops` that is live for `'a`; every access to
/// its shared fields is atomic (`opsview`).
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct OpsRef<'a>(ptr::NonNull<Ops>, PhantomData<&'a Ops>);

impl<'a> OpsRef<'a> {
    /// The handle of `p`.
    ///
    /// # Safety
    ///
    /// `p` is non-null and points to an `ftrace_ops` that lives for `'a`,
    /// whose fields its owner does not write while the core may use them
    /// (the contract of the C API: from registration, or from the first
    /// filter call, until it is unregistered and its filters freed).
    #[inline(always)]
    pub(crate) unsafe fn from_raw(p: *mut Ops) -> Self {
        // SAFETY: non-null per the function's contract.
        // INVARIANT: live for `'a` (the contract).
        Self(unsafe { ptr::NonNull::new_unchecked(p) }, PhantomData)
    }

    /// The handle of one of the core's own static ops.
    pub(crate) fn of_static(p: &'static CGlobal<Ops>) -> OpsRef<'static> {
        // INVARIANT: a static is live for ever; the core reaches it only
        // through handles like this one.
        OpsRef(ptr::NonNull::from(p).cast(), PhantomData)
    }

    /// The handle of an ops the core owns, for as long as it is borrowed.
    pub(crate) fn of_opaque(o: &'a Opaque<Ops>) -> OpsRef<'a> {
        // INVARIANT: live while borrowed; `Opaque` lets the other CPUs
        // and C write it meanwhile, through handles like this one.
        OpsRef(ptr::NonNull::from(o).cast(), PhantomData)
    }

    /// The object this ops is inside, when its callback is `T`'s.
    #[inline(always)]
    pub(crate) fn container<T: HasOps>(self) -> Option<&'a T> {
        let f = self.func()? as *const ();
        (f == c_callback::<T> as *const ()).then(|| {
            // SAFETY: an ops with `T`'s callback is the first field of a
            // `T` (`repr(C)`: at the same address) that outlives the ops'
            // registration, during which `'a` lasts (the trait's contract).
            unsafe { &*self.as_ptr().cast::<T>() }
        })
    }

    /// The ops, for what takes it by pointer.
    #[inline(always)]
    pub(crate) fn as_ptr(self) -> *mut Ops {
        self.0.as_ptr()
    }

    /// Its shared words.
    #[inline(always)]
    fn view(self) -> OpsView<'a> {
        // SAFETY: live for `'a` (the type's invariants).
        unsafe { OpsView::from_raw(self.as_ptr()) }
    }

    /// Its flags (`FTRACE_OPS_FL_*`).
    #[inline(always)]
    pub(crate) fn flags(self) -> c_ulong {
        self.view().flags()
    }

    /// Whether any of `f` is set.
    #[inline(always)]
    pub(crate) fn has(self, f: c_ulong) -> bool {
        self.flags() & f != 0
    }

    /// Sets the flags `f`.
    pub(crate) fn set(self, f: c_ulong) {
        self.view().set(f)
    }

    /// Clears the flags `f`.
    pub(crate) fn clear(self, f: c_ulong) {
        self.view().clear(f)
    }

    /// Its callback.
    #[inline(always)]
    pub(crate) fn func(self) -> bindings::ftrace_func_t {
        self.view().func()
    }

    /// Whether a dispatcher calls it for a hit now: not a stub, a full
    /// `pt_regs` in the frame (`has_regs`) if it needs one, RCU watching
    /// if it needs that. Hot path.
    #[inline(always)]
    pub(crate) fn callable(self, has_regs: bool) -> bool {
        let flags = self.flags();
        flags & F_STUB == 0
            && (!needs_regs(flags) || has_regs)
            && (flags & F_RCU == 0 || kernel::sync::rcu::is_watching())
    }

    /// Calls its callback (`saved`: the one a pid filter stands in front
    /// of) for a hit of `ip` from `parent_ip`, with the trampoline's frame:
    /// what a trampoline does.
    #[inline(always)]
    pub(crate) fn call(self, saved: bool, ip: c_ulong, parent_ip: c_ulong, fregs: Fregs<'_>) {
        let f = if saved {
            self.saved_func()
        } else {
            self.func()
        };
        if let Some(f) = f {
            use crate::base::mutant::{self, Mutant};
            if mutant::hits(Mutant::DropOne) {
                return;
            }
            // SAFETY: its own callback, with its ops, live (the invariants),
            // and the frame of the trampoline that called: the arguments
            // an ops' callback takes.
            unsafe { f(ip, parent_ip, self.as_ptr(), fregs.as_ptr()) };
            if mutant::is(Mutant::CallTwice) {
                // SAFETY: as above (a break of a mutants kernel).
                unsafe { f(ip, parent_ip, self.as_ptr(), fregs.as_ptr()) };
            }
        }
    }

    /// Points it at another callback.
    pub(crate) fn set_func(self, f: bindings::ftrace_func_t) {
        self.view().set_func(f)
    }

    /// The callback a pid-filtered ops calls for the tasks it traces.
    #[inline(always)]
    pub(crate) fn saved_func(self) -> bindings::ftrace_func_t {
        self.view().saved_func()
    }

    /// Sets `saved_func` (the core writes it under `ftrace_lock`).
    pub(crate) fn set_saved_func(self, _held: &Held, f: bindings::ftrace_func_t) {
        self.view().set_saved_func(f)
    }

    /// Its own trampoline, `(address, size)`; address 0 for none.
    pub(crate) fn trampoline(self) -> (u64, u64) {
        self.view().trampoline()
    }

    /// Gives it a trampoline (`at` 0: none).
    pub(crate) fn set_trampoline(self, _held: &Held, at: u64, size: u64) {
        self.view().set_trampoline(at, size)
    }

    /// The direct trampoline of a direct ops (0: none).
    #[inline(always)]
    pub(crate) fn direct_call(self) -> c_ulong {
        self.view().direct_call()
    }

    /// Sets the direct trampoline (read locklessly by the direct callback).
    pub(crate) fn set_direct_call(self, _held: &Held, a: c_ulong) {
        self.view().set_direct_call(a)
    }

    /// The owner's command callback (set before the ops is handed over).
    pub(crate) fn ops_func(self) -> bindings::ftrace_ops_func_t {
        self.view().ops_func()
    }

    /// Asks its owner to do `cmd` (`EBUSY` when it cannot be asked).
    pub(crate) fn ask(self, cmd: bindings::ftrace_ops_cmd) -> Result {
        let f = self.ops_func().ok_or(EBUSY)?;
        // SAFETY: the owner's callback, called with its ops as it expects.
        kernel::error::to_result(unsafe { f(self.as_ptr(), cmd) })
    }

    /// Its owner's data: the trace array of a tracer's ops.
    pub(crate) fn private(self) -> *mut c_void {
        self.view().private().load(Ordering::Acquire)
    }

    /// The trace array of a tracer's ops (none for other ops).
    pub(crate) fn trace_array(self) -> Option<TraceArray> {
        // SAFETY: an ops' `private` is null or, for the ops of a trace
        // array's tracer, that array, which the tracing core keeps while
        // the ops lives.
        unsafe { TraceArray::from_raw(self.private()) }
    }

    /// Sets the trace array of an ops the core made (probes).
    pub(crate) fn set_private(self, _held: &Held, p: *mut c_void) {
        self.view().private().store(p, Ordering::Release)
    }

    /// The sets it reads (shared by several ops for a trace array), for
    /// telling whether two ops share them.
    pub(crate) fn func_hash(self) -> *mut bindings::ftrace_ops_hash {
        self.view().func_hash().load(Ordering::Acquire)
    }

    /// Gives it its lock and set pointer the first time the core sees it.
    pub(crate) fn init(self, _held: &Held) {
        if self.has(F_INITIALIZED) {
            return;
        }
        let v = self.view();
        // SAFETY: the lock of a live ops not initialised, so not
        // registered: only the core, serialized by `ftrace_lock`, uses it.
        unsafe { crate::base::sys::mutex_init!(v.local_regex_lock(), "ftrace_ops regex_lock") };
        v.func_hash().store(v.local_hash(), Ordering::Release);
        self.set(F_INITIALIZED);
    }

    /// Sets up the ops inside a new graph ops (`fgraph_init_ops()`): a
    /// pid-aware ops that reads the sets of `src`, the function ops of
    /// its trace array (which outlives it), and that array. Done once: an
    /// initialised ops is left as it is.
    pub(crate) fn init_graph<'b: 'a>(self, held: &Held, src: Option<OpsRef<'b>>) {
        if self.has(F_INITIALIZED) {
            return;
        }
        self.set(bindings::FTRACE_OPS_FL_PID as c_ulong);
        let Some(src) = src else {
            return;
        };
        self.init(held);
        let v = self.view();
        v.func_hash()
            .store(src.view().local_hash(), Ordering::Release);
        v.private().store(src.private(), Ordering::Release);
    }

    /// [`OpsRef::init`] taking `ftrace_lock` itself.
    pub(crate) fn init_locked(self) {
        if !self.has(F_INITIALIZED) {
            let g = CoreGuard::lock();
            self.init(g.held());
        }
    }

    /// Makes it read the sets of `other` (an initialised ops that
    /// outlives it): `global_ops`' for the top-level tracers.
    pub(crate) fn share_sets(self, held: &Held, other: OpsRef<'static>) {
        self.init(held);
        // Written under `ftrace_lock` while the ops is not registered
        // (callers check).
        self.view()
            .func_hash()
            .store(other.func_hash(), Ordering::Release);
    }
}

impl TraceArray {
    /// Its function tracer's ops, alive as long as the array is.
    pub(crate) fn ops_ref(self) -> Option<OpsRef<'static>> {
        let p = self.ops();
        // SAFETY: the ops of a trace array lives in it and as long as it;
        // the `'static` is bounded by the users, which keep the array.
        (!p.is_null()).then(|| unsafe { OpsRef::from_raw(p) })
    }
}
