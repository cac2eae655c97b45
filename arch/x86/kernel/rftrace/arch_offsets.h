/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The offsets of the x86_64 structures that defs.rs reads, from the C
 * compiler: included by the generic core's abi_offsets.c, whose
 * constants defs.rs checks bindgen's layout against.
 */
#include <asm/ptrace.h>

#define RFTRACE_ARCH_OFFSETS()					\
	do {							\
		DEFINE(PT_REGS_SIZE, sizeof(struct pt_regs));	\
		OFFSET(PT_REGS_AX, pt_regs, ax);		\
		OFFSET(PT_REGS_ORIG_AX, pt_regs, orig_ax);	\
		OFFSET(PT_REGS_CS, pt_regs, cs);		\
	} while (0)
