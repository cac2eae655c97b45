// SPDX-License-Identifier: GPL-2.0

//! The function graph core: what `kernel/trace/fgraph.c` is in the C core.
//!
//! A graph ops (`struct fgraph_ops`) is a sub-ops of [`GRAPH_OPS`], the
//! manager ops whose callback is the x86_64 layer's `ftrace_graph_func`.
//! At a traced function's entry that callback calls
//! [`rftrace_graph_entry`], which pushes a frame on the task's shadow
//! stack (the real return address among other things), asks each graph
//! ops' entry callback and, if one wants the return, replaces the return
//! address by `return_to_handler`. That trampoline
//! calls [`ftrace_return_to_handler`], which runs the return callbacks of
//! the ops that wanted it, pops the frame and gives back the real address.
//!
//! The word layout of the shadow stack (6.12's, 4 KiB per task) and its
//! walks are `logic/fgraph.rs`, shared with the host tests; this file holds
//! the task memory, the hot path and the registration.
//!
//! Memory: a task gets its 4 KiB stack when graph tracing starts (or when
//! it is forked while graph tracing runs) and gives it back when the last
//! graph ops unregisters, unless it is still inside a traced function at
//! that moment (its return must come back through the stack): then it
//! keeps it until it exits or graph tracing stops again. The idle tasks
//! keep theirs, as in C.
//!
//! Locking: registration, the task memory passes and the pid switch run
//! under `ftrace_lock`. The hot path takes no lock: it reads [`ARRAY`]
//! and [`LIVE`], and touches only the current task's stack, with
//! preemption off at entry. Other CPUs read a task's stack only to unwind
//! it, with preemption off, which the RCU grace period before a stack is
//! freed waits for.

use crate::base::archdep::defs;
use crate::base::cells::Locked;
use crate::base::mutant::{self, Mutant};
use crate::base::sys::{to_errno, CGlobal, CoreGuard, Held, StateKey, TraceArray};
use crate::base::sys::{NoPreempt, NotThreadSafe, PreemptOff};
use crate::base::task::{guarded, Current, TaskRef};
use crate::base::tp;
use crate::graph::fgstacks::{
    cpu_online, ftrace_graph_active, give_stacks, take_stacks, zero_task_vars,
};
use crate::graph::shadow::{Shadow, TaskStack};
use crate::logic::fgraph::{self as sg, Returning, OPS_SLOTS};
use crate::logic::recursion;
use crate::ops::pidstate::traces_current;
use crate::ops::registry::Ops;
use crate::ops::registry::OpsRef;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};
use kernel::bindings;
use kernel::c_str;
use kernel::ffi::{c_int, c_uint, c_ulong, c_void};
use kernel::prelude::*;

use crate::graph::gops::{entry_fn, Gops, GopsArray, GopsRef, GraphEntry, KeepsGops};

/// The registered graph ops by index.
static ARRAY: GopsArray<OPS_SLOTS> = GopsArray::new();
/// The indices of [`ARRAY`] in use, read by the entry path.
static LIVE: AtomicU16 = AtomicU16::new(0);
/// A graph ops left [`LIVE`] while others stay, and the entries that
/// came through its sites may not all have left: one live ops is no
/// reason to skip the filter test ([`unregister_ftrace_graph`]).
static FILTER_ALWAYS: AtomicBool = AtomicBool::new(false);
/// Set by `ftrace_graph_stop()`: no new frame is pushed.
static DEAD: AtomicBool = AtomicBool::new(false);
/// `sleep-time`: a function's time includes the time its task slept.
static SLEEP_TIME: AtomicBool = AtomicBool::new(true);

struct State {
    slots: sg::OpsSlots,
    cpuhp: bool,
    probe: bool,
}

static STATE: Locked<State> = Locked::new(State {
    slots: sg::OpsSlots::new(),
    cpuhp: false,
    probe: false,
});

/// The manager ops of all graph ops.
pub static GRAPH_OPS: CGlobal<Ops> = CGlobal::new({
    let mut o = crate::base::zeroed::zeroed_ops();
    o.func = Some(bindings::ftrace_graph_func);
    // x86_64 has its own graph callback: not a stub (C's
    // FTRACE_OPS_GRAPH_STUB is 0 there).
    o.flags = 0;
    o
});

fn now() -> u64 {
    crate::base::sys::trace_clock()
}

fn return_handler() -> u64 {
    bindings::return_to_handler as *const () as u64
}

/// The registered graph ops ([`LIVE`]), or `None` when there is none or
/// graph tracing was stopped for good.
#[inline(always)]
fn live_ops() -> Option<u16> {
    let live = LIVE.load(Ordering::Acquire);
    (live != 0 && !DEAD.load(Ordering::Relaxed)).then_some(live)
}

/// This CPU runs [`ftrace_return_to_handler`]: made only there, for its
/// call.
struct InReturn(NotThreadSafe);

// SAFETY: made only in the return handler, for its call, which the
// unregistration's rude RCU-tasks wait covers (`wait_gops_left`,
// `stop_graph`) unless the task is preempted in it; for that case the
// owner of a graph ops waits (RCU tasks) before it frees it, as with C's.
unsafe impl KeepsGops for InReturn {}

// --- entry and return (hot path) ---------------------------------------

/// The architecture layer's graph callback, past its own checks: if a
/// graph ops wants the return of `func`, whose return address is at
/// `parent`, records it and puts `return_to_handler` there. Inlines what
/// C's `prepare_ftrace_return()` gets from headers: the pause count and
/// the recursion guard.
///
/// The arch layer calls it from the traced function's entry on the
/// current task, `parent` being the slot its return address is taken
/// from on return (its stack slot, or the trampoline's saved link
/// register), `retp` what names the frame to the unwinder
/// ([`ftrace_graph_ret_addr`]): that slot's address, or the frame
/// pointer where the unwinder passes it.
#[inline(always)]
pub(crate) fn rftrace_graph_entry(func: c_ulong, parent: &mut c_ulong, retp: c_ulong) {
    let Some(live) = live_ops() else {
        return;
    };
    let cur = Current::get();
    if cur.task().pause().load(Ordering::Relaxed) != 0 {
        return;
    }
    guarded(recursion::FTRACE_START, |np| {
        let ret = *parent;
        if enter(&cur, np, live, ret, func, retp as *mut c_ulong).is_ok() {
            *parent = return_handler() as c_ulong;
        }
    });
}

/// C's entry point for an architecture's graph callback: 0 when the
/// return is to be hooked (the frame holds `ret`), `-EBUSY` otherwise.
/// Called from the current task's traced function, `retp` being its
/// return address slot (only its address is recorded). The x86_64 layer
/// of the Rust core enters through [`rftrace_graph_entry`] instead.
#[inline(always)]
pub(crate) fn function_graph_enter(
    ret: c_ulong,
    func: c_ulong,
    _frame_pointer: c_ulong,
    retp: *mut c_ulong,
) -> c_int {
    // The hot path calls nothing out of line, `Error::to_errno()` (not
    // inlined across crates) included: the errno is a constant here.
    const BUSY: c_int = -(bindings::EBUSY as c_int);
    let Some(live) = live_ops() else {
        return BUSY;
    };
    let cur = Current::get();
    // The callers run with preemption off already: this costs a count.
    let p = PreemptOff::new();
    match enter(&cur, p.token(), live, ret, func, retp) {
        Ok(()) => 0,
        Err(_) => BUSY,
    }
}
crate::base::nokprobe::nokprobe!(function_graph_enter);

/// The entry: pushes the frame, asks the graph ops (the generic
/// [`RetStack::enter`](crate::logic::retstack::RetStack::enter)).
///
/// `live` is [`LIVE`] as just read, not 0; `retp` is the return address
/// slot the frame records (only its address is used).
#[inline(always)]
fn enter(
    cur: &Current,
    np: &NoPreempt,
    live: u16,
    ret: c_ulong,
    func: c_ulong,
    retp: *mut c_ulong,
) -> Result {
    let Some(mut s) = TaskStack::of_current(cur) else {
        return Err(EBUSY);
    };
    // One graph ops: the manager's filter is that ops' filter.
    let single = live & live.wrapping_sub(1) == 0 && !FILTER_ALWAYS.load(Ordering::Acquire);
    let mut trace = bindings::ftrace_graph_ent { func, depth: 0 };
    let entered = s.enter(ret as u64, func as u64, now(), retp as u64, live, |c| {
        let Some(g) = ARRAY.get(np, c.idx()) else {
            return false;
        };
        trace.depth = c.depth();
        (single || crate::ops::dispatch::ops_test(np, g.ops(), func as u64, false))
            && g.call_entry(false, &mut trace)
    });
    entered.map(|_| ()).map_err(|_| EBUSY)
}

/// The shadow stack is not as the entry left it: stop graph tracing and
/// say so. Returns where the broken return goes (as in C: `panic`).
#[cold]
fn bad_return(top: Option<usize>) -> c_ulong {
    DEAD.store(true, Ordering::Relaxed);
    pr_err!(
        "function graph: no frame for a return (shadow stack offset {:?}); graph tracing stopped\n",
        top
    );
    bindings::panic as *const () as c_ulong
}

/// Called by `return_to_handler` when a hooked function returns: runs
/// the return callbacks, pops the frame and gives the real return address.
///
/// `fregs` is `return_to_handler`'s frame, the return value registers
/// saved in it, which the architecture reads ([`defs::return_value`]);
/// the current task's top frame is the one of the returning function,
/// which the frame's checks verify.
///
/// # Safety
///
/// Called by `return_to_handler` alone, with its frame, live for the
/// call.
#[inline(always)]
pub(crate) unsafe fn ftrace_return_to_handler(fregs: *const bindings::ftrace_regs) -> c_ulong {
    // The clock first: fewer values live across the call.
    let rettime = now();
    let cur = Current::get();
    let Some(mut s) = TaskStack::of_current(&cur) else {
        return bad_return(None);
    };
    // The callbacks of the ops the frame names that are still registered;
    // an index unregistered since the entry is skipped.
    let live = LIVE.load(Ordering::Acquire);
    // SAFETY: `return_to_handler`'s frame, live for the call (the
    // contract).
    let retval = unsafe { defs::return_value(fregs) };
    let init = |r: &Returning| bindings::ftrace_graph_ret {
        func: r.frame.func as c_ulong,
        retval,
        depth: r.depth,
        overrun: r.overrun as c_uint,
        calltime: r.frame.calltime,
        rettime,
    };
    // SAFETY: `return_to_handler`'s frame, live for the call (the
    // contract), which is what the arch layer reads the frame pointer
    // from.
    let frame = unsafe { defs::return_frame(fregs) };
    let here = InReturn(NotThreadSafe);
    // Where the architecture names frames by the frame pointer, a return
    // whose frame pointer is not the one its entry saw is not the top
    // frame's: the shadow stack and the real one disagree.
    let left = s.leave(frame, live, init, |c, _, trace| {
        let Some(g) = ARRAY.get(&here, c.idx()) else {
            return;
        };
        if let Some(ret) = g.ret_callback() {
            if mutant::hits(Mutant::GraphDropRet) {
                return;
            }
            ret.call(trace);
        }
    });
    match left {
        Ok(r) if mutant::is(Mutant::GraphWrongRet) => {
            // The caller's return address instead of the function's own.
            sg::frame_below(&s, s.top())
                .and_then(|f| sg::read_frame(&s, f))
                .map_or(r.frame.ret, |f| f.ret) as c_ulong
        }
        Ok(r) => r.frame.ret as c_ulong,
        Err(sg::PopError::WrongSlot { expected, got }) => {
            pr_err!(
                "function graph: bad frame pointer: expected {:#x}, got {:#x}\n",
                expected,
                got
            );
            bad_return(Some(s.top()))
        }
        Err(_) => bad_return(Some(s.top())),
    }
}
crate::base::nokprobe::nokprobe!(ftrace_return_to_handler);

/// The entry callback of a pid-filtered graph ops: calls the real one
/// only for the tasks its trace array traces.
///
/// Installed as [`PID_ENTRY`].
struct PidEntry;

impl GraphEntry for PidEntry {
    fn entry(trace: &mut bindings::ftrace_graph_ent, g: GopsRef<'_>) -> c_int {
        if !traces_current(g.trace_array()) {
            return 0;
        }
        c_int::from(g.call_entry(true, trace))
    }
}

/// [`PidEntry`] as C calls it.
const PID_ENTRY: bindings::trace_func_graph_ent_t = entry_fn::<PidEntry>();

// --- what callbacks and unwinders ask --------------------------------------

/// Reserves `size_bytes` (up to 256) on the frame being entered for graph
/// ops `idx`; only from that ops' entry callback. Null when it does not
/// fit.
pub(crate) fn fgraph_reserve_data(idx: c_int, size_bytes: c_int) -> *mut c_void {
    let (Ok(idx), Ok(size)) = (usize::try_from(idx), usize::try_from(size_bytes)) else {
        return ptr::null_mut();
    };
    let cur = Current::get();
    let Some(mut s) = TaskStack::of_current(&cur) else {
        return ptr::null_mut();
    };
    match s.reserve(idx, size) {
        Some(first) => s.mem().word_ptr(first).cast(),
        None => ptr::null_mut(),
    }
}

/// The data graph ops `idx` reserved at the entry of the function now
/// returning; only from that ops' return callback.
pub(crate) fn fgraph_retrieve_data(idx: c_int, size_bytes: Option<&mut c_int>) -> *mut c_void {
    let Ok(idx) = usize::try_from(idx) else {
        return ptr::null_mut();
    };
    let cur = Current::get();
    let Some(s) = TaskStack::of_current(&cur) else {
        return ptr::null_mut();
    };
    let Some((first, n)) = s.retrieve(idx) else {
        return ptr::null_mut();
    };
    if let Some(size) = size_bytes {
        *size = n.wrapping_mul(sg::WORD_BYTES) as c_int;
    }
    s.mem().word_ptr(first).cast()
}

/// A word for the tasks without a stack: the callers write through the
/// pointer (only possible if a callback runs on such a task, which the
/// entry path does not let happen).
static SPARE_TASK_VAR: AtomicU64 = AtomicU64::new(0);

/// The current task's variable of `g` (a registered graph ops).
pub(crate) fn fgraph_get_task_var(g: GopsRef<'_>) -> *mut c_ulong {
    // Registration gave it an index below `OPS_SLOTS` (the mask keeps any
    // other value in range).
    let idx = g.idx() as usize & (OPS_SLOTS - 1);
    let cur = Current::get();
    let stack = TaskStack::of_current(&cur);
    match (stack, Shadow::task_var_offset(idx)) {
        (Some(s), Some(at)) => s.mem().word_ptr(at).cast(),
        _ => SPARE_TASK_VAR.as_ptr().cast(),
    }
}

/// The `idx`-th frame (0: the top one) of `t`'s shadow stack, or null.
/// The caller uses the result while that frame exists (callers ask about
/// the current task, from its callbacks).
pub(crate) fn ftrace_graph_get_ret_stack(
    t: TaskRef<'_>,
    idx: c_int,
) -> *mut bindings::ftrace_ret_stack {
    let p = PreemptOff::new();
    let Some(s) = TaskStack::of(t, p.token()) else {
        return ptr::null_mut();
    };
    let depth = usize::try_from(idx).unwrap_or(0);
    match s.ret_stack_offset(depth) {
        Some(start) => s.mem().word_ptr(start).cast(),
        None => ptr::null_mut(),
    }
}

/// Runs `f` on the child-time word (the profiler's `subtime`) of the
/// current task's `depth`-th frame (0: the top one); none without a stack
/// or such a frame. Only the task itself and its callbacks touch it.
pub(crate) fn with_subtime<R>(
    cur: &Current,
    depth: usize,
    f: impl FnOnce(&AtomicU64) -> R,
) -> Option<R> {
    let s = TaskStack::of_current(cur)?;
    let start = s.ret_stack_offset(depth)?;
    let w = s.mem().cell(start.checked_add(sg::FRAME_SUBTIME)?)?;
    Some(f(w))
}

/// For unwinders: the real return address behind `ret` if it is
/// `return_to_handler` and a frame of `t` saved the address of slot
/// `retp`; `*idx` (0 at first; C passes null or its cursor, `Option<&mut>`
/// being that pointer's ABI) says where to go on from.
pub(crate) fn ftrace_graph_ret_addr(
    t: TaskRef<'_>,
    idx: Option<&mut c_int>,
    ret: c_ulong,
    retp: *mut c_ulong,
) -> c_ulong {
    let handler = return_handler();
    let Some(from) = idx.filter(|_| ret as u64 == handler) else {
        return ret;
    };
    // Preemption off: a stack given back is freed only after the RCU
    // grace period that waits for this.
    let p = PreemptOff::new();
    let mut real = ret;
    if let (Some(s), Ok(mut at)) = (TaskStack::of(t, p.token()), usize::try_from(*from)) {
        real = s.ret_addr(Some(&mut at), ret as u64, retp as u64, handler) as c_ulong;
        if let Ok(at) = c_int::try_from(at) {
            *from = at;
        }
    }
    real
}

/// Stops graph tracing for good after an error (the selftests call it).
pub(crate) fn ftrace_graph_stop() {
    DEAD.store(true, Ordering::Relaxed);
    // Process context (the callers'): it enables a static key.
    crate::base::ffi::rftrace_kill_graph();
}

/// `sleep-time` of the function_graph tracer and the profiler.
pub(crate) fn ftrace_graph_sleep_time_control(enable: bool) {
    SLEEP_TIME.store(enable, Ordering::Relaxed);
}

/// The entry callback that wants nothing.
pub(crate) fn ftrace_graph_entry_stub(
    _trace: *mut bindings::ftrace_graph_ent,
    _gops: *mut Gops,
) -> c_int {
    0
}

/// With `sleep-time` off, moves the entry times of a task's frames by the
/// time it was switched out.
///
/// The sched_switch probe (the tracepoint's prototype, its tasks typed:
/// the scheduler's, alive during the switch).
extern "C" fn sched_switch_probe(
    _data: Option<TraceArray>,
    _preempt: bool,
    prev: TaskRef<'_>,
    next: TaskRef<'_>,
    _prev_state: c_uint,
) {
    if SLEEP_TIME.load(Ordering::Relaxed) {
        return;
    }
    let ts = now();
    // Nested in the switch's own preempt-off section: the proof.
    let off = PreemptOff::new();
    let np = off.token();
    prev.timestamp().store(ts, Ordering::Relaxed);
    let then = next.timestamp().load(Ordering::Relaxed);
    if then == 0 {
        return;
    }
    if let Some(mut s) = TaskStack::of(next, np) {
        s.add_calltime(ts.wrapping_sub(then));
    }
}

/// First graph ops: stacks for all and the sleep-time probe.
fn start_graph(held: &Held, st: &mut State) -> Result {
    give_stacks(held)?;
    if tp::set(tp::Probe::Switch(sched_switch_probe), None, true).is_ok() {
        st.probe = true;
    } else {
        pr_info!("ftrace_graph: Couldn't activate tracepoint probe to kernel_sched_switch\n");
    }
    Ok(())
}

/// Last graph ops gone (none is registered): the probe off, stacks back.
fn stop_graph(held: &Held, st: &mut State) {
    if st.probe {
        let _ = tp::set(tp::Probe::Switch(sched_switch_probe), None, false);
        st.probe = false;
    }
    // Entries in flight read `LIVE` as non-zero with preemption off, some
    // where RCU does not watch: every CPU scheduling ends both.
    crate::base::sys::wait_cpus_scheduled();
    take_stacks(held);
}

// --- registration --------------------------------------------------------

/// Waits until no CPU can be in the entry path, or in the return path
/// without having been preempted there, with a graph ops taken out of
/// [`ARRAY`] before the call (sleeps): the entry runs with preemption
/// off, which the rude grace period waits out, and so does a return
/// handler that nothing preempts (callbacks do not sleep). (C's
/// unregistration of a graph ops that is not the last waits for
/// neither.) Not waited for: a task preempted inside the return handler,
/// where the kernel preempts anywhere (`preempt=full`, PREEMPT_RT), as
/// in C; an owner that frees a graph ops waits for it (RCU tasks).
fn wait_gops_left() {
    if mutant::is(Mutant::SkipGraphWait) {
        return;
    }
    crate::base::sys::wait_cpus_scheduled();
}

/// Registers a graph ops: its callbacks run at the entry and return of
/// the functions its filter selects.
pub(crate) fn register_ftrace_graph(g: GopsRef<'_>) -> c_int {
    let mut guard = CoreGuard::lock();
    let (held, key) = guard.parts();
    let (i, active, mut r) = {
        let st = STATE.borrow(key);
        if !st.cpuhp {
            if let Err(e) = crate::base::sys::on_cpu_online(c_str!("fgraph:online"), cpu_online) {
                pr_warn!("fgraph: Error to init cpu hotplug support\n");
                return e.to_errno();
            }
            st.cpuhp = true;
        }
        let Some(i) = st.slots.alloc() else {
            return ENOSPC.to_errno();
        };
        if !ARRAY.is_free(held, i) {
            st.slots.release(i);
            return ENOSPC.to_errno();
        }
        let active = ftrace_graph_active.load(Ordering::Relaxed) + 1;
        ftrace_graph_active.store(active, Ordering::Relaxed);
        g.set_idx(held, i as c_int);
        g.set_saved(g.entry());
        if crate::ops::pidstate::pids_enabled(g.ops()) {
            g.set_entry(PID_ENTRY);
        }
        let r = if active == 1 {
            start_graph(held, st)
        } else {
            zero_task_vars(held, i);
            Ok(())
        };
        (i, active, r)
    };
    // Live before its sites call the graph entry when others are: an
    // entry that finds one live ops skips the filter test (the manager's
    // filter is then that ops'), which holds only while no other ops'
    // sites are being added or taken away. So a new ops counts before its
    // sites come, and, on the way out, after they went
    // ([`unregister_ftrace_graph`]). The first ops counts once its sites
    // are all there, and the last stops counting before they go, as in
    // C: the entries its sites call meanwhile find none live and return
    // at once, not one callback each, while the batch writes thousands
    // of sites. The graph's state is not borrowed across the sub-op's
    // startup, which changes the ops' own.
    if r.is_ok() {
        ARRAY.publish(held, i, g);
        if active > 1 {
            LIVE.fetch_or(1 << i, Ordering::Release);
        }
        r = crate::ops::subops::startup_subops(held, key, OpsRef::of_static(&GRAPH_OPS), g.ops());
        if r.is_ok() {
            if active == 1 {
                LIVE.fetch_or(1 << i, Ordering::Release);
            }
            return 0;
        }
        LIVE.fetch_and(!(1u16 << i), Ordering::Release);
        ARRAY.remove(held, i);
        // An entry that read the bit may be in its callback (preemption
        // off); the owner may free the ops on the error.
        crate::base::sys::wait_cpus_scheduled();
    }
    ftrace_graph_active.store(active - 1, Ordering::Relaxed);
    g.set_entry(g.saved());
    g.set_saved(None);
    let st = STATE.borrow(key);
    st.slots.release(i);
    if active == 1 {
        stop_graph(held, st);
    }
    to_errno(r)
}

/// Unregisters a graph ops.
pub(crate) fn unregister_ftrace_graph(g: GopsRef<'_>) {
    let mut guard = CoreGuard::lock();
    let (held, key) = guard.parts();
    let listed = usize::try_from(g.idx())
        .ok()
        .filter(|&i| ARRAY.holds(held, i, g));
    if let Some(i) = listed {
        if ftrace_graph_active.load(Ordering::Relaxed) > 0 && STATE.borrow(key).slots.release(i) {
            // Its sites go first, while it still counts (see
            // [`register_ftrace_graph`]): a lone ops left must not be
            // called, unfiltered, for the sites of this one. The last
            // stops counting first: no ops is left to be called so.
            let active = ftrace_graph_active.load(Ordering::Relaxed) - 1;
            if active == 0 {
                LIVE.fetch_and(!(1u16 << i), Ordering::Release);
            }
            let _ = crate::ops::subops::shutdown_subops(
                held,
                key,
                OpsRef::of_static(&GRAPH_OPS),
                g.ops(),
            );
            if active != 0 {
                // A CPU that came through one of its sites before they
                // went may not have read `LIVE` yet: reading it after the
                // bit went, one ops left would skip the filter test and be
                // called for a function of this one. Until the wait below
                // has seen those CPUs out, entries test the filter.
                FILTER_ALWAYS.store(true, Ordering::Release);
                LIVE.fetch_and(!(1u16 << i), Ordering::Release);
            }
            ARRAY.remove(held, i);
            ftrace_graph_active.store(active, Ordering::Relaxed);
            if active == 0 {
                // Its waits cover this graph ops' entries and returns.
                stop_graph(held, STATE.borrow(key));
            } else {
                // Other graph ops stay: an entry that read its bit in
                // `LIVE` and its place in `ARRAY` may still call its
                // entry callback, and a return that read its place its
                // return callback; its owner may free it once this
                // returns.
                wait_gops_left();
                // (A task preempted in a trampoline before its entry is
                // not waited for, as in C, whose lone graph ops is then
                // called directly.)
                FILTER_ALWAYS.store(false, Ordering::Release);
            }
        }
    }
    if g.saved().is_some() {
        g.set_entry(g.saved());
    }
    g.set_saved(None);
}

/// Sets up the ops inside a graph ops of a trace array: it shares the
/// filter of `src` (the array's function ops) when given.
///
/// C passes a graph ops' ops not yet registered and the function ops of
/// the same trace array, which outlives it (trace_functions_graph.c).
pub(crate) fn fgraph_init_ops<'a>(dst: OpsRef<'a>, src: Option<OpsRef<'a>>) {
    let g = CoreGuard::lock();
    dst.init_graph(g.held(), src);
}

/// The pid lists changed: points each pid-aware graph ops at the pid
/// filter or back at its own entry callback.
pub(crate) fn update_pid_funcs(key: &StateKey) {
    let m = OpsRef::of_static(&GRAPH_OPS);
    if !m.has(bindings::FTRACE_OPS_FL_INITIALIZED as c_ulong) {
        return;
    }
    for op in m.subops(key) {
        if !op.has(bindings::FTRACE_OPS_FL_PID as c_ulong) {
            continue;
        }
        let g = GopsRef::of_ops(op);
        g.set_entry(if crate::ops::pidstate::pids_enabled(op) {
            PID_ENTRY
        } else {
            g.saved()
        });
    }
}
