//! MGLRU refault feedback: the PID controller over tiers that picks the
//! type to scan and protects tiers (mm/vmscan.c read_ctrl_pos,
//! get_type_to_scan, get_tier_idx), and the shadow entries of
//! mm/workingset.c (lru_gen_eviction, lru_gen_refault,
//! lru_gen_test_recent).

use super::*;

impl LruGenFolio {
    /// read_ctrl_pos(): refaulted and total (evicted + protected) of tiers
    /// [tier % MAX_NR_TIERS, min(tier, MAX_NR_TIERS - 1)].
    pub(super) fn read_ctrl_pos(&self, type_: usize, tier: usize, gain: u64) -> CtrlPos {
        let mut pos = CtrlPos {
            refaulted: 0,
            total: 0,
            gain,
        };
        for i in (tier % MAX_NR_TIERS)..=tier.min(MAX_NR_TIERS - 1) {
            pos.refaulted += self.avg_refaulted[type_][i] + self.refaulted[type_][i];
            pos.total +=
                self.avg_total[type_][i] + self.protected[type_][i] + self.evicted[type_][i];
        }
        pos
    }

    /// reset_ctrl_pos() with carryover (NR_HIST_GENS == 1: fold the current
    /// generation's counts into the moving averages and clear them).
    pub(super) fn reset_ctrl_pos(&mut self, type_: usize) {
        for tier in 0..MAX_NR_TIERS {
            self.avg_refaulted[type_][tier] =
                (self.avg_refaulted[type_][tier] + self.refaulted[type_][tier]) / 2;
            self.avg_total[type_][tier] = (self.avg_total[type_][tier]
                + self.protected[type_][tier]
                + self.evicted[type_][tier])
                / 2;
            self.refaulted[type_][tier] = 0;
            self.evicted[type_][tier] = 0;
            self.protected[type_][tier] = 0;
        }
    }

    /// get_tier_idx(): the first tier whose refault rate exceeds tier 0's
    /// (gains 2:3 leave a margin) is where protection starts.
    pub(super) fn get_tier_idx(&self, type_: usize, feedback_rework: bool) -> usize {
        // Gains 1:2 before the type selection rework.
        let (sg, pg) = if feedback_rework { (2, 3) } else { (1, 2) };
        self.last_unprotected_tier(&self.read_ctrl_pos(type_, 0, sg), type_, pg)
    }

    /// The last tier of `type_` (from tier 1 up, at gain `gain`) whose
    /// refault rate does not exceed the set point `sp`'s; protection
    /// starts above it.
    fn last_unprotected_tier(&self, sp: &CtrlPos, type_: usize, gain: u64) -> usize {
        let mut tier = 1;
        while tier < MAX_NR_TIERS {
            let pv = self.read_ctrl_pos(type_, tier, gain);
            if !positive_ctrl_err(sp, &pv) {
                break;
            }
            tier += 1;
        }
        tier - 1
    }

    /// get_type_to_scan(): compare all tiers of anon (gain swappiness) with
    /// all tiers of file (gain MAX_SWAPPINESS - swappiness).
    pub(super) fn get_type_to_scan(&self, swappiness: u32) -> usize {
        if swappiness <= MIN_SWAPPINESS + 1 {
            return LRU_GEN_FILE;
        }
        if swappiness >= MAX_SWAPPINESS {
            return LRU_GEN_ANON;
        }
        let sp = self.read_ctrl_pos(LRU_GEN_ANON, MAX_NR_TIERS, swappiness as u64);
        let pv = self.read_ctrl_pos(
            LRU_GEN_FILE,
            MAX_NR_TIERS,
            (MAX_SWAPPINESS - swappiness) as u64,
        );
        positive_ctrl_err(&sp, &pv) as usize
    }

    /// get_type_to_scan() before the type selection rework (6.1-6.13):
    /// the first tiers of anon and file compared (gains swappiness and
    /// MAX_SWAPPINESS - swappiness), then the selected type's other tiers
    /// against the other type's first to find where protection starts.
    /// Returns (type, tier_idx).
    pub(super) fn get_type_to_scan_legacy(&self, swappiness: u32) -> (usize, usize) {
        let gain = [swappiness as u64, (MAX_SWAPPINESS - swappiness) as u64];
        let sp = self.read_ctrl_pos(LRU_GEN_ANON, 0, gain[LRU_GEN_ANON]);
        let pv = self.read_ctrl_pos(LRU_GEN_FILE, 0, gain[LRU_GEN_FILE]);
        let type_ = positive_ctrl_err(&sp, &pv) as usize;
        let sp = self.read_ctrl_pos(1 - type_, 0, gain[1 - type_]);
        (type_, self.last_unprotected_tier(&sp, type_, gain[type_]))
    }
}

/// struct ctrl_pos.
#[derive(Clone, Copy, Debug)]
pub(super) struct CtrlPos {
    pub(super) refaulted: u64,
    pub(super) total: u64,
    pub(super) gain: u64,
}

/// positive_ctrl_err(): the PV has few refaults or a refault rate no higher
/// than the SP's.
pub(super) fn positive_ctrl_err(sp: &CtrlPos, pv: &CtrlPos) -> bool {
    pv.refaulted < MIN_LRU_BATCH
        || pv.refaulted as u128 * (sp.total + MIN_LRU_BATCH) as u128 * sp.gain as u128
            <= (sp.refaulted + 1) as u128 * pv.total as u128 * pv.gain as u128
}

impl LruGen {
    /// lru_gen_eviction(): the token is min_seq of the folio's type and its
    /// refs; the eviction counts toward its tier.
    pub(super) fn lru_gen_eviction(&mut self, core: &mut Core, id: FolioId) -> Shadow {
        if !self.enabled() {
            return self.classic.workingset_eviction(core, id);
        }
        let rework = Self::rework(core);
        let f = core.folios.get(id);
        let memcg = f.memcg;
        let type_ = f.is_file_lru() as usize;
        let refs = Self::folio_lru_refs(f.flags, f.refs, rework);
        let ws = f.test(pg::WORKINGSET);
        let tier = Self::lru_tier_from_refs(refs, ws, rework);
        let delta = f.nr_pages();
        let lv = &mut self.lrugen[memcg as usize];
        let min_seq = lv.min_seq[type_];
        let token = (min_seq << LRU_REFS_WIDTH) | refs.saturating_sub(1) as u64;
        lv.evicted[type_][tier] += delta;
        pack_shadow(memcg, token, if rework { ws } else { refs != 0 })
    }

    /// lru_gen_refault(): count the refault; if the shadow is recent
    /// (lru_gen_test_recent), credit its tier and restore its state.
    pub(super) fn lru_gen_refault(&mut self, core: &mut Core, id: FolioId, shadow: Shadow) {
        if !self.enabled() {
            return self.classic.workingset_refault(core, id, shadow);
        }
        let rework = Self::rework(core);
        let (evict_memcg, token, workingset) = unpack_shadow(shadow);
        let f = core.folios.get(id);
        let (memcg, delta) = (f.memcg, f.nr_pages());
        let type_ = f.is_file_lru() as usize;
        if evict_memcg != memcg || evict_memcg as usize >= self.lrugen.len() {
            return;
        }
        let (refault_item, activate_item, restore_item) =
            crate::mm::workingset::workingset_items(type_ == LRU_GEN_FILE);
        let accounting_fix = core.cfg.variants.mglru_refault_accounting_fix;
        if accounting_fix {
            core.count(memcg, refault_item, delta);
        }
        if !self.lru_gen_test_recent(core, evict_memcg, type_, token) {
            return;
        }
        if !accounting_fix {
            // Before 6.5 only a recent refault counted, and as no
            // activation (sort_folio() counted those).
            core.count(memcg, refault_item, delta);
        }
        let in_fault = core.in_lru_fault;
        let lv = &mut self.lrugen[memcg as usize];
        let mask = (REFS_FULL - 1) as u64;
        if rework {
            let refs = (token & mask) as u32 + 1;
            let tier = Self::lru_tier_from_refs(refs, workingset, true);
            lv.refaulted[type_][tier] += delta;
            // As merged, only refaulted workingset folios are activated in
            // the fault path, and only they count as activations.
            let merged = core.cfg.variants.pf_activation == PfActivation::Merged;
            if in_fault && (workingset || !merged) {
                core.count(memcg, activate_item, delta);
            }
            let f = core.folios.get_mut(id);
            if workingset {
                f.set(pg::WORKINGSET);
                core.count(memcg, restore_item, delta);
            } else {
                f.refs = (refs - 1) as u8;
            }
        } else {
            let refs = (token & mask) as u32 + workingset as u32;
            let tier = Self::lru_tier_from_refs(refs, false, false);
            lv.refaulted[type_][tier] += delta;
            if accounting_fix {
                core.count(memcg, activate_item, delta);
            }
            if in_fault || refs >= REFS_FULL - 1 {
                let f = core.folios.get_mut(id);
                f.refs = LRU_REFS_MASK;
                f.set(pg::WORKINGSET);
                core.count(memcg, restore_item, delta);
            }
        }
    }

    /// lru_gen_test_recent(): the eviction's min_seq is within MAX_NR_GENS of
    /// the lruvec's max_seq now; before the refault detection rework
    /// (6.1-6.13), it is the type's min_seq now.
    pub(super) fn lru_gen_test_recent(
        &self,
        core: &Core,
        memcg: MemcgId,
        type_: usize,
        token: u64,
    ) -> bool {
        let lv = &self.lrugen[memcg as usize];
        let mask = EVICTION_MASK >> LRU_REFS_WIDTH;
        if !core.cfg.variants.mglru_feedback_rework {
            return token >> LRU_REFS_WIDTH == lv.min_seq[type_] & mask;
        }
        (lv.max_seq & mask).abs_diff(token >> LRU_REFS_WIDTH) < MAX_NR_GENS
    }
}
