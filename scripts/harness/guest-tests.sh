#!/usr/bin/env bash
# The guest side of `make test` and `make ftracetest`: boot GUESTS guests
# of $CORE at once, each running its share of the tests (SUITES, the
# ftracetest cases of FTRACETEST_LIST), then turn all their serial logs
# into one summary. A TCG guest runs on one host thread, so two guests
# use a two-core machine fully; harness-report split shares the tests
# out by the guest times of an earlier run (test-times-$CONF.txt).
#
#   NAME=test SUITES='own ftracetest' TIMEOUT=s FTRACETEST_LIST=file \
#   KNOWN='file...' GUESTS=n guest-tests.sh --tests-dir DIR
#
# Logs: build/log/$NAME-$CORE-$CONF[-arm64][-k].log and .console.log (k,
# the guest's number, when there are several). The exit status fails on any
# failed or missing test, kernel trouble on a console, or a guest that
# did not finish.
set -uo pipefail
. "$(dirname "$0")/env.sh"
st=$top/tools/testing/selftests/rftrace
report=$top/target/release/harness-report
guests=${GUESTS:-1}
base=$build/log/$NAME-$CORE-$CONF${KASAN:+-kasan}$archsuffix
mkdir -p "$build/log"

# The suites not asked for have no tests to run or to expect.
own=()
case " $SUITES " in *" own "*) own=("$@") ;; esac
case " $SUITES " in *" ftracetest "*) ;; *)
	FTRACETEST_LIST=$base.no-ftracetest.list
	: > "$FTRACETEST_LIST" ;;
esac

# One guest runs the whole of SUITES (the own tests of the directory
# given: all of them, or those `make test-some` picked); several share the
# tests out.
lists=("$FTRACETEST_LIST") owns=("")
if [ "$guests" -eq 1 ] && [ "${#own[@]}" -gt 0 ]; then
	ls "${own[1]}" | grep '\.sh$' > "$base-0.own"
	owns=("$base-0.own")
fi
if [ "$guests" -gt 1 ]; then
	"$report" split --guests "$guests" --ftracetest-list "$FTRACETEST_LIST" \
		--times "$st/test-times-${CONF/rt/production}.txt" "${own[@]}" --out "$base" || exit 2
	lists=() owns=()
	for k in $(seq 0 $((guests - 1))); do
		lists+=("$base-$k.list") owns+=("$base-$k.own")
	done
fi

# The torture (tests/torture.sh) runs in a guest of its own, after the
# others, whose TORTURE_CPUS vCPUs really run at once (TORTURE_ACCEL,
# mttcg: a host thread each; Documentation/harness.rst, "Parallelism"),
# for TORTURE_SECONDS, with kmemleak on (built in, off elsewhere) and
# full preemption (preempt=full: its preemptible workers are preempted
# inside trampolines, so that the RCU Tasks waits matter). The other
# guests leave it out.
tort=
if [ -n "${TORTURE_ACCEL:-}" ] && [ "${#own[@]}" -gt 0 ] && [ -f "${own[1]}/torture.sh" ]; then
	tort=$base-torture
	if [ "$guests" -eq 1 ]; then
		ls "${own[1]}" | grep '\.sh$' > "$base-0.own"
		owns=("$base-0.own")
	fi
	for f in "${owns[@]}"; do
		sed -i '/^torture\.sh$/d; /^rust-ftrace-kill\.sh$/d' "$f"
	done
	# After the torture, the test that kills tracing for the rest of the
	# boot (tests/rust-ftrace-kill.sh), on CPUs that really run at once.
	printf '%s\n' torture.sh > "$tort.own"
	[ -f "${own[1]}/rust-ftrace-kill.sh" ] && echo rust-ftrace-kill.sh >> "$tort.own"
	: > "$tort.list"
fi

# The tests of the distribution's tools (tests/tools-*.sh: bpftrace and
# perf with some 200 MB of libraries) run in a guest of their own with the
# tools in its initramfs (TOOLS=1), before the torture's, so that the
# other guests do not unpack what they do not use. The tools are the
# host's x86_64 programs: an arm64 guest runs these tests where the
# others run, and they find no tool (UNSUPPORTED, known-failures-arm64.txt).
tools=
if [ "$ARCH" = x86_64 ] && [ "${#own[@]}" -gt 0 ] && ls "${own[1]}"/tools-*.sh > /dev/null 2>&1; then
	tools=$base-tools
	if [ "$guests" -eq 1 ] && [ -z "$tort" ]; then
		ls "${own[1]}" | grep '\.sh$' > "$base-0.own"
		owns=("$base-0.own")
	fi
	grep -h '^tools-.*\.sh$' "${owns[@]}" > "$tools.own"
	for f in "${owns[@]}"; do
		sed -i '/^tools-.*\.sh$/d' "$f"
	done
	: > "$tools.list"
	[ -s "$tools.own" ] || tools=
fi

logs=() consoles=() pids=()
for k in "${!lists[@]}"; do
	# Nothing left to run in it (`make torture`): no guest.
	[ -n "${owns[$k]}" ] && [ ! -s "${owns[$k]}" ] && [ ! -s "${lists[$k]}" ] && continue
	log=$base${lists[1]+-$k}.log
	logs+=("$log") consoles+=(--console "${log%.log}.console.log")
	MODE=test SUITES="$SUITES" LOG="$log" FTRACETEST_LIST="${lists[$k]}" OWN_LIST="${owns[$k]}" \
		GUEST=${lists[1]+$k} OUT_PREFIX=${lists[1]+"[guest $k] "} \
		"$top/scripts/harness/run-qemu.sh" &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do
	wait "$p" || rc=$?
done
# The tools' guest, then the torture's, one after the other: the
# torture's vCPUs are host threads that must really run at once. Twice a
# CI run's rt torture, with the real-time tools (cyclictest, rtla)
# running beside it on the 2-core host, reported an RCU stall and was
# stopped; alone it never did here, so starved vCPU threads are the
# likelier cause, and the end of its console is printed (below) should
# it happen again.
if [ -n "$tools" ]; then
	logs+=("$tools.log") consoles+=(--console "$tools.console.log")
	echo "--- the distribution's tools: $(tr '\n' ' ' < "$tools.own")"
	MODE=test SUITES=own LOG="$tools.log" FTRACETEST_LIST="$tools.list" OWN_LIST="$tools.own" \
		GUEST=tools OUT_PREFIX="[tools] " TOOLS=1 "$top/scripts/harness/run-qemu.sh" || rc=$?
fi
if [ -n "$tort" ]; then
	logs+=("$tort.log") consoles+=(--console "$tort.console.log")
	echo "--- the torture: ${TORTURE_CPUS:-4} vCPUs ($TORTURE_ACCEL), ${TORTURE_SECONDS:-60} s"
	# The real-time kernel's vCPUs poll when idle there (idle=poll: no
	# HLT, and the tick stays on): three CI runs of this guest stalled
	# (RCU), the one whose console was kept at boot, before any tracer
	# ran, a vCPU halted whose timer never fired ("rcu_preempt kthread
	# timer wakeup didn't happen"; Documentation/harness.rst,
	# "Parallelism").
	idle=
	[ "$CONF" = rt ] && idle=idle=poll
	MODE=test SUITES=own LOG="$tort.log" FTRACETEST_LIST="$tort.list" OWN_LIST="$tort.own" \
		GUEST=torture OUT_PREFIX="[torture] " ACCEL="$TORTURE_ACCEL" SMP="${TORTURE_CPUS:-4}" \
		KAPPEND="${KAPPEND:-} kmemleak=on preempt=full $idle" \
		ICOUNT= OWN_TIMEOUT=$((${TORTURE_SECONDS:-60} + 900)) TIMEOUT=$((${TORTURE_SECONDS:-60} + 2400)) \
		"$top/scripts/harness/run-qemu.sh" || rc=$?
fi
[ "${#logs[@]}" -gt 1 ] && echo "--- ${#logs[@]} guests done; logs: ${logs[*]#$top/}"
# A guest that did not finish its job: the end of its console, so that a
# run whose logs are gone (CI's clone) still says what the kernel said.
for l in "${logs[@]}"; do
	grep -q '^=== harness: exit' "$l" 2>/dev/null && continue
	c=${l%.log}.console.log
	[ -f "$c" ] || continue
	echo "--- ${l#$top/} did not finish; the end of its console:"
	tail -n 60 "$c" | sed 's/^/    | /'
done
known=()
for f in $KNOWN; do known+=(--known "$f"); done
"$report" test "${logs[@]}" "${consoles[@]}" --boot "$st/boot-selftests.txt" \
	"${known[@]}" --ftracetest-list "$FTRACETEST_LIST" "${own[@]}" || exit 1
exit "$rc"
