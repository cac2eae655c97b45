// SPDX-License-Identifier: GPL-2.0

//! /proc/sys/kernel/ftrace_enabled.

use crate::base::sys::{dead, enabled, to_errno, CoreGuard};
use crate::ops::registry::{list, F_PERMANENT};
use crate::ops::update::update_sites;
use core::sync::atomic::Ordering;
use kernel::ffi::c_int;
use kernel::prelude::*;

/// The sysctl: turning it off unpatches every site (the ops stay
/// registered), turning it on patches them back; refused with `EBUSY`
/// while an ops that must not be stopped (`PERMANENT`) is registered.
/// `parse` is the sysctl core's integer handler (it reads or writes
/// `ftrace_enabled`), called with `ftrace_lock` held.
pub(crate) fn enabled_sysctl(write: bool, parse: impl FnOnce() -> c_int) -> c_int {
    let mut g = CoreGuard::lock();
    let (held, key) = g.parts();
    if dead() {
        return ENODEV.to_errno();
    }
    let last = enabled();
    let r = parse();
    if r != 0 || !write || last == enabled() {
        return r;
    }
    if !enabled() && list(held).any(|o| o.has(F_PERMANENT)) {
        crate::base::sys::ftrace_enabled.store(1, Ordering::Relaxed);
        return EBUSY.to_errno();
    }
    to_errno(update_sites(held, key))
}
