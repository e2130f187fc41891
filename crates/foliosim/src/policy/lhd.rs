//! LHD (cache_ext's lhd.bpf.c): one list, folios added at its tail;
//! eviction samples groups of 16 from the head and proposes the lowest
//! hit density of each (lhd_model has the model). Folios that are not
//! uptodate or not on the LRU, dirty or under writeback score highest, so
//! they are proposed last.

use crate::mm::cache_ext::{CacheExtCtx, CacheExtOps, EvictionCtx, ListId};
use crate::mm::folio::FolioId;
use crate::policy::lhd_model::{Lhd as Model, REQS_PER_RECONFIG};

/// The policy's sampling_options.sample_size.
pub const SAMPLE_SIZE: usize = 16;

pub struct Lhd {
    list: Option<ListId>,
    model: Option<Model>,
    reqs_per_reconfig: u64,
}

impl Lhd {
    /// `reqs_per_reconfig`: events between two hit-density updates (the
    /// policy's REQS_PER_RECONFIG, 2^20).
    pub fn new(reqs_per_reconfig: u64) -> Self {
        Lhd {
            list: None,
            model: None,
            reqs_per_reconfig,
        }
    }
}

impl Default for Lhd {
    fn default() -> Self {
        Lhd::new(REQS_PER_RECONFIG)
    }
}

impl CacheExtOps for Lhd {
    fn name(&self) -> &str {
        "lhd"
    }

    fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String> {
        self.list = Some(cx.list_create().map_err(|e| e.to_string())?);
        self.model = Some(Model::new(cx.nr_folio_slots(), self.reqs_per_reconfig));
        Ok(())
    }

    fn folio_added(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        let (Some(l), Some(m)) = (self.list, self.model.as_mut()) else {
            return;
        };
        // A folio the list refuses gets no metadata, as in the policy.
        if cx.list_add_tail(l, id).is_ok() {
            m.folio_added(id as u64);
        }
    }

    fn folio_accessed(&mut self, _cx: &mut CacheExtCtx, id: FolioId) {
        if let Some(m) = self.model.as_mut() {
            m.folio_accessed(id as u64);
        }
    }

    fn folio_evicted(&mut self, _cx: &mut CacheExtCtx, id: FolioId) {
        if let Some(m) = self.model.as_mut() {
            m.folio_evicted(id as u64);
        }
    }

    fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
        let (Some(l), Some(m)) = (self.list, self.model.as_mut()) else {
            return;
        };
        let _ = cx.list_sample(l, ev, SAMPLE_SIZE, |id, f| {
            if !super::evictable(f) {
                return i64::MAX as u64;
            }
            m.score(id as u64).unwrap_or(i64::MAX as u64)
        });
    }
}
