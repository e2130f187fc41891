//! Anonymous multi-size THP (issue 11): do_anonymous_page()'s mTHP
//! orders, the fallbacks, whole-folio swap-out and swap-in, the split
//! when no run of slots is free, munmap.

use foliosim::mm::folio::pg;
use foliosim::mm::huge_memory::MthpStat;
use foliosim::mm::vmscan::classic::ClassicLru;
use foliosim::mm::vmscan::lru_gen::LruGen;
use foliosim::mm::vmscan::ReclaimPolicy;
use foliosim::mm::vmstat::Item;
use foliosim::mm::{Kernel, KernelRelease, MmConfig, SwapKind, ThpDefrag, PAGE_SIZE};
use proptest::prelude::*;
use std::collections::BTreeMap;

mod common;
use common::mthp;

fn kernel<P: ReclaimPolicy>(policy: P, limit: u64, orders: u32) -> (Kernel<P>, u16) {
    kernel_with(policy, limit, orders, SwapKind::Zram)
}

fn kernel_with<P: ReclaimPolicy>(
    policy: P,
    limit: u64,
    orders: u32,
    swap: SwapKind,
) -> (Kernel<P>, u16) {
    build(cfg(orders, swap), policy, limit)
}

/// 256 MiB with 64 MiB of swap and the invariants checked; defrag=always
/// (an mTHP charge may reclaim, once), so at the limit the folios stay
/// large; the default (madvise) is tested on its own.
fn cfg(orders: u32, swap: SwapKind) -> MmConfig {
    MmConfig {
        swap,
        thp_defrag: ThpDefrag::Always,
        thp_anon_orders: orders,
        ..common::cfg()
    }
}

fn build<P: ReclaimPolicy>(cfg: MmConfig, policy: P, limit: u64) -> (Kernel<P>, u16) {
    let mut k = Kernel::new(cfg, policy);
    let m = k.add_memcg("t", Some(limit));
    (k, m)
}

fn anon_orders<P: ReclaimPolicy>(k: &Kernel<P>, space: u32) -> BTreeMap<u32, u64> {
    common::orders(k, space, |_, f| f.test(pg::SWAPBACKED))
}

/// Touches `pages` of `space` in order; every access must succeed.
fn touch<P: ReclaimPolicy>(
    k: &mut Kernel<P>,
    space: u32,
    m: u16,
    pages: std::ops::Range<u64>,
    write: bool,
) {
    for p in pages {
        assert!(k.anon_access(space, p, m, write), "page {p}");
    }
}

/// With 64 KiB mTHP on, a write fault fills the whole aligned 16-page
/// range: one fault, one charge event, 16 pages mapped and counted.
#[test]
fn write_faults_allocate_the_enabled_order() {
    let (mut k, m) = kernel(ClassicLru::new(), 100_000, 1 << 4);
    let mm = k.mm_alloc(m, 0);
    let space = k.mmap_anon(mm, 1000 * PAGE_SIZE);
    touch(&mut k, space, m, 0..1000, true);
    // 62 whole 16-page blocks; the last 8 pages (992..1000) do not fit
    // a 16-page block inside the mapping: order 0.
    assert_eq!(anon_orders(&k, space), BTreeMap::from([(0, 8), (4, 62)]));
    let mc = &k.core.memcgs[m as usize];
    assert_eq!(mc.stat.get(Item::PGFAULT), 62 + 8);
    assert_eq!(mc.stat.get(Item::MEMCG_PGPGIN), 62 + 8);
    assert_eq!((mc.nr_anon, mc.nr_mapped), (1000, 1000));
    assert_eq!(
        k.core.mms[mm as usize].rss[foliosim::mm::mmap::MM_ANONPAGES],
        1000
    );
    k.check_invariants().unwrap();
    // munmap frees them whole.
    k.munmap_anon(mm, space);
    let mc = &k.core.memcgs[m as usize];
    assert_eq!((mc.nr_anon, mc.nr_mapped), (0, 0));
    assert_eq!(mc.stat.get(Item::MEMCG_PGPGOUT), 62 + 8);
    k.check_invariants().unwrap();
}

/// A range with a PTE already present (a zero-page read) takes the next
/// order down; a write to the zero page copies one page (order 0).
#[test]
fn a_present_pte_lowers_the_order() {
    let (mut k, m) = kernel(ClassicLru::new(), 100_000, (1 << 4) | (1 << 2));
    let mm = k.mm_alloc(m, 0);
    let space = k.mmap_anon(mm, 64 * PAGE_SIZE);
    assert!(k.anon_access(space, 5, m, false)); // zero page at 5
    assert!(k.anon_access(space, 0, m, true)); // 0..16 not all none: order 2 at 0..4
    assert!(k.anon_access(space, 5, m, true)); // wp copy of the zero page: order 0
    assert!(k.anon_access(space, 16, m, true)); // 16..32 free: order 4
    assert_eq!(
        anon_orders(&k, space),
        BTreeMap::from([(0, 1), (2, 1), (4, 1)])
    );
    k.check_invariants().unwrap();
}

/// A memcg too small for a 2 MiB folio's charge falls back to smaller
/// orders instead of OOM-killing.
#[test]
fn a_failed_charge_falls_back() {
    let (mut k, m) = kernel(ClassicLru::new(), 300, (1 << 9) | (1 << 4));
    let mm = k.mm_alloc(m, 0);
    let space = k.mmap_anon(mm, 512 * PAGE_SIZE);
    assert!(k.anon_access(space, 0, m, true));
    assert_eq!(anon_orders(&k, space), BTreeMap::from([(4, 1)]));
    assert_eq!(k.core.memcgs[m as usize].stat.get(Item::OOM_KILL), 0);
    // The PMD attempt is do_huge_pmd_anonymous_page()'s: thp_fault_*.
    assert_eq!(k.core.vm.get(Item::THP_FAULT_FALLBACK), 1);
    assert_eq!(k.core.vm.get(Item::THP_FAULT_FALLBACK_CHARGE), 1);
    assert_eq!(k.core.vm.get(Item::THP_FAULT_ALLOC), 0);
}

/// Over the limit with zram, reclaim swaps large anon folios out whole
/// (one run of 16 slots each) and alloc_swap_folio() brings them back
/// whole: every resident anon folio stays order 4, pswpout/pswpin are
/// 16 pages per swpout/swpin event, nothing falls back; both LRUs.
fn swap_out_whole<P: ReclaimPolicy>(policy: P) {
    let (mut k, m) = kernel(policy, 1024, 1 << 4);
    let mm = k.mm_alloc(m, 0);
    let space = k.mmap_anon(mm, 2048 * PAGE_SIZE);
    for _ in 0..2 {
        touch(&mut k, space, m, 0..2048, true);
        k.check_invariants().unwrap();
    }
    let (out, inn) = (k.core.vm.get(Item::PSWPOUT), k.core.vm.get(Item::PSWPIN));
    assert!(out >= 1024 && inn > 0, "pswpout {out} pswpin {inn}");
    assert_eq!(out, 16 * mthp(&k, 4, MthpStat::Swpout));
    assert_eq!(inn, 16 * mthp(&k, 4, MthpStat::Swpin));
    assert_eq!(mthp(&k, 4, MthpStat::SwpoutFallback), 0);
    assert_eq!(mthp(&k, 4, MthpStat::SwpinFallback), 0);
    // One fault per folio swapped in: the major faults are the swpins.
    let mc = &k.core.memcgs[m as usize];
    assert_eq!(mc.stat.get(Item::PGMAJFAULT), mthp(&k, 4, MthpStat::Swpin));
    assert!(mc.usage <= 1024);
    let o = anon_orders(&k, space);
    assert_eq!(o.keys().copied().collect::<Vec<_>>(), vec![4], "{o:?}");
    k.munmap_anon(mm, space);
    k.check_invariants().unwrap();
    assert_eq!(k.core.memcgs[m as usize].nr_anon, 0);
    assert_eq!(k.core.swap.inuse_pages, 0, "munmap frees every slot");
}

#[test]
fn swap_out_whole_classic() {
    swap_out_whole(ClassicLru::new());
}

#[test]
fn swap_out_whole_mglru() {
    swap_out_whole(LruGen::new());
}

/// The default defrag (madvise): vma_thp_gfp_mask() has no
/// __GFP_DIRECT_RECLAIM, so at the memcg's limit an mTHP charge fails at
/// once (no reclaim, no max event) and the fault or swap-in falls back
/// to order 0; only when reclaim for an order-0 charge left a margin of
/// 16 pages does a 64 KiB folio get in.
#[test]
fn default_defrag_falls_back_at_the_limit() {
    let cfg = MmConfig {
        thp_defrag: MmConfig::default().thp_defrag,
        ..cfg(1 << 4, SwapKind::Zram)
    };
    assert_eq!(cfg.thp_defrag, ThpDefrag::Madvise);
    let (mut k, m) = build(cfg, ClassicLru::new(), 1024);
    let mm = k.mm_alloc(m, 0);
    let space = k.mmap_anon(mm, 2048 * PAGE_SIZE);
    // Below the limit (63 folios and the page tables of the two 2 MiB
    // regions they span) every fault is a 64 KiB folio.
    touch(&mut k, space, m, 0..1008, true);
    assert_eq!(mthp(&k, 4, MthpStat::AnonFaultAlloc), 63);
    assert_eq!(k.core.memcgs[m as usize].nr_pagetables, 2);
    assert_eq!(k.core.memcgs[m as usize].stat.get(Item::MEMCG_MAX), 0);
    touch(&mut k, space, m, 1008..2048, true);
    let fb = mthp(&k, 4, MthpStat::AnonFaultFallbackCharge);
    assert!(fb > 0);
    assert_eq!(mthp(&k, 4, MthpStat::AnonFaultFallback), fb);
    // One fault per 64 KiB folio; every other page is an order-0 fault
    // (a range with a fallback is no longer all none).
    let alloc = mthp(&k, 4, MthpStat::AnonFaultAlloc);
    assert_eq!(
        k.core.memcgs[m as usize].stat.get(Item::PGFAULT),
        alloc + (2048 - 16 * alloc)
    );
    touch(&mut k, space, m, 0..2048, false);
    k.check_invariants().unwrap();
    assert!(mthp(&k, 4, MthpStat::SwpinFallbackCharge) > 0);
    assert!(k.core.vm.get(Item::PSWPIN) > 16 * mthp(&k, 4, MthpStat::Swpin));
}

/// The 6.6 preset (no mTHP swap-in, and the model splits its PMD THP
/// before swap-out): pages come back order 0, no mTHP swap events.
#[test]
fn swap_out_splits_before_6_12() {
    let cfg = MmConfig {
        kernel: Some(KernelRelease::V6_6),
        ..cfg(1 << 9, SwapKind::Zram)
    };
    let (mut k, m) = build(cfg, ClassicLru::new(), 1024);
    let mm = k.mm_alloc(m, 0);
    let space = k.mmap_anon(mm, 2048 * PAGE_SIZE);
    for _ in 0..2 {
        touch(&mut k, space, m, 0..2048, true);
    }
    k.check_invariants().unwrap();
    assert!(k.core.vm.get(Item::PSWPOUT) >= 1024);
    assert_eq!(k.core.vm.get(Item::THP_SWPOUT), 0);
    assert_eq!(k.core.vm.get(Item::THP_SWPOUT_FALLBACK), 0);
    assert_eq!(mthp(&k, 9, MthpStat::Swpout), 0);
    let o = anon_orders(&k, space);
    assert!(o.contains_key(&0), "swapped-in pages are order 0: {o:?}");
}

/// A PMD-sized folio needs a whole free cluster: with two clusters, the
/// header's never free, the first goes out whole (thp_swpout), the next
/// ones are split (thp_swpout_fallback, the size's swpout_fallback) and
/// their pages go to the header cluster's free slots.
#[test]
fn a_pmd_folio_without_a_free_cluster_is_split() {
    let cfg = MmConfig {
        swap_bytes: 2 * 512 * PAGE_SIZE,
        ..cfg(1 << 9, SwapKind::Zram)
    };
    let (mut k, m) = build(cfg, ClassicLru::new(), 700);
    let mm = k.mm_alloc(m, 0);
    let space = k.mmap_anon(mm, 2048 * PAGE_SIZE);
    for p in 0..2048 {
        if !k.anon_access(space, p, m, true) {
            break;
        }
    }
    k.check_invariants().unwrap();
    assert_eq!(k.core.vm.get(Item::THP_SWPOUT), 1);
    assert_eq!(mthp(&k, 9, MthpStat::Swpout), 1);
    assert!(k.core.vm.get(Item::THP_SWPOUT_FALLBACK) >= 1);
    assert_eq!(
        mthp(&k, 9, MthpStat::SwpoutFallback),
        k.core.vm.get(Item::THP_SWPOUT_FALLBACK)
    );
    assert!(k.core.vm.get(Item::PSWPOUT) > 512);
}

/// A disk swap device: a large folio goes out as one write, comes back
/// by readahead in order-0 folios (no alloc_swap_folio off zram), or
/// whole while it is still in the swap cache.
#[test]
fn disk_swap_reads_back_order_0() {
    let (mut k, m) = kernel_with(ClassicLru::new(), 1024, 1 << 4, SwapKind::Disk);
    let mm = k.mm_alloc(m, 0);
    let space = k.mmap_anon(mm, 2048 * PAGE_SIZE);
    for pass in 0..2 {
        touch(&mut k, space, m, 0..2048, true);
        k.check_invariants().unwrap();
        if pass == 0 {
            // The first pass swaps out only order-4 folios, whole.
            assert_eq!(
                k.core.vm.get(Item::PSWPOUT),
                16 * mthp(&k, 4, MthpStat::Swpout)
            );
        }
    }
    assert_eq!(mthp(&k, 4, MthpStat::Swpin), 0);
    assert!(k.core.vm.get(Item::PSWPIN) > 0);
    assert!(anon_orders(&k, space).contains_key(&0));
    k.munmap_anon(mm, space);
    k.check_invariants().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random reads and writes over two mappings with mTHP of several
    /// orders, a limit below their size and zram or a disk: invariants
    /// after every access (large folios swapped out and in whole, or
    /// split), then munmap leaves nothing.
    #[test]
    fn invariants_hold_with_mthp(ops in proptest::collection::vec((0u64..2, 0u64..1500, any::<bool>()), 1..400),
                                 limit in 600u64..2000, orders in 0u32..8, disk in any::<bool>(),
                                 mglru in any::<bool>()) {
        let orders = (orders & 1) << 2 | (orders & 2) << 3 | (orders & 4) << 7;
        // A disk: swapped out whole, read back by readahead in order 0.
        let swap = if disk { SwapKind::Disk } else { SwapKind::Zram };
        if mglru {
            return invariants_mglru(ops, limit, orders, swap);
        }
        let (mut k, m) = kernel_with(ClassicLru::new(), limit, orders, swap);
        let mm = k.mm_alloc(m, 0);
        let spaces = [k.mmap_anon(mm, 1500 * PAGE_SIZE), k.mmap_anon(mm, 1024 * PAGE_SIZE)];
        for (s, p, w) in ops {
            let space = spaces[s as usize];
            let p = p % k.core.files[space as usize].nr_pages();
            if !k.anon_access(space, p, m, w) {
                break;
            }
            if let Err(e) = k.check_invariants() { prop_assert!(false, "{}", e); }
        }
        for s in spaces {
            k.munmap_anon(mm, s);
        }
        if let Err(e) = k.check_invariants() { prop_assert!(false, "{}", e); }
        // What munmap leaves: swap-cache folios still under writeback.
        prop_assert_eq!(k.core.memcgs[m as usize].nr_anon, swap_cached_pages(&k));
        prop_assert_eq!(k.core.swap.inuse_pages, swap_cached_pages(&k));
    }
}

/// The proptest's body under MGLRU.
fn invariants_mglru(
    ops: Vec<(u64, u64, bool)>,
    limit: u64,
    orders: u32,
    swap: SwapKind,
) -> Result<(), TestCaseError> {
    let (mut k, m) = kernel_with(LruGen::new(), limit, orders, swap);
    let mm = k.mm_alloc(m, 0);
    let spaces = [
        k.mmap_anon(mm, 1500 * PAGE_SIZE),
        k.mmap_anon(mm, 1024 * PAGE_SIZE),
    ];
    for (s, p, w) in ops {
        let space = spaces[s as usize];
        let p = p % k.core.files[space as usize].nr_pages();
        if !k.anon_access(space, p, m, w) {
            break;
        }
        if let Err(e) = k.check_invariants() {
            prop_assert!(false, "{}", e);
        }
    }
    for s in spaces {
        k.munmap_anon(mm, s);
    }
    if let Err(e) = k.check_invariants() {
        prop_assert!(false, "{}", e);
    }
    // What munmap leaves: swap-cache folios still under writeback.
    prop_assert_eq!(k.core.memcgs[m as usize].nr_anon, swap_cached_pages(&k));
    prop_assert_eq!(k.core.swap.inuse_pages, swap_cached_pages(&k));
    Ok(())
}

/// Slots still held after munmap: those of swap-cache folios under
/// writeback (free_swap_cache() leaves them to reclaim).
fn swap_cached_pages<P: ReclaimPolicy>(k: &Kernel<P>) -> u64 {
    k.core
        .folios
        .f
        .iter()
        .filter(|f| f.flags & pg::FREE == 0 && f.test(pg::SWAPCACHE))
        .map(|f| {
            assert!(
                f.test(pg::WRITEBACK),
                "a swap-cache folio left without writeback"
            );
            f.nr_pages()
        })
        .sum()
}
