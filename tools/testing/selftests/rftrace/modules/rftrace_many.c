// SPDX-License-Identifier: GPL-2.0
/*
 * rftrace_many: a module of 1,000 traced functions that nothing calls,
 * for the scale rows of `make bench` (loading and unloading it while the
 * function tracer runs; kprobe events on 1,000 distinct functions).
 * Each function differs from the others, so that none is folded into
 * another.
 */
#include <linux/compiler.h>
#include <linux/module.h>

#define F(n) int rftrace_many_##n(int x);				\
	noinline int rftrace_many_##n(int x) { return x * 1##n + 1; }
#define F10(n) F(n##0) F(n##1) F(n##2) F(n##3) F(n##4) \
	F(n##5) F(n##6) F(n##7) F(n##8) F(n##9)
#define F100(n) F10(n##0) F10(n##1) F10(n##2) F10(n##3) F10(n##4) \
	F10(n##5) F10(n##6) F10(n##7) F10(n##8) F10(n##9)

F100(0) F100(1) F100(2) F100(3) F100(4) F100(5) F100(6) F100(7) F100(8) F100(9)

MODULE_DESCRIPTION("1,000 traced functions for the rftrace scale benchmarks");
MODULE_LICENSE("GPL");
