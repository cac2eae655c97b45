#!/bin/sh
# Site groups that no site calls any more are freed (issue 35, finding
# 6). Six trace instances run the function tracer, each on a function
# of its own. One function then goes into the filters of one subset of
# them after another and out again: each step gives the function's site
# the group of exactly the instances that want it, so some 130 groups are
# made, one after the other, while every member stays registered. Before
# the fix a group lived until one of its members went: after 64 the room
# was full for good and every new site of several ops went through the
# list trampoline. Each group's trampoline is a `ftrace_trampoline` of
# `[__builtin__ftrace]` in kallsyms: their number must stay below the
# room, and the last set of instances must get a group of its own, whose
# trampoline then traces the function in every instance.
# Rust core only: the C core has no groups.
T=/sys/kernel/tracing
[ "$CORE" = c ] && { echo "the C core has no site groups"; exit 4; }
# arm64's groups are a callback and its table, named by the sites' ops
# literal: no trampolines in kallsyms to count.
[ "$(uname -m)" = aarch64 ] && { echo "arm64's site groups have no trampolines to count"; exit 4; }
N=6
F=vfs_getattr
tramps() { grep -c '\[__builtin__ftrace\]$' /proc/kallsyms; }
cleanup() {
	for i in $(seq $N); do
		echo nop > $T/instances/grp$i/current_tracer 2> /dev/null
		rmdir $T/instances/grp$i 2> /dev/null
	done
}
fail() { echo "FAIL: $*"; cleanup; exit 1; }
grep -qx "$F" $T/available_filter_functions || fail "$F has no site"
# Functions of their own, one per instance.
own=$(grep -v -e '^vfs_' -e ' ' -e '\.' $T/available_filter_functions | grep '^kstat_' | head -n $N)
[ "$(echo "$own" | wc -l)" -eq $N ] || own=$(grep -e '^rcu_' $T/available_filter_functions | grep -v '[ .]' | head -n $N)
i=0
for f in $own; do
	i=$((i + 1))
	mkdir $T/instances/grp$i || fail "cannot make instance grp$i"
	echo "$f" > $T/instances/grp$i/set_ftrace_filter || fail "cannot filter $f in grp$i"
	echo function > $T/instances/grp$i/current_tracer || fail "no function tracer in grp$i"
done
base=$(tramps)
echo "instances: $N, trampolines with their own: $base"
max=$base
# Every subset of two or more instances in turn (mask 3 to 2^N - 2).
mask=3 made=0
while [ $mask -lt $(((1 << N) - 1)) ]; do
	in=""
	for i in $(seq $N); do
		[ $((mask & (1 << (i - 1)))) -ne 0 ] && in="$in $i"
	done
	if [ "$(echo $in | wc -w)" -ge 2 ]; then
		for i in $in; do
			echo "$F" >> $T/instances/grp$i/set_ftrace_filter || fail "cannot add $F to grp$i"
		done
		made=$((made + $(echo $in | wc -w) - 1))
		n=$(tramps)
		[ "$n" -gt "$max" ] && max=$n
		for i in $in; do
			echo "!$F" >> $T/instances/grp$i/set_ftrace_filter || fail "cannot take $F from grp$i"
		done
	fi
	mask=$((mask + 1))
done
before=$(tramps)
echo "groups made: $made; trampolines at most $max, now $before"
# All instances: a set none of the loop's made, which needs a group.
for i in $(seq $N); do
	echo "$F" >> $T/instances/grp$i/set_ftrace_filter || fail "cannot add $F to grp$i"
	echo > $T/instances/grp$i/trace
done
after=$(tramps)
echo "the group of all $N: trampolines $before -> $after"
grep -q "^$F " $T/enabled_functions 2> /dev/null || grep -q "^$F" $T/enabled_functions || fail "$F is not enabled"
stat / > /dev/null
stat /proc > /dev/null
missing=""
for i in $(seq $N); do
	grep -q " $F <-" $T/instances/grp$i/trace || missing="$missing grp$i"
done
cleanup
[ -z "$missing" ] || fail "$F not traced in:$missing"
[ "$max" -lt $((base + 64)) ] || fail "the groups filled their room ($max trampolines with $base of the instances)"
[ "$after" -gt "$before" ] || fail "the set of all instances got no group of its own"
echo "PASS"
