// SPDX-License-Identifier: GPL-2.0
/*
 * boot_us: print the microseconds since the machine started, from the
 * architecture's virtual counter (arm64: CNTVCT_EL0 over CNTFRQ_EL0,
 * which the kernel lets user space read). Under QEMU's -icount the
 * counter runs on instructions from reset on, the kernel's own clock
 * only from its timer's setup, after the tracer core took its sites: the
 * bench's boot row on arm64. Other architectures: exit 2.
 */
#include <stdio.h>

int main(void)
{
#if defined(__aarch64__)
	unsigned long long cnt, frq;

	asm volatile("isb; mrs %0, cntvct_el0" : "=r"(cnt));
	asm volatile("mrs %0, cntfrq_el0" : "=r"(frq));
	if (!frq)
		return 1;
	printf("%llu\n", (unsigned long long)((unsigned __int128)cnt * 1000000 / frq));
	return 0;
#else
	fprintf(stderr, "boot_us: not on this architecture\n");
	return 2;
#endif
}
