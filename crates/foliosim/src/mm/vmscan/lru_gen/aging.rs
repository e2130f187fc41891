//! MGLRU aging (mm/vmscan.c): promotion by the page-table walk and
//! look-around, generation bumps, min_seq/max_seq, should_run_aging and
//! lru_gen_age_node.

use super::*;

impl LruGenFolio {
    /// should_run_aging(): whether to age (have to: only MIN_NR_GENS left of
    /// the evictable types; better to: MIN_NR_GENS + 1 left) and the
    /// evictable size (0 when aging is unavoidable).
    pub(super) fn should_run_aging(&self, swappiness: u32, feedback_rework: bool) -> (bool, u64) {
        if !feedback_rework {
            return self.should_run_aging_legacy(swappiness);
        }
        let ems = evictable_min_seq(&self.min_seq, swappiness);
        if ems + MIN_NR_GENS > self.max_seq {
            return (true, 0);
        }
        (
            ems + MIN_NR_GENS == self.max_seq,
            self.evictable_size(swappiness),
        )
    }

    /// should_run_aging() before the feedback rework (6.1-6.13): the
    /// generations are counted from min_seq[!can_swap], which is
    /// evictable_min_seq() there (min_seq[anon] never passes
    /// min_seq[file]); with MIN_NR_GENS + 1 of them, age only if the
    /// youngest holds over 1/MIN_NR_GENS of the pages or the oldest under
    /// 1/(MIN_NR_GENS + 2), the spread the aging aims at.
    fn should_run_aging_legacy(&self, swappiness: u32) -> (bool, u64) {
        let lead = evictable_min_seq(&self.min_seq, swappiness);
        if lead + MIN_NR_GENS > self.max_seq {
            return (true, 0);
        }
        let (mut young, mut old, mut total) = (0, 0, 0);
        for t in evictable_types(swappiness) {
            for seq in self.min_seq[t]..=self.max_seq {
                let size = self.nr_pages[lru_gen_from_seq(seq)][t];
                total += size;
                if seq == self.max_seq {
                    young += size;
                } else if seq + MIN_NR_GENS == self.max_seq {
                    old += size;
                }
            }
        }
        if lead + MIN_NR_GENS < self.max_seq {
            return (false, total);
        }
        (
            young * MIN_NR_GENS > total || old * (MIN_NR_GENS + 2) < total,
            total,
        )
    }
}

impl LruGenFolio {
    /// should_run_aging() as seed 003's series has it (it takes `sc`):
    /// age when no evictable generation is left; when aging would only be
    /// better, not below DEF_PRIORITY's gentle first pass.
    pub(super) fn should_run_aging_sc(&self, swappiness: u32, priority: i32) -> bool {
        let ems = evictable_min_seq(&self.min_seq, swappiness);
        if ems + MIN_NR_GENS > self.max_seq {
            return true;
        }
        if priority == DEF_PRIORITY {
            return false;
        }
        ems + MIN_NR_GENS == self.max_seq
    }
}

impl LruGen {
    /// folio_update_gen(): promote a folio found young by a page-table walk
    /// to `gen`. Returns the old generation, None if not moved.
    pub(super) fn folio_update_gen(
        &mut self,
        core: &mut Core,
        id: FolioId,
        gen: usize,
    ) -> Option<usize> {
        let rework = Self::rework(core);
        let f = core.folios.get_mut(id);
        if rework && !f.test(pg::REFERENCED) && !f.test(pg::WORKINGSET) {
            f.set(pg::REFERENCED);
            f.refs = 0;
            return None;
        }
        if f.lru == 0 || f.lru == LRU_UNEVICTABLE {
            // Isolated: shrink_folio_list() will see PG_referenced (legacy).
            if !rework {
                f.set(pg::REFERENCED);
            }
            return None;
        }
        let old = folio_lru_gen(f);
        f.refs = 0;
        f.clear(pg::REFERENCED);
        if rework {
            f.set(pg::WORKINGSET);
        } else {
            f.clear(pg::WORKINGSET);
        }
        if old != gen {
            self.set_gen_lazily(core, id, gen);
        }
        Some(old)
    }

    /// folio_inc_gen(): move a folio of the oldest generation to the next
    /// one, clearing its refs; a folio folio_update_gen() already promoted
    /// keeps its generation. Returns the generation; the caller moves it.
    pub(super) fn folio_inc_gen(
        lv: &LruGenFolio,
        core: &mut Core,
        id: FolioId,
        reclaiming: bool,
        rework: bool,
    ) -> usize {
        let f = core.folios.get_mut(id);
        let type_ = f.is_file_lru() as usize;
        let old_gen = lru_gen_from_seq(lv.min_seq[type_]);
        let cur = folio_lru_gen(f);
        if cur != old_gen {
            return cur;
        }
        f.refs = 0;
        f.clear(pg::REFERENCED);
        if !rework {
            f.clear(pg::WORKINGSET);
        }
        if reclaiming {
            f.set(pg::RECLAIM);
        }
        (old_gen + 1) % MAX_NR_GENS as usize
    }

    /// folio_activate() under MGLRU: re-add with PG_active (the placement
    /// sends it young) and count PGACTIVATE.
    pub(super) fn folio_activate(&mut self, core: &mut Core, id: FolioId) {
        let memcg = core.folios.get(id).memcg;
        self.lru_gen_del_folio(core, id);
        core.folios.get_mut(id).set(pg::ACTIVE);
        self.lru_gen_add_folio(core, id, false);
        core.count(memcg, Item::PGACTIVATE, 1);
        core.trace_lru_activate(id);
    }

    /// walk_update_folio(): with a walk, folio_update_gen(); from the rmap
    /// walk without one, lru_gen_set_refs() and folio_activate() (before
    /// the rework: an isolated folio gets PG_referenced, a listed one is
    /// activated with its refs cleared).
    pub(super) fn walk_update_folio(
        &mut self,
        core: &mut Core,
        id: FolioId,
        new_gen: usize,
        walk: bool,
    ) -> bool {
        let rework = Self::rework(core);
        if walk {
            return matches!(self.folio_update_gen(core, id, new_gen), Some(old) if old != new_gen);
        }
        let f = core.folios.get(id);
        let lru = f.lru;
        // folio_lru_gen(): the generation bits.
        let gen = if lru == 0 || lru == LRU_UNEVICTABLE {
            None
        } else {
            Some(folio_lru_gen(f))
        };
        if rework {
            if Self::lru_gen_set_refs(core, id) && gen.is_some_and(|g| g != new_gen) {
                self.folio_activate(core, id);
                return true;
            }
            return false;
        }
        if lru == 0 {
            core.folios.get_mut(id).set(pg::REFERENCED);
            false
        } else if gen.is_some_and(|g| g != new_gen) {
            let f = core.folios.get_mut(id);
            f.refs = 0;
            f.clear(pg::REFERENCED | pg::WORKINGSET);
            self.folio_activate(core, id);
            true
        } else {
            false
        }
    }

    /// lru_gen_look_around(): the rmap walk found folio `id`'s PTE young;
    /// scan the PTEs around it in the same page table (at most
    /// MIN_LRU_BATCH) and promote the young ones, and report the table to
    /// the next aging's walk if it is dense with young PTEs.
    pub(super) fn lru_gen_look_around(&mut self, core: &mut Core, id: FolioId) {
        let f = *core.folios.get(id);
        let m = f.memcg as usize;
        let mapping = f.mapping as usize;
        let addr = f.index as u64;
        let nr = core.files[mapping].nr_pages();
        let mut start = addr & !(PTRS_PER_PTE - 1);
        let mut end = (start + PTRS_PER_PTE).min(nr);
        if end - start == 1 {
            return;
        }
        if end - start > MIN_LRU_BATCH {
            if addr - start < MIN_LRU_BATCH / 2 {
                end = start + MIN_LRU_BATCH;
            } else if end - addr < MIN_LRU_BATCH / 2 {
                start = end - MIN_LRU_BATCH;
            } else {
                start = addr - MIN_LRU_BATCH / 2;
                end = addr + MIN_LRU_BATCH / 2;
            }
        }
        let rework = Self::rework(core);
        let walk = self.mm_walk;
        let new_gen = lru_gen_from_seq(self.lrugen[m].max_seq);
        let mut young = 1u64;
        for idx in start..end {
            let Some(nid) = core.files[mapping].folio(idx) else {
                continue;
            };
            let n = core.folios.get(nid);
            // get_pfn_folio(): same memcg; after the rework only folios on
            // an LRU list.
            if n.memcg as usize != m
                || !n.test(pg::MAPPED)
                || !n.test(pg::PTE_YOUNG)
                || n.lru == LRU_UNEVICTABLE
                || (rework && n.lru == 0)
            {
                continue;
            }
            core.folios.get_mut(nid).clear(pg::PTE_YOUNG);
            young += 1;
            if self.walk_update_folio(core, nid, new_gen, walk) {
                self.lrugen[m].stats.look_around_promoted += 1;
            }
        }
        core.cpu_or_kswapd(core.cost.touch_mapped * (end - start));
        if suitable_to_scan(end - start, young) {
            let key = ((mapping as u64) << 32) | (addr / PTRS_PER_PTE);
            let lv = &mut self.lrugen[m];
            if let Some(filter) = lv.filters[(lv.max_seq % 2) as usize].as_mut() {
                filter.insert(key);
            }
        }
    }

    /// walk_mm() for the memcg's mappings: visit page tables (skipping those
    /// the Bloom filter of `seq` does not hold, unless forced), clear young
    /// PTEs and promote their folios to max_seq; tables dense with young
    /// PTEs go into the filter of seq + 1.
    pub(super) fn walk_mm(
        &mut self,
        core: &mut Core,
        m: usize,
        seq: u64,
        swappiness: u32,
        force_scan: bool,
    ) {
        let next = ((seq + 1) % 2) as usize;
        let cur = (seq % 2) as usize;
        {
            let lv = &mut self.lrugen[m];
            match lv.filters[next].as_mut() {
                Some(f) => f.clear(),
                None => lv.filters[next] = Some(BTreeSet::new()),
            }
        }
        let test = self.lrugen[m].filters[cur].take();
        let new_gen = lru_gen_from_seq(self.lrugen[m].max_seq);
        let mut walked = 0u64;
        for mapping in 0..core.files.len() {
            let nr = core.files[mapping].nr_pages();
            let mut block = 0u64;
            while block < nr {
                // Blocks with no xarray leaf map nothing: skip to the next
                // one that may (the block stays PTRS_PER_PTE aligned).
                let Some(first) = core.files[mapping].next_populated(block, nr) else {
                    break;
                };
                block = block.max(first & !(PTRS_PER_PTE - 1));
                let key = ((mapping as u64) << 32) | (block / PTRS_PER_PTE);
                let end = (block + PTRS_PER_PTE).min(nr);
                let skip = !force_scan && test.as_ref().is_some_and(|t| !t.contains(&key));
                if skip {
                    block = end;
                    continue;
                }
                let mut present = false;
                let mut young = 0u64;
                self.walk_moves.clear();
                for idx in core.files[mapping].populated(block, end) {
                    let Some(id) = core.files[mapping].folio(idx) else {
                        continue;
                    };
                    let f = core.folios.get(id);
                    if f.memcg as usize != m
                        || !f.test(pg::MAPPED)
                        || walk_skips(f.is_file_lru(), swappiness)
                    {
                        continue;
                    }
                    present = true;
                    // get_pfn_folio() skips folios off the LRU.
                    if f.lru == 0 || f.lru == LRU_UNEVICTABLE || !f.test(pg::PTE_YOUNG) {
                        continue;
                    }
                    core.folios.get_mut(id).clear(pg::PTE_YOUNG);
                    young += 1;
                    self.walk_moves.push(id);
                }
                if present {
                    let total = end - block;
                    walked += total;
                    let moves = std::mem::take(&mut self.walk_moves);
                    for &id in &moves {
                        self.folio_update_gen(core, id, new_gen);
                    }
                    self.walk_moves = moves;
                    let lv = &mut self.lrugen[m];
                    lv.stats.mm_leaf_total += total;
                    lv.stats.mm_leaf_young += young;
                    lv.stats.mm_nonleaf_found += 1;
                    if suitable_to_scan(total, young) {
                        lv.stats.mm_nonleaf_added += 1;
                        if let Some(f) = lv.filters[next].as_mut() {
                            f.insert(key);
                        }
                    }
                }
                block = end;
            }
        }
        self.lrugen[m].filters[cur] = test;
        // The walk's cost: a few ns per PTE, charged like touching a mapped page.
        walked *= core.cost.touch_mapped;
        core.cpu_or_kswapd(walked);
    }

    /// inc_min_seq(): before retiring the oldest generation of `type_`,
    /// move what is left in it to the next one (counting it protected).
    /// Returns false when MAX_LRU_BATCH folios moved (the kernel then
    /// drops the lock and restarts).
    pub(super) fn inc_min_seq(
        &mut self,
        core: &mut Core,
        m: usize,
        type_: usize,
        swappiness: u32,
    ) -> bool {
        let rework = Self::rework(core);
        let feedback_rework = core.cfg.variants.mglru_feedback_rework;
        let skip = (type_ == LRU_GEN_FILE && swappiness == SWAPPINESS_ANON_ONLY)
            || (type_ == LRU_GEN_ANON && swappiness == 0);
        if !skip {
            let old_gen = lru_gen_from_seq(self.lrugen[m].min_seq[type_]);
            let mut remaining = MAX_LRU_BATCH;
            loop {
                let id = self.lrugen[m].folios[old_gen][type_].tail;
                if id == NIL {
                    break;
                }
                let f = core.folios.get(id);
                let delta = f.nr_pages();
                let refs = Self::folio_lru_refs(f.flags, f.refs, rework);
                let ws = f.test(pg::WORKINGSET);
                let new_gen = Self::folio_inc_gen(&self.lrugen[m], core, id, false, rework);
                self.move_folio(core, id, new_gen, true);
                let lazily_promoted = rework && refs + ws as u32 == REFS_FULL + 1;
                // Before the feedback rework what the aging moves on is not
                // counted as protected.
                if feedback_rework && !lazily_promoted {
                    let tier = Self::lru_tier_from_refs(refs, ws, rework);
                    self.lrugen[m].protected[type_][tier] += delta;
                }
                remaining -= 1;
                if remaining == 0 {
                    return false;
                }
            }
        }
        let lv = &mut self.lrugen[m];
        lv.reset_ctrl_pos(type_);
        lv.min_seq[type_] += 1;
        lv.stats.nr_min_seq_inc[type_] += 1;
        true
    }

    /// try_to_inc_min_seq(): retire empty oldest generations of the
    /// evictable types, keeping anon and file within MIN_NR_GENS of each
    /// other when both are evictable.
    pub(super) fn try_to_inc_min_seq(
        &mut self,
        m: usize,
        swappiness: u32,
        feedback_rework: bool,
    ) -> bool {
        let lv = &mut self.lrugen[m];
        let mut min_seq = lv.min_seq;
        let mut inc = false;
        for t in evictable_types(swappiness) {
            while min_seq[t] + MIN_NR_GENS <= lv.max_seq {
                let gen = lru_gen_from_seq(min_seq[t]);
                if lv.folios[gen][t].len > 0 {
                    break;
                }
                min_seq[t] += 1;
                inc = true;
            }
        }
        if !inc {
            return false;
        }
        if !feedback_rework {
            // 6.1-6.13: anon never passes file (file is always evictable,
            // anon not), and file moves only as far as anon lets it.
            if swappiness > 0 {
                min_seq[LRU_GEN_ANON] = min_seq[LRU_GEN_ANON].min(min_seq[LRU_GEN_FILE]);
                min_seq[LRU_GEN_FILE] = min_seq[LRU_GEN_ANON].max(lv.min_seq[LRU_GEN_FILE]);
            }
        } else if swappiness > 0 && swappiness <= MAX_SWAPPINESS {
            let seq = lv.max_seq - MIN_NR_GENS;
            if min_seq[LRU_GEN_ANON] > seq && min_seq[LRU_GEN_FILE] < seq {
                min_seq[LRU_GEN_ANON] = seq;
            } else if min_seq[LRU_GEN_FILE] > seq && min_seq[LRU_GEN_ANON] < seq {
                min_seq[LRU_GEN_FILE] = seq;
            }
        }
        let mut success = false;
        for t in evictable_types(swappiness) {
            if min_seq[t] <= lv.min_seq[t] {
                continue;
            }
            lv.reset_ctrl_pos(t);
            lv.stats.nr_min_seq_inc[t] += min_seq[t] - lv.min_seq[t];
            lv.min_seq[t] = min_seq[t];
            success = true;
        }
        success
    }

    /// inc_max_seq(): make room (inc_min_seq on types at MAX_NR_GENS) and
    /// open a new youngest generation stamped with the current time.
    pub(super) fn inc_max_seq(&mut self, core: &mut Core, m: usize, swappiness: u32) {
        // Before the feedback rework file went first.
        let order = if core.cfg.variants.mglru_feedback_rework {
            [LRU_GEN_ANON, LRU_GEN_FILE]
        } else {
            [LRU_GEN_FILE, LRU_GEN_ANON]
        };
        for t in order {
            if self.lrugen[m].get_nr_gens(t) != MAX_NR_GENS {
                continue;
            }
            while !self.inc_min_seq(core, m, t, swappiness) {}
        }
        let lv = &mut self.lrugen[m];
        let next = lru_gen_from_seq(lv.max_seq + 1);
        lv.timestamps[next] = core.now;
        lv.max_seq += 1;
        lv.stats.nr_aging += 1;
    }

    /// try_to_inc_max_seq(): the aging. With the mm-walk cap, walk the page
    /// tables first (and keep the walk for look-around, as set_mm_walk()
    /// leaves it in current->reclaim_state).
    pub(super) fn try_to_inc_max_seq(
        &mut self,
        core: &mut Core,
        m: usize,
        seq: u64,
        swappiness: u32,
        force_scan: bool,
    ) -> bool {
        if seq < self.lrugen[m].max_seq {
            return false;
        }
        if self.caps & LRU_GEN_MM_WALK != 0 {
            self.walk_mm(core, m, seq, swappiness, force_scan);
            self.mm_walk = true;
        }
        self.inc_max_seq(core, m, swappiness);
        true
    }

    /// lru_gen_age_node(): with min_ttl set, kswapd OOM-kills when every
    /// sizable memcg's oldest generation is younger than min_ttl.
    pub(super) fn lru_gen_age_node(&mut self, core: &mut Core, sc: &ScanControl) {
        if self.min_ttl_ns == 0 {
            return;
        }
        let reclaimable = self.lrugen.iter().enumerate().any(|(m, lv)| {
            let swappiness = Self::get_swappiness(core, m, sc);
            let sizable = (lv.evictable_size(swappiness) >> sc.priority) > 0;
            // Before the feedback rework the file's oldest generation.
            let oldest = if core.cfg.variants.mglru_feedback_rework {
                evictable_min_seq(&lv.min_seq, swappiness)
            } else {
                lv.min_seq[LRU_GEN_FILE]
            };
            let birth = lv.timestamps[lru_gen_from_seq(oldest)];
            sizable && core.now.saturating_sub(birth) >= self.min_ttl_ns
        });
        if reclaimable {
            return;
        }
        // out_of_memory(): kswapd runs the OOM killer once this reclaim
        // pass returns (oom_kill.rs).
        core.kswapd_oom = true;
    }
}
