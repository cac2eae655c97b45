// SPDX-License-Identifier: GPL-2.0

//! The commands of the filter files (`func:command[:param]`) and the
//! cached `:mod:` entries of modules not loaded yet. The function probes
//! the commands register are in `funcprobe`.

use crate::base::cells::Locked;
use crate::base::sys::{CoreGuard, StateKey, TraceArray};
use crate::base::tracefs::Out;
use crate::base::trarray::TraceTypes;
use crate::filter::api::{commit, match_records, match_records_locked};
use crate::logic::glob::{Kind, Pattern};
use crate::logic::parser::{Token, BUF_SIZE};
use crate::ops::clients::Command;
use crate::sites::hash::FnSet;
use kernel::bindings;
use kernel::ffi::c_int;
use kernel::prelude::*;

/// The registered commands (`mod` is built in).
static COMMANDS: Locked<KVec<Command>> = Locked::new(KVec::new());

/// Registers a filter-file command; `EBUSY` if the name is taken.
pub(crate) fn register_ftrace_command(cmd: Option<Command>) -> c_int {
    let Some(cmd) = cmd else {
        return EINVAL.to_errno();
    };
    let mut g = CoreGuard::lock();
    let cmds = COMMANDS.borrow(g.parts().1);
    let name = cmd.name();
    if name == b"mod" || cmds.iter().any(|c| c.name() == name) {
        return EBUSY.to_errno();
    }
    match cmds.push(cmd, GFP_KERNEL) {
        Ok(()) => 0,
        Err(_) => ENOMEM.to_errno(),
    }
}

/// Unregisters a filter-file command (found by address).
pub(crate) fn unregister_ftrace_command(cmd: Option<Command>) -> c_int {
    let mut g = CoreGuard::lock();
    let cmds = COMMANDS.borrow(g.parts().1);
    match cmds.iter().position(|&c| Some(c) == cmd) {
        Some(i) => {
            let last = cmds.len() - 1;
            cmds.as_mut_slice()[i..].rotate_left(1);
            crate::base::sys::truncate(cmds, last);
            0
        }
        None => ENODEV.to_errno(),
    }
}

/// Whether a command of that name is registered (`mod` is built in).
pub(crate) fn command_exists(name: &[u8]) -> bool {
    let mut g = CoreGuard::lock();
    name == b"mod"
        || (!name.is_empty() && COMMANDS.get(g.parts().1).iter().any(|c| c.name() == name))
}

/// Runs `func:cmd[:param]` through its registered command (`tr` is the
/// filter file's trace array, referenced while it is open).
pub(crate) fn run_command(
    tr: Option<TraceArray>,
    h: &mut FnSet,
    tok: &[u8],
    enable: bool,
) -> Result {
    // Split in place where the filter language splits it (`Token`: the
    // first colon that is not part of a Rust path's `::`, then the next),
    // the C core's NULs at the two colons.
    let t = Token::split(tok);
    let n = tok.len().min(BUF_SIZE);
    let mut b = [0u8; BUF_SIZE + 1];
    b[..n].copy_from_slice(&tok[..n]);
    let Some(name) = t.command else {
        return Err(EINVAL);
    };
    let c1 = t.func.len();
    let c2 = t.param.map(|_| c1 + 1 + name.len());
    for c in [Some(c1), c2].into_iter().flatten() {
        if let Some(z) = b.get_mut(c) {
            *z = 0;
        }
    }
    let found = {
        let mut g = CoreGuard::lock();
        let cmds = COMMANDS.get(g.parts().1);
        cmds.iter()
            .copied()
            .find(|c| !name.is_empty() && c.name() == name)
    };
    let Some(cmd) = found else {
        return Err(EINVAL);
    };
    cmd.call(tr, h, &mut b, c1 + 1, c2.map(|k| k + 1), enable)
}

/// A cached `func:mod:module` of a trace array's filter (or notrace)
/// file, for a module that is not loaded yet.
struct ModLoad {
    tr: TraceArray,
    notrace: bool,
    func: KVec<u8>,
    module: KVec<u8>,
}

/// Every trace array's cached entries, oldest first.
static MODS: Locked<KVec<ModLoad>> = Locked::new(KVec::new());

/// The cached entries of one trace array's filter (or notrace) file,
/// borrowed under `ftrace_lock`.
struct ModList<'h> {
    all: &'h mut KVec<ModLoad>,
    tr: TraceArray,
    notrace: bool,
}

impl<'h> ModList<'h> {
    fn of(key: &'h mut StateKey, tr: TraceArray, notrace: bool) -> Self {
        ModList {
            all: MODS.borrow(key),
            tr,
            notrace,
        }
    }

    fn mine(&self, m: &ModLoad) -> bool {
        m.tr == self.tr && m.notrace == self.notrace
    }

    /// The entries, newest first.
    fn iter(&self) -> impl Iterator<Item = &ModLoad> {
        self.all.iter().rev().filter(|m| self.mine(m))
    }

    /// Removes and frees the entries `f` says yes to; whether any.
    fn remove_if(&mut self, mut f: impl FnMut(&ModLoad) -> bool) -> bool {
        let mut removed = false;
        let mut i = self.all.len();
        // Newest first, as they are listed (and applied).
        while i > 0 {
            i -= 1;
            if self.mine(&self.all[i]) && f(&self.all[i]) {
                let last = self.all.len() - 1;
                self.all.as_mut_slice()[i..].rotate_left(1);
                crate::base::sys::truncate(&mut *self.all, last);
                removed = true;
            }
        }
        removed
    }

    /// Adds an entry.
    fn push(&mut self, func: &[u8], module: &[u8]) -> Result {
        let mut fv = KVec::new();
        let mut mv = KVec::new();
        fv.extend_from_slice(func, GFP_KERNEL)?;
        mv.extend_from_slice(module, GFP_KERNEL)?;
        let m = ModLoad {
            tr: self.tr,
            notrace: self.notrace,
            func: fv,
            module: mv,
        };
        self.all.push(m, GFP_KERNEL)?;
        Ok(())
    }
}

/// Whether a module of that name is loaded.
pub(crate) fn module_loaded(module: &[u8]) -> bool {
    // "<module>:__this_module", as the C core asks kallsyms; names that do
    // not fit count as not loaded (no module name is that long).
    module.len() + b":__this_module".len() < 72
        && crate::sites::names::address_of(&[module, b":__this_module"]).is_some()
}

/// `func:mod:module`: the functions of a loaded module, or, when the module
/// is not loaded, a cached entry applied when it loads.
pub(crate) fn mod_command(
    tr: Option<TraceArray>,
    h: &mut FnSet,
    func: &[u8],
    module: Option<&[u8]>,
    enable: bool,
) -> Result {
    let Some(tr) = tr else {
        return Err(ENODEV);
    };
    // A missing module name is refused (the C core dereferences NULL).
    let Some(module) = module else {
        return Err(EINVAL);
    };
    if match_records(h, func, Some(module))? {
        return Ok(());
    }
    // Matching classified the module text in place: a trailing `*` of a
    // prefix or substring pattern is gone from what gets cached.
    let mp = Pattern::parse(module);
    let module = match mp.kind {
        Kind::Front | Kind::Middle => module.strip_suffix(b"*").unwrap_or(module),
        _ => module,
    };
    let mut g = CoreGuard::lock();
    let mut mods = ModList::of(g.parts().1, tr, !enable);
    if let Some(f) = func.strip_prefix(b"!") {
        let removed = mods
            .remove_if(|m| m.module.as_slice() == module && (f == b"*" || m.func.as_slice() == f));
        return if removed { Ok(()) } else { Err(EINVAL) };
    }
    if module_loaded(module) {
        return Err(EINVAL);
    }
    mods.push(func, module)
}

/// Drops the cached `:mod:` entries of a filter file (an `O_TRUNC` open).
pub(crate) fn clear_mod_list(key: &mut StateKey, tr: TraceArray, notrace: bool) {
    ModList::of(key, tr, notrace).remove_if(|_| true);
}

/// Whether a trace array has cached `:mod:` entries.
pub(crate) fn has_mods(key: &mut StateKey, tr: TraceArray, notrace: bool) -> bool {
    ModList::of(key, tr, notrace).iter().next().is_some()
}

/// Lists the cached `:mod:` entries, newest first.
pub(crate) fn render_mods(key: &mut StateKey, o: &mut Out, tr: TraceArray, notrace: bool) {
    let l = ModList::of(key, tr, notrace);
    for m in l.iter() {
        o.bytes(&m.func);
        o.bytes(b":mod:");
        o.bytes(&m.module);
        o.bytes(b"\n");
    }
}

/// A module came: applies the cached `:mod:` entries naming it, in every
/// trace array. Each entry is used once. No core lock is held.
pub(crate) fn process_cached_mods(name: &[u8]) {
    let t = TraceTypes::lock();
    for tr in t.arrays() {
        for notrace in [false, true] {
            apply_mods(tr, notrace, name);
        }
    }
}

/// A module is going: in every trace array's filter and notrace sets,
/// the entries of its functions stay but match nothing any more (their
/// address becomes 0), as in the C core: a filter that named only them
/// stays non-empty and traces nothing. No core lock is held.
pub(crate) fn scrub_module(m: *mut bindings::module) {
    let t = TraceTypes::lock();
    for tr in t.arrays() {
        let Some(op) = tr.ops_ref() else {
            continue;
        };
        if !op.has(crate::ops::registry::F_INITIALIZED) {
            continue;
        }
        let _r = op.lock_regex();
        let g = CoreGuard::lock();
        if let Some(grp) = crate::sites::table::of_module(m) {
            for notrace in [false, true] {
                if let Some(mut slot) = op.set_slot_mut(g.held(), notrace) {
                    slot.scrub(|ip| grp.find(ip).is_some());
                }
            }
        }
    }
}

/// Applies the cached entries of `tr` that name the module `name`. No core
/// lock is held.
fn apply_mods(tr: TraceArray, notrace: bool, name: &[u8]) {
    let Some(op) = tr.ops_ref() else {
        return;
    };
    let regex = op.lock_regex();
    let mut g = CoreGuard::lock();
    let (held, key) = g.parts();
    let (f, n) = regex.sets();
    let Ok(mut h) = FnSet::copy_of(if notrace { n } else { f }) else {
        return;
    };
    let used = ModList::of(key, tr, notrace).remove_if(|m| {
        if m.module.as_slice() != name {
            return false;
        }
        let func: &[u8] = if m.func.is_empty() { b"*" } else { &m.func };
        let _ = match_records_locked(held, &mut h, func, Some(name));
        true
    });
    if used {
        if !notrace {
            h.set_mod(has_mods(key, tr, false));
        }
        let _ = commit(held, key, op, notrace, h);
    }
}
