// SPDX-License-Identifier: GPL-2.0
//! An index of what the registered ops want, so that planning a site
//! looks only at the ops that can want it: [`super::plan::want`] asks
//! every ops of every site, which for an update of every site (the
//! function tracer switched with a few hundred BPF trampolines attached,
//! one direct ops each) is sites x ops set lookups under `ftrace_lock`.
//!
//! Most ops fall in two kinds. An ops with an empty filter ("unscoped")
//! wants every site but those of its notrace set; one with a filter
//! ("scoped") wants the sites of its filter that its notrace set does not
//! hold. The index keeps, sorted by address, the notrace addresses of the
//! unscoped ops and the wanted filter addresses of the scoped ones, and
//! the sum of what the unscoped ops bring to a site. What a site wants is
//! then that sum, less the unscoped ops its address excludes, plus the
//! scoped ops its address names: a search of the index and the entries
//! at the address, not a question to every ops.
//!
//! An ops whose set is larger than the update's sites (indexing it would
//! cost more than asking it at each of them), or for which the room
//! (reserved ahead: an update does not allocate) is short, is "walked":
//! asked at each site, as `want` does. The result equals `want`'s, field
//! for field; the tests check it against `want` over random ops.

use super::plan::{OpsSites, Planned, SiteSet, Want};
use super::seek::seek;

/// One entry of the index, or a marker naming one ops (see [`build`]).
/// Sorted by address, then ops.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Entry {
    ip: u64,
    /// The ops' index in the plan.
    ops: u32,
    /// An unscoped ops' notrace address (the ops does not want the
    /// site); else a scoped ops' filter address that its notrace set
    /// does not hold (the ops wants the site).
    notrace: bool,
}

impl Entry {
    fn marker(ops: u32) -> Self {
        Entry {
            ip: 0,
            ops,
            notrace: false,
        }
    }
}

/// Below this many ops, or this many sites to plan, asking every ops of
/// every site costs less than building the index (a sort of the entries).
const MIN_OPS: usize = 4;
const MIN_VISITS: usize = 32;

/// What ops bring to a site, as counts, so that an ops can be taken out
/// again (a notrace entry of an unscoped ops).
#[derive(Clone, Copy, Debug, Default)]
struct Sum {
    refs: u32,
    /// How many need a full `pt_regs`.
    regs: u32,
    ipmodify: u32,
    mask: u64,
    /// How many have an index past the mask's 64.
    past: u32,
}

impl Sum {
    fn add<S>(&mut self, i: u32, o: &OpsSites<S>) {
        self.refs = self.refs.saturating_add(1);
        self.regs = self.regs.saturating_add(u32::from(o.regs));
        self.ipmodify = self.ipmodify.saturating_add(u32::from(o.ipmodify));
        // As `want` sets its mask: a bit for each of the first 64.
        match 1u64.checked_shl(i) {
            Some(b) => self.mask |= b,
            None => self.past = self.past.saturating_add(1),
        }
    }

    fn sub<S>(&mut self, i: u32, o: &OpsSites<S>) {
        self.refs = self.refs.saturating_sub(1);
        self.regs = self.regs.saturating_sub(u32::from(o.regs));
        self.ipmodify = self.ipmodify.saturating_sub(u32::from(o.ipmodify));
        match 1u64.checked_shl(i) {
            Some(b) => self.mask &= !b,
            None => self.past = self.past.saturating_sub(1),
        }
    }
}

/// The smaller of two ops indexes, either maybe absent.
fn min(a: Option<u32>, b: u32) -> Option<u32> {
    Some(a.map_or(b, |a| a.min(b)))
}

/// The index of one update, in the room [`build`] was given: valid for
/// the plan it was built from, which the update does not change.
pub struct Index<'r> {
    /// Sorted by address, then ops.
    entries: &'r [Entry],
    /// Markers of the unscoped ops indexed, by ascending index: their sum
    /// is `base`.
    unscoped: &'r [Entry],
    /// Markers of the walked ops (by descending index; the order does
    /// not matter: each is asked).
    walked: &'r [Entry],
    base: Sum,
    /// Where the last search stopped: the sites come in address order
    /// more often than not.
    cursor: usize,
}

/// Whether an index is worth building for `ops` ops and `visits` sites.
fn worth(ops: usize, visits: usize) -> bool {
    ops >= MIN_OPS && visits >= MIN_VISITS
}

/// Builds the index of `planned` in `room` for an update that plans
/// about `visits` sites. `count` and `ips` give the size and the
/// addresses of a set (`ips` each address `SiteSet::contains` answers
/// yes for). None when the index is not worth it (few ops or sites), or
/// the room cannot hold a marker for every ops: then every site asks
/// every ops ([`super::plan::want`]). Allocates nothing: the room is the
/// caller's, its front taking the entries and its back (one slot per
/// ops) the markers.
pub fn build<'r, S, T, I>(
    room: &'r mut [Entry],
    planned: &[Planned<S, T>],
    visits: usize,
    count: impl Fn(S) -> usize,
    ips: impl Fn(S) -> I,
) -> Option<Index<'r>>
where
    S: SiteSet + Copy,
    I: IntoIterator<Item = u64>,
{
    let n = planned.len();
    if !worth(n, visits) {
        return None;
    }
    // The last `n` slots hold the markers, one at most per ops.
    let budget = room.len().checked_sub(n)?;
    // `budget` is at most the room's length: no panic.
    let (front, back) = room.split_at_mut(budget);
    let (mut used, mut unscoped, mut walked) = (0usize, 0usize, 0usize);
    let mut base = Sum::default();
    for (i, p) in planned.iter().enumerate() {
        let i = u32::try_from(i).ok()?;
        let o = &p.sites;
        let all = o.filter.is_empty();
        let set = if all { o.notrace } else { o.filter };
        let c = count(set);
        // Indexing costs an entry per address of the set, walking a
        // lookup per site: the cheaper is taken, within the room.
        let mut indexed = c <= visits && c <= budget.saturating_sub(used);
        if indexed {
            let start = used;
            let check = !all && !o.notrace.is_empty();
            for ip in ips(set) {
                if check && o.notrace.contains(ip) {
                    continue;
                }
                let Some(e) = front.get_mut(used) else {
                    // More addresses than `count` said: walked instead.
                    used = start;
                    indexed = false;
                    break;
                };
                *e = Entry {
                    ip,
                    ops: i,
                    notrace: all,
                };
                used += 1;
            }
        }
        // Unscoped markers from the back's start up, walked ones from its
        // end down: each ops takes one slot at most.
        if indexed && all {
            *back.get_mut(unscoped)? = Entry::marker(i);
            unscoped += 1;
            base.add(i, o);
        } else if !indexed {
            walked += 1;
            *back.get_mut(n.checked_sub(walked)?)? = Entry::marker(i);
        }
    }
    let entries = front.get_mut(..used)?;
    entries.sort_unstable();
    let back: &'r [Entry] = back;
    let unscoped = back.get(..unscoped)?;
    let walked = back.get(n.checked_sub(walked)?..)?;
    Some(Index {
        entries,
        unscoped,
        walked,
        base,
        cursor: 0,
    })
}

impl Index<'_> {
    /// What the ops of `planned` (the plan the index was built from)
    /// want of the site at `ip`: [`super::plan::want`]'s answer.
    pub fn want<S: SiteSet, T>(&mut self, ip: u64, planned: &[Planned<S, T>]) -> Want {
        let lo = seek(self.entries, self.cursor, ip, |e| e.ip);
        self.cursor = lo;
        let at = self.entries.get(lo..).unwrap_or(&[]);
        let run = at
            .get(..at.iter().take_while(|e| e.ip == ip).count())
            .unwrap_or(&[]);
        let mut sum = self.base;
        let mut first = None;
        let mut prev = None;
        for e in run {
            // A set holds an address once; a repeat would sit next to
            // its twin, and counts once.
            if prev == Some(e) {
                continue;
            }
            prev = Some(e);
            let Some(p) = planned.get(e.ops as usize) else {
                continue;
            };
            if e.notrace {
                sum.sub(e.ops, &p.sites);
            } else {
                sum.add(e.ops, &p.sites);
                first = min(first, e.ops);
            }
        }
        // The first unscoped ops the address does not exclude: the
        // excluded ones are the run's notrace entries, in the same order.
        let mut excluded = run.iter().filter(|e| e.notrace).map(|e| e.ops).peekable();
        for m in self.unscoped {
            while excluded.next_if(|&x| x < m.ops).is_some() {}
            if excluded.peek() != Some(&m.ops) {
                first = min(first, m.ops);
                break;
            }
        }
        for m in self.walked {
            let Some(p) = planned.get(m.ops as usize) else {
                continue;
            };
            if p.sites.wants(ip) {
                sum.add(m.ops, &p.sites);
                first = min(first, m.ops);
            }
        }
        Want {
            refs: sum.refs,
            regs: sum.regs > 0,
            ipmodify: sum.ipmodify,
            first: first.map(|i| i as usize),
            mask: sum.mask,
            past_mask: sum.past > 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::plan::want;
    use super::*;
    use std::vec;
    use std::vec::Vec;

    use crate::fuzz::Rng;

    /// A sorted set of addresses below `universe`, of at most `max`.
    fn set(rng: &mut Rng, universe: u64, max: usize) -> Vec<u64> {
        let mut v: Vec<u64> = (0..rng.below(max + 1))
            .map(|_| rng.next() % universe)
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    type Plan<'a> = Planned<&'a [u64]>;

    fn plan<'a>(sets: &'a [(Vec<u64>, Vec<u64>, bool, bool)]) -> Vec<Plan<'a>> {
        sets.iter()
            .map(|(f, n, regs, ipmodify)| Planned {
                sites: OpsSites {
                    filter: &f[..],
                    notrace: &n[..],
                    regs: *regs,
                    ipmodify: *ipmodify,
                },
                direct: false,
                slot: 0,
                tramp: 0,
                id: 0,
            })
            .collect()
    }

    fn count(s: &[u64]) -> usize {
        s.len()
    }

    fn ips(s: &[u64]) -> core::iter::Copied<core::slice::Iter<'_, u64>> {
        s.iter().copied()
    }

    /// Every address of the universe, up then in a random order (the
    /// cursor goes back), against `want`.
    fn check(ix: &mut Index<'_>, p: &[Plan<'_>], universe: u64, rng: &mut Rng) {
        let reference = |ip| want(ip, p.iter().map(|x| &x.sites));
        for ip in 0..universe {
            assert_eq!(ix.want(ip, p), reference(ip), "ip {ip}");
        }
        for _ in 0..universe {
            let ip = rng.next() % (universe + 2);
            assert_eq!(ix.want(ip, p), reference(ip), "ip {ip}");
        }
    }

    #[test]
    fn agrees_with_want() {
        let mut rng = Rng(0x0123_4567_89ab_cdef);
        let (mut built, mut walked) = (0, 0);
        for round in 0..1500 {
            let universe = 1 + rng.below(80) as u64;
            // Up to 150 ops: past the mask's 64 too.
            let n = if round % 5 == 0 {
                60 + rng.below(90)
            } else {
                rng.below(40)
            };
            // Sometimes sets larger than the sites planned below.
            let max = if rng.chance(4) { 60 } else { 8 };
            let sets: Vec<_> = (0..n)
                .map(|_| {
                    // A third unscoped (an empty filter), some with notrace
                    // sets, which often overlap the filter.
                    let f = if rng.chance(3) {
                        vec![]
                    } else {
                        set(&mut rng, universe, max)
                    };
                    let t = if rng.chance(2) {
                        vec![]
                    } else {
                        set(&mut rng, universe, max)
                    };
                    (f, t, rng.chance(3), rng.chance(4))
                })
                .collect();
            let p = plan(&sets);
            let entries: usize = sets
                .iter()
                .map(|(f, t, _, _)| if f.is_empty() { t.len() } else { f.len() })
                .sum();
            // A room that fits all, or too small for some ops (walked
            // then), or not even the markers.
            let size = match rng.below(4) {
                0 => rng.below(n + 4),
                1 => n + rng.below(entries + 1),
                _ => n + entries + rng.below(8),
            };
            // Few sites to plan: the larger sets are walked.
            let visits = if rng.chance(3) {
                rng.below(12) + MIN_VISITS
            } else {
                10_000
            };
            let mut room = vec![Entry::default(); size];
            let Some(mut ix) = build(&mut room, &p, visits, count, ips) else {
                assert!(!worth(n, visits) || size < n);
                continue;
            };
            built += 1;
            walked += ix.walked.len();
            check(&mut ix, &p, universe, &mut rng);
        }
        // Both paths taken, many times.
        assert!(built > 500 && walked > 500, "{built} {walked}");
    }

    #[test]
    fn repeated_addresses_count_once() {
        // A set iterator that yields each address twice (`count` then
        // lies): the entries either fit, and count once, or overflow the
        // room, and the ops is walked.
        let mut rng = Rng(42);
        let twice = |s: &[u64]| -> Vec<u64> { s.iter().flat_map(|&x| [x, x]).collect() };
        for _ in 0..300 {
            let universe = 1 + rng.below(30) as u64;
            let n = MIN_OPS + rng.below(70);
            let sets: Vec<_> = (0..n)
                .map(|_| {
                    let f = if rng.chance(3) {
                        vec![]
                    } else {
                        set(&mut rng, universe, 6)
                    };
                    let t = set(&mut rng, universe, 4);
                    (f, t, rng.chance(2), rng.chance(2))
                })
                .collect();
            let p = plan(&sets);
            let mut room = vec![Entry::default(); n + rng.below(8 * n)];
            let mut ix = build(&mut room, &p, 1000, count, twice).unwrap();
            check(&mut ix, &p, universe, &mut rng);
        }
    }

    #[test]
    fn unscoped_ops_excluded_in_turn() {
        // Three unscoped ops past the 64th behind scoped ones; the site
        // at 5 is notraced by the first two: the third is `first`.
        let mut sets: Vec<_> = (0..70)
            .map(|i| (vec![100 + i], vec![], false, false))
            .collect();
        sets.push((vec![], vec![5], true, false));
        sets.push((vec![], vec![5, 6], false, true));
        sets.push((vec![], vec![], false, false));
        sets.push((vec![5], vec![5], true, true));
        let p = plan(&sets);
        let mut room = vec![Entry::default(); 200];
        let mut ix = build(&mut room, &p, 1000, count, ips).unwrap();
        assert!(ix.walked.is_empty());
        let w = ix.want(5, &p);
        assert_eq!(w, want(5, p.iter().map(|x| &x.sites)));
        assert_eq!(
            (w.refs, w.first, w.regs, w.ipmodify),
            (1, Some(72), false, 0)
        );
        let w = ix.want(100, &p);
        assert_eq!(
            (w.refs, w.first, w.mask, w.past_mask),
            (4, Some(0), 1, true)
        );
        assert!(ix.want(6, &p).regs);
    }

    #[test]
    fn not_built_when_not_worth_it() {
        let sets: Vec<_> = (0..MIN_OPS)
            .map(|_| (vec![], vec![], false, false))
            .collect();
        let p = plan(&sets);
        let mut room = vec![Entry::default(); 64];
        assert!(build(&mut room, &p, MIN_VISITS - 1, count, ips).is_none());
        assert!(build(&mut room, &p[1..], 1000, count, ips).is_none());
        assert!(build(&mut room[..MIN_OPS - 1], &p, 1000, count, ips).is_none());
        assert!(build(&mut room, &p, MIN_VISITS, count, ips).is_some());
    }
}
