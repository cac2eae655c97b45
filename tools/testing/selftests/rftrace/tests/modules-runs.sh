#!/bin/sh
# The function tracer on every site while two modules loaded one after
# the other lie close together. A step of an int3 batch writes the sites
# within 64 pages through one mapping (text_poke_scatter()); a run that
# reaches from one module's text into the next one's spans what lies
# between them (guard pages, which stay unmapped, and the first module's
# data). Every site of both modules must go to the tracer's call and back
# to the NOP, tracing must stay alive, and the second module's functions
# must run, traced, then untraced: a wrong byte in their text would show.
T=/sys/kernel/tracing
M=/opt/rftrace/modules
[ -f $M/rftrace_many.ko ] && [ -f $M/rftrace_near.ko ] ||
	{ echo "modules-runs: the harness's test modules are not built (MODULES)"; exit 4; }
cleanup() {
	echo nop > $T/current_tracer
	rmmod rftrace_near 2> /dev/null
	rmmod rftrace_many 2> /dev/null
	echo 1 > $T/tracing_on
}
fail() { echo "FAIL: $*"; cleanup; exit 1; }
count() { grep -c "\[$1\]" "$2"; }
call() { echo 1 > /sys/module/rftrace_near/parameters/call || fail "cannot run rftrace_near's functions"; }

insmod $M/rftrace_many.ko || fail "cannot load rftrace_many.ko"
insmod $M/rftrace_near.ko || fail "cannot load rftrace_near.ko"
# Where the kernel put them (the runs span both only within 64 pages).
a=$(awk '$1 == "rftrace_many" { print $6 }' /proc/modules)
b=$(awk '$1 == "rftrace_near" { print $6 }' /proc/modules)
case "$a$b" in
*0x0000000000000000*) echo "module addresses hidden" ;;
*) echo "rftrace_many at $a, rftrace_near at $b: $(((b - a) / 4096)) pages apart" ;;
esac

nm=$(count rftrace_many $T/available_filter_functions)
nn=$(count rftrace_near $T/available_filter_functions)
[ "$nm" -ge 1000 ] && [ "$nn" -ge 40 ] || fail "sites: rftrace_many $nm, rftrace_near $nn"

echo 0 > $T/tracing_on
echo > $T/trace
echo > $T/set_ftrace_filter
echo function > $T/current_tracer || fail "cannot start the function tracer"
em=$(count rftrace_many $T/enabled_functions)
en=$(count rftrace_near $T/enabled_functions)
echo "enabled: rftrace_many $em of $nm, rftrace_near $en of $nn"
[ "$em" -eq "$nm" ] && [ "$en" -eq "$nn" ] || fail "not every site of the modules is enabled"
echo 1 > $T/tracing_on
call
echo 0 > $T/tracing_on
traced=$(grep -c " rftrace_near_[0-9]* <-near_call" $T/trace)
echo "traced calls of rftrace_near's functions: $traced"
[ "$traced" -eq 40 ] || fail "expected 40 traced calls"

echo nop > $T/current_tracer
[ "$(wc -l < $T/enabled_functions)" -eq 0 ] || fail "enabled_functions not empty after the switch back"
call
# Both calls, traced and not, computed what the code says.
[ "$(dmesg | grep -c "rftrace_near: called 40 functions, sum 98660")" -eq 2 ] ||
	fail "wrong results: $(dmesg | grep rftrace_near: | tail -2)"
# A batch that read back a byte other than the one it wrote would have
# killed tracing; it still works.
echo function > $T/current_tracer || fail "tracing is dead after the batches"
echo nop > $T/current_tracer
cleanup
echo "modules-runs: ok"
