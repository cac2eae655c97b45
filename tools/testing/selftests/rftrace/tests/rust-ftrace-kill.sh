#!/bin/sh
# The safe Rust API (kernel::ftrace) when the tracer kills itself: a
# Registration the core can no longer take off its sites must not be
# freed, and the module that made it must be able to go.
#
# The sample rust_ftrace.ko registers a callback on vfs_read while every
# CPU reads in a loop. An injected failure of the next site patch
# (debugfs fail_rftrace_patch, the Rust core's) makes the core report the
# site and kill itself (ftrace_kill(), as after a real failed patch); the
# sample's site keeps calling its ops. Then the module is unloaded while
# the loops go on: unregister fails (ENODEV), and the Registration must
# switch its callback off, wait for the calls inside it, leak its memory
# and say so, once. Freeing it instead (the code of the module's callback
# and the ops both gone) faults on the next vfs_read, which the loops make
# at once: an Oops, or a KASAN use-after-free report, on the console.
#
# Tracing stays dead for the rest of the boot: the runner takes this test
# last, in the torture's guest (scripts/harness/guest-tests.sh).
T=/sys/kernel/tracing
F=/sys/kernel/debug/fail_rftrace_patch
fail=0
bad() { echo "FAIL: $*"; fail=1; }

[ -d $F ] || { echo "no $F (the Rust core with CONFIG_FAULT_INJECTION_DEBUG_FS)"; exit 4; }
ko=$(find /lib/modules -name rust_ftrace.ko | head -1)
[ -f "$ko" ] || { echo "rust_ftrace.ko not built (CONFIG_SAMPLE_RUST_FTRACE)"; exit 4; }

echo nop > $T/current_tracer
echo > $T/set_ftrace_filter
dmesg -c > /dev/null
insmod "$ko" func=vfs_read || { echo "FAIL: cannot load rust_ftrace"; exit 1; }
grep -q '^vfs_read ' $T/enabled_functions || bad "vfs_read not enabled: $(cat $T/enabled_functions)"

# A reader on every CPU, until /tmp/kill.stop.
rm -f /tmp/kill.stop
n=$(grep -c ^processor /proc/cpuinfo)
for i in $(seq "$n"); do
	(while [ ! -f /tmp/kill.stop ]; do
		dd if=/proc/version of=/dev/null bs=4 count=64 2> /dev/null
	done) &
done
sleep 1

# The next batch of site changes fails: switching the function tracer on
# for one function makes one.
echo 100 > $F/probability
echo 1 > $F/times
echo 0 > $F/space
echo 0 > $F/verbose
echo schedule > $T/set_ftrace_filter
echo function > $T/current_tracer 2> /dev/null
echo 0 > $F/probability
dmesg | grep -q "ftrace hit an injected failure at" || bad "no failed patch reported: $(dmesg | tail -5)"
sleep 1

# The sample goes while the readers call vfs_read, whose site still calls
# its ops.
rmmod rust_ftrace || bad "cannot unload rust_ftrace"
sleep 3
# A second registration after the kill is refused, and no second leak
# message.
insmod "$ko" func=vfs_read 2> /dev/null && { bad "registered after the kill"; rmmod rust_ftrace; }
sleep 2
touch /tmp/kill.stop
wait

log=$(dmesg)
echo "$log" | grep -E 'ftrace|rust_ftrace' | cut -c1-200
n=$(echo "$log" | grep -c 'the tracer may still call a Rust callback: leaking it')
[ "$n" -eq 1 ] || bad "want the leak message once, got it $n times"
echo "$log" | grep -q 'vfs_read was called [0-9]* times' || bad "the sample did not finish its unload"
echo "$log" | grep -E 'BUG:|Oops|KASAN|general protection|unable to handle' &&
	bad "the kernel faulted"
exit $fail
