//! Swap space (mm/swapfile.c, mm/swap_state.c): slots for anonymous folios
//! written out by reclaim, with shadow entries for refault detection.
//! The LRU entry points of mm/swap.c (folio_add_lru, folio_mark_accessed)
//! belong to each reclaim policy: see `vmscan::ReclaimPolicy`.

use super::SwapKind;

#[derive(Clone, Debug)]
pub struct SwapSpace {
    pub kind: SwapKind,
    pub total: u64,
    pub used: u64,
}

impl SwapSpace {
    pub fn new(kind: SwapKind, pages: u64) -> Self {
        let total = if kind == SwapKind::None { 0 } else { pages };
        SwapSpace {
            kind,
            total,
            used: 0,
        }
    }

    /// get_nr_swap_pages(): free swap slots.
    #[inline]
    pub fn nr_free(&self) -> u64 {
        self.total - self.used
    }

    /// folio_alloc_swap(): one slot, if any is free.
    #[inline]
    pub fn alloc_slot(&mut self) -> bool {
        if self.used < self.total {
            self.used += 1;
            true
        } else {
            false
        }
    }

    #[inline]
    pub fn free_slot(&mut self) {
        self.used -= 1;
    }
}
