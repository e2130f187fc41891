//! The multi-gen LRU (mm/vmscan.c lru_gen_*, mm/workingset.c lru_gen_*,
//! include/linux/mm_inline.h, include/linux/mmzone.h), as in Linux 7.0, with
//! the seeds' patches as variants:
//!
//! - seed 004 (`mglru_wsprot_rework`): workingset protection after the rework
//!   (lru_gen_folio_seq / lru_gen_distance placement, PG_workingset as the last
//!   tier, LRU_REFS only valid under PG_referenced, lru_gen_set_refs with the
//!   LULESH fix folded in, or as v2 posted it without: `mglru_wsprot_fold_fix`)
//!   or before it (PG_active always to max_seq, PG_workingset as the second
//!   access, refs cleared on every promotion);
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

mod aging;
mod debugfs;
mod eviction;
mod refault;

use std::collections::BTreeSet;

use serde::Serialize;

use super::classic::ClassicLru;
use super::{shrink_folio_list, FolioRef, ReclaimPolicy, ScanControl};
use crate::mm::folio::{pg, FolioId, ListHead, NIL};
use crate::mm::memcontrol::MemcgId;
use crate::mm::vmstat::Item;
use crate::mm::workingset::{pack_shadow, unpack_shadow, LruSizes, Shadow, EVICTION_MASK};
use crate::mm::{Core, PfActivation, DEF_PRIORITY};

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

const _: () = assert!(MAX_NR_GENS <= 4, "the pending generation has two bits");

/// folio_lru_gen() of a listed, evictable folio: its generation bits,
/// which folio_update_gen() may have moved ahead of the list it sits on
/// (`lru` is the list).
#[inline]
pub(super) fn folio_lru_gen(f: &crate::mm::folio::Folio) -> usize {
    if f.test(pg::GEN_PENDING) {
        ((f.flags & pg::PENDING_GEN_MASK) >> pg::PENDING_GEN_SHIFT) as usize
    } else {
        f.lru as usize - 1
    }
}

/// Sets the generation bits of a folio listed on gen `f.lru - 1`.
#[inline]
fn set_folio_gen(f: &mut crate::mm::folio::Folio, gen: usize) {
    f.clear(pg::GEN_PENDING | pg::PENDING_GEN_MASK);
    if gen + 1 != f.lru as usize {
        f.set(pg::GEN_PENDING | ((gen as u32) << pg::PENDING_GEN_SHIFT));
    }
}

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
    /// isolate_folios() rounds, by the type get_type_to_scan() chose
    /// ([anon, file]): how swappiness and the refault feedback steered.
    pub type_chosen: [u64; 2],
    /// isolate_folios() rounds that fell back to the other type because the
    /// chosen one gave nothing, by the type fallen back to: when these
    /// dominate, what reclaim takes is decided by which type has folios in
    /// its oldest generation, not by swappiness.
    pub type_fallback: [u64; 2],
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
    /// folio_lru_list() of a folio on an MGLRU list, for mm_lru_insertion:
    /// lru_gen_add_folio() clears PG_active, so it reads as inactive.
    fn trace_lru(core: &Core, id: FolioId) -> u32 {
        let f = core.folios.get(id);
        if f.lru == LRU_UNEVICTABLE {
            crate::trace::LRU_UNEVICTABLE
        } else if f.is_file_lru() {
            crate::trace::LRU_INACTIVE_FILE
        } else {
            crate::trace::LRU_INACTIVE_ANON
        }
    }

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

    /// The debugfs command "+ memcg_id node_id max_gen swappiness
    /// force_scan" (run_aging()): one aging pass of the memcg's lruvec at
    /// its current max_seq. False when the memcg has no lruvec yet or the
    /// aging did not create a generation.
    pub fn run_aging(
        &mut self,
        core: &mut Core,
        memcg: MemcgId,
        swappiness: u32,
        force_scan: bool,
    ) -> bool {
        let m = memcg as usize;
        let Some(lv) = self.lrugen.get(m) else {
            return false;
        };
        let seq = lv.max_seq;
        self.try_to_inc_max_seq(core, m, seq, swappiness, force_scan)
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
        lv.nr_pages[gen][type_] += f.nr_pages();
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
            let list = f.lru as usize - 1;
            let gen = folio_lru_gen(f);
            let type_ = f.is_file_lru() as usize;
            let nr = f.nr_pages();
            lv.folios[list][type_].del(&mut core.folios, id);
            lv.nr_pages[gen][type_] -= nr;
        }
        let f = core.folios.get_mut(id);
        f.lru = 0;
        f.clear(pg::LRU | pg::GEN_PENDING | pg::PENDING_GEN_MASK);
    }

    /// Moves a listed folio to `gen`'s list, at the head (list_move) or the
    /// tail (list_move_tail), keeping nr_pages in step.
    fn move_folio(&mut self, core: &mut Core, id: FolioId, gen: usize, tail: bool) {
        let f = core.folios.get(id);
        let m = f.memcg as usize;
        let type_ = f.is_file_lru() as usize;
        let list = f.lru as usize - 1;
        let old = folio_lru_gen(f);
        let nr = f.nr_pages();
        let lv = &mut self.lrugen[m];
        lv.folios[list][type_].del(&mut core.folios, id);
        lv.nr_pages[old][type_] -= nr;
        lv.nr_pages[gen][type_] += nr;
        if tail {
            lv.folios[gen][type_].add_tail(&mut core.folios, id);
        } else {
            lv.folios[gen][type_].add(&mut core.folios, id);
        }
        let f = core.folios.get_mut(id);
        f.lru = gen as u8 + 1;
        f.clear(pg::GEN_PENDING | pg::PENDING_GEN_MASK);
    }

    /// The page-table walk's promotion (folio_update_gen()): the generation
    /// bits and the generations' sizes change, the folio stays where it is
    /// on its list until eviction sorts it (update_batch_size() then
    /// reset_batch_size()).
    fn set_gen_lazily(&mut self, core: &mut Core, id: FolioId, gen: usize) {
        let f = core.folios.get_mut(id);
        let m = f.memcg as usize;
        let type_ = f.is_file_lru() as usize;
        let old = folio_lru_gen(f);
        let nr = f.nr_pages();
        set_folio_gen(f, gen);
        let lv = &mut self.lrugen[m];
        lv.nr_pages[old][type_] -= nr;
        lv.nr_pages[gen][type_] += nr;
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
    fn charges_traced_costs(&self) -> bool {
        false
    }
    /// Before seed 003's series MGLRU has none of the classic LRU's
    /// stalls: sort_folio() moves dirty and writeback folios on before
    /// shrink_folio_list() could wait on them, and evict_folios() passes
    /// only nr_unqueued_dirty up, so shrink_node() never sees the dirty or
    /// congested counts that throttle; a memcg full of dirty folios retries
    /// reclaim without waiting and OOMs (the throttling OOM of the series'
    /// patch 14). The series ("unify writeback reclaim statistic and
    /// throttling") feeds MGLRU's folio counts to the same code, so it
    /// stalls as the classic LRU does.
    fn memcg_reclaim_stalls_on_writeback(&self, core: &Core) -> bool {
        core.cfg.variants.mglru_reclaim_rework
    }
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

    /// folio_add_lru()'s MGLRU fault-path hook (seed 000), before the
    /// lru_add batch: in a fault of a vma with recency, outside reclaim,
    /// the folio is marked active (before) or accessed (after) first.
    fn folio_add_lru_prepare(&mut self, core: &mut Core, id: FolioId) {
        if !self.enabled() {
            return;
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
    }

    /// lru_add(): the generation is chosen by the flags the folio has at
    /// the batch's drain (PG_referenced from a read's
    /// folio_mark_accessed() meanwhile, under seed 000's merged form).
    fn lru_add(&mut self, core: &mut Core, id: FolioId) {
        if !self.enabled() {
            return self.classic.lru_add(core, id);
        }
        self.lru_gen_add_folio(core, id, false);
        core.trace_lru_insertion(id, Self::trace_lru(core, id));
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

    fn lru_add_split_folio(
        &mut self,
        core: &mut Core,
        parent: FolioId,
        old_nr: u64,
        pieces: &[FolioId],
    ) {
        if !self.enabled() {
            return self
                .classic
                .lru_add_split_folio(core, parent, old_nr, pieces);
        }
        // The pieces keep the parent's generation (and tier): the lists'
        // page counts and lrugen->nr_pages are unchanged in total.
        let f = core.folios.get(parent);
        let lv = &mut self.lrugen[f.memcg as usize];
        let list = if f.lru == LRU_UNEVICTABLE {
            &mut lv.unevictable
        } else {
            &mut lv.folios[f.lru as usize - 1][f.is_file_lru() as usize]
        };
        list.add_split_pieces(&mut core.folios, parent, old_nr, pieces);
    }

    fn folio_putback_lru(&mut self, core: &mut Core, id: FolioId) {
        if !self.enabled() {
            return self.classic.folio_putback_lru(core, id);
        }
        self.lru_gen_add_folio(core, id, false);
        core.trace_lru_insertion(id, Self::trace_lru(core, id));
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

    /// Before seed 004's rework, shrink_folio_list() keeps a mapped folio
    /// the walk or look-around marked referenced; the rework decides it in
    /// folio_check_references() instead.
    fn lru_gen_keep_promoted(&self, core: &Core, id: FolioId) -> bool {
        let f = core.folios.get(id);
        self.enabled() && !Self::rework(core) && f.test(pg::MAPPED) && f.test(pg::REFERENCED)
    }

    /// lru_gen_folio_check_references() after seed 004 (with the LULESH
    /// fix: a first young PTE only sets PG_referenced and keeps the folio);
    /// before it, the classic decision behind shrink_folio_list()'s
    /// "folio_update_gen() tried to promote" check (lru_gen_keep_promoted).
    /// Both test the PTE through the rmap walk, which runs
    /// lru_gen_look_around() on a young PTE.
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
        let (referenced_ptes, exec) = super::folio_referenced(core, id);
        if referenced_ptes > 0 {
            self.lru_gen_look_around(core, id);
        }
        if rework {
            if referenced_ptes == 0 {
                return FolioRef::Reclaim;
            }
            // v2 of the rework activated on any young PTE; the fix folded
            // into it (seed 004, LULESH) keeps the folio on its first one.
            let promote = Self::lru_gen_set_refs(core, id);
            return if promote || !core.cfg.variants.mglru_wsprot_fold_fix {
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

    fn workingset_eviction(&mut self, core: &mut Core, id: FolioId) -> Shadow {
        self.lru_gen_eviction(core, id)
    }

    fn workingset_refault(&mut self, core: &mut Core, id: FolioId, shadow: Shadow) {
        self.lru_gen_refault(core, id, shadow)
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
    /// lruvec_lru_size() reads, so count_shadow_nodes() of 7.1+ (which reads
    /// lruvec_lru_size(): `Variants::shadow_lru_size`) sees a memcg with no LRU pages
    /// and lets it keep shadow nodes only for its slab: shadow entries of a
    /// memcg under MGLRU are reclaimed early. 6.1-7.0 read the NR_LRU_BASE
    /// counters, which MGLRU keeps (docs/findings/shadow-nodes-mglru.md).
    fn lruvec_lru_pages(&self, memcg: MemcgId) -> u64 {
        if !self.enabled() {
            return self.classic.lruvec_lru_pages(memcg);
        }
        0
    }

    fn shadow_count_local(&mut self, core: &mut Core, memcg: MemcgId) -> Option<(u64, u64)> {
        if !self.enabled() {
            return self.classic.shadow_count_local(core, memcg);
        }
        None
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
            // Sizes follow the generation bits, lists where folios sit.
            let mut logical = [[0u64; 2]; MAX_NR_GENS as usize];
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
                        n += f.nr_pages();
                        logical[folio_lru_gen(f)][t] += f.nr_pages();
                    }
                    if n != l.len {
                        return Err(format!(
                            "memcg {m} gen {gen} type {t}: {n} pages listed, list length {}",
                            l.len
                        ));
                    }
                    let in_window =
                        (lv.min_seq[t]..=lv.max_seq).any(|s| lru_gen_from_seq(s) == gen);
                    if n > 0 && !in_window {
                        return Err(format!("memcg {m} gen {gen} type {t}: {n} folios outside [min_seq {}, max_seq {}]", lv.min_seq[t], lv.max_seq));
                    }
                    listed += n;
                }
            }
            for gen in 0..MAX_NR_GENS as usize {
                for t in 0..2 {
                    if logical[gen][t] != lv.nr_pages[gen][t] {
                        return Err(format!(
                            "memcg {m} gen {gen} type {t}: {} pages in the generation, nr_pages {}",
                            logical[gen][t], lv.nr_pages[gen][t]
                        ));
                    }
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
                listed += f.nr_pages();
            }
        }
        let mut flagged = 0u64;
        for f in &core.folios.f {
            if f.test(pg::FREE) {
                continue;
            }
            if f.test(pg::LRU) {
                flagged += f.nr_pages();
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
                "{flagged} pages flagged PG_lru but {listed} on generation lists"
            ));
        }
        Ok(())
    }

    fn debug_view(&self, core: &Core, memcg: MemcgId) -> Option<serde_json::Value> {
        self.lru_gen_debug_view(core, memcg)
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
    fn legacy_keeps_a_referenced_mapped_folio_before_counting_it_dirty() {
        // shrink_folio_list()'s "folio_update_gen() tried to promote this
        // page?" check comes before folio_check_dirty_writeback(): such a
        // folio is kept uncounted, so it cannot make a batch look all
        // unqueued dirty to the flusher-wakeup check.
        let run = |mapped: bool| {
            let mut c = core(false);
            let id = file_folio(&mut c);
            let f = c.folios.get_mut(id);
            f.set(pg::DIRTY | pg::REFERENCED);
            if mapped {
                f.set(pg::MAPPED);
            }
            let mut policy = LruGen::new();
            let mut sc = ScanControl::new(32, None, false);
            let mut list = vec![id];
            let reclaimed =
                super::super::shrink_folio_list(&mut c, &mut policy, &mut list, &mut sc);
            assert_eq!((reclaimed, list.len()), (0, 1), "kept");
            (sc.nr_dirty, sc.nr_unqueued_dirty, sc.nr_ref_keep)
        };
        assert_eq!(run(true), (0, 0, 0));
        assert_eq!(run(false), (1, 1, 0));
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
        assert_eq!(lv.get_tier_idx(1, true), 0);
        // Tier 1 refaulting less than tier 0: no protection from tier 1.
        lv.refaulted[1][1] = 50;
        assert!(lv.get_tier_idx(1, true) >= 1);
        // Anon refaulting far more than file: scan file.
        lv.refaulted[0][0] = 900;
        lv.evicted[0][0] = 1000;
        assert_eq!(lv.get_type_to_scan(60), LRU_GEN_FILE);
        assert_eq!(lv.get_type_to_scan(0), LRU_GEN_FILE);
        assert_eq!(lv.get_type_to_scan(200), LRU_GEN_ANON);
    }

    /// Before the type selection rework only the first tiers decide the
    /// type, and the selected type's tiers are measured against the other
    /// type's first tier (gains swappiness : MAX_SWAPPINESS - swappiness).
    #[test]
    fn legacy_type_selection_compares_first_tiers() {
        let mut lv = LruGenFolio::new(0);
        // Anon's first tier refaults 10%, file's 50%: anon is cheaper.
        lv.refaulted[0][0] = 100;
        lv.evicted[0][0] = 1000;
        lv.refaulted[1][0] = 500;
        lv.evicted[1][0] = 1000;
        // File's upper tier refaults a lot: all tiers summed (6.14) make
        // file costlier still, but the legacy choice sees only tier 0.
        lv.refaulted[1][2] = 5000;
        lv.evicted[1][2] = 5000;
        assert_eq!(
            lv.get_type_to_scan_legacy(60),
            (LRU_GEN_ANON, MAX_NR_TIERS - 1)
        );
        // File's first tier as cheap as anon's at swappiness 60 (gain 140
        // against 60): file.
        lv.refaulted[1][0] = 100;
        let (t, tier) = lv.get_type_to_scan_legacy(60);
        assert_eq!(t, LRU_GEN_FILE);
        // File's tier 2 (100%) refaults more than anon's tier 0 (10%):
        // protection starts there, tiers 0 and 1 are evictable.
        assert_eq!(tier, 1);
        // Gains 1:2 before the rework, 2:3 after: tier 1 at 1.5 times
        // tier 0's refault rate is protected only by the 2:3 gains.
        let mut lv = LruGenFolio::new(0);
        lv.refaulted[1][0] = 100;
        lv.evicted[1][0] = 1000;
        lv.refaulted[1][1] = 150;
        lv.evicted[1][1] = 1000;
        assert_eq!(lv.get_tier_idx(1, true), 0);
        assert!(lv.get_tier_idx(1, false) >= 1);
    }

    /// Before the aging feedback rework: with MIN_NR_GENS + 1 generations
    /// the aging waits for a skewed spread (youngest over half, or oldest
    /// under a quarter); with more it never ages; anon's min_seq leads.
    #[test]
    fn legacy_aging_feedback_waits_for_a_skewed_spread() {
        let mut lv = LruGenFolio::new(0);
        lv.max_seq = 2; // min_seq 0: MIN_NR_GENS + 1 generations
        let g = |seq: u64| lru_gen_from_seq(seq);
        lv.nr_pages[g(0)][1] = 100;
        lv.nr_pages[g(1)][1] = 100;
        lv.nr_pages[g(2)][1] = 100;
        assert_eq!(lv.should_run_aging(60, false), (false, 300));
        assert_eq!(lv.should_run_aging(60, true), (true, 300));
        // The youngest holds over half: age.
        lv.nr_pages[g(2)][1] = 400;
        assert!(lv.should_run_aging(60, false).0);
        // The oldest holds under a quarter: age.
        lv.nr_pages[g(2)][1] = 100;
        lv.nr_pages[g(0)][1] = 40;
        assert!(lv.should_run_aging(60, false).0);
        // MIN_NR_GENS + 2 generations: no aging either way.
        lv.max_seq = 3;
        assert!(!lv.should_run_aging(60, false).0);
        // Anon's min_seq leads when swappable: file down to MIN_NR_GENS
        // is not "have to" while anon has MIN_NR_GENS + 1 (its empty
        // oldest generation then makes the spread skewed: age, with the
        // evictable size); without swap file's is the count (have to, 0).
        lv.min_seq = [1, 2];
        assert_eq!(lv.should_run_aging(60, false), (true, 100));
        assert_eq!(lv.should_run_aging(0, false), (true, 0));
    }

    /// Seed 003's series: "better to age" waits for a priority below
    /// DEF_PRIORITY; "have to age" (MIN_NR_GENS left) does not.
    #[test]
    fn rework_ages_at_def_priority_only_when_it_has_to() {
        let mut lv = LruGenFolio::new(0);
        lv.max_seq = 3; // min_seq 0: MIN_NR_GENS + 2 generations
        assert!(!lv.should_run_aging_sc(60, DEF_PRIORITY));
        assert!(!lv.should_run_aging_sc(60, DEF_PRIORITY - 1));
        lv.max_seq = 2; // MIN_NR_GENS + 1: better to age
        assert!(lv.should_run_aging(60, true).0, "the legacy predicate ages");
        assert!(!lv.should_run_aging_sc(60, DEF_PRIORITY));
        assert!(lv.should_run_aging_sc(60, DEF_PRIORITY - 1));
        lv.min_seq = [1, 1]; // MIN_NR_GENS left: have to
        assert!(lv.should_run_aging_sc(60, DEF_PRIORITY));
        // Without swap only file counts: anon's old generations do not
        // make aging optional.
        lv.min_seq = [0, 1];
        assert!(lv.should_run_aging_sc(0, DEF_PRIORITY));
        assert!(!lv.should_run_aging_sc(60, DEF_PRIORITY));
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

    /// Before the aging feedback rework min_seq[anon] never passes
    /// min_seq[file], and file moves on only as far as anon does; after
    /// it each retires its own empty generations.
    #[test]
    fn legacy_min_seq_keeps_anon_behind_file() {
        let run = |feedback_rework: bool| {
            let mut c = core(true);
            let mut p = LruGen::new();
            p.lruvec_init(0);
            p.lrugen[0].max_seq = 3;
            let anon = file_folio(&mut c);
            c.folios.get_mut(anon).set(pg::SWAPBACKED);
            let file = file_folio(&mut c);
            for (id, gen) in [(anon, 1), (file, 3)] {
                p.lru_add(&mut c, id);
                p.move_folio(&mut c, id, gen, false);
            }
            p.check_invariants(&c).unwrap();
            assert!(p.try_to_inc_min_seq(0, 60, feedback_rework));
            p.lrugen[0].min_seq
        };
        // File's empty generations retire as far as MIN_NR_GENS allows.
        assert_eq!(run(true), [1, 2]);
        assert_eq!(run(false), [1, 1]);
    }

    /// lru_gen_test_recent(): within MAX_NR_GENS of max_seq (6.14), or
    /// evicted from the type's current min_seq (6.1-6.13).
    #[test]
    fn refault_recency_before_and_after_the_feedback_rework() {
        let mut c = core(true);
        let mut p = LruGen::new();
        p.lruvec_init(0);
        let lv = &mut p.lrugen[0];
        lv.max_seq = 5;
        lv.min_seq = [2, 3];
        let token = |seq: u64| seq << LRU_REFS_WIDTH;
        let recent = |p: &LruGen, c: &Core, type_: usize, seq: u64| {
            p.lru_gen_test_recent(c, 0, type_, token(seq))
        };
        for t in [LRU_GEN_ANON, LRU_GEN_FILE] {
            assert!(recent(&p, &c, t, 2) && recent(&p, &c, t, 3), "type {t}");
            assert!(!recent(&p, &c, t, 1), "type {t}");
        }
        c.cfg.variants.mglru_feedback_rework = false;
        assert!(recent(&p, &c, LRU_GEN_ANON, 2) && !recent(&p, &c, LRU_GEN_ANON, 3));
        assert!(recent(&p, &c, LRU_GEN_FILE, 3) && !recent(&p, &c, LRU_GEN_FILE, 2));
    }

    #[test]
    fn add_del_keep_sizes_and_window() {
        let mut c = core(true);
        let mut p = LruGen::new();
        p.lruvec_init(0);
        let ids: Vec<FolioId> = (0..10).map(|_| file_folio(&mut c)).collect();
        for &id in &ids {
            p.lru_add(&mut c, id);
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
