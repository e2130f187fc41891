//! LFU by sampling (cache_ext's sampling.bpf.c): one list in insertion
//! order and an access count per folio; eviction samples
//! `sample` folios per candidate from the head and takes the least
//! frequently used of each group. Folios not uptodate, off the LRU, dirty
//! or under writeback score u64::MAX (never preferred).

use crate::mm::cache_ext::{CacheExtCtx, CacheExtOps, EvictionCtx, ListId};
use crate::mm::folio::{Folio, FolioId};

pub struct Lfu {
    list: Option<ListId>,
    /// Accesses per folio (index FolioId).
    freq: Vec<u32>,
    sample: usize,
}

impl Lfu {
    /// `sample`: folios sampled per candidate (cache_ext uses 20).
    pub fn new(sample: usize) -> Self {
        Lfu {
            list: None,
            freq: Vec::new(),
            sample: sample.max(1),
        }
    }
}

/// The score of sampling policies: u64::MAX for folios reclaim cannot
/// take now, `base` otherwise.
#[inline]
pub(crate) fn sample_score(f: &Folio, base: u64) -> u64 {
    if super::evictable(f) {
        base
    } else {
        u64::MAX
    }
}

impl CacheExtOps for Lfu {
    fn name(&self) -> &str {
        "lfu"
    }

    fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String> {
        self.list = Some(cx.list_create().map_err(|e| e.to_string())?);
        self.freq = vec![0; cx.nr_folio_slots()];
        Ok(())
    }

    fn folio_added(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        if let Some(l) = self.list {
            if cx.list_add_tail(l, id).is_ok() {
                self.freq[id as usize] = 1;
            }
        }
    }

    fn folio_accessed(&mut self, _cx: &mut CacheExtCtx, id: FolioId) {
        let f = &mut self.freq[id as usize];
        *f = f.saturating_add(1);
    }

    fn folio_evicted(&mut self, _cx: &mut CacheExtCtx, id: FolioId) {
        self.freq[id as usize] = 0;
    }

    fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
        let Some(l) = self.list else { return };
        let freq = &self.freq;
        let _ = cx.list_sample(l, ev, self.sample, |id, f| {
            sample_score(f, freq[id as usize] as u64)
        });
    }
}
