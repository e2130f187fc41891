//! FIFO and MRU (cache_ext's fifo.bpf.c and mru.bpf.c): one list, evicted
//! from its head; the two programs differ only in where folios join it
//! and which ones eviction passes over.
//!
//! * FIFO: new folios at the tail, accesses ignored, so the oldest go
//!   first, passing over folios not uptodate, off the LRU, dirty or under
//!   writeback as its iterate callback does.
//! * MRU: new and accessed folios at the head, so the most recently used
//!   go first, which suits repeated scans larger than the cache (file
//!   search). Within the first 200 nodes, folios not uptodate or off the
//!   LRU are skipped.

use crate::mm::cache_ext::{CacheExtCtx, CacheExtOps, EvictionCtx, IterAction, ListId};
use crate::mm::folio::{pg, FolioId};

/// Nodes at the head that MRU may skip as not evictable.
const MRU_SKIP_WINDOW: usize = 200;

/// Which of the two programs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    Fifo,
    Mru,
}

pub struct OneList {
    order: Order,
    list: Option<ListId>,
}

impl OneList {
    pub fn fifo() -> Self {
        OneList {
            order: Order::Fifo,
            list: None,
        }
    }

    pub fn mru() -> Self {
        OneList {
            order: Order::Mru,
            list: None,
        }
    }
}

impl CacheExtOps for OneList {
    fn name(&self) -> &str {
        match self.order {
            Order::Fifo => "fifo",
            Order::Mru => "mru",
        }
    }

    fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String> {
        self.list = Some(cx.list_create().map_err(|e| e.to_string())?);
        Ok(())
    }

    fn folio_added(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        if let Some(l) = self.list {
            // Only fails for a folio already listed, which cannot happen
            // for a fresh page-cache folio.
            let _ = match self.order {
                Order::Fifo => cx.list_add_tail(l, id),
                Order::Mru => cx.list_add(l, id),
            };
        }
    }

    fn folio_accessed(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        if let (Order::Mru, Some(l)) = (self.order, self.list) {
            let _ = cx.list_move(l, id, false);
        }
    }

    fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
        let Some(l) = self.list else { return };
        let order = self.order;
        let mut idx = 0;
        // The plain iterate: up to 32 candidates whatever the request,
        // each left in place.
        let _ = cx.list_iterate(l, ev, |_, f| {
            idx += 1;
            let pass_over = match order {
                Order::Fifo => !super::evictable(f),
                Order::Mru => idx <= MRU_SKIP_WINDOW && (!f.test(pg::UPTODATE) || !f.test(pg::LRU)),
            };
            if pass_over {
                IterAction::Continue
            } else {
                IterAction::Evict
            }
        });
    }
}
