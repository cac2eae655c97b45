// SPDX-License-Identifier: GPL-2.0
//! The modules of the `recordmcount` host tool, as a library for the tests.
//!
//! The tool itself is `recordmcount.rs`, which declares the same module
//! files so that it also builds with a plain `rustc` call (std only).

pub mod elf;
pub mod record;
