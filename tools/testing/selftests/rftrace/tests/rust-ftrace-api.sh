#!/bin/sh
# The safe Rust API of the function tracer (rust/kernel/ftrace.rs), on
# either core: its rustdoc examples ran at boot as KUnit tests
# (CONFIG_RUST_KERNEL_DOCTESTS) and passed, as did every other kernel
# doctest (those of the kernel crate modules the core uses too), and the
# sample module
# samples/rust/rust_ftrace.ko counts the calls of the function its
# parameter names: its ops is in enabled_functions while loaded, the
# count it prints on unload covers the calls made meanwhile, and a name
# that selects nothing fails the load with EINVAL and leaves nothing.
T=/sys/kernel/tracing
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# 1. The doctests of kernel::ftrace, as KUnit reported them at boot.
res=$(dmesg | grep -E 'ok [0-9]+ rust_doctest_kernel_ftrace_rs_')
if [ -z "$res" ]; then
	if zcat /proc/config.gz 2>/dev/null | grep -q "CONFIG_RUST_KERNEL_DOCTESTS=y" ||
	   dmesg | grep -q rust_doctests_kernel; then
		bad "KUnit ran the kernel doctests but none of kernel::ftrace"
	else
		echo "note: no kernel doctests in this kernel (CONFIG_RUST_KERNEL_DOCTESTS)"
	fi
else
	echo "$res" | sed 's/^.*\] *//'
	echo "$res" | grep -q 'not ok' && bad "a kernel::ftrace doctest failed"
	[ "$(echo "$res" | grep -c ' ok ')" -ge 2 ] || bad "want 2 kernel::ftrace doctests, got: $res"
fi

# 2. Every kernel doctest passed, those of the kernel crate modules the
# core adds or uses among them (kernel::seq_file, kernel::tracefs,
# kernel::kallsyms, kernel::sync::rcu, Vec::push_within_capacity).
sum=$(dmesg | grep -E 'rust_doctests_kernel: pass:[0-9]+ fail:[0-9]+' | tail -1)
if [ -n "$sum" ]; then
	echo "$sum" | sed 's/^.*\] *//'
	echo "$sum" | grep -q ' fail:0 ' || bad "a kernel doctest failed: $sum"
	dmesg | grep -E 'not ok [0-9]+ rust_doctest_kernel_' | sed 's/^/FAIL: /'
	for t in seq_file_rs_0 tracefs_rs_0 kallsyms_rs_0 sync_rcu_rs_0 sync_rcu_rs_1 alloc_kvec_rs_5; do
		dmesg | grep -qE " ok [0-9]+ rust_doctest_kernel_$t\$" ||
			bad "doctest rust_doctest_kernel_$t did not pass"
	done
fi

# 3. The sample.
ko=$(find /lib/modules -name rust_ftrace.ko | head -1)
[ -f "$ko" ] || { echo "rust_ftrace.ko not built (CONFIG_SAMPLE_RUST_FTRACE)"; exit 4; }
dmesg -c > /dev/null
insmod "$ko" func=vfs_read || { echo "FAIL: cannot load rust_ftrace"; exit 1; }
grep -q '^vfs_read ' $T/enabled_functions ||
	bad "vfs_read not in enabled_functions while rust_ftrace is loaded: $(cat $T/enabled_functions)"
# Five read()s (busybox cat would sendfile(), which is no vfs_read).
dd if=/proc/version of=/dev/null bs=4 count=5 2> /dev/null
rmmod rust_ftrace || bad "cannot unload rust_ftrace"
log=$(dmesg | grep 'rust_ftrace:')
echo "$log"
echo "$log" | grep -q 'counting the calls of vfs_read' || bad "no start line"
n=$(echo "$log" | sed -n 's/.*vfs_read was called \([0-9]*\) times.*/\1/p')
[ -n "$n" ] && [ "$n" -ge 5 ] || bad "want at least 5 calls of vfs_read counted, got '${n:-none}'"
grep -q '^vfs_read ' $T/enabled_functions && bad "vfs_read still enabled after unload"

# A name that selects nothing: the load fails with EINVAL.
err=$(insmod "$ko" func=no_such_function_xyz 2>&1) && bad "loaded with a function that does not exist"
echo "insmod func=no_such_function_xyz: $err"
lsmod | grep -q '^rust_ftrace' && { bad "rust_ftrace loaded"; rmmod rust_ftrace; }
[ -z "$(cat $T/enabled_functions)" ] || bad "enabled_functions not empty: $(cat $T/enabled_functions)"
exit $fail
