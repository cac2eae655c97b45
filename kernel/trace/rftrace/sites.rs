// SPDX-License-Identifier: GPL-2.0

//! The call sites: the table of every site's record ([`table`]), the
//! symbol names of sites ([`names`], [`lookup`]), the function sets that
//! name sites ([`hash`]) and how sets are published to lockless readers
//! and retired ([`publish`]), and the error log of a site that could not
//! be written ([`errlog`]).
//!
//! Uses [`crate::base`] and [`crate::logic`].

pub(crate) mod errlog;
pub(crate) mod hash;
pub(crate) mod lookup;
pub(crate) mod names;
pub(crate) mod publish;
pub(crate) mod table;
