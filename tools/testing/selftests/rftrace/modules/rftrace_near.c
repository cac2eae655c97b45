// SPDX-License-Identifier: GPL-2.0
/*
 * rftrace_near: 40 traced functions that a write to the parameter `call`
 * runs, for tests/modules-runs.sh. Loaded right after rftrace_many.ko,
 * its text lies a few pages above that module's, so one step of an int3
 * batch writes the sites of both through one mapping, across the pages
 * between them; running the functions afterwards shows that their text
 * came out right.
 */
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/moduleparam.h>

#define F(n) static noinline int rftrace_near_##n(int x) { return x * 1##n + 3; }
#define F10(n) F(n##0) F(n##1) F(n##2) F(n##3) F(n##4) \
	F(n##5) F(n##6) F(n##7) F(n##8) F(n##9)
F10(0) F10(1) F10(2) F10(3)

#define P(n) rftrace_near_##n,
#define P10(n) P(n##0) P(n##1) P(n##2) P(n##3) P(n##4) \
	P(n##5) P(n##6) P(n##7) P(n##8) P(n##9)
static int (*const near_fns[])(int) = { P10(0) P10(1) P10(2) P10(3) };

static int near_call(const char *val, const struct kernel_param *kp)
{
	int i, sum = 0;

	for (i = 0; i < ARRAY_SIZE(near_fns); i++)
		sum += near_fns[i](i);
	pr_info("rftrace_near: called %zu functions, sum %d\n", ARRAY_SIZE(near_fns), sum);
	return 0;
}

static const struct kernel_param_ops near_call_ops = {
	.set = near_call,
};
module_param_cb(call, &near_call_ops, NULL, 0200);
MODULE_PARM_DESC(call, "write anything: runs the module's 40 functions");

MODULE_DESCRIPTION("Traced functions to run after live patching, for the rftrace tests");
MODULE_LICENSE("GPL");
