//! Hierarchical memcg swap accounting: v2's swap counter (memory.swap.current,
//! swap.max over ancestors) and v1's memsw counter (memory + swap, limited
//! by memory.memsw.limit_in_bytes), as mm/memcontrol.c and
//! mm/memcontrol-v1.c of Linux 6.18 keep them.

use foliosim::mm::memcontrol::{MemcgId, MemcgKnobs};
use foliosim::mm::vmscan::classic::ClassicLru;
use foliosim::mm::vmstat::Item;
use foliosim::mm::{blkdev::DeviceProfile, Kernel, MmConfig, SwapKind, PAGE_SIZE};

fn kernel() -> Kernel<ClassicLru> {
    Kernel::new(
        MmConfig {
            ram_bytes: 64 << 20,
            reserved_bytes: 4 << 20,
            swap: SwapKind::Zram,
            swap_bytes: 8192 * PAGE_SIZE,
            device: DeviceProfile::by_name("virtio").unwrap(),
            check_invariants: true,
            ..MmConfig::default()
        },
        ClassicLru::new(),
    )
}

fn check(k: &Kernel<ClassicLru>) {
    if let Err(e) = k.check_invariants() {
        panic!("{e}");
    }
}

/// Writes `n` anon pages in `m` from a new task; returns how many were
/// written before an OOM stopped it, and the peak swap counters of `at`
/// (swap, swap-only slots) seen meanwhile (the OOM kill frees the slots).
fn write_anon_peak(k: &mut Kernel<ClassicLru>, m: MemcgId, n: u64, at: MemcgId) -> (u64, u64, u64) {
    let mm = k.mm_alloc(m, 0);
    k.core.current = mm;
    let space = k.mmap_anon(mm, n * PAGE_SIZE);
    let (mut swap, mut only) = (0, 0);
    for i in 0..n {
        if !k.anon_access(space, i, m, true) {
            return (i, swap, only);
        }
        let s = &k.core.memcg_swap[at as usize];
        swap = swap.max(s.usage);
        only = only.max(s.memsw_swap);
    }
    (n, swap, only)
}

fn write_anon(k: &mut Kernel<ClassicLru>, m: MemcgId, n: u64) -> u64 {
    write_anon_peak(k, m, n, m).0
}

#[test]
fn child_swap_counts_in_its_parent() {
    let mut k = kernel();
    let p = k.add_memcg("p", None);
    let a = k.add_memcg_child(
        p,
        "a",
        MemcgKnobs {
            max: Some(500),
            ..Default::default()
        },
    );
    let b = k.add_memcg_child(
        p,
        "b",
        MemcgKnobs {
            max: Some(500),
            ..Default::default()
        },
    );
    assert_eq!(write_anon(&mut k, a, 1500), 1500);
    assert_eq!(write_anon(&mut k, b, 1200), 1200);
    check(&k);
    let (sa, sb) = (k.core.memcg_swap_usage(a), k.core.memcg_swap_usage(b));
    assert!(sa >= 1000 && sb >= 700, "both children swapped: {sa} {sb}");
    assert_eq!(k.core.memcg_swap_usage(p), sa + sb);
    assert_eq!(k.core.memcg_swap_usage(0), k.core.swap.inuse_pages);
    // memsw = memory + the entries' share, per level.
    for m in [a, b, p] {
        let s = &k.core.memcg_swap[m as usize];
        assert_eq!(
            k.core.memcg_memsw_usage(m),
            k.core.memcgs[m as usize].usage + s.memsw_swap
        );
    }
    assert_eq!(
        k.core.memcg_swap[p as usize].memsw_swap,
        k.core.memcg1_swap(a) + k.core.memcg1_swap(b)
    );
}

#[test]
fn parent_swap_max_stops_child_swap_out() {
    let mut k = kernel();
    let p = k.add_memcg_child(
        0,
        "p",
        MemcgKnobs {
            swap_max: Some(100),
            ..Default::default()
        },
    );
    let c = k.add_memcg_child(
        p,
        "c",
        MemcgKnobs {
            max: Some(500),
            ..Default::default()
        },
    );
    let (done, peak, _) = write_anon_peak(&mut k, c, 2000, p);
    check(&k);
    assert!(done < 2000, "500 pages + 100 of swap cannot hold 2000");
    assert!(
        (50..=100).contains(&peak),
        "the child swapped up to the parent's max: {peak}"
    );
    assert!(k.core.memcg_swap_usage(p) <= 100);
    assert_eq!(k.core.memcg_swap_usage(p), k.core.memcg_swap_usage(c));
    assert_eq!(
        k.core.mem_cgroup_get_nr_swap_pages(c),
        100 - k.core.memcg_swap_usage(p)
    );
    // swap.events max at the charging child, propagated to the parent.
    let (ep, ec) = (
        k.core.memcg_swap[p as usize].events_max,
        k.core.memcg_swap[c as usize].events_max,
    );
    assert!(ec > 0);
    assert_eq!(ep, ec);
    assert_eq!(k.core.memcg_swap[0].events_max, ec);
}

#[test]
fn v1_memsw_equal_to_limit_ooms_without_swapping() {
    let mut k = kernel();
    let m = k.add_memcg_child(
        0,
        "t",
        MemcgKnobs {
            max: Some(1000),
            memsw_limit: Some(1000),
            ..Default::default()
        },
    );
    let done = write_anon(&mut k, m, 2000);
    check(&k);
    assert!(
        done < 1000 + 64,
        "no swap headroom: OOM near the limit, wrote {done}"
    );
    assert_eq!(
        k.core.vm.get(Item::PSWPOUT),
        0,
        "memsw-limited reclaim never swaps"
    );
    assert_eq!(k.core.memcg_swap_usage(m), 0);
    assert!(k.core.memcg_swap[m as usize].memsw_failcnt > 0);
    assert!(k.core.memcg_swap[m as usize].memsw_watermark <= 1000);
}

#[test]
fn v1_memsw_above_limit_swaps_up_to_the_difference() {
    let mut k = kernel();
    let m = k.add_memcg_child(
        0,
        "t",
        MemcgKnobs {
            max: Some(1000),
            memsw_limit: Some(1300),
            ..Default::default()
        },
    );
    let (done, _, swapped) = write_anon_peak(&mut k, m, 3000, m);
    check(&k);
    assert!(done < 3000, "1300 pages of memsw cannot hold 3000");
    // Reclaim frees a charge batch (64 pages) at a time, so memory may sit
    // that far under its limit while the entries hold the rest of memsw.
    assert!(
        swapped <= 300 + 64,
        "swap-only slots {swapped} within memsw - limit"
    );
    assert!(
        swapped >= 250,
        "it did swap up to near memsw - limit: {swapped}"
    );
    assert!(done >= 1200, "memory + swap held {done}");
    assert!(k.core.memcg_memsw_usage(m) <= 1300);
    assert!(k.core.memcg_swap[m as usize].memsw_watermark <= 1300);
    assert!(k.core.memcg_swap[m as usize].memsw_failcnt > 0);
}

#[test]
fn v1_memsw_limit_on_parent_applies_to_children() {
    let mut k = kernel();
    let p = k.add_memcg_child(
        0,
        "p",
        MemcgKnobs {
            max: Some(800),
            memsw_limit: Some(1000),
            ..Default::default()
        },
    );
    let c = k.add_memcg_child(p, "c", MemcgKnobs::default());
    let done = write_anon(&mut k, c, 3000);
    check(&k);
    assert!((800..=1000).contains(&done), "wrote {done}");
    assert!(k.core.memcg_memsw_usage(p) <= 1000);
    assert_eq!(
        k.core.memcg_swap[p as usize].memsw_swap,
        k.core.memcg_swap[c as usize].memsw_swap
    );
    assert!(k.core.memcg_swap[p as usize].memsw_failcnt > 0);
}
