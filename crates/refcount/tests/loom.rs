//! Loom model checks of the refcount schemes.
//!
//! RUSTFLAGS="--cfg loom" cargo test -p foliosim-refcount --test loom --release
//!
//! (about 30 s to build, under a second to run; LOOM_MAX_PREEMPTIONS
//! overrides the bound of 3.)
//!
//! Each model puts the page's contents in a loom `UnsafeCell`: the thread
//! that frees (poisons) or migrates (rewrites) the page writes it, threads
//! holding a reference read it. A `try_get` that succeeds on a dead or
//! frozen page therefore shows up either as a data race loom reports, as a
//! read of the poison, or in the final counts. Reference holders also write
//! a cell of their own that the freeing thread reads, so a free that is not
//! ordered after every user's accesses is reported too.
//!
//! Loom models C11, not the LKMM: fully ordered kernel RMWs are `SeqCst`
//! here and loom checks them as `AcqRel`, and control dependencies order
//! nothing. Both can only add reports, never hide one. The one place the
//! model is stronger than the kernel is `atomic_set` done as a swap under
//! loom, to dodge a loom bug (see src/atomic.rs). The report each
//! expected-failure test accepts is pinned below and explained.
#![cfg(loom)]

use foliosim_refcount::{
    BrokenOptimistic, CmpxchgLoop, LockedBit, LockedBitAcquire, Optimistic, PageRef,
    PAGEREF_LOCKED_BIT, PAGEREF_LOCKED_LIMIT,
};
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::panic::{catch_unwind, AssertUnwindSafe};

const POISON: u64 = 0xdead_beef;

struct Page<R> {
    r: R,
    /// The page's contents: read by reference holders, poisoned on free,
    /// rewritten while frozen.
    data: UnsafeCell<u64>,
    /// Per-user state a reference holder writes while it holds its
    /// reference (think of its own `struct page` field updates); the thread
    /// that frees reads them all, so it must be ordered after every user.
    touched: Vec<UnsafeCell<bool>>,
    frees: AtomicUsize,
}

impl<R: PageRef> Page<R> {
    fn new(r: R, data: u64) -> Arc<Self> {
        Self::with_users(r, data, 0)
    }

    fn with_users(r: R, data: u64, users: usize) -> Arc<Self> {
        Arc::new(Page {
            r,
            data: UnsafeCell::new(data),
            touched: (0..users).map(|_| UnsafeCell::new(false)).collect(),
            frees: AtomicUsize::new(0),
        })
    }

    fn touch(&self, user: usize) {
        self.touched[user].with_mut(|t| unsafe { *t = true })
    }

    fn read(&self) -> u64 {
        self.data.with(|d| unsafe { *d })
    }

    fn write(&self, v: u64) {
        self.data.with_mut(|d| unsafe { *d = v })
    }

    /// `folio_put`: the one that drops the last reference frees the page.
    fn put(&self) {
        if self.r.page_ref_dec_and_test() {
            self.free();
        }
    }

    /// `free_pages_prepare` looks at the page before it is reused: it must
    /// see every holder's writes, and nobody may still be using it.
    fn free(&self) {
        for t in &self.touched {
            t.with(|t| unsafe { *t });
        }
        assert_ne!(self.read(), POISON, "double free");
        self.write(POISON);
        self.frees.fetch_add(1, Ordering::Relaxed);
    }
}

fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    // Name the source lines of racing accesses in violation reports.
    b.location = true;
    b.check(f);
}

/// Holder drops the last reference while `getters` threads try_get, write
/// to the page and put. The page must be freed exactly once, by a thread
/// ordered after every other user's accesses, and never used after.
fn put_vs_try_get<R: PageRef + 'static>(getters: usize, hvo: bool) {
    model(move || {
        let p = Page::with_users(R::with_hvo(1, hvo), 7, getters);
        let hs: Vec<_> = (0..getters)
            .map(|i| {
                let p = p.clone();
                thread::spawn(move || {
                    if p.r.folio_try_get() {
                        assert_ne!(p.read(), POISON, "{}: try_get on a freed page", R::NAME);
                        p.touch(i);
                        p.put();
                    }
                })
            })
            .collect();
        p.put();
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(p.frees.load(Ordering::Relaxed), 1, "{}: frees", R::NAME);
        assert_eq!(p.r.page_ref_count(), 0, "{}", R::NAME);
    });
}

/// The page cache's single reference is frozen and unfrozen `cycles` times
/// (migration, split) while `getters` threads try_get, read and put. No
/// try_get may succeed while frozen, no put may find itself last, and the
/// count ends where it started.
fn freeze_vs_try_get<R: PageRef + 'static>(getters: usize, cycles: u64) {
    model(move || {
        let p = Page::new(R::new(1), 0);
        let hs: Vec<_> = (0..getters)
            .map(|_| {
                let p = p.clone();
                thread::spawn(move || {
                    if p.r.folio_try_get() {
                        let v = p.read();
                        assert!(v <= cycles, "{}: read {v}", R::NAME);
                        assert!(
                            !p.r.page_ref_dec_and_test(),
                            "{}: a try_get reference outlived the page cache's",
                            R::NAME
                        );
                    }
                })
            })
            .collect();
        for c in 1..=cycles {
            if p.r.page_ref_freeze(1) {
                p.write(c);
                p.r.page_ref_unfreeze(1);
            }
        }
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(p.r.page_ref_count(), 1, "{}: raw {:#x}", R::NAME, p.r.raw());
        assert_eq!(p.r.raw(), 1, "{}", R::NAME);
    });
}

/// A path that frees when `page_ref_dec_return()` hits 0 (rather than
/// through `*_and_test`), racing a try_get.
fn put_via_dec_return_vs_try_get<R: PageRef + 'static>() {
    model(|| {
        let p = Page::new(R::new(1), 7);
        let g = {
            let p = p.clone();
            thread::spawn(move || {
                if p.r.folio_try_get() {
                    assert_ne!(p.read(), POISON, "{}: try_get on a freed page", R::NAME);
                    if p.r.page_ref_dec_return() == 0 {
                        p.free();
                    }
                }
            })
        };
        if p.r.page_ref_dec_return() == 0 {
            p.free();
        }
        g.join().unwrap();
        assert_eq!(p.frees.load(Ordering::Relaxed), 1, "{}: frees", R::NAME);
    });
}

/// Runs `f`, which must panic (loom found the violation) with a message
/// containing each of `expect`; returns the message.
fn expect_violation(what: &str, expect: &[&str], f: impl FnOnce()) -> String {
    let err = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(()) => panic!("loom did not catch {what}"),
        Err(e) => e,
    };
    let msg = err
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| err.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    for e in expect {
        assert!(msg.contains(e), "{what}: unexpected failure: {msg}");
    }
    msg
}

/// Loom's report when the getter (thread 1) reads the page's contents
/// unordered with the free or rewrite by the holder (thread 0, main).
const GETTER_USES_DEAD_PAGE: &[&str] = &[
    "Causality violation: Concurrent read and write accesses",
    "read: thread #1",
    "write: thread #0",
];

/// Loom's report when the freeing holder (thread 0) reads state the getter
/// (thread 1) wrote under its reference without being ordered after it.
const FREER_MISSES_GETTER: &[&str] = &[
    "Causality violation: Concurrent read and write accesses",
    "read: thread #0",
    "write: thread #1",
];

// -- today's kernel ------------------------------------------------------

#[test]
fn cmpxchg_loop_put_vs_try_get() {
    put_vs_try_get::<CmpxchgLoop>(2, false);
    put_vs_try_get::<CmpxchgLoop>(1, true);
}

#[test]
fn cmpxchg_loop_freeze_vs_try_get() {
    freeze_vs_try_get::<CmpxchgLoop>(1, 2);
    freeze_vs_try_get::<CmpxchgLoop>(2, 1);
}

#[test]
fn cmpxchg_loop_dec_return_contract() {
    put_via_dec_return_vs_try_get::<CmpxchgLoop>();
}

// -- Linus's optimistic cmpxchg ------------------------------------------

#[test]
fn optimistic_put_vs_try_get() {
    put_vs_try_get::<Optimistic>(2, false);
    put_vs_try_get::<Optimistic>(1, true);
}

#[test]
fn optimistic_freeze_vs_try_get() {
    freeze_vs_try_get::<Optimistic>(1, 2);
    freeze_vs_try_get::<Optimistic>(2, 1);
}

#[test]
fn optimistic_dec_return_contract() {
    put_via_dec_return_vs_try_get::<Optimistic>();
}

// -- the locked bit --------------------------------------------------------

/// Finding: as posted, the patch decides who frees with
/// `atomic_cmpxchg_relaxed(0, LOCKED)`. Holder: dec to 0; getter: try_get
/// (0 -> 1), write the page, put (1 -> 0); holder: cmpxchg wins and frees.
/// The holder's cmpxchg reads the getter's put without acquiring it, so
/// the free is not ordered after the getter's write: in LKMM terms message
/// passing with no acquire on the reader side. (Today `atomic_dec_and_test`
/// is fully ordered and gives the freer that ordering.)
#[test]
fn locked_bit_relaxed_free_cmpxchg_is_unordered() {
    expect_violation(
        "the posted patch's relaxed free cmpxchg",
        FREER_MISSES_GETTER,
        || put_vs_try_get::<LockedBit>(1, false),
    );
}

/// With `atomic_cmpxchg_acquire` in the free path the same races pass.
#[test]
fn locked_bit_acquire_put_vs_try_get() {
    put_vs_try_get::<LockedBitAcquire>(2, false);
    put_vs_try_get::<LockedBitAcquire>(1, true);
}

#[test]
fn locked_bit_freeze_vs_try_get() {
    freeze_vs_try_get::<LockedBit>(1, 2);
    freeze_vs_try_get::<LockedBit>(2, 1);
    freeze_vs_try_get::<LockedBitAcquire>(1, 2);
}

/// A frozen page whose word already carries failed increments up to one
/// below `_PAGEREF_LOCKED_LIMIT`: two try_gets push it over and run the undo
/// loop while the owner rewrites the page and unfreezes it. Nobody may get a
/// reference before the unfreeze, the undo may not clobber the unfreeze, and
/// the loop must end.
#[test]
fn locked_bit_overflow_undo_vs_unfreeze() {
    model(|| {
        let p = Page::new(
            LockedBit::from_raw((PAGEREF_LOCKED_LIMIT - 1) as i32, false),
            0,
        );
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let p = p.clone();
                thread::spawn(move || {
                    if p.r.folio_try_get() {
                        assert_eq!(p.read(), 1, "try_get before unfreeze");
                        assert!(!p.r.page_ref_dec_and_test());
                    }
                })
            })
            .collect();
        p.write(1);
        p.r.page_ref_unfreeze(1);
        for h in hs {
            h.join().unwrap();
        }
        assert_eq!(p.r.raw(), 1);
    });
}

/// The same pile-up with nobody unfreezing: both try_gets fail and the word
/// ends locked and back under the limit, never wrapped into "unlocked".
#[test]
fn locked_bit_overflow_undo_stays_locked() {
    model(|| {
        let p = Page::new(
            LockedBit::from_raw((PAGEREF_LOCKED_LIMIT - 1) as i32, false),
            0,
        );
        let hs: Vec<_> = (0..2)
            .map(|_| {
                let p = p.clone();
                thread::spawn(move || assert!(!p.r.folio_try_get()))
            })
            .collect();
        assert!(!p.r.folio_try_get());
        for h in hs {
            h.join().unwrap();
        }
        let raw = p.r.raw();
        assert_ne!(raw & PAGEREF_LOCKED_BIT, 0);
        assert!((raw as u32) < PAGEREF_LOCKED_LIMIT, "raw {raw:#x}");
    });
}

/// Finding: the patch only locks on `*_and_test`. A free decided by
/// `dec_return() == 0` (fine today: 0 is dead) leaves the word at 0 and
/// unlocked, so a racing try_get succeeds on the freed page.
#[test]
fn locked_bit_dec_return_contract_is_weaker() {
    expect_violation(
        "a locked-bit try_get after dec_return() == 0",
        GETTER_USES_DEAD_PAGE,
        put_via_dec_return_vs_try_get::<LockedBit>,
    );
}

// -- the deliberately broken scheme ---------------------------------------

#[test]
fn broken_optimistic_caught_racing_a_put() {
    expect_violation(
        "broken-optimistic resurrecting a freed page",
        GETTER_USES_DEAD_PAGE,
        || put_vs_try_get::<BrokenOptimistic>(1, false),
    );
}

#[test]
fn broken_optimistic_caught_racing_a_freeze() {
    expect_violation(
        "broken-optimistic getting a frozen page",
        GETTER_USES_DEAD_PAGE,
        || freeze_vs_try_get::<BrokenOptimistic>(1, 1),
    );
}
