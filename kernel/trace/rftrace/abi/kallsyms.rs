// SPDX-License-Identifier: GPL-2.0

//! The C entry points kallsyms and the unwinders call: the names of the
//! freed init functions of modules and of the core's trampolines, and the
//! ops whose trampoline holds an address.

use crate::base::sys::{PreemptOff, TRAMPOLINE_SYM};
use crate::ops::registry::OpsRef;
use core::ptr;
use kernel::bindings;
use kernel::c_str;
use kernel::ffi::{c_char, c_int, c_ulong};
use kernel::prelude::*;

/// Whether `addr` is in a trampoline the core made.
#[no_mangle]
pub extern "C" fn is_ftrace_trampoline(addr: c_ulong) -> bool {
    !ftrace_ops_trampoline(addr).is_null()
}

/// The symbol at `addr` among the freed init functions of loaded modules
/// (kallsyms asks when no other symbol holds it): its name into `sym`,
/// its size, the offset of `addr` in it and the module's name. 0 when
/// there is none, else the name's length. (The core's trampolines are
/// named through [`ftrace_mod_get_kallsym`].)
#[no_mangle]
pub extern "C" fn ftrace_mod_address_lookup(
    addr: c_ulong,
    size: Option<&mut c_ulong>,
    off: Option<&mut c_ulong>,
    modname: Option<&mut *const c_char>,
    modbuildid: Option<&mut *const u8>,
    sym: &mut [u8; bindings::KSYM_NAME_LEN as usize],
) -> c_int {
    let p = PreemptOff::new();
    let Some(f) = crate::abi::initnames::find(p.token(), addr as u64) else {
        return 0;
    };
    let n = copy_bytes(sym, f.name);
    if let Some(size) = size {
        *size = f.size as c_ulong;
    }
    if let Some(off) = off {
        *off = (addr as u64 - f.start) as c_ulong;
    }
    if let Some(modname) = modname {
        // Kept until the module goes (`ftrace_release_mod`), as its name.
        *modname = f.module.as_ptr().cast();
    }
    if let Some(id) = modbuildid {
        *id = ptr::null();
    }
    c_int::try_from(n).unwrap_or(c_int::MAX)
}

/// The ops whose own trampoline holds `addr`, or null: the ORC unwinder
/// finds the unwind data of the code the trampoline was copied from
/// through it. Callers keep preemption off while they use the ops.
#[no_mangle]
pub extern "C" fn ftrace_ops_trampoline(addr: c_ulong) -> *mut bindings::ftrace_ops {
    let p = PreemptOff::new();
    crate::ops::dispatch::trampoline_ops(p.token(), addr as u64)
        .map_or(ptr::null_mut(), OpsRef::as_ptr)
}

/// The symbol `symnum` (from 0) of the core's trampolines for kallsyms:
/// each ops' own trampoline is `ftrace_trampoline` of the pseudo-module
/// `__builtin__ftrace`, a local text symbol, as the C core names them.
/// kallsyms passes its buffers: `name` of `KSYM_NAME_LEN` bytes,
/// `module_name` of `MODULE_NAME_LEN` (the parameters' types).
#[no_mangle]
pub extern "C" fn ftrace_mod_get_kallsym(
    symnum: u32,
    value: &mut c_ulong,
    ty: &mut c_char,
    name: &mut [u8; bindings::KSYM_NAME_LEN as usize],
    module_name: &mut [u8; kernel::kallsyms::MODULE_NAME_LEN],
    exported: &mut c_int,
) -> c_int {
    let p = PreemptOff::new();
    // The freed init functions first, then the trampolines, as C.
    let inits = match crate::abi::initnames::nth(p.token(), symnum as usize) {
        Ok(f) => {
            *value = f.start as c_ulong;
            *ty = b'T' as c_char;
            *exported = 1;
            copy_bytes(name, f.name);
            copy_bytes(module_name, f.module);
            return 0;
        }
        Err(count) => count,
    };
    let found = crate::ops::dispatch::nth_trampoline(p.token(), symnum as usize - inits);
    let Some((start, _)) = found else {
        return ERANGE.to_errno();
    };
    *value = start as c_ulong;
    *ty = b't' as c_char;
    *exported = 0;
    copy_bytes(name, TRAMPOLINE_SYM.as_bytes());
    copy_bytes(module_name, TRAMPOLINE_MOD.as_bytes());
    0
}

/// kallsyms' name of an ops trampoline's pseudo-module.
const TRAMPOLINE_MOD: &CStr = c_str!("__builtin__ftrace");

/// Copies `s` (up to a NUL) into `dst`, truncated and terminated; the
/// length copied.
fn copy_bytes(dst: &mut [u8], s: &[u8]) -> usize {
    let s = s.split(|&b| b == 0).next().unwrap_or(&[]);
    let n = s.len().min(dst.len().saturating_sub(1));
    dst[..n].copy_from_slice(&s[..n]);
    if let Some(z) = dst.get_mut(n) {
        *z = 0;
    }
    n
}
