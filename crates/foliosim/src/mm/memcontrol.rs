//! Memory cgroups (mm/memcontrol.c, mm/memcontrol-v1.c): the hierarchy,
//! the knobs (memory.max/high/low/min, swappiness, oom.group,
//! oom_kill_disable), charge batching through the per-cpu stock, memory.high
//! throttling and the memory.events counters. The page counters' hierarchical
//! arithmetic is in page_counter.rs, the OOM killer in oom_kill.rs.
//!
//! What a driver of processes does: create cgroups parents first with
//! `Kernel::add_memcg_child(parent, name, MemcgKnobs)` (sizes in pages,
//! bytes / PAGE_SIZE as page_counter_memparse rounds), a process with
//! `mm_alloc(memcg, oom_score_adj)`; before each access of a task set
//! `core.current` to its mm, and after it call
//! `mem_cgroup_handle_over_high()` (the return to user space). An access
//! that fails means: `mms[mm].oom_killed` (the task was killed: stop it),
//! `core.memcg_in_oom` set (v1 oom_kill_disable: the task waits until
//! `mem_cgroup_oom_synchronize()` says it may retry), or neither (no task
//! was eligible: the kernel retries the fault forever; report it).

use super::vmscan::ReclaimPolicy;
use super::vmstat::{Counters, Item};
use super::{Core, Kernel, SWAP_CLUSTER_MAX};

pub type MemcgId = u16;
pub const ROOT_MEMCG: MemcgId = 0;
/// The root has no parent.
pub const NO_PARENT: MemcgId = MemcgId::MAX;

/// MEMCG_CHARGE_BATCH: pages charged to the page counter at once; the rest
/// sits in the per-cpu stock.
pub const MEMCG_CHARGE_BATCH: u64 = 64;
/// MAX_RECLAIM_RETRIES in try_charge_memcg().
/// PAGE_ALLOC_COSTLY_ORDER: larger allocations and charges give up
/// instead of OOM-killing.
pub const PAGE_ALLOC_COSTLY_ORDER: u32 = 3;
pub const MAX_RECLAIM_RETRIES: u32 = 16;
/// CONFIG_HZ of the host the model is compared with (6.18, HZ=250): the
/// memory.high penalty is computed in jiffies and rounds at this grain.
pub const HZ: u64 = 250;
/// MEMCG_MAX_HIGH_DELAY_JIFFIES: the longest memory.high sleep per return
/// to user space (2 s).
pub const MEMCG_MAX_HIGH_DELAY_JIFFIES: u64 = 2 * HZ;
/// MEMCG_DELAY_PRECISION_SHIFT / MEMCG_DELAY_SCALING_SHIFT of
/// calculate_overage() and calculate_high_delay().
pub const MEMCG_DELAY_PRECISION_SHIFT: u32 = 20;
pub const MEMCG_DELAY_SCALING_SHIFT: u32 = 14;

/// enum memcg_memory_event (include/linux/memcontrol.h), the memory.events
/// keys; the swap events are k-swap's.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum MemcgEvent {
    MEMCG_LOW,
    MEMCG_HIGH,
    MEMCG_MAX,
    MEMCG_OOM,
    MEMCG_OOM_KILL,
    MEMCG_OOM_GROUP_KILL,
}
pub const MEMCG_NR_MEMORY_EVENTS: usize = 6;
/// memory.events key names, by MemcgEvent.
pub const MEMCG_EVENT_NAMES: [&str; MEMCG_NR_MEMORY_EVENTS] =
    ["low", "high", "max", "oom", "oom_kill", "oom_group_kill"];

/// The knobs a cgroup is created with, in pages (`None` = the kernel's
/// default: "max" for limits, 0 for protection, the parent's swappiness).
/// Mirrors the scenario's `[[cgroup]]` (crates/workload/src/scenario.rs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MemcgKnobs {
    /// memory.max / memory.limit_in_bytes.
    pub max: Option<u64>,
    /// memory.high.
    pub high: Option<u64>,
    /// memory.low.
    pub low: Option<u64>,
    /// memory.min.
    pub min: Option<u64>,
    /// v1 memory.swappiness.
    pub swappiness: Option<u32>,
    /// memory.swap.max (accounted by the swap code).
    pub swap_max: Option<u64>,
    /// v1 memory.memsw.limit_in_bytes (accounted by the swap code).
    pub memsw_limit: Option<u64>,
    /// memory.oom.group.
    pub oom_group: bool,
    /// v1 memory.oom_control oom_kill_disable.
    pub oom_kill_disable: bool,
}

impl<P: ReclaimPolicy> Kernel<P> {
    /// try_charge_memcg(): charge `nr` pages to `memcg` and its ancestors.
    /// The level over its limit (mem_over_limit) is reclaimed, retrying up
    /// to MAX_RECLAIM_RETRIES without progress, then the OOM killer runs in
    /// that level's subtree. After a successful charge, memory.high is
    /// checked at every level.
    #[inline]
    pub fn try_charge(&mut self, memcg: MemcgId, nr: u64, may_retry: bool) -> bool {
        self.try_charge_gfp(memcg, nr, may_retry, true)
    }

    /// try_charge() with the gfp mask's __GFP_DIRECT_RECLAIM as
    /// `may_reclaim`: without it a charge over the limit fails at once.
    pub fn try_charge_gfp(
        &mut self,
        memcg: MemcgId,
        nr: u64,
        may_retry: bool,
        may_reclaim: bool,
    ) -> bool {
        if memcg == ROOT_MEMCG {
            return true;
        }
        if self.core.memcgs[memcg as usize].consume_stock(nr) {
            return true;
        }
        let mut batch = MEMCG_CHARGE_BATCH.max(nr);
        let mut retries = MAX_RECLAIM_RETRIES;
        let mut passed_oom = false;
        loop {
            // A task the OOM killer chose gets no more memory (the model
            // stops it); so does a workload without mms whose memcg OOMed.
            if self.current_is_dying() || self.core.memcgs[memcg as usize].oom_killed {
                return false;
            }
            // memsw first (v1 memory.memsw.limit_in_bytes), then memory.
            let (over, memsw_over) = match self.core.memsw_try_charge(memcg, batch) {
                Err(over) => (over, true),
                Ok(()) => match self.core.page_counter_try_charge(memcg, batch) {
                    Ok(()) => break,
                    Err(over) => (over, false),
                },
            };
            if batch > nr {
                batch = nr;
                continue;
            }
            // PF_MEMALLOC: no reclaim from inside reclaim; a mask that
            // may not block gets no reclaim either.
            if self.core.in_reclaim || !may_reclaim {
                return false;
            }
            self.core.memcg_memory_event(over, MemcgEvent::MEMCG_MAX);
            self.core.memcgs[over as usize].stat.add(Item::MEMCG_MAX, 1);
            // The stocks under mem_over_limit are drained before reclaim
            // (the kernel drains after a failed round; draining first keeps
            // reclaim targets exact).
            self.core.drain_all_stock(over);
            // try_to_free_mem_cgroup_pages(nr_pages): nr_to_reclaim is
            // the charge's pages raised to SWAP_CLUSTER_MAX.
            // At the memsw limit swapping cannot help (reclaim_options
            // without MEMCG_RECLAIM_MAY_SWAP).
            let reclaimed =
                self.try_to_free_mem_cgroup_pages_opts(over, SWAP_CLUSTER_MAX.max(nr), !memsw_over);
            // Reclaim that met only dirty folios woke the flusher
            // (wakeup_flusher_threads(WB_REASON_VMSCAN) writes everything
            // dirty) and then waits for writeback to finish, as memcg v1
            // reclaim does (folio_wait_writeback); the folios it marked
            // PG_reclaim are rotated for the next pass.
            // Reclaim that found nothing while writeback (swap to disk
            // among it) is in flight waits for the oldest batch
            // (reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK)) instead of
            // declaring OOM.
            // MGLRU has no such stall (ReclaimPolicy::
            // memcg_reclaim_stalls_on_writeback); the flusher it woke
            // (wakeup_flusher_threads) is a kworker that starts writeback
            // at once, on another CPU, while this task goes on retrying.
            let stalls = self.policy.memcg_reclaim_stalls_on_writeback(&self.core);
            if !stalls && self.core.wb_wakeup_flusher {
                self.wakeup_flusher_threads();
            }
            let wrote = stalls
                && ((self.core.wb_wakeup_flusher && self.reclaim_writeback_wait())
                    || (reclaimed == 0 && self.reclaim_throttle_writeback()));
            // mem_cgroup_margin(): memsw's headroom too.
            let margin = self.core.memcgs[over as usize]
                .margin()
                .min(self.core.memsw_margin(over));
            if margin >= nr {
                continue;
            }
            if !may_retry {
                return false;
            }
            // Progress (pages reclaimed or written back) retries freely;
            // no progress uses up one of MAX_RECLAIM_RETRIES. A costly
            // charge (a large folio past PAGE_ALLOC_COSTLY_ORDER) uses one
            // up whatever reclaim did, and never OOM-kills.
            let costly = nr > 1 << PAGE_ALLOC_COSTLY_ORDER;
            if (reclaimed > 0 || wrote) && !costly {
                continue;
            }
            if retries > 0 {
                retries -= 1;
                continue;
            }
            if costly || (passed_oom && self.current_is_dying()) {
                return false;
            }
            if self.mem_cgroup_oom(over, memcg) {
                passed_oom = true;
                retries = MAX_RECLAIM_RETRIES;
                continue;
            }
            return false;
        }
        self.core.memcgs[memcg as usize].stock += batch - nr;
        self.core.memsw_update_watermark(memcg);
        // The first level over memory.high makes the task pay on its way
        // back to user space; past a batch it pays at once.
        let mut c = memcg;
        while c != ROOT_MEMCG {
            let m = &self.core.memcgs[c as usize];
            if matches!(m.high, Some(h) if m.usage > h) {
                self.core.memcg_nr_pages_over_high += batch;
                self.core.memcg_over_high = memcg;
                break;
            }
            c = m.parent;
        }
        if self.core.memcg_nr_pages_over_high > MEMCG_CHARGE_BATCH && !self.core.in_reclaim {
            self.mem_cgroup_handle_over_high();
        }
        true
    }

    /// mem_cgroup_handle_over_high() (return to user space after charges
    /// that went over memory.high): reclaim_high() of the pages charged,
    /// then, if reclaim cannot keep up, a penalty sleep growing with the
    /// square of the overage, at most MEMCG_MAX_HIGH_DELAY_JIFFIES. The
    /// driver calls this after each access; it costs nothing when no
    /// charge went over memory.high.
    #[inline]
    pub fn mem_cgroup_handle_over_high(&mut self) {
        if self.core.memcg_nr_pages_over_high != 0 {
            self.__mem_cgroup_handle_over_high();
        }
    }

    #[cold]
    #[allow(non_snake_case)]
    fn __mem_cgroup_handle_over_high(&mut self) {
        let nr_pages = std::mem::take(&mut self.core.memcg_nr_pages_over_high);
        let memcg = match self.core.mms.get(self.core.current as usize) {
            Some(mm) => mm.memcg,
            None => self.core.memcg_over_high,
        };
        let mut retries = MAX_RECLAIM_RETRIES;
        let mut in_retry = false;
        loop {
            if self.current_is_dying() {
                return;
            }
            let target = if in_retry { SWAP_CLUSTER_MAX } else { nr_pages };
            let reclaimed = self.reclaim_high(memcg, target);
            let overage = self.core.mem_find_max_overage(memcg);
            let penalty = calculate_high_delay(nr_pages, overage).min(MEMCG_MAX_HIGH_DELAY_JIFFIES);
            if penalty <= HZ / 100 {
                return;
            }
            // Reclaim making progress is preferred to throttling.
            if reclaimed > 0 || retries > 0 {
                if reclaimed == 0 {
                    retries -= 1;
                }
                in_retry = true;
                continue;
            }
            // schedule_timeout_killable(penalty_jiffies).
            let ns = penalty * 1_000_000_000 / HZ;
            self.core.memcgs[memcg as usize].high_throttle_ns += ns;
            self.core.schedule_timeout(ns);
            return;
        }
    }

    /// reclaim_high(): reclaim each level over memory.high, from `memcg`
    /// up to the root's children, counting MEMCG_HIGH.
    fn reclaim_high(&mut self, memcg: MemcgId, nr_pages: u64) -> u64 {
        let mut reclaimed = 0;
        let mut c = memcg;
        while c != ROOT_MEMCG {
            let m = &self.core.memcgs[c as usize];
            let parent = m.parent;
            if matches!(m.high, Some(h) if m.usage > h) {
                self.core.memcg_memory_event(c, MemcgEvent::MEMCG_HIGH);
                self.core.drain_all_stock(c);
                reclaimed += self.try_to_free_mem_cgroup_pages(c, nr_pages);
            }
            c = parent;
        }
        reclaimed
    }

    /// memory_max_write() and memory_high_write() after a knob change:
    /// reclaim down to the new memory.max (MAX_RECLAIM_RETRIES tries
    /// without progress), then OOM until it fits or no victim is left;
    /// memory.high reclaims down to its value without OOM. `max` becomes
    /// the limit at the end (see Kernel::mem_cgroup_set_knobs).
    pub fn memory_max_write(&mut self, memcg: MemcgId, max: Option<u64>) {
        if memcg == ROOT_MEMCG {
            return;
        }
        let high = self.core.memcgs[memcg as usize].high;
        for (limit, may_oom) in [(max, true), (high, false)] {
            let Some(limit) = limit else { continue };
            let mut retries = MAX_RECLAIM_RETRIES;
            self.core.drain_all_stock(memcg);
            loop {
                let usage = self.core.memcgs[memcg as usize].usage;
                if usage <= limit {
                    break;
                }
                if retries > 0 {
                    if self.try_to_free_mem_cgroup_pages(memcg, usage - limit) == 0 {
                        retries -= 1;
                    }
                    continue;
                }
                if !may_oom {
                    break;
                }
                self.core.memcg_memory_event(memcg, MemcgEvent::MEMCG_OOM);
                if !self.mem_cgroup_out_of_memory(memcg, memcg) {
                    break;
                }
            }
        }
        let m = &mut self.core.memcgs[memcg as usize];
        m.limit = max;
        m.limit_overrun = matches!(max, Some(l) if m.usage > l);
    }
}

impl Core {
    /// mem_find_max_overage(): the largest (usage - high) / high, in
    /// 2^MEMCG_DELAY_PRECISION_SHIFT units, from `memcg` up to the root's
    /// children.
    pub fn mem_find_max_overage(&self, memcg: MemcgId) -> u64 {
        let mut max = 0;
        let mut c = memcg;
        while c != ROOT_MEMCG {
            let m = &self.memcgs[c as usize];
            if let Some(high) = m.high {
                max = max.max(calculate_overage(m.usage, high));
            }
            c = m.parent;
        }
        max
    }
}

/// calculate_overage(): 0 within memory.high.
pub fn calculate_overage(usage: u64, high: u64) -> u64 {
    if usage <= high {
        return 0;
    }
    let high = high.max(1);
    ((usage - high) << MEMCG_DELAY_PRECISION_SHIFT) / high
}

/// calculate_high_delay(): the penalty in jiffies, quadratic in the
/// overage, scaled by the task's share (its pages over a charge batch).
pub fn calculate_high_delay(nr_pages: u64, max_overage: u64) -> u64 {
    if max_overage == 0 {
        return 0;
    }
    let p = (max_overage as u128 * max_overage as u128 * HZ as u128)
        >> (MEMCG_DELAY_PRECISION_SHIFT + MEMCG_DELAY_SCALING_SHIFT);
    (p * nr_pages as u128 / MEMCG_CHARGE_BATCH as u128).min(u64::MAX as u128) as u64
}

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
    /// Slab the group is charged for (the page cache's xarray nodes:
    /// mapping->i_pages has XA_FLAGS_ACCOUNT, so xas_alloc() allocates them
    /// __GFP_ACCOUNT), in bytes, and the whole pages charged for it
    /// (obj_cgroup charges bytes, the page counter pages).
    pub slab_bytes: u64,
    pub slab_pages: u64,
    /// Compatibility with workloads that have no mm (the fio driver's
    /// jobs): an OOM in this memcg found no task the model knows of, so
    /// the memcg's workload as a whole counts as killed.
    pub oom_killed: bool,
    /// parent_mem_cgroup(); NO_PARENT for the root.
    pub parent: MemcgId,
    /// Children in creation order (css_for_each_child order).
    pub children: Vec<MemcgId>,
    /// Depth below the root (0 for the root).
    pub level: u32,
    /// memory.high, pages; None = max.
    pub high: Option<u64>,
    /// memory.low / memory.min as set, pages (0 = none).
    pub low: u64,
    pub min: u64,
    /// page_counter emin / elow: the effective protection computed by the
    /// last mem_cgroup_calculate_protection().
    pub emin: u64,
    pub elow: u64,
    /// v1 memory.swappiness; None = the global vm.swappiness (the root, or
    /// inherited from an ancestor that never set it).
    pub swappiness: Option<u32>,
    /// memory.swap.max and memory.memsw.limit_in_bytes, pages (kept for the
    /// swap accounting; None = max).
    pub swap_max: Option<u64>,
    pub memsw_limit: Option<u64>,
    /// memory.oom.group and v1 oom_kill_disable.
    pub oom_group: bool,
    pub oom_kill_disable: bool,
    /// memory.events (hierarchical: a child's event counts in its
    /// ancestors below the root) and memory.events.local.
    pub events: [u64; MEMCG_NR_MEMORY_EVENTS],
    pub events_local: [u64; MEMCG_NR_MEMORY_EVENTS],
    /// v1 oom_control under_oom: tasks waiting in this memcg's OOM (with
    /// oom_kill_disable set).
    pub under_oom: u32,
    /// memory.max was set below usage and neither reclaim nor the OOM
    /// killer could bring usage under it (the kernel allows that).
    pub limit_overrun: bool,
    /// page_counter failcnt (v1 memory.failcnt): charges this level
    /// refused, each try counted (a batch, then the page itself).
    pub failcnt: u64,
    /// When a charge first met this level's limit (the first failcnt), ns
    /// of the model's clock; 0 if never: when limit reclaim began, which
    /// sets where a workload is when the stats flusher runs.
    pub first_fail_ns: u64,
    /// Time the memcg's tasks slept in memory.high throttling, ns.
    pub high_throttle_ns: u64,
    /// The reclaim iterator's position for partial walks under this memcg
    /// (mem_cgroup_reclaim_iter->position), an index into its subtree.
    pub reclaim_iter: u32,
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
            slab_bytes: 0,
            slab_pages: 0,
            oom_killed: false,
            parent: NO_PARENT,
            children: Vec::new(),
            level: 0,
            high: None,
            low: 0,
            min: 0,
            emin: 0,
            elow: 0,
            swappiness: None,
            swap_max: None,
            memsw_limit: None,
            oom_group: false,
            oom_kill_disable: false,
            events: [0; MEMCG_NR_MEMORY_EVENTS],
            events_local: [0; MEMCG_NR_MEMORY_EVENTS],
            under_oom: 0,
            high_throttle_ns: 0,
            failcnt: 0,
            first_fail_ns: 0,
            limit_overrun: false,
            reclaim_iter: 0,
        }
    }

    /// The knobs as currently set (to change one with
    /// Kernel::mem_cgroup_set_knobs).
    pub fn knobs(&self) -> MemcgKnobs {
        MemcgKnobs {
            max: self.limit,
            high: self.high,
            low: (self.low > 0).then_some(self.low),
            min: (self.min > 0).then_some(self.min),
            swappiness: self.swappiness,
            swap_max: self.swap_max,
            memsw_limit: self.memsw_limit,
            oom_group: self.oom_group,
            oom_kill_disable: self.oom_kill_disable,
        }
    }

    /// memory.events (v2, hierarchical) or memory.events.local, by key.
    pub fn memory_events(&self, local: bool) -> [(&'static str, u64); MEMCG_NR_MEMORY_EVENTS] {
        let v = if local {
            &self.events_local
        } else {
            &self.events
        };
        std::array::from_fn(|i| (MEMCG_EVENT_NAMES[i], v[i]))
    }

    /// v1 memory.oom_control: oom_kill_disable, under_oom, oom_kill (this
    /// memcg's own kills: v1 events do not propagate).
    pub fn memcg1_oom_control(&self) -> [(&'static str, u64); 3] {
        [
            ("oom_kill_disable", self.oom_kill_disable as u64),
            ("under_oom", (self.under_oom > 0) as u64),
            (
                "oom_kill",
                self.events_local[MemcgEvent::MEMCG_OOM_KILL as usize],
            ),
        ]
    }

    /// mem_cgroup_margin(): pages that can still be charged.
    #[inline]
    pub fn margin(&self) -> u64 {
        match self.limit {
            Some(l) => l.saturating_sub(self.usage),
            None => u64::MAX,
        }
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
}

// ---- Swap accounting (mm/memcontrol.c, memcontrol-v1.c, Linux 6.18) ----
// Kept apart from MemCgroup so the hierarchy work on the rest of this file
// merges cleanly; Core::memcg_swap is indexed by memcg id.
//
// v1 or v2: the scenario's knob names say which one is meant. v2's
// memory.swap.max (MemCgroup::swap_max) limits the swap counter
// (`usage`); v1's memory.memsw.limit_in_bytes (MemCgroup::memsw_limit)
// limits the memsw counter, memory + swap. Both counters are always
// tracked (so either file can be reported); a limit acts only where set.
// The memsw counter is not stored: it is the memory page counter plus
// `memsw_swap`, the memsw charge the swap entries hold (memcg1_swapout()
// moved it off the folio: memory uncharged, memsw kept), so it follows
// every memory charge and uncharge (stock included) for free.

/// A memcg's swap counters. All are hierarchical (page_counter levels: the
/// memcg's own slots plus its descendants'); unlike the memory counter
/// the root's are charged too, so the root's `usage` is every slot in use.
#[derive(Clone, Debug, Default)]
pub struct MemcgSwap {
    /// v2 swap page counter (memory.swap.current): slots charged,
    /// swap-cache slots included.
    pub usage: u64,
    /// v1: slots whose data is only on swap (no swap-cache folio): the
    /// swap part of the memsw counter (memcg1_swapout/memcg1_swapin).
    pub memsw_swap: u64,
    /// memory.memsw.max_usage_in_bytes (pages) and memory.memsw.failcnt.
    pub memsw_watermark: u64,
    pub memsw_failcnt: u64,
    /// memory.swap.events: max (charge failed at a swap.max), fail;
    /// counted at the charging memcg and its ancestors.
    pub events_max: u64,
    pub events_fail: u64,
    /// NR_SHMEM: tmpfs folios in page caches charged here (memory.stat
    /// `shmem`); kept beside swap as the other swap-backed file memory.
    pub nr_shmem: u64,
}

impl super::Core {
    /// __mem_cgroup_try_charge_swap(): charge `nr` slots to the swap
    /// counter of `memcg` and every ancestor. The first level over its
    /// memory.swap.max fails the charge (lower levels uncharged again);
    /// `memcg` counts MEMCG_SWAP_MAX and MEMCG_SWAP_FAIL (swap.events,
    /// hierarchical); the caller keeps the folio in memory.
    pub fn mem_cgroup_try_charge_swap(&mut self, memcg: MemcgId, nr: u64) -> bool {
        let mut c = memcg;
        while c != NO_PARENT {
            let over = c != ROOT_MEMCG
                && matches!(self.memcgs[c as usize].swap_max,
                            Some(max) if self.memcg_swap[c as usize].usage + nr > max);
            if over {
                let mut u = memcg;
                while u != c {
                    self.memcg_swap[u as usize].usage -= nr;
                    u = self.memcgs[u as usize].parent;
                }
                // The charging memcg, not the failing level, gets the
                // event (6.18; a patch to move it was never merged), and
                // memcg_memory_event() propagates it up.
                let mut e = memcg;
                while e != NO_PARENT {
                    let s = &mut self.memcg_swap[e as usize];
                    s.events_max += 1;
                    s.events_fail += 1;
                    e = self.memcgs[e as usize].parent;
                }
                return false;
            }
            self.memcg_swap[c as usize].usage += nr;
            c = self.memcgs[c as usize].parent;
        }
        true
    }

    /// __mem_cgroup_uncharge_swap(): the slots were freed; every level.
    pub fn mem_cgroup_uncharge_swap(&mut self, memcg: MemcgId, nr: u64) {
        let mut c = memcg;
        while c != NO_PARENT {
            let s = &mut self.memcg_swap[c as usize];
            debug_assert!(s.usage >= nr);
            s.usage -= nr;
            c = self.memcgs[c as usize].parent;
        }
    }

    /// mem_cgroup_swap_full(): vm_swap_full(), or any level below the root
    /// at half its swap.max.
    pub fn mem_cgroup_swap_full(&self, memcg: MemcgId) -> bool {
        if self.swap.vm_swap_full() {
            return true;
        }
        let mut c = memcg;
        while c != ROOT_MEMCG && c != NO_PARENT {
            let m = &self.memcgs[c as usize];
            if m.swap_max
                .is_some_and(|max| self.memcg_swap[c as usize].usage * 2 >= max)
            {
                return true;
            }
            c = m.parent;
        }
        false
    }

    /// memory.swap.current (v2), in pages: hierarchical.
    pub fn memcg_swap_usage(&self, memcg: MemcgId) -> u64 {
        self.memcg_swap[memcg as usize].usage
    }

    /// mem_cgroup_get_nr_swap_pages(): the free slots, capped by the least
    /// swap.max headroom of the memcg and its ancestors.
    pub fn mem_cgroup_get_nr_swap_pages(&self, memcg: MemcgId) -> u64 {
        let mut room = self.swap.nr_free();
        let mut c = memcg;
        while c != ROOT_MEMCG && (c as usize) < self.memcgs.len() {
            let m = &self.memcgs[c as usize];
            if let Some(max) = m.swap_max {
                room = room.min(max.saturating_sub(self.memcg_swap[c as usize].usage));
            }
            c = m.parent;
        }
        room
    }

    /// memcg1_swapout() (a folio left memory, its slot stays: the memsw
    /// charge moves to the entry) with `delta` = 1; memcg1_swapin() or
    /// the freeing of a slot holding data only on swap with `delta` = -1
    /// (mem_cgroup_uncharge_swap()'s memsw uncharge). Every level.
    pub fn memcg1_swap_account(&mut self, memcg: MemcgId, delta: i64) {
        let mut c = memcg;
        while c != NO_PARENT {
            let s = &mut self.memcg_swap[c as usize];
            s.memsw_swap = s
                .memsw_swap
                .checked_add_signed(delta)
                .expect("memsw swap underflow");
            c = self.memcgs[c as usize].parent;
        }
    }

    /// The v1 memsw counter (memory.memsw.usage_in_bytes, pages): memory
    /// plus the swap entries' share.
    #[inline]
    pub fn memcg_memsw_usage(&self, memcg: MemcgId) -> u64 {
        self.memcgs[memcg as usize].usage + self.memcg_swap[memcg as usize].memsw_swap
    }

    /// The memsw part of mem_cgroup_margin(): what memsw.limit leaves.
    pub fn memsw_margin(&self, memcg: MemcgId) -> u64 {
        match self.memcgs[memcg as usize].memsw_limit {
            Some(l) => l.saturating_sub(self.memcg_memsw_usage(memcg)),
            None => u64::MAX,
        }
    }

    /// try_charge_memcg()'s first step under memsw accounting: charging
    /// `nr` pages of memory charges memsw too, so each level below the root
    /// with a memsw.limit must have room; the first that has none fails
    /// (its memsw failcnt counted) and is mem_over_limit, reclaimed without
    /// swapping (swap-out would not lower memsw).
    pub fn memsw_try_charge(&mut self, memcg: MemcgId, nr: u64) -> Result<(), MemcgId> {
        let mut c = memcg;
        while c != ROOT_MEMCG {
            let m = &self.memcgs[c as usize];
            let parent = m.parent;
            if let Some(l) = m.memsw_limit {
                if self.memcg_memsw_usage(c) + nr > l {
                    self.memcg_swap[c as usize].memsw_failcnt += 1;
                    return Err(c);
                }
            }
            c = parent;
        }
        Ok(())
    }

    /// memsw watermarks after a successful charge.
    #[inline]
    pub fn memsw_update_watermark(&mut self, memcg: MemcgId) {
        let mut c = memcg;
        while c != ROOT_MEMCG {
            let u = self.memcg_memsw_usage(c);
            let s = &mut self.memcg_swap[c as usize];
            s.memsw_watermark = s.memsw_watermark.max(u);
            c = self.memcgs[c as usize].parent;
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
