#!/bin/sh
# The shadow stacks' memory: a task gets a 4 KiB stack when function_graph
# starts and, on the Rust core, gives it back when graph tracing stops
# (unless it is inside a traced function then); the C core keeps them
# until the tasks exit. Measured as unreclaimable slab memory with 100
# extra sleeping tasks, so that the stacks stand out of the noise.
T=/sys/kernel/tracing
pids=
fail() { echo "graph-memory: $*"; kill $pids 2> /dev/null; exit 1; }
unrec() { awk '/^SUnreclaim:/ { print $2 }' /proc/meminfo; }
for i in $(seq 100); do
	sleep 1000 &
	pids="$pids $!"
done
sleep 1
n=$(ls -d /proc/[0-9]*/task/[0-9]* | wc -l)
echo nop > $T/current_tracer
before=$(unrec)
echo function_graph > $T/current_tracer || fail "cannot select function_graph"
sleep 1
on=$(unrec)
echo nop > $T/current_tracer
sleep 1
after=$(unrec)
kill $pids
wait 2> /dev/null
half=$((n * 4 / 2))
echo "graph-memory: $n tasks; unreclaimable slab $before kB before, $on kB with function_graph, $after kB after"
[ $((on - before)) -ge $half ] ||
	fail "function_graph on: +$((on - before)) kB for $n tasks (expected at least $half)"
if dmesg | grep -q 'function tracer core: Rust (generic core'; then
	[ $((on - after)) -ge $half ] ||
		fail "function_graph off: $((on - after)) kB given back (expected at least $half)"
	echo "graph-memory: $((on - after)) kB given back when graph tracing stopped"
else
	echo "graph-memory: C core: $((on - after)) kB given back (it keeps the stacks until the tasks exit)"
fi
