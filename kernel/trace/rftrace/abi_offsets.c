// SPDX-License-Identifier: GPL-2.0
/*
 * The layout of the C structures the Rust core reads through its
 * bindings, from the C compiler, made into Rust constants at build time
 * as task_offsets.c is (abi_offsets.rs): layout.rs asserts at compile
 * time that bindgen's layout is the same, so that a bindings mismatch
 * fails the build instead of reading the wrong field.
 */
#define COMPILE_OFFSETS
#include <linux/kbuild.h>
#include <linux/ftrace.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/fs.h>
/* The architecture's structures (its register frame), from its directory. */
#include "arch_offsets.h"

int main(void)
{
	DEFINE(OPS_SIZE, sizeof(struct ftrace_ops));
	OFFSET(OPS_FUNC, ftrace_ops, func);
	OFFSET(OPS_NEXT, ftrace_ops, next);
	OFFSET(OPS_FLAGS, ftrace_ops, flags);
	OFFSET(OPS_PRIVATE, ftrace_ops, private);
	OFFSET(OPS_SAVED_FUNC, ftrace_ops, saved_func);
	OFFSET(OPS_LOCAL_HASH, ftrace_ops, local_hash);
	OFFSET(OPS_FUNC_HASH, ftrace_ops, func_hash);
	OFFSET(OPS_SUBOP_LIST, ftrace_ops, subop_list);
	OFFSET(OPS_LIST, ftrace_ops, list);
	OFFSET(OPS_MANAGED, ftrace_ops, managed);
	OFFSET(OPS_TRAMPOLINE, ftrace_ops, trampoline);
	OFFSET(OPS_TRAMPOLINE_SIZE, ftrace_ops, trampoline_size);
	OFFSET(OPS_DIRECT_CALL, ftrace_ops, direct_call);
	DEFINE(GOPS_SIZE, sizeof(struct fgraph_ops));
	OFFSET(GOPS_ENTRYFUNC, fgraph_ops, entryfunc);
	OFFSET(GOPS_RETFUNC, fgraph_ops, retfunc);
	OFFSET(GOPS_OPS, fgraph_ops, ops);
	OFFSET(GOPS_PRIVATE, fgraph_ops, private);
	OFFSET(GOPS_SAVED_FUNC, fgraph_ops, saved_func);
	OFFSET(GOPS_IDX, fgraph_ops, idx);
	OFFSET(MODULE_NAME, module, name);
	OFFSET(MODULE_FTRACE_CALLSITES, module, ftrace_callsites);
	OFFSET(MODULE_NUM_FTRACE_CALLSITES, module, num_ftrace_callsites);
	RFTRACE_ARCH_OFFSETS();
	OFFSET(SEQ_FILE_PRIVATE, seq_file, private);
	OFFSET(FILE_PRIVATE_DATA, file, private_data);
	OFFSET(FILE_F_MODE, file, f_mode);
	OFFSET(FILE_F_FLAGS, file, f_flags);
	return 0;
}
