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
F(00) F(01) F(02) F(03) F(04) F(05) F(06) F(07)
F(08) F(09) F(10) F(11) F(12) F(13) F(14) F(15)
F(16) F(17) F(18) F(19) F(20) F(21) F(22) F(23)
F(24) F(25) F(26) F(27) F(28) F(29) F(30) F(31)
F(32) F(33) F(34) F(35) F(36) F(37) F(38) F(39)

#define P(n) rftrace_near_##n,
static int (*const near_fns[])(int) = {
	P(00) P(01) P(02) P(03) P(04) P(05) P(06) P(07)
	P(08) P(09) P(10) P(11) P(12) P(13) P(14) P(15)
	P(16) P(17) P(18) P(19) P(20) P(21) P(22) P(23)
	P(24) P(25) P(26) P(27) P(28) P(29) P(30) P(31)
	P(32) P(33) P(34) P(35) P(36) P(37) P(38) P(39)
};

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
