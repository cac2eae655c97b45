// SPDX-License-Identifier: GPL-2.0

//! Function tracing callbacks.
//!
//! A [`Registration`] has the function tracer call a [`Callback`] at the
//! entry of the kernel functions its filter selects, for as long as it is
//! registered. It owns its `struct ftrace_ops` and unregisters on drop,
//! after which no call of its callback is in flight.
//!
//! The ops and the callback live in an allocation of their own, which
//! the registration owns: the registration itself may move, and the
//! tracer never holds a reference into it. Registering and
//! unregistering take `&mut self`: one owner starts and stops the calls,
//! so whether the tracer holds the ops is a plain fact of that owner's,
//! not a flag other threads race on. Filters may be changed through a
//! shared reference, from any thread, at any time: the tracer serializes
//! the edits of one ops itself.
//!
//! When the tracer cannot promise that no CPU will call the ops again (it
//! killed itself after a failed code patch, `ftrace_kill()`, and refuses
//! to unregister; or an unregistration failed for any other reason), the
//! callback is switched off, the calls already inside it are waited for,
//! and the allocation is leaked rather than freed on drop: a site that
//! still calls the ops finds it alive and returns at once, without
//! running the callback, whose code may be gone with its module. The
//! kernel says so once.
//!
//! The callback runs in the context of the traced function, which may be
//! any context: interrupts off, NMI, the scheduler. It runs with
//! preemption off, never recursively on one CPU (a call from inside the
//! callback, or from what it calls, is not reported), and only where RCU
//! watches. It must not sleep and should take no lock the traced code
//! may hold; atomics and per-CPU data are what it is made for.
//!
//! C header: [`include/linux/ftrace.h`](srctree/include/linux/ftrace.h)
//!
//! # Examples
//!
//! Counting the calls of one function:
//!
//! ```
//! use core::sync::atomic::{AtomicUsize, Ordering};
//! use kernel::ftrace::{Call, Callback, Registration};
//! use kernel::{c_str, prelude::*};
//!
//! struct Counter(AtomicUsize);
//!
//! impl Callback for Counter {
//!     fn call(&self, _call: &Call) {
//!         self.0.fetch_add(1, Ordering::Relaxed);
//!     }
//! }
//!
//! let mut reg = Registration::new(Counter(AtomicUsize::new(0)), GFP_KERNEL)?;
//! reg.set_filter(c_str!("jiffies_to_msecs"))?;
//! reg.register()?;
//! // SAFETY: a plain conversion, callable anywhere.
//! let _ = unsafe { kernel::bindings::jiffies_to_msecs(1) };
//! assert!(reg.callback().0.load(Ordering::Relaxed) >= 1);
//! // Unregistered here; the count stays where it is.
//! drop(reg);
//! # Ok::<(), Error>(())
//! ```
//!
//! A name that matches nothing is refused (the reason is in the tracing
//! error_log):
//!
//! ```
//! # use kernel::ftrace::{Call, Callback, Registration};
//! # use kernel::{c_str, prelude::*};
//! # struct Nothing;
//! # impl Callback for Nothing { fn call(&self, _call: &Call) {} }
//! let reg = Registration::new(Nothing, GFP_KERNEL)?;
//! assert_eq!(
//!     reg.set_filter(c_str!("no_such_function_xyz")),
//!     Err(EINVAL)
//! );
//! # Ok::<(), Error>(())
//! ```

// The thunk's attribute below spells the padding out (an attribute takes
// literals only); a padding it does not know fails the build here.
#[cfg(all(
    CONFIG_FTRACE_CORE_RUST_TRACE_RUST,
    CONFIG_CALL_PADDING,
    not(CONFIG_FUNCTION_PADDING_BYTES = "16")
))]
compile_error!("kernel::ftrace: add this CONFIG_FUNCTION_PADDING_BYTES to thunk()");

use crate::{
    alloc::{AllocError, Flags},
    bindings,
    error::{code::*, to_result, Result},
    ffi::{c_int, c_ulong},
    prelude::*,
    str::CStr,
    sync::rcu,
    types::Opaque,
};
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, Ordering};

/// One traced call, as a [`Callback`] sees it.
pub struct Call {
    ip: usize,
    parent_ip: usize,
}

impl Call {
    /// The address of the traced function's call site (its entry).
    pub fn ip(&self) -> usize {
        self.ip
    }

    /// The address the traced function returns to (in its caller).
    pub fn parent_ip(&self) -> usize {
        self.parent_ip
    }
}

/// A function-entry callback; see the module documentation for the
/// context it runs in.
pub trait Callback: Send + Sync {
    /// Called at the entry of a function the registration traces.
    fn call(&self, call: &Call);
}

/// What the tracer reaches of a registration: the ops, whether its
/// callback may still run, and how to run it. Built-in code reads it
/// only ([`thunk`]), so that a leaked head stays safe to call after the
/// module that made it is gone.
///
/// # Invariants
///
/// `ops.func` is [`thunk`]; `call` is `call_of::<T>` for the `T` of the
/// [`Inner`] this head starts; `live` goes from true to false once and
/// never back.
#[repr(C)]
struct Head {
    ops: Opaque<bindings::ftrace_ops>,
    live: AtomicBool,
    call: unsafe fn(*const Head, &Call),
}

/// The allocation a registration owns: the head, then the callback.
#[repr(C)]
struct Inner<T> {
    head: Head,
    callback: T,
}

/// Where a registration stands with the tracer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// Not registered: the tracer does not use the ops.
    Idle,
    /// Registered: the tracer may call the ops at any time.
    Registered,
    /// The tracer could not promise that it will not call the ops again:
    /// the callback is off (`live` false, the calls inside it waited
    /// for), and the allocation is leaked on drop.
    Lost,
}

/// A function-tracing registration of the callback `T`.
///
/// # Invariants
///
/// `inner` comes from `KBox::into_raw` and is owned by this registration;
/// no `&mut` to it is ever made while the tracer may read it (the tracer
/// and [`thunk`] read it through raw pointers and `&` only). Its ops is
/// registered with the function tracer exactly while `state` is
/// `Registered`; after `Lost`, the tracer may call it until the kernel
/// stops, so the allocation is never freed.
pub struct Registration<T: Callback> {
    inner: NonNull<Inner<T>>,
    state: State,
}

// SAFETY: the C side of the ops is the function tracer's, made for being
// used from any thread, and `T` is `Send`: the registration may be
// dropped (unregistered) on another thread than the one that made it.
unsafe impl<T: Callback> Send for Registration<T> {}
// SAFETY: `&Registration` gives only `&T` (`T: Sync`) and the filter
// edits, which the tracer serializes per ops; what changes the
// registration (`register`, `unregister`, the drop) needs `&mut`.
unsafe impl<T: Callback> Sync for Registration<T> {}

/// Whether the kernel already said that a registration was leaked.
static LEAK_TOLD: AtomicBool = AtomicBool::new(false);

impl<T: Callback> Registration<T> {
    /// A registration of `callback`, not registered yet and tracing every
    /// function once registered, unless a filter is set first.
    pub fn new(callback: T, flags: Flags) -> Result<Self, AllocError> {
        let ops = bindings::ftrace_ops {
            func: Some(thunk),
            // Recursion protection and preemption off by the tracer, and
            // no call where RCU does not watch.
            flags: (bindings::FTRACE_OPS_FL_RECURSION | bindings::FTRACE_OPS_FL_RCU) as c_ulong,
            ..Default::default()
        };
        let inner = KBox::new(
            Inner {
                head: Head {
                    ops: Opaque::new(ops),
                    live: AtomicBool::new(true),
                    call: call_of::<T>,
                },
                callback,
            },
            flags,
        )?;
        // INVARIANT: from `KBox::into_raw`, owned by the registration;
        // not registered.
        Ok(Self {
            inner: NonNull::from(KBox::leak(inner)),
            state: State::Idle,
        })
    }

    fn head(&self) -> &Head {
        // SAFETY: `inner` is a live allocation of this registration (the
        // invariants), only ever read through shared references.
        unsafe { &(*self.inner.as_ptr()).head }
    }

    fn ops(&self) -> *mut bindings::ftrace_ops {
        self.head().ops.get()
    }

    /// The callback.
    pub fn callback(&self) -> &T {
        // SAFETY: as in `head`.
        unsafe { &(*self.inner.as_ptr()).callback }
    }

    fn edit(&self, glob: &CStr, notrace: bool, reset: bool) -> Result {
        let len = c_int::try_from(glob.len()).map_err(|_| EINVAL)?;
        let buf = glob.as_char_ptr().cast_mut().cast();
        let reset = c_int::from(reset);
        let ops = self.ops();
        // SAFETY: a valid ops that stays where it is (its allocation is
        // the registration's: the invariants); the tracer reads `len`
        // bytes of the string during the call only, and serializes edits
        // of one ops itself.
        to_result(unsafe {
            if notrace {
                bindings::ftrace_set_notrace(ops, buf, len, reset)
            } else {
                bindings::ftrace_set_filter(ops, buf, len, reset)
            }
        })
    }

    /// Traces only the functions `glob` selects (the syntax of
    /// set_ftrace_filter: a name, a glob, `!` to remove), replacing the
    /// filter. `EINVAL` when it selects nothing. Allowed while
    /// registered: the change applies at once.
    pub fn set_filter(&self, glob: &CStr) -> Result {
        self.edit(glob, false, true)
    }

    /// Adds what `glob` selects to the filter.
    pub fn add_filter(&self, glob: &CStr) -> Result {
        self.edit(glob, false, false)
    }

    /// Never traces what `glob` selects (replacing the notrace filter).
    pub fn set_notrace(&self, glob: &CStr) -> Result {
        self.edit(glob, true, true)
    }

    /// Whether the callback is registered.
    pub fn is_registered(&self) -> bool {
        self.state == State::Registered
    }

    /// Starts the calls. `EBUSY` if registered already, `ENODEV` once an
    /// unregistration failed (the registration is then spent).
    pub fn register(&mut self) -> Result {
        match self.state {
            State::Idle => {}
            State::Registered => return Err(EBUSY),
            State::Lost => return Err(ENODEV),
        }
        // SAFETY: a valid ops whose allocation outlives its registration
        // (the invariants); its callback is `thunk`, which finds a `Head`
        // around it.
        let r = to_result(unsafe { bindings::register_ftrace_function(self.ops()) });
        match r {
            // INVARIANT: registered, and the state says so before anyone
            // else can look at it (we hold the only `&mut`).
            Ok(()) => self.state = State::Registered,
            // A refused startup leaves the ops unused and waits for any
            // list walker that saw it, unless the tracer died on the way:
            // then sites it wrote may call the ops for good.
            Err(_) if tracer_dead() => self.lose(),
            Err(_) => {}
        }
        r
    }

    /// Stops the calls; when it returns, none is in flight. `EINVAL` if
    /// not registered. On any other error the tracer may still call the
    /// ops: the callback is switched off for good (calls in it waited
    /// for), and the registration is leaked when dropped.
    pub fn unregister(&mut self) -> Result {
        if self.state != State::Registered {
            return Err(EINVAL);
        }
        // SAFETY: registered (the invariants); the tracer waits for the
        // calls in flight before it returns success.
        let r = to_result(unsafe { bindings::unregister_ftrace_function(self.ops()) });
        match r {
            // INVARIANT: the tracer no longer holds the ops.
            Ok(()) => self.state = State::Idle,
            Err(_) => self.lose(),
        }
        r
    }

    /// The tracer may keep calling the ops: no call runs the callback
    /// from now on, and those inside it have returned when this does.
    fn lose(&mut self) {
        // INVARIANT: never freed from now on (the drop leaks it).
        self.state = State::Lost;
        self.head().live.store(false, Ordering::Release);
        // The callback runs with preemption off (FTRACE_OPS_FL_RECURSION):
        // a grace period covers every call that read `live` as true.
        rcu::synchronize_rcu();
    }
}

/// The deliberate break of the Rust ftrace core that a mutants kernel
/// (`CONFIG_FTRACE_CORE_RUST_MUTANTS`, never one that ships) has on, 0
/// for none: the `rftrace_mutant` parameter, a word of the x86_64
/// trampolines' data, which test it themselves. The core numbers the
/// breaks (kernel/trace/rftrace/base/mutant.rs); it, its arch crate and
/// this file read the word here. Inlined: the core reads it on its hot
/// path, which must not call traced code.
#[cfg(CONFIG_FTRACE_CORE_RUST_MUTANTS)]
#[doc(hidden)]
#[inline(always)]
pub fn mutant() -> i32 {
    extern "C" {
        static rftrace_mutant: core::sync::atomic::AtomicI32;
    }
    // SAFETY: the word is defined in the trampolines' data, lives as long
    // as the kernel, and is only read and written atomically.
    unsafe { rftrace_mutant.load(Ordering::Relaxed) }
}

/// Whether a mutants kernel's break 12 is on: a registration the tracer
/// may still call is freed on drop, as if it were not.
fn mutant_frees_lost() -> bool {
    #[cfg(CONFIG_FTRACE_CORE_RUST_MUTANTS)]
    return mutant() == 12;
    #[cfg(not(CONFIG_FTRACE_CORE_RUST_MUTANTS))]
    false
}

/// Whether the function tracer stopped for good (`ftrace_kill()`).
fn tracer_dead() -> bool {
    // SAFETY: reads a flag; callable in any context.
    unsafe { bindings::ftrace_is_dead() != 0 }
}

/// The callback of every registration's ops: finds the head around the
/// ops and, while the registration is live, calls its callback. Built
/// into the kernel, so that a site still calling a leaked registration
/// never runs code of a module gone since.
///
/// # Safety
///
/// Called by the function tracer through the ops of a [`Head`], which it
/// registered.
// With traced Rust code (CONFIG_FTRACE_CORE_RUST_TRACE_RUST) the thunk
// keeps the function padding but gets no entry NOP: the tracer does not
// call into a call site of its own. (`T::call`, the user's code, is
// traced like any Rust function.) The attribute takes free functions only.
#[cfg_attr(
    all(
        CONFIG_FTRACE_CORE_RUST_TRACE_RUST,
        CONFIG_CALL_PADDING,
        CONFIG_FUNCTION_PADDING_BYTES = "16"
    ),
    patchable_function_entry(prefix_nops = 16, entry_nops = 0)
)]
#[cfg_attr(
    all(CONFIG_FTRACE_CORE_RUST_TRACE_RUST, not(CONFIG_CALL_PADDING)),
    patchable_function_entry(prefix_nops = 0, entry_nops = 0)
)]
unsafe extern "C" fn thunk(
    ip: c_ulong,
    parent_ip: c_ulong,
    op: *mut bindings::ftrace_ops,
    _fregs: *mut bindings::ftrace_regs,
) {
    // SAFETY: `op` is the `ops` of a `Head` the tracer may call (the
    // contract), whose allocation is freed only after the tracer let it
    // go (`unregister` waits for the calls in flight) and is leaked
    // otherwise: it is live. `Opaque` is transparent over the ops, and
    // only `&` to the head is made: its owner never makes `&mut`.
    let head = unsafe {
        &*crate::container_of!(op.cast::<Opaque<bindings::ftrace_ops>>(), Head, ops)
    };
    // Pairs with the release of `lose`: once off, never the callback.
    if head.live.load(Ordering::Acquire) {
        // SAFETY: `call` is `call_of::<T>` of the `Inner<T>` this head
        // starts (the invariants), and the head is live (above).
        unsafe { (head.call)(head, &Call { ip, parent_ip }) };
    }
}

/// Runs the callback of the `Inner<T>` that `head` starts. Code of the
/// crate that instantiates it, traced with it as `T::call` is.
///
/// # Safety
///
/// `head` is the head of a live `Inner<T>`.
unsafe fn call_of<T: Callback>(head: *const Head, call: &Call) {
    // SAFETY: the head is the first field of a `repr(C)` `Inner<T>` (the
    // contract), live; only `&T` is made, as everywhere.
    let callback = unsafe { &(*head.cast::<Inner<T>>()).callback };
    callback.call(call);
}

impl<T: Callback> Drop for Registration<T> {
    fn drop(&mut self) {
        if self.state == State::Registered {
            if let Err(e) = self.unregister() {
                pr_warn!("ftrace: unregistering a Rust callback failed: {:?}\n", e);
            }
        }
        if self.state == State::Lost && !mutant_frees_lost() {
            if !LEAK_TOLD.swap(true, Ordering::Relaxed) {
                pr_warn!("ftrace: the tracer may still call a Rust callback: leaking it\n");
            }
            return;
        }
        let ops = self.ops();
        // SAFETY: not registered, so the tracer does not use the ops;
        // this frees the filters it made for it.
        unsafe { bindings::ftrace_free_filter(ops) };
        // SAFETY: from `KBox::into_raw` (`leak`), owned by this
        // registration and no longer used by the tracer (not registered,
        // and `unregister` waited for the calls in flight): nothing else
        // refers to it.
        drop(unsafe { KBox::from_raw(self.inner.as_ptr()) });
    }
}
