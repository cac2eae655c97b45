#!/bin/sh
# Debian's bpftrace (0.17) in the guest, as a user runs it: the probes it
# lists, kfunc/kretfunc (BPF trampolines: direct calls of the core) and a
# kprobe wildcard, which bpftrace attaches as one kprobe_multi link (one
# fprobe: an ftrace_ops with a site per function). The workload is busybox
# dd copying 100 single bytes of /proc/version to /dev/null: exactly 100
# vfs_read() calls returning 1 and 101 vfs_write() calls (100 bytes and
# its "records in/out" lines), in a task named "dd". Each check reads what
# bpftrace printed.
name=tools-bpftrace
fail() { echo "$name: $*"; exit 1; }
command -v bpftrace > /dev/null || { echo "$name: no bpftrace in this guest (TOOLS=1)"; exit 4; }
T=/sys/kernel/tracing
dd100='dd if=/proc/version of=/dev/null bs=1 count=100'
bt() { bpftrace "$@" 2>&1; }

info=$(bt --info)
echo "$info" | grep -q 'kprobe_multi: yes' || fail "bpftrace --info: no kprobe_multi: $(echo "$info" | grep -i multi)"
echo "$info" | grep -q 'kfunc: yes' || fail "bpftrace --info: no kfunc: $(echo "$info" | grep -i kfunc)"

# Listing: kprobe:vfs_* are the vfs_ functions of available_filter_functions
# that kprobes do not refuse; kfunc: those of BTF.
l=$(bt -l 'kprobe:vfs_*') || fail "bpftrace -l kprobe:vfs_*: $l"
for f in vfs_read vfs_write vfs_open; do
	echo "$l" | grep -qx "kprobe:$f" || fail "bpftrace -l 'kprobe:vfs_*' lacks $f"
done
want=$(grep -c '^vfs_' $T/available_filter_functions)
got=$(echo "$l" | grep -c '^kprobe:vfs_')
[ "$got" -ge 10 ] && [ "$got" -le "$want" ] || fail "bpftrace -l listed $got vfs_ kprobes, the core lists $want"
l=$(bt -l 'kfunc:vfs_read') || fail "bpftrace -l kfunc:vfs_read: $l"
echo "$l" | grep -qE '^kfunc:(vmlinux:)?vfs_read$' || fail "bpftrace -l 'kfunc:vfs_read': $l"

# kfunc and kretfunc on one function: 100 entries, 100 returns of 1.
out=$(bt -c "$dd100" -e 'kfunc:vfs_read /comm == "dd"/ { @entry = count(); }
	kretfunc:vfs_read /comm == "dd"/ { @ret[retval] = count(); }') || fail "kfunc: $out"
echo "$out" | grep -qx '@entry: 100' || fail "kfunc:vfs_read did not count 100: $out"
echo "$out" | grep -qx '@ret\[1\]: 100' || fail "kretfunc:vfs_read did not see 100 returns of 1: $out"
[ "$(echo "$out" | grep -c '^@ret\[')" = 1 ] || fail "kretfunc:vfs_read saw other return values: $out"
[ "$(wc -l < $T/enabled_functions)" = 0 ] || fail "sites left enabled after kfunc: $(head -3 $T/enabled_functions)"

# A wildcard kprobe: one kprobe_multi link over every vfs_* function;
# func names the function each hit was in.
out=$(bt -c "$dd100" -e 'kprobe:vfs_* /comm == "dd"/ { @[func] = count(); }') || fail "kprobe:vfs_*: $out"
echo "$out" | grep -q '^Attaching 1 probe' || fail "kprobe:vfs_* not one probe: $(echo "$out" | head -2)"
echo "$out" | grep -qx '@\[vfs_read\]: 100' || fail "kprobe:vfs_* did not count 100 vfs_read: $out"
echo "$out" | grep -qx '@\[vfs_write\]: 101' || fail "kprobe:vfs_* did not count 101 vfs_write: $out"
[ "$(wc -l < $T/enabled_functions)" = 0 ] || fail "sites left enabled after kprobe_multi: $(head -3 $T/enabled_functions)"

# The same while the function tracer runs on every site: each vfs_ site
# then calls both (a group of two ops on the Rust core).
echo function > $T/current_tracer
out=$(bt -c "$dd100" -e 'kprobe:vfs_* /comm == "dd"/ { @[func] = count(); }') || fail "kprobe:vfs_* under function: $out"
echo nop > $T/current_tracer
echo "$out" | grep -qx '@\[vfs_read\]: 100' || fail "under the function tracer, kprobe:vfs_* did not count 100 vfs_read: $out"
echo "$name: bpftrace -l, kfunc/kretfunc vfs_read 100/100 (retval 1), kprobe:vfs_* (kprobe_multi) 100 vfs_read and 101 vfs_write, alone and under the function tracer"
