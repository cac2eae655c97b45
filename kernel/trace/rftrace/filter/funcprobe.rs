// SPDX-License-Identifier: GPL-2.0

//! Function probes: one ops per trace array and probe type, calling the
//! probe on the functions of its filter (`register_ftrace_function_probe()`,
//! used by the filter-file commands such as `traceoff` and `stacktrace`).

use crate::base::cells::Locked;
use crate::base::ffi::CStrArg;
use crate::base::sys::{dead, to_errno, CoreGuard, Held, StateKey, TraceArray};
use crate::base::tracefs::Out;
use crate::filter::api::{commit, match_records_locked};
use crate::logic::glob::{Kind, Pattern};
use crate::logic::recursion;
use crate::ops::clients::{ProbeData, ProbeDataCell, ProbeOps};
use crate::ops::registry::{Fregs, HasOps, OpsCallback};
use crate::ops::registry::{Ops, OpsRef};
use crate::sites::hash::FnSet;
use core::ptr;
use kernel::ffi::{c_int, c_ulong};
use kernel::prelude::*;
use kernel::sync::Arc;
use kernel::types::Opaque;

/// One probe type registered on a trace array: its ops traces the
/// functions the probe is on.
#[repr(C)]
struct Probe {
    /// First: the callback finds the probe from its ops.
    ops: Opaque<Ops>,
    probe_ops: ProbeOps,
    tr: TraceArray,
    /// The probe type's data.
    data: ProbeDataCell,
}

// SAFETY: a probe's ops is shared with every CPU by design (the traced
// functions call its callback with it; the core reads it through
// `OpsRef`, atomically or under `ftrace_lock`), and its pointers are the
// C fields of an ops, which no task owns; the probe type and trace array
// are handles that are `Send` and `Sync`, the data an atomic. Probes are
// listed and dropped under `ftrace_lock`, after their ops is unregistered.
unsafe impl Send for Probe {}
// SAFETY: as for `Send`: through `&Probe` every CPU reads the same ops
// and data, which change only atomically or under `ftrace_lock`.
unsafe impl Sync for Probe {}

// SAFETY: `Probe` is `repr(C)` with its ops first; its callback is
// installed only in the ops of a `Probe` (`ProbeRef::create`), which stays
// allocated while the core lists it, until after its ops is unregistered
// (`destroy`).
unsafe impl HasOps for Probe {}

/// The probes of every trace array, oldest first.
static PROBES: Locked<KVec<Arc<Probe>>> = Locked::new(KVec::new());

/// The callback of a probe's ops.
impl OpsCallback for Probe {
    fn call(ip: c_ulong, parent_ip: c_ulong, op: OpsRef<'_>, _fregs: Fregs<'_>) {
        let Some(p) = op.container::<Probe>() else {
            return;
        };
        // The function recursion guard, as C's probe callback takes it.
        crate::base::task::guarded(recursion::FTRACE_START, |_| {
            p.probe_ops.call(ip, parent_ip, p.tr, p.data.get());
        });
    }
}

/// A probe of [`PROBES`], handled under `ftrace_lock`: a reference that
/// keeps its memory while the handle lives.
struct ProbeRef(Arc<Probe>);

impl ProbeRef {
    fn get(&self) -> &Probe {
        &self.0
    }

    /// A new probe of `probe_ops` on `tr`, listed.
    fn create(
        held: &Held,
        key: &mut StateKey,
        tr: TraceArray,
        probe_ops: ProbeOps,
    ) -> Result<ProbeRef> {
        let mut ops = crate::base::zeroed::zeroed_ops();
        ops.func = crate::ops::registry::ops_fn::<Probe>();
        ops.private = tr.as_ptr();
        let b = Arc::new(
            Probe {
                ops: Opaque::new(ops),
                probe_ops,
                tr,
                data: ProbeDataCell::new(),
            },
            GFP_KERNEL,
        )?;
        PROBES.borrow(key).push(b.clone(), GFP_KERNEL)?;
        let p = ProbeRef(b);
        p.ops().init(held);
        Ok(p)
    }

    /// The probe's ops, for as long as the handle is borrowed.
    fn ops(&self) -> OpsRef<'_> {
        OpsRef::of_opaque(&self.get().ops)
    }

    fn probe_ops(&self) -> ProbeOps {
        self.get().probe_ops
    }

    /// Asks the probe type to set up function `ip` (its `init`).
    fn init_func(&self, ip: u64, data: ProbeData) -> Result {
        let p = self.get();
        p.probe_ops.init(p.tr, ip, data, &p.data)
    }

    /// Gives back the data of function `ip` (0: all of it) to the probe
    /// type (its `free`).
    fn free_func(&self, ip: u64) {
        let p = self.get();
        p.probe_ops.free(p.tr, ip, p.data.get());
    }

    /// Forgets the probe type's data.
    fn reset_data(&self) {
        self.get().data.reset();
    }

    /// Lists function `ip` of the probe as set_ftrace_filter shows it.
    fn render(&self, o: &mut Out, ip: u64, page: &mut [u8; 512]) {
        let p = self.get();
        match p.probe_ops.print(ip, p.data.get(), page) {
            Some(n) => o.bytes(&page[..n.min(page.len())]),
            None => {
                o.sym(ip, false);
                o.bytes(b":");
                o.sym(p.probe_ops.func_addr(), false);
                o.bytes(b"\n");
            }
        }
    }

    /// Takes the probe, whose ops is not registered, out of [`PROBES`]
    /// and frees it.
    fn destroy(self, held: &Held, key: &mut StateKey) {
        let ops = self.ops();
        drop(ops.swap_set(held, false, None));
        drop(ops.swap_set(held, true, None));
        let all = PROBES.borrow(key);
        if let Some(i) = all.iter().position(|b| ptr::eq(&**b, self.get())) {
            // Not registered: no CPU runs its callback any more.
            let last = all.len() - 1;
            all.as_mut_slice()[i..].rotate_left(1);
            crate::base::sys::truncate(all, last);
        }
    }
}

/// The probes of `tr`, newest first (as C lists them).
///
/// The list stays as it is while the walk borrows `key`: a caller that
/// destroys a probe ends the walk first.
fn probes(key: &StateKey, tr: TraceArray) -> impl Iterator<Item = ProbeRef> + '_ {
    PROBES
        .get(key)
        .iter()
        .rev()
        .filter(move |b| b.tr == tr)
        .map(|b| ProbeRef(b.clone()))
}

/// The probe of `probe_ops` on `tr`.
fn find(key: &StateKey, tr: TraceArray, probe_ops: ProbeOps) -> Option<ProbeRef> {
    probes(key, tr).find(|p| p.probe_ops() == probe_ops)
}

/// Puts `probe_ops` on the functions matching `glob` in `tr`. Returns
/// how many functions were new.
///
pub(crate) fn register_ftrace_function_probe(
    glob: CStrArg<'_>,
    tr: Option<TraceArray>,
    probe_ops: Option<ProbeOps>,
    data: ProbeData,
) -> c_int {
    let glob = glob.bytes();
    let (Some(tr), Some(probe_ops)) = (tr, probe_ops) else {
        return EINVAL.to_errno();
    };
    if glob.is_empty() || dead() || glob.first() == Some(&b'!') {
        return EINVAL.to_errno();
    }
    let mut g = CoreGuard::lock();
    let (held, key) = g.parts();
    let p = match find(key, tr, probe_ops) {
        Some(p) => p,
        None => match ProbeRef::create(held, key, tr, probe_ops) {
            Ok(p) => p,
            Err(e) => return e.to_errno(),
        },
    };
    let r = add_functions(held, key, &p, glob, data);
    let ops = p.ops();
    if ops.sets(held).0.is_empty() && !ops.has(crate::ops::registry::F_ENABLED) {
        p.destroy(held, key);
    }
    r.unwrap_or_else(|e| e.to_errno())
}

/// Adds the functions matching `glob` to probe `p`; returns how many.
fn add_functions(
    held: &Held,
    key: &mut StateKey,
    p: &ProbeRef,
    glob: &[u8],
    data: ProbeData,
) -> Result<c_int> {
    let op = p.ops();
    let old = op.sets(held).0;
    let mut h = FnSet::copy_of(old)?;
    if !match_records_locked(held, &mut h, glob, None)? {
        return Err(EINVAL);
    }
    let mut count = 0;
    for ip in h.ips() {
        if old.contains(ip) {
            continue;
        }
        if let Err(e) = p.init_func(ip, data) {
            if count > 0 {
                p.free_func(0);
            }
            p.reset_data();
            return Err(e);
        }
        count += 1;
    }
    if count == 0 {
        return Err(EINVAL);
    }
    commit(held, key, op, false, h)?;
    if !op.has(crate::ops::registry::F_ENABLED) {
        crate::ops::register::startup(held, key, op)?;
    }
    Ok(count)
}

/// Takes `probe_ops` off the functions matching `glob` (all for null,
/// empty or `*`) in `tr`.
pub(crate) fn unregister_ftrace_function_probe_func(
    glob: CStrArg<'_>,
    tr: Option<TraceArray>,
    probe_ops: Option<ProbeOps>,
) -> c_int {
    let glob = glob.bytes();
    let (Some(tr), Some(probe_ops)) = (tr, probe_ops) else {
        return EINVAL.to_errno();
    };
    let mut g = CoreGuard::lock();
    let (held, key) = g.parts();
    let Some(p) = find(key, tr, probe_ops) else {
        return ENODEV.to_errno();
    };
    to_errno(remove_functions(held, key, p, glob).0)
}

/// Takes probe `p` off the functions matching `glob` (all for empty or
/// `*`); frees it when it is on none any more, else gives it back.
fn remove_functions(
    held: &Held,
    key: &mut StateKey,
    p: ProbeRef,
    glob: &[u8],
) -> (Result, Option<ProbeRef>) {
    match remove_matching(held, key, &p, glob) {
        Ok(true) => {
            p.destroy(held, key);
            (Ok(()), None)
        }
        Ok(false) => (Ok(()), Some(p)),
        Err(e) => (Err(e), Some(p)),
    }
}

/// The body of [`remove_functions`]: whether the probe is on no function
/// any more (and not registered).
fn remove_matching(held: &Held, key: &mut StateKey, p: &ProbeRef, glob: &[u8]) -> Result<bool> {
    let all = glob.is_empty() || glob == b"*";
    let pat = Pattern::parse(glob);
    let op = p.ops();
    let old = op.sets(held).0;
    if old.is_empty() {
        return Err(EINVAL);
    }
    let mut h = FnSet::copy_of(old)?;
    let mut removed = KVec::<u64>::new();
    let mut buf = kernel::kallsyms::SymbolBuf::new();
    let mut m = crate::filter::api::Matcher::new(pat)?;
    let mut oom = false;
    h.retain(|ip| {
        let hit = all
            || (pat.kind != Kind::Index
                && crate::sites::names::lookup(ip, &mut buf).is_some_and(|s| m.matches(s.name)));
        if !hit || oom {
            return true;
        }
        if removed.push(ip, GFP_KERNEL).is_err() {
            oom = true;
            return true;
        }
        false
    });
    if oom {
        return Err(ENOMEM);
    }
    if removed.is_empty() {
        return Err(EINVAL);
    }
    let now_empty = h.count() == 0;
    let mut r = if now_empty && op.has(crate::ops::registry::F_ENABLED) {
        crate::ops::register::shutdown(held, key, op)
    } else {
        Ok(())
    };
    // `h` goes here either way (`commit` frees it).
    r = r.and_then(|()| commit(held, key, op, false, h));
    for &ip in removed.iter() {
        p.free_func(ip);
    }
    r.map(|()| now_empty)
}

/// Removes every probe of `tr`, and its cached `:mod:` entries: the trace
/// array is going away.
pub(crate) fn clear_ftrace_function_probes(tr: Option<TraceArray>) {
    let Some(tr) = tr else {
        return;
    };
    let mut g = CoreGuard::lock();
    let (held, key) = g.parts();
    loop {
        // One probe at a time, the walk ended before it goes.
        let first = probes(key, tr).next();
        let Some(p) = first else {
            break;
        };
        // A probe left after a failure is shut down if need be and freed.
        if let (_, Some(p)) = remove_functions(held, key, p, b"") {
            if p.ops().has(crate::ops::registry::F_ENABLED) {
                let _ = crate::ops::register::shutdown(held, key, p.ops());
            }
            p.destroy(held, key);
        }
    }
    for notrace in [false, true] {
        crate::filter::probe::clear_mod_list(key, tr, notrace);
    }
}

/// Lists the probes of `tr`, as set_ftrace_filter shows them.
pub(crate) fn render_probes(held: &Held, key: &StateKey, o: &mut Out, tr: TraceArray) {
    let mut page = [0u8; 512];
    for p in probes(key, tr) {
        for ip in p.ops().sets(held).0.ips() {
            p.render(o, ip, &mut page);
        }
    }
}
