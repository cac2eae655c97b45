// SPDX-License-Identifier: GPL-2.0

//! The life of the call-site table: the kernel's sites at boot, a
//! module's when it loads (they get what the registered ops want when it
//! starts, and leave with its text, the cached `:mod:` filters and the
//! probes of the module following it), and the sites of init text that
//! is freed.

use crate::base::ffi::ModuleRef;
use crate::base::sys::{dead, CoreGuard, Held};
use crate::logic::sites::flags as sf;
use crate::ops::arch::UnrunSites;
use crate::sites::table::{self, Cell, Group};
use core::sync::atomic::Ordering;
use kernel::bindings;
use kernel::prelude::*;

/// The call sites of module `m` being loaded, sorted and unique (none:
/// no sites, tracing dead, or no memory).
pub(crate) fn sorted_sites(m: ModuleRef<'_>) -> Option<KVVec<u64>> {
    if dead() || m.callsites().is_empty() {
        return None;
    }
    let mut ips = KVVec::<u64>::new();
    if ips.extend_from_slice(m.callsites(), GFP_KERNEL).is_err() {
        pr_err!("out of memory for the call sites of a module\n");
        return None;
    }
    // Each entry names its site as the architecture says; those naming
    // none become zeros, which the sort drops.
    crate::logic::sites::adjust(&mut ips, crate::base::archdep::defs::call_adjust);
    let k = crate::logic::sites::sort_unique(&mut ips);
    crate::base::sys::truncate(&mut ips, k);
    Some(ips)
}

/// A module is being loaded: its sites join the table, as NOPs.
pub(crate) fn add_module(m: ModuleRef<'_>, sites: &UnrunSites<'_>) {
    let g = CoreGuard::lock();
    if let Err(e) = add_sites(g.held(), m.as_ptr(), sites) {
        pr_err!("cannot add the call sites of a module: {:?}\n", e);
    }
}

/// A module is about to run: its sites get what the registered ops want.
#[no_mangle]
pub extern "C" fn ftrace_module_enable(m: ModuleRef<'_>) {
    {
        let mut guard = CoreGuard::lock();
        let (held, key) = guard.parts();
        let Some(g) = table::of_module(m.as_ptr()) else {
            return;
        };
        for c in g.live() {
            c.update(held, |s| s.flags &= !sf::DISABLED);
        }
        // Only its sites can change. Failures are reported.
        let _ = crate::ops::update::update_cells(held, key, g.live_len(), g.live());
    }
    crate::filter::probe::process_cached_mods(m.name());
}

/// A module is gone: so are its sites.
#[no_mangle]
pub extern "C" fn ftrace_release_mod(m: *mut bindings::module) {
    crate::filter::probe::scrub_module(m);
    let guard = CoreGuard::lock();
    let names = crate::abi::initnames::forget(guard.held(), m as usize);
    let group = table::of_module(m).and_then(|g| table::unlink(guard.held(), g, None));
    if group.is_some() {
        update_counts();
    }
    // Freed once the readers that may still see them are gone; unloading
    // does not wait for that (C waits, here, for one grace period).
    drop(guard);
    if let Some(n) = names {
        n.defer();
    }
    if let Some(g) = group {
        g.defer();
    }
}

pub(crate) fn update_counts() {
    let (mut pages, mut groups, mut total) = (0usize, 0usize, 0usize);
    for g in table::groups() {
        groups += 1;
        total += g.live_len();
        pages += (g.sites.len() * core::mem::size_of::<Cell>()).div_ceil(bindings::PAGE_SIZE);
    }
    crate::base::sys::ftrace_update_tot_cnt.store(total, Ordering::Relaxed);
    crate::base::sys::ftrace_number_of_pages.store(pages, Ordering::Relaxed);
    crate::base::sys::ftrace_number_of_groups.store(groups, Ordering::Relaxed);
}

/// Makes the sites NOPs and adds them to the table as a group of module
/// `m` (null: the kernel). Module sites stay disabled until the module is
/// enabled. Returns how many were added and how many of them had to be
/// rewritten (the rest were NOPs already).
pub(crate) fn add_sites(
    held: &Held,
    m: *mut bindings::module,
    sites: &UnrunSites<'_>,
) -> Result<(usize, usize)> {
    let g = Group::new(m, sites.ips())?;
    let mut written = 0;
    // The group's records are the sites, in their order.
    for (i, c) in g.sites.iter().enumerate() {
        let add = match sites.make_nop(i) {
            Ok(w) => {
                written += usize::from(w);
                if m.is_null() {
                    0
                } else {
                    sf::DISABLED | sf::INIT
                }
            }
            Err(e) => {
                crate::base::sys::report_bug(e, c.ip());
                sf::DISABLED
            }
        };
        // The kernel's records start as they are made (16,000 and more
        // at boot).
        if add != 0 {
            c.update(held, |s| s.flags |= add);
        }
    }
    let n = g.sites.len();
    table::publish(held, g);
    update_counts();
    Ok((n, written))
}

/// Drops the sites in `[start, end)` of module `m` (null: the kernel),
/// whose text is being freed.
pub(crate) fn free_range(m: *mut bindings::module, start: u64, end: u64) {
    let guard = CoreGuard::lock();
    let held = guard.held();
    let g = if m.is_null() {
        table::core_group()
    } else {
        table::of_module(m)
    };
    let Some(g) = g else {
        return;
    };
    let r = crate::logic::sites::range(&g.sites, start, end);
    if r.is_empty() {
        return;
    }
    if !m.is_null() {
        let ips = g.sites.get(r.clone()).into_iter().flatten().map(|c| c.ip());
        crate::abi::initnames::save(held, m as usize, ips);
    }
    // The records that stay go to a new, smaller group; without memory
    // for it they stay where they are, marked gone, which needs none.
    let stays = |i: &usize| !r.contains(i) && !g.sites[*i].is_gone();
    let mut keep = KVVec::<u64>::new();
    let mut oom = false;
    for (i, c) in g.sites.iter().enumerate() {
        if stays(&i) && keep.push(c.ip(), GFP_KERNEL).is_err() {
            oom = true;
            break;
        }
    }
    let new = if oom { None } else { Group::new(m, &keep).ok() };
    let Some(new) = new else {
        g.mark_gone(held, r);
        update_counts();
        return;
    };
    for (c, i) in new.sites.iter().zip((0..g.sites.len()).filter(stays)) {
        c.set(held, g.sites[i].read(held));
    }
    table::replace(held, g, Some(new));
    update_counts();
}

/// A module's init memory `[start, end)` is being freed.
#[no_mangle]
pub extern "C" fn ftrace_free_mem(
    m: *mut bindings::module,
    start: *mut kernel::ffi::c_void,
    end: *mut kernel::ffi::c_void,
) {
    free_range(m, start as u64, end as u64);
}
