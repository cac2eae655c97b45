// SPDX-License-Identifier: GPL-2.0
/*
 * perf_fn FUNC N: count, with perf's ftrace:function event filtered by
 * "ip == FUNC" on this task, the calls of FUNC while the task reads
 * /proc/version N times with pread() (one vfs_read() each), and print the
 * count. perf registers an ftrace_ops of its own for the event, with the
 * filter turned into the ops' filter.
 */
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct perf_event_attr attr;
	char buf[4096], filter[256];
	uint64_t count;
	int fd, id, f, i, n;
	FILE *idf;

	if (argc != 3) {
		fprintf(stderr, "usage: perf_fn FUNC N\n");
		return 2;
	}
	n = atoi(argv[2]);
	idf = fopen("/sys/kernel/tracing/events/ftrace/function/id", "r");
	if (!idf || fscanf(idf, "%d", &id) != 1) {
		perror("events/ftrace/function/id");
		return 1;
	}
	fclose(idf);
	memset(&attr, 0, sizeof(attr));
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_TRACEPOINT;
	attr.config = id;
	attr.disabled = 1;
	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0) {
		perror("perf_event_open");
		return 1;
	}
	snprintf(filter, sizeof(filter), "ip == %s", argv[1]);
	if (ioctl(fd, PERF_EVENT_IOC_SET_FILTER, filter) < 0) {
		perror("PERF_EVENT_IOC_SET_FILTER");
		return 1;
	}
	f = open("/proc/version", O_RDONLY);
	if (f < 0) {
		perror("/proc/version");
		return 1;
	}
	ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
	for (i = 0; i < n; i++)
		if (pread(f, buf, sizeof(buf), 0) <= 0)
			return 1;
	ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
	if (read(fd, &count, sizeof(count)) != sizeof(count)) {
		perror("read");
		return 1;
	}
	printf("%llu\n", (unsigned long long)count);
	return 0;
}
