//! cache_ext's port of MGLRU (policies/cache_ext_mglru.bpf.c), the
//! bookkeeping apart from the list plumbing: generations as sequence
//! numbers over four lists, tiers from access counts, the PID controller
//! that picks which tiers to protect, and ghost entries that count
//! refaults per tier. Own code from the policy's behaviour (which follows
//! mm/vmscan.c's lru_gen code of 6.6 in a simplified form: one type, no
//! page-table walk, access counts kept by the policy, not PTE bits).

use std::collections::{HashMap, VecDeque};

pub const MAX_NR_TIERS: usize = 4;
pub const MIN_NR_GENS: u64 = 2;
pub const MAX_NR_GENS: usize = 4;
pub const MIN_LRU_BATCH: u64 = 64;
/// The ghost map's capacity (an LRU hash in the policy).
pub const MAX_NR_GHOST_ENTRIES: usize = 400_000;

#[derive(Clone, Copy, Debug, Default)]
struct Meta {
    accesses: i64,
    gen: usize,
}

/// What eviction does with one folio of the oldest generation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Keep it: move it to the next generation's list (tail).
    Promote,
    Evict,
}

/// One eviction pass: the generation evicted and the one kept folios move to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pass {
    pub curr_gen: usize,
    pub next_gen: usize,
    pub tier_threshold: usize,
}

#[derive(Default)]
struct Lrugen {
    max_seq: u64,
    min_seq: u64,
    evicted: [i64; MAX_NR_TIERS],
    refaulted: [i64; MAX_NR_TIERS],
    tier_selected: [i64; MAX_NR_TIERS],
    avg_refaulted: [u64; MAX_NR_TIERS],
    avg_total: [u64; MAX_NR_TIERS],
    protected: [u64; MAX_NR_TIERS - 1],
    nr_pages: [i64; MAX_NR_GENS],
}

pub struct MglruBpf {
    g: Lrugen,
    meta: HashMap<u64, Meta>,
    /// Ghost entries (mapping, index) -> tier, oldest first out.
    ghost: HashMap<(u64, u64), u8>,
    ghost_order: VecDeque<(u64, u64)>,
    pub success_evicted: u64,
    pub failed_evicted: u64,
}

fn gen_from_seq(seq: u64) -> usize {
    (seq % MAX_NR_GENS as u64) as usize
}

/// The policy's tier of an access count: 0, 1, 2-3, 4-7, 8+.
pub fn tier_from_refs(refs: i64) -> usize {
    match refs {
        i64::MIN..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        _ => 3,
    }
}

struct CtrlPos {
    refaulted: u64,
    total: u64,
    gain: u64,
}

impl MglruBpf {
    pub fn new(capacity: usize) -> Self {
        MglruBpf {
            g: Lrugen {
                max_seq: MIN_NR_GENS + 1,
                ..Lrugen::default()
            },
            meta: HashMap::with_capacity(capacity),
            ghost: HashMap::new(),
            ghost_order: VecDeque::new(),
            success_evicted: 0,
            failed_evicted: 0,
        }
    }

    fn nr_pages(&self, gen: usize) -> u64 {
        self.g.nr_pages[gen].max(0) as u64
    }

    /// A new folio: the generation list it goes to (at the head), or None
    /// when the policy cannot track it. `reclaim_dirty`: PG_reclaim with
    /// dirty or writeback.
    pub fn folio_added(&mut self, key: u64, ghost: (u64, u64), reclaim_dirty: bool) -> usize {
        let (min_seq, max_seq) = (self.g.min_seq, self.g.max_seq);
        // The policy asks "active" of a folio it does not track yet (no
        // access count): never, unless the key is being re-added.
        let active = self.meta.get(&key).is_some_and(|m| m.accesses >= 2);
        let seq = if active {
            max_seq
        } else if reclaim_dirty {
            max_seq - 1
        } else if min_seq + MIN_NR_GENS >= max_seq {
            min_seq
        } else {
            min_seq + 1
        };
        let gen = gen_from_seq(seq);
        self.meta.insert(key, Meta { accesses: 1, gen });
        self.g.nr_pages[gen] += 1;
        if let Some(tier) = self.ghost.remove(&ghost) {
            self.g.refaulted[tier as usize] += 1;
        }
        gen
    }

    pub fn folio_accessed(&mut self, key: u64) {
        if let Some(m) = self.meta.get_mut(&key) {
            m.accesses += 1;
        }
    }

    pub fn folio_evicted(&mut self, key: u64, ghost: (u64, u64)) {
        let Some(m) = self.meta.remove(&key) else {
            return;
        };
        let tier = tier_from_refs(m.accesses);
        if self.ghost.insert(ghost, tier as u8).is_none() {
            self.ghost_order.push_back(ghost);
            // The LRU hash drops its least recently used entry when full;
            // entries are only ever read once (and deleted), so that is the
            // oldest still present.
            while self.ghost.len() > MAX_NR_GHOST_ENTRIES {
                if let Some(old) = self.ghost_order.pop_front() {
                    self.ghost.remove(&old);
                }
            }
        }
        if self.ghost_order.len() > 2 * MAX_NR_GHOST_ENTRIES {
            let ghost = &self.ghost;
            self.ghost_order.retain(|k| ghost.contains_key(k));
        }
        self.g.evicted[tier] += 1;
        self.g.nr_pages[m.gen] -= 1;
    }

    fn read_ctrl_pos(&self, tier: usize, gain: u64) -> CtrlPos {
        let mut total = self.g.avg_total[tier] + self.g.evicted[tier].max(0) as u64;
        if tier > 0 {
            total += self.g.protected[tier - 1];
        }
        CtrlPos {
            refaulted: self.g.avg_refaulted[tier] + self.g.refaulted[tier].max(0) as u64,
            total,
            gain,
        }
    }

    fn reset_ctrl_pos(&mut self, carryover: bool) {
        // NR_HIST_GENS is 1: carrying over also clears.
        if !carryover {
            return;
        }
        for t in 0..MAX_NR_TIERS {
            let sum = self.g.avg_refaulted[t] + self.g.refaulted[t].max(0) as u64;
            self.g.avg_refaulted[t] = sum / 2;
            let mut sum = self.g.avg_total[t] + self.g.evicted[t].max(0) as u64;
            if t > 0 {
                sum += self.g.protected[t - 1];
            }
            self.g.avg_total[t] = sum / 2;
            self.g.refaulted[t] = 0;
            self.g.evicted[t] = 0;
            if t > 0 {
                self.g.protected[t - 1] = 0;
            }
        }
    }

    fn positive_ctrl_err(sp: &CtrlPos, pv: &CtrlPos) -> bool {
        pv.refaulted < MIN_LRU_BATCH
            || pv.refaulted * (sp.total + MIN_LRU_BATCH) * sp.gain
                <= (sp.refaulted + 1) * pv.total * pv.gain
    }

    /// The highest tier still evicted: tiers above it are protected.
    fn tier_idx(&self) -> usize {
        let sp = self.read_ctrl_pos(0, 1);
        let mut tier = 1;
        while tier < MAX_NR_TIERS {
            let pv = self.read_ctrl_pos(tier, 2);
            if !Self::positive_ctrl_err(&sp, &pv) {
                break;
            }
            tier += 1;
        }
        tier - 1
    }

    fn should_run_aging(&self) -> bool {
        let (min_seq, max_seq) = (self.g.min_seq, self.g.max_seq);
        if min_seq + MIN_NR_GENS > max_seq {
            return true;
        }
        let (mut young, mut old, mut total) = (0, 0, 0);
        for i in 0..(MAX_NR_GENS as u64).min(max_seq - min_seq) {
            let seq = min_seq + i;
            let size = self.nr_pages(gen_from_seq(seq));
            total += size;
            if seq == max_seq {
                young += size;
            } else if seq + MIN_NR_GENS == max_seq {
                old += size;
            }
        }
        if min_seq + MIN_NR_GENS < max_seq {
            return false;
        }
        young * MIN_NR_GENS > total || old * (MIN_NR_GENS + 2) < total
    }

    fn try_to_inc_min_seq(&mut self) -> bool {
        // Only a nearly empty oldest generation (4 folios or fewer) goes.
        if self.nr_pages(gen_from_seq(self.g.min_seq)) > 4 {
            return false;
        }
        self.g.min_seq += 1;
        self.reset_ctrl_pos(true);
        true
    }

    fn try_to_inc_max_seq(&mut self) -> bool {
        if self.g.max_seq - self.g.min_seq + 1 == MAX_NR_GENS as u64 && !self.try_to_inc_min_seq() {
            return false;
        }
        self.reset_ctrl_pos(false);
        self.g.max_seq += 1;
        true
    }

    /// The start of evict_folios: aging, then the first pass's generations.
    pub fn begin_eviction(&mut self) -> Pass {
        if self.should_run_aging() {
            self.try_to_inc_max_seq();
        }
        if self.g.max_seq - self.g.min_seq > MIN_NR_GENS {
            self.try_to_inc_min_seq();
        }
        let tier_threshold = self.tier_idx();
        self.g.tier_selected[tier_threshold] += 1;
        let curr_gen = gen_from_seq(self.g.min_seq);
        Pass {
            curr_gen,
            next_gen: (curr_gen + 1) % MAX_NR_GENS,
            tier_threshold,
        }
    }

    /// The second pass when the first fell short: the oldest generation
    /// now (the same threshold).
    pub fn second_pass(&self, first: Pass) -> Pass {
        let curr_gen = gen_from_seq(self.g.min_seq);
        Pass {
            curr_gen,
            next_gen: (curr_gen + 1) % MAX_NR_GENS,
            tier_threshold: first.tier_threshold,
        }
    }

    /// The iteration callback: protected tiers and busy folios (locked,
    /// dirty, under writeback) move to the next generation; the rest, and
    /// folios the policy does not know, are evicted.
    pub fn verdict(&mut self, p: Pass, key: u64, busy: bool) -> Verdict {
        let Some(m) = self.meta.get(&key).copied() else {
            return Verdict::Evict;
        };
        let tier = tier_from_refs(m.accesses);
        let protect = tier > p.tier_threshold;
        if protect {
            self.g.protected[tier - 1] += 1;
        }
        if protect || busy {
            self.g.nr_pages[p.curr_gen] -= 1;
            self.g.nr_pages[p.next_gen] += 1;
            if let Some(m) = self.meta.get_mut(&key) {
                m.gen = p.next_gen;
            }
            return Verdict::Promote;
        }
        Verdict::Evict
    }

    pub fn end_eviction(&mut self, requested: u64, got: u64) {
        self.success_evicted += got;
        self.failed_evicted += requested.saturating_sub(got);
    }

    /// (min_seq, max_seq).
    pub fn seqs(&self) -> (u64, u64) {
        (self.g.min_seq, self.g.max_seq)
    }

    pub fn gen_of(&self, key: u64) -> Option<usize> {
        self.meta.get(&key).map(|m| m.gen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiers_follow_log2_of_refs() {
        assert_eq!(
            [0, 1, 2, 3, 4, 7, 8, 100].map(tier_from_refs),
            [0, 0, 1, 1, 2, 2, 3, 3]
        );
    }

    #[test]
    fn new_folios_go_to_the_oldest_generation_until_aging() {
        let mut m = MglruBpf::new(64);
        // min_seq 0, max_seq 3: min + 2 < max, so the second oldest.
        assert_eq!(m.seqs(), (0, 3));
        assert_eq!(m.folio_added(1, (9, 1), false), 1);
        assert_eq!(
            m.folio_added(2, (9, 2), true),
            2,
            "dirty under reclaim: max_seq - 1"
        );
    }

    #[test]
    fn accessed_folios_are_protected_and_refaults_counted_by_tier() {
        let mut m = MglruBpf::new(64);
        for k in 0..10 {
            m.folio_added(k, (1, k), false);
        }
        for _ in 0..5 {
            m.folio_accessed(3);
        }
        // No refaults yet: every tier has too few refaults to be told
        // apart, so the threshold is the top tier and no tier is protected.
        let p = m.begin_eviction();
        assert_eq!(p.tier_threshold, MAX_NR_TIERS - 1);
        assert_eq!(m.verdict(p, 0, false), Verdict::Evict);
        assert_eq!(
            m.verdict(p, 1, true),
            Verdict::Promote,
            "busy folios move on"
        );
        m.folio_evicted(0, (1, 0));
        m.folio_added(100, (1, 0), false);
        assert_eq!(
            m.g.refaulted[0], 1,
            "the ghost entry counted a tier-0 refault"
        );
        // Tier 1 refaults far more often than tier 0 (1000 of 1000 against
        // 10 of 1000): from tier 1 up the folios are protected.
        m.g.refaulted[0] = 10;
        m.g.evicted[0] = 1000;
        m.g.refaulted[1] = 1000;
        m.g.evicted[1] = 1000;
        let p = m.begin_eviction();
        assert_eq!(p.tier_threshold, 0);
        assert_eq!(m.verdict(p, 3, false), Verdict::Promote);
    }
}
