// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_tramp FUNC N KINDS CMD: attach N BPF tracing programs to the kernel
 * function FUNC (found by name in /sys/kernel/btf/vmlinux), run "sh -c CMD"
 * once, check that every program ran (run_cnt of BPF_ENABLE_STATS), then
 * detach them one by one, running CMD after each detach and checking that
 * the detached program no longer runs and the others still do.
 *
 * KINDS is "fentry", "fexit" or "mixed" (alternating). The programs are two
 * raw instructions (r0 = 0; exit), so no compiler is needed. Every attach
 * and detach rebuilds the function's BPF trampoline, which the tracer core
 * sees as register_ftrace_direct(), modify_ftrace_direct() and
 * unregister_ftrace_direct(). Prints the time all attaches and all detaches
 * took, in microseconds of CLOCK_MONOTONIC.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/btf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bpf_raw.h"

#define MAX_PROGS 64

static int id_if_named(const char *name, int id, void *wanted)
{
	return strcmp(name, wanted) ? 0 : id;
}

/* The BTF id of the function `name` in vmlinux's BTF, or -1. */
static int btf_func_id(const char *name)
{
	int id = btf_each_func(id_if_named, (void *)name);

	return id > 0 ? id : -1;
}

static int attach(int prog, int exit_kind)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.link_create.prog_fd = prog;
	a.link_create.attach_type = exit_kind ? BPF_TRACE_FEXIT : BPF_TRACE_FENTRY;
	return bpf(BPF_LINK_CREATE, &a);
}

int main(int argc, char **argv)
{
	int prog[MAX_PROGS], link[MAX_PROGS], exit_kind[MAX_PROGS];
	long long cnt[MAX_PROGS], t0, t_attach, t_detach = 0;
	union bpf_attr a;
	int n, i, j, id, stats;

	if (argc != 5 || atoi(argv[2]) < 1 || atoi(argv[2]) > MAX_PROGS) {
		fprintf(stderr, "usage: bpf_tramp FUNC N fentry|fexit|mixed CMD\n");
		return 2;
	}
	n = atoi(argv[2]);
	id = btf_func_id(argv[1]);
	if (id < 0) {
		fprintf(stderr, "bpf_tramp: %s not in vmlinux's BTF\n", argv[1]);
		return 1;
	}
	memset(&a, 0, sizeof(a));
	a.enable_stats.type = BPF_STATS_RUN_TIME;
	stats = bpf(BPF_ENABLE_STATS, &a);
	if (stats < 0) {
		perror("BPF_ENABLE_STATS");
		return 1;
	}
	for (i = 0; i < n; i++) {
		exit_kind[i] = !strcmp(argv[3], "fexit") || (!strcmp(argv[3], "mixed") && i % 2);
		prog[i] = load_return0("bpf_tramp", BPF_PROG_TYPE_TRACING,
				       exit_kind[i] ? BPF_TRACE_FEXIT : BPF_TRACE_FENTRY, id, 0);
		if (prog[i] < 0)
			return 1;
	}
	t0 = now_us();
	for (i = 0; i < n; i++) {
		link[i] = attach(prog[i], exit_kind[i]);
		if (link[i] < 0) {
			printf("bpf_tramp: attach %d of %d (%s): %s\n", i + 1, n,
			       exit_kind[i] ? "fexit" : "fentry", strerror(errno));
			return 1;
		}
	}
	t_attach = now_us() - t0;
	if (system(argv[4]) != 0) {
		printf("bpf_tramp: '%s' failed\n", argv[4]);
		return 1;
	}
	for (i = 0; i < n; i++) {
		cnt[i] = run_cnt(prog[i]);
		if (cnt[i] < 1) {
			printf("bpf_tramp: program %d of %d (%s) did not run\n", i + 1, n,
			       exit_kind[i] ? "fexit" : "fentry");
			return 1;
		}
	}
	for (i = 0; i < n; i++) {
		t0 = now_us();
		close(link[i]);
		t_detach += now_us() - t0;
		if (system(argv[4]) != 0) {
			printf("bpf_tramp: '%s' failed after detach %d\n", argv[4], i + 1);
			return 1;
		}
		for (j = 0; j < n; j++) {
			long long c = run_cnt(prog[j]);

			if (j <= i && c != cnt[j]) {
				printf("bpf_tramp: program %d ran after its detach\n", j + 1);
				return 1;
			}
			if (j > i && c <= cnt[j]) {
				printf("bpf_tramp: program %d stopped running after detach %d\n",
				       j + 1, i + 1);
				return 1;
			}
			cnt[j] = c;
		}
	}
	printf("bpf_tramp: %d %s programs on %s: attach %lld us, detach %lld us\n", n, argv[3],
	       argv[1], t_attach, t_detach);
	return 0;
}
