#!/bin/sh
# Fault injection: a direct-call registration (samples/ftrace/ftrace-direct.ko), with each of its allocations failed in turn
# (fault-inject-lib.sh says how and what is checked).
FI_WALKS="direct"
. /opt/rftrace/fault-inject-lib.sh
