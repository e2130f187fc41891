//! count_shadow_nodes() as Linux 6.18 runs it on a classic-LRU host
//! (docs/findings/heldout-2026-12-02.md, "Shadow nodes"): the memcg's own
//! LRU and slab are read as last flushed, so a group younger than the
//! first periodic stats flush keeps no shadow nodes; and a large folio's
//! shadow is a multi-index entry in the node above, so files read in
//! folios of order 6 or more have no shadow-only leaves to reclaim.

mod common;

use foliosim::mm::filemap::OpenFile;
use foliosim::mm::readahead::FileRaState;
use foliosim::mm::vmscan::classic::ClassicLru;
use foliosim::mm::vmstat::Item;
use foliosim::mm::{Kernel, FLUSH_TIME_NS, PAGE_SIZE};

/// Reads a file six times the memcg's size twice in order, 4 KiB at a
/// time; returns (workingset_nodereclaim, file refaults).
fn two_passes(lazy_flush: bool, large_folios: bool, read_ahead_kb: u64) -> (u64, u64) {
    // 6.1-7.0's count_shadow_nodes() (NR_LRU_BASE counters, not
    // lruvec_lru_size()).
    let mut cfg = common::variants_cfg(256 << 20, "shadow-vmstat");
    cfg.memcg_stats_lazy_flush = lazy_flush;
    // The first periodic flush comes after the whole run.
    cfg.stats_flush_phase_ns = FLUSH_TIME_NS;
    cfg.large_folios = large_folios;
    cfg.read_ahead_kb = read_ahead_kb;
    let mut k = Kernel::new(cfg, ClassicLru::new());
    let memcg = k.add_memcg("shadows", Some(4096));
    let pages = 24576u64;
    let mut f = OpenFile {
        mapping: k.core.add_data_file(pages * PAGE_SIZE),
        ra: FileRaState::new(read_ahead_kb),
        fmode_random: false,
        vm_rand_read: false,
        vm_seq_read: false,
        memcg,
        pte: foliosim::mm::rmap::NO_PTES,
    };
    for _ in 0..2 {
        for p in 0..pages {
            k.filemap_read(&mut f, p * PAGE_SIZE, PAGE_SIZE).unwrap();
        }
    }
    assert!(
        k.core.now < FLUSH_TIME_NS,
        "the run ends before the first flush"
    );
    k.check_invariants().unwrap();
    let st = &k.core.memcgs[memcg as usize].stat;
    (
        st.get(Item::WORKINGSET_NODERECLAIM),
        st.get(Item::WORKINGSET_REFAULT_FILE),
    )
}

#[test]
fn unflushed_stats_let_the_shrinker_take_shadow_nodes() {
    // Current LRU sizes: one node per 8 of the memcg's 4096 pages (512) is
    // more than the ~330 shadow-only leaves, none goes. As 6.18 reads them
    // before the group's first flush, the memcg has no pages and the
    // shrinker takes half the excess at each pass once that is a batch.
    let (live_nodes, live_refaults) = two_passes(false, false, 128);
    let (stale_nodes, stale_refaults) = two_passes(true, false, 128);
    eprintln!("current: {live_nodes} nodes, {live_refaults} refaults; flushed: {stale_nodes}, {stale_refaults}");
    assert_eq!(live_nodes, 0);
    assert!(live_refaults >= 20000, "refaults {live_refaults}");
    assert!(stale_nodes >= 128, "nodes reclaimed {stale_nodes}");
    assert!(
        stale_refaults < live_refaults - 64 * 128,
        "each reclaimed node takes its 64 shadows: {stale_refaults} vs {live_refaults}"
    );
}

#[test]
fn large_folio_shadows_have_no_leaf_nodes_to_reclaim() {
    // 2 MiB read-ahead on a file system with large folios: the reads come
    // in folios of order 6 and more, whose shadows live in the level-1
    // node, so even with unflushed stats no leaf is shadow-only.
    let (nodes, refaults) = two_passes(true, true, 2048);
    eprintln!("large folios: {nodes} nodes, {refaults} refaults");
    assert_eq!(nodes, 0);
    assert!(refaults >= 20000, "refaults {refaults}");
}
