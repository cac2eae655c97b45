// SPDX-License-Identifier: GPL-2.0

//! Read-copy update: read-side sections and the waits for them.
//!
//! A reader holds a [`Guard`] while it uses what an updater may retire; an
//! updater that took an object out of readers' reach waits with
//! [`synchronize_rcu`] before freeing it. The tasks flavours wait for what
//! a plain grace period does not cover: [`synchronize_rcu_tasks`] for every
//! task to be off the CPU voluntarily (no task still runs code being
//! retired), [`synchronize_rcu_tasks_rude`] for every CPU to schedule (also
//! those where RCU does not watch).
//!
//! Waiting for a grace period sleeps, which a caller in atomic context must
//! not do; lockdep and `might_sleep()` report that, it corrupts no memory,
//! so the waits are safe functions.
//!
//! C header: [`include/linux/rcupdate.h`](srctree/include/linux/rcupdate.h)
//!
//! # Examples
//!
//! ```
//! use kernel::sync::rcu;
//!
//! assert!(rcu::is_watching());
//! let guard = rcu::read_lock();
//! // What RCU protects may be read here.
//! drop(guard);
//! rcu::synchronize_rcu();
//! rcu::synchronize_rcu_tasks();
//! ```

use crate::bindings;
use core::marker::PhantomData;

/// An RCU read-side section, for as long as the guard lives on this task
/// (it cannot move to another: it is not `Send`).
pub struct Guard(PhantomData<*mut ()>);

impl Guard {
    /// Enters a read-side section.
    #[inline]
    pub fn new() -> Self {
        // SAFETY: paired with the unlock in `drop`, on this task.
        unsafe { bindings::rcu_read_lock() };
        Guard(PhantomData)
    }

    /// Leaves the section.
    #[inline]
    pub fn unlock(self) {}
}

impl Default for Guard {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the section `new` entered, on this task.
        unsafe { bindings::rcu_read_unlock() };
    }
}

/// Enters a read-side section, until the guard is dropped.
#[inline]
pub fn read_lock() -> Guard {
    Guard::new()
}

/// Waits until every CPU left the read-side (and preemption-off) sections
/// it was in when called.
pub fn synchronize_rcu() {
    // SAFETY: no precondition; it sleeps.
    unsafe { bindings::synchronize_rcu() };
}

/// Waits until every task was off the CPU voluntarily (or in user space,
/// or idle) since the call.
pub fn synchronize_rcu_tasks() {
    #[cfg(CONFIG_TASKS_RCU)]
    // SAFETY: no precondition; it sleeps.
    unsafe {
        bindings::synchronize_rcu_tasks()
    };
    #[cfg(not(CONFIG_TASKS_RCU))]
    synchronize_rcu();
}

/// Waits until every online CPU scheduled since the call, those where RCU
/// does not watch included.
#[cfg(CONFIG_TASKS_RUDE_RCU)]
pub fn synchronize_rcu_tasks_rude() {
    // SAFETY: no precondition; it sleeps.
    unsafe { bindings::synchronize_rcu_tasks_rude() };
}

/// Whether RCU watches this CPU now (not in the idle loop, nor on the way
/// into or out of user space or an NMI where it does not). Callable in any
/// context, and not traced.
#[inline]
pub fn is_watching() -> bool {
    #[cfg(not(CONFIG_TINY_RCU))]
    // SAFETY: no precondition.
    return unsafe { bindings::rcu_is_watching() };
    #[cfg(CONFIG_TINY_RCU)]
    return true;
}
