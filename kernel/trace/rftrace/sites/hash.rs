// SPDX-License-Identifier: GPL-2.0

//! Sets of function addresses with the layout of the C `struct
//! ftrace_hash` (kernel/trace/trace.h): the filter and notrace sets of
//! every ops and the function graph sets. C code reads them too: the
//! inline `ftrace_hash_empty()` looks at `count` and `flags`, and
//! `ftrace_lookup_ip()` (ours) is called from the graph tracer.
//!
//! A null pointer is the empty set. Sets that readers may be using are
//! never changed in place (but for [`PubSlot::unlink`], which readers can
//! walk through, and [`PubSlot::link`], whose entries readers find whole
//! or not at all): a new set is built and published ([`PubSlot::swap`]),
//! and the old one freed an RCU grace period after its [`RetiredSet`] drops.
//!
//! A [`SetRef`] carries the lifetime of what keeps its set: the writers'
//! lock or a preempt-off section. The one rule the types do not carry: a
//! writer that retires a set does not use a [`SetRef`] it read of it
//! before, once the [`RetiredSet`] has dropped (the writers here read, copy,
//! publish, and drop the old set last).

use core::marker::PhantomData;
use core::ptr;
use core::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use kernel::bindings;
use kernel::error::{code::ENOMEM, Result};
use kernel::ffi::{c_ulong, c_void};
use kernel::prelude::*;
use kernel::types::Opaque;

mod fnset;
mod mapper;

pub(crate) use fnset::{FnSet, SetRef};
pub use mapper::Mapper;

/// `struct ftrace_hash`. C reads `count` and `flags` with plain word
/// loads (`ftrace_hash_empty()`), which these atomics are to it.
///
/// The fields after `rcu` are the core's own: C never allocates, frees or
/// embeds a set (the core does all three), it only reads `count` and
/// `flags` through a pointer. A set's entries of an address alone (the
/// filter sets) come from blocks the set allocates, a few hundred entries
/// each, freed with it: a set of every function (23,000 entries) is about
/// 90 allocations, not 23,000, each of which a debug kernel's allocator
/// tracks with a stack trace and the function tracer traces. Other
/// entries (a func mapper's, those linked into a published set in place)
/// are allocated one by one, "loose", and freed one by one.
#[repr(C)]
pub struct FtraceHash {
    size_bits: c_ulong,
    buckets: *mut bindings::hlist_head,
    count: AtomicUsize,
    flags: AtomicUsize,
    rcu: Opaque<bindings::callback_head>,
    /// The blocks, newest first; written by the set's one writer only.
    blocks: AtomicPtr<Block>,
    /// How many loose entries are linked; the writer's too.
    loose: AtomicUsize,
}

// SAFETY: what a `&FtraceHash` reads from any CPU is the set's published
// state: its buckets and entries are not changed while readers may use
// it, but for the two in-place edits the module doc names, which readers
// see whole or not at all; the counters are atomics. Writing and freeing
// go through the writers' lock or the set's own `&mut` (see the module
// doc), never through a shared reference.
unsafe impl Sync for FtraceHash {}
// SAFETY: a set owns its buckets, blocks and entries, which the kernel's
// allocators give and take from any task; nothing in it is tied to the
// task that made it (no per-CPU or per-task state, no lock held), so the
// set may be freed or edited by whichever task owns it next.
unsafe impl Send for FtraceHash {}

/// A block of entries of one set: this header, then `cap` entries, of
/// which the first `used` were handed out.
#[repr(C)]
struct Block {
    next: *mut Block,
    cap: usize,
    used: usize,
}

/// Where a block's entries start: after the header, entry-aligned.
const BLOCK_HEAD: usize =
    core::mem::size_of::<Block>().next_multiple_of(core::mem::align_of::<Entry>());
/// The largest block: two pages (kmalloc's largest size class that is not
/// a multi-page order of its own above this).
const BLOCK_MAX: usize = 8192;

/// `FTRACE_HASH_FL_MOD`: the set stands for cached `:mod:` entries too.
pub(crate) const FL_MOD: c_ulong = 1;
/// Buckets of the private copies the filter files and APIs edit.
pub(crate) const DEFAULT_BITS: u32 = 10;
/// Most buckets a committed set gets.
pub(crate) const MAX_BITS: u32 = 12;
/// The most addresses [`FtraceHash::link_published`] adds at once.
pub(crate) const LINK_MAX: usize = 8;
/// Entries a bucket of a published set may hold on average before an
/// addition copies the set into more buckets rather than linking in place.
const LINK_LOAD: usize = 4;

pub(crate) type Entry = bindings::ftrace_func_entry;

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

/// Frees `p`.
///
/// # Safety
///
/// `p` is null or an allocation of `zalloc` that nothing references any
/// more.
unsafe fn kfree<T>(p: *mut T) {
    // SAFETY: null, which kfree ignores, or a kmalloc allocation of
    // `zalloc` that nothing references (the contract), so freed once.
    unsafe { bindings::kfree(p.cast()) };
}

/// An empty set with `1 << bits` buckets, or none when out of memory.
pub(crate) fn alloc(bits: u32) -> Option<KBox<FtraceHash>> {
    let bits = bits.min(MAX_BITS);
    let mut h = KBox::new(
        FtraceHash {
            size_bits: bits as c_ulong,
            buckets: ptr::null_mut(),
            count: AtomicUsize::new(0),
            flags: AtomicUsize::new(0),
            rcu: Opaque::uninit(),
            blocks: AtomicPtr::new(ptr::null_mut()),
            loose: AtomicUsize::new(0),
        },
        GFP_KERNEL,
    )
    .ok()?;
    // Zeroed: every bucket empty. Without it, the header goes.
    let b = zalloc(core::mem::size_of::<bindings::hlist_head>() << bits);
    if b.is_null() {
        return None;
    }
    h.buckets = b.cast();
    Some(h)
}

impl Drop for FtraceHash {
    /// Frees the entries and buckets (the box holding the set frees the
    /// rest): the set's owner drops it when nobody can be reading it.
    fn drop(&mut self) {
        if self.buckets.is_null() {
            return;
        }
        // SAFETY: the buckets, blocks and loose entries are `zalloc`'s and
        // the set's alone; nobody reads the set (above); `Entries` yields
        // an entry after it read past it, and a block entry is freed with
        // its block, after the walk.
        unsafe {
            if self.loose.load(Ordering::Relaxed) != 0 {
                for (_, e) in self.entries() {
                    if !self.in_block(e) {
                        kfree(e);
                    }
                }
            }
            let mut b = self.blocks.load(Ordering::Relaxed);
            while !b.is_null() {
                let next = (*b).next;
                kfree(b);
                b = next;
            }
            kfree(self.buckets);
        }
    }
}

impl FtraceHash {
    /// Whether it is the empty set: no entry and no cached `:mod:`
    /// entries (the C `ftrace_hash_empty()`).
    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.count.load(Ordering::Relaxed) == 0 && self.flags.load(Ordering::Relaxed) & FL_MOD == 0
    }

    fn count(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// How many buckets it has.
    fn buckets(&self) -> usize {
        1usize << self.size_bits.min(MAX_BITS as c_ulong)
    }

    /// The head of `ip`'s bucket.
    #[inline(always)]
    fn head(&self, ip: u64) -> *mut bindings::hlist_head {
        self.buckets.wrapping_add(bucket(ip, self.size_bits))
    }

    /// The entry for `ip`, or null. Lock-free and allocation-free: safe on
    /// the tracing hot path.
    #[inline(always)]
    pub(crate) fn lookup(&self, ip: u64) -> *mut Entry {
        if self.count.load(Ordering::Relaxed) == 0 {
            return ptr::null_mut();
        }
        self.find(ip)
    }

    /// As [`Self::lookup`], for a set just seen to hold entries.
    #[inline(always)]
    fn find(&self, ip: u64) -> *mut Entry {
        // SAFETY: the bucket array has `1 << size_bits` heads, fixed for
        // the set's life; every node of a bucket is the `hlist` (the first
        // member) of a live entry, and readers may walk a bucket while a
        // writer unlinks from it (`unlink_published`).
        unsafe {
            let mut n = ptr::read_volatile(ptr::addr_of!((*self.head(ip)).first));
            while !n.is_null() {
                let e = n.cast::<Entry>();
                if (*e).ip as u64 == ip {
                    return e;
                }
                n = ptr::read_volatile(ptr::addr_of!((*n).next));
            }
        }
        ptr::null_mut()
    }

    /// Inserts a new, zeroed entry of `size` bytes (at least an entry's)
    /// without checking for a duplicate; null when out of memory.
    ///
    /// # Safety
    ///
    /// The caller may change the set: it is private, or a func mapper
    /// whose users serialize changes.
    pub(crate) unsafe fn insert(&self, ip: u64, size: usize) -> *mut Entry {
        // SAFETY: the contract.
        unsafe { self.insert_with(ip, size, |_| ()) }
    }

    /// [`Self::insert`], `init` filling in the new entry (zeroed, `size`
    /// bytes) before readers can find it.
    ///
    /// # Safety
    ///
    /// As for [`Self::insert`].
    unsafe fn insert_with(
        &self,
        ip: u64,
        size: usize,
        init: impl FnOnce(*mut Entry),
    ) -> *mut Entry {
        let e = if size <= core::mem::size_of::<Entry>() {
            self.block_entry()
        } else {
            self.loose_entry(size)
        };
        if e.is_null() {
            return e;
        }
        init(e);
        // SAFETY: `e` is fresh and ours: its address is set before it is
        // linked; the caller alone changes the set (the contract).
        unsafe {
            (*e).ip = ip as c_ulong;
            self.link(e);
        }
        e
    }

    /// A zeroed entry of the set's blocks (a new block when the newest is
    /// used up, as large again as the set up to [`BLOCK_MAX`] bytes), or
    /// null when out of memory. The caller alone changes the set.
    fn block_entry(&self) -> *mut Entry {
        let esz = core::mem::size_of::<Entry>();
        let mut b = self.blocks.load(Ordering::Relaxed);
        // SAFETY: `b` is null or the newest block, the set's, which only
        // this writer changes (the caller's contract).
        if b.is_null() || unsafe { (*b).used == (*b).cap } {
            let want = BLOCK_HEAD + esz * self.count().max(1);
            let size = want.next_power_of_two().clamp(BLOCK_HEAD + esz, BLOCK_MAX);
            let fresh = zalloc(size).cast::<Block>();
            if fresh.is_null() {
                return ptr::null_mut();
            }
            // SAFETY: `fresh` is a new zeroed allocation of `size` bytes,
            // room for the header and `cap` entries after `BLOCK_HEAD`.
            unsafe {
                (*fresh).next = b;
                (*fresh).cap = (size - BLOCK_HEAD) / esz;
            }
            self.blocks.store(fresh, Ordering::Relaxed);
            b = fresh;
        }
        // SAFETY: `b` is the set's newest block with `used < cap`: the
        // entry at `used` lies inside it, zeroed and never handed out.
        unsafe {
            let e = b
                .cast::<u8>()
                .add(BLOCK_HEAD + esz * (*b).used)
                .cast::<Entry>();
            (*b).used += 1;
            e
        }
    }

    /// A zeroed loose entry of `size` bytes, or null.
    fn loose_entry(&self, size: usize) -> *mut Entry {
        let e = zalloc(size.max(core::mem::size_of::<Entry>())).cast::<Entry>();
        if !e.is_null() {
            self.loose.fetch_add(1, Ordering::Relaxed);
        }
        e
    }

    /// Whether `e` lies in one of the set's blocks (then it goes with the
    /// set, not on its own). Walks the blocks: a few dozen for the largest
    /// sets.
    fn in_block(&self, e: *const Entry) -> bool {
        let a = e as usize;
        let mut b = self.blocks.load(Ordering::Relaxed);
        while !b.is_null() {
            // SAFETY: a block of the set, live as long as the set.
            let (start, cap, next) = unsafe { (b as usize + BLOCK_HEAD, (*b).cap, (*b).next) };
            if a >= start && a < start + cap * core::mem::size_of::<Entry>() {
                return true;
            }
            b = next;
        }
        false
    }

    /// Whether the unlinked entry `e` is to be freed on its own (a loose
    /// entry, now counted out), rather than with the set's blocks. For the
    /// set's one writer, once per entry it unlinked.
    pub(crate) fn frees_alone(&self, e: *const Entry) -> bool {
        if self.in_block(e) {
            return false;
        }
        self.loose.fetch_sub(1, Ordering::Relaxed);
        true
    }

    /// Links the complete entry `e` at the head of its bucket, readers
    /// or not: its address and link are ordered before the release store
    /// that makes it reachable (C's `hlist_add_head_rcu()`), so a reader
    /// walking the bucket finds it whole or not at all.
    ///
    /// # Safety
    ///
    /// `e` is a `zalloc` entry, its address set, in no set; the caller
    /// alone changes the set, so the bucket's `first` and the `pprev`
    /// links are written by this writer only (readers read `first` and
    /// `next`).
    unsafe fn link(&self, e: *mut Entry) {
        // SAFETY: per the function's contract; the bucket array has
        // `1 << size_bits` heads, and `e`'s bucket is one of them.
        unsafe {
            let head = self.head((*e).ip as u64);
            let node = ptr::addr_of_mut!((*e).hlist);
            let first = (*head).first;
            (*node).next = first;
            (*node).pprev = ptr::addr_of_mut!((*head).first);
            if !first.is_null() {
                (*first).pprev = ptr::addr_of_mut!((*node).next);
            }
            AtomicPtr::from_ptr(ptr::addr_of_mut!((*head).first)).store(node, Ordering::Release);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Links a new entry for each of `ips` while readers may be walking
    /// the set: each entry is complete before the release store that makes
    /// it reachable, so a reader finds it whole or not at all. All or
    /// nothing: every entry is allocated before the first is linked, and
    /// `ENOMEM` leaves the set as it was.
    ///
    /// # Safety
    ///
    /// The caller alone changes the set; no address of `ips` is in it, and
    /// none is there twice. At most [`LINK_MAX`] addresses are taken.
    pub(crate) unsafe fn link_published(&self, ips: &[u64]) -> Result {
        let ips = &ips[..ips.len().min(LINK_MAX)];
        let mut fresh = [ptr::null_mut::<Entry>(); LINK_MAX];
        for (f, &ip) in fresh.iter_mut().zip(ips) {
            let e = zalloc(core::mem::size_of::<Entry>()).cast::<Entry>();
            if e.is_null() {
                for &e in fresh.iter() {
                    // SAFETY: null or made above and linked nowhere.
                    unsafe { kfree(e) };
                }
                return Err(ENOMEM);
            }
            // SAFETY: `e` is fresh, zeroed, ours.
            unsafe { (*e).ip = ip as c_ulong };
            *f = e;
        }
        for &e in &fresh[..ips.len()] {
            // SAFETY: made above, its address set, in no set; the caller
            // alone changes the set (the contract).
            unsafe { self.link(e) };
            self.loose.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Unlinks entry `e` while readers may be walking the set: a reader
    /// standing on `e` still reaches the rest of its bucket through `e`'s
    /// own link, so `e` is freed (by the caller) only when no reader can
    /// see it.
    ///
    /// # Safety
    ///
    /// `e` is an entry of the set; the caller alone changes the set.
    pub(crate) unsafe fn unlink(&self, e: *mut Entry) {
        // SAFETY: per the function's contract. The one store a reader can
        // see is the link that skips `e` (one aligned pointer, written
        // whole); `pprev` is the writers'.
        unsafe {
            let node = ptr::addr_of_mut!((*e).hlist);
            let next = (*node).next;
            ptr::write_volatile((*node).pprev, next);
            if !next.is_null() {
                (*next).pprev = (*node).pprev;
            }
        }
        self.count.fetch_sub(1, Ordering::Relaxed);
    }

    /// The entries, in bucket order.
    pub(crate) fn entries(&self) -> Entries<'_> {
        Entries {
            buckets: self.buckets,
            n: self.buckets(),
            i: 0,
            node: ptr::null_mut(),
            _set: PhantomData,
        }
    }
}

/// Iterator over the entries of a set. It reads an entry's successor
/// before it yields the entry, so the caller may free it.
///
/// # Invariants
///
/// `buckets` holds `n` buckets of a set that lives for `'a`; `node` is
/// null or a live node of it.
pub(crate) struct Entries<'a> {
    buckets: *mut bindings::hlist_head,
    n: usize,
    i: usize,
    node: *mut bindings::hlist_node,
    _set: PhantomData<&'a FtraceHash>,
}

impl Iterator for Entries<'_> {
    /// An entry's address and the entry.
    type Item = (u64, *mut Entry);

    fn next(&mut self) -> Option<(u64, *mut Entry)> {
        // SAFETY: `i < n`, a bucket of the live set, and `node` a live
        // node of it (the invariants); a node's successor is read before
        // the caller sees (and may free) its entry.
        unsafe {
            while self.node.is_null() {
                if self.i == self.n {
                    return None;
                }
                self.node = ptr::read_volatile(ptr::addr_of!((*self.buckets.add(self.i)).first));
                self.i += 1;
            }
            let e = self.node;
            self.node = ptr::read_volatile(ptr::addr_of!((*e).next));
            let e = e.cast::<Entry>();
            Some(((*e).ip as u64, e))
        }
    }
}

/// Frees `h` and its entries now.
///
/// # Safety
///
/// `h` is null or a set from [`alloc`] that nobody can be reading.
pub(crate) unsafe fn free(h: *mut FtraceHash) {
    if h.is_null() {
        return;
    }
    // SAFETY: a set of `alloc`, a box given away with `KBox::into_raw`,
    // that nobody reads (the contract): dropping it frees it all.
    drop(unsafe { KBox::from_raw(h) });
}

/// # Safety
///
/// Called by the RCU core with the head `free_rcu` queued.
unsafe extern "C" fn free_cb(head: *mut bindings::callback_head) {
    // `rcu` sits at a fixed offset in the set.
    let off = core::mem::offset_of!(FtraceHash, rcu);
    let h = head.cast::<u8>().wrapping_sub(off).cast::<FtraceHash>();
    // SAFETY: queued by `free_rcu()`, after which nobody reads the set.
    unsafe { free(h) };
}

/// Frees `h` once every CPU has left the RCU (and preempt-disabled) read
/// side sections it may be reading it in.
pub(crate) fn free_rcu(h: Option<&FtraceHash>) {
    if let Some(h) = h {
        // SAFETY: `rcu` belongs to the set, which is freed only by
        // `free_cb` (the callers give sets no longer published).
        unsafe { bindings::call_rcu(h.rcu.get(), Some(free_cb)) };
    }
}

/// The size a committed copy of a set of `count` entries gets.
pub(crate) fn committed_bits(count: usize) -> u32 {
    let half = count / 2;
    let bits = usize::BITS - half.leading_zeros();
    bits.clamp(1, MAX_BITS)
}
