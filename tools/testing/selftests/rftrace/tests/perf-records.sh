#!/bin/sh
# What the core does to kernel text is announced to perf as the C core
# announces it: a tracing instance's function tracer on one function gets a
# trampoline of its own, which perf learns of by a KSYMBOL record named
# ftrace_trampoline (at the address kallsyms lists) and a TEXT_POKE record
# of its body; the function's call site going from its NOP to a call and
# back gives one TEXT_POKE record each way (what an Intel PT decoder needs);
# when the tracer stops, the trampoline's KSYMBOL unregister record comes.
# perf's TEXT_POKE records and per-ops trampolines exist on x86_64 only
# (6.12 C announces no arm64 text change to perf either).
[ "$(uname -m)" = aarch64 ] && { echo "no TEXT_POKE records or ftrace trampolines on arm64"; exit 4; }
T=/sys/kernel/tracing
I=$T/instances/perfrec
fail() {
	echo "perf-records: $*"
	cat /tmp/pr.out /tmp/pr.kallsyms 2> /dev/null
	echo nop > $I/current_tracer 2> /dev/null
	rmdir $I 2> /dev/null
	exit 1
}
site=$(awk '$2 == "vfs_read" { print $1; exit }' $T/available_filter_functions_addrs)
[ -n "$site" ] || fail "vfs_read not in available_filter_functions_addrs"
mkdir $I || fail "cannot make an instance"
perf_records "echo vfs_read > $I/set_ftrace_filter && echo function > $I/current_tracer &&
	grep ' ftrace_trampoline' /proc/kallsyms > /tmp/pr.kallsyms; cat /proc/version > /dev/null &&
	echo nop > $I/current_tracer" > /tmp/pr.out || fail "perf_records failed"
rmdir $I || fail "cannot remove the instance"
nop=0f1f440000
grep -q "^TEXT_POKE $site $nop e8[0-9a-f]\{8\}\$" /tmp/pr.out ||
	fail "no TEXT_POKE record of vfs_read's site ($site) from NOP to call"
grep -q "^TEXT_POKE $site e8[0-9a-f]\{8\} $nop\$" /tmp/pr.out ||
	fail "no TEXT_POKE record of vfs_read's site ($site) from call back to NOP"
tramp=
for a in $(awk '$1 == "KSYMBOL" && $5 == "register" && $6 == "ftrace_trampoline" && $4 == 2 { print $2 }' /tmp/pr.out); do
	grep -q "^$a " /tmp/pr.kallsyms && tramp=$a
done
[ -n "$tramp" ] || fail "no KSYMBOL record of an out-of-line ftrace_trampoline that kallsyms listed"
grep -q "^TEXT_POKE $tramp  [0-9a-f]" /tmp/pr.out || fail "no TEXT_POKE record of the trampoline's body at $tramp"
grep -q "^KSYMBOL $tramp [0-9]* 2 unregister ftrace_trampoline\$" /tmp/pr.out ||
	fail "no KSYMBOL unregister record of the trampoline at $tramp"
echo "perf-records: trampoline $tramp announced and withdrawn, site $site poked both ways"
