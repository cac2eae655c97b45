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

/// The part of an ops that decides which sites it wants.
#[derive(Clone, Copy, Debug)]
pub struct OpsSites<'a> {
    /// Sorted site addresses; empty means every site.
    pub filter: &'a [u64],
    /// Sorted site addresses never wanted.
    pub notrace: &'a [u64],
    /// The ops needs a full `pt_regs` (SAVE_REGS).
    pub regs: bool,
    /// The ops may change the return ip (IPMODIFY).
    pub ipmodify: bool,
}

impl OpsSites<'_> {
    pub fn wants(&self, ip: u64) -> bool {
        (self.filter.is_empty() || self.filter.binary_search(&ip).is_ok())
            && self.notrace.binary_search(&ip).is_err()
    }
}

/// What one site must call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The NOP.
    Nop,
    /// The trampoline of the ops at this index, alone on the site.
    Sole(usize),
    /// The shared trampoline that walks the ops list.
    List,
    /// The shared list trampoline that saves a full `pt_regs`.
    ListRegs,
}

/// What the ops want of one site.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Want {
    /// How many ops want it.
    pub refs: u32,
    /// One of them needs a full `pt_regs`.
    pub regs: bool,
    /// How many of them may change the return ip.
    pub ipmodify: u32,
    /// The index of the first ops that wants it.
    pub first: Option<usize>,
}

/// What `ops` want of the site at `ip`.
pub fn want(ip: u64, ops: &[OpsSites<'_>]) -> Want {
    let mut w = Want::default();
    for (i, o) in ops.iter().enumerate() {
        if o.wants(ip) {
            w.refs += 1;
            w.regs |= o.regs;
            w.ipmodify += u32::from(o.ipmodify);
            w.first.get_or_insert(i);
        }
    }
    w
}

/// The call a site with wants `w` needs.
pub fn target(w: &Want) -> Target {
    match (w.refs, w.first) {
        (0, _) | (_, None) => Target::Nop,
        (1, Some(i)) => Target::Sole(i),
        _ if w.regs => Target::ListRegs,
        _ => Target::List,
    }
}

/// The first site of `sites` (sorted) that adding `new` to `ops` would give
/// two ops that may change the return ip: such an ops is refused
/// (`EBUSY`), as the C core does.
pub fn ipmodify_conflict(sites: &[u64], ops: &[OpsSites<'_>], new: &OpsSites<'_>) -> Option<u64> {
    if !new.ipmodify {
        return None;
    }
    let others: usize = ops.iter().filter(|o| o.ipmodify).count();
    if others == 0 {
        return None;
    }
    sites
        .iter()
        .copied()
        .find(|&ip| new.wants(ip) && ops.iter().any(|o| o.ipmodify && o.wants(ip)))
}

/// Calls `change(index, old, new)` for every site whose target differs
/// between `current` and what `ops` want now, and returns how many did.
/// `current[i]` is the target of `sites[i]`.
pub fn plan<F: FnMut(usize, Target, Target)>(
    sites: &[u64],
    current: &[Target],
    ops: &[OpsSites<'_>],
    mut change: F,
) -> usize {
    let mut n = 0;
    for (i, (&ip, &cur)) in sites.iter().zip(current.iter()).enumerate() {
        let new = target(&want(ip, ops));
        if new != cur {
            change(i, cur, new);
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec;

    fn ops<'a>(filter: &'a [u64], notrace: &'a [u64]) -> OpsSites<'a> {
        OpsSites {
            filter,
            notrace,
            regs: false,
            ipmodify: false,
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
        assert_eq!(target(&want(5, &[])), Target::Nop);
        assert_eq!(want(30, &set).refs, 3);
    }

    #[test]
    fn ipmodify() {
        let mut a = ops(&[10, 20], &[]);
        a.ipmodify = true;
        let mut b = ops(&[20], &[]);
        b.ipmodify = true;
        let mut c = ops(&[30], &[]);
        c.ipmodify = true;
        let sites = [10, 20, 30];
        assert_eq!(ipmodify_conflict(&sites, &[a], &b), Some(20));
        assert_eq!(ipmodify_conflict(&sites, &[a], &c), None);
        assert_eq!(ipmodify_conflict(&sites, &[a], &ops(&[20], &[])), None);
    }

    #[test]
    fn plan_changes_only_what_differs() {
        let sites = [10, 20, 30];
        let cur = [Target::Nop, Target::Sole(0), Target::Nop];
        let o = [ops(&[20, 30], &[])];
        let mut seen = Vec::new();
        let n = plan(&sites, &cur, &o, |i, a, b| seen.push((i, a, b)));
        assert_eq!(n, 1);
        assert_eq!(seen, [(2, Target::Nop, Target::Sole(0))]);
    }

    proptest! {
        #[test]
        fn refs_and_targets_agree(
            sets in proptest::collection::vec(
                (proptest::collection::btree_set(0u64..20, 0..6),
                 proptest::collection::btree_set(0u64..20, 0..3),
                 any::<bool>()), 0..5),
            ip in 0u64..20)
        {
            let owned: Vec<(Vec<u64>, Vec<u64>, bool)> = sets
                .into_iter()
                .map(|(f, n, r)| (f.into_iter().collect(), n.into_iter().collect(), r))
                .collect();
            let list: Vec<OpsSites<'_>> = owned
                .iter()
                .map(|(f, n, r)| OpsSites { filter: f, notrace: n, regs: *r, ipmodify: false })
                .collect();
            let w = want(ip, &list);
            let wanting: Vec<usize> = (0..list.len()).filter(|&i| list[i].wants(ip)).collect();
            prop_assert_eq!(w.refs as usize, wanting.len());
            match target(&w) {
                Target::Nop => prop_assert!(wanting.is_empty()),
                Target::Sole(i) => prop_assert_eq!(wanting, [i]),
                Target::List => prop_assert!(wanting.len() > 1 && wanting.iter().all(|&i| !list[i].regs)),
                Target::ListRegs => prop_assert!(wanting.len() > 1 && wanting.iter().any(|&i| list[i].regs)),
            }
        }
    }
}
