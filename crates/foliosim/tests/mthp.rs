//! Anonymous multi-size THP (issue 11): do_anonymous_page()'s mTHP
//! orders, the fallbacks, reclaim's split before swap-out, munmap.

use foliosim::mm::folio::pg;
use foliosim::mm::vmscan::classic::ClassicLru;
use foliosim::mm::vmscan::lru_gen::LruGen;
use foliosim::mm::vmscan::ReclaimPolicy;
use foliosim::mm::vmstat::Item;
use foliosim::mm::{Kernel, MmConfig, SwapKind, PAGE_SIZE};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn kernel<P: ReclaimPolicy>(policy: P, limit: u64, orders: u32) -> (Kernel<P>, u16) {
    let cfg = MmConfig {
        ram_bytes: 256 << 20,
        reserved_bytes: 8 << 20,
        swap: SwapKind::Zram,
        swap_bytes: 64 << 20,
        thp_anon_orders: orders,
        check_invariants: true,
        ..MmConfig::default()
    };
    let mut k = Kernel::new(cfg, policy);
    let m = k.add_memcg("t", Some(limit));
    (k, m)
}

fn anon_orders<P: ReclaimPolicy>(k: &Kernel<P>, space: u32) -> BTreeMap<u32, u64> {
    let mut h = BTreeMap::new();
    for f in &k.core.folios.f {
        if f.flags & pg::FREE == 0 && f.mapping == space && f.test(pg::SWAPBACKED) {
            *h.entry(f.order()).or_insert(0) += 1;
        }
    }
    h
}

/// With 64 KiB mTHP on, a write fault fills the whole aligned 16-page
/// range: one fault, one charge event, 16 pages mapped and counted.
#[test]
fn write_faults_allocate_the_enabled_order() {
    let (mut k, m) = kernel(ClassicLru::new(), 100_000, 1 << 4);
    let mm = k.mm_alloc(m, 0);
    let space = k.mmap_anon(mm, 1000 * PAGE_SIZE);
    for p in 0..1000 {
        assert!(k.anon_access(space, p, m, true));
    }
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
}

/// Over the limit with zram, reclaim splits large anon folios and swaps
/// the pages out; they come back as order-0 folios; counters and
/// invariants hold, both LRUs.
fn swap_out_splits<P: ReclaimPolicy>(policy: P) {
    let (mut k, m) = kernel(policy, 1024, 1 << 4);
    let mm = k.mm_alloc(m, 0);
    let space = k.mmap_anon(mm, 2048 * PAGE_SIZE);
    for _ in 0..2 {
        for p in 0..2048 {
            assert!(k.anon_access(space, p, m, true));
        }
        k.check_invariants().unwrap();
    }
    let mc = &k.core.memcgs[m as usize];
    assert!(
        k.core.vm.get(Item::PSWPOUT) >= 1024,
        "{}",
        k.core.vm.get(Item::PSWPOUT)
    );
    assert!(k.core.vm.get(Item::PSWPIN) > 0);
    assert!(mc.usage <= 1024);
    let o = anon_orders(&k, space);
    assert!(o.contains_key(&0), "swapped-in pages are order 0: {o:?}");
    k.munmap_anon(mm, space);
    k.check_invariants().unwrap();
    assert_eq!(k.core.memcgs[m as usize].nr_anon, 0);
}

#[test]
fn swap_out_splits_classic() {
    swap_out_splits(ClassicLru::new());
}

#[test]
fn swap_out_splits_mglru() {
    swap_out_splits(LruGen::new());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random reads and writes over two mappings with mTHP of several
    /// orders, a limit below their size and zram: invariants after every
    /// access, then munmap leaves nothing.
    #[test]
    fn invariants_hold_with_mthp(ops in proptest::collection::vec((0u64..2, 0u64..1500, any::<bool>()), 1..400),
                                 limit in 600u64..2000, orders in 0u32..8) {
        let orders = (orders & 1) << 2 | (orders & 2) << 3 | (orders & 4) << 7;
        let (mut k, m) = kernel(ClassicLru::new(), limit, orders);
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
        prop_assert_eq!(k.core.memcgs[m as usize].nr_anon, 0);
    }
}
