// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers for the Rust ftrace core: the static inline functions of the
 * tracing headers it needs. They run on the function tracer's hot path,
 * so they must not be traced themselves.
 */

#include <linux/ftrace.h>
#include <linux/trace_recursion.h>

#ifdef CONFIG_FUNCTION_TRACER
notrace int rust_helper_ftrace_test_recursion_trylock(unsigned long ip,
						      unsigned long parent_ip)
{
	return ftrace_test_recursion_trylock(ip, parent_ip);
}

notrace void rust_helper_ftrace_test_recursion_unlock(int bit)
{
	ftrace_test_recursion_unlock(bit);
}

/*
 * Whether either core stopped tracing for good (ftrace_kill()), for
 * kernel::ftrace; only kernel/trace/trace.h declares it.
 */
int ftrace_is_dead(void);

int rust_helper_ftrace_is_dead(void)
{
	return ftrace_is_dead();
}

/*
 * Preemption off and on without being traced, for the Rust core's paths
 * that are not the hot one (the hot path inlines its architecture's).
 * Built with any core, so that the generic crate compiles for an
 * architecture whose Rust layer is not there yet (make generic-check).
 */
notrace void rust_helper_ftrace_preempt_disable_notrace(void)
{
	preempt_disable_notrace();
}

notrace void rust_helper_ftrace_preempt_enable_notrace(void)
{
	preempt_enable_notrace();
}
#endif

#ifdef CONFIG_FUNCTION_GRAPH_TRACER
notrace bool rust_helper_ftrace_graph_is_dead(void)
{
	return ftrace_graph_is_dead();
}

/* Whether the current task has paused graph tracing. */
notrace bool rust_helper_ftrace_graph_paused(void)
{
	return atomic_read(&current->tracing_graph_pause) != 0;
}

#if defined(CONFIG_ARM64) && defined(CONFIG_FTRACE_CORE_RUST)
#include <linux/module.h>
#include <linux/sched.h>
#include <asm/module.h>

/*
 * A point where the arm64 layer's long runs of site writes (every site of
 * the kernel when a tracer starts) let others run on a kernel that does
 * not preempt, as the C core's ftrace_replace_code() does.
 */
notrace void rust_helper_rftrace_cond_resched(void)
{
	cond_resched();
}

/*
 * The PLT entry of the module whose text holds the call site at ip that
 * reaches ftrace_caller (the module loader makes one for its text and one
 * for its init text), or 0: no module there, or no entry. The caller keeps
 * the module's records, so the module stays while the entry is used.
 */
notrace unsigned long rust_helper_rftrace_arm64_module_plt(unsigned long ip)
{
	unsigned long plt = 0;
#ifdef CONFIG_MODULES
	struct module *mod;

	preempt_disable();
	mod = __module_text_address(ip);
	if (mod && within_module_mem_type(ip, mod, MOD_INIT_TEXT))
		plt = (unsigned long)mod->arch.init_ftrace_trampolines;
	else if (mod && within_module_mem_type(ip, mod, MOD_TEXT))
		plt = (unsigned long)mod->arch.ftrace_trampolines;
	preempt_enable();
#endif
	return plt;
}

extern bool rftrace_text_poke_twice;

/*
 * Whether the harness's text_poke_twice is on (arch/arm64/kernel/rftrace/
 * twice.c): set once at boot, before other CPUs run.
 */
notrace bool rust_helper_rftrace_text_poke_twice(void)
{
	return rftrace_text_poke_twice;
}

/* Every online CPU has taken an interrupt since the call (sleeps). */
notrace void rust_helper_rftrace_kick_all_cpus(void)
{
	kick_all_cpus_sync();
}
#endif
#endif
