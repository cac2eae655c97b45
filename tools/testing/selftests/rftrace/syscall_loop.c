// SPDX-License-Identifier: GPL-2.0
/*
 * syscall_loop N: make N getppid() system calls and print how long they
 * took in total, in nanoseconds of CLOCK_MONOTONIC. The benchmark traces
 * __x64_sys_getppid in different ways and compares.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec a, b;
	long n, i;

	n = argc == 2 ? atol(argv[1]) : 0;
	if (n <= 0) {
		fprintf(stderr, "usage: syscall_loop N\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("%lld\n", (b.tv_sec - a.tv_sec) * 1000000000LL + (b.tv_nsec - a.tv_nsec));
	return 0;
}
