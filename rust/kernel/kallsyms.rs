// SPDX-License-Identifier: GPL-2.0

//! Kernel symbols: the name and extent of the symbol at an address, and
//! the address of a symbol by name (loaded modules included).
//!
//! C header: [`include/linux/kallsyms.h`](srctree/include/linux/kallsyms.h)
//!
//! # Examples
//!
//! ```
//! use kernel::kallsyms::{self, SymbolBuf};
//! use kernel::c_str;
//!
//! let a = kallsyms::address_of(c_str!("schedule")).expect("schedule is a symbol");
//! let mut buf = SymbolBuf::new();
//! let s = kallsyms::lookup(a + 1, &mut buf).expect("an address in schedule");
//! assert_eq!(s.name, b"schedule");
//! assert_eq!(s.offset, 1);
//! assert!(s.module.is_none());
//! assert_eq!(kallsyms::size_offset(a + 1), Some((s.size, 1)));
//!
//! let mut text = [0u8; kallsyms::SYMBOL_LEN];
//! assert_eq!(kallsyms::sprint(&mut text, a, false), b"schedule");
//! assert!(kallsyms::sprint(&mut text, a + 1, true).starts_with(b"schedule+0x1/"));
//! assert_eq!(kallsyms::address_of(c_str!("no such symbol, surely")), None);
//! ```

use crate::bindings;
use crate::ffi::{c_char, c_ulong};
use crate::str::CStr;
use core::ptr;

/// The room a symbol's name needs, its NUL included (`KSYM_NAME_LEN`).
pub const NAME_LEN: usize = bindings::KSYM_NAME_LEN as usize;

/// The room a module's name needs, its NUL included (`MODULE_NAME_LEN`,
/// a macro bindgen does not see: 64 less an `unsigned long`).
pub const MODULE_NAME_LEN: usize = 64 - core::mem::size_of::<c_ulong>();

/// The room [`sprint`] needs: more than `KSYM_SYMBOL_LEN` (a macro bindgen
/// does not see: a name, two hex numbers, a module's name and its build
/// id, below 700 bytes).
pub const SYMBOL_LEN: usize = 1024;

/// Where [`lookup`] writes a symbol's name and its module's.
pub struct SymbolBuf {
    name: [u8; NAME_LEN],
    module: [u8; MODULE_NAME_LEN],
}

impl SymbolBuf {
    /// An empty buffer.
    pub const fn new() -> Self {
        SymbolBuf {
            name: [0; NAME_LEN],
            module: [0; MODULE_NAME_LEN],
        }
    }
}

impl Default for SymbolBuf {
    fn default() -> Self {
        Self::new()
    }
}

/// A symbol as [`lookup`] found it.
pub struct Symbol<'a> {
    /// Its name.
    pub name: &'a [u8],
    /// Its size in bytes.
    pub size: usize,
    /// The offset of the address asked about in it.
    pub offset: usize,
    /// The name of its module (none: the kernel's own).
    pub module: Option<&'a [u8]>,
}

/// The bytes of `b` before its first NUL (all of it without one).
fn until_nul(b: &[u8]) -> &[u8] {
    let n = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    &b[..n]
}

/// The symbol at `addr`, its names written into `buf`.
pub fn lookup(addr: usize, buf: &mut SymbolBuf) -> Option<Symbol<'_>> {
    let (mut size, mut offset): (c_ulong, c_ulong) = (0, 0);
    let mut module: *mut c_char = ptr::null_mut();
    // A module's memory, its name included, is freed only after an RCU
    // grace period (`free_module()`): the section keeps the name to copy.
    let rcu = crate::sync::rcu::read_lock();
    // SAFETY: `buf.name` has the `KSYM_NAME_LEN` bytes kallsyms writes; the
    // outputs are this frame's.
    let r = unsafe {
        bindings::kallsyms_lookup(
            addr as c_ulong,
            &mut size,
            &mut offset,
            &mut module,
            buf.name.as_mut_ptr().cast(),
        )
    };
    if !module.is_null() {
        for (i, b) in buf.module.iter_mut().enumerate().take(MODULE_NAME_LEN - 1) {
            // SAFETY: a module's NUL-terminated name, of at most
            // `MODULE_NAME_LEN` bytes, which the read side keeps; read up
            // to its NUL.
            *b = unsafe { *module.cast::<u8>().add(i) };
            if *b == 0 {
                break;
            }
        }
    }
    drop(rcu);
    let found = !r.is_null();
    found.then(|| Symbol {
        name: until_nul(&buf.name),
        size,
        offset,
        module: (!module.is_null()).then(|| until_nul(&buf.module)),
    })
}

/// The size of the symbol at `addr` and the offset of `addr` in it.
pub fn size_offset(addr: usize) -> Option<(usize, usize)> {
    let (mut size, mut offset): (c_ulong, c_ulong) = (0, 0);
    // SAFETY: the outputs are this frame's.
    let r = unsafe { bindings::kallsyms_lookup_size_offset(addr as c_ulong, &mut size, &mut offset) };
    (r != 0).then_some((size, offset))
}

/// The address of the symbol `name` (`module:name` names one of that
/// module's), loaded modules included.
pub fn address_of(name: &CStr) -> Option<usize> {
    // SAFETY: a NUL-terminated name, read for the call.
    let a = unsafe { bindings::kallsyms_lookup_name(name.as_char_ptr()) };
    (a != 0).then_some(a as usize)
}

/// `%ps` of `addr` (`%pS`, with its offset and size, if `offset`), written
/// into `buf`.
pub fn sprint(buf: &mut [u8; SYMBOL_LEN], addr: usize, offset: bool) -> &[u8] {
    let p = buf.as_mut_ptr().cast::<c_char>();
    // SAFETY: `buf` has room for `KSYM_SYMBOL_LEN` bytes (`SYMBOL_LEN`).
    let n = unsafe {
        if offset {
            bindings::sprint_symbol(p, addr as c_ulong)
        } else {
            bindings::sprint_symbol_no_offset(p, addr as c_ulong)
        }
    };
    &buf[..(n.max(0) as usize).min(SYMBOL_LEN)]
}
