#!/usr/bin/env bash
# Install the host packages and tools the harness needs. Idempotent and
# quiet when everything is already present.
set -euo pipefail

PKGS=(linux-source-6.12 rustc-web rust-web-src rust-web-clippy rustfmt-web
      qemu-system-x86 busybox-static
      clang libclang-dev lld llvm flex bison bc libelf-dev libssl-dev cpio ccache
      xz-utils make gcc python3 rsync kmod dwarves
      procps coreutils bash libc-bin   # the livepatch selftests' tools, copied into the guest
      bpftrace linux-perf              # the distribution's tracing tools, run in the guest (tests/tools-*.sh)
      rtla rt-tests trace-cmd stress-ng  # the real-time clients, run in the guest (tests/rt-*.sh)
      linux-config-6.12                # Debian's configurations, which CONF=production and rt derive from
      clang-19 lld-19 llvm-19 libclang1-19)  # the sanitizer build (make test KASAN=1): clang 15+ for return thunks
BINDGEN_VERSION=0.73.1

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' ||
		missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	echo "setup: installing ${missing[*]}"
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq >/dev/null
	$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

BINDGEN_DIR=${BINDGEN_DIR:-$HOME/.cargo/bin}
if ! "$BINDGEN_DIR/bindgen" --version 2>/dev/null | grep -q "bindgen $BINDGEN_VERSION"; then
	echo "setup: installing bindgen-cli $BINDGEN_VERSION"
	cargo install --quiet --locked --force bindgen-cli --version "=$BINDGEN_VERSION"
fi

# QEMU 10 from bookworm-backports: the guests with CPUs that run at once
# (multi-threaded TCG, `make torture`, the torture of `make test`) need
# it. Bookworm's QEMU 7.2 with `-accel tcg,thread=multi` oopses at boot on
# the stock kernel (Documentation/harness.rst, "Parallelism"). One QEMU
# serves every run, the icount benchmark too, so that both cores always
# meet the same emulator.
QEMU_MAJOR_MIN=10
qemu_major=$(qemu-system-x86_64 --version 2>/dev/null | sed -n '1s/.*version \([0-9]*\)\..*/\1/p' || true)
if [ "${qemu_major:-0}" -lt "$QEMU_MAJOR_MIN" ]; then
	echo "setup: installing qemu-system-x86 from bookworm-backports"
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	src=/etc/apt/sources.list.d/bookworm-backports.sources
	if ! grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
		# The mirror the machine's bookworm packages come from.
		mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
		[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $3 == "bookworm" { print $2; exit }' /etc/apt/sources.list 2>/dev/null)
		[ -n "$mirror" ] || { echo "setup: no bookworm mirror in the apt sources" >&2; exit 1; }
		printf '%s\n' 'Types: deb' "URIs: $mirror" \
			'Suites: bookworm-backports' 'Components: main' \
			'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' | $SUDO tee "$src" >/dev/null
	fi
	export DEBIAN_FRONTEND=noninteractive
	$SUDO apt-get update -qq >/dev/null
	$SUDO apt-get install -y -qq --no-install-recommends -t bookworm-backports qemu-system-x86 >/dev/null
fi

# ARCH=arm64: the cross compiler, QEMU's aarch64 emulator (10, from
# bookworm-backports, as for x86_64), and from Debian's arm64 archive
# Debian's arm64 kernel configurations (the arm64 build of
# linux-config-6.12, the same version as the amd64 one) and the guest's
# busybox, unpacked into build/debian-arm64/. apt fetches and checks them
# (dpkg learns the arm64 architecture for it); nothing arm64 is
# installed on the host.
if [ "${ARCH:-x86_64}" = arm64 ]; then
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	export DEBIAN_FRONTEND=noninteractive
	if ! dpkg-query -W -f='${Status}' gcc-aarch64-linux-gnu 2>/dev/null | grep -q 'install ok installed'; then
		echo "setup: installing gcc-aarch64-linux-gnu"
		$SUDO apt-get install -y -qq --no-install-recommends gcc-aarch64-linux-gnu libc6-dev-arm64-cross >/dev/null
	fi
	qemu_major=$(qemu-system-aarch64 --version 2>/dev/null | sed -n '1s/.*version \([0-9]*\)\..*/\1/p' || true)
	if [ "${qemu_major:-0}" -lt "$QEMU_MAJOR_MIN" ]; then
		echo "setup: installing qemu-system-arm from bookworm-backports"
		$SUDO apt-get install -y -qq --no-install-recommends -t bookworm-backports qemu-system-arm >/dev/null
	fi
	top=$(cd "$(dirname "$0")/../.." && pwd)
	a64=${BUILD:-$top/build}/debian-arm64
	ver=$(dpkg-query -W -f='${Version}' linux-config-6.12)
	stamp="linux-config-6.12=$ver busybox-static"
	if [ "$(cat "$a64/.stamp" 2>/dev/null)" != "$stamp" ]; then
		echo "setup: unpacking Debian's arm64 linux-config-6.12 $ver and busybox-static into ${a64#$top/}"
		if ! dpkg --print-foreign-architectures | grep -qx arm64; then
			$SUDO dpkg --add-architecture arm64
		fi
		$SUDO apt-get update -qq >/dev/null
		rm -rf "$a64" "$a64.debs" && mkdir -p "$a64.debs"
		# (apt warns that its _apt user cannot write there: it downloads
		# as root instead, and still checks what it fetched.)
		(cd "$a64.debs" && apt-get download -qq "linux-config-6.12:arm64=$ver" busybox-static:arm64 \
			2> >(grep -v 'unsandboxed as root' >&2) >/dev/null)
		for d in "$a64.debs"/*.deb; do dpkg-deb -x "$d" "$a64"; done
		rm -rf "$a64.debs"
		echo "$stamp" > "$a64/.stamp"
	fi
fi
