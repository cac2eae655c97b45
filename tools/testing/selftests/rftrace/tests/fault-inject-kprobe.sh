#!/bin/sh
# Fault injection: a kprobe event enable (on an ftrace site), with each of its allocations failed in turn
# (fault-inject-lib.sh says how and what is checked).
FI_WALKS="kprobe"
# A kprobe event on a function's entry is an ops of the core only with
# KPROBES_ON_FTRACE, which arm64 does not have in 6.12.
[ "$(uname -m)" = aarch64 ] && { echo "no KPROBES_ON_FTRACE on arm64"; exit 4; }
. /opt/rftrace/fault-inject-lib.sh
