//! tmpfs `huge=` (issue 11): shmem_allowable_huge_orders() for writes and
//! faults, the fallbacks, whole swap-out into one multi-order entry and
//! its swap-in, partial truncation, and the invariants under random use.

use foliosim::mm::filemap::{OpenFile, Slot};
use foliosim::mm::huge_memory::MthpStat;
use foliosim::mm::memcontrol::MemcgId;
use foliosim::mm::vmscan::classic::ClassicLru;
use foliosim::mm::vmscan::lru_gen::LruGen;
use foliosim::mm::vmscan::ReclaimPolicy;
use foliosim::mm::vmstat::Item;
use foliosim::mm::{Kernel, KernelRelease, MmConfig, SwapKind, ThpDefrag, TmpfsHuge, PAGE_SIZE};
use proptest::prelude::*;
use std::collections::BTreeMap;

mod common;
use common::mthp;

fn kernel<P: ReclaimPolicy>(
    policy: P,
    huge: TmpfsHuge,
    swap: SwapKind,
    limit: Option<u64>,
    release: Option<KernelRelease>,
) -> (Kernel<P>, MemcgId) {
    let cfg = MmConfig {
        swap,
        tmpfs_huge: huge,
        // Large charges may reclaim: at the limit folios stay large.
        thp_defrag: ThpDefrag::Always,
        kernel: release,
        ..common::cfg()
    };
    let mut k = Kernel::new(cfg, policy);
    let m = k.add_memcg("t", limit);
    (k, m)
}

fn file<P: ReclaimPolicy>(k: &mut Kernel<P>, pages: u64, memcg: MemcgId) -> OpenFile {
    OpenFile::new(k.core.shmem_file_setup(pages * PAGE_SIZE), 128, memcg)
}

/// The file's resident folios by order.
fn orders<P: ReclaimPolicy>(k: &Kernel<P>, mapping: u32) -> BTreeMap<u32, u64> {
    common::orders(k, mapping, |id, _| k.core.folio_in_shmem_cache(id))
}

fn write_all<P: ReclaimPolicy>(k: &mut Kernel<P>, f: &mut OpenFile, pages: u64, bs: u64) {
    let mut pos = 0;
    while pos < pages * PAGE_SIZE {
        assert_eq!(k.filemap_write(f, pos, bs), Some(bs));
        pos += bs;
    }
}

/// huge=always on 6.18: a write takes the largest empty aligned block,
/// PMD first; within_size only blocks ending inside i_size; never and
/// advise order 0; 6.12 PMD only.
#[test]
fn write_orders_follow_huge_and_the_release() {
    let run = |huge, release| {
        let (mut k, m) = kernel(ClassicLru::new(), huge, SwapKind::None, None, release);
        let mut f = file(&mut k, 1024 + 64, m);
        write_all(&mut k, &mut f, 1024 + 64, 128 << 10);
        k.check_invariants().unwrap();
        assert_eq!(k.core.memcg_nr_shmem(m), 1024 + 64);
        orders(&k, f.mapping)
    };
    // Two PMD folios, then the tail: the 64-page block.
    assert_eq!(
        run(TmpfsHuge::Always, None),
        BTreeMap::from([(9, 2), (6, 1)])
    );
    // The file is sized at creation (ftruncate, as the oracle's real
    // one): every block lies within i_size, as with always.
    assert_eq!(
        run(TmpfsHuge::WithinSize, None),
        BTreeMap::from([(9, 2), (6, 1)])
    );
    assert_eq!(run(TmpfsHuge::Never, None), BTreeMap::from([(0, 1088)]));
    assert_eq!(run(TmpfsHuge::Advise, None), BTreeMap::from([(0, 1088)]));
    // Before 6.14 a write may take PMD order only: the tail is order 0.
    assert_eq!(
        run(TmpfsHuge::Always, Some(KernelRelease::V6_12)),
        BTreeMap::from([(0, 64), (9, 2)])
    );
    // 6.14 to 6.17 size the folio by the write: 128 KiB writes, 32 pages.
    for k in [KernelRelease::V6_14, KernelRelease::V6_16] {
        assert_eq!(
            run(TmpfsHuge::Always, Some(k)),
            BTreeMap::from([(5, 34)]),
            "{k:?}"
        );
    }
}

/// 6.14's shmem_mapping_size_orders(): the order a write's remaining
/// length fills, rounded down, no larger than the index's alignment. 12
/// KiB writes: at page 0 an order-1 folio and an order-0 one; at page 3
/// (odd) order 0, then order 1 at page 4; every six pages the same.
#[test]
fn writes_sized_by_their_length_on_6_14() {
    let v6_14 = || {
        kernel(
            ClassicLru::new(),
            TmpfsHuge::Always,
            SwapKind::None,
            None,
            Some(KernelRelease::V6_14),
        )
    };
    let (mut k, m) = v6_14();
    let mut f = file(&mut k, 24, m);
    write_all(&mut k, &mut f, 24, 12 << 10);
    k.check_invariants().unwrap();
    assert_eq!(orders(&k, f.mapping), BTreeMap::from([(0, 8), (1, 8)]));
    // A write of 2 MiB less a page from page 0 fills order 8, not PMD.
    let (mut k, m) = v6_14();
    let mut f = file(&mut k, 512, m);
    assert_eq!(
        k.filemap_write(&mut f, 0, 511 * PAGE_SIZE),
        Some(511 * PAGE_SIZE)
    );
    let o = orders(&k, f.mapping);
    assert_eq!(o.get(&8), Some(&1), "{o:?}");
    assert!(!o.contains_key(&9), "{o:?}");
}

/// A fault in a shared mapping takes a PMD folio under huge=always, maps
/// it whole (thp_file_mapped) and counts shmem_alloc.
#[test]
fn a_fault_maps_a_pmd_folio() {
    let (mut k, m) = kernel(
        ClassicLru::new(),
        TmpfsHuge::Always,
        SwapKind::None,
        None,
        None,
    );
    let mut f = file(&mut k, 1024, m);
    assert!(k.mmap_access(&mut f, 700));
    for i in 512..1024 {
        assert!(k.mmap_access(&mut f, i));
    }
    assert_eq!(orders(&k, f.mapping), BTreeMap::from([(9, 1)]));
    assert_eq!(mthp(&k, 9, MthpStat::ShmemAlloc), 1);
    assert_eq!(k.core.vm.get(Item::THP_FILE_ALLOC), 1);
    assert_eq!(k.core.vm.get(Item::THP_FILE_MAPPED), 1);
    assert_eq!(k.core.memcgs[m as usize].stat.get(Item::PGFAULT), 1);
    assert_eq!(k.core.memcgs[m as usize].nr_mapped, 512);
    k.check_invariants().unwrap();
}

/// Over the limit with zram: the large folios go out whole (one swpout
/// per folio, pswpout in pages, one multi-order entry each) and a read
/// brings each entry back whole; both LRUs.
fn swap_whole<P: ReclaimPolicy>(policy: P) {
    let (mut k, m) = kernel(policy, TmpfsHuge::Always, SwapKind::Zram, Some(1024), None);
    let mut f = file(&mut k, 2048, m);
    write_all(&mut k, &mut f, 2048, 128 << 10);
    k.check_invariants().unwrap();
    let out = k.core.vm.get(Item::PSWPOUT);
    assert!(out >= 1024, "{out}");
    assert_eq!(out, 512 * mthp(&k, 9, MthpStat::Swpout));
    assert!(!k.core.files[f.mapping as usize].shmem_large_swap.is_empty());
    let mut pos = 0;
    while pos < 2048 * PAGE_SIZE {
        assert_eq!(k.filemap_read(&mut f, pos, 128 << 10), Some(128 << 10));
        pos += 128 << 10;
    }
    k.check_invariants().unwrap();
    let inn = k.core.vm.get(Item::PSWPIN);
    assert!(inn > 0);
    assert_eq!(inn, 512 * mthp(&k, 9, MthpStat::Swpin));
    let o = orders(&k, f.mapping);
    assert_eq!(o.keys().copied().collect::<Vec<_>>(), vec![9], "{o:?}");
    // Every page in the page cache or in a swap entry.
    let a = &k.core.files[f.mapping as usize];
    let swapped = (0..2048)
        .filter(|&i| matches!(a.slot(i), Slot::Swap(_)))
        .count() as u64;
    assert_eq!(k.core.memcg_nr_shmem(m) + swapped, 2048);
    k.truncate_inode_pages_final(f.mapping);
    k.check_invariants().unwrap();
    assert_eq!(k.core.memcg_nr_shmem(m), 0);
    assert_eq!(k.core.swap.inuse_pages, 0);
}

#[test]
fn swap_whole_classic() {
    swap_whole(ClassicLru::new());
}

#[test]
fn swap_whole_mglru() {
    swap_whole(LruGen::new());
}

/// Punching a hole through the middle of a PMD folio splits it at the
/// hole's ends and frees only the hole; through a swapped-out PMD entry,
/// the entry is read back (or split) first. The rest stays.
#[test]
fn a_hole_splits_folios_and_entries() {
    let (mut k, m) = kernel(
        ClassicLru::new(),
        TmpfsHuge::Always,
        SwapKind::Zram,
        Some(700),
        None,
    );
    let mut f = file(&mut k, 1024, m);
    write_all(&mut k, &mut f, 1024, 128 << 10);
    k.check_invariants().unwrap();
    let resident = k.core.memcg_nr_shmem(m);
    assert!(
        resident < 1024,
        "one of the PMD folios was swapped out: {resident}"
    );
    // Pages 100..=199 of each half.
    for base in [0u64, 512] {
        k.truncate_inode_pages_range(
            f.mapping,
            (base + 100) * PAGE_SIZE,
            (base + 200) * PAGE_SIZE - 1,
        );
        k.check_invariants().unwrap();
    }
    let a = &k.core.files[f.mapping as usize];
    for base in [0u64, 512] {
        for i in base + 100..base + 200 {
            assert!(
                matches!(a.slot(i), Slot::Empty | Slot::Shadow(_)),
                "page {i} still there"
            );
        }
        for i in [base + 99, base + 200] {
            assert!(
                matches!(a.slot(i), Slot::Folio(_) | Slot::Swap(_)),
                "page {i} gone"
            );
        }
    }
    let swapped = (0..1024)
        .filter(|&i| matches!(a.slot(i), Slot::Swap(_)))
        .count() as u64;
    assert_eq!(k.core.memcg_nr_shmem(m) + swapped, 1024 - 200);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random writes, reads, faults and hole punches on two tmpfs files
    /// with huge=always or within_size, a limit below their size and zram
    /// or a disk, both LRUs: the invariants hold after every step, and
    /// dropping the files leaves nothing behind.
    #[test]
    fn invariants_hold_with_tmpfs_huge(
        ops in proptest::collection::vec((0u8..4, 0u64..2, 0u64..1400, 1u64..300), 1..120),
        within in any::<bool>(), disk in any::<bool>(), mglru in any::<bool>(),
        limit in 500u64..1500,
    ) {
        let huge = if within { TmpfsHuge::WithinSize } else { TmpfsHuge::Always };
        let swap = if disk { SwapKind::Disk } else { SwapKind::Zram };
        let r = if mglru {
            random_ops(kernel(LruGen::new(), huge, swap, Some(limit), None), &ops)
        } else {
            random_ops(kernel(ClassicLru::new(), huge, swap, Some(limit), None), &ops)
        };
        if let Err(e) = r { prop_assert!(false, "{}", e); }
    }
}

fn random_ops<P: ReclaimPolicy>(
    (mut k, m): (Kernel<P>, MemcgId),
    ops: &[(u8, u64, u64, u64)],
) -> Result<(), String> {
    let mut files = [file(&mut k, 1400, m), file(&mut k, 1024, m)];
    for &(op, which, page, len) in ops {
        let f = &mut files[which as usize];
        let n = k.core.files[f.mapping as usize].nr_pages();
        let page = page % n;
        let len = len.min(n - page);
        let ok = match op {
            0 => k
                .filemap_write(f, page * PAGE_SIZE, len * PAGE_SIZE)
                .is_some(),
            1 => k
                .filemap_read(f, page * PAGE_SIZE, len * PAGE_SIZE)
                .is_some(),
            2 => k.mmap_access(f, page),
            _ => {
                k.truncate_inode_pages_range(
                    f.mapping,
                    page * PAGE_SIZE,
                    (page + len) * PAGE_SIZE - 1,
                );
                true
            }
        };
        if !ok {
            break;
        }
        k.check_invariants()?;
    }
    for f in &files {
        k.truncate_inode_pages_final(f.mapping);
    }
    k.check_invariants()?;
    if k.core.memcg_nr_shmem(m) != 0 {
        return Err(format!("{} shmem pages left", k.core.memcg_nr_shmem(m)));
    }
    Ok(())
}
