// SPDX-License-Identifier: GPL-2.0

//! Sub-ops: the function graph's manager ops traces the union of its
//! sub-ops' filters.

use crate::clist::*;
use crate::hash::{self, FnSet, SetRef};
use crate::ops::{shutdown, startup};
use crate::registry::*;
use crate::sys::{dead, Held};
use crate::update::update_sites;
use crate::view;
use core::ptr;
use kernel::prelude::*;

const LIST_OFF: usize = core::mem::offset_of!(Ops, list);

/// The sub-ops of manager `m`.
///
/// # Safety
///
/// `ftrace_lock` is held; `m` is initialised.
pub(crate) unsafe fn subops(m: *mut Ops) -> impl Iterator<Item = *mut Ops> {
    // SAFETY: per the function's contract.
    unsafe { list_entries::<Ops>(ptr::addr_of_mut!((*m).subop_list), LIST_OFF) }
}

/// Gives manager `m` the union of its sub-ops' filters and the
/// intersection of their notrace sets.
///
/// # Safety
///
/// `ftrace_lock` is held; `m` is initialised.
unsafe fn rebuild_manager(m: *mut Ops) -> Result {
    let mut filter: Option<FnSet> = None;
    let mut notrace: Option<FnSet> = None;
    let mut any_empty_filter = false;
    let mut any_empty_notrace = false;
    // SAFETY: per the function's contract.
    for s in unsafe { subops(m) } {
        // SAFETY: sub-ops are valid while listed.
        let (f, n) = unsafe { sets(s) };
        // SAFETY: as above.
        unsafe {
            any_empty_filter |= hash::is_empty(f);
            any_empty_notrace |= hash::is_empty(n);
        }
    }
    // A set that cannot be made is freed with what was made before it.
    if !any_empty_filter {
        let mut union = FnSet::new()?;
        // SAFETY: as above.
        for s in unsafe { subops(m) } {
            // SAFETY: listed sub-ops are valid, their sets stable under
            // `ftrace_lock`.
            let (f, _) = unsafe { sets(s) };
            // SAFETY: as above.
            for ip in unsafe { SetRef::new(f) }.ips() {
                union.add(ip)?;
            }
        }
        filter = Some(union);
    }
    if !any_empty_notrace {
        // SAFETY: as above.
        let first = unsafe { subops(m) }.next();
        if let Some(first) = first {
            // SAFETY: as above.
            let mut common = unsafe { FnSet::copy_of(sets(first).1) }?;
            // SAFETY: as above.
            common.retain(|ip| unsafe { subops(m).all(|s| hash::contains(sets(s).1, ip)) });
            notrace = Some(common);
        }
    }
    let publish = |s: Option<FnSet>| s.map_or(ptr::null_mut(), FnSet::publish);
    // SAFETY: `ftrace_lock` is held; the old sets are unpublished.
    unsafe {
        hash::free_rcu(set_hash(m, false, publish(filter)));
        hash::free_rcu(set_hash(m, true, publish(notrace)));
    }
    Ok(())
}

/// Rebuilds every registered manager's sets from its sub-ops (a sub-op's
/// set, or one it shares with another ops, changed). Returns how many
/// managers there are, or an error.
///
/// # Safety
///
/// `ftrace_lock` is held.
pub(crate) unsafe fn refresh_managers() -> Result<usize> {
    let mut n = 0;
    // SAFETY: per the function's contract.
    for op in list(unsafe { Held::assume() }) {
        if op.is_manager() {
            // SAFETY: `ftrace_lock` is held; a listed ops is initialised.
            unsafe { rebuild_manager(op.as_ptr()) }?;
            n += 1;
        }
    }
    Ok(n)
}

/// Adds `sub` to manager `ops`, registering the manager with the first.
///
/// # Safety
///
/// `ftrace_lock` is held; both are valid.
pub(crate) unsafe fn startup_subops(ops: *mut Ops, sub: *mut Ops) -> Result {
    if dead() {
        return Err(ENODEV);
    }
    // SAFETY: per the function's contract.
    unsafe {
        ops_init(ops);
        ops_init(sub);
        if view::has(sub, F_ENABLED) {
            return Err(EBUSY);
        }
        list_add(
            ptr::addr_of_mut!((*sub).list),
            ptr::addr_of_mut!((*ops).subop_list),
        );
        let mut r = rebuild_manager(ops);
        if r.is_ok() {
            r = if !view::has(ops, F_ENABLED) {
                startup(ops)
            } else {
                update_sites()
            };
        }
        if let Err(e) = r {
            pr_warn!("cannot add sub-ops {:p} to {:p}: {:?}\n", sub, ops, e);
            list_del(ptr::addr_of_mut!((*sub).list));
            let _ = rebuild_manager(ops);
            return Err(e);
        }
        view::set(sub, F_ENABLED | F_SUBOP);
        (*sub).managed = ops;
    }
    Ok(())
}

/// Removes `sub` from manager `ops`, unregistering the manager with the
/// last.
///
/// # Safety
///
/// `ftrace_lock` is held; both are valid.
pub(crate) unsafe fn shutdown_subops(ops: *mut Ops, sub: *mut Ops) -> Result {
    if dead() {
        return Err(ENODEV);
    }
    // SAFETY: per the function's contract.
    unsafe {
        if !view::has(sub, F_ENABLED) {
            return Err(EINVAL);
        }
        list_del(ptr::addr_of_mut!((*sub).list));
        if list_empty(ptr::addr_of!((*ops).subop_list)) {
            if let Err(e) = shutdown(ops) {
                list_add(
                    ptr::addr_of_mut!((*sub).list),
                    ptr::addr_of_mut!((*ops).subop_list),
                );
                return Err(e);
            }
            hash::free_rcu(set_hash(ops, false, ptr::null_mut()));
            hash::free_rcu(set_hash(ops, true, ptr::null_mut()));
        } else {
            if rebuild_manager(ops).is_ok() {
                let _ = update_sites();
            }
        }
        view::clear(sub, F_ENABLED | F_SUBOP);
        (*sub).managed = ptr::null_mut();
    }
    Ok(())
}
