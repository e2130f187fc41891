//! Reclaim (mm/vmscan.c): the parts shared by every LRU policy —
//! scan_control, shrink_folio_list(), memcg limit reclaim, direct reclaim and
//! kswapd — and the `ReclaimPolicy` interface the classic active/inactive
//! LRU (`classic`) and the multi-gen LRU plug into.

pub mod classic;
pub mod lru_gen;

use super::folio::{pg, Folio, FolioId};
use super::memcontrol::{MemcgId, MAX_RECLAIM_RETRIES};
use super::vmstat::Item;
use super::workingset::{LruSizes, Shadow, XA_CHUNK_SHIFT};
use super::{Core, Kernel, DEF_PRIORITY, SWAP_CLUSTER_MAX};

pub const DEACTIVATE_ANON: u8 = 1;
pub const DEACTIVATE_FILE: u8 = 2;

/// struct scan_control.
#[derive(Clone, Debug, Default)]
pub struct ScanControl {
    pub nr_to_reclaim: u64,
    pub nr_reclaimed: u64,
    pub nr_scanned: u64,
    pub priority: i32,
    /// Some(memcg) for limit reclaim (cgroup_reclaim()).
    pub target_memcg: Option<MemcgId>,
    pub may_writepage: bool,
    pub may_unmap: bool,
    pub may_swap: bool,
    pub may_deactivate: u8,
    /// Deactivate both types regardless of refaults (the retry after a
    /// round that skipped deactivation reclaimed nothing).
    pub force_deactivate: bool,
    /// shrink_list() left an active list alone for may_deactivate.
    pub skipped_deactivate: bool,
    pub cache_trim_mode: bool,
    pub file_is_tiny: bool,
    /// The target lruvec's anon_cost/file_cost, read once per shrink_node
    /// (prepare_scan_control) and used for every lruvec's balance.
    pub anon_cost: u64,
    pub file_cost: u64,
    pub is_kswapd: bool,
    /// memory.low is ignored on this pass (the retry after every memcg
    /// was skipped for it).
    pub memcg_low_reclaim: bool,
    /// A memcg was skipped for memory.low: retry rather than OOM.
    pub memcg_low_skipped: bool,
    /// Walk every memcg of the subtree (the retry after a partial walk
    /// reclaimed nothing; always for kswapd).
    pub memcg_full_walk: bool,
    /// shrink_folio_list() statistics of the last batch (reclaim_stat).
    pub nr_dirty: u64,
    pub nr_unqueued_dirty: u64,
    pub nr_congested: u64,
    pub nr_writeback: u64,
    pub nr_immediate: u64,
    pub nr_pageout: u64,
    pub nr_activate: [u64; 2],
    /// Folios folio_check_references() kept on the inactive list
    /// (FOLIOREF_KEEP: young PTE, first look).
    pub nr_ref_keep: u64,
    /// sc->nr: shrink_inactive_list()'s statistics summed over one
    /// shrink_node() pass, for its kswapd writeback checks.
    pub nr: NodeReclaimStat,
    /// shrink_node() asked kswapd to reclaim_throttle(WRITEBACK).
    pub throttle_writeback: bool,
}

/// The part of scan_control's `nr` the model uses.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeReclaimStat {
    pub taken: u64,
    pub writeback: u64,
    pub immediate: u64,
}

/// The node's kswapd: pgdat->kswapd_failures, PGDAT_WRITEBACK, and the
/// thread's own time. The model runs kswapd's work at the moment it is
/// woken; its CPU time and its reclaim_throttle() sleeps then keep it busy
/// (not on its wait queue, so wakeup_kswapd() does nothing) until
/// `busy_until`, which bounds it to one CPU's worth of reclaim.
#[derive(Clone, Copy, Debug, Default)]
pub struct KswapdState {
    /// balance_pgdat() runs in a row that reclaimed nothing; from
    /// MAX_RECLAIM_RETRIES on the node is left to direct reclaim.
    pub failures: u32,
    /// PGDAT_WRITEBACK: a shrink_node() pass isolated only folios under
    /// writeback; kswapd then counts PG_reclaim ones as nr_immediate.
    pub pgdat_writeback: bool,
    /// kswapd runs (or sleeps in reclaim_throttle) until then, ns.
    pub busy_until: u64,
    /// CPU time of the balance_pgdat() run in progress.
    pub cpu_ns: u64,
    /// The last run ended unbalanced (throttled or out of priorities):
    /// kswapd_try_to_sleep() would not sleep, so it runs again as soon as
    /// it is free, whatever the watermark.
    pub unbalanced: bool,
    /// The priority and reclaimed count a throttled balance_pgdat()
    /// resumes with.
    pub resume: Option<(i32, u64)>,
}

impl ScanControl {
    pub fn new(nr_to_reclaim: u64, target: Option<MemcgId>, is_kswapd: bool) -> Self {
        ScanControl {
            nr_to_reclaim,
            priority: DEF_PRIORITY,
            target_memcg: target,
            may_writepage: true,
            may_unmap: true,
            may_swap: true,
            is_kswapd,
            ..Default::default()
        }
    }
    pub fn cgroup_reclaim(&self) -> bool {
        self.target_memcg.is_some()
    }
    /// writeback_throttling_sane(): global reclaim, or cgroup v2 reclaim.
    /// The model's memcg is v1's (this host's, as its memory.stat `swap`),
    /// where limit reclaim cannot rely on dirty throttling.
    pub fn writeback_throttling_sane(&self) -> bool {
        !self.cgroup_reclaim()
    }
    /// shrink_node_memcgs()'s `partial`: a walk that stops at the goal and
    /// resumes where it stopped.
    #[inline]
    pub fn partial_walk(&self) -> bool {
        !self.is_kswapd && !self.memcg_full_walk
    }
}

/// The result of folio_check_references().
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FolioRef {
    Reclaim,
    ReclaimClean,
    Keep,
    Activate,
}

/// A reclaim policy: where folios go on the LRU, what an access does to
/// them, how an lruvec is shrunk, and how evictions and refaults are
/// recorded. Everything else (page cache, faults, memcg charging,
/// shrink_folio_list) is shared.
pub trait ReclaimPolicy {
    fn name(&self) -> &'static str;
    /// Sets up the lruvec of a new memcg.
    fn lruvec_init(&mut self, memcg: MemcgId);
    /// lru_add() (mm/swap.c): the folio goes on an LRU list by its flags
    /// now (a drained lru_add batch, or a caller that bypasses it).
    fn lru_add(&mut self, core: &mut Core, id: FolioId);
    /// folio_add_lru()'s part before the batch: MGLRU's fault-path hook.
    fn folio_add_lru_prepare(&mut self, _core: &mut Core, _id: FolioId) {}
    /// lru_add_drain() of `cpu`: its lru_add batch onto the LRU, in order.
    fn lru_add_drain_cpu(&mut self, core: &mut Core, cpu: u32) {
        let b = core.lru_add_take(cpu);
        for &id in b.folios() {
            self.lru_add(core, id);
        }
    }
    /// lru_add_drain() of the current CPU, as reclaim does before it
    /// isolates. kswapd's own CPU has an empty batch (it adds no folios;
    /// the model gives it no CPU), so it drains nothing.
    fn lru_add_drain(&mut self, core: &mut Core) {
        if core.in_kswapd {
            return;
        }
        let cpu = core.cpu;
        self.lru_add_drain_cpu(core, cpu);
    }
    /// folio_mark_accessed() (mm/swap.c): reads and writes through file
    /// descriptors.
    fn folio_mark_accessed(&mut self, core: &mut Core, id: FolioId);
    /// lruvec_del_folio() for truncation and invalidation.
    fn folio_del_lru(&mut self, core: &mut Core, id: FolioId);
    /// Puts a folio that shrink_folio_list() kept or activated back.
    fn folio_putback_lru(&mut self, core: &mut Core, id: FolioId);
    /// A split's LRU side (lru_add_split_folio()): `parent`, on an LRU
    /// list, shrank from `old_nr` pages to its new order; each piece
    /// (flags and generation copied from it) joins the same list right
    /// beside it.
    fn lru_add_split_folio(
        &mut self,
        core: &mut Core,
        parent: FolioId,
        old_nr: u64,
        pieces: &[FolioId],
    );
    /// shrink_node() for the memcgs `sc` targets.
    fn shrink_node(&mut self, core: &mut Core, sc: &mut ScanControl);
    /// shrink_folio_list()'s "folio_update_gen() tried to promote this
    /// page?" check, before the folio's dirty state is counted: MGLRU
    /// before seed 004's rework keeps a mapped PG_referenced folio where
    /// it is (keep_locked: no counter).
    fn lru_gen_keep_promoted(&self, _core: &Core, _id: FolioId) -> bool {
        false
    }
    /// folio_check_references(): the classic decision by default.
    fn folio_check_references(
        &mut self,
        core: &mut Core,
        id: FolioId,
        _sc: &ScanControl,
    ) -> FolioRef {
        folio_check_references_classic(core, id)
    }
    fn workingset_eviction(&mut self, core: &mut Core, id: FolioId) -> Shadow;
    fn workingset_refault(&mut self, core: &mut Core, id: FolioId, shadow: Shadow);
    /// folio_rotate_reclaimable(): writeback of a PG_reclaim folio
    /// completed; move it to the inactive tail so it goes next.
    fn folio_rotate_reclaimable(&mut self, _core: &mut Core, _id: FolioId) {}
    /// Whether memcg limit reclaim that met dirty or writeback folios
    /// stalls until writeback progresses, which the model takes as one
    /// wait in try_charge(). The classic LRU's paths: shrink_inactive_list()
    /// throttles (VMSCAN_THROTTLE_WRITEBACK) when every folio it took was
    /// dirty and unqueued, v1, and shrink_folio_list() waits on folios it
    /// sent to writeback itself; shrink_node() throttles congested cgroup
    /// reclaim, v2.
    fn memcg_reclaim_stalls_on_writeback(&self, _core: &Core) -> bool {
        true
    }
    /// snapshot_refaults() at the end of a reclaim, for `target`.
    fn snapshot_refaults(&mut self, core: &mut Core, target: MemcgId) {
        core.snapshot_refaults(target);
    }
    fn lru_sizes(&self, memcg: MemcgId) -> LruSizes;
    /// lruvec_lru_size() of a memcg's lruvec summed over the lists, as
    /// count_shadow_nodes() reads it.
    fn lruvec_lru_pages(&self, memcg: MemcgId) -> u64 {
        let s = self.lru_sizes(memcg);
        s.inactive_anon + s.active_anon + s.inactive_file + s.active_file + s.unevictable
    }
    /// count_shadow_nodes() of 6.1-7.0 reads the memcg's own LRU pages and
    /// slab (shadow-node leaves) as last flushed: a policy keeping flushed
    /// copies answers them. None: the current values are read.
    fn shadow_count_local(&mut self, _core: &mut Core, _memcg: MemcgId) -> Option<(u64, u64)> {
        None
    }
    fn check_invariants(&self, core: &Core) -> Result<(), String>;
    /// mem_cgroup_flush_stats() of `memcg`'s subtree (the OOM report's
    /// memory.stat): a policy keeping flushed copies of rstat refreshes
    /// them. memcg_vmstats_needs_flush() (more than MEMCG_CHARGE_BATCH *
    /// nr_cpus pending updates) is taken as met.
    fn mem_cgroup_flush_stats(&mut self, _core: &mut Core, _memcg: MemcgId) {}
    /// A debugfs-like view of the policy's state (MGLRU's lru_gen file).
    fn debug_view(&self, _core: &Core, _memcg: MemcgId) -> Option<serde_json::Value> {
        None
    }
    /// Whether reclaim's per-call and per-batch costs, traced on a classic
    /// host (CpuCosts::do_try_to_free_pages and tlb_flush), are charged:
    /// the classic LRU's. MGLRU's are not measured (no MGLRU host) and
    /// are left out rather than borrowed.
    fn charges_traced_costs(&self) -> bool {
        true
    }
}

/// folio_referenced(): test and clear the accessed bits of the folio's
/// PTEs; returns the number of young PTEs (one per process that maps it
/// with page tables of its own, rmap.rs; else 0 or 1) and whether the
/// mapping is VM_EXEC.
#[inline]
pub fn folio_referenced(core: &mut Core, id: FolioId) -> (u32, bool) {
    let f = core.folios.get_mut(id);
    let exec = f.test(pg::VM_EXEC);
    if !f.test(pg::MAPPED) {
        return (0, exec);
    }
    let young = f.test_clear(pg::PTE_YOUNG) as u32;
    if core.files[f.mapping as usize].i_mmap.is_empty() || !f.is_file_lru() {
        return (young, exec);
    }
    // PTE_YOUNG clear (MGLRU's aging cleared it): none is young.
    let n = core.folio_referenced_ptes(id);
    (young * n.max(1), exec)
}

/// folio_referenced() as the classic LRU's reclaim calls it, with its
/// rmap walk's cost (a mapped folio's only: an unmapped one has no rmap).
/// MGLRU's calls charge none: its walk ends in lru_gen_look_around(),
/// whose cost is not measured (no MGLRU host).
pub fn folio_referenced_walk(core: &mut Core, id: FolioId) -> (u32, bool) {
    if core.folios.get(id).test(pg::MAPPED) {
        core.cpu_or_kswapd(core.cost.folio_referenced);
    }
    folio_referenced(core, id)
}

/// folio_check_references() for the active/inactive LRU.
pub fn folio_check_references_classic(core: &mut Core, id: FolioId) -> FolioRef {
    let (referenced_ptes, exec) = folio_referenced_walk(core, id);
    let f = core.folios.get_mut(id);
    let referenced_folio = f.test_clear(pg::REFERENCED);
    if referenced_ptes > 0 {
        // All mapped folios start out with their PTE young; a second
        // reference (PG_referenced) or a shared mapping activates them.
        f.set(pg::REFERENCED);
        if referenced_folio || referenced_ptes > 1 {
            return FolioRef::Activate;
        }
        if exec && f.is_file_lru() {
            return FolioRef::Activate;
        }
        return FolioRef::Keep;
    }
    if referenced_folio && f.is_file_lru() {
        return FolioRef::ReclaimClean;
    }
    FolioRef::Reclaim
}

impl Core {
    /// The memcgs a reclaim pass walks (shrink_node_memcgs()'s
    /// mem_cgroup_iter() under the target, or under the root for global
    /// reclaim), pre-order. Direct and limit reclaim walk partially: they
    /// resume after the memcg the last walk stopped at (the reclaim
    /// cookie), restarting from the top when that was the last one; kswapd
    /// and the memcg_full_walk retry walk the whole tree. Holds no borrow: the caller mutates Core
    /// while walking.
    pub fn reclaim_memcgs(&self, sc: &ScanControl) -> super::page_counter::MemcgIter {
        let root = sc.target_memcg.unwrap_or(0);
        if !sc.partial_walk() {
            return self.memcg_subtree(root);
        }
        let (s, e) = self.memcg_tree.range[root as usize];
        let mut skip = self.memcgs[root as usize].reclaim_iter as usize;
        if skip >= (e - s) as usize {
            skip = 0;
        }
        self.memcg_subtree_from(root, skip)
    }

    /// mem_cgroup_iter_break() (`stopped` = the iterator after the memcg
    /// reclaim stopped at) or the end of a round (None): where the next
    /// partial walk starts.
    pub fn mem_cgroup_iter_break(
        &mut self,
        sc: &ScanControl,
        stopped: Option<&super::page_counter::MemcgIter>,
    ) {
        if !sc.partial_walk() {
            return;
        }
        let root = sc.target_memcg.unwrap_or(0);
        let start = self.memcg_tree.range[root as usize].0 as usize;
        self.memcgs[root as usize].reclaim_iter = match stopped {
            Some(it) => (it.position() - start) as u32,
            None => 0,
        };
    }

    /// shrink_node_memcgs()'s protection check of one memcg: false when
    /// memory.min protects it, or memory.low does on a first pass (then
    /// memcg_low_skipped asks for a retry); reclaiming a memcg below its
    /// memory.low counts MEMCG_LOW.
    pub fn mem_cgroup_reclaim_allowed(&mut self, memcg: MemcgId, sc: &mut ScanControl) -> bool {
        let target = sc.target_memcg.unwrap_or(0);
        self.mem_cgroup_calculate_protection(target, memcg);
        if self.mem_cgroup_below_min(target, memcg) {
            return false;
        }
        if self.mem_cgroup_below_low(target, memcg) {
            if !sc.memcg_low_reclaim {
                sc.memcg_low_skipped = true;
                return false;
            }
            self.memcg_memory_event(memcg, super::memcontrol::MemcgEvent::MEMCG_LOW);
        }
        true
    }

    /// apply_proportional_protection(): a protected memcg's scan target
    /// shrinks by the protected share of its size (memory.low only on the
    /// first pass), but stays at least SWAP_CLUSTER_MAX.
    pub fn apply_proportional_protection(
        &self,
        memcg: MemcgId,
        sc: &mut ScanControl,
        scan: u64,
    ) -> u64 {
        let (min, low) = self.mem_cgroup_protection(sc.target_memcg.unwrap_or(0), memcg);
        if min == 0 && low == 0 {
            return scan;
        }
        let protection = if !sc.memcg_low_reclaim && low > min {
            sc.memcg_low_skipped = true;
            low
        } else {
            min
        };
        let size = self.memcgs[memcg as usize].usage.max(protection);
        let scan = scan - (scan as u128 * protection as u128 / (size as u128 + 1)) as u64;
        scan.max(SWAP_CLUSTER_MAX)
    }

    /// Frees an uncharged folio's frame.
    #[inline(always)]
    pub fn free_folio(&mut self, id: FolioId) {
        // Every page-cache removal ends here (reclaim, truncation,
        // invalidation): cache_ext's folio_evicted() and the valid set.
        self.cache_ext_folio_evicted(id);
        let f = self.folios.get(id);
        let (memcg, nr) = (f.memcg, f.nr_pages());
        if f.test(pg::LRU_CACHED) {
            self.lru_add_forget(id);
        }
        self.mem_cgroup_uncharge(memcg, nr);
        // memcg v1's pgpgout counts folios (memcg1_uncharge_batch), the
        // page counters pages.
        self.count_memcg(memcg, Item::MEMCG_PGPGOUT, 1);
        self.count_vm(Item::PGFREE, nr);
        self.folios.free(id);
    }

    /// pgscan for a batch isolated from an lruvec.
    pub fn count_pgscan(&mut self, memcg: MemcgId, file: bool, n: u64, sc: &ScanControl) {
        self.count_scan_steal(
            memcg,
            [Item::PGSCAN_KSWAPD, Item::PGSCAN_DIRECT],
            [Item::PGSCAN_ANON, Item::PGSCAN_FILE],
            file,
            n,
            sc,
        );
    }

    /// pgsteal for the folios of a batch that were reclaimed.
    pub fn count_pgsteal(&mut self, memcg: MemcgId, file: bool, n: u64, sc: &ScanControl) {
        self.count_scan_steal(
            memcg,
            [Item::PGSTEAL_KSWAPD, Item::PGSTEAL_DIRECT],
            [Item::PGSTEAL_ANON, Item::PGSTEAL_FILE],
            file,
            n,
            sc,
        );
        self.cpu_or_kswapd(self.cost.reclaim_folio * n);
    }

    /// The kswapd/direct event follows count_reclaim() (kept out of
    /// /proc/vmstat for limit reclaim); the anon/file split is counted for
    /// every reclaim, limit reclaim included (shrink_inactive_list() and
    /// scan_folios()/evict_folios(): checked on 6.18, where a memcg at its
    /// limit leaves pgscan_direct at 0 and raises pgscan_file).
    fn count_scan_steal(
        &mut self,
        memcg: MemcgId,
        by_reclaimer: [Item; 2],
        by_type: [Item; 2],
        file: bool,
        n: u64,
        sc: &ScanControl,
    ) {
        self.count_reclaim(memcg, by_reclaimer[!sc.is_kswapd as usize], n, sc);
        self.count(memcg, by_type[file as usize], n);
    }

    /// Reclaim events (pgscan, pgsteal, pgrefill) reach /proc/vmstat only
    /// for global reclaim; limit reclaim counts them in the memcg alone.
    #[inline]
    pub fn count_reclaim(&mut self, memcg: MemcgId, item: Item, n: u64, sc: &ScanControl) {
        if sc.cgroup_reclaim() {
            if memcg != 0 {
                self.memcgs[memcg as usize].stat.add(item, n);
            }
        } else {
            self.count(memcg, item, n);
        }
    }
}

/// struct reclaim_stat as shrink_folio_list() left it in `sc`, for
/// mm_vmscan_lru_shrink_inactive (nr_congested and nr_unmap_fail are not
/// modelled: 0).
pub fn trace_reclaim_stat(
    sc: &ScanControl,
    nr_scanned: u64,
    nr_reclaimed: u64,
    file: bool,
) -> crate::trace::ShrinkInactive {
    crate::trace::ShrinkInactive {
        nr_scanned,
        nr_reclaimed,
        nr_dirty: sc.nr_dirty,
        nr_writeback: sc.nr_writeback,
        nr_immediate: sc.nr_immediate,
        nr_activate: sc.nr_activate,
        nr_ref_keep: sc.nr_ref_keep,
        priority: sc.priority,
        file,
    }
}

/// Whether file folio `id` is still locked under read I/O (its read
/// submitted, not yet complete). Free while no file read is in flight.
#[inline]
fn file_read_in_flight(core: &Core, f: &Folio, file: bool) -> bool {
    if !file || core.now >= core.file_reads_until {
        return false;
    }
    core.files[f.mapping as usize]
        .io_done_at(f.index as u64, core.now)
        .is_some()
}

/// shrink_folio_list(): decide each isolated folio's fate. Freed folios leave
/// the page cache (with a shadow entry for file folios) and are freed; the
/// others stay in `folios` (PG_active set on those to activate) for the
/// policy to put back. Returns the number reclaimed.
pub fn shrink_folio_list<P: ReclaimPolicy + ?Sized>(
    core: &mut Core,
    policy: &mut P,
    folios_v: &mut Vec<FolioId>,
    sc: &mut ScanControl,
) -> u64 {
    let mut nr_reclaimed = 0u64;
    let mut keep = 0usize;
    sc.nr_dirty = 0;
    sc.nr_unqueued_dirty = 0;
    sc.nr_writeback = 0;
    sc.nr_immediate = 0;
    sc.nr_pageout = 0;
    sc.nr_activate = [0; 2];
    sc.nr_ref_keep = 0;
    let all = folios_v.len();
    // A slice, not the Vec: its bounds stay in registers across the calls.
    let folios = &mut folios_v[..];
    let mut i = 0;
    while i < all {
        let id = folios[i];
        i += 1;
        let f0 = *core.folios.get(id);
        // An evicted file folio's page-cache slot and node are written, and
        // were last touched when it was added: fetch them a few folios
        // ahead, unless that folio's node is this one's (folios evicted in
        // file order, which the hardware fetches well by itself).
        if let Some(&ahead) = folios.get(i + 3) {
            let f = core.folios.get(ahead);
            let same_node = f.mapping == f0.mapping && (f.index ^ f0.index) >> XA_CHUNK_SHIFT == 0;
            if f.is_file_lru() && !same_node {
                if let Some(a) = core.files.get(f.mapping as usize) {
                    a.prefetch_entry(f.index as u64);
                }
            }
        }
        let (file, writeback, dirty) =
            (f0.is_file_lru(), f0.test(pg::WRITEBACK), f0.test(pg::DIRTY));
        let memcg = f0.memcg;
        // Counts are in pages (a large folio counts all of its).
        let mut nr = f0.nr_pages();
        // folio_trylock() fails on a folio still being read in: a
        // swap-readahead folio whose read is not yet submitted, or a file
        // folio whose read has not completed (the kernel unlocks it in
        // folio_end_read()).
        if f0.test(pg::LOCKED) || file_read_in_flight(core, &f0, file) {
            folios[keep] = id;
            keep += 1;
            continue;
        }
        if policy.lru_gen_keep_promoted(core, id) {
            folios[keep] = id;
            keep += 1;
            continue;
        }
        // folio_check_dirty_writeback(): file folios only (reclaim writes
        // anon ones itself), counted before the writeback and reference
        // checks, so a referenced dirty folio counts too: the callers
        // compare nr_unqueued_dirty with what they took.
        if file {
            if dirty || writeback {
                sc.nr_dirty += nr;
            }
            if dirty && !writeback {
                sc.nr_unqueued_dirty += nr;
            }
        }
        if writeback {
            if reclaim_writeback_folio(core, policy, id, sc, file, memcg, nr) {
                // Waited for its write: look at it again.
                i -= 1;
                continue;
            }
            folios[keep] = id;
            keep += 1;
            continue;
        }
        let references = policy.folio_check_references(core, id, sc);
        match references {
            FolioRef::Activate => {
                core.folios.get_mut(id).set(pg::ACTIVE);
                sc.nr_activate[file as usize] += nr;
                core.count(memcg, Item::PGACTIVATE, nr);
                folios[keep] = id;
                keep += 1;
                continue;
            }
            FolioRef::Keep => {
                sc.nr_ref_keep += nr;
                folios[keep] = id;
                keep += 1;
                continue;
            }
            FolioRef::Reclaim | FolioRef::ReclaimClean => {}
        }
        if !file {
            // Anonymous: add_to_swap (folio_alloc_swap), try_to_unmap,
            // pageout() to the swap device, then __remove_mapping().
            let fate = shrink_anon_folio(core, policy, id, sc);
            // A large folio without a run of slots was split: this is its
            // first page now.
            nr = core.folios.get(id).nr_pages();
            match fate {
                AnonFate::Activate => {
                    // activate_locked: a swap-cache folio gives its slot
                    // back when swap is getting full.
                    if core.mem_cgroup_swap_full(memcg) {
                        core.folio_free_swap(id);
                    }
                    core.folios.get_mut(id).set(pg::ACTIVE);
                    sc.nr_activate[0] += nr;
                    core.count(memcg, Item::PGACTIVATE, nr);
                    folios[keep] = id;
                    keep += 1;
                    continue;
                }
                AnonFate::Keep => {
                    folios[keep] = id;
                    keep += 1;
                    continue;
                }
                AnonFate::Free => {}
            }
        } else if dirty {
            // Only kswapd may write file folios from reclaim, and only after
            // the flusher had its chance: mark PG_reclaim and activate.
            // Whether the flusher is woken is the caller's decision, from
            // nr_unqueued_dirty against what it isolated.
            let f = core.folios.get_mut(id);
            f.set(pg::RECLAIM | pg::ACTIVE);
            core.count(memcg, Item::NR_VMSCAN_IMMEDIATE, nr);
            sc.nr_activate[1] += nr;
            core.count(memcg, Item::PGACTIVATE, nr);
            folios[keep] = id;
            keep += 1;
            continue;
        }
        // try_to_unmap() then __remove_mapping().
        if core.folios.get(id).test(pg::MAPPED) {
            try_to_unmap(core, id);
        }
        // folio_ref_freeze() fails on a folio someone else holds:
        // keep_locked, back to the LRU as it was.
        if core.folios.get(id).test(pg::EXTRA_REF) {
            folios[keep] = id;
            keep += 1;
            continue;
        }
        remove_mapping(core, policy, id, file, memcg, nr);
        nr_reclaimed += nr;
    }
    // try_to_unmap_flush(): one TLB flush for the batch's unmappings.
    if std::mem::take(&mut core.tlb_flush_pending) && policy.charges_traced_costs() {
        core.cpu_or_kswapd(core.cost.tlb_flush);
    }
    folios_v.truncate(keep);
    // blk_finish_plug(): the batch's swap writes go to the device.
    core.swap_write_unplug();
    nr_reclaimed
}

/// shrink_folio_list()'s folio under writeback: counted, marked for
/// reclaim when its write completes, and activated out of the way; true
/// when legacy memcg reclaim waited for the write instead (the caller
/// looks at the folio again).
#[inline(always)]
fn reclaim_writeback_folio<P: ReclaimPolicy + ?Sized>(
    core: &mut Core,
    policy: &mut P,
    id: FolioId,
    sc: &mut ScanControl,
    file: bool,
    memcg: MemcgId,
    nr: u64,
) -> bool {
    let f = core.folios.get(id);
    let reclaim = f.test(pg::RECLAIM);
    if sc.is_kswapd && reclaim && core.kswapd.pgdat_writeback {
        // Case 1: kswapd meets folios it already sent to pageout
        // still under writeback: they cycle faster than they are
        // written, so it will stall (shrink_node) once done here.
        sc.nr_immediate += nr;
    } else if !sc.writeback_throttling_sane()
        && reclaim
        && may_enter_fs(core, id)
        && folio_wait_writeback(core, policy, id)
    {
        // Case 3 (shrink_folio_list): legacy memcg reclaim has no
        // dirty throttling, so it waits for the write of a folio it
        // already sent to pageout, then looks at it again.
        return true;
    } else {
        // Case 2: mark it for reclaim when the write completes
        // (folio_end_writeback rotates it to the inactive tail).
        sc.nr_writeback += nr;
        core.folios.get_mut(id).set(pg::RECLAIM);
    }
    // activate_locked: out of the way until its write completes.
    if !file && core.folios.get(id).test(pg::SWAPCACHE) && core.mem_cgroup_swap_full(memcg) {
        core.folio_free_swap(id);
    }
    core.folios.get_mut(id).set(pg::ACTIVE);
    sc.nr_activate[file as usize] += nr;
    core.count(memcg, Item::PGACTIVATE, nr);
    false
}

/// __remove_mapping() of a reclaimed folio: its shadow entry left in the
/// page cache or swap cache, then the folio freed.
#[inline(always)]
fn remove_mapping<P: ReclaimPolicy + ?Sized>(
    core: &mut Core,
    policy: &mut P,
    id: FolioId,
    file: bool,
    memcg: MemcgId,
    nr: u64,
) {
    let shadow = policy.workingset_eviction(core, id);
    let f = *core.folios.get(id);
    if f.test(pg::RA_UNUSED) {
        core.count(memcg, Item::RA_UNUSED_EVICTED, nr);
    }
    if f.test(pg::PROT_UNUSED) {
        core.count(memcg, Item::PROTECTED_UNUSED_EVICTED, nr);
    }
    if file {
        core.trace_delete_from_page_cache(id);
        core.page_cache_delete(f.mapping, f.index as u64, nr, Some(shadow), memcg);
        core.memcgs[memcg as usize].nr_file -= nr;
    } else {
        // __remove_mapping() of a swap-cache folio: its slot keeps the
        // shadow (__swap_cache_del_folio).
        core.swap_cache_del_folio(id, Some(shadow));
        core.memcgs[memcg as usize].nr_anon -= nr;
    }
    core.folios.get_mut(id).set_flags_keep_order(0);
    core.free_folio(id);
}

/// try_to_unmap() of a mapped folio in reclaim: its PTE goes. Its TLB
/// flush joins the batch (set_tlb_ubc_flush_pending()) only when
/// should_defer_flush() says so: on x86, when a CPU other than this one is
/// in the mm's mm_cpumask; otherwise ptep_clear_flush() flushes the one
/// page locally, a cost the per-page figures hold. The mms that map a
/// file folio the model does not track: those batch, as a shared mapping
/// may.
fn try_to_unmap(core: &mut Core, id: FolioId) {
    core.rmap_unmap_folio(id);
    let f = core.folios.get_mut(id);
    f.clear(pg::MAPPED | pg::PTE_YOUNG);
    let (memcg, nr, mapping) = (f.memcg, f.nr_pages(), f.mapping);
    core.memcgs[memcg as usize].nr_mapped -= nr;
    let owner = core.files[mapping as usize].owner;
    if core.mms.get(owner as usize).is_none_or(|mm| mm.nr_cpus > 1) {
        core.tlb_flush_pending = true;
    }
}

/// may_enter_fs() for reclaim's allocations (GFP_KERNEL-like: __GFP_FS
/// and __GFP_IO set): a file folio may; a swap-cache folio may unless its
/// swap device writes through a filesystem's swap_rw (SWP_FS_OPS: none in
/// the model: zram and block-mapped swap files).
fn may_enter_fs(core: &Core, id: FolioId) -> bool {
    let f = core.folios.get(id);
    f.is_file_lru() || f.test(pg::SWAPCACHE)
}

/// folio_wait_writeback(): the reclaimer sleeps until the folio's write
/// completes; writes queued before it complete too (end_page_writeback,
/// with the PG_reclaim rotation of those still on an LRU).
/// False when the write is not queued to the device (nothing to wait on).
fn folio_wait_writeback<P: ReclaimPolicy + ?Sized>(
    core: &mut Core,
    policy: &mut P,
    id: FolioId,
) -> bool {
    let Some(&(_, done)) = core.wb.inflight.iter().find(|(f, _)| *f == id) else {
        return false;
    };
    core.wait_until(done);
    end_writeback_until_now(core, policy);
    !core.folios.get(id).test(pg::WRITEBACK)
}

/// folio_end_writeback() of every write completed by now, with the
/// PG_reclaim rotation of those still on an LRU.
pub(crate) fn end_writeback_until_now<P: ReclaimPolicy + ?Sized>(core: &mut Core, policy: &mut P) {
    while let Some(&(wid, d)) = core.wb.inflight.front() {
        if d > core.now {
            break;
        }
        core.wb.inflight.pop_front();
        let f = core.folios.get_mut(wid);
        f.clear(pg::WRITEBACK);
        let (m, nr) = (f.memcg, f.nr_pages());
        let rotate = f.test_clear(pg::RECLAIM);
        core.memcgs[m as usize].nr_writeback -= nr;
        core.wb.nr_writeback -= nr;
        if rotate {
            policy.folio_rotate_reclaimable(core, wid);
        }
    }
}

/// shrink_inactive_list() isolated only dirty folios that no one is
/// writing: wakeup_flusher_threads(WB_REASON_VMSCAN) starts writeback of
/// every dirty folio; then legacy memcg reclaim, which has no dirty
/// throttling, reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK)s: it sleeps
/// until SWAP_CLUSTER_MAX pages more have been written back
/// (__acct_reclaim_writeback() wakes it) or HZ/10 has passed, and goes on
/// with the next batch. Global reclaim only wakes the flusher.
pub fn reclaim_dirty_batch<P: ReclaimPolicy + ?Sized>(
    core: &mut Core,
    policy: &mut P,
    sc: &ScanControl,
) {
    if sc.writeback_throttling_sane() {
        core.wb_wakeup_flusher = true;
        return;
    }
    core.wakeup_flusher_threads_all();
    // Pages written since the sleep began: writes done by now do not count.
    let (now, mut pages) = (core.now, 0);
    let mut wake = now + 1_000_000_000 / 10;
    for &(id, done) in core.wb.inflight.iter().filter(|e| e.1 > now) {
        pages += core.folios.get(id).nr_pages();
        if pages > SWAP_CLUSTER_MAX {
            wake = wake.min(done);
            break;
        }
    }
    core.wait_until(wake);
    end_writeback_until_now(core, policy);
}

/// folio_alloc_swap() with shrink_folio_list()'s fallback for a large
/// folio (and shmem_writeout()'s for a tmpfs one): swapped out whole when
/// a naturally aligned run of slots is free (THP_SWAP,
/// MmConfig::large_anon_swap; a tmpfs folio the end of its file falls
/// inside is split first), else split to order 0 (huge_memory.rs: the
/// pieces back on the LRU; thp_swpout_fallback and the size's
/// swpout_fallback for anon) and this page given a slot. False when no
/// slot is left.
fn add_to_swap<P: ReclaimPolicy + ?Sized>(
    core: &mut Core,
    policy: &mut P,
    id: FolioId,
    shmem: bool,
) -> bool {
    let f = *core.folios.get(id);
    if f.nr_pages() > 1 {
        let large = core.cfg.large_anon_swap();
        if large && !(shmem && core.shmem_folio_crosses_eof(id)) && core.folio_alloc_swap(id) {
            return true;
        }
        super::huge_memory::split_folio_to_lru(core, policy, id);
        if large && !shmem {
            if f.order() == crate::mm::folio::HPAGE_PMD_ORDER {
                core.count(f.memcg, Item::THP_SWPOUT_FALLBACK, 1);
            }
            core.mthp_count(f.order(), super::huge_memory::MthpStat::SwpoutFallback);
        }
    }
    core.folio_alloc_swap(id)
}

/// What shrink_folio_list() does with an anonymous folio it decided to
/// reclaim.
enum AnonFate {
    Activate,
    Keep,
    Free,
}

/// The anonymous part of shrink_folio_list(): a folio not yet in the swap
/// cache gets a slot (folio_alloc_swap; none free or the memcg's swap.max
/// reached: activate), a mapped one is unmapped (try_to_unmap: the PTE gets
/// the swap entry, MM_ANONPAGES -> MM_SWAPENTS), a dirty one is written
/// (pageout() sets PG_reclaim; zram completes at once, a disk leaves it
/// under writeback and reclaim moves on). Clean and unmapped, it can go.
fn shrink_anon_folio<P: ReclaimPolicy + ?Sized>(
    core: &mut Core,
    policy: &mut P,
    id: FolioId,
    sc: &mut ScanControl,
) -> AnonFate {
    use super::mmap::{MM_ANONPAGES, MM_SWAPENTS};
    use super::page_io::SwapWrite;
    if core.folio_in_shmem_cache(id) {
        // A tmpfs folio: unmapped from its file mappings, then pageout()
        // -> shmem_writeout() gives it a slot and moves it to the swap
        // cache.
        let f = *core.folios.get(id);
        if !sc.may_writepage || (f.test(pg::MAPPED) && !sc.may_unmap) {
            return AnonFate::Keep;
        }
        if !add_to_swap(core, policy, id, true) {
            return AnonFate::Activate;
        }
        if f.test(pg::MAPPED) {
            try_to_unmap(core, id);
        }
        core.shmem_writeout(id);
    } else if !core.folios.get(id).test(pg::SWAPCACHE) && !add_to_swap(core, policy, id, false) {
        return AnonFate::Activate;
    }
    let f = *core.folios.get(id);
    let nr = f.nr_pages();
    let off = core.swap.folio_swap(id);
    if f.test(pg::MAPPED) {
        if !sc.may_unmap {
            return AnonFate::Keep;
        }
        // try_to_unmap_one(): each PTE of the folio gets its page's entry
        // (swap_duplicate).
        try_to_unmap(core, id);
        for i in 0..nr {
            let o = off + i as u32;
            core.files[f.mapping as usize].set_swap_entry(f.index as u64 + i, o);
            core.swap.swap_map[o as usize] += 1;
        }
        core.mm_counter_move_nr(f.mapping, MM_ANONPAGES, MM_SWAPENTS, nr);
    }
    if f.test(pg::DIRTY) {
        if !sc.may_writepage {
            return AnonFate::Keep;
        }
        core.folios.get_mut(id).set(pg::RECLAIM);
        core.count(f.memcg, Item::NR_VMSCAN_WRITE, nr);
        // pageout(): mm_vmscan_write_folio once the folio is handed to
        // writeout.
        if core.trace.is_some() {
            let rec = core.trace_folio(id);
            if let Some((t, cx)) = core.tracer() {
                t.write_folio(cx, rec, false);
            }
        }
        match core.swap_writeout(id) {
            SwapWrite::Done => {
                sc.nr_pageout += nr;
                core.folios.get_mut(id).clear(pg::RECLAIM);
            }
            SwapWrite::Async => {
                sc.nr_pageout += nr;
                return AnonFate::Keep;
            }
            SwapWrite::Failed => {
                core.folios.get_mut(id).clear(pg::RECLAIM);
                return AnonFate::Activate;
            }
        }
    }
    AnonFate::Free
}

impl<P: ReclaimPolicy> Kernel<P> {
    /// do_try_to_free_pages(): shrink at falling priority until enough was
    /// reclaimed.
    fn do_try_to_free_pages(&mut self, sc: &mut ScanControl) -> u64 {
        let was = self.core.in_reclaim;
        self.core.in_reclaim = true;
        if self.policy.charges_traced_costs() {
            self.core.cpu_or_kswapd(self.core.cost.do_try_to_free_pages);
        }
        let initial_priority = sc.priority;
        loop {
            // Writeback (swap included) that completed by now ends first,
            // rotating PG_reclaim folios to the inactive tail.
            self.wb_complete();
            sc.nr_scanned = 0;
            self.shrink_node_pass(sc);
            self.shrink_slab(sc);
            if self.core.cfg.check_invariants {
                if let Err(e) = self.check_invariants() {
                    panic!(
                        "invariant broken after reclaim at priority {}: {e}",
                        sc.priority
                    );
                }
            }
            if sc.nr_reclaimed >= sc.nr_to_reclaim || sc.priority == 0 {
                // Nothing reclaimed by a partial walk: walk every memcg
                // before giving up (the iterator may have shown this
                // reclaimer too few).
                if sc.nr_reclaimed == 0 && !sc.memcg_full_walk {
                    sc.priority = initial_priority;
                    sc.memcg_full_walk = true;
                    continue;
                }
                // Nothing reclaimed while active lists were left alone
                // (prepare_scan_control's estimate was wrong): retry
                // deactivating both types.
                if sc.nr_reclaimed == 0 && sc.skipped_deactivate {
                    sc.priority = initial_priority;
                    sc.force_deactivate = true;
                    sc.skipped_deactivate = false;
                    continue;
                }
                // Nothing reclaimed because memory.low protected every
                // memcg: retry ignoring memory.low before giving up.
                if sc.nr_reclaimed == 0 && sc.memcg_low_skipped && !sc.memcg_low_reclaim {
                    sc.priority = initial_priority;
                    sc.memcg_low_reclaim = true;
                    sc.memcg_low_skipped = false;
                    continue;
                }
                break;
            }
            sc.priority -= 1;
        }
        // snapshot_refaults(): once per call, for the target only.
        self.policy
            .snapshot_refaults(&mut self.core, sc.target_memcg.unwrap_or(0));
        self.core.in_reclaim = was;
        sc.nr_reclaimed
    }

    /// shrink_slab() after each memcg's lruvec: the only slab the model has
    /// is the page cache's shadow nodes.
    fn shrink_slab(&mut self, sc: &ScanControl) {
        for memcg in self.core.memcg_subtree(sc.target_memcg.unwrap_or(0)) {
            // 7.1+ reads lruvec_lru_size(); 6.1-7.0 the NR_LRU_BASE
            // counters, which every LRU keeps (the sizes themselves).
            let flushed = self.policy.shadow_count_local(&mut self.core, memcg);
            let pages = if self.core.cfg.variants.shadow_lru_size {
                self.policy.lruvec_lru_pages(memcg)
            } else if let Some((lru, _)) = flushed {
                lru
            } else {
                let s = self.policy.lru_sizes(memcg);
                s.inactive_anon + s.active_anon + s.inactive_file + s.active_file + s.unevictable
            };
            // The slab term is a flushed counter in every release.
            let nodes = flushed.map_or_else(|| self.core.shadow_nodes.allocated(memcg), |f| f.1);
            self.core
                .shrink_shadow_nodes(memcg, sc.priority, pages, nodes);
        }
    }

    /// try_to_free_mem_cgroup_pages(): limit reclaim by the charging task.
    pub fn try_to_free_mem_cgroup_pages(&mut self, memcg: MemcgId, nr_pages: u64) -> u64 {
        self.try_to_free_mem_cgroup_pages_opts(memcg, nr_pages, true)
    }

    /// try_to_free_mem_cgroup_pages() with reclaim_options: `may_swap`
    /// false is MEMCG_RECLAIM_MAY_SWAP left out (a memsw limit was hit).
    pub fn try_to_free_mem_cgroup_pages_opts(
        &mut self,
        memcg: MemcgId,
        nr_pages: u64,
        may_swap: bool,
    ) -> u64 {
        let mut sc = ScanControl::new(nr_pages.max(SWAP_CLUSTER_MAX), Some(memcg), false);
        sc.may_swap = may_swap;
        use crate::trace::Ev;
        if let Some((t, cx)) = self.core.tracer() {
            t.reclaim_begin(Ev::MemcgReclaimBegin, cx, Some(memcg));
        }
        let nr = self.do_try_to_free_pages(&mut sc);
        if let Some((t, cx)) = self.core.tracer() {
            t.reclaim_end(Ev::MemcgReclaimEnd, cx, Some(memcg), nr);
        }
        nr
    }

    /// reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK): reclaim that freed
    /// nothing while folios are under writeback (swap writes to a disk)
    /// waits for the oldest to complete instead of giving up; their
    /// PG_reclaim rotation makes them the next to go. Returns whether any
    /// writeback was waited for.
    pub fn reclaim_throttle_writeback(&mut self) -> bool {
        let Some(&(_, done)) = self.core.wb.inflight.front() else {
            return false;
        };
        self.core.wait_until(done);
        self.wb_complete();
        true
    }

    /// try_to_free_pages(): global direct reclaim.
    pub fn try_to_free_pages(&mut self, nr_pages: u64) -> u64 {
        let mut sc = ScanControl::new(nr_pages.max(SWAP_CLUSTER_MAX), None, false);
        use crate::trace::Ev;
        if let Some((t, cx)) = self.core.tracer() {
            t.reclaim_begin(Ev::DirectReclaimBegin, cx, None);
        }
        let nr = self.do_try_to_free_pages(&mut sc);
        if let Some((t, cx)) = self.core.tracer() {
            t.reclaim_end(Ev::DirectReclaimEnd, cx, None, nr);
        }
        nr
    }

    /// wakeup_kswapd(): nothing while kswapd is busy (running or throttled:
    /// not on its wait queue) or has given the node up to direct reclaim.
    pub fn wakeup_kswapd(&mut self) {
        let k = &self.core.kswapd;
        if self.core.now < k.busy_until || k.failures >= MAX_RECLAIM_RETRIES {
            return;
        }
        self.kswapd();
    }

    /// One shrink_node() pass; progress revives a kswapd that gave up
    /// (shrink_node's and lru_gen_shrink_node's kswapd_failures reset).
    fn shrink_node_pass(&mut self, sc: &mut ScanControl) {
        let before = sc.nr_reclaimed;
        sc.nr = NodeReclaimStat::default();
        sc.throttle_writeback = false;
        self.policy.shrink_node(&mut self.core, sc);
        if sc.nr_reclaimed > before {
            self.core.kswapd.failures = 0;
        }
    }

    /// balance_pgdat(): kswapd reclaims until free pages reach the high
    /// watermark, raising priority while a pass scans less than its goal
    /// or reclaims nothing. A pass that met folios cycling faster than
    /// they are written (nr_immediate) throttles kswapd, which resumes at
    /// the same priority once free.
    pub fn kswapd(&mut self) {
        let was = (self.core.in_reclaim, self.core.in_kswapd);
        self.core.in_reclaim = true;
        self.core.in_kswapd = true;
        // kswapd_try_to_sleep() -> mm_vmscan_kswapd_wake: only a kswapd
        // that had gone to sleep wakes (not one still at an unbalanced node).
        if !self.core.kswapd.unbalanced && self.core.kswapd.resume.is_none() {
            if let Some((t, cx)) = self.core.tracer() {
                t.kswapd(cx, true);
            }
        }
        self.core.kswapd.cpu_ns = 0;
        let mut sc = ScanControl::new(SWAP_CLUSTER_MAX, None, true);
        let (priority, reclaimed) = self.core.kswapd.resume.take().unwrap_or((DEF_PRIORITY, 0));
        sc.priority = priority;
        sc.nr_reclaimed = reclaimed;
        let mut balanced = false;
        let mut throttled_until = None;
        loop {
            self.wb_complete();
            if self.core.folios.nr_free >= self.core.wmark.high {
                // clear_pgdat_congested()
                self.core.kswapd.pgdat_writeback = false;
                balanced = true;
                break;
            }
            let before = sc.nr_reclaimed;
            sc.nr_scanned = 0;
            // kswapd_shrink_node(): the high watermark's worth.
            sc.nr_to_reclaim = self.core.wmark.high.max(SWAP_CLUSTER_MAX);
            self.shrink_node_pass(&mut sc);
            self.shrink_slab(&sc);
            if self.core.cfg.check_invariants {
                if let Err(e) = self.check_invariants() {
                    panic!("invariant broken after kswapd reclaim: {e}");
                }
            }
            if std::mem::take(&mut self.core.kswapd_oom) {
                self.core.in_reclaim = false;
                self.out_of_memory();
                self.core.in_reclaim = true;
            }
            let raise_priority = sc.nr_scanned < sc.nr_to_reclaim;
            if raise_priority || sc.nr_reclaimed == before {
                sc.priority -= 1;
            }
            if sc.throttle_writeback {
                throttled_until = Some(self.reclaim_throttle_kswapd());
                if sc.priority >= 1 {
                    self.core.kswapd.resume = Some((sc.priority, sc.nr_reclaimed));
                    break;
                }
            }
            if sc.priority < 1 {
                break;
            }
        }
        let k = &mut self.core.kswapd;
        if !balanced && k.resume.is_none() && sc.nr_reclaimed == 0 {
            k.failures += 1;
        }
        // kswapd_try_to_sleep(): an unbalanced node keeps kswapd running
        // unless the node is hopeless.
        k.unbalanced = !balanced && k.failures < MAX_RECLAIM_RETRIES;
        k.busy_until = (self.core.now + k.cpu_ns).max(throttled_until.unwrap_or(0));
        let sleeps = !k.unbalanced && k.resume.is_none();
        if k.resume.is_none() {
            // balance_pgdat()'s end: snapshot_refaults() for the root.
            self.policy.snapshot_refaults(&mut self.core, 0);
        }
        if sleeps {
            if let Some((t, cx)) = self.core.tracer() {
                t.kswapd(cx, false);
            }
        }
        self.core.in_reclaim = was.0;
        self.core.in_kswapd = was.1;
    }

    /// reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK) for kswapd: it sleeps
    /// HZ/10, or until more than SWAP_CLUSTER_MAX folios finished writeback
    /// since it began waiting (__acct_reclaim_writeback). Returns when
    /// kswapd wakes.
    fn reclaim_throttle_kswapd(&mut self) -> u64 {
        let start = self.core.now + self.core.kswapd.cpu_ns;
        let timeout = start + 100_000_000;
        // The queue completes in order (wb_complete pops its front), so the
        // wake-up is the 33rd completion after `start`: a search, not a walk.
        let q = &self.core.wb.inflight;
        let first = q.partition_point(|&(_, done)| done <= start);
        let written = q
            .get(first + SWAP_CLUSTER_MAX as usize)
            .map(|&(_, done)| done);
        written.map_or(timeout, |t| t.min(timeout))
    }
}

impl Core {
    /// The memcg's hierarchical workingset activations [anon, file]
    /// (lruvec_page_state(WORKINGSET_ACTIVATE_*) of its lruvec); the
    /// root's are the node's.
    pub fn workingset_activations(&self, memcg: MemcgId) -> [u64; 2] {
        let items = [
            Item::WORKINGSET_ACTIVATE_ANON,
            Item::WORKINGSET_ACTIVATE_FILE,
        ];
        if memcg == 0 {
            return items.map(|i| self.vm.get(i));
        }
        items.map(|i| {
            self.memcg_subtree_ids(memcg)
                .iter()
                .map(|&m| self.memcgs[m as usize].stat.get(i))
                .sum()
        })
    }

    /// snapshot_refaults(): remember the target's activations, against
    /// which the next reclaim's prepare_scan_control() looks for refaults.
    pub fn snapshot_refaults(&mut self, target: MemcgId) {
        let a = self.workingset_activations(target);
        self.memcgs[target as usize].refaults_snapshot = a;
    }
}
