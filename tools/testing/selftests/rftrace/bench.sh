#!/bin/sh
# In-guest benchmark of the harness (`make bench`). Prints
# "SAMPLE <case> <value> <unit>" lines; the host takes the medians (the
# means of the cases a "MEAN <case>" line names).
. /harness/job
T=/sys/kernel/tracing
reps=${BENCH_REPS:-5}
# Boot on arm64, first: from the machine's start to here, on the counter
# that runs from reset (boot_us.c). The kernel's clock starts after the
# core has set its sites, so the console cannot time them there. One
# sample per boot; under -icount a boot repeats to the instruction.
[ "$(uname -m)" = aarch64 ] && echo "SAMPLE boot-to-bench $(boot_us) us"
# Rows whose time ends on timer ticks (the tracer switch waits for RCU
# grace periods, a module's unload for RCU-tasks: whole ticks of 4 ms,
# 4 to 10 of them from one sample to the next) take six times the
# samples: each is a fraction of a second, a median of five of them
# moved by 0.1 to 0.2 between runs of the same kernels, and a mean of 15
# by some 0.03.
waits=$((reps * 6))
# Those rows also start each sample at a pseudo-random point of the tick
# (dither.sh), and the host takes their mean ("MEAN <case>"): their
# samples fall on two or three values a tick apart, as the phase falls,
# and a median of such a sample lands on one value or the next as a
# sample or two move, the mean moves by their share.
. /opt/rftrace/dither.sh
# What the architecture has (arm64 in 6.12 has none of the three): kprobes
# on function entries that are ops of the core (KPROBES_ON_FTRACE), fprobe
# (BPF's kprobe_multi links), ops with a full pt_regs (WITH_REGS). Rows
# that measure them are left out where they are not.
kpf=1 fprobe=1 regs=1
[ "$(uname -m)" = aarch64 ] && kpf=0 fprobe=0 regs=0
# A system call's function (arm64 may keep no __do_sys_ body apart).
getppid_fn() {
	grep -qx __do_sys_getppid $T/available_filter_functions && echo __do_sys_getppid ||
		echo __arm64_sys_getppid
}

# Scale rows, over rftrace_many.ko (1,000 traced functions nothing calls;
# tools/testing/selftests/rftrace/modules): K kprobe events on K distinct
# functions of it enabled one after another, then disabled (the time of
# both), alone and while the function tracer runs on every site; and the
# module loaded and unloaded while the function tracer runs. TAG names the
# configuration's rows; FULL=0 runs only attach-1000-kprobes.
many=/opt/rftrace/modules/rftrace_many.ko
scale_rows() { # TAG FULL
	tag=$1 full=$2
	[ -f "$many" ] || { echo "bench: $many not found"; exit 1; }
	if [ $kpf = 0 ]; then
		[ "$full" = 1 ] || return 0
	else
	insmod "$many" || { echo "bench: cannot load rftrace_many.ko"; exit 1; }
	: > /tmp/en1000
	: > /tmp/en250
	k=0
	for fn in $(grep -o 'rftrace_many_[0-9]*' $T/available_filter_functions | sort -u | head -1000); do
		echo "p:rm$k $fn" >> $T/kprobe_events || { echo "bench: kprobe on $fn"; exit 1; }
		echo "$T/events/kprobes/rm$k/enable" >> /tmp/en1000
		[ $k -lt 250 ] && echo "$T/events/kprobes/rm$k/enable" >> /tmp/en250
		k=$((k + 1))
	done
	[ $k = 1000 ] || { echo "bench: $k functions of rftrace_many.ko listed"; exit 1; }
	attach() { # ROW LIST
		a=$(timed_write -f "$2" 1) && b=$(timed_write -f "$2" 0) ||
			{ echo "bench: $1: enable failed"; exit 1; }
		echo "SAMPLE $1$tag $((a + b)) us"
	}
	i=0
	while [ $i -lt "$reps" ]; do
		[ "$full" = 1 ] && attach attach-250-kprobes /tmp/en250
		attach attach-1000-kprobes /tmp/en1000
		i=$((i + 1))
	done
	if [ "$full" = 1 ]; then
		echo function > $T/current_tracer
		i=0
		while [ $i -lt "$reps" ]; do
			attach attach-1000-kprobes-under-function /tmp/en1000
			i=$((i + 1))
		done
		echo nop > $T/current_tracer
	fi
	echo > $T/kprobe_events
	rmmod rftrace_many
	[ "$full" = 1 ] || return 0
	fi
	echo function > $T/current_tracer
	echo "MEAN module-1000-load-under-function$tag"
	echo "MEAN module-1000-unload-under-function$tag"
	i=0
	while [ $i -lt "$waits" ]; do
		dither
		a=$(timed_write -x insmod "$many") && dither && b=$(timed_write -x rmmod rftrace_many) ||
			{ echo "bench: module load/unload failed"; exit 1; }
		echo "SAMPLE module-1000-load-under-function$tag $a us"
		echo "SAMPLE module-1000-unload-under-function$tag $b us"
		i=$((i + 1))
	done
	echo nop > $T/current_tracer
}

# The paths users hit on a distribution kernel, production
# configuration. Each row is one operation's time; the growth shows in two
# sizes. The functions: pick.sh, the same on both cores.
. /opt/rftrace/pick.sh
user_rows() {
	eligible
	all=$(wc -l < /tmp/eligible)
	# One in 20 gives 1,000 on x86_64; a kernel with fewer sites (arm64)
	# takes a smaller modulus, the same on both cores.
	m=20
	while [ "$(pick $m | wc -l)" -lt 1000 ] && [ $m -gt 1 ]; do m=$((m - 1)); done
	pick $m | head -1000 > /tmp/k1000
	pick 6 > /tmp/fcand
	[ "$(wc -l < /tmp/k1000)" = 1000 ] || { echo "bench: $(wc -l < /tmp/k1000) functions picked"; exit 1; }
	echo "SAMPLE eligible-functions $all functions"

	# The function tracer on one function, its filter replaced by a
	# pattern (open with O_TRUNC, write, close: the change is applied at
	# the close) and set back to the one function, under the running
	# tracer: [a-k]* (about 40% of the sites) and * (every site).
	echo $T/set_ftrace_filter > /tmp/filter
	echo $F > $T/set_ftrace_filter
	echo function > $T/current_tracer
	i=0
	while [ $i -lt "$reps" ]; do
		for p in 'a-k' all; do
			pat=$([ $p = all ] && echo '*' || echo '[a-k]*')
			echo SAMPLE "filter-one-to-$p" "$(timed_write -f /tmp/filter "$pat")" us
			echo SAMPLE "filter-$p-to-one" "$(timed_write -f /tmp/filter $F)" us
		done
		i=$((i + 1))
	done
	echo nop > $T/current_tracer
	echo > $T/set_ftrace_filter

	# Kprobe events (IPMODIFY, full regs) on 1 and on 100 functions,
	# where they are ops of the core,
	# enabled and disabled while the function tracer runs on every site:
	# the first disable after the tracer started, then the next enable
	# and disable. The tracer restarts for every sample.
	[ $kpf = 1 ] && {
	: > /tmp/kp100
	head -100 /tmp/k1000 > /tmp/kpf
	k=0
	while read -r fn; do
		echo "p:kpb$k $fn" >> $T/kprobe_events 2> /dev/null &&
			echo "$T/events/kprobes/kpb$k/enable" >> /tmp/kp100
		k=$((k + 1))
	done < /tmp/kpf
	head -1 /tmp/kp100 > /tmp/kp1
	echo "SAMPLE kprobe-events-defined $(wc -l < /tmp/kp100) events"
	i=0
	while [ $i -lt "$reps" ]; do
		for n in 1 100; do
			echo function > $T/current_tracer
			a=$(timed_write -f /tmp/kp$n 1) && b=$(timed_write -f /tmp/kp$n 0) &&
				c=$(timed_write -f /tmp/kp$n 1) && d=$(timed_write -f /tmp/kp$n 0) ||
				{ echo "bench: kprobe-$n under function: enable failed"; exit 1; }
			echo "SAMPLE kprobe-$n-on-under-function-first $a us"
			echo "SAMPLE kprobe-$n-off-under-function-first $b us"
			echo "SAMPLE kprobe-$n-on-under-function-then $c us"
			echo "SAMPLE kprobe-$n-off-under-function-then $d us"
			echo nop > $T/current_tracer
		done
		i=$((i + 1))
	done
	echo > $T/kprobe_events
	}

	# One BPF kprobe_multi link (one fprobe: one ops with N sites) over
	# 1,000 functions and over every eligible one, attached and detached,
	# alone and under the function tracer running on every site.
	multi() { # ROW LIST N
		out=$(bpf_scale kmulti "$2" "$3") || { echo "bench: $1: $out"; exit 1; }
		echo "$out" | sed -n 's/.*attach \([0-9]*\) us, detach \([0-9]*\) us.*/\1 \2/p' |
			awk -v r="$1" '{ print "SAMPLE " r "-attach " $1 " us"; print "SAMPLE " r "-detach " $2 " us" }'
	}
	for under in "" -under-function; do
		[ $fprobe = 1 ] || break
		[ -n "$under" ] && echo function > $T/current_tracer
		i=0
		while [ $i -lt "$reps" ]; do
			multi "kprobe-multi-1000$under" /tmp/k1000 1000
			# Every eligible function: 3 samples (seconds each on C).
			[ $i -lt 3 ] && multi "kprobe-multi-all$under" /tmp/eligible "$all"
			i=$((i + 1))
		done
		echo nop > $T/current_tracer
	done

	# N BPF fentry programs on N distinct functions (each its own BPF
	# trampoline: register_ftrace_direct()), attached one after another,
	# then detached. Detaching waits for BPF's RCU-tasks grace periods per
	# trampoline on either core (about 0.13 s each here), and C takes
	# some 50 s to attach 1,000: two samples of the 1,000 row.
	fentry() { # ROW N
		out=$(bpf_scale fentry /tmp/fcand "$2") || { echo "bench: $1: $out"; exit 1; }
		echo "$out" | sed -n 's/.*attach \([0-9]*\) us, detach \([0-9]*\) us.*/\1 \2/p' |
			awk -v r="$1" '{ print "SAMPLE " r "-attach " $1 " us"; print "SAMPLE " r "-detach " $2 " us" }'
	}
	i=0
	while [ $i -lt "$reps" ]; do
		fentry bpf-fentry-100 100
		[ $i -lt 2 ] && fentry bpf-fentry-1000 1000
		i=$((i + 1))
	done

	# The tracer's switch and filter rows while 0 and 300 BPF fentry
	# programs stay attached (one direct ops each, as a kernel with a few
	# hundred BPF trampolines has them): what many registered ops cost
	# the paths that touch every site (many-ops.sh). 1,000 programs take
	# the C core more than an hour here: bench-many-ops.sh, by hand.
	sh /opt/rftrace/many-ops.sh 0 "$reps" $F
	for n in 300; do
		out=$(bpf_scale fentry /tmp/fcand $n \
			"sh /opt/rftrace/many-ops.sh $n $reps $F > /tmp/many-ops.out") ||
			{ echo "bench: many-ops $n: $out"; exit 1; }
		cat /tmp/many-ops.out
	done
}

# On the production configuration (BPF, direct calls), the rows of the
# direct-call clients; everything else runs on the lab kernel (tiny).
# A BPF fentry program (two instructions: r0 = 0; exit) on one function
# of a system call is a direct call from its site into the program's BPF
# trampoline: direct-call is (time with it - time without) / calls, each
# the least of nine loops of 300 calls run one after another in the same
# process. A loop that a tick or another interrupt fell in is longer; one
# of 300 calls (under 2 ms on either architecture) is short enough for
# most to take none, and under -icount the least is then exact and the
# same on every run (loops of 20,000 always took some ticks, and the row
# varied by 2% between runs of one kernel);
# bpf-attach-38 the time to attach 38 programs to that function one by
# one and detach them again (each rebuilds its trampoline:
# register_/modify_/unregister_ftrace_direct).
if [ "$CONF" = production ]; then
	N=300 F=$(getppid_fn)
	i=0
	while [ $i -lt "$reps" ]; do
		rm -f /tmp/dc
		# The command runs after the attach and after the detach: the
		# first nine lines are loops with the program, the next nine
		# without it.
		out=$(bpf_tramp $F 1 fentry \
			"for k in 1 2 3 4 5 6 7 8 9; do syscall_loop $N >> /tmp/dc || exit 1; done") ||
			{ echo "bench: direct-call: $out"; exit 1; }
		t=$(sed -n 1,9p /tmp/dc | sort -n | head -1)
		base=$(sed -n 10,18p /tmp/dc | sort -n | head -1)
		echo "SAMPLE direct-call $(awk -v t="$t" -v b="$base" -v n=$N 'BEGIN { printf "%.2f", (t - b) / n }') ns/call"
		out=$(bpf_tramp $F 38 fentry true) || { echo "bench: bpf-attach-38: $out"; exit 1; }
		# "bpf_tramp: 38 fentry programs on F: attach A us, detach D us"
		echo "$out" | sed -n 's/.*attach \([0-9]*\) us, detach \([0-9]*\) us.*/\1 \2/p' |
			awk '{ print "SAMPLE bpf-attach-38 " $1 + $2 " us" }'
		i=$((i + 1))
	done
	# How the attach row grows with the number of sites.
	scale_rows -production 0
	user_rows
	exit 0
fi
mod=$(find /lib/modules -name ftrace-ops.ko | head -1)
[ -n "$mod" ] || { echo "bench: ftrace-ops.ko not found"; exit 1; }

# Reading available_filter_functions (open, read to its end 64 KiB at a
# time, close), what tools that cache it do once: first the first read
# since boot (nothing listed or filtered by name before it; on the Rust
# core it finds the kernel's site names), then the reads after it.
set -- $(timed_read $T/available_filter_functions)
echo SAMPLE list-available-functions-first "$1" us
i=0
while [ $i -lt "$reps" ]; do
	set -- $(timed_read $T/available_filter_functions)
	echo SAMPLE list-available-functions "$1" us
	i=$((i + 1))
done

# ftrace-ops.ko times nr_function_calls calls of a traced function with
# the given ops set up, prints "(N ns / call)" and refuses to load.
ops_case() { # name params...
	name=$1; shift
	i=0
	while [ $i -lt "$reps" ]; do
		dmesg -c > /dev/null
		insmod "$mod" "$@" 2> /dev/null
		# "Attempted <calls> calls to <fn> in <total>ns (<n>ns / call)"
		v=$(dmesg | sed -n 's/.*Attempted \([0-9]*\) calls to .* in \([0-9]*\)ns (.*/\2 \1/p' |
			tail -1 | awk '{ if ($2 > 0) printf "%.2f", $1 / $2 }')
		if [ -z "$v" ]; then
			echo "bench: $name: no result"; dmesg | tail -5; exit 1
		fi
		echo "SAMPLE $name $v ns/call"
		i=$((i + 1))
	done
}

ops_case baseline nr_ops_relevant=0
ops_case one-ops nr_ops_relevant=1
ops_case one-ops+10-irrelevant nr_ops_relevant=1 nr_ops_irrelevant=10
ops_case two-ops-list nr_ops_relevant=2
[ $regs = 1 ] && ops_case save-regs nr_ops_relevant=1 save_regs=1
ops_case recursion-assist nr_ops_relevant=1 assist_recursion=1

# One traced function of a system call, __do_sys_getppid, called N times from user
# space: the cost of a hook is (time with it - time without) / N.
N=20000
F=$(getppid_fn)
hook_case() { # name setup teardown
	name=$1 setup=$2 teardown=$3
	i=0
	while [ $i -lt "$reps" ]; do
		base=$(syscall_loop $N)
		eval "$setup" || { echo "bench: $name: setup failed"; exit 1; }
		t=$(syscall_loop $N)
		eval "$teardown"
		echo "SAMPLE $name $(awk -v t="$t" -v b="$base" -v n=$N 'BEGIN { printf "%.2f", (t - b) / n }') ns/call"
		i=$((i + 1))
	done
}
# function_graph: entry and return of one function (depth 1, one site).
hook_case function-graph \
	"echo $F > $T/set_ftrace_filter && echo 1 > $T/max_graph_depth && echo function_graph > $T/current_tracer" \
	"echo nop > $T/current_tracer; echo 0 > $T/max_graph_depth; echo > $T/set_ftrace_filter"
# A kprobe on the function's entry, which goes through ftrace (full regs).
[ $kpf = 1 ] && hook_case kprobe-on-ftrace \
	"echo 'p:rftbench $F' > $T/kprobe_events && echo 1 > $T/events/kprobes/rftbench/enable" \
	"echo 0 > $T/events/kprobes/rftbench/enable; echo > $T/kprobe_events"

# Turning the function tracer on and off over every call site.
echo SAMPLE sites "$(wc -l < $T/available_filter_functions)" sites
set -- $(cat $T/dyn_ftrace_total_info)
# "<records> pages:<pages> groups: <groups>"
recs=$1 pages=${2#pages:}
echo SAMPLE bytes-per-site "$((pages * 4096 / recs))" bytes
# The tracer switch, on and off, $waits times: rows enable-$1, disable-$1.
switch_rows() {
	echo "MEAN enable-$1"
	echo "MEAN disable-$1"
	i=0
	while [ $i -lt "$waits" ]; do
		dither
		echo SAMPLE "enable-$1" "$(timed_write $T/current_tracer function)" us
		dither
		echo SAMPLE "disable-$1" "$(timed_write $T/current_tracer nop)" us
		i=$((i + 1))
	done
}
switch_rows all-sites
# The same switch with one function in the filter: the core changes one
# site, so this is what the switch costs besides the core's work (chiefly
# the two RCU grace periods tracer_init() waits for when it resets the
# ring buffer, tracing_reset_online_cpus(), before the tracer registers),
# the floor under enable/disable-all-sites on either core.
echo $F > $T/set_ftrace_filter
switch_rows one-site
echo > $T/set_ftrace_filter
# The same sites changed without the tracer switch. The switch waits for
# two RCU grace periods before the tracer starts (tracer_init() resets the
# ring buffer: tracing_reset_online_cpus()), 24 to 79 ms on either core
# (measured in this configuration), which no core controls. Here the function tracer runs on one
# function, and its filter is emptied (every site: the file is opened
# with O_TRUNC and closed, the change applied at the close) and set again
# (the other sites back to the NOP): the core's work alone.
echo $F > $T/set_ftrace_filter
echo function > $T/current_tracer
echo $T/set_ftrace_filter > /tmp/filter
i=0
while [ $i -lt "$reps" ]; do
	echo SAMPLE enable-all-sites-by-filter "$(timed_write -f /tmp/filter '')" us
	echo SAMPLE disable-all-sites-by-filter "$(timed_write -f /tmp/filter $F)" us
	i=$((i + 1))
done
echo nop > $T/current_tracer
echo > $T/set_ftrace_filter
# Enabling a kprobe on one function while the function tracer runs on all
# sites: only that site changes (its call goes from the function tracer's
# own trampoline to the shared full-regs one).
echo 'p:rftbench2 '"$F" > $T/kprobe_events
echo function > $T/current_tracer
i=0
while [ $kpf = 1 ] && [ $i -lt "$reps" ]; do
	echo SAMPLE kprobe-enable-under-function "$(timed_write $T/events/kprobes/rftbench2/enable 1)" us
	echo 0 > $T/events/kprobes/rftbench2/enable
	i=$((i + 1))
done
echo nop > $T/current_tracer
echo > $T/kprobe_events
# The real-time configuration (make bench BENCH_CONF=rt) takes only the
# first scale row: with its debug set, the C core's rows of 1,000 kprobe
# events did not end within the 30 minutes of a guest beside a test run.
if [ "$CONF" = rt ]; then
	scale_rows "" 0
else
	scale_rows "" 1
fi
exit 0
