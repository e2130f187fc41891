//! Seed 002's mmap_miss variants followed alongside one run (the
//! reproduction's speed device): filemap's mmap_miss accounting under each
//! variant, kept beside the run's own count so the matrix skips the runs
//! that would repeat this one.

use super::MMAP_LOTSAMISS;
use crate::mm::readahead::FileRaState;

/// How many of seed 002's mmap_miss variants one run can follow.
pub const MMAP_MISS_MAX_ALTS: usize = 3;

/// Seed 002's mmap_miss variants (p1, p2) followed alongside a run made
/// with other settings of the same two patches. The patches change only
/// how `file_ra_state.mmap_miss` is counted, and nothing but
/// do_sync_mmap_readahead()'s `mmap_miss > MMAP_LOTSAMISS` test reads it,
/// so a variant's run is this run, step for step, for as long as that
/// test comes out the same with the variant's count. Each file keeps the
/// variant's count beside its own (`FileRaState::mmap_miss_alt`); the
/// first fault where the test differs marks the variant diverged. A
/// variant that never diverged would have produced this run's results
/// exactly: seed 002's matrix runs it no more.
#[derive(Clone, Copy, Debug, Default)]
pub struct MmapMissAlts {
    pub nr: usize,
    /// (p1, p2) of each variant followed.
    pub variants: [(bool, bool); MMAP_MISS_MAX_ALTS],
    /// Simulated time (ns) of the first fault at which the variant's
    /// read-around decision differs; None while it has not.
    pub diverged: [Option<u64>; MMAP_MISS_MAX_ALTS],
    /// Bit i: variant i diverged since the driver last took these
    /// (`take_fresh`), so that its own run can start at once.
    pub fresh: u8,
}

impl MmapMissAlts {
    /// Follows these (p1, p2) variants; at most MMAP_MISS_MAX_ALTS.
    pub fn follow(variants: &[(bool, bool)]) -> Self {
        assert!(variants.len() <= MMAP_MISS_MAX_ALTS);
        let mut a = MmapMissAlts {
            nr: variants.len(),
            ..Default::default()
        };
        a.variants[..variants.len()].copy_from_slice(variants);
        a
    }

    /// filemap_map_pages()'s credit under each followed variant: `all` is
    /// the unpatched count (every mapped non-workingset folio), `fault`
    /// patch 1's (the faulting one only).
    pub(super) fn map_pages(&self, ra: &mut FileRaState, all: u32, fault: u32, tried: bool) {
        for i in 0..self.nr {
            let (p1, p2) = self.variants[i];
            if p2 && tried {
                continue;
            }
            let hits = if p1 { fault } else { all };
            ra.mmap_miss_alt[i] = ra.mmap_miss_alt[i].saturating_sub(hits);
        }
    }

    /// do_sync_mmap_readahead()'s count and test under each variant, against
    /// the run's own decision `stop` (read-around skipped).
    pub(super) fn sync_mmap(&mut self, ra: &mut FileRaState, stop: bool, now: u64) {
        for i in 0..self.nr {
            let m = &mut ra.mmap_miss_alt[i];
            if *m < MMAP_LOTSAMISS * 10 {
                *m += 1;
            }
            if (*m > MMAP_LOTSAMISS) != stop && self.diverged[i].is_none() {
                self.diverged[i] = Some(now);
                self.fresh |= 1 << i;
            }
        }
    }

    /// The variants that diverged since the last call, as a bit mask.
    pub fn take_fresh(&mut self) -> u8 {
        std::mem::take(&mut self.fresh)
    }

    /// do_async_mmap_readahead()'s hit, the same under every variant.
    pub(super) fn async_mmap(&self, ra: &mut FileRaState) {
        for m in &mut ra.mmap_miss_alt[..self.nr] {
            *m = m.saturating_sub(1);
        }
    }
}
