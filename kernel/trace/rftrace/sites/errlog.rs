// SPDX-License-Identifier: GPL-2.0

//! Answers instead of a bare `EINVAL`: when a write to a filter file
//! selects nothing, the reason (`logic::explain`, over what kallsyms, the
//! call-site table and the section bounds say of the name) goes to the
//! tracing error_log, with the token as the command and a caret where the
//! reason points. The errno stays the C core's.

use crate::base::ffi::{log_err, CStrTable};
use crate::base::sys::TraceArray;
use crate::logic::explain::{explain, Place, Why, MESSAGES};
use crate::logic::parser::BUF_SIZE;
use core::ptr;
use kernel::bindings;
use kernel::ffi::{c_char, c_ulong};

/// The messages as the tracing core keeps them: it stores the array's
/// address with each entry and reads it whenever error_log is read.
static ERRS: CStrTable<{ MESSAGES.len() }> = CStrTable::new(&MESSAGES);

/// Whether `a` is in `[start, end)` of two section bounds.
fn within(a: u64, start: *const c_char, end: *const c_char) -> bool {
    (start as u64..end as u64).contains(&a)
}

/// Which kind of text `a` is in.
fn place(a: u64) -> Place {
    if crate::base::ktext::init().contains(&a) {
        Place::Init
    } else if within(
        a,
        ptr::addr_of!(bindings::__noinstr_text_start).cast(),
        ptr::addr_of!(bindings::__noinstr_text_end).cast(),
    ) || within(
        a,
        ptr::addr_of!(bindings::__entry_text_start).cast(),
        ptr::addr_of!(bindings::__entry_text_end).cast(),
    ) {
        Place::Unrecorded
    } else {
        Place::Text
    }
}

/// Why the function part of a token selected nothing (none: it names a
/// function with a call site).
pub(crate) fn explain_func(func: &[u8]) -> Option<(Why, usize)> {
    explain(
        func,
        |name| crate::sites::names::address_of(&[name]),
        |a| crate::sites::table::ftrace_location(a as c_ulong) != 0,
        place,
    )
}

/// Writes `why` to the error_log of `tr` (none: the top-level one), the
/// token `tok` as the command, the caret at byte `caret` of it.
pub(crate) fn log(tr: Option<TraceArray>, tok: &[u8], why: Why, caret: usize) {
    let mut cmd = [0u8; BUF_SIZE + 1];
    let n = tok.len().min(BUF_SIZE);
    cmd[..n].copy_from_slice(&tok[..n]);
    let Ok(cmd) = core::ffi::CStr::from_bytes_until_nul(&cmd) else {
        return;
    };
    log_err(
        tr,
        kernel::c_str!("ftrace"),
        cmd,
        &ERRS,
        why as u8,
        caret.min(n) as u16,
    );
}
