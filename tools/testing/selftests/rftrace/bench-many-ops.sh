#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The many-ops rows of bench.sh alone (many-ops.sh under 0, 300 and
# 1,000 attached BPF fentry programs), with medians, run by hand on each
# core of the production configuration, as bench.sh runs:
#   ICOUNT=0,sleep=off make run CORE=rust CONF=production SCRIPT=<this script>
# Prints "MANY ROW MEDIAN us (N samples)" per row. REPS (5) samples a row.
T=/sys/kernel/tracing
REPS=${REPS:-5}
F=__do_sys_getppid
# The fentry candidates bench.sh's user_rows picks: the same on both cores.
. /opt/rftrace/pick.sh
eligible
pick 6 > /tmp/fcand
: > /tmp/many.all
sh /opt/rftrace/many-ops.sh 0 "$REPS" $F >> /tmp/many.all
for n in 300 1000; do
	out=$(bpf_scale fentry /tmp/fcand $n \
		"sh /opt/rftrace/many-ops.sh $n $REPS $F > /tmp/many-ops.out") ||
		{ echo "bench-many-ops: $n: $out"; exit 1; }
	echo "$out"
	cat /tmp/many-ops.out >> /tmp/many.all
done
for row in $(awk '{ print $2 }' /tmp/many.all | awk '!seen[$0]++'); do
	awk -v r="$row" '$2 == r { print $3 }' /tmp/many.all | sort -n |
		awk -v r="$row" '{ a[NR] = $1; s = s " " $1 }
			END { printf "MANY %s %d us (%d samples:%s)\n", r, a[int((NR + 1) / 2)], NR, s }'
done
