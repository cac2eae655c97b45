// SPDX-License-Identifier: GPL-2.0
/*
 * rftrace_torture: a torture test of the tracer core (rcutorture and
 * locktorture style) for tests/torture.sh, written against the public
 * API only (<linux/ftrace.h>, <linux/kprobes.h>), so that it runs on the
 * upstream C core and on the Rust core alike.
 *
 * Worker kthreads, one bound to each CPU, call 32 traced functions of
 * this module while mutator kthreads register and unregister tracers of
 * those functions and change their filters. With preempt_workers, more
 * workers, not bound, call them with preemption on, and every fourth
 * function sleeps or yields in its body when they ask it to. Every call
 * is checked against an oracle (which tracer must see it, which may), and
 * its result and the caller's callee-saved registers against an untraced
 * reference.
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
 *   dynamic    ftrace_ops without flags whose ops and callback data are
 *              kzalloc'd for each registration and kfree'd as soon as
 *              unregister_ftrace_function() returns
 *   kp-entry   a kprobe at a function's entry, which kprobes puts on the
 *              ftrace site (kprobe_ftrace_ops), CONFIG_KPROBES; on arm64
 *              (no KPROBES_ON_FTRACE) an ordinary BRK on the function's
 *              first instruction (mov x9, x30, or the BTI c before it),
 *              next to the BL the core patches
 *   kp-body    a kprobe on the instruction after the ftrace site: an int3
 *              (or an optimized jump; a BRK on arm64) next to the sites
 *              the core patches
 *   direct     a direct call (register_ftrace_direct) to one of two
 *              trampolines of this module, switched by
 *              modify_ftrace_direct; functions 28-31 only (never together
 *              with the ipmodify slot on a function: a direct ops without
 *              ops_func cannot share with IPMODIFY),
 *              CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS
 *   graph      a function graph ops (struct fgraph_ops, registered with
 *              register_ftrace_graph(), which 6.12 does not export: glue
 *              patch 0013 on the C core, abi.c on the Rust core), filtered
 *              through its embedded ops (ftrace_set_filter*() on
 *              &gops.ops, before and while registered); its filter also
 *              always holds the two probe functions (see Function graph),
 *              CONFIG_FUNCTION_GRAPH_TRACER
 * regs and ipmodify need CONFIG_DYNAMIC_FTRACE_WITH_REGS: without it
 * (arm64) the core refuses an ops with SAVE_REGS (-EINVAL; an IPMODIFY
 * ops needs SAVE_REGS too), so these two slots do not exist there.
 *
 * Only plain and notrace ever have an empty filter (every function of
 * the kernel); every other ftrace, direct or graph slot is registered
 * only with 1 to 32 of the torture functions in its filter, and no change
 * while it is registered empties it. The test script meanwhile switches
 * the function_graph tracer on the same functions (and the preemptible
 * workers sleep inside them).
 *
 * The oracle. Each slot k has a sequence count seq[k] and, for each of
 * its states (seq[k] / 2), a bitmap want of the torture functions that
 * must reach its callback, kept in a ring of four (want_hist) so that
 * the states on either side of a change can both be read. Its mutator
 * makes seq[k] odd (then a full barrier) before any call into the API,
 * keeps a model of what the API established (registered or not, the
 * filter and notrace sets over the 32 functions, the kprobe's target, the
 * direct trampoline), and after the call returns writes the new state's
 * want and makes seq[k] even again (release). A worker:
 *   snapshot seq[k] (acquire) and its state's want for every slot;
 *   zero the hit counters of its call, mark the call "in flight" (bound
 *   workers: their CPU's in_call, preemption off; the others: their
 *   task's);
 *   call f;
 *   clear "in flight", read the counters; smp_rmb(); read seq[k] again.
 * The callbacks count a hit for the call in flight on this CPU (or in
 * this task) only when it is a call of the function whose ftrace site
 * (or kprobe address, or return address of the direct call) they were
 * called for; only the workers call the 32 functions. A window is stable
 * for slot k when both reads of seq[k] are the same even number: no API
 * call on slot k overlapped any part of the call (the seqlock argument:
 * had the call seen any effect of a later API call, made after seq[k]
 * went odd and a full barrier, the second read would see the odd count).
 * In a stable window the hits of slot k must be exactly want[k] bit f; in
 * any window at most 1 (a call passes each site once). Preemption inside
 * the call changes none of this: the counters of a preemptible worker's
 * call are its task's, and the window is as long as the call took.
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
 *  - register_kprobe()/enable_kprobe() arm before they return (int3 or
 *    BRK written and synced, or the ftrace filter set); disable_kprobe() and
 *    unregister_kprobe() disarm before they return, and an optimized
 *    probe whose jump stays until the optimizer runs is flagged disabled
 *    first (optimized_callback() and aggr_pre_handler() test it). On
 *    failure register leaves the probe unregistered, enable/disable leave
 *    the state as it was (kernel/kprobes.c restores the flags).
 *  - register/unregister/modify_ftrace_direct() go through
 *    register/unregister_ftrace_function() as above; modify switches the
 *    trampoline while a stub ops sends the sites through the list
 *    function, where exactly one of the two trampolines gets the call.
 *  - register_ftrace_graph() adds the graph ops' ops as a sub-ops of the
 *    graph manager ops (ftrace_startup_subops(): sites of the union of the
 *    sub-ops' filters) and then publishes it in fgraph_array; the entry
 *    tests each graph ops' own hash (ftrace_ops_test()) unless it is the
 *    only one (the static call, whose filter is then the sites'). A filter
 *    change of a registered graph ops moves its own hash, then the
 *    manager's and the sites (ftrace_hash_move_and_update_subops()).
 *    unregister_ftrace_graph() takes it out of fgraph_array before it
 *    shuts the sub-ops down.
 *
 * Around a change. A window that exactly one API call on slot k
 * overlapped (seq[k] went from state s to s + 1 during it) may or may
 * not see the callback, but only for a function one of the two states
 * wants: the site the call entered, and the hashes the list function
 * tested, were those of state s, of state s + 1, or of the update in
 * between, which moves sites and hashes from one to the other and calls
 * no ops for a function neither wants. A hit on any other function is a
 * mismatch. (Both wants are read before the ring can reuse their places:
 * the third read of seq[k] is within 6 of 2s.) Windows that more changes
 * overlapped are checked for "at most 1" only.
 *
 * Strays, counted in the callbacks and reported with the function, the
 * caller and the CPU, are mismatches: a hit on a torture function while
 * neither this CPU nor this task has a call of it in flight; a hit on a
 * function outside a slot's domain (ipmodify: 00-19, direct: 28-31); a
 * kprobe handler called for an address not its own; and, for every slot
 * whose filter is never empty (all but plain and notrace), a callback for
 * any function outside the 32 (a core that ignores a filter, or takes an
 * empty hash for "every function" for a moment). Plain and notrace are
 * called for every kernel function while their filter is empty, and a
 * call that entered the site then may reach the callback after the next
 * filter is in: their hits outside the 32 prove nothing and are dropped.
 *
 * Unregistration. The callbacks count themselves in and out per CPU
 * (inflight) and test their data's "gone" flag, which the mutator sets as
 * soon as the unregistration (unregister_ftrace_function(),
 * unregister_kprobe(), unregister_ftrace_direct(); for the graph slot,
 * unregister_ftrace_graph() and the owner's wait, see Function graph)
 * returned and clears before the next registration. A callback still counted in flight when
 * the unregistration returned, or that sees "gone", was running after the
 * core said none would: a missing RCU-tasks or rude wait, or a site or a
 * group left calling a trampoline. The dynamic slot then frees its ops
 * and data: under KASAN such a callback is also a use after free (it
 * reads its data on entry, after dawdling, and on the way out).
 *
 * Preemptible workers (preempt_workers > 0). Not bound, more of them than
 * CPUs, calling with preemption on; every fourth function sleeps
 * (usleep_range), calls schedule() or cond_resched() in its body when its
 * last argument asks, which only these workers do. Their calls are
 * checked as the bound workers' are (the window argument does not need
 * preemption off: the counters are the task's). The dynamic slot's
 * callback, called directly from its trampoline with preemption on (no
 * RECURSION flag), dawdles for them, so that with preempt=full a task is
 * now and then preempted inside the trampoline and the callback, and the
 * ops is unregistered and freed meanwhile: only synchronize_rcu_tasks()
 * waits for such a task. With preemption voluntary (the production
 * kernel's boot default) nothing preempts a callback, the rude wait is
 * enough, and the count of preempted callbacks stays 0: the script says
 * so.
 *
 * Integrity. Each torture function takes six arguments and returns a mix
 * of all their bits; the worker calls it from inline asm that first loads
 * the callee-saved registers (rbx and r12-r15; x19-x28 on arm64) with
 * values derived from a seed kept on its stack, and afterwards hands back
 * what changed in each. The result must equal what an untraced copy of
 * the mix (tt_ref()) computes, and no callee-saved
 * register may change: a trampoline that clobbers an argument register on
 * the way in, the return value on the way out, or a callee-saved register
 * (or the caller's stack slot of the seed) is a mismatch.
 *
 * Quiet points. Every quiet_ms the controller parks every worker between
 * two calls, and at the end after they stopped. Each torture function
 * counts its calls in its body (per CPU, independently of every tracer)
 * and each callback counts its hits per function (globally, whatever the
 * "in flight" marks say). For a slot whose seq was the same even number
 * at two quiet points, every call in between ran wholly in that state:
 * the hits of each function must equal its calls if the state wants it,
 * 0 if not. At the end, the calls counted in the bodies must equal the
 * calls the workers made, and the hits the callbacks attributed to calls
 * must equal the hits the workers read.
 *
 * Failures. None of the API calls the mutators make may fail: a failure
 * is counted per slot and fails the run (the result `unexpected`), as a
 * slot that never had a stable window expecting a hit does (`unchecked`),
 * and a return address probe (below) never run with the graph slot
 * registered all through.
 *
 * Function graph (the graph slot). Its entry callback counts a hit as
 * every callback does, so the oracle above holds for it: in a stable
 * window an entry exactly when its filter wants the function, around a
 * change only for a function one side wants, never two, no strays.
 * Besides:
 *  - Pairing. The entry pushes (function, depth, expected result) on the
 *    worker's own record (struct tt_grec, found from current: the bound
 *    worker in a call on this CPU, or the preemptible worker current is;
 *    no allocation), the return pops it and must find its own function
 *    on top, at the entry's depth. A return with no entry of it open is a
 *    stray, but on 6.12's fgraph.c for the graph ops at index 0, which
 *    gets the return of every frame (bit 0 is set in every bitmap). Once
 *    the call is back in the worker, all of its returns have run: an entry
 *    still open lost its return callback, a mismatch in a window stable
 *    for the graph slot (only an unregistration during the call may skip
 *    it, on both cores).
 *  - Empty shadow stack between calls. Every entry of a worker's call has
 *    the same depth (the worker's own frames are notrace, so its shadow
 *    stack is empty between calls): a frame the core kept after its
 *    return, or lost, moves it.
 *  - Return value. trace->retval (CONFIG_FUNCTION_GRAPH_RETVAL) must equal
 *    the untraced reference, as the caller's result does.
 *  - Return address. Every eighth call of a bound worker is followed by a
 *    probe: tt_call_nest() calls rftrace_torture_nest_outer(), which calls
 *    rftrace_torture_nest_inner(), both always in the graph filter, so
 *    that the inner's frame has the outer's below it. The call site saves
 *    the stack and frame pointers (rsp and rbp, sp and x29; per CPU,
 *    preemption off); back there, the stack pointer must be the saved
 *    one. A return hook that gives the inner another frame's return
 *    address (the outer's, which is the probe's site: what a shadow stack
 *    read one frame off gives) lands there with the inner's stack: a
 *    mismatch, and the saved pointers are put back so that the worker goes
 *    on. Any other wrong address is not in a frame of this task's: the
 *    worker does not come back from it, and the oops (or the module never
 *    finishing) fails the run. The outer's result, and in a stable window
 *    two entries and two returns (none if unregistered), are checked too.
 *  - Quiet points. For a graph slot unchanged since the last one, each
 *    function's returns paired with an entry equal its entries (and its
 *    hits its calls, as for every slot); no worker's record holds an
 *    entry. The same at the end, once the workers stopped.
 *  - Unregistration. The Rust core's unregister_ftrace_graph() waits for
 *    the callbacks in flight with preemption off (the entries', and the
 *    returns' that nothing preempted) before it returns; 6.12's does not
 *    (its graph_ops is static, and ftrace_shutdown() waits for dynamic
 *    ops only). So the mutator waits as the owner of a graph ops must
 *    before freeing it: synchronize_rcu_tasks_rude() on the C core, and
 *    on both synchronize_rcu_tasks() when preemptible (the return path
 *    runs with preemption on). Then it sets "gone": a callback still
 *    running, or starting, afterwards is a mismatch. On the Rust core an
 *    entry callback still running right after the unregistration
 *    returned, before the owner's wait, is one too; and before each
 *    unregistration one worker's entry callback stays up to 20 ms
 *    (tt_graph_entry), so that there is one to wait for. Three in four
 *    unregistrations run with no other mutator in the API (whose waits,
 *    under ftrace_lock, would end only with the hold and keep the
 *    unregistration from starting before it ends) and with a second
 *    graph ops registered, the anchor, which traces a function nobody
 *    calls: the slot is then not the last graph ops, whose stop waits
 *    for other reasons. Their hold lasts up to 250 ms, longer than the
 *    test script's tracer switches and module loads keep ftrace_lock,
 *    so that only the core's own wait ends it first (mutant 14, which
 *    skips that wait, is caught so: 4 mismatches in 60 s).
 *
 * Besides: a SAVE_REGS callback without pt_regs is a mismatch too (where
 * SAVE_REGS ops exist: CONFIG_DYNAMIC_FTRACE_WITH_REGS).
 *
 * Parameters: duration (s), workers (0: one per online CPU),
 * preempt_workers, mutators, quiet_ms, verbose. Module init starts the
 * threads and returns; a controller thread stops the run after
 * `duration` (or at rmmod), unregisters everything, prints one line
 *   rftrace_torture: <s> s, <n> workers (<p> preemptible), ops operations
 *   <N> (<F> failed), calls <C>, checked <K>, reconciled <R>,
 *   unchecked tracers <U>, mismatches <M>
 * and sets the read-only parameter `done`; `mismatches`, `unexpected`,
 * `unchecked`, `calls`, `checked`, `hit_checks`, `reconciled`, `strays`
 * and `operations` hold the results.
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
#include <linux/rwsem.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

/*
 * x86_64, and arm64 with its patchable-function-entry ftrace (WITH_ARGS):
 * the callers, the probe and the direct trampolines are written in each
 * one's assembly, and the ftrace site is found by decoding each one's
 * function entry. arm64's callbacks get no pt_regs (no WITH_REGS) and its
 * kprobes never go through ftrace (no KPROBES_ON_FTRACE): see the regs,
 * ipmodify and kprobe slots.
 */
#if defined(CONFIG_DYNAMIC_FTRACE) &&					\
	(defined(CONFIG_X86_64) ||					\
	 (defined(CONFIG_ARM64) && defined(CONFIG_DYNAMIC_FTRACE_WITH_ARGS)))

#ifdef CONFIG_X86_64
#include <asm/asm.h>
#include <asm/ibt.h>
#else
#include <asm/alternative-macros.h>
#include <asm/cpucaps.h>
#include <asm/insn.h>
#endif

#ifdef CONFIG_ARM64
/*
 * x18 in the clobbers of an asm that calls a function: without the shadow
 * call stack it is an ordinary temporary that the callee may change (and
 * the compiler would keep a value there across the asm); with it, it is
 * the shadow stack pointer, fixed (-ffixed-x18) and kept by every callee.
 */
#ifdef CONFIG_SHADOW_CALL_STACK
#define TT_X18_CLOBBER
#else
#define TT_X18_CLOBBER	"x18",
#endif
#endif

#if defined(CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS)
#define TT_DIRECT 1
#ifdef CONFIG_X86_64
#include <asm/linkage.h>
#include <asm/nospec-branch.h>
#endif
#endif

#ifdef CONFIG_FUNCTION_GRAPH_TRACER
#define TT_GRAPH 1
#include <asm/percpu.h>
#endif

static unsigned int duration = 30;
module_param(duration, uint, 0444);
MODULE_PARM_DESC(duration, "seconds to run (default 30)");
static int workers;
module_param(workers, int, 0444);
MODULE_PARM_DESC(workers, "worker threads, one bound to each CPU (default 0: one per online CPU)");
static int preempt_workers;
module_param(preempt_workers, int, 0444);
MODULE_PARM_DESC(preempt_workers, "more worker threads, not bound, calling with preemption on (default 0)");
static int mutators = 2;
module_param(mutators, int, 0444);
MODULE_PARM_DESC(mutators, "mutator threads (default 2)");
static unsigned int quiet_ms = 200;
module_param(quiet_ms, uint, 0444);
MODULE_PARM_DESC(quiet_ms, "ms between the quiet points that reconcile the counts (default 200; 0: at the end only)");
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
static unsigned long unexpected;
module_param(unexpected, ulong, 0444);
MODULE_PARM_DESC(unexpected, "API calls of the mutators that failed, none expected (valid once done)");
static int unchecked;
module_param(unchecked, int, 0444);
MODULE_PARM_DESC(unchecked, "tracers never checked in a stable window expecting a hit (valid once done)");
static unsigned long calls;
module_param(calls, ulong, 0444);
MODULE_PARM_DESC(calls, "calls of the torture functions (valid once done)");
static unsigned long checked;
module_param(checked, ulong, 0444);
MODULE_PARM_DESC(checked, "exact checks: (call, tracer) pairs in stable windows (valid once done)");
static unsigned long hit_checks;
module_param(hit_checks, ulong, 0444);
MODULE_PARM_DESC(hit_checks, "exact checks that expected a hit (valid once done)");
static unsigned long reconciled;
module_param(reconciled, ulong, 0444);
MODULE_PARM_DESC(reconciled, "(tracer, quiet interval) pairs whose counts were reconciled (valid once done)");
static unsigned long strays;
module_param(strays, ulong, 0444);
MODULE_PARM_DESC(strays, "callbacks where none may be (counted in mismatches too; valid once done)");
static unsigned long operations;
module_param(operations, ulong, 0444);
MODULE_PARM_DESC(operations, "API operations of the mutators (valid once done)");

static atomic_long_t tt_mismatches = ATOMIC_LONG_INIT(0);

static notrace void tt_mismatch(void)
{
	atomic_long_inc(&tt_mismatches);
}

/* ------------------------------------------------------------------ */
/*
 * The 32 traced functions: all differ, none can be folded or cloned.
 *
 * Each takes six arguments and returns a mix in which every bit of each
 * argument counts (xor, then a multiplication by an odd constant, which
 * is a bijection), the same mix that its untraced copy tt_ref()
 * computes. Each counts its calls in its body, per CPU (tt_fncalls), apart
 * from every tracer. Every fourth (03, 07, ..., 31) sleeps or yields when
 * its last argument has TT_NAP, which only the preemptible workers set.
 */

#define TT_NFN 32
#define TT_NAP (1UL << 63)

#define TT_ARGS unsigned long a, unsigned long b, unsigned long c,	\
		unsigned long d, unsigned long e, unsigned long f

struct tt_fncalls {
	unsigned long cnt[TT_NFN];
};
static DEFINE_PER_CPU(struct tt_fncalls, tt_fncalls);

static __always_inline unsigned long tt_mix(unsigned long n, TT_ARGS)
{
	unsigned long x = (a ^ n) * 0x9e3779b97f4a7c15UL;

	x = (x ^ (x >> 29) ^ b) * 0xbf58476d1ce4e5b9UL;
	x = (x ^ (x >> 32) ^ c) * 0x94d049bb133111ebUL;
	x = (x ^ (x >> 29) ^ d) * 0x9e3779b97f4a7c15UL;
	x = (x ^ (x >> 32) ^ e) * 0xbf58476d1ce4e5b9UL;
	x = (x ^ (x >> 29) ^ f) * 0x94d049bb133111ebUL;
	return x ^ (x >> 31);
}

/* Sleeps or yields inside a traced function, three ways. */
static noinline notrace void tt_nap(unsigned long how)
{
	switch (how & 3) {
	case 0:
		cond_resched();
		break;
	case 1:
		usleep_range(1, 5);
		break;
	case 2:
		schedule();
		break;
	default:
		break;
	}
}

#define TT_FN(n)							\
unsigned long rftrace_torture_fn_##n(unsigned long a, unsigned long b,	\
				     unsigned long c, unsigned long d,	\
				     unsigned long e, unsigned long f);	\
noinline unsigned long rftrace_torture_fn_##n(TT_ARGS)			\
{									\
	this_cpu_inc(tt_fncalls.cnt[1##n - 100]);			\
	if ((1##n - 100) % 4 == 3 && unlikely(f & TT_NAP))		\
		tt_nap(a);						\
	return tt_mix(1##n - 100, a, b, c, d, e, f);			\
}
TT_FN(00) TT_FN(01) TT_FN(02) TT_FN(03) TT_FN(04) TT_FN(05) TT_FN(06) TT_FN(07)
TT_FN(08) TT_FN(09) TT_FN(10) TT_FN(11) TT_FN(12) TT_FN(13) TT_FN(14) TT_FN(15)
TT_FN(16) TT_FN(17) TT_FN(18) TT_FN(19) TT_FN(20) TT_FN(21) TT_FN(22) TT_FN(23)
TT_FN(24) TT_FN(25) TT_FN(26) TT_FN(27) TT_FN(28) TT_FN(29) TT_FN(30) TT_FN(31)

#define TT_P(n) rftrace_torture_fn_##n,
static unsigned long (*const tt_fns[TT_NFN])(TT_ARGS) = {
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

/* The untraced reference: the same mix, computed here. */
static notrace unsigned long tt_ref(int idx, const unsigned long *v)
{
	return tt_mix(idx, v[0], v[1], v[2], v[3], v[4], v[5]);
}

#ifdef TT_GRAPH
/*
 * The graph slot's return address probe: two more traced functions, not
 * among the 32 (no pattern selects them; only the graph slot's filter
 * holds them, always), the outer calling the inner, so that the inner's
 * frame has the outer's below it on the shadow stack. A return hook that
 * gives the inner the return address of another frame (the outer's: the
 * probe's own call site) lands in tt_call_nest(), which sees it.
 */
#define TT_NNEST	2	/* 0: outer, 1: inner */
#define TT_NEST_K	0x2545f4914f6cdd1dUL

static __always_inline unsigned long tt_nest_mix(unsigned long x)
{
	return tt_mix(TT_NFN, x, ~x, x >> 7, x << 3, x ^ TT_NEST_K, 0);
}

static noinline unsigned long rftrace_torture_nest_inner(unsigned long x)
{
	return tt_nest_mix(x);
}

/*
 * The inner one called from asm: no call the compiler could optimise
 * (both have their address taken below, so they keep their names and the
 * standard calling convention).
 */
#ifdef CONFIG_X86_64
static noinline unsigned long rftrace_torture_nest_outer(unsigned long x)
{
	unsigned long r;

	x ^= TT_NEST_K;
	asm volatile("call rftrace_torture_nest_inner"
		     : "=a" (r), "+D" (x), ASM_CALL_CONSTRAINT
		     :
		     : "rsi", "rdx", "rcx", "r8", "r9", "r10", "r11",
		       "memory", "cc");
	return r * 3 + 1;
}
#else
/*
 * arm64: the argument and the result in x0; the call may change every
 * other caller-saved register (x1-x17, x18 without the shadow call stack)
 * and the link register.
 */
static noinline unsigned long rftrace_torture_nest_outer(unsigned long x)
{
	register unsigned long x0 asm("x0") = x ^ TT_NEST_K;

	asm volatile("bl	rftrace_torture_nest_inner"
		     : "+r" (x0)
		     :
		     : "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9",
		       "x10", "x11", "x12", "x13", "x14", "x15", "x16", "x17",
		       TT_X18_CLOBBER "x30", "memory", "cc");
	return x0 * 3 + 1;
}
#endif

static unsigned long (*const tt_nest_fns[TT_NNEST])(unsigned long x) = {
	rftrace_torture_nest_outer, rftrace_torture_nest_inner,
};

static const char *const tt_nest_names[TT_NNEST] = {
	"rftrace_torture_nest_outer", "rftrace_torture_nest_inner",
};

/* What the outer and the inner return for the probe's argument x. */
static notrace void tt_nest_ref(unsigned long x, unsigned long *ref)
{
	ref[1] = tt_nest_mix(x ^ TT_NEST_K);
	ref[0] = ref[1] * 3 + 1;
}

/* The probe's stack and frame pointers, saved before its call. */
struct tt_nest_save {
	unsigned long sp, bp;	/* bp: rbp on x86_64, x29 on arm64 */
#if defined(CONFIG_ARM64) && defined(CONFIG_SHADOW_CALL_STACK)
	unsigned long scs;	/* x18, the shadow call stack pointer */
#endif
};

static DEFINE_PER_CPU(struct tt_nest_save, tt_nest_save);

/*
 * Calls the outer probe function with preemption off (the saved pointers
 * are this CPU's) and returns its result. Back at its call site, the
 * stack pointer is the one saved before the call, unless a return hook
 * sent a deeper frame's return here: then it holds that frame's, which
 * goes to *landed (0 otherwise), and the saved stack and frame pointers
 * are put back (the registers the asm clobbers are the rest of what the
 * outer frame held; the compiler restores the caller's own). No value is
 * read from the stack or through a register after the call before that.
 */
#ifdef CONFIG_X86_64
static notrace unsigned long tt_call_nest(unsigned long x, unsigned long *landed)
{
	unsigned long ax, dx;

	asm volatile("movq %%rsp, " __percpu_arg([sp]) "\n\t"
		     "movq %%rbp, " __percpu_arg([bp]) "\n\t"
		     "call rftrace_torture_nest_outer\n\t"
		     "xorl %%edx, %%edx\n\t"
		     "cmpq " __percpu_arg([sp]) ", %%rsp\n\t"
		     "je 1f\n\t"
		     "movq %%rsp, %%rdx\n\t"
		     "movq " __percpu_arg([sp]) ", %%rsp\n\t"
		     "movq " __percpu_arg([bp]) ", %%rbp\n"
		     "1:\n\t"
		     : "=a" (ax), "+D" (x), "=d" (dx),
		       [sp] "+m" (__my_cpu_var(tt_nest_save.sp)),
		       [bp] "+m" (__my_cpu_var(tt_nest_save.bp)),
		       ASM_CALL_CONSTRAINT
		     :
		     : "rbx", "rsi", "rcx", "r8", "r9", "r10", "r11",
		       "r12", "r13", "r14", "r15", "memory", "cc");
	*landed = dx;
	return ax;
}
#else
/*
 * arm64 has no segment-relative addressing: this CPU's tt_nest_save is
 * its per-CPU address plus this CPU's offset (TPIDR_EL1, or TPIDR_EL2 on
 * a VHE kernel, as __kern_my_cpu_offset() reads it), computed afresh
 * after the call, when no register the call may have changed can be
 * trusted. The pair is stored and loaded with stp/ldp (sp, then x29).
 * With the shadow call stack, x18 too: a return to the wrong frame leaves
 * it where the outer frame's was.
 */
static_assert(offsetof(struct tt_nest_save, sp) == 0 &&
	      offsetof(struct tt_nest_save, bp) == sizeof(unsigned long));
#ifdef CONFIG_SHADOW_CALL_STACK
static_assert(offsetof(struct tt_nest_save, scs) == 2 * sizeof(unsigned long));
#define TT_NEST_SAVE_SCS	"str	x18, [x2, #16]\n\t"
#define TT_NEST_LOAD_SCS	"ldr	x18, [x2, #16]\n\t"
#else
#define TT_NEST_SAVE_SCS
#define TT_NEST_LOAD_SCS
#endif

#define TT_NEST_SAVE_ADDR(reg, tmp)					\
	"adrp	" reg ", %c[save]\n\t"					\
	"add	" reg ", " reg ", :lo12:%c[save]\n\t"			\
	ALTERNATIVE("mrs	" tmp ", tpidr_el1",			\
		    "mrs	" tmp ", tpidr_el2",			\
		    ARM64_HAS_VIRT_HOST_EXTN)				\
	"add	" reg ", " reg ", " tmp "\n\t"

static notrace unsigned long tt_call_nest(unsigned long x, unsigned long *landed)
{
	register unsigned long x0 asm("x0") = x;
	register unsigned long x1 asm("x1");

	asm volatile(TT_NEST_SAVE_ADDR("x2", "x3")
		     "mov	x3, sp\n\t"
		     "stp	x3, x29, [x2]\n\t"
		     TT_NEST_SAVE_SCS
		     "bl	rftrace_torture_nest_outer\n\t"
		     TT_NEST_SAVE_ADDR("x2", "x3")
		     "mov	x1, xzr\n\t"
		     "ldr	x3, [x2]\n\t"
		     "mov	x4, sp\n\t"
		     "cmp	x4, x3\n\t"
		     "b.eq	1f\n\t"
		     "mov	x1, x4\n\t"
		     "ldp	x3, x29, [x2]\n\t"
		     TT_NEST_LOAD_SCS
		     "mov	sp, x3\n"
		     "1:\n\t"
		     : "+r" (x0), "=r" (x1)
		     : [save] "i" (&tt_nest_save)
		     : "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9",
		       "x10", "x11", "x12", "x13", "x14", "x15", "x16", "x17",
		       TT_X18_CLOBBER "x19", "x20", "x21", "x22", "x23", "x24",
		       "x25", "x26", "x27", "x28", "x30", "memory", "cc");
	*landed = x1;
	return x0;
}
#endif

/*
 * The anchor: a second graph ops, on a function nobody calls, that a
 * mutator alone in the API registers around three in four of the graph
 * slot's unregistrations, so that the slot is not the last graph ops then (see
 * Function graph). Its entry callback never runs: a call is a mismatch
 * (a lone ops called, unfiltered, for the sites of one that is going).
 */
static noinline unsigned long rftrace_torture_anchor(unsigned long x)
{
	return tt_nest_mix(x) ^ 1;
}

struct tt_worker;
static notrace struct tt_worker *tt_pw_current(void);

static atomic_long_t tt_anchor_calls, tt_anchor_preempted;
static unsigned long tt_anchor_ip;

/*
 * A preemptible worker's call may have been preempted inside the
 * trampoline, before the graph entry, across the slot's unregistration:
 * neither core waits for such a task there (6.12's calls its lone graph
 * ops directly too), so that call is counted apart, not a mismatch.
 */
static notrace int tt_anchor_entry(struct ftrace_graph_ent *trace, struct fgraph_ops *gops)
{
	if (tt_pw_current())
		atomic_long_inc(&tt_anchor_preempted);
	else
		atomic_long_inc(&tt_anchor_calls);
	return 0;
}

static notrace void tt_anchor_return(struct ftrace_graph_ret *trace, struct fgraph_ops *gops)
{
}

static struct fgraph_ops tt_anchor = {
	.entryfunc = tt_anchor_entry,
	.retfunc = tt_anchor_return,
};

/* The anchor's filter goes (it is registered only inside an unregistration). */
static notrace void tt_anchor_free(void)
{
	if (tt_anchor_ip)
		ftrace_free_filter(&tt_anchor.ops);
	tt_anchor_ip = 0;
}

/* tt_graph_unregister_alone() runs: the anchor is to be registered. */
static bool tt_graph_alone;
#endif /* TT_GRAPH */

/*
 * The mutators' steps hold this for reading; three in four unregistrations
 * of the graph slot take it for writing (tt_graph_unregister_alone), so
 * that they meet no other mutator inside the core (see Function graph).
 */
static DECLARE_RWSEM(tt_api_sem);

#ifdef CONFIG_X86_64
/*
 * The callers. Each loads rbx and r12-r15 with a seed (kept in the
 * caller's stack frame, an "m" operand) and four constants xor'ed with
 * it, calls its torture function directly with the six arguments in
 * rdi, rsi, rdx, rcx, r8 and r9, and then leaves in rdi, rsi, rdx, rcx
 * and r8 the xor of each callee-saved register with what it loaded
 * there, recomputed from the seed read again from the stack: all 0 when
 * the function and every tracer on the way preserved them (and the
 * stack slot). The asm clobbers the registers it loads, so the compiler
 * saves and restores the caller's around it; the argument registers are
 * in-out operands (the callee may change them), r10 and r11 clobbers.
 * A direct call: no retpoline, no IBT or CFI check in the way (the
 * functions keep their ENDBR: their addresses are taken above). rbp is
 * left out: with frame pointers it cannot be an asm clobber.
 */
#define TT_NCSR 5
static const char *const tt_csr_names[TT_NCSR] = { "%rbx", "%r12", "%r13", "%r14", "%r15" };

#define TT_K12 "0x6a09e667f3bcc908"
#define TT_K13 "0xbb67ae8584caa73b"
#define TT_K14 "0x3c6ef372fe94f82b"
#define TT_K15 "0xa54ff53a5f1d36f1"

#define TT_CSR_LOAD							\
	"movq %[seed], %%rbx\n\t"					\
	"movabsq $" TT_K12 ", %%r12\n\t"				\
	"xorq %%rbx, %%r12\n\t"						\
	"movabsq $" TT_K13 ", %%r13\n\t"				\
	"xorq %%rbx, %%r13\n\t"						\
	"movabsq $" TT_K14 ", %%r14\n\t"				\
	"xorq %%rbx, %%r14\n\t"						\
	"movabsq $" TT_K15 ", %%r15\n\t"				\
	"xorq %%rbx, %%r15\n\t"

#define TT_CSR_DIFF(k, reg, out)					\
	"movabsq $" k ", %%" out "\n\t"					\
	"xorq %[seed], %%" out "\n\t"					\
	"xorq %%" reg ", %%" out "\n\t"

#define TT_CSR_DIFFS							\
	"movq %[seed], %%rdi\n\t"					\
	"xorq %%rbx, %%rdi\n\t"						\
	TT_CSR_DIFF(TT_K12, "r12", "rsi")				\
	TT_CSR_DIFF(TT_K13, "r13", "rdx")				\
	TT_CSR_DIFF(TT_K14, "r14", "rcx")				\
	TT_CSR_DIFF(TT_K15, "r15", "r8")

#define TT_CALLER(n)							\
static notrace unsigned long tt_call_##n(const unsigned long *v,	\
					 unsigned long seed,		\
					 unsigned long *diff)		\
{									\
	register unsigned long r8 asm("r8") = v[4];			\
	register unsigned long r9 asm("r9") = v[5];			\
	unsigned long di = v[0], si = v[1], dx = v[2], cx = v[3], ax;	\
									\
	asm volatile(TT_CSR_LOAD					\
		     "call rftrace_torture_fn_" #n "\n\t"		\
		     TT_CSR_DIFFS					\
		     : "=a" (ax), "+D" (di), "+S" (si), "+d" (dx),	\
		       "+c" (cx), "+r" (r8), "+r" (r9),			\
		       ASM_CALL_CONSTRAINT				\
		     : [seed] "m" (seed)				\
		     : "rbx", "r10", "r11", "r12", "r13", "r14", "r15",	\
		       "memory", "cc");					\
	diff[0] = di;							\
	diff[1] = si;							\
	diff[2] = dx;							\
	diff[3] = cx;							\
	diff[4] = r8;							\
	return ax;							\
}
#else
/*
 * The callers, arm64. Each pushes a seed (an in-out operand in x19) on
 * the stack, loads x19 with it and x20-x28 with it rotated by 7, 14, ...
 * 63 bits, calls its torture function directly (bl) with the six
 * arguments in x0-x5, and then leaves in x19 and x1-x9 the xor of each
 * callee-saved register with what it loaded there, recomputed from the
 * seed popped from the stack: all 0 when the function and every tracer on
 * the way preserved them (and the stack slot, just above the callee's
 * stack pointer). x19 and the registers it loads are operands or
 * clobbers, so the compiler saves and restores the caller's around it;
 * the argument registers are in-out operands (the callee may change
 * them), every other caller-saved register (x6-x17, and x18 unless it is
 * the shadow call stack's) an output or a clobber, and so is x30, which
 * the bl sets. x29 (the frame pointer) cannot be an asm clobber: left
 * out. The push keeps sp 16-byte aligned.
 */
#define TT_NCSR 10
static const char *const tt_csr_names[TT_NCSR] = {
	"x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28",
};

#define TT_CSR_LOAD							\
	"str	x19, [sp, #-16]!\n\t"					\
	"ror	x20, x19, #7\n\t"					\
	"ror	x21, x19, #14\n\t"					\
	"ror	x22, x19, #21\n\t"					\
	"ror	x23, x19, #28\n\t"					\
	"ror	x24, x19, #35\n\t"					\
	"ror	x25, x19, #42\n\t"					\
	"ror	x26, x19, #49\n\t"					\
	"ror	x27, x19, #56\n\t"					\
	"ror	x28, x19, #63\n\t"

/* out = reg ^ (the seed in x10, rotated as TT_CSR_LOAD did for reg) */
#define TT_CSR_DIFF(rot, reg, out)					\
	"ror	" out ", x10, #" rot "\n\t"				\
	"eor	" out ", " out ", " reg "\n\t"

#define TT_CSR_DIFFS							\
	"ldr	x10, [sp], #16\n\t"					\
	"eor	x19, x19, x10\n\t"					\
	TT_CSR_DIFF("7", "x20", "x1")					\
	TT_CSR_DIFF("14", "x21", "x2")					\
	TT_CSR_DIFF("21", "x22", "x3")					\
	TT_CSR_DIFF("28", "x23", "x4")					\
	TT_CSR_DIFF("35", "x24", "x5")					\
	TT_CSR_DIFF("42", "x25", "x6")					\
	TT_CSR_DIFF("49", "x26", "x7")					\
	TT_CSR_DIFF("56", "x27", "x8")					\
	TT_CSR_DIFF("63", "x28", "x9")

#define TT_CALLER(n)							\
static notrace unsigned long tt_call_##n(const unsigned long *v,	\
					 unsigned long seed,		\
					 unsigned long *diff)		\
{									\
	register unsigned long x0 asm("x0") = v[0];			\
	register unsigned long x1 asm("x1") = v[1];			\
	register unsigned long x2 asm("x2") = v[2];			\
	register unsigned long x3 asm("x3") = v[3];			\
	register unsigned long x4 asm("x4") = v[4];			\
	register unsigned long x5 asm("x5") = v[5];			\
	register unsigned long x6 asm("x6");				\
	register unsigned long x7 asm("x7");				\
	register unsigned long x8 asm("x8");				\
	register unsigned long x9 asm("x9");				\
	register unsigned long x19 asm("x19") = seed;			\
									\
	asm volatile(TT_CSR_LOAD					\
		     "bl	rftrace_torture_fn_" #n "\n\t"		\
		     TT_CSR_DIFFS					\
		     : "+r" (x0), "+r" (x1), "+r" (x2), "+r" (x3),	\
		       "+r" (x4), "+r" (x5), "=r" (x6), "=r" (x7),	\
		       "=r" (x8), "=r" (x9), "+r" (x19)		\
		     :							\
		     : "x10", "x11", "x12", "x13", "x14", "x15", "x16",	\
		       "x17", TT_X18_CLOBBER "x20", "x21", "x22", "x23",	\
		       "x24", "x25", "x26", "x27", "x28", "x30", "memory",	\
		       "cc");						\
	diff[0] = x19;							\
	diff[1] = x1;							\
	diff[2] = x2;							\
	diff[3] = x3;							\
	diff[4] = x4;							\
	diff[5] = x5;							\
	diff[6] = x6;							\
	diff[7] = x7;							\
	diff[8] = x8;							\
	diff[9] = x9;							\
	return x0;							\
}
#endif
TT_CALLER(00) TT_CALLER(01) TT_CALLER(02) TT_CALLER(03)
TT_CALLER(04) TT_CALLER(05) TT_CALLER(06) TT_CALLER(07)
TT_CALLER(08) TT_CALLER(09) TT_CALLER(10) TT_CALLER(11)
TT_CALLER(12) TT_CALLER(13) TT_CALLER(14) TT_CALLER(15)
TT_CALLER(16) TT_CALLER(17) TT_CALLER(18) TT_CALLER(19)
TT_CALLER(20) TT_CALLER(21) TT_CALLER(22) TT_CALLER(23)
TT_CALLER(24) TT_CALLER(25) TT_CALLER(26) TT_CALLER(27)
TT_CALLER(28) TT_CALLER(29) TT_CALLER(30) TT_CALLER(31)

#define TT_C(n) tt_call_##n,
static unsigned long (*const tt_callers[TT_NFN])(const unsigned long *v,
						 unsigned long seed,
						 unsigned long *diff) = {
	TT_C(00) TT_C(01) TT_C(02) TT_C(03) TT_C(04) TT_C(05) TT_C(06) TT_C(07)
	TT_C(08) TT_C(09) TT_C(10) TT_C(11) TT_C(12) TT_C(13) TT_C(14) TT_C(15)
	TT_C(16) TT_C(17) TT_C(18) TT_C(19) TT_C(20) TT_C(21) TT_C(22) TT_C(23)
	TT_C(24) TT_C(25) TT_C(26) TT_C(27) TT_C(28) TT_C(29) TT_C(30) TT_C(31)
};

#define TT_ALL_FNS	0xffffffffU
#define TT_BIT(i)	(1U << (i))

/*
 * Each function's ftrace site (tt_site_of()): after the ENDBR with IBT,
 * else its start; on arm64 the BL after mov x9, x30 (and any BTI c).
 */
static unsigned long tt_site[TT_NFN];
static unsigned long tt_site_lo, tt_site_hi;
/* The sites in address order, for tt_site_index(). */
static struct {
	unsigned long site;
	int idx;
} tt_sorted[TT_NFN];

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
	TT_K_GRAPH,
};

/*
 * regs and ipmodify only where an ops may ask for pt_regs: without
 * DYNAMIC_FTRACE_WITH_REGS (arm64) register_ftrace_function() refuses
 * FTRACE_OPS_FL_SAVE_REGS with -EINVAL, and IPMODIFY requires SAVE_REGS.
 */
enum {
	TT_S_PLAIN,
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_REGS
	TT_S_REGS,
#endif
	TT_S_RECURSION,
	TT_S_RCU,
	TT_S_NOTRACE,
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_REGS
	TT_S_IPMODIFY,
#endif
	TT_S_DYNAMIC,
#ifdef CONFIG_KPROBES
	TT_S_KP_ENTRY,
	TT_S_KP_BODY,
#endif
#ifdef TT_DIRECT
	TT_S_DIRECT,
#endif
#ifdef TT_GRAPH
	TT_S_GRAPH,
#endif
	TT_NSLOT
};

#ifdef TT_DIRECT
#define TT_DIRECT_SLOT TT_S_DIRECT
#else
#define TT_DIRECT_SLOT (-1)
#endif

struct tt_slot;

/*
 * What a callback reads through its ops (ops->private) or its kprobe:
 * the slot's own for static slots, one kzalloc'd per registration for
 * the dynamic one.
 */
struct tt_cbdata {
	unsigned long magic;
	struct tt_slot *slot;
	int gone;		/* the unregistration returned: no callback now */
	bool dawdle;		/* dynamic: dawdle in preemptible workers' calls */
	atomic_long_t hits;	/* dynamic: hits on the torture functions */
	int hold;		/* dynamic, graph: one callback is to stay (tt_going) */
	int held;		/* dynamic, graph: a callback took the hold */
	unsigned int hold_ms;	/* graph: how long the hold may last */
};
#define TT_MAGIC	0x6174616462637474UL	/* "ttcbdata" */
#define TT_MAGIC_FREED	0x6465657266627474UL	/* "ttbfreed" */

struct tt_slot {
	const char *name;
	enum tt_kind kind;
	unsigned long flags;	/* ftrace_ops flags of an ftrace slot */
	u32 domain;		/* functions the filter may hold */
	bool may_all;		/* the filter may be empty: every function */
	bool has_notrace;	/* mutations of the notrace set */
	bool needs_regs;	/* callback must get pt_regs (WITH_REGS only) */
	bool dynamic;		/* ops and data allocated per registration */

	/* The oracle: written by the owning mutator, read by the workers. */
	unsigned long seq;
	u32 want_hist[4];	/* the want of state seq / 2, at seq / 2 % 4 */
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
	unsigned long unreg_busy;	/* unregistrations begun with callbacks in flight */
	unsigned long holds;		/* dynamic: unregistrations begun with a callback held */
	unsigned long anchored;		/* graph: unregistrations with the anchor registered */
	unsigned long dyn_hits;		/* dynamic: hits its freed data counted */
	/* Quiet points (controller). */
	unsigned long rec_intervals, rec_hits;

	/* Callback side: hits per torture function, for the quiet points. */
	atomic_long_t fn_hits[TT_NFN];

	struct ftrace_ops *opsp;	/* the ops of the API calls */
	struct ftrace_ops ops;		/* static slots' */
	struct tt_cbdata data;		/* static slots' */
	struct tt_cbdata *dyn;		/* dynamic: this registration's */
#ifdef CONFIG_KPROBES
	struct kprobe kp;
#endif
#ifdef TT_GRAPH
	struct fgraph_ops gops;		/* graph: its ops is *opsp */
#endif
};

static struct tt_slot tt_slots[TT_NSLOT] = {
	[TT_S_PLAIN] = {
		.name = "plain", .kind = TT_K_FTRACE,
		.domain = TT_ALL_FNS, .may_all = true,
	},
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_REGS
	[TT_S_REGS] = {
		.name = "regs", .kind = TT_K_FTRACE,
		.flags = FTRACE_OPS_FL_SAVE_REGS,
		.domain = TT_ALL_FNS, .needs_regs = true,
	},
#endif
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
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_REGS
	[TT_S_IPMODIFY] = {
		.name = "ipmodify", .kind = TT_K_FTRACE,
		.flags = FTRACE_OPS_FL_IPMODIFY | FTRACE_OPS_FL_SAVE_REGS,
		.domain = 0x000fffffU, .needs_regs = true,
	},
#endif
	[TT_S_DYNAMIC] = {
		.name = "dynamic", .kind = TT_K_FTRACE,
		.domain = TT_ALL_FNS, .dynamic = true,
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
#ifdef TT_GRAPH
	[TT_S_GRAPH] = {
		.name = "graph", .kind = TT_K_GRAPH,
		.domain = TT_ALL_FNS,
	},
#endif
};

/* What the callbacks counted for one call. */
struct tt_hits {
	unsigned int n[TT_NSLOT];
	unsigned int b;		/* direct: hits through trampoline b */
	unsigned int noregs;	/* SAVE_REGS callbacks without pt_regs */
};

struct tt_worker;

/* Per CPU: the bound worker's call in progress, callbacks in flight. */
struct tt_pcpu {
	int in_call;			/* 1 + function index, 0 outside a call */
	struct tt_hits h;
	int inflight[TT_NSLOT];		/* callbacks running (summed over CPUs) */
	int gentry;			/* graph entry callbacks running (preemption off) */
	struct tt_worker *gw;		/* graph: the bound worker in a call here */
};
static DEFINE_PER_CPU(struct tt_pcpu, tt_pcpu);

/* Callback-side total of the hits counted for calls, for the reconciliation. */
static atomic_long_t tt_cb_hits = ATOMIC_LONG_INIT(0);
/* Dynamic callbacks preempted while dawdling (involuntary switches). */
static atomic_long_t tt_cb_preempted = ATOMIC_LONG_INIT(0);
/* Results of the integrity checks that were wrong. */
static atomic_long_t tt_bad_results = ATOMIC_LONG_INIT(0);
static atomic_long_t tt_bad_regs = ATOMIC_LONG_INIT(0);

static unsigned long tt_body_off[TT_NFN];	/* kprobe offsets in the body */

#ifdef TT_GRAPH
/*
 * A worker's record of the graph slot's entries whose return has not come
 * yet (its own shadow stack): the entry callback pushes, the return
 * callback pops, both in the worker's own context, with no allocation. At
 * most two are open (the probe's outer and inner).
 */
#define TT_GDEPTH	4
#define TT_DEPTH_UNSET	INT_MIN

struct tt_gent {
	unsigned long ip;	/* the function's ftrace site (trace->func) */
	unsigned long expect;	/* its untraced reference result */
	int depth;		/* trace->depth at the entry */
};

struct tt_grec {
	int n;			/* entries open */
	bool in_nest;		/* in the return address probe */
	int base_depth;		/* trace->depth of a call of the worker's */
	struct tt_gent e[TT_GDEPTH];
	unsigned long expect;	/* the call's reference result */
	unsigned long nest_expect[TT_NNEST];
	unsigned long entries, returns;
	unsigned long dropped;	/* entries whose return never came */
	unsigned long probes, probe_checked, probe_hooked;
};
#endif

struct tt_worker {
	struct task_struct *task;
	bool preemptible;	/* not bound, calls with preemption on */
	int in_call;		/* preemptible: 1 + function index in call */
	struct tt_hits h;	/* preemptible: what the callbacks counted */
	u32 rnd;
	unsigned long calls, checked, hit_checks, hits, around;
	unsigned long slot_checked[TT_NSLOT], slot_hit_checks[TT_NSLOT];
	unsigned long slot_around[TT_NSLOT];
#ifdef TT_GRAPH
	struct tt_grec g;
#endif
};

/* Bound workers first, then the preemptible ones. */
static struct tt_worker *tt_workers;
static int tt_nworkers, tt_nbound;
/* The preemptible ones' tasks, apart from their hot counters. */
#define TT_MAX_PWORKERS 256
static struct task_struct *tt_pw_task[TT_MAX_PWORKERS];

/* ------------------------------------------------------------------ */
/* Strays: callbacks where none may be. */

enum {
	TT_STRAY_FOREIGN,
	TT_STRAY_DOMAIN,
	TT_STRAY_OUTSIDE,
	TT_STRAY_ADDR,
	TT_STRAY_LATE,
	TT_STRAY_DATA,
	TT_STRAY_UNPAIRED,
	TT_NSTRAY
};

static const char *const tt_stray_why[TT_NSTRAY] = {
	[TT_STRAY_FOREIGN] = "called for a function outside the torture functions, filter never empty",
	[TT_STRAY_DOMAIN] = "called for a torture function outside its domain",
	[TT_STRAY_OUTSIDE] = "called for a torture function with no call of it in flight here",
	[TT_STRAY_ADDR] = "kprobe handler called for an address not its own",
	[TT_STRAY_LATE] = "callback running after its unregistration returned",
	[TT_STRAY_DATA] = "callback given an ops whose data is not this module's (freed?)",
	[TT_STRAY_UNPAIRED] = "graph return callback with no entry of it open in this task",
};

/* The first strays, printed at the end (printing from a callback could recurse). */
struct tt_stray_rec {
	int why, slot, cpu, in_call;
	unsigned long ip, parent_ip;
};
#define TT_NREC 8
static struct tt_stray_rec tt_stray_recs[TT_NREC];
static atomic_t tt_nrecs = ATOMIC_INIT(0);
static atomic_long_t tt_strays[TT_NSTRAY];

static notrace void tt_stray(int why, int k, unsigned long ip, unsigned long parent_ip)
{
	atomic_long_inc(&tt_strays[why]);
	tt_mismatch();
	if (atomic_read(&tt_nrecs) < TT_NREC) {
		int i = atomic_inc_return(&tt_nrecs) - 1;

		if (i < TT_NREC) {
			struct tt_stray_rec *r = &tt_stray_recs[i];

			r->why = why;
			r->slot = k;
			r->cpu = raw_smp_processor_id();
			r->in_call = this_cpu_read(tt_pcpu.in_call);
			r->ip = ip;
			r->parent_ip = parent_ip;
		}
	}
}
NOKPROBE_SYMBOL(tt_stray);

/*
 * What memory holds at the ftrace site @ip of a stray, now: the call (or
 * NOP) there and, on arm64, the instruction before it and the ops literal
 * the common trampoline reads. A site whose memory says NOP while its
 * callback still runs is code translated from the old instruction (an
 * emulator's, Documentation/harness.rst "Parallelism"), not a site the
 * core left calling.
 */
static void tt_dump_site(unsigned long ip)
{
#ifdef CONFIG_ARM64
	unsigned long lit_at = ALIGN_DOWN(ip - 12, 8);
	u32 insn[2];
	u64 lit;

	if (copy_from_kernel_nofault(insn, (void *)(ip - 4), sizeof(insn)) ||
	    copy_from_kernel_nofault(&lit, (void *)lit_at, sizeof(lit))) {
		pr_err("rftrace_torture: the site at %pS cannot be read\n", (void *)ip);
		return;
	}
	pr_err("rftrace_torture: the site at %pS holds %08x %08x, its literal %px (%ps)\n",
	       (void *)ip, insn[0], insn[1], (void *)lit, (void *)lit);
#else
	u8 b[5];

	if (copy_from_kernel_nofault(b, (void *)ip, sizeof(b))) {
		pr_err("rftrace_torture: the site at %pS cannot be read\n", (void *)ip);
		return;
	}
	pr_err("rftrace_torture: the site at %pS holds %5ph\n", (void *)ip, b);
#endif
}

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
NOKPROBE_SYMBOL(tt_rand);

/* The torture function whose ftrace site is ip, -1 for none. */
static notrace int tt_site_index(unsigned long ip)
{
	int lo = 0, hi = TT_NFN - 1;

	if (ip < tt_site_lo || ip > tt_site_hi)
		return -1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;

		if (tt_sorted[mid].site == ip)
			return tt_sorted[mid].idx;
		if (tt_sorted[mid].site < ip)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}
NOKPROBE_SYMBOL(tt_site_index);

/* tt_site_index(), first trying the bound worker's call on this CPU. */
static __always_inline int tt_fn_of(unsigned long ip)
{
	int idx = this_cpu_read(tt_pcpu.in_call) - 1;

	if (likely(idx >= 0 && tt_site[idx] == ip))
		return idx;
	return tt_site_index(ip);
}

/* The preemptible worker that current is, if it is one. */
static notrace struct tt_worker *tt_pw_current(void)
{
	struct task_struct *t = current;
	int i;

	for (i = 0; i < tt_nworkers - tt_nbound; i++)
		if (READ_ONCE(tt_pw_task[i]) == t)
			return &tt_workers[tt_nbound + i];
	return NULL;
}
NOKPROBE_SYMBOL(tt_pw_current);

/* Callbacks of slot k running now, on every CPU. */
static notrace long tt_inflight(int k)
{
	long n = 0;
	int cpu;

	for_each_possible_cpu(cpu)
		n += READ_ONCE(per_cpu(tt_pcpu, cpu).inflight[k]);
	return n;
}

/*
 * A callback of slot s was reached for torture function fi. Counted for
 * the function (what the quiet points reconcile, whoever called), then
 * for the call of fi in flight: on this CPU (a bound worker, preemption
 * off: only it runs here while its in_call is set) or in this task (a
 * preemptible worker; the callback runs in the caller's context). In
 * neither it is a stray. Returns whether it was counted for a call.
 */
static __always_inline bool tt_hit(struct tt_slot *s, int fi, unsigned long ip,
				   unsigned long parent_ip, bool noregs, bool b)
{
	int k = s - tt_slots;
	struct tt_worker *w;

	atomic_long_inc(&s->fn_hits[fi]);
	if (unlikely(!(s->domain & TT_BIT(fi))))
		tt_stray(TT_STRAY_DOMAIN, k, ip, parent_ip);
	if (likely(this_cpu_read(tt_pcpu.in_call) == fi + 1)) {
		this_cpu_inc(tt_pcpu.h.n[k]);
		if (b)
			this_cpu_inc(tt_pcpu.h.b);
		if (unlikely(noregs))
			this_cpu_inc(tt_pcpu.h.noregs);
	} else {
		w = tt_pw_current();
		if (unlikely(!w || READ_ONCE(w->in_call) != fi + 1)) {
			tt_stray(TT_STRAY_OUTSIDE, k, ip, parent_ip);
			return false;
		}
		WRITE_ONCE(w->h.n[k], w->h.n[k] + 1);
		if (b)
			WRITE_ONCE(w->h.b, w->h.b + 1);
		if (unlikely(noregs))
			WRITE_ONCE(w->h.noregs, w->h.noregs + 1);
	}
	atomic_long_inc(&tt_cb_hits);
	return true;
}

/*
 * A callback asked to stay (tt_going) takes the hold, if no other did,
 * and stays until its data is gone or @ms have passed.
 */
static notrace void tt_take_hold(struct tt_cbdata *d, unsigned int ms)
{
	u64 end;

	if (!READ_ONCE(d->hold) || cmpxchg(&d->held, 0, 1) != 0)
		return;
	end = ktime_get_mono_fast_ns() + (u64)ms * NSEC_PER_MSEC;
	while (!READ_ONCE(d->gone) && ktime_get_mono_fast_ns() < end)
		cpu_relax();
}

/*
 * The dynamic slot's callback in a preemptible worker's call: called
 * straight from its trampoline with preemption on, it spins a while, so
 * that with preempt=full the task is now and then preempted here, inside
 * the trampoline, while its mutator unregisters the ops and frees it and
 * this data. Only synchronize_rcu_tasks() waits for such a task; without
 * it the callback's reads of its data afterwards are a use after free
 * (KASAN), or see "gone" or the freed mark.
 */
static notrace void tt_dawdle(void)
{
	unsigned long nivcsw;
	struct tt_worker *w;
	unsigned int i, n;

	if (!preemptible())
		return;
	w = tt_pw_current();
	if (!w)
		return;
	nivcsw = READ_ONCE(current->nivcsw);
	n = tt_rand(&w->rnd) % 1024;
	for (i = 0; i < n; i++)
		cpu_relax();
	if (READ_ONCE(current->nivcsw) != nivcsw)
		atomic_long_inc(&tt_cb_preempted);
}

/*
 * The dynamic slot's callback, when its mutator asks before unregistering
 * (tt_going), in a preemptible worker: stays for up to 50 ms, preemption
 * on, so that the unregistration begins with a task inside the callback
 * and its trampoline that the core must wait for (RCU Tasks: a task
 * preempted there, or spinning, is no quiescent state). A core that waits
 * returns after the hold ends; one that does not returns with the task
 * still here, and tt_gone() finds it in flight. Once per unregistration.
 */
static notrace void tt_hold(struct tt_cbdata *d)
{
	if (preemptible() && tt_pw_current())
		tt_take_hold(d, 50);
}

static notrace void tt_ftrace_cb(unsigned long ip, unsigned long parent_ip,
				 struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	struct tt_cbdata *d = READ_ONCE(op->private);
	struct tt_slot *s;
	int k, fi;
	bool late;

	if (unlikely(!d || READ_ONCE(d->magic) != TT_MAGIC)) {
		tt_stray(TT_STRAY_DATA, -1, ip, parent_ip);
		return;
	}
	s = d->slot;
	k = s - tt_slots;
	this_cpu_inc(tt_pcpu.inflight[k]);
	late = READ_ONCE(d->gone);
	fi = tt_fn_of(ip);
	if (fi >= 0) {
		tt_hit(s, fi, ip, parent_ip, s->needs_regs && !ftrace_get_regs(fregs), false);
		if (d->dawdle) {
			tt_dawdle();
			atomic_long_inc(&d->hits);
			tt_hold(d);
		}
	} else if (!s->may_all) {
		tt_stray(TT_STRAY_FOREIGN, k, ip, parent_ip);
	}
	/* On the way out: freed (the mark, if not reused) or gone meanwhile. */
	if (unlikely(late || READ_ONCE(d->gone) || READ_ONCE(d->magic) != TT_MAGIC))
		tt_stray(TT_STRAY_LATE, k, ip, parent_ip);
	this_cpu_dec(tt_pcpu.inflight[k]);
}

#ifdef CONFIG_KPROBES
static notrace int tt_kprobe_pre(struct kprobe *p, struct pt_regs *regs)
{
	struct tt_slot *s = container_of(p, struct tt_slot, kp);
	unsigned long addr = (unsigned long)p->addr;
	int k = s - tt_slots;

	this_cpu_inc(tt_pcpu.inflight[k]);
	if (likely(addr == READ_ONCE(s->kaddr)))
		tt_hit(s, READ_ONCE(s->target), addr, 0, false, false);
	else
		tt_stray(TT_STRAY_ADDR, k, addr, 0);
	if (unlikely(READ_ONCE(s->data.gone)))
		tt_stray(TT_STRAY_LATE, k, addr, 0);
	this_cpu_dec(tt_pcpu.inflight[k]);
	return 0;
}
NOKPROBE_SYMBOL(tt_kprobe_pre);
#endif

#ifdef TT_DIRECT
void rftrace_torture_direct_a(unsigned long ret);
void rftrace_torture_direct_b(unsigned long ret);
void rftrace_torture_tramp_a(void);
void rftrace_torture_tramp_b(void);

#ifdef CONFIG_X86_64
/*
 * The direct trampolines: called from the site (or returned to from the
 * ftrace caller when other tracers share the site) with the return
 * address into the traced function on top of the stack. They keep the
 * argument registers of that function (all six now matter: its result
 * mixes them), give the return address to a C counter and return into
 * the function.
 */
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

#else
/*
 * The direct trampolines, arm64: entered by the site's bl (or from
 * ftrace_caller, by br x17, when the site is shared or out of reach) with
 * x9 = the traced function's return address, x30 = the instruction after
 * the site, x0-x8 = its arguments (and indirect result pointer), all of
 * which they keep. BTI c: a br x17 lands here. They push two frame
 * records, the traced function's (called from its parent: x29, x9) and
 * their own (called from the site: x29, x30), as ftrace_caller does, so
 * that an unwinder from the counter sees every frame; give the address
 * after the site to a C counter; and go back into the function with its
 * own return address in x30 again. 16 + 16 + 80 bytes: sp stays 16-byte
 * aligned.
 */
#define TT_TRAMPOLINE(tramp, counter)				\
asm(".pushsection .text, \"ax\", @progbits\n"			\
    ".p2align 2\n"						\
    ".type " #tramp ", @function\n"				\
    ".globl " #tramp "\n"					\
    #tramp ":\n\t"						\
    "hint	34\n\t"	/* bti c */				\
    "stp	x29, x9, [sp, #-16]!\n\t"				\
    "mov	x29, sp\n\t"						\
    "stp	x29, x30, [sp, #-16]!\n\t"				\
    "mov	x29, sp\n\t"						\
    "sub	sp, sp, #80\n\t"					\
    "stp	x0, x1, [sp]\n\t"					\
    "stp	x2, x3, [sp, #16]\n\t"				\
    "stp	x4, x5, [sp, #32]\n\t"				\
    "stp	x6, x7, [sp, #48]\n\t"				\
    "str	x8, [sp, #64]\n\t"					\
    "mov	x0, x30\n\t"						\
    "bl	" #counter "\n\t"					\
    "ldp	x0, x1, [sp]\n\t"					\
    "ldp	x2, x3, [sp, #16]\n\t"				\
    "ldp	x4, x5, [sp, #32]\n\t"				\
    "ldp	x6, x7, [sp, #48]\n\t"				\
    "ldr	x8, [sp, #64]\n\t"					\
    "add	sp, sp, #80\n\t"					\
    "ldp	x29, x30, [sp], #16\n\t"				\
    "ldp	x29, x9, [sp], #16\n\t"				\
    "mov	x10, x30\n\t"						\
    "mov	x30, x9\n\t"						\
    "ret	x10\n\t"						\
    ".size " #tramp ", .-" #tramp "\n"				\
    ".popsection\n")
#endif

TT_TRAMPOLINE(rftrace_torture_tramp_a, rftrace_torture_direct_a);
TT_TRAMPOLINE(rftrace_torture_tramp_b, rftrace_torture_direct_b);

/* ret: the address after the site's call (on arm64, its x30). */
static notrace void tt_direct_hit(unsigned long ret, bool b)
{
	struct tt_slot *s = &tt_slots[TT_S_DIRECT];
	unsigned long ip = ret - MCOUNT_INSN_SIZE;
	int fi = tt_fn_of(ip);

	this_cpu_inc(tt_pcpu.inflight[TT_S_DIRECT]);
	if (likely(fi >= 0))
		tt_hit(s, fi, ip, 0, false, b);
	else
		tt_stray(TT_STRAY_FOREIGN, TT_S_DIRECT, ip, 0);
	if (unlikely(READ_ONCE(s->data.gone)))
		tt_stray(TT_STRAY_LATE, TT_S_DIRECT, ip, 0);
	this_cpu_dec(tt_pcpu.inflight[TT_S_DIRECT]);
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

#ifdef TT_GRAPH
/* ------------------------------------------------------------------ */
/* The graph slot's callbacks. */

/* The probe functions' ftrace sites. */
static unsigned long tt_nest_site[TT_NNEST];

/*
 * 6.12's fgraph.c sets bit 0 in the bitmap of every frame it commits, so
 * the graph ops at index 0 gets the return of every call some graph ops
 * took, its own or not; the Rust generic core does not (rust-core.rst).
 */
#ifdef CONFIG_FTRACE_CORE_RUST_GENERIC
#define TT_GRAPH_BIT0 0
#else
#define TT_GRAPH_BIT0 1
#endif

enum {
	TT_GBAD_RETVAL,
	TT_GBAD_DEPTH,
	TT_GBAD_OPEN,
	TT_NGBAD
};

static const char *const tt_gbad_why[TT_NGBAD] = {
	[TT_GBAD_RETVAL] = "trace->retval is not what the untraced reference returns",
	[TT_GBAD_DEPTH] = "trace->depth not the call's (a frame kept or lost between calls)",
	[TT_GBAD_OPEN] = "an entry while the worker's record had no room (returns missing)",
};

static struct {
	atomic_long_t rets[TT_NFN];	/* returns paired with an entry, per function */
	unsigned long rec_rets[TT_NFN];	/* at the last quiet point */
	atomic_long_t bad[TT_NGBAD];
	atomic_t first_taken[TT_NGBAD];
	struct {
		unsigned long ip, expected, got;
	} first[TT_NGBAD];
	atomic_long_t bit0;		/* 6.12's index 0 returns (TT_GRAPH_BIT0) */
	atomic_long_t wrong_ret;	/* probes back with another frame's stack */
} tt_graph;

static notrace void tt_graph_bad(int why, unsigned long ip, unsigned long expected,
				 unsigned long got)
{
	tt_mismatch();
	atomic_long_inc(&tt_graph.bad[why]);
	if (!atomic_cmpxchg(&tt_graph.first_taken[why], 0, 1)) {
		tt_graph.first[why].ip = ip;
		tt_graph.first[why].expected = expected;
		tt_graph.first[why].got = got;
	}
}

/* The probe function whose ftrace site is ip, -1 for none. */
static __always_inline int tt_nest_index(unsigned long ip)
{
	int i;

	for (i = 0; i < TT_NNEST; i++)
		if (tt_nest_site[i] == ip)
			return i;
	return -1;
}

/*
 * The worker the graph callbacks run for: the bound worker in a call on
 * this CPU (preemption off, so it is current), else the preemptible
 * worker that current is; NULL for any other task.
 */
static __always_inline struct tt_worker *tt_graph_worker(void)
{
	struct tt_worker *w = this_cpu_read(tt_pcpu.gw);

	if (w && READ_ONCE(w->task) == current)
		return w;
	return tt_pw_current();
}

/*
 * An entry of torture function fi (nest < 0) or of probe function nest
 * (fi < 0), counted for its call in flight: pushed on the worker's record
 * with the result its return must carry. The depth of a worker's call (or
 * of the probe's outer) is the same every time: no traced function is
 * below the worker's own frames, whose shadow stack is then empty; the
 * probe's inner is one deeper than its outer when the outer's entry is
 * open here (else the outer may have no frame: not checked). A shadow
 * stack that kept a frame after its return, or lost one, moves it.
 * Returns whether the return is wanted.
 */
static notrace int tt_gpush(unsigned long ip, int depth, int fi, int nest)
{
	struct tt_worker *w = tt_graph_worker();
	struct tt_grec *g;
	int n, base = TT_DEPTH_UNSET;

	if (unlikely(!w || (nest >= 0 && !READ_ONCE(w->g.in_nest)))) {
		if (nest >= 0)
			tt_stray(TT_STRAY_OUTSIDE, TT_S_GRAPH, ip, 0);
		return 0;
	}
	g = &w->g;
	n = g->n;
	if (unlikely(n >= TT_GDEPTH)) {
		tt_graph_bad(TT_GBAD_OPEN, ip, TT_GDEPTH, n);
		return 0;
	}
	if (nest <= 0) {
		if (g->base_depth == TT_DEPTH_UNSET)
			g->base_depth = depth;
		base = g->base_depth;
	} else if (n && g->e[n - 1].ip == tt_nest_site[0]) {
		base = g->e[n - 1].depth + 1;
	}
	if (unlikely(base != TT_DEPTH_UNSET && depth != base))
		tt_graph_bad(TT_GBAD_DEPTH, ip, base, depth);
	g->e[n].ip = ip;
	g->e[n].depth = depth;
	g->e[n].expect = nest >= 0 ? g->nest_expect[nest] : g->expect;
	g->entries++;
	/* The record before the count, for an interrupt on this task. */
	barrier();
	WRITE_ONCE(g->n, n + 1);
	return 1;
}

/*
 * The graph slot's entry callback: a hit for the oracle (exactly as an
 * ftrace callback's) and a push on the worker's record. Its filter is
 * never empty and holds only torture and probe functions: anything else
 * is a stray.
 */
static notrace int tt_graph_entry(struct ftrace_graph_ent *trace, struct fgraph_ops *gops)
{
	struct tt_cbdata *d = READ_ONCE(gops->private);
	struct tt_slot *s = &tt_slots[TT_S_GRAPH];
	unsigned long ip = trace->func;
	int fi, nest, want = 0;
	bool late;

	if (unlikely(d != &s->data || READ_ONCE(d->magic) != TT_MAGIC)) {
		tt_stray(TT_STRAY_DATA, TT_S_GRAPH, ip, 0);
		return 0;
	}
	this_cpu_inc(tt_pcpu.inflight[TT_S_GRAPH]);
	this_cpu_inc(tt_pcpu.gentry);
	late = READ_ONCE(d->gone);
	fi = tt_fn_of(ip);
	nest = fi < 0 ? tt_nest_index(ip) : -1;
	if (fi >= 0) {
		if (tt_hit(s, fi, ip, 0, false, false))
			want = tt_gpush(ip, trace->depth, fi, -1);
		/*
		 * Before an unregistration (tt_going), one entry stays up to
		 * hold_ms (preemption off, as the entry runs), so that the
		 * unregistration begins with a CPU inside the entry callback,
		 * which the core's rude wait must cover (the Rust core waits
		 * so itself; on the C core the owner's wait does). A core that
		 * does not wait returns with the CPU still here:
		 * tt_graph_entries_left() or tt_gone() finds it in flight, or
		 * it sees "gone".
		 */
		tt_take_hold(d, READ_ONCE(d->hold_ms));
	} else if (nest >= 0) {
		want = tt_gpush(ip, trace->depth, -1, nest);
	} else {
		tt_stray(TT_STRAY_FOREIGN, TT_S_GRAPH, ip, 0);
	}
	if (unlikely(late || READ_ONCE(d->gone)))
		tt_stray(TT_STRAY_LATE, TT_S_GRAPH, ip, 0);
	this_cpu_dec(tt_pcpu.gentry);
	this_cpu_dec(tt_pcpu.inflight[TT_S_GRAPH]);
	return want;
}

/*
 * The graph slot's return callback: pops the worker's record, whose top
 * must be this function's entry, at the entry's depth, and checks the
 * return value against the untraced reference. A return with no entry of
 * it open is a stray, but for 6.12's index 0 (TT_GRAPH_BIT0).
 */
static notrace void tt_graph_return(struct ftrace_graph_ret *trace, struct fgraph_ops *gops)
{
	struct tt_cbdata *d = READ_ONCE(gops->private);
	struct tt_slot *s = &tt_slots[TT_S_GRAPH];
	unsigned long ip = trace->func;
	struct tt_worker *w;
	struct tt_gent *e;
	int n, fi;
	bool late;

	if (unlikely(d != &s->data || READ_ONCE(d->magic) != TT_MAGIC)) {
		tt_stray(TT_STRAY_DATA, TT_S_GRAPH, ip, 0);
		return;
	}
	this_cpu_inc(tt_pcpu.inflight[TT_S_GRAPH]);
	late = READ_ONCE(d->gone);
	w = tt_graph_worker();
	n = w ? READ_ONCE(w->g.n) : 0;
	if (n && w->g.e[n - 1].ip == ip) {
		e = &w->g.e[n - 1];
		if (unlikely(trace->depth != e->depth))
			tt_graph_bad(TT_GBAD_DEPTH, ip, e->depth, trace->depth);
#ifdef CONFIG_FUNCTION_GRAPH_RETVAL
		if (unlikely(trace->retval != e->expect))
			tt_graph_bad(TT_GBAD_RETVAL, ip, e->expect, trace->retval);
#endif
		fi = tt_fn_of(ip);
		if (fi >= 0)
			atomic_long_inc(&tt_graph.rets[fi]);
		w->g.returns++;
		barrier();
		WRITE_ONCE(w->g.n, n - 1);
	} else if (TT_GRAPH_BIT0 && READ_ONCE(gops->idx) == 0) {
		atomic_long_inc(&tt_graph.bit0);
	} else {
		tt_stray(TT_STRAY_UNPAIRED, TT_S_GRAPH, ip, 0);
	}
	if (unlikely(late || READ_ONCE(d->gone)))
		tt_stray(TT_STRAY_LATE, TT_S_GRAPH, ip, 0);
	this_cpu_dec(tt_pcpu.inflight[TT_S_GRAPH]);
}
#endif /* TT_GRAPH */

/* ------------------------------------------------------------------ */
/* The oracle's writer side. */

static notrace u32 tt_model_want(struct tt_slot *s)
{
	switch (s->kind) {
	case TT_K_FTRACE:
	case TT_K_GRAPH:
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

/* The want of the slot's current state (owner). */
static notrace u32 tt_want(struct tt_slot *s)
{
	return s->want_hist[(s->seq >> 1) & 3];
}

static notrace void tt_begin(struct tt_slot *s)
{
	WRITE_ONCE(s->seq, s->seq + 1);
	/* The odd count is visible before any effect of the API call. */
	smp_mb();
}

static notrace void tt_end(struct tt_slot *s)
{
	/* The next state's place in the ring, before the even count. */
	WRITE_ONCE(s->want_hist[((s->seq + 1) >> 1) & 3], tt_model_want(s));
	/* A broken slot stays odd: its state is unknown, never checked. */
	if (!s->broken)
		smp_store_release(&s->seq, s->seq + 1);
}

/* Before a registration: callbacks of d are welcome from now on. */
static notrace void tt_welcome(struct tt_cbdata *d)
{
	WRITE_ONCE(d->gone, 0);
	/* Before the registration makes the ops visible to any caller. */
	smp_mb();
}

/*
 * Once an unregistration of slot s returned: the core has waited for
 * every callback that could still run, so none may be in flight and none
 * may start (the callbacks test "gone" on entry and on the way out).
 */
static notrace void tt_gone(struct tt_slot *s, struct tt_cbdata *d)
{
	long n;

	WRITE_ONCE(d->gone, 1);
	WRITE_ONCE(d->hold, 0);
	/* A callback that started late either is counted or sees "gone". */
	smp_mb();
	n = tt_inflight(s - tt_slots);
	if (n) {
		pr_err("rftrace_torture: mismatch: %s: %ld callbacks still running when the unregistration returned%s\n",
		       s->name, n, s->kind == TT_K_GRAPH ? " (and the owner's wait)" : "");
		tt_mismatch();
	}
}

/*
 * Before an unregistration: how often the core has callbacks to wait for.
 * The dynamic slot first has a preemptible worker's callback stay inside
 * (tt_hold): the unregistration then begins with a task in the callback
 * and the trampoline, which only the core's waits cover (a core that
 * skips them returns with the task still there: "still running" in
 * tt_gone(), or a fault in the freed trampoline).
 */
static notrace void tt_going(struct tt_slot *s)
{
	struct tt_cbdata *d = NULL;
	int k = s - tt_slots, i;

	if (k == TT_S_DYNAMIC && preempt_workers > 0)
		d = s->dyn;
#ifdef TT_GRAPH
	if (k == TT_S_GRAPH)
		d = &s->data;	/* a worker's graph entry (tt_graph_entry) */
#endif
	if (d) {
		/* Ask one callback to stay; wait up to 20 ms for one to take it. */
		WRITE_ONCE(d->held, 0);
		smp_store_release(&d->hold, 1);
		for (i = 0; i < 100 && !READ_ONCE(d->held); i++)
			udelay(200);
		if (READ_ONCE(d->held))
			s->holds++;
	}
	if (tt_inflight(k))
		s->unreg_busy++;
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
		return ftrace_set_notrace(s->opsp, buf, len, reset);
	return ftrace_set_filter(s->opsp, buf, len, reset);
}

static notrace int tt_set_ips(struct tt_slot *s, u32 mask, int remove, int reset)
{
	unsigned long ips[TT_NFN + 2];
	unsigned int n = 0;
	int i;

	for (i = 0; i < TT_NFN; i++)
		if (mask & TT_BIT(i))
			ips[n++] = (unsigned long)tt_fns[i];
#ifdef TT_GRAPH
	/* The graph slot's filter always holds the probe functions too. */
	if (s->kind == TT_K_GRAPH && reset && !remove)
		for (i = 0; i < TT_NNEST; i++)
			ips[n++] = (unsigned long)tt_nest_fns[i];
#endif
	return ftrace_set_filter_ips(s->opsp, ips, n, remove, reset);
}

#ifdef TT_GRAPH
/*
 * After unregister_ftrace_graph() returns, the C core has not waited for
 * the callbacks already running (6.12's graph_ops is static:
 * ftrace_shutdown() waits for dynamic ops only): the owner waits, as
 * before freeing a graph ops, for the entries (preemption off) and for
 * the returns (preemptible, for a task preempted in one). The Rust core
 * waits for the entries and the returns not preempted before it returns;
 * the owner waits for a task preempted in a return, on either core. From
 * then on no callback may run.
 */
/*
 * Right after unregister_ftrace_graph() returns, before the owner's own
 * wait: on the Rust core, which waits for the entries in flight (they run
 * with preemption off), no entry callback may still be running (a return
 * callback may: a task preempted in one is the owner's to wait for). The
 * C core waits for none.
 */
static notrace void tt_graph_entries_left(struct tt_slot *s)
{
	long n = 0;
	int cpu;

	if (!IS_ENABLED(CONFIG_FTRACE_CORE_RUST_GENERIC))
		return;
	smp_mb();
	for_each_possible_cpu(cpu)
		n += READ_ONCE(per_cpu(tt_pcpu, cpu).gentry);
	if (n) {
		pr_err("rftrace_torture: mismatch: %s: %ld entry callbacks still running when the unregistration returned\n",
		       s->name, n);
		tt_mismatch();
	}
}

static notrace void tt_graph_wait(void)
{
	/*
	 * The Rust core waits for the entries (and the returns not
	 * preempted) itself before the unregistration returns: the rude
	 * wait is left to it, so that its wait is what is tested.
	 */
	if (!IS_ENABLED(CONFIG_FTRACE_CORE_RUST_GENERIC))
		synchronize_rcu_tasks_rude();
	if (preempt_model_full() || preempt_model_rt())
		synchronize_rcu_tasks();
}
#endif

/* The dynamic slot's ops and data go, its filter first. */
static notrace void tt_dyn_free(struct tt_slot *s)
{
	struct tt_cbdata *d = s->dyn;

	s->dyn_hits += atomic_long_read(&d->hits);
	ftrace_free_filter(s->opsp);
	/* A late reader without KASAN sees this, unless reused. */
	WRITE_ONCE(d->magic, TT_MAGIC_FREED);
	kfree(d);
	kfree(s->opsp);
	s->dyn = NULL;
	s->opsp = NULL;
}

/* A new ops and data for a registration of the dynamic slot, filter set. */
static notrace int tt_dyn_alloc(struct tt_slot *s)
{
	struct ftrace_ops *ops = kzalloc(sizeof(*ops), GFP_KERNEL);
	struct tt_cbdata *d = kzalloc(sizeof(*d), GFP_KERNEL);
	int ret;

	if (!ops || !d) {
		kfree(ops);
		kfree(d);
		return -ENOMEM;
	}
	d->magic = TT_MAGIC;
	d->slot = s;
	d->gone = 1;
	d->dawdle = true;
	ops->func = tt_ftrace_cb;
	ops->flags = s->flags;
	ops->private = d;
	s->opsp = ops;
	s->dyn = d;
	ret = tt_set_ips(s, s->filter, 0, 1);
	if (ret)
		tt_dyn_free(s);
	return ret;
}

static notrace int tt_ftrace_unregister(struct tt_slot *s, const char *when);

#ifdef TT_GRAPH
/*
 * A mutator's unregistration of the graph slot with no other mutator in
 * the API, and the anchor registered (tt_ftrace_unregister): no other
 * step keeps the core waiting (another's wait, under ftrace_lock, for the
 * graph entry that holds a CPU would end only when the hold does), and
 * the slot is not the last graph ops, so the core's own wait for the
 * entries in flight is what the hold tests. The caller holds tt_api_sem
 * for reading (tt_mutator_fn), and does again on return.
 */
static notrace int tt_graph_unregister_alone(struct tt_slot *s)
{
	int ret;

	up_read(&tt_api_sem);
	down_write(&tt_api_sem);
	WRITE_ONCE(tt_graph_alone, true);
	ret = tt_ftrace_unregister(s, "");
	WRITE_ONCE(tt_graph_alone, false);
	downgrade_write(&tt_api_sem);
	return ret;
}
#endif

static notrace int tt_ftrace_register(struct tt_slot *s)
{
	int ret;

#ifdef TT_GRAPH
	if (s->kind == TT_K_GRAPH) {
		tt_welcome(&s->data);
		ret = register_ftrace_graph(&s->gops);
		if (ret)
			WRITE_ONCE(s->data.gone, 1);
		return ret;
	}
#endif
	if (s->dynamic) {
		ret = tt_dyn_alloc(s);
		if (ret)
			return ret;
	}
	tt_welcome(s->dynamic ? s->dyn : &s->data);
	ret = register_ftrace_function(s->opsp);
	if (ret && s->dynamic)
		tt_dyn_free(s);
	else if (ret)
		WRITE_ONCE(s->data.gone, 1);
	return ret;
}

/*
 * Unregisters an ftrace slot; the dynamic one's ops and data are freed as
 * soon as the call returned: the core must have waited for every callback.
 */
static notrace int tt_ftrace_unregister(struct tt_slot *s, const char *when)
{
	int ret;

#ifdef TT_GRAPH
	if (s->kind == TT_K_GRAPH) {
		/* Alone in the API: the slot is not the last graph ops. */
		bool anchor = READ_ONCE(tt_graph_alone) && tt_anchor_ip &&
			      !register_ftrace_graph(&tt_anchor);

		if (anchor)
			s->anchored++;
		/*
		 * Alone, long enough to outlast what else may keep the
		 * unregistration from starting or ending (ftrace_lock, which
		 * the test script's tracer switches and module loads take),
		 * so that only the core's wait for it ends it first.
		 */
		WRITE_ONCE(s->data.hold_ms, anchor ? 250 : 20);
		tt_going(s);
		unregister_ftrace_graph(&s->gops);
		tt_graph_entries_left(s);
		if (anchor)
			unregister_ftrace_graph(&tt_anchor);
		tt_graph_wait();
		tt_gone(s, &s->data);
		return 0;
	}
#endif
	tt_going(s);
	ret = unregister_ftrace_function(s->opsp);
	if (ret) {
		pr_err("rftrace_torture: %s: %sunregister_ftrace_function() failed: %d\n",
		       s->name, when, ret);
		s->broken = true;
		tt_mismatch();
		return ret;
	}
	tt_gone(s, s->dynamic ? s->dyn : &s->data);
	if (s->dynamic)
		tt_dyn_free(s);
	return 0;
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
		ret = ftrace_set_notrace(s->opsp, NULL, 0, 1);
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
 * Mutates one ftrace_ops slot, or the graph slot through its ops; returns
 * a description for the log. A slot that may not trace every function
 * never gets an empty filter: removals keep at least one function. The
 * dynamic slot has an ops only while registered: unregistered, it
 * registers a new one with the model's filter.
 */
static notrace const char *tt_mutate_ftrace(struct tt_slot *s, u32 *rnd, int *retp)
{
	u32 f = s->filter, nf, m;
	bool several = f & (f - 1);
	int act, ret, p, i;
	const char *what;

	if (s->dynamic && !s->registered) {
		ret = tt_ftrace_register(s);
		s->registered = !ret;
		*retp = ret;
		return "register (new ops)";
	}
	if (s->has_notrace && tt_rand(rnd) % 4 == 0)
		return tt_mutate_notrace(s, rnd, retp);

	act = tt_rand(rnd) % 100;
	if (act < 25) {
		if (s->registered) {
			what = "unregister";
#ifdef TT_GRAPH
			if (s->kind == TT_K_GRAPH && tt_rand(rnd) % 4) {
				what = "unregister (alone)";
				ret = tt_graph_unregister_alone(s);
			} else
#endif
			ret = tt_ftrace_unregister(s, "");
			if (!ret)
				s->registered = false;
		} else {
			what = "register";
			ret = tt_ftrace_register(s);
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
		/* A reset keeps the graph slot's probe functions: by address. */
		if (s->kind == TT_K_GRAPH)
			ret = tt_set_ips(s, nf, 0, 1);
		else
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
		ret = ftrace_set_filter_ip(s->opsp, (unsigned long)tt_fns[i], 0, 0);
	} else if (act < 80) {
		i = tt_pick_bit(rnd, f);
		what = "ip removed";
		nf = f & ~TT_BIT(i);
		ret = ftrace_set_filter_ip(s->opsp, (unsigned long)tt_fns[i], 1, 0);
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
		ret = ftrace_set_filter(s->opsp, NULL, 0, 1);
	} else {
		i = tt_pick_bit(rnd, s->domain);
		what = "ip set";
		nf = TT_BIT(i);
		if (s->kind == TT_K_GRAPH)
			ret = tt_set_ips(s, nf, 0, 1);
		else
			ret = ftrace_set_filter_ip(s->opsp, (unsigned long)tt_fns[i], 0, 1);
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
#ifdef CONFIG_X86_64
/*
 * A probe on fn+0: x86's kprobes moves it past the ENDBR to the ftrace
 * site and arms it through kprobe_ftrace_ops (KPROBES_ON_FTRACE).
 */
#define TT_KP_ENTRY(t)		tt_site[t]
#define TT_KP_ENTRY_WHAT	"its ftrace site"
/* A body address inside an instruction is refused; try the next byte. */
#define TT_KP_BAD_INSN		(-EILSEQ)
#define TT_KP_STEP		1
#else
/*
 * arm64 has no KPROBES_ON_FTRACE: a probe on fn+0 stays there, an
 * ordinary BRK on mov x9, x30 (or on the BTI c before it), next to the BL
 * the core patches; check_ftrace_location() refuses only the site itself
 * (ftrace_location(fn) names the site, not fn). The probed instruction is
 * stepped out of line and the call goes on to the site.
 */
#define TT_KP_ENTRY(t)		((unsigned long)tt_fns[t])
#define TT_KP_ENTRY_WHAT	"its first instruction"
/* An instruction kprobes cannot step or simulate is refused with -EINVAL. */
#define TT_KP_BAD_INSN		(-EINVAL)
#define TT_KP_STEP		AARCH64_INSN_SIZE
#endif

static notrace int tt_kprobe_register(struct tt_slot *s, int t)
{
	unsigned long fn = (unsigned long)tt_fns[t];
	int ret;

	WRITE_ONCE(s->target, t);
	tt_welcome(&s->data);
	if (s->kind == TT_K_KPROBE_ENTRY) {
		WRITE_ONCE(s->kaddr, TT_KP_ENTRY(t));
		memset(&s->kp, 0, sizeof(s->kp));
		s->kp.addr = (kprobe_opcode_t *)fn;
		s->kp.pre_handler = tt_kprobe_pre;
		ret = register_kprobe(&s->kp);
		if (!ret && (unsigned long)s->kp.addr != TT_KP_ENTRY(t)) {
			pr_err("rftrace_torture: %s: probe on %ps is at %px, " TT_KP_ENTRY_WHAT " at %px\n",
			       s->name, tt_fns[t], s->kp.addr, (void *)TT_KP_ENTRY(t));
			tt_mismatch();
		}
		goto out;
	}
	/*
	 * In the body: the instruction after the ftrace site, or the next
	 * one register_kprobe() accepts (TT_KP_BAD_INSN for others).
	 */
	for (;;) {
		WRITE_ONCE(s->kaddr, fn + tt_body_off[t]);
		memset(&s->kp, 0, sizeof(s->kp));
		s->kp.addr = (kprobe_opcode_t *)(fn + tt_body_off[t]);
		s->kp.pre_handler = tt_kprobe_pre;
		ret = register_kprobe(&s->kp);
		if (ret != TT_KP_BAD_INSN || tt_body_off[t] >= 32)
			break;
		tt_body_off[t] += TT_KP_STEP;
	}
out:
	if (ret)
		WRITE_ONCE(s->data.gone, 1);
	return ret;
}

static notrace void tt_kprobe_unregister(struct tt_slot *s)
{
	tt_going(s);
	unregister_kprobe(&s->kp);
	tt_gone(s, &s->data);
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
		tt_kprobe_unregister(s);
		s->registered = false;
		s->enabled = false;
	} else if (s->enabled) {
		/* No wait: a handler already entered may still run. */
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
static notrace int tt_direct_unregister(struct tt_slot *s, const char *when, bool free_filters)
{
	int ret;

	tt_going(s);
	ret = unregister_ftrace_direct(s->opsp, tt_tramp(s->aux), free_filters);
	if (ret) {
		pr_err("rftrace_torture: %s: %sunregister_ftrace_direct() failed: %d\n",
		       s->name, when, ret);
		s->broken = true;
		tt_mismatch();
		return ret;
	}
	/* unregister_ftrace_function() inside waited as for any ops. */
	tt_gone(s, &s->data);
	return 0;
}

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
			tt_welcome(&s->data);
			ret = register_ftrace_direct(s->opsp, tt_tramp(s->aux));
			s->registered = !ret;
			if (ret)
				WRITE_ONCE(s->data.gone, 1);
		}
	} else if (tt_rand(rnd) % 3 == 0) {
		what = "modify";
		ret = modify_ftrace_direct(s->opsp, tt_tramp(!s->aux));
		if (!ret)
			WRITE_ONCE(s->aux, !s->aux);
	} else {
		what = "unregister";
		ret = tt_direct_unregister(s, "", false);
		if (!ret)
			s->registered = false;
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
	case TT_K_GRAPH:
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
	tt_end(s);
	/*
	 * No call here may fail: the patterns and addresses all select
	 * torture functions, filters that must not be empty never are, and
	 * ipmodify and direct never share a function. A failure is counted
	 * against the run (`unexpected`).
	 */
	if (ret) {
		s->nfailed++;
		pr_err_ratelimited("rftrace_torture: %s: %s failed: %d (no failure is expected)\n",
				   s->name, what, ret);
	}
	if (verbose)
		pr_info("rftrace_torture: %s: %s (%d): registered %d, filter %08x, notrace %08x, want %08x\n",
			s->name, what, ret, s->registered, s->filter, s->notrace_set, tt_want(s));
}

/* ------------------------------------------------------------------ */
/* Threads. */

struct tt_mutator {
	struct task_struct *task;
	u32 rnd;
	int nslots;
	int slots[TT_NSLOT];
};

static struct tt_mutator *tt_mutators;
static int tt_nmutators;
static struct task_struct *tt_controller;
static unsigned long tt_start, tt_stop;

/* Quiet points: the controller asks, the workers park between calls. */
static int tt_quiet;
static atomic_t tt_parked = ATOMIC_INIT(0);
static unsigned long tt_quiet_points, tt_quiet_missed;

/* What one side of a window read, for every slot. */
struct tt_snap {
	unsigned long seq[TT_NSLOT];
	u32 want[TT_NSLOT];
	int aux[TT_NSLOT];
	unsigned long seq3[TT_NSLOT];	/* close: seq once the wants are read */
};

static notrace void tt_report(struct tt_slot *s, int idx, const char *why,
			      unsigned int expected, unsigned int got)
{
	tt_mismatch();
	pr_err_ratelimited("rftrace_torture: mismatch: %s on %s: %s: expected %u, got %u\n",
			   s->name, tt_names[idx], why, expected, got);
}

/* Before the call: the state of every slot (acquire: its want is in). */
static notrace void tt_snap_open(struct tt_snap *o)
{
	int k;

	for (k = 0; k < TT_NSLOT; k++) {
		struct tt_slot *s = &tt_slots[k];

		/* Pairs with tt_end(): the state's want is written. */
		o->seq[k] = smp_load_acquire(&s->seq);
		o->want[k] = READ_ONCE(s->want_hist[(o->seq[k] >> 1) & 3]);
		o->aux[k] = READ_ONCE(s->aux);
	}
}

/* After the call and its counters (the caller's smp_rmb() before). */
static notrace void tt_snap_close(struct tt_snap *c)
{
	int k;

	for (k = 0; k < TT_NSLOT; k++)
		c->seq[k] = READ_ONCE(tt_slots[k].seq);
	/* The wants of those states, read after their seq... */
	smp_rmb();
	for (k = 0; k < TT_NSLOT; k++)
		c->want[k] = READ_ONCE(tt_slots[k].want_hist[(c->seq[k] >> 1) & 3]);
	/* ...and seq again after them: a reused place moved seq past it. */
	smp_rmb();
	for (k = 0; k < TT_NSLOT; k++)
		c->seq3[k] = READ_ONCE(tt_slots[k].seq);
}

/* The oracle's reader side: the hits of one call against its window. */
static notrace void tt_check_window(struct tt_worker *w, int idx, const struct tt_snap *o,
				    const struct tt_snap *c, const struct tt_hits *h)
{
	int k;

#ifdef CONFIG_DYNAMIC_FTRACE_WITH_REGS
	/* Only there can an ops have SAVE_REGS (the regs and ipmodify slots). */
	if (h->noregs) {
		tt_mismatch();
		pr_err_ratelimited("rftrace_torture: mismatch: a SAVE_REGS callback got no pt_regs on %s\n",
				   tt_names[idx]);
	}
#endif
	for (k = 0; k < TT_NSLOT; k++) {
		struct tt_slot *s = &tt_slots[k];
		unsigned long lo = o->seq[k] & ~1UL;
		unsigned int exp, got = h->n[k];

		w->hits += got;
		if (got > 1)
			tt_report(s, idx, "more than one hit in one call", 1, got);
		if (o->seq[k] == c->seq[k] && !(o->seq[k] & 1)) {
			/* Stable: the state of want[k] held for the whole call. */
			exp = (o->want[k] >> idx) & 1;
			w->checked++;
			w->slot_checked[k]++;
			if (exp) {
				w->hit_checks++;
				w->slot_hit_checks[k]++;
			}
			if (got != exp)
				tt_report(s, idx, "stable window", exp, got);
			else if (k == TT_DIRECT_SLOT && exp && h->b != (unsigned int)o->aux[k])
				tt_report(s, idx, "hits through trampoline b", o->aux[k], h->b);
			continue;
		}
		/*
		 * One change overlapped the call, from state lo / 2 to the
		 * next: a hit must be for a function one of them wants. Both
		 * wants were read before the ring could reuse their places
		 * (that takes seq past lo + 6).
		 */
		if ((c->seq[k] & 1) || c->seq[k] - lo != 2 || c->seq3[k] - lo > 6)
			continue;
		w->around++;
		w->slot_around[k]++;
		if (got && !(((o->want[k] | c->want[k]) >> idx) & 1))
			tt_report(s, idx, "around a change, a hit neither state wants", 0, got);
	}
}

/* The result and the callee-saved registers against the reference. */
static notrace void tt_check_result(int idx, const unsigned long *v, unsigned long ret,
				    const unsigned long *diff)
{
	unsigned long ref = tt_ref(idx, v);
	int i;

	if (ret != ref) {
		tt_mismatch();
		atomic_long_inc(&tt_bad_results);
		pr_err_ratelimited("rftrace_torture: mismatch: %s(%lx, %lx, %lx, %lx, %lx, %lx) returned %lx, its untraced copy %lx\n",
				   tt_names[idx], v[0], v[1], v[2], v[3], v[4], v[5], ret, ref);
	}
	for (i = 0; i < TT_NCSR; i++) {
		if (!diff[i])
			continue;
		tt_mismatch();
		atomic_long_inc(&tt_bad_regs);
		pr_err_ratelimited("rftrace_torture: mismatch: %s changed across a call of %s (xor %lx)\n",
				   tt_csr_names[i], tt_names[idx], diff[i]);
	}
}

/*
 * Parks the worker while the controller holds a quiet point. Against the
 * controller's test of the count (tt_quiet_point()): it stores tt_quiet,
 * full barrier, reads the count; the worker decrements the count, full
 * barrier, reads tt_quiet again; so a worker the controller counted as
 * parked cannot leave for a call without seeing the request and parking
 * again.
 */
static notrace void tt_park(void)
{
	while (READ_ONCE(tt_quiet) && !kthread_should_stop()) {
		/* Every effect of the calls so far before the count. */
		smp_mb__before_atomic();
		atomic_inc(&tt_parked);
		while (READ_ONCE(tt_quiet) && !kthread_should_stop())
			usleep_range(100, 200);
		atomic_dec(&tt_parked);
		/* The count down before tt_quiet is read again. */
		smp_mb__after_atomic();
	}
}

static notrace void tt_args(u32 *rnd, unsigned long *v, unsigned long *seed)
{
	int i;

	for (i = 0; i < 6; i++)
		v[i] = (unsigned long)tt_rand(rnd) << 32 | tt_rand(rnd);
	v[5] &= ~TT_NAP;
	*seed = (unsigned long)tt_rand(rnd) << 32 | tt_rand(rnd);
}

#ifdef TT_GRAPH
/* Before a call: the result its graph return must carry; where it is. */
static __always_inline void tt_gcall_begin(struct tt_worker *w, int idx, const unsigned long *v)
{
	w->g.expect = tt_ref(idx, v);
	if (!w->preemptible)
		this_cpu_write(tt_pcpu.gw, w);
}

/* After it, still in its window: the entries whose return did not come. */
static __always_inline int tt_gcall_end(struct tt_worker *w)
{
	if (!w->preemptible)
		this_cpu_write(tt_pcpu.gw, NULL);
	return READ_ONCE(w->g.n);
}

/*
 * The call has returned to its caller, so every graph return of it has
 * run: an entry still open in the record lost its return callback. Only
 * an unregistration during the call may skip it (both cores skip the
 * return callbacks of an index no longer registered): in a window stable
 * for the graph slot it is a mismatch (a dropped return).
 */
static notrace void tt_check_graph(struct tt_worker *w, int idx, const struct tt_snap *o,
				   const struct tt_snap *c, int open)
{
	int k = TT_S_GRAPH;

	if (likely(!open))
		return;
	if (o->seq[k] == c->seq[k] && !(o->seq[k] & 1))
		tt_report(&tt_slots[k], idx, "graph entry whose return never came", 0, open);
	w->g.dropped += open;
	WRITE_ONCE(w->g.n, 0);
}

/*
 * The return address probe (bound workers, preemption off): calls the
 * outer probe function, whose inner one returns through it. Back at the
 * call site with another frame's stack, a return hook sent the inner's
 * return to the outer's return address (a wrong return address that
 * lands in our code; any other wrong one would not come back at all:
 * the run then fails on the oops or on the module never finishing). The
 * result must be the reference's; and in a window stable for the graph
 * slot, its entries and returns are 2 each if it is registered (its
 * filter always holds both), 0 if not.
 */
static notrace void tt_nest_probe(struct tt_worker *w)
{
	struct tt_slot *s = &tt_slots[TT_S_GRAPH];
	unsigned long x, ret, landed, sp, seq0, seq1, ent, rets, exp;
	struct tt_grec *g = &w->g;
	u32 want;
	int open;

	x = (unsigned long)tt_rand(&w->rnd) << 32 | tt_rand(&w->rnd);
	tt_nest_ref(x, g->nest_expect);
	g->probes++;
	preempt_disable();
	/* Pairs with tt_end(): the state's want is written. */
	seq0 = smp_load_acquire(&s->seq);
	want = READ_ONCE(s->want_hist[(seq0 >> 1) & 3]);
	ent = g->entries;
	rets = g->returns;
	this_cpu_write(tt_pcpu.gw, w);
	WRITE_ONCE(g->in_nest, true);
	barrier();
	ret = tt_call_nest(x, &landed);
	barrier();
	sp = this_cpu_read(tt_nest_save.sp);
	WRITE_ONCE(g->in_nest, false);
	this_cpu_write(tt_pcpu.gw, NULL);
	open = READ_ONCE(g->n);
	ent = g->entries - ent;
	rets = g->returns - rets;
	/* The counts before the second read of seq. */
	smp_rmb();
	seq1 = READ_ONCE(s->seq);
	preempt_enable();

	if (landed) {
		atomic_long_inc(&tt_graph.wrong_ret);
		tt_mismatch();
		pr_err_ratelimited("rftrace_torture: mismatch: graph: %s returned to the return address of %s (its caller's), with a stack %ld bytes deeper\n",
				   tt_nest_names[1], tt_nest_names[0],
				   (long)(sp - landed));
	} else if (ret != g->nest_expect[0]) {
		tt_mismatch();
		atomic_long_inc(&tt_bad_results);
		pr_err_ratelimited("rftrace_torture: mismatch: %s(%lx) returned %lx, its untraced copy %lx\n",
				   tt_nest_names[0], x, ret, g->nest_expect[0]);
	}
	if (seq0 == seq1 && !(seq0 & 1)) {
		exp = want ? TT_NNEST : 0;
		g->probe_checked++;
		if (exp)
			g->probe_hooked++;
		if (ent != exp || rets != exp) {
			tt_mismatch();
			pr_err_ratelimited("rftrace_torture: mismatch: graph: the probe's calls had %lu entries and %lu returns, expected %lu each\n",
					   ent, rets, exp);
		}
	}
	g->dropped += open;
	WRITE_ONCE(g->n, 0);
}
#else
static __always_inline void tt_gcall_begin(struct tt_worker *w, int idx, const unsigned long *v)
{
}

static __always_inline int tt_gcall_end(struct tt_worker *w)
{
	return 0;
}

static __always_inline void tt_check_graph(struct tt_worker *w, int idx, const struct tt_snap *o,
					   const struct tt_snap *c, int open)
{
}
#endif

/*
 * A worker. Bound ones call with preemption off and keep the call's marks
 * and counters in their CPU's tt_pcpu; the others call with preemption
 * on, ask every fourth function to nap in its body half the time, and
 * keep the marks and counters in their tt_worker.
 */
static notrace int tt_worker_fn(void *arg)
{
	struct tt_worker *w = arg;
	unsigned long v[6], seed, diff[TT_NCSR], ret;
	struct tt_snap o, c;
	struct tt_hits h;
	unsigned int n = 0;
	int k, gopen;

	while (!kthread_should_stop()) {
		int idx = tt_rand(&w->rnd) % TT_NFN;

		tt_park();
		tt_args(&w->rnd, v, &seed);
		if (!w->preemptible) {
			preempt_disable();
			tt_snap_open(&o);
			for (k = 0; k < TT_NSLOT; k++)
				this_cpu_write(tt_pcpu.h.n[k], 0);
			this_cpu_write(tt_pcpu.h.b, 0);
			this_cpu_write(tt_pcpu.h.noregs, 0);
			tt_gcall_begin(w, idx, v);
			barrier();
			this_cpu_write(tt_pcpu.in_call, idx + 1);
			barrier();
			ret = tt_callers[idx](v, seed, diff);
			barrier();
			this_cpu_write(tt_pcpu.in_call, 0);
			barrier();
			gopen = tt_gcall_end(w);
			for (k = 0; k < TT_NSLOT; k++)
				h.n[k] = this_cpu_read(tt_pcpu.h.n[k]);
			h.b = this_cpu_read(tt_pcpu.h.b);
			h.noregs = this_cpu_read(tt_pcpu.h.noregs);
			/* The counters before the second read of seq. */
			smp_rmb();
			tt_snap_close(&c);
			preempt_enable();
		} else {
			if (idx % 4 == 3 && (tt_rand(&w->rnd) & 1))
				v[5] |= TT_NAP;
			tt_snap_open(&o);
			for (k = 0; k < TT_NSLOT; k++)
				WRITE_ONCE(w->h.n[k], 0);
			WRITE_ONCE(w->h.b, 0);
			WRITE_ONCE(w->h.noregs, 0);
			tt_gcall_begin(w, idx, v);
			barrier();
			WRITE_ONCE(w->in_call, idx + 1);
			barrier();
			ret = tt_callers[idx](v, seed, diff);
			barrier();
			WRITE_ONCE(w->in_call, 0);
			barrier();
			gopen = tt_gcall_end(w);
			for (k = 0; k < TT_NSLOT; k++)
				h.n[k] = READ_ONCE(w->h.n[k]);
			h.b = READ_ONCE(w->h.b);
			h.noregs = READ_ONCE(w->h.noregs);
			/* The counters before the second read of seq. */
			smp_rmb();
			tt_snap_close(&c);
		}

		w->calls++;
		tt_check_result(idx, v, ret, diff);
		tt_check_window(w, idx, &o, &c, &h);
		tt_check_graph(w, idx, &o, &c, gopen);
#ifdef TT_GRAPH
		if (!w->preemptible && n % 8 == 0)
			tt_nest_probe(w);
#endif
		/* Sleep now and then: RCU Tasks waits for voluntary switches. */
		if (++n % (w->preemptible ? 16 : 64) == 0)
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

		down_read(&tt_api_sem);
		if (!s->broken)
			tt_mutate(s, &m->rnd);
		up_read(&tt_api_sem);
		usleep_range(us, 2 * us);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Quiet points. */

/* The counts at the last quiet point, and each slot's seq then. */
static unsigned long tt_rec_calls[TT_NFN];
static unsigned long tt_rec_hits[TT_NSLOT][TT_NFN];
static unsigned long tt_rec_seq[TT_NSLOT];
/* At load: every count 0, every slot in state 0 (unregistered). */
static bool tt_rec_valid = true;

static notrace void tt_fn_calls(unsigned long *n)
{
	int cpu, f;

	memset(n, 0, TT_NFN * sizeof(*n));
	for_each_possible_cpu(cpu)
		for (f = 0; f < TT_NFN; f++)
			n[f] += READ_ONCE(per_cpu(tt_fncalls, cpu).cnt[f]);
}

#ifdef TT_GRAPH
/*
 * The graph slot's returns of function f at a quiet point: over an
 * interval in which the slot did not change (same), every entry's call
 * ended in it, so the returns paired with an entry equal the entries (dh).
 */
static notrace void tt_reconcile_rets(int f, bool same, unsigned long dh)
{
	unsigned long rets = atomic_long_read(&tt_graph.rets[f]);
	unsigned long dr = rets - tt_graph.rec_rets[f];

	if (same && dr != dh) {
		tt_mismatch();
		pr_err_ratelimited("rftrace_torture: mismatch: graph on %s: between two quiet points %lu entries, %lu returns\n",
				   tt_names[f], dh, dr);
	}
	tt_graph.rec_rets[f] = rets;
}

/* No call in flight: no worker's graph record may hold an entry. */
static notrace void tt_check_records(void)
{
	int i, n;

	for (i = 0; i < tt_nworkers; i++) {
		n = READ_ONCE(tt_workers[i].g.n);
		if (n) {
			tt_mismatch();
			pr_err_ratelimited("rftrace_torture: mismatch: graph: worker %d has %d entries open with no call in flight\n",
					   i, n);
		}
	}
}
#endif

/*
 * At a quiet point (no call in flight: every worker parked or stopped):
 * for each slot whose seq is the same even number as at the last one,
 * every call between the two ran wholly in that state, so the hits of
 * each function since then must be its calls since then if the state
 * wants it, 0 if not. The counts hold still meanwhile (no call, so no
 * callback on a torture function), and a seq read at any moment of
 * either quiet point delimits the same calls.
 */
static notrace void tt_reconcile(void)
{
	unsigned long now[TT_NFN];
	int f, k;

	tt_fn_calls(now);
	for (k = 0; k < TT_NSLOT; k++) {
		struct tt_slot *s = &tt_slots[k];
		/* Pairs with tt_end(): the state's want is written. */
		unsigned long seq = smp_load_acquire(&s->seq);
		u32 want = READ_ONCE(s->want_hist[(seq >> 1) & 3]);
		bool same;

		/* seq again after the want: unchanged, the want is its. */
		smp_rmb();
		same = tt_rec_valid && !(seq & 1) && seq == tt_rec_seq[k] &&
		       READ_ONCE(s->seq) == seq;
		for (f = 0; f < TT_NFN; f++) {
			unsigned long hits = atomic_long_read(&s->fn_hits[f]);
			unsigned long dc = now[f] - tt_rec_calls[f];
			unsigned long dh = hits - tt_rec_hits[k][f];
			unsigned long exp = want & TT_BIT(f) ? dc : 0;

			if (same && dh != exp) {
				tt_mismatch();
				pr_err_ratelimited("rftrace_torture: mismatch: %s on %s: between two quiet points the function ran %lu times, the callback counted %lu hits, expected %lu\n",
						   s->name, tt_names[f], dc, dh, exp);
			}
#ifdef TT_GRAPH
			if (k == TT_S_GRAPH)
				tt_reconcile_rets(f, same, dh);
#endif
			if (same)
				s->rec_hits += exp;
			tt_rec_hits[k][f] = hits;
		}
		if (same)
			s->rec_intervals++;
		tt_rec_seq[k] = seq;
	}
#ifdef TT_GRAPH
	tt_check_records();
#endif
	memcpy(tt_rec_calls, now, sizeof(now));
	tt_rec_valid = true;
}

static notrace void tt_quiet_point(void)
{
	unsigned long limit = jiffies + 5 * HZ;

	WRITE_ONCE(tt_quiet, 1);
	/* The request before the count is read: see tt_park(). */
	smp_mb();
	while (atomic_read(&tt_parked) < tt_nworkers) {
		if (time_after(jiffies, limit) || kthread_should_stop()) {
			/* Some call may be in flight: start afresh next time. */
			tt_quiet_missed++;
			tt_rec_valid = false;
			/* Everything read before the workers go on. */
			smp_store_release(&tt_quiet, 0);
			return;
		}
		usleep_range(100, 200);
	}
	/* Every parked worker's calls and their callbacks are visible. */
	smp_mb();
	tt_reconcile();
	tt_quiet_points++;
	/* Everything read before the workers go on. */
	smp_store_release(&tt_quiet, 0);
}

/* ------------------------------------------------------------------ */
/* The end. */

/* Unregisters whatever a slot holds and frees its filters. */
static notrace void tt_teardown(struct tt_slot *s)
{
	switch (s->kind) {
	case TT_K_FTRACE:
		if (s->registered && !tt_ftrace_unregister(s, "final "))
			s->registered = false;
		if (!s->dynamic)
			ftrace_free_filter(&s->ops);
		break;
#ifdef CONFIG_KPROBES
	case TT_K_KPROBE_ENTRY:
	case TT_K_KPROBE_BODY:
		if (s->registered)
			tt_kprobe_unregister(s);
		s->registered = false;
		break;
#endif
#ifdef TT_DIRECT
	case TT_K_DIRECT:
		if (!s->registered)
			ftrace_free_filter(&s->ops);
		else if (!tt_direct_unregister(s, "final ", true))
			s->registered = false;
		break;
#endif
	case TT_K_GRAPH:
		if (s->registered && !tt_ftrace_unregister(s, "final "))
			s->registered = false;
		ftrace_free_filter(s->opsp);
#ifdef TT_GRAPH
		tt_anchor_free();
#endif
		break;
	default:
		break;
	}
}

#ifdef TT_GRAPH
/*
 * The graph slot's totals, once it is unregistered (and waited for): the
 * first wrong return value and depth, and whether the return address
 * probe ever ran with the graph slot registered all through.
 */
static notrace void tt_finish_graph(void)
{
	unsigned long ent = 0, rets = 0, dropped = 0, probes = 0, checked = 0, hooked = 0;
	int i;

	for (i = 0; i < tt_nworkers; i++) {
		struct tt_grec *g = &tt_workers[i].g;

		ent += g->entries;
		rets += g->returns;
		dropped += g->dropped;
		probes += g->probes;
		checked += g->probe_checked;
		hooked += g->probe_hooked;
	}
	for (i = 0; i < TT_NGBAD; i++) {
		if (!atomic_long_read(&tt_graph.bad[i]))
			continue;
		pr_err("rftrace_torture: mismatch: graph: %ld times %s; first at %pS: expected %lx, got %lx\n",
		       atomic_long_read(&tt_graph.bad[i]), tt_gbad_why[i],
		       (void *)tt_graph.first[i].ip, tt_graph.first[i].expected,
		       tt_graph.first[i].got);
	}
	pr_info("rftrace_torture detail: graph: entries %lu, returns %lu, returns that never came %lu, wrong return values %ld, wrong depths %ld, index-0 returns of others' calls %ld; return address probes %lu (checked %lu, hooked %lu), wrong returns %ld\n",
		ent, rets, dropped, atomic_long_read(&tt_graph.bad[TT_GBAD_RETVAL]),
		atomic_long_read(&tt_graph.bad[TT_GBAD_DEPTH]), atomic_long_read(&tt_graph.bit0),
		probes, checked, hooked, atomic_long_read(&tt_graph.wrong_ret));
	pr_info("rftrace_torture detail: graph: unregistrations alone in the API with the anchor registered %lu; anchor entries from preemptible workers %ld\n",
		tt_slots[TT_S_GRAPH].anchored, atomic_long_read(&tt_anchor_preempted));
	if (atomic_long_read(&tt_anchor_calls)) {
		tt_mismatch();
		pr_err("rftrace_torture: mismatch: graph: the anchor's entry callback ran %ld times (it traces a function nobody calls)\n",
		       atomic_long_read(&tt_anchor_calls));
	}
	if (!hooked) {
		pr_err("rftrace_torture: graph: the return address probe was never checked with the graph slot registered\n");
		unchecked++;
	}
}
#endif

static notrace const char *tt_preempt_model(void)
{
	if (preempt_model_full() || preempt_model_rt())
		return "full";
	if (preempt_model_voluntary())
		return "voluntary";
	return "none";
}

static notrace void tt_finish(void)
{
	unsigned long hits = 0, cb, body, pw_calls = 0, pw_checked = 0, around = 0;
	unsigned long slot_checked[TT_NSLOT] = {}, slot_hits[TT_NSLOT] = {};
	unsigned long slot_around[TT_NSLOT] = {};
	unsigned long now[TT_NFN];
	int i, k, f;

	for (i = 0; i < tt_nmutators; i++)
		if (tt_mutators[i].task)
			kthread_stop(tt_mutators[i].task);
	for (i = 0; i < tt_nworkers; i++)
		if (tt_workers[i].task)
			kthread_stop(tt_workers[i].task);
	tt_stop = jiffies;
	/* The workers are gone: a last quiet point. */
	tt_reconcile();

	for (k = 0; k < TT_NSLOT; k++) {
		tt_teardown(&tt_slots[k]);
		operations += tt_slots[k].nops;
		unexpected += tt_slots[k].nfailed;
	}

	for (i = 0; i < tt_nworkers; i++) {
		struct tt_worker *w = &tt_workers[i];

		calls += w->calls;
		checked += w->checked;
		hit_checks += w->hit_checks;
		hits += w->hits;
		around += w->around;
		if (w->preemptible) {
			pw_calls += w->calls;
			pw_checked += w->checked;
		}
		for (k = 0; k < TT_NSLOT; k++) {
			slot_checked[k] += w->slot_checked[k];
			slot_hits[k] += w->slot_hit_checks[k];
			slot_around[k] += w->slot_around[k];
		}
	}
	tt_fn_calls(now);
	body = 0;
	for (f = 0; f < TT_NFN; f++)
		body += now[f];
	if (body != calls) {
		pr_err("rftrace_torture: mismatch: the torture functions' bodies ran %lu times, the workers called them %lu times\n",
		       body, calls);
		tt_mismatch();
	}
	cb = atomic_long_read(&tt_cb_hits);
	if (cb != hits) {
		pr_err("rftrace_torture: mismatch: the callbacks counted %lu hits, the workers read %lu\n",
		       cb, hits);
		tt_mismatch();
	}
	for (i = 0; i < TT_NSTRAY; i++)
		strays += atomic_long_read(&tt_strays[i]);
	for (i = 0; i < min(atomic_read(&tt_nrecs), TT_NREC); i++) {
		struct tt_stray_rec *r = &tt_stray_recs[i];

		pr_err("rftrace_torture: mismatch: stray: %s: %s: at %pS from %pS (CPU %d, in call %d)\n",
		       r->slot >= 0 ? tt_slots[r->slot].name : "?", tt_stray_why[r->why],
		       (void *)r->ip, (void *)r->parent_ip, r->cpu, r->in_call);
		tt_dump_site(r->ip);
	}
	if (strays)
		pr_err("rftrace_torture: mismatch: %lu strays\n", strays);

	for (k = 0; k < TT_NSLOT; k++) {
		struct tt_slot *s = &tt_slots[k];

		pr_info("rftrace_torture detail: %-9s operations %lu (%lu failed), checked %lu, expecting a hit %lu, around a change %lu, quiet intervals %lu (%lu hits), unregistered busy %lu (held %lu)%s\n",
			s->name, s->nops, s->nfailed, slot_checked[k], slot_hits[k],
			slot_around[k], s->rec_intervals, s->rec_hits, s->unreg_busy,
			s->holds, s->broken ? ", BROKEN" : "");
		reconciled += s->rec_intervals;
		if (!slot_hits[k]) {
			pr_err("rftrace_torture: %s: never checked in a stable window that expected a hit\n",
			       s->name);
			unchecked++;
		}
		if (s->nfailed)
			pr_err("rftrace_torture: %s: %lu API calls failed, none expected\n",
			       s->name, s->nfailed);
	}
	pr_info("rftrace_torture detail: hits %lu (callbacks %lu), function bodies %lu, strays %lu, around a change %lu\n",
		hits, cb, body, strays, around);
#ifdef TT_GRAPH
	tt_finish_graph();
#endif
	pr_info("rftrace_torture detail: integrity: %lu wrong results, %lu changed registers\n",
		atomic_long_read(&tt_bad_results), atomic_long_read(&tt_bad_regs));
	pr_info("rftrace_torture detail: preemptible workers %d: calls %lu, checked %lu; dynamic callbacks preempted %lu, hits %lu (preemption %s)\n",
		tt_nworkers - tt_nbound, pw_calls, pw_checked,
		atomic_long_read(&tt_cb_preempted), tt_slots[TT_S_DYNAMIC].dyn_hits,
		tt_preempt_model());
	pr_info("rftrace_torture detail: quiet points %lu (%lu missed)\n",
		tt_quiet_points, tt_quiet_missed);

	mismatches = atomic_long_read(&tt_mismatches);
	pr_info("rftrace_torture: %lu s, %d workers (%d preemptible), ops operations %lu (%lu failed), calls %lu, checked %lu, reconciled %lu, unchecked tracers %d, mismatches %lu\n",
		(tt_stop - tt_start) / HZ, tt_nworkers, tt_nworkers - tt_nbound,
		operations, unexpected, calls, checked, reconciled, unchecked, mismatches);
	smp_store_release(&done, 1);
}

static notrace int tt_controller_fn(void *arg)
{
	unsigned long end = tt_start + (unsigned long)duration * HZ;
	unsigned long step = quiet_ms ? max(msecs_to_jiffies(quiet_ms), 1UL) : HZ;

	while (!kthread_should_stop() && time_before(jiffies, end)) {
		schedule_timeout_interruptible(min_t(unsigned long, end - jiffies, step));
		if (quiet_ms && !kthread_should_stop() && time_before(jiffies, end))
			tt_quiet_point();
	}
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

	for (k = 0; k < TT_NSLOT; k++) {
		struct tt_slot *s = &tt_slots[k];

		if (s->kind == TT_K_FTRACE && !s->dynamic)
			ftrace_free_filter(&s->ops);
		else if (s->kind == TT_K_GRAPH && s->opsp)
			ftrace_free_filter(s->opsp);
	}
#ifdef TT_GRAPH
	tt_anchor_free();
#endif
}

/*
 * The ftrace site of the function at fn, the ip its callbacks get. x86_64:
 * the call at its start, after the ENDBR with IBT. arm64: the BL after
 * mov x9, x30, after a BTI c if the function starts with one (only a
 * BTI kernel's can; both cores read it the same way).
 */
static notrace unsigned long __init tt_site_of(unsigned long fn)
{
#ifdef CONFIG_X86_64
	if (is_endbr(*(const u32 *)fn))
		fn += ENDBR_INSN_SIZE;
	return fn;
#else
	u32 insn = le32_to_cpu(*(const __le32 *)fn);

	if (IS_ENABLED(CONFIG_ARM64_BTI_KERNEL) && aarch64_insn_is_bti(insn))
		fn += AARCH64_INSN_SIZE;
	return fn + AARCH64_INSN_SIZE;
#endif
}

static notrace int __init tt_prepare(void)
{
	u32 rnd = get_random_u32() | 1;
	int i, k, ret;

	for (i = 0; i < TT_NFN; i++) {
		unsigned long fn = (unsigned long)tt_fns[i];

		tt_site[i] = tt_site_of(fn);
		if (!tt_site_lo || tt_site[i] < tt_site_lo)
			tt_site_lo = tt_site[i];
		if (tt_site[i] > tt_site_hi)
			tt_site_hi = tt_site[i];
		tt_body_off[i] = tt_site[i] - fn + MCOUNT_INSN_SIZE;
		/* Insertion into the sorted sites. */
		for (k = i; k > 0 && tt_sorted[k - 1].site > tt_site[i]; k--)
			tt_sorted[k] = tt_sorted[k - 1];
		tt_sorted[k].site = tt_site[i];
		tt_sorted[k].idx = i;
	}
#ifdef TT_GRAPH
	for (i = 0; i < TT_NNEST; i++) {
		unsigned long fn = (unsigned long)tt_nest_fns[i];

		/* Not folded into an address past the ENDBR (objtool, IBT). */
		OPTIMIZER_HIDE_VAR(fn);
		tt_nest_site[i] = tt_site_of(fn);
	}
#endif
	for (i = 0; i < TT_NPAT; i++) {
		for (k = 0; k < TT_NFN; k++)
			if (glob_match(tt_patterns[i], tt_names[k]))
				tt_pat_mask[i] |= TT_BIT(k);
		if (WARN_ON(!tt_pat_mask[i]))
			return -EINVAL;
	}

	/*
	 * Every ftrace slot (and the graph slot, through its ops) starts
	 * unregistered with a non-empty filter (the dynamic one in its model
	 * only: it has no ops yet).
	 */
	for (k = 0; k < TT_NSLOT; k++) {
		struct tt_slot *s = &tt_slots[k];

		s->data.magic = TT_MAGIC;
		s->data.slot = s;
		s->data.gone = 1;
		if (s->kind == TT_K_DIRECT)
			s->opsp = &s->ops;
		if (s->kind != TT_K_FTRACE && s->kind != TT_K_GRAPH)
			continue;
		s->filter = tt_subset(&rnd, s->domain, 6);
		if (s->dynamic)
			continue;
		s->opsp = &s->ops;
		s->ops.func = tt_ftrace_cb;
		s->ops.flags = s->flags;
		s->ops.private = &s->data;
#ifdef TT_GRAPH
		if (s->kind == TT_K_GRAPH) {
			/* ftrace_set_filter*() of &gops.ops before registration. */
			s->gops.entryfunc = tt_graph_entry;
			s->gops.retfunc = tt_graph_return;
			s->gops.private = &s->data;
			s->opsp = &s->gops.ops;
		}
#endif
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
#ifdef TT_GRAPH
	/* Without its filter the anchor is not used (it would trace all). */
	tt_anchor_ip = tt_site_of((unsigned long)rftrace_torture_anchor);
	ret = ftrace_set_filter_ip(&tt_anchor.ops, tt_anchor_ip, 0, 1);
	if (ret) {
		pr_warn("rftrace_torture: cannot set the anchor's filter: %d\n", ret);
		tt_anchor_free();
	}
#endif
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

	if (!duration || mutators < 1 || workers < 0 ||
	    preempt_workers < 0 || preempt_workers > TT_MAX_PWORKERS)
		return -EINVAL;
	tt_nbound = workers ? workers : num_online_cpus();
	tt_nworkers = tt_nbound + preempt_workers;
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

	/*
	 * Created stopped, woken together; the bound ones round-robin on
	 * the CPUs, the preemptible ones wherever the scheduler puts them.
	 */
	cpu = cpumask_first(cpu_online_mask);
	for (i = 0; i < tt_nworkers; i++) {
		struct tt_worker *w = &tt_workers[i];
		struct task_struct *t;

		w->rnd = get_random_u32() | 1;
#ifdef TT_GRAPH
		w->g.base_depth = TT_DEPTH_UNSET;
#endif
		if (i < tt_nbound) {
			t = kthread_create_on_cpu(tt_worker_fn, w, cpu, "rftrace_torture_w/%u");
			cpu = cpumask_next(cpu, cpu_online_mask);
			if (cpu >= nr_cpu_ids)
				cpu = cpumask_first(cpu_online_mask);
		} else {
			w->preemptible = true;
			t = kthread_create(tt_worker_fn, w, "rftrace_torture_p/%d", i - tt_nbound);
		}
		if (IS_ERR(t)) {
			ret = PTR_ERR(t);
			goto fail_threads;
		}
		w->task = t;
		if (w->preemptible)
			tt_pw_task[i - tt_nbound] = t;
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

	pr_info("rftrace_torture: starting: %u s, %d workers (%d preemptible), %d mutators, %d tracers, preemption %s\n",
		duration, tt_nworkers, tt_nworkers - tt_nbound, tt_nmutators, (int)TT_NSLOT,
		tt_preempt_model());
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

#else /* neither x86_64 with DYNAMIC_FTRACE nor arm64 with DYNAMIC_FTRACE_WITH_ARGS */

static int __init notrace rftrace_torture_init(void)
{
	pr_info("rftrace_torture: needs CONFIG_DYNAMIC_FTRACE on x86_64, or CONFIG_DYNAMIC_FTRACE_WITH_ARGS on arm64\n");
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
