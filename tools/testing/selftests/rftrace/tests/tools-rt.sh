#!/bin/sh
# The latency tools and tracers real-time users run over the function
# tracer, with Debian's own programs (rt-tests' cyclictest, rtla,
# stress-ng; TOOLS=1 puts them in this guest):
#
# - the snapshot command of set_ftrace_filter (FUNC:snapshot, with a
#   count, and its removal): a function probe of the core that swaps the
#   buffers when FUNC runs;
# - cyclictest -b with --tracemark under the function tracer: it stops
#   the trace when a latency passes the threshold, and the trace holds
#   the functions up to the mark;
# - on CONF=rt (Debian's rt-amd64 options): the wakeup, wakeup_rt and
#   wakeup_dl tracers with function-trace and display-graph (an ftrace_ops
#   and a graph ops of their own), a latency recorded in
#   tracing_max_latency and functions in the trace; rtla timerlat top
#   and hist and osnoise top with a threshold and --trace (the tool stops
#   the trace and saves it); the hwlat tracer started and stopped;
# - the mmiotrace tracer started and stopped (it takes every CPU but one
#   offline while it runs).
#
# A tracer the configuration lacks is a failure on rt, where Debian has
# them all, and skipped elsewhere.
name=tools-rt
T=/sys/kernel/tracing
fail() { echo "$name: $*"; exit 1; }
for t in cyclictest rtla stress-ng; do
	command -v $t > /dev/null || { echo "$name: no $t in this guest (TOOLS=1)"; exit 4; }
done
have() { grep -qw "$1" $T/available_tracers; }
# On rt every tracer must be there.
need() {
	have "$1" && return 0
	[ "$CONF" = rt ] && fail "no $1 tracer on CONF=rt"
	echo "tools-rt: no $1 tracer here (CONF=$CONF): skipped"
	return 1
}
reset() {
	echo 0 > $T/tracing_on
	echo nop > $T/current_tracer
	echo > $T/set_ftrace_filter
	echo 0 > $T/options/function-trace 2> /dev/null
	echo 0 > $T/options/display-graph 2> /dev/null
	echo 1 > $T/options/function-trace 2> /dev/null
	echo > $T/trace
	echo 1 > $T/tracing_on
}
reset

# --- The snapshot command --------------------------------------------------
# getppid(), which nothing else here calls: syscall_loop 1 makes one.
F=
for f in __x64_sys_getppid __do_sys_getppid; do
	grep -q "^$f\b" $T/available_filter_functions && { F=$f; break; }
done
[ -n "$F" ] || fail "getppid's functions are not traceable"
# 1 allocates the snapshot buffer, 2 clears it (0 would free it: a probe
# then has nowhere to take its snapshot).
echo 1 > $T/snapshot || fail "no snapshot buffer (TRACER_SNAPSHOT)"
echo 2 > $T/snapshot
echo "$F:snapshot:1" > $T/set_ftrace_filter || fail "$F:snapshot:1 refused"
grep -q "^$F:snapshot:count=1" $T/set_ftrace_filter ||
	fail "set_ftrace_filter does not list $F:snapshot:count=1: $(cat $T/set_ftrace_filter)"
echo "tools-rt mark before the snapshot" > $T/trace_marker
syscall_loop 1 > /dev/null
grep -q "tools-rt mark before the snapshot" $T/snapshot ||
	fail "no snapshot taken when $F ran: $(head -20 $T/snapshot)"
grep -q "^$F:snapshot:count=0" $T/set_ftrace_filter ||
	fail "the count did not go to 0: $(cat $T/set_ftrace_filter)"
# Used up: a second run takes none.
echo 2 > $T/snapshot
echo "tools-rt second mark" > $T/trace_marker
syscall_loop 1 > /dev/null
grep -q "tools-rt second mark" $T/snapshot && fail "a snapshot was taken after the count ran out"
# Removed as it was given: with its count (a probe with a count and
# one without are different probes, as in C).
echo "!$F:snapshot:1" >> $T/set_ftrace_filter || fail "removing $F:snapshot:1 refused"
grep -q ":snapshot" $T/set_ftrace_filter && fail "$F:snapshot stays listed after its removal"
grep -q "$F" $T/enabled_functions && fail "$F stays enabled after the probe went: $(grep "$F" $T/enabled_functions)"
# Without a count: every run.
echo "$F:snapshot" > $T/set_ftrace_filter || fail "$F:snapshot refused"
echo 2 > $T/snapshot
echo "tools-rt third mark" > $T/trace_marker
syscall_loop 1 > /dev/null
grep -q "tools-rt third mark" $T/snapshot || fail "no snapshot taken by $F:snapshot"
echo 2 > $T/snapshot
echo "tools-rt fourth mark" > $T/trace_marker
syscall_loop 1 > /dev/null
grep -q "tools-rt fourth mark" $T/snapshot || fail "no second snapshot taken by $F:snapshot"
echo "!$F:snapshot" >> $T/set_ftrace_filter || fail "removing $F:snapshot refused"
grep -q ":snapshot" $T/set_ftrace_filter && fail "$F:snapshot stays listed after its removal"
echo 0 > $T/snapshot
echo "tools-rt: snapshot command: $F:snapshot:1 took one snapshot, :snapshot every run; removed"
reset

# --- cyclictest -b under the function tracer -------------------------------
# A breaktrace threshold of 1 us: under the emulator every loop passes it,
# so the first one stops the trace.
echo function > $T/current_tracer || fail "function tracer refused"
out=$(cyclictest -m -q -p 80 -t 1 -i 1000 -l 2000 -b 1 --tracemark 2>&1)
rc=$?
[ "$(cat $T/tracing_on)" = 0 ] || fail "cyclictest -b left tracing on (exit $rc): $out"
echo "$out" | grep -q "Thread.*break" || echo "$out" | grep -qi "break" ||
	fail "cyclictest -b printed no break (exit $rc): $out"
grep -q "hit latency threshold" $T/trace || fail "no tracemark in the trace: $(tail -5 $T/trace)"
# Functions before the mark: lines "name <-caller" above it.
nf=$(sed -n '/hit latency threshold/q;p' $T/trace | grep -c ' <-')
[ "$nf" -gt 0 ] || fail "no function in the trace before the mark"
echo "tools-rt: cyclictest -b: stopped at the threshold, $nf function lines before the mark"
reset

# --- The wakeup tracers ------------------------------------------------------
# cyclictest's SCHED_FIFO thread (wakeup, wakeup_rt) wakes up every
# millisecond; stress-ng's sleep workers under SCHED_DEADLINE (wakeup_dl)
# sleep and are woken (cyclicdeadline's threads are not: they yield
# their runtime and are replenished, which the tracer does not see as a
# wakeup).
waker() {
	case $1 in
	wakeup_dl) stress-ng --sleep 1 --sleep-max 8 --sched deadline --sched-runtime 1000000 \
		--sched-deadline 10000000 --sched-period 10000000 -t 2 > /dev/null 2>&1 ;;
	*) cyclictest -m -q -p 80 -t 1 -i 1000 -D 2 > /dev/null 2>&1 ;;
	esac
}
for tr in wakeup wakeup_rt wakeup_dl; do
	need $tr || continue
	for graph in 0 1; do
		echo 0 > $T/tracing_max_latency
		echo 1 > $T/options/function-trace
		echo $graph > $T/options/display-graph
		echo $tr > $T/current_tracer || fail "$tr refused"
		waker $tr
		echo 0 > $T/tracing_on
		lat=$(cat $T/tracing_max_latency)
		[ "$lat" -gt 0 ] || fail "$tr (display-graph $graph): no latency recorded"
		if [ $graph = 1 ]; then
			n=$(grep -cE '[a-z_0-9]+\(\) *[{;]' $T/trace)
		else
			n=$(grep -c ' <-' $T/trace)
		fi
		[ "$n" -gt 0 ] || fail "$tr (display-graph $graph): no function in the trace: $(head -30 $T/trace)"
		echo "tools-rt: $tr, display-graph $graph: max latency $lat us, $n function lines"
		reset
	done
done

# --- rtla --------------------------------------------------------------------
# A threshold of 1 us stops each run at its first sample past it, and
# -t saves the trace to a file.
if need timerlat; then
	cd /tmp || fail "no /tmp"
	# (rtla 6.1's hist lists -q and refuses it.)
	for mode in "top -q" hist; do
		rm -f timerlat_trace.txt
		out=$(rtla timerlat $mode -d 5s -T 1 -t 2>&1)
		[ -s timerlat_trace.txt ] || fail "rtla timerlat $mode -T 1 -t saved no trace: $out"
		grep -q "timerlat" timerlat_trace.txt || fail "rtla timerlat $mode: no timerlat sample in the trace"
		echo "tools-rt: rtla timerlat ${mode% -q}: stopped at the threshold, $(wc -l < timerlat_trace.txt) trace lines saved"
	done
	cd / || true
fi
if need osnoise; then
	cd /tmp || fail "no /tmp"
	rm -f osnoise_trace.txt
	out=$(rtla osnoise top -q -d 5s -s 1 -t 2>&1)
	[ -s osnoise_trace.txt ] || fail "rtla osnoise top -s 1 -t saved no trace: $out"
	echo "tools-rt: rtla osnoise top: stopped at the threshold, $(wc -l < osnoise_trace.txt) trace lines saved"
	cd / || true
fi
reset

# --- hwlat and mmiotrace start and stop --------------------------------------
if need hwlat; then
	echo hwlat > $T/current_tracer || fail "hwlat refused"
	sleep 2
	echo nop > $T/current_tracer || fail "hwlat did not stop"
	echo "tools-rt: hwlat: started and stopped"
fi
if need mmiotrace; then
	cpus=$(grep -c ^processor /proc/cpuinfo)
	echo mmiotrace > $T/current_tracer || fail "mmiotrace refused"
	sleep 1
	echo nop > $T/current_tracer || fail "mmiotrace did not stop"
	sleep 1
	[ "$(grep -c ^processor /proc/cpuinfo)" = "$cpus" ] || fail "mmiotrace did not bring the CPUs back"
	echo "tools-rt: mmiotrace: started and stopped, $cpus CPUs back"
fi
reset
echo "$name: ok"
