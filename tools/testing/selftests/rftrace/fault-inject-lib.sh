# SPDX-License-Identifier: GPL-2.0
# The fault-injection walks of tests/fault-inject*.sh (issue 13), sourced
# with FI_WALKS set to the walks to run.
# Each operation below is run again and again
# with its 1st, 2nd, 3rd, ... fault-injectable allocation made to fail
# (/proc/self/fail-nth through the fail_nth helper), until a run makes no
# allocation fail. After every injected failure: enabled_functions agrees
# with what is registered (the tracer, the filter, the kprobe event, the
# modules), the same operation run again without injection succeeds, and
# the state is then reset; the harness checks the console for warnings.
# Operations: a set_ftrace_filter write and close under the function
# tracer; switches nop -> function -> nop and nop -> function_graph -> nop;
# a kprobe event enable; a module load with traced functions and a kprobe
# (samples/kprobes), and its unload; a direct-call registration (the
# samples/ftrace/ftrace-direct.ko load). Prints how many failures were
# injected.
set -f
# FI_STRIDE=k (the harness's job file, `make test FI_STRIDE=k`) fails
# allocation 1, 1+k, 1+2k, ... of each operation instead of every one:
# `make test` samples every 16th to fit CI, `make fault-inject` walks
# every allocation (FI_STRIDE=1).
stride=${FI_STRIDE:-1}
T=/sys/kernel/tracing
D=/sys/kernel/debug
FN=/bin/fail_nth
total=0
cleanup() {
	rmmod kprobe_example 2> /dev/null
	rmmod ftrace_direct 2> /dev/null
	[ -d $T/events/kprobes ] && echo 0 > $T/events/kprobes/enable
	echo > $T/kprobe_events
	echo nop > $T/current_tracer
	echo > $T/set_ftrace_filter
}
fail() {
	echo "fault-inject: $* (walk ${name:-none}, allocation ${n:-0})"
	echo "filter: $(head -3 $T/set_ftrace_filter | tr '\n' ' ')"
	echo "tracer: $(cat $T/current_tracer)"
	cleanup
	exit 1
}
[ -w /proc/self/fail-nth ] || { echo "fault-inject: no /proc/self/fail-nth (CONFIG_FAULT_INJECTION)"; exit 4; }
[ -d $D/failslab ] || mount -t debugfs none $D 2> /dev/null
for f in failslab fail_page_alloc; do
	[ -d $D/$f ] || { echo "fault-inject: no $D/$f"; exit 4; }
	# Sleeping (GFP_KERNEL) allocations too; quiet; every order.
	echo N > $D/$f/ignore-gfp-wait
	echo 0 > $D/$f/verbose
done
echo N > $D/fail_page_alloc/ignore-gfp-highmem
echo 0 > $D/fail_page_alloc/min-order
mods=$(find /lib/modules -name kprobe_example.ko | head -1)
direct=$(find /lib/modules -name ftrace-direct.ko | head -1)
[ -f "$mods" ] && [ -f "$direct" ] || { echo "fault-inject: samples not built"; exit 4; }

lines() { grep -vc '^#' "$1"; }
# The sites the function tracer enables under the filter: every site when
# the filter is empty.
traced() {
	n=$(lines $T/set_ftrace_filter)
	[ "$n" -gt 0 ] && echo "$n" || wc -l < $T/available_filter_functions
}
notes=0
# What the C core does wrong under injection, where the Rust core must
# be right: noted on C (the reference survives it), a failure on Rust.
wrong() {
	if [ "$CORE" = c ]; then
		echo "fault-inject: note (C core): $name, allocation $n failed: $*"
		notes=$((notes + 1))
	else
		fail "$name, allocation $n failed: $*"
	fi
}
# Functions in enabled_functions (a direct site's "\tdirect-->" line is
# its own).
enabled() { grep -vc '^[[:space:]]' $T/enabled_functions; }
loaded() { grep -q "^$1 " /proc/modules; }
expect() { # what enabled_functions must count
	[ "$(enabled)" -eq "$1" ] || fail "$name: enabled_functions has $(enabled) lines, $1 expected: $(head -3 $T/enabled_functions)"
}

# walk NAME: with setup_NAME (the state the operation starts from),
# op_NAME (the helper's arguments), check_NAME (the state after the
# operation, told the operation's errno), back_NAME (from any state the
# operation leaves to the setup state again) and reset_NAME (to the
# state before setup) defined. A walk sets up once and goes back after
# each run of the operation, which is cheaper than a whole reset (on the
# emulator a tracer switch costs about a second).
walk() {
	name=$1
	n=1
	runs=0
	setup_$name || return 1
	while :; do
		out=$($FN $n $(op_$name))
		case $out in
		"injected="[01]" rc="*) ;;
		*) fail "$name: fail_nth $n: '$out'" ;;
		esac
		inj=${out#injected=}
		inj=${inj%% *}
		rc=${out##*rc=}
		check_$name "$rc"
		[ "$inj" = 1 ] || break
		back_$name || return 1
		# The operation again, without injection: it succeeds.
		out=$($FN 0 $(op_$name))
		if [ "${out##*rc=}" != 0 ]; then
			wrong "errno $rc; without injection the operation then fails: errno ${out##*rc=}"
			# The C core, noted: this operation is broken for good.
			reset_$name
			return 1
		fi
		check_$name 0
		back_$name || return 1
		runs=$((runs + 1))
		[ $((runs % 20)) -ne 0 ] || echo "fault-inject: $name: at allocation $n"
		n=$((n + stride))
		[ $n -le 5000 ] || fail "$name: still failing allocations at 5000"
	done
	reset_$name
	[ "$rc" = 0 ] || fail "$name: fails with errno $rc without injection"
	if [ $stride = 1 ]; then
		echo "fault-inject: $name: $runs allocations failed one at a time, each one"
	else
		echo "fault-inject: $name: $runs of its $((n - 1)) or fewer allocations failed one at a time (every ${stride}th)"
	fi
	total=$((total + runs))
}

# A filter write and close under the function tracer on vfs_read.
setup_filter() {
	echo vfs_read > $T/set_ftrace_filter
	echo function > $T/current_tracer || fail "cannot start the function tracer"
	expect 1
}
op_filter() { echo write $T/set_ftrace_filter 'vfs_*'; }
# After the write, failed or not, the filter is the old one or the new
# one of $2 functions (a close cannot report an error): never a part of
# the new one, and never empty (which traces every function).
filter_old_or_new() {
	now=$(grep -v '^#' $T/set_ftrace_filter)
	[ "$now" = vfs_read ] || [ "$(lines $T/set_ftrace_filter)" -eq "$2" ] ||
		wrong "errno $1, the filter holds $(lines $T/set_ftrace_filter) functions: $(head -2 $T/set_ftrace_filter)"
	expect "$(traced)"
}
check_filter() { filter_old_or_new "$1" "$nvfs"; }
back_filter() {
	echo vfs_read > $T/set_ftrace_filter || fail "filter: cannot set the filter back"
	expect 1
}
reset_filter() {
	echo nop > $T/current_tracer
	echo > $T/set_ftrace_filter
	expect 0
}

# The same with a Rust path (traced Rust code): the write also allocates
# the buffer the symbols are demangled into.
setup_rustfilter() { setup_filter; }
op_rustfilter() { echo write $T/set_ftrace_filter 'kernel::print::*'; }
check_rustfilter() { filter_old_or_new "$1" "$nprint"; }
back_rustfilter() { back_filter; }
reset_rustfilter() { reset_filter; }

# Tracer switches (filtered, so that each one patches a few sites).
tracer_setup() {
	echo 'vfs_*' > $T/set_ftrace_filter
	nfilter=$(lines $T/set_ftrace_filter)
}
tracer_check() { # errno tracer
	cur=$(cat $T/current_tracer)
	[ "$1" != 0 ] || [ "$cur" = "$2" ] || fail "$name: the switch succeeded, current_tracer is $cur"
	case $cur in
	nop) expect 0 ;;
	*) expect "$(traced)" ;;
	esac
}
tracer_back() { # tracer sites
	echo $1 > $T/current_tracer || fail "$name: cannot switch back to $1"
	expect $2
}
tracer_reset() {
	echo nop > $T/current_tracer
	echo > $T/set_ftrace_filter
	expect 0
}
setup_function_on() { tracer_setup; }
op_function_on() { echo write $T/current_tracer function; }
check_function_on() { tracer_check "$1" function; }
back_function_on() { tracer_back nop 0; }
reset_function_on() { tracer_reset; }
setup_function_off() { tracer_setup; echo function > $T/current_tracer; expect "$nfilter"; }
op_function_off() { echo write $T/current_tracer nop; }
check_function_off() { tracer_check "$1" nop; }
back_function_off() { tracer_back function "$nfilter"; }
reset_function_off() { tracer_reset; }
setup_graph_on() { tracer_setup; }
op_graph_on() { echo write $T/current_tracer function_graph; }
check_graph_on() { tracer_check "$1" function_graph; }
back_graph_on() { tracer_back nop 0; }
reset_graph_on() { tracer_reset; }
setup_graph_off() { tracer_setup; echo function_graph > $T/current_tracer; expect "$nfilter"; }
op_graph_off() { echo write $T/current_tracer nop; }
check_graph_off() { tracer_check "$1" nop; }
back_graph_off() { tracer_back function_graph "$nfilter"; }
reset_graph_off() { tracer_reset; }

# A kprobe event (on an ftrace site: it goes through the core) enabled.
setup_kprobe() { echo 'p:fi_probe vfs_read' > $T/kprobe_events || fail "cannot add the kprobe event"; }
op_kprobe() { echo write $T/events/kprobes/fi_probe/enable 1; }
check_kprobe() {
	on=$(cat $T/events/kprobes/fi_probe/enable)
	[ "$1" != 0 ] || [ "$on" = 1 ] || fail "kprobe: enabled, but the event says $on"
	expect "$on"
}
back_kprobe() {
	echo 0 > $T/events/kprobes/fi_probe/enable
	expect 0
}
reset_kprobe() {
	echo 0 > $T/events/kprobes/fi_probe/enable
	echo > $T/kprobe_events
	expect 0
}

# A module with traced functions, which puts a kprobe (through the core)
# on a function, loaded while the function tracer traces vfs_read and the
# module's own functions (cached :mod: filter).
# The function the module's kprobe probes: a system call's body, which
# clang (the KASAN build) inlines into its wrapper.
probed=__do_sys_getppid
grep -qx "$probed" $T/available_filter_functions || probed=__x64_sys_getppid
grep -qx "$probed" $T/available_filter_functions || probed=__arm64_sys_getppid
# Whether the module's kprobe is an ops of the core (KPROBES_ON_FTRACE,
# x86_64) and so one more enabled site; on arm64 it is a plain kprobe.
kpf=1
[ "$(uname -m)" = aarch64 ] && kpf=0
setup_modload() {
	printf 'vfs_read\n:mod:kprobe_example\n' > $T/set_ftrace_filter
	echo function > $T/current_tracer
	expect 1
}
op_modload() { echo insmod "$mods" symbol=$probed; }
check_modload() {
	if loaded kprobe_example; then
		# The filter's functions (vfs_read, and the module's unless its
		# cached :mod: entry could not be applied for want of memory)
		# and the probed function.
		expect $(($(grep -vc '^#\|^:mod:' $T/set_ftrace_filter) + kpf))
		[ $kpf = 0 ] || grep -q "^$probed " $T/enabled_functions || fail "modload: loaded, its kprobe site is not enabled"
		# Its init text is freed: no record of it is left.
		! grep -q '^kprobe_init ' $T/available_filter_functions ||
			fail "modload: a record of the freed init function kprobe_init is listed"
	else
		[ "$1" != 0 ] || fail "modload: insmod succeeded, no module"
		expect 1
	fi
}
reset_modload() {
	rmmod kprobe_example 2> /dev/null
	echo nop > $T/current_tracer
	echo > $T/set_ftrace_filter
	expect 0
}
# The module's unload drops the applied :mod: entry: the whole setup again.
back_modload() { reset_modload; setup_modload; }
# Its unload, same setting.
setup_modunload() {
	setup_modload
	insmod "$mods" symbol=$probed && return
	# On the C core, a failed allocation in the unload's kprobe disarm
	# (ftrace_set_filter_ip() copies the filter) leaves the probe in
	# kprobes' table after its module is gone: the next registration
	# on that function fails (EINVAL, after kprobes' own warnings).
	wrong "the module no longer loads: its kprobe cannot be registered again"
	reset_modload
	return 1
}
op_modunload() { echo rmmod kprobe_example; }
check_modunload() {
	if loaded kprobe_example; then
		[ "$1" != 0 ] || fail "modunload: rmmod succeeded, module still there"
	else
		expect 1
	fi
}
reset_modunload() { reset_modload; }
back_modunload() { reset_modunload; setup_modunload; }

# A direct call (ftrace-direct.ko: register_ftrace_direct() on
# wake_up_process in its init).
setup_direct() { :; }
op_direct() { echo insmod "$direct"; }
check_direct() {
	if loaded ftrace_direct; then
		expect 1
		grep -q "^	direct-->my_tramp" $T/enabled_functions ||
			fail "direct: no direct-->my_tramp line: $(head -3 $T/enabled_functions)"
	else
		[ "$1" != 0 ] || fail "direct: insmod succeeded, no module"
		expect 0
	fi
}
reset_direct() {
	rmmod ftrace_direct 2> /dev/null
	expect 0
}
back_direct() { reset_direct; }

cleanup
echo 'vfs_*' > $T/set_ftrace_filter
nvfs=$(lines $T/set_ftrace_filter)
echo > $T/set_ftrace_filter
nprint=0
echo 'kernel::print::*' > $T/set_ftrace_filter 2> /dev/null && nprint=$(lines $T/set_ftrace_filter)
echo > $T/set_ftrace_filter
skip=
for op in $FI_WALKS; do
	case " $skip " in
	*" $op "*) echo "fault-inject: $op: not run, the operation no longer works"; continue ;;
	esac
	walk $op && continue
	# After a failed start, the C core refuses every later function_graph
	# start (EEXIST): stopping it cannot be tried then.
	[ $op = graph_on ] && skip=graph_off
done
cleanup
[ $notes -eq 0 ] || extra="; $notes notes on the C core above"
echo "fault-inject: $total allocation failures injected in all, kernel alive, state consistent after each$extra"
