//! Anonymous memory and swap: round trips through zram and a disk keep the
//! model's invariants (slots = PTE entries + swap-cache folios, memcg swap
//! usage = its slots, rss counters = PTEs), and the kernel's counters move
//! as the 6.18 paths make them move.

use foliosim::mm::filemap::{OpenFile, Slot};
use foliosim::mm::memcontrol::MemcgId;
use foliosim::mm::vmscan::classic::ClassicLru;
use foliosim::mm::vmscan::lru_gen::LruGen;
use foliosim::mm::vmscan::ReclaimPolicy;
use foliosim::mm::vmstat::Item;
use foliosim::mm::{blkdev::DeviceProfile, Kernel, MmConfig, SwapKind, PAGE_SIZE};
use proptest::prelude::*;

fn cfg(swap: SwapKind, swap_pages: u64, device: &str) -> MmConfig {
    MmConfig {
        ram_bytes: 64 << 20,
        reserved_bytes: 4 << 20,
        swap,
        swap_bytes: swap_pages * PAGE_SIZE,
        device: DeviceProfile::by_name(device).unwrap(),
        check_invariants: true,
        ..MmConfig::default()
    }
}

fn kernel<P: ReclaimPolicy>(c: MmConfig, policy: P, limit: u64) -> (Kernel<P>, MemcgId, u32) {
    let mut k = Kernel::new(c, policy);
    let m = k.add_memcg("t", Some(limit));
    let mm = k.mm_alloc(m, 0);
    // The test is the task faulting: the OOM killer's `current`.
    k.core.current = mm;
    (k, m, mm)
}

fn stat<P: ReclaimPolicy>(k: &Kernel<P>, i: Item) -> u64 {
    k.core.vm.get(i)
}

fn check<P: ReclaimPolicy>(k: &Kernel<P>) {
    if let Err(e) = k.check_invariants() {
        panic!("{e}");
    }
}

/// Writes `n` pages of a new anon region, then touches them again
/// (`write` or read) in order; returns the space.
fn write_then_touch<P: ReclaimPolicy>(
    k: &mut Kernel<P>,
    m: MemcgId,
    mm: u32,
    n: u64,
    write: bool,
) -> u32 {
    let space = k.mmap_anon(mm, n * PAGE_SIZE);
    for i in 0..n {
        assert!(k.anon_access(space, i, m, true), "OOM at first write {i}");
    }
    check(k);
    for i in 0..n {
        assert!(k.anon_access(space, i, m, write), "OOM at second pass {i}");
    }
    check(k);
    space
}

#[test]
fn zram_round_trip_skips_the_swap_cache() {
    let (mut k, m, mm) = kernel(cfg(SwapKind::Zram, 8192, "virtio"), ClassicLru::new(), 1000);
    write_then_touch(&mut k, m, mm, 3000, false);
    let (out, inn) = (stat(&k, Item::PSWPOUT), stat(&k, Item::PSWPIN));
    assert!(
        out >= 2000,
        "3000 pages through a 1000-page limit: pswpout {out}"
    );
    assert!(inn >= 1000, "the second pass reads back: pswpin {inn}");
    // SWP_SYNCHRONOUS_IO with count 1: one read per major fault, no
    // readahead; every slot read had a shadow.
    assert_eq!(stat(&k, Item::PGMAJFAULT), inn);
    assert_eq!(stat(&k, Item::SWAP_RA), 0);
    assert_eq!(stat(&k, Item::WORKINGSET_REFAULT_ANON), inn);
    // Memory and swap add up to what was written.
    let r = k.core.mms[mm as usize].rss;
    assert_eq!(r[1] + r[2], 3000);
    assert_eq!(k.core.memcg_swap_usage(m), k.core.swap.inuse_pages);
    // zram frees the slot at swap-in: nothing is both resident and on
    // swap, so v1's `swap` equals the slots in use.
    assert_eq!(k.core.memcg1_swap(m), k.core.swap.inuse_pages);
    // zram's pool came out of free memory, uncharged.
    let z = k.core.swap.zram.as_ref().unwrap();
    assert_eq!(z.stored_pages, k.core.swap.inuse_pages);
    assert_eq!(
        z.pool.len() as u64,
        (z.stored_pages * z.comp_bytes).div_ceil(PAGE_SIZE)
    );
    assert!(k.core.memcgs[m as usize].usage <= 1000);
}

#[test]
fn disk_round_trip_reads_ahead_into_the_swap_cache() {
    // nvme is non-rotational: VMA readahead.
    let (mut k, m, mm) = kernel(cfg(SwapKind::Disk, 8192, "nvme"), ClassicLru::new(), 1000);
    write_then_touch(&mut k, m, mm, 3000, false);
    let (inn, maj) = (stat(&k, Item::PSWPIN), stat(&k, Item::PGMAJFAULT));
    let (ra, hit) = (stat(&k, Item::SWAP_RA), stat(&k, Item::SWAP_RA_HIT));
    assert!(
        ra > 0 && hit > 0,
        "sequential swap-in reads ahead: ra {ra} hit {hit}"
    );
    assert!(
        maj < inn,
        "readahead hits are minor faults: {maj} major, {inn} read"
    );
    assert_eq!(
        inn,
        maj + ra,
        "each read is a fault's page or a read-ahead one"
    );
    assert!(k.core.io_wait > 0, "disk reads wait");
}

#[test]
fn disk_swap_out_is_written_in_contiguous_runs() {
    let (mut k, m, mm) = kernel(cfg(SwapKind::Disk, 8192, "nvme"), ClassicLru::new(), 1000);
    let space = k.mmap_anon(mm, 3000 * PAGE_SIZE);
    let before = k.core.dev.requests;
    for i in 0..3000 {
        assert!(k.anon_access(space, i, m, true));
    }
    let writes = k.core.dev.requests - before;
    let out = stat(&k, Item::PSWPOUT);
    assert!(out >= 2000);
    // Reclaim batches of 32 get consecutive slots: one request a batch.
    assert!(writes * 8 < out, "{writes} write requests for {out} pages");
}

#[test]
fn page_cluster_sets_cluster_readahead() {
    // hdd is rotational: swap_cluster_readahead().
    let run = |pc: u32| {
        let mut c = cfg(SwapKind::Disk, 8192, "hdd");
        c.page_cluster = pc;
        let (mut k, m, mm) = kernel(c, ClassicLru::new(), 1000);
        write_then_touch(&mut k, m, mm, 2000, false);
        (
            stat(&k, Item::SWAP_RA),
            stat(&k, Item::PGMAJFAULT),
            stat(&k, Item::PSWPIN),
        )
    };
    let (ra0, maj0, in0) = run(0);
    assert_eq!((ra0, maj0), (0, in0), "page-cluster 0: no readahead");
    let (ra3, maj3, _) = run(3);
    assert!(ra3 > 0, "page-cluster 3 reads ahead");
    assert!(
        maj3 < maj0,
        "and takes fewer major faults: {maj3} vs {maj0}"
    );
}

#[test]
fn vma_readahead_off_falls_back_to_cluster_readahead() {
    let mut c = cfg(SwapKind::Disk, 8192, "nvme");
    c.vma_ra_enabled = false;
    let (mut k, m, mm) = kernel(c, ClassicLru::new(), 1000);
    write_then_touch(&mut k, m, mm, 2000, false);
    assert!(stat(&k, Item::SWAP_RA_HIT) > 0);
    // The cluster path feeds its hits to swapin_readahead_hits; the VMA
    // state stays unused.
    assert!(k.core.swap.ra.vma.is_empty());
}

#[test]
fn swap_full_leaves_anon_unreclaimed_and_ooms() {
    let (mut k, m, mm) = kernel(cfg(SwapKind::Zram, 65, "virtio"), ClassicLru::new(), 500);
    let space = k.mmap_anon(mm, 2000 * PAGE_SIZE);
    let mut oom_at = None;
    for i in 0..2000 {
        if !k.anon_access(space, i, m, true) {
            oom_at = Some(i);
            break;
        }
    }
    check(&k);
    let i = oom_at.expect("with 64 slots and 500 pages of memory, 2000 pages OOM");
    assert!(i <= 500 + 64, "OOM at {i}");
    assert_eq!(stat(&k, Item::PSWPOUT), 64, "the header slot is never used");
    // The faulting task was the victim: exit_mm gave its slots back.
    assert!(k.core.mms[mm as usize].oom_killed);
    assert_eq!(k.core.swap.inuse_pages, 0);
}

#[test]
fn munmap_frees_swap_slots_and_zram_memory() {
    let (mut k, m, mm) = kernel(cfg(SwapKind::Zram, 8192, "virtio"), ClassicLru::new(), 1000);
    let space = write_then_touch(&mut k, m, mm, 3000, false);
    assert!(k.core.swap.inuse_pages > 0);
    let free_before = k.core.nr_free();
    k.munmap_anon(mm, space);
    check(&k);
    assert_eq!(k.core.swap.inuse_pages, 0);
    assert_eq!(k.core.memcg_swap_usage(m), 0);
    assert!(k.core.swap.zram.as_ref().unwrap().pool.is_empty());
    assert_eq!(k.core.mms[mm as usize].rss, [0; 4]);
    assert_eq!(k.core.memcgs[m as usize].nr_anon, 0);
    assert!(k.core.nr_free() > free_before);
}

#[test]
fn munmap_with_disk_writeback_in_flight() {
    let (mut k, m, mm) = kernel(cfg(SwapKind::Disk, 8192, "hdd"), ClassicLru::new(), 1000);
    let space = k.mmap_anon(mm, 1500 * PAGE_SIZE);
    for i in 0..1500 {
        assert!(k.anon_access(space, i, m, true));
    }
    k.munmap_anon(mm, space);
    check(&k);
    // Folios still under writeback keep their slot until reclaim frees them.
    let left = k.core.swap.inuse_pages;
    assert!(
        left <= k.core.wb.nr_writeback,
        "{left} slots, {} under writeback",
        k.core.wb.nr_writeback
    );
    k.core.wait_until(k.core.now + 1_000_000_000);
    k.wb_complete();
    k.try_to_free_mem_cgroup_pages(m, 2000);
    check(&k);
    assert_eq!(k.core.swap.inuse_pages, 0);
    assert_eq!(k.core.memcgs[m as usize].nr_anon, 0);
}

#[test]
fn read_faults_map_the_zero_page() {
    let (mut k, m, mm) = kernel(cfg(SwapKind::Zram, 8192, "virtio"), ClassicLru::new(), 1000);
    let space = k.mmap_anon(mm, 100 * PAGE_SIZE);
    for _ in 0..2 {
        for i in 0..100 {
            assert!(k.anon_access(space, i, m, false));
        }
    }
    assert_eq!(
        stat(&k, Item::PGFAULT),
        100,
        "the second pass hits the zero-page PTEs"
    );
    assert_eq!(k.core.memcgs[m as usize].nr_anon, 0);
    assert_eq!(k.core.mms[mm as usize].rss, [0; 4]);
    assert!(k.anon_access(space, 7, m, true));
    assert_eq!(
        stat(&k, Item::PGFAULT),
        101,
        "a write to the zero page faults"
    );
    assert_eq!(k.core.mms[mm as usize].rss[1], 1);
    check(&k);
}

#[test]
fn swap_max_keeps_folios_in_memory() {
    let (mut k, m, mm) = kernel(cfg(SwapKind::Zram, 8192, "virtio"), ClassicLru::new(), 1000);
    k.core.memcgs[m as usize].swap_max = Some(100);
    let space = k.mmap_anon(mm, 2000 * PAGE_SIZE);
    let mut ok = true;
    for i in 0..2000 {
        ok = k.anon_access(space, i, m, true);
        if !ok {
            break;
        }
    }
    check(&k);
    assert!(!ok, "1000 pages + 100 of swap cannot hold 2000");
    assert!(k.core.memcg_swap_usage(m) <= 100);
    assert!(k.core.memcg_swap[m as usize].events_max > 0);
}

#[test]
fn mglru_swaps_anon_round_trip() {
    let (mut k, m, mm) = kernel(cfg(SwapKind::Zram, 8192, "virtio"), LruGen::new(), 1000);
    write_then_touch(&mut k, m, mm, 3000, true);
    assert!(stat(&k, Item::PSWPIN) >= 1000);
    assert!(stat(&k, Item::PGSTEAL_ANON) >= 2000);
    // Write faults free the slot of what they swap in.
    let r = k.core.mms[mm as usize].rss;
    assert_eq!(r[1] + r[2], 3000);
}

fn counters_after(swap: SwapKind, device: &str) -> (Vec<u64>, u64) {
    let (mut k, m, mm) = kernel(cfg(swap, 8192, device), ClassicLru::new(), 800);
    let space = k.mmap_anon(mm, 2500 * PAGE_SIZE);
    let mut x = 7u64;
    for _ in 0..6000 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        assert!(k.anon_access(space, (x >> 33) % 2500, m, x & 1 == 0));
    }
    (k.core.vm.0.to_vec(), k.core.now)
}

#[test]
fn same_inputs_same_counters() {
    for (s, d) in [(SwapKind::Zram, "virtio"), (SwapKind::Disk, "nvme")] {
        let a = counters_after(s, d);
        assert_eq!(a, counters_after(s, d));
        assert!(a.0[Item::PSWPIN as usize] > 0);
    }
}

fn shmem_file<P: ReclaimPolicy>(k: &mut Kernel<P>, pages: u64, memcg: MemcgId) -> OpenFile {
    OpenFile::new(k.core.shmem_file_setup(pages * PAGE_SIZE), 128, memcg)
}

fn swap_entries<P: ReclaimPolicy>(k: &Kernel<P>, mapping: u32) -> u64 {
    let a = &k.core.files[mapping as usize];
    (0..a.nr_pages())
        .filter(|&i| matches!(a.slot(i), Slot::Swap(_)))
        .count() as u64
}

#[test]
fn tmpfs_pages_swap_out_and_back_through_read_write() {
    let (mut k, m, _) = kernel(cfg(SwapKind::Zram, 8192, "virtio"), ClassicLru::new(), 1000);
    let mut f = shmem_file(&mut k, 3000, m);
    assert_eq!(
        k.filemap_write(&mut f, 0, 3000 * PAGE_SIZE),
        Some(3000 * PAGE_SIZE)
    );
    check(&k);
    let out = stat(&k, Item::PSWPOUT);
    assert!(out >= 2000, "tmpfs over the limit swaps: {out}");
    // Every page is either in the page cache (shmem) or a swap entry in
    // the file's slot.
    assert_eq!(k.core.memcg_nr_shmem(m) + swap_entries(&k, f.mapping), 3000);
    assert_eq!(k.core.dev.requests, 0, "tmpfs never touches the disk");
    for p in 0..3000 {
        assert_eq!(
            k.filemap_read(&mut f, p * PAGE_SIZE, PAGE_SIZE),
            Some(PAGE_SIZE)
        );
    }
    check(&k);
    assert!(stat(&k, Item::PSWPIN) >= 1000);
    assert!(stat(&k, Item::WORKINGSET_REFAULT_ANON) >= 1000);
    assert_eq!(
        stat(&k, Item::PGMAJFAULT),
        0,
        "read(2) swap-ins are not faults"
    );
    assert_eq!(k.core.memcg_nr_shmem(m) + swap_entries(&k, f.mapping), 3000);
    // Shmem counts as file memory on the anon LRU.
    let sizes = k.policy.lru_sizes(m);
    assert_eq!(sizes.inactive_file + sizes.active_file, 0);
    assert_eq!(k.core.memcgs[m as usize].nr_file, k.core.memcg_nr_shmem(m));
}

#[test]
fn tmpfs_truncation_frees_pages_and_swap() {
    let (mut k, m, _) = kernel(cfg(SwapKind::Disk, 8192, "nvme"), ClassicLru::new(), 1000);
    let mut f = shmem_file(&mut k, 3000, m);
    assert!(k.filemap_write(&mut f, 0, 3000 * PAGE_SIZE).is_some());
    assert!(k.core.swap.inuse_pages > 0);
    // Half the file first: its swap entries and folios go, the rest stays.
    k.truncate_inode_pages_range(f.mapping, 1500 * PAGE_SIZE, u64::MAX);
    check(&k);
    assert_eq!(k.core.memcg_nr_shmem(m) + swap_entries(&k, f.mapping), 1500);
    k.core.wait_until(k.core.now + 1_000_000_000);
    k.truncate_inode_pages_final(f.mapping);
    check(&k);
    assert_eq!(k.core.memcg_nr_shmem(m), 0);
    assert_eq!(swap_entries(&k, f.mapping), 0);
    // Swap-cache folios still under writeback keep their slots until
    // reclaim takes them.
    k.wb_complete();
    k.try_to_free_mem_cgroup_pages(m, 2000);
    check(&k);
    assert_eq!(k.core.swap.inuse_pages, 0);
    assert_eq!(
        k.core.memcgs[m as usize].usage - k.core.memcgs[m as usize].stock,
        0
    );
}

#[test]
fn tmpfs_holes_read_as_zeroes_without_memory() {
    let (mut k, m, _) = kernel(cfg(SwapKind::Zram, 8192, "virtio"), ClassicLru::new(), 1000);
    let mut f = shmem_file(&mut k, 500, m);
    assert_eq!(
        k.filemap_read(&mut f, 0, 500 * PAGE_SIZE),
        Some(500 * PAGE_SIZE)
    );
    assert_eq!(k.core.memcgs[m as usize].nr_file, 0);
    assert_eq!(k.core.memcg_nr_shmem(m), 0);
    // A mapping's read fault allocates (SGP_CACHE).
    assert!(k.mmap_access(&mut f, 3));
    assert!(k.mmap_access(&mut f, 3));
    assert_eq!(k.core.memcg_nr_shmem(m), 1);
    assert_eq!(stat(&k, Item::PGFAULT), 1);
    check(&k);
}

#[test]
fn tmpfs_mapping_refaults_from_disk_swap_are_major() {
    let (mut k, m, _) = kernel(cfg(SwapKind::Disk, 8192, "hdd"), ClassicLru::new(), 1000);
    let mut f = shmem_file(&mut k, 2000, m);
    for _ in 0..2 {
        for p in 0..2000 {
            assert!(k.mmap_access(&mut f, p));
        }
    }
    check(&k);
    let (maj, inn, ra) = (
        stat(&k, Item::PGMAJFAULT),
        stat(&k, Item::PSWPIN),
        stat(&k, Item::SWAP_RA),
    );
    assert!(maj > 0 && inn > 0);
    assert!(ra > 0, "shmem swap-in reads the slot's cluster ahead");
    assert_eq!(inn, maj + ra);
}

#[derive(Debug, Clone)]
enum Op {
    Shm(u64, u8),
    Touch(u8, u64, bool),
    Munmap(u8),
    Mmap(u8),
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Random anon writes, reads, munmaps and re-mmaps on zram and disk
    /// swap under both LRUs: the invariants hold after every step (and
    /// after every reclaim batch inside it).
    #[test]
    fn swap_invariants_hold(
        ops in proptest::collection::vec(prop_oneof![
            8 => (0u8..3, 0u64..1200, any::<bool>()).prop_map(|(v, p, w)| Op::Touch(v, p, w)),
            1 => (0u8..3).prop_map(Op::Munmap),
            1 => (0u8..3).prop_map(Op::Mmap),
            3 => (0u64..800, 0u8..3).prop_map(|(p, how)| Op::Shm(p, how)),
        ], 1..400),
        disk in any::<bool>(),
        mglru in any::<bool>(),
        limit in 300u64..900,
        swap_pages in 64u64..2000,
    ) {
        let c = cfg(if disk { SwapKind::Disk } else { SwapKind::Zram }, swap_pages, "nvme");
        if mglru {
            run_ops(kernel(c, LruGen::new(), limit), &ops)?;
        } else {
            run_ops(kernel(c, ClassicLru::new(), limit), &ops)?;
        }
    }
}

fn run_ops<P: ReclaimPolicy>(
    (mut k, m, mm): (Kernel<P>, MemcgId, u32),
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let mut vmas: Vec<Option<u32>> = (0..3)
        .map(|_| Some(k.mmap_anon(mm, 1200 * PAGE_SIZE)))
        .collect();
    let mut shm = shmem_file(&mut k, 800, m);
    for o in ops {
        match *o {
            Op::Shm(p, how) => {
                let ok = match how {
                    0 => k.filemap_read(&mut shm, p * PAGE_SIZE, PAGE_SIZE).is_some(),
                    1 => k
                        .filemap_write(&mut shm, p * PAGE_SIZE, PAGE_SIZE)
                        .is_some(),
                    _ => k.mmap_access(&mut shm, p),
                };
                if !ok {
                    break;
                }
            }
            Op::Touch(v, p, w) => {
                if let Some(s) = vmas[v as usize] {
                    if !k.anon_access(s, p, m, w) {
                        break;
                    }
                }
            }
            Op::Munmap(v) => {
                if let Some(s) = vmas[v as usize].take() {
                    k.munmap_anon(mm, s);
                }
            }
            Op::Mmap(v) => {
                if vmas[v as usize].is_none() {
                    vmas[v as usize] = Some(k.mmap_anon(mm, 1200 * PAGE_SIZE));
                }
            }
        }
        if let Err(e) = k.check_invariants() {
            prop_assert!(false, "{}", e);
        }
        prop_assert!(k.core.memcgs[m as usize].usage <= limit_of(&k, m));
    }
    Ok(())
}

fn limit_of<P: ReclaimPolicy>(k: &Kernel<P>, m: MemcgId) -> u64 {
    k.core.memcgs[m as usize].limit.unwrap()
}

#[test]
fn an_anon_regions_page_tables_are_charged_at_first_fault_and_freed_at_munmap() {
    // 1,100 pages span three 2 MiB regions (512 PTEs each): three
    // page-table pages, charged at the first fault in each (a read's
    // zero-page mapping needs its table too), once.
    let (mut k, m, mm) = kernel(cfg(SwapKind::Zram, 8192, "virtio"), ClassicLru::new(), 4000);
    let space = k.mmap_anon(mm, 1100 * PAGE_SIZE);
    // The page counter less the per-CPU charge stock (MEMCG_CHARGE_BATCH).
    let usage = |k: &Kernel<ClassicLru>| {
        let g = &k.core.memcgs[m as usize];
        g.usage - g.stock
    };
    assert!(k.anon_access(space, 0, m, false));
    assert_eq!(k.core.memcgs[m as usize].nr_pagetables, 1);
    assert_eq!(usage(&k), 1, "the zero page is not charged, its table is");
    for i in 0..1100 {
        assert!(k.anon_access(space, i, m, true));
    }
    assert_eq!(k.core.memcgs[m as usize].nr_pagetables, 3);
    assert_eq!(usage(&k), 1100 + 3);
    // The owner's mm counts them too (oom_badness() adds them).
    assert_eq!(k.core.mms[mm as usize].nr_ptes, 3);
    check(&k);
    // A second pass faults nothing in: no new table.
    for i in 0..1100 {
        assert!(k.anon_access(space, i, m, false));
    }
    assert_eq!(k.core.memcgs[m as usize].nr_pagetables, 3);
    k.munmap_anon(mm, space);
    assert_eq!(k.core.memcgs[m as usize].nr_pagetables, 0);
    assert_eq!(k.core.mms[mm as usize].nr_ptes, 0);
    assert_eq!(usage(&k), 0, "folios and tables uncharged");
    check(&k);
}
