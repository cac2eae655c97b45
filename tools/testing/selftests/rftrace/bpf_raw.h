/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The raw bpf() calls the BPF test loaders share (bpf_tramp.c,
 * bpf_scale.c): the system call, loading a "return 0" program, the walk
 * of vmlinux's BTF types, a program's run count (BPF_ENABLE_STATS) and a
 * clock.
 */
#ifndef RFTRACE_BPF_RAW_H
#define RFTRACE_BPF_RAW_H

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/btf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int bpf(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/* The size of the data that follows a BTF type of this kind and vlen. */
static long btf_extra(unsigned int kind, unsigned int vlen)
{
	switch (kind) {
	case BTF_KIND_INT:
	case BTF_KIND_VAR:
	case BTF_KIND_DECL_TAG:
		return 4;
	case BTF_KIND_ARRAY:
		return sizeof(struct btf_array);
	case BTF_KIND_STRUCT:
	case BTF_KIND_UNION:
		return vlen * sizeof(struct btf_member);
	case BTF_KIND_ENUM:
		return vlen * sizeof(struct btf_enum);
	case BTF_KIND_FUNC_PROTO:
		return vlen * sizeof(struct btf_param);
	case BTF_KIND_DATASEC:
		return vlen * sizeof(struct btf_var_secinfo);
	case BTF_KIND_ENUM64:
		return vlen * 12;
	case BTF_KIND_PTR:
	case BTF_KIND_FWD:
	case BTF_KIND_TYPEDEF:
	case BTF_KIND_VOLATILE:
	case BTF_KIND_CONST:
	case BTF_KIND_RESTRICT:
	case BTF_KIND_FUNC:
	case BTF_KIND_FLOAT:
	case BTF_KIND_TYPE_TAG:
		return 0;
	}
	return -1;
}

static long long run_cnt(int prog)
{
	struct bpf_prog_info info;
	union bpf_attr a;

	memset(&info, 0, sizeof(info));
	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = prog;
	a.info.info_len = sizeof(info);
	a.info.info = (uintptr_t)&info;
	if (bpf(BPF_OBJ_GET_INFO_BY_FD, &a) < 0)
		return -1;
	return info.run_cnt;
}

static long long now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000LL + t.tv_nsec / 1000;
}

/*
 * Loads the two-instruction program "return 0" of `type` for `at` (on the
 * BTF function `btf_id`, or 0). Unless `quiet`, asks for the verifier's
 * log and prints it, after "<who>: BPF_PROG_LOAD", when the load fails.
 * Returns the program's fd, or -1.
 */
static int load_return0(const char *who, enum bpf_prog_type type, enum bpf_attach_type at,
			int btf_id, int quiet)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	static char log[4096];
	union bpf_attr a;
	int fd;

	memset(&a, 0, sizeof(a));
	a.prog_type = type;
	a.expected_attach_type = at;
	a.insns = (uintptr_t)insns;
	a.insn_cnt = 2;
	a.license = (uintptr_t)"GPL";
	a.attach_btf_id = btf_id;
	if (!quiet) {
		log[0] = 0;
		a.log_buf = (uintptr_t)log;
		a.log_size = sizeof(log);
		a.log_level = 1;
	}
	fd = bpf(BPF_PROG_LOAD, &a);
	if (fd < 0 && !quiet)
		fprintf(stderr, "%s: BPF_PROG_LOAD: %s\n%s\n", who, strerror(errno), log);
	return fd;
}

/*
 * Reads vmlinux's BTF (once: kept in a static buffer, so the names passed
 * stay valid) and calls fn(name, id, data) for each FUNC type, in id
 * order, until it returns non-zero, which is then returned; 0 when every
 * FUNC was seen, -1 when the BTF cannot be read.
 */
static int btf_each_func(int (*fn)(const char *name, int id, void *data), void *data)
{
	static char buf[64 << 20];
	static long n;
	const struct btf_header *h = (const void *)buf;
	const char *types, *strs;
	long r, off;
	int fd, id = 1;

	if (!n) {
		fd = open("/sys/kernel/btf/vmlinux", O_RDONLY);
		if (fd < 0) {
			perror("/sys/kernel/btf/vmlinux");
			return -1;
		}
		while ((r = read(fd, buf + n, sizeof(buf) - n)) > 0)
			n += r;
		close(fd);
	}
	if (n < (long)sizeof(*h) || h->magic != BTF_MAGIC) {
		fprintf(stderr, "no BTF in /sys/kernel/btf/vmlinux\n");
		return -1;
	}
	types = buf + h->hdr_len + h->type_off;
	strs = buf + h->hdr_len + h->str_off;
	for (off = 0; off < h->type_len; id++) {
		const struct btf_type *t = (const void *)(types + off);
		unsigned int kind = BTF_INFO_KIND(t->info);
		long extra = btf_extra(kind, BTF_INFO_VLEN(t->info));
		int ret;

		if (extra < 0) {
			fprintf(stderr, "unknown BTF kind %u\n", kind);
			return -1;
		}
		if (kind == BTF_KIND_FUNC) {
			ret = fn(strs + t->name_off, id, data);
			if (ret)
				return ret;
		}
		off += sizeof(*t) + extra;
	}
	return 0;
}

#endif
