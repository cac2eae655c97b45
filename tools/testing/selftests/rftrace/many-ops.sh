#!/bin/sh
# The rows of `make bench` that many registered ops must not slow down
# (bench.sh runs this while bpf_scale keeps N BPF fentry programs
# attached, one direct ops each): the function tracer switched on over
# every site and off, and its filter replaced by '*' and set back to one
# function under the running tracer, REPS times each.
#
#   many-ops.sh N REPS FUNCTION
#
# Prints "SAMPLE ops-N-<row> <us> us" lines.
T=/sys/kernel/tracing
n=$1 reps=$2 F=$3
echo $T/set_ftrace_filter > /tmp/many-filter
# Each switch starts at a pseudo-random point of the tick (dither.sh:
# -icount would otherwise lock the samples to one phase).
. /opt/rftrace/dither.sh
i=0
while [ "$i" -lt "$reps" ]; do
	echo > $T/set_ftrace_filter
	dither
	echo "SAMPLE ops-$n-tracer-on $(timed_write $T/current_tracer function) us"
	dither
	echo "SAMPLE ops-$n-tracer-off $(timed_write $T/current_tracer nop) us"
	echo $F > $T/set_ftrace_filter
	echo function > $T/current_tracer
	echo "SAMPLE ops-$n-filter-one-to-all $(timed_write -f /tmp/many-filter '*') us"
	echo "SAMPLE ops-$n-filter-all-to-one $(timed_write -f /tmp/many-filter $F) us"
	echo nop > $T/current_tracer
	i=$((i + 1))
done
echo > $T/set_ftrace_filter
