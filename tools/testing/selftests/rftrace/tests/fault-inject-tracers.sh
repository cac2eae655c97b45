#!/bin/sh
# Fault injection: the tracer switches nop -> function -> nop and nop -> function_graph -> nop, with each of their allocations failed in turn
# (fault-inject-lib.sh says how and what is checked).
FI_WALKS="function_on function_off graph_on graph_off"
. /opt/rftrace/fault-inject-lib.sh
