// SPDX-License-Identifier: GPL-2.0

//! The func mapper: per-function data of probes, looked up on the hot
//! path (`allocate_ftrace_func_mapper()` and friends).

use crate::hash::{self, FtraceHash};
use core::ptr;
use kernel::bindings;
use kernel::ffi::{c_int, c_ulong, c_void};
use kernel::prelude::*;

/// An entry of a mapper: a set entry and its data.
#[repr(C)]
struct MapEntry {
    entry: bindings::ftrace_func_entry,
    data: *mut c_void,
}

/// A new, empty mapper (a set with data per function).
#[no_mangle]
pub extern "C" fn allocate_ftrace_func_mapper() -> *mut FtraceHash {
    hash::alloc(hash::DEFAULT_BITS)
}

/// The data slot of `ip`, or null. Lock-free: probes call it when hit.
///
/// # Safety
///
/// `m` is a mapper.
#[no_mangle]
pub unsafe extern "C" fn ftrace_func_mapper_find_ip(
    m: *mut FtraceHash,
    ip: c_ulong,
) -> *mut *mut c_void {
    // SAFETY: per the function's contract.
    let e = unsafe { hash::lookup(m, ip as u64) };
    if e.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: a mapper's entries are `MapEntry`s.
    unsafe { ptr::addr_of_mut!((*e.cast::<MapEntry>()).data) }
}

/// Maps `ip` to `data`; `EBUSY` if it is mapped.
///
/// # Safety
///
/// `m` is a mapper; callers serialize changes.
#[no_mangle]
pub unsafe extern "C" fn ftrace_func_mapper_add_ip(
    m: *mut FtraceHash,
    ip: c_ulong,
    data: *mut c_void,
) -> c_int {
    // SAFETY: per the function's contract.
    unsafe {
        if hash::contains(m, ip as u64) {
            return EBUSY.to_errno();
        }
        let e = hash::insert_sized(m, ip as u64, core::mem::size_of::<MapEntry>());
        if e.is_null() {
            return ENOMEM.to_errno();
        }
        (*e.cast::<MapEntry>()).data = data;
    }
    0
}

/// Unmaps `ip`; returns its data.
///
/// # Safety
///
/// `m` is a mapper; callers serialize changes.
#[no_mangle]
pub unsafe extern "C" fn ftrace_func_mapper_remove_ip(
    m: *mut FtraceHash,
    ip: c_ulong,
) -> *mut c_void {
    // SAFETY: per the function's contract.
    unsafe {
        let e = hash::lookup(m, ip as u64);
        if e.is_null() {
            return ptr::null_mut();
        }
        let d = (*e.cast::<MapEntry>()).data;
        hash::remove_entry(m, e);
        d
    }
}

/// Frees a mapper, handing each data to `free_func`.
///
/// # Safety
///
/// `m` is null or a mapper nobody uses any more.
#[no_mangle]
pub unsafe extern "C" fn free_ftrace_func_mapper(
    m: *mut FtraceHash,
    free_func: Option<unsafe extern "C" fn(data: *mut c_void) -> c_int>,
) {
    if m.is_null() {
        return;
    }
    // SAFETY: per the function's contract.
    unsafe {
        if let Some(f) = free_func {
            hash::for_each(m, |e| {
                f((*e.cast::<MapEntry>()).data);
            });
        }
        hash::free(m);
    }
}
