// SPDX-License-Identifier: GPL-2.0

//! Rust function tracing sample: counts the calls of the kernel function
//! named by the module parameter `func` (default `ksys_read`) with a
//! [`kernel::ftrace::Registration`], and prints the count when unloaded.
//!
//! ```sh
//! modprobe rust_ftrace func=vfs_read
//! dd if=/proc/version of=/dev/null bs=4 count=5
//! rmmod rust_ftrace   # rust_ftrace: vfs_read was called 5 times (or more)
//! ```

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicU64, Ordering};
use kernel::ftrace::{Call, Callback, Registration};
use kernel::{bindings, c_str, prelude::*, str::CStr};

module! {
    type: RustFtrace,
    name: "rust_ftrace",
    author: "Rust ftrace core developers",
    description: "Counts the calls of a kernel function (Rust function tracing sample)",
    license: "GPL",
}

/// Room for the parameter (a function name, NUL-terminated).
const FUNC_LEN: usize = 128;

/// The `func` parameter's string, which the module loader writes before
/// `init` runs (and sysfs would, were it writable: it is read-only).
struct ParamBuf(UnsafeCell<[u8; FUNC_LEN]>);

// SAFETY: written by the module loader before `init`, read-only after.
unsafe impl Sync for ParamBuf {}

static FUNC: ParamBuf = ParamBuf(UnsafeCell::new(default_func()));

const fn default_func() -> [u8; FUNC_LEN] {
    let mut b = [0u8; FUNC_LEN];
    let d = b"ksys_read";
    let mut i = 0;
    while i < d.len() {
        b[i] = d[i];
        i += 1;
    }
    b
}

/// A C parameter description the module loader reads.
#[repr(transparent)]
struct ForLoader<T>(T);

// SAFETY: read by the module loader only, while it loads this module.
unsafe impl<T> Sync for ForLoader<T> {}

/// `module_param_string(func, ...)`: the loader copies the value into
/// [`FUNC`] (at most `FUNC_LEN - 1` bytes, NUL-terminated).
static FUNC_STRING: ForLoader<bindings::kparam_string> = ForLoader(bindings::kparam_string {
    maxlen: FUNC_LEN as u32,
    string: FUNC.0.get().cast(),
});

// `used(compiler)`, as `module!` marks its `.modinfo` strings: a
// section that the linker must keep (`used` alone) would not be merged
// with the others of its name.
#[link_section = "__param"]
#[used(compiler)]
static PARAM: ForLoader<bindings::kernel_param> = ForLoader(bindings::kernel_param {
    name: c"func".as_ptr().cast(),
    // As built-in code has it; the loader then takes the global lock.
    mod_: core::ptr::null_mut(),
    ops: &raw const bindings::param_ops_string,
    perm: 0o444,
    level: -1,
    flags: 0,
    __bindgen_anon_1: bindings::kernel_param__bindgen_ty_1 {
        str_: &raw const FUNC_STRING.0,
    },
});

#[link_section = ".modinfo"]
#[used(compiler)]
static PARMTYPE: [u8; 21] = *b"parmtype=func:string\0";

/// The function name the module was loaded with.
fn func() -> &'static CStr {
    // SAFETY: the loader wrote the parameter (NUL-terminated within the
    // buffer) before `init`; nothing writes it after (read-only in sysfs).
    let b = unsafe { &*FUNC.0.get() };
    let n = b.iter().position(|&c| c == 0).unwrap_or(FUNC_LEN - 1);
    CStr::from_bytes_with_nul(&b[..=n]).unwrap_or(c_str!("ksys_read"))
}

/// The callback: one count per call.
struct Counter(AtomicU64);

impl Callback for Counter {
    fn call(&self, _call: &Call) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

struct RustFtrace {
    reg: Registration<Counter>,
}

impl kernel::Module for RustFtrace {
    fn init(_module: &'static ThisModule) -> Result<Self> {
        let mut reg = Registration::new(Counter(AtomicU64::new(0)), GFP_KERNEL)?;
        reg.set_filter(func())?;
        reg.register()?;
        pr_info!("counting the calls of {}\n", func());
        Ok(RustFtrace { reg })
    }
}

impl Drop for RustFtrace {
    fn drop(&mut self) {
        // Stop first, so the count is final.
        let _ = self.reg.unregister();
        let n = self.reg.callback().0.load(Ordering::Relaxed);
        pr_info!("{} was called {} times\n", func(), n);
    }
}
