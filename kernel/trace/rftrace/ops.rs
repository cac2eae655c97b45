// SPDX-License-Identifier: GPL-2.0

//! The ops layer: the registered `ftrace_ops` ([`registry`], and the C
//! clients' objects in [`clients`]), the calls into the architecture
//! layer ([`arch`], [`archif`]), what the sites call: an ops' own
//! trampoline ([`assist`]), a site group's ([`groups`]) or the list
//! dispatcher ([`dispatch`], reading [`pidstate`]); the updates that plan
//! and write the sites ([`update`]); and on top register and unregister
//! ([`register`]), sub-ops ([`subops`]), direct calls ([`direct`]) and
//! the `ftrace_enabled` sysctl ([`sysctl`]).
//!
//! Each module uses those listed before it here and the layers below:
//! [`crate::sites`], [`crate::base`], [`crate::logic`].

pub(crate) mod arch;
pub(crate) mod archif;
pub(crate) mod assist;
pub(crate) mod clients;
pub(crate) mod direct;
pub(crate) mod directmap;
pub(crate) mod dispatch;
pub(crate) mod groups;
pub(crate) mod pidstate;
pub(crate) mod register;
pub(crate) mod registry;
pub(crate) mod subops;
pub(crate) mod sysctl;
pub(crate) mod update;
