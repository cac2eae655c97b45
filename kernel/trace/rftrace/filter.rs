// SPDX-License-Identifier: GPL-2.0

//! Which functions an ops traces: the filter APIs (`ftrace_set_filter()`
//! and friends), matching patterns against the call sites, and the
//! tracefs filter files (set_ftrace_filter, set_ftrace_notrace,
//! stack_trace_filter through `ftrace_regex_open()`, set_graph_function,
//! set_graph_notrace), with the C core's semantics
//! (Documentation/design/filter-files.md).

use crate::files::{self, Lines, Out, Text};
use crate::hash::{self, FtraceHash};
use crate::logic::glob::{Kind, Pattern};
use crate::logic::parser::{Parser, Token, BUF_SIZE};
use crate::logic::sites::flags as sf;
use crate::ops::{self, Ops};
use crate::{dead, global_ops, probe, table, CGlobal, Guard, EBUSY, EINVAL, ENODEV, ENOMEM};
use core::ptr;
use core::sync::atomic::Ordering;
use kernel::bindings;
use kernel::c_str;
use kernel::ffi::{c_char, c_int, c_uchar, c_ulong, c_void};
use kernel::prelude::*;

/// Serializes the token processing of all filter files.
static PARSER_LOCK: CGlobal<bindings::mutex> = CGlobal::new(
    // SAFETY: initialised by `init_locks()` at boot.
    unsafe { core::mem::zeroed() },
);
/// Serializes the graph filter files' commits.
static GRAPH_LOCK: CGlobal<bindings::mutex> = CGlobal::new(
    // SAFETY: as above.
    unsafe { core::mem::zeroed() },
);

/// # Safety
///
/// Early boot, once.
pub(crate) unsafe fn init_locks() {
    // SAFETY: per the function's contract.
    unsafe {
        crate::mutex_init!(PARSER_LOCK.get(), "ftrace_parser_lock");
        crate::mutex_init!(GRAPH_LOCK.get(), "ftrace_graph_lock");
    }
}

const FLAG_FILTER: c_int = bindings::FTRACE_ITER_FILTER as c_int;
const FLAG_NOTRACE: c_int = bindings::FTRACE_ITER_NOTRACE as c_int;
const FLAG_PROBES: c_int = bindings::FTRACE_ITER_DO_PROBES as c_int;

/// Adds `ip` to, or with `clear` removes it from, `h`.
///
/// # Safety
///
/// `h` is a private set.
unsafe fn enter(h: *mut FtraceHash, ip: u64, clear: bool) -> Result<(), c_int> {
    // SAFETY: per the function's contract.
    unsafe {
        if clear {
            hash::remove(h, ip);
            Ok(())
        } else if hash::add(h, ip) {
            Ok(())
        } else {
            Err(ENOMEM)
        }
    }
}

/// `match_records()`: adds to (or, for a `!` pattern, removes from) `h`
/// the sites whose function matches `func` (and `module`, when given).
/// Returns whether any matched.
///
/// # Safety
///
/// `h` is a private set.
pub(crate) unsafe fn match_records(
    h: *mut FtraceHash,
    func: &[u8],
    module: Option<&[u8]>,
) -> Result<bool, c_int> {
    let _g = Guard::lock();
    // SAFETY: per the function's contract; `ftrace_lock` is held.
    unsafe { match_records_locked(h, func, module) }
}

/// [`match_records`] with `ftrace_lock` held.
///
/// # Safety
///
/// `ftrace_lock` is held; `h` is a private set.
pub(crate) unsafe fn match_records_locked(
    h: *mut FtraceHash,
    func: &[u8],
    module: Option<&[u8]>,
) -> Result<bool, c_int> {
    let pat = Pattern::parse(func);
    let modpat = module.map(Pattern::parse);
    let clear = pat.negated;
    if dead() {
        return Ok(false);
    }
    if pat.kind == Kind::Index {
        let Some(c) = pat.index().and_then(|i| table::all().nth(i)) else {
            return Ok(false);
        };
        // SAFETY: per the function's contract.
        unsafe { enter(h, c.ip(), clear)? };
        return Ok(true);
    }
    let mut found = false;
    let mut buf = [0u8; bindings::KSYM_NAME_LEN as usize];
    for c in table::all() {
        // SAFETY: `ftrace_lock` is held.
        let s = unsafe { c.read() };
        if s.has(sf::DISABLED) {
            continue;
        }
        let Some(sym) = files::lookup(s.ip, &mut buf) else {
            continue;
        };
        if !sym.is_entry() {
            continue;
        }
        let hit = match modpat {
            None => pat.matches(sym.name),
            Some(mp) => {
                let exclude = mp.negated;
                let qualifies = if mp.search.is_empty() {
                    exclude != sym.module.is_some()
                } else {
                    sym.module.is_some_and(|m| mp.matches(m)) != exclude
                };
                qualifies && (pat.search.is_empty() || pat.matches(sym.name))
            }
        };
        if hit {
            found = true;
            // SAFETY: per the function's contract.
            unsafe { enter(h, s.ip, clear)? };
        }
    }
    Ok(found)
}

/// Publishes the private set `private` as the filter (or notrace) set of
/// `ops` and re-plans the sites (`ftrace_hash_move_and_update_ops()`).
///
/// # Safety
///
/// `ftrace_lock` is held; `ops` is initialised; `private` is null or a
/// valid set, which stays the caller's.
pub(crate) unsafe fn commit(ops: *mut Ops, notrace: bool, private: *const FtraceHash) -> c_int {
    // SAFETY: per the function's contract.
    unsafe {
        let flags = crate::view::flags(ops);
        if notrace && flags & ops::F_IPMODIFY != 0 {
            return EINVAL;
        }
        let Ok(new) = hash::for_commit(private) else {
            return ENOMEM;
        };
        if !notrace && flags & ops::F_IPMODIFY != 0 && flags & ops::F_ENABLED != 0 {
            if hash::is_empty(new) {
                hash::free(new);
                return EINVAL;
            }
            if ops::ipmodify_conflict(ops, new) {
                hash::free(new);
                return EBUSY;
            }
        }
        let old = ops::set_hash(ops, notrace, new);
        // Registered ops that use these sets (`global_ops`' may be shared).
        let users = ops::list().any(|o| (*o).func_hash == (*ops).func_hash);
        let r = match ops::refresh_managers() {
            // Nothing registered uses these sets: no site changes.
            Ok(0) if !users => 0,
            Ok(managers) => {
                // An enabled ops alone, with explicit filters before and
                // after, changes only the sites of the two.
                let both = !notrace
                    && managers == 0
                    && !hash::is_empty(old)
                    && !hash::is_empty(new)
                    && hash::is_empty(ops::sets(ops).1);
                let scope: &[*const FtraceHash] = if both { &[old, new] } else { &[] };
                // Fails only when a site did not hold what its record
                // said, which killed tracing.
                ops::update_scope(scope).err().unwrap_or(0)
            }
            Err(e) => e,
        };
        hash::free_rcu(old);
        r
    }
}

/// `ftrace_set_hash()`: the common part of the filter APIs.
///
/// # Safety
///
/// `ops` is valid; `buf` is null or `len` bytes; `ips` null or `cnt`
/// addresses.
#[allow(clippy::too_many_arguments)]
unsafe fn set_hash(
    ops: *mut Ops,
    buf: *const c_uchar,
    len: c_int,
    ips: *const c_ulong,
    cnt: u32,
    remove: bool,
    reset: bool,
    notrace: bool,
) -> c_int {
    if dead() {
        return ENODEV;
    }
    {
        let _g = Guard::lock();
        // SAFETY: per the function's contract; `ftrace_lock` held.
        unsafe { ops::ops_init(ops) };
    }
    // SAFETY: initialised above.
    let _r = Guard::of(unsafe { ptr::addr_of_mut!((*(*ops).func_hash).regex_lock) });
    // SAFETY: the sets are stable under the regex lock for writers.
    let (f, n) = unsafe { ops::sets(ops) };
    let orig = if notrace { n } else { f };
    let few = (1..=IN_PLACE_MAX).contains(&(cnt as usize));
    if remove && !reset && !notrace && buf.is_null() && !ips.is_null() && few {
        // SAFETY: per the function's contract; the regex lock is held.
        if let Some(r) = unsafe { remove_in_place(ops, orig, ips, cnt as usize) } {
            return r;
        }
    }
    let h = if reset {
        hash::alloc(hash::DEFAULT_BITS)
    } else {
        // SAFETY: a published set, stable while we hold the regex lock.
        unsafe { hash::copy(orig, hash::DEFAULT_BITS) }
    };
    if h.is_null() {
        return ENOMEM;
    }
    let ret = (|| {
        if !buf.is_null() && len > 0 {
            // SAFETY: per the function's contract.
            let pat = unsafe { core::slice::from_raw_parts(buf, len as usize) };
            let pat = pat.split(|&b| b == 0).next().unwrap_or(&[]);
            // SAFETY: `h` is private.
            match unsafe { match_records(h, pat, None) } {
                Ok(true) => {}
                Ok(false) => return EINVAL,
                Err(e) => return e,
            }
        }
        if !ips.is_null() {
            for i in 0..cnt as usize {
                // SAFETY: per the function's contract.
                let ip = crate::ftrace_location(unsafe { *ips.add(i) }) as u64;
                if ip == 0 {
                    return EINVAL;
                }
                // SAFETY: `h` is private.
                unsafe {
                    if remove {
                        if !hash::remove(h, ip) {
                            return crate::err(bindings::ENOENT);
                        }
                    } else if !hash::add(h, ip) {
                        return ENOMEM;
                    }
                }
            }
        }
        let _g = Guard::lock();
        // SAFETY: `ftrace_lock` held; `h` valid.
        unsafe { commit(ops, notrace, h) }
    })();
    // SAFETY: private, and `commit` copied what it published.
    unsafe { hash::free(h) };
    ret
}

/// The most addresses [`remove_in_place`] takes at once.
const IN_PLACE_MAX: usize = 8;

/// `ftrace_set_filter_ip()` and friends removing a few addresses: done in
/// the published filter itself, so that it needs no memory. Callers take
/// an address off on their way out (kprobes' disarm, an unregistration),
/// where a failure has no good answer: kprobes warns and keeps a probe
/// that its module's unload then frees, which the C core, which copies
/// the filter first, does when memory is short (`tests/fault-inject-modunload.sh`).
/// Kprobes with a post handler use an IPMODIFY ops, so those are done
/// here too. `None` leaves the change to the copying path: a sub-ops, any
/// ops when sub-ops are managed, and an enabled ops whose filter this
/// empties (it then traces every function, a change of every site).
///
/// # Safety
///
/// `ops` is initialised and its regex lock held; `orig` is its published
/// filter (or null); `ips` holds `cnt` addresses, `cnt <= IN_PLACE_MAX`.
unsafe fn remove_in_place(
    ops: *mut Ops,
    orig: *mut FtraceHash,
    ips: *const c_ulong,
    cnt: usize,
) -> Option<c_int> {
    // SAFETY: per the function's contract (a sub-ops stays one).
    if unsafe { crate::view::has(ops, ops::F_SUBOP) } {
        return None;
    }
    let mut at = [0u64; IN_PLACE_MAX];
    for (i, a) in at[..cnt].iter_mut().enumerate() {
        // SAFETY: per the function's contract.
        *a = crate::ftrace_location(unsafe { *ips.add(i) }) as u64;
        if *a == 0 {
            return Some(EINVAL);
        }
    }
    let at = &at[..cnt];
    let g = Guard::lock();
    // SAFETY: `ftrace_lock` is held.
    if unsafe { ops::any_manager() } {
        return None;
    }
    // Each address must be there, once, or nothing changes (ENOENT, as
    // the copying path answers).
    for (i, &ip) in at.iter().enumerate() {
        // SAFETY: the published filter, stable for writers under the
        // regex lock.
        if at[..i].contains(&ip) || !unsafe { hash::contains(orig, ip) } {
            return Some(crate::err(bindings::ENOENT));
        }
    }
    // SAFETY: `ftrace_lock`, held, keeps the flags and the published
    // filter as they are.
    let (flags, count) = unsafe { (crate::view::flags(ops), hash::count(orig)) };
    if flags & ops::F_ENABLED != 0 && count == at.len() {
        // An enabled IPMODIFY ops may not trace every function (EINVAL,
        // as C answers, nothing changed).
        return if flags & ops::F_IPMODIFY != 0 {
            Some(EINVAL)
        } else {
            None
        };
    }
    let mut gone = [ptr::null_mut(); IN_PLACE_MAX];
    for (e, &ip) in gone.iter_mut().zip(at) {
        // SAFETY: as above; present, checked above.
        unsafe {
            *e = hash::lookup(orig, ip);
            hash::unlink_published(orig, *e);
        }
    }
    // SAFETY: `ftrace_lock` is held; sleepable. Only these sites can
    // change; the update fails only when tracing died.
    let r = unsafe { ops::update_ips(at) }.err().unwrap_or(0);
    drop(g);
    // SAFETY: sleepable; the dispatchers read the filter under RCU or
    // with preemption off, which this grace period waits out.
    unsafe { bindings::synchronize_rcu() };
    for &e in &gone[..cnt] {
        // SAFETY: unlinked above, and no reader is left.
        unsafe { bindings::kfree(e.cast()) };
    }
    Some(r)
}

/// Sets (`reset`) or extends the filter of `ops` with the functions that
/// match the pattern `buf`.
///
/// # Safety
///
/// `ops` is valid; `buf` is null or `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn ftrace_set_filter(
    ops: *mut Ops,
    buf: *mut c_uchar,
    len: c_int,
    reset: c_int,
) -> c_int {
    // SAFETY: per the function's contract.
    unsafe { set_hash(ops, buf, len, ptr::null(), 0, false, reset != 0, false) }
}

/// As [`ftrace_set_filter`], for the notrace set.
///
/// # Safety
///
/// As for [`ftrace_set_filter`].
#[no_mangle]
pub unsafe extern "C" fn ftrace_set_notrace(
    ops: *mut Ops,
    buf: *mut c_uchar,
    len: c_int,
    reset: c_int,
) -> c_int {
    // SAFETY: per the function's contract.
    unsafe { set_hash(ops, buf, len, ptr::null(), 0, false, reset != 0, true) }
}

/// Adds (or removes) one function, by address, to the filter of `ops`.
///
/// # Safety
///
/// `ops` is valid.
#[no_mangle]
pub unsafe extern "C" fn ftrace_set_filter_ip(
    ops: *mut Ops,
    ip: c_ulong,
    remove: c_int,
    reset: c_int,
) -> c_int {
    let ips = [ip];
    // SAFETY: per the function's contract; one address.
    unsafe {
        set_hash(
            ops,
            ptr::null(),
            0,
            ips.as_ptr(),
            1,
            remove != 0,
            reset != 0,
            false,
        )
    }
}

/// Adds (or removes) functions, by address, to the filter of `ops`.
///
/// # Safety
///
/// `ops` is valid; `ips` holds `cnt` addresses.
#[no_mangle]
pub unsafe extern "C" fn ftrace_set_filter_ips(
    ops: *mut Ops,
    ips: *mut c_ulong,
    cnt: u32,
    remove: c_int,
    reset: c_int,
) -> c_int {
    // SAFETY: per the function's contract.
    unsafe {
        set_hash(
            ops,
            ptr::null(),
            0,
            ips,
            cnt,
            remove != 0,
            reset != 0,
            false,
        )
    }
}

/// The filter of `global_ops` (the function tracer's top level).
///
/// # Safety
///
/// `buf` is null or `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn ftrace_set_global_filter(buf: *mut c_uchar, len: c_int, reset: c_int) {
    // SAFETY: per the function's contract.
    let _ = unsafe {
        set_hash(
            global_ops.get(),
            buf,
            len,
            ptr::null(),
            0,
            false,
            reset != 0,
            false,
        )
    };
}

/// # Safety
///
/// `buf` is null or `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn ftrace_set_global_notrace(buf: *mut c_uchar, len: c_int, reset: c_int) {
    // SAFETY: per the function's contract.
    let _ = unsafe {
        set_hash(
            global_ops.get(),
            buf,
            len,
            ptr::null(),
            0,
            false,
            reset != 0,
            true,
        )
    };
}

/// Makes `ops` use the filter of `global_ops`.
///
/// # Safety
///
/// `ops` is valid and not registered.
#[no_mangle]
pub unsafe extern "C" fn ftrace_ops_set_global_filter(ops: *mut Ops) {
    // SAFETY: per the function's contract.
    unsafe {
        if crate::view::has(ops, bindings::FTRACE_OPS_FL_INITIALIZED as c_ulong) {
            return;
        }
        let _g = Guard::lock();
        ops::ops_init(ops);
        (*ops).func_hash = ptr::addr_of_mut!((*global_ops.get()).local_hash);
    }
}

/// Frees the sets of an ops that is not registered.
///
/// # Safety
///
/// `ops` is valid and not registered.
#[no_mangle]
pub unsafe extern "C" fn ftrace_free_filter(ops: *mut Ops) {
    let _g = Guard::lock();
    // SAFETY: per the function's contract.
    unsafe {
        ops::ops_init(ops);
        if crate::view::has(ops, ops::F_ENABLED) {
            pr_warn!("ftrace_free_filter() on a registered ops\n");
            return;
        }
        hash::free(ops::set_hash(ops, false, ptr::null_mut()));
        hash::free(ops::set_hash(ops, true, ptr::null_mut()));
    }
}

/// Boot-time filters (`ftrace_filter=` and the like): comma-separated
/// patterns; errors are ignored, as in the C core.
///
/// # Safety
///
/// `ops` is valid; `buf` a NUL-terminated, writable string.
#[no_mangle]
pub unsafe extern "C" fn ftrace_set_early_filter(ops: *mut Ops, buf: *mut c_char, enable: c_int) {
    // SAFETY: per the function's contract.
    let s = unsafe { CStr::from_char_ptr(buf) }.as_bytes();
    for (i, pat) in s.split(|&b| b == b',').enumerate() {
        if pat.is_empty() {
            continue;
        }
        // SAFETY: per the function's contract; `pat` outlives the call.
        let _ = unsafe {
            set_hash(
                ops,
                pat.as_ptr(),
                pat.len() as c_int,
                ptr::null(),
                0,
                false,
                i == 0,
                enable == 0,
            )
        };
    }
}

// --- the filter files ----------------------------------------------------

/// The state of one open filter file.
struct RegexFile {
    lines: Lines,
    ops: *mut Ops,
    tr: *mut c_void,
    notrace: bool,
    probes: bool,
    write: bool,
    /// The set being edited (or, read-only, shown).
    hash: *mut FtraceHash,
    parser: Parser,
    /// A token could not be entered for want of memory: the set may hold
    /// part of what was asked, so it is not committed (the C core commits
    /// it, and a filter that lost its only glob traces every function).
    oom: bool,
}

const FMODE_READ: u32 = 1;
const FMODE_WRITE: u32 = 2;

/// Opens a filter file of trace array `tr` (null: the one of `ops`, or of
/// `global_ops`) and ops `ops` (null: the trace array's), with the
/// `FTRACE_ITER_*` flags in `flag`.
///
/// # Safety
///
/// Called by the VFS (through a file's open) with a live inode and file;
/// `tr` and `ops` are null or valid.
#[no_mangle]
pub unsafe extern "C" fn ftrace_regex_open(
    tr: *mut c_void,
    ops: *mut Ops,
    flag: c_int,
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    if dead() {
        return ENODEV;
    }
    let (mut tr, mut ops) = (tr, ops);
    if tr.is_null() {
        if ops.is_null() {
            ops = global_ops.get();
        }
        // SAFETY: `ops` is valid.
        tr = unsafe { (*ops).private };
    }
    // SAFETY: a trace array reference, dropped at release; a null one is
    // only checked for lockdown.
    if unsafe { crate::tracing_check_open_get_tr(tr) } != 0 {
        return ENODEV;
    }
    let put = || {
        if !tr.is_null() {
            // SAFETY: taken above.
            unsafe { crate::trace_array_put(tr) };
        }
    };
    if ops.is_null() {
        // SAFETY: `tr` is referenced.
        ops = unsafe { crate::rftrace_tr_ops(tr) };
    }
    if ops.is_null() {
        put();
        return ENODEV;
    }
    // SAFETY: `ops` is valid.
    unsafe { ops::ops_init_locked(ops) };
    // SAFETY: the VFS's file.
    let (mode, fflags) = unsafe { ((*file).f_mode, (*file).f_flags) };
    let notrace = flag & FLAG_NOTRACE != 0;
    let write = mode & FMODE_WRITE != 0;
    let read = mode & FMODE_READ != 0;
    let h = {
        // SAFETY: initialised above.
        let _r = Guard::of(unsafe { ptr::addr_of_mut!((*(*ops).func_hash).regex_lock) });
        // SAFETY: stable under the regex lock.
        let (f, n) = unsafe { ops::sets(ops) };
        let live = if notrace { n } else { f };
        if write && fflags & bindings::O_TRUNC != 0 {
            if !tr.is_null() {
                let _g = Guard::lock();
                // SAFETY: `tr` is referenced; `ftrace_lock` held.
                unsafe { probe::clear_mod_list(tr, notrace) };
            }
            hash::alloc(hash::DEFAULT_BITS)
        } else {
            // SAFETY: a published set, stable under the regex lock.
            unsafe { hash::copy(live, hash::DEFAULT_BITS) }
        }
    };
    if h.is_null() {
        put();
        return ENOMEM;
    }
    let f = RegexFile {
        lines: Lines::new(),
        ops,
        tr,
        notrace,
        probes: flag & FLAG_PROBES != 0,
        write,
        hash: h,
        parser: Parser::new(),
        oom: false,
    };
    let Ok(b) = KBox::new(f, GFP_KERNEL) else {
        // SAFETY: private.
        unsafe { hash::free(h) };
        put();
        return ENOMEM;
    };
    let raw = KBox::into_raw(b);
    if read {
        // SAFETY: the VFS's file; on success `private_data` is the
        // seq_file, whose `private` holds our state.
        let r = unsafe { bindings::seq_open(file, REGEX_SOPS.get()) };
        if r != 0 {
            // SAFETY: ours, not published.
            unsafe {
                hash::free((*raw).hash);
                drop(KBox::from_raw(raw));
            }
            put();
            return r;
        }
        // SAFETY: as above.
        unsafe { (*(*file).private_data.cast::<bindings::seq_file>()).private = raw.cast() };
    } else {
        // SAFETY: the VFS's file.
        unsafe { (*file).private_data = raw.cast() };
    }
    0
}

/// The state of an open filter file.
///
/// # Safety
///
/// `file` was opened by [`ftrace_regex_open`] and is not released.
unsafe fn regex_file<'a>(file: *mut bindings::file) -> &'a mut RegexFile {
    // SAFETY: per the function's contract: a seq_file for readers, our
    // state for write-only opens.
    unsafe {
        if (*file).f_mode & FMODE_READ != 0 {
            &mut *(*(*file).private_data.cast::<bindings::seq_file>())
                .private
                .cast::<RegexFile>()
        } else {
            &mut *(*file).private_data.cast::<RegexFile>()
        }
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn rx_start(
    m: *mut bindings::seq_file,
    pos: *mut bindings::loff_t,
) -> *mut c_void {
    // SAFETY: our seq_file; its private is the file state.
    let f = unsafe { &mut *(*m).private.cast::<RegexFile>() };
    let (h, notrace, probes, tr) = (f.hash, f.notrace, f.probes, f.tr);
    // SAFETY: seq_file's position.
    let p = unsafe { *pos };
    f.lines
        .start(p, |o| render_filter(o, h, notrace, probes, tr))
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn rx_next(
    m: *mut bindings::seq_file,
    _v: *mut c_void,
    pos: *mut bindings::loff_t,
) -> *mut c_void {
    // SAFETY: as above.
    unsafe {
        *pos += 1;
        (*(*m).private.cast::<RegexFile>()).lines.at(*pos)
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn rx_stop(_m: *mut bindings::seq_file, _v: *mut c_void) {}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn rx_show(m: *mut bindings::seq_file, v: *mut c_void) -> c_int {
    // SAFETY: as above; `v` came from `rx_start`/`rx_next`.
    unsafe { (*(*m).private.cast::<RegexFile>()).lines.show(m, v) };
    0
}

static REGEX_SOPS: CGlobal<bindings::seq_operations> = CGlobal::new(bindings::seq_operations {
    start: Some(rx_start),
    next: Some(rx_next),
    stop: Some(rx_stop),
    show: Some(rx_show),
});

/// Processes one complete token of a filter file.
///
/// # Safety
///
/// `h` is an open filter file's private set, `tr` its trace array.
unsafe fn process(h: *mut FtraceHash, tr: *mut c_void, notrace: bool, tok: &[u8]) -> c_int {
    let t = Token::split(tok);
    let Some(cmd) = t.command else {
        // SAFETY: `h` is private to the file.
        return match unsafe { match_records(h, t.func, None) } {
            Ok(true) => 0,
            Ok(false) => EINVAL,
            Err(e) => e,
        };
    };
    if cmd == b"mod" {
        // SAFETY: as above.
        return unsafe { probe::mod_command(tr, h, t.func, t.param, !notrace) };
    }
    // SAFETY: as above.
    unsafe { probe::run_command(tr, h, tok, !notrace) }
}

/// `write()` of a filter file: at most one token per call.
///
/// # Safety
///
/// Called by the VFS; `file` was opened by [`ftrace_regex_open`].
#[no_mangle]
pub unsafe extern "C" fn ftrace_filter_write(
    file: *mut bindings::file,
    ubuf: *const c_char,
    cnt: usize,
    ppos: *mut bindings::loff_t,
) -> isize {
    if cnt == 0 {
        return 0;
    }
    if dead() {
        return ENODEV as isize;
    }
    // SAFETY: per the function's contract.
    let f = unsafe { regex_file(file) };
    let (h, tr, notrace) = (f.hash, f.tr, f.notrace);
    // SAFETY: per the function's contract.
    let chunk = unsafe { copy_chunk(ubuf, cnt) };
    let _p = Guard::of(PARSER_LOCK.get());
    // SAFETY: per the function's contract; `h` is the file's private set.
    let r = unsafe {
        write_token(&mut f.parser, chunk, ppos, |tok| {
            process(h, tr, notrace, tok)
        })
    };
    if r == ENOMEM as isize {
        f.oom = true;
    }
    r
}

/// One write's worth of user bytes, copied before any lock is taken.
struct Chunk {
    buf: [u8; BUF_SIZE + 64],
    len: usize,
}

/// Copies the start of a write from user space (`None`: a fault). No lock
/// of the core is held here: a writer whose buffer faults slowly (swap,
/// userfaultfd) then blocks no other filter file.
///
/// # Safety
///
/// `ubuf` is a user pointer of `cnt` bytes.
unsafe fn copy_chunk(ubuf: *const c_char, cnt: usize) -> Option<Chunk> {
    let mut c = Chunk {
        buf: [0u8; BUF_SIZE + 64],
        len: cnt.min(BUF_SIZE + 64),
    };
    // SAFETY: `buf` has room for `len` bytes; the user copy checks the
    // source.
    let left = unsafe {
        bindings::_copy_from_user(c.buf.as_mut_ptr().cast(), ubuf.cast(), c.len as c_ulong)
    };
    (left == 0).then_some(c)
}

/// Feeds the bytes of a write (copied by [`copy_chunk`]) into `parser` and
/// hands a complete token to `done`.
///
/// # Safety
///
/// `ppos` is valid.
unsafe fn write_token(
    parser: &mut Parser,
    chunk: Option<Chunk>,
    ppos: *mut bindings::loff_t,
    done: impl FnOnce(&[u8]) -> c_int,
) -> isize {
    let Some(chunk) = chunk else {
        parser.set_failed();
        return crate::err(bindings::EFAULT) as isize;
    };
    // SAFETY: per the function's contract.
    let pos = unsafe { *ppos };
    let n = match parser.scan(&chunk.buf[..chunk.len], pos as u64) {
        Ok(n) => n,
        Err(_) => return EINVAL as isize,
    };
    // SAFETY: as above.
    unsafe { *ppos += n as bindings::loff_t };
    if parser.loaded() && !parser.pending() {
        let r = done(parser.token());
        parser.clear();
        if r < 0 {
            return r as isize;
        }
    }
    n as isize
}

fn render_filter(o: &mut Out, h: *const FtraceHash, notrace: bool, probes: bool, tr: *mut c_void) {
    let _g = Guard::lock();
    if dead() {
        return;
    }
    // SAFETY: the file's private set.
    if unsafe { hash::is_empty(h) } {
        o.bytes(if notrace {
            b"#### no functions disabled ####\n"
        } else {
            b"#### all functions enabled ####\n"
        });
    } else {
        for c in table::all() {
            // SAFETY: as above.
            if unsafe { hash::contains(h, c.ip()) } {
                o.rec(c.ip());
                o.bytes(b"\n");
            }
        }
    }
    if !tr.is_null() {
        // SAFETY: `tr` is referenced by the open file; `ftrace_lock` held.
        unsafe { probe::render_mods(o, tr, notrace) };
        if probes {
            // SAFETY: as above.
            unsafe { probe::render_probes(o, tr) };
        }
    }
}

/// Closes a filter file: processes a pending token, then commits the
/// edited set (as the C core does, unless memory ran out on the way).
///
/// # Safety
///
/// Called by the VFS; `file` was opened by [`ftrace_regex_open`].
#[no_mangle]
pub unsafe extern "C" fn ftrace_regex_release(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: made by `ftrace_regex_open`; this is its last use. A reader's
    // seq_file goes first.
    let mut f = unsafe {
        let raw: *mut RegexFile = regex_file(file);
        if (*file).f_mode & FMODE_READ != 0 {
            bindings::seq_release(inode, file);
        }
        KBox::from_raw(raw)
    };
    {
        let _p = Guard::of(PARSER_LOCK.get());
        if f.parser.loaded() {
            // SAFETY: the file's state. The result is ignored, as in C,
            // but for a want of memory (see `oom`).
            let r = unsafe { process(f.hash, f.tr, f.notrace, f.parser.token()) };
            f.oom |= r == ENOMEM;
        }
    }
    if f.write && f.oom {
        pr_warn!("out of memory while editing a filter; it is left unchanged\n");
    } else if f.write {
        // SAFETY: the ops is initialised.
        let _r = Guard::of(unsafe { ptr::addr_of_mut!((*(*f.ops).func_hash).regex_lock) });
        let _g = Guard::lock();
        if !f.notrace && !f.tr.is_null() {
            // SAFETY: `tr` is referenced; `ftrace_lock` held; the set is
            // private.
            unsafe {
                if probe::has_mods(f.tr, false) {
                    (*f.hash).flags |= hash::FL_MOD;
                } else {
                    (*f.hash).flags &= !hash::FL_MOD;
                }
            }
        }
        // SAFETY: `ftrace_lock` held; the result is ignored, as in C.
        let _ = unsafe { commit(f.ops, f.notrace, f.hash) };
    }
    // SAFETY: private.
    unsafe { hash::free(f.hash) };
    if !f.tr.is_null() {
        // SAFETY: taken at open.
        unsafe { crate::trace_array_put(f.tr) };
    }
    0
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn filter_open(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: the VFS's inode; its data is the trace array (null at the
    // top level, see `create_files`).
    let tr = unsafe { (*inode).i_private };
    // SAFETY: per the VFS contract.
    unsafe { ftrace_regex_open(tr, ptr::null_mut(), FLAG_FILTER | FLAG_PROBES, inode, file) }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn notrace_open(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: as above.
    let tr = unsafe { (*inode).i_private };
    // SAFETY: per the VFS contract.
    unsafe { ftrace_regex_open(tr, ptr::null_mut(), FLAG_NOTRACE, inode, file) }
}

static FILTER_FOPS: CGlobal<bindings::file_operations> = CGlobal::new(bindings::file_operations {
    open: Some(filter_open),
    read: Some(bindings::seq_read),
    write: Some(ftrace_filter_write),
    llseek: Some(crate::tracing_lseek),
    release: Some(ftrace_regex_release),
    ..files::zeroed_fops()
});

static NOTRACE_FOPS: CGlobal<bindings::file_operations> = CGlobal::new(bindings::file_operations {
    open: Some(notrace_open),
    read: Some(bindings::seq_read),
    write: Some(ftrace_filter_write),
    llseek: Some(crate::tracing_lseek),
    release: Some(ftrace_regex_release),
    ..files::zeroed_fops()
});

/// set_ftrace_filter and set_ftrace_notrace of trace array `tr` (null:
/// the top level's `global_ops`) in `parent`.
pub(crate) fn create_files(tr: *mut c_void, parent: *mut bindings::dentry) {
    files::create(
        c_str!("set_ftrace_filter"),
        0o640,
        parent,
        tr,
        FILTER_FOPS.get(),
    );
    files::create(
        c_str!("set_ftrace_notrace"),
        0o640,
        parent,
        tr,
        NOTRACE_FOPS.get(),
    );
}

/// The filter files of an instance's function tracer.
///
/// # Safety
///
/// `tr` lives as long as the files.
#[no_mangle]
pub unsafe extern "C" fn ftrace_create_filter_files(
    tr: *mut c_void,
    parent: *mut bindings::dentry,
) {
    create_files(tr, parent);
}

/// An instance's function tracer goes: its ops is stopped and marked
/// deleted, its sets freed (the files go with their directory).
///
/// # Safety
///
/// `ops` is valid.
#[no_mangle]
pub unsafe extern "C" fn ftrace_destroy_filter_files(ops: *mut Ops) {
    let _g = Guard::lock();
    // SAFETY: per the function's contract.
    unsafe {
        ops::ops_init(ops);
        if crate::view::has(ops, ops::F_ENABLED) {
            let _ = ops::shutdown(ops);
        }
        crate::view::set(ops, bindings::FTRACE_OPS_FL_DELETED as c_ulong);
        hash::free_rcu(ops::set_hash(ops, false, ptr::null_mut()));
        hash::free_rcu(ops::set_hash(ops, true, ptr::null_mut()));
    }
}

// --- set_graph_function / set_graph_notrace ------------------------------

struct GraphFile {
    text: Text,
    notrace: bool,
    /// The set being edited, for a writer.
    hash: *mut FtraceHash,
    parser: Parser,
}

fn graph_slot(notrace: bool) -> &'static core::sync::atomic::AtomicPtr<FtraceHash> {
    if notrace {
        &crate::ftrace_graph_notrace_hash
    } else {
        &crate::ftrace_graph_hash
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn graph_open(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    if dead() {
        return ENODEV;
    }
    // SAFETY: the VFS's inode and file; the inode data says which set.
    let (notrace, mode, fflags) = unsafe {
        (
            !(*inode).i_private.is_null(),
            (*file).f_mode,
            (*file).f_flags,
        )
    };
    let mut h = ptr::null_mut();
    if mode & FMODE_WRITE != 0 {
        let _g = Guard::of(GRAPH_LOCK.get());
        h = if fflags & bindings::O_TRUNC != 0 {
            hash::alloc(hash::DEFAULT_BITS)
        } else {
            // SAFETY: the live set, stable under the graph lock.
            unsafe {
                hash::copy(
                    graph_slot(notrace).load(Ordering::Acquire),
                    hash::DEFAULT_BITS,
                )
            }
        };
        if h.is_null() {
            return ENOMEM;
        }
    }
    let g = GraphFile {
        text: Text { out: None },
        notrace,
        hash: h,
        parser: Parser::new(),
    };
    let Ok(b) = KBox::new(g, GFP_KERNEL) else {
        // SAFETY: private.
        unsafe { hash::free(h) };
        return ENOMEM;
    };
    // SAFETY: the VFS's file.
    unsafe { (*file).private_data = KBox::into_raw(b).cast() };
    0
}

/// A token of a graph file: a pattern, `!` to remove; no index, no
/// command, no module. Fails unless some function was added or removed.
///
/// # Safety
///
/// `h` is a private set.
unsafe fn graph_token(h: *mut FtraceHash, tok: &[u8]) -> c_int {
    let pat = Pattern::parse(tok);
    if pat.kind == Kind::Index {
        return EINVAL;
    }
    let _g = Guard::lock();
    if dead() {
        return ENODEV;
    }
    let mut done = false;
    let mut buf = [0u8; bindings::KSYM_NAME_LEN as usize];
    for c in table::all() {
        // SAFETY: `ftrace_lock` is held.
        let s = unsafe { c.read() };
        if s.has(sf::DISABLED) {
            continue;
        }
        match files::lookup(s.ip, &mut buf) {
            Some(sym) if sym.is_entry() && pat.matches(sym.name) => {}
            _ => continue,
        }
        // SAFETY: per the function's contract.
        unsafe {
            if pat.negated {
                done |= hash::remove(h, s.ip);
            } else {
                if !hash::add(h, s.ip) {
                    return ENOMEM;
                }
                done = true;
            }
        }
    }
    if done {
        0
    } else {
        EINVAL
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn graph_write(
    file: *mut bindings::file,
    ubuf: *const c_char,
    cnt: usize,
    ppos: *mut bindings::loff_t,
) -> isize {
    if cnt == 0 {
        return 0;
    }
    if dead() {
        return ENODEV as isize;
    }
    // SAFETY: set by `graph_open`, valid until release.
    let g = unsafe { &mut *(*file).private_data.cast::<GraphFile>() };
    if g.hash.is_null() {
        return EINVAL as isize;
    }
    let h = g.hash;
    // SAFETY: per the VFS contract.
    let chunk = unsafe { copy_chunk(ubuf, cnt) };
    let _p = Guard::of(PARSER_LOCK.get());
    // SAFETY: per the VFS contract; `h` is the file's private set.
    unsafe { write_token(&mut g.parser, chunk, ppos, |tok| graph_token(h, tok)) }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn graph_read(
    file: *mut bindings::file,
    ubuf: *mut c_char,
    cnt: usize,
    ppos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: set by `graph_open`, valid until release.
    let g = unsafe { &mut *(*file).private_data.cast::<GraphFile>() };
    let notrace = g.notrace;
    // SAFETY: per the VFS contract.
    unsafe {
        files::serve(&mut g.text, ubuf, cnt, ppos, |o| {
            let _l = Guard::of(GRAPH_LOCK.get());
            let h = graph_slot(notrace).load(Ordering::Acquire);
            if hash::is_empty(h) {
                if !notrace {
                    o.bytes(b"#### all functions enabled ####\n");
                }
                return;
            }
            hash::for_each(h, |e| {
                o.sym((*e).ip as u64, false);
                o.bytes(b"\n");
            });
        })
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn graph_release(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: made by `graph_open`; this is its last use.
    let mut g = unsafe { KBox::from_raw((*file).private_data.cast::<GraphFile>()) };
    if g.hash.is_null() {
        return 0;
    }
    {
        let _p = Guard::of(PARSER_LOCK.get());
        if g.parser.loaded() {
            // SAFETY: the file's private set; the result is ignored.
            let _ = unsafe { graph_token(g.hash, g.parser.token()) };
        }
    }
    let _l = Guard::of(GRAPH_LOCK.get());
    // SAFETY: the file's private set.
    if let Ok(new) = unsafe { hash::for_commit(g.hash) } {
        let old = graph_slot(g.notrace).swap(new, Ordering::AcqRel);
        // SAFETY: unpublished; readers are preempt-disabled sections.
        unsafe { hash::free_rcu(old) };
    }
    // SAFETY: private.
    unsafe { hash::free(g.hash) };
    g.hash = ptr::null_mut();
    0
}

static GRAPH_FOPS: CGlobal<bindings::file_operations> = CGlobal::new(bindings::file_operations {
    open: Some(graph_open),
    read: Some(graph_read),
    write: Some(graph_write),
    llseek: Some(bindings::default_llseek),
    release: Some(graph_release),
    ..files::zeroed_fops()
});

/// set_graph_function and set_graph_notrace.
pub(crate) fn create_graph_files(parent: *mut bindings::dentry) {
    files::create(
        c_str!("set_graph_function"),
        0o640,
        parent,
        ptr::null_mut(),
        GRAPH_FOPS.get(),
    );
    files::create(
        c_str!("set_graph_notrace"),
        0o640,
        parent,
        1usize as *mut c_void,
        GRAPH_FOPS.get(),
    );
}
