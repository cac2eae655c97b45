// SPDX-License-Identifier: GPL-2.0
//! The x86_64 layer's logic that needs no kernel: the instructions of a
//! call site and of the group trampolines, and the steps of rewriting a
//! site live.
//!
//! Every module here depends on `core` only: the kernel build compiles
//! the same files into the x86_64 layer (arch/x86/kernel/rftrace/), and
//! the host workspace runs their tests with `cargo test`. The generic
//! core's logic is kernel/trace/rftrace/logic/.
#![no_std]

#[cfg(test)]
extern crate std;

pub mod insn;
