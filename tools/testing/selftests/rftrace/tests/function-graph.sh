#!/bin/sh
# function_graph with set_graph_function shows the entry and the return of
# the function, with a duration. (The shell builtin read uses read(2);
# busybox cat would use sendfile.)
T=/sys/kernel/tracing
fail() { echo "$*"; exit 1; }
echo 0 > $T/tracing_on
echo > $T/trace
echo ksys_read > $T/set_graph_function || fail "cannot set set_graph_function"
echo function_graph > $T/current_tracer || fail "cannot select function_graph"
echo 1 > $T/tracing_on
read -r line < /proc/version
echo 0 > $T/tracing_on
grep -q 'ksys_read() {' $T/trace || { head -40 $T/trace; fail "no 'ksys_read() {' entry"; }
grep -q '} */\* ksys_read \*/\|^ *[0-9].*|  *}' $T/trace || { head -40 $T/trace; fail "no return of ksys_read"; }
grep -q '[0-9]\.[0-9]* us *|' $T/trace || { head -40 $T/trace; fail "no durations"; }
echo nop > $T/current_tracer
echo > $T/set_graph_function
[ "$(wc -l < $T/enabled_functions)" -eq 0 ] || fail "enabled_functions not empty: $(cat $T/enabled_functions)"
echo 1 > $T/tracing_on
