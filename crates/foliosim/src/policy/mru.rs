//! MRU (cache_ext's mru.bpf.c): one list, new and accessed folios at the
//! head, eviction from the head: the most recently used go first, which
//! suits repeated scans larger than the cache (file search). Within the
//! first 200 nodes, folios not uptodate or off the LRU are skipped.

use crate::mm::cache_ext::{CacheExtCtx, CacheExtOps, EvictionCtx, IterAction, ListId};
use crate::mm::folio::{pg, FolioId};

/// Nodes at the head that may be skipped as not evictable.
const MRU_SKIP_WINDOW: usize = 200;

#[derive(Default)]
pub struct Mru {
    list: Option<ListId>,
}

impl CacheExtOps for Mru {
    fn name(&self) -> &str {
        "mru"
    }

    fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String> {
        self.list = Some(cx.list_create().map_err(|e| e.to_string())?);
        Ok(())
    }

    fn folio_added(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        if let Some(l) = self.list {
            let _ = cx.list_add(l, id);
        }
    }

    fn folio_accessed(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        if let Some(l) = self.list {
            let _ = cx.list_move(l, id, false);
        }
    }

    fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
        let Some(l) = self.list else { return };
        let mut idx = 0;
        let _ = cx.list_iterate(l, ev, |_, f| {
            idx += 1;
            if idx <= MRU_SKIP_WINDOW && (!f.test(pg::UPTODATE) || !f.test(pg::LRU)) {
                IterAction::Continue
            } else {
                IterAction::Evict
            }
        });
    }
}
