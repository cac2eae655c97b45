// SPDX-License-Identifier: GPL-2.0
//! The arm64 layer's logic that needs no kernel: the instructions of a
//! call site and where its ops literal lies ([`insn`]), and the order in
//! which a site's words are written ([`steps`]).
//!
//! Every module here depends on `core` only, for the kernel build and
//! for the host tests (`cargo test`). The generic core's logic is
//! kernel/trace/rftrace/logic/.
#![no_std]

#[cfg(test)]
extern crate std;

pub mod insn;
pub mod steps;
