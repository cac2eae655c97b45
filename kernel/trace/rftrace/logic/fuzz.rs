// SPDX-License-Identifier: GPL-2.0
//! Host fuzzing of the filter language: the token parser, the token
//! splitter, the pattern parser and matchers, and the number parser the
//! kernel build uses for every filter file. A deterministic generator
//! (fixed seed, so a failure repeats) writes inputs from the language's
//! pieces (names, globs, `!`, indexes, `:mod:`, `:traceon:5`, ...), mutates
//! them (flipped, inserted, deleted and duplicated bytes, any byte value,
//! overlong tokens) and feeds each through the shipped code in random
//! write() chunks. Beyond "no panic", each step checks what must hold.

use crate::glob::{glob_match, parse_ulong, Kind, Pattern};
use crate::parser::{is_space, Parser, ScanError, Token, BUF_SIZE};
use std::vec::Vec;

/// xorshift64*: small, deterministic (a fixed seed, so a failure
/// repeats), good enough to pick pieces; the other host tests' generator
/// too.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    /// Below `n` (0 for 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    /// True one time in `one_in`, about.
    pub(crate) fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    fn pick(&mut self, xs: &[&'static [u8]]) -> &'static [u8] {
        xs[self.below(xs.len())]
    }
}

const NAMES: &[&[u8]] = &[
    b"schedule",
    b"vfs_read",
    b"do_sys_open",
    b"__x64_sys_getpid",
    b"kfree",
    b"_RNvCs1_4core3fmt5write",
    b"ext4_file_open",
    b"a",
    b"",
    b"kernel::sync::",
    b"<rust_minimal::RustMinimal as kernel::Module>::init",
    b"<fn() -> u8\tas  x::T>::g",
    b"<a::<b",
    b"<>",
];
const GLOBS: &[&[u8]] = &[
    b"*",
    b"**",
    b"?",
    b"[a-z]",
    b"[!a]",
    b"[]]",
    b"[",
    b"\\",
    b"\\*",
    b"*sys*",
    b"sched*",
    b"*read",
    b"s?hed[a-z]le",
];
const COMMANDS: &[&[u8]] = &[
    b"mod",
    b"traceon",
    b"traceoff",
    b"stacktrace",
    b"snapshot",
    b"dump",
    b"cpudump",
    b"enable_event",
    b"disable_event",
    b"",
    b"bogus",
];
const SEPARATORS: &[&[u8]] = &[b" ", b"\n", b"\t", b"\0", b"\x0b\x0c\r", b"\xa0", b"  \n "];

/// One input: tokens of the language, separated.
fn generate(r: &mut Rng) -> Vec<u8> {
    let mut v = Vec::new();
    for _ in 0..=r.below(6) {
        if r.below(8) == 0 {
            v.push(b'!');
        }
        match r.below(5) {
            0 => v.extend_from_slice(r.pick(GLOBS)),
            1 => v.extend_from_slice(format_number(r).as_slice()),
            _ => {
                v.extend_from_slice(r.pick(NAMES));
                if r.below(3) == 0 {
                    v.extend_from_slice(r.pick(GLOBS));
                }
            }
        }
        if r.below(3) == 0 {
            v.push(b':');
            v.extend_from_slice(r.pick(COMMANDS));
            if r.below(2) == 0 {
                v.push(b':');
                if r.below(2) == 0 {
                    v.extend_from_slice(format_number(r).as_slice());
                } else {
                    v.extend_from_slice(r.pick(NAMES));
                    v.extend_from_slice(b":");
                    v.extend_from_slice(r.pick(NAMES));
                }
            }
        }
        if r.below(40) == 0 {
            // An overlong token, around the buffer's limit.
            let n = BUF_SIZE - 3 + r.below(6);
            v.extend(core::iter::repeat_n(b'x', n));
        }
        v.extend_from_slice(r.pick(SEPARATORS));
    }
    v
}

fn format_number(r: &mut Rng) -> Vec<u8> {
    let n = match r.below(3) {
        0 => r.next() % 20,
        1 => r.next() >> r.below(64),
        _ => r.next(),
    };
    let s = match r.below(3) {
        0 => std::format!("{n}"),
        1 => std::format!("0x{n:x}"),
        _ => std::format!("0{n:o}"),
    };
    s.into_bytes()
}

fn mutate(r: &mut Rng, v: &mut Vec<u8>) {
    for _ in 0..r.below(4) {
        let at = r.below(v.len() + 1);
        match r.below(4) {
            0 if at < v.len() => v[at] ^= 1 << r.below(8),
            1 => v.insert(at, r.next() as u8),
            2 if at < v.len() => {
                v.remove(at);
            }
            _ => {
                let end = (at + r.below(16)).min(v.len());
                let piece = v[at..end].to_vec();
                v.splice(at..at, piece);
            }
        }
    }
}

/// What the parser must produce: the input split at whitespace and NUL,
/// up to the first token too long for the buffer (then the error); a
/// token that starts with `<` keeps its whitespace while it has more `<`
/// than `>` (not counting `->`), each run of it as one space.
fn expected_tokens(input: &[u8]) -> (Vec<Vec<u8>>, bool) {
    let open = |t: &[u8]| {
        let opens = t.iter().filter(|&&b| b == b'<').count();
        let closes = t
            .iter()
            .enumerate()
            .filter(|&(i, &b)| b == b'>' && (i == 0 || t[i - 1] != b'-'))
            .count();
        t.first() == Some(&b'<') && opens > closes
    };
    let mut out = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    for &b in input.iter().chain([0u8].iter()) {
        let space = is_space(b);
        if b == 0 || (space && !open(&cur)) {
            if !cur.is_empty() {
                if cur.len() >= BUF_SIZE {
                    return (out, true);
                }
                out.push(core::mem::take(&mut cur));
            }
            continue;
        }
        if space {
            if cur.last() != Some(&b' ') {
                cur.push(b' ');
            }
        } else {
            cur.push(b);
        }
    }
    (out, false)
}

/// Feeds `input` in chunks of random sizes as the caller of write() does
/// (a short write makes it write the rest), processes each complete token
/// and the pending one at close, and checks each token on the way.
fn feed(r: &mut Rng, input: &[u8], names: &[&[u8]]) -> (Vec<Vec<u8>>, bool) {
    let mut p = Parser::new();
    let mut pos = 0u64;
    let mut toks = Vec::new();
    let mut rest = input;
    while !rest.is_empty() {
        let chunk = &rest[..1 + r.below(rest.len().min(64))];
        match p.scan(chunk, pos) {
            Ok(n) => {
                assert!(
                    n >= 1 && n <= chunk.len(),
                    "scan took {n} of {}",
                    chunk.len()
                );
                if p.loaded() && !p.pending() {
                    toks.push(p.token().to_vec());
                    p.clear();
                }
                pos += n as u64;
                rest = &rest[n..];
            }
            Err(ScanError::TooLong) => return (toks, true),
        }
    }
    if p.loaded() {
        toks.push(p.token().to_vec());
    }
    for t in &toks {
        check_token(t, names);
    }
    (toks, false)
}

fn check_token(tok: &[u8], names: &[&[u8]]) {
    assert!(!tok.is_empty() && tok.len() < BUF_SIZE);
    assert!(!tok.iter().any(|&b| b == 0));
    assert!(tok.first() == Some(&b'<') || !tok.iter().any(|&b| is_space(b)));
    let t = Token::split(tok);
    let mut back = t.func.to_vec();
    for part in [t.command, t.param].into_iter().flatten() {
        back.push(b':');
        back.extend_from_slice(part);
    }
    assert_eq!(back, tok, "split then joined");
    assert!(t.command.is_some() || t.param.is_none());
    let pat = Pattern::parse(t.func);
    assert_eq!(pat.negated, t.func.first() == Some(&b'!'));
    match pat.kind {
        Kind::Full => assert!(pat.matches(pat.search)),
        Kind::Front => assert!(pat.matches(&[pat.search, b"_tail"].concat())),
        Kind::End => assert!(pat.matches(&[b"head_", pat.search].concat())),
        Kind::Middle => assert!(pat.matches(&[b"h", pat.search, b"t"].concat())),
        Kind::Glob | Kind::Index => {}
    }
    if pat.kind != Kind::Index {
        assert_eq!(pat.index(), None);
    }
    for name in names {
        let _ = pat.matches(name);
        let _ = glob_match(t.func, name);
    }
    if let Some(param) = t.param {
        let _ = parse_ulong(param);
    }
}

/// A glob that matches exactly `s`: its special bytes quoted.
fn quoted(s: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    for &b in s {
        if matches!(b, b'*' | b'?' | b'[' | b'\\') {
            v.push(b'\\');
        }
        v.push(b);
    }
    v
}

#[test]
fn filter_language_fuzz() {
    let mut r = Rng(0x5eed_f00d_cafe_0001);
    let mut names: Vec<Vec<u8>> = NAMES.iter().map(|n| n.to_vec()).collect();
    const INPUTS: usize = 1_000_000;
    let (mut tokens, mut too_long) = (0usize, 0usize);
    for i in 0..INPUTS {
        let mut input = generate(&mut r);
        if i % 2 == 1 {
            mutate(&mut r, &mut input);
        }
        if i % 64 == 0 {
            // Now and then a name made of any bytes, for the matchers.
            let mut n = NAMES[r.below(NAMES.len())].to_vec();
            mutate(&mut r, &mut n);
            names[i / 64 % NAMES.len()] = n;
        }
        let name_refs: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
        let (toks, failed) = feed(&mut r, &input, &name_refs);
        let (want, want_fail) = expected_tokens(&input);
        assert_eq!(failed, want_fail, "input {input:?}");
        assert_eq!(toks, want, "input {input:?}");
        tokens += toks.len();
        too_long += usize::from(failed);
        // The matchers on their own, with any bytes.
        let (a, b) = input.split_at(r.below(input.len() + 1));
        let _ = glob_match(a, b);
        assert!(glob_match(&quoted(b), b), "quoted {b:?}");
        assert!(glob_match(b"*", b));
        if !a.iter().any(|c| matches!(c, b'*' | b'?' | b'[' | b'\\')) {
            assert_eq!(glob_match(a, b), a == b);
        }
        let n = r.next() >> r.below(64);
        for s in [
            std::format!("{n}"),
            std::format!("0x{n:X}"),
            std::format!("0{n:o}\n"),
        ] {
            assert_eq!(parse_ulong(s.as_bytes()), Some(n), "{s}");
        }
        let _ = parse_ulong(a);
    }
    // The generator reaches the cases it is there for.
    assert!(
        tokens > INPUTS && too_long > INPUTS / 100,
        "{tokens} {too_long}"
    );
}
