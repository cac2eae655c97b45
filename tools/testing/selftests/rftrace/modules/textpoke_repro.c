// SPDX-License-Identifier: GPL-2.0
/*
 * textpoke_repro: cross-CPU code patching without the function tracer,
 * for tests/textpoke-repro.sh.
 *
 * One kthread, bound to the first online CPU, flips eight static keys
 * one after the other for `seconds` seconds (as fast as it can, or `rate`
 * flips a second). Each flip rewrites the key's jump sites through the
 * int3 protocol of x86's text_poke_bp_batch(): int3 on the first byte,
 * sync on every CPU, the tail, sync, the first byte, sync, then the
 * int3 handler's descriptor is dropped. Meanwhile a kthread bound to
 * every other online CPU runs 64 small functions in a loop, each with
 * two static branches (128 sites, 16 a key), so the bytes being
 * rewritten are executed all the time by the other CPUs.
 *
 * A CPU that executes an int3 of a site after the last sync finds no
 * descriptor and the kernel dies with "int3: 0000 [#1]", RIP one byte
 * past the site.
 *
 * On every architecture (arm64 writes a NOP or a B in one store, with no
 * int3 to trip on) the callers also check what each branch did: between
 * flips, once the flip's sync is over, every function must take the
 * branches its keys say. A generation count, odd while a flip is under
 * way, brackets each check (the seqlock argument): a call made wholly
 * between two flips that took a branch its key does not say ran code
 * translated from the site's old instruction, which hardware never does
 * once the sync (an IPI every CPU took) is over. Such calls are counted
 * as stale and the first is printed.
 *
 * On hardware, and on an emulator that never runs code translated from
 * bytes already overwritten, the run ends with one line:
 *
 *	textpoke_repro: <s> s, toggles <T>, calls <C>, stale 0
 *
 * and /sys/module/textpoke_repro/parameters/done reads 1 (2 when some
 * caller did not stop, which is printed too).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/completion.h>
#include <linux/cpu.h>
#include <linux/cpumask.h>
#include <linux/delay.h>
#include <linux/err.h>
#include <linux/jiffies.h>
#include <linux/jump_label.h>
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sched/task.h>
#include <linux/slab.h>

static unsigned int seconds = 60;
module_param(seconds, uint, 0444);
MODULE_PARM_DESC(seconds, "how long to flip the keys, in seconds (60)");

static unsigned int rate;
module_param(rate, uint, 0444);
MODULE_PARM_DESC(rate, "key flips a second, 0 for as many as possible (0)");

static int done;
module_param(done, int, 0444);
MODULE_PARM_DESC(done, "read only: 1 once the summary is printed, 2 if a caller did not stop");

static DEFINE_STATIC_KEY_FALSE(tp_key0);
static DEFINE_STATIC_KEY_FALSE(tp_key1);
static DEFINE_STATIC_KEY_FALSE(tp_key2);
static DEFINE_STATIC_KEY_FALSE(tp_key3);
static DEFINE_STATIC_KEY_FALSE(tp_key4);
static DEFINE_STATIC_KEY_FALSE(tp_key5);
static DEFINE_STATIC_KEY_FALSE(tp_key6);
static DEFINE_STATIC_KEY_FALSE(tp_key7);

static struct static_key_false *const tp_keys[] = {
	&tp_key0, &tp_key1, &tp_key2, &tp_key3,
	&tp_key4, &tp_key5, &tp_key6, &tp_key7,
};

/*
 * Function n tests keys a and b; every key is the first key of eight
 * functions and the second of eight others. The names use the digits
 * 0-7 only, so n is a valid literal in both places it is pasted.
 */
#define FN(n, a, b)							\
static noinline int tp_fn_##n(int x)					\
{									\
	int r = x + n;							\
									\
	if (static_branch_unlikely(&tp_key##a))				\
		r ^= 0x5a;						\
	if (static_branch_unlikely(&tp_key##b))				\
		r += 3;							\
	return r;							\
}
FN(00, 0, 3) FN(01, 1, 4) FN(02, 2, 5) FN(03, 3, 6)
FN(04, 4, 7) FN(05, 5, 0) FN(06, 6, 1) FN(07, 7, 2)
FN(10, 0, 3) FN(11, 1, 4) FN(12, 2, 5) FN(13, 3, 6)
FN(14, 4, 7) FN(15, 5, 0) FN(16, 6, 1) FN(17, 7, 2)
FN(20, 0, 3) FN(21, 1, 4) FN(22, 2, 5) FN(23, 3, 6)
FN(24, 4, 7) FN(25, 5, 0) FN(26, 6, 1) FN(27, 7, 2)
FN(30, 0, 3) FN(31, 1, 4) FN(32, 2, 5) FN(33, 3, 6)
FN(34, 4, 7) FN(35, 5, 0) FN(36, 6, 1) FN(37, 7, 2)
FN(40, 0, 3) FN(41, 1, 4) FN(42, 2, 5) FN(43, 3, 6)
FN(44, 4, 7) FN(45, 5, 0) FN(46, 6, 1) FN(47, 7, 2)
FN(50, 0, 3) FN(51, 1, 4) FN(52, 2, 5) FN(53, 3, 6)
FN(54, 4, 7) FN(55, 5, 0) FN(56, 6, 1) FN(57, 7, 2)
FN(60, 0, 3) FN(61, 1, 4) FN(62, 2, 5) FN(63, 3, 6)
FN(64, 4, 7) FN(65, 5, 0) FN(66, 6, 1) FN(67, 7, 2)
FN(70, 0, 3) FN(71, 1, 4) FN(72, 2, 5) FN(73, 3, 6)
FN(74, 4, 7) FN(75, 5, 0) FN(76, 6, 1) FN(77, 7, 2)

#define NR_FNS 64

/* Each function and its two keys, for the callers' check. */
#define ENT(n, a, b) { tp_fn_##n, n, a, b },
static const struct tp_ent {
	int (*fn)(int x);
	int n;
	u8 a, b;
} tp_ents[NR_FNS] = {
	ENT(00, 0, 3) ENT(01, 1, 4) ENT(02, 2, 5) ENT(03, 3, 6)
	ENT(04, 4, 7) ENT(05, 5, 0) ENT(06, 6, 1) ENT(07, 7, 2)
	ENT(10, 0, 3) ENT(11, 1, 4) ENT(12, 2, 5) ENT(13, 3, 6)
	ENT(14, 4, 7) ENT(15, 5, 0) ENT(16, 6, 1) ENT(17, 7, 2)
	ENT(20, 0, 3) ENT(21, 1, 4) ENT(22, 2, 5) ENT(23, 3, 6)
	ENT(24, 4, 7) ENT(25, 5, 0) ENT(26, 6, 1) ENT(27, 7, 2)
	ENT(30, 0, 3) ENT(31, 1, 4) ENT(32, 2, 5) ENT(33, 3, 6)
	ENT(34, 4, 7) ENT(35, 5, 0) ENT(36, 6, 1) ENT(37, 7, 2)
	ENT(40, 0, 3) ENT(41, 1, 4) ENT(42, 2, 5) ENT(43, 3, 6)
	ENT(44, 4, 7) ENT(45, 5, 0) ENT(46, 6, 1) ENT(47, 7, 2)
	ENT(50, 0, 3) ENT(51, 1, 4) ENT(52, 2, 5) ENT(53, 3, 6)
	ENT(54, 4, 7) ENT(55, 5, 0) ENT(56, 6, 1) ENT(57, 7, 2)
	ENT(60, 0, 3) ENT(61, 1, 4) ENT(62, 2, 5) ENT(63, 3, 6)
	ENT(64, 4, 7) ENT(65, 5, 0) ENT(66, 6, 1) ENT(67, 7, 2)
	ENT(70, 0, 3) ENT(71, 1, 4) ENT(72, 2, 5) ENT(73, 3, 6)
	ENT(74, 4, 7) ENT(75, 5, 0) ENT(76, 6, 1) ENT(77, 7, 2)
};

/*
 * The flips' generation (odd while one is under way) and the keys it
 * leaves on (bit k: key k), written by the toggler only.
 */
static unsigned long tp_gen;
static unsigned long tp_on;
static atomic64_t tp_stale;
static atomic_t tp_stale_seen;
static struct { int n, x, got, want; unsigned long on; } tp_first;

/* What tp_fn_<n>(x) returns with the keys of @on. */
static int tp_expect(const struct tp_ent *e, int x, unsigned long on)
{
	int r = x + e->n;

	if (on & BIT(e->a))
		r ^= 0x5a;
	if (on & BIT(e->b))
		r += 3;
	return r;
}

/*
 * Calls each function once, checked when no flip overlapped the calls.
 * The generation is read again after the calls: a flip that began
 * during them made it odd (then a full barrier) before it wrote a site.
 */
static int tp_call_checked(int x)
{
	unsigned long g = smp_load_acquire(&tp_gen);
	unsigned long on = READ_ONCE(tp_on);
	int got[NR_FNS];
	int i, s = 0;

	for (i = 0; i < NR_FNS; i++) {
		got[i] = tp_ents[i].fn(x);
		s += got[i];
	}
	smp_rmb();
	if ((g & 1) || READ_ONCE(tp_gen) != g)
		return s;
	for (i = 0; i < NR_FNS; i++) {
		int want = tp_expect(&tp_ents[i], x, on);

		if (got[i] == want)
			continue;
		atomic64_inc(&tp_stale);
		if (atomic_cmpxchg(&tp_stale_seen, 0, 1) == 0) {
			tp_first.n = tp_ents[i].n;
			tp_first.x = x;
			tp_first.got = got[i];
			tp_first.want = want;
			tp_first.on = on;
		}
	}
	return s;
}

/* Direct calls of all 64: the fast path of the callers' loop. */
#define CALL(n) (s += tp_fn_##n(x));
static noinline int tp_call_all(int x)
{
	int s = 0;

	CALL(00) CALL(01) CALL(02) CALL(03) CALL(04) CALL(05) CALL(06) CALL(07)
	CALL(10) CALL(11) CALL(12) CALL(13) CALL(14) CALL(15) CALL(16) CALL(17)
	CALL(20) CALL(21) CALL(22) CALL(23) CALL(24) CALL(25) CALL(26) CALL(27)
	CALL(30) CALL(31) CALL(32) CALL(33) CALL(34) CALL(35) CALL(36) CALL(37)
	CALL(40) CALL(41) CALL(42) CALL(43) CALL(44) CALL(45) CALL(46) CALL(47)
	CALL(50) CALL(51) CALL(52) CALL(53) CALL(54) CALL(55) CALL(56) CALL(57)
	CALL(60) CALL(61) CALL(62) CALL(63) CALL(64) CALL(65) CALL(66) CALL(67)
	CALL(70) CALL(71) CALL(72) CALL(73) CALL(74) CALL(75) CALL(76) CALL(77)
	return s;
}

static struct task_struct *toggler;
static struct task_struct **callers;
static unsigned int nr_callers;
static bool callers_stop;
static atomic_t callers_running;
static DECLARE_COMPLETION(callers_done);
static atomic64_t total_calls;
static int sink;

/* A thread whose work is over sleeps until the module's exit stops it. */
static void wait_for_stop(void)
{
	for (;;) {
		set_current_state(TASK_INTERRUPTIBLE);
		if (kthread_should_stop())
			break;
		schedule();
	}
	__set_current_state(TASK_RUNNING);
}

static int caller_fn(void *unused)
{
	u64 calls = 0;
	int s = 0, x = 0;

	while (!READ_ONCE(callers_stop) && !kthread_should_stop()) {
		s += tp_call_all(x++);
		s += tp_call_checked(x++);
		calls += 2 * NR_FNS;
		cond_resched();
	}
	WRITE_ONCE(sink, s);
	atomic64_add(calls, &total_calls);
	if (atomic_dec_and_test(&callers_running))
		complete(&callers_done);
	wait_for_stop();
	return 0;
}

static void flip(u64 n)
{
	unsigned int k = n % ARRAY_SIZE(tp_keys);
	struct static_key_false *key = tp_keys[k];

	WRITE_ONCE(tp_gen, tp_gen + 1);
	smp_mb();
	if (static_key_enabled(key))
		static_branch_disable(key);
	else
		static_branch_enable(key);
	WRITE_ONCE(tp_on, tp_on ^ BIT(k));
	smp_store_release(&tp_gen, tp_gen + 1);
}

/* With a rate, sleep until flip number @n is due. */
static void pace(ktime_t start, u64 n)
{
	s64 due = ktime_to_ns(start) + div_u64(n * NSEC_PER_SEC, rate);
	s64 ahead = due - ktime_get_ns();

	if (ahead >= NSEC_PER_USEC)
		fsleep(div_u64(ahead, NSEC_PER_USEC));
}

static int toggler_fn(void *unused)
{
	unsigned long begin = jiffies;
	unsigned long end = begin + (unsigned long)seconds * HZ;
	ktime_t start = ktime_get();
	unsigned int k, left;
	u64 toggles = 0;

	while (!kthread_should_stop() && time_before(jiffies, end)) {
		flip(toggles);
		toggles++;
		if (rate)
			pace(start, toggles);
		else
			cond_resched();
	}
	WRITE_ONCE(callers_stop, true);
	left = 0;
	if (nr_callers && !wait_for_completion_timeout(&callers_done, 10 * HZ))
		left = atomic_read(&callers_running);
	if (left)
		pr_err("%u of %u callers did not stop\n", left, nr_callers);
	for (k = 0; k < ARRAY_SIZE(tp_keys); k++)
		if (static_key_enabled(tp_keys[k]))
			static_branch_disable(tp_keys[k]);

	if (atomic_read(&tp_stale_seen))
		pr_err("stale code: tp_fn_%02o(%d) returned %d, its keys (%#lx) say %d\n",
		       tp_first.n, tp_first.x, tp_first.got, tp_first.on, tp_first.want);
	pr_info("%lu s, toggles %llu, calls %lld, stale %lld\n", (jiffies - begin) / HZ,
		toggles, atomic64_read(&total_calls), atomic64_read(&tp_stale));
	WRITE_ONCE(done, left ? 2 : 1);
	wait_for_stop();
	return 0;
}

static void stop_all(void)
{
	unsigned int i;

	WRITE_ONCE(callers_stop, true);
	if (toggler)
		kthread_stop_put(toggler);
	for (i = 0; i < nr_callers; i++)
		kthread_stop_put(callers[i]);
	kfree(callers);
}

static int __init textpoke_repro_init(void)
{
	struct task_struct *t;
	unsigned int cpu, first, i;
	int ret = 0;

	cpus_read_lock();
	first = cpumask_first(cpu_online_mask);
	callers = kcalloc(num_online_cpus(), sizeof(*callers), GFP_KERNEL);
	if (!callers) {
		cpus_read_unlock();
		return -ENOMEM;
	}
	for_each_online_cpu(cpu) {
		if (cpu == first)
			continue;
		t = kthread_create_on_cpu(caller_fn, NULL, cpu, "textpoke_call/%u");
		if (IS_ERR(t)) {
			ret = PTR_ERR(t);
			break;
		}
		get_task_struct(t);
		callers[nr_callers++] = t;
	}
	if (!ret) {
		t = kthread_create_on_cpu(toggler_fn, NULL, first, "textpoke_flip/%u");
		if (IS_ERR(t)) {
			ret = PTR_ERR(t);
		} else {
			get_task_struct(t);
			toggler = t;
		}
	}
	cpus_read_unlock();
	if (ret) {
		/* None has run yet: stopping them skips their functions. */
		stop_all();
		return ret;
	}

	pr_info("flipping %zu keys (%d sites) on CPU %u for %u s, %u callers on the other CPUs\n",
		ARRAY_SIZE(tp_keys), 2 * NR_FNS, first, seconds, nr_callers);
	atomic_set(&callers_running, nr_callers);
	for (i = 0; i < nr_callers; i++)
		wake_up_process(callers[i]);
	wake_up_process(toggler);
	return 0;
}

static void __exit textpoke_repro_exit(void)
{
	stop_all();
}

module_init(textpoke_repro_init);
module_exit(textpoke_repro_exit);

MODULE_DESCRIPTION("Static keys flipped under callers on every other CPU, for the rftrace tests");
MODULE_LICENSE("GPL");
