// SPDX-License-Identifier: GPL-2.0

//! What 6.12's `kernel::alloc::Vec` lacks and the core needs: a push into
//! room already reserved, which neither allocates nor checks for growth
//! (later kernels have `Vec::push_within_capacity`). The boot table's
//! 17,000 and more records are pushed so, in a loop the compiler keeps
//! tight, where `Vec::push` calls out to `reserve` for each one.

use kernel::alloc::{Allocator, Vec};

/// Appends `x` to `v` if `v` has room for it without growing; gives `x`
/// back otherwise.
#[inline]
pub(crate) fn push_within_capacity<T, A: Allocator>(v: &mut Vec<T, A>, x: T) -> Result<(), T> {
    let len = v.len();
    let Some(slot) = v.spare_capacity_mut().first_mut() else {
        return Err(x);
    };
    slot.write(x);
    // SAFETY: the element at `len` (the first spare one) was just written,
    // and there was such an element, so `len + 1` is within the capacity.
    unsafe { v.set_len(len + 1) };
    Ok(())
}
