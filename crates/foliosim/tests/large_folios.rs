//! Large page-cache folios (issue 11): readahead's order ramp, buffered
//! writes, reclaim and the counters that count folios or pages, and the
//! model's invariants with folios of every order.

use foliosim::mm::filemap::OpenFile;
use foliosim::mm::vmscan::classic::ClassicLru;
use foliosim::mm::vmscan::lru_gen::LruGen;
use foliosim::mm::vmscan::ReclaimPolicy;
use foliosim::mm::vmstat::Item;
use foliosim::mm::{Kernel, KernelRelease, MmConfig, PAGE_SIZE};
use proptest::prelude::*;
use std::collections::BTreeMap;

mod common;

fn kernel<P: ReclaimPolicy>(policy: P, limit_pages: Option<u64>, large: bool) -> (Kernel<P>, u16) {
    let cfg = MmConfig {
        read_ahead_kb: 128,
        large_folios: large,
        ..common::cfg()
    };
    let mut k = Kernel::new(cfg, policy);
    let m = k.add_memcg("t", limit_pages);
    (k, m)
}

fn open<P: ReclaimPolicy>(k: &mut Kernel<P>, pages: u64, memcg: u16) -> OpenFile {
    OpenFile::new(k.core.add_data_file(pages * PAGE_SIZE), 128, memcg)
}

/// The cached folios of `mapping`: order -> count.
fn orders<P: ReclaimPolicy>(k: &Kernel<P>, mapping: u32) -> BTreeMap<u32, u64> {
    common::orders(k, mapping, |_, _| true)
}

fn read_all<P: ReclaimPolicy>(k: &mut Kernel<P>, f: &mut OpenFile, pages: u64, chunk: u64) {
    let mut pos = 0;
    while pos < pages * PAGE_SIZE {
        k.filemap_read(f, pos, chunk).unwrap();
        pos += chunk;
    }
}

/// A sequential read with 32-page windows (read_ahead_kb 128): the first
/// window (sync) is order 0; each async window raises ra->order by 2
/// (2, 4, then 6 capped by ilog2(32) = 5): 32 + 8 + 2 folios for the first
/// three windows, then one 32-page folio per window. The last window
/// reaches EOF and carries no mark.
#[test]
fn sequential_read_ramps_the_folio_order() {
    let (mut k, m) = kernel(ClassicLru::new(), None, true);
    let mut f = open(&mut k, 1024, m);
    read_all(&mut k, &mut f, 1024, 32 * PAGE_SIZE);
    let o = orders(&k, f.mapping);
    assert_eq!(o, BTreeMap::from([(0, 32), (2, 8), (4, 2), (5, 29)]));
    assert_eq!(f.ra.order, 5, "ra->order stays capped by ilog2(ra->size)");
    let mc = &k.core.memcgs[m as usize];
    // memcg v1 pgpgin counts one event per charged folio; the page
    // counter, the LRU and pgpgin (KiB) count pages.
    assert_eq!(mc.stat.get(Item::MEMCG_PGPGIN), 32 + 8 + 2 + 29);
    // The 16 leaf xarray nodes' slab (576 bytes each) takes 3 pages.
    assert_eq!(mc.slab_pages, 3);
    assert_eq!(mc.usage, 1024 + mc.stock + mc.slab_pages);
    assert_eq!(mc.nr_file, 1024);
    assert_eq!(k.policy.lru_sizes(m).inactive_file, 1024);
    assert_eq!(k.core.vm.get(Item::PGPGIN), 1024 * 4);
    assert_eq!(k.core.files[f.mapping as usize].nrpages, 1024);
    k.check_invariants().unwrap();
}

/// The same read on a mapping without large folio support (or with the
/// machine's large folios off) is all order 0: one charge event per page.
#[test]
fn without_large_folio_support_every_folio_is_order_0() {
    let (mut k, m) = kernel(ClassicLru::new(), None, false);
    let mut f = open(&mut k, 1024, m);
    read_all(&mut k, &mut f, 1024, 32 * PAGE_SIZE);
    assert_eq!(orders(&k, f.mapping), BTreeMap::from([(0, 1024)]));
    assert_eq!(k.core.memcgs[m as usize].stat.get(Item::MEMCG_PGPGIN), 1024);
    assert_eq!(f.ra.order, 0, "page_cache_ra_order() resets it");
}

/// Buffered writes of 1 MiB at aligned offsets ask write_begin for
/// order-8 folios (fgf_set_order(1M)); an unaligned one gets what its
/// index allows.
#[test]
fn buffered_writes_allocate_folios_of_the_write_size() {
    let (mut k, m) = kernel(ClassicLru::new(), None, true);
    let mut f = open(&mut k, 4096, m);
    for i in 0..4 {
        k.filemap_write(&mut f, i << 20, 1 << 20).unwrap();
    }
    assert_eq!(orders(&k, f.mapping), BTreeMap::from([(8, 4)]));
    // 64 KiB at page 1040 (aligned to 16 pages): one order-4 folio.
    k.filemap_write(&mut f, 1040 * PAGE_SIZE, 64 << 10).unwrap();
    assert_eq!(orders(&k, f.mapping).get(&4), Some(&1));
    // Dirty and writeback accounting is in pages.
    assert_eq!(
        k.core.memcgs[m as usize].nr_dirty + k.core.memcgs[m as usize].nr_writeback,
        1024 + 16
    );
    k.sync_all();
    assert_eq!(k.core.vm.get(Item::PGPGOUT), (1024 + 16) * 4);
    k.check_invariants().unwrap();
}

/// Reclaim evicts whole folios: pgsteal and the refaults count pages,
/// memcg v1 pgpgout one event per folio; a file twice the limit read
/// twice refaults with shadows left by large folios.
fn eviction_counts<P: ReclaimPolicy>(policy: P) {
    let (mut k, m) = kernel(policy, Some(2048), true);
    let mut f = open(&mut k, 8192, m);
    for _ in 0..2 {
        read_all(&mut k, &mut f, 8192, 32 * PAGE_SIZE);
    }
    let mc = &k.core.memcgs[m as usize];
    assert!(mc.usage <= 2048);
    let ev_in = mc.stat.get(Item::MEMCG_PGPGIN);
    let ev_out = mc.stat.get(Item::MEMCG_PGPGOUT);
    let steal = mc.stat.get(Item::PGSTEAL_FILE);
    assert!(steal > 8192, "the file was evicted: {steal} pages stolen");
    // Most folios are 32 pages: far fewer events than pages.
    assert!(
        ev_out * 16 < steal,
        "pgpgout events {ev_out} vs {steal} pages"
    );
    assert!(ev_in * 16 < 4 * 8192, "pgpgin events {ev_in}");
    // Events in - out = the folios still charged.
    let live: u64 = orders(&k, f.mapping).values().sum();
    assert_eq!(ev_in - ev_out, live);
    k.check_invariants().unwrap();
}

#[test]
fn eviction_of_large_folios_classic() {
    eviction_counts(ClassicLru::new());
}

#[test]
fn eviction_of_large_folios_mglru() {
    eviction_counts(LruGen::new());
}

/// A refault of a large folio counts all of its pages.
#[test]
fn refaults_count_pages() {
    let (mut k, m) = kernel(ClassicLru::new(), Some(1024), true);
    let mut f = open(&mut k, 4096, m);
    read_all(&mut k, &mut f, 4096, 32 * PAGE_SIZE);
    read_all(&mut k, &mut f, 4096, 32 * PAGE_SIZE);
    let mc = &k.core.memcgs[m as usize];
    let refaults = mc.stat.get(Item::WORKINGSET_REFAULT_FILE);
    assert!(refaults > 0);
    // The second pass reads 32-page folios (ra->order carried over), so
    // every refault is a multiple of a whole folio's pages: no order-0
    // folio refaults once the ramp is over.
    assert_eq!(
        refaults % 4,
        0,
        "refaults {refaults} counted by folio pages"
    );
    k.check_invariants().unwrap();
}

/// Truncating part of a large folio splits it (try_folio_split at the
/// range's first page, buddy style) and drops the pieces inside: a 2 MiB
/// folio truncated from page 1 to page 255 splits into page 0, page 1,
/// then orders 1 to 7 up to page 255 and order 8 from page 256; as the
/// range ends inside the original folio, the piece holding page 256 is
/// split there too (orders 0, 0, 1, ..., 7). What is left stays dirty,
/// charged and on its list.
fn partial_truncation_splits<P: ReclaimPolicy>(policy: P) {
    let (mut k, m) = kernel(policy, None, true);
    let mut f = open(&mut k, 2048, m);
    k.filemap_write(&mut f, 0, 2 << 20).unwrap(); // one order-9 folio
    assert_eq!(orders(&k, f.mapping), BTreeMap::from([(9, 1)]));
    let out_before = k.core.memcgs[m as usize].stat.get(Item::MEMCG_PGPGOUT);
    k.truncate_pagecache_range(f.mapping, 4096, (256 << 12) - 1);
    let left: BTreeMap<u32, u64> = [(0, 3)].into_iter().chain((1..8).map(|o| (o, 1))).collect();
    assert_eq!(orders(&k, f.mapping), left);
    let mc = &k.core.memcgs[m as usize];
    // Pieces 1, 2-3, 4-7, ..., 128-255 (orders 0 to 7) went: 8 uncharges.
    assert_eq!(mc.stat.get(Item::MEMCG_PGPGOUT) - out_before, 8);
    assert_eq!((mc.nr_file, mc.nr_dirty), (257, 257));
    assert_eq!(
        k.policy.lru_sizes(m).inactive_file + k.policy.lru_sizes(m).active_file,
        257
    );
    assert_eq!(k.core.files[f.mapping as usize].nrpages, 257);
    k.check_invariants().unwrap();
    // The dirty pieces are written back, in the flusher's order.
    k.sync_all();
    assert_eq!(k.core.vm.get(Item::PGPGOUT), 257 * 4);
    // A range covering the rest drops everything.
    k.truncate_pagecache_range(f.mapping, 0, (2 << 20) - 1);
    assert!(orders(&k, f.mapping).is_empty());
    assert_eq!(k.core.memcgs[m as usize].nr_dirty, 0);
    assert_eq!(k.core.files[f.mapping as usize].nrpages, 0);
    k.check_invariants().unwrap();
}

#[test]
fn partial_truncation_splits_classic() {
    partial_truncation_splits(ClassicLru::new());
}

#[test]
fn partial_truncation_splits_mglru() {
    partial_truncation_splits(LruGen::new());
}

/// A range ending inside a large folio splits it there too: only the
/// pages inside go.
#[test]
fn a_hole_inside_a_large_folio() {
    let (mut k, m) = kernel(ClassicLru::new(), None, true);
    let mut f = open(&mut k, 2048, m);
    k.filemap_write(&mut f, 0, 2 << 20).unwrap();
    // Pages 100..=199 punched.
    k.truncate_pagecache_range(f.mapping, 100 << 12, (200 << 12) - 1);
    let a = &k.core.files[f.mapping as usize];
    assert_eq!(a.nrpages, 412);
    for i in 0..512 {
        assert_eq!(a.folio(i).is_some(), !(100..200).contains(&i), "page {i}");
    }
    // Every remaining piece is aligned to its size.
    for x in &k.core.folios.f {
        if x.flags & foliosim::mm::folio::pg::FREE == 0 && x.mapping == f.mapping {
            assert_eq!(x.index as u64 % x.nr_pages(), 0);
        }
    }
    let _ = m;
    k.check_invariants().unwrap();
}

/// A read-around fault window is order 0 (do_sync_mmap_readahead resets
/// ra->order); fault-around maps a large folio once and counts its pages
/// in the window as mapped.
#[test]
fn mmap_faults_map_large_folios() {
    let (mut k, m) = kernel(ClassicLru::new(), None, true);
    let mut f = open(&mut k, 1024, m);
    read_all(&mut k, &mut f, 1024, 32 * PAGE_SIZE);
    let before = k.core.vm.get(Item::PGFAULT);
    for i in 0..1024 {
        assert!(k.mmap_access(&mut f, i));
    }
    let faults = k.core.vm.get(Item::PGFAULT) - before;
    // 32-page folios are mapped whole: at most one fault per folio.
    let nr_folios: u64 = orders(&k, f.mapping).values().sum();
    assert!(
        faults <= nr_folios,
        "{faults} faults for {nr_folios} folios"
    );
    assert_eq!(k.core.memcgs[m as usize].nr_mapped, 1024);
    k.check_invariants().unwrap();
}

#[test]
fn kernel_release_presets() {
    assert_eq!(
        KernelRelease::parse("6.18.44-fc-v669").unwrap(),
        KernelRelease::V6_18
    );
    assert_eq!(
        KernelRelease::parse("6.13.2").unwrap(),
        KernelRelease::V6_12
    );
    assert_eq!(KernelRelease::parse("6.15").unwrap(), KernelRelease::V6_14);
    assert_eq!(KernelRelease::parse("6.17").unwrap(), KernelRelease::V6_16);
    assert_eq!(KernelRelease::parse("7.1.13").unwrap(), KernelRelease::V7_0);
    assert_eq!(KernelRelease::parse("7.3.1").unwrap(), KernelRelease::V7_2);
    assert_eq!(
        KernelRelease::parse("mm-new").unwrap(),
        KernelRelease::MmNew
    );
    assert!(KernelRelease::parse("5.15")
        .unwrap_err()
        .contains("older than"));
    assert!(KernelRelease::parse("linus")
        .unwrap_err()
        .contains("unknown kernel release"));
    assert!(!KernelRelease::V6_12.ext4_large_folios());
    assert!(!KernelRelease::V6_14.ext4_large_folios());
    assert!(KernelRelease::V6_16.ext4_large_folios());
    assert!(KernelRelease::V6_18.ext4_large_folios());
    assert!(!KernelRelease::V6_12.shmem_large_swapin());
    assert!(KernelRelease::V6_14.shmem_large_swapin());
    assert!(!KernelRelease::V7_0.variants().mglru_reclaim_rework);
    assert!(KernelRelease::MmNew.variants().mglru_reclaim_rework);
    // Seed 004 since 6.14, with the rest of its series (the feedback
    // rework); seeds 000, 002 and 003 merged in 7.2.
    for k in [
        KernelRelease::V6_1,
        KernelRelease::V6_6,
        KernelRelease::V6_12,
    ] {
        let v = k.variants();
        assert!(!v.mglru_wsprot_rework && !v.mglru_feedback_rework, "{k:?}");
        // MGLRU's refault accounting fixed in 6.5.
        assert_eq!(
            v.mglru_refault_accounting_fix,
            k != KernelRelease::V6_1,
            "{k:?}"
        );
    }
    for k in [
        KernelRelease::V6_14,
        KernelRelease::V6_16,
        KernelRelease::V6_18,
        KernelRelease::V7_0,
        KernelRelease::V7_2,
        KernelRelease::MmNew,
    ] {
        assert!(k.variants().mglru_feedback_rework, "{k:?}");
    }
    for k in [
        KernelRelease::V6_14,
        KernelRelease::V6_16,
        KernelRelease::V6_18,
        KernelRelease::V7_0,
    ] {
        let v = k.variants();
        assert!(v.mglru_wsprot_rework && v.mglru_wsprot_fold_fix, "{k:?}");
        assert!(!v.mglru_reclaim_rework && !v.shadow_lru_size, "{k:?}");
    }
    let v = KernelRelease::V7_2.variants();
    assert!(v.mglru_reclaim_rework && v.mglru_isolate_fallback_fix && v.shadow_lru_size);
    assert!(v.mmap_miss_p1 && v.mmap_miss_p2);
    assert_eq!(v.pf_activation, foliosim::mm::PfActivation::Merged);
}

#[derive(Debug, Clone)]
enum Op {
    Read(u64, u64),
    Write(u64, u64),
    Touch(u64),
    Invalidate,
    Truncate(u64, u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..4096, 1u64..128).prop_map(|(p, n)| Op::Read(p, n)),
        (0u64..4096, 1u64..600).prop_map(|(p, n)| Op::Write(p, n)),
        (0u64..4096).prop_map(Op::Touch),
        Just(Op::Invalidate),
        (0u64..4096, 1u64..700).prop_map(|(p, n)| Op::Truncate(p, n)),
    ]
}

fn random_ops<P: ReclaimPolicy>(policy: P, ops: Vec<Op>, limit: u64) -> Result<(), TestCaseError> {
    let (mut k, m) = kernel(policy, Some(limit), true);
    let mut f = open(&mut k, 4096, m);
    for o in ops {
        let ok = match o {
            Op::Read(p, n) => k
                .filemap_read(&mut f, p * PAGE_SIZE, n * PAGE_SIZE)
                .is_some(),
            Op::Write(p, n) => k
                .filemap_write(&mut f, p * PAGE_SIZE + 100, n * PAGE_SIZE)
                .is_some(),
            Op::Touch(p) => k.mmap_access(&mut f, p),
            Op::Invalidate => {
                k.invalidate_mapping_pages(f.mapping);
                true
            }
            Op::Truncate(p, n) => {
                k.truncate_pagecache_range(f.mapping, p * PAGE_SIZE, (p + n) * PAGE_SIZE - 1);
                true
            }
        };
        let mc = &k.core.memcgs[m as usize];
        prop_assert!(mc.usage <= limit, "usage {} over limit {}", mc.usage, limit);
        if let Err(e) = k.check_invariants() {
            prop_assert!(false, "{}", e);
        }
        if !ok {
            break;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Invariants (LRU sizes in pages, charges, free pages, shadow nodes)
    /// after every operation with folios of every order, both LRUs.
    #[test]
    fn invariants_hold_with_large_folios_classic(ops in proptest::collection::vec(op(), 1..200), limit in 1200u64..3000) {
        random_ops(ClassicLru::new(), ops, limit)?;
    }

    #[test]
    fn invariants_hold_with_large_folios_mglru(ops in proptest::collection::vec(op(), 1..200), limit in 1200u64..3000) {
        random_ops(LruGen::new(), ops, limit)?;
    }
}

/// A PMD-sized folio (order 9) is mapped by one PMD (do_set_pmd):
/// thp_file_mapped counts it once, however many of its pages are touched;
/// smaller folios never count.
#[test]
fn pmd_sized_folios_count_thp_file_mapped() {
    let (mut k, m) = kernel(ClassicLru::new(), None, true);
    let mut f = open(&mut k, 2048, m);
    k.filemap_write(&mut f, 0, 2 << 20).unwrap();
    k.filemap_write(&mut f, 2 << 20, 1 << 20).unwrap();
    assert_eq!(orders(&k, f.mapping), BTreeMap::from([(8, 1), (9, 1)]));
    for i in 0..768 {
        assert!(k.mmap_access(&mut f, i));
    }
    assert_eq!(k.core.vm.get(Item::THP_FILE_MAPPED), 1);
    assert_eq!(k.core.memcgs[m as usize].nr_mapped, 768);
}

/// Large file folios beside anonymous memory and a swap device: the swap
/// invariants (which walk every slot) hold, and reclaim swaps anon out
/// while it evicts whole file folios.
#[test]
fn large_file_folios_with_swap_and_anon() {
    let cfg = MmConfig {
        read_ahead_kb: 128,
        large_folios: true,
        swap: foliosim::mm::SwapKind::Zram,
        ..common::cfg()
    };
    let mut k = Kernel::new(cfg, ClassicLru::new());
    let m = k.add_memcg("t", Some(3000));
    let mut f = open(&mut k, 4096, m);
    let mm = k.mm_alloc(m, 0);
    // 3,500 anon pages in a 3,000-page group: some must go to swap, and
    // the file's large folios are evicted around them.
    let anon = k.mmap_anon(mm, 3500 * PAGE_SIZE);
    for round in 0..2 {
        read_all(&mut k, &mut f, 4096, 32 * PAGE_SIZE);
        assert!(
            orders(&k, f.mapping).keys().any(|&o| o > 0),
            "round {round}"
        );
        for p in 0..3500 {
            assert!(k.anon_access(anon, p, m, true), "round {round} page {p}");
        }
        k.check_invariants().unwrap();
    }
    let mc = &k.core.memcgs[m as usize];
    assert!(mc.stat.get(Item::PGSTEAL_FILE) > 0);
    assert!(k.core.vm.get(Item::PSWPOUT) > 0);
}
