#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The bench rows that wait for grace periods, sampled many times in one
# boot, so that their medians do not hang on the phase of the timer tick
# a run of 5 or 15 happens to meet. Run by hand on each core, as bench.sh
# runs (instruction counting, idle time skipped):
#   ICOUNT=0,sleep=off make run CORE=rust CONF=production SCRIPT=<this script>
#   ICOUNT=0,sleep=off make run CORE=rust CONF=tiny SCRIPT=<this script>
# Production (BPF, BTF): one kprobe_multi link over bench.sh's 1,000 functions,
# attached and detached N times, alone and under the function tracer.
# Tiny: rftrace_many.ko loaded and unloaded N times under the function
# tracer, and a kprobe enabled N times under it. Prints
# "WAITS ROW MEDIAN us (N samples, ms: ...)" per row.
T=/sys/kernel/tracing
N=${N:-25}
many=/opt/rftrace/modules/rftrace_many.ko
med() { # ROW: the samples on stdin, in us
	sort -n | awk -v r="$1" '{ a[NR] = $1; s = s sprintf(" %.1f", $1 / 1000) }
		END { if (NR) printf "WAITS %s %d us (%d samples, ms:%s)\n",
			r, a[int((NR + 1) / 2)], NR, s }'
}
if [ -e /sys/kernel/btf/vmlinux ]; then
	# Production. The functions bench.sh picks (user_rows): the same on
	# both cores.
	. /opt/rftrace/pick.sh
	eligible
	pick 20 | head -1000 > /tmp/k1000
	n=$(wc -l < /tmp/k1000)
	[ "$n" = 1000 ] || { echo "bench-waits: $n functions picked"; exit 1; }
	for under in "" -under-function; do
		[ -n "$under" ] && echo function > $T/current_tracer
		: > /tmp/att; : > /tmp/det
		i=0
		while [ $i -lt "$N" ]; do
			out=$(bpf_scale kmulti /tmp/k1000 1000) ||
				{ echo "bench-waits: $out"; exit 1; }
			re='s/.*attach \([0-9]*\) us, detach \([0-9]*\) us.*/\1 \2/p'
			echo "$out" | sed -n "$re" > /tmp/ad
			[ -s /tmp/ad ] || { echo "bench-waits: bpf_scale said: $out"; exit 1; }
			awk '{ print $1 }' /tmp/ad >> /tmp/att
			awk '{ print $2 }' /tmp/ad >> /tmp/det
			i=$((i + 1))
		done
		echo nop > $T/current_tracer
		med "kprobe-multi-1000$under-attach" < /tmp/att
		med "kprobe-multi-1000$under-detach" < /tmp/det
	done
else
	# Tiny.
	[ -f "$many" ] || { echo "bench-waits: $many not found"; exit 1; }
	echo function > $T/current_tracer
	: > /tmp/ld; : > /tmp/ul
	i=0
	while [ $i -lt "$N" ]; do
		a=$(timed_write -x insmod "$many") && b=$(timed_write -x rmmod rftrace_many) ||
			{ echo "bench-waits: module load/unload failed"; exit 1; }
		echo "$a" >> /tmp/ld
		echo "$b" >> /tmp/ul
		i=$((i + 1))
	done
	echo nop > $T/current_tracer
	med module-1000-load-under-function < /tmp/ld
	med module-1000-unload-under-function < /tmp/ul
	# A kprobe enabled under the function tracer (bench.sh's row): the
	# group of the two ops is made, or taken back from the reaper, whose
	# work runs after grace periods.
	echo 'p:rftwaits __do_sys_getppid' > $T/kprobe_events
	echo function > $T/current_tracer
	: > /tmp/ke
	i=0
	while [ $i -lt "$N" ]; do
		timed_write $T/events/kprobes/rftwaits/enable 1 >> /tmp/ke
		echo 0 > $T/events/kprobes/rftwaits/enable
		i=$((i + 1))
	done
	echo nop > $T/current_tracer
	echo > $T/kprobe_events
	med kprobe-enable-under-function < /tmp/ke
fi
echo "bench-waits: done"
