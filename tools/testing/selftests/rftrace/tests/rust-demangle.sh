#!/bin/sh
# The rust-demangle trace option (Rust core, glue 0009): off by default,
# and then the tracers print a Rust function by its kallsyms name
# (v0-mangled); on, by the path it demangles to
# (kernel::print::call_printk): the function tracer's "func <-parent"
# lines, with sym-offset's "+offset/size [module]" after the path as after
# the name, and function_graph's names (entry, leaf, funcgraph-tail's and
# funcgraph-retval's closing lines). It changes how the buffer is printed,
# not what is recorded: the same trace is read both ways and must differ
# in the Rust names only. trace_options sets it too. The traced function
# is kernel::print::call_printk, which rust_print's init calls for each
# message (as in rust-traced.sh).
T=/sys/kernel/tracing
O=$T/options/rust-demangle
fail=0
bad() { echo "FAIL: $*"; fail=1; }
if [ ! -f $O ]; then
	if [ "$CORE" = rust ]; then
		echo "FAIL: no options/rust-demangle on the Rust core"
		exit 1
	fi
	echo "no options/rust-demangle (the option is the Rust core's)"
	exit 4
fi
print=$(find /lib/modules -name rust_print.ko | head -1)
[ -f "$print" ] || { echo "rust_print.ko not built (CONFIG_SAMPLE_RUST_PRINT)"; exit 4; }
cp=$(grep -m1 '^_RNvNtCs[0-9A-Za-z]*_6kernel5print11call_printk$' $T/available_filter_functions)
[ -n "$cp" ] || { echo "kernel::print::call_printk is no call site (CONFIG_FTRACE_CORE_RUST_TRACE_RUST)"; exit 4; }
path=kernel::print::call_printk
mangled='_RNvNtCs[0-9A-Za-z]*_6kernel5print11call_printk'
lsmod | grep -q '^rust_print' && rmmod rust_print

opt() { cat $T/options/$1 2> /dev/null; }
old_so=$(opt sym-offset) old_pp=$(opt print-parent)
old_tail=$(opt funcgraph-tail) old_rv=$(opt funcgraph-retval)
restore() {
	echo 0 > $O
	echo "$old_pp" > $T/options/print-parent
	echo "$old_so" > $T/options/sym-offset
	echo "$old_tail" > $T/options/funcgraph-tail
	[ -n "$old_rv" ] && echo "$old_rv" > $T/options/funcgraph-retval
	echo nop > $T/current_tracer
	echo > $T/set_ftrace_filter
	echo > $T/trace
	echo 1 > $T/tracing_on
	lsmod | grep -q '^rust_print' && rmmod rust_print
}
# The trace of rust_print's init under the current tracer.
record() {
	echo > $T/trace
	echo 1 > $T/tracing_on
	insmod "$print" || bad "cannot load rust_print"
	echo 0 > $T/tracing_on
}
lines() { grep -v '^#' $T/trace > "$1"; }

# 1. Off by default; trace_options sets and clears it.
[ "$(cat $O)" = 0 ] || bad "options/rust-demangle is $(cat $O), want 0 by default"
grep -qx norust-demangle $T/trace_options || bad "trace_options does not list norust-demangle"
echo rust-demangle > $T/trace_options || bad "cannot write rust-demangle to trace_options"
[ "$(cat $O)" = 1 ] || bad "trace_options rust-demangle: the option file reads $(cat $O)"
grep -qx rust-demangle $T/trace_options || bad "trace_options does not list rust-demangle once set"
echo norust-demangle > $T/trace_options
[ "$(cat $O)" = 0 ] || bad "trace_options norust-demangle: the option file reads $(cat $O)"

# 2. The function tracer.
echo nop > $T/current_tracer
echo "$cp" > $T/set_ftrace_filter || bad "cannot filter on $cp"
echo 0 > $T/options/sym-offset
echo 1 > $T/options/print-parent
echo function > $T/current_tracer || bad "cannot select the function tracer"
record
lines /tmp/rd.off
echo 1 > $O
lines /tmp/rd.on
echo 1 > $T/options/sym-offset
lines /tmp/rd.on-so
echo 0 > $O
lines /tmp/rd.off-so
echo 0 > $T/options/sym-offset
n=$(grep -c " $cp" /tmp/rd.off)
echo "function tracer: $n calls of $cp"
grep -m2 "$cp" /tmp/rd.off-so | sed 's/^/  off: /'
grep -m2 "$path" /tmp/rd.on-so | sed 's/^/  on:  /'
[ "$n" -ge 5 ] || bad "only $n calls of call_printk traced (rust_print's init makes some 20)"
grep -q "$path" /tmp/rd.off && bad "the path is printed with the option off"
grep -q "$mangled" /tmp/rd.on && bad "the mangled name is printed with the option on"
# Each line read both ways: the same event (what comes before the
# function's name), the function's path for its name, the same offset
# and size after it; a Rust parent by a path (not "_R...", with "::"),
# its offset, size and module as they were; any other parent unchanged.
compare() { # off on
	awk -v cp="$cp" -v path="$path" '
	function tail(s) {
		return match(s, /(\+0x[0-9a-f]+\/0x[0-9a-f]+)?( \[[^]]*\])?$/) ? substr(s, RSTART) : ""
	}
	function no(why) { if (++errs <= 5) print "  line " FNR ": " why; }
	FNR == NR { off[FNR] = $0; n = FNR; next }
	{
		m++
		a = off[FNR]; b = $0
		i = index(a, " " cp); j = index(b, " " path)
		if (!i || !j) { no("no " (i ? "path" : "name") ": " (i ? b : a)); next }
		if (substr(a, 1, i) != substr(b, 1, j)) { no("different events: " a " / " b); next }
		ra = substr(a, i + 1 + length(cp)); rb = substr(b, j + 1 + length(path))
		pa = index(ra, " <-"); pb = index(rb, " <-")
		if (!pa || !pb) { no("no parent: " a " / " b); next }
		if (substr(ra, 1, pa - 1) != substr(rb, 1, pb - 1)) { no("offsets differ: " a " / " b); next }
		ra = substr(ra, pa + 3); rb = substr(rb, pb + 3)
		if (ra ~ /^_R/) {
			if (rb ~ /^_R/ || index(rb, "::") == 0 || tail(ra) != tail(rb)) { no("parent " ra " printed as " rb); next }
			rust++
		} else if (ra != rb) { no("C parent " ra " printed as " rb); next }
	}
	END {
		if (m != n) { print "  " n " lines off, " m " on"; errs++ }
		print "  " m " lines compared, " rust + 0 " with a Rust parent, " errs + 0 " wrong"
		exit errs > 0
	}' "$1" "$2"
}
grep " $cp" /tmp/rd.off > /tmp/rd.a; grep " $path" /tmp/rd.on > /tmp/rd.b
compare /tmp/rd.a /tmp/rd.b || bad "function tracer: the lines read with the option differ in more than the names"
grep " $cp" /tmp/rd.off-so > /tmp/rd.a; grep " $path" /tmp/rd.on-so > /tmp/rd.b
compare /tmp/rd.a /tmp/rd.b || bad "function tracer, sym-offset: the lines read with the option differ in more than the names"
grep -q " $path+0x[0-9a-f]*/0x[0-9a-f]* <-" /tmp/rd.on-so || bad "sym-offset: no +offset/size after the path"
rmmod rust_print

# 3. function_graph: call_printk and the _printk it calls, so that
# call_printk has an entry line and a closing one besides leaf lines
# (funcgraph-tail names the function on the closing line).
echo nop > $T/current_tracer
echo _printk >> $T/set_ftrace_filter 2> /dev/null || echo "(_printk not traceable: leaf lines only)"
echo 1 > $T/options/funcgraph-tail
echo function_graph > $T/current_tracer || bad "cannot select function_graph"
record
lines /tmp/rd.goff
echo 1 > $O
lines /tmp/rd.gon
form() { # file name: "leaf entry tail" counts
	echo "$(grep -c "$2();" "$1") $(grep -c "$2() {" "$1") $(grep -c "} /\* $2 \*/" "$1")"
}
f_off=$(form /tmp/rd.goff "$cp") f_on=$(form /tmp/rd.gon "$path")
echo "function_graph, leaf/entry/closing lines of call_printk: off $f_off, on $f_on"
grep -m3 "$path" /tmp/rd.gon | sed 's/^/  on:  /'
[ "$f_off" = "$f_on" ] || bad "function_graph: the forms of call_printk's lines differ ($f_off, $f_on)"
set -- $f_off
[ $(($1 + $2)) -ge 5 ] || bad "function_graph: only $(($1 + $2)) calls of call_printk"
grep -q "$mangled" /tmp/rd.gon && bad "function_graph: the mangled name is printed with the option on"
grep -q "$path" /tmp/rd.goff && bad "function_graph: the path is printed with the option off"
[ "$(wc -l < /tmp/rd.goff)" = "$(wc -l < /tmp/rd.gon)" ] || bad "function_graph: the line counts differ"
# funcgraph-retval: the name before the value, in leaf and closing lines.
if [ -n "$old_rv" ]; then
	echo 1 > $T/options/funcgraph-retval
	lines /tmp/rd.grv
	echo 0 > $O
	lines /tmp/rd.grv-off
	echo 0 > $T/options/funcgraph-retval
	a=$(grep -cE "$mangled\(\); /\* = |} /\* $mangled = " /tmp/rd.grv-off)
	b=$(grep -cE "$path\(\); /\* = |} /\* $path = " /tmp/rd.grv)
	echo "funcgraph-retval: $a lines with call_printk's value off, $b on"
	grep -m2 "$path.* = " /tmp/rd.grv | sed 's/^/  on:  /'
	[ "$a" -ge 5 ] && [ "$a" = "$b" ] || bad "funcgraph-retval: $a lines with the name, $b with the path"
	grep -q "$mangled" /tmp/rd.grv && bad "funcgraph-retval: the mangled name is printed with the option on"
fi
restore
rm -f /tmp/rd.off /tmp/rd.on /tmp/rd.on-so /tmp/rd.off-so /tmp/rd.a /tmp/rd.b \
	/tmp/rd.goff /tmp/rd.gon /tmp/rd.grv /tmp/rd.grv-off
exit $fail
