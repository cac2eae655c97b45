#!/usr/bin/env bash
# make bench: build every core that exists, boot each in the same QEMU
# configuration with instruction counting, run the guest's bench.sh and
# print the C/Rust table; the rows go to build/bench/results.tsv.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build}
reps=${BENCH_REPS:-5}
# The benchmark runs on the lab kernel: tinyconfig + ftrace-test.config.
# BENCH_CONF=rt runs the same guest rows on the real-time configuration
# instead (derived from Debian's rt-amd64 kernel, with its debug set),
# without the production rows: build/bench/<core>-rt.log, results-rt.tsv.
export CONF=${BENCH_CONF:-tiny}
sfx=
if [ "$CONF" != tiny ]; then
	sfx=-$CONF
	BENCH_PRODUCTION=0
fi
# ARCH=arm64: the same rows on arm64's kernels (build/out-<core>-*-arm64),
# where the guest leaves out what arm64 has not (bench.sh): files
# <core>[-conf]-arm64.*, results[-conf]-arm64.tsv.
asfx=
[ "${ARCH:-x86_64}" = arm64 ] && asfx=-arm64
sfx=$sfx$asfx
mkdir -p "$build/bench"
args=()
for core in c rust; do
	if [ ! -f "$top/kernel/configs/ftrace-core-$core.config" ]; then
		echo "bench: CORE=$core: not built (no such core yet)"
		continue
	fi
	CORE=$core "$top/scripts/harness/build-kernel.sh"
	log=$build/bench/$core$sfx.log
	echo "  BENCH   CORE=$core CONF=$CONF"
	CORE=$core MODE=bench ICOUNT=0,sleep=off BENCH_REPS=$reps TIMEOUT=${TIMEOUT:-1800} LOG=$log \
		"$top/scripts/harness/run-qemu.sh" > "$build/bench/$core$sfx.out"
	# Boot: from the end of mm_core_init() ("SLUB: ...") to the core's
	# last line about its call sites (C: "ftrace: allocated ...", Rust: the
	# banner), in the console log: taking the sites and making them NOPs,
	# or checking them when the build did. One sample per boot. Not on
	# arm64, whose console clock starts after both lines (the guest's
	# boot-to-bench row instead).
	con=$build/bench/$core$sfx.console.log
	t0=$(grep -m1 'SLUB: HWalign' "$con" | sed 's/^\[ *\([0-9.]*\)\].*/\1/')
	t1=$(grep 'ftrace: ' "$con" | sed -n 2p | sed 's/^\[ *\([0-9.]*\)\].*/\1/')
	if [ -z "$asfx" ] && [ -n "$t0" ] && [ -n "$t1" ]; then
		awk -v a="$t0" -v b="$t1" 'BEGIN { printf "SAMPLE boot-sites-to-nop %.0f us\n", (b - a) * 1000000 }' >> "$log"
	fi
	# The direct-call rows need BPF: the same core on the production
	# configuration, its samples added to the core's log.
	if [ "${BENCH_PRODUCTION:-1}" = 1 ]; then
		CONF=production CORE=$core "$top/scripts/harness/build-kernel.sh"
		plog=$build/bench/$core-production$asfx.log
		echo "  BENCH   CORE=$core CONF=production (direct-call rows)"
		CONF=production CORE=$core MODE=bench ICOUNT=0,sleep=off BENCH_REPS=$reps \
			TIMEOUT=${TIMEOUT:-1800} LOG=$plog "$top/scripts/harness/run-qemu.sh" > "$build/bench/$core-production$asfx.out"
		# (The boot row is the lab kernel's.)
		grep '^SAMPLE ' "$plog" | grep -v '^SAMPLE boot-to-bench ' >> "$log"
	fi
	args+=(--"$core" "$log")
done
echo
if [ -n "${sfx%$asfx}" ]; then
	echo "Configuration: $CONF (build/out-<core>-$CONF), the lab kernel's rows."
	echo "QEMU TCG (thread=single), 2 vCPUs, -icount shift=0,sleep=off. Medians of $reps"
	echo "runs; means of $((reps * 6)) for the rows that wait for timer ticks."
	"$top/target/release/harness-report" bench "${args[@]}" --tsv "$build/bench/results$sfx.tsv"
	echo "rows written to build/bench/results$sfx.tsv"
	exit 0
fi
echo "Configuration: tiny (tinyconfig + kernel/configs/ftrace-test.config and the"
echo "core's fragment; build/out-<core>-tiny); direct-call and bpf-attach-38 on"
echo "production (kernel/configs/ftrace-production.config: BPF; build/out-<core>-production)."
echo "QEMU TCG (thread=single), 2 vCPUs, 1 GiB, -icount shift=0,sleep=off: guest time is"
echo "instruction count (1 insn = 1 ns), so runs repeat. Median of $reps runs each; the"
echo "mean of $((reps * 6)) for the rows that wait for timer ticks (enable/disable-all-sites,"
echo "enable/disable-one-site, module-1000-load/unload-under-function), whose samples"
echo "fall on values a tick apart as the tick's phase falls. The one-site"
echo "rows are the control of the all-sites rows: the same switch, one site to change,"
echo "so chiefly the ring-buffer reset's RCU grace periods, which neither core controls."
"$top/target/release/harness-report" bench "${args[@]}" --tsv "$build/bench/results$asfx.tsv"
echo "rows written to build/bench/results$asfx.tsv"
