// SPDX-License-Identifier: GPL-2.0
/*
 * rftrace_torture: a torture test of the tracer core (rcutorture and
 * locktorture style) for tests/torture.sh, written against the public
 * API only (<linux/ftrace.h>, <linux/kprobes.h>), so that it runs on the
 * upstream C core and on the Rust core alike.
 *
 * Worker kthreads, one bound to each CPU, call 32 traced functions of
 * this module while mutator kthreads register and unregister tracers of
 * those functions and change their filters. Every call is checked
 * against an oracle: which tracer must see it, which may.
 *
 * The tracers ("slots"), each owned by exactly one mutator:
 *   plain      ftrace_ops without flags (may trace every function)
 *   regs       FTRACE_OPS_FL_SAVE_REGS: must get pt_regs on every call
 *   recursion  FTRACE_OPS_FL_RECURSION (the core's recursion guard)
 *   rcu        FTRACE_OPS_FL_RCU (called only where RCU watches, which
 *              the workers' calls always are)
 *   notrace    ftrace_ops with a notrace set (may trace every function
 *              but the notrace ones)
 *   ipmodify   FTRACE_OPS_FL_IPMODIFY | SAVE_REGS, leaves ip alone; its
 *              filter is never empty (the core refuses that) and stays
 *              within functions 00-19
 *   kp-entry   a kprobe at a function's entry, which kprobes puts on the
 *              ftrace site (kprobe_ftrace_ops), CONFIG_KPROBES
 *   kp-body    a kprobe on the instruction after the ftrace site: an int3
 *              (or an optimized jump) next to the sites the core patches
 *   direct     a direct call (register_ftrace_direct) to one of two
 *              trampolines of this module, switched by
 *              modify_ftrace_direct; functions 28-31 only (never together
 *              with the ipmodify slot on a function: a direct ops without
 *              ops_func cannot share with IPMODIFY),
 *              CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS
 * The function graph tracer's register_ftrace_graph() is not exported to
 * modules in 6.12 (on either core): graph ops are not covered here; the
 * test script switches the function_graph tracer on the same functions
 * meanwhile.
 *
 * The oracle. Each slot k has a sequence count seq[k] and a bitmap
 * want[k] of the torture functions that must reach its callback. Its
 * mutator makes seq[k] odd (then a full barrier) before any call into the
 * API, keeps a model of what the API established (registered or not, the
 * filter and notrace sets over the 32 functions, the kprobe's target, the
 * direct trampoline), and after the call returns publishes want[k] and
 * makes seq[k] even again (release). A worker, preemption off:
 *   snapshot seq[k] (acquire) and want[k] for every slot;
 *   zero its CPU's hit counters, set its CPU's "in call" = f;
 *   call f;
 *   clear "in call", read the counters; smp_rmb(); read seq[k] again.
 * The callbacks count a hit only when this CPU's "in call" names the
 * function whose ftrace site (or kprobe address, or return address of
 * the direct call) they were called for; only the workers call the 32
 * functions, so nothing else can be counted. A window is stable for
 * slot k when both reads of seq[k] are the same even number: no API call
 * on slot k overlapped any part of the call (the seqlock argument: had
 * the call seen any effect of a later API call, made after seq[k] went
 * odd and a full barrier, the second read would see the odd count). In
 * a stable window the hits of slot k must be exactly want[k] bit f; in
 * any window at most 1 (a call passes each site once).
 *
 * Why "stable => exact" holds on the C core, at the moment the mutator's
 * call returns:
 *  - register_ftrace_function(): ftrace_startup() has added the ops to
 *    the list, enabled its records and rewritten every site it needs
 *    (text_poke_bp batches end with a sync on every CPU) before it
 *    returns; a call that starts afterwards reaches the callback, either
 *    through the ops' own trampoline or through the list function, whose
 *    hash test sees the ops' hashes (published before the sites).
 *  - unregister_ftrace_function(): ftrace_shutdown() rewrites the sites
 *    and, for a dynamic ops (this module's), waits (synchronize_rcu_tasks
 *    and _rude) for every caller of the trampoline and of the list
 *    function that could still see it; afterwards no call reaches it.
 *  - ftrace_set_filter*()/ftrace_set_notrace() on a registered ops:
 *    ftrace_hash_move_and_update_ops() publishes the new hash, then
 *    ftrace_run_modify_code() updates the sites, before returning. On
 *    error nothing changed: the new hash is built aside and only moved
 *    in on success (ftrace_set_hash), so the model is updated on success
 *    only. An empty filter is "every function", an empty notrace set
 *    "none"; the model follows that.
 *  - A change of another slot, or of the tracefs tracers of the test
 *    script, only moves a site between trampolines: the call goes through
 *    one of them, and either way our callback is called once if its own
 *    (unchanged) hashes want the function, and not otherwise.
 *  - register_kprobe()/enable_kprobe() arm before they return (int3
 *    written and synced, or the ftrace filter set); disable_kprobe() and
 *    unregister_kprobe() disarm before they return, and an optimized
 *    probe whose jump stays until the optimizer runs is flagged disabled
 *    first (optimized_callback() and aggr_pre_handler() test it). On
 *    failure register leaves the probe unregistered, enable/disable leave
 *    the state as it was (kernel/kprobes.c restores the flags).
 *  - register/unregister/modify_ftrace_direct() go through
 *    register/unregister_ftrace_function() as above; modify switches the
 *    trampoline while a stub ops sends the sites through the list
 *    function, where exactly one of the two trampolines gets the call.
 * Calls that overlap a change are unstable windows: in-flight calls of a
 * callback being unregistered, kprobe disable against a call that already
 * hit the int3, and so on: only "at most 1" is checked there.
 *
 * Besides: a SAVE_REGS callback without pt_regs, a hit outside a call
 * (stray), and a difference between the hits the callbacks counted and
 * the hits the workers read are mismatches too.
 *
 * Parameters: duration (s), workers (0: one per online CPU), mutators,
 * verbose. Module init starts the threads and returns; a controller
 * thread stops the run after `duration` (or at rmmod), unregisters
 * everything, prints one line
 *   rftrace_torture: <s> s, <n> workers, ops operations <N>, calls <C>, checked <K>, mismatches <M>
 * and sets the read-only parameter `done`; `mismatches`, `calls`,
 * `checked`, `hit_checks` and `operations` hold the results.
 *
 * Everything in this module but the 32 torture functions is notrace.
 */
#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/ftrace.h>
#include <linux/glob.h>
#include <linux/jiffies.h>
#include <linux/kprobes.h>
#include <linux/kthread.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/percpu.h>
#include <linux/preempt.h>
#include <linux/printk.h>
#include <linux/random.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>

#if defined(CONFIG_DYNAMIC_FTRACE) && defined(CONFIG_X86_64)

#include <asm/ibt.h>

#if defined(CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS)
#define TT_DIRECT 1
#include <asm/linkage.h>
#include <asm/nospec-branch.h>
#endif

static unsigned int duration = 30;
module_param(duration, uint, 0444);
MODULE_PARM_DESC(duration, "seconds to run (default 30)");
static int workers;
module_param(workers, int, 0444);
MODULE_PARM_DESC(workers, "worker threads, one bound to each CPU (default 0: one per online CPU)");
static int mutators = 2;
module_param(mutators, int, 0444);
MODULE_PARM_DESC(mutators, "mutator threads (default 2)");
static bool verbose;
module_param(verbose, bool, 0644);
MODULE_PARM_DESC(verbose, "log every mutation");

/* Results, read-only. */
static int done;
module_param(done, int, 0444);
MODULE_PARM_DESC(done, "1 once the run is over and everything is unregistered");
static unsigned long mismatches;
module_param(mismatches, ulong, 0444);
MODULE_PARM_DESC(mismatches, "calls that contradicted the oracle (valid once done)");
static unsigned long calls;
module_param(calls, ulong, 0444);
MODULE_PARM_DESC(calls, "calls of the torture functions (valid once done)");
static unsigned long checked;
module_param(checked, ulong, 0444);
MODULE_PARM_DESC(checked, "exact checks: (call, tracer) pairs in stable windows (valid once done)");
static unsigned long hit_checks;
module_param(hit_checks, ulong, 0444);
MODULE_PARM_DESC(hit_checks, "exact checks that expected a hit (valid once done)");
static unsigned long operations;
module_param(operations, ulong, 0444);
MODULE_PARM_DESC(operations, "API operations of the mutators (valid once done)");

/* ------------------------------------------------------------------ */
/* The 32 traced functions: all differ, none can be folded or cloned. */

#define TT_NFN 32

#define TT_FN(n)							\
int rftrace_torture_fn_##n(int x);					\
noinline int rftrace_torture_fn_##n(int x)				\
{									\
	int y = x;							\
									\
	OPTIMIZER_HIDE_VAR(y);						\
	y = y * (1##n + 2) + 0x##n;					\
	OPTIMIZER_HIDE_VAR(y);						\
	return y ^ (x >> (1##n % 7));					\
}
TT_FN(00) TT_FN(01) TT_FN(02) TT_FN(03) TT_FN(04) TT_FN(05) TT_FN(06) TT_FN(07)
TT_FN(08) TT_FN(09) TT_FN(10) TT_FN(11) TT_FN(12) TT_FN(13) TT_FN(14) TT_FN(15)
TT_FN(16) TT_FN(17) TT_FN(18) TT_FN(19) TT_FN(20) TT_FN(21) TT_FN(22) TT_FN(23)
TT_FN(24) TT_FN(25) TT_FN(26) TT_FN(27) TT_FN(28) TT_FN(29) TT_FN(30) TT_FN(31)

#define TT_P(n) rftrace_torture_fn_##n,
static int (*const tt_fns[TT_NFN])(int) = {
	TT_P(00) TT_P(01) TT_P(02) TT_P(03) TT_P(04) TT_P(05) TT_P(06) TT_P(07)
	TT_P(08) TT_P(09) TT_P(10) TT_P(11) TT_P(12) TT_P(13) TT_P(14) TT_P(15)
	TT_P(16) TT_P(17) TT_P(18) TT_P(19) TT_P(20) TT_P(21) TT_P(22) TT_P(23)
	TT_P(24) TT_P(25) TT_P(26) TT_P(27) TT_P(28) TT_P(29) TT_P(30) TT_P(31)
};

#define TT_N(n) "rftrace_torture_fn_" #n,
static const char *const tt_names[TT_NFN] = {
	TT_N(00) TT_N(01) TT_N(02) TT_N(03) TT_N(04) TT_N(05) TT_N(06) TT_N(07)
	TT_N(08) TT_N(09) TT_N(10) TT_N(11) TT_N(12) TT_N(13) TT_N(14) TT_N(15)
	TT_N(16) TT_N(17) TT_N(18) TT_N(19) TT_N(20) TT_N(21) TT_N(22) TT_N(23)
	TT_N(24) TT_N(25) TT_N(26) TT_N(27) TT_N(28) TT_N(29) TT_N(30) TT_N(31)
};

#define TT_ALL_FNS	0xffffffffU
#define TT_BIT(i)	(1U << (i))

/* Each function's ftrace site: after the ENDBR with IBT, else its start. */
static unsigned long tt_site[TT_NFN];
static unsigned long tt_site_lo, tt_site_hi;

/*
 * Filter patterns and the functions each selects, worked out at load time
 * with glob_match() (lib/glob.c, not the tracer core's matcher). They all
 * start with the prefix of the torture functions (or end with a full
 * name), so they select nothing else in the kernel.
 */
static const char *const tt_patterns[] = {
	"rftrace_torture_fn_0*",	/* front only */
	"rftrace_torture_fn_1*",
	"rftrace_torture_fn_2*",
	"rftrace_torture_fn_3*",
	"rftrace_torture_fn_1[0-4]",	/* globs */
	"rftrace_torture_fn_?5",
	"rftrace_torture_fn_*7",
	"rftrace_torture_fn_[02]3",
	"rftrace_torture_fn_2?",
	"*torture_fn_31",		/* end only */
	"rftrace_torture_fn_06",	/* full */
};
#define TT_NPAT ARRAY_SIZE(tt_patterns)
static u32 tt_pat_mask[TT_NPAT];

/* ------------------------------------------------------------------ */
/* Slots: the tracers under test. */

enum tt_kind {
	TT_K_FTRACE,
	TT_K_KPROBE_ENTRY,
	TT_K_KPROBE_BODY,
	TT_K_DIRECT,
};

enum {
	TT_S_PLAIN,
	TT_S_REGS,
	TT_S_RECURSION,
	TT_S_RCU,
	TT_S_NOTRACE,
	TT_S_IPMODIFY,
#ifdef CONFIG_KPROBES
	TT_S_KP_ENTRY,
	TT_S_KP_BODY,
#endif
#ifdef TT_DIRECT
	TT_S_DIRECT,
#endif
	TT_NSLOT
};

#ifdef TT_DIRECT
#define TT_DIRECT_SLOT TT_S_DIRECT
#else
#define TT_DIRECT_SLOT (-1)
#endif

struct tt_slot {
	const char *name;
	enum tt_kind kind;
	unsigned long flags;	/* ftrace_ops flags of an ftrace slot */
	u32 domain;		/* functions the filter may hold */
	bool may_all;		/* the filter may be empty: every function */
	bool has_notrace;	/* mutations of the notrace set */
	bool needs_regs;	/* callback must get pt_regs */

	/* The oracle: written by the owning mutator, read by the workers. */
	unsigned long seq;
	u32 want;
	int aux;		/* direct: current trampoline (0: a, 1: b) */

	/* The model of what the API established; owner only. */
	bool registered;
	bool enabled;		/* kprobes */
	bool broken;		/* an API call left an unknown state */
	u32 filter;
	u32 notrace_set;
	int target;		/* kprobes: function index */
	unsigned long kaddr;	/* kprobes: address the probe must report */

	/* Statistics (mutator side). */
	unsigned long nops, nfailed;

	struct ftrace_ops ops;
#ifdef CONFIG_KPROBES
	struct kprobe kp;
#endif
};

static struct tt_slot tt_slots[TT_NSLOT] = {
	[TT_S_PLAIN] = {
		.name = "plain", .kind = TT_K_FTRACE,
		.domain = TT_ALL_FNS, .may_all = true,
	},
	[TT_S_REGS] = {
		.name = "regs", .kind = TT_K_FTRACE,
		.flags = FTRACE_OPS_FL_SAVE_REGS,
		.domain = TT_ALL_FNS, .needs_regs = true,
	},
	[TT_S_RECURSION] = {
		.name = "recursion", .kind = TT_K_FTRACE,
		.flags = FTRACE_OPS_FL_RECURSION,
		.domain = TT_ALL_FNS,
	},
	[TT_S_RCU] = {
		.name = "rcu", .kind = TT_K_FTRACE,
		.flags = FTRACE_OPS_FL_RCU,
		.domain = TT_ALL_FNS,
	},
	[TT_S_NOTRACE] = {
		.name = "notrace", .kind = TT_K_FTRACE,
		.domain = TT_ALL_FNS, .may_all = true, .has_notrace = true,
	},
	[TT_S_IPMODIFY] = {
		.name = "ipmodify", .kind = TT_K_FTRACE,
		.flags = FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_SAVE_REGS,
		.domain = 0x000fffffU, .needs_regs = true,
	},
#ifdef CONFIG_KPROBES
	[TT_S_KP_ENTRY] = {
		.name = "kp-entry", .kind = TT_K_KPROBE_ENTRY,
		.domain = TT_ALL_FNS,
	},
	[TT_S_KP_BODY] = {
		.name = "kp-body", .kind = TT_K_KPROBE_BODY,
		.domain = TT_ALL_FNS,
	},
#endif
#ifdef TT_DIRECT
	[TT_S_DIRECT] = {
		.name = "direct", .kind = TT_K_DIRECT,
		.domain = 0xf0000000U,
	},
#endif
};

/* Per CPU: the call in progress and what the callbacks counted for it. */
struct tt_pcpu {
	int in_call;			/* 1 + function index, 0 outside a call */
	unsigned int hits[TT_NSLOT];
	unsigned int hits_b;		/* direct: hits through trampoline b */
	unsigned int noregs;		/* SAVE_REGS callbacks without pt_regs */
	unsigned long stray;		/* hits on a torture site outside its call */
};
static DEFINE_PER_CPU(struct tt_pcpu, tt_pcpu);

/* Callback-side total of the counted hits, for the reconciliation. */
static atomic_long_t tt_cb_hits = ATOMIC_LONG_INIT(0);

static unsigned long tt_body_off[TT_NFN];	/* kprobe offsets in the body */

/* ------------------------------------------------------------------ */
/* Helpers (notrace: the module itself is traced). */

static notrace u32 tt_rand(u32 *state)
{
	u32 x = *state;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	*state = x;
	return x;
}

static notrace int tt_site_index(unsigned long ip)
{
	int i;

	if (ip < tt_site_lo || ip > tt_site_hi)
		return -1;
	for (i = 0; i < TT_NFN; i++)
		if (tt_site[i] == ip)
			return i;
	return -1;
}

/* A callback of slot k was called for a call of the function at site ip. */
static __always_inline void tt_count(int k, unsigned long ip, bool regs_missing)
{
	int idx = this_cpu_read(tt_pcpu.in_call) - 1;

	if (likely(idx >= 0 && tt_site[idx] == ip)) {
		this_cpu_inc(tt_pcpu.hits[k]);
		if (unlikely(regs_missing))
			this_cpu_inc(tt_pcpu.noregs);
		atomic_long_inc(&tt_cb_hits);
	} else if (unlikely(tt_site_index(ip) >= 0)) {
		this_cpu_inc(tt_pcpu.stray);
	}
}

static notrace void tt_ftrace_cb(unsigned long ip, unsigned long parent_ip,
				 struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct tt_slot *s = container_of(op, struct tt_slot, ops);

	tt_count(s - tt_slots, ip, s->needs_regs && !ftrace_get_regs(fregs));
}

#ifdef CONFIG_KPROBES
static notrace int tt_kprobe_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct tt_slot *s = container_of(p, struct tt_slot, kp);
	int k = s - tt_slots;
	int idx = this_cpu_read(tt_pcpu.in_call) - 1;

	if (likely(idx >= 0 && idx == READ_ONCE(s->target) &&
		   (unsigned long)p->addr == READ_ONCE(s->kaddr))) {
		this_cpu_inc(tt_pcpu.hits[k]);
		atomic_long_inc(&tt_cb_hits);
	} else {
		this_cpu_inc(tt_pcpu.stray);
	}
	return 0;
}
NOKPROBE_SYMBOL(tt_kprobe_pre);
#endif

#ifdef TT_DIRECT
/*
 * The direct trampolines: called from the site (or returned to from the
 * ftrace caller when other tracers share the site) with the return
 * address into the traced function on top of the stack. They keep the
 * argument registers of that function, give the return address to a C
 * counter and return into the function.
 */
void rftrace_torture_direct_a(unsigned long ret);
void rftrace_torture_direct_b(unsigned long ret);
void rftrace_torture_tramp_a(void);
void rftrace_torture_tramp_b(void);

#define TT_TRAMPOLINE(tramp, counter)				\
asm(".pushsection .text, \"ax\", @progbits\n"			\
    ".type " #tramp ", @function\n"				\
    ".globl " #tramp "\n"					\
    #tramp ":\n\t"						\
    ASM_ENDBR							\
    CALL_DEPTH_ACCOUNT						\
    "pushq %rbp\n\t"						\
    "movq %rsp, %rbp\n\t"					\
    "pushq %rdi\n\t"						\
    "pushq %rsi\n\t"						\
    "pushq %rdx\n\t"						\
    "pushq %rcx\n\t"						\
    "pushq %r8\n\t"						\
    "pushq %r9\n\t"						\
    "movq 8(%rbp), %rdi\n\t"					\
    "call " #counter "\n\t"					\
    "popq %r9\n\t"						\
    "popq %r8\n\t"						\
    "popq %rcx\n\t"						\
    "popq %rdx\n\t"						\
    "popq %rsi\n\t"						\
    "popq %rdi\n\t"						\
    "popq %rbp\n\t"						\
    ASM_RET							\
    ".size " #tramp ", .-" #tramp "\n"				\
    ".popsection\n")

TT_TRAMPOLINE(rftrace_torture_tramp_a, rftrace_torture_direct_a);
TT_TRAMPOLINE(rftrace_torture_tramp_b, rftrace_torture_direct_b);

static notrace void tt_direct_hit(unsigned long ret, bool b)
{
	unsigned long ip = ret - MCOUNT_INSN_SIZE;
	int idx = this_cpu_read(tt_pcpu.in_call) - 1;

	if (likely(idx >= 0 && tt_site[idx] == ip)) {
		this_cpu_inc(tt_pcpu.hits[TT_S_DIRECT]);
		if (b)
			this_cpu_inc(tt_pcpu.hits_b);
		atomic_long_inc(&tt_cb_hits);
	} else {
		this_cpu_inc(tt_pcpu.stray);
	}
}

__visible notrace void rftrace_torture_direct_a(unsigned long ret)
{
	tt_direct_hit(ret, false);
}

__visible notrace void rftrace_torture_direct_b(unsigned long ret)
{
	tt_direct_hit(ret, true);
}

static notrace unsigned long tt_tramp(int which)
{
	return which ? (unsigned long)rftrace_torture_tramp_b :
		       (unsigned long)rftrace_torture_tramp_a;
}
#endif /* TT_DIRECT */

/* ------------------------------------------------------------------ */
/* The oracle's writer side. */

static notrace u32 tt_model_want(struct tt_slot *s)
{
	switch (s->kind) {
	case TT_K_FTRACE:
		if (!s->registered)
			return 0;
		return (s->filter ? s->filter : TT_ALL_FNS) & ~s->notrace_set;
	case TT_K_KPROBE_ENTRY:
	case TT_K_KPROBE_BODY:
		return s->registered && s->enabled ? TT_BIT(s->target) : 0;
	case TT_K_DIRECT:
		return s->registered ? s->filter : 0;
	}
	return 0;
}

static notrace void tt_begin(struct tt_slot *s)
{
	WRITE_ONCE(s->seq, s->seq + 1);
	/* The odd count is visible before any effect of the API call. */
	smp_mb();
}

static notrace void tt_end(struct tt_slot *s)
{
	WRITE_ONCE(s->want, tt_model_want(s));
	/* A broken slot stays odd: its state is unknown, never checked. */
	if (!s->broken)
		smp_store_release(&s->seq, s->seq + 1);
}

static atomic_long_t tt_mismatches = ATOMIC_LONG_INIT(0);

static notrace void tt_mismatch(void)
{
	atomic_long_inc(&tt_mismatches);
}

/* ------------------------------------------------------------------ */
/* Mutations of ftrace_ops slots. */

/* A random non-empty subset of mask with at most max members. */
static notrace u32 tt_subset(u32 *rnd, u32 mask, int max)
{
	u32 out = 0;
	int n = 1 + tt_rand(rnd) % max, tries;

	if (!mask)
		return 0;
	for (tries = 0; n > 0 && tries < 200; tries++) {
		u32 b = TT_BIT(tt_rand(rnd) % TT_NFN);

		if ((mask & b) && !(out & b)) {
			out |= b;
			n--;
		}
	}
	if (!out)
		out = mask & -mask;	/* lowest member */
	return out;
}

static notrace int tt_pick_bit(u32 *rnd, u32 mask)
{
	return __ffs(tt_subset(rnd, mask, 1));
}

/* A pattern for adding: within the slot's domain. -1 if none. */
static notrace int tt_pick_add_pattern(struct tt_slot *s, u32 *rnd)
{
	int i, start = tt_rand(rnd) % TT_NPAT;

	for (i = 0; i < TT_NPAT; i++) {
		int p = (start + i) % TT_NPAT;

		if ((tt_pat_mask[p] & ~s->domain) == 0)
			return p;
	}
	return -1;
}

/*
 * A pattern for removing from set: one that removes something and, unless
 * allow_empty, leaves something. -1 if none.
 */
static notrace int tt_pick_remove_pattern(u32 set, bool allow_empty, u32 *rnd)
{
	int i, start = tt_rand(rnd) % TT_NPAT;

	for (i = 0; i < TT_NPAT; i++) {
		int p = (start + i) % TT_NPAT;
		u32 m = tt_pat_mask[p];

		if ((set & m) && (allow_empty || (set & ~m)))
			return p;
	}
	return -1;
}

static notrace int tt_set_pattern(struct tt_slot *s, bool notrace_set,
				  bool remove, int p, int reset)
{
	char buf[64];
	int len;

	len = snprintf(buf, sizeof(buf), "%s%s", remove ? "!" : "", tt_patterns[p]);
	if (notrace_set)
		return ftrace_set_notrace(&s->ops, buf, len, reset);
	return ftrace_set_filter(&s->ops, buf, len, reset);
}

static notrace int tt_set_ips(struct tt_slot *s, u32 mask, int remove, int reset)
{
	unsigned long ips[TT_NFN];
	unsigned int n = 0;
	int i;

	for (i = 0; i < TT_NFN; i++)
		if (mask & TT_BIT(i))
			ips[n++] = (unsigned long)tt_fns[i];
	return ftrace_set_filter_ips(&s->ops, ips, n, remove, reset);
}

/* Mutates the notrace set of a slot; returns a description for the log. */
static notrace const char *tt_mutate_notrace(struct tt_slot *s, u32 *rnd, int *retp)
{
	u32 n = s->notrace_set, nn;
	int act = tt_rand(rnd) % 4, p, ret;
	const char *what;

	/* A pattern to remove, drawn only when one is to be removed. */
	p = act == 1 && n ? tt_pick_remove_pattern(n, true, rnd) : -1;
	if (act == 0 && n) {
		what = "notrace cleared";
		nn = 0;
		ret = ftrace_set_notrace(&s->ops, NULL, 0, 1);
	} else if (p >= 0) {
		what = "notrace pattern removed";
		nn = n & ~tt_pat_mask[p];
		ret = tt_set_pattern(s, true, true, p, 0);
	} else if (act == 2) {
		p = tt_rand(rnd) % TT_NPAT;
		what = "notrace pattern set";
		nn = tt_pat_mask[p];
		ret = tt_set_pattern(s, true, false, p, 1);
	} else {
		p = tt_rand(rnd) % TT_NPAT;
		what = "notrace pattern added";
		nn = n | tt_pat_mask[p];
		ret = tt_set_pattern(s, true, false, p, 0);
	}
	/* All or nothing, as the filter calls. */
	if (!ret)
		s->notrace_set = nn;
	*retp = ret;
	return what;
}

/*
 * Mutates one ftrace_ops slot; returns a description for the log. A slot
 * that may not trace every function never gets an empty filter: removals
 * keep at least one function.
 */
static notrace const char *tt_mutate_ftrace(struct tt_slot *s, u32 *rnd, int *retp)
{
	u32 f = s->filter, nf, m;
	bool several = f & (f - 1);
	int act, ret, p, i;
	const char *what;

	if (s->has_notrace && tt_rand(rnd) % 4 == 0)
		return tt_mutate_notrace(s, rnd, retp);

	act = tt_rand(rnd) % 100;
	if (act < 25) {
		if (s->registered) {
			what = "unregister";
			ret = unregister_ftrace_function(&s->ops);
			if (!ret) {
				s->registered = false;
			} else {
				pr_err("rftrace_torture: %s: unregister_ftrace_function() failed: %d\n",
				       s->name, ret);
				s->broken = true;
				tt_mismatch();
			}
		} else {
			what = "register";
			ret = register_ftrace_function(&s->ops);
			s->registered = !ret;
		}
		*retp = ret;
		return what;
	}

	/* Removals that are not possible become additions. */
	p = -1;
	if (act >= 49 && act < 59 && f)
		p = tt_pick_remove_pattern(f, s->may_all && !(tt_rand(rnd) % 8), rnd);
	if ((act >= 49 && act < 59 && p < 0) ||
	    (act >= 71 && act < 80 && !several))
		act = 59;
	if (act >= 89 && act < 96 && !several)
		act = 80;

	if (act < 37) {
		p = tt_pick_add_pattern(s, rnd);
		what = "pattern set";
		nf = tt_pat_mask[p];
		ret = tt_set_pattern(s, false, false, p, 1);
	} else if (act < 49) {
		p = tt_pick_add_pattern(s, rnd);
		what = "pattern added";
		nf = f | tt_pat_mask[p];
		ret = tt_set_pattern(s, false, false, p, 0);
	} else if (act < 59) {
		what = "pattern removed";
		nf = f & ~tt_pat_mask[p];
		ret = tt_set_pattern(s, false, true, p, 0);
	} else if (act < 71) {
		i = tt_pick_bit(rnd, s->domain);
		what = "ip added";
		nf = f | TT_BIT(i);
		ret = ftrace_set_filter_ip(&s->ops, (unsigned long)tt_fns[i], 0, 0);
	} else if (act < 80) {
		i = tt_pick_bit(rnd, f);
		what = "ip removed";
		nf = f & ~TT_BIT(i);
		ret = ftrace_set_filter_ip(&s->ops, (unsigned long)tt_fns[i], 1, 0);
	} else if (act < 89) {
		int reset = tt_rand(rnd) & 1;

		m = tt_subset(rnd, s->domain, 6);
		what = reset ? "ips set" : "ips added";
		nf = (reset ? 0 : f) | m;
		ret = tt_set_ips(s, m, 0, reset);
	} else if (act < 96) {
		/* Several, all of them (every function) only now and then. */
		m = tt_subset(rnd, f, 4);
		if (m == f && !(s->may_all && !(tt_rand(rnd) % 8)))
			m &= m - 1;
		what = "ips removed";
		nf = f & ~m;
		ret = tt_set_ips(s, m, 1, 0);
	} else if (s->may_all) {
		what = "filter reset: every function";
		nf = 0;
		ret = ftrace_set_filter(&s->ops, NULL, 0, 1);
	} else {
		i = tt_pick_bit(rnd, s->domain);
		what = "ip set";
		nf = TT_BIT(i);
		ret = ftrace_set_filter_ip(&s->ops, (unsigned long)tt_fns[i], 0, 1);
	}
	/*
	 * The filter calls are all or nothing (ftrace_set_hash() builds the
	 * new hash aside and moves it in only on success): the model follows
	 * success only.
	 */
	if (!ret)
		s->filter = nf;
	*retp = ret;
	return what;
}

/* ------------------------------------------------------------------ */
/* Mutations of kprobe slots. */

#ifdef CONFIG_KPROBES
static notrace int tt_kprobe_register(struct tt_slot *s, int t)
{
	unsigned long fn = (unsigned long)tt_fns[t];
	int ret;

	WRITE_ONCE(s->target, t);
	if (s->kind == TT_K_KPROBE_ENTRY) {
		/* kprobes moves a probe on fn+0 to the ftrace site. */
		WRITE_ONCE(s->kaddr, tt_site[t]);
		memset(&s->kp, 0, sizeof(s->kp));
		s->kp.addr = (kprobe_opcode_t *)fn;
		s->kp.pre_handler = tt_kprobe_pre;
		ret = register_kprobe(&s->kp);
		if (!ret && (unsigned long)s->kp.addr != tt_site[t]) {
			pr_err("rftrace_torture: %s: probe on %ps is at %px, its ftrace site at %px\n",
			       s->name, tt_fns[t], s->kp.addr, (void *)tt_site[t]);
			tt_mismatch();
		}
		return ret;
	}
	/*
	 * In the body: the instruction after the ftrace site, or the next
	 * boundary register_kprobe() accepts (it rejects others, -EILSEQ).
	 */
	for (;;) {
		WRITE_ONCE(s->kaddr, fn + tt_body_off[t]);
		memset(&s->kp, 0, sizeof(s->kp));
		s->kp.addr = (kprobe_opcode_t *)(fn + tt_body_off[t]);
		s->kp.pre_handler = tt_kprobe_pre;
		ret = register_kprobe(&s->kp);
		if (ret != -EILSEQ || tt_body_off[t] >= 32)
			return ret;
		tt_body_off[t]++;
	}
}

static notrace const char *tt_mutate_kprobe(struct tt_slot *s, u32 *rnd, int *retp)
{
	int act = tt_rand(rnd) % 4;
	const char *what;
	int ret = 0;

	if (!s->registered) {
		int t = tt_rand(rnd) % TT_NFN;

		what = "register";
		ret = tt_kprobe_register(s, t);
		s->registered = !ret;
		s->enabled = !ret;
	} else if (act == 0) {
		what = "unregister";
		unregister_kprobe(&s->kp);
		s->registered = false;
		s->enabled = false;
	} else if (s->enabled) {
		what = "disable";
		ret = disable_kprobe(&s->kp);
		if (!ret)
			s->enabled = false;
	} else {
		what = "enable";
		ret = enable_kprobe(&s->kp);
		if (!ret)
			s->enabled = true;
	}
	*retp = ret;
	return what;
}
#endif /* CONFIG_KPROBES */

/* ------------------------------------------------------------------ */
/* Mutations of the direct slot. */

#ifdef TT_DIRECT
static notrace const char *tt_mutate_direct(struct tt_slot *s, u32 *rnd, int *retp)
{
	const char *what;
	int ret;

	if (!s->registered) {
		/* A new filter while unregistered, then the registration. */
		u32 m = tt_subset(rnd, s->domain, 3);

		what = "register";
		ret = tt_set_ips(s, m, 0, 1);
		if (!ret) {
			s->filter = m;
			ret = register_ftrace_direct(&s->ops, tt_tramp(s->aux));
			s->registered = !ret;
		}
	} else if (tt_rand(rnd) % 3 == 0) {
		what = "modify";
		ret = modify_ftrace_direct(&s->ops, tt_tramp(!s->aux));
		if (!ret)
			WRITE_ONCE(s->aux, !s->aux);
	} else {
		what = "unregister";
		ret = unregister_ftrace_direct(&s->ops, tt_tramp(s->aux), false);
		if (!ret) {
			s->registered = false;
		} else {
			pr_err("rftrace_torture: %s: unregister_ftrace_direct() failed: %d\n",
			       s->name, ret);
			s->broken = true;
			tt_mismatch();
		}
	}
	*retp = ret;
	return what;
}
#endif

static notrace void tt_mutate(struct tt_slot *s, u32 *rnd)
{
	const char *what = "none";
	int ret = 0;

	tt_begin(s);
	switch (s->kind) {
	case TT_K_FTRACE:
		what = tt_mutate_ftrace(s, rnd, &ret);
		break;
#ifdef CONFIG_KPROBES
	case TT_K_KPROBE_ENTRY:
	case TT_K_KPROBE_BODY:
		what = tt_mutate_kprobe(s, rnd, &ret);
		break;
#endif
#ifdef TT_DIRECT
	case TT_K_DIRECT:
		what = tt_mutate_direct(s, rnd, &ret);
		break;
#endif
	default:
		break;
	}
	s->nops++;
	if (ret)
		s->nfailed++;
	tt_end(s);
	if (verbose)
		pr_info("rftrace_torture: %s: %s (%d): registered %d, filter %08x, notrace %08x, want %08x\n",
			s->name, what, ret, s->registered, s->filter, s->notrace_set, s->want);
}

/* ------------------------------------------------------------------ */
/* Threads. */

struct tt_worker {
	struct task_struct *task;
	u32 rnd;
	int sum;
	unsigned long calls, checked, hit_checks, hits;
	unsigned long slot_checked[TT_NSLOT], slot_hit_checks[TT_NSLOT];
};

struct tt_mutator {
	struct task_struct *task;
	u32 rnd;
	int nslots;
	int slots[TT_NSLOT];
};

static struct tt_worker *tt_workers;
static int tt_nworkers;
static struct tt_mutator *tt_mutators;
static int tt_nmutators;
static struct task_struct *tt_controller;
static unsigned long tt_start, tt_stop;

static notrace void tt_report(struct tt_slot *s, int idx, const char *why,
			      unsigned int expected, unsigned int got)
{
	tt_mismatch();
	pr_err_ratelimited("rftrace_torture: mismatch: %s on %s: %s: expected %u, got %u\n",
			   s->name, tt_names[idx], why, expected, got);
}

static notrace int tt_worker_fn(void *arg)
{
	struct tt_worker *w = arg;
	unsigned long s1[TT_NSLOT], s2[TT_NSLOT];
	unsigned int h[TT_NSLOT], hb, noregs;
	u32 want[TT_NSLOT];
	int aux[TT_NSLOT];
	unsigned int n = 0;

	while (!kthread_should_stop()) {
		int idx = tt_rand(&w->rnd) % TT_NFN;
		int x = (int)(tt_rand(&w->rnd) & 0xffff);
		struct tt_pcpu *pc;
		int k;

		preempt_disable();
		for (k = 0; k < TT_NSLOT; k++) {
			s1[k] = smp_load_acquire(&tt_slots[k].seq);
			want[k] = READ_ONCE(tt_slots[k].want);
			aux[k] = READ_ONCE(tt_slots[k].aux);
		}
		pc = this_cpu_ptr(&tt_pcpu);
		for (k = 0; k < TT_NSLOT; k++)
			WRITE_ONCE(pc->hits[k], 0);
		WRITE_ONCE(pc->hits_b, 0);
		WRITE_ONCE(pc->noregs, 0);
		barrier();
		WRITE_ONCE(pc->in_call, idx + 1);
		barrier();
		w->sum += tt_fns[idx](x);
		barrier();
		WRITE_ONCE(pc->in_call, 0);
		barrier();
		for (k = 0; k < TT_NSLOT; k++)
			h[k] = READ_ONCE(pc->hits[k]);
		hb = READ_ONCE(pc->hits_b);
		noregs = READ_ONCE(pc->noregs);
		smp_rmb();
		for (k = 0; k < TT_NSLOT; k++)
			s2[k] = READ_ONCE(tt_slots[k].seq);
		preempt_enable();

		w->calls++;
		if (noregs) {
			tt_mismatch();
			pr_err_ratelimited("rftrace_torture: mismatch: a SAVE_REGS callback got no pt_regs on %s\n",
					   tt_names[idx]);
		}
		for (k = 0; k < TT_NSLOT; k++) {
			struct tt_slot *s = &tt_slots[k];
			unsigned int exp;

			w->hits += h[k];
			if (h[k] > 1)
				tt_report(s, idx, "more than one hit in one call", 1, h[k]);
			if (s1[k] != s2[k] || (s1[k] & 1))
				continue;
			/* Stable: the state of want[k] held for the whole call. */
			exp = (want[k] >> idx) & 1;
			w->checked++;
			w->slot_checked[k]++;
			if (exp) {
				w->hit_checks++;
				w->slot_hit_checks[k]++;
			}
			if (h[k] != exp)
				tt_report(s, idx, "stable window", exp, h[k]);
			else if (k == TT_DIRECT_SLOT && exp && hb != (unsigned int)aux[k])
				tt_report(s, idx, "hits through trampoline b", aux[k], hb);
		}
		/* Sleep now and then: RCU Tasks waits for voluntary switches. */
		if (++n % 64 == 0)
			usleep_range(50, 150);
		else
			cond_resched();
	}
	return 0;
}

static notrace int tt_mutator_fn(void *arg)
{
	struct tt_mutator *m = arg;

	while (!kthread_should_stop()) {
		struct tt_slot *s = &tt_slots[m->slots[tt_rand(&m->rnd) % m->nslots]];
		unsigned long us = 100 + tt_rand(&m->rnd) % 900;

		if (!s->broken)
			tt_mutate(s, &m->rnd);
		usleep_range(us, 2 * us);
	}
	return 0;
}

/* Unregisters whatever a slot holds and frees its filters. */
static notrace void tt_teardown(struct tt_slot *s)
{
	int ret;

	switch (s->kind) {
	case TT_K_FTRACE:
		if (s->registered) {
			ret = unregister_ftrace_function(&s->ops);
			if (ret) {
				pr_err("rftrace_torture: %s: final unregister_ftrace_function() failed: %d\n",
				       s->name, ret);
				tt_mismatch();
			}
			s->registered = false;
		}
		ftrace_free_filter(&s->ops);
		break;
#ifdef CONFIG_KPROBES
	case TT_K_KPROBE_ENTRY:
	case TT_K_KPROBE_BODY:
		if (s->registered)
			unregister_kprobe(&s->kp);
		s->registered = false;
		break;
#endif
#ifdef TT_DIRECT
	case TT_K_DIRECT:
		if (s->registered) {
			ret = unregister_ftrace_direct(&s->ops, tt_tramp(s->aux), true);
			if (ret) {
				pr_err("rftrace_torture: %s: final unregister_ftrace_direct() failed: %d\n",
				       s->name, ret);
				tt_mismatch();
			}
			s->registered = false;
		} else {
			ftrace_free_filter(&s->ops);
		}
		break;
#endif
	default:
		break;
	}
}

static notrace void tt_finish(void)
{
	unsigned long hits = 0, stray = 0, cb;
	unsigned long slot_checked[TT_NSLOT] = {}, slot_hits[TT_NSLOT] = {};
	int i, k, cpu;

	for (i = 0; i < tt_nmutators; i++)
		if (tt_mutators[i].task)
			kthread_stop(tt_mutators[i].task);
	for (i = 0; i < tt_nworkers; i++)
		if (tt_workers[i].task)
			kthread_stop(tt_workers[i].task);
	tt_stop = jiffies;

	for (k = 0; k < TT_NSLOT; k++) {
		tt_teardown(&tt_slots[k]);
		operations += tt_slots[k].nops;
	}

	for (i = 0; i < tt_nworkers; i++) {
		struct tt_worker *w = &tt_workers[i];

		calls += w->calls;
		checked += w->checked;
		hit_checks += w->hit_checks;
		hits += w->hits;
		for (k = 0; k < TT_NSLOT; k++) {
			slot_checked[k] += w->slot_checked[k];
			slot_hits[k] += w->slot_hit_checks[k];
		}
	}
	for_each_possible_cpu(cpu)
		stray += per_cpu(tt_pcpu, cpu).stray;
	cb = atomic_long_read(&tt_cb_hits);
	if (cb != hits) {
		pr_err("rftrace_torture: mismatch: the callbacks counted %lu hits, the workers read %lu\n",
		       cb, hits);
		tt_mismatch();
	}
	if (stray) {
		pr_err("rftrace_torture: mismatch: %lu callbacks on a torture function outside its call\n",
		       stray);
		tt_mismatch();
	}

	for (k = 0; k < TT_NSLOT; k++) {
		struct tt_slot *s = &tt_slots[k];

		pr_info("rftrace_torture detail: %-9s operations %lu (%lu failed), checked %lu, expecting a hit %lu%s\n",
			s->name, s->nops, s->nfailed, slot_checked[k], slot_hits[k],
			s->broken ? ", BROKEN" : "");
	}
	pr_info("rftrace_torture detail: hits %lu (callbacks %lu), strays %lu\n",
		hits, cb, stray);

	mismatches = atomic_long_read(&tt_mismatches);
	pr_info("rftrace_torture: %lu s, %d workers, ops operations %lu, calls %lu, checked %lu, mismatches %lu\n",
		(tt_stop - tt_start) / HZ, tt_nworkers, operations, calls,
		checked, mismatches);
	smp_store_release(&done, 1);
}

static notrace int tt_controller_fn(void *arg)
{
	unsigned long end = tt_start + (unsigned long)duration * HZ;

	while (!kthread_should_stop() && time_before(jiffies, end))
		schedule_timeout_interruptible(min_t(unsigned long, end - jiffies, HZ));
	tt_finish();
	/* Stay until the module goes (kthread_stop() from its exit). */
	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (kthread_should_stop())
			break;
		schedule();
	}
	__set_current_state(TASK_RUNNING);
	return 0;
}

/* ------------------------------------------------------------------ */

static notrace void tt_unprepare(void)
{
	int k;

	for (k = 0; k < TT_NSLOT; k++)
		if (tt_slots[k].kind == TT_K_FTRACE)
			ftrace_free_filter(&tt_slots[k].ops);
}

static notrace int __init tt_prepare(void)
{
	u32 rnd = get_random_u32() | 1;
	int i, k, ret;

	for (i = 0; i < TT_NFN; i++) {
		unsigned long fn = (unsigned long)tt_fns[i];

		tt_site[i] = fn;
		if (is_endbr(*(const u32 *)fn))
			tt_site[i] += ENDBR_INSN_SIZE;
		if (!tt_site_lo || tt_site[i] < tt_site_lo)
			tt_site_lo = tt_site[i];
		if (tt_site[i] > tt_site_hi)
			tt_site_hi = tt_site[i];
		tt_body_off[i] = tt_site[i] - fn + MCOUNT_INSN_SIZE;
	}
	for (i = 0; i < TT_NPAT; i++) {
		for (k = 0; k < TT_NFN; k++)
			if (glob_match(tt_patterns[i], tt_names[k]))
				tt_pat_mask[i] |= TT_BIT(k);
		if (WARN_ON(!tt_pat_mask[i]))
			return -EINVAL;
	}

	/* Every ftrace slot starts unregistered with a non-empty filter. */
	for (k = 0; k < TT_NSLOT; k++) {
		struct tt_slot *s = &tt_slots[k];

		if (s->kind != TT_K_FTRACE)
			continue;
		s->ops.func = tt_ftrace_cb;
		s->ops.flags = s->flags;
		s->filter = tt_subset(&rnd, s->domain, 6);
		if (WARN_ON(tt_pick_add_pattern(s, &rnd) < 0))
			ret = -EINVAL;
		else
			ret = tt_set_ips(s, s->filter, 0, 1);
		if (ret) {
			pr_err("rftrace_torture: cannot set the filter of %s: %d (are the torture functions traceable?)\n",
			       s->name, ret);
			tt_unprepare();
			return ret;
		}
	}
	return 0;
}

static notrace void tt_free_threads(void)
{
	kfree(tt_workers);
	kfree(tt_mutators);
	tt_workers = NULL;
	tt_mutators = NULL;
}

static int __init notrace rftrace_torture_init(void)
{
	int i, k, cpu, ret;

	if (!duration || mutators < 1 || workers < 0)
		return -EINVAL;
	tt_nworkers = workers ? workers : num_online_cpus();
	tt_nmutators = min(mutators, (int)TT_NSLOT);

	ret = tt_prepare();
	if (ret)
		return ret;

	tt_workers = kcalloc(tt_nworkers, sizeof(*tt_workers), GFP_KERNEL);
	tt_mutators = kcalloc(tt_nmutators, sizeof(*tt_mutators), GFP_KERNEL);
	if (!tt_workers || !tt_mutators) {
		ret = -ENOMEM;
		goto fail;
	}

	/* Each slot has exactly one mutator. */
	for (k = 0; k < TT_NSLOT; k++) {
		struct tt_mutator *m = &tt_mutators[k % tt_nmutators];

		m->slots[m->nslots++] = k;
	}

	/* Created stopped, woken together; bound round-robin to the CPUs. */
	cpu = cpumask_first(cpu_online_mask);
	for (i = 0; i < tt_nworkers; i++) {
		struct tt_worker *w = &tt_workers[i];

		w->rnd = get_random_u32() | 1;
		w->task = kthread_create_on_cpu(tt_worker_fn, w, cpu, "rftrace_torture_w/%u");
		if (IS_ERR(w->task)) {
			ret = PTR_ERR(w->task);
			w->task = NULL;
			goto fail_threads;
		}
		cpu = cpumask_next(cpu, cpu_online_mask);
		if (cpu >= nr_cpu_ids)
			cpu = cpumask_first(cpu_online_mask);
	}
	for (i = 0; i < tt_nmutators; i++) {
		struct tt_mutator *m = &tt_mutators[i];

		m->rnd = get_random_u32() | 1;
		m->task = kthread_create(tt_mutator_fn, m, "rftrace_torture_m/%d", i);
		if (IS_ERR(m->task)) {
			ret = PTR_ERR(m->task);
			m->task = NULL;
			goto fail_threads;
		}
	}
	tt_controller = kthread_create(tt_controller_fn, NULL, "rftrace_torture_c");
	if (IS_ERR(tt_controller)) {
		ret = PTR_ERR(tt_controller);
		tt_controller = NULL;
		goto fail_threads;
	}

	pr_info("rftrace_torture: starting: %u s, %d workers, %d mutators, %d tracers\n",
		duration, tt_nworkers, tt_nmutators, (int)TT_NSLOT);
	tt_start = jiffies;
	for (i = 0; i < tt_nworkers; i++)
		wake_up_process(tt_workers[i].task);
	for (i = 0; i < tt_nmutators; i++)
		wake_up_process(tt_mutators[i].task);
	wake_up_process(tt_controller);
	return 0;

fail_threads:
	/* Never woken: kthread_stop() ends them before their function runs. */
	for (i = 0; i < tt_nmutators; i++)
		if (tt_mutators[i].task)
			kthread_stop(tt_mutators[i].task);
	for (i = 0; i < tt_nworkers; i++)
		if (tt_workers[i].task)
			kthread_stop(tt_workers[i].task);
fail:
	tt_free_threads();
	tt_unprepare();
	return ret;
}

static void __exit notrace rftrace_torture_exit(void)
{
	/* Ends the run early if it is still going (tt_finish()). */
	kthread_stop(tt_controller);
	tt_free_threads();
}

#else /* !(CONFIG_DYNAMIC_FTRACE && CONFIG_X86_64) */

static int __init notrace rftrace_torture_init(void)
{
	pr_info("rftrace_torture: needs CONFIG_DYNAMIC_FTRACE on x86_64\n");
	return -EOPNOTSUPP;
}

static void __exit notrace rftrace_torture_exit(void)
{
}

#endif

module_init(rftrace_torture_init);
module_exit(rftrace_torture_exit);

MODULE_DESCRIPTION("Oracle-checked torture test of the tracer core, for the rftrace tests");
MODULE_LICENSE("GPL");
