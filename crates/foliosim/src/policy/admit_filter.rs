//! An admission filter (cache_ext's admit_folio hook, with FIFO eviction):
//! reads by a task named `comm=NAME`, or asking for more than `max=SIZE`
//! bytes, bypass the page cache, so a backup or scan job does not flush
//! the cache of the others. Without keys nothing is bypassed.

use super::fifo_mru::OneList;
use crate::mm::cache_ext::{AdmissionCtx, CacheExtCtx, CacheExtOps, EvictionCtx};
use crate::mm::folio::FolioId;
use crate::mm::PAGE_SIZE;

pub struct AdmitFilter {
    comm: Option<String>,
    max_bytes: Option<u64>,
    evict: OneList,
}

impl AdmitFilter {
    pub fn new(comm: Option<String>, max_bytes: Option<u64>) -> Self {
        AdmitFilter {
            comm,
            max_bytes,
            evict: OneList::fifo(),
        }
    }
}

impl CacheExtOps for AdmitFilter {
    fn name(&self) -> &str {
        "admit-filter"
    }
    fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String> {
        self.evict.init(cx)
    }
    fn folio_added(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        self.evict.folio_added(cx, id)
    }
    fn admit_folio(&mut self, cx: &mut CacheExtCtx, req: &AdmissionCtx) -> bool {
        self.comm.as_deref().is_some_and(|c| c == cx.comm())
            || self.max_bytes.is_some_and(|m| req.nr_pages * PAGE_SIZE > m)
    }
    fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
        self.evict.evict_folios(cx, ev)
    }
}
