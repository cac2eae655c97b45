// SPDX-License-Identifier: GPL-2.0

//! The C structs whose all-zero value is valid ([`Zeroed`]), as C's
//! `= {}` gives them, for constants and statics of the core.

use kernel::bindings;

/// A C struct whose all-zero bytes are a valid value: what C's `= {}`
/// and `kzalloc()` give it (null pointers, no callbacks, zero counts and
/// flags).
///
/// # Safety
///
/// All-zero bytes are a valid value of the type.
pub(crate) unsafe trait Zeroed: Sized {}

// SAFETY: null pointers, no callback, no flags; the core initialises an
// ops (`OpsRef::init`) before it uses its lock.
unsafe impl Zeroed for bindings::ftrace_ops {}
// SAFETY: no methods.
unsafe impl Zeroed for bindings::file_operations {}
// SAFETY: no callbacks, index 0, an all-zero embedded ops (above).
unsafe impl Zeroed for bindings::fgraph_ops {}
// SAFETY: a mutex not yet initialised: plain integers and pointers, which
// `mutex_init()` sets before use (see `CMutex`).
unsafe impl Zeroed for bindings::mutex {}

/// The all-zero value of `T`, in constants too.
pub(crate) const fn zeroed<T: Zeroed>() -> T {
    // SAFETY: all-zero bytes are a valid `T` (the trait's contract).
    unsafe { core::mem::zeroed() }
}

pub(crate) const fn zeroed_ops() -> bindings::ftrace_ops {
    zeroed()
}
