#!/bin/sh
# In the guest of `make mutants` (scripts/harness/mutants.sh): switches
# the core's deliberate break N on (a kernel built with
# CONFIG_FTRACE_CORE_RUST_MUTANTS) and runs the test that must catch it.
#
#   mutant-run.sh N test.sh
#
# Prints "MUTANT N on at T" (seconds of uptime) before and "MUTANT N
# test.sh rc R after S s" after; the host also reads the console for the
# kernel's own reports (an Oops, KASAN) and the time of the first.
N=$1
TEST=$2
# TORTURE_SECONDS and the rest of the job's settings.
. /harness/job
export CORE CONF TORTURE_SECONDS
P=/sys/module/kernel/parameters/rftrace_mutant
here=/opt/rftrace
[ -w $P ] || { echo "mutant-run: no $P (CONFIG_FTRACE_CORE_RUST_MUTANTS)"; exit 2; }
now() { cut -d' ' -f1 /proc/uptime; }
t0=$(now)
echo "rftrace: mutant $N on" > /dev/kmsg
echo "MUTANT $N on at $t0"
echo "$N" > $P
sh "$here/tests/$TEST" > /tmp/mutant.out 2>&1
rc=$?
t1=$(now)
echo 0 > $P
tail -n 30 /tmp/mutant.out | cut -c1-240 | sed 's/^/    | /'
echo "MUTANT $N $TEST rc $rc after $(awk "BEGIN { print $t1 - $t0 }") s"
