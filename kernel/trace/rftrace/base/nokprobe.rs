// SPDX-License-Identifier: GPL-2.0

//! Functions kprobes must leave alone (C's `NOKPROBE_SYMBOL()`): the hot
//! path runs before its recursion guard, and a kprobe there would trace
//! itself into kprobes' reentry BUG(). Each named function's address goes
//! to the `_kprobe_blacklist` section, which kprobes reads at boot and
//! lists in `/sys/kernel/debug/kprobes/blacklist`.

/// One entry of `_kprobe_blacklist`: a function's address, as C's
/// `unsigned long`.
#[repr(transparent)]
pub(crate) struct Blacklisted(pub(crate) *const core::ffi::c_void);

// SAFETY: an address only, never dereferenced here; kprobes reads it.
unsafe impl Sync for Blacklisted {}

/// Puts the functions named into `_kprobe_blacklist`.
macro_rules! nokprobe {
    ($($f:path),+ $(,)?) => {
        $(
            const _: () = {
                #[used]
                #[link_section = "_kprobe_blacklist"]
                static ENTRY: $crate::base::nokprobe::Blacklisted =
                    $crate::base::nokprobe::Blacklisted($f as *const core::ffi::c_void);
            };
        )+
    };
}
pub(crate) use nokprobe;
