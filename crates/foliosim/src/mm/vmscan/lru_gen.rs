//! The multi-gen LRU (mm/vmscan.c lru_gen_*, mm/workingset.c lru_gen_*,
//! include/linux/mm_inline.h, include/linux/mmzone.h), as in Linux 7.0, with
//! the seeds' patches as variants:
//!
//! - seed 004 (`mglru_wsprot_rework`): workingset protection after the rework
//!   (lru_gen_folio_seq / lru_gen_distance placement, PG_workingset as the last
//!   tier, LRU_REFS only valid under PG_referenced, lru_gen_set_refs with the
//!   LULESH fix) or before it (PG_active always to max_seq, PG_workingset as
//!   the second access, refs cleared on every promotion);
//! - seed 000 (`pf_activation`): folio_add_lru() in the fault path calls
//!   folio_mark_accessed() instead of folio_set_active() (the seed's v1), or
//!   as merged for 7.2: folio_set_active() for refaulted workingset folios,
//!   folio_mark_accessed() for the others, which lru_gen_folio_seq() then
//!   places in the second oldest generation;
//! - seed 003 (`mglru_reclaim_rework`, `mglru_isolate_fallback_fix`): the
//!   reclaim loop with a scan budget computed once, smaller batches, aging
//!   without aborting the loop, dirty/writeback folios left to
//!   shrink_folio_list() and throttled there, and Barry Song's fix that keeps
//!   isolate_folios() on the type it chose when a round isolated nothing.
//!
//! Model choices (the kernel's structures, one node, one zone):
//! - `Folio::lru` holds gen+1 (0: not on an MGLRU list) and `Folio::refs`
//!   the LRU_REFS bits (LRU_REFS_WIDTH = 2); NR_HIST_GENS is 1.
//! - The page-table walk of the aging (walk_mm) visits, per "page table"
//!   (512 pages of one mapping), the mapped folios of the memcg, with the
//!   two Bloom filters kept as exact sets of page tables: after the first walk
//!   only tables that had at least one young PTE per cache line of PTEs
//!   (suitable_to_scan) or that look-around reported are walked again.
//! - lru_gen_look_around() scans up to MIN_LRU_BATCH neighbouring pages of the
//!   same mapping inside the same 512-page table, as the kernel scans the PTEs
//!   around the young one.
//! - The memcg LRU (shrink_many's generations and random bins) is a
//!   round-robin over memcgs.

use std::collections::BTreeSet;

use serde::Serialize;

use super::classic::ClassicLru;
use super::{shrink_folio_list, FolioRef, ReclaimPolicy, ScanControl};
use crate::mm::folio::{pg, FolioId, ListHead, NIL};
use crate::mm::memcontrol::MemcgId;
use crate::mm::vmstat::Item;
use crate::mm::workingset::{pack_shadow, unpack_shadow, LruSizes, Shadow, EVICTION_MASK};
use crate::mm::{Core, PfActivation, DEF_PRIORITY, SWAP_CLUSTER_MAX};

pub const MIN_NR_GENS: u64 = 2;
pub const MAX_NR_GENS: u64 = 4;
pub const MAX_NR_TIERS: usize = 4;
pub const LRU_REFS_WIDTH: u32 = 2;
/// LRU_REFS_MASK as a value of `Folio::refs`.
const LRU_REFS_MASK: u8 = (1 << LRU_REFS_WIDTH) - 1;
/// BIT(LRU_REFS_WIDTH): refs of a folio whose refs bits are all set.
const REFS_FULL: u32 = 1 << LRU_REFS_WIDTH;
pub const MIN_LRU_BATCH: u64 = 64;
pub const MAX_LRU_BATCH: u64 = MIN_LRU_BATCH * 64;
pub const MIN_SWAPPINESS: u32 = 0;
pub const MAX_SWAPPINESS: u32 = 200;
pub const SWAPPINESS_ANON_ONLY: u32 = MAX_SWAPPINESS + 1;
pub const LRU_GEN_ANON: usize = 0;
pub const LRU_GEN_FILE: usize = 1;
/// `Folio::lru` of a folio on the unevictable list.
const LRU_UNEVICTABLE: u8 = 0xff;
/// PTRS_PER_PTE: the page-table granule of the walk and of look-around.
const PTRS_PER_PTE: u64 = 512;
/// cache_line_size() / sizeof(pte_t), clamped to [2, 8] in suitable_to_scan().
const PTES_PER_CACHELINE: u64 = 8;

/// The caps of /sys/kernel/mm/lru_gen/enabled.
pub const LRU_GEN_CORE: u32 = 1 << 0;
pub const LRU_GEN_MM_WALK: u32 = 1 << 1;
pub const LRU_GEN_NONLEAF_YOUNG: u32 = 1 << 2;
const LRU_GEN_ALL_CAPS: u32 = LRU_GEN_CORE | LRU_GEN_MM_WALK | LRU_GEN_NONLEAF_YOUNG;

/// reclaim_throttle(VMSCAN_THROTTLE_WRITEBACK) sleeps at most HZ/10.
const THROTTLE_WRITEBACK_NS: u64 = 100_000_000;

#[inline]
fn lru_gen_from_seq(seq: u64) -> usize {
    (seq % MAX_NR_GENS) as usize
}

/// order_base_2().
#[inline]
fn order_base_2(n: u32) -> usize {
    if n <= 1 {
        0
    } else {
        (32 - (n - 1).leading_zeros()) as usize
    }
}

/// fls_long().
#[inline]
fn fls_long(x: u64) -> i64 {
    64 - x.leading_zeros() as i64
}

/// min_type() / max_type(): the evictable types at this swappiness.
#[inline]
fn evictable_types(swappiness: u32) -> std::ops::RangeInclusive<usize> {
    let min = (swappiness == 0) as usize;
    let max = (swappiness < SWAPPINESS_ANON_ONLY) as usize;
    min..=max
}

#[inline]
fn evictable_min_seq(min_seq: &[u64; 2], swappiness: u32) -> u64 {
    let r = evictable_types(swappiness);
    min_seq[*r.start()].min(min_seq[*r.end()])
}

/// suitable_to_scan(): on average at least one young PTE per cache line.
#[inline]
fn suitable_to_scan(total: u64, young: u64) -> bool {
    young * PTES_PER_CACHELINE >= total
}

/// What the lru_gen debugfs file and the report show besides the sizes:
/// the aging and the eviction of one lruvec, under the kernel's names where
/// there is one (the mm_stats of the walk: MM_LEAF_TOTAL, MM_LEAF_YOUNG,
/// MM_NONLEAF_FOUND, MM_NONLEAF_ADDED).
#[derive(Clone, Debug, Default, Serialize, PartialEq, Eq)]
pub struct LruGenStats {
    /// inc_max_seq() calls that created a generation.
    pub nr_aging: u64,
    /// min_seq increments, per type.
    pub nr_min_seq_inc: [u64; 2],
    pub mm_leaf_total: u64,
    pub mm_leaf_young: u64,
    pub mm_nonleaf_found: u64,
    pub mm_nonleaf_added: u64,
    /// Folios promoted by lru_gen_look_around() from the rmap walk.
    pub look_around_promoted: u64,
    /// sort_folio(): folios found promoted, protected by tier, or waiting on writeback.
    pub sort_promoted: u64,
    pub sort_protected: u64,
    pub sort_writeback: u64,
    /// Direct or limit reclaim throttled on writeback (seed 003 rework).
    pub nr_throttled: u64,
}

/// struct lru_gen_folio: the generations of one lruvec (one memcg on the
/// model's single node), with the PID controller's per-tier history.
#[derive(Clone, Debug)]
pub struct LruGenFolio {
    pub max_seq: u64,
    pub min_seq: [u64; 2],
    /// Birth time of each generation, simulated ns.
    pub timestamps: [u64; MAX_NR_GENS as usize],
    folios: [[ListHead; 2]; MAX_NR_GENS as usize],
    pub nr_pages: [[u64; 2]; MAX_NR_GENS as usize],
    pub avg_refaulted: [[u64; MAX_NR_TIERS]; 2],
    pub avg_total: [[u64; MAX_NR_TIERS]; 2],
    pub protected: [[u64; MAX_NR_TIERS]; 2],
    pub evicted: [[u64; MAX_NR_TIERS]; 2],
    pub refaulted: [[u64; MAX_NR_TIERS]; 2],
    unevictable: ListHead,
    /// The two Bloom filters of lru_gen_mm_state, as exact sets of page
    /// tables keyed by (mapping << 32 | index / PTRS_PER_PTE); None until reset.
    filters: [Option<BTreeSet<u64>>; 2],
    pub stats: LruGenStats,
    /// lrugen->seg == MEMCG_LRU_TAIL: shrink_one() moved this memcg to the
    /// tail of the memcg LRU for memory.low; it is reclaimed when reached
    /// again.
    pub seg_tail: bool,
}

impl LruGenFolio {
    /// lru_gen_init_lruvec(): max_seq = MIN_NR_GENS + 1, min_seq 0.
    fn new(now: u64) -> Self {
        LruGenFolio {
            max_seq: MIN_NR_GENS + 1,
            min_seq: [0; 2],
            timestamps: [now; MAX_NR_GENS as usize],
            folios: Default::default(),
            nr_pages: [[0; 2]; MAX_NR_GENS as usize],
            avg_refaulted: [[0; MAX_NR_TIERS]; 2],
            avg_total: [[0; MAX_NR_TIERS]; 2],
            protected: [[0; MAX_NR_TIERS]; 2],
            evicted: [[0; MAX_NR_TIERS]; 2],
            refaulted: [[0; MAX_NR_TIERS]; 2],
            unevictable: ListHead::default(),
            filters: [None, None],
            stats: LruGenStats::default(),
            seg_tail: false,
        }
    }

    #[inline]
    fn get_nr_gens(&self, type_: usize) -> u64 {
        self.max_seq - self.min_seq[type_] + 1
    }

    /// lru_gen_is_active(): the two youngest generations count as active.
    #[inline]
    pub fn lru_gen_is_active(&self, gen: usize) -> bool {
        gen == lru_gen_from_seq(self.max_seq) || gen == lru_gen_from_seq(self.max_seq - 1)
    }

    /// Evictable pages of the types swappiness allows (should_run_aging's size).
    fn evictable_size(&self, swappiness: u32) -> u64 {
        let mut size = 0;
        for t in evictable_types(swappiness) {
            for seq in self.min_seq[t]..=self.max_seq {
                size += self.nr_pages[lru_gen_from_seq(seq)][t];
            }
        }
        size
    }

    /// read_ctrl_pos(): refaulted and total (evicted + protected) of tiers
    /// [tier % MAX_NR_TIERS, min(tier, MAX_NR_TIERS - 1)].
    fn read_ctrl_pos(&self, type_: usize, tier: usize, gain: u64) -> CtrlPos {
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
    fn reset_ctrl_pos(&mut self, type_: usize) {
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
    fn get_tier_idx(&self, type_: usize) -> usize {
        let sp = self.read_ctrl_pos(type_, 0, 2);
        let mut tier = 1;
        while tier < MAX_NR_TIERS {
            let pv = self.read_ctrl_pos(type_, tier, 3);
            if !positive_ctrl_err(&sp, &pv) {
                break;
            }
            tier += 1;
        }
        tier - 1
    }

    /// get_type_to_scan(): compare all tiers of anon (gain swappiness) with
    /// all tiers of file (gain MAX_SWAPPINESS - swappiness).
    fn get_type_to_scan(&self, swappiness: u32) -> usize {
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

    /// should_run_aging(): whether to age (have to: only MIN_NR_GENS left of
    /// the evictable types; better to: MIN_NR_GENS + 1 left) and the
    /// evictable size (0 when aging is unavoidable).
    fn should_run_aging(&self, swappiness: u32) -> (bool, u64) {
        let ems = evictable_min_seq(&self.min_seq, swappiness);
        if ems + MIN_NR_GENS > self.max_seq {
            return (true, 0);
        }
        (
            ems + MIN_NR_GENS == self.max_seq,
            self.evictable_size(swappiness),
        )
    }
}

/// struct ctrl_pos.
#[derive(Clone, Copy, Debug)]
struct CtrlPos {
    refaulted: u64,
    total: u64,
    gain: u64,
}

/// positive_ctrl_err(): the PV has few refaults or a refault rate no higher
/// than the SP's.
fn positive_ctrl_err(sp: &CtrlPos, pv: &CtrlPos) -> bool {
    pv.refaulted < MIN_LRU_BATCH
        || pv.refaulted as u128 * (sp.total + MIN_LRU_BATCH) as u128 * sp.gain as u128
            <= (sp.refaulted + 1) as u128 * pv.total as u128 * pv.gain as u128
}

/// The multi-gen LRU policy: per-memcg lrugen state; the classic LRU beside
/// it serves when lru_gen.enabled has the core cap off.
pub struct LruGen {
    pub lrugen: Vec<LruGenFolio>,
    /// /sys/kernel/mm/lru_gen/enabled.
    caps: u32,
    /// /sys/kernel/mm/lru_gen/min_ttl_ms, in ns.
    pub min_ttl_ns: u64,
    classic: ClassicLru,
    /// current->reclaim_state->mm_walk is set: look-around updates
    /// generations in place (folio_update_gen) instead of folio_activate().
    mm_walk: bool,
    /// sc->nr.file_taken / sc->nr.unqueued_dirty of the lruvec being shrunk.
    file_taken: u64,
    unqueued_dirty: u64,
    /// Where shrink_many() starts next (the memcg LRU's rotation).
    memcg_cursor: usize,
    scratch: Vec<FolioId>,
    clean: Vec<FolioId>,
    walk_moves: Vec<FolioId>,
}

impl Default for LruGen {
    fn default() -> Self {
        Self::new()
    }
}

/// Which folios an MGLRU walk treats as mapped by a vma it may scan
/// (should_skip_vma(): anon needs swappiness, file is skipped for anon-only).
#[inline]
fn walk_skips(file: bool, swappiness: u32) -> bool {
    if file {
        swappiness > MAX_SWAPPINESS
    } else {
        swappiness == 0
    }
}

impl LruGen {
    /// MGLRU with every cap on (CONFIG_LRU_GEN_ENABLED: enabled = 0x0007).
    pub fn new() -> Self {
        LruGen {
            lrugen: Vec::new(),
            caps: LRU_GEN_ALL_CAPS,
            min_ttl_ns: 0,
            classic: ClassicLru::new(),
            mm_walk: false,
            file_taken: 0,
            unqueued_dirty: 0,
            memcg_cursor: 0,
            scratch: Vec::with_capacity(MAX_LRU_BATCH as usize),
            clean: Vec::with_capacity(MAX_LRU_BATCH as usize),
            walk_moves: Vec::new(),
        }
    }

    /// lru_gen_enabled(): the core cap.
    #[inline]
    pub fn enabled(&self) -> bool {
        self.caps & LRU_GEN_CORE != 0
    }

    pub fn caps(&self) -> u32 {
        self.caps
    }

    /// `--sysctl lru_gen.enabled=y|n|0x0007` and `lru_gen.min_ttl_ms=N`, as
    /// the sysfs files take them. Must be set before folios are added (the
    /// model does not move folios between the two LRUs at run time).
    pub fn set_sysctl(&mut self, key: &str, value: &str) -> Result<(), String> {
        let v = value.trim();
        match key {
            "lru_gen.enabled" | "lru_gen/enabled" => {
                let caps = match v.chars().next().map(|c| c.to_ascii_lowercase()) {
                    Some('y') => LRU_GEN_ALL_CAPS,
                    Some('n') => 0,
                    _ => parse_uint(v)
                        .ok_or_else(|| format!("sysctl {key}: '{value}' is not y, n or a number"))?
                        as u32,
                };
                let busy = self
                    .lrugen
                    .iter()
                    .any(|l| l.nr_pages.iter().flatten().any(|&n| n > 0))
                    || self
                        .classic
                        .lruvecs
                        .iter()
                        .any(|lv| lv.lists.iter().any(|l| l.len > 0));
                if busy && (caps & LRU_GEN_CORE) != (self.caps & LRU_GEN_CORE) {
                    return Err(format!(
                        "sysctl {key}: the core cap can only change before the run"
                    ));
                }
                self.caps = caps & LRU_GEN_ALL_CAPS;
                Ok(())
            }
            "lru_gen.min_ttl_ms" | "lru_gen/min_ttl_ms" => {
                let ms = parse_uint(v).ok_or_else(|| {
                    format!("sysctl {key}: '{value}' is not a number of milliseconds")
                })?;
                self.min_ttl_ns = ms.saturating_mul(1_000_000);
                Ok(())
            }
            _ => Err(format!(
                "unknown sysctl '{key}' (known: lru_gen.enabled, lru_gen.min_ttl_ms)"
            )),
        }
    }

    #[inline]
    fn rework(core: &Core) -> bool {
        core.cfg.variants.mglru_wsprot_rework
    }

    /// folio_lru_refs(): after the rework, accesses including PG_referenced
    /// (0 when PG_referenced is clear); before, the refs bits plus
    /// PG_workingset.
    #[inline]
    fn folio_lru_refs(flags: u32, refs: u8, rework: bool) -> u32 {
        if rework {
            if flags & pg::REFERENCED == 0 {
                0
            } else {
                refs as u32 + 1
            }
        } else {
            refs as u32 + (flags & pg::WORKINGSET != 0) as u32
        }
    }

    /// lru_tier_from_refs(): after the rework PG_workingset is the last tier;
    /// before, order_base_2(refs + 1).
    #[inline]
    fn lru_tier_from_refs(refs: u32, workingset: bool, rework: bool) -> usize {
        if rework {
            if workingset {
                MAX_NR_TIERS - 1
            } else {
                order_base_2(refs)
            }
        } else {
            order_base_2(refs + 1)
        }
    }

    /// lru_gen_folio_seq() (lru_gen_distance() of seed 004) after the rework,
    /// and lru_gen_add_folio()'s four cases before it.
    /// `referenced_younger`: seed 000 as merged (7.2) places PG_referenced
    /// folios like PG_workingset ones.
    fn lru_gen_folio_seq(
        lv: &LruGenFolio,
        flags: u32,
        reclaiming: bool,
        rework: bool,
        referenced_younger: bool,
    ) -> u64 {
        let type_ = (flags & pg::SWAPBACKED == 0) as usize;
        let test = |b: u32| flags & b != 0;
        let pinned = (type_ == LRU_GEN_ANON && !test(pg::SWAPCACHE))
            || (test(pg::RECLAIM) && (test(pg::DIRTY) || test(pg::WRITEBACK)));
        if rework {
            let ws = test(pg::WORKINGSET) as u64;
            let dist = if test(pg::ACTIVE) {
                MIN_NR_GENS - ws
            } else if reclaiming {
                MAX_NR_GENS
            } else if pinned {
                MIN_NR_GENS
            } else {
                let younger = test(pg::WORKINGSET) || (referenced_younger && test(pg::REFERENCED));
                MAX_NR_GENS - younger as u64
            };
            (lv.max_seq + 1 - dist).max(lv.min_seq[type_])
        } else if test(pg::ACTIVE) {
            lv.max_seq
        } else if pinned {
            lv.max_seq - 1
        } else if reclaiming || lv.min_seq[type_] + MIN_NR_GENS >= lv.max_seq {
            lv.min_seq[type_]
        } else {
            lv.min_seq[type_] + 1
        }
    }

    /// lru_gen_add_folio().
    fn lru_gen_add_folio(&mut self, core: &mut Core, id: FolioId, reclaiming: bool) {
        let rework = Self::rework(core);
        let merged = core.cfg.variants.pf_activation == PfActivation::Merged;
        let f = core.folios.get_mut(id);
        let m = f.memcg as usize;
        f.set(pg::LRU);
        f.clear(pg::ISOLATED);
        if f.test(pg::UNEVICTABLE) {
            f.lru = LRU_UNEVICTABLE;
            f.clear(pg::ACTIVE);
            self.lrugen[m].unevictable.add(&mut core.folios, id);
            return;
        }
        let type_ = f.is_file_lru() as usize;
        let lv = &mut self.lrugen[m];
        let seq = Self::lru_gen_folio_seq(lv, f.flags, reclaiming, rework, merged);
        let gen = lru_gen_from_seq(seq);
        if !rework && f.test(pg::ACTIVE) {
            // Before the rework, activation also reset the tier.
            f.refs = 0;
            f.clear(pg::REFERENCED);
        }
        f.clear(pg::ACTIVE);
        f.lru = gen as u8 + 1;
        lv.nr_pages[gen][type_] += 1;
        if reclaiming {
            lv.folios[gen][type_].add_tail(&mut core.folios, id);
        } else {
            lv.folios[gen][type_].add(&mut core.folios, id);
        }
    }

    /// lru_gen_del_folio(): off its list, gen cleared.
    fn lru_gen_del_folio(&mut self, core: &mut Core, id: FolioId) {
        let f = core.folios.get(id);
        let m = f.memcg as usize;
        let lv = &mut self.lrugen[m];
        if f.lru == LRU_UNEVICTABLE {
            lv.unevictable.del(&mut core.folios, id);
        } else {
            let gen = f.lru as usize - 1;
            let type_ = f.is_file_lru() as usize;
            lv.folios[gen][type_].del(&mut core.folios, id);
            lv.nr_pages[gen][type_] -= 1;
        }
        let f = core.folios.get_mut(id);
        f.lru = 0;
        f.clear(pg::LRU);
    }

    /// Moves a listed folio to `gen`'s list, at the head (list_move) or the
    /// tail (list_move_tail), keeping nr_pages in step.
    fn move_folio(&mut self, core: &mut Core, id: FolioId, gen: usize, tail: bool) {
        let f = core.folios.get(id);
        let m = f.memcg as usize;
        let type_ = f.is_file_lru() as usize;
        let old = f.lru as usize - 1;
        let lv = &mut self.lrugen[m];
        lv.folios[old][type_].del(&mut core.folios, id);
        lv.nr_pages[old][type_] -= 1;
        lv.nr_pages[gen][type_] += 1;
        if tail {
            lv.folios[gen][type_].add_tail(&mut core.folios, id);
        } else {
            lv.folios[gen][type_].add(&mut core.folios, id);
        }
        core.folios.get_mut(id).lru = gen as u8 + 1;
    }

    /// lru_gen_inc_refs(): folio_mark_accessed() under MGLRU.
    fn lru_gen_inc_refs(core: &mut Core, id: FolioId) {
        let rework = Self::rework(core);
        let f = core.folios.get_mut(id);
        if f.test(pg::UNEVICTABLE) {
            return;
        }
        if !f.test(pg::REFERENCED) {
            f.set(pg::REFERENCED);
            if rework {
                f.refs = 0;
            }
            return;
        }
        if rework {
            if f.refs == LRU_REFS_MASK {
                f.set(pg::WORKINGSET);
            } else {
                f.refs += 1;
            }
        } else if !f.test(pg::WORKINGSET) {
            f.set(pg::WORKINGSET);
        } else if f.refs < LRU_REFS_MASK {
            f.refs += 1;
        }
    }

    /// lru_gen_set_refs() (rework): first young PTE sets PG_referenced; the
    /// next promotes (PG_workingset) and says so.
    fn lru_gen_set_refs(core: &mut Core, id: FolioId) -> bool {
        let f = core.folios.get_mut(id);
        if !f.test(pg::REFERENCED) && !f.test(pg::WORKINGSET) {
            f.set(pg::REFERENCED);
            f.refs = 0;
            return false;
        }
        f.clear(pg::REFERENCED);
        f.refs = 0;
        f.set(pg::WORKINGSET);
        true
    }

    /// folio_update_gen(): promote a folio found young by a page-table walk
    /// to `gen`. Returns the old generation, None if not moved.
    fn folio_update_gen(&mut self, core: &mut Core, id: FolioId, gen: usize) -> Option<usize> {
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
        let old = f.lru as usize - 1;
        f.refs = 0;
        f.clear(pg::REFERENCED);
        if rework {
            f.set(pg::WORKINGSET);
        } else {
            f.clear(pg::WORKINGSET);
        }
        if old != gen {
            self.move_folio(core, id, gen, false);
        }
        Some(old)
    }

    /// folio_inc_gen(): move a folio of the oldest generation to the next
    /// one, clearing its refs; a folio folio_update_gen() already promoted
    /// keeps its generation. Returns the generation; the caller moves it.
    fn folio_inc_gen(
        lv: &LruGenFolio,
        core: &mut Core,
        id: FolioId,
        reclaiming: bool,
        rework: bool,
    ) -> usize {
        let f = core.folios.get_mut(id);
        let type_ = f.is_file_lru() as usize;
        let old_gen = lru_gen_from_seq(lv.min_seq[type_]);
        let cur = f.lru as usize - 1;
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
    fn folio_activate(&mut self, core: &mut Core, id: FolioId) {
        let memcg = core.folios.get(id).memcg;
        self.lru_gen_del_folio(core, id);
        core.folios.get_mut(id).set(pg::ACTIVE);
        self.lru_gen_add_folio(core, id, false);
        core.count(memcg, Item::PGACTIVATE, 1);
    }

    /// walk_update_folio(): with a walk, folio_update_gen(); from the rmap
    /// walk without one, lru_gen_set_refs() and folio_activate() (before
    /// the rework: an isolated folio gets PG_referenced, a listed one is
    /// activated with its refs cleared).
    fn walk_update_folio(
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
        let lru = core.folios.get(id).lru;
        if rework {
            if Self::lru_gen_set_refs(core, id)
                && lru != 0
                && lru != LRU_UNEVICTABLE
                && lru as usize - 1 != new_gen
            {
                self.folio_activate(core, id);
                return true;
            }
            return false;
        }
        if lru == 0 {
            core.folios.get_mut(id).set(pg::REFERENCED);
            false
        } else if lru != LRU_UNEVICTABLE && lru as usize - 1 != new_gen {
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
    fn lru_gen_look_around(&mut self, core: &mut Core, id: FolioId) {
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
        if !core.in_kswapd {
            core.cpu(core.cost.touch_mapped * (end - start));
        }
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
    fn walk_mm(&mut self, core: &mut Core, m: usize, seq: u64, swappiness: u32, force_scan: bool) {
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
                for idx in block..end {
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
        if !core.in_kswapd {
            core.cpu(walked);
        }
    }

    /// inc_min_seq(): before retiring the oldest generation of `type_`,
    /// move what is left in it to the next one (counting it protected).
    /// Returns false when MAX_LRU_BATCH folios moved (the kernel then
    /// drops the lock and restarts).
    fn inc_min_seq(&mut self, core: &mut Core, m: usize, type_: usize, swappiness: u32) -> bool {
        let rework = Self::rework(core);
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
                let refs = Self::folio_lru_refs(f.flags, f.refs, rework);
                let ws = f.test(pg::WORKINGSET);
                let new_gen = Self::folio_inc_gen(&self.lrugen[m], core, id, false, rework);
                self.move_folio(core, id, new_gen, true);
                let lazily_promoted = rework && refs + ws as u32 == REFS_FULL + 1;
                if !lazily_promoted {
                    let tier = Self::lru_tier_from_refs(refs, ws, rework);
                    self.lrugen[m].protected[type_][tier] += 1;
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
    fn try_to_inc_min_seq(&mut self, m: usize, swappiness: u32) -> bool {
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
        if swappiness > 0 && swappiness <= MAX_SWAPPINESS {
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
    fn inc_max_seq(&mut self, core: &mut Core, m: usize, swappiness: u32) {
        for t in 0..2 {
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
    fn try_to_inc_max_seq(
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

    /// sort_folio(): folios that must not be evicted from the oldest
    /// generation are moved on (promoted, protected by tier, or waiting for
    /// writeback). Returns true if `id` was sorted.
    fn sort_folio(&mut self, core: &mut Core, m: usize, id: FolioId, tier_idx: usize) -> bool {
        let rework = Self::rework(core);
        let reclaim_rework = core.cfg.variants.mglru_reclaim_rework;
        let f = *core.folios.get(id);
        let gen = f.lru as usize - 1;
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
                lv.protected[type_][tier] += 1;
            }
            lv.stats.sort_protected += 1;
            return true;
        }
        let dirty = f.test(pg::DIRTY);
        let writeback = f.test(pg::WRITEBACK);
        if type_ == LRU_GEN_FILE && dirty {
            self.file_taken += 1;
            if !writeback {
                self.unqueued_dirty += 1;
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
    fn isolate_folio(&mut self, core: &mut Core, id: FolioId) {
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
    fn scan_folios(
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
        let scan_batch = nr_to_scan.min(MAX_LRU_BATCH);
        let mut remaining = scan_batch;
        let (mut scanned, mut sorted, mut isolated) = (0u64, 0u64, 0u64);
        while remaining > 0 {
            let id = self.lrugen[m].folios[gen][type_].tail;
            if id == NIL {
                break;
            }
            scanned += 1;
            if self.sort_folio(core, m, id, tier) {
                sorted += 1;
            } else {
                self.isolate_folio(core, id);
                self.scratch.push(id);
                isolated += 1;
            }
            remaining -= 1;
            if isolated >= MIN_LRU_BATCH {
                break;
            }
        }
        let memcg = m as MemcgId;
        core.count_reclaim(memcg, Item::PGREFILL, sorted, sc);
        core.cpu_reclaim(core.cost.scan_folio * sorted, sc);
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
    fn isolate_folios(
        &mut self,
        core: &mut Core,
        m: usize,
        nr_to_scan: u64,
        sc: &ScanControl,
        swappiness: u32,
    ) -> (u64, usize) {
        let rework = core.cfg.variants.mglru_reclaim_rework;
        let fix = core.cfg.variants.mglru_isolate_fallback_fix;
        let mut type_ = self.lrugen[m].get_type_to_scan(swappiness);
        let mut total = 0;
        for _ in evictable_types(swappiness) {
            let tier = self.lrugen[m].get_tier_idx(type_);
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

    /// evict_folios(): isolate a batch, run shrink_folio_list() on it, put
    /// back what was kept (retrying clean ones once). Returns the number
    /// scanned (0: no progress).
    fn evict_folios(
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
        let (mut scanned, type_) = self.isolate_folios(core, m, nr_to_scan, sc, swappiness);
        scanned += self.try_to_inc_min_seq(m, swappiness) as u64;
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
            sc.nr_scanned += list.len() as u64;
            let reclaimed = shrink_folio_list(core, self, &mut list, sc);
            sc.nr_reclaimed += reclaimed;
            core.count_pgsteal(memcg, type_ == LRU_GEN_FILE, reclaimed, sc);
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
    fn reclaim_throttle(&mut self, core: &mut Core, m: usize) {
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
    fn get_swappiness(core: &Core, m: usize, sc: &ScanControl) -> u32 {
        if !sc.may_swap || core.mem_cgroup_get_nr_swap_pages(m as MemcgId) < MIN_LRU_BATCH {
            return 0;
        }
        core.mem_cgroup_swappiness(m as MemcgId)
    }

    /// should_abort_scan(): never for memcg reclaim; once the target is met
    /// for root reclaim; kswapd also once free pages clear the high
    /// watermark.
    fn should_abort_scan(core: &Core, sc: &ScanControl) -> bool {
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
    fn get_nr_to_scan(
        &mut self,
        core: &mut Core,
        m: usize,
        sc: &ScanControl,
        swappiness: u32,
    ) -> i64 {
        let max_seq = self.lrugen[m].max_seq;
        let (need_aging, nr_to_scan) = self.lrugen[m].should_run_aging(swappiness);
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
    fn maybe_wakeup_flusher(&mut self, core: &mut Core) {
        if self.unqueued_dirty > 0 && self.unqueued_dirty == self.file_taken {
            core.wb_wakeup_flusher = true;
        }
    }

    /// try_to_shrink_lruvec(). Returns whether the lruvec should be rotated
    /// (it aged).
    fn try_to_shrink_lruvec(&mut self, core: &mut Core, m: usize, sc: &mut ScanControl) -> bool {
        let swappiness = Self::get_swappiness(core, m, sc);
        self.file_taken = 0;
        self.unqueued_dirty = 0;
        if core.cfg.variants.mglru_reclaim_rework {
            // Seed 003: the scan budget is computed once; aging happens in
            // the loop without ending it; batches are smaller; dirty folios
            // wake the flusher from inside the loop.
            let size = self.lrugen[m].evictable_size(swappiness);
            let mut budget = (size >> sc.priority).max(size.min(SWAP_CLUSTER_MAX));
            let mut aged = false;
            while budget > 0 {
                let max_seq = self.lrugen[m].max_seq;
                if self.lrugen[m].should_run_aging(swappiness).0 {
                    aged |= self.try_to_inc_max_seq(core, m, max_seq, swappiness, false);
                }
                let delta = self.evict_folios(core, m, budget.min(MIN_LRU_BATCH), sc, swappiness);
                if delta == 0 {
                    break;
                }
                budget = budget.saturating_sub(delta);
                self.maybe_wakeup_flusher(core);
                if Self::should_abort_scan(core, sc) {
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
    fn set_initial_priority(&self, core: &Core, sc: &mut ScanControl) {
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

    /// lru_gen_age_node(): with min_ttl set, kswapd OOM-kills when every
    /// sizable memcg's oldest generation is younger than min_ttl.
    fn lru_gen_age_node(&mut self, core: &mut Core, sc: &ScanControl) {
        if self.min_ttl_ns == 0 {
            return;
        }
        let reclaimable = self.lrugen.iter().enumerate().any(|(m, lv)| {
            let swappiness = Self::get_swappiness(core, m, sc);
            let sizable = (lv.evictable_size(swappiness) >> sc.priority) > 0;
            let birth = lv.timestamps[lru_gen_from_seq(evictable_min_seq(&lv.min_seq, swappiness))];
            sizable && core.now.saturating_sub(birth) >= self.min_ttl_ns
        });
        if reclaimable {
            return;
        }
        // out_of_memory(): kswapd runs the OOM killer once this reclaim
        // pass returns (oom_kill.rs).
        core.kswapd_oom = true;
    }

    /// lru_gen_shrink_node(): root reclaim over every memcg (shrink_many),
    /// starting where the last pass left off.
    fn lru_gen_shrink_node(&mut self, core: &mut Core, sc: &mut ScanControl) {
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
    fn lru_gen_shrink_lruvec(&mut self, core: &mut Core, m: usize, sc: &mut ScanControl) {
        self.mm_walk = sc.is_kswapd;
        self.try_to_shrink_lruvec(core, m, sc);
        self.mm_walk = false;
    }

    /// The debugfs lru_gen file for one memcg (not the "full" variant):
    /// `memcg ID PATH`, ` node 0`, then per generation from the oldest
    /// evictable: seq, age in ms, anon pages, file pages.
    pub fn lru_gen_seq_show(&self, core: &Core, memcg: MemcgId) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let Some(lv) = self.lrugen.get(memcg as usize) else {
            return s;
        };
        let path = core
            .memcgs
            .get(memcg as usize)
            .map_or("", |m| m.name.as_str());
        let _ = writeln!(s, "memcg {:5} {}", memcg, path);
        let _ = writeln!(s, " node {:5}", 0);
        for seq in evictable_min_seq(&lv.min_seq, MAX_SWAPPINESS / 2)..=lv.max_seq {
            let gen = lru_gen_from_seq(seq);
            let age_ms = core.now.saturating_sub(lv.timestamps[gen]) / 1_000_000;
            let _ = writeln!(
                s,
                " {:10} {:10} {:10}  {:10} ",
                seq, age_ms, lv.nr_pages[gen][0], lv.nr_pages[gen][1]
            );
        }
        s
    }
}

/// kstrtouint() with base 0 (decimal, 0x hex, leading-0 octal).
fn parse_uint(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

impl ReclaimPolicy for LruGen {
    fn name(&self) -> &'static str {
        "mglru"
    }

    fn lruvec_init(&mut self, memcg: MemcgId) {
        self.classic.lruvec_init(memcg);
        let m = memcg as usize;
        while self.lrugen.len() <= m {
            self.lrugen.push(LruGenFolio::new(0));
        }
    }

    /// folio_add_lru() with the MGLRU fault-path hook (seed 000): in a
    /// fault of a vma with recency, outside reclaim, the folio is marked
    /// active (before) or accessed (after) first.
    fn folio_add_lru(&mut self, core: &mut Core, id: FolioId) {
        if !self.enabled() {
            return self.classic.folio_add_lru(core, id);
        }
        if core.in_lru_fault && !core.in_reclaim && !core.folios.get(id).test(pg::UNEVICTABLE) {
            let f = core.folios.get(id);
            match core.cfg.variants.pf_activation {
                PfActivation::SetActive => core.folios.get_mut(id).set(pg::ACTIVE),
                PfActivation::MarkAccessed => Self::lru_gen_inc_refs(core, id),
                PfActivation::Merged if f.test(pg::WORKINGSET) => {
                    core.folios.get_mut(id).set(pg::ACTIVE)
                }
                PfActivation::Merged if !f.test(pg::REFERENCED) => Self::lru_gen_inc_refs(core, id),
                PfActivation::Merged => {}
            }
        }
        self.lru_gen_add_folio(core, id, false);
    }

    fn folio_mark_accessed(&mut self, core: &mut Core, id: FolioId) {
        if !self.enabled() {
            return self.classic.folio_mark_accessed(core, id);
        }
        Self::lru_gen_inc_refs(core, id);
    }

    fn folio_del_lru(&mut self, core: &mut Core, id: FolioId) {
        if !self.enabled() {
            return self.classic.folio_del_lru(core, id);
        }
        if core.folios.get(id).test(pg::LRU) {
            self.lru_gen_del_folio(core, id);
        }
    }

    fn folio_putback_lru(&mut self, core: &mut Core, id: FolioId) {
        if !self.enabled() {
            return self.classic.folio_putback_lru(core, id);
        }
        self.lru_gen_add_folio(core, id, false);
    }

    fn shrink_node(&mut self, core: &mut Core, sc: &mut ScanControl) {
        if !self.enabled() {
            return self.classic.shrink_node(core, sc);
        }
        match sc.target_memcg {
            // Limit reclaim: shrink_node_memcgs() over the target's
            // subtree, each lruvec by lru_gen_shrink_lruvec().
            Some(t) if t != 0 => {
                let mut it = core.reclaim_memcgs(sc);
                while let Some(m) = it.next() {
                    if !core.mem_cgroup_reclaim_allowed(m, sc) {
                        continue;
                    }
                    self.lru_gen_shrink_lruvec(core, m as usize, sc);
                    if sc.partial_walk() && sc.nr_reclaimed >= sc.nr_to_reclaim {
                        core.mem_cgroup_iter_break(sc, Some(&it));
                        return;
                    }
                }
                core.mem_cgroup_iter_break(sc, None);
            }
            _ => self.lru_gen_shrink_node(core, sc),
        }
    }

    /// lru_gen_folio_check_references() after seed 004 (with the LULESH
    /// fix: a first young PTE only sets PG_referenced and keeps the folio);
    /// before it, the classic decision behind MGLRU's "folio_update_gen()
    /// tried to promote" check. Both test the PTE through the rmap walk,
    /// which runs lru_gen_look_around() on a young PTE.
    fn folio_check_references(
        &mut self,
        core: &mut Core,
        id: FolioId,
        sc: &ScanControl,
    ) -> FolioRef {
        if !self.enabled() {
            return self.classic.folio_check_references(core, id, sc);
        }
        let rework = Self::rework(core);
        let f = core.folios.get(id);
        if !rework && f.test(pg::MAPPED) && f.test(pg::REFERENCED) {
            return FolioRef::Keep;
        }
        let (referenced_ptes, exec) = super::folio_referenced(core, id);
        if referenced_ptes > 0 {
            self.lru_gen_look_around(core, id);
        }
        if rework {
            if referenced_ptes == 0 {
                return FolioRef::Reclaim;
            }
            return if Self::lru_gen_set_refs(core, id) {
                FolioRef::Activate
            } else {
                FolioRef::Keep
            };
        }
        let f = core.folios.get_mut(id);
        let referenced_folio = f.test_clear(pg::REFERENCED);
        if referenced_ptes > 0 {
            f.set(pg::REFERENCED);
            if referenced_folio || (exec && f.is_file_lru()) {
                return FolioRef::Activate;
            }
            return FolioRef::Keep;
        }
        if referenced_folio && f.is_file_lru() {
            return FolioRef::ReclaimClean;
        }
        FolioRef::Reclaim
    }

    /// lru_gen_eviction(): the token is min_seq of the folio's type and its
    /// refs; the eviction counts toward its tier.
    fn workingset_eviction(&mut self, core: &mut Core, id: FolioId) -> Shadow {
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
        let lv = &mut self.lrugen[memcg as usize];
        let min_seq = lv.min_seq[type_];
        let token = (min_seq << LRU_REFS_WIDTH) | refs.saturating_sub(1) as u64;
        lv.evicted[type_][tier] += 1;
        pack_shadow(memcg, token, if rework { ws } else { refs != 0 })
    }

    /// lru_gen_refault(): count the refault; if the shadow is recent
    /// (lru_gen_test_recent), credit its tier and restore its state.
    fn workingset_refault(&mut self, core: &mut Core, id: FolioId, shadow: Shadow) {
        if !self.enabled() {
            return self.classic.workingset_refault(core, id, shadow);
        }
        let rework = Self::rework(core);
        let (evict_memcg, token, workingset) = unpack_shadow(shadow);
        let f = core.folios.get(id);
        let memcg = f.memcg;
        let type_ = f.is_file_lru() as usize;
        if evict_memcg != memcg || evict_memcg as usize >= self.lrugen.len() {
            return;
        }
        let (refault_item, activate_item, restore_item) =
            crate::mm::workingset::workingset_items(type_ == LRU_GEN_FILE);
        core.count(memcg, refault_item, 1);
        if !self.lru_gen_test_recent(evict_memcg, token) {
            return;
        }
        let in_fault = core.in_lru_fault;
        let lv = &mut self.lrugen[memcg as usize];
        let mask = (REFS_FULL - 1) as u64;
        if rework {
            let refs = (token & mask) as u32 + 1;
            let tier = Self::lru_tier_from_refs(refs, workingset, true);
            lv.refaulted[type_][tier] += 1;
            // As merged, only refaulted workingset folios are activated in
            // the fault path, and only they count as activations.
            let merged = core.cfg.variants.pf_activation == PfActivation::Merged;
            if in_fault && (workingset || !merged) {
                core.count(memcg, activate_item, 1);
            }
            let f = core.folios.get_mut(id);
            if workingset {
                f.set(pg::WORKINGSET);
                core.count(memcg, restore_item, 1);
            } else {
                f.refs = (refs - 1) as u8;
            }
        } else {
            let refs = (token & mask) as u32 + workingset as u32;
            let tier = Self::lru_tier_from_refs(refs, false, false);
            lv.refaulted[type_][tier] += 1;
            core.count(memcg, activate_item, 1);
            if in_fault || refs >= REFS_FULL - 1 {
                let f = core.folios.get_mut(id);
                f.refs = LRU_REFS_MASK;
                f.set(pg::WORKINGSET);
                core.count(memcg, restore_item, 1);
            }
        }
    }

    /// folio_rotate_reclaimable(): writeback of a PG_reclaim folio ended;
    /// it goes to the tail of the oldest generation.
    fn folio_rotate_reclaimable(&mut self, core: &mut Core, id: FolioId) {
        if !self.enabled() {
            return self.classic.folio_rotate_reclaimable(core, id);
        }
        let f = core.folios.get(id);
        if !f.test(pg::LRU) || f.test(pg::UNEVICTABLE) {
            return;
        }
        let memcg = f.memcg;
        self.lru_gen_del_folio(core, id);
        core.folios.get_mut(id).clear(pg::ACTIVE);
        self.lru_gen_add_folio(core, id, true);
        core.count(memcg, Item::PGROTATED, 1);
    }

    /// Under MGLRU, lru_gen_update_size() maintains the lruvec's node
    /// counters but not the memcg's per-zone lru_zone_size that
    /// lruvec_lru_size() reads, so count_shadow_nodes() sees a memcg with no
    /// LRU pages and lets it keep shadow nodes only for its slab: shadow
    /// entries of a memcg under MGLRU are reclaimed early.
    fn lruvec_lru_pages(&self, memcg: MemcgId) -> u64 {
        if !self.enabled() {
            return self.classic.lruvec_lru_pages(memcg);
        }
        0
    }

    /// NR_{IN,}ACTIVE_{ANON,FILE} as MGLRU accounts them: the two youngest
    /// generations are active.
    fn lru_sizes(&self, memcg: MemcgId) -> LruSizes {
        if !self.enabled() {
            return self.classic.lru_sizes(memcg);
        }
        let Some(lv) = self.lrugen.get(memcg as usize) else {
            return LruSizes::default();
        };
        let mut s = LruSizes {
            unevictable: lv.unevictable.len,
            ..Default::default()
        };
        for t in 0..2 {
            for seq in lv.min_seq[t]..=lv.max_seq {
                let gen = lru_gen_from_seq(seq);
                let n = lv.nr_pages[gen][t];
                match (t == LRU_GEN_FILE, lv.lru_gen_is_active(gen)) {
                    (false, false) => s.inactive_anon += n,
                    (false, true) => s.active_anon += n,
                    (true, false) => s.inactive_file += n,
                    (true, true) => s.active_file += n,
                }
            }
        }
        s
    }

    /// Every listed folio is on the list its gen, type and memcg say, with
    /// PG_lru, without PG_active; list lengths equal nr_pages; generations
    /// outside [min_seq, max_seq] are empty; the window holds MIN_NR_GENS to
    /// MAX_NR_GENS generations; every PG_lru folio is on a list.
    fn check_invariants(&self, core: &Core) -> Result<(), String> {
        if !self.enabled() {
            return self.classic.check_invariants(core);
        }
        let mut listed = 0u64;
        for (m, lv) in self.lrugen.iter().enumerate() {
            for t in 0..2 {
                if lv.min_seq[t] > lv.max_seq {
                    return Err(format!(
                        "memcg {m}: min_seq[{t}] {} > max_seq {}",
                        lv.min_seq[t], lv.max_seq
                    ));
                }
                let n = lv.get_nr_gens(t);
                if !(MIN_NR_GENS..=MAX_NR_GENS).contains(&n) {
                    return Err(format!(
                        "memcg {m}: type {t} has {n} generations (min_seq {} max_seq {})",
                        lv.min_seq[t], lv.max_seq
                    ));
                }
            }
            for gen in 0..MAX_NR_GENS as usize {
                for t in 0..2 {
                    let l = &lv.folios[gen][t];
                    let mut n = 0u64;
                    for id in l.iter(&core.folios) {
                        let f = core.folios.get(id);
                        if !f.test(pg::LRU)
                            || f.test(pg::ISOLATED)
                            || f.test(pg::ACTIVE)
                            || f.lru as usize != gen + 1
                            || f.memcg as usize != m
                            || f.is_file_lru() as usize != t
                        {
                            return Err(format!("folio {}:{} on gen {gen} type {t} of memcg {m} has flags {:#x} lru {} memcg {}", f.mapping, f.index, f.flags, f.lru, f.memcg));
                        }
                        n += 1;
                    }
                    if n != l.len || n != lv.nr_pages[gen][t] {
                        return Err(format!("memcg {m} gen {gen} type {t}: {n} folios listed, list length {}, nr_pages {}", l.len, lv.nr_pages[gen][t]));
                    }
                    let in_window =
                        (lv.min_seq[t]..=lv.max_seq).any(|s| lru_gen_from_seq(s) == gen);
                    if n > 0 && !in_window {
                        return Err(format!("memcg {m} gen {gen} type {t}: {n} folios outside [min_seq {}, max_seq {}]", lv.min_seq[t], lv.max_seq));
                    }
                    listed += n;
                }
            }
            for id in lv.unevictable.iter(&core.folios) {
                let f = core.folios.get(id);
                if f.lru != LRU_UNEVICTABLE || f.memcg as usize != m || !f.test(pg::LRU) {
                    return Err(format!(
                        "folio {}:{} on the unevictable list of memcg {m} has lru {} flags {:#x}",
                        f.mapping, f.index, f.lru, f.flags
                    ));
                }
                listed += 1;
            }
        }
        let mut flagged = 0u64;
        for f in &core.folios.f {
            if f.test(pg::FREE) {
                continue;
            }
            if f.test(pg::LRU) {
                flagged += 1;
            } else if f.lru != 0 {
                return Err(format!(
                    "folio {}:{} off the LRU still has gen {}",
                    f.mapping,
                    f.index,
                    f.lru as i32 - 1
                ));
            }
        }
        if listed != flagged {
            return Err(format!(
                "{flagged} folios flagged PG_lru but {listed} on generation lists"
            ));
        }
        Ok(())
    }

    /// /sys/kernel/debug/lru_gen for one memcg as JSON: each generation's
    /// seq, age and anon/file sizes, plus the tiers' PID-controller state
    /// and the aging/eviction statistics.
    fn debug_view(&self, core: &Core, memcg: MemcgId) -> Option<serde_json::Value> {
        if !self.enabled() {
            return None;
        }
        let lv = self.lrugen.get(memcg as usize)?;
        let gens: Vec<serde_json::Value> = (evictable_min_seq(&lv.min_seq, MAX_SWAPPINESS / 2)
            ..=lv.max_seq)
            .map(|seq| {
                let gen = lru_gen_from_seq(seq);
                serde_json::json!({
                    "seq": seq,
                    "age_ms": core.now.saturating_sub(lv.timestamps[gen]) / 1_000_000,
                    "anon": lv.nr_pages[gen][LRU_GEN_ANON],
                    "file": lv.nr_pages[gen][LRU_GEN_FILE],
                })
            })
            .collect();
        let tiers: Vec<serde_json::Value> = (0..MAX_NR_TIERS)
            .map(|tier| {
                serde_json::json!({
                    "tier": tier,
                    "anon": {"avg_refaulted": lv.avg_refaulted[0][tier], "avg_total": lv.avg_total[0][tier], "refaulted": lv.refaulted[0][tier], "evicted": lv.evicted[0][tier], "protected": lv.protected[0][tier]},
                    "file": {"avg_refaulted": lv.avg_refaulted[1][tier], "avg_total": lv.avg_total[1][tier], "refaulted": lv.refaulted[1][tier], "evicted": lv.evicted[1][tier], "protected": lv.protected[1][tier]},
                })
            })
            .collect();
        Some(serde_json::json!({
            "memcg": memcg,
            "path": core.memcgs.get(memcg as usize).map_or("", |m| m.name.as_str()),
            "node": 0,
            "enabled": format!("{:#06x}", self.caps),
            "max_seq": lv.max_seq,
            "min_seq": {"anon": lv.min_seq[0], "file": lv.min_seq[1]},
            "generations": gens,
            "tiers": tiers,
            "stats": lv.stats,
        }))
    }
}

/// lru_gen_test_recent(): the eviction's min_seq is within MAX_NR_GENS of
/// the lruvec's max_seq now.
impl LruGen {
    fn lru_gen_test_recent(&self, memcg: MemcgId, token: u64) -> bool {
        let max_seq = self.lrugen[memcg as usize].max_seq & (EVICTION_MASK >> LRU_REFS_WIDTH);
        max_seq.abs_diff(token >> LRU_REFS_WIDTH) < MAX_NR_GENS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mm::MmConfig;

    fn core(rework: bool) -> Core {
        let mut cfg = MmConfig {
            ram_bytes: 64 << 20,
            reserved_bytes: 0,
            ..MmConfig::default()
        };
        cfg.variants.mglru_wsprot_rework = rework;
        Core::new(cfg)
    }

    fn file_folio(c: &mut Core) -> FolioId {
        let id = c.folios.alloc().unwrap();
        let f = c.folios.get_mut(id);
        f.flags = pg::UPTODATE;
        id
    }

    #[test]
    fn tiers_follow_refs_before_and_after_the_rework() {
        // After: refs counts PG_referenced; tier order_base_2(refs), PG_workingset last.
        let t: Vec<usize> = (0..=4)
            .map(|r| LruGen::lru_tier_from_refs(r, false, true))
            .collect();
        assert_eq!(t, vec![0, 0, 1, 2, 2]);
        assert_eq!(LruGen::lru_tier_from_refs(1, true, true), 3);
        // Before: order_base_2(refs + 1).
        let t: Vec<usize> = (0..=4)
            .map(|r| LruGen::lru_tier_from_refs(r, false, false))
            .collect();
        assert_eq!(t, vec![0, 1, 2, 2, 3]);
    }

    #[test]
    fn inc_refs_walks_the_refs_bits_then_workingset() {
        let mut c = core(true);
        let id = file_folio(&mut c);
        let mut seen = vec![];
        for _ in 0..6 {
            LruGen::lru_gen_inc_refs(&mut c, id);
            let f = c.folios.get(id);
            seen.push((
                LruGen::folio_lru_refs(f.flags, f.refs, true),
                f.test(pg::WORKINGSET),
            ));
        }
        assert_eq!(
            seen,
            vec![
                (1, false),
                (2, false),
                (3, false),
                (4, false),
                (4, true),
                (4, true)
            ]
        );
        let mut c = core(false);
        let id = file_folio(&mut c);
        let mut seen = vec![];
        for _ in 0..6 {
            LruGen::lru_gen_inc_refs(&mut c, id);
            let f = c.folios.get(id);
            seen.push(LruGen::folio_lru_refs(f.flags, f.refs, false));
        }
        assert_eq!(seen, vec![0, 1, 2, 3, 4, 4]);
    }

    #[test]
    fn placement_matches_the_distance_table() {
        let mut lv = LruGenFolio::new(0);
        lv.max_seq = 7;
        lv.min_seq = [4, 4];
        let seq = |flags: u32, rework| LruGen::lru_gen_folio_seq(&lv, flags, false, rework, false);
        // After the rework: active+workingset youngest, active second youngest,
        // workingset third, plain file oldest; anon second youngest.
        assert_eq!(seq(pg::ACTIVE | pg::WORKINGSET, true), 7);
        assert_eq!(seq(pg::ACTIVE, true), 6);
        assert_eq!(seq(pg::WORKINGSET, true), 5);
        assert_eq!(seq(0, true), 4);
        // Seed 000 as merged: a PG_referenced fault folio goes one younger
        // than the oldest, like PG_workingset; without it, to the oldest.
        assert_eq!(
            LruGen::lru_gen_folio_seq(&lv, pg::REFERENCED, false, true, true),
            5
        );
        assert_eq!(
            LruGen::lru_gen_folio_seq(&lv, pg::REFERENCED, false, true, false),
            4
        );
        assert_eq!(seq(pg::SWAPBACKED, true), 6);
        assert_eq!(
            LruGen::lru_gen_folio_seq(&lv, pg::WORKINGSET, true, true, false),
            4
        );
        // Before: active always youngest; others second oldest.
        assert_eq!(seq(pg::ACTIVE, false), 7);
        assert_eq!(seq(0, false), 5);
        assert_eq!(LruGen::lru_gen_folio_seq(&lv, 0, true, false, false), 4);
    }

    #[test]
    fn ctrl_err_protects_tiers_that_refault_more() {
        let mut lv = LruGenFolio::new(0);
        // Tier 0 refaults 10%, tier 1 60%: protection starts at tier 1.
        lv.refaulted[1][0] = 100;
        lv.evicted[1][0] = 1000;
        lv.refaulted[1][1] = 600;
        lv.evicted[1][1] = 1000;
        assert_eq!(lv.get_tier_idx(1), 0);
        // Tier 1 refaulting less than tier 0: no protection from tier 1.
        lv.refaulted[1][1] = 50;
        assert!(lv.get_tier_idx(1) >= 1);
        // Anon refaulting far more than file: scan file.
        lv.refaulted[0][0] = 900;
        lv.evicted[0][0] = 1000;
        assert_eq!(lv.get_type_to_scan(60), LRU_GEN_FILE);
        assert_eq!(lv.get_type_to_scan(0), LRU_GEN_FILE);
        assert_eq!(lv.get_type_to_scan(200), LRU_GEN_ANON);
    }

    #[test]
    fn sysctl_parsing() {
        let mut p = LruGen::new();
        p.set_sysctl("lru_gen.enabled", "0x0001").unwrap();
        assert_eq!(p.caps(), LRU_GEN_CORE);
        p.set_sysctl("lru_gen.enabled", "n").unwrap();
        assert!(!p.enabled());
        p.set_sysctl("lru_gen.enabled", "y").unwrap();
        assert_eq!(p.caps(), 7);
        p.set_sysctl("lru_gen.min_ttl_ms", "1000").unwrap();
        assert_eq!(p.min_ttl_ns, 1_000_000_000);
        let e = p.set_sysctl("lru_gen.enabled", "maybe").unwrap_err();
        assert!(e.contains("lru_gen.enabled") && e.contains("maybe"), "{e}");
        assert!(p
            .set_sysctl("lru_gen.bogus", "1")
            .unwrap_err()
            .contains("unknown sysctl 'lru_gen.bogus'"));
    }

    #[test]
    fn add_del_keep_sizes_and_window() {
        let mut c = core(true);
        let mut p = LruGen::new();
        p.lruvec_init(0);
        let ids: Vec<FolioId> = (0..10).map(|_| file_folio(&mut c)).collect();
        for &id in &ids {
            p.folio_add_lru(&mut c, id);
        }
        p.check_invariants(&c).unwrap();
        // Plain file folios go to the oldest generation (min_seq 0).
        assert_eq!(p.lrugen[0].nr_pages[0][LRU_GEN_FILE], 10);
        let s = p.lru_sizes(0);
        assert_eq!((s.inactive_file, s.active_file), (10, 0));
        p.folio_del_lru(&mut c, ids[3]);
        assert_eq!(p.lrugen[0].nr_pages[0][LRU_GEN_FILE], 9);
        p.check_invariants(&c).unwrap();
        assert_eq!(c.folios.get(ids[3]).lru, 0);
        // A folio whose gen disagrees with its list is caught.
        c.folios.get_mut(ids[4]).lru = 2;
        assert!(p.check_invariants(&c).unwrap_err().contains("gen 0 type 1"));
    }
}
