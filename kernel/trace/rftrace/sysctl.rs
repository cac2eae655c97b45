// SPDX-License-Identifier: GPL-2.0

//! /proc/sys/kernel/ftrace_enabled.

use crate::registry::*;
use crate::sys::{dead, enabled, to_errno, CoreGuard};
use crate::update::update_sites;
use core::ptr;
use core::sync::atomic::Ordering;
use kernel::bindings;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;

/// The sysctl: turning it off unpatches every site (the ops stay
/// registered), turning it on patches them back; refused with `EBUSY`
/// while an ops that must not be stopped (`PERMANENT`) is registered.
///
/// # Safety
///
/// Called by the sysctl core for our table, with its arguments.
unsafe extern "C" fn enabled_sysctl(
    table: *const bindings::ctl_table,
    write: c_int,
    buffer: *mut c_void,
    lenp: *mut usize,
    ppos: *mut bindings::loff_t,
) -> c_int {
    let g = CoreGuard::lock();
    if dead() {
        return ENODEV.to_errno();
    }
    let last = enabled();
    // SAFETY: the sysctl core's arguments; the table's data is
    // `ftrace_enabled`, which `ftrace_lock` serializes here.
    let r = unsafe { bindings::proc_dointvec(table, write, buffer, lenp, ppos) };
    if r != 0 || write == 0 || last == enabled() {
        return r;
    }
    if !enabled() && list(g.held()).any(|o| o.has(F_PERMANENT)) {
        crate::sys::ftrace_enabled.store(1, Ordering::Relaxed);
        return EBUSY.to_errno();
    }
    to_errno(update_sites(g.held()))
}

static SYSCTL: crate::sys::CGlobal<[bindings::ctl_table; 1]> =
    crate::sys::CGlobal::new([bindings::ctl_table {
        procname: c"ftrace_enabled".as_ptr().cast(),
        data: crate::sys::ftrace_enabled.as_ptr().cast(),
        maxlen: core::mem::size_of::<c_int>() as c_int,
        mode: 0o644,
        proc_handler: Some(enabled_sysctl),
        poll: ptr::null_mut(),
        extra1: ptr::null_mut(),
        extra2: ptr::null_mut(),
    }]);

/// Registers `kernel.ftrace_enabled`.
pub(crate) fn register_sysctl() {
    // SAFETY: a static table that lives forever.
    let h =
        unsafe { bindings::register_sysctl_sz(c"kernel".as_ptr().cast(), SYSCTL.get().cast(), 1) };
    if h.is_null() {
        pr_warn!("cannot register kernel.ftrace_enabled\n");
    }
}
