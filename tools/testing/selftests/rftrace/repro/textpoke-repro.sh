#!/bin/sh
# Cross-CPU code patching without the function tracer: textpoke_repro.ko
# flips eight static keys (text_poke_bp_batch()'s int3 protocol, 128 jump
# sites) from one CPU while every other CPU runs the code of those sites
# in a loop. A CPU that still executes a site's int3 after the batch has
# dropped its descriptor kills the kernel ("int3: 0000 [#1]", RIP one
# byte past the site): that is what an emulator running code translated
# from bytes already overwritten does (multi-threaded TCG), not what
# hardware does. The callers also check, between flips, that every
# function takes the branches its keys say: one that does not ran code
# translated from an overwritten instruction ("stale", the only sign on
# arm64, which has no int3 in its protocol). The run must end with the
# module's summary line, a non-zero count of flips and of calls, and no
# stale call.
#
#   REPRO_SECONDS=s  how long the keys are flipped (30)
M=/opt/rftrace/modules
P=/sys/module/textpoke_repro/parameters
secs=${REPRO_SECONDS:-30}
[ -f $M/textpoke_repro.ko ] ||
	{ echo "textpoke-repro: the harness's test modules are not built (MODULES)"; exit 4; }
cpus=$(grep -c '^processor' /proc/cpuinfo)
[ "$cpus" -ge 2 ] || { echo "textpoke-repro: needs two CPUs, the guest has $cpus"; exit 4; }
# A caller that died in the middle leaves the module unable to stop: it
# stays loaded then, the console has the oops.
fail() { echo "FAIL: $*"; exit 1; }

insmod $M/textpoke_repro.ko seconds="$secs" || fail "cannot load textpoke_repro.ko"
waited=0
while [ "$(cat $P/done)" = 0 ]; do
	[ "$waited" -le $((secs + 60)) ] ||
		fail "no summary after $waited s: $(dmesg | grep textpoke_repro: | tail -3)"
	sleep 1
	waited=$((waited + 1))
done
st=$(cat $P/done)
line=$(dmesg | grep 'textpoke_repro: [0-9]* s, toggles ' | tail -1)
echo "$line"
[ "$st" = 1 ] || fail "done=$st: $(dmesg | grep textpoke_repro: | tail -3)"
rmmod textpoke_repro || fail "cannot unload textpoke_repro"
toggles=$(echo "$line" | sed -n 's/.* toggles \([0-9]*\), calls \([0-9]*\), stale \([0-9]*\)$/\1/p')
calls=$(echo "$line" | sed -n 's/.* toggles \([0-9]*\), calls \([0-9]*\), stale \([0-9]*\)$/\2/p')
stale=$(echo "$line" | sed -n 's/.* toggles \([0-9]*\), calls \([0-9]*\), stale \([0-9]*\)$/\3/p')
[ "${toggles:-0}" -gt 0 ] && [ "${calls:-0}" -gt 0 ] && [ -n "$stale" ] ||
	fail "nothing ran: '$line'"
[ "$stale" = 0 ] || fail "$stale calls ran stale code: $(dmesg | grep 'textpoke_repro: stale' | tail -1)"
echo "textpoke-repro: ok ($cpus CPUs, $toggles flips, $calls calls, none stale)"
