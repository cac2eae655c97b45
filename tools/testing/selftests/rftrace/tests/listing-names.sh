#!/bin/sh
# The names of the listings are kallsyms' names: every line of
# available_filter_functions_addrs ("address name [module]") names a
# text symbol that /proc/kallsyms has at the address or up to 4 bytes
# below it (the endbr64 of IBT), and available_filter_functions is the
# same list without the addresses. On the Rust core the kernel's names
# come from one walk of kallsyms kept in memory (kernel/trace/rftrace/
# names.rs); this holds it to what a lookup per site gives.
T=/sys/kernel/tracing
fail=0
cat $T/available_filter_functions_addrs > /tmp/lf.addrs || exit 1
cat $T/available_filter_functions > /tmp/lf.names || exit 1
n=$(wc -l < /tmp/lf.addrs)
[ "$n" -gt 1000 ] || { echo "FAIL: only $n sites listed"; exit 1; }
cut -d' ' -f2- /tmp/lf.addrs > /tmp/lf.names2
cmp -s /tmp/lf.names /tmp/lf.names2 || { echo "FAIL: the two listings differ"; diff /tmp/lf.names /tmp/lf.names2 | head; fail=1; }
# A second read gives the same bytes.
cat $T/available_filter_functions | cmp -s - /tmp/lf.names || { echo "FAIL: a second read differs"; fail=1; }
# Every kernel (not module) line against /proc/kallsyms.
# Addresses are 16 hex digits: the high 8 must be equal, the low 8 (a
# 32-bit number, exact in awk's doubles) 0 to 4 apart.
bad=$(awk '
	function lo(s,   v, i) {
		v = 0
		for (i = 9; i <= 16; i++)
			v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
		return v
	}
	FNR == NR { if ($2 ~ /^[tTwW]$/ && NF == 3) sym[$3] = sym[$3] " " $1; next }
	NF != 2 || $2 ~ /^__ftrace_invalid_address___/ { next }
	{
		ok = 0
		n = split(sym[$2], a, " ")
		for (i = 1; i <= n; i++) {
			d = lo($1) - lo(a[i])
			if (substr($1, 1, 8) == substr(a[i], 1, 8) && d >= 0 && d <= 4) ok = 1
		}
		if (!ok) { bad++; if (bad <= 5) print "  no symbol " $2 " at or just below " $1 > "/dev/stderr" }
	}
	END { print bad + 0 }' /proc/kallsyms /tmp/lf.addrs)
echo "$n sites listed; kernel lines without their symbol: $bad"
[ "$bad" -eq 0 ] || fail=1
rm -f /tmp/lf.addrs /tmp/lf.names /tmp/lf.names2
exit $fail
