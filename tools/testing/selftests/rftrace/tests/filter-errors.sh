#!/bin/sh
# Bad input to the filter files: each write gets the errno the C core
# gives, and what the file holds afterwards is what the C core leaves.
# The expected lines below were taken from the C core; both cores must
# print exactly them.
T=/sys/kernel/tracing
cd $T || exit 1

# w FILE MODE TEXT: write TEXT (MODE '>' truncates, '>>' appends); print
# "ok" or the shell's error text without the "sh: write error: " prefix.
w() {
	if [ "$2" = '>' ]; then
		err=$( (echo "$3" > "$1") 2>&1)
	else
		err=$( (echo "$3" >> "$1") 2>&1)
	fi
	[ -z "$err" ] && err=ok
	echo "$1 $2 '$3': ${err##*error: }"
}
# show FILE: its lines joined by '|'.
show() { echo "  $1 = $(tr '\n' '|' < "$1")"; }

got=$(
	echo > set_ftrace_filter
	echo > set_ftrace_notrace
	w set_ftrace_filter '>' no_such_function_xyz
	show set_ftrace_filter
	w set_ftrace_filter '>' ksys_read
	w set_ftrace_filter '>>' no_such_function_xyz
	show set_ftrace_filter
	w set_ftrace_filter '>>' '!no_such_function_xyz'
	w set_ftrace_filter '>>' '!'
	w set_ftrace_filter '>>' 0
	w set_ftrace_filter '>>' 99999999
	w set_ftrace_filter '>>' 12abc
	w set_ftrace_filter '>>' 'ksys_read:no_such_command'
	w set_ftrace_filter '>>' 'ksys_read:'
	w set_ftrace_filter '>>' ':traceoff'
	w set_ftrace_filter '>>' '!ksys_read:traceoff'
	w set_ftrace_filter '>>' 'ksys_read:traceoff'
	w set_ftrace_filter '>>' 'ksys_read:traceoff'
	w set_ftrace_filter '>>' 'ksys_read:traceoff:abc'
	show set_ftrace_filter
	w set_ftrace_filter '>>' '!ksys_read:traceoff'
	w set_ftrace_notrace '>>' 'ksys_read:traceoff'
	w set_ftrace_filter '>>' 'no_such_function_xyz:mod:no_such_module'
	show set_ftrace_filter
	w set_ftrace_filter '>>' '!no_such_function_xyz:mod:other_module'
	w set_ftrace_filter '>>' '!no_such_function_xyz:mod:no_such_module'
	w set_ftrace_filter '>>' "$(printf '%0700d' 0 | tr 0 a)"
	show set_ftrace_filter
	w set_graph_function '>' 1
	w set_graph_function '>' no_such_function_xyz
	w set_graph_function '>' ksys_read
	w set_graph_function '>>' '!vfs_write'
	show set_graph_function
	echo > set_graph_function
	echo > set_ftrace_filter
	show set_ftrace_filter
)
want="set_ftrace_filter > 'no_such_function_xyz': Invalid argument
  set_ftrace_filter = #### all functions enabled ####|
set_ftrace_filter > 'ksys_read': ok
set_ftrace_filter >> 'no_such_function_xyz': Invalid argument
  set_ftrace_filter = ksys_read|
set_ftrace_filter >> '!no_such_function_xyz': Invalid argument
set_ftrace_filter >> '!': Invalid argument
set_ftrace_filter >> '0': Invalid argument
set_ftrace_filter >> '99999999': Invalid argument
set_ftrace_filter >> '12abc': Invalid argument
set_ftrace_filter >> 'ksys_read:no_such_command': Invalid argument
set_ftrace_filter >> 'ksys_read:': Invalid argument
set_ftrace_filter >> ':traceoff': Invalid argument
set_ftrace_filter >> '!ksys_read:traceoff': No such device
set_ftrace_filter >> 'ksys_read:traceoff': ok
set_ftrace_filter >> 'ksys_read:traceoff': Invalid argument
set_ftrace_filter >> 'ksys_read:traceoff:abc': Invalid argument
  set_ftrace_filter = ksys_read|ksys_read:traceoff:unlimited|
set_ftrace_filter >> '!ksys_read:traceoff': ok
set_ftrace_notrace >> 'ksys_read:traceoff': Invalid argument
set_ftrace_filter >> 'no_such_function_xyz:mod:no_such_module': ok
  set_ftrace_filter = ksys_read|no_such_function_xyz:mod:no_such_module|
set_ftrace_filter >> '!no_such_function_xyz:mod:other_module': Invalid argument
set_ftrace_filter >> '!no_such_function_xyz:mod:no_such_module': ok
set_ftrace_filter >> '$(printf '%0700d' 0 | tr 0 a)': Invalid argument
  set_ftrace_filter = ksys_read|
set_graph_function > '1': Invalid argument
set_graph_function > 'no_such_function_xyz': Invalid argument
set_graph_function > 'ksys_read': ok
set_graph_function >> '!vfs_write': Invalid argument
  set_graph_function = ksys_read|
  set_ftrace_filter = #### all functions enabled ####|"
if [ "$got" != "$want" ]; then
	echo "--- expected"
	echo "$want"
	echo "--- got"
	echo "$got"
	exit 1
fi
