#!/bin/sh
# The tracer core under real parallelism, checked by an oracle: the
# module rftrace_torture (modules/rftrace_torture.c) runs for
# TORTURE_SECONDS (default 60) worker threads, one bound to each CPU,
# and TORTURE_PREEMPT_WORKERS (default: as many as CPUs) more, not bound,
# calling with preemption on, that call 32 traced functions of the
# module (some of which sleep inside for the latter), while its mutator
# threads register and unregister ftrace_ops (plain, SAVE_REGS,
# RECURSION, RCU, with a notrace set, IPMODIFY, and one whose ops and
# data are allocated for each registration and freed as soon as it is
# unregistered), kprobes (on the ftrace site and inside a function), a
# direct call and a function graph ops (struct fgraph_ops, filtered
# through its ops), and change their filters by pattern and by address.
# What the module checks (its header argues each):
# - every call in a window where a tracer did not change reaches that
#   tracer exactly when its filter says so; around one change, only for
#   a function one side of it wants; never twice;
# - no callback where none may be: for a torture function not in a call
#   in flight, for a function outside a tracer's domain, for any kernel
#   function when the tracer's filter is never empty, or still running
#   (or starting) after its unregistration returned;
# - each call's result and callee-saved registers equal an untraced
#   reference;
# - the graph ops: each entry paired with its return in the same task
#   (a per-worker record pushed and popped by the callbacks; an entry
#   whose return never came is a mismatch in a stable window), the same
#   depth for every call (the shadow stack empty between calls), the
#   return value equal to the untraced reference, and the return address:
#   a probe of two nested graph-traced functions must come back to its
#   call site with its own stack pointer (a return to another frame's
#   address is seen there); no graph callback once its unregistration
#   and the owner's RCU-tasks wait returned;
# - at quiet points (every worker parked), each tracer's hits per
#   function equal the calls the function's body counted, for the
#   tracers that did not change since the last one (for the graph ops,
#   its returns equal its entries, and no worker has one open);
# - none of its API calls fails, and every tracer was checked in a
#   stable window that expected a hit.
# The run fails on any mismatch, any failed API call, a tracer never
# checked, or nothing checked at all.
#
# Meanwhile this script loads and unloads rftrace_many.ko in a loop and
# switches current_tracer between function, function_graph and nop, with
# set_ftrace_filter rewritten (on the module's functions among others)
# and set_ftrace_pid set and cleared. Then it waits for the module's
# result, checks that nothing of the module is left in
# enabled_functions, and (with kmemleak) that there is no new leak
# through the tracer core. With KASAN, a callback that ran after its ops
# and data were freed is a KASAN report in this run's kernel log, which
# fails it too. A callback preempted inside its trampoline needs
# preempt=full (or a preemptible kernel): on a voluntary kernel the
# script says that this part was not exercised.
T=/sys/kernel/tracing
M=/opt/rftrace/modules
P=/sys/module/rftrace_torture/parameters
SECS=${TORTURE_SECONDS:-60}
PWORKERS=${TORTURE_PREEMPT_WORKERS:-$(grep -c '^processor' /proc/cpuinfo)}
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
insmod $M/rftrace_torture.ko duration=$SECS preempt_workers=$PWORKERS ||
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

# This run's lines: those after its "starting" line.
dmesg | awk '/rftrace_torture: starting/ { n = 0; next } { l[n++] = $0 } END { for (i = 0; i < n; i++) print l[i] }' > /tmp/torture.dmesg
grep 'rftrace_torture detail:' /tmp/torture.dmesg
grep 'rftrace_torture' /tmp/torture.dmesg | grep -e 'mismatch' -e 'failed' -e 'never checked' | head -20
line=$(dmesg | grep 'rftrace_torture: [0-9]* s, ' | tail -1)
[ "$(dmesg | grep -c 'rftrace_torture: [0-9]* s, ')" -gt "$seen" ] || fail "no summary line in dmesg"
mm=$(cat $P/mismatches) calls=$(cat $P/calls) checked=$(cat $P/checked) hits=$(cat $P/hit_checks)
unexpected=$(cat $P/unexpected) unchecked=$(cat $P/unchecked) reconciled=$(cat $P/reconciled)

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
if grep -q 'BUG: KASAN' /tmp/torture.dmesg; then
	grep -A20 'BUG: KASAN' /tmp/torture.dmesg | head -40
	fail "KASAN reports during the run"
fi
[ "$unexpected" = 0 ] || fail "$unexpected API calls of the mutators failed (none is expected)"
[ "$unchecked" = 0 ] || fail "$unchecked tracers never checked in a stable window that expected a hit"
[ "$calls" -gt 0 ] && [ "$checked" -gt 0 ] && [ "$hits" -gt 0 ] && [ "$reconciled" -gt 0 ] ||
	fail "nothing checked: $calls calls, $checked checks, $hits expecting a hit, $reconciled reconciled"
# Whether a task was ever preempted inside the dynamic tracer's callback
# (so that unregistering it had to wait for RCU Tasks): only a
# preemptible kernel does that, which the harness does not ask for.
if [ "$PWORKERS" -gt 0 ] && grep -q 'dynamic callbacks preempted 0,' /tmp/torture.dmesg; then
	echo "torture: note: no callback was preempted inside its trampoline" \
		"($(grep -o 'preemption [a-z]*' /tmp/torture.dmesg | tail -1)): boot with preempt=full to exercise the RCU Tasks wait"
fi

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
