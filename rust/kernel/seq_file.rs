// SPDX-License-Identifier: GPL-2.0

//! Seq files: text files whose reads `seq_read()` serves, one record at a
//! time, from the operations of a per-open state.
//!
//! A [`SeqText`] is the state of one open file: `seq_read()` calls its
//! [`start`](SeqText::start), [`next`](SeqText::next),
//! [`show`](SeqText::show) and [`stop`](SeqText::stop) with the file's
//! [`SeqFile`], one at a time. [`SeqTable::<T>::table()`] is the C
//! `seq_operations` of a `T`, built from typed adapters; [`open_with`],
//! [`write_adapter`] and [`release_adapter`] are the file operations that
//! keep a `T` as the seq_file's private data.
//!
//! C header: [`include/linux/seq_file.h`](srctree/include/linux/seq_file.h)
//!
//! # Examples
//!
//! A file listing three numbers, rendered into a buffer by the same
//! operations `seq_read()` would call:
//!
//! ```
//! use core::ffi::{c_int, c_void};
//! use kernel::bindings::loff_t;
//! use kernel::prelude::*;
//! use kernel::seq_file::{SeqBuf, SeqFile, SeqText};
//!
//! struct Numbers([u32; 3]);
//!
//! impl SeqText for Numbers {
//!     fn start(&mut self, _m: &SeqFile, pos: &mut loff_t) -> *mut c_void {
//!         // A record is its index plus one: null ends the read.
//!         match usize::try_from(*pos) {
//!             Ok(i) if i < self.0.len() => (i + 1) as *mut c_void,
//!             _ => core::ptr::null_mut(),
//!         }
//!     }
//!
//!     fn next(&mut self, m: &SeqFile, _v: *mut c_void, pos: &mut loff_t) -> *mut c_void {
//!         *pos += 1;
//!         self.start(m, pos)
//!     }
//!
//!     fn show(&mut self, m: &SeqFile, v: *mut c_void) -> c_int {
//!         m.print(format_args!("{}\n", self.0[v as usize - 1]));
//!         0
//!     }
//! }
//!
//! let mut page = [0u8; 64];
//! let mut buf = SeqBuf::over(&mut page);
//! buf.render(&mut Numbers([3, 14, 15]));
//! assert_eq!(buf.bytes(), b"3\n14\n15\n");
//!
//! // A buffer that is too small keeps what fitted, as a seq_file does.
//! let mut small = [0u8; 4];
//! let mut buf = SeqBuf::over(&mut small);
//! buf.render(&mut Numbers([3, 14, 15]));
//! assert_eq!(buf.bytes(), b"3\n");
//! ```

use crate::bindings;
use crate::error::code::ENOMEM;
use crate::ffi::{c_char, c_int, c_void};
use crate::types::Opaque;
use core::fmt;
use core::marker::PhantomData;
use core::ptr;

/// A `struct seq_file`: the seq_file core owns it and calls the
/// operations of one file one at a time.
///
/// A callback that C calls with a `struct seq_file *` may take
/// `&SeqFile` for it (the ABI of a non-null pointer, as the type is
/// `repr(transparent)`), when its C caller promises a live seq_file.
///
/// # Invariants
///
/// The seq_file is live for as long as the reference is; only the
/// seq_file helpers write its buffer and counters meanwhile.
#[repr(transparent)]
pub struct SeqFile(Opaque<bindings::seq_file>);

impl SeqFile {
    /// The seq_file at `ptr`, for `'a`.
    ///
    /// # Safety
    ///
    /// `ptr` is a live seq_file for `'a`, which only the seq_file helpers
    /// write meanwhile.
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::seq_file) -> &'a SeqFile {
        // SAFETY: `SeqFile` is a `repr(transparent)` `Opaque<seq_file>`;
        // live for `'a` (the function's contract), which is the invariant.
        unsafe { &*ptr.cast::<SeqFile>() }
    }

    /// The C seq_file.
    pub fn as_raw(&self) -> *mut bindings::seq_file {
        self.0.get()
    }

    /// Appends `b` to the output. A full buffer is the seq_file core's to
    /// notice: it retries the record with a bigger one.
    pub fn write(&self, b: &[u8]) {
        // SAFETY: a live seq_file (the invariants); the bytes are read only
        // for the call.
        unsafe { bindings::seq_write(self.0.get(), b.as_ptr().cast(), b.len()) };
    }

    /// Appends the formatted `args` to the output.
    pub fn print(&self, args: fmt::Arguments<'_>) {
        struct Sink<'a>(&'a SeqFile);
        impl fmt::Write for Sink<'_> {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                self.0.write(s.as_bytes());
                Ok(())
            }
        }
        let _ = fmt::write(&mut Sink(self), args);
    }
}

/// A seq_file over a caller's buffer: what its writers print lands in the
/// buffer, cut where it is full. It serves C printers that format into a
/// seq_file, and [`SeqBuf::render`].
///
/// # Invariants
///
/// The seq_file's buffer is the borrowed one, of its `size`; only the
/// seq_file helpers, through [`SeqBuf::seq`] and [`SeqBuf::render`],
/// write the seq_file.
pub struct SeqBuf<'a>(SeqFile, PhantomData<&'a mut [u8]>);

impl<'a> SeqBuf<'a> {
    /// An empty seq_file writing into `page`.
    pub fn over(page: &'a mut [u8]) -> Self {
        let m = bindings::seq_file {
            buf: page.as_mut_ptr().cast(),
            size: page.len(),
            ..Default::default()
        };
        // INVARIANT: the buffer is `page`, borrowed for `'a`.
        SeqBuf(SeqFile(Opaque::new(m)), PhantomData)
    }

    /// The seq_file, for a printer.
    pub fn seq(&self) -> &SeqFile {
        &self.0
    }

    /// How many bytes were written.
    pub fn count(&self) -> usize {
        // SAFETY: our own seq_file; the shared borrow of `self` excludes
        // its writers for the read.
        let (count, size) = unsafe { ((*self.0.as_raw()).count, (*self.0.as_raw()).size) };
        count.min(size)
    }

    /// The bytes written.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: the buffer is the borrowed one of `size` bytes (the
        // invariants), of which the first `count()` were written; the
        // shared borrow of `self` excludes writers while it is read.
        unsafe { core::slice::from_raw_parts((*self.0.as_raw()).buf.cast::<u8>(), self.count()) }
    }

    /// Shows every record of `state` into the buffer, through the
    /// operations `seq_read()` calls ([`SeqTable<T>`]), as one read
    /// from position 0 does; a record that does not fit whole is left
    /// out and ends the rendering.
    pub fn render<T: SeqText>(&mut self, state: &mut T) {
        let m = self.0.as_raw();
        let ops = SeqTable::<T>::table();
        let (Some(start), Some(next), Some(stop), Some(show)) =
            (ops.start, ops.next, ops.stop, ops.show)
        else {
            return;
        };
        let mut pos: bindings::loff_t = 0;
        // SAFETY: `m` is our live seq_file; its `private` is `state`,
        // which nothing else uses while the `&mut` borrow lasts, and the
        // operations are called one at a time, with a valid position: the
        // contract of `T`'s operations (`SeqTable`).
        unsafe {
            (*m).private = ptr::from_mut(state).cast();
            let mut v = start(m, &mut pos);
            while !v.is_null() {
                let before = (*m).count;
                if show(m, v) != 0 || (*m).count >= (*m).size {
                    (*m).count = before.min((*m).size);
                    break;
                }
                v = next(m, v, &mut pos);
            }
            stop(m, v);
            (*m).private = ptr::null_mut();
        }
    }
}

/// The per-open state of a file that `seq_read()` serves from records it
/// gives one at a time, between a `start` and a `stop` of one read (which
/// may hold a lock across), and that is written one `write()` at a time.
///
/// A record is a word the operations pass each other (an index, a pointer
/// of their own); null ends a read.
pub trait SeqText: Sized {
    /// Whether only an open for reading gets a seq_file; a write-only open
    /// then keeps the state as the file's private data (which leaves
    /// `pwrite()` to its writers).
    const SEQ_FOR_READERS_ONLY: bool = false;

    /// The record at `*pos` at the start of a read (null: none).
    fn start(&mut self, m: &SeqFile, pos: &mut bindings::loff_t) -> *mut c_void;

    /// The record after `v`, advancing `*pos` (null: the end).
    fn next(&mut self, m: &SeqFile, v: *mut c_void, pos: &mut bindings::loff_t) -> *mut c_void;

    /// The end of a read.
    fn stop(&mut self) {}

    /// Prints the record `v`: 0, or an errno.
    fn show(&mut self, m: &SeqFile, v: *mut c_void) -> c_int;

    /// One `write()` of `cnt` bytes at the user address `ubuf` at the file
    /// position `pos`, which it advances: the bytes taken, or an errno.
    fn write(&mut self, _ubuf: *const c_char, _cnt: usize, _pos: &mut bindings::loff_t) -> isize {
        crate::error::code::EINVAL.to_errno() as isize
    }

    /// The last close.
    fn release(self) {}
}

/// The `seq_operations` of a [`SeqText`] `T`.
///
/// # Invariants
///
/// The operations are `T`'s adapters: each reads the private data of the
/// seq_file it is given as the `T` that [`open_with::<T>`] (or
/// [`SeqBuf::render`]) put there.
pub struct SeqTable<T>(bindings::seq_operations, PhantomData<fn(T)>);

// SAFETY: a table of function pointers that C only reads; it holds no `T`.
unsafe impl<T> Sync for SeqTable<T> {}

impl<T: SeqText> SeqTable<T> {
    /// `T`'s table.
    pub const NEW: Self = SeqTable(
        bindings::seq_operations {
            start: Some(start_adapter::<T>),
            next: Some(next_adapter::<T>),
            stop: Some(stop_adapter::<T>),
            show: Some(show_adapter::<T>),
        },
        PhantomData,
    );

    /// The C table of `T`.
    pub const fn table() -> &'static bindings::seq_operations {
        &Self::NEW.0
    }
}

/// The state of the file whose seq_file is `m`, and the seq_file.
///
/// # Safety
///
/// `m` is live for `'a`, in one operation of a table of `T`: its private
/// data is a `T` that nothing else uses meanwhile (the seq_file core calls
/// the operations of a file one at a time).
unsafe fn parts<'a, T>(m: *mut bindings::seq_file) -> (&'a mut T, &'a SeqFile) {
    // SAFETY: the function's contract.
    unsafe { (&mut *(*m).private.cast::<T>(), SeqFile::from_raw(m)) }
}

/// # Safety
///
/// An operation of `SeqTable<T>`: called only with the live seq_file of a
/// file opened with that table (`open_with::<T>`, `SeqBuf::render`), whose
/// private data is its `T`, one operation at a time, with the read's
/// position.
unsafe extern "C" fn start_adapter<T: SeqText>(
    m: *mut bindings::seq_file,
    pos: *mut bindings::loff_t,
) -> *mut c_void {
    // SAFETY: the function's contract; `pos` is the read's position, for
    // the call.
    let ((s, mf), pos) = unsafe { (parts::<T>(m), &mut *pos) };
    s.start(mf, pos)
}

/// # Safety
///
/// As for [`start_adapter`].
unsafe extern "C" fn next_adapter<T: SeqText>(
    m: *mut bindings::seq_file,
    v: *mut c_void,
    pos: *mut bindings::loff_t,
) -> *mut c_void {
    // SAFETY: as for `start_adapter`.
    let ((s, mf), pos) = unsafe { (parts::<T>(m), &mut *pos) };
    s.next(mf, v, pos)
}

/// # Safety
///
/// As for [`start_adapter`].
unsafe extern "C" fn stop_adapter<T: SeqText>(m: *mut bindings::seq_file, _v: *mut c_void) {
    // SAFETY: as for `start_adapter`.
    let (s, _) = unsafe { parts::<T>(m) };
    s.stop();
}

/// # Safety
///
/// As for [`start_adapter`].
unsafe extern "C" fn show_adapter<T: SeqText>(m: *mut bindings::seq_file, v: *mut c_void) -> c_int {
    // SAFETY: as for `start_adapter`.
    let (s, mf) = unsafe { parts::<T>(m) };
    s.show(mf, v)
}

const FMODE_READ: u32 = 1;

/// Whether a file opened for a `T` with mode `f_mode` has a seq_file
/// (else its private data is the state).
fn has_seq<T: SeqText>(f_mode: u32) -> bool {
    !T::SEQ_FOR_READERS_ONLY || f_mode & FMODE_READ != 0
}

/// Where the state of `file` is kept: the seq_file's private data, or
/// the file's (see [`SeqText::SEQ_FOR_READERS_ONLY`]).
///
/// # Safety
///
/// `file` was opened by [`open_with::<T>`] and is not released.
unsafe fn state_slot<T: SeqText>(file: *mut bindings::file) -> *mut *mut c_void {
    // SAFETY: per the function's contract: `seq_open()` made
    // `private_data` the seq_file, or `open_with` put the state there.
    unsafe {
        if has_seq::<T>((*file).f_mode) {
            let m: *mut bindings::seq_file = (*file).private_data.cast();
            ptr::addr_of_mut!((*m).private)
        } else {
            ptr::addr_of_mut!((*file).private_data)
        }
    }
}

/// Opens `file` with the state `state`, which goes if the open fails: 0,
/// or an errno.
///
/// # Safety
///
/// `file` is the VFS's file being opened, not yet opened by anything,
/// whose file operations read it with [`read`](bindings::seq_read)
/// (when it has a seq_file), [`write_adapter::<T>`] and
/// [`release_adapter::<T>`].
pub unsafe fn open_with<T: SeqText>(file: *mut bindings::file, state: T) -> c_int {
    let b = match crate::alloc::KBox::new(state, crate::alloc::flags::GFP_KERNEL) {
        Ok(b) => b,
        Err(_) => return ENOMEM.to_errno(),
    };
    // SAFETY: the file is the VFS's and ours until release (the contract);
    // on success `private_data` is the new seq_file, whose private data
    // takes the state (or, without a seq_file, `private_data` does) until
    // `release_adapter` takes it back.
    unsafe {
        if has_seq::<T>((*file).f_mode) {
            let r = bindings::seq_open(file, SeqTable::<T>::table());
            if r != 0 {
                return r;
            }
        }
        *state_slot::<T>(file) = crate::alloc::KBox::into_raw(b).cast();
    }
    0
}

/// One `write()` to a file opened by [`open_with::<T>`].
///
/// # Safety
///
/// Called by the VFS, as a file operation (or by one that forwards its
/// arguments), on a file opened by [`open_with::<T>`], with the file's
/// position.
pub unsafe extern "C" fn write_adapter<T: SeqText>(
    file: *mut bindings::file,
    ubuf: *const c_char,
    cnt: usize,
    ppos: *mut bindings::loff_t,
) -> isize {
    if cnt == 0 {
        return 0;
    }
    // SAFETY: the state `open_with` put in the slot of an open file (the
    // contract), and the file's position; the VFS serializes the writers
    // of a file position with its readers, so both borrows are the only
    // ones.
    let (s, pos) = unsafe { (&mut *(*state_slot::<T>(file)).cast::<T>(), &mut *ppos) };
    s.write(ubuf, cnt, pos)
}

/// The last close of a file opened by [`open_with::<T>`]: 0.
///
/// # Safety
///
/// As for [`write_adapter`], at the last close: nothing uses the file
/// after.
pub unsafe extern "C" fn release_adapter<T: SeqText>(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: the state `open_with` made (the contract), taken back at its
    // last use; the seq_file goes first.
    let s = unsafe {
        let slot = state_slot::<T>(file);
        let raw = (*slot).cast::<T>();
        *slot = ptr::null_mut();
        if has_seq::<T>((*file).f_mode) {
            bindings::seq_release(inode, file);
        }
        crate::alloc::KBox::from_raw(raw)
    };
    crate::alloc::KBox::into_inner(s).release();
    0
}
