#!/bin/sh
# The hot path is off limits to kprobes (NOKPROBE_SYMBOL): it runs before
# its recursion guard, and a kprobe there would re-enter. The list
# dispatcher and the assist function on both cores; on the Rust core also
# the pid filter, the direct-call dispatcher, the graph entry and return
# and the arch layer's graph hooks and int3 handler. Each is listed in
# kprobes' blacklist, and a kprobe event on it is refused.
T=/sys/kernel/tracing
B=/sys/kernel/debug/kprobes/blacklist
fail() { echo "nokprobe: $*"; echo > $T/kprobe_events 2> /dev/null; exit 1; }
[ -f $B ] || mount -t debugfs nodev /sys/kernel/debug 2> /dev/null
[ -f $B ] || { echo "nokprobe: no kprobes blacklist (KPROBES, DEBUG_FS)"; exit 4; }
# Each function as "name" or, for the Rust core's ops callbacks (the
# C adapter of a callback type, registry::c_callback::<T>), "name=pattern"
# of its mangled symbol.
if [ "$CORE" = rust ]; then
	funcs='arch_ftrace_ops_list_func
	ftrace_ops_assist_func=c_callback.*10AssistFunc
	ftrace_pid_func=c_callback.*7PidFunc
	call_direct_funcs=c_callback.*10CallDirect
	function_graph_enter ftrace_return_to_handler ftrace_graph_func'
	# The x86_64 layer's own: its graph hook and int3 handler.
	[ "$(uname -m)" = x86_64 ] && funcs="$funcs prepare_ftrace_return rftrace_int3_handler"
else
	funcs='arch_ftrace_ops_list_func ftrace_ops_assist_func'
fi
n=0
for e in $funcs; do
	f=${e%%=*}
	pat=${e#*=}
	[ "$pat" = "$e" ] && pat="[0-9]$f\$"
	# Rust's private functions carry a mangled name ending in the Rust one;
	# with CALL_PADDING each function has a __pfx_ symbol before it.
	sym=$(awk -v f="$f" -v p="$pat" '$3 !~ /^__pfx_/ && ($3 == f || $3 ~ p) { print $3; exit }' /proc/kallsyms)
	[ -n "$sym" ] || fail "$f not in /proc/kallsyms"
	grep -q "[[:space:]]$sym\$" $B || fail "$f ($sym) not in the kprobes blacklist"
	if echo "p:nokprobe_test $sym" > $T/kprobe_events 2> /dev/null; then
		fail "a kprobe on $f ($sym) accepted"
	fi
	n=$((n + 1))
done
echo > $T/kprobe_events
echo "nokprobe: $n hot-path functions blacklisted and refused to kprobes"
