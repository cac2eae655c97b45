#!/bin/sh
# Fault injection: a module load with traced functions and a kprobe (samples/kprobes/kprobe_example.ko) under the function tracer, with each of its allocations failed in turn
# (fault-inject-lib.sh says how and what is checked).
FI_WALKS="modload"
. /opt/rftrace/fault-inject-lib.sh
