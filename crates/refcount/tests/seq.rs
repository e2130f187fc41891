//! Sequential behaviour of every scheme against a plain-integer reference.
//!
//! The reference is a count plus a "locked" flag. Under today's semantics
//! (cmpxchg-loop, optimistic) a page is dead or frozen exactly when its count
//! is 0; under the locked-bit patch only the *_and_test paths that reach 0
//! and `page_ref_freeze` lock it, and only `unfreeze` / `set_page_count`
//! unlock it. Operations the kernel forbids (a get without holding a
//! reference, a put below zero, an unfreeze of a live page) are skipped.
#![cfg(not(loom))]

use foliosim_refcount::{
    CmpxchgLoop, LockedBit, LockedBitAcquire, Optimistic, PageRef, PAGEREF_LOCKED_BIT,
    PAGEREF_LOCKED_LIMIT,
};
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Add(i32),
    Sub(i32),
    Inc,
    Dec,
    SubReturn(i32),
    IncReturn,
    DecReturn,
    SubAndTest(i32),
    DecAndTest,
    TryAdd(i32),
    TryGet,
    Freeze(i32),
    Unfreeze(i32),
    SetCount(i32),
    Count,
    Writable,
}

fn op() -> impl Strategy<Value = Op> {
    let nr = 1..4i32;
    prop_oneof![
        nr.clone().prop_map(Op::Add),
        nr.clone().prop_map(Op::Sub),
        Just(Op::Inc),
        Just(Op::Dec),
        nr.clone().prop_map(Op::SubReturn),
        Just(Op::IncReturn),
        Just(Op::DecReturn),
        nr.clone().prop_map(Op::SubAndTest),
        Just(Op::DecAndTest),
        nr.prop_map(Op::TryAdd),
        Just(Op::TryGet),
        (0..5i32).prop_map(Op::Freeze),
        (1..5i32).prop_map(Op::Unfreeze),
        (0..4i32).prop_map(Op::SetCount),
        Just(Op::Count),
        Just(Op::Writable),
    ]
}

#[derive(Debug)]
struct Reference {
    count: i32,
    locked: bool,
    locked_bit: bool,
    hvo: bool,
}

impl Reference {
    fn dead(&self) -> bool {
        if self.locked_bit {
            self.locked
        } else {
            self.count == 0
        }
    }

    fn live_with(&self, nr: i32) -> bool {
        !self.locked && self.count >= nr && self.count > 0
    }
}

/// What an op returned, for comparison.
#[derive(Debug, PartialEq)]
enum Ret {
    Unit,
    Int(i32),
    Bool(bool),
    Skipped,
}

fn step_ref(m: &mut Reference, op: &Op) -> Ret {
    match *op {
        Op::Add(nr) => {
            if !m.live_with(1) {
                return Ret::Skipped;
            }
            m.count += nr;
            Ret::Unit
        }
        Op::Inc | Op::IncReturn => {
            if !m.live_with(1) {
                return Ret::Skipped;
            }
            m.count += 1;
            if matches!(op, Op::Inc) {
                Ret::Unit
            } else {
                Ret::Int(m.count)
            }
        }
        Op::Sub(nr) | Op::SubReturn(nr) | Op::SubAndTest(nr) => {
            if !m.live_with(nr) {
                return Ret::Skipped;
            }
            m.count -= nr;
            match op {
                Op::Sub(_) => Ret::Unit,
                Op::SubReturn(_) => Ret::Int(m.count),
                _ => {
                    let zero = m.count == 0;
                    m.locked |= zero && m.locked_bit;
                    Ret::Bool(zero)
                }
            }
        }
        Op::Dec | Op::DecReturn | Op::DecAndTest => {
            if !m.live_with(1) {
                return Ret::Skipped;
            }
            m.count -= 1;
            match op {
                Op::Dec => Ret::Unit,
                Op::DecReturn => Ret::Int(m.count),
                _ => {
                    let zero = m.count == 0;
                    m.locked |= zero && m.locked_bit;
                    Ret::Bool(zero)
                }
            }
        }
        Op::TryGet | Op::TryAdd(_) => {
            let nr = if let Op::TryAdd(n) = *op { n } else { 1 };
            if m.dead() {
                Ret::Bool(false)
            } else {
                m.count += nr;
                Ret::Bool(true)
            }
        }
        Op::Freeze(c) => {
            // cmpxchg(c, ...) on the raw word: a locked word never matches.
            let ok = !m.locked && m.count == c;
            if ok {
                m.count = 0;
                m.locked = m.locked_bit;
            }
            Ret::Bool(ok)
        }
        Op::Unfreeze(c) => {
            // VM_BUG_ON_PAGE(page_count(page) != 0)
            if !(m.locked || m.count == 0) {
                return Ret::Skipped;
            }
            m.count = c;
            m.locked = false;
            Ret::Unit
        }
        Op::SetCount(v) => {
            m.count = v;
            m.locked = false;
            Ret::Unit
        }
        Op::Count => Ret::Int(if m.locked { 0 } else { m.count }),
        Op::Writable => Ret::Bool(!m.hvo || !m.dead()),
    }
}

fn step_impl<R: PageRef>(p: &R, op: &Op) -> Ret {
    match *op {
        Op::Add(nr) => {
            p.page_ref_add(nr);
            Ret::Unit
        }
        Op::Sub(nr) => {
            p.page_ref_sub(nr);
            Ret::Unit
        }
        Op::Inc => {
            p.page_ref_inc();
            Ret::Unit
        }
        Op::Dec => {
            p.page_ref_dec();
            Ret::Unit
        }
        Op::SubReturn(nr) => Ret::Int(p.page_ref_sub_return(nr)),
        Op::IncReturn => Ret::Int(p.page_ref_inc_return()),
        Op::DecReturn => Ret::Int(p.page_ref_dec_return()),
        Op::SubAndTest(nr) => Ret::Bool(p.page_ref_sub_and_test(nr)),
        Op::DecAndTest => Ret::Bool(p.page_ref_dec_and_test()),
        Op::TryAdd(nr) => Ret::Bool(p.folio_ref_try_add(nr)),
        Op::TryGet => Ret::Bool(p.folio_try_get()),
        Op::Freeze(c) => Ret::Bool(p.page_ref_freeze(c)),
        Op::Unfreeze(c) => {
            p.page_ref_unfreeze(c);
            Ret::Unit
        }
        Op::SetCount(v) => {
            p.set_page_count(v);
            Ret::Unit
        }
        Op::Count => Ret::Int(p.page_ref_count()),
        Op::Writable => Ret::Bool(p.page_count_writable()),
    }
}

fn check<R: PageRef>(
    init: i32,
    hvo: bool,
    ops: &[Op],
    locked_bit: bool,
) -> Result<(), TestCaseError> {
    let p = R::with_hvo(init, hvo);
    let mut m = Reference {
        count: init,
        locked: false,
        locked_bit,
        hvo,
    };
    for (i, op) in ops.iter().enumerate() {
        let want = step_ref(&mut m, op);
        if want == Ret::Skipped {
            continue;
        }
        let got = step_impl(&p, op);
        prop_assert_eq!(
            &got,
            &want,
            "{}: op {} {:?} (reference {:?})",
            R::NAME,
            i,
            op,
            m
        );
        let count = if m.locked { 0 } else { m.count };
        prop_assert_eq!(
            p.page_ref_count(),
            count,
            "{}: count after op {} {:?}",
            R::NAME,
            i,
            op
        );
        if locked_bit {
            let raw = p.raw();
            prop_assert_eq!(
                raw & PAGEREF_LOCKED_BIT != 0,
                m.locked,
                "{}: locked bit",
                R::NAME
            );
            prop_assert!((raw as u32) < PAGEREF_LOCKED_LIMIT);
        } else {
            prop_assert_eq!(p.raw(), m.count);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn cmpxchg_loop_matches_reference(init in 0..4i32, hvo: bool, ops in prop::collection::vec(op(), 1..40)) {
        check::<CmpxchgLoop>(init, hvo, &ops, false)?;
    }

    #[test]
    fn optimistic_matches_reference(init in 0..4i32, hvo: bool, ops in prop::collection::vec(op(), 1..40)) {
        check::<Optimistic>(init, hvo, &ops, false)?;
    }

    #[test]
    fn locked_bit_matches_reference(init in 0..4i32, hvo: bool, ops in prop::collection::vec(op(), 1..40)) {
        check::<LockedBit>(init, hvo, &ops, true)?;
        check::<LockedBitAcquire>(init, hvo, &ops, true)?;
    }
}

/// The reference is not vacuous: the classic reference rejects the
/// locked-bit scheme on the dec_return path, and vice versa.
#[test]
fn references_tell_the_semantics_apart() {
    let ops = [Op::DecReturn, Op::TryGet];
    assert!(check::<CmpxchgLoop>(1, false, &ops, false).is_ok());
    assert!(check::<LockedBit>(1, false, &ops, true).is_ok());
    assert!(check::<LockedBit>(1, false, &ops, false).is_err());
    assert!(check::<CmpxchgLoop>(1, false, &ops, true).is_err());
}
