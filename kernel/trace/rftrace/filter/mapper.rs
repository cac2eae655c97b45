// SPDX-License-Identifier: GPL-2.0

//! The func mapper: per-function data of probes, looked up on the hot
//! path (`allocate_ftrace_func_mapper()` and friends), over the
//! [`Mapper`] of `hash`. `free_ftrace_func_mapper()`, which takes back
//! the mapper and calls C's callback, is in `entry`.

use crate::sites::hash::Mapper;
use core::ptr;
use kernel::ffi::{c_int, c_ulong, c_void};
use kernel::prelude::*;

/// A new, empty mapper (null: no memory).
pub(crate) fn allocate_ftrace_func_mapper() -> *mut Mapper {
    Mapper::alloc_raw()
}

/// The data slot of `ip`, or null. Lock-free: probes call it when hit.
pub(crate) fn ftrace_func_mapper_find_ip(m: Option<&Mapper>, ip: c_ulong) -> *mut *mut c_void {
    m.map_or(ptr::null_mut(), |m| m.find(ip as u64))
}

/// Maps `ip` to `data`: `-EBUSY` if it is mapped already.
pub(crate) fn ftrace_func_mapper_add_ip(
    m: Option<&Mapper>,
    ip: c_ulong,
    data: *mut c_void,
) -> c_int {
    match m {
        Some(m) => crate::base::sys::to_errno(m.add(ip as u64, data)),
        None => EINVAL.to_errno(),
    }
}

/// Unmaps `ip`; its data, or null.
pub(crate) fn ftrace_func_mapper_remove_ip(m: Option<&Mapper>, ip: c_ulong) -> *mut c_void {
    m.and_then(|m| m.remove(ip as u64))
        .unwrap_or(ptr::null_mut())
}
