// SPDX-License-Identifier: GPL-2.0

//! The fields of an `ftrace_ops` that other CPUs read while the core
//! changes them, as atomic words (shared by the generic and the arch
//! crate, as `nokprobe.rs` is).
//!
//! An ops is C-owned memory. Once it is on the ops list, or a site calls
//! its trampoline, any CPU may read its `flags`, `func`, `saved_func`,
//! `direct_call`, `trampoline`, `trampoline_size` and `next` at any time
//! (the dispatchers, the unwinder asking whether an address is a
//! trampoline), while a registration, the pid filter or the arch layer
//! under `ftrace_lock` change them; `private`, `func_hash` and `managed`
//! are words the core reads and writes the same way. Every access to those fields, by either
//! crate and from the moment the ops is handed to the core, goes through
//! an [`OpsView`]: one aligned machine word each, loaded or stored
//! atomically, so a reader sees the old value or the new, never a torn
//! one, and the core never forms a `&` or `&mut` to a whole ops that
//! another CPU may be reading or writing. C callers that read the same
//! fields with plain loads are word-sized loads of the same words (the
//! kernel's memory model).

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::mem::offset_of;
use core::ptr::NonNull;
use core::sync::atomic::{fence, AtomicPtr, AtomicUsize, Ordering};
use kernel::bindings;
use kernel::ffi::{c_ulong, c_void};

type Ops = bindings::ftrace_ops;

// The words: `unsigned long`s (`c_ulong`, a `usize`) and callbacks, one
// pointer word each (`None` is null).
const _: () = {
    assert!(core::mem::size_of::<c_ulong>() == core::mem::size_of::<AtomicUsize>());
    assert!(core::mem::size_of::<bindings::ftrace_func_t>() == core::mem::size_of::<*mut ()>());
};

/// The shared words of an ops that lives for `'a`.
///
/// # Invariants
///
/// `0` points to a live `ftrace_ops` for `'a` (the callers' reasons:
/// `ftrace_lock`, preemption off on a listed ops, the trampoline passing
/// its own ops, the owner's contract with the C API); every concurrent
/// access to the words above goes through this type.
#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(transparent)]
pub(crate) struct OpsView<'a>(NonNull<Ops>, PhantomData<&'a Ops>);

/// The address of the writers' lock (`regex_lock`) of the sets at `h`.
pub(crate) fn regex_lock_of(h: *mut bindings::ftrace_ops_hash) -> *mut bindings::mutex {
    h.cast::<u8>()
        .wrapping_add(offset_of!(bindings::ftrace_ops_hash, regex_lock))
        .cast()
}

/// A callback field of a C struct that other CPUs read while the core
/// changes it (an ops' `func`, a graph ops' `entryfunc`), typed as the
/// field is (an `Option` of a C function pointer: one word, null for
/// `None`). It is loaded and stored whole, as C's `READ_ONCE()` and
/// `WRITE_ONCE()` do; a store is ordered after what the core wrote before
/// it, and a load before what the reader reads after it.
#[repr(transparent)]
pub(crate) struct FnWord<F: Copy>(UnsafeCell<F>);

// SAFETY: shared, the word is only loaded and stored whole (below), one
// aligned machine word each (checked in `load` and `store`), which no CPU
// sees torn; the values are function pointers, which any task may call.
unsafe impl<F: Copy + Send> Sync for FnWord<F> {}

impl<F: Copy> FnWord<F> {
    /// The callback now.
    #[inline(always)]
    pub(crate) fn load(&self) -> F {
        const { assert!(core::mem::size_of::<F>() == core::mem::size_of::<usize>()) };
        // SAFETY: a live, aligned word of the field's type (the `&self`
        // comes from a live struct), read whole by one volatile load
        // (`READ_ONCE()`), which races only with whole stores (`store`,
        // or C's) of values of the same type.
        let f = unsafe { core::ptr::read_volatile(self.0.get()) };
        fence(Ordering::Acquire);
        f
    }

    /// Sets the callback.
    #[inline(always)]
    pub(crate) fn store(&self, f: F) {
        const { assert!(core::mem::size_of::<F>() == core::mem::size_of::<usize>()) };
        fence(Ordering::Release);
        // SAFETY: as in `load`: one volatile store (`WRITE_ONCE()`) of a
        // whole word, of the field's type.
        unsafe { core::ptr::write_volatile(self.0.get(), f) }
    }
}

impl<'a> OpsView<'a> {
    /// The view of `ops`.
    ///
    /// # Safety
    ///
    /// `ops` is non-null and points to an ops that lives for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn from_raw(ops: *mut Ops) -> Self {
        // SAFETY: non-null per the function's contract.
        // INVARIANT: alive for `'a` (the contract).
        OpsView(unsafe { NonNull::new_unchecked(ops) }, PhantomData)
    }

    /// The ops.
    #[inline(always)]
    pub(crate) fn as_ptr(self) -> *mut Ops {
        self.0.as_ptr()
    }

    /// The word at byte offset `off`, one of the fields here.
    #[inline(always)]
    fn word<T>(self, off: usize) -> &'a T {
        let p = self.as_ptr().cast::<u8>().wrapping_add(off).cast::<T>();
        // SAFETY: the callers above pass the offset of a field of a live
        // ops (the invariants) with the size and alignment of `T`: an
        // atomic of the field's type, or for a callback an `FnWord` of its
        // type, through which every concurrent access goes.
        unsafe { &*p }
    }

    fn flags_word(self) -> &'a AtomicUsize {
        self.word(offset_of!(Ops, flags))
    }

    /// Its flags (`FTRACE_OPS_FL_*`).
    #[inline(always)]
    pub(crate) fn flags(self) -> c_ulong {
        self.flags_word().load(Ordering::Acquire)
    }

    /// Sets the flags `f`.
    pub(crate) fn set(self, f: c_ulong) {
        self.flags_word().fetch_or(f, Ordering::AcqRel);
    }

    /// Clears the flags `f`.
    pub(crate) fn clear(self, f: c_ulong) {
        self.flags_word().fetch_and(!f, Ordering::AcqRel);
    }

    /// The callback the core calls for the ops.
    #[inline(always)]
    pub(crate) fn func(self) -> bindings::ftrace_func_t {
        self.word::<FnWord<bindings::ftrace_func_t>>(offset_of!(Ops, func))
            .load()
    }

    /// Points the ops at another callback.
    pub(crate) fn set_func(self, f: bindings::ftrace_func_t) {
        self.word::<FnWord<bindings::ftrace_func_t>>(offset_of!(Ops, func))
            .store(f);
    }

    /// The callback a pid-filtered ops really calls (`saved_func`).
    #[inline(always)]
    pub(crate) fn saved_func(self) -> bindings::ftrace_func_t {
        self.word::<FnWord<bindings::ftrace_func_t>>(offset_of!(Ops, saved_func))
            .load()
    }

    /// Sets `saved_func`.
    pub(crate) fn set_saved_func(self, f: bindings::ftrace_func_t) {
        self.word::<FnWord<bindings::ftrace_func_t>>(offset_of!(Ops, saved_func))
            .store(f);
    }

    /// The direct trampoline of a direct ops (0: none).
    #[inline(always)]
    pub(crate) fn direct_call(self) -> c_ulong {
        self.word::<AtomicUsize>(offset_of!(Ops, direct_call))
            .load(Ordering::Acquire)
    }

    /// Sets the direct trampoline.
    pub(crate) fn set_direct_call(self, a: c_ulong) {
        self.word::<AtomicUsize>(offset_of!(Ops, direct_call))
            .store(a, Ordering::Release);
    }

    /// The list link (`next`), read locklessly by the dispatchers and
    /// written under `ftrace_lock`.
    #[inline(always)]
    pub(crate) fn next(self) -> &'a AtomicPtr<Ops> {
        self.word(offset_of!(Ops, next))
    }

    /// The owner's data (`private`: the trace array of a tracer's ops),
    /// set by the owner before it hands the ops over, or by the core for
    /// its own ops before they are registered.
    pub(crate) fn private(self) -> &'a AtomicPtr<c_void> {
        self.word(offset_of!(Ops, private))
    }

    /// Where the ops' filter sets are (`func_hash`: its own
    /// `local_hash`, or another ops'), set by the core under
    /// `ftrace_lock` before the ops is registered.
    pub(crate) fn func_hash(self) -> &'a AtomicPtr<bindings::ftrace_ops_hash> {
        self.word(offset_of!(Ops, func_hash))
    }

    /// The manager of a sub-op (`managed`), kept by the core under
    /// `ftrace_lock`.
    pub(crate) fn managed(self) -> &'a AtomicPtr<Ops> {
        self.word(offset_of!(Ops, managed))
    }

    /// The owner's command callback (`ops_func`), which the owner sets
    /// before the core sees the ops and never changes after: read as a
    /// plain word through a shared reference, as nobody writes it
    /// meanwhile.
    pub(crate) fn ops_func(self) -> bindings::ftrace_ops_func_t {
        *self.word::<bindings::ftrace_ops_func_t>(offset_of!(Ops, ops_func))
    }

    /// The address of its own sets' writers' lock
    /// (`local_hash.regex_lock`), for its initialisation.
    pub(crate) fn local_regex_lock(self) -> *mut bindings::mutex {
        regex_lock_of(self.local_hash())
    }

    /// The address of its own sets (`local_hash`), for ops that share
    /// them.
    pub(crate) fn local_hash(self) -> *mut bindings::ftrace_ops_hash {
        self.as_ptr()
            .cast::<u8>()
            .wrapping_add(offset_of!(Ops, local_hash))
            .cast()
    }

    fn tramp_words(self) -> (&'a AtomicUsize, &'a AtomicUsize) {
        (
            self.word(offset_of!(Ops, trampoline)),
            self.word(offset_of!(Ops, trampoline_size)),
        )
    }

    /// The ops' own trampoline, `(address, size)`; address 0 when it has
    /// none.
    #[inline(always)]
    pub(crate) fn trampoline(self) -> (u64, u64) {
        let (at, size) = self.tramp_words();
        // The address first: `set_trampoline` publishes the size before it.
        let a = at.load(Ordering::Acquire);
        (a as u64, size.load(Ordering::Relaxed) as u64)
    }

    /// Gives the ops a trampoline (`at` 0 and `size` 0: none).
    pub(crate) fn set_trampoline(self, at: u64, size: u64) {
        let (a, s) = self.tramp_words();
        if at == 0 {
            a.store(0, Ordering::Release);
            s.store(0, Ordering::Relaxed);
        } else {
            s.store(size as c_ulong, Ordering::Relaxed);
            a.store(at as c_ulong, Ordering::Release);
        }
    }
}
