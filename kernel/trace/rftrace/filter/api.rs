// SPDX-License-Identifier: GPL-2.0

//! Which functions an ops traces: the filter APIs (`ftrace_set_filter()`
//! and friends) and the matching of patterns against the call sites,
//! with the C core's semantics (Documentation/design/filter-files.md).
//! The files that edit filters are in `filterfile` and `graphfile`.

use crate::base::ffi::CStrArg;
use crate::base::sys::{dead, global_ops, to_errno, CoreGuard, Held, StateKey};
use crate::logic::glob::{Kind, Pattern};
use crate::logic::sites::flags as sf;
use crate::ops::registry::OpsRef;
use crate::sites::hash::{FnSet, SetRef, LINK_MAX};
use crate::sites::publish::UNLINK_MAX;
use crate::sites::table;
use kernel::ffi::{c_int, c_ulong};
use kernel::prelude::*;

/// Room for the path of a Rust symbol, for a pattern written as a Rust
/// path (`kernel::sync::*`); empty for any other pattern, which matches
/// names as they are.
pub(crate) struct Matcher<'a> {
    pat: Pattern<'a>,
    scratch: KVec<u8>,
}

/// Longest Rust path a pattern is matched against.
const PATH_MAX: usize = 1024;

impl<'a> Matcher<'a> {
    pub(crate) fn new(pat: Pattern<'a>) -> Result<Self> {
        let scratch = if pat.is_rust_path() {
            KVec::from_elem(0u8, PATH_MAX, GFP_KERNEL)?
        } else {
            KVec::new()
        };
        Ok(Matcher { pat, scratch })
    }

    /// Whether the symbol `name` matches the pattern.
    pub(crate) fn matches(&mut self, name: &[u8]) -> bool {
        self.pat.matches_symbol(name, &mut self.scratch)
    }
}

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
    let g = CoreGuard::lock();
    match_records_locked(g.held(), h, func, module)
}

/// [`match_records`] with `ftrace_lock` held.
pub(crate) fn match_records_locked(
    held: &Held,
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
    let mut buf = kernel::kallsyms::SymbolBuf::new();
    let mut m = Matcher::new(pat)?;
    for c in table::all() {
        let s = c.read(held);
        if s.has(sf::DISABLED) {
            continue;
        }
        let Some(sym) = crate::sites::names::lookup(s.ip, &mut buf) else {
            continue;
        };
        if !sym.is_entry() {
            continue;
        }
        let hit = match modpat {
            None => m.matches(sym.name),
            Some(mp) => {
                let exclude = mp.negated;
                let qualifies = if mp.search.is_empty() {
                    exclude != sym.module.is_some()
                } else {
                    sym.module.is_some_and(|m| mp.matches(m)) != exclude
                };
                qualifies && (pat.search.is_empty() || m.matches(sym.name))
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
/// The private set is freed before the sites change: freed after, each of
/// its entries (every function, for `*`) went to `kfree()` while the
/// sites just enabled traced every call of the allocator's debug paths
/// (12.8 s instead of about 4 for one function replaced by `*` under the
/// function tracer, on the production configuration).
pub(crate) fn commit(
    held: &Held,
    key: &mut StateKey,
    ops: OpsRef<'_>,
    notrace: bool,
    private: FnSet,
) -> Result {
    let flags = ops.flags();
    let ipmodify = flags & crate::ops::registry::F_IPMODIFY != 0;
    if notrace && ipmodify {
        return Err(EINVAL);
    }
    let new = private.for_commit()?;
    drop(private);
    if !notrace && ipmodify && flags & crate::ops::registry::F_ENABLED != 0 {
        // An enabled IPMODIFY ops may not trace every function.
        let Some(n) = new.as_ref() else {
            return Err(EINVAL);
        };
        if crate::ops::update::ipmodify_conflict(held, ops, n.as_set()) {
            return Err(EBUSY);
        }
    }
    let old = ops.swap_set(held, notrace, new);
    // Registered ops that use these sets (`global_ops`' may be shared).
    let users = crate::ops::registry::list(held).any(|o| o.func_hash() == ops.func_hash());
    match crate::ops::subops::refresh_managers(held, key)? {
        // Nothing registered uses these sets: no site changes.
        0 if !users => Ok(()),
        managers => {
            // An enabled ops alone, with explicit filters before and
            // after, changes only the sites of the two.
            let (f, n) = ops.sets(held);
            let both = !notrace
                && managers == 0
                && !old.as_set().is_empty()
                && !f.is_empty()
                && n.is_empty();
            // Then only the sites whose membership changed (a kprobe armed
            // or disarmed: one), when there is memory to list them.
            if both {
                if let Some(ips) = changed_ips(old.as_set(), f) {
                    return crate::ops::update::update_ips(held, key, &ips);
                }
            }
            let scope = [old.as_set(), f];
            // Fails only when a site did not hold what its record said,
            // which killed tracing.
            crate::ops::update::update_scope(held, key, if both { &scope } else { &[] })
        }
    }
}

/// The addresses in one of `a` and `b` but not in both (none without
/// memory for the list), each once: a set holds an address once, and the
/// two halves are disjoint (what [`ops::update_ips`] needs); sorted by
/// address, so that the update's batches each cover a few pages (in a
/// set's hash order, a batch of a filter of one function replaced by `*`
/// spread over the whole text and its steps mapped every page of it).
fn changed_ips(a: SetRef<'_>, b: SetRef<'_>) -> Option<KVec<u64>> {
    let mut v = KVec::new();
    for (x, y) in [(a, b), (b, a)] {
        for ip in x.ips().filter(|&ip| !y.contains(ip)) {
            v.push(ip, GFP_KERNEL).ok()?;
        }
    }
    v.sort_unstable();
    Some(v)
}

/// What a filter API call asks: a pattern, addresses to add or remove,
/// whether to empty the set first, which set.
struct Edit<'p> {
    pattern: Option<&'p [u8]>,
    ips: &'p [c_ulong],
    remove: bool,
    reset: bool,
    notrace: bool,
}

impl<'p> Edit<'p> {
    /// Matching `pattern` into the filter (or `notrace` set), emptied
    /// first with `reset`.
    fn pattern(pattern: Option<&'p [u8]>, reset: bool, notrace: bool) -> Self {
        Edit {
            pattern,
            ips: &[],
            remove: false,
            reset,
            notrace,
        }
    }
}

/// `ftrace_set_hash()`: the common part of the filter APIs.
fn set_hash(ops: OpsRef<'_>, e: Edit<'_>) -> Result {
    if dead() {
        return Err(ENODEV);
    }
    let regex = ops.lock_regex();
    // A few addresses added to or taken from the filter: in place.
    let max = if e.remove { UNLINK_MAX } else { LINK_MAX };
    if !e.reset && !e.notrace && e.pattern.is_none() && (1..=max).contains(&e.ips.len()) {
        let r = if e.remove {
            remove_in_place(ops, e.ips)
        } else {
            add_in_place(ops, e.ips)
        };
        if let Some(r) = r {
            return r;
        }
    }
    let mut h = if e.reset {
        FnSet::new()?
    } else {
        let (f, n) = regex.sets();
        FnSet::copy_of(if e.notrace { n } else { f })?
    };
    if let Some(pat) = e.pattern.filter(|p| !p.is_empty()) {
        let pat = pat.split(|&b| b == 0).next().unwrap_or(&[]);
        if !match_records(&mut h, pat, None)? {
            return Err(EINVAL);
        }
    }
    for &ip in e.ips {
        let ip = crate::sites::table::ftrace_location(ip) as u64;
        if ip == 0 {
            return Err(EINVAL);
        }
        if e.remove {
            if !h.remove(ip) {
                return Err(ENOENT);
            }
        } else {
            h.add(ip)?;
        }
    }
    // `commit` publishes a copy and frees `h`.
    let mut g = CoreGuard::lock();
    let (held, key) = g.parts();
    commit(held, key, ops, e.notrace, h)
}

/// What a change of a few addresses in a published filter works on:
/// `ftrace_lock`, the call sites of the first `N` addresses of `ips` and
/// how many they are. `None` when the filter of `ops` is not changed in
/// place (a sub-ops stays one; managed sub-ops rebuild their managers'
/// filters); `EINVAL` for an address in no function with a site.
fn in_place<const N: usize>(
    ops: OpsRef<'_>,
    ips: &[c_ulong],
) -> Option<Result<(CoreGuard, [u64; N], usize)>> {
    if ops.has(crate::ops::registry::F_SUBOP) {
        return None;
    }
    let mut at = [0u64; N];
    for (a, &ip) in at.iter_mut().zip(ips) {
        *a = crate::sites::table::ftrace_location(ip) as u64;
        if *a == 0 {
            return Some(Err(EINVAL));
        }
    }
    let mut g = CoreGuard::lock();
    let (held, key) = g.parts();
    if crate::ops::update::any_manager(held, key) {
        return None;
    }
    Some(Ok((g, at, ips.len().min(N))))
}

/// `ftrace_set_filter_ip()` and friends removing a few addresses: done in
/// the published filter itself, so that it needs no memory. Callers take
/// an address off on their way out (kprobes' disarm, an unregistration),
/// where a failure has no good answer: kprobes warns and keeps a probe
/// that its module's unload then frees, which the C core, which copies
/// the filter first, does when memory is short (`tests/fault-inject-modunload.sh`).
/// Kprobes with a post handler use an IPMODIFY ops, so those are done
/// here too. `None` leaves the change to the copying path: a sub-ops, any
/// ops when sub-ops are managed, and an enabled ops whose filter this
/// empties (it then traces every function, a change of every site). The
/// caller holds the ops' regex lock; at most [`UNLINK_MAX`] addresses.
fn remove_in_place(ops: OpsRef<'_>, ips: &[c_ulong]) -> Option<Result> {
    let (mut g, at, n) = match in_place::<UNLINK_MAX>(ops, ips)? {
        Ok(v) => v,
        Err(e) => return Some(Err(e)),
    };
    let (held, key) = g.parts();
    let at = &at[..n];
    let mut slot = ops.set_slot_mut(held, false)?;
    let (count, cached) = {
        let orig = slot.load();
        // Each address must be there, once, or nothing changes (ENOENT,
        // as the copying path answers).
        for (i, &ip) in at.iter().enumerate() {
            if at[..i].contains(&ip) || !orig.contains(ip) {
                return Some(Err(ENOENT));
            }
        }
        (orig.count(), orig.has_mod())
    };
    let flags = ops.flags();
    let emptied = count == at.len();
    if flags & crate::ops::registry::F_ENABLED != 0 && emptied {
        // An enabled IPMODIFY ops may not trace every function (EINVAL,
        // as C answers, nothing changed).
        return if flags & crate::ops::registry::F_IPMODIFY != 0 {
            Some(Err(EINVAL))
        } else {
            None
        };
    }
    // A registered ops that shares these sets (the function tracer's
    // shares `global_ops`', `ftrace_ops_set_global_filter()`) traces every
    // function once they empty: a change of every site, which the copying
    // path plans (`commit` re-plans for the sets' users).
    if emptied
        && (cached || crate::ops::registry::list(held).any(|o| o.func_hash() == ops.func_hash()))
    {
        return None;
    }
    if emptied {
        // The filter of an ops not registered (livepatch takes its
        // function off after unregistering) empties: it goes whole, as
        // the copying path publishes an empty filter (null), and with no
        // memory either; no site changes. Emptied in place instead, the
        // set would stay with the ops, which its owner frees (a leak
        // kmemleak showed under `make test KASAN=1`).
        let old = slot.swap(None);
        drop(g);
        drop(old);
        return Some(Ok(()));
    }
    let gone = slot.unlink(at);
    // Only these sites can change; the update fails only when tracing
    // died.
    let r = crate::ops::update::update_ips(held, key, at);
    drop(g);
    // Frees the entries after a grace period: the dispatchers read the
    // filter under RCU or with preemption off.
    drop(gone);
    Some(r)
}

/// `ftrace_set_filter_ip()` and friends adding a few addresses to a
/// filter that holds some already: an entry each, linked into the
/// published filter itself, where the copying path copies the whole
/// filter twice (kprobes arm one function at a time: with a thousand
/// armed, each arm copied a thousand entries, and a running function
/// tracer traced every allocation of them). Only the sites added can
/// change. `None` leaves the change to the copying path: a sub-ops, any
/// ops when sub-ops are managed, an IPMODIFY or direct ops (the copy is
/// where their conflicts and call addresses are checked), an empty filter
/// (it traces every function: adding makes it trace these only), and a
/// filter whose buckets would grow too long (the copy gets more). The
/// caller holds the ops' regex lock; at most [`LINK_MAX`] addresses.
fn add_in_place(ops: OpsRef<'_>, ips: &[c_ulong]) -> Option<Result> {
    if ops.flags() & (crate::ops::registry::F_IPMODIFY | crate::ops::registry::F_DIRECT) != 0 {
        return None;
    }
    let (mut g, at, n) = match in_place::<LINK_MAX>(ops, ips)? {
        Ok(v) => v,
        Err(e) => return Some(Err(e)),
    };
    let (held, key) = g.parts();
    let at = &at[..n];
    let mut slot = ops.set_slot_mut(held, false)?;
    // The addresses not in the filter yet, each once (one already there
    // is no change, as the copying path adds it).
    let mut new = [0u64; LINK_MAX];
    let mut n = 0;
    {
        let orig = slot.load();
        if !orig.room_to_link(at.len()) {
            return None;
        }
        for (i, &ip) in at.iter().enumerate() {
            if !at[..i].contains(&ip) && !orig.contains(ip) {
                *new.get_mut(n)? = ip;
                n += 1;
            }
        }
    }
    let new = &new[..n];
    if new.is_empty() {
        return Some(Ok(()));
    }
    if let Err(e) = slot.link(new) {
        return Some(Err(e));
    }
    // Only these sites can change; the update fails only when tracing
    // died.
    Some(crate::ops::update::update_ips(held, key, new))
}

/// Sets (`reset`) or extends the filter (`notrace`: the notrace set) of
/// `ops` with the functions that match `pattern`: `ftrace_set_filter()`
/// and `ftrace_set_notrace()`.
pub(crate) fn set_pattern(
    ops: OpsRef<'_>,
    pattern: Option<&[u8]>,
    reset: bool,
    notrace: bool,
) -> c_int {
    to_errno(set_hash(ops, Edit::pattern(pattern, reset, notrace)))
}

/// Adds (or removes) one function, by address, to the filter of `ops`.
pub(crate) fn ftrace_set_filter_ip(
    ops: OpsRef<'_>,
    ip: c_ulong,
    remove: c_int,
    reset: c_int,
) -> c_int {
    to_errno(set_hash(
        ops,
        Edit {
            pattern: None,
            ips: &[ip],
            remove: remove != 0,
            reset: reset != 0,
            notrace: false,
        },
    ))
}

/// Adds (or removes) functions, by address, to the filter of `ops`
/// (`ftrace_set_filter_ips()`).
pub(crate) fn set_ips(ops: OpsRef<'_>, ips: &[c_ulong], remove: bool, reset: bool) -> c_int {
    to_errno(set_hash(
        ops,
        Edit {
            pattern: None,
            ips,
            remove,
            reset,
            notrace: false,
        },
    ))
}

/// The filter (`notrace`: notrace set) of `global_ops`, the function
/// tracer's top level, from `pattern` (`ftrace_set_global_filter()`).
pub(crate) fn set_global(pattern: Option<&[u8]>, reset: bool, notrace: bool) {
    let _ = set_hash(
        OpsRef::of_static(&global_ops),
        Edit::pattern(pattern, reset, notrace),
    );
}

/// Makes `ops` use the filter of `global_ops`.
pub(crate) fn ftrace_ops_set_global_filter(ops: OpsRef<'_>) {
    if ops.has(crate::ops::registry::F_INITIALIZED) {
        return;
    }
    let g = CoreGuard::lock();
    ops.share_sets(g.held(), OpsRef::of_static(&global_ops));
}

/// Boot-time filters (`ftrace_filter=` and the like): comma-separated
/// patterns; errors are ignored, as in the C core.
///
/// The C caller passes the boot parameter's buffer, a NUL-terminated
/// string that stays for the call: a [`CStrArg`].
pub(crate) fn ftrace_set_early_filter(ops: OpsRef<'_>, buf: CStrArg<'_>, enable: c_int) {
    let s = buf.bytes();
    for (i, pat) in s.split(|&b| b == b',').enumerate() {
        if pat.is_empty() {
            continue;
        }
        let _ = set_hash(ops, Edit::pattern(Some(pat), i == 0, enable == 0));
    }
}
