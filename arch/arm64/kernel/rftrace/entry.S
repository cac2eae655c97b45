/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The arm64 trampolines of the Rust ftrace core.
 *
 * A traced function starts (after any BTI c) with two instructions the
 * core patches, and has an 8-byte ops literal just below it:
 *
 *	literal:	.quad	ops		(two pre-function NOPs at build)
 *	func:		[bti c]
 *			mov	x9, x30		(a NOP until boot)
 *	site:		bl	ftrace_caller	(or a NOP, or bl <direct trampoline>)
 *
 * So on entry to ftrace_caller x9 holds the traced function's return
 * address, x30 the address of the instruction after the site, and the
 * literal lies 8-byte aligned at 12 or 16 bytes below x30 - 4: rounding
 * x30 down to 8 and stepping back 16 bytes finds it in both cases.
 *
 * The literal names the ops to call (the core's list ops when several
 * want the site). ftrace_caller calls its func with a struct ftrace_regs
 * on the stack, or, when the ops is a direct one, goes to its direct
 * trampoline at once: the direct trampoline is entered exactly as if the
 * site had called it (x9 and x30 as above).
 */

#include <linux/linkage.h>
#include <linux/cfi_types.h>
#include <asm/asm-offsets.h>
#include <asm/assembler.h>

/*
 * ftrace_caller's frame, from sp up: the struct ftrace_regs; then two
 * frame records, the traced function's (so that an unwinder sees it
 * called from its parent) and ftrace_caller's own, above it, which x29
 * points at during the callback.
 */
#define FRAME_OWN	FREGS_SIZE
#define FRAME_TRACED	(FREGS_SIZE + 16)
#define FRAME_SIZE	(FREGS_SIZE + 32)

/* The pairs stored and loaded together are adjacent in the frame. */
#if (FREGS_LR != FREGS_FP + 8) || (FREGS_PC != FREGS_SP + 8)
#error "struct __arch_ftrace_regs: fp/lr or sp/pc are not adjacent"
#endif

/* x0..x7 to (stp) or from (ldp) the ftrace_regs at \base. */
	.macro	arg_regs, op, base
	\op	x0, x1, [\base, #FREGS_X0]
	\op	x2, x3, [\base, #FREGS_X2]
	\op	x4, x5, [\base, #FREGS_X4]
	\op	x6, x7, [\base, #FREGS_X6]
	.endm

	.text

SYM_CODE_START(ftrace_caller)
	/* A module reaches it through its PLT's br x16. */
	bti	c
	bic	x11, x30, #7
	ldr	x11, [x11, #-16]			// the site's ops
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS
	ldr	x17, [x11, #FTRACE_OPS_DIRECT_CALL]
	cbnz	x17, .Ldirect_now			// a direct ops: go there
#endif
	mov	x10, sp
	sub	sp, sp, #FRAME_SIZE
	arg_regs stp, sp
	str	x8, [sp, #FREGS_X8]
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS
	str	xzr, [sp, #FREGS_DIRECT_TRAMP]
#endif
	stp	x29, x9, [sp, #FREGS_FP]		// fp, lr: the caller's
	stp	x10, x30, [sp, #FREGS_SP]		// sp, pc: after the site
	stp	x29, x9, [sp, #FRAME_TRACED]
	add	x29, sp, #FRAME_TRACED
	stp	x29, x30, [sp, #FRAME_OWN]
	add	x29, sp, #FRAME_OWN

	/* op->func(ip of the site, parent ip, op, fregs) */
	sub	x0, x30, #AARCH64_INSN_SIZE
	mov	x1, x9
	mov	x2, x11
	mov	x3, sp
	ldr	x4, [x11, #FTRACE_OPS_FUNC]
	blr	x4

	arg_regs ldp, sp
	ldr	x8, [sp, #FREGS_X8]
	ldr	x29, [sp, #FREGS_FP]
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS
	/* A callback asked for a direct trampoline (a shared site). */
	ldr	x17, [sp, #FREGS_DIRECT_TRAMP]
	cbnz	x17, .Ldirect_late
#endif
	/*
	 * The return address may have been changed (the graph tracer's
	 * return_to_handler), and so may the pc.
	 */
	ldr	x30, [sp, #FREGS_LR]
	ldr	x9, [sp, #FREGS_PC]
	add	sp, sp, #FRAME_SIZE
	ret	x9

#ifdef CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS
.Ldirect_late:
	/* As the site would enter it: x9 the parent, x30 into the function. */
	ldr	x9, [sp, #FREGS_LR]
	ldr	x30, [sp, #FREGS_PC]
	add	sp, sp, #FRAME_SIZE
.Ldirect_now:
	br	x17
#endif
SYM_CODE_END(ftrace_caller)

/*
 * A direct trampoline that does nothing: back into the function with its
 * return address restored.
 */
SYM_CODE_START(ftrace_stub_direct_tramp)
	bti	c
	mov	x10, x30
	mov	x30, x9
	ret	x10
SYM_CODE_END(ftrace_stub_direct_tramp)

SYM_TYPED_FUNC_START(ftrace_stub)
	ret
SYM_FUNC_END(ftrace_stub)

#ifdef CONFIG_FUNCTION_GRAPH_TRACER
SYM_TYPED_FUNC_START(ftrace_stub_graph)
	ret
SYM_FUNC_END(ftrace_stub_graph)

/*
 * Where a hooked function returns: the graph core runs the return
 * callbacks and gives the real return address. The frame is a struct
 * ftrace_regs with the return value registers and the frame pointer.
 */
SYM_CODE_START(return_to_handler)
	sub	sp, sp, #FREGS_SIZE
	arg_regs stp, sp
	str	x29, [sp, #FREGS_FP]
	mov	x0, sp
	bl	ftrace_return_to_handler
	mov	x30, x0
	arg_regs ldp, sp
	add	sp, sp, #FREGS_SIZE
	ret
SYM_CODE_END(return_to_handler)
#endif

/*
 * The mutant number (CONFIG_FTRACE_CORE_RUST_MUTANTS) for the code that
 * reads it through kernel::ftrace; the arm64 trampolines have none of
 * their own.
 */
	.pushsection .data
	.balign	4
SYM_DATA_START(rftrace_mutant)
	.long	0
SYM_DATA_END(rftrace_mutant)
	.popsection
