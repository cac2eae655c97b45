// SPDX-License-Identifier: GPL-2.0

//! The bottom layer: the C the core calls and the kernel objects it
//! handles. The C functions and data the kernel's bindings do not give
//! ([`ffi`]); the C-visible globals, lock guards and the proofs borrowed
//! from them, errno at the boundary ([`sys`]); the C structs whose
//! all-zero value is valid ([`zeroed`]); the cells of the core's
//! own state ([`cells`]); typed views of C objects: an ops'
//! atomic words ([`opsview`]), tasks and the recursion guard ([`task`]),
//! scheduler tracepoints ([`tp`]), trace arrays ([`trarray`]); the
//! kernel's text bounds ([`ktext`]), `NOKPROBE` ([`nokprobe`]), what
//! the architecture supplies at compile time ([`archdep`]), the
//! test-only deliberate breaks ([`mutant`]), checked C
//! layouts ([`layout`]); and the file plumbing every tracefs file of the
//! core shares ([`tracefs`], [`seqfile`]).
//!
//! Uses [`crate::logic`] and the `kernel` crate only. Most of the crate's
//! `unsafe` is here, each block arguing the C contract it relies on.

pub(crate) mod archdep;
pub(crate) mod cells;
pub(crate) mod ffi;
pub(crate) mod mutant;
pub(crate) mod nokprobe;
pub(crate) mod opsview;
pub(crate) mod sys;
pub(crate) mod task;
pub(crate) mod tp;
pub(crate) mod trarray;
pub(crate) mod zeroed;
// Each crate uses the part it needs.
#[allow(dead_code)]
pub(crate) mod ktext;
pub(crate) mod layout;
pub(crate) mod tracefs;
