//! The page allocator (mm/page_alloc.c): zone watermarks and folio
//! allocation with its memcg charge, the slow path's kswapd wakeup, direct
//! reclaim and OOM.

use serde::Serialize;

use super::folio::FolioId;
use super::memcontrol::MemcgId;
use super::vmscan::ReclaimPolicy;
use super::vmstat::Item;
use super::{Kernel, PAGE_SIZE, SWAP_CLUSTER_MAX};

/// Zone watermarks (mm/page_alloc.c __setup_per_zone_wmarks).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Watermarks {
    pub min: u64,
    pub low: u64,
    pub high: u64,
}

impl Watermarks {
    pub fn compute(managed_pages: u64, min_free_kbytes: Option<u64>, scale_factor: u64) -> Self {
        // calculate_min_free_kbytes(): sqrt(lowmem_kbytes * 16), clamped.
        let lowmem_kb = managed_pages * (PAGE_SIZE / 1024);
        let mfk = min_free_kbytes
            .unwrap_or_else(|| ((lowmem_kb * 16) as f64).sqrt() as u64)
            .clamp(128, 262144);
        let min = mfk / (PAGE_SIZE / 1024);
        let tmp = (min / 4).max(managed_pages * scale_factor / 10000);
        Watermarks {
            min,
            low: min + tmp,
            high: min + 2 * tmp,
        }
    }
}

impl<P: ReclaimPolicy> Kernel<P> {
    /// Allocates and charges one page for `memcg`: the page allocator's
    /// watermark checks (kswapd, direct reclaim) and mem_cgroup_charge().
    /// `may_retry` is false for readahead's __GFP_NORETRY allocations.
    /// Returns None when the allocation fails (readahead stops; a fault OOMs).
    #[inline(always)]
    pub fn alloc_folio(&mut self, memcg: MemcgId, may_retry: bool) -> Option<FolioId> {
        self.alloc_folio_order(memcg, 0, may_retry)
    }

    /// alloc_folio() of 1 << `order` pages (filemap_alloc_folio() and its
    /// charge). A large folio is costly above PAGE_ALLOC_COSTLY_ORDER: its
    /// charge never OOM-kills (mem_cgroup_oom() skips costly orders), so
    /// a failure sends the caller to a smaller order.
    #[inline(always)]
    pub fn alloc_folio_order(
        &mut self,
        memcg: MemcgId,
        order: u32,
        may_retry: bool,
    ) -> Option<FolioId> {
        self.try_alloc_folio_order(memcg, order, may_retry).ok()
    }

    /// alloc_folio_order() saying why it failed: `Err(true)` when the
    /// memcg charge failed (the mTHP *_fallback_charge events), `Err(false)`
    /// when the page allocator did.
    #[inline(always)]
    pub fn try_alloc_folio_order(
        &mut self,
        memcg: MemcgId,
        order: u32,
        may_retry: bool,
    ) -> Result<FolioId, bool> {
        let nr = 1u64 << order;
        // mem_cgroup_charge() first: the kernel charges right after the
        // allocation, but charging first keeps the page counter exact.
        if memcg != 0 && !self.try_charge(memcg, nr, may_retry) {
            return Err(true);
        }
        let c = &self.core;
        // Above the low watermark with kswapd at rest nothing is woken or
        // reclaimed: the slow path's first round would take a free frame.
        let fast = !c.in_reclaim && c.folios.nr_free >= c.wmark.low + nr && !c.kswapd.unbalanced;
        let id = match fast.then(|| self.core.folios.alloc_order(order)).flatten() {
            Some(id) => id,
            None => self
                .alloc_folio_slow(memcg, order, may_retry)
                .ok_or(false)?,
        };
        Ok(self.folio_allocated(id, memcg, nr))
    }

    /// A charged frame handed out: pgalloc, the allocator's CPU time, the
    /// folio's memcg, memcg v1's pgpgin (one per folio whatever its size:
    /// memcg1_charge_statistics).
    #[inline(always)]
    fn folio_allocated(&mut self, id: FolioId, memcg: MemcgId, nr: u64) -> FolioId {
        self.core.count_vm(Item::PGALLOC, nr);
        self.core.cpu(self.core.cost.page_alloc);
        self.core.folios.get_mut(id).memcg = memcg;
        self.core.count_memcg(memcg, Item::MEMCG_PGPGIN, 1);
        id
    }

    /// An anonymous mTHP allocation and its charge with vma_thp_gfp_mask()
    /// (alloc_anon_folio(), alloc_swap_folio()): with defrag=always,
    /// reclaim once and no retry (__GFP_NORETRY); otherwise no direct
    /// reclaim at all: the charge fails when the memcg has no margin
    /// (try_charge_memcg()'s !gfpflags_allow_blocking(): no max event
    /// either) and the page allocator takes only what is free above the
    /// min watermark (kswapd woken for the defer modes). `Err(true)` for a
    /// failed charge.
    pub fn try_alloc_thp_folio(&mut self, memcg: MemcgId, order: u32) -> Result<FolioId, bool> {
        let defrag = self.core.cfg.thp_defrag;
        if defrag.direct_reclaim() {
            return self.try_alloc_folio_order(memcg, order, false);
        }
        let nr = 1u64 << order;
        if memcg != 0 && !self.try_charge_gfp(memcg, nr, false, false) {
            return Err(true);
        }
        if defrag.kswapd_reclaim()
            && !self.core.in_reclaim
            && (self.core.folios.nr_free <= self.core.wmark.low + nr || self.core.kswapd.unbalanced)
        {
            let was_charging = self.core.charging.replace((memcg, nr));
            self.wakeup_kswapd();
            self.core.charging = was_charging;
        }
        let id = if self.core.folios.nr_free >= self.core.wmark.min + nr {
            self.core.folios.alloc_order(order)
        } else {
            None
        };
        let Some(id) = id else {
            self.core.mem_cgroup_uncharge(memcg, nr);
            return Err(false);
        };
        Ok(self.folio_allocated(id, memcg, nr))
    }

    /// alloc_folio() below the low watermark: kswapd, direct reclaim, OOM.
    /// The charge is taken; a failure gives it back.
    #[inline(never)]
    fn alloc_folio_slow(&mut self, memcg: MemcgId, order: u32, may_retry: bool) -> Option<FolioId> {
        let nr = 1u64 << order;
        // A large folio's allocation is __GFP_NORETRY: one reclaim round,
        // no OOM; the caller falls back to a smaller order.
        let may_retry = may_retry && order == 0;
        // The page is charged but not yet allocated: reclaim run by the
        // allocation must not see that as a charge without a folio.
        let was_charging = self.core.charging.replace((memcg, nr));
        let id = loop {
            if !self.core.in_reclaim
                && (self.core.folios.nr_free <= self.core.wmark.low || self.core.kswapd.unbalanced)
            {
                // wakeup_kswapd(), or a kswapd still at work on an
                // unbalanced node: the model runs its work at once, on its
                // own clock (not the task's).
                self.wakeup_kswapd();
            }
            // Above the min watermark the fast path allocates.
            if self.core.folios.nr_free >= self.core.wmark.min + nr || self.core.in_reclaim {
                if let Some(id) = self.core.folios.alloc_order(order) {
                    break id;
                }
            }
            // __alloc_pages_slowpath(): direct reclaim, then OOM.
            self.core.count_vm(Item::ALLOCSTALL, 1);
            let reclaimed = self.try_to_free_pages(SWAP_CLUSTER_MAX.max(nr));
            if order > 0 && self.core.folios.nr_free < nr {
                self.core.mem_cgroup_uncharge(memcg, nr);
                self.core.charging = was_charging;
                return None;
            }
            if reclaimed == 0 && self.core.folios.nr_free == 0 {
                if !self.core.in_reclaim && self.reclaim_throttle_writeback() {
                    continue;
                }
                // out_of_memory(): a victim other than the allocating task
                // frees its memory and the allocation retries.
                if may_retry && self.out_of_memory() && !self.current_is_dying() {
                    continue;
                }
                self.core.mem_cgroup_uncharge(memcg, nr);
                self.core.charging = was_charging;
                return None;
            }
            if let Some(id) = self.core.folios.alloc_order(order) {
                break id;
            }
        };
        self.core.charging = was_charging;
        Some(id)
    }
}
