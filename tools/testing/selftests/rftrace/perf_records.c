// SPDX-License-Identifier: GPL-2.0
/*
 * perf_records CMD: run "sh -c CMD" while a perf side-band event on every
 * CPU collects KSYMBOL and TEXT_POKE records, then print the records that
 * came, one a line:
 *
 *   KSYMBOL <addr> <len> <type> <register|unregister> <name>
 *   TEXT_POKE <addr> <old bytes> <new bytes>      (hex, no spaces)
 *
 * Used to check that the tracer core announces its trampolines and its
 * live code patching to perf as the C core does.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_CPUS 64
#define DATA_PAGES 64

struct ksymbol {
	struct perf_event_header header;
	uint64_t addr;
	uint32_t len;
	uint16_t ksym_type;
	uint16_t flags;
	char name[];
};

struct text_poke {
	struct perf_event_header header;
	uint64_t addr;
	uint16_t old_len;
	uint16_t new_len;
	uint8_t bytes[];
};

static void hex(const uint8_t *b, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		printf("%02x", b[i]);
}

/* Prints the records of one ring buffer; returns how many were lost. */
static unsigned long long drain(struct perf_event_mmap_page *meta, long page)
{
	unsigned char *data = (unsigned char *)meta + page;
	uint64_t size = (uint64_t)DATA_PAGES * page;
	uint64_t head = meta->data_head, tail = meta->data_tail;
	unsigned long long lost = 0;
	static unsigned char rec[65536];

	__sync_synchronize();
	while (tail < head) {
		struct perf_event_header *h;
		uint64_t i, off = tail % size;

		h = (struct perf_event_header *)(data + off);
		/* A record may wrap around the end of the buffer. */
		for (i = 0; i < h->size && i < sizeof(rec); i++)
			rec[i] = data[(off + i) % size];
		h = (struct perf_event_header *)rec;
		if (h->size == 0)
			break;
		if (h->type == PERF_RECORD_KSYMBOL) {
			struct ksymbol *k = (struct ksymbol *)rec;

			printf("KSYMBOL %llx %u %u %s %s\n", (unsigned long long)k->addr,
			       k->len, k->ksym_type,
			       k->flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER ?
				       "unregister" : "register",
			       k->name);
		} else if (h->type == PERF_RECORD_TEXT_POKE) {
			struct text_poke *t = (struct text_poke *)rec;

			printf("TEXT_POKE %llx ", (unsigned long long)t->addr);
			hex(t->bytes, t->old_len);
			printf(" ");
			hex(t->bytes + t->old_len, t->new_len);
			printf("\n");
		} else if (h->type == PERF_RECORD_LOST) {
			lost += ((uint64_t *)(rec + sizeof(*h)))[1];
		}
		tail += h->size;
	}
	meta->data_tail = tail;
	return lost;
}

int main(int argc, char **argv)
{
	struct perf_event_mmap_page *meta[MAX_CPUS];
	long page = sysconf(_SC_PAGESIZE);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned long long lost = 0;
	struct perf_event_attr attr;
	int fd[MAX_CPUS], cpu, rc;

	if (argc != 2) {
		fprintf(stderr, "usage: perf_records CMD\n");
		return 2;
	}
	if (ncpu > MAX_CPUS)
		ncpu = MAX_CPUS;
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_DUMMY;
	attr.ksymbol = 1;
	attr.text_poke = 1;
	for (cpu = 0; cpu < ncpu; cpu++) {
		fd[cpu] = syscall(SYS_perf_event_open, &attr, -1, cpu, -1, 0);
		if (fd[cpu] < 0) {
			perror("perf_event_open");
			return 1;
		}
		meta[cpu] = mmap(NULL, (1 + DATA_PAGES) * page, PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd[cpu], 0);
		if (meta[cpu] == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
	}
	rc = system(argv[1]);
	for (cpu = 0; cpu < ncpu; cpu++)
		lost += drain(meta[cpu], page);
	if (lost) {
		fprintf(stderr, "perf_records: %llu records lost\n", lost);
		return 1;
	}
	return rc == 0 ? 0 : 1;
}
