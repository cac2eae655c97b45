// SPDX-License-Identifier: GPL-2.0
//! Rust symbol names (the v0 mangling the kernel builds with,
//! `-Csymbol-mangling-version=v0`) turned back into paths, so a filter
//! file can take `kernel::sync::*` or
//! `<rust_minimal::RustMinimal as kernel::Module>::init` and match the
//! mangled names kallsyms holds, and the tracers' output can print the
//! paths (the `rust-demangle` trace option, [`demangle_cstr`]).
//!
//! The text is what `rustc-demangle` prints in its alternate form (and
//! binutils' `c++filt` without the crate hashes): no crate disambiguators,
//! `<T as Trait>::f` for trait methods, `<T>::f` for inherent ones,
//! `path::<A, B>` for generic functions, `{closure#0}` for closures.
//! Lifetimes are left out. The instantiating crate and a vendor suffix
//! (`.llvm.123`) are not printed.
//!
//! The output goes into a caller's buffer ([`demangle`]); nothing
//! allocates, and nesting (which backreferences can make deep) is bounded
//! by [`MAX_DEPTH`], so a hostile name costs bounded stack and time.

/// How deep paths and types may nest before the name is refused.
pub const MAX_DEPTH: u32 = 48;
/// How many backreferences one name may follow before it is refused (a
/// backreference may point at an earlier one, so a short name can
/// otherwise expand exponentially).
pub const MAX_BACKREFS: u32 = 512;

/// Why a name was not demangled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// Not a v0 Rust symbol, or malformed.
    Invalid,
    /// Nested deeper than [`MAX_DEPTH`] or too many backreferences.
    TooComplex,
    /// The text does not fit the buffer.
    Full,
}

type Result<T = ()> = core::result::Result<T, Error>;

/// Whether `name` is a v0-mangled Rust symbol (`_R` and an uppercase
/// letter or a digit).
pub fn is_mangled(name: &[u8]) -> bool {
    name.len() > 2
        && name.starts_with(b"_R")
        && (name[2].is_ascii_uppercase() || name[2].is_ascii_digit())
}

/// Writes the path `name` denotes into `buf` and returns its length.
pub fn demangle(name: &[u8], buf: &mut [u8]) -> Result<usize> {
    let inner = name.strip_prefix(b"_R").ok_or(Error::Invalid)?;
    let mut d = Demangler {
        sym: inner,
        pos: 0,
        out: buf,
        len: 0,
        quiet: 0,
        depth: 0,
        backrefs: 0,
    };
    // An encoding version; only the first (none written) exists.
    if d.peek().is_some_and(|c| c.is_ascii_digit()) {
        return Err(Error::Invalid);
    }
    d.path(true)?;
    Ok(d.len)
}

/// [`demangle`] for a C caller that prints the path in place of the name
/// (the tracers' output): the path in `buf` with a NUL after it, and its
/// length without the NUL. `None` when `name` is not a Rust symbol at all
/// (the caller prints it as it is); an empty path is [`Error::Invalid`],
/// one that does not fit with its NUL [`Error::Full`].
pub fn demangle_cstr(name: &[u8], buf: &mut [u8]) -> Option<Result<usize>> {
    if !is_mangled(name) {
        return None;
    }
    let Some((_, room)) = buf.split_last_mut() else {
        return Some(Err(Error::Full));
    };
    let r = match demangle(name, room) {
        Ok(0) => Err(Error::Invalid),
        Ok(n) => match buf.get_mut(n) {
            // `n` is at most `room.len()`, so this is the byte after the
            // path, at worst the one left out of `room`.
            Some(nul) => {
                *nul = 0;
                Ok(n)
            }
            None => Err(Error::Full),
        },
        Err(e) => Err(e),
    };
    Some(r)
}

struct Demangler<'s, 'b> {
    sym: &'s [u8],
    pos: usize,
    out: &'b mut [u8],
    len: usize,
    /// Nonzero while parsing what is not printed (an impl's path).
    quiet: u32,
    depth: u32,
    backrefs: u32,
}

const BASIC: [(u8, &str); 22] = [
    (b'a', "i8"),
    (b'b', "bool"),
    (b'c', "char"),
    (b'd', "f64"),
    (b'e', "str"),
    (b'f', "f32"),
    (b'h', "u8"),
    (b'i', "isize"),
    (b'j', "usize"),
    (b'l', "i32"),
    (b'm', "u32"),
    (b'n', "i128"),
    (b'o', "u128"),
    (b's', "i16"),
    (b't', "u16"),
    (b'u', "()"),
    (b'v', "..."),
    (b'x', "i64"),
    (b'y', "u64"),
    (b'z', "!"),
    (b'p', "_"),
    (b'q', "f128"),
];

fn basic(c: u8) -> Option<&'static str> {
    BASIC.iter().find(|(k, _)| *k == c).map(|(_, s)| *s)
}

impl Demangler<'_, '_> {
    fn peek(&self) -> Option<u8> {
        self.sym.get(self.pos).copied()
    }

    fn next(&mut self) -> Result<u8> {
        let c = self.peek().ok_or(Error::Invalid)?;
        self.pos += 1;
        Ok(c)
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        if hit {
            self.pos += 1;
        }
        hit
    }

    fn put(&mut self, s: &[u8]) -> Result {
        if self.quiet > 0 {
            return Ok(());
        }
        let end = self.len.checked_add(s.len()).ok_or(Error::Full)?;
        self.out
            .get_mut(self.len..end)
            .ok_or(Error::Full)?
            .copy_from_slice(s);
        self.len = end;
        Ok(())
    }

    fn put_str(&mut self, s: &str) -> Result {
        self.put(s.as_bytes())
    }

    fn put_num(&mut self, mut v: u64) -> Result {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.put(&digits[i..])
    }

    fn enter(&mut self) -> Result {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::TooComplex);
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Digits up to a `_`, in `base`, each read by `digit`.
    fn digits(&mut self, base: u64, digit: fn(u8) -> Option<u8>) -> Result<u64> {
        let mut v: u64 = 0;
        loop {
            let c = self.next()?;
            if c == b'_' {
                return Ok(v);
            }
            let d = digit(c).ok_or(Error::Invalid)?;
            v = v
                .checked_mul(base)
                .and_then(|v| v.checked_add(u64::from(d)))
                .ok_or(Error::Invalid)?;
        }
    }

    /// `{0-9a-zA-Z} _`: `_` alone is 0, digits `d` are `d + 1`.
    fn base62(&mut self) -> Result<u64> {
        if self.eat(b'_') {
            return Ok(0);
        }
        let v = self.digits(62, |c| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'z' => Some(c - b'a' + 10),
            b'A'..=b'Z' => Some(c - b'A' + 36),
            _ => None,
        })?;
        v.checked_add(1).ok_or(Error::Invalid)
    }

    /// `[tag base62]`: 0 when absent, else the number plus one.
    fn opt_base62(&mut self, tag: u8) -> Result<u64> {
        if !self.eat(tag) {
            return Ok(0);
        }
        self.base62()?.checked_add(1).ok_or(Error::Invalid)
    }

    fn decimal(&mut self) -> Result<usize> {
        let first = self.next()?;
        if !first.is_ascii_digit() {
            return Err(Error::Invalid);
        }
        if first == b'0' {
            return Ok(0);
        }
        let mut v = usize::from(first - b'0');
        while let Some(c) = self.peek().filter(u8::is_ascii_digit) {
            self.pos += 1;
            v = v
                .checked_mul(10)
                .and_then(|v| v.checked_add(usize::from(c - b'0')))
                .ok_or(Error::Invalid)?;
        }
        Ok(v)
    }

    /// `["u"] decimal ["_"] bytes`; a Punycode name is returned encoded.
    fn raw_ident(&mut self) -> Result<&[u8]> {
        self.eat(b'u');
        let n = self.decimal()?;
        self.eat(b'_');
        let end = self.pos.checked_add(n).ok_or(Error::Invalid)?;
        let bytes = self.sym.get(self.pos..end).ok_or(Error::Invalid)?;
        self.pos = end;
        Ok(bytes)
    }

    /// A disambiguator and an identifier.
    fn ident(&mut self) -> Result<(u64, core::ops::Range<usize>)> {
        let dis = self.opt_base62(b's')?;
        let len = self.raw_ident()?.len();
        Ok((dis, self.pos - len..self.pos))
    }

    /// Follows a backreference: runs `f` at the position it names (which
    /// must be earlier than the reference), then comes back.
    fn backref(&mut self, f: impl FnOnce(&mut Self) -> Result) -> Result {
        let at = self.pos - 1;
        let target = usize::try_from(self.base62()?).map_err(|_| Error::Invalid)?;
        if target >= at {
            return Err(Error::Invalid);
        }
        self.backrefs += 1;
        if self.backrefs > MAX_BACKREFS {
            return Err(Error::TooComplex);
        }
        let back = self.pos;
        self.pos = target;
        let r = f(self);
        self.pos = back;
        r
    }

    fn path(&mut self, in_value: bool) -> Result {
        self.enter()?;
        let r = self.path_inner(in_value);
        self.leave();
        r
    }

    fn path_inner(&mut self, in_value: bool) -> Result {
        match self.next()? {
            b'C' => {
                let (_, name) = self.ident()?;
                self.put_range(name)
            }
            b'N' => {
                let ns = self.next()?;
                if !ns.is_ascii_alphabetic() {
                    return Err(Error::Invalid);
                }
                self.path(in_value)?;
                let (dis, name) = self.ident()?;
                if ns.is_ascii_lowercase() {
                    if !name.is_empty() {
                        self.put(b"::")?;
                        self.put_range(name)?;
                    }
                    return Ok(());
                }
                self.put(b"::{")?;
                match ns {
                    b'C' => self.put(b"closure")?,
                    b'S' => self.put(b"shim")?,
                    c => self.put(&[c])?,
                }
                if !name.is_empty() {
                    self.put(b":")?;
                    self.put_range(name)?;
                }
                self.put(b"#")?;
                self.put_num(dis)?;
                self.put(b"}")
            }
            b'M' => {
                self.impl_path()?;
                self.put(b"<")?;
                self.ty()?;
                self.put(b">")
            }
            b'X' => {
                self.impl_path()?;
                self.trait_impl()
            }
            b'Y' => self.trait_impl(),
            b'I' => {
                self.path(in_value)?;
                if in_value {
                    self.put(b"::")?;
                }
                self.generic_args()
            }
            b'B' => self.backref(|d| d.path(in_value)),
            _ => Err(Error::Invalid),
        }
    }

    fn put_range(&mut self, r: core::ops::Range<usize>) -> Result {
        if self.quiet > 0 {
            return Ok(());
        }
        let sym = self.sym;
        self.put(sym.get(r).ok_or(Error::Invalid)?)
    }

    /// `<T as Trait>`.
    fn trait_impl(&mut self) -> Result {
        self.put(b"<")?;
        self.ty()?;
        self.put(b" as ")?;
        self.path(false)?;
        self.put(b">")
    }

    /// An impl's own path (a disambiguator and where the impl block is),
    /// which the text leaves out.
    fn impl_path(&mut self) -> Result {
        self.opt_base62(b's')?;
        self.quiet += 1;
        let r = self.path(false);
        self.quiet -= 1;
        r
    }

    /// `{generic-arg} E` as `<A, B>`; lifetimes are skipped.
    fn generic_args(&mut self) -> Result {
        self.put(b"<")?;
        let mut first = true;
        while !self.eat(b'E') {
            if self.eat(b'L') {
                self.base62()?;
                continue;
            }
            if !first {
                self.put(b", ")?;
            }
            first = false;
            if self.eat(b'K') {
                self.konst()?;
            } else {
                self.ty()?;
            }
        }
        self.put(b">")
    }

    fn ty(&mut self) -> Result {
        self.enter()?;
        let r = self.ty_inner();
        self.leave();
        r
    }

    fn ty_inner(&mut self) -> Result {
        let c = self.peek().ok_or(Error::Invalid)?;
        if let Some(name) = basic(c) {
            self.pos += 1;
            return self.put_str(name);
        }
        self.pos += 1;
        match c {
            b'R' | b'Q' => {
                if self.eat(b'L') {
                    self.base62()?;
                }
                self.put(if c == b'R' { b"&" } else { b"&mut " })?;
                self.ty()
            }
            b'P' | b'O' => {
                self.put(if c == b'P' { b"*const " } else { b"*mut " })?;
                self.ty()
            }
            b'A' | b'S' => {
                self.put(b"[")?;
                self.ty()?;
                if c == b'A' {
                    self.put(b"; ")?;
                    self.konst()?;
                }
                self.put(b"]")
            }
            b'T' => {
                self.put(b"(")?;
                let n = self.list(b", ", Self::ty)?;
                if n == 1 {
                    self.put(b",")?;
                }
                self.put(b")")
            }
            b'F' => self.fn_sig(),
            b'D' => self.dyn_bounds(),
            b'B' => self.backref(|d| d.ty()),
            b'C' | b'N' | b'M' | b'X' | b'Y' | b'I' => {
                self.pos -= 1;
                self.path(false)
            }
            _ => Err(Error::Invalid),
        }
    }

    /// Items up to an `E`, each printed by `item`, `sep` between them;
    /// how many there were.
    fn list(&mut self, sep: &[u8], mut item: impl FnMut(&mut Self) -> Result) -> Result<usize> {
        let mut n = 0;
        while !self.eat(b'E') {
            if n > 0 {
                self.put(sep)?;
            }
            item(self)?;
            n += 1;
        }
        Ok(n)
    }

    /// `[binder] ["U"] ["K" abi] {type} "E" type`.
    fn fn_sig(&mut self) -> Result {
        self.opt_base62(b'G')?;
        if self.eat(b'U') {
            self.put(b"unsafe ")?;
        }
        if self.eat(b'K') {
            self.put(b"extern \"")?;
            if self.eat(b'C') {
                self.put(b"C")?;
            } else {
                let name = self.raw_ident()?;
                let mut abi = [0u8; 32];
                let part = abi.get_mut(..name.len()).ok_or(Error::Invalid)?;
                for (o, &b) in part.iter_mut().zip(name) {
                    *o = if b == b'_' { b'-' } else { b };
                }
                let n = name.len();
                self.put(&abi[..n])?;
            }
            self.put(b"\" ")?;
        }
        self.put(b"fn(")?;
        self.list(b", ", Self::ty)?;
        self.put(b")")?;
        if self.eat(b'u') {
            return Ok(());
        }
        self.put(b" -> ")?;
        self.ty()
    }

    /// `[binder] {path {"p" ident type}} "E" lifetime`.
    fn dyn_bounds(&mut self) -> Result {
        self.opt_base62(b'G')?;
        self.put(b"dyn ")?;
        self.list(b" + ", |d| {
            d.path(false)?;
            let mut bound = false;
            while d.eat(b'p') {
                d.put(if bound { b", " } else { b"<" })?;
                bound = true;
                let name = d.raw_ident()?.len();
                let r = d.pos - name..d.pos;
                d.put_range(r)?;
                d.put(b" = ")?;
                d.ty()?;
            }
            if bound {
                d.put(b">")?;
            }
            Ok(())
        })?;
        if !self.eat(b'L') {
            return Err(Error::Invalid);
        }
        self.base62()?;
        Ok(())
    }

    /// A constant generic argument: a placeholder, a backreference, or a
    /// type and its value in hex.
    fn konst(&mut self) -> Result {
        self.enter()?;
        let r = self.konst_inner();
        self.leave();
        r
    }

    fn konst_inner(&mut self) -> Result {
        if self.eat(b'p') {
            return self.put(b"_");
        }
        if self.eat(b'B') {
            return self.backref(|d| d.konst());
        }
        let ty = self.next()?;
        let negative = self.eat(b'n');
        let v = self.digits(16, |c| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        })?;
        match ty {
            b'h' | b't' | b'm' | b'y' | b'o' | b'j' | b'a' | b's' | b'l' | b'x' | b'n' | b'i' => {
                if negative {
                    self.put(b"-")?;
                }
                self.put_num(v)
            }
            b'b' if !negative && v <= 1 => self.put(if v == 1 { b"true" } else { b"false" }),
            b'c' if !negative => match u32::try_from(v).ok().and_then(char::from_u32) {
                Some(ch) if ch.is_ascii_graphic() || ch == ' ' => {
                    self.put(b"'")?;
                    self.put(&[ch as u8])?;
                    self.put(b"'")
                }
                Some(_) => {
                    self.put(b"'\\u{")?;
                    self.put_num(v)?;
                    self.put(b"}'")
                }
                None => Err(Error::Invalid),
            },
            _ => Err(Error::Invalid),
        }
    }
}

#[cfg(test)]
#[path = "demangle_tests.rs"]
mod tests;
