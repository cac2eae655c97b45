// SPDX-License-Identifier: GPL-2.0

//! The function graph core, in place of `kernel/trace/fgraph.c`: a task's
//! shadow stack ([`shadow`]), every task's ([`fgstacks`]), the graph ops
//! ([`gops`]) and the entry, return and registration ([`fgraph`]).
//!
//! Uses [`crate::ops`] and the layers below it, not [`crate::filter`].

#[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
pub(crate) mod fgraph;
#[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
pub(crate) mod fgstacks;
#[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
pub(crate) mod gops;
#[cfg(CONFIG_FUNCTION_GRAPH_TRACER)]
pub(crate) mod shadow;
