//! MGLRU eviction (mm/vmscan.c): sort_folio, isolate_folios, evict_folios
//! and the reclaim loop around them (try_to_shrink_lruvec,
//! lru_gen_shrink_node), with seed 003's rework as a variant.

use super::*;

impl LruGen {
    /// sort_folio(): folios that must not be evicted from the oldest
    /// generation are moved on (promoted, protected by tier, or waiting for
    /// writeback). Returns true if `id` was sorted.
    pub(super) fn sort_folio(
        &mut self,
        core: &mut Core,
        m: usize,
        id: FolioId,
        tier_idx: usize,
    ) -> bool {
        let rework = Self::rework(core);
        let reclaim_rework = core.cfg.variants.mglru_reclaim_rework;
        let f = *core.folios.get(id);
        let delta = f.nr_pages();
        let gen = folio_lru_gen(&f);
        let type_ = f.is_file_lru() as usize;
        let refs = Self::folio_lru_refs(f.flags, f.refs, rework);
        let ws = f.test(pg::WORKINGSET);
        let tier = Self::lru_tier_from_refs(refs, ws, rework);
        // promoted
        if gen != lru_gen_from_seq(self.lrugen[m].min_seq[type_]) {
            self.move_folio(core, id, gen, false);
            self.lrugen[m].stats.sort_promoted += 1;
            return true;
        }
        // protected
        let saturated = if rework {
            refs + ws as u32 == REFS_FULL + 1
        } else {
            refs == REFS_FULL
        };
        if tier > tier_idx || saturated {
            let new_gen = Self::folio_inc_gen(&self.lrugen[m], core, id, false, rework);
            // The rework puts them at the head of the next generation.
            self.move_folio(core, id, new_gen, !rework);
            let lv = &mut self.lrugen[m];
            if !(rework && saturated) {
                lv.protected[type_][tier] += delta;
            }
            lv.stats.sort_protected += 1;
            core.folios.get_mut(id).set(pg::PROT_UNUSED);
            core.count(m as MemcgId, Item::PROTECTED, delta);
            if !core.cfg.variants.mglru_refault_accounting_fix {
                // Before 6.5 a tier's protection counted as an activation.
                let (_, activate, _) =
                    crate::mm::workingset::workingset_items(type_ == LRU_GEN_FILE);
                core.count(m as MemcgId, activate, delta);
            }
            return true;
        }
        let dirty = f.test(pg::DIRTY);
        let writeback = f.test(pg::WRITEBACK);
        if !reclaim_rework && type_ == LRU_GEN_FILE && dirty {
            self.file_taken += delta;
            if !writeback {
                self.unqueued_dirty += delta;
            }
        }
        // waiting for writeback (before seed 003's rework, which leaves
        // dirty and writeback folios to shrink_folio_list())
        if !reclaim_rework && (writeback || (type_ == LRU_GEN_FILE && dirty)) {
            let new_gen = Self::folio_inc_gen(&self.lrugen[m], core, id, true, rework);
            self.move_folio(core, id, new_gen, false);
            self.lrugen[m].stats.sort_writeback += 1;
            return true;
        }
        false
    }

    /// isolate_folio(): take it off the LRU for shrink_folio_list().
    pub(super) fn isolate_folio(&mut self, core: &mut Core, id: FolioId) {
        let rework = Self::rework(core);
        {
            let f = core.folios.get_mut(id);
            if !f.test(pg::REFERENCED) {
                f.refs = 0;
                if !rework {
                    f.clear(pg::WORKINGSET);
                }
            }
            f.clear(pg::RECLAIM);
            if !rework {
                f.clear(pg::REFERENCED);
            }
        }
        self.lru_gen_del_folio(core, id);
        core.folios.get_mut(id).set(pg::ISOLATED);
    }

    /// scan_folios(): sort or isolate from the tail of the oldest generation
    /// of `type_`, up to `nr_to_scan` (at most MAX_LRU_BATCH) or until
    /// MIN_LRU_BATCH are isolated. Returns (scanned, isolated).
    pub(super) fn scan_folios(
        &mut self,
        core: &mut Core,
        m: usize,
        nr_to_scan: u64,
        sc: &ScanControl,
        type_: usize,
        tier: usize,
    ) -> (u64, u64) {
        let lv = &self.lrugen[m];
        if lv.get_nr_gens(type_) == MIN_NR_GENS {
            return (0, 0);
        }
        let gen = lru_gen_from_seq(lv.min_seq[type_]);
        // Seed 003's rework bounds a round by the caller's budget ("relocate
        // the LRU scan batch limit to callers"); before it, every round may
        // scan MAX_LRU_BATCH folios whatever the caller's nr_to_scan.
        let scan_batch = if core.cfg.variants.mglru_reclaim_rework {
            nr_to_scan.min(MAX_LRU_BATCH)
        } else {
            MAX_LRU_BATCH
        };
        let mut remaining = scan_batch;
        let (mut scanned, mut sorted, mut isolated) = (0u64, 0u64, 0u64);
        // The walk's cost is per folio (a list move or an isolation), a
        // large folio's pages are counted, not walked.
        let mut folios = 0u64;
        while remaining > 0 {
            let id = self.lrugen[m].folios[gen][type_].tail;
            if id == NIL {
                break;
            }
            // Pages counted, folios bounded by `remaining` (delta).
            let delta = core.folios.get(id).nr_pages();
            scanned += delta;
            folios += 1;
            if self.sort_folio(core, m, id, tier) {
                sorted += delta;
            } else {
                self.isolate_folio(core, id);
                self.scratch.push(id);
                isolated += delta;
            }
            remaining -= 1;
            if isolated >= MIN_LRU_BATCH {
                break;
            }
        }
        let memcg = m as MemcgId;
        if let Some((t, cx)) = core.tracer() {
            let lru = if type_ == LRU_GEN_FILE {
                crate::trace::LRU_INACTIVE_FILE
            } else {
                crate::trace::LRU_INACTIVE_ANON
            };
            let s = crate::trace::LruIsolate {
                nr_requested: scan_batch,
                nr_scanned: scanned,
                nr_taken: isolated,
                lru,
            };
            t.lru_isolate(cx, memcg, &s);
        }
        core.count_reclaim(memcg, Item::PGREFILL, sorted, sc);
        core.cpu_or_kswapd(core.cost.scan_folio * folios);
        if isolated > 0 {
            core.count_pgscan(memcg, type_ == LRU_GEN_FILE, isolated, sc);
        }
        if type_ == LRU_GEN_FILE {
            self.file_taken += isolated;
        }
        // Before seed 003's rework a pass that isolated nothing and did not
        // use up its budget reported no progress.
        if core.cfg.variants.mglru_reclaim_rework || isolated > 0 || remaining == 0 {
            (scanned, isolated)
        } else {
            (0, 0)
        }
    }

    /// isolate_folios(): scan the type get_type_to_scan() picks, falling
    /// back to the other. Returns (scanned, type scanned).
    pub(super) fn isolate_folios(
        &mut self,
        core: &mut Core,
        m: usize,
        nr_to_scan: u64,
        sc: &ScanControl,
        swappiness: u32,
    ) -> (u64, usize) {
        let rework = core.cfg.variants.mglru_reclaim_rework;
        let fix = core.cfg.variants.mglru_isolate_fallback_fix;
        let feedback_rework = core.cfg.variants.mglru_feedback_rework;
        let (chosen, mut first_tier) = if feedback_rework {
            (self.lrugen[m].get_type_to_scan(swappiness), None)
        } else {
            self.legacy_type_to_scan(m, swappiness)
        };
        self.lrugen[m].stats.type_chosen[chosen] += 1;
        let mut type_ = chosen;
        let mut total = 0;
        for _ in evictable_types(swappiness) {
            if type_ != chosen {
                self.lrugen[m].stats.type_fallback[type_] += 1;
            }
            let tier = match first_tier.take() {
                Some(t) => t,
                None => self.lrugen[m].get_tier_idx(type_, feedback_rework),
            };
            let (scanned, isolated) = self.scan_folios(core, m, nr_to_scan, sc, type_, tier);
            total += scanned;
            if !rework {
                if scanned > 0 {
                    return (scanned, type_);
                }
            } else {
                if isolated > 0 {
                    return (total, type_);
                }
                // Barry Song's fix: a round that only sorted does not mean
                // this type is exhausted; scan it again instead of undoing
                // get_type_to_scan()'s choice.
                if fix && scanned > 0 {
                    continue;
                }
            }
            type_ = 1 - type_;
        }
        (total, type_)
    }

    /// isolate_folios()'s choice before the type selection rework
    /// (6.1-6.13): the obvious one first (anon when its oldest generation
    /// is older than file's; file at swappiness 1; anon at MAX_SWAPPINESS;
    /// file without __GFP_IO, which the model's reclaim always has), else
    /// get_type_to_scan(), which also gives the first type's tier.
    /// Returns (type, that tier if computed).
    fn legacy_type_to_scan(&self, m: usize, swappiness: u32) -> (usize, Option<usize>) {
        let lv = &self.lrugen[m];
        if swappiness == 0 {
            (LRU_GEN_FILE, None)
        } else if lv.min_seq[LRU_GEN_ANON] < lv.min_seq[LRU_GEN_FILE] {
            (LRU_GEN_ANON, None)
        } else if swappiness == 1 {
            (LRU_GEN_FILE, None)
        } else if swappiness >= MAX_SWAPPINESS {
            (LRU_GEN_ANON, None)
        } else {
            let (t, tier) = lv.get_type_to_scan_legacy(swappiness);
            (t, Some(tier))
        }
    }

    /// evict_folios(): isolate a batch, run shrink_folio_list() on it, put
    /// back what was kept (retrying clean ones once). Returns the number
    /// scanned (0: no progress).
    pub(super) fn evict_folios(
        &mut self,
        core: &mut Core,
        m: usize,
        nr_to_scan: u64,
        sc: &mut ScanControl,
        swappiness: u32,
    ) -> u64 {
        let rework = Self::rework(core);
        let reclaim_rework = core.cfg.variants.mglru_reclaim_rework;
        let merged = core.cfg.variants.pf_activation == PfActivation::Merged;
        let memcg = m as MemcgId;
        self.scratch.clear();
        // Seed 003's series ("scan and count the exact number of folios"):
        // empty old generations are flushed before isolating (folio
        // deletion may have left some) and after a scan, and no longer
        // count as progress; before it, a min_seq bump counted as one.
        let feedback_rework = core.cfg.variants.mglru_feedback_rework;
        if reclaim_rework {
            self.try_to_inc_min_seq(m, swappiness, feedback_rework);
        }
        // Writes the device finished meanwhile rotate their PG_reclaim
        // folios to the oldest generation's tail first (as classic).
        crate::mm::vmscan::end_writeback_until_now(core, self);
        let (mut scanned, type_) = self.isolate_folios(core, m, nr_to_scan, sc, swappiness);
        if !reclaim_rework {
            scanned += self.try_to_inc_min_seq(m, swappiness, feedback_rework) as u64;
        } else if scanned > 0 {
            self.try_to_inc_min_seq(m, swappiness, feedback_rework);
        }
        // Out of evictable generations. Before the feedback rework the
        // kernel tested get_nr_gens(!swappiness): the same generation, as
        // min_seq[anon] cannot pass min_seq[file] there.
        let lv = &self.lrugen[m];
        if !reclaim_rework && evictable_min_seq(&lv.min_seq, swappiness) + MIN_NR_GENS > lv.max_seq
        {
            scanned = 0;
        }
        if self.scratch.is_empty() {
            return scanned;
        }
        let mut list = std::mem::take(&mut self.scratch);
        let mut skip_retry = false;
        loop {
            let isolated: u64 = list.iter().map(|&id| core.folios.get(id).nr_pages()).sum();
            sc.nr_scanned += isolated;
            let reclaimed = shrink_folio_list(core, self, &mut list, sc);
            sc.nr_reclaimed += reclaimed;
            if !reclaim_rework {
                self.unqueued_dirty += sc.nr_unqueued_dirty;
            } else if !skip_retry && sc.nr_unqueued_dirty == isolated {
                // The rework wakes the flusher per batch, when every folio
                // it isolated was dirty and unqueued ("simplify and improve
                // dirty writeback handling"); before it, once per loop.
                core.wb_wakeup_flusher = true;
            }
            core.count_pgsteal(memcg, type_ == LRU_GEN_FILE, reclaimed, sc);
            if core.trace.is_some() {
                let file = type_ == LRU_GEN_FILE;
                let stat = super::super::trace_reclaim_stat(sc, scanned, reclaimed, file);
                if let Some((t, cx)) = core.tracer() {
                    t.shrink_inactive(cx, memcg, &stat);
                }
            }
            if reclaim_rework && !sc.is_kswapd && sc.nr_immediate > 0 {
                self.reclaim_throttle(core, m);
            }
            self.clean.clear();
            let min_seq = self.lrugen[m].min_seq;
            let mut keep = 0;
            for i in 0..list.len() {
                let id = list[i];
                let f = *core.folios.get(id);
                let t = |b: u32| f.test(b);
                let retry = if rework {
                    !skip_retry
                        && !t(pg::ACTIVE)
                        && !t(pg::MAPPED)
                        && !t(pg::DIRTY)
                        && !t(pg::WRITEBACK)
                } else {
                    !(t(pg::RECLAIM) && (t(pg::DIRTY) || t(pg::WRITEBACK)))
                        && !(skip_retry
                            || t(pg::ACTIVE)
                            || t(pg::REFERENCED)
                            || t(pg::MAPPED)
                            || t(pg::DIRTY)
                            || t(pg::WRITEBACK))
                };
                if retry {
                    self.clean.push(id);
                    continue;
                }
                let fm = core.folios.get_mut(id);
                if rework {
                    // Don't add rejected folios to the oldest generation.
                    let ftype = fm.is_file_lru() as usize;
                    if Self::lru_gen_folio_seq(&self.lrugen[m], fm.flags, false, true, merged)
                        == min_seq[ftype]
                    {
                        fm.refs = 0;
                        fm.clear(pg::REFERENCED);
                        fm.set(pg::ACTIVE);
                    }
                } else if fm.test(pg::RECLAIM) && (fm.test(pg::DIRTY) || fm.test(pg::WRITEBACK)) {
                    if fm.test(pg::WORKINGSET) {
                        fm.set(pg::REFERENCED);
                    }
                } else {
                    fm.refs = 0;
                    fm.clear(pg::REFERENCED | pg::WORKINGSET);
                    fm.set(pg::ACTIVE);
                }
                list[keep] = id;
                keep += 1;
            }
            list.truncate(keep);
            // move_folios_to_lru()
            for &id in &list {
                self.lru_gen_add_folio(core, id, false);
            }
            list.clear();
            if self.clean.is_empty() {
                break;
            }
            std::mem::swap(&mut list, &mut self.clean);
            skip_retry = true;
        }
        self.scratch = list;
        scanned
    }

    /// reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK): the rework's unified
    /// writeback throttling; the task sleeps until the oldest writeback
    /// completes, at most HZ/10.
    pub(super) fn reclaim_throttle(&mut self, core: &mut Core, m: usize) {
        let limit = core.now + THROTTLE_WRITEBACK_NS;
        let until = core
            .wb
            .inflight
            .front()
            .map_or(limit, |&(_, done)| done.min(limit));
        core.wait_until(until);
        self.lrugen[m].stats.nr_throttled += 1;
    }

    /// get_swappiness(): 0 without may_swap or fewer than MIN_LRU_BATCH
    /// swap slots left to the memcg (mem_cgroup_get_nr_swap_pages), else
    /// the memcg's (mem_cgroup_swappiness()).
    pub(super) fn get_swappiness(core: &Core, m: usize, sc: &ScanControl) -> u32 {
        if !sc.may_swap || core.mem_cgroup_get_nr_swap_pages(m as MemcgId) < MIN_LRU_BATCH {
            return 0;
        }
        core.mem_cgroup_swappiness(m as MemcgId)
    }

    /// should_abort_scan(): never for memcg reclaim; once the target is met
    /// for root reclaim; kswapd also once free pages clear the high
    /// watermark.
    pub(super) fn should_abort_scan(core: &Core, sc: &ScanControl) -> bool {
        if matches!(sc.target_memcg, Some(t) if t != 0) {
            return false;
        }
        if sc.nr_reclaimed >= sc.nr_to_reclaim {
            return true;
        }
        if !sc.is_kswapd {
            return false;
        }
        core.nr_free() >= core.wmark.high + MIN_LRU_BATCH
    }

    /// get_nr_to_scan() before seed 003: evictable size >> priority, or, when
    /// aging is due below DEF_PRIORITY, age and stop (-1).
    pub(super) fn get_nr_to_scan(
        &mut self,
        core: &mut Core,
        m: usize,
        sc: &ScanControl,
        swappiness: u32,
    ) -> i64 {
        let max_seq = self.lrugen[m].max_seq;
        let (need_aging, nr_to_scan) =
            self.lrugen[m].should_run_aging(swappiness, core.cfg.variants.mglru_feedback_rework);
        if !need_aging || sc.priority == DEF_PRIORITY {
            return (nr_to_scan >> sc.priority) as i64;
        }
        if self.try_to_inc_max_seq(core, m, max_seq, swappiness, false) {
            -1
        } else {
            0
        }
    }

    /// Wakes the flusher when every dirty file folio taken was unqueued.
    pub(super) fn maybe_wakeup_flusher(&mut self, core: &mut Core) {
        if self.unqueued_dirty > 0 && self.unqueued_dirty == self.file_taken {
            core.wb_wakeup_flusher = true;
        }
    }

    /// try_to_shrink_lruvec(). Returns whether the lruvec should be rotated
    /// (it aged).
    pub(super) fn try_to_shrink_lruvec(
        &mut self,
        core: &mut Core,
        m: usize,
        sc: &mut ScanControl,
    ) -> bool {
        let swappiness = Self::get_swappiness(core, m, sc);
        self.file_taken = 0;
        self.unqueued_dirty = 0;
        if core.cfg.variants.mglru_reclaim_rework {
            // Seed 003: the scan budget is computed once; aging happens in
            // the loop without ending it; batches are smaller; dirty folios
            // wake the flusher from inside the loop. The budget has no
            // SWAP_CLUSTER_MAX floor (v2 added one, v3 dropped it): a small
            // lruvec gets nothing at DEF_PRIORITY.
            let size = self.lrugen[m].evictable_size(swappiness);
            let mut budget = size >> sc.priority;
            let mut aged = false;
            let mut should_age = false;
            let root_reclaim = !matches!(sc.target_memcg, Some(t) if t != 0);
            while budget > 0 {
                let max_seq = self.lrugen[m].max_seq;
                if self.lrugen[m].should_run_aging_sc(swappiness, sc.priority) {
                    aged |= self.try_to_inc_max_seq(core, m, max_seq, swappiness, false);
                    should_age = true;
                }
                let delta = self.evict_folios(core, m, budget.min(MIN_LRU_BATCH), sc, swappiness);
                if delta == 0 {
                    break;
                }
                budget = budget.saturating_sub(delta);
                if Self::should_abort_scan(core, sc) {
                    break;
                }
                // "don't abort scan immediately right after aging": memcg
                // reclaim goes on; root reclaim moves to the next memcg
                // once it was low on cold folios (fairness by rotation).
                if root_reclaim && should_age {
                    break;
                }
            }
            return aged;
        }
        let mut scanned = 0u64;
        let mut nr_to_scan;
        loop {
            nr_to_scan = self.get_nr_to_scan(core, m, sc, swappiness);
            if nr_to_scan <= 0 {
                break;
            }
            let delta = self.evict_folios(core, m, nr_to_scan as u64, sc, swappiness);
            if delta == 0 {
                break;
            }
            scanned += delta;
            if scanned >= nr_to_scan as u64 {
                break;
            }
            if Self::should_abort_scan(core, sc) {
                break;
            }
        }
        self.maybe_wakeup_flusher(core);
        nr_to_scan < 0
    }

    /// set_initial_priority(): at DEF_PRIORITY, start where
    /// (inactive >> priority) roughly equals nr_to_reclaim.
    pub(super) fn set_initial_priority(&self, core: &Core, sc: &mut ScanControl) {
        if sc.priority != DEF_PRIORITY || sc.nr_to_reclaim < MIN_LRU_BATCH {
            return;
        }
        let mut reclaimable = 0;
        for m in 0..self.lrugen.len() {
            let s = self.lru_sizes(m as MemcgId);
            reclaimable += s.inactive_file;
            if core.mem_cgroup_get_nr_swap_pages(m as MemcgId) > 0 {
                reclaimable += s.inactive_anon;
            }
        }
        let priority = fls_long(reclaimable) - 1 - fls_long(sc.nr_to_reclaim - 1);
        sc.priority = priority.clamp(DEF_PRIORITY as i64 / 2, DEF_PRIORITY as i64) as i32;
    }

    /// lru_gen_shrink_node(): root reclaim over every memcg (shrink_many),
    /// starting where the last pass left off.
    pub(super) fn lru_gen_shrink_node(&mut self, core: &mut Core, sc: &mut ScanControl) {
        self.lru_add_drain(core);
        self.mm_walk = sc.is_kswapd;
        if sc.is_kswapd {
            self.lru_gen_age_node(core, sc);
        }
        self.set_initial_priority(core, sc);
        let reclaimed = sc.nr_reclaimed;
        if sc.is_kswapd {
            sc.nr_reclaimed = 0;
        }
        let n = self.lrugen.len();
        let start = self.memcg_cursor % n.max(1);
        for k in 0..n {
            let m = (start + k) % n;
            // shrink_one(): memory.min protects a memcg; memory.low first
            // moves it to the memcg LRU's tail, and it is reclaimed (a
            // MEMCG_LOW event) only when reached there.
            let memcg = m as MemcgId;
            core.mem_cgroup_calculate_protection(0, memcg);
            if core.mem_cgroup_below_min(0, memcg) {
                self.lrugen[m].seg_tail = false;
                continue;
            }
            if core.mem_cgroup_below_low(0, memcg) {
                if !self.lrugen[m].seg_tail {
                    self.lrugen[m].seg_tail = true;
                    continue;
                }
                core.memcg_memory_event(memcg, crate::mm::memcontrol::MemcgEvent::MEMCG_LOW);
            }
            self.lrugen[m].seg_tail = false;
            self.try_to_shrink_lruvec(core, m, sc);
            if Self::should_abort_scan(core, sc) {
                self.memcg_cursor = m + 1;
                break;
            }
        }
        if sc.is_kswapd {
            sc.nr_reclaimed += reclaimed;
        }
        self.mm_walk = false;
    }

    /// lru_gen_shrink_lruvec(): memcg limit reclaim.
    pub(super) fn lru_gen_shrink_lruvec(
        &mut self,
        core: &mut Core,
        m: usize,
        sc: &mut ScanControl,
    ) {
        self.lru_add_drain(core);
        self.mm_walk = sc.is_kswapd;
        self.try_to_shrink_lruvec(core, m, sc);
        self.mm_walk = false;
    }
}
