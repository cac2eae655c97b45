// SPDX-License-Identifier: GPL-2.0

//! Sets of function addresses with the layout of the C `struct
//! ftrace_hash` (kernel/trace/trace.h): the filter and notrace sets of
//! every ops and the function graph sets. C code reads them too: the
//! inline `ftrace_hash_empty()` looks at `count` and `flags`, and
//! `ftrace_lookup_ip()` (ours) is called from the graph tracer.
//!
//! A null pointer is the empty set. Sets that readers may be using are
//! never changed in place: a new set is built and published, and the old
//! one freed after an RCU grace period ([`free_rcu`]).

use core::ptr;
use kernel::bindings;
use kernel::error::{code::ENOMEM, Result};
use kernel::ffi::{c_ulong, c_void};

/// `struct ftrace_hash`.
#[repr(C)]
pub struct FtraceHash {
    pub(crate) size_bits: c_ulong,
    pub(crate) buckets: *mut bindings::hlist_head,
    pub(crate) count: c_ulong,
    pub(crate) flags: c_ulong,
    pub(crate) rcu: bindings::callback_head,
}

/// `FTRACE_HASH_FL_MOD`: the set stands for cached `:mod:` entries too.
pub(crate) const FL_MOD: c_ulong = 1;
/// Buckets of the private copies the filter files and APIs edit.
pub(crate) const DEFAULT_BITS: u32 = 10;
/// Most buckets a committed set gets.
pub(crate) const MAX_BITS: u32 = 12;

type Entry = bindings::ftrace_func_entry;

fn bucket(ip: u64, bits: c_ulong) -> usize {
    if bits == 0 {
        0
    } else {
        // The kernel's hash_64(): multiply by the golden ratio, keep the
        // top bits. Wrapping shift: the dispatcher runs this, and no bit
        // count (1..=64 here) may make it panic.
        ip.wrapping_mul(0x61c8_8646_80b5_83eb)
            .wrapping_shr(64u32.wrapping_sub(bits as u32)) as usize
    }
}

fn zalloc(size: usize) -> *mut c_void {
    // SAFETY: plain allocation; a null result is handled by the callers.
    unsafe {
        bindings::krealloc_noprof(
            ptr::null(),
            size,
            bindings::GFP_KERNEL | bindings::__GFP_ZERO,
        )
    }
}

/// An empty set with `1 << bits` buckets, or null when out of memory.
pub(crate) fn alloc(bits: u32) -> *mut FtraceHash {
    let bits = bits.min(MAX_BITS);
    let h = zalloc(core::mem::size_of::<FtraceHash>()).cast::<FtraceHash>();
    if h.is_null() {
        return h;
    }
    let b = zalloc(core::mem::size_of::<bindings::hlist_head>() << bits);
    if b.is_null() {
        // SAFETY: allocated above, not shared.
        unsafe { bindings::kfree(h.cast()) };
        return ptr::null_mut();
    }
    // SAFETY: `h` is a fresh zeroed allocation of the right size.
    unsafe {
        (*h).size_bits = bits as c_ulong;
        (*h).buckets = b.cast();
    }
    h
}

/// Whether `h` is the empty set: null, or no entry and no cached
/// `:mod:` entries (the C `ftrace_hash_empty()`).
///
/// # Safety
///
/// `h` is null or a valid set.
pub(crate) unsafe fn is_empty(h: *const FtraceHash) -> bool {
    // SAFETY: per the function's contract.
    h.is_null() || unsafe { (*h).count == 0 && (*h).flags & FL_MOD == 0 }
}

/// How many addresses `h` holds.
///
/// # Safety
///
/// `h` is null or a valid set.
pub(crate) unsafe fn count(h: *const FtraceHash) -> usize {
    if h.is_null() {
        0
    } else {
        // SAFETY: per the function's contract.
        unsafe { (*h).count }
    }
}

/// The entry for `ip` in `h`, or null. Lock-free and allocation-free:
/// safe on the tracing hot path.
///
/// # Safety
///
/// `h` is null or a valid set that stays valid for the call (RCU).
#[inline]
pub(crate) unsafe fn lookup(h: *const FtraceHash, ip: u64) -> *mut Entry {
    if h.is_null() {
        return ptr::null_mut();
    }
    // SAFETY: per the function's contract `h` is valid; its bucket array
    // has `1 << size_bits` heads.
    let mut n = unsafe {
        let h = &*h;
        if h.count == 0 {
            return ptr::null_mut();
        }
        (*h.buckets.add(bucket(ip, h.size_bits))).first
    };
    while !n.is_null() {
        // `hlist` is the first member of the entry.
        let e = n.cast::<Entry>();
        // SAFETY: every node of a bucket is the `hlist` of a live entry.
        unsafe {
            if (*e).ip as u64 == ip {
                return e;
            }
            n = (*n).next;
        }
    }
    ptr::null_mut()
}

/// Whether `h` holds `ip`.
///
/// # Safety
///
/// As for [`lookup`].
#[inline]
pub(crate) unsafe fn contains(h: *const FtraceHash, ip: u64) -> bool {
    // SAFETY: per the function's contract.
    !unsafe { lookup(h, ip) }.is_null()
}

/// Adds `ip` to `h` (a set nobody else reads yet) unless it is there.
/// Returns false when out of memory.
///
/// # Safety
///
/// `h` is a valid set private to the caller.
pub(crate) unsafe fn add(h: *mut FtraceHash, ip: u64) -> bool {
    // SAFETY: per the function's contract.
    if unsafe { contains(h, ip) } {
        return true;
    }
    // SAFETY: as above.
    unsafe { insert(h, ip, 0) }
}

/// Inserts a new entry without checking for a duplicate.
///
/// # Safety
///
/// `h` is a valid set private to the caller.
unsafe fn insert(h: *mut FtraceHash, ip: u64, direct: c_ulong) -> bool {
    // SAFETY: per the function's contract.
    let e = unsafe { insert_sized(h, ip, core::mem::size_of::<Entry>()) };
    if e.is_null() {
        return false;
    }
    // SAFETY: fresh entry.
    unsafe { (*e).direct = direct };
    true
}

/// Inserts a new, zeroed entry of `size` bytes (at least an entry's)
/// without checking for a duplicate; null when out of memory.
///
/// # Safety
///
/// `h` is a valid set the caller may change (private, or a func mapper
/// whose users serialize changes).
pub(crate) unsafe fn insert_sized(h: *mut FtraceHash, ip: u64, size: usize) -> *mut Entry {
    let e = zalloc(size.max(core::mem::size_of::<Entry>())).cast::<Entry>();
    if e.is_null() {
        return e;
    }
    // SAFETY: `e` is fresh; `h` is valid and private, its bucket array has
    // `1 << size_bits` heads.
    unsafe {
        (*e).ip = ip as c_ulong;
        let head = (*h).buckets.add(bucket(ip, (*h).size_bits));
        let node = ptr::addr_of_mut!((*e).hlist);
        (*node).next = (*head).first;
        if !(*head).first.is_null() {
            (*(*head).first).pprev = ptr::addr_of_mut!((*node).next);
        }
        (*head).first = node;
        (*node).pprev = ptr::addr_of_mut!((*head).first);
        (*h).count += 1;
    }
    e
}

/// Removes and frees the entry `e` of `h`.
///
/// # Safety
///
/// `h` is a valid set private to the caller and `e` one of its entries.
pub(crate) unsafe fn remove_entry(h: *mut FtraceHash, e: *mut Entry) {
    // SAFETY: per the function's contract; unlinking an hlist node.
    unsafe {
        let node = ptr::addr_of_mut!((*e).hlist);
        let next = (*node).next;
        *(*node).pprev = next;
        if !next.is_null() {
            (*next).pprev = (*node).pprev;
        }
        (*h).count -= 1;
        bindings::kfree(e.cast());
    }
}

/// Unlinks entry `e` from the published set `h` while readers may be
/// walking it: a reader standing on `e` still reaches the rest of its
/// bucket through `e`'s own link, so the caller frees `e` only after a
/// grace period.
///
/// # Safety
///
/// `e` is an entry of `h`; writers of `h` are excluded (the ops' regex
/// lock and `ftrace_lock`); readers are RCU (or preemption-off) readers.
pub(crate) unsafe fn unlink_published(h: *mut FtraceHash, e: *mut Entry) {
    // SAFETY: per the function's contract. The one store a reader can
    // see is the link that skips `e` (one aligned pointer, written
    // whole); `pprev` and the count's other users are writers.
    unsafe {
        let node = ptr::addr_of_mut!((*e).hlist);
        let next = (*node).next;
        ptr::write_volatile((*node).pprev, next);
        if !next.is_null() {
            (*next).pprev = (*node).pprev;
        }
        ptr::write_volatile(ptr::addr_of_mut!((*h).count), (*h).count - 1);
    }
}

/// Removes `ip` from `h`; returns whether it was there.
///
/// # Safety
///
/// `h` is a valid set private to the caller.
pub(crate) unsafe fn remove(h: *mut FtraceHash, ip: u64) -> bool {
    // SAFETY: per the function's contract.
    let e = unsafe { lookup(h, ip) };
    if e.is_null() {
        return false;
    }
    // SAFETY: `e` is an entry of `h`.
    unsafe { remove_entry(h, e) };
    true
}

/// Calls `f` on every entry of `h`, in bucket order. `f` must not change
/// `h` (it may free the entry it is given: see [`Entries`]).
///
/// # Safety
///
/// `h` is null or a valid set that stays valid for the call.
pub(crate) unsafe fn for_each(h: *const FtraceHash, mut f: impl FnMut(*mut Entry)) {
    // SAFETY: per the function's contract.
    for e in unsafe { entries(h) } {
        f(e);
    }
}

/// The entries of `h`, in bucket order.
///
/// # Safety
///
/// `h` is null or a valid set that stays valid while the iterator is used.
pub(crate) unsafe fn entries(h: *const FtraceHash) -> Entries {
    if h.is_null() {
        return Entries {
            buckets: ptr::null_mut(),
            n: 0,
            i: 0,
            node: ptr::null_mut(),
        };
    }
    // SAFETY: per the function's contract.
    let (buckets, bits) = unsafe { ((*h).buckets, (*h).size_bits) };
    Entries {
        buckets,
        n: 1usize << bits,
        i: 0,
        node: ptr::null_mut(),
    }
}

/// Iterator over the entries of a set ([`entries`]). It reads an entry's
/// successor before it yields the entry, so the caller may free it.
///
/// # Invariants
///
/// `buckets` holds `n` buckets of a set that is valid while the iterator
/// is used (the contract of [`entries`]); `node` is null or a live node of
/// it.
pub(crate) struct Entries {
    buckets: *mut bindings::hlist_head,
    n: usize,
    i: usize,
    node: *mut bindings::hlist_node,
}

impl Iterator for Entries {
    type Item = *mut Entry;

    fn next(&mut self) -> Option<*mut Entry> {
        while self.node.is_null() {
            if self.i == self.n {
                return None;
            }
            // SAFETY: `i < n`, a bucket of the valid set (the invariants).
            self.node = unsafe { (*self.buckets.add(self.i)).first };
            self.i += 1;
        }
        let e = self.node;
        // SAFETY: a live node of the set (the invariants); its successor
        // is read before the caller sees (and may free) the entry.
        self.node = unsafe { (*e).next };
        Some(e.cast())
    }
}

/// Frees `h` and its entries now.
///
/// # Safety
///
/// `h` is null or a valid set nobody can be reading.
pub(crate) unsafe fn free(h: *mut FtraceHash) {
    if h.is_null() {
        return;
    }
    // SAFETY: per the function's contract; `for_each` reads `next` before
    // handing out an entry.
    unsafe {
        for_each(h, |e| bindings::kfree(e.cast()));
        bindings::kfree((*h).buckets.cast());
        bindings::kfree(h.cast());
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn free_cb(head: *mut bindings::callback_head) {
    // `rcu` sits at a fixed offset in the set.
    let off = core::mem::offset_of!(FtraceHash, rcu);
    let h = head.cast::<u8>().wrapping_sub(off).cast::<FtraceHash>();
    // SAFETY: queued by `free_rcu()`, after which nobody reads the set.
    unsafe { free(h) };
}

/// Frees `h` once every CPU has left the RCU (and preempt-disabled) read
/// side sections it may be reading it in.
///
/// # Safety
///
/// `h` is null or a valid set that is no longer published.
pub(crate) unsafe fn free_rcu(h: *mut FtraceHash) {
    if h.is_null() {
        return;
    }
    // SAFETY: `rcu` belongs to the set, which is freed only by `free_cb`.
    unsafe { bindings::call_rcu(ptr::addr_of_mut!((*h).rcu), Some(free_cb)) };
}

/// A copy of `src` (null: an empty set) with `1 << bits` buckets and the
/// same flags; null when out of memory.
///
/// # Safety
///
/// `src` is null or a valid set.
pub(crate) unsafe fn copy(src: *const FtraceHash, bits: u32) -> *mut FtraceHash {
    let h = alloc(bits);
    if h.is_null() {
        return h;
    }
    let mut ok = true;
    // SAFETY: `src` valid per the contract; `h` is fresh and private.
    unsafe {
        if !src.is_null() {
            (*h).flags = (*src).flags;
        }
        for_each(src, |e| ok &= insert(h, (*e).ip as u64, (*e).direct));
        if !ok {
            free(h);
            return ptr::null_mut();
        }
    }
    h
}

/// The size a committed copy of a set of `count` entries gets.
pub(crate) fn committed_bits(count: usize) -> u32 {
    let half = count / 2;
    let bits = usize::BITS - half.leading_zeros();
    bits.clamp(1, MAX_BITS)
}

/// The set to publish for the private set `h`: null when it is empty
/// (and not standing for cached `:mod:` entries), else a copy sized for
/// its count. `Err` when out of memory.
///
/// # Safety
///
/// `h` is null or a valid set.
pub(crate) unsafe fn for_commit(h: *const FtraceHash) -> Result<*mut FtraceHash> {
    // SAFETY: per the function's contract.
    unsafe {
        if is_empty(h) {
            return Ok(ptr::null_mut());
        }
        let c = copy(h, committed_bits((*h).count));
        if c.is_null() {
            Err(ENOMEM)
        } else {
            Ok(c)
        }
    }
}

/// A private set: made here, edited by its one owner, freed when
/// dropped, unless [`FnSet::publish`] gives it away. What the filter
/// files, the filter APIs, probes and the sub-ops edit before they
/// publish a set.
///
/// # Invariants
///
/// `0` is a valid set (from [`alloc`] or [`copy`]) that nothing else
/// references: no reader can see it.
pub(crate) struct FnSet(ptr::NonNull<FtraceHash>);

impl FnSet {
    /// An empty set.
    pub(crate) fn new() -> Result<Self> {
        ptr::NonNull::new(alloc(DEFAULT_BITS))
            .map(Self)
            .ok_or(ENOMEM)
    }

    /// A private copy of `src` (null: the empty set), flags included.
    ///
    /// # Safety
    ///
    /// `src` is null or a valid set that stays valid for the call.
    pub(crate) unsafe fn copy_of(src: *const FtraceHash) -> Result<Self> {
        // SAFETY: per the function's contract.
        let h = unsafe { copy(src, DEFAULT_BITS) };
        ptr::NonNull::new(h).map(Self).ok_or(ENOMEM)
    }

    /// The set, for what reads it through a pointer (C callbacks, the
    /// published-set helpers); valid while `self` is.
    pub(crate) fn as_ptr(&self) -> *mut FtraceHash {
        self.0.as_ptr()
    }

    /// Adds `ip` unless it is there.
    pub(crate) fn add(&mut self, ip: u64) -> Result {
        // SAFETY: valid and private (the type's invariants).
        if unsafe { add(self.as_ptr(), ip) } {
            Ok(())
        } else {
            Err(ENOMEM)
        }
    }

    /// Removes `ip`; whether it was there.
    pub(crate) fn remove(&mut self, ip: u64) -> bool {
        // SAFETY: as above.
        unsafe { remove(self.as_ptr(), ip) }
    }

    /// Keeps the addresses `keep` says yes to.
    pub(crate) fn retain(&mut self, mut keep: impl FnMut(u64) -> bool) {
        let h = self.as_ptr();
        // SAFETY: as above; `Entries` reads an entry's successor before it
        // yields the entry, which may then be freed.
        for e in unsafe { entries(h) } {
            // SAFETY: a live entry of the set.
            if !keep(unsafe { (*e).ip } as u64) {
                // SAFETY: an entry of the private set.
                unsafe { remove_entry(h, e) };
            }
        }
    }

    /// Whether the set holds `ip`.
    pub(crate) fn contains(&self, ip: u64) -> bool {
        // SAFETY: as above.
        unsafe { contains(self.as_ptr(), ip) }
    }

    /// Whether the set is empty (no address, no cached `:mod:` entry).
    pub(crate) fn is_empty(&self) -> bool {
        // SAFETY: as above.
        unsafe { is_empty(self.as_ptr()) }
    }

    /// How many addresses the set holds.
    pub(crate) fn count(&self) -> usize {
        // SAFETY: as above.
        unsafe { count(self.as_ptr()) }
    }

    /// The addresses, in bucket order.
    pub(crate) fn ips(&self) -> impl Iterator<Item = u64> + '_ {
        // SAFETY: valid while `self` is borrowed, which outlasts the
        // iterator.
        unsafe { SetRef::new(self.as_ptr()) }.ips()
    }

    /// Marks the set as standing for cached `:mod:` entries (or not).
    pub(crate) fn set_mod(&mut self, on: bool) {
        // SAFETY: as above.
        let f = unsafe { &mut (*self.as_ptr()).flags };
        if on {
            *f |= FL_MOD;
        } else {
            *f &= !FL_MOD;
        }
    }

    /// The set to publish for this one: null when it is empty (and not
    /// standing for cached `:mod:` entries), else a copy sized for its
    /// count, which the caller publishes and later frees with
    /// [`free_rcu`].
    pub(crate) fn for_commit(&self) -> Result<*mut FtraceHash> {
        // SAFETY: as above.
        unsafe { for_commit(self.as_ptr()) }
    }

    /// Gives the set away (to be published); the caller frees it.
    pub(crate) fn publish(self) -> *mut FtraceHash {
        let h = self.as_ptr();
        core::mem::forget(self);
        h
    }
}

impl Drop for FnSet {
    fn drop(&mut self) {
        // SAFETY: private (the type's invariants): nobody can be reading.
        unsafe { free(self.as_ptr()) };
    }
}

/// A set as the planner reads it (`logic::plan::SiteSet`): a copyable
/// handle on a set that is null (empty) or valid for as long as the
/// handle is used.
///
/// # Invariants
///
/// The set is null or valid, and not freed, for the handle's whole use:
/// the creator holds `ftrace_lock` (which every change of a published
/// set's identity takes) throughout, or reads a published set in an RCU
/// read-side section that outlives the handle.
#[derive(Clone, Copy)]
pub(crate) struct SetRef(*const FtraceHash);

impl SetRef {
    /// # Safety
    ///
    /// `h` is null or a valid set that stays valid while the handle (and
    /// its copies) are used; see the type's invariants.
    pub(crate) unsafe fn new(h: *const FtraceHash) -> Self {
        Self(h)
    }

    /// The addresses of the set's entries, in bucket order.
    pub(crate) fn ips(self) -> impl Iterator<Item = u64> {
        // SAFETY: null or valid while the handle is used (the type's
        // invariants), which outlasts the iterator made from it.
        unsafe { entries(self.0) }.map(|e| {
            // SAFETY: a live entry of the set (see `Entries`).
            unsafe { (*e).ip as u64 }
        })
    }
}

impl crate::logic::plan::SiteSet for SetRef {
    fn is_empty(&self) -> bool {
        // SAFETY: null or valid (the type's invariants).
        unsafe { is_empty(self.0) }
    }
    fn contains(&self, ip: u64) -> bool {
        // SAFETY: as above.
        unsafe { contains(self.0, ip) }
    }
}
