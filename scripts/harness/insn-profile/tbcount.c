// SPDX-License-Identifier: GPL-2.0
/*
 * A QEMU TCG plugin for scripts/harness/insn-profile.sh: counts, for
 * every translation block of kernel text, how many times it ran, and
 * writes "start-address instructions executions" lines at exit. Under
 * -icount shift=0 guest time is an instruction count, so this is where
 * the benchmark's time goes, exactly.
 *
 * Only the few entry points used here are declared: QEMU resolves them
 * in its own binary when it loads the plugin (plugin API version 2, which
 * QEMU 8 to 10 accept).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_info;

typedef void (*tb_trans_cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb);
typedef void (*vcpu_udata_cb)(unsigned int vcpu_index, void *userdata);
typedef void (*udata_cb)(qemu_plugin_id_t id, void *userdata);

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id, tb_trans_cb cb);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);
/* The last argument's enum: 0 is QEMU_PLUGIN_CB_NO_REGS. */
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb, vcpu_udata_cb cb,
					  int flags, void *userdata);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id, udata_cb cb, void *userdata);

__attribute__((visibility("default"))) int qemu_plugin_version = 2;

struct block {
	struct block *next;
	uint64_t start;
	uint64_t runs;
	uint32_t insns;
};

static struct block *blocks;
static const char *out_path = "tbcount.out";

/* Kernel text: the upper half of the address space. */
#define KERNEL_HALF 0xffff800000000000ULL

static void ran(unsigned int vcpu, void *data)
{
	(void)vcpu;
	((struct block *)data)->runs++;
}

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	struct block *b;

	(void)id;
	if (qemu_plugin_tb_vaddr(tb) < KERNEL_HALF)
		return;
	b = calloc(1, sizeof(*b));
	if (!b)
		return;
	b->start = qemu_plugin_tb_vaddr(tb);
	b->insns = qemu_plugin_tb_n_insns(tb);
	b->next = blocks;
	blocks = b;
	qemu_plugin_register_vcpu_tb_exec_cb(tb, ran, 0, b);
}

static void at_exit(qemu_plugin_id_t id, void *data)
{
	FILE *f = fopen(out_path, "w");
	struct block *b;

	(void)id;
	(void)data;
	if (!f)
		return;
	for (b = blocks; b; b = b->next)
		if (b->runs)
			fprintf(f, "%llx %u %llu\n", (unsigned long long)b->start, b->insns,
				(unsigned long long)b->runs);
	fclose(f);
}

__attribute__((visibility("default")))
int qemu_plugin_install(qemu_plugin_id_t id, const struct qemu_info *info, int argc, char **argv)
{
	(void)info;
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			out_path = argv[i] + 4;
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
