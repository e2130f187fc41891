//! The LRU-add batch (mm/swap.c): folio_add_lru() and the per-CPU
//! folio_batch that lru_add() drains onto the LRU lists.

use super::folio::{pg, FolioId};
use super::vmscan::ReclaimPolicy;
use super::{Core, Kernel};

impl<P: ReclaimPolicy> Kernel<P> {
    /// folio_add_lru(): the policy's hook, then the current CPU's lru_add
    /// batch, moved to the LRU when it fills (FOLIO_BATCH_SIZE) or at once
    /// for a large folio; reclaim drains its CPU's batch first.
    #[inline]
    pub fn folio_add_lru(&mut self, id: FolioId) {
        self.policy.folio_add_lru_prepare(&mut self.core, id);
        if self.core.lru_add_batch(id) {
            self.policy.lru_add_drain(&mut self.core);
        }
    }

    /// lru_add_drain() of `cpu` (a task leaving its CPU: the model gives
    /// the next task a CPU of its own, so nothing else would drain it).
    pub fn lru_add_drain_cpu(&mut self, cpu: u32) {
        self.policy.lru_add_drain_cpu(&mut self.core, cpu);
    }
}

/// FOLIO_BATCH_SIZE (include/linux/folio_batch.h).
pub const FOLIO_BATCH_SIZE: usize = 31;

/// One CPU's lru_add folio_batch: folios that folio_add_lru() took and
/// lru_add() has not yet put on an LRU list.
#[derive(Clone, Copy, Debug, Default)]
pub struct LruAddBatch {
    ids: [FolioId; FOLIO_BATCH_SIZE],
    nr: u8,
}

impl LruAddBatch {
    pub fn folios(&self) -> &[FolioId] {
        &self.ids[..self.nr as usize]
    }
}

impl Core {
    /// folio_batch_add() to the current CPU's lru_add batch. Returns true
    /// when the batch must be moved to the LRU now: it is full, or the
    /// folio is large (folio_may_be_lru_cached() is false for them).
    #[inline]
    pub fn lru_add_batch(&mut self, id: FolioId) -> bool {
        let cpu = self.cpu as usize;
        if self.lru_add.len() <= cpu {
            self.lru_add.resize(cpu + 1, LruAddBatch::default());
        }
        let f = self.folios.get_mut(id);
        f.set(pg::LRU_CACHED);
        let large = f.nr_pages() > 1;
        let b = &mut self.lru_add[cpu];
        b.ids[b.nr as usize] = id;
        b.nr += 1;
        b.nr as usize == FOLIO_BATCH_SIZE || large
    }

    /// Empties `cpu`'s batch, returning what it held (flags cleared).
    pub fn lru_add_take(&mut self, cpu: u32) -> LruAddBatch {
        let Some(b) = self.lru_add.get_mut(cpu as usize) else {
            return LruAddBatch::default();
        };
        let out = *b;
        b.nr = 0;
        for &id in out.folios() {
            self.folios.get_mut(id).clear(pg::LRU_CACHED);
        }
        out
    }

    /// Whether `id` sits in `cpu`'s lru_add batch
    /// (__lru_cache_activate_folio() searches only the local one).
    pub fn lru_add_batched_on(&self, cpu: u32, id: FolioId) -> bool {
        self.lru_add
            .get(cpu as usize)
            .is_some_and(|b| b.folios().contains(&id))
    }

    /// A batched folio freed before its drain (truncated, unmapped): the
    /// kernel's batch holds a reference until lru_add() drops it; the
    /// model frees at once, so the entry goes.
    #[cold]
    pub fn lru_add_forget(&mut self, id: FolioId) {
        self.folios.get_mut(id).clear(pg::LRU_CACHED);
        for b in self.lru_add.iter_mut() {
            if let Some(i) = b.folios().iter().position(|&x| x == id) {
                let n = b.nr as usize;
                b.ids.copy_within(i + 1..n, i);
                b.nr -= 1;
                return;
            }
        }
    }
}
