#!/bin/sh
# The function tracers and the tracefs files of the ftrace core exist.
T=/sys/kernel/tracing
for tr in function function_graph nop; do
	grep -qw "$tr" $T/available_tracers || { echo "tracer $tr missing: $(cat $T/available_tracers)"; exit 1; }
done
for f in available_filter_functions available_filter_functions_addrs enabled_functions \
	set_ftrace_filter set_ftrace_notrace set_graph_function set_graph_notrace \
	set_ftrace_pid set_ftrace_notrace_pid dyn_ftrace_total_info function_profile_enabled; do
	[ -e $T/$f ] || { echo "$T/$f missing"; exit 1; }
done
n=$(wc -l < $T/available_filter_functions)
[ "$n" -gt 1000 ] || { echo "only $n traceable functions"; exit 1; }
