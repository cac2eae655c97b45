#!/bin/sh
# The function tracer on one function runs through a trampoline made for
# its ops (enabled_functions: "tramp:"). Then:
# - /proc/kallsyms lists that trampoline as the C core names it,
#   "ftrace_trampoline [__builtin__ftrace]", at the address
#   enabled_functions shows, and no longer once the tracer stops;
# - a stack trace taken inside the callback (func_stack_trace) unwinds
#   through the trampoline into the traced function's callers: the ORC
#   unwinder finds the trampoline's unwind data through
#   ftrace_ops_trampoline(); without it the trace ends at the trampoline.
# On arm64 there is no trampoline of the ops: the site's literal names
# it, and the stack trace unwinds through ftrace_caller's frame records.
T=/sys/kernel/tracing
# The system call entry every such trace goes through.
sysentry=do_syscall_64
[ "$(uname -m)" = aarch64 ] && sysentry=el0_svc
F=vfs_read
cleanup() {
	echo 0 > $T/options/func_stack_trace
	echo nop > $T/current_tracer
	echo > $T/set_ftrace_filter
	echo 1 > $T/tracing_on
}
fail() {
	echo "trampoline-unwind: $*"
	cat /tmp/tu.frames 2> /dev/null
	cleanup
	exit 1
}
echo 0 > $T/tracing_on
echo > $T/trace
echo $F > $T/set_ftrace_filter || fail "cannot filter $F"
echo function > $T/current_tracer || fail "cannot select function"
if [ "$(uname -m)" = aarch64 ]; then
	# arm64 makes no trampolines: the site's ops literal names the ops,
	# which the shared ftrace_caller calls (C's " O" and "ops:").
	tramp=none
	grep -q "^$F (1) .* O .*ops: " $T/enabled_functions ||
		fail "$F's literal does not name its ops: $(cat $T/enabled_functions)"
else
	tramp=$(sed -n "s/^$F .*tramp: 0x\([0-9a-f]*\).*/\1/p" $T/enabled_functions)
	[ -n "$tramp" ] || fail "$F has no trampoline of its ops: $(cat $T/enabled_functions)"
	syms=$(grep -c 'ftrace_trampoline[[:space:]]*\[__builtin__ftrace\]' /proc/kallsyms)
	[ "$syms" -ge 1 ] || fail "no ftrace_trampoline [__builtin__ftrace] in /proc/kallsyms"
	grep -q "^0*$tramp t ftrace_trampoline[[:space:]]*\[__builtin__ftrace\]" /proc/kallsyms ||
		fail "kallsyms does not list the trampoline at $tramp: $(grep __builtin__ftrace /proc/kallsyms)"
fi
echo 1 > $T/options/func_stack_trace || fail "no func_stack_trace option"
echo 1 > $T/tracing_on
read -r line < /proc/version
echo 0 > $T/tracing_on
awk '/<stack trace>/ { s = 1; next } s && /^ => / { print $2; next } s { exit }' $T/trace > /tmp/tu.frames
cleanup
[ -s /tmp/tu.frames ] || fail "no stack trace in the trace"
grep -q '^ksys_read' /tmp/tu.frames || fail "ksys_read missing from the stack trace"
grep -q "^$sysentry" /tmp/tu.frames || fail "$sysentry missing from the stack trace"
left=$(grep -c 'ftrace_trampoline[[:space:]]*\[__builtin__ftrace\]' /proc/kallsyms)
# (The C core may keep a freed trampoline listed a while: checked on Rust.)
[ "$left" -eq 0 ] || [ "$CORE" != rust ] || fail "$left trampolines still in /proc/kallsyms after the tracer stopped"
echo "trampoline-unwind: tramp $tramp in kallsyms; frames $(tr '\n' ' ' < /tmp/tu.frames)"
