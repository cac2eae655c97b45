// SPDX-License-Identifier: GPL-2.0

//! Function tracing callbacks.
//!
//! A [`Registration`] has the function tracer call a [`Callback`] at the
//! entry of the kernel functions its filter selects, for as long as it is
//! registered. It owns its `struct ftrace_ops`, is pinned where it is
//! made (the tracer keeps its address), and unregisters on drop, after
//! which no call of its callback is in flight.
//!
//! Registering and unregistering take the registration by `Pin<&mut _>`:
//! one owner starts and stops the calls, so whether the tracer holds the
//! ops is a plain fact of that owner's, not a flag other threads race on
//! (were both `&self`, one thread's `unregister` could slip between
//! another's claim of the flag and its `register_ftrace_function()`,
//! leaving the ops registered under a flag that says it is not, and the
//! drop would free it while the tracer still called it). Filters may be
//! changed through a shared reference, from any thread, at any time: the
//! tracer serializes the edits of one ops itself.
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
//! let mut reg = KBox::pin_init(Registration::new(Counter(AtomicUsize::new(0))), GFP_KERNEL)?;
//! reg.as_ref().set_filter(c_str!("jiffies_to_msecs"))?;
//! reg.as_mut().register()?;
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
//! let reg = KBox::pin_init(Registration::new(Nothing), GFP_KERNEL)?;
//! assert_eq!(
//!     reg.as_ref().set_filter(c_str!("no_such_function_xyz")),
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
    bindings,
    error::{code::*, to_result, Error, Result},
    ffi::{c_int, c_ulong},
    prelude::*,
    str::CStr,
    types::Opaque,
};

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

/// A function-tracing registration of the callback `T`.
///
/// # Invariants
///
/// `ops` is an `ftrace_ops` whose callback is `thunk::<T>`, made by
/// [`Registration::new`] and not moved since (the value is pinned); it is
/// registered with the function tracer exactly while `registered` is true.
/// `registered` changes only through `Pin<&mut Self>`, in the same call
/// that registers or unregisters the ops.
#[pin_data(PinnedDrop)]
pub struct Registration<T: Callback> {
    #[pin]
    ops: Opaque<bindings::ftrace_ops>,
    callback: T,
    registered: bool,
}

// SAFETY: the C side of the ops is the function tracer's, made for being
// used from any thread, and `T` is `Send`: the registration may be
// dropped (unregistered) on another thread than the one that made it.
unsafe impl<T: Callback> Send for Registration<T> {}
// SAFETY: `&Registration` gives only `&T` (`T: Sync`) and the filter
// edits, which the tracer serializes per ops; what changes the
// registration (`register`, `unregister`, the drop) needs `&mut`.
unsafe impl<T: Callback> Sync for Registration<T> {}

impl<T: Callback> Registration<T> {
    /// A registration of `callback`, not registered yet and tracing every
    /// function once registered, unless a filter is set first.
    pub fn new(callback: T) -> impl PinInit<Self, Error> {
        let ops = bindings::ftrace_ops {
            func: Some(thunk::<T>),
            // Recursion protection and preemption off by the tracer, and
            // no call where RCU does not watch.
            flags: (bindings::FTRACE_OPS_FL_RECURSION | bindings::FTRACE_OPS_FL_RCU) as c_ulong,
            ..Default::default()
        };
        try_pin_init!(Self {
            ops: Opaque::new(ops),
            callback,
            registered: false,
        }? Error)
    }

    /// The callback.
    pub fn callback(&self) -> &T {
        &self.callback
    }

    fn edit(&self, glob: &CStr, notrace: bool, reset: bool) -> Result {
        let len = c_int::try_from(glob.len()).map_err(|_| EINVAL)?;
        let buf = glob.as_char_ptr().cast_mut().cast();
        let reset = c_int::from(reset);
        let ops = self.ops.get();
        // SAFETY: a valid ops that stays where it is (pinned: the
        // invariants); the tracer reads `len` bytes of the string during
        // the call only, and serializes edits of one ops itself.
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
    pub fn set_filter(self: Pin<&Self>, glob: &CStr) -> Result {
        self.edit(glob, false, true)
    }

    /// Adds what `glob` selects to the filter.
    pub fn add_filter(self: Pin<&Self>, glob: &CStr) -> Result {
        self.edit(glob, false, false)
    }

    /// Never traces what `glob` selects (replacing the notrace filter).
    pub fn set_notrace(self: Pin<&Self>, glob: &CStr) -> Result {
        self.edit(glob, true, true)
    }

    /// Whether the callback is registered.
    pub fn is_registered(&self) -> bool {
        self.registered
    }

    /// Starts the calls. `EBUSY` if registered already.
    pub fn register(self: Pin<&mut Self>) -> Result {
        // Only the flag changes, never the pinned ops.
        // SAFETY: nothing is moved out of the registration.
        let this = unsafe { self.get_unchecked_mut() };
        if this.registered {
            return Err(EBUSY);
        }
        // SAFETY: a valid ops, pinned (the invariants): the tracer keeps
        // its address until `unregister`, which the drop does at the
        // latest; its callback is `thunk` for this very type.
        to_result(unsafe { bindings::register_ftrace_function(this.ops.get()) })?;
        // INVARIANT: registered, and the flag says so before anyone else
        // can look at it (we hold the only `&mut`).
        this.registered = true;
        Ok(())
    }

    /// Stops the calls; when it returns, none is in flight. `EINVAL` if
    /// not registered.
    pub fn unregister(self: Pin<&mut Self>) -> Result {
        // SAFETY: nothing is moved out of the registration.
        unsafe { self.get_unchecked_mut() }.stop()
    }

    fn stop(&mut self) -> Result {
        if !self.registered {
            return Err(EINVAL);
        }
        // SAFETY: registered (the invariants); the tracer waits for the
        // calls in flight before it returns.
        let r = to_result(unsafe { bindings::unregister_ftrace_function(self.ops.get()) });
        // INVARIANT: the tracer refuses only when it killed itself
        // (`ftrace_kill()`), after which it calls no callback and keeps no
        // ops: either way the ops is no longer the tracer's.
        self.registered = false;
        r
    }
}

/// The callback of the ops of a `Registration<T>`: finds the registration
/// and calls `T`.
///
/// # Safety
///
/// Called by the function tracer through the ops of a `Registration<T>`,
/// which it registered.
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
unsafe extern "C" fn thunk<T: Callback>(
    ip: c_ulong,
    parent_ip: c_ulong,
    op: *mut bindings::ftrace_ops,
    _fregs: *mut bindings::ftrace_regs,
) {
    // SAFETY: `op` is the `ops` field of a registered, hence live,
    // `Registration<T>` (the contract): it unregisters, which waits for
    // the calls in flight, before it goes. `Opaque` is transparent over
    // the ops.
    let this = unsafe {
        &*crate::container_of!(
            op.cast::<Opaque<bindings::ftrace_ops>>(),
            Registration<T>,
            ops
        )
    };
    this.callback.call(&Call { ip, parent_ip });
}

#[pinned_drop]
impl<T: Callback> PinnedDrop for Registration<T> {
    fn drop(self: Pin<&mut Self>) {
        // SAFETY: nothing is moved out; the value is being dropped.
        let this = unsafe { self.get_unchecked_mut() };
        if let Err(e) = this.stop() {
            if e != EINVAL {
                // Only a tracer that killed itself (ftrace_kill) refuses;
                // it calls no callback any more.
                pr_warn!("ftrace: unregistering a Rust callback failed: {:?}\n", e);
            }
        }
        // SAFETY: not registered (any more), so the tracer does not use
        // the ops; this frees the filters it made for it.
        unsafe { bindings::ftrace_free_filter(this.ops.get()) };
    }
}
