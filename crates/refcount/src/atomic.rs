//! `atomic_t` with the orderings the Linux kernel memory model gives each
//! operation, so that loom explores what a weakly ordered machine (arm64,
//! POWER) may do and not only what x86's `lock`-prefixed instructions do.
//!
//! Mapping (Documentation/atomic_t.txt):
//! - `atomic_read` / `atomic_set`: plain accesses -> `Relaxed`.
//! - `atomic_read_acquire` / `atomic_set_release` -> `Acquire` / `Release`.
//! - RMW ops without a return value (`atomic_add`, `atomic_dec`, ...) are
//!   unordered -> `Relaxed`.
//! - RMW ops that return a value (`*_return`, `*_and_test`, `fetch_*`) and a
//!   successful `cmpxchg` are fully ordered -> `SeqCst` (the strongest order
//!   Rust can state for one RMW; the kernel's is an `smp_mb()` on each side).
//! - A failed `cmpxchg` and every `*_relaxed` form -> `Relaxed`.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicI32, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicI32, Ordering};

/// The kernel's `atomic_t`, as used for `page->_refcount`.
#[derive(Debug)]
pub struct KAtomic(AtomicI32);

impl KAtomic {
    pub fn new(v: i32) -> Self {
        KAtomic(AtomicI32::new(v))
    }

    /// `atomic_read`
    #[inline]
    pub fn read(&self) -> i32 {
        self.0.load(Ordering::Relaxed)
    }

    /// `atomic_read_acquire`
    #[inline]
    pub fn read_acquire(&self) -> i32 {
        self.0.load(Ordering::Acquire)
    }

    /// `atomic_set`
    #[inline]
    pub fn set(&self, v: i32) {
        self.store(v, Ordering::Relaxed)
    }

    /// `atomic_set_release`
    #[inline]
    pub fn set_release(&self, v: i32) {
        self.store(v, Ordering::Release)
    }

    #[cfg(not(loom))]
    #[inline]
    fn store(&self, v: i32, o: Ordering) {
        self.0.store(v, o)
    }

    /// loom 0.7 lets a plain store slip between the read and the write of a
    /// concurrent RMW (tokio-rs/loom#254, fix unmerged as of 0.7.2), which
    /// reports executions no CPU can produce (an unfreeze "lost" under a
    /// failed try_get's add). A swap is an RMW, so loom keeps it atomic.
    /// Cost: it also continues release sequences, which a store would end.
    #[cfg(loom)]
    #[inline]
    fn store(&self, v: i32, o: Ordering) {
        self.0.swap(v, o);
    }

    /// `atomic_add` (no return value: unordered)
    #[inline]
    pub fn add(&self, i: i32) {
        self.0.fetch_add(i, Ordering::Relaxed);
    }

    /// `atomic_sub` (no return value: unordered)
    #[inline]
    pub fn sub(&self, i: i32) {
        self.0.fetch_sub(i, Ordering::Relaxed);
    }

    /// `atomic_add_return` (fully ordered)
    #[inline]
    pub fn add_return(&self, i: i32) -> i32 {
        self.0.fetch_add(i, Ordering::SeqCst).wrapping_add(i)
    }

    /// `atomic_sub_return` (fully ordered)
    #[inline]
    pub fn sub_return(&self, i: i32) -> i32 {
        self.0.fetch_sub(i, Ordering::SeqCst).wrapping_sub(i)
    }

    /// `atomic_sub_and_test` (fully ordered)
    #[inline]
    pub fn sub_and_test(&self, i: i32) -> bool {
        self.sub_return(i) == 0
    }

    /// `atomic_dec_and_test` (fully ordered)
    #[inline]
    pub fn dec_and_test(&self) -> bool {
        self.sub_and_test(1)
    }

    /// `atomic_cmpxchg`: returns the value found; fully ordered on success,
    /// unordered on failure.
    #[inline]
    pub fn cmpxchg(&self, old: i32, new: i32) -> i32 {
        match self
            .0
            .compare_exchange(old, new, Ordering::SeqCst, Ordering::Relaxed)
        {
            Ok(v) | Err(v) => v,
        }
    }

    /// `atomic_cmpxchg_relaxed`
    #[inline]
    pub fn cmpxchg_relaxed(&self, old: i32, new: i32) -> i32 {
        match self
            .0
            .compare_exchange(old, new, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(v) | Err(v) => v,
        }
    }

    /// `atomic_cmpxchg_acquire`
    #[inline]
    pub fn cmpxchg_acquire(&self, old: i32, new: i32) -> i32 {
        match self
            .0
            .compare_exchange(old, new, Ordering::Acquire, Ordering::Relaxed)
        {
            Ok(v) | Err(v) => v,
        }
    }

    /// `atomic_try_cmpxchg`: on failure `*old` is updated to the value found.
    #[inline]
    pub fn try_cmpxchg(&self, old: &mut i32, new: i32) -> bool {
        match self
            .0
            .compare_exchange(*old, new, Ordering::SeqCst, Ordering::Relaxed)
        {
            Ok(_) => true,
            Err(v) => {
                *old = v;
                false
            }
        }
    }

    /// `atomic_fetch_add_unless`, as the generic fallback builds it: one
    /// plain read, then a `try_cmpxchg` loop that gives up when it sees `u`.
    #[inline]
    pub fn fetch_add_unless(&self, a: i32, u: i32) -> i32 {
        let mut c = self.read();
        loop {
            if c == u {
                return c;
            }
            let new = c.wrapping_add(a);
            if self.try_cmpxchg(&mut c, new) {
                return c;
            }
        }
    }

    /// `atomic_add_unless`
    #[inline]
    pub fn add_unless(&self, a: i32, u: i32) -> bool {
        self.fetch_add_unless(a, u) != u
    }
}
