# Common settings of the harness scripts; sourced, not run.
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${BUILD:-$top/build}
src=$build/src
CORE=${CORE:-rust}
case "$CORE" in
c | rust) ;;
*) echo "CORE must be c or rust, not '$CORE'" >&2; exit 2 ;;
esac
# The configuration: production (the default: every tracer-related
# option of Debian's amd64 kernel, derived from linux-config-6.12 at
# build time, then ftrace-production.config: what the tests need and the
# debug set), rt (the same from Debian's rt-amd64 kernel: PREEMPT_RT and
# its latency tracers), tiny (tinyconfig + ftrace-test.config, the lab
# kernel of the icount benchmark) or fp (tiny with the frame-pointer
# unwinder, ftrace-frame-pointer.config).
CONF=${CONF:-production}
case "$CONF" in
tiny | production | rt | fp) ;;
*) echo "CONF must be tiny, production, rt or fp, not '$CONF'" >&2; exit 2 ;;
esac
# KASAN=1: the sanitizer build of the configuration (kernel/configs/
# ftrace-kasan.config), in a directory of its own and built with clang:
# in 6.12 RUST with KASAN needs CC_IS_CLANG, and the production
# configuration's return thunks need clang 15 or later (Debian's clang-19;
# bindgen then loads libclang 19 too, so that it knows every C flag).
case "${KASAN:-}" in
"" | 0) KASAN= ;;
1) ;;
*) echo "KASAN must be 1 or unset, not '$KASAN'" >&2; exit 2 ;;
esac
# MUTANTS=1: the mutants kernel (make mutants; kernel/configs/
# ftrace-mutants.config), the Rust core with its deliberate breaks
# compiled in, in a directory of its own.
case "${MUTANTS:-}" in
"" | 0) MUTANTS= ;;
1) [ "$CORE" = rust ] || { echo "MUTANTS=1 is for CORE=rust" >&2; exit 2; } ;;
*) echo "MUTANTS must be 1 or unset, not '$MUTANTS'" >&2; exit 2 ;;
esac
# ARCH: the architecture built and booted: x86_64 (the default), or
# arm64, built with Debian's cross compiler (gcc-aarch64-linux-gnu) and
# booted in qemu-system-aarch64's virt machine, its kernels in
# directories of their own. setup-host.sh installs what arm64 needs when
# ARCH=arm64 asks for it.
ARCH=${ARCH:-x86_64}
case "$ARCH" in
# kimage_target: what Kbuild makes to boot (bzImage on x86_64, the Image
# arm64 boots).
x86_64) srcarch=x86 cross= archsuffix= kimage_target=bzImage ;;
arm64) srcarch=arm64 cross=aarch64-linux-gnu- archsuffix=-arm64 kimage_target=Image ;;
*) echo "ARCH must be x86_64 or arm64, not '$ARCH'" >&2; exit 2 ;;
esac
[ "$ARCH" = arm64 ] && [ -n "$KASAN$MUTANTS" ] &&
	{ echo "KASAN=1 and MUTANTS=1 are for ARCH=x86_64" >&2; exit 2; }
out=$build/out-$CORE-$CONF${KASAN:+-kasan}${MUTANTS:+-mutants}$archsuffix
kimage=$out/arch/$srcarch/boot/$kimage_target
jobs=${JOBS:-$(($(nproc) + 1))}

# The kernel's Rust toolchain: Debian's rustc-web and rust-web-src, and
# bindgen-cli from crates.io (scripts/harness/setup-host.sh).
export RUSTC=/usr/bin/rustc HOSTRUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
export CLIPPY_DRIVER=/usr/bin/clippy-driver RUSTFMT=/usr/bin/rustfmt
export BINDGEN=${BINDGEN:-$HOME/.cargo/bin/bindgen}
export RUST_LIB_SRC=/usr/lib/rustlib/src/rust/library
export ARCH
export CCACHE_BASEDIR=$build CCACHE_NOHASHDIR=1 CCACHE_COMPILERCHECK=content
cc=gcc llvm=()
if [ -n "$KASAN" ]; then
	cc=clang-19 llvm=(LLVM=-19)
	export LIBCLANG_PATH=/usr/lib/llvm-19/lib
fi
# The kernel's compiler (the cross one for arm64); the host's builds the
# host programs.
kcc=$cross$cc
command -v ccache >/dev/null && kcc="ccache $cross$cc"
crossargs=()
[ -n "$cross" ] && crossargs=(CROSS_COMPILE="$cross")

kmake() {
	make -s -C "$src" O="$out" ARCH="$ARCH" "${crossargs[@]}" "${llvm[@]}" CC="$kcc" HOSTCC="$cc" \
		RUSTC="$RUSTC" HOSTRUSTC="$HOSTRUSTC" BINDGEN="$BINDGEN" \
		RUSTDOC="$RUSTDOC" CLIPPY_DRIVER="$CLIPPY_DRIVER" RUSTFMT="$RUSTFMT" ${CLIPPY:+CLIPPY=$CLIPPY} "$@"
}
