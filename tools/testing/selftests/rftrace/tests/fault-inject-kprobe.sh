#!/bin/sh
# Fault injection: a kprobe event enable (on an ftrace site), with each of its allocations failed in turn
# (fault-inject-lib.sh says how and what is checked).
FI_WALKS="kprobe"
. /opt/rftrace/fault-inject-lib.sh
