// SPDX-License-Identifier: GPL-2.0

//! The users of the ops that choose functions: the filter APIs and
//! matching ([`api`]), filter-file commands and the `:mod:` cache
//! ([`probe`]), function probes ([`funcprobe`]) and the func mapper
//! ([`mapper`]).
//!
//! Uses [`crate::ops`] and the layers below it.

pub(crate) mod api;
pub(crate) mod funcprobe;
pub(crate) mod mapper;
pub(crate) mod probe;
