// SPDX-License-Identifier: GPL-2.0

//! The kernel image's text, by the linker's section bounds (shared by the
//! generic and the arch crate, as `nokprobe.rs` is): where a call site
//! can be read directly rather than through the fault-checking copy, and
//! which recorded sites belong to the image at all.
//!
//! The core text (`_stext` to `_etext`) stays mapped and readable for as
//! long as the kernel runs. The init text (`_sinittext` to `_einittext`)
//! is mapped until `free_initmem()`, after which the range is unmapped,
//! never reused for other text: a check against it is still right, a read
//! from it no longer.

use core::ops::Range;
use core::ptr;
use kernel::bindings;

/// The core kernel text.
pub(crate) fn core() -> Range<u64> {
    // Linker symbols: only their addresses are taken.
    ptr::addr_of!(bindings::_stext) as u64..ptr::addr_of!(bindings::_etext) as u64
}

/// The init text of the kernel image.
pub(crate) fn init() -> Range<u64> {
    // Linker symbols: only their addresses are taken.
    ptr::addr_of!(bindings::_sinittext) as u64..ptr::addr_of!(bindings::_einittext) as u64
}

/// Whether the `len` bytes at `ip` lie in `text` (`len` at least 1).
pub(crate) fn holds(text: &Range<u64>, ip: u64, len: usize) -> bool {
    text.contains(&ip) && ip.saturating_add(len as u64) <= text.end
}

/// Whether `ip` is in the image's core or init text (C's
/// `is_kernel_text() || is_kernel_inittext()`).
pub(crate) fn image(ip: u64) -> bool {
    core().contains(&ip) || init().contains(&ip)
}
