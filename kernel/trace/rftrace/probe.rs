// SPDX-License-Identifier: GPL-2.0

//! The commands of the filter files (`func:command[:param]`) and the
//! cached `:mod:` entries of modules not loaded yet. The function probes
//! the commands register are in `funcprobe`.

use crate::ffi::{rftrace_tr_next, trace_types_lock};
use crate::filter::{commit, match_records, match_records_locked};
use crate::hash::{FnSet, FtraceHash};
use crate::logic::glob::{Kind, Pattern};
use crate::logic::parser::BUF_SIZE;
use crate::ops::{self, list_add, list_del, list_entries};
use crate::sys::{CoreGuard, Guard, Held, Locked, TraceArray};
use crate::tracefs::Out;
use core::marker::PhantomData;
use core::ptr;
use kernel::bindings;
use kernel::error::to_result;
use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;

/// `struct ftrace_func_command` (kernel/trace/trace.h).
#[repr(C)]
pub struct FtraceFuncCommand {
    list: bindings::list_head,
    name: *mut c_char,
    func: Option<
        unsafe extern "C" fn(
            tr: *mut c_void,
            hash: *mut FtraceHash,
            func: *mut c_char,
            cmd: *mut c_char,
            params: *mut c_char,
            enable: c_int,
        ) -> c_int,
    >,
}

/// The registered commands (`mod` is built in).
static COMMANDS: Locked<KVec<*mut FtraceFuncCommand>> = Locked::new(KVec::new());

fn cname<'a>(p: *const c_char) -> &'a [u8] {
    if p.is_null() {
        return &[];
    }
    // SAFETY: command names are static NUL-terminated strings.
    unsafe { CStr::from_char_ptr(p) }.as_bytes()
}

/// Registers a filter-file command; `EBUSY` if the name is taken.
///
/// # Safety
///
/// `cmd` is valid for as long as it is registered.
#[no_mangle]
pub unsafe extern "C" fn register_ftrace_command(cmd: *mut FtraceFuncCommand) -> c_int {
    let g = CoreGuard::lock();
    let mut cmds = match COMMANDS.borrow(g.held()) {
        Ok(c) => c,
        Err(e) => return e.to_errno(),
    };
    // SAFETY: per the function's contract; registered ones are valid.
    let name = cname(unsafe { (*cmd).name });
    // SAFETY: as above.
    if name == b"mod" || cmds.iter().any(|&c| cname(unsafe { (*c).name }) == name) {
        return EBUSY.to_errno();
    }
    match cmds.push(cmd, GFP_KERNEL) {
        Ok(()) => 0,
        Err(_) => ENOMEM.to_errno(),
    }
}

/// Unregisters a filter-file command (found by address).
#[no_mangle]
pub extern "C" fn unregister_ftrace_command(cmd: *mut FtraceFuncCommand) -> c_int {
    let g = CoreGuard::lock();
    let mut cmds = match COMMANDS.borrow(g.held()) {
        Ok(c) => c,
        Err(e) => return e.to_errno(),
    };
    match cmds.iter().position(|&c| c == cmd) {
        Some(i) => {
            let last = cmds.len() - 1;
            cmds.as_mut_slice()[i..].rotate_left(1);
            crate::sys::truncate(&mut *cmds, last);
            0
        }
        None => ENODEV.to_errno(),
    }
}

/// Runs `func:cmd[:param]` through its registered command (`tr` is the
/// filter file's trace array, referenced while it is open).
pub(crate) fn run_command(
    tr: Option<TraceArray>,
    h: &mut FnSet,
    tok: &[u8],
    enable: bool,
) -> Result {
    // Split in place at the first two colons, as the C core does.
    let mut b = [0u8; BUF_SIZE + 1];
    let n = tok.len().min(BUF_SIZE);
    b[..n].copy_from_slice(&tok[..n]);
    let Some(c1) = b[..n].iter().position(|&x| x == b':') else {
        return Err(EINVAL);
    };
    b[c1] = 0;
    let c2 = b[c1 + 1..n]
        .iter()
        .position(|&x| x == b':')
        .map(|k| c1 + 1 + k);
    if let Some(c2) = c2 {
        b[c2] = 0;
    }
    let name = &b[c1 + 1..c2.unwrap_or(n)];
    let found = {
        let g = CoreGuard::lock();
        let cmds = COMMANDS.borrow(g.held())?;
        let found = cmds
            .iter()
            .copied()
            // SAFETY: registered commands are valid.
            .find(|&c| !name.is_empty() && cname(unsafe { (*c).name }) == name);
        found
    };
    let Some(cmd) = found else {
        return Err(EINVAL);
    };
    let base = b.as_mut_ptr().cast::<c_char>();
    let param = c2.map_or(ptr::null_mut(), |k| base.wrapping_add(k + 1));
    // SAFETY: a registered command; the strings are NUL-terminated pieces
    // of `b`, which outlives the call.
    unsafe {
        match (*cmd).func {
            Some(f) => to_result(f(
                tr.map_or(ptr::null_mut(), TraceArray::as_ptr),
                h.as_ptr(),
                base,
                base.wrapping_add(c1 + 1),
                param,
                c_int::from(enable),
            )),
            None => Err(EINVAL),
        }
    }
}

/// A cached `func:mod:module` for a module that is not loaded yet, on
/// a trace array's `mod_trace` or `mod_notrace` list.
#[repr(C)]
struct ModLoad {
    list: bindings::list_head,
    func: KVec<u8>,
    module: KVec<u8>,
}

const MOD_LIST_OFF: usize = core::mem::offset_of!(ModLoad, list);

/// A trace array's list of cached entries of its filter (or notrace)
/// file, under `ftrace_lock`.
///
/// # Invariants
///
/// `0` is the list head in a live trace array; the list holds only
/// [`ModLoad`]s made by [`ModList::push`] (`KBox::into_raw`) and changes
/// only under `ftrace_lock`, held for `'h`.
struct ModList<'h>(*mut bindings::list_head, PhantomData<&'h Held>);

impl<'h> ModList<'h> {
    fn of(_held: &'h Held, tr: TraceArray, notrace: bool) -> Self {
        // INVARIANT: the list the trace array keeps for the core.
        ModList(tr.mod_list(notrace), PhantomData)
    }

    /// The entries, newest first.
    fn iter(&self) -> impl Iterator<Item = &'h ModLoad> {
        // SAFETY: a list of `ModLoad`s that does not change while
        // `ftrace_lock` is held (the invariants); each lives until it is
        // removed, which takes the list (`&self` of `remove_if` is not
        // borrowed while the iterator lives: it borrows `'h` only).
        unsafe { list_entries::<ModLoad>(self.0, MOD_LIST_OFF) }.map(|m| unsafe { &*m })
    }

    /// Removes and frees the entries `f` says yes to; whether any.
    fn remove_if(&mut self, mut f: impl FnMut(&ModLoad) -> bool) -> bool {
        let mut removed = false;
        // SAFETY: as for `iter`; the iterator reads an entry's successor
        // before yielding it, and a removed entry is unlinked before it
        // is freed; it came from `KBox::into_raw` (the invariants).
        unsafe {
            for m in list_entries::<ModLoad>(self.0, MOD_LIST_OFF) {
                if f(&*m) {
                    list_del(ptr::addr_of_mut!((*m).list));
                    drop(KBox::from_raw(m));
                    removed = true;
                }
            }
        }
        removed
    }

    /// Adds `m` at the head.
    fn push(&mut self, m: KBox<ModLoad>) {
        let raw = KBox::into_raw(m);
        // SAFETY: a fresh entry on no list; the list is changed under
        // `ftrace_lock` (the invariants); freed by `remove_if`.
        unsafe { list_add(ptr::addr_of_mut!((*raw).list), self.0) };
    }
}

fn module_loaded(module: &[u8]) -> bool {
    // "<module>:__this_module", as the C core asks kallsyms; names that do
    // not fit count as not loaded.
    let mut b = [0u8; 72];
    let suffix = b":__this_module";
    if module.len() + suffix.len() >= b.len() {
        return false;
    }
    b[..module.len()].copy_from_slice(module);
    b[module.len()..module.len() + suffix.len()].copy_from_slice(suffix);
    // SAFETY: a NUL-terminated name in a local buffer.
    unsafe { bindings::kallsyms_lookup_name(b.as_ptr().cast()) != 0 }
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
    let g = CoreGuard::lock();
    let mut mods = ModList::of(g.held(), tr, !enable);
    if let Some(f) = func.strip_prefix(b"!") {
        let removed = mods
            .remove_if(|m| m.module.as_slice() == module && (f == b"*" || m.func.as_slice() == f));
        return if removed { Ok(()) } else { Err(EINVAL) };
    }
    if module_loaded(module) {
        return Err(EINVAL);
    }
    let mut fv = KVec::new();
    let mut mv = KVec::new();
    fv.extend_from_slice(func, GFP_KERNEL)?;
    mv.extend_from_slice(module, GFP_KERNEL)?;
    let m = KBox::new(
        ModLoad {
            list: bindings::list_head {
                next: ptr::null_mut(),
                prev: ptr::null_mut(),
            },
            func: fv,
            module: mv,
        },
        GFP_KERNEL,
    )?;
    mods.push(m);
    Ok(())
}

/// Drops the cached `:mod:` entries of a filter file (an `O_TRUNC` open).
pub(crate) fn clear_mod_list(held: &Held, tr: TraceArray, notrace: bool) {
    ModList::of(held, tr, notrace).remove_if(|_| true);
}

/// Whether a trace array has cached `:mod:` entries.
pub(crate) fn has_mods(held: &Held, tr: TraceArray, notrace: bool) -> bool {
    ModList::of(held, tr, notrace).iter().next().is_some()
}

/// Lists the cached `:mod:` entries, newest first.
pub(crate) fn render_mods(held: &Held, o: &mut Out, tr: TraceArray, notrace: bool) {
    for m in ModList::of(held, tr, notrace).iter() {
        o.bytes(&m.func);
        o.bytes(b":mod:");
        o.bytes(&m.module);
        o.bytes(b"\n");
    }
}

/// The tracing core's lock over its list of trace arrays, held.
struct TraceTypes(#[allow(dead_code)] Guard);

impl TraceTypes {
    fn lock() -> Self {
        // SAFETY: the tracing core's static, initialised mutex; the
        // callers (module notifiers) may sleep and hold no core lock.
        TraceTypes(unsafe { Guard::of(ptr::addr_of_mut!(trace_types_lock)) })
    }

    /// The trace arrays, alive while the lock is.
    fn arrays(&self) -> impl Iterator<Item = TraceArray> + '_ {
        let mut tr = ptr::null_mut();
        core::iter::from_fn(move || {
            // SAFETY: walked under `trace_types_lock` (held while `self`
            // is), which keeps every array on the list and alive.
            unsafe {
                tr = rftrace_tr_next(tr);
                TraceArray::from_raw(tr)
            }
        })
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
        if !op.has(ops::F_INITIALIZED) {
            continue;
        }
        let _r = op.lock_regex();
        let g = CoreGuard::lock();
        if let Some(grp) = crate::table::of_module(m) {
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
    let g = CoreGuard::lock();
    let (f, n) = regex.sets();
    let Ok(mut h) = FnSet::copy_of(if notrace { n } else { f }) else {
        return;
    };
    let used = ModList::of(g.held(), tr, notrace).remove_if(|m| {
        if m.module.as_slice() != name {
            return false;
        }
        let func: &[u8] = if m.func.is_empty() { b"*" } else { &m.func };
        let _ = match_records_locked(g.held(), &mut h, func, Some(name));
        true
    });
    if used {
        if !notrace {
            h.set_mod(has_mods(g.held(), tr, false));
        }
        let _ = commit(g.held(), op, notrace, &h);
    }
}
