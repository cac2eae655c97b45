// SPDX-License-Identifier: GPL-2.0

//! The bottom layer of the generic core: the C-visible globals of the
//! core, the cells and lock guards that state behind `ftrace_lock`
//! requires, the error conversion at the C boundary, the way tracing is
//! stopped for good, and the helpers of the tracing core the rest calls.
//! Every other module builds on this one; it uses none of them.

use core::cell::UnsafeCell;
use core::marker::PhantomData;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU8, AtomicUsize, Ordering};
use kernel::bindings;
use kernel::c_str;
use kernel::ffi::{c_int, c_ulong, c_void};
use kernel::prelude::*;
use kernel::sync::rcu;

pub(crate) use crate::base::ffi::TraceArray;
use crate::base::ffi::{rftrace_cpu, rftrace_irq_restore, rftrace_irq_save};
use crate::base::zeroed::{zeroed, zeroed_ops};

/// The C boundary's form of a result: 0, or the negative errno.
#[inline(always)]
pub(crate) fn to_errno(r: Result) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}

/// A C-visible global with interior mutability: same layout as `T`.
#[repr(transparent)]
pub struct CGlobal<T>(UnsafeCell<T>);

// SAFETY: every access goes through raw pointers, under the locking rule
// stated where each global is defined.
unsafe impl<T> Sync for CGlobal<T> {}

impl<T> CGlobal<T> {
    /// A global holding `v`.
    pub const fn new(v: T) -> Self {
        CGlobal(UnsafeCell::new(v))
    }
    /// Where the value is.
    pub const fn get(&self) -> *mut T {
        self.0.get()
    }
}

/// `lockdep_assert_held(m)`: warns when lockdep runs and `m` is not held
/// by this task (nothing without lockdep).
pub(crate) fn assert_held(m: &CMutex) {
    rftrace_assert_held(m)
}

// On PREEMPT_RT a `struct mutex` points to a `task_struct`, which holds an
// empty `struct sched_statistics` (without SCHEDSTATS): the lint's
// complaint about that struct, reached through pointers, is not about
// anything crossing the boundary by value.
#[allow(improper_ctypes)]
unsafe extern "C" {
    /// `lockdep_assert_held()` (abi.c) of a static mutex of the core,
    /// whose `struct mutex` a `CMutex` starts with: it reads the lockdep
    /// map, zero or initialised.
    safe fn rftrace_assert_held(m: &CMutex);
}

// --- The C core's global data (include/linux/ftrace.h, ftrace_internal.h) --

/// `ftrace_enabled`, the sysctl: read fresh at every update (the boot
/// selftests store to it directly).
#[no_mangle]
pub static ftrace_enabled: AtomicI32 = AtomicI32::new(0);

/// Set by `ftrace_filter=` / `ftrace_notrace=` on the command line.
#[no_mangle]
pub static ftrace_filter_param: CGlobal<bool> = CGlobal::new(false);

/// `dyn_ftrace_total_info`: records, and the pages and groups they use.
#[no_mangle]
pub static ftrace_update_tot_cnt: AtomicUsize = AtomicUsize::new(0);
/// Pages the call-site records take.
#[no_mangle]
pub static ftrace_number_of_pages: AtomicUsize = AtomicUsize::new(0);
/// Groups of call-site records (the kernel, each module).
#[no_mangle]
pub static ftrace_number_of_groups: AtomicUsize = AtomicUsize::new(0);

/// What the shared trampolines pass their callback as the ops.
#[no_mangle]
pub static function_trace_op: AtomicPtr<bindings::ftrace_ops> = AtomicPtr::new(ptr::null_mut());

/// What the shared trampolines call (the list dispatcher once an ops is
/// registered).
/// (An `ftrace_func_t` for C; the core only stores to it.)
#[no_mangle]
pub static ftrace_trace_function: AtomicPtr<c_void> =
    AtomicPtr::new(bindings::ftrace_stub as *mut c_void);

/// The end of the ops list: a stub ops.
#[no_mangle]
pub static ftrace_list_end: CGlobal<bindings::ftrace_ops> = CGlobal::new(bindings::ftrace_ops {
    func: Some(bindings::ftrace_stub),
    flags: (bindings::FTRACE_OPS_FL_STUB | bindings::FTRACE_OPS_FL_INITIALIZED) as c_ulong,
    ..zeroed_ops()
});

/// The ops a site's literal names when several ops want it: its callback
/// walks the list (`DYNAMIC_FTRACE_WITH_CALL_OPS`; the architecture's
/// code reads it too).
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS)]
#[no_mangle]
pub static ftrace_list_ops: CGlobal<bindings::ftrace_ops> = CGlobal::new(bindings::ftrace_ops {
    func: Some(bindings::arch_ftrace_ops_list_func),
    flags: (bindings::FTRACE_OPS_FL_STUB | bindings::FTRACE_OPS_FL_INITIALIZED) as c_ulong,
    ..zeroed_ops()
});

/// The ops a site's literal names when no ops wants it: a stub.
#[cfg(CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS)]
#[no_mangle]
pub static ftrace_nop_ops: CGlobal<bindings::ftrace_ops> = CGlobal::new(bindings::ftrace_ops {
    func: Some(bindings::ftrace_stub),
    flags: (bindings::FTRACE_OPS_FL_STUB | bindings::FTRACE_OPS_FL_INITIALIZED) as c_ulong,
    ..zeroed_ops()
});

/// The registered ops, newest first, ending at `ftrace_list_end`. Written
/// under `ftrace_lock`, read locklessly by the dispatcher.
#[no_mangle]
pub static ftrace_ops_list: AtomicPtr<bindings::ftrace_ops> = AtomicPtr::new(ftrace_list_end.get());

/// The core's mutex; fgraph.c takes it too. Initialised by `ftrace_init()`.
#[no_mangle]
pub static ftrace_lock: CMutex = CMutex::new();

/// The ops of the function tracer's top-level trace array.
#[no_mangle]
pub static global_ops: CGlobal<bindings::ftrace_ops> = CGlobal::new(bindings::ftrace_ops {
    func: Some(bindings::ftrace_stub),
    ..zeroed_ops()
});

/// The bytes a failed site check expected, for `ftrace_bug()`.
#[no_mangle]
pub static ftrace_expected: CGlobal<*const c_void> = CGlobal::new(ptr::null());

/// What `ftrace_bug()` reports; nobody else reads it.
#[no_mangle]
pub static ftrace_bug_type: CGlobal<c_int> = CGlobal::new(0);

/// Set when the core met something it cannot trust (`ftrace_kill()`).
pub(crate) static DEAD: AtomicBool = AtomicBool::new(false);

pub(crate) fn dead() -> bool {
    DEAD.load(Ordering::Relaxed)
}

pub(crate) fn enabled() -> bool {
    // Other code stores to it at any time: read fresh.
    ftrace_enabled.load(Ordering::Relaxed) != 0
}

/// A static mutex of the core (C sees the `struct mutex` it starts with).
/// It is initialised in a lockdep class of its own, keyed by a static key
/// of the call site of [`cmutex_init!`]: what `DEFINE_MUTEX()` gives C.
/// Taken before it was initialised (a boot-order bug), it is initialised
/// then, in a class shared by all such.
///
/// # Invariants
///
/// `m` is initialised exactly once, by the caller that moves `state` from
/// [`CMutex::NEW`] to [`CMutex::INITIALISING`]; it is locked only once
/// `state` is [`CMutex::READY`].
#[repr(C)]
pub struct CMutex {
    m: UnsafeCell<bindings::mutex>,
    state: AtomicU8,
}

// SAFETY: a kernel mutex is made for sharing between tasks; `state`
// orders its initialisation before every use (the invariants).
unsafe impl Sync for CMutex {}

impl CMutex {
    const NEW: u8 = 0;
    const INITIALISING: u8 = 1;
    const READY: u8 = 2;

    pub(crate) const fn new() -> Self {
        CMutex {
            // Not yet initialised: initialised before use (the
            // invariants).
            m: UnsafeCell::new(zeroed()),
            state: AtomicU8::new(Self::NEW),
        }
    }

    /// The C mutex.
    pub(crate) fn as_ptr(&self) -> *mut bindings::mutex {
        self.m.get()
    }

    /// Initialises the mutex in the class `key`, unless it was already.
    pub(crate) fn init(&self, name: &'static CStr, key: &'static kernel::sync::LockClassKey) {
        if self
            .state
            .compare_exchange(
                Self::NEW,
                Self::INITIALISING,
                Ordering::Acquire,
                Ordering::Acquire,
            )
            .is_err()
        {
            while self.state.load(Ordering::Acquire) != Self::READY {
                core::hint::spin_loop();
            }
            return;
        }
        // `LockClassKey` is a transparent wrapper of an `Opaque` key,
        // itself transparent: the cast gives the C key.
        let key = ptr::from_ref(key)
            .cast_mut()
            .cast::<bindings::lock_class_key>();
        // SAFETY: this caller alone initialises the mutex, which nobody
        // uses before `READY` (the invariants); the key is static, as
        // lockdep requires of a class key.
        unsafe { bindings::__mutex_init(self.as_ptr(), name.as_char_ptr(), key) };
        self.state.store(Self::READY, Ordering::Release);
    }

    /// Locks it, for the life of the guard (sleeps).
    pub(crate) fn lock(&self) -> Guard {
        if self.state.load(Ordering::Acquire) != Self::READY {
            self.init(
                kernel::c_str!("rftrace early mutex"),
                kernel::static_lock_class!(),
            );
        }
        // SAFETY: initialised (above, or before: the invariants).
        unsafe { Guard::of(self.as_ptr()) }
    }
}

/// Initialises a [`CMutex`] in a lockdep class of its own, keyed by a
/// static key of this call site.
macro_rules! cmutex_init {
    ($m:expr, $name:literal) => {{
        let key: &'static kernel::sync::LockClassKey = kernel::static_lock_class!();
        $m.init(kernel::c_str!($name), key)
    }};
}
pub(crate) use cmutex_init;

/// Initialises a C mutex of an object in a lockdep class of its own,
/// keyed by a static key of the call site: what `mutex_init()` gives C
/// (every ops' `regex_lock` shares the class of the one place that
/// initialises them, as in C).
///
/// # Safety
///
/// `$m` is valid and not in use.
macro_rules! mutex_init {
    ($m:expr, $name:literal) => {{
        let key: &'static kernel::sync::LockClassKey = kernel::static_lock_class!();
        $crate::base::sys::mutex_init_keyed($m, kernel::c_str!($name), key)
    }};
}
pub(crate) use mutex_init;

/// The body of [`mutex_init!`].
///
/// # Safety
///
/// `m` is valid and not in use.
pub(crate) unsafe fn mutex_init_keyed(
    m: *mut bindings::mutex,
    name: &'static CStr,
    key: &'static kernel::sync::LockClassKey,
) {
    let key = ptr::from_ref(key)
        .cast_mut()
        .cast::<bindings::lock_class_key>();
    // SAFETY: `m` is valid and unused (the contract); the key is static,
    // as lockdep requires of a class key, and names this call site only.
    unsafe { bindings::__mutex_init(m, name.as_char_ptr(), key) };
}

pub(crate) use kernel::sync::rcu::{synchronize_rcu, synchronize_rcu_tasks};

/// Waits until every online CPU has scheduled since the call (sleeps;
/// takes the hotplug read lock): a CPU that was then in a section with
/// preemption or interrupts off, or where RCU does not watch (the entry
/// code, idle), has left it. The wait of a rude RCU-tasks grace period,
/// which runs the same work on every CPU from its kthread, without that
/// kthread's pacing: it sleeps 100 ms after each grace period, which every
/// wait begun within them paid.
///
/// From a work item, or when the per-CPU works cannot be allocated, the
/// kthread's grace period instead: a worker that waits for works of its
/// own pool depends on the pool making another worker.
pub(crate) fn wait_cpus_scheduled() {
    extern "C" fn scheduled(_w: *mut bindings::work_struct) {}
    // SAFETY: no precondition; it reads the current task's worker.
    let in_work = !unsafe { bindings::current_work() }.is_null();
    // SAFETY: `scheduled` has a work function's prototype and touches
    // nothing; its works live until the call returns, which flushes them.
    if in_work || unsafe { bindings::schedule_on_each_cpu(Some(scheduled)) } != 0 {
        kernel::sync::rcu::synchronize_rcu_tasks_rude();
    }
}

/// The tracing clock (`trace_clock_local()`, ns): callable in any
/// context, and not traced.
#[inline(always)]
pub(crate) fn trace_clock() -> u64 {
    // SAFETY: no precondition.
    unsafe { bindings::trace_clock_local() }
}

/// The scheduler's clock (ns), which works from early boot.
pub(crate) fn sched_clock() -> u64 {
    // SAFETY: no precondition.
    unsafe { bindings::sched_clock() }
}

/// The SMP call function that runs the `F` at `info`.
///
/// # Safety
///
/// `info` points to an `F` that lives until every CPU ran it.
unsafe extern "C" fn run_on_cpu<F: Fn() + Sync>(info: *mut c_void) {
    // SAFETY: the contract; shared by the CPUs that run it (`Sync`).
    let f = unsafe { &*info.cast_const().cast::<F>() };
    f()
}

/// Runs `f` on every online CPU (from an interrupt, or here with
/// preemption off) and waits for all of them (sleeps).
pub(crate) fn on_each_online_cpu<F: Fn() + Sync>(f: &F) {
    // SAFETY: `run_on_cpu::<F>` gets `f`, which lives while this call waits
    // (`wait`) for every run to finish; the mask is the kernel's own
    // online mask.
    unsafe {
        bindings::on_each_cpu_cond_mask(
            None,
            Some(run_on_cpu::<F>),
            ptr::from_ref(f).cast_mut().cast(),
            true,
            ptr::addr_of!(bindings::__cpu_online_mask),
        )
    };
}

/// A work item of the core in static memory that runs `run` on the
/// system workqueue for long work (its waits are RCU-tasks grace
/// periods, seconds at times). Queued under `ftrace_lock` only.
///
/// # Invariants
///
/// `work` is initialised once, by the first [`StaticWork::queue`] (which
/// sets `ready`), before it is ever queued: the queueing is serialized by
/// `ftrace_lock`, so no two callers initialise it and none queues it
/// uninitialised.
pub(crate) struct StaticWork {
    work: kernel::types::Opaque<bindings::work_struct>,
    ready: AtomicBool,
    run: extern "C" fn(*mut bindings::work_struct),
}

// SAFETY: the work item is C's to run on any CPU and is reached only
// through `queue`, which the lock serializes; `run` is a plain function.
unsafe impl Sync for StaticWork {}

impl StaticWork {
    pub(crate) const fn new(run: extern "C" fn(*mut bindings::work_struct)) -> Self {
        StaticWork {
            work: kernel::types::Opaque::uninit(),
            ready: AtomicBool::new(false),
            run,
        }
    }

    /// Has the work run once more, soon, unless it is queued and has not
    /// started yet (then that run sees what the caller did before).
    pub(crate) fn queue(&'static self, _held: &Held) {
        if !self.ready.load(Ordering::Relaxed) {
            let key: &'static kernel::sync::LockClassKey = kernel::static_lock_class!();
            let key = ptr::from_ref(key)
                .cast_mut()
                .cast::<bindings::lock_class_key>();
            // SAFETY: not initialised yet (`ready`), hence not queued, and
            // the lock (held) keeps every other caller out; the name and
            // the class key are static, as lockdep requires.
            unsafe {
                bindings::init_work_with_key(
                    self.work.get(),
                    Some(self.run),
                    false,
                    c_str!("rftrace_work").as_char_ptr(),
                    key,
                )
            };
            self.ready.store(true, Ordering::Relaxed);
        }
        // SAFETY: an initialised work item (above) in static memory, so it
        // outlives any queueing; the workqueue is the kernel's own.
        unsafe {
            bindings::queue_work_on(
                bindings::wq_misc_consts_WORK_CPU_UNBOUND as _,
                bindings::system_long_wq,
                self.work.get(),
            )
        };
    }
}

/// Has `online` run on every CPU that comes online from now on, and now
/// on each online one, under a dynamic hotplug state called `name`
/// (sleeps; takes the hotplug lock).
pub(crate) fn on_cpu_online(
    name: &'static kernel::str::CStr,
    online: extern "C" fn(kernel::ffi::c_uint) -> c_int,
) -> Result {
    // SAFETY: `online` has the prototype of a hotplug startup callback,
    // needs nothing but its CPU number, and, being a function of this
    // built-in crate, stays; the name is a static string.
    let r = unsafe {
        bindings::__cpuhp_setup_state(
            bindings::cpuhp_state_CPUHP_AP_ONLINE_DYN,
            name.as_char_ptr(),
            true,
            Some(online),
            None,
            false,
        )
    };
    kernel::error::to_result(r.min(0))
}

/// `ftrace_lock`, held for the life of the guard.
pub(crate) struct Guard(*mut bindings::mutex);

impl Guard {
    pub(crate) fn lock() -> Guard {
        ftrace_lock.lock()
    }

    /// # Safety
    ///
    /// `m` is an initialised mutex that outlives the guard; the caller
    /// may sleep.
    pub(crate) unsafe fn of(m: *mut bindings::mutex) -> Guard {
        // SAFETY: per the function's contract.
        unsafe { bindings::mutex_lock(m) };
        Guard(m)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // SAFETY: locked by `Guard::of`.
        unsafe { bindings::mutex_unlock(self.0) };
    }
}

/// `ftrace_lock`, held for the life of the guard, with the proof of it
/// ([`Held`]) and the right to reach the core's state it guards
/// ([`StateKey`]).
///
/// # Invariants
///
/// `ftrace_lock` is held by this task while the value lives. `key` is the
/// only [`StateKey`] while it does: the lock is not recursive, so no other
/// guard exists, and a key is made nowhere else.
pub(crate) struct CoreGuard {
    _lock: Guard,
    held: Held,
    key: StateKey,
}

impl CoreGuard {
    pub(crate) fn lock() -> CoreGuard {
        CoreGuard {
            _lock: Guard::lock(),
            held: Held(NotThreadSafe),
            key: StateKey(NotThreadSafe),
        }
    }

    /// The proof that the lock is held, for as long as the guard is
    /// borrowed.
    pub(crate) fn held(&self) -> &Held {
        &self.held
    }

    /// The proof and the key, for as long as the guard is borrowed.
    pub(crate) fn parts(&mut self) -> (&Held, &mut StateKey) {
        (&self.held, &mut self.key)
    }

    /// Runs `f` with the lock held, given its proof and key.
    pub(crate) fn with<R>(f: impl FnOnce(&Held, &mut StateKey) -> R) -> R {
        let mut g = CoreGuard::lock();
        let (held, key) = g.parts();
        f(held, key)
    }
}

/// The right to reach the data of the core's
/// [`Locked`](crate::base::cells::Locked) cells: one per holding of
/// `ftrace_lock`, kept by its [`CoreGuard`] (its invariants). Borrowed
/// shared, it lets the data be read; borrowed mutably, changed: a path
/// that would change core state while it holds a reference to it, or
/// borrow the same state twice, does not compile (as
/// `kernel::sync::LockedBy` rules it out through its owner). Like the
/// proofs, it cannot leave its task.
pub(crate) struct StateKey(NotThreadSafe);

/// The field of a proof that holds for the task (or CPU) that made it
/// only, a lock it holds, preemption or a read side it is in: neither
/// `Send` nor `Sync`, so neither the proof nor a reference to it can
/// reach another thread (later kernels have it as
/// `kernel::types::NotThreadSafe`).
pub(crate) type NotThreadSafe = PhantomData<*mut ()>;
/// The value of [`NotThreadSafe`].
#[allow(non_upper_case_globals)]
pub(crate) const NotThreadSafe: NotThreadSafe = PhantomData;

/// What keeps the registered ops, and the sets they publish, alive while
/// a reference to it lives: `ftrace_lock` ([`Held`]), under which they
/// change, or preemption off ([`NoPreempt`]): an unregistered ops and a
/// replaced set are freed only after every CPU scheduled.
pub(crate) trait Keeps: private::Sealed {}

mod private {
    pub(crate) trait Sealed {}
}

/// `ftrace_lock` is held by this task while a reference to this lives:
/// borrowed from the [`CoreGuard`] that holds it.
pub(crate) struct Held(NotThreadSafe);

impl private::Sealed for Held {}
impl Keeps for Held {}

/// Preemption is off on this CPU while a reference to this lives:
/// handed out by the recursion guard (`task::guarded`) and by
/// [`PreemptOff`].
pub(crate) struct NoPreempt(NotThreadSafe);

impl NoPreempt {
    /// # Safety
    ///
    /// Preemption is off on this CPU for as long as `'a`.
    #[inline(always)]
    pub(crate) unsafe fn assume<'a>() -> &'a NoPreempt {
        &NoPreempt(NotThreadSafe)
    }
}

impl private::Sealed for NoPreempt {}
impl Keeps for NoPreempt {}
impl ReadSide for NoPreempt {}

/// What delays a plain RCU grace period (`synchronize_rcu()`) while a
/// reference to it lives: preemption off ([`NoPreempt`]) or an RCU
/// read-side section ([`InRcu`]).
pub(crate) trait ReadSide: private::Sealed + rcu::ReadSide {}

/// This task is in an RCU read-side section while a reference to this
/// lives: asserted by a path C runs inside one.
pub(crate) struct InRcu(NotThreadSafe);

impl InRcu {
    /// # Safety
    ///
    /// This task is in an RCU read-side section for as long as `'a`.
    #[inline(always)]
    pub(crate) unsafe fn assume<'a>() -> &'a InRcu {
        &InRcu(NotThreadSafe)
    }
}

impl private::Sealed for InRcu {}
impl ReadSide for InRcu {}

// SAFETY: preemption off delays every plain grace period (RCU's flavours
// are one since 5.0): `synchronize_rcu()` waits for this CPU to schedule.
unsafe impl rcu::ReadSide for NoPreempt {}
// SAFETY: an RCU read-side section, which the grace periods wait for.
unsafe impl rcu::ReadSide for InRcu {}

/// Preemption off (notrace, as the tracer's own paths need) for the life
/// of the guard.
pub(crate) struct PreemptOff(());

impl PreemptOff {
    pub(crate) fn new() -> Self {
        // SAFETY: paired with the enable in `drop`, on this task (the guard
        // is not `Send`): an unpaired disable would stall this CPU's
        // scheduling, it corrupts nothing.
        unsafe { bindings::ftrace_preempt_disable_notrace() };
        PreemptOff(())
    }

    /// The proof, for as long as the guard is borrowed.
    pub(crate) fn token(&self) -> &NoPreempt {
        &NoPreempt(NotThreadSafe)
    }
}

impl Drop for PreemptOff {
    fn drop(&mut self) {
        // SAFETY: disabled in `new`.
        unsafe { bindings::ftrace_preempt_enable_notrace() };
    }
}

/// Interrupts off on this CPU (notrace helpers) for the life of the guard.
pub(crate) struct IrqOff(c_ulong);

impl IrqOff {
    #[inline(always)]
    pub(crate) fn new() -> Self {
        // A notrace helper, callable anywhere; restored in `drop`.
        IrqOff(rftrace_irq_save())
    }

    /// This CPU (it cannot change while interrupts are off).
    #[inline(always)]
    pub(crate) fn cpu(&self) -> usize {
        rftrace_cpu() as usize
    }
}

impl Drop for IrqOff {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: the flags `new` saved.
        unsafe { rftrace_irq_restore(self.0) };
    }
}

impl crate::base::ffi::StaticMutex {
    /// Takes it, until the guard drops (sleeps).
    pub(crate) fn lock(&'static self) -> Guard {
        // SAFETY: initialised at build time and static, so it outlives the
        // guard; the callers may sleep.
        unsafe { Guard::of(self.as_ptr()) }
    }
}

/// `text_mutex`, held for the life of the guard (what the arch layer's
/// text writers require).
pub(crate) struct TextGuard {
    _held: Guard,
}

impl TextGuard {
    pub(crate) fn lock() -> Self {
        TextGuard {
            _held: crate::base::ffi::text_mutex.lock(),
        }
    }
}

/// Points the shared trampolines' callback call at `f`, with the list end
/// as its ops (before the first site calls them: the arch layer then
/// patches the call itself).
pub(crate) fn set_trace_function(f: bindings::ftrace_func_t) {
    function_trace_op.store(ftrace_list_end.get(), Ordering::Release);
    let f = f.map_or(ptr::null_mut(), |f| f as *mut c_void);
    ftrace_trace_function.store(f, Ordering::Release);
}

/// Shortens `v` to `n` elements (no change if it is shorter), dropping
/// the rest and keeping its room: `Vec::truncate`, which `KVec` lacks.
pub(crate) fn truncate<T, A: kernel::alloc::Allocator>(v: &mut kernel::alloc::Vec<T, A>, n: usize) {
    let len = v.len();
    if n < len {
        let tail = ptr::slice_from_raw_parts_mut(v.as_mut_slice()[n..].as_mut_ptr(), len - n);
        // SAFETY: `n` is within the length, so the first `n` elements stay
        // initialised; the vector gives up the rest before they are
        // dropped, once each, so a panicking drop cannot drop one twice.
        unsafe {
            v.set_len(n);
            ptr::drop_in_place(tail);
        }
    }
}

/// A function's address.
pub(crate) fn addr(f: unsafe extern "C" fn()) -> u64 {
    f as *const () as u64
}

/// Stops all function tracing for good, after something went wrong.
pub(crate) fn ftrace_kill() {
    DEAD.store(true, Ordering::Relaxed);
    // Kprobes on the function entries exist only where the architecture
    // has them (x86_64, not arm64), as C's hook does.
    #[cfg(CONFIG_KPROBES_ON_FTRACE)]
    // SAFETY: the kprobes core's hook for exactly this; no precondition.
    unsafe {
        bindings::kprobe_ftrace_kill()
    };
}

/// Whether tracing was stopped for good by [`ftrace_kill`].
pub(crate) fn ftrace_is_dead() -> c_int {
    c_int::from(dead())
}

/// Reports a site that could not be patched, as the C core does, and
/// stops tracing.
///
/// `rec` is null or a record (only its `ip` is read).
pub(crate) fn ftrace_bug(failed: c_int, rec: Option<&bindings::dyn_ftrace>) {
    let ip = rec.map_or(0, |r| r.ip as u64);
    report_bug(Error::from_errno(failed), ip);
}

pub(crate) fn report_bug(failed: Error, ip: u64) {
    // The bytes of a site's instruction.
    const N: usize = bindings::MCOUNT_INSN_SIZE as usize;
    let mut cur = [0u8; N];
    // SAFETY: reads `N` bytes of text without faulting.
    let ok = unsafe {
        bindings::copy_from_kernel_nofault(cur.as_mut_ptr().cast(), ip as *const c_void, N)
    } == 0;
    // SAFETY: set by the arch layer, under `ftrace_lock` as this report
    // runs, to an instruction's static bytes or null.
    let exp = unsafe { (*ftrace_expected.get()).cast::<[u8; N]>().as_ref() };
    let what = match failed {
        e if e == injected() => "hit an injected failure at",
        e if e == EFAULT => "faulted on modifying",
        e if e == EINVAL => "failed to modify",
        e if e == EPERM => "faulted on writing",
        _ => "failed on",
    };
    pr_err!(
        "ftrace {} [<{:#x}>]: actual {:02x?}, expected {:02x?}\n",
        what,
        ip,
        if ok { Some(cur) } else { None },
        exp
    );
    ftrace_kill();
}

/// The error of a site patch that the fault injection `fail_rftrace_patch`
/// failed (`ECANCELED`): reported as such, not as a site found wrong.
pub(crate) fn injected() -> Error {
    Error::from_errno(-(bindings::ECANCELED as i32))
}

/// kallsyms' name of an ops trampoline.
pub(crate) const TRAMPOLINE_SYM: &CStr = c_str!("ftrace_trampoline");
