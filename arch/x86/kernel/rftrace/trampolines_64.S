/* SPDX-License-Identifier: GPL-2.0 */
/*
 * x86_64 trampolines of the Rust ftrace core.
 *
 * A traced function starts with a 5-byte call site. While nothing traces
 * it, the site is a NOP; when something does, the site calls one of the
 * trampolines below. A trampoline builds a struct pt_regs frame on the
 * stack (struct ftrace_regs is a pt_regs on x86_64), calls the tracing
 * callback with
 *
 *	rdi = the site, rsi = the traced function's return address,
 *	rdx = function_trace_op, rcx = the frame,
 *
 * restores what the callback may have changed and returns into the traced
 * function, or wherever the callback pointed regs->ip (IPMODIFY).
 *
 * ftrace_caller saves the argument registers only and leaves regs->cs 0,
 * which tells ftrace_get_regs() that the frame is not a full pt_regs.
 * ftrace_regs_caller saves everything, flags included, and can also
 * continue into a direct trampoline named by regs->orig_ax.
 *
 * The callback call of each trampoline (ftrace_call, ftrace_regs_call) is
 * itself a 5-byte call that the core rewrites at run time.
 *
 * Per-ops trampolines are copies of the code from ftrace_caller (or
 * ftrace_regs_caller) up to its *_more_end label, with a return of their
 * own at *_end and the ops pointer after the code; the copy loads that
 * pointer instead of function_trace_op (the 7-byte load at *_op_ptr) and
 * calls the ops' function, or, for a site group, jumps to the group
 * calls (*_more) that call each member. So the code copied must be
 * position independent apart from that load and the calls, and
 * ftrace_regs_caller_jmp must be a 2-byte jnz (the copy replaces it with
 * a 2-byte NOP).
 */

#include <linux/export.h>
#include <linux/cfi_types.h>
#include <linux/linkage.h>
#include <asm/asm-offsets.h>
#include <asm/ptrace.h>
#include <asm/ftrace.h>
#include <asm/segment.h>
#include <asm/nospec-branch.h>
#include <asm/unwind_hints.h>
#include <asm/frame.h>

#ifdef CONFIG_FTRACE_CORE_RUST_MUTANTS
/*
 * The deliberate breaks of a mutants kernel (FTRACE_CORE_RUST_MUTANTS,
 * kernel/trace/rftrace/base/mutant.rs, whose numbers these are): the one
 * switched on (the rftrace_mutant parameter) and, after it, the count of
 * the calls of the one-in-256 break.
 */
#define RFT_MUTANT_CLOBBER_CALLEE	4
#define RFT_MUTANT_CLOBBER_ARG		5
#define RFT_MUTANT_CLOBBER_RET		6
	.pushsection .data
	.balign	8
SYM_DATA_START(rftrace_mutant)
	.long	0
	.long	0
SYM_DATA_END(rftrace_mutant)
	.popsection
#endif

	.code64
	.section .text, "ax"

/*
 * With frame pointers the trampolines first build two frames, as C's
 * do: one for the traced function's caller (its return address) and one
 * for the traced function (the site's return address), so a frame-pointer
 * unwinder walks from a callback through the trampoline into both. Five
 * words: the original rbp, then each frame's return address and link.
 */
#ifdef CONFIG_FRAME_POINTER
# define FP_FRAMES	(8 + 16 * 2)
#else
# define FP_FRAMES	0
#endif
/* From the stack pointer under the pt_regs frame to the words above it. */
#define REGS_TOP	(FRAME_SIZE + FP_FRAMES)

.macro rft_fp_frames
#ifdef CONFIG_FRAME_POINTER
	pushq	%rbp
	/* The caller's frame: the traced function's return address. */
	pushq	8*2(%rsp)
	pushq	%rbp
	movq	%rsp, %rbp
	/* The traced function's frame: the site's return address. */
	pushq	8*3(%rsp)
	pushq	%rbp
	movq	%rsp, %rbp
#endif
.endm

/*
 * Reserve the pt_regs frame of ftrace_caller and fill in what every
 * callback may use: the argument registers, ip = the return address of
 * the site's call (site + 5) and sp = the stack pointer the traced
 * function had at its entry, and with frame pointers rbp, the traced
 * function's frame. Leaves the first two callback arguments in rdi and
 * rsi.
 *
 * That is the whole ftrace_regs of an entry: the parameter registers,
 * sp, ip and the frame pointer. rax is not among them: at a function's
 * entry it holds nothing the function reads (the kernel is built with
 * -mskip-rax-setup, so not even a variadic callee reads %al), and the
 * return value registers belong to the exit's frame (return_to_handler's
 * own). orig_ax only says whether a direct call follows, which only
 * ftrace_regs_caller tests. Without frame pointers rbp is an ordinary
 * callee-saved register, nothing the frame promises.
 */
.macro rft_save_frame
	rft_fp_frames
	subq	$FRAME_SIZE, %rsp
	movq	%rdi, RDI(%rsp)
	movq	%rsi, RSI(%rsp)
	movq	%rdx, RDX(%rsp)
	movq	%rcx, RCX(%rsp)
	movq	%r8, R8(%rsp)
	movq	%r9, R9(%rsp)
#ifdef CONFIG_FRAME_POINTER
	/* rbp is the trampoline's frame now; the traced function's is below it. */
	movq	REGS_TOP-8(%rsp), %rax
	movq	%rax, RBP(%rsp)
#endif

	/* Above the frame: site + 5, the traced function's return address. */
	movq	REGS_TOP(%rsp), %rdi
	movq	%rdi, RIP(%rsp)
	subq	$MCOUNT_INSN_SIZE, %rdi
	movq	REGS_TOP+8(%rsp), %rsi
	leaq	REGS_TOP+8(%rsp), %rdx
	movq	%rdx, RSP(%rsp)
.endm

/*
 * The full pt_regs frame of ftrace_regs_caller, pushed from regs->ss down
 * to regs->r15 as the kernel's entry code pushes one: the flags straight
 * into regs->flags before anything changes them, orig_ax = 0 (no direct
 * call yet), rbp the traced function's frame. The same two callback
 * arguments in rdi and rsi as rft_save_frame.
 */
.macro rft_push_regs
	rft_fp_frames
	pushq	$__KERNEL_DS
	/* rsp before this push; made the traced function's sp below. */
	pushq	%rsp
	pushfq
	pushq	$__KERNEL_CS
	/* Site + 5, above the frame. */
	pushq	REGS_TOP-CS(%rsp)
	pushq	$0
	pushq	%rdi
	pushq	%rsi
	pushq	%rdx
	pushq	%rcx
	pushq	%rax
	pushq	%r8
	pushq	%r9
	pushq	%r10
	pushq	%r11
	pushq	%rbx
#ifdef CONFIG_FRAME_POINTER
	/* rbp is the trampoline's frame now; the traced function's is above. */
	pushq	REGS_TOP-8-RBX(%rsp)
#else
	pushq	%rbp
#endif
	pushq	%r12
	pushq	%r13
	pushq	%r14
	pushq	%r15
	/* The flags are saved: add freely. From rsp at SS to above site + 5. */
	addq	$REGS_TOP+8-SS, RSP(%rsp)
	movq	RIP(%rsp), %rdi
	subq	$MCOUNT_INSN_SIZE, %rdi
	movq	REGS_TOP+8(%rsp), %rsi
.endm

/*
 * Reload the argument registers of the frame; callbacks may have changed
 * them. @bp: reload rbp too (the full-regs trampoline, or frame pointers,
 * which the trampoline moved); else it is callee-saved and nothing set it.
 * @ax: reload rax (the full-regs trampoline; see rft_save_frame).
 */
.macro rft_load_frame bp=1, ax=1
	.if \bp
	movq	RBP(%rsp), %rbp
	.endif
	.if \ax
	movq	RAX(%rsp), %rax
	.endif
	movq	R9(%rsp), %r9
	movq	R8(%rsp), %r8
	movq	RCX(%rsp), %rcx
	movq	RDX(%rsp), %rdx
	movq	RSI(%rsp), %rsi
	movq	RDI(%rsp), %rdi
.endm

/*
 * The register breaks of a mutants kernel, after the callbacks and before
 * the frame is reloaded: the sixth argument's slot (reloaded into r9
 * next), or one call in 256, rbx, a register the traced function's
 * caller expects back. rax is free here. The address of the switch is
 * absolute: per-ops copies run this code too.
 */
.macro rft_mutants
#ifdef CONFIG_FTRACE_CORE_RUST_MUTANTS
	movabsq	$rftrace_mutant, %rax
	cmpl	$RFT_MUTANT_CLOBBER_ARG, (%rax)
	jne	.Lrft_mut_callee\@
	notq	R9(%rsp)
	jmp	.Lrft_mut_end\@
.Lrft_mut_callee\@:
	cmpl	$RFT_MUTANT_CLOBBER_CALLEE, (%rax)
	jne	.Lrft_mut_end\@
	lock incl 4(%rax)
	testb	$0xff, 4(%rax)
	jnz	.Lrft_mut_end\@
	notq	%rbx
.Lrft_mut_end\@:
#endif
.endm

/*
 * The calls of a site group (kernel/trace/rftrace/groups.rs): a group's
 * trampoline is a per-ops copy whose callback call (ftrace_call,
 * ftrace_regs_call) is a jmp to this, which calls each member's callback
 * with the member's ops, the same site, parent and frame, then goes back
 * to just after the callback call. The copy writes the members' ops into
 * the movabs and their callbacks into the calls, and a jmp to the tail
 * after the last used slot. Slot 0's call is counted by the call-depth
 * account before the callback call; every other slot counts its own. The
 * site and the parent stay in rbx and r12, callee-saved, because a
 * callback may change the parent's slot on the stack (the graph tracer).
 * Never entered in the template itself: after its ret, with the unwind
 * state of the callback call (UNWIND_HINT_SAVE there, RESTORE here),
 * which the copies share (the ORC unwinder reads a copy with the
 * template's data, at the same offset).
 *
 * @name: the trampoline; @back: where to go after the calls.
 */
#define RFT_GROUP_SLOTS 8

.macro rft_group_calls name, back
	.globl	\name\()_more
\name\()_more:
	/* The state of the callback call (its UNWIND_HINT_SAVE). */
	UNWIND_HINT_RESTORE
	ANNOTATE_NOENDBR
	pushq	%rbx
	pushq	%r12
	movq	%rdi, %rbx
	movq	%rsi, %r12
	.globl	\name\()_slot0
\name\()_slot0:
	ANNOTATE_NOENDBR
	movabsq	$0, %rdx
	leaq	16(%rsp), %rcx
	call	ftrace_stub
	.globl	\name\()_slot1
\name\()_slot1:
	ANNOTATE_NOENDBR
	.rept	RFT_GROUP_SLOTS - 1
	movq	%rbx, %rdi
	movq	%r12, %rsi
	movabsq	$0, %rdx
	leaq	16(%rsp), %rcx
	CALL_DEPTH_ACCOUNT
	call	ftrace_stub
	.endr
	.globl	\name\()_tail
\name\()_tail:
	ANNOTATE_NOENDBR
	popq	%r12
	popq	%rbx
	jmp	\back
	.globl	\name\()_more_end
\name\()_more_end:
.endm

SYM_TYPED_FUNC_START(ftrace_stub)
	CALL_DEPTH_ACCOUNT
	RET
SYM_FUNC_END(ftrace_stub)

SYM_TYPED_FUNC_START(ftrace_stub_graph)
	CALL_DEPTH_ACCOUNT
	RET
SYM_FUNC_END(ftrace_stub_graph)

/* What the sites call in the object files: nothing. */
SYM_FUNC_START(__fentry__)
	CALL_DEPTH_ACCOUNT
	RET
SYM_FUNC_END(__fentry__)
EXPORT_SYMBOL(__fentry__)

SYM_FUNC_START(ftrace_caller)
	rft_save_frame
	CALL_DEPTH_ACCOUNT

SYM_INNER_LABEL(ftrace_caller_op_ptr, SYM_L_GLOBAL)
	ANNOTATE_NOENDBR
	movq	function_trace_op(%rip), %rdx
	movq	$0, CS(%rsp)
	movq	%rsp, %rcx

	CALL_DEPTH_ACCOUNT
SYM_INNER_LABEL(ftrace_call, SYM_L_GLOBAL)
	ANNOTATE_NOENDBR
	UNWIND_HINT_SAVE
	call	ftrace_stub

	/*
	 * Return to regs->ip, which an IPMODIFY callback may have moved. A
	 * per-ops trampoline of an ops that does not modify the ip jumps over
	 * this (ftrace_caller_ip .. ftrace_caller_ip_end).
	 */
SYM_INNER_LABEL(ftrace_caller_ip, SYM_L_GLOBAL)
	ANNOTATE_NOENDBR
	movq	RIP(%rsp), %rax
	movq	%rax, REGS_TOP(%rsp)
SYM_INNER_LABEL(ftrace_caller_ip_end, SYM_L_GLOBAL)
	ANNOTATE_NOENDBR
	rft_mutants
#ifdef CONFIG_FRAME_POINTER
	rft_load_frame ax=0
#else
	rft_load_frame bp=0, ax=0
#endif
	addq	$REGS_TOP, %rsp
SYM_INNER_LABEL(ftrace_caller_end, SYM_L_GLOBAL)
	ANNOTATE_NOENDBR
	RET
	/* Room for a copy's own return (a jmp to the return thunk). */
	.skip	5, 0xcc
	rft_group_calls ftrace_caller, ftrace_caller_ip
SYM_FUNC_END(ftrace_caller)
STACK_FRAME_NON_STANDARD_FP(ftrace_caller)

SYM_FUNC_START(ftrace_regs_caller)
	rft_push_regs
	CALL_DEPTH_ACCOUNT

SYM_INNER_LABEL(ftrace_regs_caller_op_ptr, SYM_L_GLOBAL)
	ANNOTATE_NOENDBR
	movq	function_trace_op(%rip), %rdx
	ENCODE_FRAME_POINTER
	movq	%rsp, %rcx

	CALL_DEPTH_ACCOUNT
SYM_INNER_LABEL(ftrace_regs_call, SYM_L_GLOBAL)
	ANNOTATE_NOENDBR
	UNWIND_HINT_SAVE
	call	ftrace_stub
.Lrft_regs_back:

	movq	RBX(%rsp), %rbx
	movq	R10(%rsp), %r10
	movq	R12(%rsp), %r12
	movq	R13(%rsp), %r13
	movq	R14(%rsp), %r14
	movq	R15(%rsp), %r15

	/* The ip as the callback left it (the flags are in place). */
SYM_INNER_LABEL(ftrace_regs_caller_ip, SYM_L_GLOBAL)
	ANNOTATE_NOENDBR
	movq	RIP(%rsp), %rax
	movq	%rax, REGS_TOP(%rsp)

	/*
	 * A direct trampoline to go through (arch_ftrace_set_direct_caller)?
	 * Never in a per-ops trampoline, which jumps over the test
	 * (ftrace_regs_caller_direct .. ftrace_regs_caller_direct_end), and
	 * over the ip copy before it too when its ops does not move the ip
	 * (from ftrace_regs_caller_ip).
	 */
SYM_INNER_LABEL(ftrace_regs_caller_direct, SYM_L_GLOBAL)
	ANNOTATE_NOENDBR
	movq	ORIG_RAX(%rsp), %rax
	testq	%rax, %rax
SYM_INNER_LABEL(ftrace_regs_caller_jmp, SYM_L_GLOBAL)
	ANNOTATE_NOENDBR
	jnz	.Lrft_direct
SYM_INNER_LABEL(ftrace_regs_caller_direct_end, SYM_L_GLOBAL)
	ANNOTATE_NOENDBR
	rft_mutants

	rft_load_frame
	addq	$EFLAGS, %rsp
	popfq
	leaq	REGS_TOP-EFLAGS-8(%rsp), %rsp
SYM_INNER_LABEL(ftrace_regs_caller_end, SYM_L_GLOBAL)
	ANNOTATE_NOENDBR
	RET

.Lrft_direct:
	/*
	 * Stack above the frame: ip, return address. Make the two words
	 * under it (regs->sp and regs->ss, or with frame pointers the
	 * trampoline's frames, both read no more) the flags and the direct
	 * trampoline; pop the flags and return into the direct trampoline,
	 * which then runs as if the site had called it.
	 */
	movq	EFLAGS(%rsp), %rcx
	movq	%rcx, REGS_TOP-16(%rsp)
	movq	%rax, REGS_TOP-8(%rsp)
	rft_load_frame
	addq	$REGS_TOP-16, %rsp
	popfq
	UNWIND_HINT_FUNC

	/* Balance the return stack buffer with a call of our own. */
	ANNOTATE_INTRA_FUNCTION_CALL
	call	.Lrft_direct_ret
	int3
.Lrft_direct_ret:
	addq	$8, %rsp
	ALTERNATIVE __stringify(RET), \
		    __stringify(ANNOTATE_UNRET_SAFE; ret; int3), \
		    X86_FEATURE_CALL_DEPTH
	rft_group_calls ftrace_regs_caller, .Lrft_regs_back
SYM_FUNC_END(ftrace_regs_caller)
STACK_FRAME_NON_STANDARD_FP(ftrace_regs_caller)

SYM_FUNC_START(ftrace_stub_direct_tramp)
	CALL_DEPTH_ACCOUNT
	RET
SYM_FUNC_END(ftrace_stub_direct_tramp)

#ifdef CONFIG_FUNCTION_GRAPH_TRACER
/*
 * The function graph tracer replaced a traced function's return address
 * with this. The function's ret has popped it: rsp points at the caller's
 * stack. Save the return value registers in a frame, ask the graph core
 * for the real return address (running the return callbacks) and go
 * there.
 */
SYM_CODE_START(return_to_handler)
	UNWIND_HINT_UNDEFINED
	ANNOTATE_NOENDBR

	movq	%rsp, %rdi
	/* Put back the slot the ret consumed. */
	subq	$8, %rsp
	UNWIND_HINT_FUNC
	subq	$FRAME_SIZE, %rsp
	movq	%rax, RAX(%rsp)
	movq	%rdx, RDX(%rsp)
	movq	%rbp, RBP(%rsp)
	movq	%rdi, RSP(%rsp)
	movq	%rsp, %rdi

	call	ftrace_return_to_handler

	movq	RDX(%rsp), %rdx
	/*
	 * The real return address into the slot the ret consumed, before the
	 * frame goes: from here on, at every instruction, the unwinder finds
	 * a return address where the unwind data says (C's sequence leaves
	 * the address of its int3 there for two instructions, and a stack
	 * trace taken there loops: "stack going in the wrong direction").
	 */
	movq	%rax, FRAME_SIZE(%rsp)
	movq	RAX(%rsp), %rax
#ifdef CONFIG_FTRACE_CORE_RUST_MUTANTS
	/* The return-value break of a mutants kernel. */
	cmpl	$RFT_MUTANT_CLOBBER_RET, rftrace_mutant(%rip)
	jne	.Lrft_mut_ret
	xorq	$1, %rax
.Lrft_mut_ret:
#endif
	addq	$FRAME_SIZE, %rsp

	/*
	 * Return to it without an indirect jump, RSB balanced: the call's
	 * return address is dropped, the ret goes to the one below.
	 */
	ANNOTATE_INTRA_FUNCTION_CALL
	call	.Lrft_return
	int3
.Lrft_return:
	addq	$8, %rsp
	ALTERNATIVE __stringify(RET), \
		    __stringify(ANNOTATE_UNRET_SAFE; ret; int3), \
		    X86_FEATURE_CALL_DEPTH
SYM_CODE_END(return_to_handler)
#endif
