#!/usr/bin/env bash
# Print "<repo path> <kernel tree path>" for every file of the project
# that goes into the kernel tree. Paths mirror the kernel tree, except the
# two top-level files, which belong to kernel/trace/.
set -euo pipefail
cd "$(dirname "$0")/../.."
echo "Kconfig kernel/trace/Kconfig.core"
echo "Kbuild kernel/trace/Kbuild.core"
dirs=(arch kernel rust samples scripts/recordmcount tools/testing/selftests/rftrace)
{
	git ls-files -co --exclude-standard -- "${dirs[@]}" 2>/dev/null ||
		find "${dirs[@]}" -type f 2>/dev/null
} | sort -u | while read -r f; do
	[ -f "$f" ] && echo "$f $f"
done
