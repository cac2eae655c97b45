// SPDX-License-Identifier: GPL-2.0

//! The life of the call-site table: the kernel's sites at boot, a
//! module's when it loads (they get what the registered ops want when it
//! starts, and leave with its text, the cached `:mod:` filters and the
//! probes of the module following it), and the sites of init text that
//! is freed.

use crate::ffi::ModuleRef;
use crate::logic::sites::flags as sf;
use crate::ops;
use crate::sys::{dead, CoreGuard, Held};
use crate::table::{self, Cell, Group};
use crate::update::rftrace_arch_init_site;
use core::sync::atomic::Ordering;
use kernel::bindings;
use kernel::prelude::*;

/// A module is being loaded: its sites join the table, as NOPs.
///
/// # Safety
///
/// `m` is a module being loaded, its text not yet running.
#[no_mangle]
pub unsafe extern "C" fn ftrace_module_init(m: *mut bindings::module) {
    if dead() {
        return;
    }
    // SAFETY: `m` is a module being loaded (the contract), which the
    // loader does not change during this call; it filled in the module's
    // `num_ftrace_callsites` entries at `ftrace_callsites`.
    let locs = unsafe {
        let (p, n) = ((*m).ftrace_callsites, (*m).num_ftrace_callsites as usize);
        if p.is_null() || n == 0 {
            return;
        }
        // An unsigned long is a u64 on x86_64.
        core::slice::from_raw_parts(p.cast::<u64>(), n)
    };
    let mut ips = KVVec::<u64>::new();
    if ips.extend_from_slice(locs, GFP_KERNEL).is_err() {
        pr_err!("out of memory for the call sites of a module\n");
        return;
    }
    let k = crate::logic::sites::sort_unique(&mut ips);
    let g = CoreGuard::lock();
    // SAFETY: the module's text does not run yet.
    if let Err(e) = unsafe { add_sites(g.held(), m, &ips[..k]) } {
        pr_err!("cannot add the call sites of a module: {:?}\n", e);
    }
}

/// A module is about to run: its sites get what the registered ops want.
#[no_mangle]
pub extern "C" fn ftrace_module_enable(m: ModuleRef<'_>) {
    {
        let guard = CoreGuard::lock();
        let held = guard.held();
        let Some(g) = table::of_module(m.as_ptr()) else {
            return;
        };
        for c in g.live() {
            c.update(held, |s| s.flags &= !sf::DISABLED);
        }
        // Failures are reported.
        let _ = ops::update_sites(held);
    }
    crate::probe::process_cached_mods(m.name());
}

/// A module is gone: so are its sites.
#[no_mangle]
pub extern "C" fn ftrace_release_mod(m: *mut bindings::module) {
    crate::probe::scrub_module(m);
    let guard = CoreGuard::lock();
    crate::initnames::forget(guard.held(), m as usize);
    if let Some(g) = table::of_module(m) {
        table::replace(guard.held(), g, None);
        update_counts();
    }
}

pub(crate) fn update_counts() {
    let (mut pages, mut groups, mut total) = (0usize, 0usize, 0usize);
    for g in table::groups() {
        groups += 1;
        total += g.live_len();
        pages += (g.sites.len() * core::mem::size_of::<Cell>()).div_ceil(bindings::PAGE_SIZE);
    }
    crate::sys::ftrace_update_tot_cnt.store(total, Ordering::Relaxed);
    crate::sys::ftrace_number_of_pages.store(pages, Ordering::Relaxed);
    crate::sys::ftrace_number_of_groups.store(groups, Ordering::Relaxed);
}

/// Makes the sites `ips` (sorted, unique) NOPs and adds them to the table
/// as a group of module `m` (null: the kernel). Module sites stay
/// disabled until the module is enabled. Returns how many were added and
/// how many of them had to be rewritten (the rest were NOPs already).
///
/// # Safety
///
/// The sites' code does not run yet and is still writable.
pub(crate) unsafe fn add_sites(
    held: &Held,
    m: *mut bindings::module,
    ips: &[u64],
) -> Result<(usize, usize)> {
    let g = Group::new(m, ips)?;
    let mut written = 0;
    for c in g.sites.iter() {
        // SAFETY: `c` is a site of `ips`, whose code does not run yet and
        // is still writable (the contract), so the architecture may write
        // its NOP without the live patching protocol.
        let r = unsafe { rftrace_arch_init_site(c.ip(), 0) };
        if r > 0 {
            written += 1;
        }
        let add = if r < 0 {
            crate::sys::report_bug(Error::from_errno(r), c.ip());
            sf::DISABLED
        } else if !m.is_null() {
            sf::DISABLED | sf::INIT
        } else {
            0
        };
        c.update(held, |s| s.flags |= add);
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
        crate::initnames::save(held, m as usize, ips);
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
