/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The offsets of the arm64 structures that defs.rs and percpu.rs read,
 * from the C compiler: included by the generic core's abi_offsets.c,
 * whose constants they read at and check bindgen's layout against.
 */
#include <asm/ftrace.h>
#include <asm/thread_info.h>

#define RFTRACE_ARCH_OFFSETS()						\
	do {								\
		DEFINE(FREGS_SIZE, sizeof(struct __arch_ftrace_regs));	\
		OFFSET(FREGS_X0, __arch_ftrace_regs, regs);		\
		OFFSET(FREGS_FP, __arch_ftrace_regs, fp);		\
		OFFSET(FREGS_DIRECT_TRAMP, __arch_ftrace_regs, direct_tramp); \
		OFFSET(TI_PREEMPT_COUNT, thread_info, preempt.count);	\
		OFFSET(TI_PREEMPT_WORD, thread_info, preempt_count);	\
	} while (0)
