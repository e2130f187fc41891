//! What the model's integration tests share: the large-folio tests'
//! (large_folios.rs, mthp.rs, tmpfs_huge.rs) machine and folio counts, and
//! the machine of the LRU tests (mglru.rs, lru_add.rs,
//! workingset_protection.rs) with seed variants on top of the newest, and
//! the page cache of the flusher-wakeup tests (classic_reclaim.rs, mglru.rs).
#![allow(dead_code)]

use foliosim::mm::folio::{pg, Folio, FolioId};
use foliosim::mm::huge_memory::MthpStat;
use foliosim::mm::vmscan::ReclaimPolicy;
use foliosim::mm::{Kernel, MmConfig, Variants};
use std::collections::BTreeMap;

/// 256 MiB (8 reserved), 64 MiB of swap space when a test picks a swap
/// kind, the invariants checked after each operation.
pub fn cfg() -> MmConfig {
    MmConfig {
        ram_bytes: 256 << 20,
        reserved_bytes: 8 << 20,
        swap_bytes: 64 << 20,
        check_invariants: true,
        ..MmConfig::default()
    }
}

/// `ram_bytes` with no reserve, the newest variants with `variants`
/// applied, the invariants checked after each operation.
pub fn variants_cfg(ram_bytes: u64, variants: &str) -> MmConfig {
    let mut cfg = MmConfig {
        ram_bytes,
        reserved_bytes: 0,
        check_invariants: true,
        ..MmConfig::default()
    };
    cfg.variants = Variants::newest();
    cfg.variants.apply(variants).unwrap();
    cfg
}

/// Live folios of `mapping` that `keep` accepts, by order.
pub fn orders<P: ReclaimPolicy>(
    k: &Kernel<P>,
    mapping: u32,
    keep: impl Fn(FolioId, &Folio) -> bool,
) -> BTreeMap<u32, u64> {
    let mut h = BTreeMap::new();
    for (id, f) in k.core.folios.f.iter().enumerate() {
        if f.flags & pg::FREE == 0 && f.mapping == mapping && keep(id as FolioId, f) {
            *h.entry(f.order()).or_insert(0) += 1;
        }
    }
    h
}

/// The sysfs mTHP stat `stat` of size `order`.
pub fn mthp<P: ReclaimPolicy>(k: &Kernel<P>, order: u32, stat: MthpStat) -> u64 {
    k.core.mthp.0[order as usize][stat as usize]
}

/// A memcg's page cache of `n` clean pages of one file and `n` dirty pages
/// of another, read and written alternately page by page (`interleave`) or
/// the dirty ones first: what limit reclaim then takes decides whether it
/// wakes the flusher. Returns with nothing written back yet.
pub fn clean_beside_dirty<P: ReclaimPolicy>(
    k: &mut Kernel<P>,
    memcg: foliosim::mm::memcontrol::MemcgId,
    n: u64,
    interleave: bool,
) {
    use foliosim::mm::filemap::OpenFile;
    use foliosim::mm::readahead::FileRaState;
    use foliosim::mm::PAGE_SIZE;
    let open = |k: &mut Kernel<P>| OpenFile {
        mapping: k.core.add_file(n * PAGE_SIZE),
        ra: FileRaState::new(k.core.cfg.read_ahead_kb),
        fmode_random: false,
        vm_rand_read: false,
        vm_seq_read: false,
        memcg,
        pte: foliosim::mm::rmap::NO_PTES,
    };
    let (mut clean, mut log) = (open(k), open(k));
    if interleave {
        for i in 0..n {
            k.filemap_read(&mut clean, i * PAGE_SIZE, PAGE_SIZE)
                .unwrap();
            k.filemap_write(&mut log, i * PAGE_SIZE, PAGE_SIZE).unwrap();
        }
    } else {
        k.filemap_write(&mut log, 0, n * PAGE_SIZE).unwrap();
        k.filemap_read(&mut clean, 0, n * PAGE_SIZE).unwrap();
    }
    assert_eq!(k.core.wb.nr_dirty, n, "nothing written back yet");
}

/// The fio tests' machine (fio_options.rs, iolog_replay.rs): 1 GiB, no
/// memcg limit, classic LRU, the invariants checked.
pub fn fio_cfg() -> foliosim::sim::SimConfig {
    foliosim::sim::SimConfig {
        mm: MmConfig {
            ram_bytes: 1 << 30,
            check_invariants: true,
            ..MmConfig::default()
        },
        lru: foliosim::sim::LruKind::Classic,
        memcg_limit: None,
        seed: 1,
        timeline: false,
        lru_gen_sysctl: Vec::new(),
    }
}

/// A job file's text through the model on fio_cfg()'s machine.
pub fn run_fio_text(text: &str) -> foliosim::sim::RunReport {
    let jobs = foliosim_workload::fio::parse_job_str(text, "t.fio").unwrap();
    foliosim::sim::run_fio(fio_cfg(), &jobs)
}
