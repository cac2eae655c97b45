#!/usr/bin/env bash
# Compile the generic Rust core (kernel/trace/rftrace/) for $ARCH, in the
# kernel tree of that architecture's C-core build, with the definitions
# the architecture gives it (arch/$ARCH/kernel/rftrace/: percpu.rs,
# defs.rs, arch_offsets.h): the generic crate must build from the same
# files on every architecture, before that architecture's Rust layer
# exists to link it into a kernel. `make kernel ARCH=arm64 CORE=c` first.
#
# Kbuild compiles the one object (and its two offset files) by name: a
# single target gets neither the target-specific exports nor the
# per-file flags of the crate's Makefile, so they are given here.
set -euo pipefail
CORE=c
. "$(dirname "$0")/env.sh"
[ -f "$out/.config" ] || { echo "generic-check: no ${out#$top/}: make kernel ARCH=$ARCH CORE=c first" >&2; exit 2; }
d=kernel/trace/rftrace
# abi_offsets.c includes the architecture's arch_offsets.h.
kmake -j"$jobs" KCFLAGS="-I$src/arch/$srcarch/kernel/rftrace" "$d/task_offsets.s" "$d/abi_offsets.s"
# The crate's Makefile's rule, by hand for the same reason.
for f in task_offsets abi_offsets; do
	sed -ne 's:^[[:space:]]*\.ascii[[:space:]]*"->\([A-Z_0-9]*\) [$#]*\([0-9]*\) .*:pub(crate) const \1\: usize = \2;:p' \
		"$out/$d/$f.s" > "$out/$d/$f.rs"
done
export RFTRACE_ARCH_DIR=$src/arch/$srcarch/kernel/rftrace
export RFTRACE_TASK_OFFSETS=$out/$d/task_offsets.rs RFTRACE_ABI_OFFSETS=$out/$d/abi_offsets.rs
rm -f "$out/$d/rftrace_core.o"
kmake -j"$jobs" "$d/rftrace_core.o"
echo "  GENERIC ${d}/rftrace_core.o compiled for $ARCH: $(file -b "$out/$d/rftrace_core.o" | cut -d, -f1,2)"
