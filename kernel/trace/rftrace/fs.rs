// SPDX-License-Identifier: GPL-2.0

//! The tracefs files of the core: the listings ([`files`]), the filter
//! files ([`filterfile`]) and the graph filter files ([`graphfile`]), the
//! function profiler ([`profile`]) and the pid files ([`pid`]).
//!
//! Uses [`crate::filter`], [`crate::graph`] and the layers below them.

pub(crate) mod files;
pub(crate) mod filterfile;
pub(crate) mod graphfile;
pub(crate) mod pid;
pub(crate) mod profile;
