#!/bin/sh
# Fault injection: a set_ftrace_filter write and close under the function tracer, with each of its allocations failed in turn
# (fault-inject-lib.sh says how and what is checked).
FI_WALKS="filter"
. /opt/rftrace/fault-inject-lib.sh
