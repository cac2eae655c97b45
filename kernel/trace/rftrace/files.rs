// SPDX-License-Identifier: GPL-2.0

//! The read-only tracefs files of the core: available_filter_functions,
//! available_filter_functions_addrs, enabled_functions,
//! touched_functions.

use crate::logic::sites::flags as sf;
use crate::ops;
use crate::sys::{dead, CGlobal, Guard};
use crate::table;
use crate::tracefs::{create, serve, zeroed_fops, Out, Text};
use core::fmt::Write;
use kernel::bindings;
use kernel::c_str;
use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;

/// What a read-only file of ours lists.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Avail,
    AvailAddrs,
    Enabled,
    Touched,
}

fn render(kind: Kind, o: &mut Out) {
    let _g = Guard::lock();
    if dead() {
        return;
    }
    for c in table::all() {
        // SAFETY: `ftrace_lock` is held.
        let s = unsafe { c.read() };
        match kind {
            Kind::Enabled if !s.has(sf::ENABLED) => continue,
            Kind::Touched if !s.has(sf::TOUCHED) => continue,
            _ => {}
        }
        if kind == Kind::AvailAddrs {
            let _ = write!(o, "{:x} ", s.ip);
        }
        let valid = o.rec(s.ip);
        if valid && matches!(kind, Kind::Enabled | Kind::Touched) {
            let f = |b, t: &'static str, e: &'static str| if s.has(b) { t } else { e };
            let _ = write!(
                o,
                " ({}){}{}{}  {}",
                s.refs,
                f(sf::REGS, " R", "  "),
                f(sf::IPMODIFY, " I", "  "),
                f(sf::DIRECT, " D", "  "),
                f(sf::MODIFIED, " M ", "   ")
            );
            if s.has(sf::DIRECT_OPS) {
                ops::describe_tramp(o, s.ip);
            } else if s.has(sf::ENABLED) {
                o.bytes(b" ->");
                o.sym(ops::arch_ftrace_ops_list_func as *const () as u64, true);
            }
        }
        o.bytes(b"\n");
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn ro_open(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: the VFS passes a live inode and file.
    let kind = unsafe { (*inode).i_private } as usize;
    if matches!(kind, 0 | 1) && dead() {
        return ENODEV.to_errno();
    }
    let Ok(t) = KBox::new(Text { out: None }, GFP_KERNEL) else {
        return ENOMEM.to_errno();
    };
    // SAFETY: as above.
    unsafe { (*file).private_data = KBox::into_raw(t).cast() };
    0
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn ro_read(
    file: *mut bindings::file,
    ubuf: *mut c_char,
    cnt: usize,
    ppos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: set by `ro_open`, freed by `ro_release`; the VFS serializes
    // reads of one file position.
    let (t, kind) = unsafe {
        (
            &mut *(*file).private_data.cast::<Text>(),
            (*(*file).f_inode).i_private as usize,
        )
    };
    let kind = match kind {
        0 => Kind::Avail,
        1 => Kind::AvailAddrs,
        2 => Kind::Enabled,
        _ => Kind::Touched,
    };
    // SAFETY: per the VFS contract.
    unsafe { serve(t, ubuf, cnt, ppos, |o| render(kind, o)) }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn ro_release(_inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: made by `ro_open`.
    drop(unsafe { KBox::from_raw((*file).private_data.cast::<Text>()) });
    0
}

static RO_FOPS: CGlobal<bindings::file_operations> = CGlobal::new(bindings::file_operations {
    open: Some(ro_open),
    read: Some(ro_read),
    llseek: Some(bindings::default_llseek),
    release: Some(ro_release),
    ..zeroed_fops()
});

/// Creates the listings in the top-level directory `d`.
pub(crate) fn create_listings(d: *mut bindings::dentry) {
    let names = [
        c_str!("available_filter_functions"),
        c_str!("available_filter_functions_addrs"),
        c_str!("enabled_functions"),
        c_str!("touched_functions"),
    ];
    for (i, n) in names.into_iter().enumerate() {
        create(n, 0o440, d, i as *mut c_void, RO_FOPS.get());
    }
}
