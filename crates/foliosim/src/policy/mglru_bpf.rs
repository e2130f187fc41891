//! cache_ext's MGLRU port (mglru.bpf.c), "mglru-bpf": four generation
//! lists; new folios at the head of their generation's list; eviction
//! walks the oldest generation from the head, moving protected tiers and
//! busy folios (locked, dirty, under writeback) to the next generation's
//! tail and proposing the rest, with a second walk when the first falls
//! short. The bookkeeping is in mglru_bpf_model.

use crate::mm::cache_ext::{CacheExtCtx, CacheExtOps, EvictionCtx, IterAction, ListId};
use crate::mm::folio::{pg, Folio, FolioId};
use crate::policy::mglru_bpf_model::{MglruBpf as Model, Pass, Verdict, MAX_NR_GENS};

#[derive(Default)]
pub struct MglruBpf {
    lists: Vec<ListId>,
    model: Option<Model>,
}

fn ghost_key(f: &Folio) -> (u64, u64) {
    (f.mapping as u64, f.index as u64)
}

impl MglruBpf {
    fn walk(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx, p: Pass) {
        let (list, next) = (self.lists[p.curr_gen], self.lists[p.next_gen]);
        let Some(m) = self.model.as_mut() else { return };
        let _ = cx.list_iterate(list, ev, |id, f| {
            let busy = f.test(pg::LOCKED) || f.test(pg::WRITEBACK) || f.test(pg::DIRTY);
            match m.verdict(p, id as u64, busy) {
                Verdict::Promote => IterAction::MoveTail(next),
                // evict_mode TAIL of the same list, as mglru.bpf.c asks.
                Verdict::Evict => IterAction::EvictTail(list),
            }
        });
    }
}

impl CacheExtOps for MglruBpf {
    fn name(&self) -> &str {
        "mglru-bpf"
    }

    fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String> {
        self.lists.clear();
        for _ in 0..MAX_NR_GENS {
            self.lists
                .push(cx.list_create().map_err(|e| e.to_string())?);
        }
        self.model = Some(Model::new(cx.nr_folio_slots()));
        Ok(())
    }

    fn folio_added(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        let Some(m) = self.model.as_mut() else { return };
        let f = cx.folio(id);
        if f.test(pg::UNEVICTABLE) {
            return;
        }
        let reclaim_dirty = f.test(pg::RECLAIM) && (f.test(pg::DIRTY) || f.test(pg::WRITEBACK));
        let gen = m.folio_added(id as u64, ghost_key(&f), reclaim_dirty);
        let _ = cx.list_add(self.lists[gen], id);
    }

    fn folio_accessed(&mut self, _cx: &mut CacheExtCtx, id: FolioId) {
        if let Some(m) = self.model.as_mut() {
            m.folio_accessed(id as u64);
        }
    }

    fn folio_evicted(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        let key = ghost_key(&cx.folio(id));
        if let Some(m) = self.model.as_mut() {
            m.folio_evicted(id as u64, key);
        }
    }

    fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
        let Some(m) = self.model.as_mut() else { return };
        let first = m.begin_eviction();
        self.walk(cx, ev, first);
        if !ev.full() && !ev.aborted() {
            let second = self.model.as_ref().map(|m| m.second_pass(first));
            if let Some(p) = second {
                self.walk(cx, ev, p);
            }
        }
        if let Some(m) = self.model.as_mut() {
            m.end_eviction(ev.request_nr_folios, ev.nr_proposed() as u64);
        }
    }
}
