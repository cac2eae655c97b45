// SPDX-License-Identifier: GPL-2.0
//! The call-site table: one 16-byte record per call site (the call to the
//! tracer a function makes on entry), kept sorted by address in groups
//! (the kernel image, each module), and the searches the rest of the
//! kernel asks of it. The size of a site's instruction is the
//! architecture's (`MCOUNT_INSN_SIZE`), a parameter here.

/// Flags of a call site. The low bits say what the site is patched to now;
/// the others what it is and what happened to it.
pub mod flags {
    /// The site calls a trampoline (it is not a NOP).
    pub const ENABLED: u32 = 1 << 0;
    /// The trampoline it calls saves a full `pt_regs`.
    pub const REGS: u32 = 1 << 1;
    /// It calls one ops' own trampoline rather than the shared list one.
    pub const DIRECT_OPS: u32 = 1 << 2;
    /// An ops that may change the return ip (IPMODIFY) is on it.
    pub const IPMODIFY: u32 = 1 << 3;
    /// It has been traced at least once since boot (`touched_functions`).
    pub const TOUCHED: u32 = 1 << 4;
    /// An ops that modifies it (IPMODIFY, a direct caller) touched it.
    pub const MODIFIED: u32 = 1 << 5;
    /// It lies in init text, which goes away after boot or module load.
    pub const INIT: u32 = 1 << 6;
    /// It can never be patched: its text is gone, or its bytes were wrong.
    pub const DISABLED: u32 = 1 << 7;
    /// It calls a direct trampoline (a BPF-style `register_ftrace_direct()`).
    pub const DIRECT: u32 = 1 << 8;
    /// Its text was freed while no memory was left to drop the record: the
    /// record stays in its group, [`DISABLED`] too, and every lookup and
    /// walk of the table passes over it.
    pub const GONE: u32 = 1 << 9;
    /// With [`DIRECT_OPS`]: the trampoline its slot names is a group's,
    /// which calls exactly the ops that want the site (listed as the
    /// list dispatcher).
    pub const GROUP: u32 = 1 << 10;
}

/// One call site. 16 bytes, as the C core's `struct dyn_ftrace`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Site {
    /// Address of the call instruction or its NOP.
    pub ip: u64,
    /// How many ops want this site traced.
    pub refs: u32,
    /// [`flags`].
    pub flags: u32,
}

const _: () = assert!(core::mem::size_of::<Site>() == 16);

impl Site {
    pub const fn new(ip: u64) -> Self {
        Site {
            ip,
            refs: 0,
            flags: 0,
        }
    }

    pub fn has(&self, f: u32) -> bool {
        self.flags & f != 0
    }

    /// The trampoline slot of the one ops the site calls directly
    /// ([`flags::DIRECT_OPS`]), kept in the top bits of the flags.
    pub fn slot(&self) -> u32 {
        self.flags >> SLOT_SHIFT
    }

    pub fn set_slot(&mut self, slot: u32) {
        self.flags = (self.flags & ((1 << SLOT_SHIFT) - 1)) | (slot << SLOT_SHIFT);
    }
}

/// Where the slot number starts in [`Site::flags`]; slots are below
/// [`MAX_SLOTS`].
pub const SLOT_SHIFT: u32 = 16;
pub const MAX_SLOTS: u32 = 1 << (32 - SLOT_SHIFT);

/// Sorts call-site addresses and drops duplicates and zeros (a zero is an
/// entry the build or the loader cleared). Returns how many remain at the
/// front of `ips`. Sorting in place: no allocation.
pub fn sort_unique(ips: &mut [u64]) -> usize {
    ips.sort_unstable();
    let mut n = 0;
    for i in 0..ips.len() {
        let ip = ips[i];
        if ip != 0 && (n == 0 || ips[n - 1] != ip) {
            ips[n] = ip;
            n += 1;
        }
    }
    n
}

/// Keeps, in order, the entries of `ips` for which `keep` holds, moved to
/// the front; returns how many. The kernel's `__mcount_loc` holds entries
/// that are no call site: zeros (padding, and weak functions the link
/// replaced), which a relocatable kernel then moves by its KASLR offset;
/// only entries in kernel text are sites.
pub fn retain(ips: &mut [u64], keep: impl Fn(u64) -> bool) -> usize {
    let mut n = 0;
    for i in 0..ips.len() {
        let ip = ips[i];
        if keep(ip) {
            ips[n] = ip;
            n += 1;
        }
    }
    n
}

/// Turns each entry of a table of call sites into the address of its
/// site as `site_of` gives it (an architecture's `ftrace_call_adjust()`),
/// 0 where it names none, which [`retain`] and [`sort_unique`] drop. An
/// adjustment that keeps the order keeps a sorted table sorted.
pub fn adjust(ips: &mut [u64], site_of: impl Fn(u64) -> Option<u64>) {
    for ip in ips.iter_mut() {
        *ip = site_of(*ip).unwrap_or(0);
    }
}

/// Whether `ips` is sorted strictly ascending (what a build-time sort
/// gives), so boot can skip sorting.
pub fn is_sorted_unique(ips: &[u64]) -> bool {
    ips.windows(2).all(|w| w[0] < w[1])
}

/// Anything with the address of a call site: a [`Site`], or the kernel's
/// cell around one, whose address never changes while others may be
/// reading it.
pub trait SiteIp {
    fn site_ip(&self) -> u64;
}

impl SiteIp for Site {
    fn site_ip(&self) -> u64 {
        self.ip
    }
}

/// The index of the site at exactly `ip`.
pub fn find<S: SiteIp>(sites: &[S], ip: u64) -> Option<usize> {
    sites.binary_search_by(|s| s.site_ip().cmp(&ip)).ok()
}

/// The index of the first site whose call instruction (`size` bytes,
/// at least 1) overlaps the range `[start, end]` (inclusive), as
/// `ftrace_location_range()` and `ftrace_text_reserved()` need.
pub fn first_overlapping<S: SiteIp>(
    sites: &[S],
    start: u64,
    end: u64,
    size: u64,
) -> Option<usize> {
    if end < start {
        return None;
    }
    // The first site that ends after `start`...
    let lo = start.saturating_sub(size.max(1) - 1);
    let i = sites.partition_point(|s| s.site_ip() < lo);
    // ...if it begins no later than `end`.
    sites
        .get(i..)?
        .iter()
        .position(|s| s.site_ip().saturating_add(size) > start)
        .map(|k| i + k)
        .filter(|&k| sites[k].site_ip() <= end)
}

/// The range of indexes of sites whose address lies in `[start, end)`:
/// the sites of one module's init text, say, when it is freed.
pub fn range<S: SiteIp>(sites: &[S], start: u64, end: u64) -> core::ops::Range<usize> {
    let a = sites.partition_point(|s| s.site_ip() < start);
    let b = sites.partition_point(|s| s.site_ip() < end);
    a..b.max(a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjust_maps_and_clears() {
        // An arm64-like table: each entry 8 bytes before its site, one
        // misaligned entry naming none.
        let mut ips = [0x1000, 0x1012, 0x2000];
        adjust(&mut ips, |a| (a % 4 == 0).then_some(a + 8));
        assert_eq!(ips, [0x1008, 0, 0x2008]);
        let n = sort_unique(&mut ips);
        assert_eq!(&ips[..n], &[0x1008, 0x2008]);
    }

    #[test]
    fn retain_drops_entries_outside_text_in_order() {
        let text = 0xffff_ffff_8100_0000u64..0xffff_ffff_8200_0000;
        let kaslr_zero = 0x2180_0000;
        let mut ips = [
            kaslr_zero,
            0xffff_ffff_8100_0010,
            0,
            0xffff_ffff_8100_0020,
            kaslr_zero,
        ];
        let n = retain(&mut ips, |ip| text.contains(&ip));
        assert_eq!(&ips[..n], &[0xffff_ffff_8100_0010, 0xffff_ffff_8100_0020]);
        assert!(is_sorted_unique(&ips[..n]));
    }
    use proptest::prelude::*;
    use std::vec::Vec;

    fn table(ips: &[u64]) -> Vec<Site> {
        ips.iter().map(|&ip| Site::new(ip)).collect()
    }

    #[test]
    fn sorting() {
        let mut v = [30, 10, 0, 20, 10, 30];
        let n = sort_unique(&mut v);
        assert_eq!(&v[..n], &[10, 20, 30]);
        assert!(is_sorted_unique(&v[..n]));
        assert!(!is_sorted_unique(&[1, 1]));
    }

    #[test]
    fn lookups() {
        let t = table(&[100, 200, 300]);
        assert_eq!(find(&t, 200), Some(1));
        assert_eq!(find(&t, 201), None);
        assert_eq!(first_overlapping(&t, 204, 204, 5), Some(1));
        assert_eq!(first_overlapping(&t, 205, 250, 5), None);
        assert_eq!(first_overlapping(&t, 0, 96, 5), None);
        assert_eq!(first_overlapping(&t, 0, 100, 5), Some(0));
        assert_eq!(first_overlapping(&t, 150, 140, 5), None);
        // Four-byte sites (arm64).
        assert_eq!(first_overlapping(&t, 203, 203, 4), Some(1));
        assert_eq!(first_overlapping(&t, 204, 250, 4), None);
        assert_eq!(range(&t, 150, 301), 1..3);
        assert_eq!(range(&t, 301, 150), 3..3);
    }

    #[test]
    fn slots_keep_flags() {
        let mut s = Site::new(1);
        s.flags = flags::ENABLED | flags::TOUCHED;
        s.set_slot(MAX_SLOTS - 1);
        assert_eq!(s.slot(), MAX_SLOTS - 1);
        assert!(s.has(flags::ENABLED) && s.has(flags::TOUCHED));
        s.set_slot(3);
        assert_eq!(s.slot(), 3);
        assert_eq!(s.flags & 0xffff, flags::ENABLED | flags::TOUCHED);
    }

    proptest! {
        #[test]
        fn overlap_agrees_with_scan(mut ips in proptest::collection::vec(0u64..2000, 0..64),
                                    start in 0u64..2100, len in 0u64..40,
                                    size in 1u64..16) {
            let n = sort_unique(&mut ips);
            let t = table(&ips[..n]);
            let end = start + len;
            let scan = t.iter().position(|s| s.ip <= end && s.ip + size > start);
            prop_assert_eq!(first_overlapping(&t, start, end, size), scan);
            for (i, s) in t.iter().enumerate() {
                prop_assert_eq!(find(&t, s.ip), Some(i));
            }
        }
    }
}
