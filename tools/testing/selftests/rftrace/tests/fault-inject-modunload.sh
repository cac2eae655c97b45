#!/bin/sh
# Fault injection: the unload of that module, with each of its allocations failed in turn
# (fault-inject-lib.sh says how and what is checked).
FI_WALKS="modunload"
. /opt/rftrace/fault-inject-lib.sh
