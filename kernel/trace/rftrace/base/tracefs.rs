// SPDX-License-Identifier: GPL-2.0

//! What every tracefs file of the core shares: a text built at the start
//! of a read and served from memory (whole, or line by line through a
//! seq_file), the symbol names of call sites, and file creation.

use crate::base::ffi::{sprint_symbol, sprint_symbol_no_offset, SYM_BUF};
use crate::logic::parser::{Parser, BUF_SIZE};
use core::fmt::Write;
use core::marker::PhantomData;
use core::pin::Pin;
use core::ptr;
use kernel::bindings;
use kernel::ffi::{c_char, c_int, c_ulong, c_void};
use kernel::prelude::*;
use kernel::sync::{new_mutex, Mutex};
use kernel::types::{ForeignOwnable, Opaque};
use kernel::uaccess::UserSlice;

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
        let mut b = [0u8; SYM_BUF];
        let n = if offset {
            sprint_symbol(&mut b, a as c_ulong)
        } else {
            sprint_symbol_no_offset(&mut b, a as c_ulong)
        };
        let n = (n.max(0) as usize).min(b.len());
        self.bytes(&b[..n]);
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

/// A `struct seq_file` as its callbacks get it: the seq_file core owns it
/// and serializes the callbacks of one file. A callback whose table this
/// crate defines takes `&SeqFile` for the `struct seq_file *` (the ABI of
/// a non-null pointer), which the seq_file core, by its contract, passes
/// live for the call.
#[repr(transparent)]
pub(crate) struct SeqFile(kernel::types::Opaque<bindings::seq_file>);

impl SeqFile {
    /// The seq_file, for the code that reads its fields.
    pub(crate) fn as_ptr(&self) -> *mut bindings::seq_file {
        self.0.get()
    }

    /// Appends `b` to the output (a full buffer is the seq_file core's to
    /// notice and retry with a bigger one).
    pub(crate) fn write(&self, b: &[u8]) {
        // SAFETY: a live seq_file (the type's invariant), inside one of its
        // callbacks; the bytes are read only for the call.
        unsafe { bindings::seq_write(self.0.get(), b.as_ptr().cast(), b.len()) };
    }
}

/// A seq_file of the core's own over a caller's buffer, for the C
/// printers that format into a seq_file (a probe type's `print`): what
/// they write lands in the buffer, cut where it is full.
///
/// # Invariants
///
/// The seq_file writes into the borrowed buffer, of its `size`; only the
/// seq_file helpers, through [`PageSeq::seq`], write the seq_file.
pub(crate) struct PageSeq<'a>(SeqFile, PhantomData<&'a mut [u8]>);

impl<'a> PageSeq<'a> {
    /// An empty seq_file writing into `page`.
    pub(crate) fn over(page: &'a mut [u8]) -> Self {
        let m = bindings::seq_file {
            buf: page.as_mut_ptr().cast(),
            size: page.len(),
            ..Default::default()
        };
        PageSeq(SeqFile(Opaque::new(m)), PhantomData)
    }

    /// The seq_file, for the printer.
    pub(crate) fn seq(&self) -> &SeqFile {
        &self.0
    }

    /// How many bytes were written.
    pub(crate) fn count(&self) -> usize {
        // SAFETY: our own seq_file, not borrowed by a printer now (the
        // shared borrow of `self` excludes `seq`'s users running).
        unsafe { (*self.0 .0.get()).count }
    }
}

pub(crate) const fn zeroed_fops() -> bindings::file_operations {
    crate::base::zeroed::zeroed()
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

/// How a file was opened.
#[derive(Clone, Copy)]
pub(crate) struct OpenMode {
    pub(crate) write: bool,
    pub(crate) trunc: bool,
}

const FMODE_WRITE: u32 = 2;

impl OpenMode {
    /// How a file with mode `f_mode` and flags `f_flags` is opened.
    pub(crate) fn new(f_mode: u32, f_flags: u32) -> OpenMode {
        OpenMode {
            write: f_mode & FMODE_WRITE != 0,
            trunc: f_flags & bindings::O_TRUNC != 0,
        }
    }
}

/// What a file's inode holds for its open: the data its creator gave
/// [`create`], typed by the file's operations ([`Fops`]).
pub(crate) trait InodeData: Copy {
    /// The word the inode keeps.
    fn into_raw(self) -> *mut c_void;

    /// The value [`InodeData::into_raw`] made `p` of.
    ///
    /// # Safety
    ///
    /// `p` is the word of a value of this type that the file's creator
    /// keeps valid while the file exists.
    unsafe fn from_raw(p: *mut c_void) -> Self;
}

impl InodeData for () {
    fn into_raw(self) -> *mut c_void {
        ptr::null_mut()
    }
    unsafe fn from_raw(_p: *mut c_void) -> Self {}
}

/// A small number (which listing a file is).
impl InodeData for usize {
    fn into_raw(self) -> *mut c_void {
        self as *mut c_void
    }
    unsafe fn from_raw(p: *mut c_void) -> Self {
        p as usize
    }
}

/// A trace array, which lives as long as the files of its directory.
impl InodeData for Option<crate::base::ffi::TraceArray> {
    fn into_raw(self) -> *mut c_void {
        self.map_or(ptr::null_mut(), crate::base::ffi::TraceArray::as_ptr)
    }
    unsafe fn from_raw(p: *mut c_void) -> Self {
        // SAFETY: an array's word that its creator keeps valid while the
        // file exists (the contract), so while an open of it lasts.
        unsafe { crate::base::ffi::TraceArray::from_raw(p) }
    }
}

/// The file operations of files whose inodes hold a `D`.
///
/// # Invariants
///
/// The table's `open` reads the inode's data as a `D`.
pub(crate) struct Fops<D>(
    crate::base::sys::CGlobal<bindings::file_operations>,
    PhantomData<fn(D)>,
);

impl<D: InodeData> Fops<D> {
    /// The table `f`.
    ///
    /// # Safety
    ///
    /// `f.open` reads the inode's data as a `D` (with
    /// [`InodeData::from_raw`]), or not at all.
    pub(crate) const unsafe fn new(f: bindings::file_operations) -> Self {
        // INVARIANT: the contract.
        Fops(crate::base::sys::CGlobal::new(f), PhantomData)
    }
}

/// A tracefs directory C hands the core (`struct dentry *`; null: the
/// tracefs root). The hooks that C calls with a directory take it as
/// their parameter (the ABI of a nullable pointer): C, bound by each
/// hook's contract, passes a live directory of tracefs.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub(crate) struct Dir(*mut bindings::dentry);

/// The inode data and the open mode of a file being opened, its data
/// typed as `D`.
///
/// # Safety
///
/// `inode` and `file` are the VFS's, of a file being opened, whose inode
/// data is a `D` (the file's operations are a [`Fops<D>`]).
pub(crate) unsafe fn opening<D: InodeData>(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> (D, OpenMode) {
    // SAFETY: live, as the VFS passes them to an open, and the inode's
    // data a `D` that its creator keeps while the file exists (the
    // contract).
    unsafe {
        (
            D::from_raw((*inode).i_private),
            OpenMode::new((*file).f_mode, (*file).f_flags),
        )
    }
}

/// A tracefs file of the core served as a text built when a read starts,
/// and written one token per `write()`: each file operation of
/// [`fops`] borrows the per-open state and calls one of these safe
/// methods (the thunks below are the only unsafe code of such a file).
pub(crate) trait TextFile: Sized {
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

/// The state of an open [`TextFile`]: the text served and the file's own,
/// behind the open file's own lock (reads and writes of one file may run
/// at once: `pread()` takes no position lock).
struct Open<T> {
    text: Text,
    state: T,
}

/// How an open file keeps its state in `private_data`.
type OpenBox<T> = Pin<KBox<Mutex<Open<T>>>>;

/// The VFS file of an open `T`, as its file operations get it: the read
/// and write thunks take it as their `struct file *` (the ABI of a
/// non-null pointer: `repr(transparent)`), installed by [`fops`].
///
/// # Invariants
///
/// The file is live for the call it is passed to, and its `private_data`
/// is the [`OpenBox<T>`] that [`open_thunk::<T>`] gave away with
/// `into_foreign`, taken back only at the last close, after which the
/// VFS calls nothing of the file.
#[repr(transparent)]
struct FileOf<T>(Opaque<bindings::file>, PhantomData<T>);

impl<T: TextFile + 'static> FileOf<T> {
    /// The file's state, behind its lock.
    fn state(&self) -> &Mutex<Open<T>> {
        // SAFETY: `private_data` is the open file's state, alive until the
        // last close (the invariants), so for the borrow of `self`.
        unsafe { OpenBox::<T>::borrow((*self.0.get()).private_data) }.get_ref()
    }
}

/// # Safety
///
/// Called only through [`fops::<T>`], by the VFS, with a live inode and
/// file.
unsafe extern "C" fn open_thunk<T: TextFile + 'static>(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: the VFS's inode and file, being opened (the contract), of
    // a file whose operations are `fops::<T>()`: its data is a `T::Data`.
    let (data, mode) = unsafe { opening::<T::Data>(inode, file) };
    let opened = T::open(data, mode).and_then(|state| {
        let text = Text { out: None };
        KBox::pin_init(
            new_mutex!(Open { text, state }, "rftrace_text_file"),
            GFP_KERNEL,
        )
    });
    match opened {
        Ok(b) => {
            // SAFETY: the file is the VFS's and ours until release, which
            // takes the state back.
            unsafe { (*file).private_data = b.into_foreign().cast_mut() };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// Serves a read of `cnt` bytes at the user address `ubuf` from position
/// `pos`.
extern "C" fn read_thunk<T: TextFile + 'static>(
    file: &FileOf<T>,
    ubuf: *mut c_char,
    cnt: usize,
    pos: &mut bindings::loff_t,
) -> isize {
    let mut g = file.state().lock();
    let Open { text, state } = &mut *g;
    serve(text, ubuf, cnt, pos, |o| state.render(o))
}

/// One `write()` of `cnt` bytes at the user address `ubuf`: copied before
/// the file's lock is taken.
extern "C" fn write_thunk<T: TextFile + 'static>(
    file: &FileOf<T>,
    ubuf: *const c_char,
    cnt: usize,
    pos: &mut bindings::loff_t,
) -> isize {
    if cnt == 0 {
        return 0;
    }
    let chunk = copy_chunk(ubuf, cnt);
    file.state().lock().state.write(chunk, pos)
}

/// # Safety
///
/// Called only through [`fops::<T>`], by the VFS, at the last close of a
/// file it opened.
unsafe extern "C" fn release_thunk<T: TextFile + 'static>(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: made by `open_thunk`; this is its last use.
    let f = unsafe { OpenBox::<T>::from_foreign((*file).private_data) };
    f.lock().state.release();
    0
}

/// The file operations of a [`TextFile`] (`write`: it can be written).
pub(crate) const fn fops<T: TextFile + 'static>(write: bool) -> Fops<T::Data> {
    type F = bindings::file;
    type Pos = bindings::loff_t;
    type Read<T> =
        for<'a, 'b> extern "C" fn(&'a FileOf<T>, *mut c_char, usize, &'b mut Pos) -> isize;
    type Write<T> =
        for<'a, 'b> extern "C" fn(&'a FileOf<T>, *const c_char, usize, &'b mut Pos) -> isize;
    // SAFETY: the same ABI (references and `FileOf`, `repr(transparent)`,
    // are pointers), and the VFS calls a file's read and write operations
    // only with what the typed arguments promise: the live file, which
    // `open_thunk::<T>` opened (the only files these operations are given
    // to) and which is not released, and a valid position.
    let (read, write_op) = unsafe {
        (
            core::mem::transmute::<
                Read<T>,
                unsafe extern "C" fn(*mut F, *mut c_char, usize, *mut Pos) -> isize,
            >(read_thunk::<T>),
            core::mem::transmute::<
                Write<T>,
                unsafe extern "C" fn(*mut F, *const c_char, usize, *mut Pos) -> isize,
            >(write_thunk::<T>),
        )
    };
    let f = bindings::file_operations {
        open: Some(open_thunk::<T>),
        read: Some(read),
        write: if write { Some(write_op) } else { None },
        llseek: Some(bindings::default_llseek),
        release: Some(release_thunk::<T>),
        ..zeroed_fops()
    };
    // SAFETY: `open_thunk::<T>` reads the inode's data as a `T::Data`.
    unsafe { Fops::new(f) }
}

/// Creates a tracefs file in `parent` whose inode holds `data`.
pub(crate) fn create<D: InodeData>(
    name: &'static CStr,
    mode: u16,
    parent: Dir,
    data: D,
    fops: &'static Fops<D>,
) {
    // SAFETY: a static name and table; a live directory (the type's
    // contract) or null (the root); `data` is what the table's `open`
    // reads as a `D` (the invariants of `Fops`), valid while the file
    // exists (what `InodeData` values are). tracefs keeps the pointers.
    unsafe {
        bindings::tracefs_create_file(
            name.as_char_ptr(),
            mode,
            parent.0,
            data.into_raw(),
            fops.0.get(),
        )
    };
}
