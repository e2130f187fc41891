//! Memory cgroup hierarchy, protection, memory.high and the OOM killer.
//! Sizes are pages; the machine is large enough that only memcg limits
//! reclaim.

use foliosim::mm::memcontrol::{MemcgEvent, MemcgId, MemcgKnobs, HZ, MEMCG_MAX_HIGH_DELAY_JIFFIES};
use foliosim::mm::mmap::{MmId, MM_ANONPAGES};
use foliosim::mm::vmscan::classic::ClassicLru;
use foliosim::mm::vmscan::lru_gen::LruGen;
use foliosim::mm::vmscan::ReclaimPolicy;
use foliosim::mm::vmstat::Item;
use foliosim::mm::{Kernel, MmConfig, SwapKind, PAGE_SIZE};

fn config(swap: bool) -> MmConfig {
    MmConfig {
        ram_bytes: 256 << 20,
        reserved_bytes: 8 << 20,
        swap: if swap { SwapKind::Zram } else { SwapKind::None },
        swap_bytes: if swap { 128 << 20 } else { 0 },
        check_invariants: true,
        ..MmConfig::default()
    }
}

fn classic(swap: bool) -> Kernel<ClassicLru> {
    Kernel::new(config(swap), ClassicLru::new())
}

fn knobs(max: Option<u64>) -> MemcgKnobs {
    MemcgKnobs {
        max,
        ..Default::default()
    }
}

/// A process in `memcg` with one anonymous VMA of `pages`.
fn process<P: ReclaimPolicy>(
    k: &mut Kernel<P>,
    memcg: MemcgId,
    adj: i32,
    pages: u64,
) -> (MmId, u32) {
    let mm = k.mm_alloc(memcg, adj);
    let space = k.mmap_anon(mm, pages * PAGE_SIZE);
    (mm, space)
}

/// The task `mm` writes pages [from, to) of its VMA, as the driver runs
/// it (current set, memory.high paid on return to user). Returns how many
/// accesses succeeded before the first failure.
fn touch<P: ReclaimPolicy>(k: &mut Kernel<P>, mm: MmId, space: u32, from: u64, to: u64) -> u64 {
    k.core.current = mm;
    let memcg = k.core.mms[mm as usize].memcg;
    let mut done = 0;
    for i in from..to {
        if !k.anon_access(space, i, memcg, true) {
            break;
        }
        k.mem_cgroup_handle_over_high();
        done += 1;
    }
    k.core.current = foliosim::mm::mmap::NO_MM;
    done
}

fn ev(k: &Kernel<impl ReclaimPolicy>, m: MemcgId, e: MemcgEvent) -> u64 {
    k.core.memcgs[m as usize].events_local[e as usize]
}

#[test]
fn child_usage_counts_in_parent_and_peaks_per_level() {
    let mut k = classic(true);
    let p = k.add_memcg_child(0, "p", knobs(None));
    let a = k.add_memcg_child(p, "p/a", knobs(None));
    let b = k.add_memcg_child(p, "p/b", knobs(None));
    let (ma, sa) = process(&mut k, a, 0, 300);
    let (mb, sb) = process(&mut k, b, 0, 300);
    assert_eq!(touch(&mut k, ma, sa, 0, 200), 200);
    assert_eq!(touch(&mut k, mb, sb, 0, 100), 100);
    let m = &k.core.memcgs;
    assert_eq!(
        m[p as usize].usage,
        m[a as usize].usage + m[b as usize].usage
    );
    // Charged in batches: each child's usage is its pages, its region's
    // page table and its stock.
    for (g, pages) in [(a, 200), (b, 100)] {
        let g = &m[g as usize];
        assert_eq!(g.nr_pagetables, 1);
        assert_eq!(g.usage - g.stock - g.nr_pagetables, pages);
    }
    k.exit_mm(ma);
    let m = &k.core.memcgs;
    assert_eq!(
        m[p as usize].usage,
        m[a as usize].usage + m[b as usize].usage
    );
    assert_eq!(
        m[a as usize].usage, m[a as usize].stock,
        "a's pages uncharged"
    );
    // Peaks stay where each level was highest.
    assert!(m[a as usize].watermark >= 200);
    assert!(m[p as usize].watermark >= 300);
    assert!(m[p as usize].watermark > m[p as usize].usage);
    k.check_invariants().unwrap();
}

#[test]
fn parent_limit_reclaims_both_children() {
    let mut k = classic(true);
    let p = k.add_memcg_child(0, "p", knobs(Some(300)));
    let a = k.add_memcg_child(p, "p/a", knobs(None));
    let b = k.add_memcg_child(p, "p/b", knobs(None));
    let (ma, sa) = process(&mut k, a, 0, 200);
    let (mb, sb) = process(&mut k, b, 0, 400);
    assert_eq!(touch(&mut k, ma, sa, 0, 200), 200);
    assert_eq!(touch(&mut k, mb, sb, 0, 400), 400);
    let m = &k.core.memcgs;
    assert!(m[p as usize].usage <= 300);
    // The parent is the level over its limit: its max event, not the
    // children's.
    assert!(ev(&k, p, MemcgEvent::MEMCG_MAX) > 0);
    assert_eq!(ev(&k, b, MemcgEvent::MEMCG_MAX), 0);
    // v1 failcnt: refused charges, counted at the level that refused.
    assert!(m[p as usize].failcnt >= ev(&k, p, MemcgEvent::MEMCG_MAX));
    assert_eq!(m[a as usize].failcnt + m[b as usize].failcnt, 0);
    // Neither child has a limit, yet both were swapped out from.
    assert!(m[a as usize].stat.get(Item::PSWPOUT) > 0, "a reclaimed");
    assert!(m[b as usize].stat.get(Item::PSWPOUT) > 0, "b reclaimed");
    assert!(m[a as usize].watermark >= 200 && m[b as usize].watermark > 100);
    k.check_invariants().unwrap();
}

#[test]
fn memory_low_child_keeps_its_pages_while_sibling_is_reclaimed() {
    let mut k = classic(true);
    let p = k.add_memcg_child(0, "p", knobs(Some(400)));
    let a = k.add_memcg_child(
        p,
        "p/a",
        MemcgKnobs {
            low: Some(250),
            ..Default::default()
        },
    );
    let b = k.add_memcg_child(p, "p/b", knobs(None));
    let (ma, sa) = process(&mut k, a, 0, 200);
    let (mb, sb) = process(&mut k, b, 0, 500);
    assert_eq!(touch(&mut k, ma, sa, 0, 200), 200);
    assert_eq!(touch(&mut k, mb, sb, 0, 500), 500);
    let m = &k.core.memcgs;
    assert_eq!(
        m[a as usize].stat.get(Item::PSWPOUT),
        0,
        "a is below memory.low"
    );
    assert_eq!(k.core.mms[ma as usize].rss[MM_ANONPAGES], 200);
    assert!(m[b as usize].stat.get(Item::PSWPOUT) >= 300);
    assert_eq!(
        ev(&k, a, MemcgEvent::MEMCG_LOW),
        0,
        "protection never breached"
    );
    assert!(m[a as usize].elow >= 200);
}

#[test]
fn memory_low_is_breached_when_nothing_else_is_reclaimable() {
    let mut k = classic(true);
    let p = k.add_memcg_child(0, "p", knobs(Some(300)));
    let a = k.add_memcg_child(
        p,
        "p/a",
        MemcgKnobs {
            low: Some(300),
            ..Default::default()
        },
    );
    let (ma, sa) = process(&mut k, a, 0, 400);
    assert_eq!(touch(&mut k, ma, sa, 0, 400), 400);
    // Every pass skipped a for memory.low; the retry reclaims it anyway.
    assert!(ev(&k, a, MemcgEvent::MEMCG_LOW) > 0);
    assert!(k.core.memcgs[a as usize].stat.get(Item::PSWPOUT) >= 100);
    assert!(k.core.memcgs[p as usize].usage <= 300);
}

#[test]
fn memory_min_protects_even_without_other_pages_to_reclaim() {
    let mut k = classic(true);
    let p = k.add_memcg_child(0, "p", knobs(Some(300)));
    let a = k.add_memcg_child(
        p,
        "p/a",
        MemcgKnobs {
            min: Some(300),
            ..Default::default()
        },
    );
    let (ma, sa) = process(&mut k, a, 0, 400);
    // Nothing reclaimable: the OOM killer takes the only task.
    let done = touch(&mut k, ma, sa, 0, 400);
    assert!((290..400).contains(&done), "{done}");
    assert_eq!(k.core.memcgs[a as usize].stat.get(Item::PSWPOUT), 0);
    assert!(k.core.mms[ma as usize].oom_killed);
    assert_eq!(ev(&k, p, MemcgEvent::MEMCG_OOM), 1);
}

#[test]
fn memory_high_throttles_the_task_and_counts_high_events() {
    // No swap: reclaim cannot bring anonymous usage back under memory.high,
    // so the task sleeps the clamped penalty.
    let mut k = classic(false);
    let h = k.add_memcg_child(
        0,
        "h",
        MemcgKnobs {
            high: Some(100),
            ..Default::default()
        },
    );
    let free = k.add_memcg_child(0, "free", knobs(None));
    let (mh, sh) = process(&mut k, h, 0, 300);
    let (mf, sf) = process(&mut k, free, 0, 300);
    let t0 = k.core.now;
    assert_eq!(touch(&mut k, mf, sf, 0, 300), 300);
    let unthrottled = k.core.now - t0;
    let t1 = k.core.now;
    assert_eq!(
        touch(&mut k, mh, sh, 0, 300),
        300,
        "memory.high never fails a charge"
    );
    let throttled = k.core.now - t1;
    let m = &k.core.memcgs[h as usize];
    let max_sleep = MEMCG_MAX_HIGH_DELAY_JIFFIES * 1_000_000_000 / HZ;
    assert!(
        m.high_throttle_ns >= max_sleep,
        "slept {}",
        m.high_throttle_ns
    );
    assert!(throttled >= unthrottled + m.high_throttle_ns);
    assert!(ev(&k, h, MemcgEvent::MEMCG_HIGH) > 0);
    assert_eq!(k.core.memcgs[free as usize].high_throttle_ns, 0);
    assert_eq!(ev(&k, free, MemcgEvent::MEMCG_HIGH), 0);
}

#[test]
fn memory_high_reclaim_keeps_usage_near_high_with_swap() {
    let mut k = classic(true);
    let h = k.add_memcg_child(
        0,
        "h",
        MemcgKnobs {
            high: Some(200),
            ..Default::default()
        },
    );
    let (mh, sh) = process(&mut k, h, 0, 600);
    assert_eq!(touch(&mut k, mh, sh, 0, 600), 600);
    let m = &k.core.memcgs[h as usize];
    // Overage is paid off in batches: at most a couple of batches over.
    assert!(m.usage <= 200 + 2 * 64, "usage {}", m.usage);
    assert!(m.stat.get(Item::PSWPOUT) >= 600 - 200 - 2 * 64);
    assert!(ev(&k, h, MemcgEvent::MEMCG_HIGH) > 0);
    // Reclaim kept up: no penalty sleep.
    assert_eq!(m.high_throttle_ns, 0);
}

/// p (max `limit`, no swap) with children a and b.
fn oom_setup(limit: u64, group_a: bool) -> (Kernel<ClassicLru>, MemcgId, MemcgId, MemcgId) {
    let mut k = classic(false);
    let p = k.add_memcg_child(0, "p", knobs(Some(limit)));
    let a = k.add_memcg_child(
        p,
        "p/a",
        MemcgKnobs {
            oom_group: group_a,
            ..Default::default()
        },
    );
    let b = k.add_memcg_child(p, "p/b", knobs(None));
    (k, p, a, b)
}

#[test]
fn oom_kills_the_largest_task_in_the_domain_and_frees_it() {
    let (mut k, p, a, b) = oom_setup(300, false);
    let (m1, s1) = process(&mut k, a, 0, 50);
    let (m2, s2) = process(&mut k, b, 0, 150);
    let (m3, s3) = process(&mut k, a, 0, 200);
    assert_eq!(touch(&mut k, m1, s1, 0, 50), 50);
    assert_eq!(touch(&mut k, m2, s2, 0, 150), 150);
    // m3 outgrows the parent's limit at ~100 pages: m2 (150) is larger.
    assert_eq!(touch(&mut k, m3, s3, 0, 120), 120, "the charger survives");
    let mms = &k.core.mms;
    assert!(mms[m2 as usize].oom_killed && mms[m2 as usize].exited);
    assert_eq!(
        mms[m2 as usize].rss[MM_ANONPAGES], 0,
        "victim's memory freed"
    );
    assert!(!mms[m1 as usize].oom_killed && !mms[m3 as usize].oom_killed);
    assert_eq!(k.core.vm.get(Item::OOM_KILL), 1);
    assert_eq!(ev(&k, p, MemcgEvent::MEMCG_OOM), 1);
    assert_eq!(ev(&k, b, MemcgEvent::MEMCG_OOM_KILL), 1);
    // memory.events is hierarchical: the kill shows in p too.
    let pm = &k.core.memcgs[p as usize];
    assert_eq!(pm.events[MemcgEvent::MEMCG_OOM_KILL as usize], 1);
    assert_eq!(pm.events_local[MemcgEvent::MEMCG_OOM_KILL as usize], 0);
    k.check_invariants().unwrap();
}

#[test]
fn oom_score_adj_min_is_never_chosen() {
    let (mut k, _p, a, b) = oom_setup(300, false);
    let (m2, s2) = process(&mut k, b, -1000, 150);
    let (m3, s3) = process(&mut k, a, 0, 400);
    assert_eq!(touch(&mut k, m2, s2, 0, 150), 150);
    let done = touch(&mut k, m3, s3, 0, 400);
    assert!(done < 160, "the charger is the victim: {done}");
    assert!(k.core.mms[m3 as usize].oom_killed);
    assert!(!k.core.mms[m2 as usize].oom_killed);
    assert_eq!(k.core.mms[m2 as usize].rss[MM_ANONPAGES], 150);
}

#[test]
fn oom_score_adj_shifts_by_thousandths_of_the_limit() {
    // totalpages 3000: adj 500 adds 500 * 3 = 1500 points, making a
    // 100-page task worse than a 1500-page one (1600 > 1500).
    let (mut k, _p, a, b) = oom_setup(3000, false);
    let (small, ss) = process(&mut k, a, 500, 100);
    let (big, sb) = process(&mut k, b, 0, 1500);
    let (m3, s3) = process(&mut k, b, 0, 1500);
    assert_eq!(touch(&mut k, small, ss, 0, 100), 100);
    assert_eq!(touch(&mut k, big, sb, 0, 1500), 1500);
    let done = touch(&mut k, m3, s3, 0, 1450);
    assert_eq!(done, 1450);
    assert!(k.core.mms[small as usize].oom_killed);
    assert!(!k.core.mms[big as usize].oom_killed);
    // A 100-page limit gives adj no weight (100 / 1000 == 0): rss and
    // the page tables of its three 2 MiB regions.
    assert_eq!(k.core.mms[big as usize].nr_ptes, 3);
    assert_eq!(k.core.oom_badness(big, 999), Some(1500 + 3));
}

#[test]
fn oom_ties_go_to_the_last_task_visited() {
    let (mut k, _p, a, _b) = oom_setup(300, false);
    let (m1, s1) = process(&mut k, a, 0, 100);
    let (m2, s2) = process(&mut k, a, 0, 100);
    assert_eq!(touch(&mut k, m1, s1, 0, 100), 100);
    assert_eq!(touch(&mut k, m2, s2, 0, 100), 100);
    let p = k.core.memcgs[a as usize].parent;
    let total = k.core.mem_cgroup_get_max(p);
    assert_eq!(k.core.select_bad_process(Some(p), total), Some(m2));
}

#[test]
fn oom_group_kills_every_task_of_the_group_but_adj_min() {
    let (mut k, p, a, b) = oom_setup(300, true);
    let (m1, s1) = process(&mut k, a, 0, 150);
    let (m4, s4) = process(&mut k, a, -1000, 20);
    let (m5, s5) = process(&mut k, a, 0, 10);
    let (m2, s2) = process(&mut k, b, 0, 60);
    assert_eq!(touch(&mut k, m1, s1, 0, 150), 150);
    assert_eq!(touch(&mut k, m4, s4, 0, 20), 20);
    assert_eq!(touch(&mut k, m5, s5, 0, 10), 10);
    assert_eq!(touch(&mut k, m2, s2, 0, 60), 60);
    let (m3, s3) = process(&mut k, b, 0, 100);
    assert_eq!(touch(&mut k, m3, s3, 0, 100), 100);
    let mms = &k.core.mms;
    assert!(mms[m1 as usize].oom_killed && mms[m5 as usize].oom_killed);
    assert!(
        !mms[m4 as usize].oom_killed,
        "OOM_SCORE_ADJ_MIN survives its group"
    );
    assert!(!mms[m2 as usize].oom_killed && !mms[m3 as usize].oom_killed);
    assert_eq!(ev(&k, a, MemcgEvent::MEMCG_OOM_GROUP_KILL), 1);
    assert_eq!(ev(&k, p, MemcgEvent::MEMCG_OOM_GROUP_KILL), 0);
    // The victim is killed again by the group walk before it is reaped.
    assert_eq!(k.core.vm.get(Item::OOM_KILL), 3);
    k.check_invariants().unwrap();
}

#[test]
fn oom_kill_disable_makes_the_charger_wait() {
    let mut k = classic(false);
    let m = k.add_memcg_child(
        0,
        "w",
        MemcgKnobs {
            max: Some(100),
            oom_kill_disable: true,
            ..Default::default()
        },
    );
    let (m1, s1) = process(&mut k, m, 0, 200);
    let done = touch(&mut k, m1, s1, 0, 200);
    // The region's page table takes one of the 100 pages.
    assert_eq!(done, 99, "charges fail at the limit");
    assert_eq!(k.core.memcg_in_oom, Some(m));
    assert_eq!(k.core.memcgs[m as usize].under_oom, 1);
    assert_eq!(
        k.core.memcgs[m as usize].memcg1_oom_control(),
        [("oom_kill_disable", 1), ("under_oom", 1), ("oom_kill", 0)]
    );
    assert!(!k.core.mms[m1 as usize].oom_killed);
    assert_eq!(k.core.vm.get(Item::OOM_KILL), 0);
    assert!(!k.mem_cgroup_oom_synchronize(), "no room yet");
    // Raising the limit lets the task go on.
    k.mem_cgroup_set_knobs(
        m,
        MemcgKnobs {
            max: Some(300),
            oom_kill_disable: true,
            ..Default::default()
        },
    );
    assert!(k.mem_cgroup_oom_synchronize());
    assert_eq!(k.core.memcgs[m as usize].under_oom, 0);
    assert_eq!(touch(&mut k, m1, s1, done, 200), 200 - done);
}

#[test]
fn lowering_memory_max_reclaims_then_ooms() {
    let mut k = classic(false);
    let m = k.add_memcg_child(0, "m", knobs(None));
    let (m1, s1) = process(&mut k, m, 0, 200);
    assert_eq!(touch(&mut k, m1, s1, 0, 200), 200);
    k.mem_cgroup_set_knobs(m, knobs(Some(100)));
    assert!(k.core.mms[m1 as usize].oom_killed);
    assert!(k.core.memcgs[m as usize].usage <= 100);
    assert_eq!(ev(&k, m, MemcgEvent::MEMCG_OOM), 1);
}

#[test]
fn global_oom_chooses_among_all_tasks() {
    let cfg = MmConfig {
        ram_bytes: 16 << 20,
        reserved_bytes: 4 << 20,
        check_invariants: true,
        ..MmConfig::default()
    };
    let mut k = Kernel::new(cfg, ClassicLru::new());
    let a = k.add_memcg_child(0, "a", knobs(None));
    let (m1, s1) = process(&mut k, a, 0, 4096);
    let (m2, s2) = process(&mut k, 0, 0, 4096);
    assert_eq!(touch(&mut k, m2, s2, 0, 1000), 1000);
    // m1 grows past all RAM (3072 pages): it is the largest, so it dies.
    let done = touch(&mut k, m1, s1, 0, 4096);
    assert!(done < 3072);
    assert!(k.core.mms[m1 as usize].oom_killed);
    assert!(!k.core.mms[m2 as usize].oom_killed);
    assert_eq!(k.core.vm.get(Item::OOM_KILL), 1);
    assert_eq!(ev(&k, a, MemcgEvent::MEMCG_OOM_KILL), 1);
}

#[test]
fn per_memcg_swappiness_zero_never_swaps_under_limit_reclaim() {
    // Anonymous memory only, over the parent's limit: swappiness 0 leaves
    // limit reclaim nothing (SCAN_FILE) and the task is OOM-killed.
    fn run(swappiness: u32) -> (u64, bool) {
        let mut k = classic(true);
        let m = k.add_memcg_child(
            0,
            "m",
            MemcgKnobs {
                max: Some(300),
                swappiness: Some(swappiness),
                ..Default::default()
            },
        );
        let child = k.add_memcg_child(m, "m/c", knobs(None));
        // v1: a child takes its parent's swappiness at creation.
        assert_eq!(k.core.mem_cgroup_swappiness(child), swappiness);
        let (mm, s) = process(&mut k, child, 0, 400);
        touch(&mut k, mm, s, 0, 400);
        let st = &k.core.memcgs[child as usize].stat;
        (st.get(Item::PSWPOUT), k.core.mms[mm as usize].oom_killed)
    }
    assert_eq!(run(0), (0, true));
    let (out, killed) = run(60);
    assert!(out >= 100 && !killed, "swappiness 60 swaps: {out} {killed}");
}

#[test]
fn mglru_limit_reclaim_walks_the_subtree_and_respects_low() {
    let mut k = Kernel::new(config(true), LruGen::new());
    let p = k.add_memcg_child(0, "p", knobs(Some(400)));
    let a = k.add_memcg_child(
        p,
        "p/a",
        MemcgKnobs {
            low: Some(250),
            ..Default::default()
        },
    );
    let b = k.add_memcg_child(p, "p/b", knobs(None));
    let c = k.add_memcg_child(p, "p/c", knobs(None));
    let (ma, sa) = process(&mut k, a, 0, 200);
    let (mc, sc) = process(&mut k, c, 0, 100);
    let (mb, sb) = process(&mut k, b, 0, 500);
    assert_eq!(touch(&mut k, ma, sa, 0, 200), 200);
    assert_eq!(touch(&mut k, mc, sc, 0, 100), 100);
    assert_eq!(touch(&mut k, mb, sb, 0, 500), 500);
    let m = &k.core.memcgs;
    assert!(m[p as usize].usage <= 400);
    assert_eq!(m[a as usize].stat.get(Item::PSWPOUT), 0);
    assert!(m[b as usize].stat.get(Item::PSWPOUT) > 0);
    assert!(
        m[c as usize].stat.get(Item::PSWPOUT) > 0,
        "c reclaimed for its parent"
    );
    k.check_invariants().unwrap();
}

#[test]
fn same_inputs_same_state() {
    fn run() -> String {
        let mut k = classic(true);
        let p = k.add_memcg_child(0, "p", knobs(Some(350)));
        let a = k.add_memcg_child(
            p,
            "p/a",
            MemcgKnobs {
                low: Some(100),
                high: Some(150),
                ..Default::default()
            },
        );
        let b = k.add_memcg_child(p, "p/b", knobs(None));
        let (ma, sa) = process(&mut k, a, 0, 300);
        let (mb, sb) = process(&mut k, b, 0, 300);
        for round in 0..3 {
            touch(&mut k, ma, sa, round * 100, round * 100 + 100);
            touch(&mut k, mb, sb, round * 100, round * 100 + 100);
        }
        let m = &k.core.memcgs;
        format!(
            "{} {:?} {:?} {:?} {:?} {:?}",
            k.core.now,
            m[a as usize].events,
            m[b as usize].stat.0,
            m[a as usize].stat.0,
            k.core.vm.0,
            k.core.mms.iter().map(|m| m.rss).collect::<Vec<_>>()
        )
    }
    let first = run();
    assert_eq!(first, run());
}

mod random {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        /// Task i writes `n` pages from `at`.
        Touch(usize, u64, u64),
        /// Task i exits.
        Exit(usize),
        /// New memory.max for memcg i (a..c), in pages; 0 = max.
        Max(usize, u64),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0usize..4, 0u64..400, 1u64..120).prop_map(|(i, at, n)| Op::Touch(i, at, n)),
            1 => (0usize..4).prop_map(Op::Exit),
            1 => (0usize..3, 0u64..500).prop_map(|(i, m)| Op::Max(i, m)),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

        /// A three-level tree (p / {a, a/x, b}) with random limits,
        /// protection, memory.high and oom.group; after every operation
        /// the invariants hold (each level's usage is its pages plus its
        /// children's, memory.events sums, within every limit).
        #[test]
        fn invariants_hold_in_random_hierarchies(
            ops in proptest::collection::vec(op(), 1..60),
            plimit in 200u64..700,
            low in 0u64..300,
            min in 0u64..100,
            high in 50u64..600,
            group in any::<bool>(),
            swap in any::<bool>(),
            adj in -1000i32..1000,
        ) {
            let mut k = classic(swap);
            let p = k.add_memcg_child(0, "p", knobs(Some(plimit)));
            let a = k.add_memcg_child(p, "p/a", MemcgKnobs { low: Some(low), oom_group: group, ..Default::default() });
            let x = k.add_memcg_child(a, "p/a/x", MemcgKnobs { high: Some(high), min: Some(min), ..Default::default() });
            let b = k.add_memcg_child(p, "p/b", knobs(None));
            let memcgs = [a, x, b];
            let tasks: Vec<(MmId, u32)> = [(a, 0), (x, adj), (b, 0), (x, -1000)]
                .iter()
                .map(|&(m, adj)| process(&mut k, m, adj, 600))
                .collect();
            for o in ops {
                match o {
                    Op::Touch(i, at, n) => {
                        let (mm, s) = tasks[i];
                        if !k.core.mms[mm as usize].exited {
                            touch(&mut k, mm, s, at, (at + n).min(600));
                            // oom_kill_disable is off: nobody waits.
                            prop_assert_eq!(k.core.memcg_in_oom, None);
                        }
                    }
                    Op::Exit(i) => {
                        let mm = tasks[i].0;
                        k.exit_mm(mm);
                    }
                    Op::Max(i, m) => {
                        let max = (m > 0).then_some(m);
                        k.mem_cgroup_set_knobs(memcgs[i], MemcgKnobs { max, ..k.core.memcgs[memcgs[i] as usize].knobs() });
                    }
                }
                if let Err(e) = k.check_invariants() { prop_assert!(false, "{}", e); }
                let pm = &k.core.memcgs[p as usize];
                prop_assert!(pm.usage <= plimit, "p usage {} over {}", pm.usage, plimit);
                for &(mm, _) in &tasks {
                    let t = &k.core.mms[mm as usize];
                    if t.oom_score_adj == -1000 {
                        prop_assert!(!t.oom_killed, "OOM_SCORE_ADJ_MIN task killed");
                    }
                    if t.oom_killed {
                        prop_assert!(t.exited && t.rss[MM_ANONPAGES] == 0);
                    }
                }
            }
        }
    }
}
