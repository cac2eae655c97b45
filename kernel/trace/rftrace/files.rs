// SPDX-License-Identifier: GPL-2.0

//! The read-only tracefs files of the core (available_filter_functions,
//! available_filter_functions_addrs, enabled_functions,
//! touched_functions), and what every file of the core shares: a text
//! built at the start of a read and served from memory, and the symbol
//! names of call sites.

use crate::logic::sites::flags as sf;
use crate::ops;
use crate::table;
use crate::{dead, CGlobal, Guard, ENODEV, ENOMEM};
use core::fmt::Write;
use core::ptr;
use kernel::bindings;
use kernel::c_str;
use kernel::ffi::{c_char, c_int, c_ulong, c_void};
use kernel::prelude::*;

/// A text being built; writes fail once memory ran out.
pub(crate) struct Out {
    pub(crate) buf: KVVec<u8>,
    failed: bool,
}

impl Out {
    pub(crate) fn new() -> Self {
        Out {
            buf: KVVec::new(),
            failed: false,
        }
    }

    pub(crate) fn bytes(&mut self, b: &[u8]) {
        if self.failed {
            return;
        }
        if self.buf.extend_from_slice(b, GFP_KERNEL).is_err() {
            self.failed = true;
        }
    }

    /// `%ps` (`%pS` with `offset`) of `a`.
    pub(crate) fn sym(&mut self, a: u64, offset: bool) {
        // KSYM_SYMBOL_LEN (a macro bindgen cannot see) is below 1024.
        let mut b = [0u8; 1024];
        // SAFETY: the buffer has the size the kallsyms printers need.
        let n = unsafe {
            if offset {
                bindings::sprint_symbol(b.as_mut_ptr().cast(), a as c_ulong)
            } else {
                bindings::sprint_symbol_no_offset(b.as_mut_ptr().cast(), a as c_ulong)
            }
        };
        let n = (n.max(0) as usize).min(b.len());
        self.bytes(&b[..n]);
    }

    /// `print_rec()`: the site's function name and module; false for an
    /// invalid site (the name then says so).
    pub(crate) fn rec(&mut self, ip: u64) -> bool {
        let mut b = [0u8; bindings::KSYM_NAME_LEN as usize];
        match lookup(ip, &mut b) {
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

    pub(crate) fn ok(&self) -> bool {
        !self.failed
    }
}

impl Write for Out {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        self.bytes(s.as_bytes());
        if self.failed {
            Err(core::fmt::Error)
        } else {
            Ok(())
        }
    }
}

/// A function's symbol.
pub(crate) struct Sym<'a> {
    pub(crate) name: &'a [u8],
    pub(crate) offset: u64,
    pub(crate) module: Option<&'a [u8]>,
}

/// How far into its function a call site may be: after the `endbr64`
/// (4 bytes) with IBT, else at the entry (`FTRACE_MCOUNT_MAX_OFFSET`).
/// A site further in belongs to no function (a weak function's leftover).
const MCOUNT_MAX_OFFSET: u64 = if cfg!(CONFIG_X86_KERNEL_IBT) { 4 } else { 0 };

impl Sym<'_> {
    /// Whether the site looked up is its function's call site.
    // Without IBT the bound is 0 and the comparison an equality.
    #[allow(clippy::absurd_extreme_comparisons)]
    pub(crate) fn is_entry(&self) -> bool {
        self.offset <= MCOUNT_MAX_OFFSET
    }
}

fn cstr<'a>(p: *const c_char) -> &'a [u8] {
    // SAFETY: callers pass NUL-terminated strings that outlive the use.
    unsafe { CStr::from_char_ptr(p) }.as_bytes()
}

/// The symbol at `ip`, its name in `buf`.
pub(crate) fn lookup(ip: u64, buf: &mut [u8; bindings::KSYM_NAME_LEN as usize]) -> Option<Sym<'_>> {
    let (mut size, mut off): (c_ulong, c_ulong) = (0, 0);
    let mut module: *mut c_char = ptr::null_mut();
    // SAFETY: the buffer is KSYM_NAME_LEN bytes, as kallsyms needs.
    let r = unsafe {
        bindings::kallsyms_lookup(
            ip as c_ulong,
            &mut size,
            &mut off,
            &mut module,
            buf.as_mut_ptr().cast(),
        )
    };
    if r.is_null() {
        return None;
    }
    Some(Sym {
        name: cstr(buf.as_ptr().cast()),
        offset: off as u64,
        // The module name lives in the module, which the caller keeps
        // alive (it holds `ftrace_lock`, which module removal takes).
        module: (!module.is_null()).then(|| cstr(module)),
    })
}

/// What a read-only file of ours lists.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Avail,
    AvailAddrs,
    Enabled,
    Touched,
}

/// The per-open state of every file of the core: the text served, and
/// whatever the file needs besides (a filter file's edit state).
pub(crate) struct Text {
    pub(crate) out: Option<KVVec<u8>>,
}

/// Serves `text` (built by `build` when a read starts at offset 0).
///
/// # Safety
///
/// `ubuf` is a user buffer of `cnt` bytes, `ppos` valid.
pub(crate) unsafe fn serve(
    text: &mut Text,
    ubuf: *mut c_char,
    cnt: usize,
    ppos: *mut bindings::loff_t,
    build: impl FnOnce(&mut Out),
) -> isize {
    // SAFETY: per the function's contract.
    if unsafe { *ppos } == 0 || text.out.is_none() {
        let mut o = Out::new();
        build(&mut o);
        if !o.ok() {
            return ENOMEM as isize;
        }
        text.out = Some(o.buf);
    }
    let Some(b) = text.out.as_ref() else {
        return 0;
    };
    // SAFETY: per the function's contract; the source is our buffer.
    unsafe { bindings::simple_read_from_buffer(ubuf.cast(), cnt, ppos, b.as_ptr().cast(), b.len()) }
}

/// A text served through a seq_file line by line, so that any read size
/// gives the same bytes (files that the tracing core reads with
/// `seq_read`, such as stack_trace_filter).
pub(crate) struct Lines {
    out: Option<KVVec<u8>>,
    /// Start of each line, and the end of the text last.
    starts: KVVec<usize>,
}

impl Lines {
    pub(crate) const fn new() -> Self {
        Lines {
            out: None,
            starts: KVVec::new(),
        }
    }

    /// Builds the text (at the start of a read from offset 0) and returns
    /// the seq_file element for line `pos`, or null past the end.
    pub(crate) fn start(&mut self, pos: i64, build: impl FnOnce(&mut Out)) -> *mut c_void {
        if pos == 0 || self.out.is_none() {
            let mut o = Out::new();
            build(&mut o);
            let mut starts = KVVec::new();
            let mut ok = o.ok() && starts.push(0, GFP_KERNEL).is_ok();
            for (i, &b) in o.buf.iter().enumerate() {
                if !ok {
                    break;
                }
                if b == b'\n' {
                    ok = starts.push(i + 1, GFP_KERNEL).is_ok();
                }
            }
            if ok && starts.last() != Some(&o.buf.len()) {
                ok = starts.push(o.buf.len(), GFP_KERNEL).is_ok();
            }
            if !ok {
                self.out = None;
                return ptr::null_mut();
            }
            self.out = Some(o.buf);
            self.starts = starts;
        }
        self.at(pos)
    }

    /// The element for line `pos`, or null.
    pub(crate) fn at(&self, pos: i64) -> *mut c_void {
        let n = self.starts.len().saturating_sub(1);
        match usize::try_from(pos) {
            Ok(p) if p < n => (p + 1) as *mut c_void,
            _ => ptr::null_mut(),
        }
    }

    /// Writes line `v` (an element from `start`/`at`) to `m`.
    ///
    /// # Safety
    ///
    /// `m` is a live seq_file.
    pub(crate) unsafe fn show(&self, m: *mut bindings::seq_file, v: *mut c_void) {
        let i = (v as usize).wrapping_sub(1);
        let (Some(out), Some(&a), Some(&b)) = (
            self.out.as_ref(),
            self.starts.get(i),
            self.starts.get(i + 1),
        ) else {
            return;
        };
        if let Some(line) = out.get(a..b) {
            // SAFETY: per the function's contract; the bytes are ours.
            unsafe { bindings::seq_write(m, line.as_ptr().cast(), line.len()) };
        }
    }
}

fn render(kind: Kind, o: &mut Out) {
    let _g = Guard::lock();
    if dead() {
        return;
    }
    for c in table::all() {
        // SAFETY: `ftrace_lock` is held.
        let s = unsafe { c.read() };
        match kind {
            Kind::Enabled if !s.has(sf::ENABLED) => continue,
            Kind::Touched if !s.has(sf::TOUCHED) => continue,
            _ => {}
        }
        if kind == Kind::AvailAddrs {
            let _ = write!(o, "{:x} ", s.ip);
        }
        let valid = o.rec(s.ip);
        if valid && matches!(kind, Kind::Enabled | Kind::Touched) {
            let f = |b, t: &'static str, e: &'static str| if s.has(b) { t } else { e };
            let _ = write!(
                o,
                " ({}){}{}{}  {}",
                s.refs,
                f(sf::REGS, " R", "  "),
                f(sf::IPMODIFY, " I", "  "),
                f(sf::DIRECT, " D", "  "),
                f(sf::MODIFIED, " M ", "   ")
            );
            if s.has(sf::DIRECT_OPS) {
                ops::describe_tramp(o, s.ip);
            } else if s.has(sf::ENABLED) {
                o.bytes(b" ->");
                o.sym(ops::arch_ftrace_ops_list_func as *const () as u64, true);
            }
        }
        o.bytes(b"\n");
    }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn ro_open(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: the VFS passes a live inode and file.
    let kind = unsafe { (*inode).i_private } as usize;
    if matches!(kind, 0 | 1) && dead() {
        return ENODEV;
    }
    let Ok(t) = KBox::new(Text { out: None }, GFP_KERNEL) else {
        return ENOMEM;
    };
    // SAFETY: as above.
    unsafe { (*file).private_data = KBox::into_raw(t).cast() };
    0
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn ro_read(
    file: *mut bindings::file,
    ubuf: *mut c_char,
    cnt: usize,
    ppos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: set by `ro_open`, freed by `ro_release`; the VFS serializes
    // reads of one file position.
    let (t, kind) = unsafe {
        (
            &mut *(*file).private_data.cast::<Text>(),
            (*(*file).f_inode).i_private as usize,
        )
    };
    let kind = match kind {
        0 => Kind::Avail,
        1 => Kind::AvailAddrs,
        2 => Kind::Enabled,
        _ => Kind::Touched,
    };
    // SAFETY: per the VFS contract.
    unsafe { serve(t, ubuf, cnt, ppos, |o| render(kind, o)) }
}

/// # Safety
///
/// Called only through the operations table it is registered in, with
/// the arguments that table's contract gives.
unsafe extern "C" fn ro_release(_inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: made by `ro_open`.
    drop(unsafe { KBox::from_raw((*file).private_data.cast::<Text>()) });
    0
}

pub(crate) const fn zeroed_fops() -> bindings::file_operations {
    // SAFETY: all-zero is a valid `file_operations` (no methods).
    unsafe { core::mem::zeroed() }
}

static RO_FOPS: CGlobal<bindings::file_operations> = CGlobal::new(bindings::file_operations {
    open: Some(ro_open),
    read: Some(ro_read),
    llseek: Some(bindings::default_llseek),
    release: Some(ro_release),
    ..zeroed_fops()
});

/// Creates a tracefs file.
pub(crate) fn create(
    name: &'static CStr,
    mode: u16,
    parent: *mut bindings::dentry,
    data: *mut c_void,
    fops: *const bindings::file_operations,
) {
    // SAFETY: tracefs copies nothing but keeps the pointers, which are
    // static or live as long as the file.
    unsafe { bindings::tracefs_create_file(name.as_char_ptr(), mode, parent, data, fops) };
}

/// Creates the top-level files of the core.
///
/// # Safety
///
/// `tr` is the global trace array and `d` its directory.
#[no_mangle]
pub unsafe extern "C" fn ftrace_init_tracefs_toplevel(_tr: *mut c_void, d: *mut bindings::dentry) {
    let names = [
        c_str!("available_filter_functions"),
        c_str!("available_filter_functions_addrs"),
        c_str!("enabled_functions"),
        c_str!("touched_functions"),
    ];
    for (i, n) in names.into_iter().enumerate() {
        create(n, 0o440, d, i as *mut c_void, RO_FOPS.get());
    }
    // The top-level filter files belong to `global_ops` (no trace array).
    crate::filter::create_files(ptr::null_mut(), d);
    crate::filter::create_graph_files(d);
    crate::profile::init(d);
    crate::ops::register_sysctl();
}
