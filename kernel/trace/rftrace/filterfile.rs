// SPDX-License-Identifier: GPL-2.0

//! The tracefs filter files: set_ftrace_filter and set_ftrace_notrace of
//! each trace array, and stack_trace_filter through `ftrace_regex_open()`;
//! a file edits a private copy of the set and commits it at close, with
//! the C core's semantics (Documentation/design/filter-files.md).

use crate::filter::{commit, match_records};
use crate::hash::FnSet;
use crate::logic::parser::{Parser, Token};
use crate::ops::{self, Ops, OpsRef};
use crate::sys::{dead, global_ops, CGlobal, CMutex, CoreGuard, TrOpen, TraceArray};
use crate::tracefs::{self, copy_chunk, write_token, Lines, Out, SeqFile};
use crate::{probe, table};
use core::ptr;
use kernel::bindings;
use kernel::c_str;
use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;

/// Serializes the token processing of all filter files.
pub(crate) static PARSER_LOCK: CMutex = CMutex::new();

/// Initialises the lock of the filter files (boot).
pub(crate) fn init_locks() {
    crate::sys::cmutex_init!(PARSER_LOCK, "ftrace_parser_lock");
}

const FLAG_FILTER: c_int = bindings::FTRACE_ITER_FILTER as c_int;
const FLAG_NOTRACE: c_int = bindings::FTRACE_ITER_NOTRACE as c_int;
const FLAG_PROBES: c_int = bindings::FTRACE_ITER_DO_PROBES as c_int;

// --- the filter files ----------------------------------------------------

/// The state of one open filter file.
struct RegexFile {
    lines: Lines,
    ops: OpsRef<'static>,
    /// The trace array (none: the file of an ops without one), referenced
    /// until release.
    tr: TrOpen,
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

impl RegexFile {
    /// The state of a filter file of trace array `tr` (null: the one of
    /// `ops`, or of `global_ops`) and ops `ops` (null: the trace
    /// array's), opened with `mode`/`fflags` and the `FTRACE_ITER_*`
    /// flags in `flag`.
    ///
    /// # Safety
    ///
    /// `tr` and `ops` are null or valid; an ops given lives while the
    /// file is open (the caller's; a trace array's ops lives with it).
    unsafe fn open(
        tr: *mut c_void,
        ops: *mut Ops,
        flag: c_int,
        mode: u32,
        fflags: u32,
    ) -> Result<RegexFile> {
        if dead() {
            return Err(ENODEV);
        }
        // SAFETY: per the function's contract; the ops named, or the
        // trace array's, outlives the open file, which is all the
        // `'static` is used for.
        let (tr, ops) = unsafe {
            let ops = match (tr.is_null(), ops.is_null()) {
                (_, false) => Some(OpsRef::from_raw(ops)),
                (true, true) => Some(OpsRef::of_static(&global_ops)),
                (false, true) => None,
            };
            let tr = match ops {
                Some(o) if tr.is_null() => o.private(),
                _ => tr,
            };
            (TrOpen::get(tr).map_err(|_| ENODEV)?, ops)
        };
        let ops = match ops {
            Some(o) => o,
            None => tr.tr().and_then(TraceArray::ops_ref).ok_or(ENODEV)?,
        };
        let notrace = flag & FLAG_NOTRACE != 0;
        let write = mode & FMODE_WRITE != 0;
        let hash = {
            let regex = ops.lock_regex();
            let (f, n) = regex.sets();
            if write && fflags & bindings::O_TRUNC != 0 {
                if let Some(tr) = tr.tr() {
                    let g = CoreGuard::lock();
                    probe::clear_mod_list(g.held(), tr, notrace);
                }
                FnSet::new()
            } else {
                FnSet::copy_of(if notrace { n } else { f })
            }
        }?;
        Ok(RegexFile {
            lines: Lines::new(),
            ops,
            tr,
            notrace,
            probes: flag & FLAG_PROBES != 0,
            write,
            hash,
            parser: Parser::new(),
            oom: false,
        })
    }
}

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
    // SAFETY: per the function's contract: the VFS's file; the state is
    // the file's until release, which takes it back; on a successful
    // `seq_open()` `private_data` is the seq_file, whose `private` holds
    // the state.
    unsafe {
        let (mode, fflags) = ((*file).f_mode, (*file).f_flags);
        let f = match RegexFile::open(tr, ops, flag, mode, fflags) {
            Ok(f) => f,
            Err(e) => return e.to_errno(),
        };
        let raw = match KBox::new(f, GFP_KERNEL) {
            Ok(b) => KBox::into_raw(b),
            Err(_) => return ENOMEM.to_errno(),
        };
        if mode & FMODE_READ != 0 {
            let r = bindings::seq_open(file, REGEX_SOPS.get());
            if r != 0 {
                drop(KBox::from_raw(raw));
                return r;
            }
            (*(*file).private_data.cast::<bindings::seq_file>()).private = raw.cast();
        } else {
            (*file).private_data = raw.cast();
        }
    }
    0
}

/// The state of an open filter file.
///
/// # Safety
///
/// `file` was opened by [`ftrace_regex_open`] and is not released; the
/// VFS serializes the calls that use it.
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

/// The state of a filter file's seq_file.
///
/// # Safety
///
/// `m` is the seq_file of a filter file opened by [`ftrace_regex_open`],
/// not released; seq_file serializes its callbacks.
unsafe fn seq_state<'a>(m: *mut bindings::seq_file) -> &'a mut RegexFile {
    // SAFETY: per the function's contract.
    unsafe { &mut *(*m).private.cast::<RegexFile>() }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn rx_start(
    m: *mut bindings::seq_file,
    pos: *mut bindings::loff_t,
) -> *mut c_void {
    // SAFETY: our seq_file and its position.
    let (f, p) = unsafe { (seq_state(m), *pos) };
    let (h, notrace, probes, tr) = (&f.hash, f.notrace, f.probes, f.tr.tr());
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
        seq_state(m).lines.at(*pos)
    }
}

/// Nothing to undo: the text is the open file's.
extern "C" fn rx_stop(_m: *mut bindings::seq_file, _v: *mut c_void) {}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn rx_show(m: *mut bindings::seq_file, v: *mut c_void) -> c_int {
    // SAFETY: as above; `v` came from `rx_start`/`rx_next`.
    unsafe { seq_state(m).lines.show(SeqFile::from_raw(m), v) };
    0
}

static REGEX_SOPS: CGlobal<bindings::seq_operations> = CGlobal::new(bindings::seq_operations {
    start: Some(rx_start),
    next: Some(rx_next),
    stop: Some(rx_stop),
    show: Some(rx_show),
});

/// Processes one complete token of a filter file of trace array `tr`.
fn process(h: &mut FnSet, tr: Option<TraceArray>, notrace: bool, tok: &[u8]) -> Result {
    let t = Token::split(tok);
    let Some(cmd) = t.command else {
        return match match_records(h, t.func, None)? {
            true => Ok(()),
            false => Err(EINVAL),
        };
    };
    if cmd == b"mod" {
        return probe::mod_command(tr, h, t.func, t.param, !notrace);
    }
    probe::run_command(tr, h, tok, !notrace)
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
    // SAFETY: per the function's contract: the file's state and position.
    let (f, pos) = unsafe { (regex_file(file), &mut *ppos) };
    let chunk = copy_chunk(ubuf, cnt);
    let (h, tr, notrace) = (&mut f.hash, f.tr.tr(), f.notrace);
    let _p = PARSER_LOCK.lock();
    let r = write_token(&mut f.parser, chunk, pos, |tok| {
        process(h, tr, notrace, tok)
    });
    if r == ENOMEM.to_errno() as isize {
        f.oom = true;
    }
    r
}

fn render_filter(o: &mut Out, h: &FnSet, notrace: bool, probes: bool, tr: Option<TraceArray>) {
    let g = CoreGuard::lock();
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
        probe::render_mods(g.held(), o, tr, notrace);
        if probes {
            crate::funcprobe::render_probes(g.held(), o, tr);
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
        let _p = PARSER_LOCK.lock();
        if f.parser.loaded() {
            let st = &mut *f;
            // The result is ignored, as in C, but for a want of memory
            // (see `oom`).
            let r = process(&mut st.hash, st.tr.tr(), st.notrace, st.parser.token());
            f.oom |= r == Err(ENOMEM);
        }
    }
    if f.write && f.oom {
        pr_warn!("out of memory while editing a filter; it is left unchanged\n");
    } else if f.write {
        let _r = f.ops.lock_regex();
        let g = CoreGuard::lock();
        if let (false, Some(tr)) = (f.notrace, f.tr.tr()) {
            let mods = probe::has_mods(g.held(), tr, false);
            f.hash.set_mod(mods);
        }
        // The result is ignored, as in C.
        let _ = commit(g.held(), f.ops, f.notrace, &f.hash);
    }
    // The trace array's reference goes with `f`.
    0
}

/// Opens a filter file with the `FTRACE_ITER_*` flags `FLAG`.
///
/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn regex_open<const FLAG: c_int>(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: the VFS's inode, whose data is the trace array (null at the
    // top level, see `create_files`), and file.
    unsafe { ftrace_regex_open((*inode).i_private, ptr::null_mut(), FLAG, inode, file) }
}

/// The file operations of a filter file with the flags `FLAG`.
const fn regex_fops<const FLAG: c_int>() -> bindings::file_operations {
    bindings::file_operations {
        open: Some(regex_open::<FLAG>),
        read: Some(bindings::seq_read),
        write: Some(ftrace_filter_write),
        llseek: Some(crate::ffi::tracing_lseek),
        release: Some(ftrace_regex_release),
        ..tracefs::zeroed_fops()
    }
}

static FILTER_FOPS: CGlobal<bindings::file_operations> =
    CGlobal::new(regex_fops::<{ FLAG_FILTER | FLAG_PROBES }>());
static NOTRACE_FOPS: CGlobal<bindings::file_operations> =
    CGlobal::new(regex_fops::<FLAG_NOTRACE>());
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
#[no_mangle]
pub extern "C" fn ftrace_destroy_filter_files(ops: OpsRef<'_>) {
    let g = CoreGuard::lock();
    ops.init(g.held());
    if ops.has(ops::F_ENABLED) {
        let _ = ops::shutdown(g.held(), ops);
    }
    ops.set(ops::F_DELETED);
    drop(ops.swap_set(g.held(), false, None));
    drop(ops.swap_set(g.held(), true, None));
}
