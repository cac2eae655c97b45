// SPDX-License-Identifier: GPL-2.0

//! The tracefs filter files: set_ftrace_filter and set_ftrace_notrace of
//! each trace array, and stack_trace_filter through `ftrace_regex_open()`;
//! a file edits a private copy of the set and commits it at close, with
//! the C core's semantics (Documentation/design/filter-files.md).

use crate::base::ffi::tracing_lseek;
use crate::base::sys::{dead, global_ops, CMutex, CoreGuard, TraceArray};
use crate::base::tracefs::{self, copy_chunk, write_token, Lines, Out};
use crate::base::trarray::TrOpen;
use crate::filter::api::{commit, match_records};
use crate::logic::explain::Why;
use crate::logic::parser::{Parser, Token};
use crate::ops::registry::OpsRef;
use crate::sites::hash::FnSet;
use crate::{filter::probe, sites::errlog, sites::table};
use kernel::bindings;
use kernel::c_str;
use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;
use kernel::seq_file::{SeqFile, SeqText};
use kernel::tracefs::{seq_fops, Dir, Fops, OpenMode, SeqOpen};

/// Serializes the token processing of all filter files.
pub(crate) static PARSER_LOCK: CMutex = CMutex::new();

/// Initialises the lock of the filter files (boot).
pub(crate) fn init_locks() {
    crate::base::sys::cmutex_init!(PARSER_LOCK, "ftrace_parser_lock");
}

const FLAG_FILTER: c_int = bindings::FTRACE_ITER_FILTER as c_int;
const FLAG_NOTRACE: c_int = bindings::FTRACE_ITER_NOTRACE as c_int;
const FLAG_PROBES: c_int = bindings::FTRACE_ITER_DO_PROBES as c_int;

// --- the filter files ----------------------------------------------------

/// The state of one open filter file.
pub(crate) struct RegexFile {
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

impl RegexFile {
    /// The state of a filter file of trace array `tr` (none: the one of
    /// `ops`, or of `global_ops`) and ops `ops` (none: the trace
    /// array's), opened with `mode` and the `FTRACE_ITER_*` flags in
    /// `flag`. An ops given lives while the file is open (the caller's; a
    /// trace array's ops lives with it), which is all its `'static` is
    /// used for.
    pub(crate) fn open(
        tr: Option<TraceArray>,
        ops: Option<OpsRef<'static>>,
        flag: c_int,
        mode: OpenMode,
    ) -> Result<RegexFile> {
        if dead() {
            return Err(ENODEV);
        }
        let ops = match (tr, ops) {
            (_, Some(o)) => Some(o),
            (None, None) => Some(OpsRef::of_static(&global_ops)),
            (Some(_), None) => None,
        };
        let tr = match ops {
            Some(o) if tr.is_none() => o.trace_array(),
            _ => tr,
        };
        let tr = TrOpen::get(tr).map_err(|_| ENODEV)?;
        let ops = match ops {
            Some(o) => o,
            None => tr.tr().and_then(TraceArray::ops_ref).ok_or(ENODEV)?,
        };
        let notrace = flag & FLAG_NOTRACE != 0;
        let write = mode.write;
        let hash = {
            let regex = ops.lock_regex();
            let (f, n) = regex.sets();
            if write && mode.trunc {
                if let Some(tr) = tr.tr() {
                    let mut g = CoreGuard::lock();
                    probe::clear_mod_list(g.parts().1, tr, notrace);
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

impl SeqText for RegexFile {
    const SEQ_FOR_READERS_ONLY: bool = true;

    fn start(&mut self, _m: &SeqFile, pos: &mut bindings::loff_t) -> *mut c_void {
        let (h, notrace, probes, tr) = (&self.hash, self.notrace, self.probes, self.tr.tr());
        self.lines
            .start(*pos, |o| render_filter(o, h, notrace, probes, tr))
    }

    fn next(&mut self, _m: &SeqFile, _v: *mut c_void, pos: &mut bindings::loff_t) -> *mut c_void {
        *pos = pos.wrapping_add(1);
        self.lines.at(*pos)
    }

    fn show(&mut self, m: &SeqFile, v: *mut c_void) -> c_int {
        self.lines.show(m, v);
        0
    }

    /// At most one token per call.
    fn write(&mut self, ubuf: *const c_char, cnt: usize, pos: &mut bindings::loff_t) -> isize {
        if dead() {
            return ENODEV.to_errno() as isize;
        }
        let chunk = copy_chunk(ubuf, cnt);
        // No lock held: the first filter finds the kernel's site names.
        crate::sites::names::prepare();
        let (h, tr, notrace) = (&mut self.hash, self.tr.tr(), self.notrace);
        let _p = PARSER_LOCK.lock();
        let r = write_token(&mut self.parser, chunk, pos, |tok| {
            process(h, tr, notrace, tok)
        });
        if r == ENOMEM.to_errno() as isize {
            self.oom = true;
        }
        r
    }

    /// Processes a pending token, then commits the edited set (as the C
    /// core does, unless memory ran out on the way).
    fn release(mut self) {
        {
            let _p = PARSER_LOCK.lock();
            if self.parser.loaded() {
                // The result is ignored, as in C, but for a want of memory
                // (see `oom`).
                let r = process(
                    &mut self.hash,
                    self.tr.tr(),
                    self.notrace,
                    self.parser.token(),
                );
                self.oom |= r == Err(ENOMEM);
            }
        }
        if self.write && self.oom {
            pr_warn!("out of memory while editing a filter; it is left unchanged\n");
        } else if self.write {
            let _r = self.ops.lock_regex();
            let mut g = CoreGuard::lock();
            let (held, key) = g.parts();
            if let (false, Some(tr)) = (self.notrace, self.tr.tr()) {
                let mods = probe::has_mods(key, tr, false);
                self.hash.set_mod(mods);
            }
            // The result is ignored, as in C.
            let _ = commit(held, key, self.ops, self.notrace, self.hash);
        }
        // The trace array's reference goes with `self`.
    }
}

/// Processes one complete token of a filter file of trace array `tr`; a
/// token that selects nothing gets its reason in the error_log.
fn process(h: &mut FnSet, tr: Option<TraceArray>, notrace: bool, tok: &[u8]) -> Result {
    let t = Token::split(tok);
    let r = match t.command {
        None => match match_records(h, t.func, None) {
            Ok(true) => Ok(()),
            Ok(false) => Err(EINVAL),
            Err(e) => Err(e),
        },
        Some(b"mod") => probe::mod_command(tr, h, t.func, t.param, !notrace),
        Some(_) => probe::run_command(tr, h, tok, !notrace),
    };
    if r == Err(EINVAL) {
        if let Some((why, at)) = reason(&t) {
            errlog::log(tr, tok, why, at);
        }
    }
    r
}

/// Why token `t` failed with `EINVAL`, when that is known.
fn reason(t: &Token<'_>) -> Option<(Why, usize)> {
    match t.command {
        None => errlog::explain_func(t.func),
        Some(b"mod") => t
            .param
            .filter(|m| probe::module_loaded(m))
            .map(|_| (Why::NoModMatch, 0)),
        Some(c) if !probe::command_exists(c) => Some((Why::UnknownCommand, t.func.len() + 1)),
        // A registered command failed: say why only when the function
        // name is the cause (its parameter may be).
        Some(_) => errlog::explain_func(t.func).filter(|(w, _)| {
            matches!(
                w,
                Why::NoSymbol | Why::NoSite | Why::Unrecorded | Why::FreedInit
            )
        }),
    }
}

fn render_filter(o: &mut Out, h: &FnSet, notrace: bool, probes: bool, tr: Option<TraceArray>) {
    let mut g = CoreGuard::lock();
    let (held, key) = g.parts();
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
        probe::render_mods(key, o, tr, notrace);
        if probes {
            crate::filter::funcprobe::render_probes(held, key, o, tr);
        }
    }
}

/// How the filter files with the `FTRACE_ITER_*` flags `FLAG` open.
struct RegexOpen<const FLAG: c_int>;

impl<const FLAG: c_int> SeqOpen for RegexOpen<FLAG> {
    /// The file's trace array (none: the top level's, `global_ops`).
    type Data = Option<TraceArray>;
    type State = RegexFile;

    fn open(tr: Option<TraceArray>, mode: OpenMode) -> Result<RegexFile> {
        RegexFile::open(tr, None, FLAG, mode)
    }
}

static FILTER_FOPS: Fops<Option<TraceArray>> =
    seq_fops::<RegexOpen<{ FLAG_FILTER | FLAG_PROBES }>>(tracing_lseek);
static NOTRACE_FOPS: Fops<Option<TraceArray>> = seq_fops::<RegexOpen<FLAG_NOTRACE>>(tracing_lseek);

/// set_ftrace_filter and set_ftrace_notrace of trace array `tr` (none:
/// the top level's `global_ops`) in `parent`.
pub(crate) fn ftrace_create_filter_files(tr: Option<TraceArray>, parent: Dir) {
    tracefs::create(c_str!("set_ftrace_filter"), 0o640, parent, tr, &FILTER_FOPS);
    tracefs::create(
        c_str!("set_ftrace_notrace"),
        0o640,
        parent,
        tr,
        &NOTRACE_FOPS,
    );
}

/// An instance's function tracer goes: its ops is stopped and marked
/// deleted, its sets freed (the files go with their directory).
pub(crate) fn ftrace_destroy_filter_files(ops: OpsRef<'_>) {
    let mut g = CoreGuard::lock();
    let (held, key) = g.parts();
    ops.init(held);
    if ops.has(crate::ops::registry::F_ENABLED) {
        let _ = crate::ops::register::shutdown(held, key, ops);
    }
    ops.set(crate::ops::registry::F_DELETED);
    drop(ops.swap_set(held, false, None));
    drop(ops.swap_set(held, true, None));
}
