// SPDX-License-Identifier: GPL-2.0

//! The tracefs files of the core that `seq_read()` serves (the filter
//! files and the pid files): a file is a type implementing [`SeqText`],
//! whose safe methods the generic thunks below call with its per-open
//! state; the thunks are the only unsafe code such a file needs for the
//! VFS and seq_file protocols.

use crate::base::tracefs::{opening, Fops, InodeData, OpenMode, SeqFile};
use core::ptr;
use kernel::bindings;
use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;

/// A tracefs file served by `seq_read()` from records its state gives one
/// at a time, between a `start` and a `stop` of one read (which may hold
/// a lock across), and written one `write()` at a time.
pub(crate) trait SeqText: Sized {
    /// The file's `seq_operations` ([`seq_ops::<Self>()`] in a static).
    fn seq_ops() -> *const bindings::seq_operations;

    /// Whether only an open for reading gets a seq_file; a write-only
    /// open then keeps the state as the file's private data (C's filter
    /// files do so, which leaves `pwrite()` to their writers).
    const SEQ_FOR_READERS_ONLY: bool = false;

    /// The record at `*pos` at the start of a read (null: none).
    fn start(&mut self, m: &SeqFile, pos: &mut bindings::loff_t) -> *mut c_void;

    /// The record after `v`, advancing `*pos` (null: the end).
    fn next(&mut self, m: &SeqFile, v: *mut c_void, pos: &mut bindings::loff_t) -> *mut c_void;

    /// The end of a read.
    fn stop(&mut self) {}

    /// Prints the record `v` (0, or an errno).
    fn show(&mut self, m: &SeqFile, v: *mut c_void) -> c_int;

    /// One `write()` of `cnt` bytes at the user address `ubuf` at the
    /// file position `pos`, which it advances: the bytes taken, or an
    /// errno.
    fn write(&mut self, ubuf: *const c_char, cnt: usize, pos: &mut bindings::loff_t) -> isize;

    /// The last close.
    fn release(self) {}
}

/// How [`fops`] opens a [`SeqText`] file from its inode's data.
pub(crate) trait SeqOpen {
    /// What the file's inode holds.
    type Data: InodeData;
    /// The per-open state.
    type State: SeqText;

    /// The per-open state, for the inode data `data` (what the file's
    /// creator gave) and the open mode.
    fn open(data: Self::Data, mode: OpenMode) -> Result<Self::State>;
}

/// The seq_file of an open `T` file, as its `seq_operations` get it:
/// the thunks below take it as their `struct seq_file *` (the ABI of a
/// non-null pointer: `repr(transparent)`), installed by [`seq_ops`].
///
/// # Invariants
///
/// The seq_file is live for the call it is passed to, and its `private`
/// is the `T` that [`open_with::<T>`] made, which nothing else uses
/// during the call (the seq_file core calls one operation at a time).
#[repr(transparent)]
struct SeqOf<T>(SeqFile, core::marker::PhantomData<T>);

impl<T> SeqOf<T> {
    /// The file's state and its seq_file, for the call.
    fn parts(&mut self) -> (&mut T, &SeqFile) {
        // SAFETY: `private` is the open file's `T`, which nothing else
        // uses during the call (the invariants); `&mut self` makes this
        // the call's one borrow of it.
        let s = unsafe { &mut *(*self.0.as_ptr()).private.cast::<T>() };
        (s, &self.0)
    }
}

const FMODE_READ: u32 = 1;

/// Whether a file opened for a `T` with mode `f_mode` has a seq_file
/// (else its private data is the state).
fn has_seq<T: SeqText>(f_mode: u32) -> bool {
    !T::SEQ_FOR_READERS_ONLY || f_mode & FMODE_READ != 0
}

/// Where the state of `file` is kept: the seq_file's private, or the
/// file's (see [`SeqText::SEQ_FOR_READERS_ONLY`]).
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

extern "C" fn start_thunk<T: SeqText>(m: &mut SeqOf<T>, pos: &mut bindings::loff_t) -> *mut c_void {
    let (s, mf) = m.parts();
    s.start(mf, pos)
}

/// `v` is what `start` or `next` gave.
extern "C" fn next_thunk<T: SeqText>(
    m: &mut SeqOf<T>,
    v: *mut c_void,
    pos: &mut bindings::loff_t,
) -> *mut c_void {
    let (s, mf) = m.parts();
    s.next(mf, v, pos)
}

extern "C" fn stop_thunk<T: SeqText>(m: &mut SeqOf<T>, _v: *mut c_void) {
    m.parts().0.stop();
}

extern "C" fn show_thunk<T: SeqText>(m: &mut SeqOf<T>, v: *mut c_void) -> c_int {
    let (s, mf) = m.parts();
    s.show(mf, v)
}

/// The `seq_operations` of `T`, for a static of its own.
pub(crate) const fn seq_ops<T: SeqText>() -> bindings::seq_operations {
    type M = bindings::seq_file;
    type Pos = bindings::loff_t;
    type Start<T> = for<'a, 'b> extern "C" fn(&'a mut SeqOf<T>, &'b mut Pos) -> *mut c_void;
    type Next<T> =
        for<'a, 'b> extern "C" fn(&'a mut SeqOf<T>, *mut c_void, &'b mut Pos) -> *mut c_void;
    type Stop<T> = for<'a> extern "C" fn(&'a mut SeqOf<T>, *mut c_void);
    type Show<T> = for<'a> extern "C" fn(&'a mut SeqOf<T>, *mut c_void) -> c_int;
    // SAFETY: the same ABI (references and `SeqOf`, `repr(transparent)`,
    // are pointers), and the seq_file core calls these operations only
    // with what the typed arguments promise: the live seq_file of a file
    // that `open_with::<T>` opened (the only files `T::seq_ops()` is given
    // to) and has not released, one operation at a time, and the read's
    // position.
    unsafe {
        bindings::seq_operations {
            start: Some(core::mem::transmute::<
                Start<T>,
                unsafe extern "C" fn(*mut M, *mut Pos) -> *mut c_void,
            >(start_thunk::<T>)),
            next: Some(core::mem::transmute::<
                Next<T>,
                unsafe extern "C" fn(*mut M, *mut c_void, *mut Pos) -> *mut c_void,
            >(next_thunk::<T>)),
            stop: Some(core::mem::transmute::<
                Stop<T>,
                unsafe extern "C" fn(*mut M, *mut c_void),
            >(stop_thunk::<T>)),
            show: Some(core::mem::transmute::<
                Show<T>,
                unsafe extern "C" fn(*mut M, *mut c_void) -> c_int,
            >(show_thunk::<T>)),
        }
    }
}

/// Opens `file` with the state `state` (which goes if the open fails).
///
/// # Safety
///
/// `file` is the VFS's file being opened, not yet opened by anything.
pub(crate) unsafe fn open_with<T: SeqText>(file: *mut bindings::file, state: T) -> c_int {
    let b = match KBox::new(state, GFP_KERNEL) {
        Ok(b) => b,
        Err(_) => return ENOMEM.to_errno(),
    };
    // SAFETY: the file is the VFS's and ours until release; on success
    // `private_data` is the new seq_file, whose `private` takes the state
    // (or, without a seq_file, `private_data` does) until `release` takes
    // it back.
    unsafe {
        if has_seq::<T>((*file).f_mode) {
            let r = bindings::seq_open(file, T::seq_ops());
            if r != 0 {
                return r;
            }
        }
        *state_slot::<T>(file) = KBox::into_raw(b).cast();
    }
    0
}

/// # Safety
///
/// Called by the VFS through [`fops::<T>`] with a live inode and file.
unsafe extern "C" fn open_thunk<T: SeqOpen>(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: the VFS's inode and file, being opened (the contract), of a
    // file whose operations are `fops::<T>()`: its data is a `T::Data`.
    let (data, mode) = unsafe { opening::<T::Data>(inode, file) };
    match T::open(data, mode) {
        // SAFETY: the VFS's file, being opened.
        Ok(s) => unsafe { open_with(file, s) },
        Err(e) => e.to_errno(),
    }
}

/// One `write()` to a file opened by [`open_with::<T>`].
///
/// # Safety
///
/// Called by the VFS (through [`fops::<T>`], or a file operation of
/// `T`'s that forwards its arguments) on a file opened by
/// [`open_with::<T>`], with the file's position.
pub(crate) unsafe extern "C" fn write_thunk<T: SeqText>(
    file: *mut bindings::file,
    ubuf: *const c_char,
    cnt: usize,
    ppos: *mut bindings::loff_t,
) -> isize {
    if cnt == 0 {
        return 0;
    }
    // SAFETY: the state `open_with` put in the slot of an open file (the
    // contract), and the file's position; the VFS serializes writers of a
    // file position with its readers, so both borrows are the only ones.
    let (s, pos) = unsafe { (&mut *(*state_slot::<T>(file)).cast::<T>(), &mut *ppos) };
    s.write(ubuf, cnt, pos)
}

/// The last close of a file opened by [`open_with::<T>`].
///
/// # Safety
///
/// As for [`write_thunk`], at the last close: nothing uses the file
/// after.
pub(crate) unsafe extern "C" fn release_thunk<T: SeqText>(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: the state `open_with` made (the contract), taken back at
    // its last use; the seq_file goes first.
    let s = unsafe {
        let slot = state_slot::<T>(file);
        let raw = (*slot).cast::<T>();
        *slot = ptr::null_mut();
        if has_seq::<T>((*file).f_mode) {
            bindings::seq_release(inode, file);
        }
        KBox::from_raw(raw)
    };
    KBox::into_inner(s).release();
    0
}

/// The file operations of a [`SeqOpen`] file.
pub(crate) const fn fops<T: SeqOpen>() -> Fops<T::Data> {
    let f = bindings::file_operations {
        open: Some(open_thunk::<T>),
        read: Some(bindings::seq_read),
        write: Some(write_thunk::<T::State>),
        llseek: Some(crate::base::ffi::tracing_lseek),
        release: Some(release_thunk::<T::State>),
        ..crate::base::tracefs::zeroed_fops()
    };
    // SAFETY: `open_thunk::<T>` reads the inode's data as a `T::Data`.
    unsafe { Fops::new(f) }
}
