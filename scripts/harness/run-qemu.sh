#!/usr/bin/env bash
# Boot the kernel of $CORE in QEMU with the harness initramfs and run one
# job: MODE=shell (interactive), cmd (CMD=...), script (SCRIPT=path),
# test or bench. EXTRA=dir is copied to /extra in the guest.
#
# QEMU always ends: the guest powers off, a panic reboots (and
# -no-reboot ends QEMU), and a hung guest is killed after TIMEOUT
# seconds. The exit status is the job's, or non-zero with a message when
# the guest did not finish. The serial log is kept in build/log/.
set -uo pipefail
. "$(dirname "$0")/env.sh"

MODE=${MODE:-shell}
# An interactive shell has no time limit unless one is asked for.
TIMEOUT=${TIMEOUT:-$([ "$MODE" = shell ] && echo 0 || echo 600)}
ACCEL=${ACCEL:-tcg}
SMP=${SMP:-2}
MEM=${MEM:-$([ -n "$KASAN" ] || [ "${TOOLS:-0}" = 1 ] && echo 2G || echo 1G)}
[ -f "$kimage" ] || { echo "run-qemu: no kernel at ${kimage#$top/}; build it first" >&2; exit 2; }

# --- initramfs -------------------------------------------------------------
# GUEST names one of several guests booted at once (guest-tests.sh).
rootfs=$build/initramfs-$CORE${GUEST:+-$GUEST}
rm -rf "$rootfs" && mkdir -p "$rootfs"/{bin,harness,opt/rftrace,lib/modules}
# The host's busybox, or on arm64 Debian's arm64 build of it (setup-host.sh
# unpacks it into build/debian-arm64/).
busybox=/bin/busybox
[ "$ARCH" = arm64 ] && busybox=$build/debian-arm64/bin/busybox
cp "$busybox" "$rootfs/bin/busybox"
# The shell a file of its own, so that a process's maps name a shell
# binary (ftracetest's uprobe cases probe "/bin/...sh").
cp "$busybox" "$rootfs/bin/sh"
# Users and groups besides root, for ftracetest's tracefs ownership cases.
mkdir -p "$rootfs/etc"
printf 'root:x:0:0:root:/:/bin/sh\ndaemon:x:1:1:daemon:/:/bin/false\ntracer:x:1000:1000:tracer:/:/bin/false\n' > "$rootfs/etc/passwd"
printf 'root:x:0:\ndaemon:x:1:\ntracer:x:1000:\n' > "$rootfs/etc/group"
install -m 755 "$top/scripts/harness/guest/init" "$rootfs/init"
cp -a "$out/modroot/lib/modules/." "$rootfs/lib/modules/" 2>/dev/null || true
st=$src/tools/testing/selftests
cp -a "$st/rftrace/." "$rootfs/opt/rftrace/"
cp -a "$st/ftrace" "$rootfs/opt/ftracetest"
# Static helper programs for the guest, built when missing or older than
# their source. Several guests boot at once (guest-tests.sh) and may build
# the same program together: each links to a file of its own and renames
# it into place, so that no guest copies another's half-written binary.
static_tool() { # source binary
	if [ ! -x "$2" ] || [ "$1" -nt "$2" ] || [ "$st/rftrace/bpf_raw.h" -nt "$2" ]; then
		"${cross}gcc" -static -O2 -Wall -o "$2.$BASHPID" "$1" && mv -f "$2.$BASHPID" "$2" ||
			{ echo "run-qemu: cannot build ${2##*/}" >&2; exit 2; }
	fi
}
for tool in timed_write timed_read syscall_loop perf_records bpf_tramp bpf_scale perf_fn fail_nth boot_us; do
	static_tool "$st/rftrace/$tool.c" "$build/$tool$archsuffix"
	cp "$build/$tool$archsuffix" "$rootfs/bin/$tool"
done
# The host libraries a program links, at their paths (none for a static
# program or a file that is not one).
copy_libs() {
	ldd "$1" 2>/dev/null | grep -o '/[^ ]*' | while read -r lib; do
		[ -e "$rootfs$lib" ] && continue
		mkdir -p "$rootfs$(dirname "$lib")" && cp -L "$lib" "$rootfs$lib"
	done
}
# A host program and the libraries it links, in /opt/gnu/bin.
host_tool() {
	mkdir -p "$rootfs/opt/gnu/bin"
	cp "$1" "$rootfs/opt/gnu/bin/"
	copy_libs "$1"
}
# coreutils' nice, which Debian's busybox lacks (ftracetest's
# trigger-onchange-action-hist.tc runs "nice -n 1 ping"), and
# util-linux's chrt (tracer/wakeup.tc and wakeup_rt.tc run "chrt -f 5
# sleep 1" where the wakeup tracers exist: CONF=rt). The host's programs
# are x86_64 ones: an arm64 guest has busybox's alone.
if [ "$ARCH" = x86_64 ]; then
	for t in nice chrt; do
		host_tool "/usr/bin/$t"
		ln -sf "/opt/gnu/bin/$t" "$rootfs/bin/$t"
	done
fi
# TOOLS=1: the distribution's tracing tools, as Debian installs them
# (bpftrace, perf from linux-perf, rtla, rt-tests' cyclictest,
# stress-ng), with their libraries, in /opt/gnu/bin and linked into
# /usr/bin (tests/tools-*.sh; scripts/harness/guest-tests.sh boots them
# in a guest of their own: their libraries are some 200 MB).
if [ "${TOOLS:-0}" = 1 ]; then
	[ "$ARCH" = x86_64 ] || { echo "run-qemu: TOOLS=1 is for ARCH=x86_64" >&2; exit 2; }
	for t in /usr/bin/bpftrace /usr/bin/perf /usr/bin/rtla /usr/bin/cyclictest /usr/bin/stress-ng; do
		[ -x "$t" ] || { echo "run-qemu: TOOLS=1 needs $t (scripts/harness/setup-host.sh)" >&2; exit 2; }
		host_tool "$t"
		mkdir -p "$rootfs/usr/bin" && ln -sf "/opt/gnu/bin/${t##*/}" "$rootfs$t"
	done
fi
# The livepatch selftests, where the kernel has livepatch: the scripts,
# their modules built against this kernel, and the tools they need as the
# distribution has them (bash, kmod's insmod/rmmod, procps' sysctl,
# coreutils' date and stat, getconf: the scripts compare these tools' messages),
# with their libraries, in /opt/gnu (tests/livepatch-selftests.sh).
if [ "$ARCH" = x86_64 ] && ls "$out"/klp-test-modules/*.ko > /dev/null 2>&1; then
	lp=$rootfs/opt/livepatch
	mkdir -p "$lp/test_modules"
	cp "$st"/livepatch/*.sh "$lp/"
	cp "$out"/klp-test-modules/*.ko "$lp/test_modules/"
	static_tool "$st/livepatch/test_klp-call_getpid.c" "$build/test_klp-call_getpid"
	cp "$build/test_klp-call_getpid" "$lp/"
	for t in /bin/bash /usr/bin/kmod /usr/sbin/sysctl /usr/bin/date /usr/bin/getconf /usr/bin/stat; do
		host_tool "$t"
	done
	for m in insmod rmmod lsmod modprobe modinfo; do ln -sf kmod "$rootfs/opt/gnu/bin/$m"; done
	# test-sysfs.sh runs /bin/stat --format (busybox's installs no link
	# over an existing file).
	ln -sf /opt/gnu/bin/stat "$rootfs/bin/stat"
fi
# The harness's test modules, in /opt/rftrace/modules.
if ls "$out"/rftrace-test-modules/*.ko > /dev/null 2>&1; then
	mkdir -p "$rootfs/opt/rftrace/modules"
	cp "$out"/rftrace-test-modules/*.ko "$rootfs/opt/rftrace/modules/"
fi
{
	echo "MODE=$([ "$MODE" = cmd ] && echo script || echo "$MODE")"
	echo "CORE=$CORE"
	echo "CONF=$CONF"
	echo "SMP=$SMP"
	echo "KASAN=$KASAN"
	echo "BENCH_REPS=${BENCH_REPS:-5}"
	echo "FI_STRIDE=${FI_STRIDE:-1}"
	echo "OWN_TIMEOUT=${OWN_TIMEOUT:-600}"
	echo "TORTURE_SECONDS=${TORTURE_SECONDS:-60}"
	echo "REPRO_SECONDS=${REPRO_SECONDS:-30}"
	echo "SUITES='${SUITES:-own ftracetest}'"
} > "$rootfs/harness/job"
if [ -n "${FTRACETEST_LIST:-}" ]; then cp "$FTRACETEST_LIST" "$rootfs/harness/ftracetest.list"; else : > "$rootfs/harness/ftracetest.list"; fi
if [ -n "${OWN_LIST:-}" ]; then cp "$OWN_LIST" "$rootfs/harness/own.list"; fi
case "$MODE" in
cmd) if [ -n "${CMD_FILE:-}" ]; then cp "$CMD_FILE" "$rootfs/harness/script"
	elif [ -n "${CMD:-}" ]; then printf '%s\n' "$CMD" > "$rootfs/harness/script"
	else echo "run-qemu: CMD is empty" >&2; exit 2; fi ;;
script) [ -f "${SCRIPT:-}" ] || { echo "run-qemu: SCRIPT '${SCRIPT:-}' is not a file" >&2; exit 2; }
	cp "$SCRIPT" "$rootfs/harness/script" ;;
esac
if [ -n "${EXTRA:-}" ]; then
	[ -d "$EXTRA" ] || { echo "run-qemu: EXTRA '$EXTRA' is not a directory" >&2; exit 2; }
	mkdir -p "$rootfs/extra" && cp -a "$EXTRA/." "$rootfs/extra/"
	# Programs there get the host libraries they link (make bpf-selftests).
	find "$rootfs/extra" -type f -perm -u+x | while read -r f; do copy_libs "$f"; done
fi
initrd=$rootfs.cpio.gz
(cd "$rootfs" && find . | LC_ALL=C sort | cpio -o -H newc --quiet -R 0:0 | gzip -1 > "$initrd")

# --- QEMU --------------------------------------------------------------------
mkdir -p "$build/log"
# The job's output (second serial port) and the kernel console (first).
log=${LOG:-$build/log/$MODE-$CORE.log}
console=${log%.log}.console.log
append="console=ttyS0 panic=-1"
[ "$ARCH" = arm64 ] && append="console=ttyAMA0 panic=-1"
# The distribution configurations (production, rt) boot on a
# Skylake-class CPU model (one with the retbleed bug) with return-stack
# stuffing and retpolines, so the return-thunk and call-depth paths run:
# the boot log says which mitigations are on ("RETBleed: Mitigation:
# Stuffing").
if [ "$ARCH" = x86_64 ] && { [ "$CONF" = production ] || [ "$CONF" = rt ]; }; then
	CPU=${CPU:-Skylake-Client-v1}
	append+=" retbleed=stuff spectre_v2=retpoline,generic"
fi
# Under multi-threaded TCG every live text write is made twice (x86_64:
# glue 0008, every text_poke(); arm64: the Rust core's site writes,
# arch/arm64/kernel/rftrace/twice.c): QEMU keeps code translated from
# bytes a store was replacing (Documentation/harness.rst, "Parallelism").
# TWICE=0 runs the stock protocol alone (make textpoke-repro TWICE=0).
[ "$ACCEL" = mttcg ] && [ "${TWICE:-1}" = 1 ] && append+=" text_poke_twice"
append+=" ${KAPPEND:-}"
# arm64: the virt machine with a GICv3 and the emulator's fullest CPU
# (BTI, pointer authentication, with QEMU's cheap stand-in for the
# architected PAC algorithm: the real one's emulation is slow). Its
# second PL011 is made for the second -serial below.
case "$ARCH" in
x86_64) qemu=(qemu-system-x86_64) ;;
arm64) qemu=(qemu-system-aarch64 -machine virt,gic-version=3)
	CPU=${CPU:-max,pauth-impdef=on} ;;
esac
qemu+=(-m "$MEM" -smp "$SMP" -no-reboot -nographic
	-kernel "$kimage" -initrd "$initrd" -append "$append")
# ACCEL=tcg: one host thread runs the vCPUs in turn (the default: with
# -icount, guest time is an instruction count). ACCEL=mttcg: a host
# thread per vCPU, which really run at once (QEMU 10; no -icount then).
# Documentation/harness.rst, "Parallelism", says what each is good for.
case "$ACCEL" in
tcg) qemu+=(-accel tcg,thread=single)
	[ -n "${CPU:-}" ] && qemu+=(-cpu "$CPU") ;;
mttcg) qemu+=(-accel tcg,thread=multi)
	[ -n "${CPU:-}" ] && qemu+=(-cpu "$CPU") ;;
kvm) qemu+=(-accel kvm -cpu host) ;;
*) echo "run-qemu: ACCEL must be tcg, mttcg or kvm" >&2; exit 2 ;;
esac
[ -n "${ICOUNT:-}" ] && qemu+=(-icount "shift=$ICOUNT")
# PLUGIN=path[,args]: a TCG plugin (scripts/harness/insn-profile.sh).
[ -n "${PLUGIN:-}" ] && qemu+=(-plugin "$PLUGIN")

if [ "$MODE" = shell ]; then
	qemu+=(-serial mon:stdio)
	exec timeout --foreground "$TIMEOUT" "${qemu[@]}"
fi
qemu+=(-monitor none -chardev "file,id=con,path=$console" -serial chardev:con
	-chardev stdio,id=job,signal=off -serial chardev:job)
# OUT_PREFIX marks each shown line with the guest it came from.
prefix=${OUT_PREFIX:-}
prefix=${prefix//[\/&]/}
# A guest whose kernel reported an RCU stall has failed (the console
# check below says so), and one stalled for good would hold the host
# until TIMEOUT: STALL_GRACE seconds after the first report, for the
# reports that follow it, the guest is stopped.
stalled=$log.stalled
rm -f "$stalled"
: > "$console"
(
	while sleep 5; do
		grep -q 'detected stall' "$console" || continue
		sleep "${STALL_GRACE:-120}"
		: > "$stalled"
		pkill -f -- "id=con,path=$console"
		exit 0
	done
) &
watcher=$!
timeout -k 10 "$TIMEOUT" "${qemu[@]}" < /dev/null 2>&1 | stdbuf -oL tr -d '\r' | tee "$log" |
	if [ "${VERBOSE:-0}" = 1 ]; then sed -u "s/^/$prefix/"; else
		sed -u -e '/^=== harness: dmesg begin ===/,/^=== harness: dmesg end ===/d' -e "s/^/$prefix/"; fi
qrc=${PIPESTATUS[0]}
kill "$watcher" 2> /dev/null
wait "$watcher" 2> /dev/null
if [ "${VERBOSE:-0}" = 1 ]; then
	echo "--- kernel console (${console#$top/}) ---"
	cat "$console"
fi

# Kernel trouble on the console is shown whatever the job said.
trouble='WARNING:|BUG:|Oops|Kernel panic|general protection fault|circular locking|KASAN:|UBSAN:|detected stall|ftrace bug|ftrace failed|ftrace faulted'
if grep -Eq "$trouble" "$console"; then
	echo "run-qemu: kernel trouble on the console (${console#$top/}):" >&2
	grep -E -A12 "$trouble" "$console" | head -60 >&2
fi

rc=$(sed -n 's/^=== harness: exit \([0-9]*\) ===$/\1/p' "$log" | tail -1)
if [ -e "$stalled" ]; then
	echo "run-qemu: the guest kernel reported an RCU stall; stopped ${STALL_GRACE:-120}s later. Last console lines:" >&2
	tail -n 15 "$console" >&2
	exit 124
fi
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
	echo "run-qemu: guest did not finish within ${TIMEOUT}s (hung?); killed. Last console lines:" >&2
	tail -n 15 "$console" >&2
	exit 124
fi
if grep -q 'Kernel panic' "$console"; then
	echo "run-qemu: the guest kernel panicked. Console: ${console#$top/}" >&2
	exit 125
fi
if [ -z "$rc" ]; then
	echo "run-qemu: guest ended without reporting an exit status (qemu rc $qrc). Last console lines:" >&2
	tail -n 15 "$console" >&2
	exit 126
fi
if [ "$rc" -ne 0 ]; then
	echo "run-qemu: guest job exited with status $rc. Logs: ${log#$top/}, ${console#$top/}" >&2
fi
exit "$rc"
