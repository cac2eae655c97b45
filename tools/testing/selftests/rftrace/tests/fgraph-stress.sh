#!/bin/sh
# function_graph under load: both vCPUs run a fork/exec/sleep-heavy
# workload for at least 60 s while the tracer is switched off and on 50
# times (10 on the production configuration), for at most 300 s and at
# least 10 switches (240 s and 3 on production); each switch unregisters
# the graph ops: the core takes the shadow stacks back and gives them out
# again.
# set_graph_function is rewritten meanwhile. A snapshot of the trace every
# tenth switch (third on production) is checked: durations are not
# negative (printed unsigned, a negative one would be enormous) and
# entries and returns nest per task. Kernel warnings are caught by the
# harness in the console log.
T=/sys/kernel/tracing
fail() { echo "fgraph-stress: $*"; touch /tmp/fgs.stop; exit 1; }
# A switch takes 30 s and more under TCG with the production
# configuration's debug options (lockdep, slab checks; 39 s on the C core
# with a second guest on the host).
# With KASAN (make test KASAN=1) a switch under this load took over
# 1,000 s: there the test asks for two switches in 25 minutes.
if [ -n "$KASAN" ]; then
	TOGGLES=${TOGGLES:-2} EVERY=1 MIN_TOGGLES=${MIN_TOGGLES:-2} MAX_SECONDS=${MAX_SECONDS:-1500}
elif [ "$CONF" = production ] || [ "$CONF" = rt ]; then
	# Reading and checking a snapshot of two full 2 MiB buffers took
	# about 260 s on the December 2 machine with two guests (one switch
	# in 304 s): the snapshot buffers are 512 KiB there. Ten switches took
	# 406 s in a CI run: at most 240 s of switching, at least three.
	# The snapshot holds a buffer per CPU: 1 MiB in all whatever
	# their number (8 vCPUs with 512 KiB each made one switch in 246 s).
	TOGGLES=${TOGGLES:-10} EVERY=3 MIN_TOGGLES=${MIN_TOGGLES:-3}
	BUFKB=$((1024 / $(nproc))) MAX_SECONDS=${MAX_SECONDS:-240}
else
	TOGGLES=${TOGGLES:-50} EVERY=10
fi
SECONDS_MIN=${SECONDS_MIN:-60}

rm -f /tmp/fgs.stop
# However this ends (the runner's timeout too), the helpers stop.
trap 'touch /tmp/fgs.stop' EXIT
trap 'touch /tmp/fgs.stop; exit 143' TERM INT
echo nop > $T/current_tracer
echo > $T/set_graph_function
# The size to give back: before the buffer was first used the file reads
# "7 (expanded: 1408)", and 1408 is what the next tests get (restoring 7
# left them a 7 KiB buffer: graph-stacktrace's stack trace was then
# overwritten before it was read, in the guest that ran this test first).
bufkb=$(sed -n 's/.*expanded: \([0-9]*\).*/\1/p' $T/buffer_size_kb)
[ -n "$bufkb" ] || bufkb=$(cut -d' ' -f1 $T/buffer_size_kb)
echo ${BUFKB:-2048} > $T/buffer_size_kb

# The workload: per vCPU, fork + exec + short sleeps, and reads.
cat > /tmp/fgs-work.sh << 'END'
while [ ! -e /tmp/fgs.stop ]; do
	sh -c 'cat /proc/version > /dev/null; sleep 0.01'
	ls / > /dev/null
	sleep 0.02
done
END
pin=
taskset -c 0 true 2> /dev/null && pin=yes
for c in 0 1; do
	if [ -n "$pin" ]; then taskset -c $c sh /tmp/fgs-work.sh & else sh /tmp/fgs-work.sh & fi
done

# The rewriter: a new set_graph_function every 0.3 s. do_exit never
# returns (its frame dies with the task); kernel_clone, the sleeps and
# exec return normally, some after sleeping.
(
	i=0
	while [ ! -e /tmp/fgs.stop ]; do
		case $((i % 5)) in
		0) f=kernel_clone ;;
		1) f='do_nanosleep ksys_read' ;;
		2) f='do_exit kernel_clone' ;;
		3) f='bprm_execve do_sys_openat2' ;;
		4) f='ksys_read do_nanosleep kernel_clone' ;;
		esac
		echo "$f" > $T/set_graph_function 2> /dev/null
		i=$((i + 1))
		sleep 0.3
	done
) &

# Checks one snapshot; prints "opens closes leaves" or FAIL lines.
check() {
	awk '
	# On the first failure, the lines of that task before it (its
	# history on every CPU) say what the depths were.
	function bad(m) {
		print "FAIL line " FNR ": " m ": " $0
		if (nbad++ == 0 && (k in nh))
			for (j = nh[k] - 20; j < nh[k]; j++)
				if (j >= 0 && ((k, j % 20) in hist)) print "  before: " hist[k, j % 20]
	}
	function note(k) { hist[k, nh[k] % 20] = FNR ": " $0; nh[k]++ }
	# A call inside the open entry on top of the task is one level deeper;
	# more when an interrupt came in while the graph core was entering or
	# leaving a function of the task (its depth was already counted).
	# Never shallower: that would be a lost return.
	function inside(k, ind) {
		if (sp[k] == 0) return
		if (ind < stk[k, sp[k]] + 2) bad("call at indent " ind " inside an open entry at " stk[k, sp[k]])
		if (ind > stk[k, sp[k]] + 2) gaps++
	}
	# First pass: the line where each CPU first appears. The buffers
	# overwrite their oldest pages, each CPU its own: the output (merged
	# by time) holds the events of a CPU only from its first line on, so
	# before the first line of the last CPU a task that ran on that CPU
	# meanwhile (migrated in the middle of a call, and back) can miss
	# entries or returns that were there. The open entries of the tasks
	# are forgotten at that line, as at LOST events.
	NR == FNR {
		if (match($0, /^ *[0-9]+\)/) && !(substr($0, 1, RLENGTH) in first))
			first[substr($0, 1, RLENGTH)] = FNR
		next
	}
	FNR == 1 { for (c in first) if (first[c] > start) start = first[c] }
	FNR == start { for (k in sp) sp[k] = 0 }
	/LOST/ { for (k in sp) sp[k] = 0; next }
	/=>/ && /^ *[0-9]+\)/ {
		cpu = $1; n = split($NF, a, "-"); cur[cpu] = a[n]; next
	}
	/^ *[0-9]+\)/ && /\|/ {
		cpu = $1
		p = index($0, "|"); head = substr($0, 1, p - 1); body = substr($0, p + 1)
		if (match(head, /[0-9]+\.[0-9]+ us/)) {
			d = substr(head, RSTART, RLENGTH - 3) + 0
			if (d > 60000000) bad("duration " d " us")
			ndur++
		}
		match(body, /^ */); ind = RLENGTH; txt = substr(body, ind + 1)
		if (txt == "" || txt ~ /^=|^</) next
		if (!(cpu in cur)) next
		k = cur[cpu]
		if (txt ~ /^}/) {
			if (sp[k] > 0) {
				if (stk[k, sp[k]] != ind) bad("return at indent " ind ", open entry at " stk[k, sp[k]])
				sp[k]--
			}
			closes++
		} else if (txt ~ /\{ *$/) {
			inside(k, ind)
			sp[k]++; stk[k, sp[k]] = ind; opens++
		} else if (txt ~ /\); *$/) {
			inside(k, ind)
			leaves++
		}
		note(k)
	}
	END {
		if (nbad > 0) exit 1
		print opens + 0, closes + 0, leaves + 0, ndur + 0, gaps + 0
	}' "$1" "$1"
}

start=$(cut -d. -f1 /proc/uptime)
i=0 checked=0 opens=0 durs=0 gaps=0
# At most MAX_SECONDS of switching (a switch of the C core under TCG can
# take 20 s and more), at least SECONDS_MIN and MIN_TOGGLES switches (10,
# 3 on production).
MAX_SECONDS=${MAX_SECONDS:-300}
MIN_TOGGLES=${MIN_TOGGLES:-10}
elapsed() { echo $(($(cut -d. -f1 /proc/uptime) - start)); }
while { [ $i -lt $TOGGLES ] && [ "$(elapsed)" -lt $MAX_SECONDS ]; } || [ "$(elapsed)" -lt $SECONDS_MIN ]; do
	echo function_graph > $T/current_tracer || fail "cannot select function_graph (switch $i)"
	sleep 0.5
	if [ $((i % EVERY)) -eq 0 ]; then
		echo 0 > $T/tracing_on
		cat $T/trace > /tmp/fgs.trace
		echo 1 > $T/tracing_on
		r=$(check /tmp/fgs.trace) || { echo "$r" | head -20; fail "bad trace at switch $i"; }
		echo "fgraph-stress: snapshot of switch $i checked at $(elapsed) s"
		set -- $r
		opens=$((opens + $1)) durs=$((durs + $4)) gaps=$((gaps + $5)) checked=$((checked + 1))
	fi
	echo nop > $T/current_tracer || fail "cannot select nop (switch $i)"
	i=$((i + 1))
	[ $((i % 10)) -eq 0 ] && echo "fgraph-stress: $i switches, $(($(cut -d. -f1 /proc/uptime) - start)) s"
done
elapsed=$(($(cut -d. -f1 /proc/uptime) - start))
touch /tmp/fgs.stop
wait
echo > $T/set_graph_function
echo $bufkb > $T/buffer_size_kb
[ "$(wc -l < $T/enabled_functions)" -eq 0 ] || fail "enabled_functions not empty: $(head -3 $T/enabled_functions)"
[ $i -ge $MIN_TOGGLES ] || fail "only $i switches in ${elapsed} s"
[ $opens -gt 0 ] && [ $durs -gt 0 ] || fail "the snapshots held no nested calls ($opens entries, $durs durations)"
echo "fgraph-stress: $i switches in ${elapsed} s, $checked snapshots checked: $opens entries, $durs durations, all nested ($gaps interrupts at entry/exit), none negative"
