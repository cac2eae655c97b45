// SPDX-License-Identifier: GPL-2.0

//! The names of the kernel's own call sites (vmlinux; a module's are
//! looked up one by one), found in one pass over kallsyms beside the
//! sorted sites and kept: the listings and the filters then read a name
//! from memory instead of doing a kallsyms lookup per site (a binary
//! search, a walk to the name, its decompression).
//!
//! kallsyms gives its symbols in address order; a site's function is the
//! last symbol at or below it, the first of those at that address (as
//! `kallsyms_lookup()` picks). Built at the first listing, filter write or
//! lookup of symbols by name (fprobe, kprobe_multi); it takes the names'
//! bytes and 9 bytes a site (see [`Names`]). Checked against
//! `kallsyms_lookup()` on a sample of sites before it is used; without
//! memory for it, or should a check fail, names are looked up one by one
//! as before.

use crate::base::archdep::defs;
use crate::base::cells::Forever;
use crate::base::ffi::CStrArg;
use crate::base::tracefs::Out;
use core::fmt::Write;
use core::ptr;
use core::sync::atomic::{AtomicBool, Ordering};
use kernel::bindings;
use kernel::ffi::{c_char, c_int, c_ulong, c_void};
use kernel::kallsyms::SymbolBuf;
use kernel::prelude::*;

/// A function's symbol.
pub(crate) struct Sym<'a> {
    pub(crate) name: &'a [u8],
    pub(crate) offset: u64,
    pub(crate) module: Option<&'a [u8]>,
}

impl Sym<'_> {
    /// Whether the site looked up is its function's call site: no further
    /// into it than the architecture allows (`FTRACE_MCOUNT_MAX_OFFSET`,
    /// where it has one). A site further in belongs to no function (a weak
    /// function's leftover).
    pub(crate) fn is_entry(&self) -> bool {
        match defs::MCOUNT_MAX_OFFSET {
            Some(max) => self.offset <= max,
            None => true,
        }
    }
}

/// The symbol at `ip` as kallsyms gives it, its names in `buf`.
fn lookup_kallsyms(ip: u64, buf: &mut SymbolBuf) -> Option<Sym<'_>> {
    lookup_sized(ip, buf).map(|(sym, _)| sym)
}

/// The symbol at `ip` as kallsyms gives it, its names in `buf`, and the
/// symbol's size.
pub(crate) fn lookup_sized(ip: u64, buf: &mut SymbolBuf) -> Option<(Sym<'_>, u64)> {
    let s = kernel::kallsyms::lookup(ip as usize, buf)?;
    let sym = Sym {
        name: s.name,
        offset: s.offset as u64,
        module: s.module,
    };
    Some((sym, s.size as u64))
}

/// The address of the symbol whose name is `parts` one after the other
/// (`kallsyms_lookup_name()`: loaded modules included, `module:name`
/// too); none for no such symbol, a name longer than a symbol's, or one
/// with a NUL (which would name a shorter one).
pub(crate) fn address_of(parts: &[&[u8]]) -> Option<u64> {
    let name = crate::base::ffi::SymName::of(parts)?;
    kernel::kallsyms::address_of(name.as_cstr()?).map(|a| a as u64)
}

/// The symbol at `ip`, its name in `buf` (or in the kept names).
pub(crate) fn lookup(ip: u64, buf: &mut SymbolBuf) -> Option<Sym<'_>> {
    lookup_near(ip, buf, &mut 0)
}

/// [`lookup`] for a caller that asks in address order (see `name_near`).
pub(crate) fn lookup_near<'a>(
    ip: u64,
    buf: &'a mut SymbolBuf,
    near: &mut usize,
) -> Option<Sym<'a>> {
    match name_near(ip, near) {
        // Before the first symbol: no symbol.
        Some((b"", _)) => None,
        Some((name, offset)) => Some(Sym {
            name,
            offset,
            module: None,
        }),
        None => lookup_kallsyms(ip, buf),
    }
}

/// The names of the sites at `base + ips[i]` (ascending): site `i`'s
/// function is `pool[ends[i - 1]..ends[i]]` (from 0 for the first),
/// `offs[i]` bytes into it (255: that far or more).
///
/// Kept in vmalloc'd arrays of exactly their length (less than a page
/// beyond it) with 4-byte addresses: 9 bytes a site besides the names.
/// The walk fills growing arrays ([`Growing`]), which kvmalloc rounds up
/// to a power of two; [`Growing::exact`] copies them once it is done.
struct Names {
    base: u64,
    ips: VVec<u32>,
    ends: VVec<u32>,
    offs: VVec<u8>,
    pool: VVec<u8>,
}

/// [`Names`] while the walk fills its arrays.
struct Growing {
    /// The first site's address, which `ips` counts from.
    base: u64,
    ips: KVVec<u32>,
    ends: KVVec<u32>,
    offs: KVVec<u8>,
    pool: KVVec<u8>,
}

/// A copy of `v` in an array of its length.
fn copy_exact<T: Copy>(v: &[T]) -> Result<VVec<T>> {
    let mut e = VVec::with_capacity(v.len(), GFP_KERNEL)?;
    e.extend_from_slice(v, GFP_KERNEL)?;
    Ok(e)
}

impl Growing {
    /// The names in arrays of their length.
    fn exact(&self) -> Result<Names> {
        Ok(Names {
            base: self.base,
            ips: copy_exact(&self.ips)?,
            ends: copy_exact(&self.ends)?,
            offs: copy_exact(&self.offs)?,
            pool: copy_exact(&self.pool)?,
        })
    }
}

static NAMES: Forever<Names> = Forever::new();
static TRIED: AtomicBool = AtomicBool::new(false);

/// The name of the kernel's site `ip` and how far into its function it
/// is, once the names are kept. `near` is where the last name was found:
/// a caller that asks in address order (a listing) finds the next one
/// there without a search.
fn name_near(ip: u64, near: &mut usize) -> Option<(&'static [u8], u64)> {
    let n = NAMES.get()?;
    let rel = n.rel(ip)?;
    let i = match n.ips.get(*near) {
        Some(&a) if a == rel => *near,
        _ => n.ips.binary_search(&rel).ok()?,
    };
    *near = i + 1;
    n.at(i)
}

impl Names {
    /// `ip` as kept in `ips`; none for an address no kept site can have.
    fn rel(&self, ip: u64) -> Option<u32> {
        u32::try_from(ip.checked_sub(self.base)?).ok()
    }

    /// Site `i`'s address.
    fn ip(&self, i: usize) -> Option<u64> {
        self.base.checked_add(u64::from(*self.ips.get(i)?))
    }

    /// Site `i`'s function name and offset into it.
    fn at(&self, i: usize) -> Option<(&[u8], u64)> {
        let end = *self.ends.get(i)? as usize;
        let start = match i.checked_sub(1) {
            Some(j) => *self.ends.get(j)? as usize,
            None => 0,
        };
        Some((self.pool.get(start..end)?, u64::from(*self.offs.get(i)?)))
    }
}

/// Offers `stop` each kept name of a function with a site and the
/// function's address (the site's less its offset into it), in address
/// order, until it says yes; whether it did. `None` when the names are
/// not kept. A site 255 bytes or more into its function, or before the
/// first symbol, is left out (its function's address is not known here).
pub(crate) fn each_kept_function(mut stop: impl FnMut(&[u8], u64) -> bool) -> Option<bool> {
    let n = NAMES.get()?;
    for i in 0..n.ips.len() {
        let (Some(ip), Some((name, off))) = (n.ip(i), n.at(i)) else {
            continue;
        };
        if name.is_empty() || off >= u64::from(u8::MAX) {
            continue;
        }
        // `off` is the site's offset into its symbol: never above it.
        let Some(func) = ip.checked_sub(off) else {
            continue;
        };
        if stop(name, func) {
            return Some(true);
        }
    }
    Some(false)
}

/// Builds the names unless that was tried (sleeps; no lock of the core
/// may be held: the walk takes a while).
pub(crate) fn prepare() {
    if TRIED.swap(true, Ordering::AcqRel) {
        return;
    }
    match build() {
        Ok(n) if check(&n) => {
            if let Ok(b) = KBox::new(n, GFP_KERNEL) {
                NAMES.publish(b);
            }
        }
        Ok(_) => pr_warn!("site names differ from kallsyms; looking them up one by one\n"),
        Err(_) => {}
    }
}

/// The walk's state.
struct Walk<'a> {
    sites: &'a [u64],
    /// The next site to name.
    next: usize,
    /// The symbol the sites from here on are in: its address and the
    /// length of its name in `name`.
    cur: Option<(u64, usize)>,
    name: [u8; bindings::KSYM_NAME_LEN as usize],
    n: &'a mut Growing,
    failed: bool,
}

impl Walk<'_> {
    /// Names the sites below `below` after the current symbol.
    fn flush(&mut self, below: u64) {
        while let Some(&ip) = self.sites.get(self.next) {
            if ip >= below {
                break;
            }
            let (name, off): (&[u8], u64) = match self.cur {
                Some((a, len)) if ip >= a => (&self.name[..len], ip - a),
                // Before the first symbol: no name (the lookup fails too).
                _ => (&[], u64::MAX),
            };
            let ok = ip
                .checked_sub(self.n.base)
                .and_then(|r| u32::try_from(r).ok())
                .is_some_and(|r| self.n.ips.push(r, GFP_KERNEL).is_ok())
                && self.n.pool.extend_from_slice(name, GFP_KERNEL).is_ok()
                && u32::try_from(self.n.pool.len())
                    .ok()
                    .is_some_and(|e| self.n.ends.push(e, GFP_KERNEL).is_ok())
                && self
                    .n
                    .offs
                    .push(u8::try_from(off).unwrap_or(u8::MAX), GFP_KERNEL)
                    .is_ok();
            if !ok {
                self.failed = true;
                return;
            }
            self.next += 1;
        }
    }

    /// One kallsyms symbol; false stops the walk.
    fn offer(&mut self, name: &[u8], addr: u64) -> bool {
        match self.cur {
            // An alias of the current symbol: the first one stays.
            Some((a, _)) if addr == a => return true,
            // Out of order: kallsyms is not what this walk expects.
            Some((a, _)) if addr < a => {
                self.failed = true;
                return false;
            }
            _ => {}
        }
        self.flush(addr);
        let len = name.len().min(self.name.len());
        self.name[..len].copy_from_slice(&name[..len]);
        self.cur = Some((addr, len));
        !self.failed && self.next < self.sites.len()
    }
}

/// Offers `stop` the name and address of each symbol of the kernel (then
/// of the modules, with `modules`), in kallsyms' order, until it says
/// yes; whether it did. Sleeps.
pub(crate) fn each_symbol<F: FnMut(&[u8], u64) -> bool>(modules: bool, mut stop: F) -> bool {
    /// # Safety
    ///
    /// Called by the kallsyms walks below with their `data`, the `F`, and
    /// a symbol name.
    unsafe extern "C" fn offer<F: FnMut(&[u8], u64) -> bool>(
        data: *mut c_void,
        name: *const c_char,
        addr: c_ulong,
    ) -> c_int {
        // SAFETY: `data` is the `F` that `each_symbol` passes, which nothing
        // else uses during the walk; kallsyms passes a NUL-terminated name
        // that lives through the call.
        let (f, name) = unsafe { (&mut *data.cast::<F>(), CStrArg::from_raw(name)) };
        c_int::from(f(name.bytes(), addr as u64))
    }
    let data = ptr::from_mut(&mut stop).cast::<c_void>();
    // SAFETY: `offer::<F>` has the callback type and reads `data` as the
    // `F` it is, which outlives both walks.
    unsafe {
        bindings::kallsyms_on_each_symbol(Some(offer::<F>), data) != 0
            || (modules
                && bindings::module_kallsyms_on_each_symbol(ptr::null(), Some(offer::<F>), data)
                    != 0)
    }
}

fn build() -> Result<Names> {
    let mut sites = KVVec::<u64>::new();
    if let Some(g) = crate::sites::table::core_group() {
        sites.reserve(g.live_len(), GFP_KERNEL)?;
        for c in g.live() {
            sites.push(c.ip(), GFP_KERNEL)?;
        }
    }
    let k = sites.len();
    let mut n = Growing {
        // The sites ascend: the first is the lowest.
        base: sites.first().copied().unwrap_or(0),
        ips: KVVec::with_capacity(k, GFP_KERNEL)?,
        ends: KVVec::with_capacity(k, GFP_KERNEL)?,
        offs: KVVec::with_capacity(k, GFP_KERNEL)?,
        pool: KVVec::with_capacity(k.saturating_mul(24), GFP_KERNEL)?,
    };
    let mut w = Walk {
        sites: &sites,
        next: 0,
        cur: None,
        name: [0; bindings::KSYM_NAME_LEN as usize],
        n: &mut n,
        failed: false,
    };
    each_symbol(false, |name, addr| !w.offer(name, addr));
    if !w.failed {
        w.flush(u64::MAX);
    }
    if w.failed || w.next != k {
        return Err(ENOMEM);
    }
    n.exact()
}

/// Whether the names agree with `kallsyms_lookup()` on every 64th site
/// and the last.
fn check(n: &Names) -> bool {
    let mut buf = kernel::kallsyms::SymbolBuf::new();
    let last = n.ips.len().saturating_sub(1);
    (0..n.ips.len())
        .filter(|&i| i % 64 == 0 || i == last)
        .all(|i| {
            let (Some(ip), Some((name, off))) = (n.ip(i), n.at(i)) else {
                return false;
            };
            match lookup_kallsyms(ip, &mut buf) {
                Some(s) if s.module.is_none() => {
                    name == s.name && (off == s.offset || (off == 255 && s.offset >= 255))
                }
                _ => name.is_empty(),
            }
        })
}

/// The path of the Rust function named `name` (kallsyms' name) for the
/// tracers' output (the `rust-demangle` trace option), written into `out`
/// with a NUL after it. Returns the path's length; 0 when `name` is no
/// Rust symbol; -EINVAL for a malformed one, -E2BIG for one that nests
/// deeper or refers back more often than the demangler follows, -ERANGE
/// when the path and its NUL do not fit `out`. It only computes (no
/// allocation, lock or sleep; the demangler's limits bound its stack and
/// time), so trace output may call it with preemption or interrupts off.
pub(crate) fn demangled(name: &[u8], out: &mut [u8]) -> c_int {
    use crate::logic::demangle::{demangle_cstr, Error};
    use kernel::error::code::{E2BIG, EINVAL, ERANGE};
    match demangle_cstr(name, out) {
        None => 0,
        Some(Ok(n)) => c_int::try_from(n).unwrap_or_else(|_| ERANGE.to_errno()),
        Some(Err(Error::Invalid)) => EINVAL.to_errno(),
        Some(Err(Error::TooComplex)) => E2BIG.to_errno(),
        Some(Err(Error::Full)) => ERANGE.to_errno(),
    }
}

impl Out {
    /// `print_rec()`: the site's function name and module; false for an
    /// invalid site (the name then says so).
    pub(crate) fn rec(&mut self, ip: u64) -> bool {
        let mut b = kernel::kallsyms::SymbolBuf::new();
        match lookup_near(ip, &mut b, &mut self.near) {
            Some(s) if s.is_entry() => {
                self.bytes(s.name);
                if let Some(m) = s.module {
                    self.bytes(b" [");
                    self.bytes(m);
                    self.bytes(b"]");
                }
                true
            }
            s => {
                let off = s.map_or(0, |s| s.offset as i64);
                let _ = write!(self, "__ftrace_invalid_address___{}", off);
                false
            }
        }
    }
}
