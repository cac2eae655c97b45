#!/bin/sh
# A filter of one function replaced by a pattern that selects many while
# the function tracer runs (issue 35, finding 2). The change is the
# difference of the two sets, and re-planning it must be linear in the
# sites: before the fix each address of the difference was checked
# against all the ones before it (n²/2 comparisons under ftrace_lock),
# and the private set the file had built (every function, for `*`) was
# freed entry by entry after the sites changed, while the tracer traced
# every call of the allocator's debug paths: 10,109 sites in 3.2 s,
# 23,652 in 12.8 s (x4.0 the time for x2.33 the sites) on December 5,
# production configuration, in a loaded guest; after both fixes 1.0 s
# and 2.3 s (x2.33).
# The oracle is the growth: one function replaced by `[a-k]*` (about
# half the sites), then by `*` (all): linear work takes at most about
# r times as long for r times the sites, quadratic work r² times. The
# test fails when the larger replacement takes more than (r + r²) / 2
# times as long as the smaller one (best of three each), when the sites
# enabled are not what the filter says, or when going back to one
# function leaves more than one enabled.
T=/sys/kernel/tracing
fail() { echo "FAIL: $*"; echo nop > $T/current_tracer; echo > $T/set_ftrace_filter; exit 1; }
# The time of writing $2 to $1, the close (where the filter is committed
# and the sites change) included: a shell does the write.
us() { timed_write -x sh -c "echo '$2' > $1" | tail -n 1; }
# replace PATTERN: best time (us) of one function -> PATTERN, and the
# number of sites it enabled.
replace() {
	best=0
	for round in 1 2 3; do
		echo schedule > $T/set_ftrace_filter || fail "cannot filter schedule"
		[ "$(wc -l < $T/enabled_functions)" -eq 1 ] ||
			fail "one function filtered, $(wc -l < $T/enabled_functions) enabled"
		t=$(us $T/set_ftrace_filter "$1") || fail "cannot write $1 to set_ftrace_filter"
		n=$(wc -l < $T/enabled_functions)
		[ "$n" -eq "$(wc -l < $T/set_ftrace_filter)" ] ||
			fail "$1: $n sites enabled, $(wc -l < $T/set_ftrace_filter) filtered"
		back=$(us $T/set_ftrace_filter schedule) || fail "cannot write schedule back"
		[ "$(wc -l < $T/enabled_functions)" -eq 1 ] ||
			fail "back from $1: $(wc -l < $T/enabled_functions) enabled"
		echo "  schedule -> $1: $t us ($n sites), back $back us"
		[ "$best" -eq 0 ] || [ "$t" -lt "$best" ] && best=$t
	done
	echo "$best $n" > /tmp/replace.out
}
echo nop > $T/current_tracer
echo schedule > $T/set_ftrace_filter || fail "cannot filter schedule"
echo function > $T/current_tracer || fail "cannot start the function tracer"
replace '[a-k]*'
read -r t1 n1 < /tmp/replace.out
replace '*'
read -r t2 n2 < /tmp/replace.out
echo nop > $T/current_tracer
echo > $T/set_ftrace_filter
[ "$n1" -gt 1000 ] && [ "$n2" -gt "$n1" ] || fail "sites: $n1 for [a-k]*, $n2 for *"
# r = n2/n1 and the times' ratio, in hundredths.
r=$((100 * n2 / n1)) q=$((100 * t2 / t1))
limit=$(((r + r * r / 100) / 2))
echo "sites x$r/100, time x$q/100 (linear about x$r/100, quadratic x$((r * r / 100))/100; limit x$limit/100)"
[ "$q" -le "$limit" ] || fail "the replacement grew faster than linear in the sites"
echo "PASS"
