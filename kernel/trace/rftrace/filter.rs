// SPDX-License-Identifier: GPL-2.0

//! Which functions an ops traces: the filter APIs (`ftrace_set_filter()`
//! and friends) and the matching of patterns against the call sites,
//! with the C core's semantics (Documentation/design/filter-files.md).
//! The files that edit filters are in `filterfile` and `graphfile`.

use crate::hash::{self, FnSet, FtraceHash};
use crate::logic::glob::{Kind, Pattern};
use crate::logic::sites::flags as sf;
use crate::ops::{self, Ops};
use crate::sys::{dead, global_ops, to_errno, CoreGuard, Guard, Held};
use crate::{table, tracefs};
use core::ptr;
use kernel::bindings;
use kernel::ffi::{c_char, c_int, c_uchar, c_ulong};
use kernel::prelude::*;

/// Adds `ip` to, or with `clear` removes it from, `h`.
fn enter(h: &mut FnSet, ip: u64, clear: bool) -> Result {
    if clear {
        h.remove(ip);
        Ok(())
    } else {
        h.add(ip)
    }
}

/// `match_records()`: adds to (or, for a `!` pattern, removes from) `h`
/// the sites whose function matches `func` (and `module`, when given).
/// Returns whether any matched.
pub(crate) fn match_records(h: &mut FnSet, func: &[u8], module: Option<&[u8]>) -> Result<bool> {
    let _g = Guard::lock();
    // SAFETY: `ftrace_lock` is held.
    unsafe { match_records_locked(h, func, module) }
}

/// [`match_records`] with `ftrace_lock` held.
///
/// # Safety
///
/// `ftrace_lock` is held.
pub(crate) unsafe fn match_records_locked(
    h: &mut FnSet,
    func: &[u8],
    module: Option<&[u8]>,
) -> Result<bool> {
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
        enter(h, c.ip(), clear)?;
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
        let Some(sym) = tracefs::lookup(s.ip, &mut buf) else {
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
            enter(h, s.ip, clear)?;
        }
    }
    Ok(found)
}

/// Publishes the private set `private` as the filter (or notrace) set of
/// `ops` and re-plans the sites (`ftrace_hash_move_and_update_ops()`).
///
/// # Safety
///
/// `ftrace_lock` is held; `ops` is initialised.
pub(crate) unsafe fn commit(ops: *mut Ops, notrace: bool, private: &FnSet) -> Result {
    // SAFETY: per the function's contract.
    unsafe {
        let flags = crate::view::flags(ops);
        if notrace && flags & ops::F_IPMODIFY != 0 {
            return Err(EINVAL);
        }
        let new = private.for_commit()?;
        if !notrace && flags & ops::F_IPMODIFY != 0 && flags & ops::F_ENABLED != 0 {
            if hash::is_empty(new) {
                hash::free(new);
                return Err(EINVAL);
            }
            if ops::ipmodify_conflict(ops, new) {
                hash::free(new);
                return Err(EBUSY);
            }
        }
        let old = ops::set_hash(ops, notrace, new);
        // Registered ops that use these sets (`global_ops`' may be shared).
        let users = ops::list(Held::assume()).any(|o| o.func_hash() == (*ops).func_hash);
        let r = match crate::subops::refresh_managers() {
            // Nothing registered uses these sets: no site changes.
            Ok(0) if !users => Ok(()),
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
                ops::update_scope(scope)
            }
            Err(e) => Err(e),
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
) -> Result {
    if dead() {
        return Err(ENODEV);
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
    let mut h = if reset {
        FnSet::new()?
    } else {
        // SAFETY: a published set, stable while we hold the regex lock.
        unsafe { FnSet::copy_of(orig) }?
    };
    let mut edit = || {
        if !buf.is_null() && len > 0 {
            // SAFETY: per the function's contract.
            let pat = unsafe { core::slice::from_raw_parts(buf, len as usize) };
            let pat = pat.split(|&b| b == 0).next().unwrap_or(&[]);
            if !match_records(&mut h, pat, None)? {
                return Err(EINVAL);
            }
        }
        if !ips.is_null() {
            for i in 0..cnt as usize {
                // SAFETY: per the function's contract.
                let ip = crate::table::ftrace_location(unsafe { *ips.add(i) }) as u64;
                if ip == 0 {
                    return Err(EINVAL);
                }
                if remove {
                    if !h.remove(ip) {
                        return Err(ENOENT);
                    }
                } else {
                    h.add(ip)?;
                }
            }
        }
        let _g = Guard::lock();
        // SAFETY: `ftrace_lock` held; `ops` initialised above.
        unsafe { commit(ops, notrace, &h) }
    };
    // `h` is freed when it goes: `commit` published a copy.
    edit()
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
) -> Option<Result> {
    // SAFETY: per the function's contract (a sub-ops stays one).
    if unsafe { crate::view::has(ops, ops::F_SUBOP) } {
        return None;
    }
    let mut at = [0u64; IN_PLACE_MAX];
    for (i, a) in at[..cnt].iter_mut().enumerate() {
        // SAFETY: per the function's contract.
        *a = crate::table::ftrace_location(unsafe { *ips.add(i) }) as u64;
        if *a == 0 {
            return Some(Err(EINVAL));
        }
    }
    let at = &at[..cnt];
    let g = CoreGuard::lock();
    if ops::any_manager(g.held()) {
        return None;
    }
    // Each address must be there, once, or nothing changes (ENOENT, as
    // the copying path answers).
    for (i, &ip) in at.iter().enumerate() {
        // SAFETY: the published filter, stable for writers under the
        // regex lock.
        if at[..i].contains(&ip) || !unsafe { hash::contains(orig, ip) } {
            return Some(Err(ENOENT));
        }
    }
    // SAFETY: `ftrace_lock`, held, keeps the flags and the published
    // filter as they are.
    let (flags, count, cached) = unsafe {
        (
            crate::view::flags(ops),
            hash::count(orig),
            (*orig).flags & hash::FL_MOD != 0,
        )
    };
    let emptied = count == at.len();
    if flags & ops::F_ENABLED != 0 && emptied {
        // An enabled IPMODIFY ops may not trace every function (EINVAL,
        // as C answers, nothing changed).
        return if flags & ops::F_IPMODIFY != 0 {
            Some(Err(EINVAL))
        } else {
            None
        };
    }
    if emptied && cached {
        return None;
    }
    if emptied {
        // The filter of an ops not registered (livepatch takes its
        // function off after unregistering) empties: it goes whole, as
        // the copying path publishes an empty filter (null), and with no
        // memory either; no site changes. Emptied in place instead, the
        // set would stay with the ops, which its owner frees (a leak
        // kmemleak showed under `make test KASAN=1`).
        // SAFETY: `ftrace_lock` and the regex lock are held; `ops` is
        // initialised.
        let old = unsafe { ops::set_hash(ops, false, ptr::null_mut()) };
        drop(g);
        // SAFETY: unpublished; readers that still see it are RCU or
        // preempt-off readers, which the deferred free waits out.
        unsafe { hash::free_rcu(old) };
        return Some(Ok(()));
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
    let r = unsafe { ops::update_ips(at) };
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
    to_errno(unsafe { set_hash(ops, buf, len, ptr::null(), 0, false, reset != 0, false) })
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
    to_errno(unsafe { set_hash(ops, buf, len, ptr::null(), 0, false, reset != 0, true) })
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
    to_errno(unsafe {
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
    })
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
    to_errno(unsafe {
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
    })
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
