// SPDX-License-Identifier: GPL-2.0

//! The func mapper: a set whose entries carry a data word of their
//! function ([`Mapper`]), for the function probes.

use core::ptr;
use kernel::error::{code::ENOMEM, Result};
use kernel::ffi::c_void;
use kernel::prelude::*;

use super::{alloc, kfree, Entry, FtraceHash, DEFAULT_BITS};

/// An entry of a func mapper: a set entry and the data word of its
/// function.
#[repr(C)]
struct MapEntry {
    entry: Entry,
    data: *mut c_void,
}

/// A func mapper (`struct ftrace_func_mapper`): a set whose entries carry
/// a data word per function, for the probes of the tracers. C holds it by
/// the pointer `allocate_ftrace_func_mapper()` returned and passes it
/// back (the functions take `Option<&Mapper>`, the ABI of that pointer);
/// bound by their contract, its users serialize its changes (`add` and
/// `remove`, under `ftrace_lock` in the tracers' probe callbacks) while
/// lookups run on the hot path, and free it only when nobody uses it.
///
/// # Invariants
///
/// The entries of the set are [`MapEntry`]s, and one thread at a time
/// changes it.
#[repr(transparent)]
pub struct Mapper(FtraceHash);

impl Mapper {
    /// A new, empty mapper, for C (null: no memory).
    pub(crate) fn alloc_raw() -> *mut Mapper {
        // INVARIANT: empty; the entries `add` makes are `MapEntry`s.
        alloc(DEFAULT_BITS).map_or(ptr::null_mut(), |b| KBox::into_raw(b).cast())
    }

    /// The data word of `e`, one of the mapper's entries.
    fn data_of(e: *mut Entry) -> *mut *mut c_void {
        // A mapper's entries are `MapEntry`s (the invariants), the set
        // entry first.
        e.cast::<u8>()
            .wrapping_add(core::mem::offset_of!(MapEntry, data))
            .cast()
    }

    /// The address of the data word of `ip` (null: not mapped), which C
    /// reads and writes. Lock-free: probes call it when hit.
    pub(crate) fn find(&self, ip: u64) -> *mut *mut c_void {
        let e = self.0.lookup(ip);
        if e.is_null() {
            ptr::null_mut()
        } else {
            Self::data_of(e)
        }
    }

    /// Maps `ip` to `data`: `EBUSY` if it is mapped, `ENOMEM` without
    /// memory.
    pub(crate) fn add(&self, ip: u64, data: *mut c_void) -> Result {
        if !self.0.lookup(ip).is_null() {
            return Err(EBUSY);
        }
        let size = core::mem::size_of::<MapEntry>();
        // SAFETY: only this thread changes the mapper (the invariants);
        // the new entry has `MapEntry`'s size, so its data word is inside
        // it, written before the entry is published.
        let e = unsafe { self.0.insert_with(ip, size, |e| *Self::data_of(e) = data) };
        if e.is_null() {
            return Err(ENOMEM);
        }
        Ok(())
    }

    /// Unmaps `ip`: its data (none: it was not mapped).
    pub(crate) fn remove(&self, ip: u64) -> Option<*mut c_void> {
        let e = self.0.lookup(ip);
        if e.is_null() {
            return None;
        }
        // SAFETY: `e` is an entry of the mapper, which only this thread
        // changes (the invariants); freed at once, as C's mapper frees it.
        unsafe {
            let d = *Self::data_of(e);
            self.0.unlink(e);
            if self.0.frees_alone(e) {
                kfree(e);
            }
            Some(d)
        }
    }

    /// The data words of the mapped functions.
    pub(crate) fn datas(&self) -> impl Iterator<Item = *mut c_void> + '_ {
        self.0.entries().map(|(_, e)| {
            // SAFETY: an entry of the live mapper, a `MapEntry` (the
            // invariants), not freed while the iterator borrows it.
            unsafe { *Self::data_of(e) }
        })
    }
}
