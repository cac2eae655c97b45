// SPDX-License-Identifier: GPL-2.0
//! Searches of a sorted slice by address that go on from where the last
//! one stopped: a walk of addresses in ascending order (an update's
//! sorted address list against a site table, the sites of an update
//! against the want index) then costs the distance it moves, not a
//! search of the whole slice per address.

/// The first index of `items` (sorted by `key`, ascending; equal keys
/// allowed) whose key is not below `ip`: what `partition_point` gives.
/// `from` is where the last search stopped: when everything before it
/// lies below `ip` (the addresses went up), the search gallops on from
/// there, in the logarithm of the distance; else (an address lower than
/// the last) it searches the whole slice. Right for any `from`.
pub fn seek<S>(items: &[S], from: usize, ip: u64, key: impl Fn(&S) -> u64) -> usize {
    let from = from.min(items.len());
    let below = |s: &S| key(s) < ip;
    let behind = from
        .checked_sub(1)
        .and_then(|i| items.get(i))
        .is_some_and(|s| !below(s));
    if behind {
        return items.partition_point(below);
    }
    let tail = items.get(from..).unwrap_or(&[]);
    // Doubles the window while its last item still lies below `ip`: the
    // answer is then inside the window.
    let mut end = 1usize;
    while end < tail.len() && tail.get(end - 1).is_some_and(below) {
        end = end.saturating_mul(2);
    }
    let window = tail.get(..end.min(tail.len())).unwrap_or(tail);
    from + window.partition_point(below)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec::Vec;

    #[test]
    fn agrees_with_partition_point() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            x.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        for _ in 0..2000 {
            let len = (next() % 70) as usize;
            // Repeated keys too: the index holds one entry per ops at an
            // address.
            let mut v: Vec<u64> = (0..len).map(|_| next() % 50).collect();
            v.sort_unstable();
            let mut from = (next() % 80) as usize;
            for _ in 0..20 {
                let ip = next() % 55;
                let want = v.partition_point(|&k| k < ip);
                let got = seek(&v, from, ip, |&k| k);
                assert_eq!(got, want, "{v:?} from {from} ip {ip}");
                from = got;
            }
        }
    }

    #[test]
    fn edges() {
        let v = [10u64, 20, 20, 30];
        assert_eq!(seek(&v, 0, 5, |&k| k), 0);
        assert_eq!(seek(&v, 4, 40, |&k| k), 4);
        assert_eq!(seek(&v, 4, 20, |&k| k), 1);
        assert_eq!(seek(&v, 99, 25, |&k| k), 3);
        assert_eq!(seek(&[] as &[u64], 3, 1, |&k| k), 0);
    }
}
