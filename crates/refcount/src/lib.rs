//! The folio refcount lab (seed 001, "mm: improve folio refcount
//! scalability").
//!
//! `include/linux/page_ref.h` (v6.18) is modelled once per way of taking a
//! speculative reference (`folio_try_get` -> `page_ref_add_unless_zero`):
//!
//! - [`CmpxchgLoop`]: today's kernel, `atomic_add_unless(&_refcount, nr, 0)`:
//!   read the count, then `cmpxchg` until it sticks or the count is 0.
//! - [`Optimistic`]: Linus's counter-proposal: do not read first, guess that
//!   the count is 1 and `try_cmpxchg` from there; a failed guess returns the
//!   real value, which is retried unless it is 0.
//! - [`LockedBit`]: Gladyshev's patch: bit 31 (`PAGEREF_LOCKED_BIT`) marks a
//!   dead or frozen page, so `try_get` is an unconditional `atomic_add_return`
//!   checked afterwards; a put that reaches 0 must win a `cmpxchg(0, LOCKED)`
//!   to free, and a failed `try_get` that leaves the count "scary big" resets
//!   it with a `cmpxchg` loop.
//! - [`LockedBitAcquire`]: the same with an acquiring `cmpxchg` in the free
//!   path, which the loom checks show the posted patch needs.
//!
//! The plain `lock xadd` lower bound has no `try_get` semantics and lives in
//! [`bench`] only. A deliberately broken scheme ([`BrokenOptimistic`], the
//! optimistic loop without its zero check) exists only for tests and loom.
//!
//! Every scheme uses [`KAtomic`], whose orderings follow the kernel memory
//! model; under `--cfg loom` it is built on loom's atomics.

mod atomic;
pub mod bench;

pub use atomic::KAtomic;

/// A scheme whose state is the count alone: the struct, its constructor and
/// the accessors every `PageRef` needs; the scheme's own operations follow
/// in the braces.
macro_rules! plain_scheme {
    ($(#[$attr:meta])* $name:ident, $label:literal, { $($ops:tt)* }) => {
        $(#[$attr])*
        #[derive(Debug)]
        pub struct $name {
            refcount: KAtomic,
            hvo: bool,
        }

        $(#[$attr])*
        impl PageRef for $name {
            const NAME: &'static str = $label;

            fn with_hvo(count: i32, hvo: bool) -> Self {
                $name {
                    refcount: KAtomic::new(count),
                    hvo,
                }
            }

            fn refcount(&self) -> &KAtomic {
                &self.refcount
            }

            fn hvo(&self) -> bool {
                self.hvo
            }

            $($ops)*
        }
    };
}

/// The patch's `PAGEREF_LOCKED_BIT`: the most significant bit of `_refcount`.
pub const PAGEREF_LOCKED_BIT: i32 = i32::MIN; // 1 << 31

/// The patch's `_PAGEREF_LOCKED_LIMIT`: a failed `try_get` that finds the
/// count at or above this (as unsigned) resets it to `PAGEREF_LOCKED_BIT`.
pub const PAGEREF_LOCKED_LIMIT: u32 = (1 << 30) | (1 << 31);

/// The page refcount API of `include/linux/page_ref.h`, for one `struct page`
/// (or the head page of a folio: `folio_ref_*` are the same operations).
///
/// Orderings are the kernel's: see [`KAtomic`]. The `VM_BUG_ON_PAGE` checks
/// of the kernel are `debug_assert!`s here (they are `CONFIG_DEBUG_VM`).
pub trait PageRef: Send + Sync + Sized {
    /// Scheme name as the bench and the CLI print it.
    const NAME: &'static str;

    /// A page whose count was set to `count` (`set_page_count`). `hvo` says
    /// whether `hugetlb_optimize_vmemmap_key` is enabled, which is when
    /// `page_count_writable` reads the count before a `try_get`.
    fn with_hvo(count: i32, hvo: bool) -> Self;

    /// A page with `count` references and HVO off (the common case).
    fn new(count: i32) -> Self {
        Self::with_hvo(count, false)
    }

    /// The `_refcount` atomic itself.
    fn refcount(&self) -> &KAtomic;

    /// Whether `hugetlb_optimize_vmemmap_key` is on for this page.
    fn hvo(&self) -> bool;

    /// The raw `_refcount` word, locked bit and all (`atomic_read`).
    fn raw(&self) -> i32 {
        self.refcount().read()
    }

    /// `page_ref_count`
    fn page_ref_count(&self) -> i32 {
        self.refcount().read()
    }

    /// `set_page_count`
    fn set_page_count(&self, v: i32) {
        self.refcount().set(v)
    }

    /// `page_ref_add`
    fn page_ref_add(&self, nr: i32) {
        self.refcount().add(nr)
    }

    /// `page_ref_sub`
    fn page_ref_sub(&self, nr: i32) {
        self.refcount().sub(nr)
    }

    /// `page_ref_inc`
    fn page_ref_inc(&self) {
        self.refcount().add(1)
    }

    /// `page_ref_dec`
    fn page_ref_dec(&self) {
        self.refcount().sub(1)
    }

    /// `page_ref_sub_return`
    fn page_ref_sub_return(&self, nr: i32) -> i32 {
        self.refcount().sub_return(nr)
    }

    /// `page_ref_inc_return`
    fn page_ref_inc_return(&self) -> i32 {
        self.refcount().add_return(1)
    }

    /// `page_ref_dec_return`
    fn page_ref_dec_return(&self) -> i32 {
        self.refcount().sub_return(1)
    }

    /// `page_ref_sub_and_test`: true when the caller dropped the last
    /// reference and must free the page.
    fn page_ref_sub_and_test(&self, nr: i32) -> bool {
        self.refcount().sub_and_test(nr)
    }

    /// `page_ref_dec_and_test` (`put_page_testzero`, `folio_put_testzero`)
    fn page_ref_dec_and_test(&self) -> bool {
        self.page_ref_sub_and_test(1)
    }

    /// `page_count_writable(page, 0)`: false when a `try_get` must not write
    /// the count (the page may sit in a vmemmap area being remapped). Only
    /// looks at the count when HVO is on; pages here are never fake heads.
    fn page_count_writable(&self) -> bool {
        !self.hvo() || self.refcount().read_acquire() != 0
    }

    /// `page_ref_add_unless(page, nr, 0)` (the patch's
    /// `page_ref_add_unless_zero`): take `nr` references unless the page is
    /// dead or frozen. The core of `folio_try_get`.
    fn page_ref_add_unless_zero(&self, nr: i32) -> bool;

    /// `folio_ref_try_add`
    fn folio_ref_try_add(&self, nr: i32) -> bool {
        self.page_ref_add_unless_zero(nr)
    }

    /// `folio_try_get`
    fn folio_try_get(&self) -> bool {
        self.page_ref_add_unless_zero(1)
    }

    /// `page_ref_freeze`: if exactly `count` references are held, take them
    /// all at once and make the page look dead to `try_get`.
    fn page_ref_freeze(&self, count: i32) -> bool {
        self.refcount().cmpxchg(count, 0) == count
    }

    /// `page_ref_unfreeze`: publish the page again with `count` references.
    fn page_ref_unfreeze(&self, count: i32) {
        debug_assert_eq!(self.page_ref_count(), 0, "unfreeze of a page not frozen");
        debug_assert_ne!(count, 0, "unfreeze to a zero count");
        self.refcount().set_release(count)
    }
}

plain_scheme!(
    /// Today's kernel: `atomic_add_unless`, a read followed by a `cmpxchg` loop.
    CmpxchgLoop,
    "cmpxchg-loop",
    {
        #[inline]
        fn page_ref_add_unless_zero(&self, nr: i32) -> bool {
            // rcu_read_lock() only keeps the struct page mapped: a no-op here.
            self.page_count_writable() && self.refcount.add_unless(nr, 0)
        }
    }
);

plain_scheme!(
    /// Linus's proposal (2026-03-01): `try_cmpxchg` from an assumed count of 1,
    /// so the first access asks for the cache line exclusive; a miss hands back
    /// the real count, retried unless it is 0.
    ///
    /// Linus's posted patch adds `old + 1` whatever `nr` is (harmless for
    /// `folio_try_get`, wrong for `folio_ref_try_add(folio, nr > 1)`); this model
    /// adds `nr`, as the function's contract requires.
    Optimistic,
    "optimistic",
    {
        #[inline]
        fn page_ref_add_unless_zero(&self, nr: i32) -> bool {
            if !self.page_count_writable() {
                return false;
            }
            let mut old: i32 = 1;
            loop {
                let new = old.wrapping_add(nr);
                if self.refcount.try_cmpxchg(&mut old, new) {
                    return true;
                }
                // A failed guess left the real count in `old`.
                if old == 0 {
                    return false;
                }
            }
        }
    }
);

/// Gladyshev's patch (2026-02-26): a dedicated locked bit, so that taking a
/// speculative reference is an unconditional `atomic_add_return`.
///
/// `ACQUIRE_ON_FREE` picks the ordering of the `cmpxchg(0, LOCKED)` that
/// decides who frees: `false` is the patch as posted
/// (`atomic_cmpxchg_relaxed`, [`LockedBit`]); `true` uses
/// `atomic_cmpxchg_acquire` ([`LockedBitAcquire`]). See the loom checks: when
/// a try_get slips in between the decrement and that cmpxchg and then puts
/// its reference, the relaxed cmpxchg reads that put without acquiring it,
/// so the freeing thread is not ordered after the other user's accesses.
#[derive(Debug)]
pub struct LockedBitImpl<const ACQUIRE_ON_FREE: bool> {
    refcount: KAtomic,
    hvo: bool,
}

/// The locked-bit patch as posted.
pub type LockedBit = LockedBitImpl<false>;

/// The locked-bit patch with `atomic_cmpxchg_acquire` in the free path.
pub type LockedBitAcquire = LockedBitImpl<true>;

impl<const A: bool> LockedBitImpl<A> {
    /// A page whose raw `_refcount` word is `raw`, locked bit included: for
    /// reaching states such as "frozen with a pile of failed `try_get`
    /// increments" directly (the overflow path).
    pub fn from_raw(raw: i32, hvo: bool) -> Self {
        LockedBitImpl {
            refcount: KAtomic::new(raw),
            hvo,
        }
    }

    /// Whether the locked bit is set (page dead or frozen).
    pub fn is_locked(&self) -> bool {
        self.refcount.read() & PAGEREF_LOCKED_BIT != 0
    }

    /// The patch adds the locked state to every path that can reach zero
    /// through `*_and_test`: winning `cmpxchg(0, LOCKED)` is what makes the
    /// caller the one that frees. A `try_get` that slipped in between the
    /// decrement and this `cmpxchg` owns a reference now, so the caller
    /// must not free.
    #[inline]
    fn lock_if_zero(&self) -> bool {
        let old = if A {
            self.refcount.cmpxchg_acquire(0, PAGEREF_LOCKED_BIT)
        } else {
            self.refcount.cmpxchg_relaxed(0, PAGEREF_LOCKED_BIT)
        };
        old == 0
    }
}

impl<const A: bool> PageRef for LockedBitImpl<A> {
    const NAME: &'static str = if A {
        "locked-bit-acquire"
    } else {
        "locked-bit"
    };

    fn with_hvo(count: i32, hvo: bool) -> Self {
        Self::from_raw(count, hvo)
    }

    fn refcount(&self) -> &KAtomic {
        &self.refcount
    }

    fn hvo(&self) -> bool {
        self.hvo
    }

    fn page_ref_count(&self) -> i32 {
        let v = self.refcount.read();
        if v & PAGEREF_LOCKED_BIT != 0 {
            0
        } else {
            v
        }
    }

    fn page_ref_sub_and_test(&self, nr: i32) -> bool {
        self.refcount.sub_and_test(nr) && self.lock_if_zero()
    }

    fn page_ref_dec_and_test(&self) -> bool {
        self.refcount.dec_and_test() && self.lock_if_zero()
    }

    fn page_count_writable(&self) -> bool {
        !self.hvo || self.refcount.read_acquire() & PAGEREF_LOCKED_BIT == 0
    }

    #[inline]
    fn page_ref_add_unless_zero(&self, nr: i32) -> bool {
        if !self.page_count_writable() {
            return false;
        }
        let mut val = self.refcount.add_return(nr);
        let ret = val & PAGEREF_LOCKED_BIT == 0;
        // Failed increments on a locked page are left in place (unfreeze
        // overwrites them); only when they pile up towards wrapping past
        // bit 31 into "unlocked" does someone put the word back to LOCKED.
        // The loop stops once the value it finds is below the limit: either
        // its own reset (it then finds LOCKED) or somebody else's store.
        while val as u32 >= PAGEREF_LOCKED_LIMIT {
            val = self.refcount.cmpxchg_relaxed(val, PAGEREF_LOCKED_BIT);
        }
        ret
    }

    fn page_ref_freeze(&self, count: i32) -> bool {
        self.refcount.cmpxchg(count, PAGEREF_LOCKED_BIT) == count
    }
}

plain_scheme!(
    /// DELIBERATELY BROKEN: the optimistic loop without its `old == 0` exit, so
    /// a `try_get` that misses its guess on a dead or frozen page retries with
    /// `cmpxchg(0, nr)` and resurrects it. Exists so tests can show the checks
    /// catch it; never used by the bench.
    #[cfg(any(test, loom))]
    BrokenOptimistic,
    "broken-optimistic",
    {
        fn page_ref_add_unless_zero(&self, nr: i32) -> bool {
            if !self.page_count_writable() {
                return false;
            }
            let mut old: i32 = 1;
            loop {
                let new = old.wrapping_add(nr);
                if self.refcount.try_cmpxchg(&mut old, new) {
                    return true;
                }
            }
        }
    }
);

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn locked_bit_dead_page_refuses_try_get_and_keeps_garbage_below_count() {
        let p = LockedBit::new(1);
        assert!(p.page_ref_dec_and_test());
        assert_eq!(p.raw(), PAGEREF_LOCKED_BIT);
        assert!(!p.folio_try_get());
        assert!(!p.folio_ref_try_add(3));
        // The failed increments stay in the word but never show in the count.
        assert_eq!(p.raw(), PAGEREF_LOCKED_BIT + 4);
        assert_eq!(p.page_ref_count(), 0);
        // A freeze cannot succeed on a dead page either.
        assert!(!p.page_ref_freeze(0));
    }

    #[test]
    fn locked_bit_overflow_resets_to_locked() {
        let p = LockedBit::from_raw((PAGEREF_LOCKED_LIMIT - 1) as i32, false);
        assert!(!p.folio_try_get());
        assert_eq!(p.raw(), PAGEREF_LOCKED_BIT);
        // Just below the limit nothing is reset.
        let p = LockedBit::from_raw((PAGEREF_LOCKED_LIMIT - 3) as i32, false);
        assert!(!p.folio_try_get());
        assert_eq!(p.raw() as u32, PAGEREF_LOCKED_LIMIT - 2);
        // A big nr jumping past the limit is reset too.
        let p = LockedBit::from_raw(PAGEREF_LOCKED_BIT, false);
        assert!(!p.folio_ref_try_add(1 << 30));
        assert_eq!(p.raw(), PAGEREF_LOCKED_BIT);
    }

    #[test]
    fn locked_bit_freeze_unfreeze_wipes_failed_increments() {
        let p = LockedBit::new(2);
        assert!(!p.page_ref_freeze(1));
        assert!(p.page_ref_freeze(2));
        assert!(!p.folio_try_get());
        assert!(!p.folio_try_get());
        assert_eq!(p.page_ref_count(), 0);
        p.page_ref_unfreeze(3);
        assert_eq!(p.raw(), 3);
        assert!(p.folio_try_get());
        assert_eq!(p.page_ref_count(), 4);
    }

    #[test]
    fn page_count_writable_only_checks_with_hvo() {
        let a = CmpxchgLoop::with_hvo(0, false);
        assert!(a.page_count_writable());
        let a = CmpxchgLoop::with_hvo(0, true);
        assert!(!a.page_count_writable());
        let b = LockedBit::with_hvo(0, true);
        // Zero but unlocked is writable under the patch.
        assert!(b.page_count_writable());
        assert!(b.page_ref_freeze(0));
        assert!(!b.page_count_writable());
        // And a failed try_get then does not even touch the word.
        assert!(!b.folio_try_get());
        assert_eq!(b.raw(), PAGEREF_LOCKED_BIT);
    }

    #[test]
    fn optimistic_adds_nr_not_one() {
        let p = Optimistic::new(5);
        assert!(p.folio_ref_try_add(3));
        assert_eq!(p.page_ref_count(), 8);
        let p = Optimistic::new(1);
        assert!(p.folio_ref_try_add(2));
        assert_eq!(p.page_ref_count(), 3);
        let p = Optimistic::new(0);
        assert!(!p.folio_try_get());
        assert_eq!(p.raw(), 0);
    }

    #[test]
    fn broken_optimistic_resurrects_a_dead_page() {
        let p = BrokenOptimistic::new(1);
        assert!(p.page_ref_dec_and_test());
        // Its guess of 1 fails, the retry from 0 succeeds: a use after free.
        assert!(p.folio_try_get());
        assert_eq!(p.page_ref_count(), 1);
    }

    #[test]
    fn dec_return_to_zero_leaves_locked_bit_page_open() {
        // The patch locks only on *_and_test; a path that treats
        // dec_return() == 0 as "dead" no longer stops try_get.
        let a = CmpxchgLoop::new(1);
        assert_eq!(a.page_ref_dec_return(), 0);
        assert!(!a.folio_try_get());
        let b = LockedBit::new(1);
        assert_eq!(b.page_ref_dec_return(), 0);
        assert!(b.folio_try_get());
    }
}
