// SPDX-License-Identifier: GPL-2.0
/*
 * text_poke_twice on arm64: a boot option of the test harness, off unless
 * the command line says so, the arm64 counterpart of the x86 one (glue in
 * alternative.c).
 *
 * Multi-threaded QEMU TCG can keep running code it translated from bytes
 * that another vCPU's store was replacing at that very moment: it drops a
 * code page's old translations before the store lands, so a vCPU that
 * translates the page in between reads the old instruction and keeps that
 * translation after the store (Documentation/harness.rst, "Parallelism").
 * On arm64 a call site whose BL became a NOP then goes on calling the
 * common trampoline from that stale translation, with whatever ops its
 * literal names. With the option, the Rust core's arm64 layer writes
 * every instruction of a batch again, with the word it then holds, once
 * every CPU has taken an IPI after the batch (none is in the middle of a
 * translation then): the second store drops whatever was made from the
 * old word. Hardware needs none of it.
 */
#include <linux/cache.h>
#include <linux/init.h>
#include <linux/printk.h>

bool rftrace_text_poke_twice __ro_after_init;

static int __init rftrace_text_poke_twice_setup(char *str)
{
	rftrace_text_poke_twice = true;
	pr_info("text_poke_twice: the ftrace core writes each call site again after a sync of every CPU\n");
	return 1;
}
__setup("text_poke_twice", rftrace_text_poke_twice_setup);
