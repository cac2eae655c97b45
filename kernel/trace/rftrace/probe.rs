// SPDX-License-Identifier: GPL-2.0

//! The commands of the filter files (`func:command[:param]`), the
//! function probes they register (one ops per trace array and probe
//! type, calling the probe on the functions of its filter), and the
//! func mapper (per-function data of probes, looked up on the hot path).

use crate::filter::{commit, match_records, match_records_locked};
use crate::hash::{self, FtraceHash};
use crate::logic::glob::{Kind, Pattern};
use crate::logic::parser::BUF_SIZE;
use crate::logic::recursion;
use crate::ops::{self, list_add, list_del, list_entries, Ops};
use crate::sys::{dead, to_errno, CoreGuard, Guard, Locked};
use crate::tracefs::Out;
use core::ptr;
use kernel::bindings;
use kernel::error::to_result;
use kernel::ffi::{c_char, c_int, c_ulong, c_void};
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

/// `struct ftrace_probe_ops` (kernel/trace/trace.h).
#[repr(C)]
pub struct FtraceProbeOps {
    func: Option<
        unsafe extern "C" fn(
            ip: c_ulong,
            parent_ip: c_ulong,
            tr: *mut c_void,
            ops: *mut FtraceProbeOps,
            data: *mut c_void,
        ),
    >,
    init: Option<
        unsafe extern "C" fn(
            ops: *mut FtraceProbeOps,
            tr: *mut c_void,
            ip: c_ulong,
            init_data: *mut c_void,
            data: *mut *mut c_void,
        ) -> c_int,
    >,
    free: Option<
        unsafe extern "C" fn(
            ops: *mut FtraceProbeOps,
            tr: *mut c_void,
            ip: c_ulong,
            data: *mut c_void,
        ),
    >,
    print: Option<
        unsafe extern "C" fn(
            m: *mut bindings::seq_file,
            ip: c_ulong,
            ops: *mut FtraceProbeOps,
            data: *mut c_void,
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
/// `h` is the file's private set; `tr` null or a referenced trace array.
pub(crate) unsafe fn run_command(
    tr: *mut c_void,
    h: *mut FtraceHash,
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
                tr,
                h,
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
/// `ftrace_lock` is held; `tr` is valid.
unsafe fn mods(tr: *mut c_void, notrace: bool) -> impl Iterator<Item = *mut ModLoad> {
    // SAFETY: per the function's contract.
    unsafe { list_entries::<ModLoad>(crate::sys::rftrace_tr_mod_list(tr, notrace), MOD_LIST_OFF) }
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
    tr: *mut c_void,
    h: *mut FtraceHash,
    func: &[u8],
    module: Option<&[u8]>,
    enable: bool,
) -> Result {
    if tr.is_null() {
        return Err(ENODEV);
    }
    // A missing module name is refused (the C core dereferences NULL).
    let Some(module) = module else {
        return Err(EINVAL);
    };
    // SAFETY: per the function's contract.
    if unsafe { match_records(h, func, Some(module)) }? {
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
    unsafe {
        list_add(
            ptr::addr_of_mut!((*raw).list),
            crate::sys::rftrace_tr_mod_list(tr, notrace),
        )
    };
    Ok(())
}

/// Drops the cached `:mod:` entries of a filter file (an `O_TRUNC` open).
///
/// # Safety
///
/// `ftrace_lock` is held; `tr` is valid.
pub(crate) unsafe fn clear_mod_list(tr: *mut c_void, notrace: bool) {
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
/// `ftrace_lock` is held; `tr` is valid.
pub(crate) unsafe fn has_mods(tr: *mut c_void, notrace: bool) -> bool {
    // SAFETY: per the function's contract.
    unsafe { mods(tr, notrace) }.next().is_some()
}

/// Lists the cached `:mod:` entries, newest first.
///
/// # Safety
///
/// `ftrace_lock` is held; `tr` is valid.
pub(crate) unsafe fn render_mods(o: &mut Out, tr: *mut c_void, notrace: bool) {
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
    // SAFETY: walked under `trace_types_lock`.
    let mut tr = unsafe { rftrace_tr_next(ptr::null_mut()) };
    while !tr.is_null() {
        for notrace in [false, true] {
            // SAFETY: `tr` is live under `trace_types_lock`.
            unsafe { apply_mods(tr, notrace, name) };
        }
        // SAFETY: as above.
        tr = unsafe { rftrace_tr_next(tr) };
    }
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
    // SAFETY: walked under `trace_types_lock`.
    let mut tr = unsafe { rftrace_tr_next(ptr::null_mut()) };
    while !tr.is_null() {
        // SAFETY: `tr` is live under `trace_types_lock`.
        let op = unsafe { crate::sys::rftrace_tr_ops(tr) };
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
        // SAFETY: as above.
        tr = unsafe { rftrace_tr_next(tr) };
    }
}

/// # Safety
///
/// `tr` is a live trace array.
unsafe fn apply_mods(tr: *mut c_void, notrace: bool, name: &[u8]) {
    // SAFETY: per the function's contract.
    let op = unsafe { crate::sys::rftrace_tr_ops(tr) };
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
    let h = unsafe { hash::copy(if notrace { n } else { f }, hash::DEFAULT_BITS) };
    if h.is_null() {
        return;
    }
    let mut used = false;
    // SAFETY: `ftrace_lock` held; entries are ours; `h` is private.
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
            let _ = match_records_locked(h, func, Some(name));
            drop(KBox::from_raw(m));
            used = true;
        }
        if used {
            if !notrace {
                if has_mods(tr, false) {
                    (*h).flags |= hash::FL_MOD;
                } else {
                    (*h).flags &= !hash::FL_MOD;
                }
            }
            let _ = commit(op, notrace, h);
        }
        hash::free(h);
    }
}

// --- function probes -----------------------------------------------------

/// One probe type registered on a trace array: its ops traces the
/// functions the probe is on.
#[repr(C)]
struct Probe {
    ops: Ops,
    probe_ops: *mut FtraceProbeOps,
    tr: *mut c_void,
    list: bindings::list_head,
    data: *mut c_void,
}

const PROBE_LIST_OFF: usize = core::mem::offset_of!(Probe, list);

/// The callback of a probe's ops.
///
/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn probe_call(
    ip: c_ulong,
    parent_ip: c_ulong,
    op: *mut Ops,
    _fregs: *mut bindings::ftrace_regs,
) {
    // `ops` is the first member of the probe.
    let p = op.cast::<Probe>();
    // The function recursion guard, as C's probe callback takes it.
    crate::task::guarded(crate::task::current(), recursion::FTRACE_START, || {
        // SAFETY: only probe ops have this callback; a probe outlives its
        // registration.
        unsafe {
            if let Some(f) = (*(*p).probe_ops).func {
                f(ip, parent_ip, (*p).tr, (*p).probe_ops, (*p).data);
            }
        }
    });
}

/// The probes of `tr`.
///
/// # Safety
///
/// `ftrace_lock` is held; `tr` is valid.
unsafe fn probes(tr: *mut c_void) -> impl Iterator<Item = *mut Probe> {
    // SAFETY: per the function's contract.
    unsafe { list_entries::<Probe>(crate::sys::rftrace_tr_func_probes(tr), PROBE_LIST_OFF) }
}

/// Puts `probe_ops` on the functions matching `glob` in `tr`. Returns
/// how many functions were new.
///
/// # Safety
///
/// `glob` is a NUL-terminated string; `tr` a valid trace array;
/// `probe_ops` valid while registered.
#[no_mangle]
pub unsafe extern "C" fn register_ftrace_function_probe(
    glob: *mut c_char,
    tr: *mut c_void,
    probe_ops: *mut FtraceProbeOps,
    data: *mut c_void,
) -> c_int {
    if tr.is_null() || glob.is_null() || dead() {
        return EINVAL.to_errno();
    }
    // SAFETY: per the function's contract.
    let g = unsafe { CStr::from_char_ptr(glob) }.as_bytes();
    if g.first() == Some(&b'!') {
        return EINVAL.to_errno();
    }
    let _g = Guard::lock();
    // SAFETY: `ftrace_lock` held; `tr` valid.
    let mut p = unsafe { probes(tr) }.find(|&p| unsafe { (*p).probe_ops } == probe_ops);
    let fresh = p.is_none();
    if fresh {
        let Ok(b) = KBox::new(
            Probe {
                ops: crate::sys::zeroed_ops(),
                probe_ops,
                tr,
                list: bindings::list_head {
                    next: ptr::null_mut(),
                    prev: ptr::null_mut(),
                },
                data: ptr::null_mut(),
            },
            GFP_KERNEL,
        ) else {
            return ENOMEM.to_errno();
        };
        let raw = KBox::into_raw(b);
        // SAFETY: fresh; `ftrace_lock` held.
        unsafe {
            (*raw).ops.func = Some(probe_call);
            (*raw).ops.private = tr;
            ops::ops_init(ptr::addr_of_mut!((*raw).ops));
            list_add(
                ptr::addr_of_mut!((*raw).list),
                crate::sys::rftrace_tr_func_probes(tr),
            );
        }
        p = Some(raw);
    }
    let Some(p) = p else {
        return ENOMEM.to_errno();
    };
    // SAFETY: a live probe, `ftrace_lock` held throughout.
    let r = unsafe { add_functions(p, g, data) };
    // SAFETY: as above.
    unsafe {
        if hash::is_empty(ops::sets(ptr::addr_of!((*p).ops)).0)
            && (*p).ops.flags & ops::F_ENABLED == 0
        {
            drop_probe(p);
        }
    }
    r.unwrap_or_else(|e| e.to_errno())
}

/// Adds the functions matching `glob` to probe `p`; returns how many.
///
/// # Safety
///
/// `ftrace_lock` held; `p` a live probe.
unsafe fn add_functions(p: *mut Probe, glob: &[u8], data: *mut c_void) -> Result<c_int> {
    // SAFETY: per the function's contract.
    unsafe {
        let op = ptr::addr_of_mut!((*p).ops);
        let old = ops::sets(op).0;
        let h = hash::copy(old, hash::DEFAULT_BITS);
        if h.is_null() {
            return Err(ENOMEM);
        }
        let r = match match_records_locked(h, glob, None) {
            Ok(true) => Ok(()),
            Ok(false) => Err(EINVAL),
            Err(e) => Err(e),
        };
        if let Err(e) = r {
            hash::free(h);
            return Err(e);
        }
        let po = (*p).probe_ops;
        let mut count = 0;
        let mut err = Ok(());
        hash::for_each(h, |e| {
            let ip = (*e).ip;
            if err.is_err() || hash::contains(old, ip as u64) {
                return;
            }
            if let Some(init) = (*po).init {
                let r = init(po, (*p).tr, ip, data, ptr::addr_of_mut!((*p).data));
                if r < 0 {
                    if count > 0 {
                        if let Some(free) = (*po).free {
                            free(po, (*p).tr, 0, (*p).data);
                        }
                    }
                    (*p).data = ptr::null_mut();
                    err = to_result(r);
                    return;
                }
            }
            count += 1;
        });
        if err.is_ok() && count == 0 {
            err = Err(EINVAL);
        }
        if err.is_ok() {
            err = commit(op, false, h);
            if err.is_ok() && !crate::view::has(op, ops::F_ENABLED) {
                err = ops::startup(op);
            }
        }
        hash::free(h);
        err.map(|()| count)
    }
}

/// Frees a probe whose ops is not registered.
///
/// # Safety
///
/// `ftrace_lock` held; `p` a live probe, not registered.
unsafe fn drop_probe(p: *mut Probe) {
    // SAFETY: per the function's contract.
    unsafe {
        list_del(ptr::addr_of_mut!((*p).list));
        let op = ptr::addr_of_mut!((*p).ops);
        hash::free_rcu(ops::set_hash(op, false, ptr::null_mut()));
        hash::free_rcu(ops::set_hash(op, true, ptr::null_mut()));
        drop(KBox::from_raw(p));
    }
}

/// Takes `probe_ops` off the functions matching `glob` (all for null,
/// empty or `*`) in `tr`.
///
/// # Safety
///
/// `glob` is null or NUL-terminated; `tr` valid.
#[no_mangle]
pub unsafe extern "C" fn unregister_ftrace_function_probe_func(
    glob: *mut c_char,
    tr: *mut c_void,
    probe_ops: *mut FtraceProbeOps,
) -> c_int {
    if tr.is_null() {
        return EINVAL.to_errno();
    }
    let g: &[u8] = if glob.is_null() {
        &[]
    } else {
        // SAFETY: per the function's contract.
        unsafe { CStr::from_char_ptr(glob) }.as_bytes()
    };
    let _l = Guard::lock();
    // SAFETY: `ftrace_lock` held.
    let found = unsafe { probes(tr) }.find(|&p| unsafe { (*p).probe_ops } == probe_ops);
    let Some(p) = found else {
        return ENODEV.to_errno();
    };
    // SAFETY: a live probe under `ftrace_lock`.
    to_errno(unsafe { remove_functions(p, g) })
}

/// # Safety
///
/// `ftrace_lock` held; `p` a live probe.
unsafe fn remove_functions(p: *mut Probe, glob: &[u8]) -> Result {
    let all = glob.is_empty() || glob == b"*";
    let pat = Pattern::parse(glob);
    // SAFETY: per the function's contract.
    unsafe {
        let op = ptr::addr_of_mut!((*p).ops);
        let old = ops::sets(op).0;
        if hash::is_empty(old) {
            return Err(EINVAL);
        }
        let h = hash::copy(old, hash::DEFAULT_BITS);
        if h.is_null() {
            return Err(ENOMEM);
        }
        let mut removed = KVec::<u64>::new();
        let mut buf = [0u8; bindings::KSYM_NAME_LEN as usize];
        let mut oom = false;
        hash::for_each(h, |e| {
            let ip = (*e).ip as u64;
            let hit = all
                || (pat.kind != Kind::Index
                    && crate::tracefs::lookup(ip, &mut buf).is_some_and(|s| pat.matches(s.name)));
            if hit {
                if removed.push(ip, GFP_KERNEL).is_err() {
                    oom = true;
                    return;
                }
                hash::remove_entry(h, e);
            }
        });
        if oom {
            hash::free(h);
            return Err(ENOMEM);
        }
        if removed.is_empty() {
            hash::free(h);
            return Err(EINVAL);
        }
        let now_empty = hash::count(h) == 0;
        let mut r = if now_empty && crate::view::has(op, ops::F_ENABLED) {
            ops::shutdown(op)
        } else {
            Ok(())
        };
        if r.is_ok() {
            r = commit(op, false, h);
        }
        hash::free(h);
        let po = (*p).probe_ops;
        if let Some(free) = (*po).free {
            for &ip in removed.iter() {
                free(po, (*p).tr, ip as c_ulong, (*p).data);
            }
        }
        if now_empty {
            drop_probe(p);
        }
        r
    }
}

/// Removes every probe of `tr` (the trace array is going away).
///
/// # Safety
///
/// `tr` is valid.
#[no_mangle]
pub unsafe extern "C" fn clear_ftrace_function_probes(tr: *mut c_void) {
    let _l = Guard::lock();
    loop {
        // SAFETY: `ftrace_lock` held.
        let first = unsafe { probes(tr) }.next();
        let Some(p) = first else {
            return;
        };
        // SAFETY: a live probe under `ftrace_lock`.
        if unsafe { remove_functions(p, b"") }.is_err() {
            // SAFETY: as above; not registered after a failure to shut down
            // only if it was not registered at all.
            unsafe {
                if (*p).ops.flags & ops::F_ENABLED != 0 {
                    let _ = ops::shutdown(ptr::addr_of_mut!((*p).ops));
                }
                drop_probe(p);
            }
        }
    }
}

/// Lists the probes of `tr`, as set_ftrace_filter shows them.
///
/// # Safety
///
/// `ftrace_lock` is held; `tr` is valid.
pub(crate) unsafe fn render_probes(o: &mut Out, tr: *mut c_void) {
    let mut page = [0u8; 512];
    // SAFETY: per the function's contract.
    for p in unsafe { probes(tr) } {
        // SAFETY: live probes under `ftrace_lock`.
        unsafe {
            let po = (*p).probe_ops;
            let h = ops::sets(ptr::addr_of!((*p).ops)).0;
            hash::for_each(h, |e| {
                let ip = (*e).ip;
                match (*po).print {
                    Some(print) => {
                        // A seq_file over a local buffer: the print
                        // callbacks only format into it.
                        let mut m: bindings::seq_file = core::mem::zeroed();
                        m.buf = page.as_mut_ptr().cast();
                        m.size = page.len();
                        print(&mut m, ip, po, (*p).data);
                        o.bytes(&page[..m.count.min(page.len())]);
                    }
                    None => {
                        o.sym(ip as u64, false);
                        o.bytes(b":");
                        o.sym((*po).func.map_or(0, |f| f as *const () as u64), false);
                        o.bytes(b"\n");
                    }
                }
            });
        }
    }
}

// --- func mapper -----------------------------------------------------------

/// An entry of a mapper: a set entry and its data.
#[repr(C)]
struct MapEntry {
    entry: bindings::ftrace_func_entry,
    data: *mut c_void,
}

/// A new, empty mapper (a set with data per function).
#[no_mangle]
pub extern "C" fn allocate_ftrace_func_mapper() -> *mut FtraceHash {
    hash::alloc(hash::DEFAULT_BITS)
}

/// The data slot of `ip`, or null. Lock-free: probes call it when hit.
///
/// # Safety
///
/// `m` is a mapper.
#[no_mangle]
pub unsafe extern "C" fn ftrace_func_mapper_find_ip(
    m: *mut FtraceHash,
    ip: c_ulong,
) -> *mut *mut c_void {
    // SAFETY: per the function's contract.
    let e = unsafe { hash::lookup(m, ip as u64) };
    if e.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: a mapper's entries are `MapEntry`s.
    unsafe { ptr::addr_of_mut!((*e.cast::<MapEntry>()).data) }
}

/// Maps `ip` to `data`; `EBUSY` if it is mapped.
///
/// # Safety
///
/// `m` is a mapper; callers serialize changes.
#[no_mangle]
pub unsafe extern "C" fn ftrace_func_mapper_add_ip(
    m: *mut FtraceHash,
    ip: c_ulong,
    data: *mut c_void,
) -> c_int {
    // SAFETY: per the function's contract.
    unsafe {
        if hash::contains(m, ip as u64) {
            return EBUSY.to_errno();
        }
        let e = hash::insert_sized(m, ip as u64, core::mem::size_of::<MapEntry>());
        if e.is_null() {
            return ENOMEM.to_errno();
        }
        (*e.cast::<MapEntry>()).data = data;
    }
    0
}

/// Unmaps `ip`; returns its data.
///
/// # Safety
///
/// `m` is a mapper; callers serialize changes.
#[no_mangle]
pub unsafe extern "C" fn ftrace_func_mapper_remove_ip(
    m: *mut FtraceHash,
    ip: c_ulong,
) -> *mut c_void {
    // SAFETY: per the function's contract.
    unsafe {
        let e = hash::lookup(m, ip as u64);
        if e.is_null() {
            return ptr::null_mut();
        }
        let d = (*e.cast::<MapEntry>()).data;
        hash::remove_entry(m, e);
        d
    }
}

/// Frees a mapper, handing each data to `free_func`.
///
/// # Safety
///
/// `m` is null or a mapper nobody uses any more.
#[no_mangle]
pub unsafe extern "C" fn free_ftrace_func_mapper(
    m: *mut FtraceHash,
    free_func: Option<unsafe extern "C" fn(data: *mut c_void) -> c_int>,
) {
    if m.is_null() {
        return;
    }
    // SAFETY: per the function's contract.
    unsafe {
        if let Some(f) = free_func {
            hash::for_each(m, |e| {
                f((*e.cast::<MapEntry>()).data);
            });
        }
        hash::free(m);
    }
}
