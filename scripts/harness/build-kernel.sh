#!/usr/bin/env bash
# Configure (tinyconfig + the project's fragments) and build the boot
# image (bzImage, or arm64's Image) and modules for one core,
# configuration and architecture in build/out-$CORE-$CONF[-arm64]; install
# the modules into its modroot/ for the initramfs.
set -euo pipefail
. "$(dirname "$0")/env.sh"

frags=("$src/kernel/configs/ftrace-test.config")
case "$CONF" in
production | rt)
	# Debian's configuration of the flavour, as Kconfig settles it on this
	# source, and the fragment derived from it (scripts/harness/
	# debian-config.py), remade at every build: it follows Debian.
	# amd64 and rt-amd64, or arm64 and rt-arm64. The arm64 ones come from
	# the arm64 build of the same package, which setup-host.sh unpacks
	# into build/debian-arm64/ (an amd64 host installs only its own).
	case "$ARCH" in
	x86_64) dflav=amd64 confdir=/usr/src/linux-config-6.12 ;;
	arm64) dflav=arm64 confdir=$build/debian-arm64/usr/src/linux-config-6.12 ;;
	esac
	flavour=${dflav}_none_$dflav
	[ "$CONF" = rt ] && flavour=${dflav}_rt_$dflav
	deb=$build/debian/$flavour
	debian_conf=$confdir/config.$flavour.xz
	[ -f "$debian_conf" ] || { echo "build-kernel: no $debian_conf (scripts/harness/setup-host.sh installs linux-config-6.12${cross:+; ARCH=$ARCH make setup unpacks its $ARCH build})" >&2; exit 3; }
	mkdir -p "$deb" "$out"
	if [ ! -f "$deb/.config" ] || [ "$debian_conf" -nt "$deb/.config" ]; then
		xz -dc "$debian_conf" > "$deb/.config"
		make -s -C "$src" O="$deb" ARCH="$ARCH" "${crossargs[@]}" CC="${cross}gcc" HOSTCC=gcc olddefconfig >/dev/null
	fi
	python3 "$top/scripts/harness/debian-config.py" "$deb/.config" "$srcarch" "$src" "$out/debian.config"
	frags+=("$out/debian.config" "$src/kernel/configs/ftrace-production.config") ;;
fp) frags+=("$src/kernel/configs/ftrace-frame-pointer.config") ;;
esac
frags+=("$src/kernel/configs/ftrace-core-$CORE.config")
# The machine the guests emulate, and what the shared fragments ask that
# the architecture cannot have: last, so that it wins.
frags+=("$src/kernel/configs/ftrace-$ARCH.config")
[ -n "$KASAN" ] && frags+=("$src/kernel/configs/ftrace-kasan.config")
[ -n "$MUTANTS" ] && frags+=("$src/kernel/configs/ftrace-mutants.config")
for f in "${frags[@]}"; do
	[ -f "$f" ] || { echo "build-kernel: CORE=$CORE: no ${f#$src/} (this core is not built yet)" >&2; exit 3; }
done
mkdir -p "$out"
stamp=$(cat "${frags[@]}" | sha256sum | cut -d' ' -f1)
if [ ! -f "$out/.config" ] || [ "$(cat "$out/.fragments.sha" 2>/dev/null)" != "$stamp" ]; then
	echo "  CONFIG  CORE=$CORE CONF=$CONF: tinyconfig + ${frags[*]##*/}"
	kmake tinyconfig >/dev/null
	(cd "$src" && scripts/kconfig/merge_config.sh -m -O "$out" "$out/.config" "${frags[@]}" >/dev/null)
	kmake olddefconfig >/dev/null
	# Every option of the fragments (the last fragment setting it wins)
	# must have survived Kconfig.
	bad=0
	while IFS= read -r line; do
		case "$line" in
		CONFIG_*=n) opt=${line%%=*}
			grep -q "^$opt=" "$out/.config" && { echo "build-kernel: $line not honoured: $(grep "^$opt=" "$out/.config")" >&2; bad=1; } ;;
		CONFIG_*=*) grep -qx "$line" "$out/.config" ||
			{ echo "build-kernel: $line not honoured: $(grep "^${line%%=*}=" "$out/.config" || echo "${line%%=*} unset")" >&2; bad=1; } ;;
		esac
	done < <(cat "${frags[@]}" | grep '^CONFIG_' | awk -F= '{ last[$1] = $0; order[NR] = $1 }
		END { for (i = 1; i <= NR; i++) if (order[i] in last) { print last[order[i]]; delete last[order[i]] } }')
	if [ $bad -ne 0 ]; then
		rm -f "$out/.fragments.sha"
		exit 1
	fi
	echo "$stamp" > "$out/.fragments.sha"
fi

# Kconfig files may have changed (a new option): settle the config
# without asking; this leaves an unchanged configuration untouched.
kmake olddefconfig >/dev/null
# The objects of a core this configuration does not build, left from an
# earlier configuration of the same directory, go: the build directory
# shows what is in this kernel.
stale=()
grep -q '^CONFIG_FTRACE_CORE_RUST=y' "$out/.config" &&
	stale+=(arch/x86/kernel/ftrace.o arch/x86/kernel/ftrace_64.o arch/arm64/kernel/ftrace.o arch/arm64/kernel/entry-ftrace.o)
grep -q '^CONFIG_FTRACE_CORE_RUST_GENERIC=y' "$out/.config" &&
	stale+=(kernel/trace/ftrace.o kernel/trace/libftrace.o kernel/trace/libftrace.a kernel/trace/fgraph.o)
for o in "${stale[@]}"; do
	rm -f "$out/$o" "$out/$(dirname "$o")/.$(basename "$o").cmd"
done
echo "  KERNEL  CORE=$CORE CONF=$CONF${cross:+ ARCH=$ARCH}${KASAN:+ KASAN=1}${MUTANTS:+ MUTANTS=1} (${out#$top/}, -j$jobs)"
kmake -j"$jobs" "$kimage_target" modules
# Test modules built against this kernel as external modules, from the
# directory $1 of the source tree into $out/$2. An external module's BTF
# is made against vmlinux, but Kbuild does not remake it when only
# vmlinux changed: the older ones go first.
ext_modules() { # source-dir out-dir
	local dir=$out/$2
	mkdir -p "$dir"
	cp -u "$src/$1"/*.c "$src/$1/Makefile" "$dir/"
	find "$dir" -name '*.ko' ! -newer "$out/vmlinux" -delete
	kmake -j"$jobs" M="$dir" modules
}
# The livepatch selftests' modules.
if grep -q '^CONFIG_LIVEPATCH=y' "$out/.config"; then
	ext_modules tools/testing/selftests/livepatch/test_modules klp-test-modules
fi
# The harness's own (rftrace_many.ko, 1,000 traced functions for the scale
# rows of make bench).
if grep -q '^CONFIG_MODULES=y' "$out/.config"; then
	ext_modules tools/testing/selftests/rftrace/modules rftrace-test-modules
fi
# Install the modules when one changed since the last install.
stamp_file=$out/modroot/.stamp
if [ ! -f "$stamp_file" ] || [ -n "$(find "$out" -name '*.ko' -newer "$stamp_file" -print -quit)" ]; then
	rm -rf "$out/modroot"
	kmake INSTALL_MOD_PATH="$out/modroot" INSTALL_MOD_STRIP=1 DEPMOD=/sbin/depmod modules_install >/dev/null
	touch "$stamp_file"
fi
