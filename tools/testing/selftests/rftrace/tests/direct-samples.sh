#!/bin/sh
# The direct-call samples (samples/ftrace/ftrace-direct*.ko) load, run and
# unload while the function tracer traces the same functions
# (wake_up_process, handle_mm_fault, schedule: the sites are shared by the
# tracer's ops and the direct ops, through the full-regs trampoline):
# each sample's trace_printk lines and the tracer's entries for its
# function are in the trace, both of ftrace-direct-modify's and
# -multi-modify's trampolines ran (modify_ftrace_direct() every second),
# enabled_functions names each sample's trampoline under its function,
# and nothing is left patched at the end. (With the tracer on every
# function, loading ftrace-direct-modify stalls the guest on both cores
# under TCG, so the tracer is filtered.)
T=/sys/kernel/tracing
fail() {
	echo "direct-samples: $*"
	for m in ftrace_direct ftrace_direct_too ftrace_direct_modify ftrace_direct_multi ftrace_direct_multi_modify; do
		rmmod $m 2> /dev/null
	done
	echo nop > $T/current_tracer
	echo > $T/set_ftrace_filter
	exit 1
}
dir=$(dirname "$(find /lib/modules -name ftrace-direct.ko | head -1)")
[ -f "$dir/ftrace-direct.ko" ] || { echo "direct-samples: samples/ftrace not built (CONFIG_SAMPLE_FTRACE_DIRECT)"; exit 4; }
echo 'wake_up_process handle_mm_fault schedule' > $T/set_ftrace_filter || fail "cannot set the filter"
echo function > $T/current_tracer || fail "cannot start the function tracer"
# module, function the tracer must see, the sample's lines (a|b: both)
for spec in \
	'ftrace-direct wake_up_process waking_up' \
	'ftrace-direct-too handle_mm_fault handle_mm_fault_vma' \
	'ftrace-direct-modify schedule my_direct_func1|my_direct_func2' \
	'ftrace-direct-multi schedule :_ip_f' \
	'ftrace-direct-multi-modify schedule my_direct_func1_ip|my_direct_func2_ip'; do
	set -- $spec
	mod=$1 fn=$2 want=$3
	echo > $T/trace
	insmod "$dir/$mod.ko" || fail "cannot load $mod.ko"
	# enabled_functions names the sample's trampoline under the function
	# (my_tramp, my_tramp1 or my_tramp2), on the line after it.
	grep -A1 "^$fn " $T/enabled_functions | grep -q "direct-->my_tramp" ||
		fail "$mod: enabled_functions shows no direct trampoline for $fn: $(grep -A1 "^$fn " $T/enabled_functions)"
	# A page fault and wake-ups, and 2.5 s for the modify samples' flips.
	sh -c 'cat /proc/version > /dev/null; sleep 2.5'
	rmmod "$(echo $mod | tr - _)" || fail "cannot unload $mod"
	tr ' ' _ < $T/trace > /tmp/ds.trace
	IFS='|'
	for w in $want; do
		grep -q "$w" /tmp/ds.trace || { IFS=' '; fail "$mod: no '$w' line in the trace"; }
	done
	IFS=' '
	grep -q "_${fn}_<-" /tmp/ds.trace || fail "$mod: the function tracer lost $fn"
done
echo nop > $T/current_tracer
echo > $T/set_ftrace_filter
[ "$(wc -l < $T/enabled_functions)" -eq 0 ] || fail "enabled_functions not empty: $(head -3 $T/enabled_functions)"
echo "direct-samples: 5 samples loaded, ran and unloaded under the function tracer"
