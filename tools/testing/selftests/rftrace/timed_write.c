// SPDX-License-Identifier: GPL-2.0
/*
 * timed_write FILE STRING: write STRING to FILE in one write() and print
 * how long the write took, in microseconds of CLOCK_MONOTONIC. Used by the
 * harness to time `echo function > current_tracer`.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec a, b;
	long long us;
	ssize_t n;
	int fd;

	if (argc != 3) {
		fprintf(stderr, "usage: timed_write FILE STRING\n");
		return 2;
	}
	fd = open(argv[1], O_WRONLY | O_TRUNC);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	n = write(fd, argv[2], strlen(argv[2]));
	clock_gettime(CLOCK_MONOTONIC, &b);
	if (n < 0) {
		perror("write");
		return 1;
	}
	close(fd);
	us = (b.tv_sec - a.tv_sec) * 1000000LL + (b.tv_nsec - a.tv_nsec) / 1000;
	printf("%lld\n", us);
	return 0;
}
