// SPDX-License-Identifier: GPL-2.0

//! set_graph_function and set_graph_notrace: the function graph filter
//! sets (`ftrace_graph_hash`, `ftrace_graph_notrace_hash`), edited as a
//! private copy and committed at close.

use crate::filterfile::{copy_chunk, write_token, FMODE_WRITE, PARSER_LOCK};
use crate::hash::{self, FtraceHash};
use crate::logic::glob::{Kind, Pattern};
use crate::logic::parser::Parser;
use crate::logic::sites::flags as sf;
use crate::sys::{dead, CGlobal, Guard};
use crate::table;
use crate::tracefs::{self, Text};
use core::ptr;
use core::sync::atomic::Ordering;
use kernel::bindings;
use kernel::c_str;
use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;

/// Serializes the graph filter files' commits.
static GRAPH_LOCK: CGlobal<bindings::mutex> = CGlobal::new(
    // SAFETY: initialised by `init_locks()` at boot.
    unsafe { core::mem::zeroed() },
);

/// # Safety
///
/// Early boot, once.
pub(crate) unsafe fn init_locks() {
    // SAFETY: per the function's contract.
    unsafe { crate::sys::mutex_init!(GRAPH_LOCK.get(), "ftrace_graph_lock") };
}

struct GraphFile {
    text: Text,
    notrace: bool,
    /// The set being edited, for a writer.
    hash: *mut FtraceHash,
    parser: Parser,
}

fn graph_slot(notrace: bool) -> &'static core::sync::atomic::AtomicPtr<FtraceHash> {
    if notrace {
        &crate::sys::ftrace_graph_notrace_hash
    } else {
        &crate::sys::ftrace_graph_hash
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn graph_open(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    if dead() {
        return ENODEV.to_errno();
    }
    // SAFETY: the VFS's inode and file; the inode data says which set.
    let (notrace, mode, fflags) = unsafe {
        (
            !(*inode).i_private.is_null(),
            (*file).f_mode,
            (*file).f_flags,
        )
    };
    let mut h = ptr::null_mut();
    if mode & FMODE_WRITE != 0 {
        let _g = Guard::of(GRAPH_LOCK.get());
        h = if fflags & bindings::O_TRUNC != 0 {
            hash::alloc(hash::DEFAULT_BITS)
        } else {
            // SAFETY: the live set, stable under the graph lock.
            unsafe {
                hash::copy(
                    graph_slot(notrace).load(Ordering::Acquire),
                    hash::DEFAULT_BITS,
                )
            }
        };
        if h.is_null() {
            return ENOMEM.to_errno();
        }
    }
    let g = GraphFile {
        text: Text { out: None },
        notrace,
        hash: h,
        parser: Parser::new(),
    };
    let Ok(b) = KBox::new(g, GFP_KERNEL) else {
        // SAFETY: private.
        unsafe { hash::free(h) };
        return ENOMEM.to_errno();
    };
    // SAFETY: the VFS's file.
    unsafe { (*file).private_data = KBox::into_raw(b).cast() };
    0
}

/// A token of a graph file: a pattern, `!` to remove; no index, no
/// command, no module. Fails unless some function was added or removed.
///
/// # Safety
///
/// `h` is a private set.
unsafe fn graph_token(h: *mut FtraceHash, tok: &[u8]) -> Result {
    let pat = Pattern::parse(tok);
    if pat.kind == Kind::Index {
        return Err(EINVAL);
    }
    let _g = Guard::lock();
    if dead() {
        return Err(ENODEV);
    }
    let mut done = false;
    let mut buf = [0u8; bindings::KSYM_NAME_LEN as usize];
    for c in table::all() {
        // SAFETY: `ftrace_lock` is held.
        let s = unsafe { c.read() };
        if s.has(sf::DISABLED) {
            continue;
        }
        match tracefs::lookup(s.ip, &mut buf) {
            Some(sym) if sym.is_entry() && pat.matches(sym.name) => {}
            _ => continue,
        }
        // SAFETY: per the function's contract.
        unsafe {
            if pat.negated {
                done |= hash::remove(h, s.ip);
            } else {
                if !hash::add(h, s.ip) {
                    return Err(ENOMEM);
                }
                done = true;
            }
        }
    }
    if done {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn graph_write(
    file: *mut bindings::file,
    ubuf: *const c_char,
    cnt: usize,
    ppos: *mut bindings::loff_t,
) -> isize {
    if cnt == 0 {
        return 0;
    }
    if dead() {
        return ENODEV.to_errno() as isize;
    }
    // SAFETY: set by `graph_open`, valid until release.
    let g = unsafe { &mut *(*file).private_data.cast::<GraphFile>() };
    if g.hash.is_null() {
        return EINVAL.to_errno() as isize;
    }
    let h = g.hash;
    // SAFETY: per the VFS contract.
    let chunk = unsafe { copy_chunk(ubuf, cnt) };
    let _p = Guard::of(PARSER_LOCK.get());
    // SAFETY: per the VFS contract; `h` is the file's private set.
    unsafe { write_token(&mut g.parser, chunk, ppos, |tok| graph_token(h, tok)) }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn graph_read(
    file: *mut bindings::file,
    ubuf: *mut c_char,
    cnt: usize,
    ppos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: set by `graph_open`, valid until release.
    let g = unsafe { &mut *(*file).private_data.cast::<GraphFile>() };
    let notrace = g.notrace;
    // SAFETY: per the VFS contract.
    unsafe {
        tracefs::serve(&mut g.text, ubuf, cnt, ppos, |o| {
            let _l = Guard::of(GRAPH_LOCK.get());
            let h = graph_slot(notrace).load(Ordering::Acquire);
            if hash::is_empty(h) {
                if !notrace {
                    o.bytes(b"#### all functions enabled ####\n");
                }
                return;
            }
            hash::for_each(h, |e| {
                o.sym((*e).ip as u64, false);
                o.bytes(b"\n");
            });
        })
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn graph_release(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: made by `graph_open`; this is its last use.
    let mut g = unsafe { KBox::from_raw((*file).private_data.cast::<GraphFile>()) };
    if g.hash.is_null() {
        return 0;
    }
    {
        let _p = Guard::of(PARSER_LOCK.get());
        if g.parser.loaded() {
            // SAFETY: the file's private set; the result is ignored.
            let _ = unsafe { graph_token(g.hash, g.parser.token()) };
        }
    }
    let _l = Guard::of(GRAPH_LOCK.get());
    // SAFETY: the file's private set.
    if let Ok(new) = unsafe { hash::for_commit(g.hash) } {
        let old = graph_slot(g.notrace).swap(new, Ordering::AcqRel);
        // SAFETY: unpublished; readers are preempt-disabled sections.
        unsafe { hash::free_rcu(old) };
    }
    // SAFETY: private.
    unsafe { hash::free(g.hash) };
    g.hash = ptr::null_mut();
    0
}

static GRAPH_FOPS: CGlobal<bindings::file_operations> = CGlobal::new(bindings::file_operations {
    open: Some(graph_open),
    read: Some(graph_read),
    write: Some(graph_write),
    llseek: Some(bindings::default_llseek),
    release: Some(graph_release),
    ..tracefs::zeroed_fops()
});

/// set_graph_function and set_graph_notrace.
pub(crate) fn create_graph_files(parent: *mut bindings::dentry) {
    tracefs::create(
        c_str!("set_graph_function"),
        0o640,
        parent,
        ptr::null_mut(),
        GRAPH_FOPS.get(),
    );
    tracefs::create(
        c_str!("set_graph_notrace"),
        0o640,
        parent,
        1usize as *mut c_void,
        GRAPH_FOPS.get(),
    );
}
