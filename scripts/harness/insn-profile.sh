#!/usr/bin/env bash
# make insn-profile SCRIPT=guest.sh CALLS=N [CORE=..] [CONF=tiny]: where
# a guest's instructions go, function by function.
#
# The guest runs SCRIPT twice under -icount shift=0 with the TCG plugin
# of insn-profile/tbcount.c, which counts every kernel translation
# block's executions: once with N=BASE (0) and once with N=CALLS in its
# environment (SCRIPT runs the measured path N times). Each block is charged to the function its first
# instruction is in (vmlinux's symbols; "[module or trampoline]" outside
# vmlinux), and each function's instructions of the second run less the
# first are divided by CALLS - BASE: the table is then
# instructions per call, the same unit as `make bench`'s ns/call.
# Two cores' tables are compared by insn-profile-compare (below, CORE=both).
set -euo pipefail
. "$(dirname "$0")/env.sh"
: "${SCRIPT:?SCRIPT= the guest script to profile}"
CALLS=${CALLS:-1}
BASE=${BASE:-0}
TOP=${TOP:-40}
plugin=$build/tbcount.so
pdir=$top/scripts/harness/insn-profile
if [ ! -f "$plugin" ] || [ "$pdir/tbcount.c" -nt "$plugin" ]; then
	gcc -shared -fPIC -O2 -Wall -o "$plugin" "$pdir/tbcount.c"
fi
cores=$CORE
[ "${BOTH:-0}" = 1 ] && cores="c rust"
for core in $cores; do
	o=$build/insn-profile-$core-$CONF$archsuffix
	# The same guest twice, SCRIPT seeing N=BASE (0) then N=CALLS: what
	# the second run executes more is the cost of CALLS - BASE calls.
	for n in "$BASE" "$CALLS"; do
		{ echo "N=$n"; cat "$SCRIPT"; } > "$o.script"
		CORE=$core MODE=script SCRIPT="$o.script" ICOUNT=0 KAPPEND=nokaslr \
			PLUGIN="$plugin,out=$o.$n.tb" TIMEOUT=${TIMEOUT:-1800} LOG="$o.$n.log" \
			"$top/scripts/harness/run-qemu.sh" > /dev/null
	done
	nm -n "$build/out-$core-$CONF$archsuffix/vmlinux" | awk '$2 ~ /^[tTwW]$/ { print $1, $3 }' > "$o.syms"
	python3 "$pdir/attribute.py" "$o.syms" "$o.$BASE.tb" "$o.$CALLS.tb" "$((CALLS - BASE))" > "$o.txt"
done
if [ "${BOTH:-0}" = 1 ]; then
	python3 "$pdir/attribute.py" --compare "$build/insn-profile-c-$CONF$archsuffix.txt" \
		"$build/insn-profile-rust-$CONF$archsuffix.txt" | head -n "$TOP"
else
	head -n "$TOP" "$build/insn-profile-$CORE-$CONF$archsuffix.txt"
fi
