// SPDX-License-Identifier: GPL-2.0

//! The func mapper: per-function data of probes, looked up on the hot
//! path (`allocate_ftrace_func_mapper()` and friends). C holds a mapper
//! by the pointer `allocate_ftrace_func_mapper()` returned and passes it
//! back (or null): the functions take it as `Option<&FtraceHash>`, the
//! ABI of that pointer; a set is shared, its count and flags atomic.

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
    hash::alloc(hash::DEFAULT_BITS).map_or(ptr::null_mut(), KBox::into_raw)
}

/// The data slot of the entry `e` of a mapper (null: none).
fn data_of(e: *mut hash::Entry) -> *mut *mut c_void {
    // A mapper's entries are `MapEntry`s, the set entry first.
    e.cast::<MapEntry>()
        .cast::<u8>()
        .wrapping_add(core::mem::offset_of!(MapEntry, data))
        .cast()
}

/// The data slot of `ip`, or null. Lock-free: probes call it when hit.
#[no_mangle]
pub extern "C" fn ftrace_func_mapper_find_ip(
    m: Option<&FtraceHash>,
    ip: c_ulong,
) -> *mut *mut c_void {
    let Some(m) = m else {
        return ptr::null_mut();
    };
    let e = m.lookup(ip as u64);
    if e.is_null() {
        ptr::null_mut()
    } else {
        data_of(e)
    }
}

/// Maps `ip` to `data`; `EBUSY` if it is mapped.
///
/// # Safety
///
/// `m` is a mapper; callers serialize changes.
#[no_mangle]
pub unsafe extern "C" fn ftrace_func_mapper_add_ip(
    m: Option<&FtraceHash>,
    ip: c_ulong,
    data: *mut c_void,
) -> c_int {
    let Some(m) = m else {
        return EINVAL.to_errno();
    };
    if !m.lookup(ip as u64).is_null() {
        return EBUSY.to_errno();
    }
    // SAFETY: the callers serialize changes (the contract); a fresh entry
    // of a `MapEntry`'s size, whose data slot is then set.
    unsafe {
        let e = m.insert(ip as u64, core::mem::size_of::<MapEntry>());
        if e.is_null() {
            return ENOMEM.to_errno();
        }
        *data_of(e) = data;
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
    m: Option<&FtraceHash>,
    ip: c_ulong,
) -> *mut c_void {
    let Some(m) = m else {
        return ptr::null_mut();
    };
    let e = m.lookup(ip as u64);
    if e.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: an entry of the mapper, whose changes the callers serialize;
    // freed at once, as the C core does: the callers take a function out
    // only once its probe no longer runs on it.
    unsafe {
        let d = *data_of(e);
        m.unlink(e);
        bindings::kfree(e.cast());
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
    m: Option<&FtraceHash>,
    free_func: Option<unsafe extern "C" fn(data: *mut c_void) -> c_int>,
) {
    let Some(set) = m else {
        return;
    };
    if let Some(f) = free_func {
        for (_, e) in set.entries() {
            // SAFETY: a live entry's data, given to the caller's callback.
            unsafe { f(*data_of(e)) };
        }
    }
    // SAFETY: nobody uses it (the contract).
    unsafe { hash::free(ptr::from_ref(set).cast_mut()) };
}
