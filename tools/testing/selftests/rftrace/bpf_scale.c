// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_scale: BPF attach at scale, the way tracing tools attach, timed.
 *
 *   bpf_scale kmulti LIST N [CMD]
 *	One kprobe_multi link (one fprobe, one ftrace_ops with N sites) over
 *	the first N functions of LIST, as bpftrace's "kprobe:vfs_*" or
 *	retsnoop attach.
 *   bpf_scale fentry LIST N [CMD]
 *	N fentry programs, one on each of N functions of LIST (each its own
 *	BPF trampoline: register_ftrace_direct()), as "kfunc:" probes over
 *	many functions attach. Functions of LIST that vmlinux's BTF lacks or
 *	the verifier refuses are skipped; the first N that load are used.
 *
 * LIST has one function name a line. The programs are two raw instructions
 * (r0 = 0; exit). Loading is not timed; the attach (BPF_LINK_CREATE) and
 * the detach (close of the links) are, in microseconds of CLOCK_MONOTONIC.
 * CMD, when given, runs between the attach and the detach ("sh -c"), and
 * the output gives how often the programs ran meanwhile (run_cnt with
 * BPF_ENABLE_STATS), so that a test can check they did.
 * Prints "bpf_scale: KIND N functions: attach A us, detach D us, runs R".
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/btf.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "bpf_raw.h"

/* vmlinux's BTF: the FUNC types by name, sorted, for bsearch(). */
struct func_id {
	const char *name;
	int id;
};
static struct func_id *funcs;
static long nr_funcs;

static int cmp_func(const void *a, const void *b)
{
	return strcmp(((const struct func_id *)a)->name, ((const struct func_id *)b)->name);
}

static int add_func(const char *name, int id, void *cap)
{
	long *c = cap;

	if (nr_funcs == *c) {
		*c = *c ? 2 * *c : 4096;
		funcs = realloc(funcs, *c * sizeof(*funcs));
		if (!funcs)
			return -1;
	}
	funcs[nr_funcs].name = name;
	funcs[nr_funcs++].id = id;
	return 0;
}

static int read_btf(void)
{
	long cap = 0;

	if (btf_each_func(add_func, &cap))
		return -1;
	qsort(funcs, nr_funcs, sizeof(*funcs), cmp_func);
	return 0;
}

static int btf_func_id(const char *name)
{
	struct func_id key = { .name = name }, *f;

	f = bsearch(&key, funcs, nr_funcs, sizeof(*funcs), cmp_func);
	return f ? f->id : -1;
}

static char **read_list(const char *path, long *n)
{
	char line[512], **v = NULL;
	long cap = 0;
	FILE *f = fopen(path, "r");

	if (!f) {
		perror(path);
		return NULL;
	}
	*n = 0;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, " \t\n")] = 0;
		if (!line[0])
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 1024;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				return NULL;
		}
		v[(*n)++] = strdup(line);
	}
	fclose(f);
	return v;
}

static int run(const char *cmd)
{
	if (cmd && system(cmd) != 0) {
		printf("bpf_scale: '%s' failed\n", cmd);
		return -1;
	}
	return 0;
}

static int kmulti(char **names, long n, const char *cmd)
{
	long long t0, t_attach, t_detach, runs;
	union bpf_attr a;
	int prog, link;

	prog = load_return0("bpf_scale", BPF_PROG_TYPE_KPROBE, BPF_TRACE_KPROBE_MULTI, 0, 0);
	if (prog < 0)
		return 1;
	memset(&a, 0, sizeof(a));
	a.link_create.prog_fd = prog;
	a.link_create.attach_type = BPF_TRACE_KPROBE_MULTI;
	a.link_create.kprobe_multi.syms = (uintptr_t)names;
	a.link_create.kprobe_multi.cnt = n;
	t0 = now_us();
	link = bpf(BPF_LINK_CREATE, &a);
	t_attach = now_us() - t0;
	if (link < 0) {
		printf("bpf_scale: kprobe_multi link over %ld functions: %s\n", n, strerror(errno));
		return 1;
	}
	if (run(cmd))
		return 1;
	runs = run_cnt(prog);
	t0 = now_us();
	close(link);
	t_detach = now_us() - t0;
	printf("bpf_scale: kmulti %ld functions: attach %lld us, detach %lld us, runs %lld\n", n,
	       t_attach, t_detach, runs);
	return 0;
}

static int fentry(char **names, long nr, long n, const char *cmd)
{
	int *prog = calloc(n, sizeof(int)), *link = calloc(n, sizeof(int));
	long long t0, t_attach, t_detach, runs = 0;
	long i, k = 0, skipped = 0;

	if (!prog || !link || read_btf())
		return 1;
	for (i = 0; i < nr && k < n; i++) {
		int id = btf_func_id(names[i]);

		if (id < 0) {
			skipped++;
			continue;
		}
		prog[k] = load_return0("bpf_scale", BPF_PROG_TYPE_TRACING, BPF_TRACE_FENTRY, id, 1);
		if (prog[k] < 0) {
			skipped++;
			continue;
		}
		names[k++] = names[i];
	}
	if (k < n) {
		printf("bpf_scale: only %ld of %ld functions loaded (%ld skipped)\n", k, n, skipped);
		return 1;
	}
	t0 = now_us();
	for (i = 0; i < n; i++) {
		union bpf_attr a;

		memset(&a, 0, sizeof(a));
		a.link_create.prog_fd = prog[i];
		a.link_create.attach_type = BPF_TRACE_FENTRY;
		link[i] = bpf(BPF_LINK_CREATE, &a);
		if (link[i] < 0) {
			printf("bpf_scale: fentry attach %ld of %ld (%s): %s\n", i + 1, n, names[i],
			       strerror(errno));
			return 1;
		}
	}
	t_attach = now_us() - t0;
	if (run(cmd))
		return 1;
	for (i = 0; i < n; i++)
		runs += run_cnt(prog[i]);
	t0 = now_us();
	for (i = 0; i < n; i++)
		close(link[i]);
	t_detach = now_us() - t0;
	printf("bpf_scale: fentry %ld functions: attach %lld us, detach %lld us, runs %lld\n", n,
	       t_attach, t_detach, runs);
	return 0;
}

int main(int argc, char **argv)
{
	struct rlimit nofile = { 1 << 16, 1 << 16 };
	union bpf_attr a;
	long nr, n;
	char **names;

	if (argc < 4 || argc > 5 || atol(argv[3]) < 1) {
		fprintf(stderr, "usage: bpf_scale kmulti|fentry LIST N [CMD]\n");
		return 2;
	}
	n = atol(argv[3]);
	names = read_list(argv[2], &nr);
	if (!names)
		return 1;
	if (nr < n) {
		printf("bpf_scale: %s has %ld functions, fewer than %ld\n", argv[2], nr, n);
		return 1;
	}
	/* Two descriptors (program, link) per fentry function. */
	if (setrlimit(RLIMIT_NOFILE, &nofile)) {
		perror("setrlimit");
		return 1;
	}
	memset(&a, 0, sizeof(a));
	a.enable_stats.type = BPF_STATS_RUN_TIME;
	if (bpf(BPF_ENABLE_STATS, &a) < 0) {
		perror("BPF_ENABLE_STATS");
		return 1;
	}
	if (!strcmp(argv[1], "kmulti"))
		return kmulti(names, n, argc > 4 ? argv[4] : NULL);
	if (!strcmp(argv[1], "fentry"))
		return fentry(names, nr, n, argc > 4 ? argv[4] : NULL);
	fprintf(stderr, "bpf_scale: unknown kind %s\n", argv[1]);
	return 2;
}
