//! Classic LRU reclaim decisions as mm/vmscan.c (6.18) makes them:
//! prepare_scan_control() once per shrink_node from the target memcg's
//! (hierarchical) lruvec, snapshot_refaults() for the target at the end of
//! do_try_to_free_pages(), and shrink_folio_list()'s handling of folios
//! under writeback (activate in global reclaim, wait in v1 limit reclaim).

use foliosim::mm::filemap::OpenFile;
use foliosim::mm::memcontrol::{MemcgId, MemcgKnobs};
use foliosim::mm::readahead::FileRaState;
use foliosim::mm::vmscan::classic::ClassicLru;
use foliosim::mm::vmstat::Item;
use foliosim::mm::{blkdev::DeviceProfile, Kernel, MmConfig, SwapKind, PAGE_SIZE};

mod common;

fn cfg(ram_mb: u64, swap: SwapKind, device: &str) -> MmConfig {
    MmConfig {
        ram_bytes: ram_mb << 20,
        reserved_bytes: 4 << 20,
        swap,
        swap_bytes: 64 << 20,
        device: DeviceProfile::by_name(device).unwrap(),
        check_invariants: true,
        ..MmConfig::default()
    }
}

fn check(k: &Kernel<ClassicLru>) {
    if let Err(e) = k.check_invariants() {
        panic!("{e}");
    }
}

fn open(k: &mut Kernel<ClassicLru>, pages: u64, memcg: MemcgId) -> OpenFile {
    OpenFile {
        mapping: k.core.add_file(pages * PAGE_SIZE),
        ra: FileRaState::new(128),
        fmode_random: false,
        vm_rand_read: false,
        vm_seq_read: false,
        memcg,
        pte: foliosim::mm::rmap::NO_PTES,
    }
}

/// Writes `n` new anon pages in `memcg` (a fresh mm), in order.
fn write_anon(k: &mut Kernel<ClassicLru>, memcg: MemcgId, n: u64) {
    let mm = k.mm_alloc(memcg, 0);
    k.core.current = mm;
    let space = k.mmap_anon(mm, n * PAGE_SIZE);
    for i in 0..n {
        assert!(k.anon_access(space, i, memcg, true), "OOM at {i}");
    }
}

#[test]
fn target_with_plenty_of_inactive_file_trims_only_file_in_every_child() {
    // Parent P (limit) with A (anon only) and B (a file read once, in
    // order). The target's inactive file is large and not refaulting, so
    // prepare_scan_control() sets cache_trim_mode for the whole walk: A's
    // anon is not scanned even though A's own lruvec has no file at all
    // (deciding per lruvec would put A in SCAN_FRACT).
    let mut k = Kernel::new(cfg(256, SwapKind::Zram, "nvme"), ClassicLru::new());
    let p = k.add_memcg_child(
        0,
        "p",
        MemcgKnobs {
            max: Some(4096),
            ..Default::default()
        },
    );
    let a = k.add_memcg_child(p, "a", MemcgKnobs::default());
    let b = k.add_memcg_child(p, "b", MemcgKnobs::default());
    write_anon(&mut k, a, 1024);
    let mut f = open(&mut k, 8192, b);
    assert_eq!(
        k.filemap_read(&mut f, 0, 8192 * PAGE_SIZE),
        Some(8192 * PAGE_SIZE)
    );
    check(&k);
    assert!(
        k.core.vm.get(Item::PGSTEAL_FILE) >= 4096,
        "the file was trimmed"
    );
    assert_eq!(k.core.vm.get(Item::PGSCAN_ANON), 0, "anon left alone");
    assert_eq!(k.core.vm.get(Item::PSWPOUT), 0);
}

#[test]
fn refaults_are_snapshotted_for_the_target_once_per_reclaim() {
    // A file read twice through a small group refaults; after each limit
    // reclaim the target's snapshot equals its (hierarchical) activations,
    // and a child's own snapshot is left alone (snapshot_refaults() is for
    // the target only).
    let mut k = Kernel::new(cfg(256, SwapKind::None, "nvme"), ClassicLru::new());
    let p = k.add_memcg_child(
        0,
        "p",
        MemcgKnobs {
            max: Some(1024),
            ..Default::default()
        },
    );
    let c = k.add_memcg_child(p, "c", MemcgKnobs::default());
    let mut f = open(&mut k, 768, c);
    for _ in 0..3 {
        k.filemap_read(&mut f, 0, 768 * PAGE_SIZE).unwrap();
    }
    // 768 pages fit: now read a second file to push the first out and
    // back, so refaults activate.
    let mut g = open(&mut k, 768, c);
    k.filemap_read(&mut g, 0, 768 * PAGE_SIZE).unwrap();
    k.filemap_read(&mut f, 0, 768 * PAGE_SIZE).unwrap();
    assert!(
        k.core.vm.get(Item::WORKINGSET_ACTIVATE_FILE) > 0,
        "refaults activated"
    );
    k.try_to_free_mem_cgroup_pages(p, 32);
    assert_eq!(
        k.core.memcgs[p as usize].refaults_snapshot,
        k.core.workingset_activations(p)
    );
    assert_eq!(k.core.memcgs[c as usize].refaults_snapshot, [0, 0]);
    check(&k);
}

#[test]
fn limit_reclaim_waits_for_its_own_swap_writes() {
    // Case 3 of shrink_folio_list(): v1 limit reclaim meeting a folio it
    // sent to pageout (PG_reclaim) still under writeback waits for the
    // write and frees it. A write-once anon stream is then isolated at
    // most three times per folio freed: with its young PTE (kept), to
    // pageout, and once more to wait and free. (Kept on the inactive list
    // instead, the folios under writeback are scanned again and again.)
    let mut k = Kernel::new(cfg(256, SwapKind::Disk, "hdd"), ClassicLru::new());
    let m = k.add_memcg("t", Some(1000));
    write_anon(&mut k, m, 4000);
    check(&k);
    let scan = k.core.vm.get(Item::PGSCAN_ANON);
    let steal = k.core.vm.get(Item::PGSTEAL_ANON);
    assert!(steal >= 2900, "{steal}");
    // Folios written but not yet freed were isolated at most twice, those
    // still resident and never written at most once.
    let out = k.core.vm.get(Item::PSWPOUT);
    let resident = k.core.memcgs[m as usize].nr_anon;
    let bound = 3 * steal + 2 * (out - steal) + resident;
    assert!(
        scan <= bound,
        "scanned {scan} > {bound} (freed {steal}, written {out})"
    );
    // No folio under writeback was moved to the active list.
    assert_eq!(k.core.vm.get(Item::PGACTIVATE), 0);
    assert!(k.core.io_wait > 0, "reclaim waited for the disk");
}

#[test]
fn global_reclaim_activates_folios_under_writeback() {
    // Case 1/2: global reclaim does not wait: a folio under writeback is
    // marked PG_reclaim and activated (folio_end_writeback rotates it back
    // to the inactive tail). Write-once anon has no other reason to be
    // activated (a second look without a young PTE reclaims it).
    let mut k = Kernel::new(cfg(32, SwapKind::Disk, "hdd"), ClassicLru::new());
    let mm = k.mm_alloc(0, 0);
    k.core.current = mm;
    let n = 48 << 8; // 48 MiB through 28 MiB of RAM
    let space = k.mmap_anon(mm, n * PAGE_SIZE);
    for i in 0..n {
        assert!(k.anon_access(space, i, 0, true), "OOM at {i}");
    }
    check(&k);
    assert!(k.core.vm.get(Item::PSWPOUT) > 0);
    assert!(
        k.core.vm.get(Item::PGACTIVATE) > 0,
        "writeback folios activated"
    );
}

/// Limit reclaim of 32 pages in a group of clean and dirty file pages
/// (common::clean_beside_dirty): whether it woke the flusher (writeback
/// started), how many dirty folios it met, whether it slept, and what it
/// reclaimed.
fn reclaim_beside_dirty(interleave: bool) -> (bool, u64, bool, u64) {
    let mut k = Kernel::new(cfg(256, SwapKind::None, "nvme"), ClassicLru::new());
    let g = k.add_memcg_child(0, "g", MemcgKnobs::default());
    common::clean_beside_dirty(&mut k, g, 4096, interleave);
    let wait = k.core.io_wait;
    let got = k.try_to_free_mem_cgroup_pages(g, 32);
    check(&k);
    (
        k.core.wb.nr_dirty < 4096,
        k.core.vm.get(Item::NR_VMSCAN_IMMEDIATE),
        k.core.io_wait > wait,
        got,
    )
}

#[test]
fn only_a_batch_of_unqueued_dirty_folios_wakes_the_flusher() {
    // shrink_inactive_list(): the flushers are nudged when every folio
    // taken was dirty and not queued for writeback; dirty folios met among
    // clean ones are marked PG_reclaim and activated, and the flusher is
    // left to its own schedule.
    let (woke, met, slept, _) = reclaim_beside_dirty(true);
    assert!(met > 0, "reclaim met dirty folios");
    assert!(!woke, "clean folios were taken beside them: no wakeup");
    assert!(!slept);
    // An all-dirty batch: the flusher starts every dirty folio, and v1
    // limit reclaim sleeps (reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK))
    // until SWAP_CLUSTER_MAX pages are written, right after that batch:
    // the one batch (at priority 12, 4096 >> 12 folios) is all it meets
    // dirty before it goes on.
    let (woke, met, slept, got) = reclaim_beside_dirty(false);
    assert!(woke, "the tail was all dirty: the flusher is woken");
    assert!(slept, "memcg v1 reclaim throttles on the writeback");
    // (Before the throttle moved into the batch, this call activated
    // every dirty folio it met, then waited: 4,096 pages.)
    assert!(
        met <= 32,
        "one batch of dirty folios, then the throttle: {met}"
    );
    assert!(got >= 32, "it reclaimed after the wait: {got}");
}
