#!/usr/bin/env bash
# Lay the kernel source tree out under build/src: extract Debian's
# linux-source-6.12 tarball once, apply the glue patches from
# scripts/kernel-glue/, then copy the project's files over it.
#
# Files are only rewritten when their content changes, so kbuild's
# incremental rebuild stays incremental.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build}
src=$build/src
tarball=${KERNEL_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
state=$build/state
mkdir -p "$state"

if [ ! -f "$state/extracted" ]; then
	[ -f "$tarball" ] || { echo "prepare-tree: $tarball missing (run make setup)" >&2; exit 1; }
	echo "  EXTRACT $(basename "$tarball") -> build/src"
	rm -rf "$src" "$src.tmp"
	mkdir -p "$src.tmp"
	tar -xf "$tarball" -C "$src.tmp" --strip-components=1
	mv "$src.tmp" "$src"
	rm -f "$state/glue.applied"
	touch "$state/extracted"
fi

# --- glue edits to upstream files -------------------------------------
glue_new=$(cat "$top"/scripts/kernel-glue/*.patch 2>/dev/null || true)
glue_old=$(cat "$state/glue.applied" 2>/dev/null || true)
if [ "$glue_new" != "$glue_old" ]; then
	if [ -n "$glue_old$glue_new" ]; then
		# Take every file the previous edits touched back to the
		# tarball's (or away, if the edits made it): reverting the
		# series with patch -R fails once two patches edit one place.
		# The files the new edits touch too: a series that failed half
		# way recorded nothing of what it applied.
		echo "  GLUE    restore the files of the previous glue edits"
		mapfile -t touched < <(printf '%s\n%s\n' "$glue_old" "$glue_new" |
			sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' | sort -u)
		members=()
		for f in "${touched[@]}"; do
			rm -f "$src/$f" "$src/$f.orig" "$src/$f.rej"
			members+=("linux-source-6.12/$f")
		done
		if [ ${#members[@]} -gt 0 ]; then
			tar -xf "$tarball" -C "$src" --strip-components=1 "${members[@]}" 2>/dev/null || true
		fi
	fi
	rm -f "$state/glue.applied"
	if [ -n "$glue_new" ]; then
		for p in "$top"/scripts/kernel-glue/*.patch; do
			echo "  GLUE    $(basename "$p")"
			patch -s -N -p1 -d "$src" < "$p"
		done
		printf '%s\n' "$glue_new" > "$state/glue.applied"
	fi
fi

# --- the project's files ------------------------------------------------
manifest_new=$state/overlay.manifest.new
: > "$manifest_new"
"$top/scripts/harness/overlay-files.sh" | while read -r from to; do
	echo "$to" >> "$manifest_new"
	if ! cmp -s "$top/$from" "$src/$to"; then
		mkdir -p "$(dirname "$src/$to")"
		cp "$top/$from" "$src/$to"
	fi
done
# Files the project installed before and no longer has: restore the
# pristine file from the tarball where there is one, else remove it.
if [ -f "$state/overlay.manifest" ]; then
	sort -u "$state/overlay.manifest" > "$state/m.old"
	sort -u "$manifest_new" > "$state/m.new"
	comm -23 "$state/m.old" "$state/m.new" | while read -r f; do
		echo "  UNLAY   $f"
		rm -f "$src/$f"
		tar -xf "$tarball" -C "$src" --strip-components=1 "linux-source-6.12/$f" 2>/dev/null || true
	done
	rm -f "$state/m.old" "$state/m.new"
fi
mv "$manifest_new" "$state/overlay.manifest"
