#!/bin/sh
# Livepatch on the core. samples/livepatch/livepatch-sample.ko redirects
# cmdline_proc_show() through an IPMODIFY|PERMANENT ops: /proc/cmdline
# shows the patched text once the transition is done, ftrace_enabled
# cannot be turned off meanwhile, and disabling and unloading the patch
# brings the original back. A kprobe with a post_handler
# (samples/kprobes/kprobe_example.ko on the same function) needs IPMODIFY
# too: whichever of the two comes second is refused with EBUSY, in both
# orders, as on the C core.
. /opt/rftrace/livepatch-lib.sh
kp=$(find /lib/modules -name kprobe_example.ko | head -1)
if [ -z "$lp" ] || [ -z "$kp" ]; then
	echo "livepatch: the livepatch and kprobe samples are not built (CONFIG_LIVEPATCH, CONFIG_SAMPLE_LIVEPATCH, CONFIG_SAMPLE_KPROBES)"
	exit 4
fi
fail() {
	echo "livepatch: $*"
	lp_off
	rmmod kprobe_example 2> /dev/null
	exit 1
}
orig=$(cat /proc/cmdline)

insmod "$lp" || fail "cannot load livepatch-sample.ko"
settle || fail "the patch's transition did not end in 60 s"
[ "$(cat /proc/cmdline)" = "this has been live patched" ] ||
	fail "/proc/cmdline not patched: $(cat /proc/cmdline)"
grep '^cmdline_proc_show ' /sys/kernel/tracing/enabled_functions | grep -q ' I ' ||
	fail "cmdline_proc_show not in enabled_functions as IPMODIFY: $(grep cmdline_proc_show /sys/kernel/tracing/enabled_functions)"
if echo 0 > /proc/sys/kernel/ftrace_enabled 2> /tmp/lp.err; then
	echo 1 > /proc/sys/kernel/ftrace_enabled
	fail "ftrace_enabled turned off under a permanent ops"
fi
grep -q busy /tmp/lp.err || fail "ftrace_enabled=0 refused, but not with EBUSY: $(cat /tmp/lp.err)"
# Livepatch first, then the kprobe.
if insmod "$kp" symbol=cmdline_proc_show 2> /tmp/lp.err; then
	fail "a kprobe with a post_handler accepted on the patched function"
fi
grep -qi busy /tmp/lp.err || fail "kprobe refused, but not with EBUSY: $(cat /tmp/lp.err)"
echo 0 > $L/enabled || fail "cannot disable the patch"
settle || fail "the unpatching transition did not end in 60 s"
rmmod livepatch_sample || fail "cannot unload the patch"
[ "$(cat /proc/cmdline)" = "$orig" ] || fail "/proc/cmdline not restored: $(cat /proc/cmdline)"

# The kprobe first, then the livepatch.
insmod "$kp" symbol=cmdline_proc_show || fail "cannot load kprobe_example.ko on cmdline_proc_show"
if insmod "$lp" 2> /tmp/lp.err; then
	fail "the livepatch accepted on a function a post_handler kprobe holds"
fi
grep -qi busy /tmp/lp.err || fail "livepatch refused, but not with EBUSY: $(cat /tmp/lp.err)"
settle
rmmod kprobe_example || fail "cannot unload kprobe_example"
[ "$(cat /proc/cmdline)" = "$orig" ] || fail "/proc/cmdline changed: $(cat /proc/cmdline)"
[ -z "$(grep cmdline_proc_show /sys/kernel/tracing/enabled_functions)" ] ||
	fail "cmdline_proc_show still in enabled_functions"
echo "livepatch: patched, refused a post_handler kprobe, unpatched; refused after the kprobe"
