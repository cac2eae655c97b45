// SPDX-License-Identifier: GPL-2.0
//! The token parser of the filter files (`set_ftrace_filter`,
//! `set_graph_function`, ...), with the C core's semantics (see
//! `Documentation/design/filter-files.md`, section 3):
//!
//! - each `write()` consumes at most one token, with the whitespace before
//!   it and the one byte that ends it, and returns how many bytes it took;
//! - a token that reaches the end of a write continues in the next one;
//! - NUL ends a token like whitespace does;
//! - a token longer than [`BUF_SIZE`]` - 1` bytes fails with `EINVAL` and
//!   leaves the parser failed for the life of the open file: later writes
//!   are consumed but never produce a token.

/// Size of the token buffer: `KSYM_SYMBOL_LEN + 4` on 64-bit.
pub const BUF_SIZE: usize = 670;

/// Whitespace as the kernel's `isspace()` sees it (Latin-1 included).
pub fn is_space(b: u8) -> bool {
    matches!(b, 0x09..=0x0d | 0x20 | 0xa0)
}

/// Why a scan failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanError {
    /// The token does not fit (`EINVAL`).
    TooLong,
}

/// The parser state of one open filter file.
pub struct Parser {
    buf: [u8; BUF_SIZE],
    idx: usize,
    cont: bool,
    fail: bool,
    /// Open angle brackets (`<` less `>`) of a token that started with
    /// `<`; the token is shorter than [`BUF_SIZE`], so this cannot
    /// overflow.
    angle: i16,
}

impl Default for Parser {
    fn default() -> Self {
        Self::new()
    }
}

impl Parser {
    /// A parser for a newly opened file.
    pub const fn new() -> Self {
        Parser {
            buf: [0; BUF_SIZE],
            idx: 0,
            cont: false,
            fail: false,
            angle: 0,
        }
    }

    /// Forgets a pending token (not the failure).
    pub fn clear(&mut self) {
        self.idx = 0;
        self.cont = false;
        self.angle = 0;
    }

    /// Marks the parser failed, as a fault reading the user's buffer does.
    pub fn set_failed(&mut self) {
        self.fail = true;
    }

    /// Whether a token is there to process: complete or pending, and the
    /// parser has not failed.
    pub fn loaded(&self) -> bool {
        !self.fail && self.idx != 0
    }

    /// Whether the token continues in the next write.
    pub fn pending(&self) -> bool {
        self.cont
    }

    /// The token collected so far.
    pub fn token(&self) -> &[u8] {
        &self.buf[..self.idx]
    }

    /// Scans `input`, the bytes of one `write()` at file position `pos`
    /// (which is not empty), and returns how many bytes it consumed. After
    /// an `Ok`, a token is ready when [`Parser::loaded`] and not
    /// [`Parser::pending`]. After an error the parser is failed and the
    /// file position must not move.
    pub fn scan(&mut self, input: &[u8], pos: u64) -> Result<usize, ScanError> {
        if pos == 0 {
            self.clear();
        }
        let mut i = 0;
        if !self.cont {
            while input.get(i).is_some_and(|&c| is_space(c)) && i + 1 < input.len() {
                i += 1;
            }
            self.idx = 0;
            self.angle = 0;
            match input.get(i) {
                None => return Ok(0),
                Some(&c) if is_space(c) || c == 0 => return Ok(i + 1),
                Some(_) => {}
            }
        }
        while let Some(&ch) = input.get(i) {
            i += 1;
            if ch == 0 || (is_space(ch) && self.angle <= 0) {
                self.cont = false;
                return Ok(i);
            }
            self.push(ch)?;
        }
        self.cont = true;
        Ok(i)
    }

    /// Adds `ch` to the token. A token that starts with `<` (a Rust path
    /// such as `<T as Trait>::f`) keeps whitespace inside its angle
    /// brackets, as one space.
    fn push(&mut self, ch: u8) -> Result<(), ScanError> {
        let prev = self.idx.checked_sub(1).map(|i| self.buf[i]);
        let first = if self.idx == 0 { ch } else { self.buf[0] };
        if first == b'<' {
            match ch {
                b'<' => self.angle += 1,
                b'>' if prev != Some(b'-') => self.angle -= 1,
                _ if is_space(ch) && prev == Some(b' ') => return Ok(()),
                _ => {}
            }
        }
        if self.idx >= BUF_SIZE - 1 {
            self.fail = true;
            return Err(ScanError::TooLong);
        }
        self.buf[self.idx] = if is_space(ch) { b' ' } else { ch };
        self.idx += 1;
        Ok(())
    }
}

/// One token of a filter file, split at its colons: `func`, then
/// `:command`, then `:param` (which may hold more colons). A `::` is part
/// of a Rust path in `func` (`kernel::sync::*:traceoff`), never a
/// separator: in the C core it would be an empty command, which fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token<'a> {
    pub func: &'a [u8],
    /// `None` when the token has no colon: a plain function pattern.
    pub command: Option<&'a [u8]>,
    pub param: Option<&'a [u8]>,
}

impl<'a> Token<'a> {
    pub fn split(tok: &'a [u8]) -> Self {
        let lone = |i: usize| {
            tok.get(i) == Some(&b':')
                && tok.get(i + 1) != Some(&b':')
                && (i == 0 || tok.get(i - 1) != Some(&b':'))
        };
        let Some(at) = (0..tok.len()).find(|&i| lone(i)) else {
            return Token {
                func: tok,
                command: None,
                param: None,
            };
        };
        let (func, rest) = (&tok[..at], &tok[at + 1..]);
        let mut it = rest.splitn(2, |&b| b == b':');
        Token {
            func,
            command: it.next(),
            param: it.next(),
        }
    }
}

/// An unsigned decimal as the kernel's `kstrtoul()` reads one: an
/// optional `+`, digits, and at most one trailing newline; `None` for
/// anything else or an overflow.
pub fn parse_ulong(b: &[u8]) -> Option<u64> {
    let b = b.strip_suffix(b"\n").unwrap_or(b);
    let b = b.strip_prefix(b"+").unwrap_or(b);
    if b.is_empty() {
        return None;
    }
    b.iter().try_fold(0u64, |v, &c| {
        let d = c.checked_sub(b'0').filter(|&d| d < 10)?;
        v.checked_mul(10)?.checked_add(u64::from(d))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::vec::Vec;

    /// Feeds `writes` as successive write() calls the way the C core's
    /// caller would (a short write makes the caller write the rest), and
    /// returns the tokens processed and the return values.
    fn feed(writes: &[&[u8]]) -> (Vec<Vec<u8>>, Vec<Result<usize, ScanError>>) {
        let mut p = Parser::new();
        let mut pos = 0u64;
        let mut toks = Vec::new();
        let mut rets = Vec::new();
        for w in writes {
            let mut rest = *w;
            while !rest.is_empty() {
                let r = p.scan(rest, pos);
                rets.push(r);
                match r {
                    Ok(n) => {
                        if p.loaded() && !p.pending() {
                            toks.push(p.token().to_vec());
                            p.clear();
                        }
                        pos += n as u64;
                        rest = &rest[n..];
                    }
                    Err(_) => break,
                }
            }
        }
        (toks, rets)
    }

    #[test]
    fn one_token_per_write() {
        let mut p = Parser::new();
        assert_eq!(p.scan(b"foo bar\n", 0), Ok(4));
        assert!(p.loaded() && !p.pending());
        assert_eq!(p.token(), b"foo");
    }

    #[test]
    fn tokens_across_writes() {
        let (toks, _) = feed(&[b"  fo", b"o\tba", b"r\n"]);
        assert_eq!(toks, [b"foo".to_vec(), b"bar".to_vec()]);
        let (toks, _) = feed(&[b"a\0b c"]);
        assert_eq!(toks, [b"a".to_vec(), b"b".to_vec()]);
        let (toks, _) = feed(&[b"   \n\n"]);
        assert!(toks.is_empty());
        let (toks, _) = feed(&[b"x\xa0y "]);
        assert_eq!(toks, [b"x".to_vec(), b"y".to_vec()]);
    }

    #[test]
    fn pending_token_stays_pending() {
        let mut p = Parser::new();
        assert_eq!(p.scan(b"abc", 0), Ok(3));
        assert!(p.loaded() && p.pending());
        assert_eq!(p.token(), b"abc");
        // A leading space ends it.
        assert_eq!(p.scan(b" x", 3), Ok(1));
        assert!(!p.pending());
        assert_eq!(p.token(), b"abc");
    }

    #[test]
    fn too_long_is_sticky() {
        let long = [b'a'; BUF_SIZE + 5];
        let mut p = Parser::new();
        assert_eq!(p.scan(&long, 0), Err(ScanError::TooLong));
        assert!(!p.loaded());
        // Later writes are consumed but yield nothing.
        assert_eq!(p.scan(b"foo ", 0), Ok(4));
        assert!(!p.loaded());
        let exact = [b'b'; BUF_SIZE - 1];
        let mut q = Parser::new();
        let mut w = exact.to_vec();
        w.push(b'\n');
        assert_eq!(q.scan(&w, 0), Ok(BUF_SIZE));
        assert_eq!(q.token().len(), BUF_SIZE - 1);
    }

    #[test]
    fn ulong() {
        assert_eq!(parse_ulong(b"1\n"), Some(1));
        assert_eq!(parse_ulong(b"+42"), Some(42));
        assert_eq!(parse_ulong(b"0"), Some(0));
        assert_eq!(parse_ulong(b"18446744073709551615"), Some(u64::MAX));
        for bad in [
            &b""[..],
            b"\n",
            b"-1",
            b"1 ",
            b" 1",
            b"1\n\n",
            b"x",
            b"18446744073709551616",
        ] {
            assert_eq!(parse_ulong(bad), None, "{:?}", bad);
        }
    }

    #[test]
    fn splits() {
        let t = Token::split(b"foo:mod:ext4");
        assert_eq!(
            (t.func, t.command, t.param),
            (&b"foo"[..], Some(&b"mod"[..]), Some(&b"ext4"[..]))
        );
        let t = Token::split(b"f:enable_event:sched:sched_switch:2");
        assert_eq!(t.param, Some(&b"sched:sched_switch:2"[..]));
        let t = Token::split(b"plain");
        assert_eq!((t.command, t.param), (None, None));
        let t = Token::split(b"foo:");
        assert_eq!((t.command, t.param), (Some(&b""[..]), None));
        let t = Token::split(b"kernel::sync::*:traceoff:3");
        assert_eq!(
            (t.func, t.command, t.param),
            (
                &b"kernel::sync::*"[..],
                Some(&b"traceoff"[..]),
                Some(&b"3"[..])
            )
        );
        let t = Token::split(b"<a::B as c::D>::f");
        assert_eq!((t.func, t.command), (&b"<a::B as c::D>::f"[..], None));
        let t = Token::split(b":mod:ext4");
        assert_eq!(
            (t.func, t.command, t.param),
            (&b""[..], Some(&b"mod"[..]), Some(&b"ext4"[..]))
        );
    }

    #[test]
    fn rust_paths_keep_their_spaces() {
        let (toks, _) = feed(&[b"  <a::B  as\tc::D>::f x <fn() -> u8 as T>::g", b" y\n"]);
        assert_eq!(
            toks,
            [
                &b"<a::B as c::D>::f"[..],
                b"x",
                b"<fn() -> u8 as T>::g",
                b"y"
            ]
        );
        // Cut anywhere, the same.
        let text = b"<a::B as c::D>::f x";
        for cut in 1..text.len() {
            let (toks, _) = feed(&[&text[..cut], &text[cut..], b" "]);
            assert_eq!(toks, [&b"<a::B as c::D>::f"[..], b"x"], "cut at {cut}");
        }
    }

    proptest! {
        /// However the input is cut into writes, the tokens are the
        /// whitespace-separated words (when none is too long).
        #[test]
        fn cuts_do_not_matter(words in proptest::collection::vec("[a-z*!:]{1,12}", 0..8),
                              seps in proptest::collection::vec("[ \t\n]{1,3}", 8),
                              cuts in proptest::collection::vec(1usize..7, 0..20)) {
            let mut text = Vec::new();
            for (w, s) in words.iter().zip(seps.iter()) {
                text.extend_from_slice(w.as_bytes());
                text.extend_from_slice(s.as_bytes());
            }
            let mut writes: Vec<&[u8]> = Vec::new();
            let mut rest = &text[..];
            for c in cuts {
                if rest.is_empty() { break; }
                let n = c.min(rest.len());
                writes.push(&rest[..n]);
                rest = &rest[n..];
            }
            if !rest.is_empty() { writes.push(rest); }
            let (toks, rets) = feed(&writes);
            prop_assert!(rets.iter().all(|r| r.is_ok()));
            let want: Vec<Vec<u8>> = words.iter().map(|w| w.as_bytes().to_vec()).collect();
            prop_assert_eq!(toks, want);
        }

        #[test]
        fn never_panics(data in proptest::collection::vec(any::<u8>(), 0..1500), pos in 0u64..3) {
            let mut p = Parser::new();
            let _ = p.scan(&data, pos);
            let _ = Token::split(p.token());
        }
    }
}
