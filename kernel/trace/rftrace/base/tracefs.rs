// SPDX-License-Identifier: GPL-2.0

//! What every tracefs file of the core shares: a text built at the start
//! of a read and served from memory (whole, or line by line through a
//! seq_file), the symbol names of call sites, and file creation. The
//! VFS, seq_file and tracefs protocols are `kernel::seq_file`'s and
//! `kernel::tracefs`'s.

use crate::logic::parser::{Parser, BUF_SIZE};
use core::fmt::Write;
use core::pin::Pin;
use core::ptr;
use kernel::bindings;
use kernel::ffi::{c_char, c_void};
use kernel::prelude::*;
use kernel::seq_file::SeqFile;
use kernel::sync::{new_mutex, Mutex};
use kernel::tracefs::{Dir, File, Fops, InodeData, OpenMode};
use kernel::uaccess::{UserPtr, UserSlice};

/// A text being built; writes fail once memory ran out.
pub(crate) struct Out {
    pub(crate) buf: KVVec<u8>,
    failed: bool,
    /// Where the last site name was found in the kept names: a listing
    /// asks for the sites in order (`sites::names`, `Out::rec`).
    pub(crate) near: usize,
}

impl Out {
    pub(crate) fn new() -> Self {
        Out {
            buf: KVVec::new(),
            failed: false,
            near: 0,
        }
    }

    /// Empties it, keeping its room (and forgetting a failure).
    pub(crate) fn clear(&mut self) {
        crate::base::sys::truncate(&mut self.buf, 0);
        self.failed = false;
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
        let mut b = [0u8; kernel::kallsyms::SYMBOL_LEN];
        let s = kernel::kallsyms::sprint(&mut b, a as usize, offset);
        self.bytes(s);
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

/// The per-open state of every file of the core: the text served, and
/// whatever the file needs besides (a filter file's edit state).
pub(crate) struct Text {
    pub(crate) out: Option<KVVec<u8>>,
}

/// Serves `text` (built by `build` when a read starts at offset 0) to
/// the user buffer `ubuf` of `cnt` bytes from the file position `pos`,
/// which it advances, as `simple_read_from_buffer()` does (but for a
/// fault part way: no byte counts then).
pub(crate) fn serve(
    text: &mut Text,
    ubuf: *mut c_char,
    cnt: usize,
    pos: &mut bindings::loff_t,
    build: impl FnOnce(&mut Out),
) -> isize {
    if *pos == 0 || text.out.is_none() {
        let mut o = Out::new();
        build(&mut o);
        if !o.ok() {
            return ENOMEM.to_errno() as isize;
        }
        text.out = Some(o.buf);
    }
    let Some(b) = text.out.as_ref() else {
        return 0;
    };
    let Ok(at) = usize::try_from(*pos) else {
        return EINVAL.to_errno() as isize;
    };
    let Some(rest) = b.get(at..).filter(|r| !r.is_empty() && cnt != 0) else {
        return 0;
    };
    let n = cnt.min(rest.len());
    match UserSlice::new(ubuf as usize, n)
        .writer()
        .write_slice(&rest[..n])
    {
        Ok(()) => {
            *pos = pos.wrapping_add(n as bindings::loff_t);
            n as isize
        }
        Err(e) => e.to_errno() as isize,
    }
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
    pub(crate) fn show(&self, m: &SeqFile, v: *mut c_void) {
        let i = (v as usize).wrapping_sub(1);
        let (Some(out), Some(&a), Some(&b)) = (
            self.out.as_ref(),
            self.starts.get(i),
            self.starts.get(i + 1),
        ) else {
            return;
        };
        if let Some(line) = out.get(a..b) {
            m.write(line);
        }
    }
}

/// One write's worth of user bytes, copied before any lock is taken.
pub(crate) struct Chunk {
    buf: [u8; BUF_SIZE + 64],
    len: usize,
}

impl Chunk {
    /// The bytes copied (the start of the write, at most a token's worth
    /// and some).
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.buf[..self.len.min(self.buf.len())]
    }
}

/// Copies the start of a write of `cnt` bytes at the user address `ubuf`
/// (`None`: a fault). No lock of the core is held here: a writer whose
/// buffer faults slowly (swap, userfaultfd) then blocks no other filter
/// file.
pub(crate) fn copy_chunk(ubuf: *const c_char, cnt: usize) -> Option<Chunk> {
    let mut c = Chunk {
        buf: [0u8; BUF_SIZE + 64],
        len: cnt.min(BUF_SIZE + 64),
    };
    let dst = c.buf.get_mut(..c.len)?;
    UserSlice::new(ubuf as usize, dst.len())
        .reader()
        .read_slice(dst)
        .ok()?;
    Some(c)
}

/// Feeds the bytes of a write (copied by [`copy_chunk`]) at file
/// position `pos` into `parser` and hands a complete token to `done`;
/// advances `pos` by the bytes taken.
pub(crate) fn write_token(
    parser: &mut Parser,
    chunk: Option<Chunk>,
    pos: &mut bindings::loff_t,
    done: impl FnOnce(&[u8]) -> Result,
) -> isize {
    let Some(chunk) = chunk else {
        parser.set_failed();
        return EFAULT.to_errno() as isize;
    };
    let n = match parser.scan(&chunk.buf[..chunk.len], *pos as u64) {
        Ok(n) => n,
        Err(_) => return EINVAL.to_errno() as isize,
    };
    *pos = pos.wrapping_add(n as bindings::loff_t);
    if parser.loaded() && !parser.pending() {
        let r = done(parser.token());
        parser.clear();
        if let Err(e) = r {
            return e.to_errno() as isize;
        }
    }
    n as isize
}

/// A tracefs file of the core served as a text built when a read starts,
/// and written one token per `write()`: its open state is kept behind a
/// lock of its own ([`TextOpen`]), and [`fops`] is its table.
pub(crate) trait TextFile: Sized + Send + 'static {
    /// What the file's inode holds.
    type Data: InodeData;

    /// The per-open state of a file whose inode holds `data`.
    fn open(data: Self::Data, mode: OpenMode) -> Result<Self>;

    /// The text a read serves.
    fn render(&self, o: &mut Out);

    /// One `write()`: its user bytes (`None`: the copy faulted) at file
    /// position `pos`, which it advances; the bytes taken, or an errno.
    fn write(&mut self, _chunk: Option<Chunk>, _pos: &mut bindings::loff_t) -> isize {
        EINVAL.to_errno() as isize
    }

    /// The last close.
    fn release(&mut self) {}
}

/// The state of an open [`TextFile`]: the text served and the file's own.
struct Open<T> {
    text: Text,
    state: T,
}

/// An open [`TextFile`]: its state behind the open file's own lock (reads
/// and writes of one file may run at once: `pread()` takes no position
/// lock).
#[pin_data]
pub(crate) struct TextOpen<T> {
    #[pin]
    open: Mutex<Open<T>>,
}

impl<T: TextFile> File for TextOpen<T> {
    type Data = T::Data;

    fn open(data: T::Data, mode: OpenMode) -> Result<Pin<KBox<Self>>> {
        let state = T::open(data, mode)?;
        let text = Text { out: None };
        KBox::pin_init(
            pin_init!(TextOpen {
                open <- new_mutex!(Open { text, state }, "rftrace_text_file"),
            }),
            GFP_KERNEL,
        )
    }

    fn read(&self, ubuf: UserPtr, cnt: usize, pos: &mut bindings::loff_t) -> isize {
        let mut g = self.open.lock();
        let Open { text, state } = &mut *g;
        serve(text, ubuf as *mut c_char, cnt, pos, |o| state.render(o))
    }

    /// The user bytes are copied before the file's lock is taken.
    fn write(&self, ubuf: UserPtr, cnt: usize, pos: &mut bindings::loff_t) -> isize {
        if cnt == 0 {
            return 0;
        }
        let chunk = copy_chunk(ubuf as *const c_char, cnt);
        self.open.lock().state.write(chunk, pos)
    }

    fn release(this: Pin<KBox<Self>>) {
        this.open.lock().state.release();
    }
}

/// The file operations of a [`TextFile`] (`write`: it can be written).
pub(crate) const fn fops<T: TextFile>(write: bool) -> Fops<T::Data> {
    kernel::tracefs::file_fops::<TextOpen<T>>(write)
}

/// Creates a tracefs file in `parent` whose inode holds `data`; the file
/// lives as long as the kernel. A failure is reported, as C's
/// `trace_create_file()` does, and leaves the core without the file.
pub(crate) fn create<D: InodeData>(
    name: &'static CStr,
    mode: u16,
    parent: Dir,
    data: D,
    fops: &'static Fops<D>,
) {
    if kernel::tracefs::create(name, mode, parent, data, fops).is_none() {
        pr_warn!("Could not create tracefs '{}' entry\n", name);
    }
}
