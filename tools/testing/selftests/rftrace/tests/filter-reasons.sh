#!/bin/sh
# A filter-file write that selects nothing fails as on the C core (the
# errno), and the Rust core says why in error_log: tracing's format, the
# token as the command, a caret where the reason points. Each case names
# a function of a kind the reason is about (checked against kallsyms
# first, so a kernel without such a function skips the case).
T=/sys/kernel/tracing
cd $T || exit 1
fail=0

# case FILE TOKEN "MESSAGE START" CARET: write TOKEN, want EINVAL and a
# new error_log entry with MESSAGE START, the token and the caret at
# column CARET of the token.
case_() {
	echo > error_log
	err=$( (echo "$2" >> "$1") 2>&1)
	case "$err" in
	*"Invalid argument"*) ;;
	*) echo "FAIL $1 '$2': want EINVAL, got '${err:-ok}'"; fail=1; return ;;
	esac
	log=$(cat error_log)
	msg=$(echo "$log" | sed -n 1p)
	cmd=$(echo "$log" | sed -n 2p)
	caret=$(echo "$log" | sed -n 3p)
	want_caret=$(printf "%$((11 + $4))s^" '')
	case "$msg" in
	*"ftrace: error: $3"*) ;;
	*) echo "FAIL '$2': message '$msg', want '$3...'"; fail=1 ;;
	esac
	[ "$cmd" = "  Command: $2" ] || { echo "FAIL '$2': command line '$cmd'"; fail=1; }
	[ "$caret" = "$want_caret" ] || { echo "FAIL '$2': caret line '$caret', want '$want_caret'"; fail=1; }
	echo "ok '$2': $(echo "$msg" | sed 's/^\[[^]]*\] //')"
}

# has SYMBOL: whether kallsyms knows a text symbol of that name.
has() { grep -q " [tT] $1\$" /proc/kallsyms; }
# traceable FUNCTION: whether it is in available_filter_functions.
traceable() { grep -q "^$1\$" available_filter_functions; }

echo > set_ftrace_filter
echo > set_ftrace_notrace

case_ set_ftrace_filter no_such_function_xyz "No such function" 0
case_ set_ftrace_filter '!no_such_function_xyz' "No such function" 1
case_ set_ftrace_notrace no_such_function_xyz "No such function" 0
case_ set_ftrace_filter 'zz_no_such_prefix*' "No traceable function matches" 0
case_ set_ftrace_filter 99999999 "No call site has this index" 0
case_ set_ftrace_filter 'ksys_read:no_such_command' "Unknown command" 10
case_ set_ftrace_filter 'no_such_function_xyz:traceoff' "No such function" 0

# notrace: a function the kernel marks notrace, with a symbol of its own.
if has trace_clock_local && ! traceable trace_clock_local; then
	case_ set_ftrace_filter trace_clock_local "Function has no call site" 0
else
	echo "skip: no notrace trace_clock_local"
fi
# noinstr text.
if has do_syscall_64 && ! traceable do_syscall_64; then
	case_ set_ftrace_filter do_syscall_64 "Function is in a section the tracer does not record" 0
else
	echo "skip: no noinstr do_syscall_64"
fi
# entry code.
if has entry_SYSCALL_64; then
	case_ set_ftrace_filter entry_SYSCALL_64 "Function is in a section the tracer does not record" 0
fi
# init text, freed after boot.
if has start_kernel; then
	case_ set_ftrace_filter start_kernel "Function is init code, freed after boot" 0
else
	echo "skip: kallsyms has no start_kernel"
fi

# A write that works logs nothing; the filter is left as it was.
echo > error_log
echo ksys_read > set_ftrace_filter
[ -z "$(cat error_log)" ] || { echo "FAIL: a good write logged: $(cat error_log)"; fail=1; }
[ "$(cat set_ftrace_filter)" = ksys_read ] || { echo "FAIL: filter is '$(cat set_ftrace_filter)'"; fail=1; }
echo > set_ftrace_filter
echo > error_log
exit $fail
