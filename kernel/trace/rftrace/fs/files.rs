// SPDX-License-Identifier: GPL-2.0

//! The read-only tracefs files of the core: available_filter_functions,
//! available_filter_functions_addrs, enabled_functions,
//! touched_functions.

use crate::base::sys::{dead, CoreGuard, Held};
use crate::base::tracefs::{create, Out};
use crate::ops::arch::CALL_OPS;
use crate::logic::sites::flags as sf;
use crate::sites::table::{self, Cell};
use core::fmt::Write;
use core::ptr;
use kernel::bindings;
use kernel::c_str;
use kernel::ffi::{c_int, c_void};
use kernel::prelude::*;
use kernel::seq_file::{SeqFile, SeqText};
use kernel::tracefs::{seq_fops, Dir, Fops, OpenMode, SeqOpen};

/// What a read-only file of ours lists.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Avail,
    AvailAddrs,
    Enabled,
    Touched,
}

/// Prints site `c` (read under the lock `held`) as listing `kind` shows
/// it, without the newline.
fn render_site(held: &Held, kind: Kind, c: &Cell, o: &mut Out) {
    let s = c.read(held);
    if kind == Kind::AvailAddrs {
        let _ = write!(o, "{:x} ", s.ip);
    }
    let valid = o.rec(s.ip);
    if valid && matches!(kind, Kind::Enabled | Kind::Touched) {
        let f = |b, t: &'static str, e: &'static str| if s.has(b) { t } else { e };
        // " D" for every site a direct ops has, as C's record flag: the
        // site calls the direct trampoline itself only when it is alone
        // there (`sf::DIRECT`), else through the full-regs trampoline.
        let direct = crate::ops::directmap::holder(held, s.ip);
        // " O": the site's ops literal names the one ops that wants it,
        // which the shared trampoline calls (the literal's own ops).
        // A group's literal names the group's ops: listed as C lists a
        // site of several ops, without.
        let call_ops = CALL_OPS && s.has(sf::DIRECT_OPS) && !s.has(sf::GROUP);
        let _ = write!(
            o,
            " ({}){}{}{}{}{}",
            s.refs,
            f(sf::REGS, " R", "  "),
            f(sf::IPMODIFY, " I", "  "),
            if direct.is_some() { " D" } else { "  " },
            if call_ops { " O" } else { "  " },
            f(sf::MODIFIED, " M ", "   ")
        );
        // A group's trampoline serves several ops: listed as the list
        // dispatcher, which C's site of several ops calls. With the
        // literal there is no per-ops trampoline and, as in C, no call
        // of the shared one is shown: the literal's ops is.
        if CALL_OPS {
            if call_ops {
                crate::ops::register::describe_ops(held, o, s.ip);
            }
        } else if s.has(sf::DIRECT_OPS) && !s.has(sf::GROUP) {
            crate::ops::register::describe_tramp(held, o, s.ip);
        } else if s.has(sf::ENABLED) {
            o.bytes(b" ->");
            o.sym(
                crate::ops::dispatch::arch_ftrace_ops_list_func as *const () as u64,
                true,
            );
        }
        if let Some(op) = direct {
            crate::ops::register::describe_direct(o, op);
        }
    }
}

/// Whether listing `kind` shows site `c`.
fn shows(held: &Held, kind: Kind, c: &Cell) -> bool {
    if c.is_gone() {
        return false;
    }
    match kind {
        Kind::Enabled => c.read(held).has(sf::ENABLED),
        Kind::Touched => c.read(held).has(sf::TOUCHED),
        Kind::Avail | Kind::AvailAddrs => true,
    }
}

/// A place in the table: group `0` (in table order), site `1` of it.
#[derive(Clone, Copy)]
struct At(usize, usize);

/// The first site at or after `at` that `kind` shows, under `held`.
fn seek<'h>(held: &'h Held, kind: Kind, at: At) -> Option<(At, &'h Cell)> {
    let At(mut g, mut i) = at;
    for grp in table::groups().skip(g) {
        while let Some(c) = grp.sites.get(i) {
            if shows(held, kind, c) {
                return Some((At(g, i), c));
            }
            i += 1;
        }
        g += 1;
        i = 0;
    }
    None
}

/// An open listing, served line by line through a seq_file: a read holds
/// `ftrace_lock` from its `start` to its `stop` and resumes where the
/// last one stopped (a read from elsewhere walks there first). No text
/// of the whole file is kept: one line at a time.
struct Listing {
    kind: Kind,
    locked: Option<CoreGuard>,
    /// The site at the position `.0`, for the next `start`.
    cursor: Option<(bindings::loff_t, At)>,
    /// The line being shown (its room kept from line to line).
    line: Out,
}

/// What `start` and `next` give the seq_file core for a line (the line
/// itself is the state's).
const LINE: *mut c_void = 1 as *mut c_void;

impl Listing {
    /// The site of position `pos`, remembered for the next call.
    fn at(&mut self, pos: bindings::loff_t) -> *mut c_void {
        let Some(g) = self.locked.as_ref() else {
            return ptr::null_mut();
        };
        let held = g.held();
        let found = match self.cursor {
            Some((p, at)) if p == pos => seek(held, self.kind, at),
            // Elsewhere: walk there from the start.
            _ => {
                let mut f = seek(held, self.kind, At(0, 0));
                let mut p = 0;
                while let (Some((At(g, i), _)), true) = (f, p < pos) {
                    f = seek(held, self.kind, At(g, i + 1));
                    p += 1;
                }
                f
            }
        };
        match found {
            Some((at, _)) => {
                self.cursor = Some((pos, at));
                LINE
            }
            None => {
                self.cursor = None;
                ptr::null_mut()
            }
        }
    }
}

impl SeqText for Listing {
    fn start(&mut self, _m: &SeqFile, pos: &mut bindings::loff_t) -> *mut c_void {
        // Released in `stop`, which seq_file calls after every `start`.
        self.locked = Some(CoreGuard::lock());
        if dead() {
            return ptr::null_mut();
        }
        self.at(*pos)
    }

    fn next(&mut self, _m: &SeqFile, _v: *mut c_void, pos: &mut bindings::loff_t) -> *mut c_void {
        let Some((p, At(g, i))) = self.cursor else {
            return ptr::null_mut();
        };
        *pos = pos.wrapping_add(1);
        // One past the site shown: the next `at` seeks from there.
        self.cursor = Some((p.wrapping_add(1), At(g, i + 1)));
        self.at(*pos)
    }

    fn stop(&mut self) {
        self.locked = None;
    }

    fn show(&mut self, m: &SeqFile, _v: *mut c_void) -> c_int {
        let (Some(g), Some((_, at))) = (self.locked.as_ref(), self.cursor) else {
            return 0;
        };
        let held = g.held();
        let Some((_, c)) = seek(held, self.kind, at) else {
            return 0;
        };
        self.line.clear();
        render_site(held, self.kind, c, &mut self.line);
        self.line.bytes(b"\n");
        if !self.line.ok() {
            return ENOMEM.to_errno();
        }
        m.write(&self.line.buf);
        0
    }
}

impl SeqOpen for Listing {
    /// Which listing, 0 to 3.
    type Data = usize;
    type State = Self;

    fn open(data: usize, _mode: OpenMode) -> Result<Self> {
        let kind = match data {
            0 => Kind::Avail,
            1 => Kind::AvailAddrs,
            2 => Kind::Enabled,
            _ => Kind::Touched,
        };
        if matches!(kind, Kind::Avail | Kind::AvailAddrs) && dead() {
            return Err(ENODEV);
        }
        // No lock held: the first listing finds the kernel's site names.
        crate::sites::names::prepare();
        Ok(Listing {
            kind,
            locked: None,
            cursor: None,
            line: Out::new(),
        })
    }
}

static RO_FOPS: Fops<usize> = seq_fops::<Listing>(crate::base::ffi::tracing_lseek);

/// Creates the listings in the top-level directory `d`.
pub(crate) fn create_listings(d: Dir) {
    let names = [
        c_str!("available_filter_functions"),
        c_str!("available_filter_functions_addrs"),
        c_str!("enabled_functions"),
        c_str!("touched_functions"),
    ];
    for (i, n) in names.into_iter().enumerate() {
        create(n, 0o440, d, i, &RO_FOPS);
    }
}
