#!/bin/sh
# Debian's perf (linux-perf) in the guest, as a user runs it: perf ftrace
# (the function and function_graph tracers with a filter, on the workload
# alone), perf probe add/record/del (a kprobe event on a function entry:
# an IPMODIFY full-regs ops of the core) and perf stat of ftrace:function
# with an ip filter (perf's own ftrace_ops). The workload is busybox dd
# copying 100 single bytes of /proc/version to /dev/null: exactly 100
# vfs_read() calls. Each check reads what perf printed.
name=tools-perf
fail() { echo "$name: $*"; exit 1; }
command -v perf > /dev/null || { echo "$name: no perf in this guest (TOOLS=1)"; exit 4; }
T=/sys/kernel/tracing
dd100='dd if=/proc/version of=/dev/null bs=1 count=100'
echo 0 > /proc/sys/kernel/kptr_restrict
echo -1 > /proc/sys/kernel/perf_event_paranoid

# perf ftrace prints the trace on its standard output, in the blocks it
# reads from trace_pipe; dd, which inherits perf's standard error, prints
# its "records in/out" lines there. With both in one pipe, dd's lines
# came out in the middle of a trace line ("vfs_re100+0 records in ...
# ad() {", 2 runs of 40). The trace is read from standard output alone;
# standard error goes to a file that a failure shows.
err=/tmp/tools-perf.err
perf_ftrace() { perf ftrace "$@" -- $dd100 2> $err; }
# perf ftrace, the function tracer on vfs_read for dd alone.
out=$(perf_ftrace -T vfs_read) || fail "perf ftrace: $out $(cat $err)"
# Counted in the output with its line breaks taken out, in case a line
# still comes in two pieces.
joined() { echo "$out" | tr -d '\n'; }
n=$(joined | grep -o 'vfs_read <-' | wc -l)
[ "$n" = 100 ] || fail "perf ftrace -T vfs_read printed $n vfs_read lines, not 100: $(echo "$out" | head -5)"
# Every line from one task, dd (its name may print as <...>): the pids of
# every "COMM-PID [CPU]" of the output.
pids=$(joined | grep -oE -- '-[0-9]+ +\[[0-9]+\]' | sed 's/^-\([0-9]*\).*/\1/' | sort -u)
[ -n "$pids" ] || fail "perf ftrace printed no task: $(echo "$out" | head -5)"
[ "$(echo "$pids" | wc -l)" = 1 ] || fail "perf ftrace traced more than one task: $pids"

# perf ftrace, function_graph: vfs_read and what it calls, depth 2.
out=$(perf_ftrace -G vfs_read --graph-opts depth=2) || fail "perf ftrace -G: $out $(cat $err)"
# An entry prints as "vfs_read() {" with what it called below it, or as
# "vfs_read();" when nothing it called was traced.
n=$(joined | grep -oE 'vfs_read\(\) \{|vfs_read\(\);' | wc -l)
[ "$n" = 100 ] || fail "perf ftrace -G vfs_read printed $n vfs_read entries, not 100: $(echo "$out" | head -8)"
echo "$out" | grep -q 'rw_verify_area\|seq_read\|proc_reg_read' ||
	fail "perf ftrace -G vfs_read shows nothing vfs_read calls: $(echo "$out" | head -8)"
[ "$(wc -l < $T/enabled_functions)" = 0 ] || fail "sites left enabled after perf ftrace: $(head -3 $T/enabled_functions)"

# perf probe: add a kprobe event, record it for dd, delete it.
out=$(perf probe -a vfs_read 2>&1) || fail "perf probe -a vfs_read: $out"
echo "$out" | grep -q 'probe:vfs_read' || fail "perf probe -a vfs_read: $out"
grep -q '^p:probe/vfs_read ' $T/kprobe_events || fail "no probe:vfs_read in kprobe_events: $(cat $T/kprobe_events)"
perf record -q -e probe:vfs_read -o /tmp/perf-probe.data -- $dd100 > /dev/null 2>&1 ||
	fail "perf record -e probe:vfs_read failed"
n=$(perf script -i /tmp/perf-probe.data 2>/dev/null | grep -c ' dd .*probe:vfs_read')
[ "$n" = 100 ] || fail "perf record -e probe:vfs_read recorded $n dd hits, not 100"
out=$(perf probe -d probe:vfs_read 2>&1) || fail "perf probe -d: $out"
echo "$out" | grep -q 'Removed event: probe:vfs_read' || fail "perf probe -d: $out"
grep -q 'vfs_read' $T/kprobe_events && fail "probe:vfs_read still in kprobe_events"

# perf stat of ftrace:function, filtered to one function.
out=$(perf stat -x, -e ftrace:function --filter 'ip == vfs_read' -- $dd100 2>&1) || fail "perf stat: $out"
n=$(echo "$out" | awk -F, '$3 == "ftrace:function" { print $1 }')
[ "$n" = 100 ] || fail "perf stat -e ftrace:function --filter 'ip == vfs_read' counted '$n', not 100: $out"
[ "$(wc -l < $T/enabled_functions)" = 0 ] || fail "sites left enabled after perf: $(head -3 $T/enabled_functions)"
echo "$name: perf ftrace -T/-G vfs_read 100/100, perf probe add/record (100 hits)/del, perf stat ftrace:function 100"
