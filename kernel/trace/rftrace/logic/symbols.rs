// SPDX-License-Identifier: GPL-2.0
//! `ftrace_lookup_symbols()`: the addresses of a sorted list of function
//! names, filled in while kallsyms (then each module's symbols) is walked
//! once. A name takes the first address offered for it that is a call
//! site; the walk may stop once every name has one.

use core::cmp::Ordering;

/// The state of one lookup over `names` (sorted by bytes, as `strcmp`
/// sorts them), filling `addrs` (one per name, 0 = not found yet).
pub struct Lookup<'a, N> {
    names: &'a [N],
    addrs: &'a mut [u64],
    found: usize,
}

impl<'a, N> Lookup<'a, N> {
    /// A lookup with nothing found: `addrs` is cleared.
    pub fn new(names: &'a [N], addrs: &'a mut [u64]) -> Self {
        addrs.fill(0);
        Lookup {
            names,
            addrs,
            found: 0,
        }
    }

    /// Offers the symbol `name` at `addr`; `traceable` says whether an
    /// address is a function the core can trace (asked only for wanted
    /// names). Returns true when every name has its address.
    pub fn offer(
        &mut self,
        name: &[u8],
        addr: u64,
        bytes: impl Fn(&N) -> &[u8],
        traceable: impl FnOnce(u64) -> bool,
    ) -> bool {
        let Ok(i) = self.names.binary_search_by(|n| cmp_bytes(bytes(n), name)) else {
            return self.done();
        };
        if self.addrs[i] != 0 || !traceable(addr) {
            return self.done();
        }
        self.addrs[i] = addr;
        self.found += 1;
        self.done()
    }

    /// Whether every name has its address.
    pub fn done(&self) -> bool {
        self.found == self.names.len()
    }
}

/// `strcmp` order: bytes compared as unsigned.
fn cmp_bytes(a: &[u8], b: &[u8]) -> Ordering {
    a.cmp(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id<'a>(s: &'a &'static str) -> &'a [u8] {
        s.as_bytes()
    }

    #[test]
    fn fills_sorted_names_in_any_order() {
        let names = ["a_func", "b_func", "c_func"];
        let mut addrs = [7u64; 3];
        let mut l = Lookup::new(&names, &mut addrs);
        assert!(!l.offer(b"zzz", 1, id, |_| true));
        assert!(!l.offer(b"c_func", 30, id, |_| true));
        assert!(!l.offer(b"a_func", 10, id, |_| true));
        assert!(l.offer(b"b_func", 20, id, |_| true));
        assert_eq!(addrs, [10, 20, 30]);
    }

    #[test]
    fn first_traceable_address_wins() {
        let names = ["dup"];
        let mut addrs = [0u64; 1];
        let mut l = Lookup::new(&names, &mut addrs);
        assert!(!l.offer(b"dup", 5, id, |a| a != 5));
        assert!(l.offer(b"dup", 6, id, |_| true));
        assert!(l.offer(b"dup", 7, id, |_| true));
        assert_eq!(addrs, [6]);
    }

    #[test]
    fn unfound_names_stay_zero() {
        let names = ["x", "y"];
        let mut addrs = [1u64, 2];
        let mut l = Lookup::new(&names, &mut addrs);
        assert!(!l.offer(b"x", 3, id, |_| true));
        assert!(!l.done());
        assert_eq!(addrs, [3, 0]);
    }

    #[test]
    fn empty_list_is_done() {
        let names: [&str; 0] = [];
        let mut addrs: [u64; 0] = [];
        assert!(Lookup::new(&names, &mut addrs).done());
    }
}
