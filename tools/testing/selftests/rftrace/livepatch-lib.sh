# Helpers of the tests that load samples/livepatch/livepatch-sample.ko;
# sourced, not run.
L=/sys/kernel/livepatch/livepatch_sample
lp=$(find /lib/modules -name livepatch-sample.ko | head -1)

# Waits (at most 60 s) for the patch's transition to end; the patch's
# sysfs directory goes when it is disabled.
settle() {
	n=0
	while [ -d $L ] && [ "$(cat $L/transition 2> /dev/null)" = 1 ] && [ $n -lt 120 ]; do
		sleep 0.5
		n=$((n + 1))
	done
	[ ! -d $L ] || [ "$(cat $L/transition 2> /dev/null)" != 1 ]
}

# Disables and unloads the patch if it is there.
lp_off() {
	[ -d $L ] && echo 0 > $L/enabled
	settle
	grep -q '^livepatch_sample ' /proc/modules && rmmod livepatch_sample
	return 0
}
