//! Memory cgroups (mm/memcontrol.c, mm/page_counter.c): hard limit, charge
//! batching through the per-cpu stock, limit reclaim in the charging task and
//! the OOM decision.

use super::vmstat::Counters;

pub type MemcgId = u16;
pub const ROOT_MEMCG: MemcgId = 0;

/// MEMCG_CHARGE_BATCH: pages charged to the page counter at once; the rest
/// sits in the per-cpu stock.
pub const MEMCG_CHARGE_BATCH: u64 = 64;
/// MAX_RECLAIM_RETRIES in try_charge_memcg().
pub const MAX_RECLAIM_RETRIES: u32 = 16;

#[derive(Clone, Debug)]
pub struct MemCgroup {
    pub id: MemcgId,
    pub name: String,
    /// memory.max / memory.limit_in_bytes, in pages; None = unlimited.
    pub limit: Option<u64>,
    /// page_counter usage (pages), including the stock.
    pub usage: u64,
    /// Pages pre-charged and not yet handed out (memcg_stock).
    pub stock: u64,
    /// Peak usage (memory.peak / max_usage_in_bytes).
    pub watermark: u64,
    /// Events and refault statistics of this memcg (memory.stat).
    pub stat: Counters,
    /// lruvec->nonresident_age: the clock of evictions and activations that
    /// refault distances are measured with.
    pub nonresident_age: u64,
    /// lruvec->refaults[]: WORKINGSET_ACTIVATE_{ANON,FILE} at the last
    /// reclaim (snapshot_refaults), to decide may_deactivate.
    pub refaults_snapshot: [u64; 2],
    /// Pages of file cache, anon, dirty, writeback, mapped (state counters).
    pub nr_file: u64,
    pub nr_anon: u64,
    pub nr_dirty: u64,
    pub nr_writeback: u64,
    pub nr_mapped: u64,
    /// Page-table pages charged to the memcg (NR_PAGETABLE).
    pub nr_pagetables: u64,
    pub oom_killed: bool,
}

impl MemCgroup {
    pub fn new(id: MemcgId, name: &str, limit: Option<u64>) -> Self {
        MemCgroup {
            id,
            name: name.to_string(),
            limit,
            usage: 0,
            stock: 0,
            watermark: 0,
            stat: Counters::default(),
            nonresident_age: 0,
            refaults_snapshot: [0; 2],
            nr_file: 0,
            nr_anon: 0,
            nr_dirty: 0,
            nr_writeback: 0,
            nr_mapped: 0,
            nr_pagetables: 0,
            oom_killed: false,
        }
    }

    /// mem_cgroup_margin(): pages that can still be charged.
    #[inline]
    pub fn margin(&self) -> u64 {
        match self.limit {
            Some(l) => l.saturating_sub(self.usage),
            None => u64::MAX,
        }
    }

    /// page_counter_try_charge() of `nr` pages.
    #[inline]
    pub fn page_counter_try_charge(&mut self, nr: u64) -> bool {
        if let Some(l) = self.limit {
            if self.usage + nr > l {
                return false;
            }
        }
        self.usage += nr;
        self.watermark = self.watermark.max(self.usage);
        true
    }

    /// consume_stock(): take `nr` pages from the per-cpu stock.
    #[inline]
    pub fn consume_stock(&mut self, nr: u64) -> bool {
        if self.stock >= nr {
            self.stock -= nr;
            true
        } else {
            false
        }
    }

    /// Uncharge `nr` pages (the kernel batches uncharges too; the page
    /// counter sees them at once here, which only matters for timing).
    #[inline]
    pub fn uncharge(&mut self, nr: u64) {
        self.usage -= nr;
    }

    /// drain_stock(): return the stock to the page counter (done before the
    /// charging task reclaims, so reclaim targets are exact).
    #[inline]
    pub fn drain_stock(&mut self) {
        self.usage -= self.stock;
        self.stock = 0;
    }
}

// ---- Swap accounting (mm/memcontrol.c, Linux 6.18) ----
// Kept apart from MemCgroup so the hierarchy work on the rest of this file
// merges cleanly; Core::memcg_swap is indexed by memcg id.

/// A memcg's swap counter: memory.swap.current / memory.swap.max (v2), the
/// slots charged to it (swap_cgroup). On v1 the memsw counter charges swap
/// together with memory at page-charge time, so mem_cgroup_try_charge_swap()
/// never fails there; `max` then stays None.
#[derive(Clone, Debug, Default)]
pub struct MemcgSwap {
    /// Slots charged (page_counter swap usage), swap-cache slots included.
    pub usage: u64,
    /// memory.swap.max in pages; None = max.
    pub max: Option<u64>,
    /// memory.swap.events: max (charge failed at the limit), fail.
    pub events_max: u64,
    pub events_fail: u64,
    /// NR_SHMEM: tmpfs folios in page caches charged here (memory.stat
    /// `shmem`); kept beside swap as the other swap-backed file memory.
    pub nr_shmem: u64,
}

impl super::Core {
    /// mem_cgroup_try_charge_swap(): charge `nr` slots to the memcg's swap
    /// counter; false at memory.swap.max (MEMCG_SWAP_MAX and
    /// MEMCG_SWAP_FAIL counted), and the caller keeps the folio in memory.
    pub fn mem_cgroup_try_charge_swap(&mut self, memcg: MemcgId, nr: u64) -> bool {
        let s = &mut self.memcg_swap[memcg as usize];
        if let Some(max) = s.max {
            if s.usage + nr > max {
                s.events_max += 1;
                s.events_fail += 1;
                return false;
            }
        }
        s.usage += nr;
        true
    }

    /// mem_cgroup_uncharge_swap(): the slots were freed.
    pub fn mem_cgroup_uncharge_swap(&mut self, memcg: MemcgId, nr: u64) {
        let s = &mut self.memcg_swap[memcg as usize];
        debug_assert!(s.usage >= nr);
        s.usage -= nr;
    }

    /// mem_cgroup_swap_full(): vm_swap_full(), or the memcg at half its
    /// swap limit.
    pub fn mem_cgroup_swap_full(&self, memcg: MemcgId) -> bool {
        if self.swap.vm_swap_full() {
            return true;
        }
        let s = &self.memcg_swap[memcg as usize];
        s.max.is_some_and(|m| s.usage * 2 >= m)
    }

    /// memory.swap.current (v2) / memory.stat `swap` (v1), in pages.
    pub fn memcg_swap_usage(&self, memcg: MemcgId) -> u64 {
        if memcg == 0 {
            self.memcg_swap.iter().map(|s| s.usage).sum()
        } else {
            self.memcg_swap[memcg as usize].usage
        }
    }
}

impl super::Core {
    /// mem_cgroup_get_nr_swap_pages(): the swap slots the memcg may still
    /// use: the free slots, capped by its swap.max headroom.
    pub fn mem_cgroup_get_nr_swap_pages(&self, memcg: MemcgId) -> u64 {
        let free = self.swap.nr_free();
        match self
            .memcg_swap
            .get(memcg as usize)
            .and_then(|s| s.max.map(|m| m.saturating_sub(s.usage)))
        {
            Some(room) => free.min(room),
            None => free,
        }
    }
}

impl super::Core {
    /// memory.stat `swap` under cgroup v1 (MEMCG_SWAP with memsw
    /// accounting), in pages: memcg1_swapout() adds a slot when its folio
    /// leaves memory (__remove_mapping) and memcg1_swapin() takes it off
    /// when a folio is read back into the swap cache, so it counts the
    /// memcg's slots whose data is only on swap: slots in use with no
    /// swap-cache folio. (v2's memory.swap.current is memcg_swap_usage().)
    pub fn memcg1_swap(&self, memcg: MemcgId) -> u64 {
        let si = &self.swap;
        (1..si.max as usize)
            .filter(|&o| {
                let m = si.swap_map[o];
                m != 0
                    && m != super::swapfile::SWAP_MAP_BAD
                    && (memcg == 0 || si.swap_cgroup[o] == memcg)
                    && si.swap_cache_folio(o as u32).is_none()
            })
            .count() as u64
    }
}
