// SPDX-License-Identifier: GPL-2.0
/*
 * Says in the boot log that this kernel runs the upstream C function
 * tracer core (CONFIG_FTRACE_CORE_C).
 */
#include <linux/init.h>
#include <linux/printk.h>

static int __init ftrace_core_banner(void)
{
	pr_info("ftrace: function tracer core: C (kernel/trace/ftrace.c)\n");
	return 0;
}
core_initcall(ftrace_core_banner);
