// SPDX-License-Identifier: GPL-2.0

//! The commands of the filter files (`func:command[:param]`) and the
//! cached `:mod:` entries of modules not loaded yet. The function probes
//! the commands register are in `funcprobe`.

use crate::filter::{commit, match_records, match_records_locked};
use crate::hash::{self, FnSet, FtraceHash};
use crate::logic::glob::{Kind, Pattern};
use crate::logic::parser::BUF_SIZE;
use crate::ops::{self, list_add, list_del, list_entries};
use crate::sys::{CoreGuard, Guard, Locked, TraceArray};
use crate::tracefs::Out;
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
    let mut g = CoreGuard::lock();
    let cmds = COMMANDS.access(&mut g);
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

/// # Safety
///
/// `cmd` is valid.
#[no_mangle]
pub unsafe extern "C" fn unregister_ftrace_command(cmd: *mut FtraceFuncCommand) -> c_int {
    let mut g = CoreGuard::lock();
    let cmds = COMMANDS.access(&mut g);
    match cmds.iter().position(|&c| c == cmd) {
        Some(i) => {
            let last = cmds.len() - 1;
            cmds.as_mut_slice()[i..].rotate_left(1);
            // SAFETY: drops the last element, a plain pointer.
            unsafe { cmds.set_len(last) };
            0
        }
        None => ENODEV.to_errno(),
    }
}

/// Runs `func:cmd[:param]` through its registered command.
///
/// # Safety
///
/// The caller's trace array is referenced while the command runs.
pub(crate) unsafe fn run_command(
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
        let mut g = CoreGuard::lock();
        COMMANDS
            .access(&mut g)
            .iter()
            .copied()
            // SAFETY: registered commands are valid.
            .find(|&c| !name.is_empty() && cname(unsafe { (*c).name }) == name)
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

/// The cached entries of a trace array's filter (or notrace) file.
///
/// # Safety
///
/// `ftrace_lock` is held.
unsafe fn mods(tr: TraceArray, notrace: bool) -> impl Iterator<Item = *mut ModLoad> {
    // SAFETY: per the function's contract.
    unsafe { list_entries::<ModLoad>(tr.mod_list(notrace), MOD_LIST_OFF) }
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
///
/// # Safety
///
/// As for [`run_command`].
pub(crate) unsafe fn mod_command(
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
    let _g = Guard::lock();
    let notrace = !enable;
    if let Some(f) = func.strip_prefix(b"!") {
        let mut removed = false;
        // SAFETY: `ftrace_lock` held; entries are ours.
        for m in unsafe { mods(tr, notrace) } {
            // SAFETY: as above; `m` is unlinked before it is freed, and the
            // iterator already read its successor.
            unsafe {
                if (*m).module.as_slice() == module && (f == b"*" || (*m).func.as_slice() == f) {
                    list_del(ptr::addr_of_mut!((*m).list));
                    drop(KBox::from_raw(m));
                    removed = true;
                }
            }
        }
        return if removed { Ok(()) } else { Err(EINVAL) };
    }
    if module_loaded(module) {
        return Err(EINVAL);
    }
    let mut fv = KVec::new();
    let mut mv = KVec::new();
    if fv.extend_from_slice(func, GFP_KERNEL).is_err()
        || mv.extend_from_slice(module, GFP_KERNEL).is_err()
    {
        return Err(ENOMEM);
    }
    let Ok(b) = KBox::new(
        ModLoad {
            list: bindings::list_head {
                next: ptr::null_mut(),
                prev: ptr::null_mut(),
            },
            func: fv,
            module: mv,
        },
        GFP_KERNEL,
    ) else {
        return Err(ENOMEM);
    };
    let raw = KBox::into_raw(b);
    // SAFETY: `ftrace_lock` held; the list is the trace array's.
    unsafe { list_add(ptr::addr_of_mut!((*raw).list), tr.mod_list(notrace)) };
    Ok(())
}

/// Drops the cached `:mod:` entries of a filter file (an `O_TRUNC` open).
///
/// # Safety
///
/// `ftrace_lock` is held.
pub(crate) unsafe fn clear_mod_list(tr: TraceArray, notrace: bool) {
    // SAFETY: per the function's contract.
    for m in unsafe { mods(tr, notrace) } {
        // SAFETY: as in `mod_command`.
        unsafe {
            list_del(ptr::addr_of_mut!((*m).list));
            drop(KBox::from_raw(m));
        }
    }
}

/// Whether a trace array has cached `:mod:` entries.
///
/// # Safety
///
/// `ftrace_lock` is held.
pub(crate) unsafe fn has_mods(tr: TraceArray, notrace: bool) -> bool {
    // SAFETY: per the function's contract.
    unsafe { mods(tr, notrace) }.next().is_some()
}

/// Lists the cached `:mod:` entries, newest first.
///
/// # Safety
///
/// `ftrace_lock` is held.
pub(crate) unsafe fn render_mods(o: &mut Out, tr: TraceArray, notrace: bool) {
    // SAFETY: per the function's contract.
    for m in unsafe { mods(tr, notrace) } {
        // SAFETY: live entries under `ftrace_lock`.
        unsafe {
            o.bytes(&(*m).func);
            o.bytes(b":mod:");
            o.bytes(&(*m).module);
        }
        o.bytes(b"\n");
    }
}

// Bindgen types of empty C structs are fine behind pointers.
#[allow(improper_ctypes)]
extern "C" {
    static mut trace_types_lock: bindings::mutex;
    fn rftrace_tr_next(tr: *mut c_void) -> *mut c_void;
}

/// A module came: applies the cached `:mod:` entries naming it, in every
/// trace array. Each entry is used once.
///
/// # Safety
///
/// `name` is the module's name; no core lock is held.
pub(crate) unsafe fn process_cached_mods(name: &[u8]) {
    // The tracing core's lock over its list of trace arrays.
    let _t = Guard::of(ptr::addr_of_mut!(trace_types_lock));
    // SAFETY: `trace_types_lock` is held while the handles are used.
    for tr in unsafe { trace_arrays() } {
        for notrace in [false, true] {
            // SAFETY: no core lock is held.
            unsafe { apply_mods(tr, notrace, name) };
        }
    }
}

/// The trace arrays of the tracing core.
///
/// # Safety
///
/// `trace_types_lock` is held while the iterator and the handles it
/// gives are used.
unsafe fn trace_arrays() -> impl Iterator<Item = TraceArray> {
    let mut tr = ptr::null_mut();
    core::iter::from_fn(move || {
        // SAFETY: walked under `trace_types_lock` (the contract), which
        // keeps every array on the list.
        tr = unsafe { rftrace_tr_next(tr) };
        // SAFETY: as above.
        unsafe { TraceArray::from_raw(tr) }
    })
}

/// A module is going: in every trace array's filter and notrace sets,
/// the entries of its functions stay but match nothing any more (their
/// address becomes 0), as in the C core: a filter that named only them
/// stays non-empty and traces nothing.
///
/// # Safety
///
/// `m` is the module; no core lock is held.
pub(crate) unsafe fn scrub_module(m: *mut bindings::module) {
    // The tracing core's lock over its list of trace arrays.
    let _t = Guard::of(ptr::addr_of_mut!(trace_types_lock));
    // SAFETY: `trace_types_lock` is held while the handles are used.
    for tr in unsafe { trace_arrays() } {
        let op = tr.ops();
        // SAFETY: a trace array's ops, initialised when its sets exist.
        if !op.is_null() && unsafe { !(*op).func_hash.is_null() } {
            // SAFETY: as above.
            let _r = Guard::of(unsafe { ptr::addr_of_mut!((*(*op).func_hash).regex_lock) });
            let _g = Guard::lock();
            if let Some(g) = crate::table::of_module(m) {
                // SAFETY: the sets are only changed under these locks; a
                // reader sees the old or the new address, both harmless.
                unsafe {
                    let (f, n) = ops::sets(op);
                    for h in [f, n] {
                        hash::for_each(h, |e| {
                            if g.find((*e).ip as u64).is_some() {
                                ptr::write_volatile(ptr::addr_of_mut!((*e).ip), 0);
                            }
                        });
                    }
                }
            }
        }
    }
}

/// # Safety
///
/// No core lock is held.
unsafe fn apply_mods(tr: TraceArray, notrace: bool, name: &[u8]) {
    let op = tr.ops();
    if op.is_null() {
        return;
    }
    // SAFETY: `op` is the trace array's ops.
    unsafe { ops::ops_init_locked(op) };
    // SAFETY: initialised.
    let _r = Guard::of(unsafe { ptr::addr_of_mut!((*(*op).func_hash).regex_lock) });
    let _g = Guard::lock();
    // SAFETY: stable under the regex lock.
    let (f, n) = unsafe { ops::sets(op) };
    // SAFETY: as above.
    let Ok(mut h) = (unsafe { FnSet::copy_of(if notrace { n } else { f }) }) else {
        return;
    };
    let mut used = false;
    // SAFETY: `ftrace_lock` held; entries are ours.
    unsafe {
        for m in mods(tr, notrace) {
            if (*m).module.as_slice() != name {
                continue;
            }
            list_del(ptr::addr_of_mut!((*m).list));
            let func: &[u8] = if (*m).func.is_empty() {
                b"*"
            } else {
                &(*m).func
            };
            let _ = match_records_locked(&mut h, func, Some(name));
            drop(KBox::from_raw(m));
            used = true;
        }
        if used {
            if !notrace {
                h.set_mod(has_mods(tr, false));
            }
            let _ = commit(op, notrace, &h);
        }
    }
}
