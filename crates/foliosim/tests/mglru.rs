//! The multi-gen LRU policy end to end: invariants after every reclaim
//! batch, and the directions of seeds 000 and 004 at small scale.

use foliosim::mm::filemap::OpenFile;
use foliosim::mm::readahead::FileRaState;
use foliosim::mm::vmscan::lru_gen::LruGen;
use foliosim::mm::vmscan::ReclaimPolicy;
use foliosim::mm::vmstat::Item;
use foliosim::mm::{Kernel, MmConfig, Variants, PAGE_SIZE};

fn config(variants: &str) -> MmConfig {
    let mut cfg = MmConfig { ram_bytes: 256 << 20, reserved_bytes: 0, check_invariants: true, ..MmConfig::default() };
    cfg.variants = Variants::newest();
    cfg.variants.apply(variants).unwrap();
    cfg
}

fn open(k: &mut Kernel<LruGen>, pages: u64, memcg: u16) -> OpenFile {
    let mapping = k.core.add_file(pages * PAGE_SIZE);
    OpenFile { mapping, ra: FileRaState::new(k.core.cfg.read_ahead_kb), fmode_random: false, vm_rand_read: false, vm_seq_read: false, memcg }
}

/// Seed 000's workload scaled down: a file of `file_pages` read 4K every
/// 64K through mmap in a memcg of `limit` pages. Returns the file refaults
/// and the pages read per simulated second over the passes after `warmup`.
fn strided_mmap(variants: &str, file_pages: u64, limit: u64, warmup: usize, passes: usize) -> (u64, f64) {
    let mut k = Kernel::new(config(variants), LruGen::new());
    let memcg = k.add_memcg("strided", Some(limit));
    let mut f = open(&mut k, file_pages, memcg);
    let (mut base, mut t0, mut reads) = (0, 0, 0u64);
    for pass in 0..warmup + passes {
        if pass == warmup {
            base = k.core.memcgs[memcg as usize].stat.get(Item::WORKINGSET_REFAULT_FILE);
            t0 = k.core.now;
        }
        for idx in (0..file_pages).step_by(16) {
            assert!(k.mmap_access(&mut f, idx), "OOM at pass {pass}");
            if pass >= warmup {
                reads += 1;
            }
        }
    }
    let refaults = k.core.memcgs[memcg as usize].stat.get(Item::WORKINGSET_REFAULT_FILE) - base;
    let secs = (k.core.now - t0) as f64 / 1e9;
    k.check_invariants().unwrap();
    (refaults, reads as f64 / secs)
}

#[test]
fn seed_000_fault_path_mark_accessed_stops_refaults_on_arm64() {
    let (before, bw_before) = strided_mmap("arm64,pf-set-active", 6144, 4096, 3, 6);
    let (after, bw_after) = strided_mmap("arm64,pf-mark-accessed", 6144, 4096, 3, 6);
    eprintln!("arm64: before {before} refaults {bw_before:.0} reads/s; after {after} refaults {bw_after:.0} reads/s");
    assert!(before > 1000, "the strided hot set thrashes before the patch: {before}");
    assert!(after * 100 <= before, "after {after} vs before {before}");
    assert!(bw_after > 5.0 * bw_before, "bandwidth {bw_after} vs {bw_before}");
}

#[test]
fn seed_000_makes_no_material_difference_with_young_prefaulted_ptes() {
    let (before, _) = strided_mmap("x86,pf-set-active", 6144, 4096, 3, 6);
    let (after, _) = strided_mmap("x86,pf-mark-accessed", 6144, 4096, 3, 6);
    eprintln!("x86: before {before} after {after}");
    let (lo, hi) = (before.min(after), before.max(after));
    assert!(hi <= lo * 2 + 100, "x86 before {before} after {after}");
}

/// Seed 004's workload: a hot set read repeatedly and a larger cold set
/// read once per round, through file descriptors, in a memcg too small for
/// both. Returns the file refaults.
fn hot_cold_reads(variants: &str) -> u64 {
    let mut k = Kernel::new(config(variants), LruGen::new());
    let memcg = k.add_memcg("hotcold", Some(3072));
    let mut hot = open(&mut k, 2048, memcg);
    let mut cold = open(&mut k, 16384, memcg);
    let mut cold_pos = 0u64;
    for _round in 0..24 {
        for _ in 0..3 {
            for p in 0..2048 {
                k.filemap_read(&mut hot, p * PAGE_SIZE, PAGE_SIZE).unwrap();
            }
        }
        for _ in 0..2048 {
            k.filemap_read(&mut cold, cold_pos * PAGE_SIZE, PAGE_SIZE).unwrap();
            cold_pos = (cold_pos + 1) % 16384;
        }
    }
    k.check_invariants().unwrap();
    k.core.memcgs[memcg as usize].stat.get(Item::WORKINGSET_REFAULT_FILE)
}

#[test]
fn seed_004_rework_cuts_file_refaults_of_a_hot_fd_set() {
    let legacy = hot_cold_reads("wsprot-legacy");
    let rework = hot_cold_reads("wsprot-rework");
    eprintln!("hot/cold fd reads: legacy {legacy} rework {rework}");
    assert!(rework < legacy, "rework {rework} legacy {legacy}");
}

#[test]
#[ignore]
fn explore() {
    for caps in ["0x0007", "0x0001"] {
        for v in ["x86,pf-set-active", "x86,pf-mark-accessed", "arm64,pf-set-active", "arm64,pf-mark-accessed"] {
            let mut k = Kernel::new(config(v), LruGen::new());
            k.policy.set_sysctl("lru_gen.enabled", caps).unwrap();
            let memcg = k.add_memcg("strided", Some(4096));
            let mut f = open(&mut k, 6144, memcg);
            for _pass in 0..9 {
                for idx in (0..6144).step_by(16) {
                    assert!(k.mmap_access(&mut f, idx));
                }
            }
            let st = &k.core.memcgs[memcg as usize].stat;
            eprintln!("{caps} {v}: refault {} activate {} pgscan {} pgrefill {} stats {:?}", st.get(Item::WORKINGSET_REFAULT_FILE), st.get(Item::PGACTIVATE), st.get(Item::PGSCAN_FILE), st.get(Item::PGREFILL), k.policy.lrugen[memcg as usize].stats);
        }
    }
}

#[test]
#[ignore]
fn explore2() {
    for v in ["wsprot-legacy", "wsprot-rework"] {
        let mut k = Kernel::new(config(v), LruGen::new());
        let memcg = k.add_memcg("hotcold", Some(3072));
        let mut hot = open(&mut k, 2048, memcg);
        let mut cold = open(&mut k, 16384, memcg);
        let mut cold_pos = 0u64;
        for round in 0..24 {
            for _ in 0..3 {
                for p in 0..2048 {
                    k.filemap_read(&mut hot, p * PAGE_SIZE, PAGE_SIZE).unwrap();
                }
            }
            for _ in 0..2048 {
                k.filemap_read(&mut cold, cold_pos * PAGE_SIZE, PAGE_SIZE).unwrap();
                cold_pos = (cold_pos + 1) % 16384;
            }
            if round == 12 {
                eprintln!("{v} r12: {}", serde_json::to_string(&k.policy.debug_view(&k.core, memcg)).unwrap());
            }
        }
        let st = &k.core.memcgs[memcg as usize].stat;
        eprintln!("{v}: refault {} activate {} pgscan {} pgrefill {} stats {:?}", st.get(Item::WORKINGSET_REFAULT_FILE), st.get(Item::WORKINGSET_ACTIVATE_FILE), st.get(Item::PGSCAN_FILE), st.get(Item::PGREFILL), k.policy.lrugen[memcg as usize].stats);
    }
}
