// SPDX-License-Identifier: GPL-2.0
/*
 * fail_nth N OP ARGS: run one operation with the N-th fault-injectable
 * allocation of this task made to fail (/proc/self/fail-nth), and print
 *	injected=1|0 rc=ERRNO
 * injected=0 means the operation made fewer than N allocations: a walk
 * N = 1, 2, ... has then visited every allocation of the operation.
 * ERRNO is 0 when the operation succeeded. Operations:
 *	write FILE STRING	open FILE (truncating), write STRING, close
 *	append FILE STRING	the same, appending
 *	insmod MODULE [PARAMS]	finit_module()
 *	rmmod NAME		delete_module()
 * Everything the helper itself needs (the fail-nth file, the module's
 * file) is opened before the count starts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static int op_write(const char *file, const char *s, int flags)
{
	int fd = open(file, O_WRONLY | flags);

	if (fd < 0)
		return errno;
	if (write(fd, s, strlen(s)) < 0) {
		int e = errno;

		close(fd);
		return e;
	}
	return close(fd) < 0 ? errno : 0;
}

int main(int argc, char **argv)
{
	char buf[32] = "";
	int ctl, fd = -1, rc;
	ssize_t n;

	if (argc < 4) {
		fprintf(stderr, "usage: fail_nth N write|append|insmod|rmmod ARGS\n");
		return 2;
	}
	ctl = open("/proc/self/fail-nth", O_RDWR);
	if (ctl < 0) {
		perror("/proc/self/fail-nth");
		return 2;
	}
	if (!strcmp(argv[2], "insmod")) {
		fd = open(argv[3], O_RDONLY);
		if (fd < 0) {
			perror(argv[3]);
			return 2;
		}
	}
	if (pwrite(ctl, argv[1], strlen(argv[1]), 0) < 0) {
		perror("fail-nth");
		return 2;
	}
	if (!strcmp(argv[2], "write") && argc == 5)
		rc = op_write(argv[3], argv[4], O_TRUNC);
	else if (!strcmp(argv[2], "append") && argc == 5)
		rc = op_write(argv[3], argv[4], O_APPEND);
	else if (!strcmp(argv[2], "insmod"))
		rc = syscall(SYS_finit_module, fd, argc > 4 ? argv[4] : "", 0) ? errno : 0;
	else if (!strcmp(argv[2], "rmmod"))
		rc = syscall(SYS_delete_module, argv[3], O_NONBLOCK) ? errno : 0;
	else
		rc = -1;
	n = pread(ctl, buf, sizeof(buf) - 1, 0);
	if (pwrite(ctl, "0", 1, 0) < 0 || n <= 0 || rc < 0) {
		fprintf(stderr, "fail_nth: bad operation or fail-nth file\n");
		return 2;
	}
	printf("injected=%d rc=%d\n", atoi(argv[1]) > 0 && atoi(buf) == 0, rc);
	return 0;
}
