// SPDX-License-Identifier: GPL-2.0

//! The tracefs filter files: set_ftrace_filter and set_ftrace_notrace of
//! each trace array, and stack_trace_filter through `ftrace_regex_open()`;
//! a file edits a private copy of the set and commits it at close, with
//! the C core's semantics (Documentation/design/filter-files.md).

use crate::filter::{commit, match_records};
use crate::hash::{self, FnSet};
use crate::logic::parser::{Parser, Token};
use crate::ops::{self, Ops};
use crate::sys::{dead, global_ops, CGlobal, Guard, TraceArray};
use crate::tracefs::{self, copy_chunk, write_token, Lines, Out};
use crate::{probe, table};
use core::ptr;
use kernel::bindings;
use kernel::c_str;
use kernel::ffi::{c_char, c_int, c_ulong, c_void};
use kernel::prelude::*;

/// Serializes the token processing of all filter files.
pub(crate) static PARSER_LOCK: CGlobal<bindings::mutex> = CGlobal::new(
    // SAFETY: initialised by `init_locks()` at boot.
    unsafe { core::mem::zeroed() },
);

/// # Safety
///
/// Early boot, once.
pub(crate) unsafe fn init_locks() {
    // SAFETY: per the function's contract.
    unsafe { crate::sys::mutex_init!(PARSER_LOCK.get(), "ftrace_parser_lock") };
}

const FLAG_FILTER: c_int = bindings::FTRACE_ITER_FILTER as c_int;
const FLAG_NOTRACE: c_int = bindings::FTRACE_ITER_NOTRACE as c_int;
const FLAG_PROBES: c_int = bindings::FTRACE_ITER_DO_PROBES as c_int;

// --- the filter files ----------------------------------------------------

/// The state of one open filter file.
struct RegexFile {
    lines: Lines,
    ops: *mut Ops,
    /// The trace array (none: the file of an ops without one), referenced
    /// until release.
    tr: Option<TraceArray>,
    notrace: bool,
    probes: bool,
    write: bool,
    /// The set being edited (or, read-only, shown).
    hash: FnSet,
    parser: Parser,
    /// A token could not be entered for want of memory: the set may hold
    /// part of what was asked, so it is not committed (the C core commits
    /// it, and a filter that lost its only glob traces every function).
    oom: bool,
}

pub(crate) const FMODE_READ: u32 = 1;
pub(crate) const FMODE_WRITE: u32 = 2;

/// Opens a filter file of trace array `tr` (null: the one of `ops`, or of
/// `global_ops`) and ops `ops` (null: the trace array's), with the
/// `FTRACE_ITER_*` flags in `flag`.
///
/// # Safety
///
/// Called by the VFS (through a file's open) with a live inode and file;
/// `tr` and `ops` are null or valid.
#[no_mangle]
pub unsafe extern "C" fn ftrace_regex_open(
    tr: *mut c_void,
    ops: *mut Ops,
    flag: c_int,
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    if dead() {
        return ENODEV.to_errno();
    }
    let (mut tr, mut ops) = (tr, ops);
    if tr.is_null() {
        if ops.is_null() {
            ops = global_ops.get();
        }
        // SAFETY: `ops` is valid.
        tr = unsafe { (*ops).private };
    }
    // SAFETY: a trace array reference, dropped at release; a null one is
    // only checked for lockdown.
    if unsafe { crate::sys::tracing_check_open_get_tr(tr) } != 0 {
        return ENODEV.to_errno();
    }
    // SAFETY: null, or referenced just above until release.
    let tr = unsafe { TraceArray::from_raw(tr) };
    let put = || {
        if let Some(tr) = tr {
            // SAFETY: taken above.
            unsafe { crate::sys::trace_array_put(tr.as_ptr()) };
        }
    };
    if ops.is_null() {
        ops = tr.map_or(ptr::null_mut(), TraceArray::ops);
    }
    if ops.is_null() {
        put();
        return ENODEV.to_errno();
    }
    // SAFETY: `ops` is valid.
    unsafe { ops::ops_init_locked(ops) };
    // SAFETY: the VFS's file.
    let (mode, fflags) = unsafe { ((*file).f_mode, (*file).f_flags) };
    let notrace = flag & FLAG_NOTRACE != 0;
    let write = mode & FMODE_WRITE != 0;
    let read = mode & FMODE_READ != 0;
    let h = {
        // SAFETY: initialised above.
        let _r = Guard::of(unsafe { ptr::addr_of_mut!((*(*ops).func_hash).regex_lock) });
        // SAFETY: stable under the regex lock.
        let (f, n) = unsafe { ops::sets(ops) };
        let live = if notrace { n } else { f };
        if write && fflags & bindings::O_TRUNC != 0 {
            if let Some(tr) = tr {
                let _g = Guard::lock();
                // SAFETY: `ftrace_lock` held.
                unsafe { probe::clear_mod_list(tr, notrace) };
            }
            FnSet::new()
        } else {
            // SAFETY: a published set, stable under the regex lock.
            unsafe { FnSet::copy_of(live) }
        }
    };
    let Ok(h) = h else {
        put();
        return ENOMEM.to_errno();
    };
    let f = RegexFile {
        lines: Lines::new(),
        ops,
        tr,
        notrace,
        probes: flag & FLAG_PROBES != 0,
        write,
        hash: h,
        parser: Parser::new(),
        oom: false,
    };
    let Ok(b) = KBox::new(f, GFP_KERNEL) else {
        put();
        return ENOMEM.to_errno();
    };
    let raw = KBox::into_raw(b);
    if read {
        // SAFETY: the VFS's file; on success `private_data` is the
        // seq_file, whose `private` holds our state.
        let r = unsafe { bindings::seq_open(file, REGEX_SOPS.get()) };
        if r != 0 {
            // SAFETY: ours, not published.
            drop(unsafe { KBox::from_raw(raw) });
            put();
            return r;
        }
        // SAFETY: as above.
        unsafe { (*(*file).private_data.cast::<bindings::seq_file>()).private = raw.cast() };
    } else {
        // SAFETY: the VFS's file.
        unsafe { (*file).private_data = raw.cast() };
    }
    0
}

/// The state of an open filter file.
///
/// # Safety
///
/// `file` was opened by [`ftrace_regex_open`] and is not released.
unsafe fn regex_file<'a>(file: *mut bindings::file) -> &'a mut RegexFile {
    // SAFETY: per the function's contract: a seq_file for readers, our
    // state for write-only opens.
    unsafe {
        if (*file).f_mode & FMODE_READ != 0 {
            &mut *(*(*file).private_data.cast::<bindings::seq_file>())
                .private
                .cast::<RegexFile>()
        } else {
            &mut *(*file).private_data.cast::<RegexFile>()
        }
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn rx_start(
    m: *mut bindings::seq_file,
    pos: *mut bindings::loff_t,
) -> *mut c_void {
    // SAFETY: our seq_file; its private is the file state.
    let f = unsafe { &mut *(*m).private.cast::<RegexFile>() };
    let (h, notrace, probes, tr) = (&f.hash, f.notrace, f.probes, f.tr);
    // SAFETY: seq_file's position.
    let p = unsafe { *pos };
    f.lines
        .start(p, |o| render_filter(o, h, notrace, probes, tr))
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn rx_next(
    m: *mut bindings::seq_file,
    _v: *mut c_void,
    pos: *mut bindings::loff_t,
) -> *mut c_void {
    // SAFETY: as above.
    unsafe {
        *pos += 1;
        (*(*m).private.cast::<RegexFile>()).lines.at(*pos)
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn rx_stop(_m: *mut bindings::seq_file, _v: *mut c_void) {}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn rx_show(m: *mut bindings::seq_file, v: *mut c_void) -> c_int {
    // SAFETY: as above; `v` came from `rx_start`/`rx_next`.
    unsafe { (*(*m).private.cast::<RegexFile>()).lines.show(m, v) };
    0
}

static REGEX_SOPS: CGlobal<bindings::seq_operations> = CGlobal::new(bindings::seq_operations {
    start: Some(rx_start),
    next: Some(rx_next),
    stop: Some(rx_stop),
    show: Some(rx_show),
});

/// Processes one complete token of a filter file.
///
/// # Safety
///
/// `tr` is the open filter file's, referenced.
unsafe fn process(h: &mut FnSet, tr: Option<TraceArray>, notrace: bool, tok: &[u8]) -> Result {
    let t = Token::split(tok);
    let Some(cmd) = t.command else {
        return match match_records(h, t.func, None)? {
            true => Ok(()),
            false => Err(EINVAL),
        };
    };
    if cmd == b"mod" {
        // SAFETY: as above.
        return unsafe { probe::mod_command(tr, h, t.func, t.param, !notrace) };
    }
    // SAFETY: as above.
    unsafe { probe::run_command(tr, h, tok, !notrace) }
}

/// `write()` of a filter file: at most one token per call.
///
/// # Safety
///
/// Called by the VFS; `file` was opened by [`ftrace_regex_open`].
#[no_mangle]
pub unsafe extern "C" fn ftrace_filter_write(
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
    // SAFETY: per the function's contract: the file's state and position,
    // and a user buffer of `cnt` bytes.
    let (f, pos, chunk) = unsafe { (regex_file(file), &mut *ppos, copy_chunk(ubuf, cnt)) };
    let (h, tr, notrace) = (&mut f.hash, f.tr, f.notrace);
    let _p = Guard::of(PARSER_LOCK.get());
    let r = write_token(&mut f.parser, chunk, pos, |tok| {
        // SAFETY: `tr` is the file's trace array, referenced while open.
        unsafe { process(h, tr, notrace, tok) }
    });
    if r == ENOMEM.to_errno() as isize {
        f.oom = true;
    }
    r
}

fn render_filter(o: &mut Out, h: &FnSet, notrace: bool, probes: bool, tr: Option<TraceArray>) {
    let _g = Guard::lock();
    if dead() {
        return;
    }
    if h.is_empty() {
        o.bytes(if notrace {
            b"#### no functions disabled ####\n"
        } else {
            b"#### all functions enabled ####\n"
        });
    } else {
        for c in table::all() {
            if h.contains(c.ip()) {
                o.rec(c.ip());
                o.bytes(b"\n");
            }
        }
    }
    if let Some(tr) = tr {
        // SAFETY: `ftrace_lock` held.
        unsafe { probe::render_mods(o, tr, notrace) };
        if probes {
            // SAFETY: as above.
            unsafe { crate::funcprobe::render_probes(o, tr) };
        }
    }
}

/// Closes a filter file: processes a pending token, then commits the
/// edited set (as the C core does, unless memory ran out on the way).
///
/// # Safety
///
/// Called by the VFS; `file` was opened by [`ftrace_regex_open`].
#[no_mangle]
pub unsafe extern "C" fn ftrace_regex_release(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: made by `ftrace_regex_open`; this is its last use. A reader's
    // seq_file goes first.
    let mut f = unsafe {
        let raw: *mut RegexFile = regex_file(file);
        if (*file).f_mode & FMODE_READ != 0 {
            bindings::seq_release(inode, file);
        }
        KBox::from_raw(raw)
    };
    {
        let _p = Guard::of(PARSER_LOCK.get());
        if f.parser.loaded() {
            let st = &mut *f;
            // SAFETY: the file's state. The result is ignored, as in C,
            // but for a want of memory (see `oom`).
            let r = unsafe { process(&mut st.hash, st.tr, st.notrace, st.parser.token()) };
            f.oom |= r == Err(ENOMEM);
        }
    }
    if f.write && f.oom {
        pr_warn!("out of memory while editing a filter; it is left unchanged\n");
    } else if f.write {
        // SAFETY: the ops is initialised.
        let _r = Guard::of(unsafe { ptr::addr_of_mut!((*(*f.ops).func_hash).regex_lock) });
        let _g = Guard::lock();
        if let (false, Some(tr)) = (f.notrace, f.tr) {
            // SAFETY: `ftrace_lock` held.
            let mods = unsafe { probe::has_mods(tr, false) };
            f.hash.set_mod(mods);
        }
        // SAFETY: `ftrace_lock` held; the result is ignored, as in C.
        let _ = unsafe { commit(f.ops, f.notrace, &f.hash) };
    }
    if let Some(tr) = f.tr {
        // SAFETY: taken at open.
        unsafe { crate::sys::trace_array_put(tr.as_ptr()) };
    }
    0
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn filter_open(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: the VFS's inode; its data is the trace array (null at the
    // top level, see `create_files`).
    let tr = unsafe { (*inode).i_private };
    // SAFETY: per the VFS contract.
    unsafe { ftrace_regex_open(tr, ptr::null_mut(), FLAG_FILTER | FLAG_PROBES, inode, file) }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn notrace_open(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: as above.
    let tr = unsafe { (*inode).i_private };
    // SAFETY: per the VFS contract.
    unsafe { ftrace_regex_open(tr, ptr::null_mut(), FLAG_NOTRACE, inode, file) }
}

static FILTER_FOPS: CGlobal<bindings::file_operations> = CGlobal::new(bindings::file_operations {
    open: Some(filter_open),
    read: Some(bindings::seq_read),
    write: Some(ftrace_filter_write),
    llseek: Some(crate::sys::tracing_lseek),
    release: Some(ftrace_regex_release),
    ..tracefs::zeroed_fops()
});

static NOTRACE_FOPS: CGlobal<bindings::file_operations> = CGlobal::new(bindings::file_operations {
    open: Some(notrace_open),
    read: Some(bindings::seq_read),
    write: Some(ftrace_filter_write),
    llseek: Some(crate::sys::tracing_lseek),
    release: Some(ftrace_regex_release),
    ..tracefs::zeroed_fops()
});

/// set_ftrace_filter and set_ftrace_notrace of trace array `tr` (null:
/// the top level's `global_ops`) in `parent`.
pub(crate) fn create_files(tr: *mut c_void, parent: *mut bindings::dentry) {
    tracefs::create(
        c_str!("set_ftrace_filter"),
        0o640,
        parent,
        tr,
        FILTER_FOPS.get(),
    );
    tracefs::create(
        c_str!("set_ftrace_notrace"),
        0o640,
        parent,
        tr,
        NOTRACE_FOPS.get(),
    );
}

/// The filter files of an instance's function tracer.
///
/// # Safety
///
/// `tr` lives as long as the files.
#[no_mangle]
pub unsafe extern "C" fn ftrace_create_filter_files(
    tr: *mut c_void,
    parent: *mut bindings::dentry,
) {
    create_files(tr, parent);
}

/// An instance's function tracer goes: its ops is stopped and marked
/// deleted, its sets freed (the files go with their directory).
///
/// # Safety
///
/// `ops` is valid.
#[no_mangle]
pub unsafe extern "C" fn ftrace_destroy_filter_files(ops: *mut Ops) {
    let _g = Guard::lock();
    // SAFETY: per the function's contract.
    unsafe {
        ops::ops_init(ops);
        if crate::view::has(ops, ops::F_ENABLED) {
            let _ = ops::shutdown(ops);
        }
        crate::view::set(ops, bindings::FTRACE_OPS_FL_DELETED as c_ulong);
        hash::free_rcu(ops::set_hash(ops, false, ptr::null_mut()));
        hash::free_rcu(ops::set_hash(ops, true, ptr::null_mut()));
    }
}
