// SPDX-License-Identifier: GPL-2.0
//! Tests of the demangler: the c++filt cases, what it refuses, and
//! property tests that no input panics or writes past its buffer.

use super::*;
use proptest::prelude::*;
use std::string::String;

fn dm(s: &str) -> core::result::Result<String, Error> {
    let mut buf = [0u8; 4096];
    let n = demangle(s.as_bytes(), &mut buf)?;
    Ok(String::from_utf8(buf[..n].to_vec()).unwrap())
}

/// Names from the kernel's own build, with what binutils' c++filt
/// prints for them (crate hashes removed): an independent decoder.
const CASES: &str = include_str!("demangle_cases.txt");

#[test]
fn agrees_with_cxxfilt() {
    let mut n = 0;
    let mut wrong = std::vec::Vec::new();
    for line in CASES
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (mangled, want) = line.split_once('\t').unwrap();
        let got = dm(mangled);
        if got.as_deref() != Ok(want) {
            wrong.push(std::format!("{mangled}\n  got  {got:?}\n  want {want}"));
        }
        n += 1;
    }
    assert!(
        wrong.is_empty(),
        "{} of {n} differ:\n{}",
        wrong.len(),
        wrong[..wrong.len().min(8)].join("\n")
    );
    assert!(n >= 100, "only {n} cases");
}

#[test]
fn not_rust_or_malformed() {
    assert!(!is_mangled(b"vfs_read"));
    assert!(!is_mangled(b"_R"));
    assert!(is_mangled(b"_RNvCs1_3foo3bar"));
    assert_eq!(dm("vfs_read"), Err(Error::Invalid));
    assert_eq!(dm("_RNvCs1_3foo"), Err(Error::Invalid));
    assert_eq!(dm("_RNvC3foo9bar"), Err(Error::Invalid));
    // A backreference to itself or forward.
    assert_eq!(dm("_RB_"), Err(Error::Invalid));
    assert_eq!(dm("_RNvB5_3foo"), Err(Error::Invalid));
}

#[test]
fn small_buffer_is_full_not_truncated() {
    let mut buf = [0u8; 8];
    assert_eq!(
        demangle(b"_RNvCs1_6kernel8function", &mut buf),
        Err(Error::Full)
    );
    let mut buf = [0u8; 16];
    assert_eq!(demangle(b"_RNvCs1_6kernel8function", &mut buf), Ok(16));
    assert_eq!(&buf, b"kernel::function");
}

#[test]
fn cstr_for_c_callers() {
    let name = b"_RNvNtCs1_6kernel5print11call_printk";
    let path = b"kernel::print::call_printk";
    // Room for the path and its NUL: both written, nothing after.
    let mut buf = [0xffu8; 64];
    assert_eq!(demangle_cstr(name, &mut buf), Some(Ok(path.len())));
    assert_eq!(&buf[..path.len()], path);
    assert_eq!(buf[path.len()], 0);
    assert!(buf[path.len() + 1..].iter().all(|&b| b == 0xff));
    // Exactly the path and its NUL.
    let mut buf = [0xffu8; 27];
    assert_eq!(demangle_cstr(name, &mut buf), Some(Ok(26)));
    assert_eq!(&buf[..26], path);
    assert_eq!(buf[26], 0);
    // The path without room for its NUL, or an empty buffer: full.
    let mut buf = [0u8; 26];
    assert_eq!(demangle_cstr(name, &mut buf), Some(Err(Error::Full)));
    assert_eq!(demangle_cstr(name, &mut []), Some(Err(Error::Full)));
    // C names, and `_R` names that are not v0 symbols: not Rust.
    let mut buf = [0u8; 64];
    for c in [&b"vfs_read"[..], b"_R", b"_Rfoo", b"", b"__rust_alloc"] {
        assert_eq!(demangle_cstr(c, &mut buf), None, "{c:?}");
    }
    // Rust but malformed, or a path with no text.
    assert_eq!(
        demangle_cstr(b"_RNvCs1_3foo", &mut buf),
        Some(Err(Error::Invalid))
    );
    assert_eq!(demangle_cstr(b"_RC0", &mut buf), Some(Err(Error::Invalid)));
    // A vendor suffix (`.llvm.N`) is left out, as by `demangle`.
    assert_eq!(
        demangle_cstr(b"_RNvNtCs1_6kernel5print11call_printk.llvm.42", &mut buf),
        Some(Ok(path.len()))
    );
}

proptest! {
    /// The kernel's names, one byte of them changed or not, into
    /// buffers of any size: no panic; a path is NUL-terminated within
    /// the buffer and is what `demangle` writes.
    #[test]
    fn cstr_agrees_with_demangle(
        pick in any::<proptest::sample::Index>(),
        flip in proptest::option::of((any::<proptest::sample::Index>(), any::<u8>())),
        size in 0usize..400,
    ) {
        let names: std::vec::Vec<&str> = CASES
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .filter_map(|l| l.split_once('\t').map(|(m, _)| m))
            .collect();
        let mut s = pick.get(&names).as_bytes().to_vec();
        if let Some((at, b)) = flip {
            // Past `_R` and the letter after it: still taken as Rust.
            let i = 3 + at.index(s.len() - 3);
            s[i] = b;
        }
        let mut buf = std::vec![0xffu8; size];
        let mut wide = [0u8; 1024];
        let want = demangle(&s, &mut wide);
        match demangle_cstr(&s, &mut buf) {
            Some(Ok(n)) => {
                prop_assert!(n > 0 && n < size);
                prop_assert_eq!(buf[n], 0);
                prop_assert_eq!(want, Ok(n));
                prop_assert_eq!(&buf[..n], &wide[..n]);
            }
            // Too small for the path and its NUL, or for as much of
            // it as was written before the name proved bad.
            Some(Err(Error::Full)) => {
                let ok = match want {
                    Ok(n) => n >= size,
                    Err(_) => true,
                };
                prop_assert!(ok, "full for {:?}", want);
            }
            Some(Err(e)) => {
                prop_assert!(want == Err(e) || (e == Error::Invalid && want == Ok(0)));
            }
            None => prop_assert!(false, "a v0 name not taken as Rust"),
        }
    }
}

#[test]
fn deep_nesting_is_refused() {
    // `&&&...u8` as a generic argument, deeper than the limit.
    let mut s = String::from("_RINvC3foo3bar");
    for _ in 0..100 {
        s.push('R');
    }
    s.push_str("hE");
    assert_eq!(dm(&s), Err(Error::TooComplex));
}

#[test]
fn closures_and_shims() {
    assert_eq!(
        dm("_RNCNvC3foo3bar0B3_"),
        Ok(String::from("foo::bar::{closure#0}"))
    );
    assert_eq!(
        dm("_RNCNvC3foo3bars_0B3_"),
        Ok(String::from("foo::bar::{closure#1}"))
    );
}

proptest! {
    /// Any bytes: no panic, and an answer within the buffer.
    #[test]
    fn never_panics(tail in proptest::collection::vec(any::<u8>(), 0..80)) {
        let mut s = b"_R".to_vec();
        s.extend(tail);
        let mut buf = [0u8; 64];
        if let Ok(n) = demangle(&s, &mut buf) {
            prop_assert!(n <= buf.len());
        }
    }

    /// Backreferences to backreferences (each tuple names the one
    /// before twice, doubling the text per level) stop at the limit.
    #[test]
    fn backref_chains_bounded(n in 1usize..60) {
        // After `_R`: `INvC3foo3bar` (12 bytes), then the first tuple.
        let mut s = String::from("_RINvC3foo3barThE");
        let mut prev = 12;
        for _ in 0..n {
            let at = s.len() - 2;
            s.push('T');
            for _ in 0..2 {
                s.push('B');
                s.push_str(&b62(prev as u64));
            }
            s.push('E');
            prev = at;
        }
        s.push('E');
        let mut buf = [0u8; 1 << 16];
        let r = demangle(s.as_bytes(), &mut buf);
        prop_assert!(r.is_ok() || n > 7, "{:?} for n = {}", r, n);
    }
}

fn b62(v: u64) -> String {
    if v == 0 {
        return String::from("_");
    }
    let mut v = v - 1;
    let digits = b"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
    let mut out = std::vec::Vec::new();
    loop {
        out.push(digits[(v % 62) as usize]);
        v /= 62;
        if v == 0 {
            break;
        }
    }
    out.reverse();
    let mut s = String::from_utf8(out).unwrap();
    s.push('_');
    s
}
