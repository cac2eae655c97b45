#!/bin/sh
# The tracer core under real parallelism, checked by an oracle: the
# module rftrace_torture (modules/rftrace_torture.c) runs for
# TORTURE_SECONDS (default 60) worker threads, one bound to each CPU,
# that call 32 traced functions of the module, while its mutator threads
# register and unregister ftrace_ops (plain, SAVE_REGS, RECURSION, RCU,
# with a notrace set, IPMODIFY), kprobes (on the ftrace site and inside
# a function) and a direct call, and change their filters by pattern and
# by address. Every call in a window where a tracer did not change must
# reach that tracer exactly when its filter says so.
#
# Meanwhile this script loads and unloads rftrace_many.ko in a loop and
# switches current_tracer between function, function_graph and nop, with
# set_ftrace_filter rewritten (on the module's functions among others)
# and set_ftrace_pid set and cleared. Then it waits for the module's
# result: no mismatch, something checked, nothing of the module left in
# enabled_functions, and (with kmemleak) no new leak through the tracer
# core.
T=/sys/kernel/tracing
M=/opt/rftrace/modules
P=/sys/module/rftrace_torture/parameters
SECS=${TORTURE_SECONDS:-60}
# How long the module may take after the end to tear everything down
# (synchronize_rcu_tasks() of every unregistration, under TCG).
GRACE=${TORTURE_GRACE:-300}
STOP=/tmp/torture.stop
ERRS=/tmp/torture.errs
KL=/sys/kernel/debug/kmemleak

[ -f $M/rftrace_torture.ko ] ||
	{ echo "torture: the harness's test modules are not built (MODULES)"; exit 4; }
[ -w $T/current_tracer ] || { echo "torture: no tracefs"; exit 4; }

now() { cut -d. -f1 /proc/uptime; }

tracers_off() {
	echo nop > $T/current_tracer
	echo > $T/set_ftrace_filter
	echo > $T/set_ftrace_pid 2> /dev/null
}
# Stops the helpers, puts tracing back as it was; unloads the modules
# unless the torture module is still running (its rmmod would wait).
cleanup() {
	touch $STOP
	wait
	tracers_off
	rmmod rftrace_many 2> /dev/null
	[ "$1" = keep ] || rmmod rftrace_torture 2> /dev/null
}
fail() { echo "torture: FAIL: $*"; cleanup; exit 1; }
trap 'touch $STOP' EXIT
trap 'touch $STOP; exit 143' TERM INT

rm -f $STOP $ERRS /tmp/torture.loads /tmp/torture.switches
rmmod rftrace_torture 2> /dev/null
rmmod rftrace_many 2> /dev/null
tracers_off

# The leaks kmemleak knows of before the run: only new ones count.
# (Built in but off, kmemleak refuses the scan: no leak check then.)
KMEMLEAK=
if [ -w $KL ] && echo scan 2> /dev/null > $KL; then
	KMEMLEAK=1
	grep '^unreferenced object' $KL | cut -d' ' -f3 > /tmp/torture.leaks0
fi

# Which tracers to switch between.
tracers=
for t in function function_graph; do
	grep -qw $t $T/available_tracers && tracers="$tracers $t"
done
[ -n "$tracers" ] || fail "no function tracer"
set -- $tracers nop
ntr=$#

seen=$(dmesg | grep -c 'rftrace_torture: [0-9]* s, ')
insmod $M/rftrace_torture.ko duration=$SECS ||
	fail "cannot load rftrace_torture.ko: $(dmesg | grep rftrace_torture | tail -3)"
dmesg | grep 'rftrace_torture: starting' | tail -1
end=$(($(now) + SECS))

# Module loads and unloads while everything else runs.
if [ -f $M/rftrace_many.ko ]; then
	(
		n=0
		while [ ! -e $STOP ] && [ "$(now)" -lt $end ]; do
			if insmod $M/rftrace_many.ko; then
				sleep 0.2
				rmmod rftrace_many || echo "cannot unload rftrace_many (load $n)" >> $ERRS
			else
				echo "cannot load rftrace_many (load $n)" >> $ERRS
				sleep 1
			fi
			n=$((n + 1))
			sleep 0.1
		done
		echo $n > /tmp/torture.loads
	) &
fi

# Tracer switches, filter rewrites (before and while tracing) and pid
# filter changes. Every filter holds one of the module's functions, so
# the function graph tracer never runs on every function.
(
	i=0
	while [ ! -e $STOP ] && [ "$(now)" -lt $end ]; do
		case $((i % 5)) in
		0) f='rftrace_torture_fn_1*' ;;
		1) f='rftrace_torture_fn_*' ;;
		2) f='rftrace_torture_fn_0* rftrace_many_1*' ;;
		3) f='*torture_fn_?3 ksys_read' ;;
		4) f='rftrace_torture_fn_2* vfs_read' ;;
		esac
		# A pattern of a module that is not loaded fails; the rest holds.
		echo "$f" > $T/set_ftrace_filter 2> /dev/null
		shift $(((i % ntr)))
		tr=$1
		set -- $tracers nop
		echo $tr > $T/current_tracer || echo "cannot select $tr (switch $i)" >> $ERRS
		case $((i % 4)) in
		0) echo $$ > $T/set_ftrace_pid ;;
		2) echo > $T/set_ftrace_pid ;;
		esac
		sleep 0.2
		echo 'rftrace_torture_fn_3*' >> $T/set_ftrace_filter ||
			echo "cannot add to the filter (switch $i)" >> $ERRS
		sleep 0.2
		i=$((i + 1))
	done
	echo $i > /tmp/torture.switches
) &

wait
tracers_off
echo "torture: $(cat /tmp/torture.switches 2> /dev/null) tracer switches, $(cat /tmp/torture.loads 2> /dev/null) loads of rftrace_many"
[ -s $ERRS ] && fail "$(head -5 $ERRS)"

limit=$(($(now) + GRACE))
while [ "$(cat $P/done)" != 1 ]; do
	[ "$(now)" -lt $limit ] || { cleanup keep; echo "torture: FAIL: the module did not finish ${GRACE} s after the end"; exit 1; }
	sleep 1
done

dmesg | grep 'rftrace_torture detail:' | tail -12
dmesg | grep 'rftrace_torture: mismatch' | tail -10
line=$(dmesg | grep 'rftrace_torture: [0-9]* s, ' | tail -1)
[ "$(dmesg | grep -c 'rftrace_torture: [0-9]* s, ')" -gt "$seen" ] || fail "no summary line in dmesg"
mm=$(cat $P/mismatches) calls=$(cat $P/calls) checked=$(cat $P/checked) hits=$(cat $P/hit_checks)

left=$(grep rftrace_torture $T/enabled_functions)
[ -z "$left" ] || fail "still enabled after the run: $(echo "$left" | head -3)"
rmmod rftrace_torture || fail "cannot unload rftrace_torture"
[ "$(grep -c rftrace_torture $T/enabled_functions)" -eq 0 ] || fail "enabled_functions names the module after rmmod"

echo "$line"
case "$line" in
*", mismatches 0") ;;
*) fail "mismatches in the summary" ;;
esac
[ "$mm" = 0 ] || fail "$mm mismatches"
[ "$calls" -gt 0 ] && [ "$checked" -gt 0 ] && [ "$hits" -gt 0 ] ||
	fail "nothing checked: $calls calls, $checked checks, $hits expecting a hit"

# New leaks whose allocation went through the tracer core. Objects younger
# than 5 s are not reported: two scans apart.
if [ -n "$KMEMLEAK" ]; then
	echo scan > $KL
	sleep 6
	echo scan > $KL
	cat $KL > /tmp/torture.leaks
	awk 'FILENAME == ARGV[1] { old[$1] = 1; next }
		/^unreferenced object/ { if (blk != "" && hit && !(addr in old)) printf "%s", blk
			blk = ""; hit = 0; addr = $3 }
		{ blk = blk $0 "\n" }
		/rftrace|ftrace|fgraph/ { hit = 1 }
		END { if (blk != "" && hit && !(addr in old)) printf "%s", blk }' \
		/tmp/torture.leaks0 /tmp/torture.leaks > /tmp/torture.newleaks
	n=$(grep -c '^unreferenced object' /tmp/torture.newleaks)
	if [ "$n" -gt 0 ]; then
		head -40 /tmp/torture.newleaks
		fail "$n new leaked objects allocated through the tracer core"
	fi
	echo "torture: kmemleak: no new leak through the tracer core"
fi
echo "torture: ok"
