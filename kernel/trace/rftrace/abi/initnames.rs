// SPDX-License-Identifier: GPL-2.0

//! The names of a module's init functions after its init memory is freed
//! (the C core's `ftrace_mod_map`): a trace taken while the module loaded
//! still names them, and kallsyms lists them, until the module goes.
//! Kept only when a tracer was registered as the memory went, as C does.

use crate::base::cells::{RcuBox, Retired};
use crate::base::sys::{Held, ReadSide};
use crate::sites::names;
use kernel::prelude::*;
use kernel::sync::Arc;

/// One freed function: `[ip, ip + size)` was `name`.
struct Func {
    ip: u64,
    size: u64,
    name: KVec<u8>,
}

/// The freed init functions of one module.
pub(crate) struct Module {
    /// The module, as C passed it; only compared, never followed.
    key: usize,
    /// Its name, NUL-terminated.
    name: KVec<u8>,
    funcs: KVec<Func>,
}

/// Every module's names.
pub(crate) type Names = KVec<Arc<Module>>;

/// Every module's; replaced whole (modules come and go seldom).
static MAPS: RcuBox<Names> = RcuBox::new();

/// Records the names of the functions of the sites `ips` of module `key`,
/// whose init memory is being freed. Best effort, as in C: a name that
/// cannot be kept (no memory) is lost, and its address prints as such.
pub(crate) fn save(held: &Held, key: usize, ips: impl Iterator<Item = u64>) {
    if crate::ops::registry::list(held).next().is_none() {
        return;
    }
    let mut m = Module {
        key,
        name: KVec::new(),
        funcs: KVec::new(),
    };
    let mut buf = kernel::kallsyms::SymbolBuf::new();
    for ip in ips {
        let Some((sym, size)) = names::lookup_sized(ip, &mut buf) else {
            continue;
        };
        if m.name.is_empty() {
            let Some(module) = sym.module else { continue };
            if m.name.extend_from_slice(module, GFP_KERNEL).is_err()
                || m.name.push(0, GFP_KERNEL).is_err()
            {
                return;
            }
        }
        let mut name = KVec::new();
        if name.extend_from_slice(sym.name, GFP_KERNEL).is_err() {
            continue;
        }
        let f = Func {
            ip: ip - sym.offset,
            size,
            name,
        };
        if m.funcs.push(f, GFP_KERNEL).is_err() {
            break;
        }
    }
    if m.funcs.is_empty() {
        return;
    }
    let Ok(m) = Arc::new(m, GFP_KERNEL) else {
        return;
    };
    let _ = MAPS.update(held, |old| {
        let mut all = KVec::new();
        for o in old.into_iter().flatten() {
            all.push(o.clone(), GFP_KERNEL)?;
        }
        all.push(m, GFP_KERNEL)?;
        Ok(Some(KBox::new(all, GFP_KERNEL)?))
    });
}

/// Forgets module `key`'s names (it is going away), giving back what to
/// free after a grace period.
pub(crate) fn forget(held: &Held, key: usize) -> Option<Retired<Names>> {
    MAPS.swap(held, |old| {
        let Some(old) = old.filter(|o| o.iter().any(|m| m.key == key)) else {
            return Err(ENOENT);
        };
        let mut rest = KVec::new();
        for o in old.iter().filter(|m| m.key != key) {
            rest.push(o.clone(), GFP_KERNEL)?;
        }
        Ok(if rest.is_empty() {
            None
        } else {
            Some(KBox::new(rest, GFP_KERNEL)?)
        })
    })
    .ok()
    .flatten()
}

/// A freed function's symbol: its name and module's (NUL-terminated),
/// start and size.
pub(crate) struct Found<'a> {
    pub(crate) name: &'a [u8],
    pub(crate) module: &'a [u8],
    pub(crate) start: u64,
    pub(crate) size: u64,
}

/// The freed function holding `addr`.
pub(crate) fn find<'a>(rs: &'a impl ReadSide, addr: u64) -> Option<Found<'a>> {
    MAPS.get(rs)?.iter().find_map(|m| {
        let f = m
            .funcs
            .iter()
            .find(|f| addr >= f.ip && addr - f.ip < f.size)?;
        Some(found(m, f))
    })
}

/// The `n`-th freed function (from 0), in the order kallsyms lists them,
/// or how many there are when fewer.
pub(crate) fn nth<'a>(
    rs: &'a impl ReadSide,
    mut n: usize,
) -> core::result::Result<Found<'a>, usize> {
    let mut count = 0;
    for m in MAPS.get(rs).into_iter().flatten() {
        if let Some(f) = m.funcs.get(n) {
            return Ok(found(m, f));
        }
        n -= m.funcs.len();
        count += m.funcs.len();
    }
    Err(count)
}

fn found<'a>(m: &'a Module, f: &'a Func) -> Found<'a> {
    Found {
        name: &f.name,
        module: &m.name,
        start: f.ip,
        size: f.size,
    }
}
