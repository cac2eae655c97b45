// SPDX-License-Identifier: GPL-2.0

//! set_graph_function and set_graph_notrace: the function graph filter
//! sets (`ftrace_graph_hash`, `ftrace_graph_notrace_hash`), edited as a
//! private copy and committed at close.

use crate::base::sys::{dead, CoreGuard};
use crate::base::tracefs::{self, write_token, Chunk, Out, TextFile};
use crate::filter::api::Matcher;
use crate::fs::filterfile::PARSER_LOCK;
use crate::logic::glob::{Kind, Pattern};
use crate::logic::parser::Parser;
use crate::logic::sites::flags as sf;
use crate::sites::hash::FnSet;
use crate::sites::publish::GraphSlot;
use crate::sites::table;
use kernel::bindings;
use kernel::c_str;
use kernel::prelude::*;
use kernel::tracefs::{Dir, Fops, OpenMode};

/// Initialises the lock of the graph filter files (boot).
pub(crate) fn init_locks() {
    crate::sites::publish::init_graph_lock();
}

struct GraphFile {
    notrace: bool,
    /// The set being edited, for a writer.
    hash: Option<FnSet>,
    parser: Parser,
}

impl TextFile for GraphFile {
    /// Which set: 0 the filter, else notrace.
    type Data = usize;

    fn open(data: usize, mode: OpenMode) -> Result<Self> {
        if dead() {
            return Err(ENODEV);
        }
        let notrace = data != 0;
        let mut hash = None;
        if mode.write {
            let mut g = GraphSlot::lock(notrace);
            hash = Some(if mode.trunc {
                FnSet::new()?
            } else {
                FnSet::copy_of(g.get().load())?
            });
        }
        Ok(GraphFile {
            notrace,
            hash,
            parser: Parser::new(),
        })
    }

    fn render(&self, o: &mut Out) {
        let mut g = GraphSlot::lock(self.notrace);
        let slot = g.get();
        let live = slot.load();
        if live.is_empty() {
            if !self.notrace {
                o.bytes(b"#### all functions enabled ####\n");
            }
            return;
        }
        for ip in live.ips() {
            o.sym(ip, false);
            o.bytes(b"\n");
        }
    }

    fn write(&mut self, chunk: Option<Chunk>, pos: &mut bindings::loff_t) -> isize {
        if dead() {
            return ENODEV.to_errno() as isize;
        }
        let Some(h) = self.hash.as_mut() else {
            return EINVAL.to_errno() as isize;
        };
        let _p = PARSER_LOCK.lock();
        write_token(&mut self.parser, chunk, pos, |tok| graph_token(h, tok))
    }

    /// Commits the edited set, after a pending token, as C does.
    fn release(&mut self) {
        let Some(mut h) = self.hash.take() else {
            return;
        };
        if self.parser.loaded() {
            let _p = PARSER_LOCK.lock();
            // The result is ignored, as in C.
            let _ = graph_token(&mut h, self.parser.token());
        }
        let mut g = GraphSlot::lock(self.notrace);
        if let Ok(new) = h.for_commit() {
            // Readers are preempt-disabled sections: the old set goes a
            // grace period after.
            drop(g.get().swap(new));
        }
    }
}

/// A token of a graph file: a pattern, `!` to remove; no index, no
/// command, no module. Fails unless some function was added or removed.
fn graph_token(h: &mut FnSet, tok: &[u8]) -> Result {
    let pat = Pattern::parse(tok);
    if pat.kind == Kind::Index {
        return Err(EINVAL);
    }
    let g = CoreGuard::lock();
    if dead() {
        return Err(ENODEV);
    }
    let mut done = false;
    let mut buf = kernel::kallsyms::SymbolBuf::new();
    let mut m = Matcher::new(pat)?;
    for c in table::all() {
        let s = c.read(g.held());
        if s.has(sf::DISABLED) {
            continue;
        }
        match crate::sites::names::lookup(s.ip, &mut buf) {
            Some(sym) if sym.is_entry() && m.matches(sym.name) => {}
            _ => continue,
        }
        if pat.negated {
            done |= h.remove(s.ip);
        } else {
            h.add(s.ip)?;
            done = true;
        }
    }
    if done {
        Ok(())
    } else {
        Err(EINVAL)
    }
}

static GRAPH_FOPS: Fops<usize> = tracefs::fops::<GraphFile>(true);

/// set_graph_function and set_graph_notrace.
pub(crate) fn create_graph_files(parent: Dir) {
    tracefs::create(c_str!("set_graph_function"), 0o640, parent, 0, &GRAPH_FOPS);
    tracefs::create(c_str!("set_graph_notrace"), 0o640, parent, 1, &GRAPH_FOPS);
}
