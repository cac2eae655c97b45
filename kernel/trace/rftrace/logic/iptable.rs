// SPDX-License-Identifier: GPL-2.0
//! A table from function addresses to nonzero words, searched without a
//! lock while one writer at a time changes it: open addressing, linear
//! probing, over a power-of-two slice of [`Slot`]s.
//!
//! The core keeps its direct ops in one, by function, so that the list
//! dispatcher finds the one direct ops of a function in a search instead
//! of asking every registered ops.
//!
//! Readers may run at any time, on any CPU. What they may see:
//!
//! - A slot's address is written once, from zero, after its word (both
//!   with release), and never changes again while the slice is
//!   published: a reader that finds an address reads a word written for
//!   it, and a search stops at the first zero address only where no
//!   address was ever written.
//! - A word changes between zero (the address removed, the slot kept for
//!   it) and a value. A reader that races with the change sees the old
//!   word or the new one.
//!
//! A slice grows by copying into a larger one ([`copy_live`]), which its
//! owner publishes in place of the old before freeing that after its
//! readers left. Slots with a zero word are not copied.

use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// One place of a table: an address (zero: never used) and its word
/// (zero: none).
#[derive(Debug, Default)]
pub struct Slot {
    ip: AtomicU64,
    word: AtomicUsize,
}

impl Slot {
    /// An unused slot.
    pub const fn new() -> Self {
        Slot {
            ip: AtomicU64::new(0),
            word: AtomicUsize::new(0),
        }
    }
}

/// The fewest slots a table has.
pub const MIN_SLOTS: usize = 16;

/// Where the search for `ip` starts in a table of `mask + 1` slots.
#[inline(always)]
fn home(ip: u64, mask: usize) -> usize {
    // Function addresses are aligned and close together: spread them.
    let h = ip.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    ((h >> 32) ^ h) as usize & mask
}

/// The slots of `t` in search order for `ip`, each once; none when `t`'s
/// length is not a power of two.
#[inline(always)]
fn probe(t: &[Slot], ip: u64) -> impl Iterator<Item = &Slot> {
    let n = if t.len().is_power_of_two() {
        t.len()
    } else {
        0
    };
    let mask = n.wrapping_sub(1);
    let start = home(ip, mask);
    (0..n).filter_map(move |i| t.get((start + i) & mask))
}

/// The word of `ip` in `t` (zero: none). Lock-free; hot path: a plain
/// loop, inlined into its caller.
#[inline(always)]
pub fn find(t: &[Slot], ip: u64) -> usize {
    let n = t.len();
    if ip == 0 || !n.is_power_of_two() {
        return 0;
    }
    let mask = n - 1;
    let mut i = home(ip, mask);
    let mut left = n;
    while left > 0 {
        let Some(s) = t.get(i) else {
            return 0;
        };
        match s.ip.load(Ordering::Acquire) {
            0 => return 0,
            k if k == ip => return s.word.load(Ordering::Acquire),
            _ => {}
        }
        i = (i + 1) & mask;
        left -= 1;
    }
    0
}

/// What [`set`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Set {
    /// The address had a slot: its word changed.
    Kept,
    /// The address took a new slot.
    New,
    /// No slot left for it (or `ip` or `word` is zero): nothing changed.
    Full,
}

/// Gives `ip` the word `word` in `t`. For the one writer.
pub fn set(t: &[Slot], ip: u64, word: usize) -> Set {
    if ip == 0 || word == 0 {
        return Set::Full;
    }
    for s in probe(t, ip) {
        match s.ip.load(Ordering::Relaxed) {
            0 => {
                // The word before the address: a reader that finds the
                // address finds the word with it.
                s.word.store(word, Ordering::Release);
                s.ip.store(ip, Ordering::Release);
                return Set::New;
            }
            k if k == ip => {
                s.word.store(word, Ordering::Release);
                return Set::Kept;
            }
            _ => {}
        }
    }
    Set::Full
}

/// Takes the word of `ip` out of `t` (its slot stays, for it); whether
/// it had one. For the one writer.
pub fn clear(t: &[Slot], ip: u64) -> bool {
    if ip == 0 {
        return false;
    }
    for s in probe(t, ip) {
        match s.ip.load(Ordering::Relaxed) {
            0 => return false,
            k if k == ip => return s.word.swap(0, Ordering::Release) != 0,
            _ => {}
        }
    }
    false
}

/// The addresses of `t` that have a word, with it.
pub fn live(t: &[Slot]) -> impl Iterator<Item = (u64, usize)> + '_ {
    t.iter().filter_map(|s| {
        let ip = s.ip.load(Ordering::Relaxed);
        let w = s.word.load(Ordering::Relaxed);
        (ip != 0 && w != 0).then_some((ip, w))
    })
}

/// How many slots of `t` hold an address (with a word or not).
#[cfg(test)]
pub fn used(t: &[Slot]) -> usize {
    t.iter()
        .filter(|s| s.ip.load(Ordering::Relaxed) != 0)
        .count()
}

/// Whether `more` new addresses fit in a table of `len` slots of which
/// `used` hold one, keeping it at most half full (short searches).
pub fn fits(len: usize, used: usize, more: usize) -> bool {
    len.is_power_of_two()
        && used
            .checked_add(more)
            .and_then(|n| n.checked_mul(2))
            .is_some_and(|n| n <= len)
}

/// The slots of a table that holds `n` addresses at most a quarter full,
/// so that it takes as many again before it must grow (`None`: too many).
pub fn size_for(n: usize) -> Option<usize> {
    n.checked_mul(4)?.max(MIN_SLOTS).checked_next_power_of_two()
}

/// Copies the addresses of `from` that have a word into the empty `to`;
/// whether they all fit.
pub fn copy_live(from: &[Slot], to: &[Slot]) -> bool {
    live(from).all(|(ip, w)| set(to, ip, w) == Set::New)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::Rng;
    use std::collections::BTreeMap;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::vec::Vec;

    fn table(n: usize) -> Vec<Slot> {
        (0..n).map(|_| Slot::new()).collect()
    }

    #[test]
    fn finds_what_was_set_and_not_what_was_cleared() {
        let t = table(16);
        assert_eq!(find(&t, 0xffff_ffff_8100_0000), 0);
        assert_eq!(set(&t, 0xffff_ffff_8100_0000, 7), Set::New);
        assert_eq!(set(&t, 0xffff_ffff_8100_0010, 8), Set::New);
        assert_eq!(find(&t, 0xffff_ffff_8100_0000), 7);
        assert_eq!(find(&t, 0xffff_ffff_8100_0010), 8);
        assert_eq!(set(&t, 0xffff_ffff_8100_0000, 9), Set::Kept);
        assert_eq!(find(&t, 0xffff_ffff_8100_0000), 9);
        assert!(clear(&t, 0xffff_ffff_8100_0000));
        assert!(!clear(&t, 0xffff_ffff_8100_0000));
        assert_eq!(find(&t, 0xffff_ffff_8100_0000), 0);
        assert_eq!(find(&t, 0xffff_ffff_8100_0010), 8);
        // The cleared address keeps its slot: setting it again takes none.
        assert_eq!(set(&t, 0xffff_ffff_8100_0000, 3), Set::Kept);
        assert_eq!(used(&t), 2);
        // Zero is no address and no word.
        assert_eq!(set(&t, 0, 1), Set::Full);
        assert_eq!(set(&t, 1, 0), Set::Full);
        assert_eq!(find(&t, 0), 0);
    }

    #[test]
    fn a_full_table_says_so_and_a_bad_length_holds_nothing() {
        let t = table(4);
        for ip in 1..=4 {
            assert_eq!(set(&t, ip * 16, 1), Set::New);
        }
        assert_eq!(set(&t, 80, 1), Set::Full);
        for ip in 1..=4 {
            assert_eq!(find(&t, ip * 16), 1);
        }
        assert_eq!(find(&t, 80), 0);
        let odd = table(6);
        assert_eq!(set(&odd, 16, 1), Set::Full);
        assert_eq!(find(&odd, 16), 0);
        assert_eq!(find(&[], 16), 0);
    }

    #[test]
    fn sizes_keep_tables_sparse() {
        assert_eq!(size_for(0), Some(MIN_SLOTS));
        assert_eq!(size_for(5), Some(32));
        assert_eq!(size_for(1000), Some(4096));
        assert_eq!(size_for(usize::MAX / 2), None);
        assert!(fits(16, 0, 8));
        assert!(!fits(16, 0, 9));
        assert!(!fits(16, 8, 1));
        assert!(!fits(12, 0, 1));
        assert!(!fits(16, usize::MAX, 1));
        // A table sized for n takes n more before it must grow.
        for n in [0, 1, 7, 100, 1000] {
            let len = size_for(n).unwrap();
            assert!(fits(len, n, n));
        }
    }

    /// Random sets, clears and growths against a map.
    #[test]
    fn agrees_with_a_map() {
        let mut rng = Rng(0x1f7a);
        for _ in 0..200 {
            let mut t = table(MIN_SLOTS);
            let mut model = BTreeMap::new();
            // Few addresses, so that they come back after a clear.
            let pool: Vec<u64> = (0..64)
                .map(|_| 0xffff_ffff_8100_0000 + rng.below(1 << 20) as u64 * 16)
                .collect();
            for _ in 0..300 {
                let ip = pool[rng.below(pool.len())];
                if rng.chance(3) {
                    assert_eq!(clear(&t, ip), model.remove(&ip).is_some());
                } else {
                    let w = rng.below(1000) + 1;
                    if !fits(t.len(), used(&t), 1) {
                        let bigger = table(size_for(model.len() + 1).unwrap());
                        assert!(copy_live(&t, &bigger));
                        t = bigger;
                    }
                    assert_ne!(set(&t, ip, w), Set::Full);
                    model.insert(ip, w);
                }
                for &ip in &pool {
                    assert_eq!(find(&t, ip), model.get(&ip).copied().unwrap_or(0));
                }
                assert!(used(&t) * 2 <= t.len());
            }
            let mut got: Vec<_> = live(&t).collect();
            got.sort();
            let want: Vec<_> = model.into_iter().collect();
            assert_eq!(got, want);
        }
    }

    /// Readers on other threads, while the writer sets and clears: an
    /// address never touched is always found with its word, and one being
    /// changed is found with one of its words or none.
    #[test]
    fn readers_see_old_or_new_words() {
        let t: Arc<Vec<Slot>> = Arc::new(table(1024));
        let stable: Vec<u64> = (0..100).map(|i| 0xffff_ffff_8100_0000 + i * 48).collect();
        for (i, &ip) in stable.iter().enumerate() {
            assert_eq!(set(&t, ip, i + 1), Set::New);
        }
        let moving: Vec<u64> = (0..200).map(|i| 0xffff_ffff_8200_0000 + i * 32).collect();
        let stop = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (t, stop) = (t.clone(), stop.clone());
                let (stable, moving) = (stable.clone(), moving.clone());
                std::thread::spawn(move || {
                    let mut seen = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        for (i, &ip) in stable.iter().enumerate() {
                            assert_eq!(find(&t, ip), i + 1);
                        }
                        for &ip in &moving {
                            let w = find(&t, ip);
                            assert!(w == 0 || w == 1_000_000 + (ip as usize & 0xffff) || w == 2);
                            seen += u64::from(w != 0);
                        }
                    }
                    seen
                })
            })
            .collect();
        for round in 0..2000 {
            for &ip in &moving {
                if round % 2 == 0 {
                    let w = if round % 4 == 0 {
                        2
                    } else {
                        1_000_000 + (ip as usize & 0xffff)
                    };
                    assert_ne!(set(&t, ip, w), Set::Full);
                } else {
                    clear(&t, ip);
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            r.join().unwrap();
        }
        assert_eq!(used(&t), stable.len() + moving.len());
    }
}
