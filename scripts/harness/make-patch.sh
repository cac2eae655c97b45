#!/usr/bin/env bash
# make patch: write the project as a git-am-able series against the
# pristine 6.12 tree of Debian's linux-source-6.12 into build/patches/.
# Patch 1 holds the glue edits to upstream files, the others add the
# project's files, one area each.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build}
tarball=${KERNEL_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
work=$build/patch-work
outdir=$build/patches
rm -rf "$work" "$outdir"
mkdir -p "$work" "$outdir"

# The series is the user's: their git identity (of this repository)
# authors and signs off every patch (Documentation/process/
# submitting-patches.rst, "Sign your work").
name=$(git -C "$top" config user.name || true)
email=$(git -C "$top" config user.email || true)
if [ -z "$name" ] || [ -z "$email" ]; then
	echo "make patch: set git's user.name and user.email: the patches are signed off with them" >&2
	exit 1
fi
g() { git -C "$work" -c user.name="$name" -c user.email="$email" \
	-c commit.gpgsign=false "$@"; }
g init -q
# The pristine versions of the upstream files the glue edits.
touched=$(sed -n 's#^+++ b/\([^[:space:]]*\).*#\1#p' "$top"/scripts/kernel-glue/*.patch | sort -u)
tar -xf "$tarball" -C "$work" --strip-components=1 \
	$(for f in $touched; do echo "linux-source-6.12/$f"; done)
g add -A && g commit -q -m "pristine files of linux-source-6.12"
base=$(g rev-parse HEAD)

# One commit per glue patch; the text before its first "--- " line is the
# commit message.
for p in "$top"/scripts/kernel-glue/*.patch; do
	patch -s -p1 -d "$work" < "$p"
	g add -A
	sed '/^--- /,$d' "$p" | g commit -q -s -F -
done

commit_area() { # subject body paths...
	local subject=$1 body=$2
	shift 2
	local any=0
	while read -r from to; do
		for p in "$@"; do
			case "$to" in "$p"*)
				mkdir -p "$(dirname "$work/$to")"
				cp "$top/$from" "$work/$to"
				any=1 ;;
			esac
		done
	done < <("$top/scripts/harness/overlay-files.sh")
	[ $any -eq 1 ] || return 0
	g add -A
	printf '%s\n\n%s\n' "$subject" "$body" | g commit -q -s -F -
}
commit_area "ftrace: add the function tracer core choice and its objects" \
	"The Kconfig choice of the function tracer core and the objects each core builds." \
	kernel/trace/
commit_area "x86/ftrace: add the architecture code of the Rust core" \
	"Trampolines and live patching for the Rust function tracer core." arch/
commit_area "rust: add the kernel crate pieces of the Rust ftrace core" \
	"Helpers used by the Rust ftrace core, kernel::ftrace (function-tracing callbacks for Rust code) and its sample." \
	rust/ samples/rust/
commit_area "scripts/recordmcount: add the Rust call-site recorder" \
	"Build-time recording of the fentry call sites." scripts/recordmcount/
commit_area "kernel/configs: add the ftrace core test configuration" \
	"Fragments for tinyconfig: the test configuration and one per core." kernel/configs/
commit_area "selftests/rftrace: add the project's in-guest tests and benchmark" \
	"Tests and benchmark scripts of the ftrace core project, run in the guest." \
	tools/testing/selftests/rftrace/ samples/

g format-patch -q -o "$outdir" "$base"..HEAD
ls "$outdir"
echo "apply with: git am $outdir/*.patch   (on a tree from $(basename "$tarball"))"
