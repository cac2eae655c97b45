#!/bin/sh
# A site that several ops want calls the trampoline of the group of
# those ops, which calls each member in turn (Rust core: groups.rs and
# the group calls of trampolines_64.S). Two groups on vfs_read: the
# function tracers of the top instance and of a second one (the copy of
# ftrace_caller), then the top one's and a kprobe (the copy of
# ftrace_regs_caller, full pt_regs). In each, every member runs once per
# call, and a stack trace taken in a member's callback (func_stack_trace
# in the second member's) unwinds through the group calls into the
# traced function's callers: the ORC unwinder reads them with the
# template's unwind data.
# arm64's groups are a callback (no trampoline to unwind through: the
# stack traces of tests/graph-stacktrace.sh cover ftrace_caller), and its
# second group needs a kprobe through the core (no KPROBES_ON_FTRACE).
[ "$(uname -m)" = aarch64 ] && { echo "no group trampolines and no KPROBES_ON_FTRACE on arm64"; exit 4; }
T=/sys/kernel/tracing
I=$T/instances/rftgrp
F=vfs_read
cleanup() {
	echo 0 > $T/options/func_stack_trace
	[ -d $I ] && echo 0 > $I/options/func_stack_trace && echo nop > $I/current_tracer
	echo nop > $T/current_tracer
	echo > $T/set_ftrace_filter
	echo > $T/kprobe_events
	[ -d $I ] && rmdir $I
	echo 1 > $T/tracing_on
}
fail() {
	echo "group-unwind: $*"
	cat /tmp/gu.frames 2> /dev/null
	cleanup
	exit 1
}
frames() { # trace file
	awk '/<stack trace>/ { s = 1; next } s && /^ => / { print $2; next } s { exit }' "$1" > /tmp/gu.frames
	[ -s /tmp/gu.frames ] || fail "$2: no stack trace in the trace"
	grep -q '^ksys_read' /tmp/gu.frames || fail "$2: ksys_read missing from the stack trace"
	grep -q '^do_syscall_64' /tmp/gu.frames || fail "$2: do_syscall_64 missing from the stack trace"
}
hits() { # trace file: entries of F
	grep -c " $F <-" "$1"
}
echo 0 > $T/tracing_on
echo > $T/trace
mkdir $I || fail "cannot make an instance"
echo > $I/trace
echo $F > $T/set_ftrace_filter || fail "cannot filter $F"
echo $F > $I/set_ftrace_filter || fail "cannot filter $F in the instance"
echo function > $T/current_tracer || fail "cannot select function"
echo function > $I/current_tracer || fail "cannot select function in the instance"
grep -q "^$F (2) " $T/enabled_functions || fail "two function tracers: $(grep "^$F " $T/enabled_functions)"
echo 1 > $I/options/func_stack_trace || fail "no func_stack_trace option in the instance"
echo 1 > $T/tracing_on
echo 1 > $I/tracing_on
for i in 1 2 3 4 5; do read -r line < /proc/version; done
echo 0 > $T/tracing_on
echo 0 > $I/tracing_on
top=$(hits $T/trace)
ins=$(grep -c "<stack trace>" $I/trace)
[ "$top" -ge 5 ] || fail "two function tracers: $top entries of $F in the top trace"
[ "$ins" -ge 5 ] || fail "two function tracers: $ins stack traces in the instance"
frames $I/trace "two function tracers"
f1=$(tr '\n' ' ' < /tmp/gu.frames)
# A pid filter on the top tracer changes its callback while the group
# runs: the group calls the new one (the filter's), and back.
echo > $T/trace
echo > $I/trace
echo 99999 > $T/set_ftrace_pid || fail "cannot set a pid filter"
echo 1 > $T/tracing_on
echo 1 > $I/tracing_on
for i in 1 2 3 4 5; do read -r line < /proc/version; done
echo 0 > $T/tracing_on
echo 0 > $I/tracing_on
echo > $T/set_ftrace_pid
[ "$(hits $T/trace)" -eq 0 ] || fail "pid filter of another task: $(hits $T/trace) entries of $F in the top trace"
[ "$(grep -c "<stack trace>" $I/trace)" -ge 5 ] || fail "pid filter on top: the instance lost its entries"
echo > $T/trace
echo 1 > $T/tracing_on
read -r line < /proc/version
echo 0 > $T/tracing_on
[ "$(hits $T/trace)" -ge 1 ] || fail "pid filter gone: no entries of $F in the top trace"
echo 0 > $I/options/func_stack_trace
echo nop > $I/current_tracer
rmdir $I
echo > $T/trace
echo "p:rftgu $F" > $T/kprobe_events || fail "cannot define the kprobe"
echo 1 > $T/events/kprobes/rftgu/enable || fail "cannot enable the kprobe"
grep -q "^$F (2) R" $T/enabled_functions || fail "function + kprobe: $(grep "^$F " $T/enabled_functions)"
echo 1 > $T/options/func_stack_trace
echo 1 > $T/tracing_on
for i in 1 2 3 4 5; do read -r line < /proc/version; done
echo 0 > $T/tracing_on
kp=$(grep -c "rftgu: ($F" $T/trace)
[ "$kp" -ge 5 ] || fail "function + kprobe: $kp kprobe hits"
[ "$(grep -c "<stack trace>" $T/trace)" -ge 5 ] || fail "function + kprobe: no function entries with stacks"
frames $T/trace "function + kprobe"
f2=$(tr '\n' ' ' < /tmp/gu.frames)
echo 0 > $T/events/kprobes/rftgu/enable
cleanup
echo "group-unwind: two tracers: $top entries, $ins stacks ($f1); function + kprobe: $kp hits ($f2)"
