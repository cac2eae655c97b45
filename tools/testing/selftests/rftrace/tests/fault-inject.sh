#!/bin/sh
# Fault injection: a set_ftrace_filter write and close, the tracer switches nop -> function -> nop and nop -> function_graph -> nop, and a kprobe event enable, with each of its allocations failed in turn
# (fault-inject-lib.sh says how and what is checked).
FI_WALKS="filter function_on function_off graph_on graph_off kprobe"
. /opt/rftrace/fault-inject-lib.sh
