// SPDX-License-Identifier: GPL-2.0

//! The top: the C entry points whose arguments or context no Rust type
//! can carry, each converting its raw arguments once and calling a safe
//! function ([`entry`]); and the table's life as C drives it, boot,
//! module load and unload, freed init text ([`module`]), with the names
//! kept of freed module init functions ([`initnames`]).
//!
//! May use every layer below.

pub(crate) mod entry;
pub(crate) mod initnames;
pub(crate) mod module;
