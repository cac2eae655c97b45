// SPDX-License-Identifier: GPL-2.0

//! Per-ops and group trampolines: copies of the templates of
//! trampolines_64.S ([`Template`]) that load their ops and call its
//! callback, or a site group's members, and the arch functions that make,
//! repoint, find and free them.

#[cfg(CONFIG_FTRACE_CORE_RUST_GENERIC)]
use crate::archif;
use crate::insn;
use crate::insn::Decoded;
use crate::insn::GroupLayout;
use crate::insn::INT3;
use crate::insn::SITE_SIZE;
use crate::int3::read_bytes;
use crate::int3::read_site;
use crate::int3::write_batch;
use crate::runs::Poke;
use crate::view;
use core::ptr;
use kernel::bindings;
use kernel::ffi::c_int;
use kernel::ffi::c_ulong;
use kernel::ffi::c_void;
use kernel::prelude::*;
// Labels of trampolines_64.S that delimit what a per-ops trampoline copies.
extern "C" {
    fn ftrace_caller_op_ptr();
    fn ftrace_caller_ip();
    fn ftrace_caller_ip_end();
    fn ftrace_caller_end();
    fn ftrace_caller_more();
    fn ftrace_caller_slot0();
    fn ftrace_caller_slot1();
    fn ftrace_caller_tail();
    fn ftrace_caller_more_end();
    fn ftrace_regs_caller_op_ptr();
    fn ftrace_regs_caller_ip();
    fn ftrace_regs_caller_direct();
    fn ftrace_regs_caller_jmp();
    fn ftrace_regs_caller_direct_end();
    fn ftrace_regs_caller_end();
    fn ftrace_regs_caller_more();
    fn ftrace_regs_caller_slot0();
    fn ftrace_regs_caller_slot1();
    fn ftrace_regs_caller_tail();
    fn ftrace_regs_caller_more_end();
}

/// Slots of a group trampoline (`RFT_GROUP_SLOTS` in trampolines_64.S).
pub(crate) const GROUP_SLOTS: usize = 8;

/// Where things are in a trampoline's code, as offsets from its start.
pub(crate) struct Template {
    start: u64,
    /// Where a copy's own return goes: the template's final `ret`.
    len: usize,
    /// Bytes copied: up to the end of the group calls, after the `ret`.
    copy: usize,
    /// The group calls.
    group: GroupLayout,
    /// The 7-byte `movq function_trace_op(%rip), %rdx`.
    op_load: usize,
    /// The 5-byte callback call.
    call: usize,
    /// The 2-byte `jnz` to the direct-call path (full-regs trampoline).
    jnz: Option<usize>,
    /// Code after the callback a per-ops trampoline jumps over: from the
    /// first offset to the third for an ops that does not move the ip
    /// (the copy of `regs->ip` to the return slot, and in
    /// `ftrace_regs_caller` the direct-call test after it), from the
    /// second (if any) for one that does (the direct-call test: a per-ops
    /// trampoline is never direct).
    skip: (usize, Option<usize>, usize),
}

pub(crate) fn addr(f: Label) -> u64 {
    f as *const () as u64
}

/// A template's labels (trampolines_64.S).
pub(crate) type Label = unsafe extern "C" fn();

/// The labels of both templates alike, and what only one has.
pub(crate) struct Labels {
    start: Label,
    call: Label,
    end: Label,
    more: Label,
    slot0: Label,
    slot1: Label,
    tail: Label,
    more_end: Label,
    op_ptr: Label,
    ip: Label,
    /// `ftrace_regs_caller`: the direct-call test and its jnz.
    direct: Option<(Label, Label)>,
    /// Where the ip copy (and the direct test) ends.
    after: Label,
}

pub(crate) fn template(save_regs: bool) -> Template {
    let l = if save_regs {
        Labels {
            start: bindings::ftrace_regs_caller,
            call: bindings::ftrace_regs_call,
            end: ftrace_regs_caller_end,
            more: ftrace_regs_caller_more,
            slot0: ftrace_regs_caller_slot0,
            slot1: ftrace_regs_caller_slot1,
            tail: ftrace_regs_caller_tail,
            more_end: ftrace_regs_caller_more_end,
            op_ptr: ftrace_regs_caller_op_ptr,
            ip: ftrace_regs_caller_ip,
            direct: Some((ftrace_regs_caller_direct, ftrace_regs_caller_jmp)),
            after: ftrace_regs_caller_direct_end,
        }
    } else {
        Labels {
            start: bindings::ftrace_caller,
            call: bindings::ftrace_call,
            end: ftrace_caller_end,
            more: ftrace_caller_more,
            slot0: ftrace_caller_slot0,
            slot1: ftrace_caller_slot1,
            tail: ftrace_caller_tail,
            more_end: ftrace_caller_more_end,
            op_ptr: ftrace_caller_op_ptr,
            ip: ftrace_caller_ip,
            direct: None,
            after: ftrace_caller_ip_end,
        }
    };
    let start = addr(l.start);
    let off = |f: Label| (addr(f) - start) as usize;
    let call = off(l.call);
    Template {
        start,
        len: off(l.end),
        copy: off(l.more_end),
        group: GroupLayout {
            call,
            entry: off(l.more),
            slot0: off(l.slot0),
            slot1: off(l.slot1),
            tail: off(l.tail),
            slots: GROUP_SLOTS,
        },
        op_load: off(l.op_ptr),
        call,
        jnz: l.direct.map(|(_, jmp)| off(jmp)),
        skip: (off(l.ip), l.direct.map(|(test, _)| off(test)), off(l.after)),
    }
}

/// `movq disp32(%rip), %rdx`, without the displacement.
pub(crate) const OP_LOAD: [u8; 3] = [0x48, 0x8b, 0x15];
pub(crate) const JNZ8: u8 = 0x75;
pub(crate) const JMP8: u8 = 0xeb;
pub(crate) const NOP2: [u8; 2] = [0x66, 0x90];
pub(crate) const RET_INT3: [u8; 2] = [0xc3, 0xcc];

/// # Safety
///
/// `ops` is a live ops.
pub(crate) unsafe fn ops_flag(ops: *mut bindings::ftrace_ops, flag: u32) -> bool {
    // SAFETY: per the function's contract.
    let f = unsafe { view::OpsView::from_raw(ops) }.flags();
    f & flag as c_ulong != 0
}

/// Room for the return of a per-ops trampoline: a `jmp` to the return
/// thunk, or `ret; int3` (the int3 stops straight-line speculation).
pub(crate) const RET_ROOM: usize = SITE_SIZE;

/// The return of a per-ops trampoline whose return is at `ip`: through
/// the return thunk where the CPU wants one there (return thunks, ITS),
/// else `ret; int3` (C's create_trampoline makes the same choice).
pub(crate) fn trampoline_return(ip: u64) -> Option<[u8; RET_ROOM]> {
    #[cfg(CONFIG_MITIGATION_RETHUNK)]
    {
        // SAFETY: a query of the CPU's mitigation state about an address.
        if unsafe { bindings::cpu_wants_rethunk_at(ip as *mut c_void) } {
            // SAFETY: a function pointer the mitigation code sets at boot.
            let thunk = unsafe { bindings::x86_return_thunk }?;
            return insn::jmp(ip, thunk as *const () as u64);
        }
    }
    let mut b = [INT3; RET_ROOM];
    b[..RET_INT3.len()].copy_from_slice(&RET_INT3);
    let _ = ip;
    Some(b)
}

/// The first step on a fresh copy of template `t` in `buf`: a per-ops
/// trampoline never continues into a direct trampoline, so the `jnz` to
/// that path (past the copied code) becomes a NOP. Before the copy's
/// rip-relative operands are moved: that jump could not reach its target
/// from the copy. `None` when the `jnz` is not where it should be.
pub(crate) fn drop_direct_jump(buf: &mut [u8], t: &Template) -> Option<()> {
    if let Some(j) = t.jnz {
        if *buf.get(j)? != JNZ8 {
            return None;
        }
        buf.get_mut(j..j + 2)?.copy_from_slice(&NOP2);
    }
    Some(())
}

/// A per-ops copy jumps over what its ops does not need (`t.skip`): a
/// short `jmp` at its start, the rest left as it is, never run. The code
/// keeps the template's layout, so the unwinder reads the trampoline with
/// the template's unwind data.
pub(crate) fn skip_unneeded(buf: &mut [u8], t: &Template, moves_ip: bool) -> Option<()> {
    let (ip, always, to) = t.skip;
    let from = match (moves_ip, always) {
        (false, _) => ip,
        (true, Some(from)) => from,
        (true, None) => return Some(()),
    };
    let disp = i8::try_from(to.checked_sub(from + 2)?).ok()?;
    buf.get_mut(from..from + 2)?
        .copy_from_slice(&[JMP8, disp as u8]);
    Some(())
}

/// What a per-ops trampoline calls: the ops' callback (at the callback
/// call), or the members of a site group (through the group calls).
#[derive(Clone, Copy)]
pub(crate) enum Calls<'a> {
    Func(u64),
    Group(&'a [(u64, u64)]),
}

/// Builds the code of a per-ops trampoline in `buf` (at address `at`):
/// a copy of the template (its rip-relative operands already moved) that
/// loads `ops` from the slot after its code and makes `calls`; `moves_ip`:
/// the ops may move the ip (`IPMODIFY`). Returns `None` when the template
/// is not as expected.
pub(crate) fn build_trampoline(
    buf: &mut [u8],
    at: u64,
    t: &Template,
    ops: u64,
    calls: Calls<'_>,
    moves_ip: bool,
) -> Option<()> {
    skip_unneeded(buf, t, moves_ip)?;
    if t.len + RET_ROOM > t.group.entry {
        return None;
    }
    let slot = t.copy.next_multiple_of(8);
    let ret = trampoline_return(at + t.len as u64)?;
    buf.get_mut(t.len..t.len + RET_ROOM)?.copy_from_slice(&ret);
    buf.get_mut(slot..slot + 8)?
        .copy_from_slice(&ops.to_le_bytes());
    let load = buf.get_mut(t.op_load..t.op_load + 7)?;
    if load[..3] != OP_LOAD {
        return None;
    }
    let next = at + (t.op_load + 7) as u64;
    let disp = i32::try_from((at + slot as u64) as i64 - next as i64).ok()?;
    load[3..].copy_from_slice(&disp.to_le_bytes());
    match calls {
        Calls::Func(func) => {
            // The trampoline counts the call depth itself before this call,
            // so it calls the function, not its call-depth thunk.
            let call = insn::call(at + t.call as u64, func)?;
            buf.get_mut(t.call..t.call + SITE_SIZE)?
                .copy_from_slice(&call);
            Some(())
        }
        Calls::Group(members) => insn::fill_group(buf, at, &t.group, members),
    }
}

/// Size of a per-ops trampoline for template `t`.
pub(crate) fn trampoline_size(t: &Template) -> usize {
    t.copy.next_multiple_of(8) + 8
}

/// Creates the trampoline of `ops` that makes `calls` (`None`: the ops'
/// callback, as `ftrace_ops_get_func()` gives it). Returns its address,
/// or 0.
///
/// # Safety
///
/// `ops` is a registered ops (or the core's group ops), under
/// `ftrace_lock`.
pub(crate) unsafe fn create_trampoline(
    ops: *mut bindings::ftrace_ops,
    group: Option<&[(u64, u64)]>,
) -> u64 {
    // SAFETY: per the function's contract.
    let t = template(unsafe { ops_flag(ops, bindings::FTRACE_OPS_FL_SAVE_REGS) });
    let size = trampoline_size(&t);
    // SAFETY: plain allocation of executable memory.
    let mem = unsafe { bindings::execmem_alloc(bindings::execmem_type_EXECMEM_FTRACE, size) };
    if mem.is_null() {
        return 0;
    }
    let at = mem as u64;
    // SAFETY: `execmem_alloc` returned `size` writable bytes, not yet
    // executable or visible to anyone else.
    let buf = unsafe { core::slice::from_raw_parts_mut(mem.cast::<u8>(), size) };
    // SAFETY: copies the template, which is kernel text; fails instead of
    // faulting.
    let copied =
        unsafe { bindings::copy_from_kernel_nofault(mem, t.start as *const c_void, t.copy) } == 0;
    let copied = copied && drop_direct_jump(buf, &t).is_some();
    if copied {
        // The copy runs elsewhere: its rip-relative operands (the per-CPU
        // call-depth count, the ops load, the callback calls) are moved to
        // reach what they reached from the template; its jumps inside
        // itself stay.
        // SAFETY: `buf` holds the `t.copy` bytes just copied from the
        // template at `t.start`, and `at` is where they will run.
        unsafe {
            bindings::text_poke_apply_relocation(
                buf.as_mut_ptr(),
                at as *const u8,
                t.copy,
                t.start as *mut u8,
                t.copy,
            )
        };
    }
    let calls = match group {
        Some(members) => Some(Calls::Group(members)),
        // SAFETY: `ops` is live.
        None => unsafe { bindings::ftrace_ops_get_func(ops) }
            .map(|f| Calls::Func(f as *const () as u64)),
    };
    let ops_addr = ops as u64;
    // SAFETY: `ops` is live.
    let moves_ip = unsafe { ops_flag(ops, bindings::FTRACE_OPS_FL_IPMODIFY) };
    let built = calls.and_then(|c| build_trampoline(buf, at, &t, ops_addr, c, moves_ip));
    if !copied || built.is_none() {
        pr_err!("cannot build a trampoline for ops {:#x}\n", ops_addr);
        // SAFETY: allocated above and not published.
        unsafe { bindings::execmem_free(mem) };
        return 0;
    }
    // SAFETY: `ops` is live; other CPUs may read its flags.
    unsafe { view::OpsView::from_raw(ops) }.set(bindings::FTRACE_OPS_FL_ALLOC_TRAMP as c_ulong);
    let pages = size.div_ceil(bindings::PAGE_SIZE) as c_int;
    // SAFETY: the trampoline is complete; make it read-only and executable.
    unsafe { bindings::set_memory_rox(at as c_ulong, pages) };
    at
}

/// Gives `ops` its own trampoline, which calls its function directly and
/// passes it the ops without going through `function_trace_op`; or points
/// the trampoline it has at its current function.
///
/// # Safety
///
/// `ops` is a valid ops, under `ftrace_lock`.
#[no_mangle]
pub unsafe extern "C" fn arch_ftrace_update_trampoline(ops: *mut bindings::ftrace_ops) {
    // The ops is registered: other CPUs read its flags and trampoline
    // meanwhile, so every access goes through `view`.
    // SAFETY: per the function's contract, for every `view` and
    // `ops_flag` call below.
    let (tramp, _) = unsafe { view::OpsView::from_raw(ops) }.trampoline();
    // SAFETY: as above.
    let regs = unsafe { ops_flag(ops, bindings::FTRACE_OPS_FL_SAVE_REGS) };
    let t = template(regs);
    if tramp == 0 {
        // SAFETY: as above.
        let at = unsafe { create_trampoline(ops, None) };
        if at != 0 {
            // SAFETY: as above.
            unsafe { view::OpsView::from_raw(ops) }.set_trampoline(at, trampoline_size(&t) as u64);
        }
        return;
    }
    // A trampoline the ops' owner made is not ours to change.
    // SAFETY: as above.
    if !unsafe { ops_flag(ops, bindings::FTRACE_OPS_FL_ALLOC_TRAMP) } {
        return;
    }
    let ip = tramp + t.call as u64;
    let mut pokes = [None; GROUP_SLOTS];
    if insn::jmp(ip, tramp + t.group.entry as u64) == read_site(ip) {
        // A group's: point each member's call at what its own trampoline
        // calls now.
        for (i, p) in pokes.iter_mut().enumerate() {
            let Some((start, _)) = t.group.slot(i) else {
                break;
            };
            let Some(member) = read_bytes(tramp + start as u64).and_then(|h| insn::slot_ops(i, &h))
            else {
                break;
            };
            // SAFETY: a member of the group, live while its trampoline
            // may run (the generic core's group rules).
            let f = unsafe { bindings::ftrace_ops_get_func(member as *mut bindings::ftrace_ops) };
            *p = t
                .group
                .slot_call(i)
                .and_then(|c| repoint(tramp + c as u64, f));
        }
    } else {
        // SAFETY: `ops` is live.
        pokes[0] = repoint(ip, unsafe { bindings::ftrace_ops_get_func(ops) });
    }
    let mut q = [Poke::default(); GROUP_SLOTS];
    let mut n = 0;
    for p in pokes.into_iter().flatten() {
        q[n] = p;
        n += 1;
    }
    if n == 0 {
        return;
    }
    // SAFETY: `text_mutex` is a valid global mutex, not held here.
    unsafe { bindings::mutex_lock(ptr::addr_of_mut!(bindings::text_mutex)) };
    // SAFETY: `text_mutex` is held; the trampoline may be running, which is
    // what the int3 protocol is for.
    if unsafe { write_batch(&mut q[..n]) }.is_err() {
        pr_err!("trampoline call at {:#x} changed under us\n", tramp);
    }
    // SAFETY: taken above.
    unsafe { bindings::mutex_unlock(ptr::addr_of_mut!(bindings::text_mutex)) };
}

/// The rewrite of the trampoline call at `ip` to `func`, if it calls
/// something else now.
pub(crate) fn repoint(ip: u64, func: bindings::ftrace_func_t) -> Option<Poke> {
    let new = insn::call(ip, func? as *const () as u64)?;
    let old = read_site(ip)?;
    if old == new || !matches!(insn::decode(ip, &old), Decoded::Call(_)) {
        return None;
    }
    Poke::new(ip, old, new)
}

/// Gives the site group `ops` (an ops of the generic core's own, not yet
/// published: no CPU runs its trampoline) a trampoline that calls the `n`
/// members at `members` one after the other, each with its ops, the site,
/// its parent and the frame, as each member's own trampoline would.
/// Returns 0, or `-ENOMEM` (no memory, or the template is not as
/// expected), `-EINVAL` (no room for `n`), `-EBUSY` (it has one).
///
/// # Safety
///
/// `ops` is a valid ops and `members` points to `n` members whose ops
/// and callbacks outlive the trampoline (the generic core's group rules),
/// under `ftrace_lock`.
#[cfg(CONFIG_FTRACE_CORE_RUST_GENERIC)]
#[no_mangle]
pub unsafe extern "C" fn rftrace_arch_group_trampoline(
    ops: *mut bindings::ftrace_ops,
    members: *const archif::Member,
    n: usize,
) -> c_int {
    if n == 0 || n > GROUP_SLOTS {
        return EINVAL.to_errno();
    }
    // SAFETY: per the function's contract, for every `view` here.
    let v = unsafe { view::OpsView::from_raw(ops) };
    if v.trampoline().0 != 0 {
        return EBUSY.to_errno();
    }
    // SAFETY: per the function's contract.
    let members = unsafe { core::slice::from_raw_parts(members, n) };
    let mut m = [(0u64, 0u64); GROUP_SLOTS];
    for (d, s) in m.iter_mut().zip(members) {
        *d = (s.func, s.ops);
    }
    // SAFETY: per the function's contract.
    let at = unsafe { create_trampoline(ops, Some(&m[..n])) };
    if at == 0 {
        return ENOMEM.to_errno();
    }
    // SAFETY: as above.
    let regs = unsafe { ops_flag(ops, bindings::FTRACE_OPS_FL_SAVE_REGS) };
    v.set_trampoline(at, trampoline_size(&template(regs)) as u64);
    0
}

/// The function a trampoline calls: for `enabled_functions`.
pub(crate) fn call_target(ip: u64) -> *mut c_void {
    match read_site(ip).map(|b| insn::decode(ip, &b)) {
        Some(Decoded::Call(t)) => t as *mut c_void,
        _ => ptr::null_mut(),
    }
}

/// The function that the trampoline serving `rec` for `ops` calls.
///
/// # Safety
///
/// `ops` is null or a valid ops; `rec` is a valid record.
#[no_mangle]
pub unsafe extern "C" fn arch_ftrace_trampoline_func(
    ops: *mut bindings::ftrace_ops,
    rec: *mut bindings::dyn_ftrace,
) -> *mut c_void {
    // A non-null `ops` is live (the function's contract) for the unsafe
    // calls here; a null one has no flags and no trampoline.
    // SAFETY: as said.
    let of = |f| !ops.is_null() && unsafe { ops_flag(ops, f) };
    let tramp = if ops.is_null() {
        0
    } else {
        // SAFETY: as said.
        unsafe { view::OpsView::from_raw(ops) }.trampoline().0
    };
    if of(bindings::FTRACE_OPS_FL_ALLOC_TRAMP) {
        let t = template(of(bindings::FTRACE_OPS_FL_SAVE_REGS));
        call_target(tramp + t.call as u64)
    } else if tramp != 0 {
        // Someone else's trampoline: unknown.
        ptr::null_mut()
    } else {
        // SAFETY: per the function's contract.
        let regs = unsafe { (*rec).flags } & bindings::FTRACE_FL_REGS_EN as c_ulong != 0;
        call_target(template(regs).start + template(regs).call as u64)
    }
}

/// Frees the trampoline this layer made for `ops`.
///
/// # Safety
///
/// `ops` is null or a valid ops whose trampoline no CPU can be running
/// (the core waits for that before calling).
#[no_mangle]
pub unsafe extern "C" fn arch_ftrace_trampoline_free(ops: *mut bindings::ftrace_ops) {
    if ops.is_null() {
        return;
    }
    // SAFETY: per the function's contract, for both `view` calls here.
    let (tramp, _) = unsafe { view::OpsView::from_raw(ops) }.trampoline();
    // SAFETY: as above.
    if !unsafe { ops_flag(ops, bindings::FTRACE_OPS_FL_ALLOC_TRAMP) } || tramp == 0 {
        return;
    }
    // SAFETY: made by `create_trampoline()` with `execmem_alloc()`; no
    // longer in use per the function's contract.
    unsafe {
        bindings::execmem_free(tramp as *mut c_void);
        view::OpsView::from_raw(ops).set_trampoline(0, 0);
    }
}

#[cfg(not(CONFIG_FTRACE_CORE_RUST_GENERIC))]
/// Architecture setup at `ftrace_init()`: says which core runs.
#[no_mangle]
pub extern "C" fn ftrace_dyn_arch_init() -> c_int {
    pr_info!("function tracer core: Rust (x86_64 arch layer in Rust; generic core still kernel/trace/ftrace.c)\n");
    0
}
