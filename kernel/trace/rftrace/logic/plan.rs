// SPDX-License-Identifier: GPL-2.0
//! Which call sites the registered ops want, and what each site must
//! call: the per-site reference counts and the patch plan of the core.
//!
//! The core keeps, per ops, a sorted filter and a sorted notrace set of
//! site addresses. A site is wanted by an ops when the filter is empty
//! (all functions) or holds it, and the notrace set does not. The site
//! then calls:
//!
//! - nothing (the NOP) when no ops wants it;
//! - the ops' own trampoline when exactly one ops wants it, which calls
//!   that ops' function directly;
//! - the shared list trampoline otherwise, the one that saves a full
//!   `pt_regs` when any ops on the site needs them.

use super::sites::{flags as sf, Site};

/// A set of call-site addresses: an ops' filter or notrace set. The
/// kernel implements it over its hash sets, the tests over sorted slices.
pub trait SiteSet {
    /// No address at all.
    fn is_empty(&self) -> bool;
    /// Whether `ip` is in the set.
    fn contains(&self, ip: u64) -> bool;
}

/// A sorted slice of addresses.
impl SiteSet for [u64] {
    fn is_empty(&self) -> bool {
        <[u64]>::is_empty(self)
    }
    fn contains(&self, ip: u64) -> bool {
        self.binary_search(&ip).is_ok()
    }
}

impl<S: SiteSet + ?Sized> SiteSet for &S {
    fn is_empty(&self) -> bool {
        (**self).is_empty()
    }
    fn contains(&self, ip: u64) -> bool {
        (**self).contains(ip)
    }
}

/// The part of an ops that decides which sites it wants.
#[derive(Clone, Copy, Debug)]
pub struct OpsSites<S> {
    /// Site addresses; empty means every site.
    pub filter: S,
    /// Site addresses never wanted.
    pub notrace: S,
    /// The ops needs a full `pt_regs` (SAVE_REGS).
    pub regs: bool,
    /// The ops may change the return ip (IPMODIFY).
    pub ipmodify: bool,
}

impl<S: SiteSet> OpsSites<S> {
    /// Whether the ops wants the site at `ip`.
    pub fn wants(&self, ip: u64) -> bool {
        (self.filter.is_empty() || self.filter.contains(ip)) && !self.notrace.contains(ip)
    }

    /// Whether the ops names `ip` in its filter (an empty filter names
    /// nothing): what counts for IPMODIFY conflicts, as in C.
    pub fn names(&self, ip: u64) -> bool {
        !self.filter.is_empty() && self.filter.contains(ip) && !self.notrace.contains(ip)
    }
}

/// What one site calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// Nothing: the site is a NOP.
    Nop,
    /// The trampoline of the ops at this index, alone on the site.
    Sole(usize),
    /// The shared list trampoline.
    List,
    /// The shared list trampoline that saves a full `pt_regs`.
    ListRegs,
}

/// What the registered ops want of one site.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Want {
    /// How many ops want it.
    pub refs: u32,
    /// Whether any of them needs a full `pt_regs`.
    pub regs: bool,
    /// How many of them may change the return ip.
    pub ipmodify: u32,
    /// The index of the first that wants it.
    pub first: Option<usize>,
    /// Which of the first 64 want it (bit `i`: the ops at index `i`).
    pub mask: u64,
    /// Whether one past the first 64 wants it.
    pub past_mask: bool,
}

/// What the ops of `ops` (in order) want of the site at `ip`.
pub fn want<'a, S: SiteSet + 'a>(ip: u64, ops: impl IntoIterator<Item = &'a OpsSites<S>>) -> Want {
    let mut w = Want::default();
    for (i, o) in ops.into_iter().enumerate() {
        if o.wants(ip) {
            w.refs += 1;
            w.regs |= o.regs;
            w.ipmodify += u32::from(o.ipmodify);
            w.first.get_or_insert(i);
            match u32::try_from(i).ok().and_then(|i| 1u64.checked_shl(i)) {
                Some(b) => w.mask |= b,
                None => w.past_mask = true,
            }
        }
    }
    w
}

/// What a site wanted as `w` calls.
pub fn target(w: &Want) -> Target {
    match (w.refs, w.first) {
        (0, _) | (_, None) => Target::Nop,
        (1, Some(i)) => Target::Sole(i),
        _ if w.regs => Target::ListRegs,
        _ => Target::List,
    }
}

/// The first address of `candidates` (the filter of an IPMODIFY ops about
/// to be enabled) that one of `others` (the other enabled IPMODIFY ops)
/// names too: two ops may not both change the ip of one function. Only
/// explicit filter entries count, as in C.
pub fn ipmodify_conflict<S, O>(
    candidates: impl IntoIterator<Item = u64>,
    others: impl Fn() -> O,
) -> Option<u64>
where
    S: SiteSet,
    O: IntoIterator<Item = OpsSites<S>>,
{
    candidates
        .into_iter()
        .find(|&ip| others().into_iter().any(|o| o.ipmodify && o.names(ip)))
}

/// What the planner knows of one registered ops; `T` is a call target
/// (an address; the kernel's type carries what may be called), whose
/// `Default` is the NOP.
#[derive(Clone, Copy, Debug)]
pub struct Planned<S, T = u64> {
    /// The sites it wants.
    pub sites: OpsSites<S>,
    /// A direct ops (its trampoline is the direct-call target).
    pub direct: bool,
    /// Its trampoline slot (0: none), kept in the records of the sites
    /// that call its trampoline.
    pub slot: u32,
    /// Its own trampoline (the NOP: none).
    pub tramp: T,
    /// Who it is (the kernel: the ops' address), for the groups made of
    /// the ops on a site.
    pub id: usize,
}

/// The shared trampolines.
#[derive(Clone, Copy, Debug)]
pub struct Shared<T = u64> {
    /// The list trampoline.
    pub list: T,
    /// The list trampoline that saves a full `pt_regs`.
    pub regs: T,
}

/// The ops of `mask` (bit `i`: `planned[i]`) that a site wants, when
/// none is a direct ops: the members of a group that may serve the site.
pub fn group_members<S, T>(planned: &[Planned<S, T>], w: &Want) -> Option<u64> {
    // The set bits of the mask only: a site of two ops among hundreds
    // registered looks at two.
    let mut bits = w.mask;
    let mut direct = false;
    while bits != 0 && !direct {
        let i = bits.trailing_zeros() as usize;
        bits &= bits - 1;
        direct = planned.get(i).is_some_and(|p| p.direct);
    }
    (w.refs >= 2 && !w.past_mask && !direct).then_some(w.mask)
}

/// The plan of one site: what it must call (the default: the NOP) and its next
/// record, from its record now and the registered ops (`on`: tracing is
/// enabled; off, every site goes back to the NOP). Several ops on a site go
/// through the shared list trampoline, unless `group` gives the trampoline
/// and slot of a group of exactly those ops (their mask, and whether a full
/// `pt_regs` is needed): the sites of a group call it directly.
pub fn plan_site<S: SiteSet, T: Copy + PartialEq + Default>(
    site: &Site,
    on: bool,
    planned: &[Planned<S, T>],
    shared: Shared<T>,
    group: impl FnMut(u64, bool) -> Option<(T, u32)>,
) -> (T, Site) {
    let w = want(site.ip, planned.iter().map(|p| &p.sites));
    plan_wanted(site, &w, on, planned, shared, group)
}

/// [`plan_site`] for a site whose [`Want`] is known: `w` is what [`want`]
/// gives for it over `planned` (the kernel finds it through an index of
/// the ops, `super::wantindex`, rather than asking every ops).
pub fn plan_wanted<S, T: Copy + PartialEq + Default>(
    site: &Site,
    w: &Want,
    on: bool,
    planned: &[Planned<S, T>],
    shared: Shared<T>,
    mut group: impl FnMut(u64, bool) -> Option<(T, u32)>,
) -> (T, Site) {
    let t = if on { target(w) } else { Target::Nop };
    let mut grouped = |members: Option<u64>, regs: bool| {
        let r = if regs { sf::REGS } else { 0 };
        members
            .and_then(|m| group(m, regs))
            .filter(|&(t, slot)| slot != 0 && t != T::default())
            .map(|(t, slot)| (t, sf::ENABLED | sf::DIRECT_OPS | sf::GROUP | r, slot))
    };
    let (call, mut nf, slot) = match t {
        Target::Nop => (T::default(), 0, 0),
        Target::Sole(i) => {
            let p = &planned[i];
            let r = if p.direct {
                sf::DIRECT
            } else if p.sites.regs {
                sf::REGS
            } else {
                0
            };
            // An ops without a trampoline of its own that the site may
            // call may still have a group of its own: the kernel offers
            // one where a group costs a call (the literal's
            // architectures, for an ops that asks the core for recursion
            // protection or an RCU check), rather than the list walk.
            let lone = u32::try_from(i)
                .ok()
                .and_then(|b| 1u64.checked_shl(b))
                .filter(|_| !p.direct);
            if p.slot != 0 && p.tramp != T::default() {
                (p.tramp, sf::ENABLED | sf::DIRECT_OPS | r, p.slot)
            } else if let Some(g) = grouped(lone, p.sites.regs) {
                g
            } else if p.sites.regs {
                (shared.regs, sf::ENABLED | sf::REGS, 0)
            } else {
                (shared.list, sf::ENABLED, 0)
            }
        }
        Target::List => grouped(group_members(planned, w), false).unwrap_or((shared.list, sf::ENABLED, 0)),
        Target::ListRegs => grouped(group_members(planned, w), true).unwrap_or((shared.regs, sf::ENABLED | sf::REGS, 0)),
    };
    if w.ipmodify > 0 && on {
        nf |= sf::IPMODIFY | sf::MODIFIED;
    }
    // What the record has seen stays (the low half: the slot is above).
    nf |= site.flags & (sf::TOUCHED | sf::MODIFIED | sf::INIT) & 0xffff;
    if nf & sf::ENABLED != 0 {
        nf |= sf::TOUCHED;
    }
    let mut next = Site {
        ip: site.ip,
        refs: w.refs,
        flags: nf,
    };
    next.set_slot(slot);
    (call, next)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec;

    type Sites<'a> = OpsSites<&'a [u64]>;

    fn ops<'a>(filter: &'a [u64], notrace: &'a [u64]) -> Sites<'a> {
        OpsSites {
            filter,
            notrace,
            regs: false,
            ipmodify: false,
        }
    }

    const SHARED: Shared = Shared {
        list: 0x1000,
        regs: 0x2000,
    };

    fn planned(sites: Sites<'_>, slot: u32, tramp: u64) -> Planned<&[u64]> {
        Planned {
            sites,
            direct: false,
            slot,
            tramp,
            id: slot as usize,
        }
    }

    #[test]
    fn targets() {
        let all = ops(&[], &[]);
        let some = ops(&[10, 30], &[]);
        let mut regs = ops(&[30], &[]);
        regs.regs = true;
        let notrace = ops(&[], &[20]);
        let set = [all, some, regs];
        assert_eq!(target(&want(10, &set)), Target::List);
        assert_eq!(target(&want(20, &set)), Target::Sole(0));
        assert_eq!(target(&want(30, &set)), Target::ListRegs);
        assert_eq!(target(&want(20, &[notrace])), Target::Nop);
        assert_eq!(target(&want(21, &[notrace])), Target::Sole(0));
        assert_eq!(target(&want::<&[u64]>(5, &[])), Target::Nop);
        assert_eq!(want(30, &set).refs, 3);
    }

    #[test]
    fn ipmodify_counts_explicit_entries_only() {
        let mut a = ops(&[10, 20], &[]);
        a.ipmodify = true;
        let mut every = ops(&[], &[]);
        every.ipmodify = true;
        let mut hidden = ops(&[20], &[20]);
        hidden.ipmodify = true;
        let plain = ops(&[20], &[]);
        let conflict = |cand: &[u64], others: &[Sites<'_>]| {
            ipmodify_conflict(cand.iter().copied(), || others.iter().copied())
        };
        assert_eq!(conflict(&[20], &[a]), Some(20));
        assert_eq!(conflict(&[30, 10], &[a]), Some(10));
        assert_eq!(conflict(&[30], &[a]), None);
        // An empty filter names no function; nor does a notraced one; nor
        // an ops that does not modify the ip.
        assert_eq!(conflict(&[20], &[every, hidden, plain]), None);
    }

    #[test]
    fn several_ops_go_to_their_group_when_one_is_given() {
        let a = ops(&[10, 11], &[]);
        let b = ops(&[10], &[]);
        let mut c = ops(&[10], &[]);
        c.regs = true;
        let p = [planned(a, 0, 0), planned(b, 0, 0), planned(c, 0, 0)];
        let mut asked = Vec::new();
        let (call, next) = plan_site(&Site::new(10), true, &p, SHARED, |m, regs| {
            asked.push((m, regs));
            Some((0x5000, 7))
        });
        assert_eq!(asked, [(0b111, true)]);
        assert_eq!(call, 0x5000);
        assert!(next.has(sf::GROUP) && next.has(sf::DIRECT_OPS) && next.has(sf::REGS));
        assert_eq!((next.slot(), next.refs), (7, 3));
        // One ops alone without a trampoline is asked a group of its own;
        // none given, the list it is.
        let (call, next) = plan_site(&Site::new(11), true, &p, SHARED, |m, regs| {
            assert_eq!((m, regs), (0b1, false));
            None
        });
        assert_eq!((call, next.has(sf::GROUP)), (SHARED.list, false));
        let (call, next) = plan_site(&Site::new(11), true, &p, SHARED, |_, _| Some((0x5000, 7)));
        assert_eq!((call, next.slot(), next.refs), (0x5000, 7, 1));
        assert!(next.has(sf::GROUP) && next.has(sf::DIRECT_OPS) && !next.has(sf::REGS));
        // One with its own trampoline, or a direct one, is not asked.
        let mut own = [planned(ops(&[11], &[]), 3, 0x6000)];
        let (call, _) = plan_site(&Site::new(11), true, &own, SHARED, |_, _| unreachable!());
        assert_eq!(call, 0x6000);
        own[0].direct = true;
        own[0].slot = 0;
        let (call, next) = plan_site(&Site::new(11), true, &own, SHARED, |_, _| unreachable!());
        assert_eq!((call, next.has(sf::GROUP)), (SHARED.list, false));
        let (call, next) = plan_site(&Site::new(10), true, &p[..2], SHARED, |m, regs| {
            assert_eq!((m, regs), (0b11, false));
            None
        });
        assert_eq!(call, SHARED.list);
        assert!(!next.has(sf::GROUP) && !next.has(sf::DIRECT_OPS));
        // Off: no group is asked for.
        let (call, _) = plan_site(&Site::new(10), false, &p, SHARED, |_, _| unreachable!());
        assert_eq!(call, 0);
    }

    #[test]
    fn a_direct_ops_keeps_a_site_off_groups() {
        let a = ops(&[10], &[]);
        let b = ops(&[10], &[]);
        let mut p = [planned(a, 0, 0), planned(b, 0, 0)];
        p[1].direct = true;
        let (call, next) = plan_site(&Site::new(10), true, &p, SHARED, |_, _| unreachable!());
        assert_eq!(call, SHARED.list);
        assert!(!next.has(sf::GROUP));
    }

    #[test]
    fn masks_stop_at_64_ops() {
        let all = ops(&[], &[]);
        let many: Vec<_> = (0..65).map(|_| planned(all, 0, 0)).collect();
        let w = want(10, many.iter().map(|p| &p.sites));
        assert_eq!((w.refs, w.mask, w.past_mask), (65, u64::MAX, true));
        assert_eq!(group_members(&many, &w), None);
        assert_eq!(
            group_members(&many[..64], &want(10, many[..64].iter().map(|p| &p.sites))),
            Some(u64::MAX)
        );
    }

    #[test]
    fn sole_ops_gets_its_trampoline_and_slot() {
        let p = [planned(ops(&[10], &[]), 3, 0x5000)];
        let (call, next) = plan_site(&Site::new(10), true, &p, SHARED, |_, _| None);
        assert_eq!(call, 0x5000);
        assert_eq!(next.refs, 1);
        assert_eq!(next.slot(), 3);
        assert!(next.has(sf::ENABLED | sf::DIRECT_OPS | sf::TOUCHED));
        // Without a trampoline of its own: the shared one.
        let p = [planned(ops(&[10], &[]), 0, 0)];
        let (call, next) = plan_site(&Site::new(10), true, &p, SHARED, |_, _| None);
        assert_eq!((call, next.slot()), (SHARED.list, 0));
        // Off (the sysctl): back to the NOP; the count and what the
        // record has seen stay.
        let (call, off) = plan_site(&next, false, &p, SHARED, |_, _| None);
        assert_eq!((call, off.refs), (0, 1));
        assert!(off.has(sf::TOUCHED) && !off.has(sf::ENABLED));
    }

    #[test]
    fn two_ops_share_the_list_and_regs_wins() {
        let mut r = ops(&[10], &[]);
        r.regs = true;
        let p = [planned(ops(&[], &[]), 1, 0x5000), planned(r, 2, 0x6000)];
        let (call, next) = plan_site(&Site::new(10), true, &p, SHARED, |_, _| None);
        assert_eq!((call, next.refs, next.slot()), (SHARED.regs, 2, 0));
        assert!(next.has(sf::REGS));
        let (call, next) = plan_site(&Site::new(11), true, &p, SHARED, |_, _| None);
        assert_eq!((call, next.slot()), (0x5000, 1));
    }

    #[test]
    fn ipmodify_marks_the_record() {
        let mut m = ops(&[10], &[]);
        m.ipmodify = true;
        let p = [planned(m, 0, 0)];
        let (_, next) = plan_site(&Site::new(10), true, &p, SHARED, |_, _| None);
        assert!(next.has(sf::IPMODIFY) && next.has(sf::MODIFIED));
        let (_, off) = plan_site(&next, false, &p, SHARED, |_, _| None);
        assert!(!off.has(sf::IPMODIFY) && off.has(sf::MODIFIED));
    }

    proptest! {
        #[test]
        fn refs_and_targets_agree(
            sets in proptest::collection::vec(
                (proptest::collection::btree_set(0u64..20, 0..6),
                 proptest::collection::btree_set(0u64..20, 0..3),
                 any::<bool>(), any::<u8>()), 0..5),
            ip in 0u64..20, on in any::<bool>())
        {
            let owned: Vec<(Vec<u64>, Vec<u64>, bool, u8)> = sets
                .into_iter()
                .map(|(f, n, r, s)| (f.into_iter().collect(), n.into_iter().collect(), r, s))
                .collect();
            let list: Vec<Planned<&[u64]>> = owned
                .iter()
                .map(|(f, n, r, s)| Planned {
                    sites: OpsSites { filter: &f[..], notrace: &n[..], regs: *r, ipmodify: false },
                    direct: false,
                    slot: u32::from(*s % 4),
                    tramp: 0x9000 + u64::from(*s % 4),
                    id: usize::from(*s),
                })
                .collect();
            let w = want(ip, list.iter().map(|p| &p.sites));
            let wanting: Vec<usize> = (0..list.len()).filter(|&i| list[i].sites.wants(ip)).collect();
            prop_assert_eq!(w.refs as usize, wanting.len());
            match target(&w) {
                Target::Nop => prop_assert!(wanting.is_empty()),
                Target::Sole(i) => prop_assert_eq!(&wanting, &[i]),
                Target::List => prop_assert!(wanting.len() > 1 && wanting.iter().all(|&i| !list[i].sites.regs)),
                Target::ListRegs => prop_assert!(wanting.len() > 1 && wanting.iter().any(|&i| list[i].sites.regs)),
            }
            let (call, next) = plan_site(&Site::new(ip), on, &list, SHARED, |_, _| None);
            prop_assert_eq!(next.ip, ip);
            prop_assert_eq!(next.refs as usize, wanting.len());
            prop_assert_eq!(call == 0, !on || wanting.is_empty());
            prop_assert_eq!(next.has(sf::ENABLED), call != 0);
            prop_assert_eq!(next.slot() != 0, call >= 0x9000);
        }
    }
}
