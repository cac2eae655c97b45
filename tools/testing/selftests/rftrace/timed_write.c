// SPDX-License-Identifier: GPL-2.0
/*
 * timed_write FILE STRING: write STRING to FILE in one write() and print
 * how long the write took, in microseconds of CLOCK_MONOTONIC. Used by the
 * harness to time `echo function > current_tracer`.
 *
 * timed_write -f LIST STRING: the same for every file named in LIST (one
 * path a line), one after the other, each opened, written and closed;
 * prints the microseconds of all of it (the kprobe rows of make bench).
 *
 * timed_write -x PROGRAM ARG...: run PROGRAM and print how long it took
 * until it exited, in microseconds (insmod and rmmod in make bench).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long us_since(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a->tv_sec) * 1000000LL + (b.tv_nsec - a->tv_nsec) / 1000;
}

static int write_one(const char *path, const char *s)
{
	ssize_t n;
	int fd;

	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0) {
		perror(path);
		return -1;
	}
	n = write(fd, s, strlen(s));
	if (n < 0) {
		perror(path);
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

static int write_list(const char *list, const char *s)
{
	struct timespec a;
	char line[4096];
	FILE *f;
	int n = 0;

	f = fopen(list, "r");
	if (!f) {
		perror(list);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = 0;
		if (!line[0])
			continue;
		if (write_one(line, s))
			return 1;
		n++;
	}
	printf("%lld\n", us_since(&a));
	fclose(f);
	return n ? 0 : 1;
}

static int run(char **argv)
{
	struct timespec a;
	int status;
	pid_t pid;

	clock_gettime(CLOCK_MONOTONIC, &a);
	pid = fork();
	if (pid < 0) {
		perror("fork");
		return 1;
	}
	if (!pid) {
		execvp(argv[0], argv);
		perror(argv[0]);
		_exit(127);
	}
	if (waitpid(pid, &status, 0) < 0) {
		perror("waitpid");
		return 1;
	}
	printf("%lld\n", us_since(&a));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
	struct timespec a;
	long long us;
	ssize_t n;
	int fd;

	if (argc >= 3 && !strcmp(argv[1], "-x"))
		return run(argv + 2);
	if (argc == 4 && !strcmp(argv[1], "-f"))
		return write_list(argv[2], argv[3]);
	if (argc != 3) {
		fprintf(stderr, "usage: timed_write FILE STRING | -f LIST STRING | -x PROGRAM ARG...\n");
		return 2;
	}
	fd = open(argv[1], O_WRONLY | O_TRUNC);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	n = write(fd, argv[2], strlen(argv[2]));
	us = us_since(&a);
	if (n < 0) {
		perror("write");
		return 1;
	}
	close(fd);
	printf("%lld\n", us);
	return 0;
}
