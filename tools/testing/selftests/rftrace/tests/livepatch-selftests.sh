#!/bin/sh
# The kernel's own livepatch selftests (tools/testing/selftests/livepatch:
# test-livepatch, -callbacks, -shadow-vars, -state, -ftrace, -sysfs,
# -syscall), with their test modules built against the kernel under test
# (scripts/harness/build-kernel.sh) and the tools they compare messages
# of (bash, kmod, procps, coreutils) from the host, in /opt/gnu
# (scripts/harness/run-qemu.sh). Every script must pass: they patch and
# unpatch functions through IPMODIFY|PERMANENT ops on the core, in
# every transition order, and test-ftrace.sh checks the ftrace_enabled
# sysctl against a live patch.
lp=/opt/livepatch
if [ ! -d /sys/kernel/livepatch ] || [ ! -f $lp/functions.sh ]; then
	echo "livepatch-selftests: no livepatch in this kernel or no selftest modules (CONFIG_LIVEPATCH)"
	exit 4
fi
cd $lp || exit 1
export PATH=/opt/gnu/bin:$PATH
# The scripts skip unless KDIR, where they would build their modules,
# exists: the modules are built already (test_modules/).
export KDIR=$lp/test_modules
rc=0
for t in test-livepatch.sh test-callbacks.sh test-shadow-vars.sh test-state.sh \
	test-ftrace.sh test-sysfs.sh test-syscall.sh; do
	t0=$(cut -d. -f1 /proc/uptime)
	bash ./$t > /tmp/klp.out 2>&1
	r=$?
	echo "$t: exit $r ($(($(cut -d. -f1 /proc/uptime) - t0)) s)"
	if [ $r -ne 0 ]; then
		tail -n 30 /tmp/klp.out
		rc=1
	fi
done
exit $rc
