// SPDX-License-Identifier: GPL-2.0

//! Files of tracefs, the tracing file system.
//!
//! A file is created with [`create`] in a [`Dir`], with data its inode
//! keeps ([`InodeData`]) and a table of file operations typed by that data
//! ([`Fops`]). The tables come from typed adapters: [`file_fops`] for a
//! [`File`], whose per-open state serves reads and writes through safe
//! methods, and [`seq_fops`] for a [`SeqOpen`], whose reads `seq_read()`
//! serves from a [`SeqText`](crate::seq_file::SeqText).
//!
//! C header: [`include/linux/tracefs.h`](srctree/include/linux/tracefs.h)
//!
//! # Examples
//!
//! A file whose reads give the number its inode holds:
//!
//! ```
//! use core::pin::Pin;
//! use kernel::bindings::loff_t;
//! use kernel::{c_str, prelude::*};
//! use kernel::tracefs::{self, Dir, File, Fops, OpenMode};
//! use kernel::uaccess::{UserPtr, UserSlice};
//!
//! struct Number(usize);
//!
//! impl File for Number {
//!     type Data = usize;
//!
//!     fn open(data: usize, _mode: OpenMode) -> Result<Pin<KBox<Self>>> {
//!         Ok(KBox::pin(Number(data), GFP_KERNEL)?)
//!     }
//!
//!     fn read(&self, ubuf: UserPtr, cnt: usize, pos: &mut loff_t) -> isize {
//!         let text = [b'0' + (self.0 % 10) as u8, b'\n'];
//!         let Some(rest) = usize::try_from(*pos).ok().and_then(|p| text.get(p..)) else {
//!             return 0;
//!         };
//!         let n = rest.len().min(cnt);
//!         match UserSlice::new(ubuf, n).writer().write_slice(&rest[..n]) {
//!             Ok(()) => {
//!                 *pos += n as loff_t;
//!                 n as isize
//!             }
//!             Err(e) => e.to_errno() as isize,
//!         }
//!     }
//! }
//!
//! static FOPS: Fops<usize> = tracefs::file_fops::<Number>(false);
//!
//! let file = tracefs::create(c_str!("rust_tracefs_doctest"), 0o400, Dir::ROOT, 7, &FOPS);
//! if let Some(file) = file {
//!     tracefs::remove(file);
//! }
//! ```

use crate::alloc::KBox;
use crate::bindings;
use crate::error::{code::EINVAL, Result};
use crate::ffi::{c_char, c_int, c_void};
use crate::seq_file::{open_with, release_adapter, write_adapter, SeqText};
use crate::str::CStr;
use crate::types::ForeignOwnable;
use crate::uaccess::UserPtr;
use core::marker::PhantomData;
use core::pin::Pin;
use core::ptr::{self, NonNull};

/// A tracefs directory (`struct dentry *`; null: the tracefs root).
///
/// A hook that C calls with a directory may take a `Dir` for it (the ABI
/// of a nullable pointer), when its C caller promises a live directory of
/// tracefs, or null.
///
/// # Invariants
///
/// `0` is null or a directory of tracefs that outlives every use of the
/// handle.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct Dir(*mut bindings::dentry);

impl Dir {
    /// The tracefs root.
    pub const ROOT: Dir = Dir(ptr::null_mut());

    /// The directory `d`.
    ///
    /// # Safety
    ///
    /// `d` is null or a directory of tracefs that outlives every use of
    /// the handle and its copies.
    pub unsafe fn from_raw(d: *mut bindings::dentry) -> Dir {
        // INVARIANT: the contract.
        Dir(d)
    }

    /// The C directory.
    pub fn as_raw(self) -> *mut bindings::dentry {
        self.0
    }
}

/// A file [`create`] made, until [`remove`] takes it back.
///
/// # Invariants
///
/// `0` is a tracefs file that only [`remove`] removes.
pub struct Entry(NonNull<bindings::dentry>);

/// How a file was opened.
#[derive(Clone, Copy)]
pub struct OpenMode {
    /// Opened for writing.
    pub write: bool,
    /// Opened with `O_TRUNC`.
    pub trunc: bool,
}

const FMODE_WRITE: u32 = 2;

impl OpenMode {
    /// How a file with mode `f_mode` and flags `f_flags` is opened.
    pub fn new(f_mode: u32, f_flags: u32) -> OpenMode {
        OpenMode {
            write: f_mode & FMODE_WRITE != 0,
            trunc: f_flags & bindings::O_TRUNC != 0,
        }
    }
}

/// What a file's inode holds for its opens: the data its creator gave
/// [`create`], typed by the file's operations ([`Fops`]).
pub trait InodeData: Copy {
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

/// A small number (which of several files it is).
impl InodeData for usize {
    fn into_raw(self) -> *mut c_void {
        self as *mut c_void
    }
    unsafe fn from_raw(p: *mut c_void) -> Self {
        p as usize
    }
}

/// The handle of an object that outlives the files holding it, as inode
/// data (`Option<T>`: the handle or none).
///
pub trait Handle: Copy {
    /// The object's address.
    fn as_ptr(self) -> NonNull<c_void>;

    /// The handle of the object at `p`.
    ///
    /// # Safety
    ///
    /// `p` is what [`Handle::as_ptr`] gave of a handle whose object is
    /// still alive.
    unsafe fn from_ptr(p: NonNull<c_void>) -> Self;
}

impl<T: Handle> InodeData for Option<T> {
    fn into_raw(self) -> *mut c_void {
        self.map_or(ptr::null_mut(), |h| h.as_ptr().as_ptr())
    }
    unsafe fn from_raw(p: *mut c_void) -> Self {
        // SAFETY: a handle's address that the file's creator keeps valid
        // while the file exists (the contract), as `Handle::as_ptr` gave it.
        NonNull::new(p).map(|p| unsafe { T::from_ptr(p) })
    }
}

/// The file operations of files whose inodes hold a `D`.
///
/// # Invariants
///
/// The table's `open` reads the inode's data as a `D`, or not at all.
pub struct Fops<D>(bindings::file_operations, PhantomData<fn(D)>);

// SAFETY: a table of function pointers that C only reads (`owner` is null
// for the built-in files tracefs serves); it holds no `D`.
unsafe impl<D> Sync for Fops<D> {}

impl<D: InodeData> Fops<D> {
    /// The table `f`.
    ///
    /// # Safety
    ///
    /// `f.open` reads the inode's data as a `D` (with
    /// [`InodeData::from_raw`]), or not at all; `f.owner` is null.
    pub const unsafe fn new(f: bindings::file_operations) -> Self {
        // INVARIANT: the contract.
        Fops(f, PhantomData)
    }

    /// The C table.
    pub const fn as_raw(&'static self) -> *const bindings::file_operations {
        &self.0
    }
}

/// The all-zero file operations: none.
pub const fn no_fops() -> bindings::file_operations {
    // SAFETY: all-zero bytes are a valid `file_operations`: a null owner
    // and no operations, what C's `= {}` gives.
    unsafe { core::mem::zeroed() }
}

/// Creates a tracefs file `name` in `parent`, whose inode holds `data`:
/// `None` if tracefs could not make it. Dropping the [`Entry`] leaves the
/// file in place; [`remove`] takes it away.
pub fn create<D: InodeData>(
    name: &'static CStr,
    mode: u16,
    parent: Dir,
    data: D,
    fops: &'static Fops<D>,
) -> Option<Entry> {
    // SAFETY: a static name and table; a live directory or null (the
    // invariants of `Dir`); `data` is what the table's `open` reads as a
    // `D` (the invariants of `Fops`), valid while the file exists (what
    // `InodeData` values are). tracefs keeps the pointers.
    let d = unsafe {
        bindings::tracefs_create_file(
            name.as_char_ptr(),
            mode,
            parent.0,
            data.into_raw(),
            fops.as_raw(),
        )
    };
    let d = crate::error::from_err_ptr(d).ok()?;
    // INVARIANT: a file tracefs made, which it removes only when asked.
    NonNull::new(d).map(Entry)
}

/// Removes the file `file`.
pub fn remove(file: Entry) {
    // SAFETY: a file `create` made, not removed yet (the invariants; the
    // entry is consumed).
    unsafe { bindings::tracefs_remove(file.0.as_ptr()) };
}

/// The inode data and the open mode of a file being opened, its data
/// typed as `D`.
///
/// # Safety
///
/// `inode` and `file` are the VFS's, of a file being opened, whose inode
/// data is a `D` (the file's operations are a [`Fops<D>`]).
pub unsafe fn opening<D: InodeData>(
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

/// A tracefs file with a per-open state, which the reads and writes of
/// the open file share (from any task: `pread()` takes no position lock).
pub trait File: Send + Sync + Sized + 'static {
    /// What the file's inode holds.
    type Data: InodeData;

    /// The state of an open of a file whose inode holds `data`.
    fn open(data: Self::Data, mode: OpenMode) -> Result<Pin<KBox<Self>>>;

    /// One `read()` of at most `cnt` bytes into the user buffer `ubuf`
    /// from file position `pos`, which it advances: the bytes given, or an
    /// errno.
    fn read(&self, ubuf: UserPtr, cnt: usize, pos: &mut bindings::loff_t) -> isize;

    /// One `write()` of `cnt` bytes at the user address `ubuf` at file
    /// position `pos`, which it advances: the bytes taken, or an errno.
    fn write(&self, _ubuf: UserPtr, _cnt: usize, _pos: &mut bindings::loff_t) -> isize {
        EINVAL.to_errno() as isize
    }

    /// The last close.
    fn release(_this: Pin<KBox<Self>>) {}
}

/// The state of the open file `file` of a `T`, for the call.
///
/// # Safety
///
/// `file` is live for `'a` and was opened by [`file_open::<T>`], which
/// put a `Pin<KBox<T>>` in its private data; its last close comes after
/// `'a`.
unsafe fn file_state<'a, T: File>(file: *mut bindings::file) -> Pin<&'a T> {
    // SAFETY: the private data is the state `file_open` gave away, alive
    // until the last close (the contract).
    unsafe { <Pin<KBox<T>> as ForeignOwnable>::borrow((*file).private_data) }
}

/// # Safety
///
/// An operation of `file_fops::<T>()`: the VFS calls it only for files
/// whose operations that table is, with live arguments; `open` first,
/// `release` at the last close, the rest in between.
unsafe extern "C" fn file_open<T: File>(inode: *mut bindings::inode, file: *mut bindings::file) -> c_int {
    // SAFETY: the VFS's inode and file, being opened, of a file whose
    // operations are `file_fops::<T>()`: its data is a `T::Data`.
    let (data, mode) = unsafe { opening::<T::Data>(inode, file) };
    match T::open(data, mode) {
        Ok(b) => {
            // SAFETY: the file is the VFS's and ours until release, which
            // takes the state back.
            unsafe { (*file).private_data = b.into_foreign().cast_mut() };
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// # Safety
///
/// As for [`file_open`].
unsafe extern "C" fn file_read<T: File>(
    file: *mut bindings::file,
    ubuf: *mut c_char,
    cnt: usize,
    pos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: an open file of `T` (the contract) and its read position.
    let (s, pos) = unsafe { (file_state::<T>(file), &mut *pos) };
    s.read(ubuf as UserPtr, cnt, pos)
}

/// # Safety
///
/// As for [`file_open`].
unsafe extern "C" fn file_write<T: File>(
    file: *mut bindings::file,
    ubuf: *const c_char,
    cnt: usize,
    pos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: an open file of `T` (the contract) and its write position.
    let (s, pos) = unsafe { (file_state::<T>(file), &mut *pos) };
    s.write(ubuf as UserPtr, cnt, pos)
}

/// # Safety
///
/// As for [`file_open`].
unsafe extern "C" fn file_release<T: File>(
    _inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: made by `file_open`; this is its last use.
    let s = unsafe { <Pin<KBox<T>> as ForeignOwnable>::from_foreign((*file).private_data) };
    T::release(s);
    0
}

/// The file operations of a [`File`] (`write`: it can be written).
pub const fn file_fops<T: File>(write: bool) -> Fops<T::Data> {
    let f = bindings::file_operations {
        open: Some(file_open::<T>),
        read: Some(file_read::<T>),
        write: if write { Some(file_write::<T>) } else { None },
        llseek: Some(bindings::default_llseek),
        release: Some(file_release::<T>),
        ..no_fops()
    };
    // INVARIANT: `file_open::<T>` reads the inode's data as a `T::Data`.
    Fops(f, PhantomData)
}

/// How [`seq_fops`] opens a file that `seq_read()` serves.
pub trait SeqOpen {
    /// What the file's inode holds.
    type Data: InodeData;
    /// The per-open state.
    type State: SeqText;

    /// The per-open state, for the inode data `data` and the open mode.
    fn open(data: Self::Data, mode: OpenMode) -> Result<Self::State>;
}

/// # Safety
///
/// The open of `seq_fops::<T>()`: the VFS calls it with the live inode and
/// file of a file whose operations that table is, being opened.
unsafe extern "C" fn seq_open_adapter<T: SeqOpen>(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: the VFS's inode and file, being opened, of a file whose
    // operations are `seq_fops::<T>()`: its data is a `T::Data`.
    let (data, mode) = unsafe { opening::<T::Data>(inode, file) };
    match T::open(data, mode) {
        // SAFETY: the VFS's file, being opened, whose other operations are
        // `seq_read` and `T::State`'s adapters (`seq_fops`).
        Ok(s) => unsafe { open_with(file, s) },
        Err(e) => e.to_errno(),
    }
}

/// The C type of a `llseek` file operation.
pub type Llseek =
    unsafe extern "C" fn(*mut bindings::file, bindings::loff_t, c_int) -> bindings::loff_t;

/// The file operations of a [`SeqOpen`] file, which seeks with `llseek`.
pub const fn seq_fops<T: SeqOpen>(llseek: Llseek) -> Fops<T::Data> {
    let f = bindings::file_operations {
        open: Some(seq_open_adapter::<T>),
        read: Some(bindings::seq_read),
        write: Some(write_adapter::<T::State>),
        llseek: Some(llseek),
        release: Some(release_adapter::<T::State>),
        ..no_fops()
    };
    // INVARIANT: `seq_open_adapter::<T>` reads the inode's data as a
    // `T::Data`.
    Fops(f, PhantomData)
}
