// SPDX-License-Identifier: GPL-2.0
/*
 * Test module of the ftrace core project: an ops with IPMODIFY redirects
 * a traced function to another one by changing regs->ip, and a second
 * IPMODIFY ops on the same function is refused with -EBUSY. Loading it
 * succeeds only when both hold; tools/testing/selftests/rftrace/tests/
 * ipmodify.sh loads it.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/ftrace.h>
#include <linux/module.h>

static noinline int rftrace_ipmodify_target(int x)
{
	return x + 1;
}

static noinline int rftrace_ipmodify_replacement(int x)
{
	return x * 100;
}

/* Called through a volatile pointer so the calls are real calls. */
static int (*volatile call_target)(int) = rftrace_ipmodify_target;

static void redirect(unsigned long ip, unsigned long parent_ip,
		     struct ftrace_ops *op, struct ftrace_regs *fregs)
{
	ftrace_regs_set_instruction_pointer(fregs,
		(unsigned long)rftrace_ipmodify_replacement);
}

static struct ftrace_ops first = {
	.func = redirect,
	.flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_IPMODIFY,
};

static struct ftrace_ops second = {
	.func = redirect,
	.flags = FTRACE_OPS_FL_SAVE_REGS | FTRACE_OPS_FL_IPMODIFY,
};

static int __init rftrace_ipmodify_test_init(void)
{
	unsigned long ip = (unsigned long)rftrace_ipmodify_target;
	int before, during, after, busy, ret;

	ret = ftrace_set_filter_ip(&first, ip, 0, 0);
	if (!ret)
		ret = ftrace_set_filter_ip(&second, ip, 0, 0);
	if (ret) {
		pr_err("cannot filter on the target: %d\n", ret);
		goto free;
	}

	before = call_target(2);
	ret = register_ftrace_function(&first);
	if (ret) {
		pr_err("cannot register the first IPMODIFY ops: %d\n", ret);
		goto free;
	}
	during = call_target(2);
	busy = register_ftrace_function(&second);
	if (!busy)
		unregister_ftrace_function(&second);
	unregister_ftrace_function(&first);
	after = call_target(2);

	pr_info("target(2): %d before, %d redirected, %d after; second IPMODIFY ops: %d\n",
		before, during, after, busy);
	ret = (before == 3 && during == 200 && after == 3 && busy == -EBUSY) ? 0 : -EINVAL;
	if (!ret)
		pr_info("PASS\n");
free:
	ftrace_free_filter(&first);
	ftrace_free_filter(&second);
	return ret;
}

static void __exit rftrace_ipmodify_test_exit(void)
{
}

module_init(rftrace_ipmodify_test_init);
module_exit(rftrace_ipmodify_test_exit);
MODULE_DESCRIPTION("IPMODIFY redirection and exclusion test of the ftrace core");
MODULE_LICENSE("GPL");
