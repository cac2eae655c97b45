// SPDX-License-Identifier: GPL-2.0

//! Function probes: one ops per trace array and probe type, calling the
//! probe on the functions of its filter (`register_ftrace_function_probe()`,
//! used by the filter-file commands such as `traceoff` and `stacktrace`).

use crate::filter::{commit, match_records_locked};
use crate::hash::FnSet;
use crate::logic::glob::{Kind, Pattern};
use crate::logic::recursion;
use crate::ops::{self, list_add, list_del, list_entries, Ops, OpsRef};
use crate::sys::{dead, to_errno, CoreGuard, Held, TraceArray};
use crate::tracefs::Out;
use core::marker::PhantomData;
use core::ptr;
use kernel::bindings;
use kernel::error::to_result;
use kernel::ffi::{c_char, c_int, c_ulong, c_void};
use kernel::prelude::*;

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
    crate::task::guarded(recursion::FTRACE_START, |_| {
        // SAFETY: only probe ops have this callback; a probe outlives its
        // registration.
        unsafe {
            if let Some(f) = (*(*p).probe_ops).func {
                f(ip, parent_ip, (*p).tr, (*p).probe_ops, (*p).data);
            }
        }
    });
}

/// A probe on its trace array's list, handled under `ftrace_lock`.
///
/// # Invariants
///
/// `0` points to a [`Probe`] made by [`ProbeRef::create`] (a `KBox`),
/// listed on its trace array's probe list, which changes only under
/// `ftrace_lock`, held for `'h`; only [`ProbeRef::destroy`] unlists and
/// frees it, consuming the handle.
struct ProbeRef<'h>(ptr::NonNull<Probe>, PhantomData<&'h Held>);

impl<'h> ProbeRef<'h> {
    /// A new probe of `probe_ops` on `tr`, listed.
    fn create(
        _held: &'h Held,
        tr: TraceArray,
        probe_ops: *mut FtraceProbeOps,
    ) -> Result<ProbeRef<'h>> {
        let b = KBox::new(
            Probe {
                ops: crate::sys::zeroed_ops(),
                probe_ops,
                tr: tr.as_ptr(),
                list: bindings::list_head {
                    next: ptr::null_mut(),
                    prev: ptr::null_mut(),
                },
                data: ptr::null_mut(),
            },
            GFP_KERNEL,
        )?;
        let raw = KBox::into_raw(b);
        // SAFETY: fresh, on no list; the probe list changes under
        // `ftrace_lock` (held); the ops is not registered, so only this
        // task sees its callback.
        unsafe {
            (*raw).ops.func = Some(probe_call);
            list_add(ptr::addr_of_mut!((*raw).list), tr.func_probes());
        }
        // INVARIANT: made from a `KBox`, listed.
        let p = ProbeRef(ptr::NonNull::new(raw).ok_or(ENOMEM)?, PhantomData);
        p.ops().set_private(_held, tr.as_ptr());
        p.ops().init(_held);
        Ok(p)
    }

    /// The probe's ops, for as long as the handle is borrowed.
    fn ops(&self) -> OpsRef<'_> {
        // SAFETY: the probe is live while the handle is (the invariants);
        // its ops is a field of it.
        unsafe { OpsRef::from_raw(ptr::addr_of_mut!((*self.0.as_ptr()).ops)) }
    }

    fn raw(&self) -> *mut Probe {
        self.0.as_ptr()
    }

    fn probe_ops(&self) -> *mut FtraceProbeOps {
        // SAFETY: live (the invariants); written once at creation.
        unsafe { (*self.raw()).probe_ops }
    }

    /// Asks the probe type to set up function `ip` (its `init`).
    fn init_func(&self, ip: u64, data: *mut c_void) -> Result {
        let (p, po) = (self.raw(), self.probe_ops());
        // SAFETY: live probe; the probe type's callbacks are valid while
        // it is registered, and take its data slot under `ftrace_lock`.
        unsafe {
            if let Some(init) = (*po).init {
                to_result(init(
                    po,
                    (*p).tr,
                    ip as c_ulong,
                    data,
                    ptr::addr_of_mut!((*p).data),
                ))?;
            }
        }
        Ok(())
    }

    /// Gives back the data of function `ip` (0: all of it) to the probe
    /// type (its `free`).
    fn free_func(&self, ip: u64) {
        let (p, po) = (self.raw(), self.probe_ops());
        // SAFETY: as for `init_func`.
        unsafe {
            if let Some(free) = (*po).free {
                free(po, (*p).tr, ip as c_ulong, (*p).data);
            }
        }
    }

    /// Forgets the probe type's data.
    fn reset_data(&self) {
        // SAFETY: live; the data slot is the core's under `ftrace_lock`.
        unsafe { (*self.raw()).data = ptr::null_mut() };
    }

    /// Lists function `ip` of the probe as set_ftrace_filter shows it.
    fn render(&self, o: &mut Out, ip: u64, page: &mut [u8; 512]) {
        let (p, po) = (self.raw(), self.probe_ops());
        // SAFETY: as for `init_func`; the print callback formats into a
        // seq_file over a local buffer (all-zero but its buffer).
        unsafe {
            match (*po).print {
                Some(print) => {
                    let mut m: bindings::seq_file = core::mem::zeroed();
                    m.buf = page.as_mut_ptr().cast();
                    m.size = page.len();
                    print(&mut m, ip as c_ulong, po, (*p).data);
                    o.bytes(&page[..m.count.min(page.len())]);
                }
                None => {
                    o.sym(ip, false);
                    o.bytes(b":");
                    o.sym((*po).func.map_or(0, |f| f as *const () as u64), false);
                    o.bytes(b"\n");
                }
            }
        }
    }

    /// Unlists and frees the probe, whose ops is not registered.
    fn destroy(self, held: &Held) {
        let ops = self.ops();
        drop(ops.swap_set(held, false, None));
        drop(ops.swap_set(held, true, None));
        // SAFETY: listed (the invariants), unlinked under `ftrace_lock`;
        // it came from a `KBox`; its ops is not registered, so no CPU
        // runs its callback, and the handle is consumed.
        unsafe {
            list_del(ptr::addr_of_mut!((*self.raw()).list));
            drop(KBox::from_raw(self.raw()));
        }
    }
}

/// The probes of `tr`.
fn probes<'h>(_held: &'h Held, tr: TraceArray) -> impl Iterator<Item = ProbeRef<'h>> {
    // SAFETY: the trace array's probe list, which holds only probes made
    // by `ProbeRef::create` and changes under `ftrace_lock`, held for
    // `'h`. The iterator reads an entry's successor before yielding it.
    unsafe { list_entries::<Probe>(tr.func_probes(), PROBE_LIST_OFF) }
        .filter_map(|p| ptr::NonNull::new(p).map(|p| ProbeRef(p, PhantomData)))
}

/// The probe of `probe_ops` on `tr`.
fn find<'h>(
    held: &'h Held,
    tr: TraceArray,
    probe_ops: *mut FtraceProbeOps,
) -> Option<ProbeRef<'h>> {
    probes(held, tr).find(|p| p.probe_ops() == probe_ops)
}

/// The string at `p` (empty for null).
///
/// # Safety
///
/// `p` is null or a NUL-terminated string that outlives `'a`.
unsafe fn cstr<'a>(p: *const c_char) -> &'a [u8] {
    if p.is_null() {
        return &[];
    }
    // SAFETY: per the function's contract.
    unsafe { CStr::from_char_ptr(p) }.as_bytes()
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
    // SAFETY: per the function's contract.
    let (tr, glob) = unsafe { (TraceArray::from_raw(tr), cstr(glob)) };
    let Some(tr) = tr else {
        return EINVAL.to_errno();
    };
    if glob.is_empty() || dead() || glob.first() == Some(&b'!') {
        return EINVAL.to_errno();
    }
    let g = CoreGuard::lock();
    let held = g.held();
    let p = match find(held, tr, probe_ops) {
        Some(p) => p,
        None => match ProbeRef::create(held, tr, probe_ops) {
            Ok(p) => p,
            Err(e) => return e.to_errno(),
        },
    };
    let r = add_functions(held, &p, glob, data);
    let ops = p.ops();
    if ops.sets(held).0.is_empty() && !ops.has(ops::F_ENABLED) {
        p.destroy(held);
    }
    r.unwrap_or_else(|e| e.to_errno())
}

/// Adds the functions matching `glob` to probe `p`; returns how many.
fn add_functions(held: &Held, p: &ProbeRef<'_>, glob: &[u8], data: *mut c_void) -> Result<c_int> {
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
    commit(held, op, false, &h)?;
    if !op.has(ops::F_ENABLED) {
        ops::startup(held, op)?;
    }
    Ok(count)
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
    // SAFETY: per the function's contract.
    let (tr, glob) = unsafe { (TraceArray::from_raw(tr), cstr(glob)) };
    let Some(tr) = tr else {
        return EINVAL.to_errno();
    };
    let g = CoreGuard::lock();
    let Some(p) = find(g.held(), tr, probe_ops) else {
        return ENODEV.to_errno();
    };
    to_errno(remove_functions(g.held(), p, glob).0)
}

/// Takes probe `p` off the functions matching `glob` (all for empty or
/// `*`); frees it when it is on none any more, else gives it back.
fn remove_functions<'h>(
    held: &'h Held,
    p: ProbeRef<'h>,
    glob: &[u8],
) -> (Result, Option<ProbeRef<'h>>) {
    match remove_matching(held, &p, glob) {
        Ok(true) => {
            p.destroy(held);
            (Ok(()), None)
        }
        Ok(false) => (Ok(()), Some(p)),
        Err(e) => (Err(e), Some(p)),
    }
}

/// The body of [`remove_functions`]: whether the probe is on no function
/// any more (and not registered).
fn remove_matching(held: &Held, p: &ProbeRef<'_>, glob: &[u8]) -> Result<bool> {
    let all = glob.is_empty() || glob == b"*";
    let pat = Pattern::parse(glob);
    let op = p.ops();
    let old = op.sets(held).0;
    if old.is_empty() {
        return Err(EINVAL);
    }
    let mut h = FnSet::copy_of(old)?;
    let mut removed = KVec::<u64>::new();
    let mut buf = [0u8; bindings::KSYM_NAME_LEN as usize];
    let mut oom = false;
    h.retain(|ip| {
        let hit = all
            || (pat.kind != Kind::Index
                && crate::tracefs::lookup(ip, &mut buf).is_some_and(|s| pat.matches(s.name)));
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
    let mut r = if now_empty && op.has(ops::F_ENABLED) {
        ops::shutdown(held, op)
    } else {
        Ok(())
    };
    if r.is_ok() {
        r = commit(held, op, false, &h);
    }
    drop(h);
    for &ip in removed.iter() {
        p.free_func(ip);
    }
    r.map(|()| now_empty)
}

/// Removes every probe of `tr` (the trace array is going away).
#[no_mangle]
pub extern "C" fn clear_ftrace_function_probes(tr: Option<TraceArray>) {
    let Some(tr) = tr else {
        return;
    };
    let g = CoreGuard::lock();
    let held = g.held();
    while let Some(p) = probes(held, tr).next() {
        // A probe left after a failure is shut down if need be and freed.
        if let (_, Some(p)) = remove_functions(held, p, b"") {
            if p.ops().has(ops::F_ENABLED) {
                let _ = ops::shutdown(held, p.ops());
            }
            p.destroy(held);
        }
    }
}

/// Lists the probes of `tr`, as set_ftrace_filter shows them.
pub(crate) fn render_probes(held: &Held, o: &mut Out, tr: TraceArray) {
    let mut page = [0u8; 512];
    for p in probes(held, tr) {
        for ip in p.ops().sets(held).0.ips() {
            p.render(o, ip, &mut page);
        }
    }
}
