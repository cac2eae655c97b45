#!/bin/sh
# Traced Rust code (CONFIG_FTRACE_CORE_RUST_TRACE_RUST): the kernel's Rust
# functions are call sites like C ones. The kernel crate's functions and
# those of a Rust module are listed in available_filter_functions (by
# their kallsyms names), what must stay untraced (core, the tracer's own
# crates, kernel::ftrace's thunk) is not; a Rust path selects functions in
# set_ftrace_filter ('kernel::print::*',
# '<rust_minimal::RustMinimal as kernel::Module>::init'); function_graph
# shows a Rust module's init with the Rust calls it makes nested under it,
# with durations (the freed init_module named, as C names it); and a
# kprobe on a Rust function hits.
T=/sys/kernel/tracing
fail=0
bad() { echo "FAIL: $*"; fail=1; }
mod() { find /lib/modules -name "$1.ko" | head -1; }
minimal=$(mod rust_minimal)
print=$(mod rust_print)
[ -f "$minimal" ] && [ -f "$print" ] || { echo "rust_minimal.ko/rust_print.ko not built (CONFIG_SAMPLE_RUST_*)"; exit 4; }
lsmod | grep -q '^rust_minimal' && rmmod rust_minimal
lsmod | grep -q '^rust_print' && rmmod rust_print
echo nop > $T/current_tracer
echo 1 > $T/tracing_on
echo > $T/set_ftrace_filter
echo > $T/set_graph_function

# 1. Listed: the kernel crate, a module's functions; not: core's own
# functions, the tracer's crates, the thunk.
cat $T/available_filter_functions > /tmp/rt.all
nk=$(grep -c '^_R.*6kernel' /tmp/rt.all)
echo "kernel crate sites (names with 6kernel): $nk"
[ "$nk" -ge 50 ] || bad "only $nk Rust functions of the kernel crate listed"
grep -q '^_RNvNtCs[0-9A-Za-z]*_6kernel5print11call_printk$' /tmp/rt.all ||
	bad "kernel::print::call_printk not listed"
grep -E '^_RNvNtCs[0-9A-Za-z]*_4core3fmt5write$' /tmp/rt.all && bad "core::fmt::write is listed (core is not traced)"
grep -E '12rftrace_core|11rftrace_x86' /tmp/rt.all | head -3 | sed 's/^/listed: /'
grep -qE '12rftrace_core|11rftrace_x86' /tmp/rt.all && bad "the tracer's own crates are listed"
grep -E '6ftrace5thunk' /tmp/rt.all | head -3 | sed 's/^/listed: /'
grep -q '6ftrace5thunk' /tmp/rt.all && bad "kernel::ftrace's thunk is listed"
insmod "$print" || bad "cannot load rust_print"
nm=$(grep -c '\[rust_print\]$' $T/available_filter_functions)
echo "rust_print sites: $nm"
[ "$nm" -ge 3 ] || bad "only $nm functions of rust_print listed"
rmmod rust_print

# 2. Rust paths in set_ftrace_filter.
echo 'kernel::print::*' > $T/set_ftrace_filter || bad "write of 'kernel::print::*' failed"
sel=$(cat $T/set_ftrace_filter)
echo "kernel::print::* selects: $(echo "$sel" | wc -l) ($(echo "$sel" | head -3 | tr '\n' ' '))"
echo "$sel" | grep -q '6kernel5print11call_printk$' || bad "kernel::print::* does not select call_printk"
echo "$sel" | grep -vq '6kernel5print' && bad "kernel::print::* selects other functions: $sel"
echo 'kernel::no_such_module::*' > $T/set_ftrace_filter 2>/dev/null && bad "a Rust path that matches nothing was accepted"
echo > $T/set_ftrace_filter
# A command after a Rust path (:: is no separator), and set_graph_function.
echo 'kernel::print::*:traceoff' > $T/set_ftrace_filter || bad "write of 'kernel::print::*:traceoff' failed"
grep -q '6kernel5print11call_printk:traceoff:unlimited$' $T/set_ftrace_filter ||
	bad "no traceoff probe on call_printk: $(cat $T/set_ftrace_filter)"
echo '!kernel::print::*:traceoff' >> $T/set_ftrace_filter
echo 'kernel::print::*' > $T/set_graph_function || bad "write of 'kernel::print::*' to set_graph_function failed"
grep -q '6kernel5print11call_printk$' $T/set_graph_function ||
	bad "set_graph_function: kernel::print::* does not select call_printk"
echo > $T/set_graph_function
echo > $T/set_ftrace_filter
insmod "$minimal" || bad "cannot load rust_minimal"
echo '<rust_minimal::RustMinimal as kernel::Module>::init' > $T/set_ftrace_filter 2>/dev/null &&
	echo "<rust_minimal::RustMinimal as kernel::Module>::init selects: $(cat $T/set_ftrace_filter)"
# The path as rustc-demangle prints it, spaces kept inside <...>.
echo '<kernel::alloc::kvec::Vec<i32, *>>::push' > $T/set_ftrace_filter ||
	bad "write of '<kernel::alloc::kvec::Vec<i32, *>>::push' failed"
sel=$(cat $T/set_ftrace_filter)
echo "<kernel::alloc::kvec::Vec<i32, *>>::push selects: $sel"
echo "$sel" | grep -q 'kvecINtB5_3VeclNtNtB7_9allocator7KmallocE4push.*\[rust_minimal\]' ||
	bad "the Rust path of Vec<i32>::push does not select rust_minimal's"
rmmod rust_minimal
echo > $T/set_ftrace_filter

# 3. function_graph of the module's init: the module's functions (cached
# :mod: filter, applied at load) and the kernel crate's.
echo ':mod:rust_minimal' > $T/set_ftrace_filter
echo 'kernel::*' >> $T/set_ftrace_filter
echo function_graph > $T/current_tracer
echo > $T/trace
insmod "$minimal" || bad "cannot load rust_minimal"
echo 0 > $T/tracing_on
cat $T/trace > /tmp/rt.graph
echo nop > $T/current_tracer
echo 1 > $T/tracing_on
grep -v '^#' /tmp/rt.graph | head -40
# <RustMinimal as kernel::Module>::init opens a block; call_printk (the
# kernel crate's, which pr_info! calls) is inside it with its duration;
# the block closes at the init's column with the init's duration.
awk '
	!open && /12rust_minimal.*6Module4init.*[{] *$/ { open = 1; col = index($0, "_R"); next }
	open && !inner && /6kernel5print11call_printk[(][)];/ && /[0-9.]+ us/ && index($0, "_R") > col { inner = 1; next }
	open && inner && /[0-9.]+ us +[|] +[}] *$/ && index($0, "}") == col { ok = 1; exit }
	END { exit !ok }
' /tmp/rt.graph || bad "no Rust call nested under the module's init in function_graph"
# init_module's .init.text was freed before the trace was read: its name
# was kept (a tracer was on), for the trace and for kallsyms, as C keeps
# it (ftrace_mod_map), until the module goes.
grep -q '^ *[0-9]) .*| *init_module \[rust_minimal\]() {' /tmp/rt.graph ||
	bad "the freed init_module is not named in the trace"
n=$(grep -cE ' T init_module[[:space:]]+\[rust_minimal\]' /proc/kallsyms)
[ "$n" = 1 ] || bad "kallsyms lists the freed init_module of rust_minimal $n times, want 1"
rmmod rust_minimal
n=$(grep -cE ' init_module[[:space:]]+\[rust_minimal\]' /proc/kallsyms)
[ "$n" = 0 ] || bad "kallsyms still lists rust_minimal's init_module after rmmod"
echo > $T/set_ftrace_filter

# 4. A kprobe on a Rust function (on x86_64 on its call site: through the
# tracer).
cp=$(grep -m1 '^_RNvNtCs[0-9A-Za-z]*_6kernel5print11call_printk$' /tmp/rt.all)
echo "p:rust_call_printk $cp" > $T/kprobe_events || bad "cannot add a kprobe on $cp"
echo 1 > $T/events/kprobes/rust_call_printk/enable
# Through the tracer where kprobes use it (KPROBES_ON_FTRACE: not on
# arm64 in 6.12, where the kprobe is a BRK at the function's entry).
[ "$(uname -m)" != x86_64 ] || grep -q "^$cp" $T/enabled_functions ||
	bad "the kprobe on $cp is not on its call site (enabled_functions)"
insmod "$print" && rmmod rust_print
echo 0 > $T/events/kprobes/rust_call_printk/enable
hits=$(awk '$1 == "rust_call_printk" { print $2 }' $T/kprobe_profile)
echo "kprobe hits on call_printk: $hits"
[ "${hits:-0}" -ge 1 ] || bad "the kprobe on kernel::print::call_printk did not hit"
echo > $T/kprobe_events
echo > $T/trace
exit $fail
