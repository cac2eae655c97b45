#!/bin/sh
# The function tracer with a filter records exactly the filtered function,
# patches only its site, and unpatches it when switched off.
T=/sys/kernel/tracing
fail() { echo "$*"; exit 1; }
echo 0 > $T/tracing_on
echo > $T/trace
echo ksys_read > $T/set_ftrace_filter || fail "cannot set filter"
[ "$(cat $T/set_ftrace_filter)" = ksys_read ] || fail "filter reads back as '$(cat $T/set_ftrace_filter)'"
echo function > $T/current_tracer || fail "cannot select the function tracer"
grep -q '^ksys_read ' $T/enabled_functions || fail "ksys_read not in enabled_functions"
[ "$(wc -l < $T/enabled_functions)" -eq 1 ] || fail "enabled_functions: $(cat $T/enabled_functions)"
echo 1 > $T/tracing_on
read -r line < /proc/version
read -r line < /proc/version
echo 0 > $T/tracing_on
n=$(grep -c ' ksys_read <-' $T/trace)
others=$(grep -v '^#' $T/trace | grep -vc ' ksys_read <-')
[ "$n" -ge 2 ] || { cat $T/trace; fail "expected at least 2 ksys_read entries, got $n"; }
[ "$others" -eq 0 ] || { cat $T/trace; fail "$others entries of other functions"; }
echo nop > $T/current_tracer
echo > $T/set_ftrace_filter
[ "$(wc -l < $T/enabled_functions)" -eq 0 ] || fail "enabled_functions not empty: $(cat $T/enabled_functions)"
echo 1 > $T/tracing_on
