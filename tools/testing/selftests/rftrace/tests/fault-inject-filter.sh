#!/bin/sh
# Fault injection: a set_ftrace_filter write and close under the function tracer (a C name, and a Rust path where Rust code is traced), with each of its allocations failed in turn
# (fault-inject-lib.sh says how and what is checked).
FI_WALKS="filter"
# With traced Rust code, a write of a Rust path too.
grep -q '6kernel5print11call_printk$' /sys/kernel/tracing/available_filter_functions &&
	FI_WALKS="filter rustfilter"
. /opt/rftrace/fault-inject-lib.sh
