// SPDX-License-Identifier: GPL-2.0
/*
 * The C side of the Rust generic ftrace core (rftrace_core.rs).
 *
 * - The module exports of the symbols the Rust crate defines: a Rust
 *   object built into vmlinux has no EXPORT_SYMBOL of its own.
 * - Accessors of the struct trace_array fields the core owns. That struct
 *   is private to kernel/trace (trace.h) and not in the Rust bindings.
 *
 * Built without the fentry flags: nothing here is traced.
 */
#include <linux/export.h>
#include <linux/ftrace.h>
#include "../trace.h"

struct ftrace_ops *rftrace_tr_ops(struct trace_array *tr);
void rftrace_tr_set_ops(struct trace_array *tr, struct ftrace_ops *ops);
struct list_head *rftrace_tr_func_probes(struct trace_array *tr);
struct list_head *rftrace_tr_mod_list(struct trace_array *tr, bool nt);

EXPORT_SYMBOL_GPL(register_ftrace_function);
EXPORT_SYMBOL_GPL(unregister_ftrace_function);
EXPORT_SYMBOL_GPL(ftrace_set_filter_ip);
EXPORT_SYMBOL_GPL(ftrace_set_filter_ips);
EXPORT_SYMBOL_GPL(ftrace_set_filter);
EXPORT_SYMBOL_GPL(ftrace_set_notrace);
EXPORT_SYMBOL_GPL(ftrace_set_global_filter);
EXPORT_SYMBOL_GPL(ftrace_set_global_notrace);
EXPORT_SYMBOL_GPL(ftrace_free_filter);
EXPORT_SYMBOL_GPL(ftrace_ops_set_global_filter);

struct ftrace_ops *rftrace_tr_ops(struct trace_array *tr)
{
	return tr->ops;
}

void rftrace_tr_set_ops(struct trace_array *tr, struct ftrace_ops *ops)
{
	tr->ops = ops;
}

/* The lists of struct trace_array the core keeps: probes, cached :mod:. */
struct list_head *rftrace_tr_func_probes(struct trace_array *tr)
{
	return &tr->func_probes;
}

struct list_head *rftrace_tr_mod_list(struct trace_array *tr, bool nt)
{
	return nt ? &tr->mod_notrace : &tr->mod_trace;
}
