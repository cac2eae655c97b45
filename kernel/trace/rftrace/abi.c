// SPDX-License-Identifier: GPL-2.0
/*
 * The C side of the Rust generic ftrace core (rftrace_core.rs).
 *
 * - The module exports of the symbols the Rust crate defines: a Rust
 *   object built into vmlinux has no EXPORT_SYMBOL of its own.
 * - Accessors of the struct trace_array fields the core owns. That struct
 *   is private to kernel/trace (trace.h) and not in the Rust bindings.
 * - For the graph core: what C macros and static inlines give (the thread
 *   walk, the idle tasks, the online CPUs, the kill_ftrace_graph key).
 *
 * Built without the fentry flags: nothing here is traced.
 */
#include <linux/export.h>
#include <linux/ftrace.h>
#include <linux/sched/signal.h>
#include <linux/sched/task.h>
#include "../trace.h"

struct ftrace_ops *rftrace_tr_ops(struct trace_array *tr);
void rftrace_tr_set_ops(struct trace_array *tr, struct ftrace_ops *ops);
struct trace_pid_list __rcu **rftrace_tr_pid_slot(struct trace_array *tr, bool no);
int rftrace_tr_ignore_pid(struct trace_array *tr);
void rftrace_tr_set_ignore_pid(struct trace_array *tr, int pid);
void rftrace_tr_reset_ignore_pid(struct trace_array *tr);
struct trace_array *rftrace_tr_next(struct trace_array *tr);
unsigned long rftrace_irq_save(void);
void rftrace_irq_restore(unsigned long flags);
int rftrace_cpu(void);
struct task_struct *rftrace_idle_task(int cpu);
/* Called on each thread; returns false to stop the walk. */
typedef bool (*rftrace_thread_fn)(struct task_struct *t, void *arg);
void rftrace_walk_threads(rftrace_thread_fn fn, void *arg);
void rftrace_kill_graph(void);
int rftrace_next_online_cpu(int prev);
void rftrace_assert_held(struct mutex *m);
bool rftrace_should_fail_patch(void);

EXPORT_SYMBOL_GPL(register_ftrace_function);
EXPORT_SYMBOL_GPL(unregister_ftrace_function);
EXPORT_SYMBOL_GPL(ftrace_set_filter_ip);
EXPORT_SYMBOL_GPL(ftrace_set_filter_ips);
EXPORT_SYMBOL_GPL(ftrace_set_filter);
EXPORT_SYMBOL_GPL(ftrace_set_notrace);
EXPORT_SYMBOL_GPL(ftrace_set_global_filter);
EXPORT_SYMBOL_GPL(ftrace_set_global_notrace);
EXPORT_SYMBOL_GPL(ftrace_free_filter);
EXPORT_SYMBOL_GPL(ftrace_ops_set_global_filter);
#ifdef CONFIG_DYNAMIC_FTRACE_WITH_DIRECT_CALLS
EXPORT_SYMBOL_GPL(register_ftrace_direct);
EXPORT_SYMBOL_GPL(unregister_ftrace_direct);
EXPORT_SYMBOL_GPL(modify_ftrace_direct);
EXPORT_SYMBOL_GPL(modify_ftrace_direct_nolock);
#endif
#ifdef CONFIG_FUNCTION_GRAPH_TRACER
/* Not exported in 6.12: for the graph ops of the torture module. */
EXPORT_SYMBOL_GPL(register_ftrace_graph);
EXPORT_SYMBOL_GPL(unregister_ftrace_graph);
#endif

struct ftrace_ops *rftrace_tr_ops(struct trace_array *tr)
{
	return tr->ops;
}

void rftrace_tr_set_ops(struct trace_array *tr, struct ftrace_ops *ops)
{
	tr->ops = ops;
}

/* The pid lists of set_ftrace_pid (no = set_ftrace_notrace_pid). */
struct trace_pid_list __rcu **rftrace_tr_pid_slot(struct trace_array *tr, bool no)
{
	return no ? &tr->function_no_pids : &tr->function_pids;
}

/* What the sched_switch probe recorded for this CPU (hot path). */
int rftrace_tr_ignore_pid(struct trace_array *tr)
{
	return this_cpu_read(tr->array_buffer.data->ftrace_ignore_pid);
}

void rftrace_tr_set_ignore_pid(struct trace_array *tr, int pid)
{
	this_cpu_write(tr->array_buffer.data->ftrace_ignore_pid, pid);
}

void rftrace_tr_reset_ignore_pid(struct trace_array *tr)
{
	int cpu;

	for_each_possible_cpu(cpu)
		per_cpu_ptr(tr->array_buffer.data, cpu)->ftrace_ignore_pid = FTRACE_PID_TRACE;
}

/* The trace array after @tr (the first for NULL); trace_types_lock held. */
struct trace_array *rftrace_tr_next(struct trace_array *tr)
{
	struct list_head *next = tr ? tr->list.next : ftrace_trace_arrays.next;

	if (next == &ftrace_trace_arrays)
		return NULL;
	return list_entry(next, struct trace_array, list);
}

/* For the function profiler, which runs on the tracing hot path. */
unsigned long rftrace_irq_save(void)
{
	unsigned long flags;

	local_irq_save(flags);
	return flags;
}

void rftrace_irq_restore(unsigned long flags)
{
	local_irq_restore(flags);
}

int rftrace_cpu(void)
{
	return raw_smp_processor_id();
}

#ifdef CONFIG_FTRACE_CORE_RUST_MUTANTS
#include <linux/moduleparam.h>

/*
 * The deliberate break switched on (kernel/trace/rftrace/base/mutant.rs),
 * a word of the trampolines' data (trampolines_64.S), which test it too.
 */
extern int rftrace_mutant;
core_param(rftrace_mutant, rftrace_mutant, int, 0644);
#endif

#ifdef CONFIG_FAULT_INJECTION_DEBUG_FS
#include <linux/fault-inject.h>

/*
 * fail_rftrace_patch (debugfs, Documentation/fault-injection): a batch of
 * site changes fails as if a site did not hold what its record says, so
 * that tests can watch the core kill itself (ftrace_bug()) and what its
 * users do then. Off (probability 0) unless a test sets it, and not
 * counted by fail-nth while off.
 */
static DECLARE_FAULT_ATTR(fail_rftrace_patch);

static int __init fail_rftrace_patch_debugfs(void)
{
	return PTR_ERR_OR_ZERO(fault_create_debugfs_attr("fail_rftrace_patch",
							 NULL, &fail_rftrace_patch));
}
late_initcall(fail_rftrace_patch_debugfs);

bool rftrace_should_fail_patch(void)
{
	/*
	 * Asked only once a test armed it: should_fail() also counts a
	 * task's /proc/self/fail-nth, and the fault-injection walks, which
	 * mean to fail the Nth allocation, would then kill tracing when
	 * their Nth call lands here.
	 */
	if (!READ_ONCE(fail_rftrace_patch.probability))
		return false;
	return should_fail(&fail_rftrace_patch, 1);
}
#else
bool rftrace_should_fail_patch(void)
{
	return false;
}
#endif

#ifdef CONFIG_FUNCTION_GRAPH_TRACER
/* Set once graph tracing meets a corrupted shadow stack (ftrace.h). */
DEFINE_STATIC_KEY_FALSE(kill_ftrace_graph);

void rftrace_kill_graph(void)
{
	static_branch_enable(&kill_ftrace_graph);
}

/* The idle task of @cpu; NULL for a number that is no possible CPU. */
struct task_struct *rftrace_idle_task(int cpu)
{
	if (cpu < 0 || cpu >= nr_cpu_ids || !cpu_possible(cpu))
		return NULL;
	return idle_task(cpu);
}

/* The online CPU after @prev (-1: the first); nr_cpu_ids or more at the end. */
int rftrace_next_online_cpu(int prev)
{
	return cpumask_next(prev, cpu_online_mask);
}

/* Calls @fn on every thread, under RCU, until it returns false. */
void rftrace_walk_threads(rftrace_thread_fn fn, void *arg)
{
	struct task_struct *g, *t;

	rcu_read_lock();
	for_each_process_thread(g, t) {
		if (!fn(t, arg))
			goto out;
	}
out:
	rcu_read_unlock();
}
#endif

/* lockdep_assert_held() for the Rust side: the macro reaches the lock's dep_map. */
void rftrace_assert_held(struct mutex *m)
{
	lockdep_assert_held(m);
}
