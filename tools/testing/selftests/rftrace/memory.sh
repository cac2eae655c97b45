#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The memory the tracer core takes, on each core of the same
# configuration, run by hand:
#   make run CORE=rust|c SCRIPT=tools/testing/selftests/rftrace/memory.sh
# Prints "MEM <what> ..." lines:
# - boot: the kernel's own lines on its image and per-CPU area, the
#   core's lines on its site table, then the unreclaimable slab, vmalloc
#   and per-CPU totals after boot and the largest slab caches;
# - per ops: what the function tracer on every site, and then 300 BPF
#   fentry programs (one direct ops each, every one with its own
#   trampoline on the Rust core), add to unreclaimable slab, vmalloc and
#   per-CPU memory. BPF's own share is the same on both cores: the
#   difference between the cores is the cores'.
T=/sys/kernel/tracing
. /opt/rftrace/pick.sh
field() { awk -v f="$1:" '$1 == f { print $2 }' ${2:-/proc/meminfo}; }
vals() { # [FILE]: unreclaimable slab, vmalloc, per-CPU (kB)
	echo "$(field SUnreclaim $1) $(field VmallocUsed $1) $(field Percpu $1)"
}
snap() { sync; echo 3 > /proc/sys/vm/drop_caches; vals; }
show() { # NAME BEFORE AFTER [DIVISOR]
	set -- "$1" $2 $3 "${4:-1}"
	echo "MEM $1 slab $(( ($5 - $2) / $8 )) vmalloc $(( ($6 - $3) / $8 )) percpu $(( ($7 - $4) / $8 )) kB"
}
echo "MEM cpus possible $(cat /sys/devices/system/cpu/possible) online $(cat /sys/devices/system/cpu/online) kernel_max $(cat /sys/devices/system/cpu/kernel_max)"
dmesg | grep -E 'ftrace: allocat|ftrace: taking|function tracer core|ftrace section at|\] Memory: |percpu: Embedded' | sed 's/^\[[ 0-9.]*\] /MEM boot: /'
set -- $(snap)
echo "MEM after boot: unreclaimable slab $1 vmalloc $2 percpu $3 kB"
awk 'NR > 2 { printf "MEM slab-cache %s %d kB\n", $1, $3 * $4 / 1024 }' /proc/slabinfo | sort -k4 -n -r | head -12
eligible
pick 6 > /tmp/fcand
b=$(snap)
echo function > $T/current_tracer
a=$(snap)
show "function-tracer-on" "$b" "$a"
echo nop > $T/current_tracer
b=$(snap)
out=$(bpf_scale fentry /tmp/fcand 300 "sync; echo 3 > /proc/sys/vm/drop_caches; cat /proc/meminfo > /tmp/mem.in") ||
	{ echo "memory: $out"; exit 1; }
a=$(vals /tmp/mem.in)
show "300-fentry-programs-total" "$b" "$a"
show "per-fentry-program" "$b" "$a" 300
