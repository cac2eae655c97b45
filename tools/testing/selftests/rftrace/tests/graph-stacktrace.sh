#!/bin/sh
# A stack trace taken while function_graph hooks the returns of a system
# call's functions names the real callers: at vfs_read's entry the return address of ksys_read (and
# of the functions above it) is return_to_handler on the stack, and the
# unwinder gets the real ones from the shadow stack
# (ftrace_graph_ret_addr()). The frame of vfs_read itself, whose return
# was hooked a moment before the probe ran, shows return_to_handler on
# both cores (6.12's unwinder does not translate the trampoline's frame);
# below vfs_read no frame may.
T=/sys/kernel/tracing
# The system call entry every such trace goes through.
sysentry=do_syscall_64
[ "$(uname -m)" = aarch64 ] && sysentry=el0_svc
fail() {
	echo "graph-stacktrace: $*"
	cat /tmp/gst.frames 2> /dev/null
	echo '!vfs_read:stacktrace:1' >> $T/set_ftrace_filter 2> /dev/null
	echo nop > $T/current_tracer
	echo > $T/set_graph_function
	echo > $T/set_ftrace_pid
	echo 1 > $T/tracing_on
	exit 1
}
echo 0 > $T/tracing_on
echo > $T/trace
# Only the read system call's functions are graphed, and only this
# shell's: vfs_read's and ksys_read's returns are hooked (two frames for
# the unwinder to translate), and the ring buffer keeps the stack trace.
# With more graphed (every function, or every system call through
# x64_sys_call, or every task's), the events of the one read overwrite it
# before the read ends: 23,000 lines under KASAN.
echo ksys_read > $T/set_graph_function || fail "cannot set set_graph_function"
echo $$ > $T/set_ftrace_pid || fail "cannot set set_ftrace_pid"
echo function_graph > $T/current_tracer || fail "cannot select function_graph"
echo 'vfs_read:stacktrace:1' > $T/set_ftrace_filter || fail "cannot set the stacktrace probe"
echo 1 > $T/tracing_on
read -r line < /proc/version
echo 0 > $T/tracing_on
# The frames: the " => " lines after the <stack trace> event; other lines
# of the function_graph output may come between the event and its frames.
cat $T/trace > /tmp/gst.trace
awk '/<stack trace>/ { s = 1; next } s && /^ => / { print $2; f = 1; next } f { exit }' /tmp/gst.trace > /tmp/gst.frames
echo '!vfs_read:stacktrace:1' >> $T/set_ftrace_filter || fail "cannot remove the probe"
echo nop > $T/current_tracer
echo > $T/set_ftrace_filter
echo > $T/set_graph_function
echo > $T/set_ftrace_pid
echo 1 > $T/tracing_on
[ -s /tmp/gst.frames ] || fail "no stack trace in the trace ($(grep -c . /tmp/gst.trace) lines, $(grep -c '<stack trace>' /tmp/gst.trace) stack traces, $(grep -c 'vfs_read' /tmp/gst.trace) with vfs_read; buffer $(cat $T/buffer_size_kb) KiB; last: $(grep -v '^#' /tmp/gst.trace | tail -3 | tr '\n' '|'))"
sed -n '/^vfs_read/,$p' /tmp/gst.frames | grep -q '^return_to_handler' &&
	fail "return_to_handler below vfs_read in the stack trace"
grep -q '^ksys_read' /tmp/gst.frames || fail "ksys_read missing from the stack trace"
grep -q "^$sysentry" /tmp/gst.frames || fail "$sysentry missing from the stack trace"
[ "$(wc -l < $T/enabled_functions)" -eq 0 ] || fail "enabled_functions not empty: $(head -3 $T/enabled_functions)"
echo "graph-stacktrace: $(tr '\n' ' ' < /tmp/gst.frames)"
