#!/bin/sh
# perf's function event: perf_event_open() of ftrace:function on this task
# with the filter "ip == FUNC" registers an ftrace_ops of perf's own with
# FUNC as its filter. perf_fn reads /proc/version 100 times with pread()
# (one vfs_read() each): vfs_read counts exactly 100, vfs_write 0.
fail() { echo "perf-function: $*"; exit 1; }
[ -f /sys/kernel/tracing/events/ftrace/function/id ] || { echo "no ftrace:function event"; exit 4; }
n=$(perf_fn vfs_read 100) || fail "perf_fn vfs_read failed"
[ "$n" = 100 ] || fail "vfs_read counted $n times, not 100"
n=$(perf_fn vfs_write 100) || fail "perf_fn vfs_write failed"
[ "$n" = 0 ] || fail "vfs_write counted $n times, not 0"
[ "$(wc -l < /sys/kernel/tracing/enabled_functions)" -eq 0 ] ||
	fail "enabled_functions not empty: $(head -3 /sys/kernel/tracing/enabled_functions)"
echo "perf-function: 100 vfs_read calls counted, no vfs_write"
