#!/usr/bin/env bash
# Install the host packages and tools the harness needs. Idempotent and
# quiet when everything is already present.
set -euo pipefail

PKGS=(linux-source-6.12 rustc-web rust-web-src rust-web-clippy rustfmt-web
      qemu-system-x86 busybox-static
      clang libclang-dev lld llvm flex bison bc libelf-dev libssl-dev cpio ccache
      xz-utils make gcc python3 rsync kmod dwarves
      procps coreutils bash libc-bin   # the livepatch selftests' tools, copied into the guest
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
