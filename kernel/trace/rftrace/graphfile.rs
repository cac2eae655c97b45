// SPDX-License-Identifier: GPL-2.0

//! set_graph_function and set_graph_notrace: the function graph filter
//! sets (`ftrace_graph_hash`, `ftrace_graph_notrace_hash`), edited as a
//! private copy and committed at close.

use crate::filterfile::PARSER_LOCK;
use crate::hash::{self, FnSet, FtraceHash, SetRef};
use crate::logic::glob::{Kind, Pattern};
use crate::logic::parser::Parser;
use crate::logic::plan::SiteSet;
use crate::logic::sites::flags as sf;
use crate::sys::{dead, CGlobal, Guard};
use crate::table;
use crate::tracefs::{self, write_token, Chunk, OpenMode, Out, TextFile};
use core::ptr;
use core::sync::atomic::Ordering;
use kernel::bindings;
use kernel::c_str;
use kernel::ffi::c_void;
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
    notrace: bool,
    /// The set being edited, for a writer.
    hash: Option<FnSet>,
    parser: Parser,
}

fn graph_slot(notrace: bool) -> &'static core::sync::atomic::AtomicPtr<FtraceHash> {
    if notrace {
        &crate::sys::ftrace_graph_notrace_hash
    } else {
        &crate::sys::ftrace_graph_hash
    }
}

impl TextFile for GraphFile {
    /// The inode data says which set: null the filter, else notrace.
    fn open(data: *mut c_void, mode: OpenMode) -> Result<Self> {
        if dead() {
            return Err(ENODEV);
        }
        let notrace = !data.is_null();
        let mut hash = None;
        if mode.write {
            let _g = Guard::of(GRAPH_LOCK.get());
            hash = Some(if mode.trunc {
                FnSet::new()?
            } else {
                // SAFETY: the live set, stable under the graph lock.
                unsafe { FnSet::copy_of(graph_slot(notrace).load(Ordering::Acquire)) }?
            });
        }
        Ok(GraphFile {
            notrace,
            hash,
            parser: Parser::new(),
        })
    }

    fn render(&self, o: &mut Out) {
        let _l = Guard::of(GRAPH_LOCK.get());
        // SAFETY: the live set, stable (not freed) under the graph lock.
        let live = unsafe { SetRef::new(graph_slot(self.notrace).load(Ordering::Acquire)) };
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
        let _p = Guard::of(PARSER_LOCK.get());
        write_token(&mut self.parser, chunk, pos, |tok| graph_token(h, tok))
    }

    /// Commits the edited set, after a pending token, as C does.
    fn release(self) {
        let GraphFile {
            notrace,
            hash: Some(mut h),
            parser,
        } = self
        else {
            return;
        };
        if parser.loaded() {
            let _p = Guard::of(PARSER_LOCK.get());
            // The result is ignored, as in C.
            let _ = graph_token(&mut h, parser.token());
        }
        let _l = Guard::of(GRAPH_LOCK.get());
        if let Ok(new) = h.for_commit() {
            let old = graph_slot(notrace).swap(new, Ordering::AcqRel);
            // SAFETY: unpublished; readers are preempt-disabled sections.
            unsafe { hash::free_rcu(old) };
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

static GRAPH_FOPS: CGlobal<bindings::file_operations> =
    CGlobal::new(tracefs::fops::<GraphFile>(true));

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
