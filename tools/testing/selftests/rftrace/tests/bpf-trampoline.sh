#!/bin/sh
# BPF trampolines on the core. bpf_tramp attaches N fentry/fexit programs
# (alternating) to cmdline_proc_show, found through vmlinux's BTF, reads
# /proc/cmdline, checks that every program ran, and detaches them one by
# one, checking after each that the detached one stopped and the others
# did not: N = 1 (register_ftrace_direct), 2 and 38 (modify_ftrace_direct
# on every further attach and detach, 38 being the most one trampoline
# takes). Then the same while the function tracer traces every function
# (the site shared by the direct ops and the tracer's, through the
# full-regs trampoline), with an instance tracing cmdline_proc_show alone
# to show that the tracer still sees it. Then an fexit program and
# samples/livepatch on cmdline_proc_show, in both orders: the patched body
# runs and so does the program (the ops_func negotiation between the
# direct and the IPMODIFY ops).
T=/sys/kernel/tracing
I=$T/instances/bpftramp
F=cmdline_proc_show
fail() {
	echo "bpf-trampoline: $*"
	echo nop > $T/current_tracer
	[ -d $I ] && { echo nop > $I/current_tracer; rmdir $I; }
	lp_off
	exit 1
}
if [ ! -f /sys/kernel/btf/vmlinux ]; then
	echo "bpf-trampoline: needs BPF_SYSCALL, BPF_JIT and DEBUG_INFO_BTF"
	exit 4
fi
. /opt/rftrace/livepatch-lib.sh

for n in 1 2 38; do
	bpf_tramp $F $n mixed 'cat /proc/cmdline > /dev/null' || fail "$n programs"
done
[ -z "$(grep "^$F " $T/enabled_functions)" ] || fail "$F still in enabled_functions: $(grep "^$F " $T/enabled_functions)"

mkdir $I || fail "cannot make an instance"
echo $F > $I/set_ftrace_filter
echo function > $I/current_tracer || fail "cannot start the instance's function tracer"
echo function > $T/current_tracer || fail "cannot start the function tracer"
for n in 1 2 38; do
	bpf_tramp $F $n mixed 'cat /proc/cmdline > /dev/null' || fail "$n programs under the function tracer"
done
echo nop > $T/current_tracer
echo 0 > $I/tracing_on
seen=$(grep -c " $F <-" $I/trace)
echo nop > $I/current_tracer
rmdir $I
# A read before the first detach and one after each: 2 + 3 + 39.
[ "$seen" -ge 44 ] || fail "the instance's tracer saw $F $seen times, not 44"

[ -n "$lp" ] || { echo "bpf-trampoline: no livepatch sample, the livepatch case is not run"; exit 4; }
insmod "$lp" || fail "cannot load livepatch-sample.ko"
settle || fail "the patch's transition did not end"
rm -f /tmp/bt.cmd
bpf_tramp $F 1 fexit 'cat /proc/cmdline >> /tmp/bt.cmd' || fail "fexit on the patched function"
[ "$(sort -u /tmp/bt.cmd)" = "this has been live patched" ] ||
	fail "the patched body did not run under the fexit program: $(sort -u /tmp/bt.cmd)"
lp_off
# The other order: the fexit program first, then the livepatch (which asks
# the BPF trampoline to share the function, and it rebuilds itself).
cat > /tmp/bt-lp.sh << END
n=0
[ -d $L ] || insmod $lp || exit 1
while [ "\$(cat $L/transition 2> /dev/null)" = 1 ] && [ \$n -lt 120 ]; do sleep 0.5; n=\$((n + 1)); done
cat /proc/cmdline >> /tmp/bt.cmd
END
rm -f /tmp/bt.cmd
bpf_tramp $F 1 fexit 'sh /tmp/bt-lp.sh' || fail "fexit on a function then live-patched"
[ "$(sort -u /tmp/bt.cmd)" = "this has been live patched" ] ||
	fail "the patched body did not run under the fexit program attached first: $(sort -u /tmp/bt.cmd)"
lp_off
echo "bpf-trampoline: 1, 2 and 38 programs, alone and under the function tracer ($seen calls traced); fexit and livepatch on one function in both orders"
