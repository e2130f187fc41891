//! The classic active/inactive LRU (mm/vmscan.c shrink_lruvec and friends,
//! mm/swap.c folio_mark_accessed / folio_add_lru, include/linux/mm_inline.h).

use super::{shrink_folio_list, ReclaimPolicy, ScanControl, DEACTIVATE_ANON, DEACTIVATE_FILE};
use crate::mm::folio::{pg, FolioId, ListHead, NIL};
use crate::mm::memcontrol::MemcgId;
use crate::mm::vmstat::Item;
use crate::mm::workingset::{LruSizes, Shadow};
use crate::mm::{Core, FLUSH_TIME_NS, SWAP_CLUSTER_MAX};

/// enum lru_list.
pub const LRU_INACTIVE_ANON: usize = 0;
pub const LRU_ACTIVE_ANON: usize = 1;
pub const LRU_INACTIVE_FILE: usize = 2;
pub const LRU_ACTIVE_FILE: usize = 3;
pub const LRU_UNEVICTABLE: usize = 4;
pub const NR_LRU_LISTS: usize = 5;

/// One memcg's lruvec.
#[derive(Clone, Debug, Default)]
pub struct Lruvec {
    pub lists: [ListHead; NR_LRU_LISTS],
    /// lruvec->anon_cost / file_cost (lru_note_cost).
    pub anon_cost: u64,
    pub file_cost: u64,
}

#[derive(Default)]
pub struct ClassicLru {
    pub lruvecs: Vec<Lruvec>,
    scratch: Vec<FolioId>,
    /// Per memcg, the rstat-backed values reclaim and workingset read
    /// (lruvec_page_state): as of the last flush, not the live lists.
    flushed: Vec<FlushedStats>,
    /// core.stats_flush_seq when `flushed` was last refreshed.
    flushed_seq: u64,
}

/// A memcg lruvec's flushed rstat state (memcg_vmstats.state after
/// cgroup_rstat_flush()): hierarchical, its subtree's.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlushedStats {
    /// NR_INACTIVE_ANON .. NR_UNEVICTABLE.
    pub lru: [u64; NR_LRU_LISTS],
    /// WORKINGSET_ACTIVATE_ANON, WORKINGSET_ACTIVATE_FILE.
    pub activate: [u64; 2],
    /// The memcg's own lruvec, not its subtree (lruvec_page_state_local):
    /// LRU pages, and the shadow-node leaves charged to it (its slab).
    pub local_lru: u64,
    pub local_nodes: u64,
}

/// folio_lru_list().
#[inline]
fn folio_lru_list(flags: u32) -> usize {
    if flags & pg::UNEVICTABLE != 0 {
        return LRU_UNEVICTABLE;
    }
    let base = if flags & pg::SWAPBACKED != 0 {
        LRU_INACTIVE_ANON
    } else {
        LRU_INACTIVE_FILE
    };
    base + (flags & pg::ACTIVE != 0) as usize
}

/// int_sqrt().
fn int_sqrt(x: u64) -> u64 {
    (x as f64).sqrt() as u64
}

impl ClassicLru {
    pub fn new() -> Self {
        Self::default()
    }

    #[inline]
    fn lruvec_add_folio(&mut self, core: &mut Core, id: FolioId) {
        self.lruvec_add(core, id, false)
    }

    /// lruvec_add_folio_tail(): as lruvec_add_folio(), at the tail.
    #[inline]
    fn lruvec_add_folio_tail(&mut self, core: &mut Core, id: FolioId) {
        self.lruvec_add(core, id, true)
    }

    #[inline(always)]
    fn lruvec_add(&mut self, core: &mut Core, id: FolioId, tail: bool) {
        self.stats_sync(core);
        let f = core.folios.get_mut(id);
        let lru = folio_lru_list(f.flags);
        f.lru = lru as u8;
        f.set(pg::LRU);
        f.clear(pg::ISOLATED);
        let list = &mut self.lruvecs[f.memcg as usize].lists[lru];
        if tail {
            list.add_tail(&mut core.folios, id);
        } else {
            list.add(&mut core.folios, id);
        }
    }

    /// lru_note_cost(): the cost of reclaiming from one LRU type (I/O
    /// counts SWAP_CLUSTER_MAX per folio, a rotation 1), on the lruvec and
    /// its ancestors, halving both costs once they pass a quarter of the
    /// lruvec's size (lruvec_page_state: its subtree's folios, as last
    /// flushed) so old events fade.
    fn lru_note_cost(
        &mut self,
        core: &Core,
        memcg: MemcgId,
        file: bool,
        nr_io: u64,
        nr_rotated: u64,
    ) {
        self.stats_sync(core);
        let cost = nr_io * SWAP_CLUSTER_MAX + nr_rotated;
        // No event, no decay: with a stale (small) flushed size a decay
        // on every call would halve the costs at each shrink_list().
        if cost == 0 {
            return;
        }
        let mut m = memcg;
        loop {
            let lrusize: u64 = self.flushed(core, m).lru[..LRU_UNEVICTABLE].iter().sum();
            let lv = &mut self.lruvecs[m as usize];
            if file {
                lv.file_cost += cost;
            } else {
                lv.anon_cost += cost;
            }
            if lv.file_cost + lv.anon_cost > lrusize / 4 {
                lv.file_cost /= 2;
                lv.anon_cost /= 2;
            }
            if m == 0 {
                break;
            }
            m = core.memcgs[m as usize].parent; // parent_lruvec()
        }
    }

    /// lruvec_page_state(NR_LRU_BASE + lru) of a memcg's lruvec: memcg
    /// lruvec stats are hierarchical (its own folios and its descendants').
    fn lru_size_total(&self, core: &Core, memcg: MemcgId, lru: usize) -> u64 {
        core.memcg_subtree_ids(memcg)
            .iter()
            .map(|&m| {
                self.lruvecs
                    .get(m as usize)
                    .map_or(0, |lv| lv.lists[lru].len)
            })
            .sum()
    }

    #[inline]
    fn lruvec_del_folio(&mut self, core: &mut Core, id: FolioId) {
        self.stats_sync(core);
        let f = core.folios.get(id);
        let (lru, m) = (f.lru as usize, f.memcg as usize);
        self.lruvecs[m].lists[lru].del(&mut core.folios, id);
        core.folios.get_mut(id).clear(pg::LRU);
    }

    /// inactive_is_low(): the inactive list is smaller than
    /// active / sqrt(10 * size in GiB), sizes hierarchical and as last
    /// flushed (lruvec_page_state).
    fn inactive_is_low(&self, core: &Core, memcg: MemcgId, inactive_lru: usize) -> bool {
        inactive_is_low_of(&self.flushed(core, memcg), inactive_lru)
    }

    /// prepare_scan_control(): once per shrink_node, from the *target*
    /// memcg's lruvec (the root's for global reclaim): the cost balance,
    /// which active lists may be deactivated, cache_trim_mode and, for
    /// global reclaim, file_is_tiny.
    fn prepare_scan_control(&mut self, core: &mut Core, sc: &mut ScanControl) {
        let target = sc.target_memcg.unwrap_or(0);
        self.mem_cgroup_flush_stats_ratelimited(core, target);
        let lv = &self.lruvecs[target as usize];
        sc.anon_cost = lv.anon_cost;
        sc.file_cost = lv.file_cost;
        // The target's flushed sizes and activations: nothing below
        // changes them.
        let f = self.flushed(core, target);
        if sc.force_deactivate {
            sc.may_deactivate = DEACTIVATE_ANON | DEACTIVATE_FILE;
        } else {
            // New refaults since snapshot_refaults(): a new workingset is
            // forming, so deactivate stale active folios.
            // Both sides are flushed values: a refault after the last flush
            // goes unseen until the next one.
            let act = f.activate;
            let snap = core.memcgs[target as usize].refaults_snapshot;
            sc.may_deactivate = 0;
            if act[0] != snap[0] || inactive_is_low_of(&f, LRU_INACTIVE_ANON) {
                sc.may_deactivate |= DEACTIVATE_ANON;
            }
            if act[1] != snap[1] || inactive_is_low_of(&f, LRU_INACTIVE_FILE) {
                sc.may_deactivate |= DEACTIVATE_FILE;
            }
        }
        let inactive_file = f.lru[LRU_INACTIVE_FILE];
        sc.cache_trim_mode =
            (inactive_file >> sc.priority) > 0 && sc.may_deactivate & DEACTIVATE_FILE == 0;
        if !sc.cgroup_reclaim() {
            // node_page_state(), not memcg rstat: exact here.
            // The cache trap: file (with free pages) down to the high
            // watermark while anon is not refaulting and still sizeable.
            let file = self.lru_size_total(core, 0, LRU_ACTIVE_FILE)
                + self.lru_size_total(core, 0, LRU_INACTIVE_FILE);
            let anon = self.lru_size_total(core, 0, LRU_INACTIVE_ANON);
            sc.file_is_tiny = file + core.folios.nr_free <= core.wmark.high
                && sc.may_deactivate & DEACTIVATE_ANON == 0
                && (anon >> sc.priority) > 0;
        }
    }

    /// isolate_lru_folios(): take folios from the list's tail until `nr`
    /// pages were scanned (a large folio counts all its pages). Returns
    /// the pages taken.
    fn isolate_lru_folios(&mut self, core: &mut Core, memcg: MemcgId, lru: usize, nr: u64) -> u64 {
        self.stats_sync(core);
        self.scratch.clear();
        let list = &mut self.lruvecs[memcg as usize].lists[lru];
        let mut scanned = 0;
        while scanned < nr {
            let id = list.tail;
            if id == NIL {
                break;
            }
            // An LRU filled by sequential allocations is often walked down
            // consecutive frames: start fetching a few ahead (a guess; a
            // wrong one costs a wasted prefetch).
            if let Some(ahead) = core.folios.f_get(id.wrapping_sub(8)) {
                crate::mm::prefetch_read(ahead);
            }
            list.del(&mut core.folios, id);
            let f = core.folios.get_mut(id);
            f.clear(pg::LRU);
            f.set(pg::ISOLATED);
            scanned += f.nr_pages();
            self.scratch.push(id);
        }
        scanned
    }

    /// move_folios_to_lru(): put folios back by their flags; activated ones
    /// age the nonresident clock.
    fn move_folios_to_lru(&mut self, core: &mut Core, list: &[FolioId]) {
        for &id in list {
            self.lruvec_add_folio(core, id);
            let f = core.folios.get(id);
            if f.test(pg::ACTIVE) {
                let (m, nr) = (f.memcg, f.nr_pages());
                core.workingset_age_nonresident(m, nr);
            }
        }
    }

    /// shrink_active_list(): deactivate folios from the active list's tail;
    /// referenced executable file folios stay active.
    fn shrink_active_list(
        &mut self,
        core: &mut Core,
        memcg: MemcgId,
        nr_to_scan: u64,
        sc: &mut ScanControl,
        lru: usize,
    ) {
        self.lru_add_drain(core);
        let n = self.isolate_lru_folios(core, memcg, lru, nr_to_scan);
        let mut list = std::mem::take(&mut self.scratch);
        trace_isolate(core, memcg, nr_to_scan, n, lru);
        core.count_reclaim(memcg, Item::PGREFILL, n, sc);
        // Per folio, whatever its size.
        let folios = list.len() as u64;
        if n > 0 {
            core.cpu_or_kswapd(core.cost.shrink_active_list + core.cost.isolate_lru_folio * folios);
        }
        core.cpu_or_kswapd(core.cost.scan_folio * folios);
        let mut nr_deactivate = 0;
        for &id in &list {
            let (referenced, exec) = super::folio_referenced_walk(core, id);
            let f = core.folios.get_mut(id);
            if referenced > 0 && exec && f.is_file_lru() {
                continue;
            }
            f.clear(pg::ACTIVE);
            f.set(pg::WORKINGSET);
            nr_deactivate += f.nr_pages();
        }
        self.move_folios_to_lru(core, &list);
        core.count(memcg, Item::PGDEACTIVATE, nr_deactivate);
        if let Some((t, cx)) = core.tracer() {
            // The folios kept active are the referenced executable ones.
            let kept = n - nr_deactivate;
            let file = lru == LRU_ACTIVE_FILE;
            let s = crate::trace::ShrinkActive {
                nr_taken: n,
                nr_active: kept,
                nr_deactivated: nr_deactivate,
                nr_referenced: kept,
                priority: sc.priority,
                file,
            };
            t.shrink_active(cx, memcg, &s);
        }
        list.clear();
        self.scratch = list;
    }

    /// shrink_inactive_list().
    fn shrink_inactive_list(
        &mut self,
        core: &mut Core,
        memcg: MemcgId,
        nr_to_scan: u64,
        sc: &mut ScanControl,
        lru: usize,
    ) -> u64 {
        let file = lru == LRU_INACTIVE_FILE;
        // Writes the device finished while reclaim went on: their
        // completions ended writeback and queued the PG_reclaim rotations
        // that lru_add_drain() moves to the tail before this batch.
        super::end_writeback_until_now(core, self);
        self.lru_add_drain(core);
        let nr_scanned = self.isolate_lru_folios(core, memcg, lru, nr_to_scan);
        let mut list = std::mem::take(&mut self.scratch);
        trace_isolate(core, memcg, nr_to_scan, nr_scanned, lru);
        if nr_scanned == 0 {
            self.scratch = list;
            return 0;
        }
        sc.nr_scanned += nr_scanned;
        // Per folio, whatever its size (nr_scanned counts pages).
        let folios = list.len() as u64;
        core.cpu_or_kswapd(
            core.cost.shrink_inactive_list
                + (core.cost.isolate_lru_folio + core.cost.scan_folio) * folios,
        );
        core.count_pgscan(memcg, file, nr_scanned, sc);
        let nr_reclaimed = shrink_folio_list(core, self, &mut list, sc);
        // Every folio taken was dirty and not queued for writeback: the
        // flushers are behind, nudge them (and wait, in memcg reclaim).
        if sc.nr_unqueued_dirty == nr_scanned {
            super::reclaim_dirty_batch(core, self, sc);
        }
        sc.nr.taken += nr_scanned;
        sc.nr.writeback += sc.nr_writeback;
        sc.nr.immediate += sc.nr_immediate;
        self.move_folios_to_lru(core, &list);
        core.count_pgsteal(memcg, file, nr_reclaimed, sc);
        if core.trace.is_some() {
            let stat = super::trace_reclaim_stat(sc, nr_scanned, nr_reclaimed, file);
            if let Some((t, cx)) = core.tracer() {
                t.shrink_inactive(cx, memcg, &stat);
            }
        }
        self.lru_note_cost(core, memcg, file, sc.nr_pageout, nr_scanned - nr_reclaimed);
        list.clear();
        self.scratch = list;
        nr_reclaimed
    }

    /// get_scan_count(): how many folios of each list to scan at this
    /// priority, balancing anon against file by swappiness and cost.
    fn get_scan_count(
        &self,
        core: &Core,
        memcg: MemcgId,
        sc: &mut ScanControl,
    ) -> [u64; NR_LRU_LISTS] {
        #[derive(PartialEq)]
        enum Balance {
            Equal,
            Fract,
            Anon,
            File,
        }
        let swappiness = core.mem_cgroup_swappiness(memcg) as u64;
        let lv = &self.lruvecs[memcg as usize];
        // can_reclaim_anon_pages()
        let can_swap = core.mem_cgroup_get_nr_swap_pages(memcg) > 0;
        let balance = if !sc.may_swap || !can_swap || (sc.cgroup_reclaim() && swappiness == 0) {
            Balance::File
        } else if sc.priority == 0 && swappiness > 0 {
            Balance::Equal
        } else if sc.file_is_tiny {
            Balance::Anon
        } else if sc.cache_trim_mode {
            Balance::File
        } else {
            Balance::Fract
        };
        // calculate_pressure_balance(): the reclaim root's costs
        // (prepare_scan_control), the same for every lruvec of the walk.
        let total_cost = sc.anon_cost + sc.file_cost;
        let anon_cost = total_cost + sc.anon_cost;
        let file_cost = total_cost + sc.file_cost;
        let total_cost = anon_cost + file_cost;
        let ap = swappiness * (total_cost + 1) / (anon_cost + 1);
        let fp = (200 - swappiness) * (total_cost + 1) / (file_cost + 1);
        let fraction = [ap, fp];
        let denominator = (ap + fp).max(1);
        let mut nr = [0u64; NR_LRU_LISTS];
        for (lru, n) in nr.iter_mut().enumerate().take(4) {
            let file = lru >= LRU_INACTIVE_FILE;
            let size = lv.lists[lru].len;
            let mut scan = core.apply_proportional_protection(memcg, sc, size) >> sc.priority;
            scan = match balance {
                Balance::Equal => scan,
                Balance::Fract => scan * fraction[file as usize] / denominator,
                Balance::File => {
                    if file {
                        scan
                    } else {
                        0
                    }
                }
                Balance::Anon => {
                    if file {
                        0
                    } else {
                        scan
                    }
                }
            };
            *n = scan;
        }
        nr
    }

    /// cache_ext's eviction (__page_cache_ext_isolate_and_reclaim()): one
    /// evict_folios() call per CACHE_EXT_EVICT_BATCH of `request`, each
    /// asking for min(32, request) (the last one too, so a request of 40
    /// asks twice for 32), whatever the earlier calls proposed; a call
    /// proposing more than 32 ends it. The valid, isolatable candidates
    /// are reclaimed as reclaim_pages() does. Returns the folios reclaimed.
    fn cache_ext_shrink(
        &mut self,
        core: &mut Core,
        memcg: MemcgId,
        request: u64,
        sc: &mut ScanControl,
    ) -> u64 {
        let mut buf = [0 as FolioId; crate::mm::cache_ext::CACHE_EXT_EVICT_BATCH];
        let batch = request.min(SWAP_CLUSTER_MAX);
        let mut reclaimed = 0;
        for _ in 0..request.div_ceil(SWAP_CLUSTER_MAX) {
            let (n, proposed) = core.cache_ext_evict_folios(memcg, batch, &mut buf);
            if proposed.is_none() {
                break;
            }
            if n > 0 {
                reclaimed += self.cache_ext_reclaim(core, memcg, &buf[..n], sc);
            }
        }
        reclaimed
    }

    /// Isolates cache_ext's valid candidates and reclaims them as
    /// reclaim_pages() does (the DAMON entry cache_ext borrows): PG_active
    /// cleared, shrink_folio_list(), the rest put back (so on the inactive
    /// list unless shrink_folio_list() activated them); unlike
    /// shrink_inactive_list() it counts no pgscan or pgsteal.
    fn cache_ext_reclaim(
        &mut self,
        core: &mut Core,
        memcg: MemcgId,
        cand: &[FolioId],
        sc: &mut ScanControl,
    ) -> u64 {
        let n = cand.len();
        self.stats_sync(core);
        let mut list = std::mem::take(&mut self.scratch);
        list.clear();
        for &id in cand {
            self.lruvec_del_folio(core, id);
            let f = core.folios.get_mut(id);
            f.set(pg::ISOLATED);
            f.clear(pg::ACTIVE);
            list.push(id);
        }
        core.cpu_or_kswapd(core.cost.scan_folio * n as u64);
        let got = shrink_folio_list(core, self, &mut list, sc);
        self.move_folios_to_lru(core, &list);
        core.cache_ext.stats_mut(memcg).candidates_reclaimed += got;
        list.clear();
        self.scratch = list;
        got
    }

    /// shrink_lruvec().
    fn shrink_lruvec(&mut self, core: &mut Core, memcg: MemcgId, sc: &mut ScanControl) {
        let mut nr = self.get_scan_count(core, memcg, sc);
        let targets = nr;
        // cache_ext's shrink_lruvec(): the memcg's policy is asked for the
        // inactive-file target first. More than 80% of it reclaimed, or a
        // target of 0, skips the kernel's loop; otherwise the loop runs on
        // the rest, its own count starting with the policy's, which is
        // thus added to sc twice, as that kernel does. (That kernel returns
        // on a target of 0 for a memcg without a policy too: not modelled.)
        let mut policy_reclaimed = 0;
        if core.cache_ext.active(memcg) {
            let request = nr[LRU_INACTIVE_FILE];
            let got = if request > 0 {
                self.cache_ext_shrink(core, memcg, request, sc)
            } else {
                0
            };
            nr[LRU_INACTIVE_FILE] -= got.min(request);
            sc.nr_reclaimed += got;
            sc.nr_scanned += got;
            if request == 0 || got * 100 / request > 80 {
                return;
            }
            core.cache_ext.stats_mut(memcg).fallthrough += 1;
            policy_reclaimed = got;
        }
        let nr_to_reclaim = sc.nr_to_reclaim;
        let start = sc.nr_reclaimed - policy_reclaimed;
        // Global direct reclaim at DEF_PRIORITY scans its whole target.
        let proportional =
            !sc.cgroup_reclaim() && !sc.is_kswapd && sc.priority == crate::mm::DEF_PRIORITY;
        while nr[LRU_INACTIVE_ANON] > 0 || nr[LRU_ACTIVE_FILE] > 0 || nr[LRU_INACTIVE_FILE] > 0 {
            for lru in 0..4 {
                if nr[lru] == 0 {
                    continue;
                }
                let n = nr[lru].min(SWAP_CLUSTER_MAX);
                nr[lru] -= n;
                let file = lru >= LRU_INACTIVE_FILE;
                if lru & 1 == 1 {
                    // shrink_list() on an active list.
                    let bit = if file {
                        DEACTIVATE_FILE
                    } else {
                        DEACTIVATE_ANON
                    };
                    if sc.may_deactivate & bit != 0 {
                        self.shrink_active_list(core, memcg, n, sc, lru);
                    } else {
                        sc.skipped_deactivate = true;
                    }
                } else {
                    sc.nr_reclaimed += self.shrink_inactive_list(core, memcg, n, sc, lru);
                }
            }
            if sc.nr_reclaimed - start < nr_to_reclaim || proportional {
                continue;
            }
            // Goal met: stop scanning the type with less left to scan and
            // trim the other to the same share of its original target, so
            // anon and file stay scanned in get_scan_count()'s proportion.
            let nr_file = nr[LRU_INACTIVE_FILE] + nr[LRU_ACTIVE_FILE];
            let nr_anon = nr[LRU_INACTIVE_ANON] + nr[LRU_ACTIVE_ANON];
            if nr_file == 0 || nr_anon == 0 {
                break;
            }
            let (small, big, left) = if nr_file > nr_anon {
                (LRU_INACTIVE_ANON, LRU_INACTIVE_FILE, nr_anon)
            } else {
                (LRU_INACTIVE_FILE, LRU_INACTIVE_ANON, nr_file)
            };
            let scan_target = targets[small] + targets[small + 1] + 1;
            let percentage = left * 100 / scan_target;
            nr[small] = 0;
            nr[small + 1] = 0;
            for lru in [big, big + 1] {
                let scanned = targets[lru] - nr[lru];
                nr[lru] = targets[lru] * (100 - percentage) / 100;
                nr[lru] -= nr[lru].min(scanned);
            }
        }
        sc.nr_reclaimed += policy_reclaimed;
        // Age the active anon list even without anon scanning.
        if core.mem_cgroup_get_nr_swap_pages(memcg) > 0
            && self.inactive_is_low(core, memcg, LRU_INACTIVE_ANON)
        {
            self.shrink_active_list(core, memcg, SWAP_CLUSTER_MAX, sc, LRU_ACTIVE_ANON);
        }
    }
}

/// Lazily flushed memcg statistics (mm/memcontrol.c, rstat): reclaim and
/// the workingset code read lruvec_page_state(), the values as of the last
/// flush; get_scan_count() reads the exact per-list sizes.
impl ClassicLru {
    /// lruvec_page_state() of the LRU sizes and activations: the flushed
    /// copy, or the exact values without MmConfig::memcg_stats_lazy_flush.
    #[inline]
    fn flushed(&self, core: &Core, memcg: MemcgId) -> FlushedStats {
        if core.cfg.memcg_stats_lazy_flush {
            return self
                .flushed
                .get(memcg as usize)
                .copied()
                .unwrap_or_default();
        }
        let mut f = FlushedStats {
            activate: core.workingset_activations(memcg),
            ..Default::default()
        };
        for (lru, n) in f.lru.iter_mut().enumerate() {
            *n = self.lru_size_total(core, memcg, lru);
        }
        f
    }

    /// Catches up with the periodic flushes (flush_memcg_stats_dwork, on
    /// Core's tick) that ran since the last call. Called before anything
    /// changes the lists or the activation counters, so the copy is the
    /// state at the flush's instant.
    #[inline]
    fn stats_sync(&mut self, core: &Core) {
        if self.flushed_seq != core.stats_flush_seq && core.cfg.memcg_stats_lazy_flush {
            self.flushed_seq = core.stats_flush_seq;
            self.do_flush_stats(core, 0);
        }
    }

    /// cgroup_rstat_flush() of `root`'s subtree: each memcg's copy gets
    /// its subtree's sums.
    #[cold]
    fn do_flush_stats(&mut self, core: &Core, root: MemcgId) {
        if self.flushed.len() < core.memcgs.len() {
            self.flushed
                .resize(core.memcgs.len(), FlushedStats::default());
        }
        for m in core.memcg_subtree(root) {
            let mut f = FlushedStats::default();
            for c in core.memcg_subtree(m) {
                if let Some(lv) = self.lruvecs.get(c as usize) {
                    for (sum, list) in f.lru.iter_mut().zip(lv.lists.iter()) {
                        *sum += list.len;
                    }
                }
            }
            f.activate = core.workingset_activations(m);
            if let Some(lv) = self.lruvecs.get(m as usize) {
                f.local_lru = lv.lists.iter().map(|l| l.len).sum();
            }
            f.local_nodes = core.shadow_nodes.allocated(m);
            self.flushed[m as usize] = f;
        }
    }

    /// mem_cgroup_flush_stats_ratelimited(): flushes only when the periodic
    /// flusher is a full cycle late (2 * FLUSH_TIME since flush_last_time),
    /// which in the model, whose flusher is never delayed, does not happen.
    /// memcg_vmstats_needs_flush() (more than MEMCG_CHARGE_BATCH * nr_cpus
    /// pending updates) is taken as met: reclaim leaves far more.
    fn mem_cgroup_flush_stats_ratelimited(&mut self, core: &mut Core, memcg: MemcgId) {
        if !core.cfg.memcg_stats_lazy_flush {
            return;
        }
        self.stats_sync(core);
        if core.now > core.flush_last_time + 2 * FLUSH_TIME_NS {
            self.do_flush_stats(core, memcg);
            if memcg == 0 {
                core.flush_last_time = core.now;
            }
        }
    }
}

impl ReclaimPolicy for ClassicLru {
    fn name(&self) -> &'static str {
        "classic"
    }

    fn lruvec_init(&mut self, memcg: MemcgId) {
        let m = memcg as usize;
        if self.lruvecs.len() <= m {
            self.lruvecs.resize(m + 1, Lruvec::default());
        }
    }

    #[inline(always)]
    fn lru_add(&mut self, core: &mut Core, id: FolioId) {
        self.lruvec_add_folio(core, id);
        let lru = core.folios.get(id).lru as u32;
        core.trace_lru_insertion(id, lru);
    }

    fn folio_mark_accessed(&mut self, core: &mut Core, id: FolioId) {
        let f = core.folios.get_mut(id);
        if !f.test(pg::REFERENCED) {
            f.set(pg::REFERENCED);
        } else if f.test(pg::UNEVICTABLE) {
        } else if !f.test(pg::ACTIVE) {
            let (memcg, nr) = (f.memcg, f.nr_pages());
            if f.test(pg::LRU) {
                // folio_activate()
                self.lruvec_del_folio(core, id);
                core.folios.get_mut(id).set(pg::ACTIVE);
                self.lruvec_add_folio(core, id);
                core.count(memcg, Item::PGACTIVATE, nr);
                core.trace_lru_activate(id);
            } else if f.test(pg::LRU_CACHED) && core.lru_add_batched_on(core.cpu, id) {
                // __lru_cache_activate_folio(): still in this CPU's
                // lru_add batch, it goes to the active list at the drain.
                core.folios.get_mut(id).set(pg::ACTIVE);
            }
            core.folios.get_mut(id).clear(pg::REFERENCED);
            // workingset_activation()
            core.workingset_age_nonresident(memcg, nr);
        }
    }

    fn folio_del_lru(&mut self, core: &mut Core, id: FolioId) {
        if core.folios.get(id).test(pg::LRU) {
            self.lruvec_del_folio(core, id);
        }
    }

    fn lru_add_split_folio(
        &mut self,
        core: &mut Core,
        parent: FolioId,
        old_nr: u64,
        pieces: &[FolioId],
    ) {
        self.stats_sync(core);
        let f = core.folios.get(parent);
        let (lru, m) = (f.lru as usize, f.memcg as usize);
        self.lruvecs[m].lists[lru].add_split_pieces(&mut core.folios, parent, old_nr, pieces);
    }

    fn folio_putback_lru(&mut self, core: &mut Core, id: FolioId) {
        // folio_putback_lru() is folio_add_lru(): lru_add() traces it.
        self.lruvec_add_folio(core, id);
        let lru = core.folios.get(id).lru as u32;
        core.trace_lru_insertion(id, lru);
    }

    /// shrink_node() -> shrink_node_memcgs(): every memcg under the target
    /// that memory.min/low lets reclaim, each lruvec shrunk in turn.
    fn shrink_node(&mut self, core: &mut Core, sc: &mut ScanControl) {
        self.prepare_scan_control(core, sc);
        let mut it = core.reclaim_memcgs(sc);
        while let Some(memcg) = it.next() {
            if !core.mem_cgroup_reclaim_allowed(memcg, sc) {
                continue;
            }
            self.shrink_lruvec(core, memcg, sc);
            // A partial walk stops once the goal is met.
            if sc.partial_walk() && sc.nr_reclaimed >= sc.nr_to_reclaim {
                core.mem_cgroup_iter_break(sc, Some(&it));
                return;
            }
        }
        core.mem_cgroup_iter_break(sc, None);
        if sc.is_kswapd {
            // Isolating only folios under writeback: allocation outruns
            // laundering; from now on kswapd counts the PG_reclaim ones it
            // meets again as nr_immediate, and stalls on them.
            if sc.nr.writeback > 0 && sc.nr.writeback == sc.nr.taken {
                core.kswapd.pgdat_writeback = true;
            }
            sc.throttle_writeback = sc.nr.immediate > 0;
        }
    }

    fn folio_rotate_reclaimable(&mut self, core: &mut Core, id: FolioId) {
        // lru_move_tail(): off the active list if reclaim had activated it
        // while dirty, onto the inactive tail so it is reclaimed next.
        let f = core.folios.get(id);
        if f.test(pg::LRU) && !f.test(pg::DIRTY) && !f.test(pg::UNEVICTABLE) {
            let (m, nr) = (f.memcg, f.nr_pages());
            self.lruvec_del_folio(core, id);
            core.folios.get_mut(id).clear(pg::ACTIVE);
            self.lruvec_add_folio_tail(core, id);
            core.count(m, Item::PGROTATED, nr);
        }
    }

    fn workingset_eviction(&mut self, core: &mut Core, id: FolioId) -> Shadow {
        core.workingset_eviction_classic(id)
    }

    #[inline(always)]
    fn workingset_refault(&mut self, core: &mut Core, id: FolioId, shadow: Shadow) {
        let (evict_memcg, _, _) = crate::mm::workingset::unpack_shadow(shadow);
        // workingset_test_recent(): a ratelimited flush, then the eviction
        // lruvec's flushed, hierarchical sizes (lruvec_page_state).
        let sizes = if !core.cfg.memcg_stats_lazy_flush {
            self.lru_sizes(evict_memcg)
        } else if (evict_memcg as usize) < core.memcgs.len() {
            self.mem_cgroup_flush_stats_ratelimited(core, evict_memcg);
            let f = self.flushed(core, evict_memcg).lru;
            LruSizes {
                inactive_anon: f[LRU_INACTIVE_ANON],
                active_anon: f[LRU_ACTIVE_ANON],
                inactive_file: f[LRU_INACTIVE_FILE],
                active_file: f[LRU_ACTIVE_FILE],
                unevictable: f[LRU_UNEVICTABLE],
            }
        } else {
            LruSizes::default()
        };
        if core.workingset_refault_classic(id, shadow, sizes) {
            // lru_note_cost_refault(): a restored workingset folio cost an I/O.
            let f = core.folios.get(id);
            let (memcg, file) = (f.memcg, f.is_file_lru());
            self.lru_note_cost(core, memcg, file, f.nr_pages(), 0);
        }
    }

    /// count_shadow_nodes() of 6.1-7.0: a ratelimited flush, then the
    /// memcg's own LRU and slab as last flushed, which in a group younger
    /// than the first periodic flush are still zero.
    fn shadow_count_local(&mut self, core: &mut Core, memcg: MemcgId) -> Option<(u64, u64)> {
        if !core.cfg.memcg_stats_lazy_flush {
            return None;
        }
        self.mem_cgroup_flush_stats_ratelimited(core, memcg);
        let f = self.flushed(core, memcg);
        Some((f.local_lru, f.local_nodes))
    }

    /// snapshot_refaults(): lruvec_page_state(WORKINGSET_ACTIVATE_*), the
    /// flushed value, the one prepare_scan_control() compares with.
    fn mem_cgroup_flush_stats(&mut self, core: &mut Core, memcg: MemcgId) {
        if !core.cfg.memcg_stats_lazy_flush {
            return;
        }
        self.stats_sync(core);
        self.do_flush_stats(core, memcg);
        if memcg == 0 {
            core.flush_last_time = core.now;
        }
    }

    fn snapshot_refaults(&mut self, core: &mut Core, target: MemcgId) {
        self.stats_sync(core);
        core.memcgs[target as usize].refaults_snapshot = self.flushed(core, target).activate;
    }

    fn lru_sizes(&self, memcg: MemcgId) -> LruSizes {
        match self.lruvecs.get(memcg as usize) {
            Some(lv) => LruSizes {
                inactive_anon: lv.lists[LRU_INACTIVE_ANON].len,
                active_anon: lv.lists[LRU_ACTIVE_ANON].len,
                inactive_file: lv.lists[LRU_INACTIVE_FILE].len,
                active_file: lv.lists[LRU_ACTIVE_FILE].len,
                unevictable: lv.lists[LRU_UNEVICTABLE].len,
            },
            None => LruSizes::default(),
        }
    }

    fn check_invariants(&self, core: &Core) -> Result<(), String> {
        for (m, lv) in self.lruvecs.iter().enumerate() {
            for (lru, l) in lv.lists.iter().enumerate() {
                let mut n = 0u64;
                for id in l.iter(&core.folios) {
                    let f = core.folios.get(id);
                    if !f.test(pg::LRU)
                        || f.test(pg::ISOLATED)
                        || f.lru as usize != lru
                        || f.memcg as usize != m
                    {
                        return Err(format!(
                            "folio {}:{} on lru {} of memcg {} has flags {:#x} lru {} memcg {}",
                            f.mapping, f.index, lru, m, f.flags, f.lru, f.memcg
                        ));
                    }
                    if folio_lru_list(f.flags) != lru {
                        return Err(format!(
                            "folio {}:{} on lru {} but its flags say lru {}",
                            f.mapping,
                            f.index,
                            lru,
                            folio_lru_list(f.flags)
                        ));
                    }
                    n += f.nr_pages();
                }
                if n != l.len {
                    return Err(format!(
                        "memcg {m} lru {lru}: counter {} but {} pages listed",
                        l.len, n
                    ));
                }
            }
        }
        // Every folio flagged PG_lru is on some list: the list walk above
        // counted them; compare with the flag count.
        let listed: u64 = self
            .lruvecs
            .iter()
            .flat_map(|lv| lv.lists.iter())
            .map(|l| l.len)
            .sum();
        let flagged = core
            .folios
            .f
            .iter()
            .filter(|f| !f.test(pg::FREE) && f.test(pg::LRU))
            .map(|f| f.nr_pages())
            .sum::<u64>();
        if listed != flagged {
            return Err(format!(
                "{flagged} pages flagged PG_lru but {listed} on lists"
            ));
        }
        Ok(())
    }
}

/// mm_vmscan_lru_isolate for isolate_lru_folios(): the model skips no
/// folio (one zone), so scanned == taken.
fn trace_isolate(core: &mut Core, memcg: MemcgId, nr_to_scan: u64, taken: u64, lru: usize) {
    if let Some((t, cx)) = core.tracer() {
        let s = crate::trace::LruIsolate {
            nr_requested: nr_to_scan,
            nr_scanned: taken,
            nr_taken: taken,
            lru: lru as u32,
        };
        t.lru_isolate(cx, memcg, &s);
    }
}

/// inactive_is_low() on sizes already read (`f`, flushed).
fn inactive_is_low_of(f: &FlushedStats, inactive_lru: usize) -> bool {
    let inactive = f.lru[inactive_lru];
    let active = f.lru[inactive_lru + 1];
    let gb = (inactive + active) >> (30 - 12);
    let ratio = if gb > 0 { int_sqrt(10 * gb) } else { 1 };
    inactive * ratio < active
}
