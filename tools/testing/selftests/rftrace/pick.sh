# SPDX-License-Identifier: GPL-2.0
# The functions the benchmarks attach to, chosen the same way on both
# cores (sourced by bench.sh, bench-waits.sh and bench-many-ops.sh): the
# eligible ones as BPF's own kprobe_multi bench takes them (the kernel's
# entries of available_filter_functions, each name once, without the idle
# and rcu_ functions it leaves out), less the Rust core's own Rust
# functions (C has none), and among them those a hash of the name picks,
# so that both cores get the same functions whatever their sites' order.

# Writes the eligible functions to /tmp/eligible.
eligible() {
	grep -v '\[' /sys/kernel/tracing/available_filter_functions | awk '{ print $1 }' |
		grep -v '^_R' |
		grep -v -E '^(arch_cpu_idle|default_idle|bpf_dispatcher_xdp_func)$|^rcu_|^__ftrace_invalid_address__' |
		awk '!seen[$0]++' > /tmp/eligible
}

pick() { # MODULUS: the eligible functions whose name hash is 0 mod MODULUS
	awk -v m="$1" 'BEGIN { for (i = 32; i < 127; i++) ord[sprintf("%c", i)] = i }
		{ h = 0; for (i = 1; i <= length($1); i++) h = (h * 31 + ord[substr($1, i, 1)]) % 1000003
		  if (h % m == 0) print $1 }' /tmp/eligible
}
