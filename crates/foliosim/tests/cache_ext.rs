//! cache_ext's contract: what the kernel does with what a policy proposes
//! (invalid, too few, too many, not isolatable), the list operations'
//! limits, folio_evicted on truncation, admission bypass, determinism.

use std::cell::RefCell;
use std::rc::Rc;

use foliosim::mm::cache_ext::{
    CacheExtCtx, CacheExtOps, CacheExtStats, EvictionCtx, IterAction, ListError, ListId,
    CACHE_EXT_EVICT_BATCH, CACHE_EXT_ITERATE_MAX,
};
use foliosim::mm::folio::{pg, FolioId};
use foliosim::mm::MmConfig;
use foliosim::sim::{LruKind, RunReport, Sim, SimConfig};
use foliosim_workload::fio::parse_job_str;

fn cfg(policy: Option<&str>) -> SimConfig {
    SimConfig {
        mm: MmConfig {
            ram_bytes: 512 << 20,
            check_invariants: true,
            policy: policy.map(str::to_string),
            ..MmConfig::default()
        },
        lru: LruKind::Classic,
        memcg_limit: Some(32 << 20),
        seed: 1,
        timeline: false,
        lru_gen_sysctl: Vec::new(),
    }
}

/// Three passes over a 64 MiB file in a 32 MiB memcg: reclaim all along.
const JOB: &str = "[r]\nfilename=f\nsize=64m\nrw=read\nbs=4k\nloops=3\ninvalidate=0\n";

fn run(sim: Sim, job: &str) -> RunReport {
    let jobs = parse_job_str(job, "t.fio").unwrap();
    sim.run_fio(&jobs)
}

fn stats(r: &RunReport) -> CacheExtStats {
    r.cache_ext.as_ref().expect("a policy ran").stats.clone()
}

fn memcg(r: &RunReport, k: &str) -> u64 {
    r.memcg.get(k).copied().unwrap_or(0)
}

/// How the test policy misbehaves.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// Proposes folio ids that are not in the valid set (and one past
    /// the table).
    Invalid,
    /// Proposes one valid folio per call: far under 80% of the request.
    TooFew,
    /// Proposes CACHE_EXT_EVICT_BATCH + 1 folios.
    TooMany,
    /// Proposes each folio twice (the second is no longer isolatable).
    Twice,
}

struct Bad {
    mode: Mode,
    list: Option<ListId>,
    evicted: Rc<RefCell<u64>>,
    cursor: FolioId,
}

impl CacheExtOps for Bad {
    fn name(&self) -> &str {
        "bad"
    }
    fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String> {
        self.list = Some(cx.list_create().map_err(|e| e.to_string())?);
        Ok(())
    }
    fn folio_added(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        cx.list_add_tail(self.list.unwrap(), id).unwrap();
    }
    fn folio_evicted(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        // Still on the list during the callback.
        assert_eq!(cx.list_of(id), self.list);
        *self.evicted.borrow_mut() += 1;
    }
    fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
        let l = self.list.unwrap();
        match self.mode {
            Mode::Invalid => {
                let slots = cx.nr_folio_slots() as FolioId;
                ev.propose(slots);
                // Frames not in the page cache of this memcg.
                let mut tries = 0;
                while !ev.full() && tries < slots {
                    self.cursor = (self.cursor + 1) % slots;
                    if !cx.folio_valid(self.cursor) {
                        ev.propose(self.cursor);
                    }
                    tries += 1;
                }
            }
            Mode::TooFew => {
                let mut n = 0;
                cx.list_iterate(l, ev, |_, _| {
                    n += 1;
                    if n == 1 {
                        IterAction::Evict
                    } else {
                        IterAction::Stop
                    }
                })
                .unwrap();
            }
            Mode::TooMany => {
                let mut id = 0;
                while ev.nr_proposed() < CACHE_EXT_EVICT_BATCH {
                    if cx.folio_valid(id) {
                        ev.propose(id);
                    }
                    id += 1;
                }
                assert!(!ev.propose(id));
                assert!(ev.aborted());
            }
            Mode::Twice => {
                // Half the array, then each of them again: 32 proposals,
                // 16 of them repeats (the walk does not stop at the
                // request, so it is told where to stop).
                let mut first = Vec::new();
                cx.list_iterate(l, ev, |id, _| {
                    if first.len() * 2 >= CACHE_EXT_EVICT_BATCH {
                        return IterAction::Stop;
                    }
                    first.push(id);
                    IterAction::Evict
                })
                .unwrap();
                for id in first {
                    ev.propose(id);
                }
            }
        }
    }
}

fn run_bad(mode: Mode) -> (RunReport, u64) {
    let evicted = Rc::new(RefCell::new(0));
    let mut sim = Sim::new(cfg(None));
    sim.attach_policy(Box::new(Bad {
        mode,
        list: None,
        evicted: evicted.clone(),
        cursor: 0,
    }))
    .unwrap();
    let r = run(sim, JOB);
    let n = *evicted.borrow();
    (r, n)
}

#[test]
fn invalid_candidates_are_skipped_and_the_kernel_reclaims() {
    let (r, evicted) = run_bad(Mode::Invalid);
    let s = stats(&r);
    assert!(s.evict_calls > 0);
    assert_eq!(
        s.candidates_invalid, s.candidates,
        "every proposal was invalid"
    );
    assert_eq!(s.candidates_reclaimed, 0);
    // Each shrink_lruvec fell through to the kernel's loop, which did the
    // reclaim: the memcg stayed within its limit and the job finished.
    assert!(s.fallthrough > 0);
    assert!(memcg(&r, "pgsteal_file") > 0);
    assert_eq!(r.jobs[0].oom_killed, false);
    // Every removal reached folio_evicted.
    assert_eq!(s.folio_evicted, evicted);
    assert_eq!(s.folio_evicted, memcg(&r, "pgsteal_file"));
}

#[test]
fn too_few_candidates_fall_through_to_the_kernel_loop() {
    let (r, _) = run_bad(Mode::TooFew);
    let s = stats(&r);
    assert!(s.candidates_reclaimed > 0);
    assert_eq!(s.candidates_invalid, 0);
    assert!(s.fallthrough > 0);
    // The kernel reclaimed beyond what the policy picked.
    assert!(memcg(&r, "pgsteal_file") > s.candidates_reclaimed);
}

#[test]
fn more_than_32_candidates_abort_the_call() {
    let (r, _) = run_bad(Mode::TooMany);
    let s = stats(&r);
    assert!(s.evict_calls > 0);
    assert_eq!(s.evict_aborted, s.evict_calls);
    assert_eq!(s.candidates, 0);
    assert_eq!(s.candidates_reclaimed, 0);
    assert!(memcg(&r, "pgsteal_file") > 0);
}

#[test]
fn a_candidate_proposed_twice_is_isolated_once() {
    let (r, _) = run_bad(Mode::Twice);
    let s = stats(&r);
    assert!(s.candidates_invalid > 0);
    assert_eq!(s.candidates_invalid * 2, s.candidates);
    assert!(s.candidates_reclaimed > 0);
}

#[test]
fn a_policy_that_meets_the_request_replaces_the_kernel_loop() {
    let r = run(Sim::new(cfg(Some("fifo"))), JOB);
    let s = stats(&r);
    assert_eq!(s.fallthrough, 0);
    assert_eq!(s.evict_aborted, 0);
    // All file reclaim went through the policy, by cache_ext's
    // reclaim_pages() path, which counts no pgscan or pgsteal.
    assert!(s.candidates_reclaimed > 0);
    assert_eq!(s.candidates_reclaimed, s.folio_evicted);
    assert_eq!(memcg(&r, "pgsteal_file"), 0);
    assert_eq!(memcg(&r, "pgscan_file"), 0);
    assert_eq!(s.folio_added, memcg(&r, "pgpgin") / 4);
}

/// cache_ext's shrink_lruvec() asks for min(32, request) in each of
/// ceil(request / 32) evict_folios() calls: never more than 32, and
/// every call of one request the same size.
#[test]
fn each_call_of_a_request_asks_for_the_same_batch() {
    // The shipped FIFO policy, recording each call's request.
    struct Sizes {
        fifo: Box<dyn CacheExtOps>,
        asked: Rc<RefCell<Vec<u64>>>,
    }
    impl CacheExtOps for Sizes {
        fn name(&self) -> &str {
            "sizes"
        }
        fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String> {
            self.fifo.init(cx)
        }
        fn folio_added(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
            self.fifo.folio_added(cx, id)
        }
        fn folio_evicted(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
            self.fifo.folio_evicted(cx, id)
        }
        fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
            self.asked.borrow_mut().push(ev.request_nr_folios);
            self.fifo.evict_folios(cx, ev)
        }
    }
    let asked = Rc::new(RefCell::new(Vec::new()));
    // A memcg large enough for get_scan_count()'s target to pass 32
    // (a 1 GiB one: its inactive list >> DEF_PRIORITY is about 64).
    let mut c = cfg(None);
    c.mm.ram_bytes = 2 << 30;
    c.memcg_limit = Some(1 << 30);
    c.mm.check_invariants = false;
    let mut sim = Sim::new(c);
    sim.attach_policy(Box::new(Sizes {
        fifo: foliosim::policy::new_policy("fifo").unwrap().unwrap(),
        asked: asked.clone(),
    }))
    .unwrap();
    let r = run(
        sim,
        "[r]\nfilename=f\nsize=1400m\nrw=read\nbs=1m\ninvalidate=0\n",
    );
    let asked = asked.borrow();
    assert!(!asked.is_empty());
    assert!(asked.iter().all(|&n| (1..=32).contains(&n)), "{asked:?}");
    // Requests above 32 come as runs of 32s (the last call too).
    assert!(asked.contains(&32), "{asked:?}");
    assert_eq!(stats(&r).evict_calls, asked.len() as u64);
}

#[test]
fn mru_keeps_part_of_a_looping_scan_that_fifo_loses() {
    // A scan twice the cache: the kernel's LRU and FIFO miss everything,
    // MRU keeps the older part of the file and hits on it. Readahead is
    // off (fadvise random): MRU would otherwise evict read-ahead folios
    // before they are read, as it does in the kernel.
    let job = format!("{JOB}fadvise_hint=random\n");
    let fifo = run(Sim::new(cfg(Some("fifo"))), &job);
    let mru = run(Sim::new(cfg(Some("mru"))), &job);
    let dflt = run(Sim::new(cfg(None)), &job);
    assert_eq!(memcg(&fifo, "pgpgin"), memcg(&dflt, "pgpgin"));
    assert!(memcg(&mru, "pgpgin") < memcg(&fifo, "pgpgin"));
}

#[test]
fn admission_bypass_adds_nothing_to_the_page_cache() {
    let r = run(
        Sim::new(cfg(Some("admit-filter:comm=r"))),
        "[r]\nfilename=f\nsize=8m\nrw=read\nbs=64k\n",
    );
    let s = stats(&r);
    assert!(s.admit_bypassed > 0);
    assert_eq!(s.admit_bypassed, s.admit_calls);
    assert_eq!(s.folio_added, 0);
    assert_eq!(memcg(&r, "file"), 0);
    // The data still came from the device.
    assert_eq!(memcg(&r, "pgpgin"), 8 << 10);
    // Another job name is admitted.
    let r = run(
        Sim::new(cfg(Some("admit-filter:comm=backup"))),
        "[r]\nfilename=f\nsize=8m\nrw=read\nbs=64k\n",
    );
    assert_eq!(stats(&r).admit_bypassed, 0);
    assert_eq!(memcg(&r, "file"), 8 << 20);
}

#[test]
fn truncation_calls_folio_evicted() {
    // unlink=1: fio deletes the file at the end, truncating its cache;
    // without memory pressure nothing is reclaimed before.
    let evicted = Rc::new(RefCell::new(0));
    let mut sim = Sim::new(cfg(None));
    sim.attach_policy(Box::new(Bad {
        mode: Mode::TooFew,
        list: None,
        evicted: evicted.clone(),
        cursor: 0,
    }))
    .unwrap();
    let r = run(sim, "[r]\nfilename=f\nsize=8m\nrw=read\nunlink=1\n");
    let s = stats(&r);
    assert_eq!(s.folio_added, 2048);
    assert_eq!(s.evict_calls, 0);
    assert_eq!(s.folio_evicted, 2048);
    assert_eq!(*evicted.borrow(), 2048);
    assert_eq!(memcg(&r, "file"), 0);
}

#[test]
fn runs_are_deterministic() {
    for p in ["fifo", "mru", "lfu", "s3fifo", "get-scan:scan=r"] {
        let a = serde_json::to_string(&run(Sim::new(cfg(Some(p))), JOB)).unwrap();
        let b = serde_json::to_string(&run(Sim::new(cfg(Some(p))), JOB)).unwrap();
        assert_eq!(a, b, "{p}");
    }
}

#[test]
fn builtin_policies_keep_their_lists_consistent() {
    // check_invariants is on: the model checks itself; here the policies'
    // own lists are checked at the end, and each one evicted something.
    for p in ["fifo", "mru", "lfu", "s3fifo", "get-scan:scan=r"] {
        let r = run(Sim::new(cfg(Some(p))), JOB);
        let s = stats(&r);
        assert!(s.candidates_reclaimed > 0, "{p}: {s:?}");
        assert_eq!(s.candidates_invalid, 0, "{p}");
        assert_eq!(s.evict_aborted, 0, "{p}");
    }
}

#[test]
fn mglru_with_a_policy_is_refused() {
    let mut c = cfg(Some("fifo"));
    c.lru = LruKind::Mglru;
    let e = foliosim::sim::check_policy(&c).unwrap_err();
    assert!(e.contains("classic LRU"), "{e}");
    assert!(foliosim::sim::check_policy(&cfg(Some("nope")))
        .unwrap_err()
        .contains("unknown policy"));
}

mod lists {
    use super::*;
    use foliosim::mm::cache_ext::ListSpace;

    fn space(n: usize) -> ListSpace {
        let mut s = ListSpace::default();
        s.ensure(n, 2);
        for id in 0..n as FolioId {
            s.register(1, id);
        }
        s
    }

    #[test]
    fn at_most_five_lists_per_memcg() {
        let mut s = space(4);
        for i in 0..5 {
            assert_eq!(s.list_create(1), Ok(ListId(i)));
        }
        assert_eq!(s.list_create(1), Err(ListError::TooManyLists));
        // Another memcg has its own five.
        assert_eq!(s.list_create(0), Ok(ListId(0)));
        assert_eq!(s.add(1, ListId(0), 0, false), Ok(()));
        assert_eq!(s.add(0, ListId(0), 0, false), Err(ListError::InvalidFolio));
        assert_eq!(s.add(1, ListId(0), 0, false), Err(ListError::AlreadyOnList));
        assert_eq!(s.del(1, 1), Err(ListError::NotOnList));
        s.check().unwrap();
    }

    #[test]
    fn add_tail_move_del_order() {
        let mut s = space(8);
        let (a, b) = (s.list_create(1).unwrap(), s.list_create(1).unwrap());
        for id in 0..4 {
            s.add(1, a, id, true).unwrap();
        }
        s.add(1, a, 4, false).unwrap();
        s.move_to(1, b, 2, false).unwrap();
        s.move_to(1, a, 0, true).unwrap();
        s.del(1, 3).unwrap();
        let walk = |s: &ListSpace, l| {
            let mut v = Vec::new();
            let mut id = s.head(1, l).unwrap();
            while id != foliosim::mm::folio::NIL {
                v.push(id);
                id = s.next_of(id);
            }
            v
        };
        assert_eq!(walk(&s, a), vec![4, 1, 0]);
        assert_eq!(walk(&s, b), vec![2]);
        assert_eq!(s.len(1, a), Ok(3));
        assert!(s.unregister(1));
        assert_eq!(walk(&s, a), vec![4, 0]);
        s.check().unwrap();
    }

    #[test]
    fn iterate_visits_at_most_4096_nodes() {
        let mut sim = Sim::new(cfg(None));
        let seen = Rc::new(RefCell::new(Vec::new()));
        struct Count(Option<ListId>, Rc<RefCell<Vec<usize>>>);
        impl CacheExtOps for Count {
            fn name(&self) -> &str {
                "count"
            }
            fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String> {
                self.0 = Some(cx.list_create().unwrap());
                Ok(())
            }
            fn folio_added(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
                cx.list_add_tail(self.0.unwrap(), id).unwrap();
            }
            fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
                let l = self.0.unwrap();
                let len = cx.list_len(l).unwrap() as usize;
                let n = cx.list_iterate(l, ev, |_, _| IterAction::Continue).unwrap();
                self.1.borrow_mut().push(n);
                // The kfunc tests `iter > max_iter` before each callback:
                // max_iter + 1 nodes at most.
                assert_eq!(n, len.min(CACHE_EXT_ITERATE_MAX + 1));
                // Sampling with too large a sample proposes nothing.
                assert_eq!(cx.list_sample(l, ev, 4096, |_, _| 0).unwrap(), 0);
                assert_eq!(ev.nr_proposed(), 0);
                // Sampling: the lowest score of each group of 4.
                let got = cx
                    .list_sample(
                        l,
                        ev,
                        4,
                        |id, f| if f.test(pg::LRU) { id as u64 } else { u64::MAX },
                    )
                    .unwrap();
                assert_eq!(got as u64, ev.request_nr_folios);
            }
        }
        sim.attach_policy(Box::new(Count(None, seen.clone())))
            .unwrap();
        run(sim, JOB);
        let seen = seen.borrow();
        assert!(!seen.is_empty());
        assert!(seen.iter().all(|&n| n <= CACHE_EXT_ITERATE_MAX + 1));
        assert!(
            seen.iter().any(|&n| n == CACHE_EXT_ITERATE_MAX + 1),
            "lists longer than 4097 were walked"
        );
    }
}

/// Proposes the most recently added folios first (the list's head), with
/// no skipping: folios still being read in are among them.
struct Newest {
    list: Option<ListId>,
    /// Proposals a policy saw locked and !uptodate (read in flight).
    saw_in_flight: Rc<RefCell<u64>>,
    /// Folios evicted while their read was in flight (must stay 0).
    evicted_in_flight: Rc<RefCell<u64>>,
}

impl CacheExtOps for Newest {
    fn name(&self) -> &str {
        "newest"
    }
    fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String> {
        self.list = Some(cx.list_create().map_err(|e| e.to_string())?);
        Ok(())
    }
    fn folio_added(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        cx.list_add(self.list.unwrap(), id).unwrap();
    }
    fn folio_evicted(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        if cx.folio_test(id, pg::LOCKED) {
            *self.evicted_in_flight.borrow_mut() += 1;
        }
    }
    fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
        let saw = self.saw_in_flight.clone();
        cx.list_iterate(self.list.unwrap(), ev, |_, f| {
            if f.test(pg::LOCKED) && !f.test(pg::UPTODATE) {
                *saw.borrow_mut() += 1;
            }
            IterAction::Evict
        })
        .unwrap();
    }
}

#[test]
fn folios_under_read_are_locked_not_uptodate_and_not_reclaimed() {
    // Sequential reads with readahead: the newest folios are often still
    // being read when reclaim runs. The policy sees them locked and
    // !uptodate (PG_uptodate comes with folio_end_read()), and when it
    // proposes them, folio_trylock() fails in shrink_folio_list(): they
    // go back to the LRU instead of being evicted.
    let saw = Rc::new(RefCell::new(0));
    let bad = Rc::new(RefCell::new(0));
    let mut sim = Sim::new(cfg(None));
    sim.attach_policy(Box::new(Newest {
        list: None,
        saw_in_flight: saw.clone(),
        evicted_in_flight: bad.clone(),
    }))
    .unwrap();
    let r = run(sim, JOB);
    assert!(stats(&r).folio_evicted > 0);
    assert!(*saw.borrow() > 0, "no proposal was under read I/O");
    assert_eq!(*bad.borrow(), 0, "folios evicted while being read");
}

/// A policy that fails (as a Python one raising) after `after` calls of
/// folio_added.
struct Failing {
    after: u64,
    calls: Rc<RefCell<u64>>,
    init_error: bool,
}

impl CacheExtOps for Failing {
    fn name(&self) -> &str {
        "failing"
    }
    fn init(&mut self, _: &mut CacheExtCtx) -> Result<(), String> {
        match self.init_error {
            true => Err("no lists today".into()),
            false => Ok(()),
        }
    }
    fn folio_added(&mut self, cx: &mut CacheExtCtx, _: FolioId) {
        *self.calls.borrow_mut() += 1;
        if *self.calls.borrow() == self.after {
            cx.fail("policy failing: folio_added: broke".into());
        }
    }
    fn evict_folios(&mut self, _: &mut CacheExtCtx, _: &mut EvictionCtx) {}
}

/// A policy's failure stops the run: the policy is called no more, the
/// fio loop ends and the report carries the first error; an init failure
/// is refused at attach.
#[test]
fn a_failing_policy_stops_the_run_with_its_error() {
    let calls = Rc::new(RefCell::new(0));
    let mut sim = Sim::new(cfg(None));
    sim.attach_policy(Box::new(Failing {
        after: 100,
        calls: calls.clone(),
        init_error: false,
    }))
    .unwrap();
    let r = run(sim, JOB);
    assert_eq!(
        r.policy_error.as_deref(),
        Some("policy failing: folio_added: broke")
    );
    assert_eq!(*calls.borrow(), 100, "no callback after the failure");
    // The job stopped early: three passes of 64 MiB were not read.
    assert!(
        r.jobs[0].read.io_bytes < 3 * (64 << 20),
        "{}",
        r.jobs[0].read.io_bytes
    );
    let ok = run(Sim::new(cfg(Some("fifo"))), JOB);
    assert_eq!(ok.policy_error, None);
    assert_eq!(ok.jobs[0].read.io_bytes, 3 * (64 << 20));

    let mut sim = Sim::new(cfg(None));
    let e = sim
        .attach_policy(Box::new(Failing {
            after: 0,
            calls: Rc::new(RefCell::new(0)),
            init_error: true,
        }))
        .unwrap_err();
    assert_eq!(e, "policy failing: init: no lists today");
}

/// get-scan's `scan_min` (get_scan.bpf.c's absolute 5,000, scaled for a
/// smaller cgroup): in a 16 MiB memcg the scan list never reaches 5,000
/// folios, so the default samples the GET job's folios; with scan_min=1
/// eviction takes the scan's, the GET job's 4 MiB stays cached and it
/// completes far more reads. Bad values are refused, and the
/// reproduction's spec is the scaled one.
#[test]
fn get_scan_threshold_is_a_key() {
    const MIX: &str = "[global]\ntime_based\nruntime=250ms\nbs=4k\ninvalidate=0\n\
                       [g]\nfilename=hot\nsize=4m\nrw=randread\n\
                       [r]\nfilename=big\nsize=64m\nrw=read\n";
    let get_ios = |p: &str| {
        let mut c = cfg(Some(p));
        c.memcg_limit = Some(16 << 20);
        let r = run(Sim::new(c), MIX);
        assert!(memcg(&r, "workingset_refault_file") > 0, "{p}: reclaim ran");
        r.jobs
            .iter()
            .find(|j| j.jobname == "g")
            .unwrap()
            .read
            .total_ios
    };
    let default = get_ios("get-scan:scan=r");
    let scaled = get_ios("get-scan:scan=r,scan_min=1");
    // Far more (7.4x; 10x before the group was charged for the big
    // file's xarray nodes, about 0.5 MiB of its 16).
    assert!(
        scaled > 5 * default,
        "scan_min=1: {scaled} GET reads, default {default}"
    );
    for (spec, want) in [
        ("get-scan:scan_min=0", "scan_min: 0 is not >= 1"),
        ("get-scan:scan_min=x", "scan_min: not a number"),
    ] {
        let e = foliosim::policy::new_policy(spec).err().expect(spec);
        assert!(e.contains(want), "{spec}: {e}");
    }
    use foliosim::reproduce::cache_ext;
    assert_eq!(cache_ext::GET_SCAN_SCALED, "get-scan:scan_min=13");
    assert!(cache_ext::available("get-scan", "get-scan"));
}

/// A job that writes as it reads: dirty and in-flight folios reach the
/// lists' heads.
const MIXED: &str = "[m]\nfilename=f\nsize=64m\nrw=randrw\nrwmixread=50\nbs=4k\nnumjobs=1\nio_size=96m\ninvalidate=0\n";

#[test]
fn fifo_passes_over_what_the_kernel_cannot_reclaim_and_get_scan_does_not() {
    // fifo.bpf.c's iterate callback continues past folios not uptodate,
    // off the LRU, dirty or under writeback: every candidate it proposes
    // is reclaimed. get_scan.bpf.c's score is the access count alone, so
    // it proposes such folios too and the kernel keeps them.
    let fifo = stats(&run(Sim::new(cfg(Some("fifo"))), MIXED));
    assert!(fifo.candidates > 1000, "{fifo:?}");
    assert_eq!(fifo.candidates, fifo.candidates_reclaimed, "{fifo:?}");
    let gs = stats(&run(
        Sim::new(cfg(Some("get-scan:scan=m,scan_min=1"))),
        MIXED,
    ));
    assert!(gs.candidates > 1000, "{gs:?}");
    assert!(gs.candidates_reclaimed < gs.candidates, "{gs:?}");
}

/// Checks, at every evict_folios() call, cache_ext_list_iterate()'s
/// semantics: a plain Evict leaves its node in place, EvictTail moves it,
/// and the walk fills the eviction array whatever the request.
struct IterSemantics {
    list: Option<ListId>,
    /// (request, proposed) of each call.
    calls: Rc<RefCell<Vec<(u64, usize)>>>,
    tail: bool,
}

fn head_of(cx: &mut CacheExtCtx, l: ListId) -> Option<FolioId> {
    let mut head = None;
    let mut ev = EvictionCtx::new(32);
    cx.list_iterate(l, &mut ev, |id, _| {
        head = Some(id);
        IterAction::Stop
    })
    .unwrap();
    head
}

impl CacheExtOps for IterSemantics {
    fn name(&self) -> &str {
        "iter-semantics"
    }
    fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String> {
        self.list = Some(cx.list_create().map_err(|e| e.to_string())?);
        Ok(())
    }
    fn folio_added(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        cx.list_add_tail(self.list.unwrap(), id).unwrap();
    }
    fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
        let l = self.list.unwrap();
        let before = head_of(cx, l);
        let tail = self.tail;
        cx.list_iterate(l, ev, |_, _| {
            if tail {
                IterAction::EvictTail(l)
            } else {
                IterAction::Evict
            }
        })
        .unwrap();
        let after = head_of(cx, l);
        let len = cx.list_len(l).unwrap() as usize;
        if tail && len > CACHE_EXT_EVICT_BATCH {
            assert_ne!(before, after, "EvictTail moved the proposals to the tail");
        } else if !tail {
            assert_eq!(before, after, "Evict leaves the proposals in place");
        }
        self.calls
            .borrow_mut()
            .push((ev.request_nr_folios, ev.nr_proposed()));
    }
}

#[test]
fn iterate_fills_the_array_whatever_the_request_and_moves_only_when_told() {
    for tail in [false, true] {
        let calls = Rc::new(RefCell::new(Vec::new()));
        let mut sim = Sim::new(cfg(None));
        sim.attach_policy(Box::new(IterSemantics {
            list: None,
            calls: calls.clone(),
            tail,
        }))
        .unwrap();
        let r = run(sim, JOB);
        let calls = calls.borrow();
        // Every call proposed a full array (the list is long), the ones
        // asking for fewer than 32 too.
        assert!(
            calls.iter().all(|&(_, n)| n == CACHE_EXT_EVICT_BATCH),
            "{calls:?}"
        );
        assert!(
            calls
                .iter()
                .any(|&(req, _)| req < CACHE_EXT_EVICT_BATCH as u64),
            "some requests were under 32: {calls:?}"
        );
        // What was proposed was reclaimed: the kernel reclaims every
        // candidate, not just the request.
        let s = stats(&r);
        assert_eq!(
            s.candidates,
            s.candidates_reclaimed + s.candidates_invalid,
            "{s:?}"
        );
        assert!(s.candidates_reclaimed > 0, "{s:?}");
    }
}
