//! FIFO (cache_ext's fifo.bpf.c): one list; new folios at the tail,
//! accesses ignored, eviction from the head, oldest first, passing over
//! folios not uptodate, off the LRU, dirty or under writeback as its
//! iterate callback does.

use crate::mm::cache_ext::{CacheExtCtx, CacheExtOps, EvictionCtx, IterAction, ListId};
use crate::mm::folio::FolioId;

#[derive(Default)]
pub struct Fifo {
    list: Option<ListId>,
}

impl CacheExtOps for Fifo {
    fn name(&self) -> &str {
        "fifo"
    }

    fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String> {
        self.list = Some(cx.list_create().map_err(|e| e.to_string())?);
        Ok(())
    }

    fn folio_added(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        if let Some(l) = self.list {
            // Only fails for a folio already listed, which cannot happen
            // for a fresh page-cache folio.
            let _ = cx.list_add_tail(l, id);
        }
    }

    fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
        let Some(l) = self.list else { return };
        // fifo.bpf.c's plain iterate: up to 32 candidates whatever the
        // request, each left in place.
        let _ = cx.list_iterate(l, ev, |_, f| {
            if super::evictable(f) {
                IterAction::Evict
            } else {
                IterAction::Continue
            }
        });
    }
}
