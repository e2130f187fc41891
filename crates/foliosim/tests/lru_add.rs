//! The per-CPU lru_add batch (mm/swap.c): folio_add_lru() holds up to
//! FOLIO_BATCH_SIZE folios off the LRU; the flags they gather meanwhile
//! choose their list or generation at the drain.

use foliosim::mm::filemap::OpenFile;
use foliosim::mm::readahead::FileRaState;
use foliosim::mm::vmscan::classic::{ClassicLru, LRU_ACTIVE_FILE, LRU_INACTIVE_FILE};
use foliosim::mm::vmscan::lru_gen::LruGen;
use foliosim::mm::vmscan::ReclaimPolicy;
use foliosim::mm::{Kernel, MmConfig, FOLIO_BATCH_SIZE, PAGE_SIZE};

mod common;

fn config(variants: &str) -> MmConfig {
    common::variants_cfg(64 << 20, variants)
}

/// A file opened with POSIX_FADV_RANDOM: each read adds the one folio it
/// reads, nothing ahead.
fn open_random<P: ReclaimPolicy>(k: &mut Kernel<P>, pages: u64, memcg: u16) -> OpenFile {
    let mapping = k.core.add_file(pages * PAGE_SIZE);
    OpenFile {
        mapping,
        ra: FileRaState::new(k.core.cfg.read_ahead_kb),
        fmode_random: true,
        vm_rand_read: false,
        vm_seq_read: false,
        memcg,
        pte: foliosim::mm::rmap::NO_PTES,
    }
}

fn batched<P: ReclaimPolicy>(k: &Kernel<P>, cpu: usize) -> usize {
    k.core.lru_add.get(cpu).map_or(0, |b| b.folios().len())
}

#[test]
fn folios_reach_the_lru_when_the_batch_fills_or_drains() {
    let mut k = Kernel::new(config(""), ClassicLru::new());
    let m = k.add_memcg("t", None);
    let mut f = open_random(&mut k, 256, m);
    let n = FOLIO_BATCH_SIZE as u64 + 9;
    for p in 0..n {
        k.filemap_read(&mut f, p * PAGE_SIZE, PAGE_SIZE).unwrap();
    }
    let inactive =
        |k: &Kernel<ClassicLru>| k.policy.lruvecs[m as usize].lists[LRU_INACTIVE_FILE].len;
    // The first FOLIO_BATCH_SIZE went to the LRU when the batch filled.
    assert_eq!(inactive(&k), FOLIO_BATCH_SIZE as u64);
    assert_eq!(batched(&k, 0), 9);
    assert_eq!(
        k.core.files[f.mapping as usize].nrpages, n,
        "cached while batched"
    );
    k.check_invariants().unwrap();
    k.lru_add_drain_cpu(0);
    assert_eq!(inactive(&k), n);
    assert_eq!(batched(&k, 0), 0);
    k.check_invariants().unwrap();
}

#[test]
fn a_second_read_while_batched_activates_at_the_drain() {
    // __lru_cache_activate_folio(): the classic LRU's folio_mark_accessed()
    // of a referenced folio still in this CPU's batch sets PG_active, so it
    // goes straight to the active list.
    let mut k = Kernel::new(config(""), ClassicLru::new());
    let m = k.add_memcg("t", None);
    let mut f = open_random(&mut k, 64, m);
    for p in 0..4 {
        k.filemap_read(&mut f, p * PAGE_SIZE, PAGE_SIZE).unwrap();
    }
    k.filemap_read(&mut f, 0, PAGE_SIZE).unwrap();
    k.filemap_read(&mut f, PAGE_SIZE, PAGE_SIZE).unwrap();
    k.lru_add_drain_cpu(0);
    let lists = &k.policy.lruvecs[m as usize].lists;
    assert_eq!(lists[LRU_ACTIVE_FILE].len, 2);
    assert_eq!(lists[LRU_INACTIVE_FILE].len, 2);
    // Another CPU's batch is not searched: the folio stays inactive.
    k.core.cpu = 1;
    k.filemap_read(&mut f, 8 * PAGE_SIZE, PAGE_SIZE).unwrap();
    k.core.cpu = 0;
    k.filemap_read(&mut f, 8 * PAGE_SIZE, PAGE_SIZE).unwrap();
    k.filemap_read(&mut f, 8 * PAGE_SIZE, PAGE_SIZE).unwrap();
    k.lru_add_drain_cpu(1);
    let lists = &k.policy.lruvecs[m as usize].lists;
    assert_eq!(lists[LRU_ACTIVE_FILE].len, 2);
    assert_eq!(lists[LRU_INACTIVE_FILE].len, 3);
    k.check_invariants().unwrap();
}

#[test]
fn a_batched_folio_truncated_leaves_the_batch() {
    let mut k = Kernel::new(config(""), ClassicLru::new());
    let m = k.add_memcg("t", None);
    let mut f = open_random(&mut k, 64, m);
    for p in 0..6 {
        k.filemap_read(&mut f, p * PAGE_SIZE, PAGE_SIZE).unwrap();
    }
    assert_eq!(batched(&k, 0), 6);
    k.truncate_pagecache(f.mapping, 2 * PAGE_SIZE);
    assert_eq!(batched(&k, 0), 2);
    assert_eq!(k.core.files[f.mapping as usize].nrpages, 2);
    k.check_invariants().unwrap();
    k.lru_add_drain_cpu(0);
    assert_eq!(k.policy.lruvecs[m as usize].lists[LRU_INACTIVE_FILE].len, 2);
}

#[test]
fn limit_reclaim_drains_its_cpu_first() {
    // 40 pages of limit, one of them the slab of the file's first xarray
    // node: the first FOLIO_BATCH_SIZE reads fill the batch, which goes to
    // the LRU; 8 more wait in it. The next read's charge reclaims, and
    // shrink_inactive_list() drains this CPU's batch before it isolates,
    // so the batch holds only the new folio afterwards.
    let mut k = Kernel::new(config(""), ClassicLru::new());
    let limit = 40;
    let m = k.add_memcg("t", Some(limit));
    let mut f = open_random(&mut k, 256, m);
    let pages = limit - 1;
    for p in 0..pages {
        k.filemap_read(&mut f, p * PAGE_SIZE, PAGE_SIZE).unwrap();
    }
    assert_eq!(batched(&k, 0), 8);
    let steal = |k: &Kernel<ClassicLru>| {
        k.core.memcgs[m as usize]
            .stat
            .get(foliosim::mm::vmstat::Item::PGSTEAL_DIRECT)
    };
    assert_eq!(steal(&k), 0);
    k.filemap_read(&mut f, pages * PAGE_SIZE, PAGE_SIZE)
        .unwrap();
    assert!(steal(&k) > 0, "the read reclaimed");
    assert_eq!(batched(&k, 0), 1, "drained, then the new folio");
    assert!(k.core.memcgs[m as usize].usage <= limit);
    k.check_invariants().unwrap();
}

/// Generation sizes (file pages) from the debugfs view, oldest first.
fn file_gens(k: &Kernel<LruGen>, m: u16) -> Vec<u64> {
    k.policy
        .lru_gen_seq_show(&k.core, m)
        .lines()
        .skip(2)
        .map(|l| l.split_whitespace().nth(3).unwrap().parse().unwrap())
        .collect()
}

#[test]
fn a_pread_folio_is_referenced_at_the_drain_so_seed_000_merged_places_it_younger() {
    // 7.2's lru_gen_folio_seq() puts a folio with PG_referenced one
    // generation younger; a read marks its folio accessed while the folio
    // waits in the batch, so at the drain it has the flag.
    let run = |variants: &str| {
        let mut k = Kernel::new(config(variants), LruGen::new());
        let m = k.add_memcg("t", None);
        let mut f = open_random(&mut k, 64, m);
        for p in 0..10 {
            k.filemap_read(&mut f, p * PAGE_SIZE, PAGE_SIZE).unwrap();
        }
        assert_eq!(file_gens(&k, m).iter().sum::<u64>(), 0, "all batched");
        k.lru_add_drain_cpu(0);
        k.check_invariants().unwrap();
        file_gens(&k, m)
    };
    let merged = run("pf-merged");
    let unmerged = run("pf-mark-accessed");
    assert_eq!(merged.iter().sum::<u64>(), 10);
    assert_eq!(merged[0], 0, "none in the oldest: {merged:?}");
    assert_eq!(merged[1], 10, "{merged:?}");
    assert_eq!(unmerged[0], 10, "{unmerged:?}");
}
