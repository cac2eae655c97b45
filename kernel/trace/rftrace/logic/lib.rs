// SPDX-License-Identifier: GPL-2.0
//! The portable logic of the Rust ftrace core.
//!
//! Every module here depends on `core` only: the kernel build compiles the
//! same files into vmlinux (see `kernel/trace/rftrace/`), and the host
//! workspace runs their tests, property tests included, with `cargo test`.
#![no_std]

#[cfg(test)]
extern crate std;

pub mod demangle;
pub mod explain;
pub mod fgraph;
#[cfg(test)]
mod fuzz;
pub mod glob;
pub mod iptable;
pub mod parser;
pub mod plan;
pub mod profile;
pub mod recursion;
pub mod retstack;
pub mod seek;
pub mod sites;
pub mod symbols;
pub mod wantindex;
