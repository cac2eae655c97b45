// SPDX-License-Identifier: GPL-2.0

//! The call-site table: one group of 16-byte records per text image (the
//! kernel, each module), sorted by address, in a list that lock-free
//! readers walk under RCU (`ftrace_location()` is called from kprobes).
//! Groups are only added and removed under `ftrace_lock`; a group that
//! shrinks is replaced by a copy. A record's address never changes; its
//! state (refs, flags) is only touched under `ftrace_lock`.

use crate::base::cells::Retired;
use crate::base::sys::Held;
use crate::logic::sites::{self, Site, SiteIp};
use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use kernel::bindings;
use kernel::ffi::{c_int, c_ulong, c_void};
use kernel::prelude::*;

/// One record: the site's address, fixed, and its state ([`Site`]'s
/// count and flags), changed only under `ftrace_lock` while lock-free
/// readers look at the address and the flags (`is_gone`). Each word is
/// its own atomic, so no access can tear or race; the relaxed loads and
/// stores are plain moves on x86_64.
#[repr(C)]
pub(crate) struct Cell {
    ip: u64,
    refs: AtomicU32,
    flags: AtomicU32,
}

const _: () = assert!(core::mem::size_of::<Cell>() == 16);

impl SiteIp for Cell {
    fn site_ip(&self) -> u64 {
        self.ip
    }
}

impl Cell {
    fn new(ip: u64) -> Self {
        let s = Site::new(ip);
        Cell {
            ip,
            refs: AtomicU32::new(s.refs),
            flags: AtomicU32::new(s.flags),
        }
    }

    /// The record as it is now.
    pub(crate) fn read(&self, _held: &Held) -> Site {
        Site {
            ip: self.ip,
            refs: self.refs.load(Ordering::Relaxed),
            flags: self.flags.load(Ordering::Relaxed),
        }
    }

    /// Gives the record `next`'s state (count and flags; `next` describes
    /// this record's site; its address never changes).
    pub(crate) fn set(&self, _held: &Held, next: Site) {
        debug_assert_eq!(next.ip, self.ip());
        self.refs.store(next.refs, Ordering::Relaxed);
        self.flags.store(next.flags, Ordering::Relaxed);
    }

    /// Changes the record's state with `f`.
    pub(crate) fn update(&self, held: &Held, f: impl FnOnce(&mut Site)) {
        let mut s = self.read(held);
        f(&mut s);
        self.set(held, s);
    }

    pub(crate) fn ip(&self) -> u64 {
        self.ip
    }

    /// Whether the record's text was freed ([`sites::flags::GONE`]). Its
    /// flags are written only under `ftrace_lock`, GONE before the text it
    /// describes is freed; a reader without the lock that sees the old
    /// value answers as it would have a moment earlier, when the text
    /// still existed.
    pub(crate) fn is_gone(&self) -> bool {
        self.flags.load(Ordering::Relaxed) & sites::flags::GONE != 0
    }
}

/// The records of one text image.
pub(crate) struct Group {
    next: AtomicPtr<Group>,
    /// The module, or null for the kernel image.
    pub(crate) module: *mut bindings::module,
    pub(crate) sites: KVVec<Cell>,
    /// How many of `sites` are [`Cell::is_gone`]; changed under
    /// `ftrace_lock`.
    gone: AtomicUsize,
}

// SAFETY: `module` is an identity, compared and handed to C, never
// followed by the group; everything else is owned data and atomics. A
// group may be freed on another CPU (`Retired::defer`).
unsafe impl Send for Group {}

static FIRST: AtomicPtr<Group> = AtomicPtr::new(ptr::null_mut());

/// Total number of records, for `dyn_ftrace_total_info`.
pub(crate) static TOTAL: AtomicUsize = AtomicUsize::new(0);

impl Group {
    /// A group of the sorted, unique addresses `ips`.
    pub(crate) fn new(module: *mut bindings::module, ips: &[u64]) -> Result<KBox<Group>> {
        let mut v = KVVec::with_capacity(ips.len(), GFP_KERNEL)?;
        for &ip in ips {
            // The room is there: `with_capacity` reserved it.
            v.push_within_capacity(Cell::new(ip)).map_err(|_| ENOMEM)?;
        }
        Ok(KBox::new(
            Group {
                next: AtomicPtr::new(ptr::null_mut()),
                module,
                sites: v,
                gone: AtomicUsize::new(0),
            },
            GFP_KERNEL,
        )?)
    }

    pub(crate) fn find(&self, ip: u64) -> Option<&Cell> {
        self.position(ip).map(|i| &self.sites[i])
    }

    /// The index of the live record at exactly `ip`.
    fn position(&self, ip: u64) -> Option<usize> {
        if !self.spans(ip) {
            return None;
        }
        sites::find(&self.sites, ip).filter(|&i| !self.sites[i].is_gone())
    }

    /// Whether `ip` lies between the group's first and last records: a
    /// lookup passes over the groups of other images without a search.
    fn spans(&self, ip: u64) -> bool {
        match (self.sites.first(), self.sites.last()) {
            (Some(a), Some(b)) => a.ip <= ip && ip <= b.ip,
            _ => false,
        }
    }

    pub(crate) fn first_overlapping(&self, start: u64, end: u64) -> Option<&Cell> {
        let i = sites::first_overlapping(
            &self.sites,
            start,
            end,
            u64::from(bindings::MCOUNT_INSN_SIZE),
        )?;
        self.sites[i..]
            .iter()
            .take_while(|c| c.ip() <= end)
            .find(|c| !c.is_gone())
    }

    /// How many records are not gone.
    pub(crate) fn live_len(&self) -> usize {
        self.sites.len() - self.gone.load(Ordering::Relaxed)
    }

    /// The records that are not gone.
    pub(crate) fn live(&self) -> impl Iterator<Item = &Cell> {
        self.sites.iter().filter(|c| !c.is_gone())
    }

    /// Marks the records `r` gone, in place: what [`crate::abi::module::free_range`]
    /// does when it has no memory for a smaller group.
    pub(crate) fn mark_gone(&self, held: &Held, r: core::ops::Range<usize>) {
        let mut n = 0;
        for c in self.sites.get(r).unwrap_or(&[]) {
            let s = c.read(held);
            if !s.has(sites::flags::GONE) {
                let gone = Site {
                    refs: 0,
                    flags: sites::flags::GONE | sites::flags::DISABLED,
                    ..s
                };
                c.set(held, gone);
                n += 1;
            }
        }
        self.gone.fetch_add(n, Ordering::Relaxed);
        TOTAL.fetch_sub(n, Ordering::Relaxed);
    }
}

/// An iterator over the groups. Under `ftrace_lock`, or in an RCU read
/// side section (or with preemption off) for a lookup.
pub(crate) struct Groups(*const Group);

impl Iterator for Groups {
    type Item = &'static Group;
    fn next(&mut self) -> Option<&'static Group> {
        // SAFETY: a published group stays valid until it is unlinked and a
        // grace period passed; callers are in a read side section or hold
        // `ftrace_lock`, which excludes unlinking.
        let g = unsafe { self.0.as_ref()? };
        self.0 = g.next.load(Ordering::Acquire);
        Some(g)
    }
}

pub(crate) fn groups() -> Groups {
    Groups(FIRST.load(Ordering::Acquire))
}

/// Every record, in table order (the order of `available_filter_functions`).
pub(crate) fn all() -> impl Iterator<Item = &'static Cell> {
    groups().flat_map(|g| g.live())
}

/// The link that points to `target` (null: the end of the list), found
/// under `ftrace_lock`; none if no link does.
fn link_to(_held: &Held, target: *mut Group) -> Option<&'static AtomicPtr<Group>> {
    // The groups stay while `ftrace_lock` (held) excludes their unlinking.
    let mut slot = &FIRST;
    for g in groups() {
        if slot.load(Ordering::Acquire) == target {
            return Some(slot);
        }
        slot = &g.next;
    }
    (slot.load(Ordering::Acquire) == target).then_some(slot)
}

/// Appends `g` to the table.
pub(crate) fn publish(held: &Held, g: KBox<Group>) {
    let n = g.sites.len();
    let raw = KBox::into_raw(g);
    if let Some(slot) = link_to(held, ptr::null_mut()) {
        slot.store(raw, Ordering::Release);
    }
    TOTAL.fetch_add(n, Ordering::Relaxed);
}

/// Unlinks `old` from the table, putting `new` (if any) in its place, and
/// frees `old` after a grace period (sleeps).
pub(crate) fn replace(held: &Held, old: &'static Group, new: Option<KBox<Group>>) {
    // Dropped, it waits for the readers that may still see it.
    drop(unlink(held, old, new));
}

/// [`replace`], giving back the unlinked group to be freed after a grace
/// period the caller shares with others.
pub(crate) fn unlink(
    held: &Held,
    old: &'static Group,
    new: Option<KBox<Group>>,
) -> Option<Retired<Group>> {
    let old_ptr = ptr::from_ref(old).cast_mut();
    let slot = link_to(held, old_ptr)?;
    let next = old.next.load(Ordering::Acquire);
    let new_ptr = match new {
        Some(g) => {
            g.next.store(next, Ordering::Relaxed);
            TOTAL.fetch_add(g.sites.len(), Ordering::Relaxed);
            KBox::into_raw(g)
        }
        None => next,
    };
    // The table's own pointer (`old_ptr` as `link_to` found it).
    let raw = slot.swap(new_ptr, Ordering::AcqRel);
    TOTAL.fetch_sub(old.live_len(), Ordering::Relaxed);
    // SAFETY: found in the table, so published: it came from
    // `KBox::into_raw`; unlinked just now under `ftrace_lock`, so only
    // readers of before can still reach it.
    ptr::NonNull::new(raw).map(|p| unsafe { Retired::from_raw(p) })
}

/// The group of module `m`.
pub(crate) fn of_module(m: *mut bindings::module) -> Option<&'static Group> {
    groups().find(|g| g.module == m)
}

/// The group of the kernel image.
pub(crate) fn core_group() -> Option<&'static Group> {
    groups().find(|g| g.module.is_null())
}

/// The address of the first record overlapping `[start, end]`, or 0.
/// Lock-free.
pub(crate) fn location_range(start: u64, end: u64) -> u64 {
    // A read side without lockdep's bookkeeping (kprobes and BPF ask once
    // per function they attach to): the grace periods that free unlinked
    // groups wait for preemption-off sections too.
    let _rcu = crate::base::sys::PreemptOff::new();
    groups()
        .find_map(|g| g.first_overlapping(start, end))
        .map_or(0, |c| c.ip())
}

/// The records at exactly the addresses asked, one after the other (under
/// `ftrace_lock`: they may go away otherwise): the first group's, in
/// table order, that is not gone. Linear in the addresses when they
/// ascend (an update's sorted address list): it keeps the group of the
/// last record found and where in it, and goes on from there, so that a
/// run of addresses of one image is merged with its records rather than
/// each searched for in every group. Any order stays right: an address
/// behind the last, or not in the kept group, is searched for in every
/// group.
pub(crate) struct Finder<'h> {
    /// `ftrace_lock`, held while the finder lives: the groups it keeps
    /// stay (the records are handed out `'static`, as [`all`] does).
    _held: &'h Held,
    group: Option<&'static Group>,
    /// Index in `group` of the last record found.
    at: usize,
}

impl<'h> Finder<'h> {
    /// A finder for as long as `ftrace_lock` is held (the groups stay).
    pub(crate) fn new(held: &'h Held) -> Self {
        Finder {
            _held: held,
            group: None,
            at: 0,
        }
    }

    /// The record at exactly `ip`.
    pub(crate) fn find(&mut self, ip: u64) -> Option<&'static Cell> {
        if let Some(g) = self.group.filter(|g| g.spans(ip)) {
            let i = crate::logic::seek::seek(&g.sites, self.at, ip, |c: &Cell| c.ip());
            self.at = i;
            // A record of another image at the same address can only be
            // gone: a live one is this group's.
            if let Some(c) = g.sites.get(i).filter(|c| c.ip() == ip && !c.is_gone()) {
                return Some(c);
            }
        }
        // Another image, an address behind the last (the kept group's
        // search started over above), a gone record: every group, in
        // table order.
        let (g, i) = groups().find_map(|g| Some((g, g.position(ip)?)))?;
        self.group = Some(g);
        self.at = i;
        g.sites.get(i)
    }
}

/// The call-site address of the function at `ip`: `ip` itself when it is a
/// site, else the site within the function that starts at `ip`; 0 if none.
pub(crate) fn ftrace_location(ip: c_ulong) -> c_ulong {
    let ip = ip as u64;
    let loc = location_range(ip, ip);
    if loc != 0 {
        return loc as c_ulong;
    }
    if let Some((size, 0)) = kernel::kallsyms::size_offset(ip as usize) {
        if size > 0 {
            return location_range(ip, ip + size as u64 - 1) as c_ulong;
        }
    }
    0
}

/// The address of the first call site in `[start, end]`, or 0.
pub(crate) fn ftrace_location_range(start: c_ulong, end: c_ulong) -> c_ulong {
    location_range(start as u64, end as u64) as c_ulong
}

/// Whether `[start, end]` holds a call site (kprobes must not touch it).
pub(crate) fn ftrace_text_reserved(start: *const c_void, end: *const c_void) -> c_int {
    c_int::from(location_range(start as u64, end as u64) != 0)
}
