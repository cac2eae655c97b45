#!/usr/bin/env bash
# Compare the call sites recorded in __mcount_loc by the two builds: the C
# core's kernel (gcc -mrecord-mcount) and the Rust core's (the Rust
# scripts/recordmcount tool, CONFIG_FTRACE_CORE_RUST_RECORDMCOUNT). The
# two kernels differ in the core, which is not traced either way, so the
# sets of traced functions must be the same, but for one difference that
# recordmcount (C or Rust) has by design: it skips objects named ftrace.o,
# while gcc records them (arch/x86/kernel/kprobes/ftrace.o). The Rust
# core's kernel also has the Rust functions as sites (traced Rust code,
# CONFIG_FTRACE_CORE_RUST_TRACE_RUST): they are counted apart. Prints one
# summary line and fails on any other difference.
set -euo pipefail
. "$(dirname "$0")/env.sh"
a=$build/out-c-$CONF/vmlinux b=$build/out-rust-$CONF/vmlinux
for v in "$a" "$b"; do
	[ -f "$v" ] || { echo "SKIP  mcount-compare: $v not built (build both cores)"; exit 0; }
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sites() { # vmlinux out: the names of the functions whose entry is a site
	# The table lies between __start_mcount_loc and __stop_mcount_loc,
	# inside an init data section: find its bytes in the file.
	local start stop
	start=$(nm "$1" | awk '$3 == "__start_mcount_loc" { print $1 }')
	stop=$(nm "$1" | awk '$3 == "__stop_mcount_loc" { print $1 }')
	local s=$((16#$start)) name type addr off size rest
	: > "$tmp/off"
	while read -r name type addr off size rest; do
		[ "$type" = NOBITS ] && continue
		case "$addr$off$size" in *[!0-9a-f]*) continue ;; esac
		if [ $s -ge $((16#$addr)) ] && [ $s -lt $((16#$addr + 16#$size)) ]; then
			echo $((16#$off + s - 16#$addr)) > "$tmp/off"
			break
		fi
	done < <(readelf -SW "$1" | sed -n 's/^ *\[ *[0-9]*\] //p')
	[ -s "$tmp/off" ] || { echo "mcount-compare: no __mcount_loc in $1" >&2; exit 1; }
	tail -c +$(($(cat "$tmp/off") + 1)) "$1" | head -c $((16#$stop - 16#$start)) > "$tmp/loc"
	od -An -v -tx8 -w8 "$tmp/loc" | awk 'NF { print $1 }' | sort -u > "$tmp/addrs"
	nm --defined-only "$1" | awk '$2 ~ /^[tTwW]$/ { print $1, $3 }' | sort -k1,1 > "$tmp/syms"
	# A site is its function's entry, or 4 bytes in after the endbr64
	# of IBT: each site's function is the symbol at one of the two.
	perl -ne 'no warnings "portable"; chomp; printf "%016x\n", hex($_) - 4' \
		"$tmp/addrs" | sort -u > "$tmp/addrs4"
	{ join "$tmp/addrs" "$tmp/syms"; join "$tmp/addrs4" "$tmp/syms"; } |
		awk '{ print $2 }' | sort -u > "$2"
	echo "$(wc -l < "$tmp/addrs")"
}
na=$(sites "$a" "$tmp/c.all")
nb=$(sites "$b" "$tmp/rust.all")
# The functions the Rust objects define (those Kbuild's .cmd files say
# rustc built): traced on the Rust core only.
out=$build/out-rust-$CONF
(cd "$out" && find . -name '.*.o.cmd' | xargs grep -l '^savedcmd_.*\(rustc\|clippy-driver\) ') |
	while read -r c; do
		o=$(dirname "$c")/$(basename "$c" .cmd | sed 's/^\.//')
		[ -f "$out/$o" ] && nm --defined-only "$out/$o" | awk '$2 ~ /^[tTwW]$/ { print $3 }'
	done | sort -u > "$tmp/rustfns"
comm -23 "$tmp/rust.all" "$tmp/rustfns" > "$tmp/rust"
nrust=$(($(wc -l < "$tmp/rust.all") - $(wc -l < "$tmp/rust")))
# The functions of the traced objects named ftrace.o (gcc wrote their
# __mcount_loc), which recordmcount skips.
: > "$tmp/skipped"
while read -r o; do
	objdump -h "$o" | grep -q ' __mcount_loc ' || continue
	nm --defined-only "$o" | awk '$2 ~ /^[tTwW]$/ { print $3 }' >> "$tmp/skipped"
done < <(find "$build/out-c-$CONF" -name ftrace.o)
sort -u -o "$tmp/skipped" "$tmp/skipped"
comm -23 "$tmp/c.all" "$tmp/skipped" > "$tmp/c"
skipped=$(($(wc -l < "$tmp/c.all") - $(wc -l < "$tmp/c")))
if ! diff -u "$tmp/c" "$tmp/rust" > "$tmp/diff"; then
	echo "FAIL  mcount-compare: gcc -mrecord-mcount ($na sites) and the Rust recordmcount ($nb sites) differ:"
	grep '^[-+][^-+]' "$tmp/diff" | head -40
	exit 1
fi
echo "PASS  mcount-compare: $na sites from gcc -mrecord-mcount, $nb from the Rust recordmcount: the same $(wc -l < "$tmp/c") C functions ($skipped of gcc's in objects named ftrace.o, which recordmcount skips), and $nrust names of Rust functions, sites on the Rust core only"
