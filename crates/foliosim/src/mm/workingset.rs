//! Workingset detection (mm/workingset.c): shadow entries packed at
//! eviction, refault distance against the lruvec's nonresident age, and the
//! activate / restore decisions of the classic LRU. MGLRU's
//! lru_gen_eviction / lru_gen_refault live with the MGLRU policy and use the
//! same shadow packing.

use super::folio::{pg, FolioId};
use super::memcontrol::MemcgId;
use super::vmstat::Item;
use super::Core;

/// EVICTION_BITS left after the memcg id and the workingset bit (the model
/// has no node id and one bit less than 64 for the slot marker).
pub const EVICTION_BITS: u32 = 46;
pub const EVICTION_MASK: u64 = (1 << EVICTION_BITS) - 1;
const MEMCG_SHIFT: u32 = EVICTION_BITS;
/// 15 bits of memcg id, then PG_workingset; bit 62 marks a swap entry and
/// bit 63 a shadow in the page-cache slot.
const WORKINGSET_SHIFT: u32 = EVICTION_BITS + 15;

/// A shadow entry: what pack_shadow() stores in the page cache slot of an
/// evicted folio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shadow(pub u64);

/// pack_shadow(): memcg id, eviction timestamp and PG_workingset.
#[inline]
pub fn pack_shadow(memcg: MemcgId, eviction: u64, workingset: bool) -> Shadow {
    Shadow(
        (eviction & EVICTION_MASK)
            | ((memcg as u64) << MEMCG_SHIFT)
            | ((workingset as u64) << WORKINGSET_SHIFT),
    )
}

/// unpack_shadow(): (memcg id, eviction, workingset).
#[inline]
pub fn unpack_shadow(s: Shadow) -> (MemcgId, u64, bool) {
    (
        ((s.0 >> MEMCG_SHIFT) & 0x7fff) as MemcgId,
        s.0 & EVICTION_MASK,
        (s.0 >> WORKINGSET_SHIFT) & 1 == 1,
    )
}

/// WORKINGSET_{REFAULT,ACTIVATE,RESTORE}_{FILE,ANON} for a folio type.
#[inline]
pub fn workingset_items(file: bool) -> (Item, Item, Item) {
    if file {
        (
            Item::WORKINGSET_REFAULT_FILE,
            Item::WORKINGSET_ACTIVATE_FILE,
            Item::WORKINGSET_RESTORE_FILE,
        )
    } else {
        (
            Item::WORKINGSET_REFAULT_ANON,
            Item::WORKINGSET_ACTIVATE_ANON,
            Item::WORKINGSET_RESTORE_ANON,
        )
    }
}

/// LRU sizes of an lruvec, in pages, as lruvec_page_state(NR_*) reads them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LruSizes {
    pub inactive_anon: u64,
    pub active_anon: u64,
    pub inactive_file: u64,
    pub active_file: u64,
    pub unevictable: u64,
}

impl Core {
    /// workingset_age_nonresident(): advance the lruvec's clock.
    #[inline]
    pub fn workingset_age_nonresident(&mut self, memcg: MemcgId, nr: u64) {
        self.memcgs[memcg as usize].nonresident_age += nr;
        if memcg != 0 {
            // Ancestors age too (the root here).
            self.memcgs[0].nonresident_age += nr;
        }
    }

    /// workingset_eviction() for the classic LRU: stamp the shadow with the
    /// lruvec's age, then age it by the evicted folio.
    pub fn workingset_eviction_classic(&mut self, id: FolioId) -> Shadow {
        let f = self.folios.get(id);
        let memcg = f.memcg;
        let ws = f.test(pg::WORKINGSET);
        let eviction = self.memcgs[memcg as usize].nonresident_age;
        self.workingset_age_nonresident(memcg, 1);
        pack_shadow(memcg, eviction, ws)
    }

    /// workingset_refault() for the classic LRU, on the folio being added
    /// at the shadow's slot: count the refault and, when the refault
    /// distance fits in the workingset (workingset_test_recent()), activate
    /// it, and restore PG_workingset if it was set at eviction. Returns
    /// whether it was restored (the caller notes the refault's cost).
    /// `sizes` are the eviction lruvec's LRU sizes.
    pub fn workingset_refault_classic(
        &mut self,
        id: FolioId,
        shadow: Shadow,
        sizes: LruSizes,
    ) -> bool {
        let (evict_memcg, eviction, workingset) = unpack_shadow(shadow);
        let f = self.folios.get(id);
        let file = f.is_file_lru();
        let memcg = f.memcg;
        let (refault_item, activate_item, restore_item) = workingset_items(file);
        self.count(memcg, refault_item, 1);
        // The memcg may be gone or differ; refault distance is measured on
        // the eviction lruvec.
        let Some(em) = self.memcgs.get(evict_memcg as usize) else {
            return false;
        };
        let refault = em.nonresident_age;
        let distance = refault.wrapping_sub(eviction) & EVICTION_MASK;
        let mut ws_size = sizes.active_file;
        if !file {
            ws_size += sizes.inactive_file;
        }
        if self.swap.nr_free() > 0 {
            ws_size += sizes.active_anon;
            if file {
                ws_size += sizes.inactive_anon;
            }
        }
        if distance > ws_size {
            return false;
        }
        self.folios.get_mut(id).set(pg::ACTIVE);
        self.workingset_age_nonresident(memcg, 1);
        self.count(memcg, activate_item, 1);
        if workingset {
            self.folios.get_mut(id).set(pg::WORKINGSET);
            self.count(memcg, restore_item, 1);
        }
        workingset
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn shadow_roundtrip() {
        let s = pack_shadow(7, 123_456_789, true);
        assert_eq!(unpack_shadow(s), (7, 123_456_789, true));
        let s = pack_shadow(0, EVICTION_MASK + 5, false);
        assert_eq!(unpack_shadow(s), (0, 4, false));
        assert_eq!(s.0 >> 62, 0, "bits 62 and 63 are the slot's markers");
    }
}
