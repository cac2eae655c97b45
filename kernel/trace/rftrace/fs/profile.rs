// SPDX-License-Identifier: GPL-2.0

//! The function profiler: `function_profile_enabled` and the per-CPU
//! `trace_stat/function<cpu>` files.
//!
//! Each CPU counts the hits (and, through a function graph ops, the time)
//! of the functions it runs in its own table, with interrupts off and no
//! lock: a record array sized for every call site, and an open-addressing
//! index into it. Records are only added, until the next enable resets
//! them.

use crate::base::cells::Forever;
use crate::base::sys::{CGlobal, CMutex, IrqOff};
use crate::base::task::Current;
use crate::base::tracefs::{fops, Chunk, Out, TextFile};
use crate::graph::fgraph::{register_ftrace_graph, unregister_ftrace_graph, with_subtime};
use crate::graph::gops::{entry_fn, return_fn, GopsRef, GraphEntry, GraphReturn};
use crate::logic::profile;
use core::ptr;
use core::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use kernel::bindings;
use kernel::ffi::{c_char, c_int, c_void};
use kernel::prelude::*;
use kernel::seq_file::SeqFile;
use kernel::tracefs::{Dir, Fops, OpenMode};

/// One profiled function.
#[derive(Clone, Copy)]
#[repr(C)]
struct Rec {
    ip: u64,
    hits: u64,
    time: u64,
    time2: u64,
}

const EMPTY: Rec = Rec {
    ip: 0,
    hits: 0,
    time: 0,
    time2: 0,
};

/// `struct tracer_stat` (kernel/trace/trace_stat.h), its callbacks typed
/// with what the stat core passes them (the same pointers' ABI): the
/// registered `tracer_stat`, which is the first field of one of our
/// never-freed [`CpuProfile`]s; the records [`stat_start`] and
/// [`stat_next`] hand out, [`RecCell`]s of never-freed tables; the
/// seq_file of the stat file being read.
#[repr(C)]
struct TracerStat {
    name: *const c_char,
    stat_start: Option<extern "C" fn(&CpuProfile) -> *mut c_void>,
    stat_next: Option<extern "C" fn(*mut c_void, c_int) -> *mut c_void>,
    stat_cmp: Option<extern "C" fn(&RecCell, &RecCell) -> c_int>,
    stat_show: Option<extern "C" fn(&SeqFile, &RecCell) -> c_int>,
    stat_release: Option<extern "C" fn(*mut c_void)>,
    stat_headers: Option<extern "C" fn(&SeqFile) -> c_int>,
}

/// A record, written only by its CPU with interrupts off (or, for a
/// reset, while the profiler is off; the `busy` guard keeps an NMI from
/// adding at the same time). Each word is an atomic, so the stat files
/// read it while its CPU writes; they tolerate a record read half old,
/// half new, as the C core's do. Relaxed loads and stores are plain moves.
#[repr(C)]
struct RecCell {
    ip: AtomicU64,
    hits: AtomicU64,
    time: AtomicU64,
    time2: AtomicU64,
}

impl RecCell {
    fn read(&self) -> Rec {
        Rec {
            ip: self.ip.load(Ordering::Relaxed),
            hits: self.hits.load(Ordering::Relaxed),
            time: self.time.load(Ordering::Relaxed),
            time2: self.time2.load(Ordering::Relaxed),
        }
    }

    /// Changes the record with `f` (its one writer, see above).
    fn update(&self, f: impl FnOnce(&mut Rec)) {
        let mut r = self.read();
        f(&mut r);
        self.ip.store(r.ip, Ordering::Relaxed);
        self.hits.store(r.hits, Ordering::Relaxed);
        self.time.store(r.time, Ordering::Relaxed);
        self.time2.store(r.time2, Ordering::Relaxed);
    }
}

/// One CPU's tables, allocated the first time the profiler is enabled
/// and kept.
struct Tables {
    recs: KVVec<RecCell>,
    used: AtomicUsize,
    /// Record index + 1 per slot; the length is a power of two.
    index: KVVec<AtomicU32>,
    /// Guards against an NMI adding a record while one is being added.
    busy: AtomicI32,
}

/// One CPU's profile. `stat` first: the stat callbacks get its address.
///
/// # Invariants
///
/// A profile that lives for ever (in [`CPUS`], the only place a
/// `&'static CpuProfile` comes from) has `stat.name` pointing to its own
/// `name`, NUL-terminated; `stat`'s callbacks are this module's.
#[repr(C)]
struct CpuProfile {
    stat: TracerStat,
    name: [u8; 24],
    tables: Forever<Tables>,
}

// SAFETY: the stat's pointers are the profile's own name and callbacks,
// read by the stat core only; the tables are `Sync` atomics.
unsafe impl Sync for CpuProfile {}

/// The per-CPU profiles, set up at boot; null until then.
static CPUS: Forever<KVVec<CpuProfile>> = Forever::new();
static ENABLED: AtomicBool = AtomicBool::new(false);
/// Whether a function's time includes its children's.
static GRAPH_TIME: AtomicBool = AtomicBool::new(true);
static PROFILE_LOCK: CMutex = CMutex::new();

// The stat core takes a `struct tracer_stat *`: a profile's address,
// `repr(C)` with its stat first. Safe: a profile that lives for ever
// carries its name and callbacks (the invariants of `CpuProfile`), which
// is all the stat core reads; it does not write the struct.
#[allow(improper_ctypes)]
unsafe extern "C" {
    safe fn register_stat_tracer(trace: &'static CpuProfile) -> c_int;
}

fn cpus() -> &'static [CpuProfile] {
    CPUS.get().map_or(&[], |v| v.as_slice())
}

impl CpuProfile {
    /// The tables, once made.
    fn tables(&self) -> Option<&'static Tables> {
        self.tables.get()
    }
}

fn tables(cpu: usize) -> Option<&'static Tables> {
    cpus().get(cpu)?.tables()
}

/// The home slot of `ip` in an index of `1 << bits` slots. Runs in the
/// profiler's callbacks: wrapping arithmetic, no panic for any `bits`.
fn slot_of(ip: u64, bits: u32) -> usize {
    if bits == 0 {
        return 0;
    }
    ip.wrapping_mul(0x61c8_8646_80b5_83eb)
        .wrapping_shr(64u32.wrapping_sub(bits)) as usize
}

impl Tables {
    fn new(sites: usize) -> Result<Tables> {
        let mut recs = KVVec::with_capacity(sites, GFP_KERNEL)?;
        for _ in 0..sites {
            recs.push(
                RecCell {
                    ip: AtomicU64::new(0),
                    hits: AtomicU64::new(0),
                    time: AtomicU64::new(0),
                    time2: AtomicU64::new(0),
                },
                GFP_KERNEL,
            )?;
        }
        let n = (sites * 2).next_power_of_two();
        let mut index = KVVec::with_capacity(n, GFP_KERNEL)?;
        for _ in 0..n {
            index.push(AtomicU32::new(0), GFP_KERNEL)?;
        }
        Ok(Tables {
            recs,
            used: AtomicUsize::new(0),
            index,
            busy: AtomicI32::new(0),
        })
    }

    /// Forgets every record (the profiler is off).
    fn reset(&self) {
        for r in self.recs.iter() {
            r.update(|r| *r = EMPTY);
        }
        for s in self.index.iter() {
            s.store(0, Ordering::Relaxed);
        }
        self.used.store(0, Ordering::Release);
    }

    /// The record of `ip`. On the owning CPU with interrupts off, or for
    /// a racy read.
    fn find(&self, ip: u64) -> Option<&RecCell> {
        let n = self.index.len();
        let bits = n.trailing_zeros();
        let mut s = slot_of(ip, bits);
        for _ in 0..n {
            let v = self.index.get(s)?.load(Ordering::Acquire) as usize;
            let r = self.recs.get(v.checked_sub(1)?)?;
            if r.read().ip == ip {
                return Some(r);
            }
            s = s.wrapping_add(1) & n.wrapping_sub(1);
        }
        None
    }

    /// Adds a record for `ip`. On the owning CPU with interrupts off.
    fn add(&self, ip: u64) -> Option<&RecCell> {
        if self.busy.fetch_add(1, Ordering::Acquire) != 0 {
            self.busy.fetch_sub(1, Ordering::Release);
            return None;
        }
        let r = self.find(ip).or_else(|| {
            let i = self.used.load(Ordering::Relaxed);
            let n = self.index.len();
            let r = self.recs.get(i)?;
            r.update(|r| *r = Rec { ip, ..EMPTY });
            self.used.store(i.wrapping_add(1), Ordering::Release);
            let mut s = slot_of(ip, n.trailing_zeros());
            // The index has more slots than records: a free one is found.
            while self.index.get(s)?.load(Ordering::Relaxed) != 0 {
                s = s.wrapping_add(1) & n.wrapping_sub(1);
            }
            self.index
                .get(s)?
                .store((i as u32).wrapping_add(1), Ordering::Release);
            Some(r)
        });
        self.busy.fetch_sub(1, Ordering::Release);
        r
    }
}

/// Counts a hit of `ip` on this CPU.
fn hit(ip: u64) {
    if !ENABLED.load(Ordering::Relaxed) {
        return;
    }
    let irq = IrqOff::new();
    if let Some(t) = tables(irq.cpu()) {
        if ENABLED.load(Ordering::Relaxed) {
            if let Some(r) = t.find(ip).or_else(|| t.add(ip)) {
                r.update(|r| r.hits = r.hits.wrapping_add(1));
            }
        }
    }
}

/// The profiler's graph callbacks.
struct Profiler;

impl GraphEntry for Profiler {
    fn entry(trace: &mut bindings::ftrace_graph_ent, _gops: GopsRef<'_>) -> c_int {
        hit(trace.func as u64);
        let cur = Current::get();
        match with_subtime(&cur, 0, |w| w.store(0, Ordering::Relaxed)) {
            Some(()) => 1,
            None => 0,
        }
    }
}

impl GraphReturn for Profiler {
    fn ret(trace: &mut bindings::ftrace_graph_ret, _gops: GopsRef<'_>) {
        let t = &*trace;
        let irq = IrqOff::new();
        if let Some(tab) = tables(irq.cpu()) {
            if ENABLED.load(Ordering::Relaxed) && t.calltime != 0 {
                let mut time = t.rettime.wrapping_sub(t.calltime);
                if !GRAPH_TIME.load(Ordering::Relaxed) {
                    // The parent's children's time grows by this call's; this
                    // call's own time is its time less its children's.
                    let cur = Current::get();
                    with_subtime(&cur, 1, |w| {
                        w.store(
                            w.load(Ordering::Relaxed).wrapping_add(time),
                            Ordering::Relaxed,
                        )
                    });
                    time = with_subtime(&cur, 0, |w| w.load(Ordering::Relaxed))
                        .filter(|&sub| sub < time)
                        .map_or(0, |sub| time - sub);
                }
                if let Some(r) = tab.find(t.func as u64) {
                    r.update(|r| {
                        r.time = r.time.wrapping_add(time);
                        r.time2 = r.time2.wrapping_add(time.wrapping_mul(time));
                    });
                }
            }
        }
    }
}

static GOPS: CGlobal<bindings::fgraph_ops> = CGlobal::new(bindings::fgraph_ops {
    entryfunc: entry_fn::<Profiler>(),
    retfunc: return_fn::<Profiler>(),
    ..crate::base::zeroed::zeroed()
});

/// Whether the function graph's time of a function includes its
/// children (the `graph-time` option).
pub(crate) fn ftrace_graph_graph_time_control(enable: bool) {
    GRAPH_TIME.store(enable, Ordering::Relaxed);
}

// --- trace_stat ------------------------------------------------------------

/// The tables and record index of a record address.
fn locate(v: *const c_void) -> Option<(&'static Tables, usize)> {
    let a = v as usize;
    (0..cpus().len()).find_map(|cpu| {
        let t = tables(cpu)?;
        let base = t.recs.as_ptr() as usize;
        let end = base + t.recs.len() * core::mem::size_of::<RecCell>();
        (a >= base && a < end).then(|| (t, (a - base) / core::mem::size_of::<RecCell>()))
    })
}

fn rec_at(t: &Tables, i: usize) -> *mut c_void {
    match t.recs.get(i) {
        Some(r) if i < t.used.load(Ordering::Acquire) => ptr::from_ref(r).cast_mut().cast(),
        _ => ptr::null_mut(),
    }
}

/// The first record of a CPU's profile.
extern "C" fn stat_start(p: &CpuProfile) -> *mut c_void {
    p.tables().map_or(ptr::null_mut(), |t| rec_at(t, 0))
}

/// The record after `prev` (`idx` 0: `prev` itself).
extern "C" fn stat_next(prev: *mut c_void, idx: c_int) -> *mut c_void {
    match locate(prev) {
        Some((t, i)) => rec_at(t, if idx != 0 { i + 1 } else { i }),
        None => ptr::null_mut(),
    }
}

/// The function graph is on: by total time, as the C core sorts.
extern "C" fn stat_cmp(a: &RecCell, b: &RecCell) -> c_int {
    match a.read().time.cmp(&b.read().time) {
        core::cmp::Ordering::Less => -1,
        core::cmp::Ordering::Greater => 1,
        core::cmp::Ordering::Equal => 0,
    }
}

extern "C" fn stat_headers(m: &SeqFile) -> c_int {
    m.write(profile::header(true));
    0
}

extern "C" fn stat_show(m: &SeqFile, v: &RecCell) -> c_int {
    let _g = PROFILE_LOCK.lock();
    let r = v.read();
    if r.hits == 0 {
        // Raced with a reset.
        return EBUSY.to_errno();
    }
    let thresh = crate::base::ffi::tracing_thresh.load(Ordering::Relaxed) as u64;
    if thresh != 0 && r.time / r.hits < thresh {
        return 0;
    }
    let mut buf = kernel::kallsyms::SymbolBuf::new();
    // The name is in `buf` or in the kept names: the symbol says where.
    let sym = crate::sites::names::lookup(r.ip, &mut buf);
    let name = sym.as_ref().map_or(&b""[..], |s| s.name);
    let mut line = profile::row(name, r.hits, r.time, r.time2, true);
    line.push(b"\n");
    m.write(line.bytes());
    0
}

// --- function_profile_enabled -----------------------------------------------

/// `function_profile_enabled`: 0 or 1; writing a number starts or stops
/// the profiler.
struct EnabledFile;

impl TextFile for EnabledFile {
    type Data = ();

    fn open(_data: (), _mode: OpenMode) -> Result<Self> {
        Ok(EnabledFile)
    }

    fn render(&self, o: &mut Out) {
        o.bytes(if ENABLED.load(Ordering::Relaxed) {
            b"1\n"
        } else {
            b"0\n"
        });
    }

    fn write(&mut self, chunk: Option<Chunk>, pos: &mut bindings::loff_t) -> isize {
        let Some(chunk) = chunk else {
            return EFAULT.to_errno() as isize;
        };
        let Some(val) = crate::logic::parser::parse_ulong(chunk.bytes()) else {
            return EINVAL.to_errno() as isize;
        };
        let cnt = chunk.bytes().len();
        let r = set_enabled(val != 0);
        // The whole write is taken, as C's `kstrtoul_from_user()` user does.
        *pos = pos.wrapping_add(cnt as bindings::loff_t);
        match r {
            Ok(()) => cnt as isize,
            Err(e) => e.to_errno() as isize,
        }
    }
}

/// Starts or stops the profiler.
fn set_enabled(on: bool) -> Result {
    let _g = PROFILE_LOCK.lock();
    if ENABLED.load(Ordering::Relaxed) == on {
        return Ok(());
    }
    if on {
        start()?;
        ENABLED.store(true, Ordering::Release);
    } else {
        ENABLED.store(false, Ordering::Release);
        // Our static graph ops, registered by `start()`.
        unregister_ftrace_graph(GopsRef::of_static(&GOPS));
    }
    Ok(())
}

fn start() -> Result {
    let sites = crate::base::sys::ftrace_update_tot_cnt
        .load(Ordering::Relaxed)
        .max(1);
    for p in cpus() {
        match p.tables() {
            Some(t) => t.reset(),
            None => {
                let Ok(t) = Tables::new(sites).and_then(|t| Ok(KBox::new(t, GFP_KERNEL)?)) else {
                    return Err(ENOMEM);
                };
                p.tables.publish(t);
            }
        }
    }
    // Our static graph ops, registered once at a time under
    // PROFILE_LOCK; its filter is the function tracer's.
    let g = GopsRef::of_static(&GOPS);
    crate::filter::api::ftrace_ops_set_global_filter(g.ops());
    kernel::error::to_result(register_ftrace_graph(g))
}

static FOPS: Fops<()> = fops::<EnabledFile>(true);

/// Boot: the per-CPU stat files and `function_profile_enabled`.
pub(crate) fn init(d: Dir) {
    crate::base::sys::cmutex_init!(PROFILE_LOCK, "ftrace_profile_lock");
    let n = crate::base::ffi::nr_cpu_ids as usize;
    let Ok(mut v) = KVVec::<CpuProfile>::with_capacity(n, GFP_KERNEL) else {
        pr_warn!("no memory for the function profiler\n");
        return;
    };
    for cpu in 0..n {
        let mut name = [0u8; 24];
        let mut l = profile::Line::new();
        l.push(b"function");
        l.num(cpu as u64);
        let b = l.bytes();
        name[..b.len().min(23)].copy_from_slice(&b[..b.len().min(23)]);
        let p = CpuProfile {
            stat: TracerStat {
                name: ptr::null(),
                stat_start: Some(stat_start),
                stat_next: Some(stat_next),
                stat_cmp: Some(stat_cmp),
                stat_show: Some(stat_show),
                stat_release: None,
                stat_headers: Some(stat_headers),
            },
            name,
            tables: Forever::new(),
        };
        if v.push(p, GFP_KERNEL).is_err() {
            return;
        }
    }
    // The names in place (the vector's buffer does not move any more).
    for p in v.iter_mut() {
        p.stat.name = p.name.as_ptr().cast();
    }
    let Ok(b) = KBox::new(v, GFP_KERNEL) else {
        return;
    };
    // Boot, before any user; the profiles are never freed, so the stats'
    // addresses stay valid.
    for p in CPUS.publish(b).map_or(&[][..], |v| v.as_slice()) {
        if register_stat_tracer(p) != 0 {
            pr_warn!("cannot register a function profile stat file\n");
        }
    }
    crate::base::tracefs::create(
        kernel::c_str!("function_profile_enabled"),
        0o640,
        d,
        (),
        &FOPS,
    );
}
