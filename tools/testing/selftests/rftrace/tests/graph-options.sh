#!/bin/sh
# The function_graph knobs that depend on the graph core: max_graph_depth
# (the depth the core gives each entry), tracing_thresh (durations from
# the core's entry and return times) and sleep-time off (the core moves
# the entry times of a task's frames by the time it slept).
T=/sys/kernel/tracing
fail() {
	echo "graph-options: $*"
	echo nop > $T/current_tracer
	echo 0 > $T/max_graph_depth
	echo 0 > $T/tracing_thresh
	echo 1 > $T/options/sleep-time 2> /dev/null
	echo 0 > $T/options/funcgraph-tail
	echo > $T/set_graph_function
	echo 1 > $T/tracing_on
	exit 1
}
# The duration of the last do_nanosleep return in the trace, in us (the
# funcgraph-tail option names the function on its closing line).
nanosleep_us() {
	awk '/\} \/\* do_nanosleep \*\// && match($0, /[0-9]+\.[0-9]+ us/) {
		d = substr($0, RSTART, RLENGTH - 3)
	} END { print int(d) }' $T/trace
}
# A read(2) (busybox cat would use sendfile).
readv() { read -r line < /proc/version; }
run() {
	echo 0 > $T/tracing_on
	echo > $T/trace
	echo 1 > $T/tracing_on
	"$@"
	echo 0 > $T/tracing_on
}

# max_graph_depth 2: ksys_read and its direct callees only.
echo ksys_read > $T/set_graph_function
echo 2 > $T/max_graph_depth
echo function_graph > $T/current_tracer || fail "cannot select function_graph"
run readv
deep=$(awk -F'|' '/\|/ && $2 ~ /^      +[a-z_]/ { n++ } END { print n + 0 }' $T/trace)
top=$(grep -c 'ksys_read() {' $T/trace)
[ "$top" -gt 0 ] || fail "max_graph_depth 2: no ksys_read entry"
[ "$deep" -eq 0 ] || fail "max_graph_depth 2: $deep lines deeper than 2 levels"
echo nop > $T/current_tracer
echo 0 > $T/max_graph_depth

# sleep-time: do_nanosleep of "sleep 0.3" lasts 300 ms or more with it,
# much less without it.
echo do_nanosleep > $T/set_graph_function
echo 1 > $T/options/funcgraph-tail
echo function_graph > $T/current_tracer
run sleep 0.3
with=$(nanosleep_us)
echo 0 > $T/options/sleep-time || fail "no sleep-time option"
run sleep 0.3
without=$(nanosleep_us)
echo 1 > $T/options/sleep-time
[ "$with" -ge 300000 ] || fail "sleep-time on: do_nanosleep took $with us for a 300 ms sleep"
[ "$without" -lt 100000 ] || fail "sleep-time off: do_nanosleep took $without us (sleep not taken out)"
echo nop > $T/current_tracer

# tracing_thresh 200 ms: only the sleeping do_nanosleep returns remain.
echo 200000 > $T/tracing_thresh
echo function_graph > $T/current_tracer
run sleep 0.3
short=$(grep -c ' us *|' $T/trace)
long=$(nanosleep_us)
n=$(awk '/ us *\|/ && match($0, /[0-9]+\.[0-9]+ us/) && substr($0, RSTART, RLENGTH - 3) + 0 < 200000 { n++ } END { print n + 0 }' $T/trace)
echo nop > $T/current_tracer
echo 0 > $T/tracing_thresh
echo 0 > $T/options/funcgraph-tail
echo > $T/set_graph_function
# run() leaves the ring buffer off: the tests after this one want it on.
echo 1 > $T/tracing_on
[ "$long" -ge 200000 ] || fail "tracing_thresh: no do_nanosleep return of 200 ms or more ($long)"
[ "$n" -eq 0 ] || fail "tracing_thresh: $n returns shorter than 200 ms"
echo "graph-options: max_graph_depth 2: $top ksys_read calls, nothing deeper than 2 levels; do_nanosleep of sleep 0.3: $with us with sleep-time, $without us without; tracing_thresh 200 ms kept $short returns"
