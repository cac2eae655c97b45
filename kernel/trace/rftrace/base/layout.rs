// SPDX-License-Identifier: GPL-2.0

//! The layout of the C structures the core reads through the bindings,
//! checked at compile time against the C compiler's (abi_offsets.c): a
//! bindgen that saw a different structure (as it once did for
//! `task_struct`, whose hot fields are therefore read at C's offsets,
//! task.rs) fails the build here instead of reading the wrong field.

use core::mem::{offset_of, size_of};
use kernel::bindings::{fgraph_ops, file, ftrace_ops, module, seq_file};

/// The offsets and sizes from the C compiler (those of the
/// architecture's structures too, which [`crate::base::archdep`] checks).
pub(crate) mod c {
    include!(env!("RFTRACE_ABI_OFFSETS"));
}

macro_rules! same {
    ($rust:expr, $c:expr) => {
        const _: () = assert!($rust == $c);
    };
}

same!(size_of::<ftrace_ops>(), c::OPS_SIZE);
same!(offset_of!(ftrace_ops, func), c::OPS_FUNC);
same!(offset_of!(ftrace_ops, next), c::OPS_NEXT);
same!(offset_of!(ftrace_ops, flags), c::OPS_FLAGS);
same!(offset_of!(ftrace_ops, private), c::OPS_PRIVATE);
same!(offset_of!(ftrace_ops, saved_func), c::OPS_SAVED_FUNC);
same!(offset_of!(ftrace_ops, local_hash), c::OPS_LOCAL_HASH);
same!(offset_of!(ftrace_ops, func_hash), c::OPS_FUNC_HASH);
same!(offset_of!(ftrace_ops, subop_list), c::OPS_SUBOP_LIST);
same!(offset_of!(ftrace_ops, list), c::OPS_LIST);
same!(offset_of!(ftrace_ops, managed), c::OPS_MANAGED);
same!(offset_of!(ftrace_ops, trampoline), c::OPS_TRAMPOLINE);
same!(
    offset_of!(ftrace_ops, trampoline_size),
    c::OPS_TRAMPOLINE_SIZE
);
same!(offset_of!(ftrace_ops, direct_call), c::OPS_DIRECT_CALL);

same!(size_of::<fgraph_ops>(), c::GOPS_SIZE);
same!(offset_of!(fgraph_ops, entryfunc), c::GOPS_ENTRYFUNC);
same!(offset_of!(fgraph_ops, retfunc), c::GOPS_RETFUNC);
same!(offset_of!(fgraph_ops, ops), c::GOPS_OPS);
same!(offset_of!(fgraph_ops, private), c::GOPS_PRIVATE);
same!(offset_of!(fgraph_ops, saved_func), c::GOPS_SAVED_FUNC);
same!(offset_of!(fgraph_ops, idx), c::GOPS_IDX);

same!(offset_of!(module, name), c::MODULE_NAME);
same!(
    offset_of!(module, ftrace_callsites),
    c::MODULE_FTRACE_CALLSITES
);
same!(
    offset_of!(module, num_ftrace_callsites),
    c::MODULE_NUM_FTRACE_CALLSITES
);

same!(offset_of!(seq_file, private), c::SEQ_FILE_PRIVATE);
same!(offset_of!(file, private_data), c::FILE_PRIVATE_DATA);
same!(offset_of!(file, f_mode), c::FILE_F_MODE);
same!(offset_of!(file, f_flags), c::FILE_F_FLAGS);
