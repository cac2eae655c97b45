// SPDX-License-Identifier: GPL-2.0
/*
 * The offsets in struct task_struct the Rust core's hot path uses, made
 * into Rust constants at build time (task_offsets.rs, as asm-offsets.h is
 * made for assembly): the Rust bindings' layout of task_struct is not
 * trusted here, and reading offsets at run time would cost a load each.
 */
#define COMPILE_OFFSETS
#include <linux/kbuild.h>
#include <linux/sched.h>

int main(void)
{
	OFFSET(RET_STACK, task_struct, ret_stack);
	OFFSET(CURR_RET_STACK, task_struct, curr_ret_stack);
	OFFSET(CURR_RET_DEPTH, task_struct, curr_ret_depth);
	OFFSET(TRACE_OVERRUN, task_struct, trace_overrun);
	OFFSET(FTRACE_TIMESTAMP, task_struct, ftrace_timestamp);
	OFFSET(TRACING_GRAPH_PAUSE, task_struct, tracing_graph_pause);
	OFFSET(TRACE_RECURSION, task_struct, trace_recursion);
	OFFSET(PID, task_struct, pid);
	return 0;
}
