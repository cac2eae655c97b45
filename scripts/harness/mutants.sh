#!/usr/bin/env bash
# `make mutants`: that the project's tests catch every deliberate break of
# the Rust core. Boots the mutants kernel (CONFIG_FTRACE_CORE_RUST_MUTANTS,
# kernel/configs/ftrace-mutants.config, built by the Makefile) once per
# break, on TORTURE_CPUS vCPUs that really run at once (mttcg), switches
# the break on (tools/testing/selftests/rftrace/mutant-run.sh) and runs
# the test that must catch it. A break is caught when that test fails,
# the kernel reports trouble (an Oops, a KASAN report, a warning), or the
# guest dies. Prints a table: break, test, caught, seconds from switching
# it on to the first sign (the test's failure, or the kernel's report).
#
#   MUTANTS_ONLY='1 5' limits the run to those breaks.
set -uo pipefail
. "$(dirname "$0")/env.sh"
[ -f "$out/arch/x86/boot/bzImage" ] || { echo "mutants: no mutants kernel at ${out#$top/}" >&2; exit 2; }
mkdir -p "$build/log"

# number name test: the breaks of kernel/trace/rftrace/base/mutant.rs.
# 0 is the control: the same kernel and guest with no break, each test of
# the table, which must all pass, or no catch below means anything.
table='
0 control torture.sh
0 control groups-reuse.sh
0 control rust-ftrace-kill.sh
0 control direct-samples.sh
1 drop-one-callback-in-64 torture.sh
2 call-callback-twice torture.sh
3 skip-rcu-tasks-wait torture.sh
4 clobber-callee-saved-rbx torture.sh
5 clobber-argument-r9 torture.sh
6 clobber-return-value torture.sh
7 ignore-the-filter torture.sh
8 graph-wrong-return-address torture.sh
9 graph-drop-return-in-64 torture.sh
10 skip-int3-batch-last-sync torture.sh
11 free-group-still-called groups-reuse.sh
12 free-lost-registration rust-ftrace-kill.sh
13 direct-table-miss direct-samples.sh
14 skip-graph-unregister-wait torture.sh'

trouble='WARNING:|BUG:|Oops|Kernel panic|general protection fault|KASAN:|UBSAN:|ftrace bug|ftrace failed|ftrace faulted|unable to handle'
secs() { sed -n 's/^\[ *\([0-9]*\.[0-9]*\)\].*/\1/p' | head -1; }
results=$build/log/mutants-$CONF.txt
: > "$results"
fail=0
while read -r n name test; do
	[ -n "$n" ] || continue
	if [ "$n" = 0 ]; then
		# A control run of a test that no break of this run uses is
		# skipped.
		[ -z "${MUTANTS_ONLY:-}" ] || echo "$table" | awk -v t="$test" -v o=" $MUTANTS_ONLY " \
			'$3 == t && $1 != 0 && index(o, " " $1 " ") { f = 1 } END { exit !f }' || continue
	else
		case " ${MUTANTS_ONLY:-$n} " in *" $n "*) ;; *) continue ;; esac
	fi
	log=$build/log/mutant-$n-${test%.sh}.log
	console=${log%.log}.console.log
	echo "--- mutant $n ($name): $test"
	t0=$(date +%s)
	MODE=cmd CMD="sh /opt/rftrace/mutant-run.sh $n $test" LOG="$log" \
		ACCEL=mttcg SMP="${TORTURE_CPUS:-4}" ICOUNT= KAPPEND="preempt=full" TORTURE_SECONDS="${TORTURE_SECONDS:-60}" \
		TIMEOUT=$((${TORTURE_SECONDS:-60} + 480)) OUT_PREFIX="[mutant $n] " \
		"$top/scripts/harness/run-qemu.sh" > /dev/null 2>&1
	qrc=$?
	wall=$(($(date +%s) - t0))
	on=$(grep -a 'rftrace: mutant .* on' "$console" | secs)
	rcline=$(grep -a "^MUTANT $n $test rc" "$log" | tail -1)
	trc=$(echo "$rcline" | sed -n 's/.* rc \([0-9]*\) .*/\1/p')
	first=$(sed -n '/rftrace: mutant .* on/,$p' "$console" | grep -aE "$trouble|mismatch|FAIL" | secs)
	how=
	[ -n "$trc" ] && [ "$trc" -ne 0 ] && how="test failed"
	sed -n '/rftrace: mutant .* on/,$p' "$console" | grep -aqE "$trouble" &&
		how="${how:+$how, }kernel report: $(sed -n '/rftrace: mutant .* on/,$p' "$console" | grep -aE "$trouble" | head -1 | sed 's/^\[[^]]*\] *//' | cut -c1-80)"
	[ -z "$rcline" ] && how="${how:+$how, }guest died (qemu rc $qrc)"
	if [ -n "$on" ] && [ -n "$first" ]; then
		t=$(awk "BEGIN { printf \"%.1f\", $first - $on }")
	else
		t=$(echo "$rcline" | sed -n 's/.* after \([0-9.]*\) s/\1/p')
		t=${t:-?}
	fi
	if [ "$n" = 0 ]; then
		if [ -n "$how" ]; then
			line="CONTROL FAILED: $test without a break ($how)"
			fail=1
		else
			line="CONTROL $test passes without a break (guest ${wall}s)"
		fi
	elif [ -n "$how" ]; then
		line="CAUGHT  $n $name by $test in $t s ($how; guest ${wall}s)"
	else
		line="MISSED  $n $name by $test (test rc ${trc:-?}; guest ${wall}s)"
		fail=1
	fi
	echo "$line" | tee -a "$results"
done <<< "$table"
echo "--- results in ${results#$top/}"
exit $fail
