//! What the model's integration tests share: the large-folio tests'
//! (large_folios.rs, mthp.rs, tmpfs_huge.rs) machine and folio counts, and
//! the machine of the LRU tests (mglru.rs, lru_add.rs,
//! workingset_protection.rs) with seed variants on top of the newest.
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
