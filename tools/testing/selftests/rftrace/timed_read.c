// SPDX-License-Identifier: GPL-2.0
/*
 * timed_read FILE: open FILE, read it to its end, 64 KiB per read() as
 * cat does, and close it; print how long that took, in microseconds of
 * CLOCK_MONOTONIC, and the bytes read. Used by the harness to time the
 * tracefs listings.
 */
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static char buf[65536];

int main(int argc, char **argv)
{
	struct timespec a, b;
	long long us, total = 0;
	ssize_t n;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: timed_read FILE\n");
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		total += n;
	close(fd);
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (n < 0) {
		perror("read");
		return 1;
	}
	us = (b.tv_sec - a.tv_sec) * 1000000LL + (b.tv_nsec - a.tv_nsec) / 1000;
	printf("%lld %lld\n", us, total);
	return 0;
}
