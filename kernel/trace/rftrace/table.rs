// SPDX-License-Identifier: GPL-2.0

//! The call-site table: one group of 16-byte records per text image (the
//! kernel, each module), sorted by address, in a list that lock-free
//! readers walk under RCU (`ftrace_location()` is called from kprobes).
//! Groups are only added and removed under `ftrace_lock`; a group that
//! shrinks is replaced by a copy. A record's address never changes; its
//! state (refs, flags) is only touched under `ftrace_lock`.

use crate::logic::sites::{self, Site, SiteIp};
use crate::sys::Held;
use core::cell::UnsafeCell;
use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicU32, AtomicUsize, Ordering};
use kernel::bindings;
use kernel::ffi::{c_int, c_ulong, c_void};
use kernel::prelude::*;

/// One record, mutable under `ftrace_lock` while readers look at its
/// address.
#[repr(transparent)]
pub(crate) struct Cell(UnsafeCell<Site>);

const _: () = assert!(core::mem::size_of::<Cell>() == 16);

impl SiteIp for Cell {
    fn site_ip(&self) -> u64 {
        // SAFETY: the address is written once, before the group is
        // published, and never again.
        unsafe { (*self.0.get()).ip }
    }
}

impl Cell {
    /// The record as it is now.
    pub(crate) fn read(&self, _held: &Held) -> Site {
        let p = self.0.get();
        // SAFETY: `ip` never changes after publication and `refs` is only
        // written under `ftrace_lock`, which the caller holds; `flags` is
        // read atomically, as lock-free readers read it (`is_gone`).
        unsafe {
            Site {
                ip: (*p).ip,
                refs: (*p).refs,
                flags: Self::flags(p).load(Ordering::Relaxed),
            }
        }
    }

    /// Gives the record `next`'s state (count and flags; `next` describes
    /// this record's site). Its address is not written: lock-free readers
    /// read it at any time (the store of the whole record would race with
    /// them, even though it writes the same address).
    pub(crate) fn set(&self, _held: &Held, next: Site) {
        debug_assert_eq!(next.ip, self.ip());
        let p = self.0.get();
        // SAFETY: the writers of `refs` and `flags` are serialized by
        // `ftrace_lock` (or the group is private); `flags` is stored
        // atomically because `is_gone` reads it without the lock.
        unsafe {
            (*p).refs = next.refs;
            Self::flags(p).store(next.flags, Ordering::Relaxed);
        }
    }

    /// Changes the record's state with `f`.
    pub(crate) fn update(&self, held: &Held, f: impl FnOnce(&mut Site)) {
        let mut s = self.read(held);
        f(&mut s);
        self.set(held, s);
    }

    /// The record's flags word, accessed atomically.
    ///
    /// # Safety
    ///
    /// `p` points at a live record.
    unsafe fn flags<'a>(p: *mut Site) -> &'a AtomicU32 {
        // SAFETY: `flags` is an aligned `u32` of a live record; once its
        // group is published every access to it goes through this atomic
        // view.
        unsafe { AtomicU32::from_ptr(ptr::addr_of_mut!((*p).flags)) }
    }

    pub(crate) fn ip(&self) -> u64 {
        self.site_ip()
    }

    /// Whether the record's text was freed ([`sites::flags::GONE`]).
    pub(crate) fn is_gone(&self) -> bool {
        // SAFETY: a live record. Its flags are written only under
        // `ftrace_lock`, GONE before the text it describes is freed; a
        // reader without the lock that sees the old value answers as it
        // would have a moment earlier, when the text still existed.
        let f = unsafe { Self::flags(self.0.get()) }.load(Ordering::Relaxed);
        f & sites::flags::GONE != 0
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

static FIRST: AtomicPtr<Group> = AtomicPtr::new(ptr::null_mut());

/// Total number of records, for `dyn_ftrace_total_info`.
pub(crate) static TOTAL: AtomicUsize = AtomicUsize::new(0);

impl Group {
    /// A group of the sorted, unique addresses `ips`.
    pub(crate) fn new(module: *mut bindings::module, ips: &[u64]) -> Result<KBox<Group>> {
        let mut v = KVVec::with_capacity(ips.len(), GFP_KERNEL)?;
        for &ip in ips {
            v.push(Cell(UnsafeCell::new(Site::new(ip))), GFP_KERNEL)?;
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
        sites::find(&self.sites, ip)
            .map(|i| &self.sites[i])
            .filter(|c| !c.is_gone())
    }

    pub(crate) fn first_overlapping(&self, start: u64, end: u64) -> Option<&Cell> {
        let i = sites::first_overlapping(&self.sites, start, end)?;
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

    /// Marks the records `r` gone, in place: what [`crate::module::free_range`]
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
/// side section for a lookup.
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

/// Appends `g` to the table.
pub(crate) fn publish(_held: &Held, g: KBox<Group>) {
    let n = g.sites.len();
    let raw = KBox::into_raw(g);
    let mut slot = &FIRST;
    loop {
        let cur = slot.load(Ordering::Acquire);
        if cur.is_null() {
            break;
        }
        // SAFETY: published groups are valid under `ftrace_lock`.
        slot = unsafe { &(*cur).next };
    }
    slot.store(raw, Ordering::Release);
    TOTAL.fetch_add(n, Ordering::Relaxed);
}

/// Unlinks `old` from the table, putting `new` (if any) in its place, and
/// frees `old` after a grace period (sleeps).
pub(crate) fn replace(_held: &Held, old: &'static Group, new: Option<KBox<Group>>) {
    let old_ptr = ptr::from_ref(old).cast_mut();
    let next = old.next.load(Ordering::Acquire);
    let new_ptr = match new {
        Some(g) => {
            g.next.store(next, Ordering::Relaxed);
            TOTAL.fetch_add(g.sites.len(), Ordering::Relaxed);
            KBox::into_raw(g)
        }
        None => next,
    };
    let mut slot = &FIRST;
    loop {
        let cur = slot.load(Ordering::Acquire);
        if cur.is_null() {
            return;
        }
        if cur == old_ptr {
            break;
        }
        // SAFETY: published groups are valid under `ftrace_lock`.
        slot = unsafe { &(*cur).next };
    }
    slot.store(new_ptr, Ordering::Release);
    TOTAL.fetch_sub(old.live_len(), Ordering::Relaxed);
    // Waits for the readers that may still see `old`.
    crate::sys::synchronize_rcu();
    // SAFETY: found in the table, so published: it came from
    // `KBox::into_raw`; unlinked under `ftrace_lock`, and no reader is
    // left, so nothing else can reach it.
    drop(unsafe { KBox::from_raw(old_ptr) });
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
    let _rcu = crate::sys::RcuRead::new();
    groups()
        .find_map(|g| g.first_overlapping(start, end))
        .map_or(0, |c| c.ip())
}

/// The record at exactly `ip` (under `ftrace_lock`: it may go away
/// otherwise).
pub(crate) fn find(_held: &Held, ip: u64) -> Option<&'static Cell> {
    groups().find_map(|g| g.find(ip))
}

/// The call-site address of the function at `ip`: `ip` itself when it is a
/// site, else the site within the function that starts at `ip`; 0 if none.
#[no_mangle]
pub extern "C" fn ftrace_location(ip: c_ulong) -> c_ulong {
    let ip = ip as u64;
    let loc = location_range(ip, ip);
    if loc != 0 {
        return loc as c_ulong;
    }
    let (mut size, mut off): (c_ulong, c_ulong) = (0, 0);
    let found = crate::ffi::kallsyms_lookup_size_offset(ip as c_ulong, &mut size, &mut off) != 0;
    if found && off == 0 && size > 0 {
        return location_range(ip, ip + size as u64 - 1) as c_ulong;
    }
    0
}

/// The address of the first call site in `[start, end]`, or 0.
#[no_mangle]
pub extern "C" fn ftrace_location_range(start: c_ulong, end: c_ulong) -> c_ulong {
    location_range(start as u64, end as u64) as c_ulong
}

/// Whether `[start, end]` holds a call site (kprobes must not touch it).
#[no_mangle]
pub extern "C" fn ftrace_text_reserved(start: *const c_void, end: *const c_void) -> c_int {
    c_int::from(location_range(start as u64, end as u64) != 0)
}
