//! Splitting large folios (mm/huge_memory.c): folio_split()'s
//! non-uniform split, which truncation of part of a large page-cache folio
//! asks for (truncate_inode_partial_folio() -> try_folio_split()), the
//! split to order 0 reclaim does on a large anonymous folio it cannot swap
//! out whole (split_folio_to_list()), and the per-size mTHP stats.

use super::folio::{pg, Folio, FolioId, HPAGE_PMD_ORDER, NIL};
use super::vmscan::ReclaimPolicy;
use super::workingset::XA_CHUNK_SHIFT;
use super::{Core, Kernel};

/// The per-size mTHP events the model counts
/// (/sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/stats/).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum MthpStat {
    AnonFaultAlloc,
    AnonFaultFallback,
    AnonFaultFallbackCharge,
    Swpout,
    SwpoutFallback,
    Swpin,
    SwpinFallback,
    SwpinFallbackCharge,
    ShmemAlloc,
    ShmemFallback,
    ShmemFallbackCharge,
}

/// The stats files' names, in MthpStat's order.
pub const MTHP_STAT_NAMES: [&str; 11] = [
    "anon_fault_alloc",
    "anon_fault_fallback",
    "anon_fault_fallback_charge",
    "swpout",
    "swpout_fallback",
    "swpin",
    "swpin_fallback",
    "swpin_fallback_charge",
    "shmem_alloc",
    "shmem_fallback",
    "shmem_fallback_charge",
];

/// mthp_stats: per order (1 to PMD_ORDER), each MthpStat.
#[derive(Clone, Debug, Default)]
pub struct MthpStats(pub [[u64; MTHP_STAT_NAMES.len()]; HPAGE_PMD_ORDER as usize + 1]);

impl MthpStats {
    /// The sysfs view: "hugepages-<size>kB" -> stat -> count, for the
    /// orders in `orders` (a bitmask).
    pub fn sysfs(
        &self,
        orders: u32,
    ) -> std::collections::BTreeMap<String, std::collections::BTreeMap<&'static str, u64>> {
        (1..=HPAGE_PMD_ORDER)
            .filter(|o| orders & (1 << o) != 0)
            .map(|o| {
                let kb = 4u64 << o;
                let m = MTHP_STAT_NAMES
                    .iter()
                    .zip(self.0[o as usize])
                    .map(|(&n, v)| (n, v))
                    .collect();
                (format!("hugepages-{kb}kB"), m)
            })
            .collect()
    }
}

/// split_folio_to_list() of an isolated anonymous folio in reclaim: every
/// page but the first becomes an order-0 folio with the parent's flags,
/// mapping slot, memcg and generation, put back on the LRU
/// (folio_putback_lru: the kernel queues them on reclaim's own list
/// instead); the parent, now order 0, goes on being reclaimed. Reclaim
/// takes this path when folio_alloc_swap() finds no run of slots for the
/// whole folio (the swpout_fallback events).
pub fn split_folio_to_lru<P: ReclaimPolicy + ?Sized>(core: &mut Core, policy: &mut P, id: FolioId) {
    let f = *core.folios.get(id);
    let (fi, nr) = (f.index as u64, f.nr_pages());
    if nr == 1 {
        return;
    }
    core.folios.get_mut(id).flags &= !pg::ORDER_MASK;
    let flags = f.flags & !(pg::ORDER_MASK | pg::LRU | pg::ISOLATED);
    for idx in fi + 1..fi + nr {
        let piece = Folio {
            flags,
            index: idx as u32,
            prev: NIL,
            next: NIL,
            lru: 0,
            ..f
        };
        let pid = core.folios.alloc_split_piece(piece);
        core.files[f.mapping as usize].move_to_piece(idx, pid);
        policy.folio_putback_lru(core, pid);
    }
}

impl<P: ReclaimPolicy> Kernel<P> {
    /// try_folio_split(): split the page-cache folio `id` so that page `at`
    /// becomes an order-0 folio, the way the buddy allocator splits: at
    /// each order below the folio's, the half not holding `at` becomes a
    /// folio of its own (order-9 at page 3 gives orders 8, 7, ..., 2, then
    /// 0, 0, 1 around it). The pages stay charged, mapped, dirty and on the
    /// LRU list (generation) they were; the piece holding the folio's first
    /// page keeps its id. PG_readahead is the first page's only. False,
    /// with nothing done, for an order-0 folio, one off the LRU, locked or
    /// under writeback (the caller waits first), or in a memcg a cache_ext
    /// policy tracks (its lists follow whole folios).
    pub fn try_folio_split(&mut self, id: FolioId, at: u64) -> bool {
        let f = *self.core.folios.get(id);
        let order = f.order();
        let fi = f.index as u64;
        if order == 0
            || !(fi..fi + (1 << order)).contains(&at)
            || !f.test(pg::LRU)
            || f.test(pg::LOCKED)
            || f.test(pg::WRITEBACK)
            || self.core.cache_ext.any_active()
        {
            return false;
        }
        let mapping = f.mapping as usize;
        let old_nr = f.nr_pages();
        let flags = f.flags & !(pg::ORDER_MASK | pg::READAHEAD | pg::RECLAIM);
        let mut pieces: Vec<FolioId> = Vec::with_capacity(order as usize + 1);
        // The blocks: at each order k the block holding `at` splits; the
        // other half is a piece of order k. Last, `at` itself.
        let mut blocks = Vec::with_capacity(order as usize + 1);
        let mut base = fi;
        for k in (0..order).rev() {
            let half = 1u64 << k;
            if at < base + half {
                blocks.push((base + half, k));
            } else {
                blocks.push((base, k));
                base += half;
            }
        }
        blocks.push((base, 0));
        for (start, k) in blocks {
            if start == fi {
                let p = self.core.folios.get_mut(id);
                p.flags = (p.flags & !pg::ORDER_MASK) | (k << pg::ORDER_SHIFT);
                continue;
            }
            let piece = Folio {
                flags: flags | (k << pg::ORDER_SHIFT),
                index: start as u32,
                prev: NIL,
                next: NIL,
                ..f
            };
            let pid = self.core.folios.alloc_split_piece(piece);
            for idx in start..start + (1 << k) {
                self.core.files[mapping].move_to_piece(idx, pid);
            }
            pieces.push(pid);
        }
        self.policy
            .lru_add_split_folio(&mut self.core, id, old_nr, &pieces);
        if order >= XA_CHUNK_SHIFT {
            // xas_split(): the 64 pages around `at` now hold pieces below
            // order 6, which the xarray keeps in a leaf node of their own.
            self.core.files[mapping].set_multi_index(at & !63, 0);
            self.core
                .workingset_update_node(mapping as u32, at, f.memcg);
        }
        let anon = self.core.files[mapping].owner != super::mmap::NO_MM;
        if f.test(pg::DIRTY) && !self.core.files[mapping].shmem && !anon {
            // The flusher's queue gets each dirty piece beside the parent
            // (tmpfs and anonymous folios have no writeback through it).
            let wb = &mut self.core.wb;
            let (pos, t) = match wb.dirty.iter().position(|&(x, _)| x == id) {
                Some(p) => (p + 1, wb.dirty[p].1),
                None => (wb.dirty.len(), self.core.now),
            };
            for (i, &pid) in pieces.iter().enumerate() {
                wb.dirty.insert(pos + i, (pid, t));
            }
        }
        true
    }
}
