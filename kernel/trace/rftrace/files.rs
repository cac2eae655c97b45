// SPDX-License-Identifier: GPL-2.0

//! The read-only tracefs files of the core: available_filter_functions,
//! available_filter_functions_addrs, enabled_functions,
//! touched_functions.

use crate::logic::sites::flags as sf;
use crate::ops;
use crate::sys::{dead, CGlobal, CoreGuard};
use crate::table;
use crate::tracefs::{create, fops, OpenMode, Out, TextFile};
use core::fmt::Write;
use kernel::bindings;
use kernel::c_str;
use kernel::ffi::c_void;
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
    let g = CoreGuard::lock();
    if dead() {
        return;
    }
    for c in table::all() {
        let s = c.read(g.held());
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
                ops::describe_tramp(g.held(), o, s.ip);
            } else if s.has(sf::ENABLED) {
                o.bytes(b" ->");
                o.sym(ops::arch_ftrace_ops_list_func as *const () as u64, true);
            }
            if s.has(sf::DIRECT) {
                ops::describe_direct(g.held(), o, s.ip);
            }
        }
        o.bytes(b"\n");
    }
}

/// An open listing: which one (the inode data, 0 to 3).
struct Listing(Kind);

impl TextFile for Listing {
    fn open(data: *mut c_void, _mode: OpenMode) -> Result<Self> {
        let kind = match data as usize {
            0 => Kind::Avail,
            1 => Kind::AvailAddrs,
            2 => Kind::Enabled,
            _ => Kind::Touched,
        };
        if matches!(kind, Kind::Avail | Kind::AvailAddrs) && dead() {
            return Err(ENODEV);
        }
        // No lock held: the first listing finds the kernel's site names.
        crate::names::prepare();
        Ok(Listing(kind))
    }

    fn render(&self, o: &mut Out) {
        render(self.0, o);
    }
}

static RO_FOPS: CGlobal<bindings::file_operations> = CGlobal::new(fops::<Listing>(false));

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
