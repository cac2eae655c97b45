// SPDX-License-Identifier: GPL-2.0
//! Function-name patterns of the filter files (`set_ftrace_filter` and
//! friends), with the C core's semantics:
//!
//! - a leading `!` negates the pattern;
//! - a pattern that starts with a digit is an index into the list of call
//!   sites (1-based, in any base `kstrtoul` accepts);
//! - `*` alone at the start and/or the end makes a suffix, prefix or
//!   substring match;
//! - any other `*`, or a `?`, `[` or `\`, makes a full glob(7) match.

/// How a pattern matches a function name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The whole name.
    Full,
    /// `foo*`: names that start with the search text.
    Front,
    /// `*foo*`: names that contain it.
    Middle,
    /// `*foo`: names that end with it.
    End,
    /// A glob(7) pattern.
    Glob,
    /// The N-th call site, counted from 1.
    Index,
}

/// A parsed pattern; `search` borrows from the token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pattern<'a> {
    pub kind: Kind,
    pub search: &'a [u8],
    pub negated: bool,
}

impl<'a> Pattern<'a> {
    /// Parses one token of a filter file.
    pub fn parse(token: &'a [u8]) -> Self {
        let (negated, body) = match token.split_first() {
            Some((b'!', rest)) => (true, rest),
            _ => (false, token),
        };
        let pat = |kind, search| Pattern {
            kind,
            search,
            negated,
        };
        if body.first().is_some_and(u8::is_ascii_digit) {
            return pat(Kind::Index, body);
        }
        let mut kind = Kind::Full;
        let last = body.len().saturating_sub(1);
        for (i, &c) in body.iter().enumerate() {
            match c {
                b'*' if i == 0 => kind = Kind::End,
                b'*' if i == last => {
                    kind = if kind == Kind::End {
                        Kind::Middle
                    } else {
                        Kind::Front
                    };
                    let start = usize::from(body[0] == b'*');
                    // `**` leaves an empty search text, which every name
                    // contains.
                    return pat(kind, body.get(start..i).unwrap_or(&[]));
                }
                b'*' | b'?' | b'[' | b'\\' => return pat(Kind::Glob, body),
                _ => {}
            }
        }
        let start = usize::from(kind == Kind::End);
        pat(kind, body.get(start..).unwrap_or(&[]))
    }

    /// Whether `name` matches; always false for [`Kind::Index`], which
    /// selects by position, not by name. Negation is the caller's business.
    pub fn matches(&self, name: &[u8]) -> bool {
        let s = self.search;
        match self.kind {
            Kind::Full => name == s,
            Kind::Front => name.starts_with(s),
            Kind::End => name.ends_with(s),
            Kind::Middle => contains(name, s),
            Kind::Glob => glob_match(s, name),
            Kind::Index => false,
        }
    }

    /// For [`Kind::Index`]: the 0-based position it selects, or `None`
    /// when the number does not parse or is 0.
    pub fn index(&self) -> Option<usize> {
        if self.kind != Kind::Index {
            return None;
        }
        parse_ulong(self.search)?.checked_sub(1)?.try_into().ok()
    }
}

impl Pattern<'_> {
    /// Whether the pattern is written as a Rust path (`kernel::sync::*`,
    /// `<T as Trait>::f`): it holds `::` or starts with `<`, which no C
    /// symbol does.
    pub fn is_rust_path(&self) -> bool {
        self.search.first() == Some(&b'<') || contains(self.search, b"::")
    }

    /// Whether the symbol `name` matches: a Rust path pattern matches the
    /// path a mangled Rust name denotes (demangled into `scratch`; a name
    /// whose path does not fit does not match), and nothing else; any other
    /// pattern matches the name as kallsyms has it.
    pub fn matches_symbol(&self, name: &[u8], scratch: &mut [u8]) -> bool {
        if !self.is_rust_path() {
            return self.matches(name);
        }
        if !super::demangle::is_mangled(name) {
            return false;
        }
        match super::demangle::demangle(name, scratch) {
            Ok(n) => scratch.get(..n).is_some_and(|path| self.matches(path)),
            Err(_) => false,
        }
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w == needle)
}

/// Parses an unsigned number the way the kernel's `kstrtoul(s, 0, ...)`
/// does: `0x`/`0X` means hex, a leading `0` octal, else decimal; one
/// trailing newline is allowed; nothing else is.
pub fn parse_ulong(s: &[u8]) -> Option<u64> {
    let s = s.strip_suffix(b"\n").unwrap_or(s);
    let (radix, digits) = if let Some(h) = s.strip_prefix(b"0x").or_else(|| s.strip_prefix(b"0X")) {
        (16, h)
    } else if s.len() > 1 && s[0] == b'0' {
        (8, &s[1..])
    } else {
        (10, s)
    };
    if digits.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in digits {
        let d = char::from(c).to_digit(radix)?;
        v = v.checked_mul(u64::from(radix))?.checked_add(u64::from(d))?;
    }
    Some(v)
}

/// glob(7) matching as the kernel's `glob_match()` does it: `*` matches any
/// run of bytes (`/` included), `?` any one byte, `[...]` a class with
/// ranges and a leading `!` for negation (a `]` first in the class is
/// literal), `\` quotes the next byte. A malformed class matches its `[`
/// literally.
pub fn glob_match(pat: &[u8], s: &[u8]) -> bool {
    let (mut p, mut i) = (0usize, 0usize);
    // Where to resume after the last `*`: pattern position after it, and
    // the string position it has consumed up to.
    let mut star: Option<(usize, usize)> = None;
    loop {
        let c = s.get(i).copied();
        let step = match pat.get(p).copied() {
            None => {
                if c.is_none() {
                    return true;
                }
                None
            }
            Some(b'?') => c.map(|_| p + 1),
            Some(b'*') => {
                if p + 1 == pat.len() {
                    return true;
                }
                star = Some((p + 1, i));
                p += 1;
                continue;
            }
            Some(b'[') => match class(pat, p + 1) {
                Some((set, next)) => c.filter(|&c| set.contains(c)).map(|_| next),
                None => (c == Some(b'[')).then_some(p + 1),
            },
            Some(b'\\') => match pat.get(p + 1) {
                Some(&d) => (c == Some(d)).then_some(p + 2),
                // A trailing backslash only matches the end of the string,
                // like the NUL after it in C.
                None => {
                    if c.is_none() {
                        return true;
                    }
                    None
                }
            },
            Some(d) => (c == Some(d)).then_some(p + 1),
        };
        match step {
            Some(next) => {
                p = next;
                i += 1;
            }
            None => match star {
                Some((sp, si)) if si < s.len() => {
                    star = Some((sp, si + 1));
                    p = sp;
                    i = si + 1;
                }
                _ => return false,
            },
        }
    }
}

/// A parsed `[...]` class: the pattern text of its spans and whether it
/// is inverted.
struct Class<'a> {
    spans: &'a [u8],
    inverted: bool,
}

impl Class<'_> {
    fn contains(&self, c: u8) -> bool {
        let mut k = 0;
        let mut hit = false;
        while k < self.spans.len() {
            let a = self.spans[k];
            let mut b = a;
            if self.spans.get(k + 1) == Some(&b'-') && k + 2 < self.spans.len() {
                b = self.spans[k + 2];
                k += 3;
            } else {
                k += 1;
            }
            hit |= a <= c && c <= b;
        }
        hit != self.inverted
    }
}

/// Parses the class whose body starts at `pat[start]` (just after `[`).
/// Returns the class and the pattern position after its `]`, or `None`
/// when the class is malformed (no closing `]`, or a range to the end).
fn class(pat: &[u8], start: usize) -> Option<(Class<'_>, usize)> {
    let inverted = pat.get(start) == Some(&b'!');
    let body = start + usize::from(inverted);
    let mut k = body;
    loop {
        // The first span may begin with `]`.
        pat.get(k)?;
        if pat.get(k + 1) == Some(&b'-') && pat.get(k + 2).is_some_and(|&b| b != b']') {
            k += 3;
        } else {
            k += 1;
        }
        if pat.get(k)? == &b']' {
            return Some((
                Class {
                    spans: &pat[body..k],
                    inverted,
                },
                k + 1,
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(s: &str) -> (Kind, &[u8], bool) {
        let x = Pattern::parse(s.as_bytes());
        (x.kind, x.search, x.negated)
    }

    #[test]
    fn parse_kinds() {
        assert_eq!(p("schedule"), (Kind::Full, &b"schedule"[..], false));
        assert_eq!(p("sched*"), (Kind::Front, &b"sched"[..], false));
        assert_eq!(p("*lock"), (Kind::End, &b"lock"[..], false));
        assert_eq!(p("*lock*"), (Kind::Middle, &b"lock"[..], false));
        assert_eq!(p("!*lock*"), (Kind::Middle, &b"lock"[..], true));
        assert_eq!(p("*"), (Kind::End, &b""[..], false));
        assert_eq!(p("**"), (Kind::Middle, &b""[..], false));
        assert_eq!(p("a*b"), (Kind::Glob, &b"a*b"[..], false));
        assert_eq!(p("a*b*"), (Kind::Glob, &b"a*b*"[..], false));
        assert_eq!(p("*a*b"), (Kind::Glob, &b"*a*b"[..], false));
        assert_eq!(p("sys_?ead"), (Kind::Glob, &b"sys_?ead"[..], false));
        assert_eq!(p("[ab]x"), (Kind::Glob, &b"[ab]x"[..], false));
        assert_eq!(p("a\\b"), (Kind::Glob, &b"a\\b"[..], false));
        assert_eq!(p("12"), (Kind::Index, &b"12"[..], false));
        assert_eq!(p("!3"), (Kind::Index, &b"3"[..], true));
        assert_eq!(p(""), (Kind::Full, &b""[..], false));
        assert_eq!(p("!"), (Kind::Full, &b""[..], true));
    }

    #[test]
    fn matching() {
        let m = |pat: &str, name: &str| Pattern::parse(pat.as_bytes()).matches(name.as_bytes());
        assert!(m("schedule", "schedule"));
        assert!(!m("schedule", "schedule_idle"));
        assert!(m("sched*", "schedule_idle"));
        assert!(m("*idle", "schedule_idle"));
        assert!(m("*ule_i*", "schedule_idle"));
        assert!(m("*", "anything"));
        assert!(m("**", "anything"));
        assert!(m("s*e_*e", "schedule_idle"));
        assert!(!m("s*e_*x", "schedule_idle"));
        assert!(!m("12", "12"));
    }

    #[test]
    fn indexes() {
        let i = |s: &str| Pattern::parse(s.as_bytes()).index();
        assert_eq!(i("1"), Some(0));
        assert_eq!(i("10"), Some(9));
        assert_eq!(i("0x10"), Some(15));
        assert_eq!(i("010"), Some(7));
        assert_eq!(i("0"), None);
        assert_eq!(i("1a"), None);
        assert_eq!(i("09"), None);
        assert_eq!(i("99999999999999999999999"), None);
        assert_eq!(i("foo"), None);
    }

    #[test]
    fn globs() {
        let g = |p: &str, s: &str| glob_match(p.as_bytes(), s.as_bytes());
        assert!(g("a?c", "abc"));
        assert!(!g("a?c", "ac"));
        assert!(g("[a-c]x", "bx"));
        assert!(!g("[!a-c]x", "bx"));
        assert!(g("[!a-c]x", "dx"));
        assert!(g("[]]x", "]x"));
        assert!(g("[a-]x", "-x"));
        assert!(g("[a-]x", "ax"));
        assert!(g("a\\*b", "a*b"));
        assert!(!g("a\\*b", "axb"));
        assert!(g("[abc", "[abc"), "malformed class is literal");
        assert!(!g("[abc", "a"));
        assert!(g("*a*a*a*", "banana and a"));
        assert!(g("", ""));
        assert!(!g("", "a"));
        assert!(g("*", ""));
        assert!(g("a\\", "a"));
    }

    /// A direct, slow reference: recursive matching.
    fn reference(pat: &[u8], s: &[u8]) -> bool {
        match pat.first() {
            None => s.is_empty(),
            Some(b'*') => (0..=s.len()).any(|k| reference(&pat[1..], &s[k..])),
            Some(b'?') => !s.is_empty() && reference(&pat[1..], &s[1..]),
            Some(_) => !s.is_empty() && pat[0] == s[0] && reference(&pat[1..], &s[1..]),
        }
    }

    #[test]
    fn rust_paths_match_demangled_names() {
        let mut scratch = [0u8; 512];
        let init = b"_RNvXCsa_12rust_minimalNtB2_11RustMinimalNtCs1_6kernel6Module4init";
        let lock = b"_RNvMNtNtCs1_6kernel4sync4lockINtB2_4LockuE4lock";
        let free = b"_RNvNtCs1_6kernel5print11call_printk";
        let m = |p: &str, n: &[u8], s: &mut [u8]| Pattern::parse(p.as_bytes()).matches_symbol(n, s);
        assert!(m(
            "<rust_minimal::RustMinimal as kernel::Module>::init",
            init,
            &mut scratch
        ));
        assert!(m("*::init", init, &mut scratch));
        assert!(!m("*::init", lock, &mut scratch));
        assert!(m("kernel::print::*", free, &mut scratch));
        assert!(!m("kernel::print::*", lock, &mut scratch));
        assert!(m("<kernel::sync::*", lock, &mut scratch));
        assert!(m("*kernel::sync::lock::Lock<*>>::lock", lock, &mut scratch));
        // Not Rust paths: the mangled name as it is; and C names never
        // match a Rust path.
        assert!(m("_RNvNtCs1_6kernel5print*", free, &mut scratch));
        assert!(!m("*::*", b"vfs_read", &mut scratch));
        // A path that does not fit the scratch buffer does not match.
        assert!(!m("kernel::*", free, &mut scratch[..8]));
    }

    proptest! {
        #[test]
        fn glob_agrees_with_reference(pat in "[ab*?]{0,8}", s in "[ab]{0,10}") {
            prop_assert_eq!(glob_match(pat.as_bytes(), s.as_bytes()), reference(pat.as_bytes(), s.as_bytes()));
        }

        #[test]
        fn simple_kinds_agree_with_glob(pat in "\\*?[a-c_]{0,5}\\*?", name in "[a-c_]{0,12}") {
            // A pattern without inner wildcards means the same as a glob.
            let parsed = Pattern::parse(pat.as_bytes());
            prop_assert_ne!(parsed.kind, Kind::Glob);
            prop_assert_eq!(parsed.matches(name.as_bytes()), glob_match(pat.as_bytes(), name.as_bytes()));
        }

        #[test]
        fn never_panics(tok in proptest::collection::vec(any::<u8>(), 0..24), name in proptest::collection::vec(any::<u8>(), 0..24)) {
            let p = Pattern::parse(&tok);
            let _ = p.matches(&name);
            let _ = p.index();
            let _ = glob_match(&tok, &name);
        }
    }
}
