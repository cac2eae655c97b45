#!/bin/sh
# In-guest test runner of the harness (`make test`, `make ftracetest`).
# Prints one "RESULT <status> <name>" line per test; the host turns them
# into the summary (scripts/harness/report). Boot selftest results come
# from the dmesg dump at the start; kernel warnings during the tests from
# the console log.
here=/opt/rftrace
. /harness/job
export CORE CONF SMP FI_STRIDE KASAN TORTURE_SECONDS

result() { # status name [detail]
	echo "RESULT $1 $2${3:+ ($3)}"
	# How long the test took (guest seconds), for balancing and budgets.
	echo "TIME $2 $(($(cut -d. -f1 /proc/uptime) - t0))"
}
t0=$(cut -d. -f1 /proc/uptime)

# Quote a failing test's output: its last lines, each cut short.
indent() { tail -n 40 | cut -c1-300 | sed 's/^/    | /'; }

# The boot log, with the boot selftests' verdicts, before the tests add
# to the ring buffer (and could push its start out).
echo "=== harness: dmesg begin ==="
dmesg
echo "=== harness: dmesg end ==="
# The CPU mitigations in force (the production configuration boots with
# return-stack stuffing and retpolines).
grep -H . /sys/devices/system/cpu/vulnerabilities/* 2> /dev/null | sed 's|^/sys/devices/system/cpu/vulnerabilities/|mitigation: |'

# ftracetest's reset between cases (initialize_ftrace) leaves the function
# profiler as it is, and ftrace/fgraph-profiler.tc leaves it on: every
# function of the kernel then goes through the profiler's graph entry and
# return for the rest of the run (on either core: the profiler is a graph
# ops until it is switched off), which made each later function-tracer
# case of that guest four to six times as slow. Off after each test, as a
# fresh boot has it.
profiler_off() {
	[ -f /sys/kernel/tracing/function_profile_enabled ] &&
		echo 0 > /sys/kernel/tracing/function_profile_enabled
}

# The ring buffer's size per CPU as a fresh boot gives it: before first use
# the file reads "7 (expanded: 1408)", and 1408 is the size. A test that
# leaves another size behind (fgraph-stress once left 7 KiB, and the next
# test's trace was overwritten before it was read) gets it back.
buffer_kb() {
	sed -n 's/.*expanded: \([0-9]*\).*/\1/p;t;s/^\([0-9]*\).*/\1/p' /sys/kernel/tracing/buffer_size_kb
}
boot_kb=$(buffer_kb)

# The project's own tests: exit 0 passes, 4 is "unsupported", else fails.
# A guest that shares the run with others runs the own tests of its
# /harness/own.list (scripts/harness/guest-tests.sh), else all of them.
case " $SUITES " in
*" own "*)
	if [ -f /harness/own.list ]; then
		own=$(sed "s|^|$here/tests/|" /harness/own.list)
	else
		own=$(ls "$here"/tests/*.sh)
	fi ;;
*) own= ;;
esac
# The fault-injection walks run after the other own tests, and the one
# that unloads a module under injection last of them: on the stock C core
# an injected failure can leave state behind that breaks what follows (a
# kprobe of a freed module, a graph tracer that cannot start again;
# known-failures-production-c.txt), and its later tests should not pay for
# it. Each walk checks after every failure that the next operation without
# injection succeeds.
# A test that kills tracing for the rest of the boot (rust-ftrace-kill)
# runs after everything else.
own=$(for t in $own; do echo "$t"; done | awk '
	/ftrace-kill/ { dead = dead $0 "\n"; next }
	/fault-inject-modunload/ { last = last $0 "\n"; next }
	/fault-inject/ { fi = fi $0 "\n"; next }
	{ print } END { printf "%s%s%s", fi, last, dead }')
# More vCPUs than two (make test SMP=8) share the one host thread of the
# emulator: a test whose work is per CPU (buffers, per-CPU threads, every
# CPU traced) takes longer by their number over two, and so may it.
slow=$(( ${SMP:-2} > 2 ? ${SMP:-2} / 2 : 1 ))
# An ftracetest case's limit: three times as long with KASAN (make test
# KASAN=1).
ftlimit=$(( $([ -n "$KASAN" ] && echo 1800 || echo 600) * slow ))
for t in $own; do
	name=rftrace/$(basename "$t")
	echo "--- $name"
	t0=$(cut -d. -f1 /proc/uptime)
	timeout "$(( ${OWN_TIMEOUT:-600} * slow ))" sh "$t" > /tmp/out 2>&1
	rc=$?
	case $rc in
	0) # What a fault-injection walk injected, for the log.
		grep '^fault-inject: ' /tmp/out | grep -v ' at allocation ' | sed 's/^/NOTE /'
		# The torture's figures (tests/torture.sh), for the log.
		grep -e 'rftrace_torture: [0-9]* s, ' -e 'rftrace_torture detail: ' -e '^torture: [0-9]* tracer switches' -e '^tools-rt: ' /tmp/out | sed 's/^\[[ 0-9.]*\] //; s/^/NOTE /'
		result PASS "$name" ;;
	4) indent < /tmp/out; result UNSUPPORTED "$name" ;;
	*) indent < /tmp/out; result FAIL "$name" "exit $rc" ;;
	esac
	# Leave tracing as a fresh boot has it (a test that killed tracing,
	# rust-ftrace-kill.sh, leaves the filter files refusing: ENODEV).
	echo nop > /sys/kernel/tracing/current_tracer
	echo > /sys/kernel/tracing/set_ftrace_filter 2> /dev/null
	echo > /sys/kernel/tracing/set_ftrace_notrace 2> /dev/null
	profiler_off
	[ "$(buffer_kb)" = "$boot_kb" ] || echo "$boot_kb" > /sys/kernel/tracing/buffer_size_kb
done

# The kernel's ftracetest, one case at a time.
runcase() { # case: run it; its output in /tmp/out, its status in $st
	rm -rf /tmp/ftlogs
	timeout "$ftlimit" ./ftracetest -vv -l /tmp/ftlogs "test.d/$1" > /tmp/out 2>&1
	rc=$?
	st=$(grep -o '\[\(PASS\|FAIL\|UNRESOLVED\|UNTESTED\|UNSUPPORTED\|XFAIL\)\]' /tmp/out | tail -1 | tr -d '[]')
}
cd /opt/ftracetest || exit 1
case " $SUITES " in *" ftracetest "*) ;; *) : > /harness/ftracetest.list ;; esac
# A case that takes a CPU offline and back (ftrace/func_hotplug.tc) leaves
# the TCG guest slow: every later case takes two to five times as long,
# on both cores ("clocksource: Long readout interval" on the console). It
# runs last.
list=$(grep -v '^[[:space:]]*#' /harness/ftracetest.list)
{ echo "$list" | grep -v hotplug; echo "$list" | grep hotplug; } | while read -r case rest; do
	[ -n "$case" ] || continue
	name=ftracetest/$case
	echo "--- $name"
	t0=$(cut -d. -f1 /proc/uptime)
	if [ ! -f "test.d/$case" ]; then
		result FAIL "$name" "no such case"
		continue
	fi
	runcase "$case"
	# A case whose check can fail by chance (ftracetest-flaky.txt says
	# why) runs once more after a failure; both runs are in the log.
	case "$st" in PASS | XFAIL | UNSUPPORTED) ;; *)
		if grep -q "^$case	" "$here/ftracetest-flaky.txt"; then
			echo "--- $name: first run ${st:-without result}, runs again (ftracetest-flaky.txt)"
			indent < /tmp/out
			runcase "$case"
		fi ;;
	esac
	case "$st" in
	PASS | XFAIL) result PASS "$name" ;;
	"") indent < /tmp/out; result FAIL "$name" "no result, exit $rc" ;;
	*) indent < /tmp/out; result "$st" "$name" ;;
	esac
	rm -rf /tmp/ftlogs
	profiler_off
done

# Where kmemleak runs (the sanitizer build, make test KASAN=1, and the
# torture's guest; the production kernel has it built in but off
# elsewhere, and refuses the scan): one scan after every test. A leaked
# object whose allocation backtrace passes through the tracer core
# (rftrace, ftrace, fgraph functions) fails the run; the count of the
# others is noted, as they belong to the rest of the kernel.
if [ -w /sys/kernel/debug/kmemleak ] && echo scan 2> /dev/null > /sys/kernel/debug/kmemleak; then
	name=rftrace/kmemleak
	echo "--- $name"
	t0=$(cut -d. -f1 /proc/uptime)
	# Objects younger than 5 s are not reported: two scans apart (the
	# first was the test above).
	sleep 6
	echo scan > /sys/kernel/debug/kmemleak
	cat /sys/kernel/debug/kmemleak > /tmp/leaks
	awk '/^unreferenced object/ { if (blk != "" && hit) printf "%s", blk; blk = ""; hit = 0 }
		{ blk = blk $0 "\n" }
		/rftrace|ftrace|fgraph/ { hit = 1 }
		END { if (blk != "" && hit) printf "%s", blk }' /tmp/leaks > /tmp/core-leaks
	all=$(grep -c '^unreferenced object' /tmp/leaks)
	core=$(grep -c '^unreferenced object' /tmp/core-leaks)
	echo "NOTE kmemleak: $all unreferenced objects, $core allocated through the tracer core"
	if [ "$core" -eq 0 ]; then
		result PASS "$name"
	else
		indent < /tmp/core-leaks
		result FAIL "$name" "$core leaked objects allocated through the tracer core"
	fi
fi

exit 0
