// SPDX-License-Identifier: GPL-2.0

//! Sub-ops: the function graph's manager ops traces the union of its
//! sub-ops' filters.

use crate::base::sys::{dead, Held, StateKey};
use crate::ops::register::{shutdown, startup};
use crate::ops::registry::{list, OpsRef, F_ENABLED, F_SUBOP};
use crate::ops::update::update_sites;
use crate::sites::hash::FnSet;
use core::ptr;
use kernel::prelude::*;

/// Gives manager `m` the union of its sub-ops' filters and the
/// intersection of their notrace sets.
fn rebuild_manager(held: &Held, key: &StateKey, m: OpsRef<'_>) -> Result {
    let mut filter: Option<FnSet> = None;
    let mut notrace: Option<FnSet> = None;
    let (mut any_empty_filter, mut any_empty_notrace) = (false, false);
    for s in m.subops(key) {
        let (f, n) = s.sets(held);
        any_empty_filter |= f.is_empty();
        any_empty_notrace |= n.is_empty();
    }
    // A set that cannot be made is freed with what was made before it.
    if !any_empty_filter {
        let mut union = FnSet::new()?;
        for s in m.subops(key) {
            for ip in s.sets(held).0.ips() {
                union.add(ip)?;
            }
        }
        filter = Some(union);
    }
    if !any_empty_notrace {
        if let Some(first) = m.subops(key).next() {
            let mut common = FnSet::copy_of(first.sets(held).1)?;
            common.retain(|ip| m.subops(key).all(|s| s.sets(held).1.contains(ip)));
            notrace = Some(common);
        }
    }
    drop(m.swap_set(held, false, filter));
    drop(m.swap_set(held, true, notrace));
    Ok(())
}

/// Rebuilds every registered manager's sets from its sub-ops (a sub-op's
/// set, or one it shares with another ops, changed). Returns how many
/// managers there are, or an error.
pub(crate) fn refresh_managers(held: &Held, key: &StateKey) -> Result<usize> {
    let mut n = 0;
    for op in list(held) {
        if op.is_manager(key) {
            rebuild_manager(held, key, op)?;
            n += 1;
        }
    }
    Ok(n)
}

/// Adds `sub` to manager `ops`, registering the manager with the first.
pub(crate) fn startup_subops(
    held: &Held,
    key: &mut StateKey,
    ops: OpsRef<'_>,
    sub: OpsRef<'_>,
) -> Result {
    if dead() {
        return Err(ENODEV);
    }
    sub.init(held);
    if sub.has(F_ENABLED) {
        return Err(EBUSY);
    }
    ops.add_subop(held, key, sub)?;
    let r = rebuild_manager(held, key, ops).and_then(|()| {
        if ops.has(F_ENABLED) {
            update_sites(held, key)
        } else {
            startup(held, key, ops)
        }
    });
    if let Err(e) = r {
        pr_warn!(
            "cannot add sub-ops {:p} to {:p}: {:?}\n",
            sub.as_ptr(),
            ops.as_ptr(),
            e
        );
        sub.del_subop(key);
        let _ = rebuild_manager(held, key, ops);
        return Err(e);
    }
    sub.set(F_ENABLED | F_SUBOP);
    sub.set_managed(held, ops.as_ptr());
    Ok(())
}

/// Removes `sub` from manager `ops`, unregistering the manager with the
/// last.
pub(crate) fn shutdown_subops(
    held: &Held,
    key: &mut StateKey,
    ops: OpsRef<'_>,
    sub: OpsRef<'_>,
) -> Result {
    if dead() {
        return Err(ENODEV);
    }
    if !sub.has(F_ENABLED) {
        return Err(EINVAL);
    }
    sub.del_subop(key);
    if !ops.is_manager(key) {
        if let Err(e) = shutdown(held, key, ops) {
            // The link's room is still there (`del_subop` keeps it): this
            // does not allocate, so it does not fail.
            let _ = ops.add_subop(held, key, sub);
            return Err(e);
        }
        drop(ops.swap_set(held, false, None));
        drop(ops.swap_set(held, true, None));
    } else if rebuild_manager(held, key, ops).is_ok() {
        let _ = update_sites(held, key);
    }
    sub.clear(F_ENABLED | F_SUBOP);
    sub.set_managed(held, ptr::null_mut());
    Ok(())
}
