#!/bin/sh
# An IPMODIFY ops redirects a function (the trampoline returns to the
# regs->ip the callback set) and a second one on it gets -EBUSY; the test
# module checks both at load and refuses to load otherwise.
mod=$(find /lib/modules -name rftrace_ipmodify_test.ko | head -1)
# arm64 has no DYNAMIC_FTRACE_WITH_REGS, so no IPMODIFY (the module
# needs it).
[ "$(uname -m)" = aarch64 ] && { echo "no IPMODIFY on arm64 (no DYNAMIC_FTRACE_WITH_REGS)"; exit 4; }
[ -n "$mod" ] || { echo "rftrace_ipmodify_test.ko not built"; exit 1; }
# Count the module's lines rather than clearing the log: the harness reads
# the boot selftests from it.
seen=$(dmesg | grep -c 'rftrace_ipmodify_test: PASS')
if ! insmod "$mod"; then
	dmesg | grep rftrace_ipmodify_test | tail -3
	exit 1
fi
dmesg | grep rftrace_ipmodify_test | tail -2
[ "$(dmesg | grep -c 'rftrace_ipmodify_test: PASS')" -gt "$seen" ] || exit 1
rmmod rftrace_ipmodify_test
