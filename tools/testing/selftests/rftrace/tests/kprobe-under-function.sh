#!/bin/sh
# A kprobe on a function's entry while the function tracer runs on every
# call site: the kprobe works, the function keeps being traced, and
# enabling it changes only that site, so it costs a small fraction of
# turning the function tracer on (one int3 batch over all sites).
# Kprobes on function entries go through the core only with
# KPROBES_ON_FTRACE, which arm64 does not have in 6.12.
[ "$(uname -m)" = aarch64 ] && { echo "no KPROBES_ON_FTRACE on arm64"; exit 4; }
T=/sys/kernel/tracing
F=ksys_read
fail() { echo "$*"; echo nop > $T/current_tracer; echo > $T/kprobe_events; exit 1; }
echo 0 > $T/tracing_on
echo > $T/trace
echo > $T/set_ftrace_filter
all=$(timed_write $T/current_tracer function) || fail "cannot start the function tracer"
echo "p:rftkp $F" > $T/kprobe_events || fail "cannot define the kprobe"
one=$(timed_write $T/events/kprobes/rftkp/enable 1) || fail "cannot enable the kprobe"
echo "function tracer on all sites: ${all} us; kprobe on $F meanwhile: ${one} us"
grep -q "^$F (2) R" $T/enabled_functions || fail "$F: $(grep "^$F " $T/enabled_functions)"
[ "$one" -lt $((all / 5)) ] || fail "enabling one kprobe took ${one} us, the whole tracer ${all} us"
echo 1 > $T/tracing_on
read -r line < /proc/version
echo 0 > $T/tracing_on
grep -q "rftkp: ($F" $T/trace || fail "no kprobe hit in the trace"
grep -q " $F <-" $T/trace || fail "no function tracer entry of $F"
echo 0 > $T/events/kprobes/rftkp/enable
grep -q "^$F (1) " $T/enabled_functions || fail "after disabling: $(grep "^$F " $T/enabled_functions)"
echo nop > $T/current_tracer
echo > $T/kprobe_events
[ "$(wc -l < $T/enabled_functions)" -eq 0 ] || fail "enabled_functions not empty at the end"
echo 1 > $T/tracing_on
