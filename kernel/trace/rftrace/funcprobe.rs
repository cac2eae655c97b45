// SPDX-License-Identifier: GPL-2.0

//! Function probes: one ops per trace array and probe type, calling the
//! probe on the functions of its filter (`register_ftrace_function_probe()`,
//! used by the filter-file commands such as `traceoff` and `stacktrace`).

use crate::filter::{commit, match_records_locked};
use crate::hash::{self, FnSet};
use crate::logic::glob::{Kind, Pattern};
use crate::logic::recursion;
use crate::ops::{self, list_add, list_del, list_entries, Ops};
use crate::sys::{dead, to_errno, Guard, TraceArray};
use crate::tracefs::Out;
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
    crate::task::guarded(crate::task::current(), recursion::FTRACE_START, |_| {
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
/// `ftrace_lock` is held.
unsafe fn probes(tr: TraceArray) -> impl Iterator<Item = *mut Probe> {
    // SAFETY: per the function's contract; the list holds our probes.
    unsafe { list_entries::<Probe>(tr.func_probes(), PROBE_LIST_OFF) }
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
    let Some(tra) = (unsafe { TraceArray::from_raw(tr) }) else {
        return EINVAL.to_errno();
    };
    if glob.is_null() || dead() {
        return EINVAL.to_errno();
    }
    // SAFETY: per the function's contract.
    let g = unsafe { CStr::from_char_ptr(glob) }.as_bytes();
    if g.first() == Some(&b'!') {
        return EINVAL.to_errno();
    }
    let _g = Guard::lock();
    // SAFETY: `ftrace_lock` held; listed probes are live.
    let mut p = unsafe { probes(tra) }.find(|&p| unsafe { (*p).probe_ops } == probe_ops);
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
            list_add(ptr::addr_of_mut!((*raw).list), tra.func_probes());
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
        let mut h = FnSet::copy_of(old)?;
        if !match_records_locked(&mut h, glob, None)? {
            return Err(EINVAL);
        }
        let po = (*p).probe_ops;
        let mut count = 0;
        let mut err = Ok(());
        for ip in h.ips() {
            if hash::contains(old, ip) {
                continue;
            }
            if let Some(init) = (*po).init {
                let r = init(
                    po,
                    (*p).tr,
                    ip as c_ulong,
                    data,
                    ptr::addr_of_mut!((*p).data),
                );
                if r < 0 {
                    if count > 0 {
                        if let Some(free) = (*po).free {
                            free(po, (*p).tr, 0, (*p).data);
                        }
                    }
                    (*p).data = ptr::null_mut();
                    err = to_result(r);
                    break;
                }
            }
            count += 1;
        }
        if err.is_ok() && count == 0 {
            err = Err(EINVAL);
        }
        if err.is_ok() {
            err = commit(op, false, &h);
            if err.is_ok() && !crate::view::has(op, ops::F_ENABLED) {
                err = ops::startup(op);
            }
        }
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
    // SAFETY: per the function's contract.
    let Some(tr) = (unsafe { TraceArray::from_raw(tr) }) else {
        return EINVAL.to_errno();
    };
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
        let mut r = if now_empty && crate::view::has(op, ops::F_ENABLED) {
            ops::shutdown(op)
        } else {
            Ok(())
        };
        if r.is_ok() {
            r = commit(op, false, &h);
        }
        drop(h);
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
    // SAFETY: per the function's contract.
    let Some(tr) = (unsafe { TraceArray::from_raw(tr) }) else {
        return;
    };
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
/// `ftrace_lock` is held.
pub(crate) unsafe fn render_probes(o: &mut Out, tr: TraceArray) {
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
