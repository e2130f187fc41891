//! S3-FIFO (cache_ext's s3fifo.bpf.c; Yang et al., SOSP 2023): a small
//! FIFO for new folios, a main FIFO, and a ghost set of recently evicted
//! (file, index) keys. A folio whose key is a ghost enters main; others
//! enter small. Accesses count to 3. Eviction takes from small while it
//! holds at least a fifteenth of the cache or main is no more than twice
//! small (folios accessed more than once move to main's tail, the rest
//! are proposed), otherwise from main in up to four passes, each pass
//! decrementing counts and proposing folios whose count falls below the
//! pass number.
//!
//! The ghost set is cache_ext's BPF LRU hash approximated without
//! allocation: a direct-mapped table of (key, sequence) slots, twice the
//! cache's size, where a key is a ghost while it is among the last `cache`
//! insertions and not overwritten by a colliding key.

use crate::mm::cache_ext::{CacheExtCtx, CacheExtOps, EvictionCtx, IterAction, ListId};
use crate::mm::folio::{Folio, FolioId};

#[derive(Default)]
pub struct S3Fifo {
    small: Option<ListId>,
    main: Option<ListId>,
    /// Per folio: access count (at most 3; eviction passes take it below 0).
    freq: Vec<i8>,
    in_main: Vec<bool>,
    small_size: i64,
    main_size: i64,
    ghost: Vec<(u64, u64)>,
    ghost_seq: u64,
}

#[inline]
fn ghost_key(f: &Folio) -> u64 {
    ((f.mapping as u64) << 32) | f.index as u64
}

impl S3Fifo {
    #[inline]
    fn slot(&self, key: u64) -> usize {
        // Fibonacci hashing: deterministic and well spread.
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) as usize & (self.ghost.len() - 1)
    }

    /// The ghost window: the cache's current size (its valid folios).
    fn ghost_insert(&mut self, key: u64) {
        self.ghost_seq += 1;
        let s = self.slot(key);
        self.ghost[s] = (key, self.ghost_seq);
    }

    /// Tests and removes `key` from the ghost set.
    fn ghost_take(&mut self, key: u64, window: u64) -> bool {
        let s = self.slot(key);
        let (k, seq) = self.ghost[s];
        if seq != 0 && k == key && self.ghost_seq - seq < window {
            self.ghost[s] = (0, 0);
            return true;
        }
        false
    }

    fn evict_small(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
        let (Some(small), Some(main)) = (self.small, self.main) else {
            return;
        };
        let (freq, in_main) = (&self.freq, &mut self.in_main);
        let mut moved = 0i64;
        // The extended iterate with continue_list = main: every folio the
        // callback continues moves to main's tail (and counts as moved),
        // those it cannot evict now too, which stay marked as small (the
        // policy sets in_main only for folios accessed more than once).
        let _ = cx.list_iterate(small, ev, |id, f| {
            if !super::evictable(f) {
                moved += 1;
                return IterAction::MoveTail(main);
            }
            if freq[id as usize] > 1 {
                in_main[id as usize] = true;
                moved += 1;
                return IterAction::MoveTail(main);
            }
            IterAction::EvictTail(small)
        });
        self.small_size = (self.small_size - moved).max(0);
        self.main_size += moved;
    }

    fn evict_main(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
        let Some(main) = self.main else { return };
        for pass in 0..4i8 {
            if ev.full() {
                return;
            }
            let freq = &mut self.freq;
            // continue and evict both to main's tail; the count is
            // decremented with no floor, as the callback's
            // __sync_sub_and_fetch() (only accesses cap it, at 3).
            let _ = cx.list_iterate(main, ev, |id, f| {
                if !super::evictable(f) {
                    return IterAction::MoveTail(main);
                }
                let c = &mut freq[id as usize];
                *c = c.saturating_sub(1);
                if *c < pass {
                    IterAction::EvictTail(main)
                } else {
                    IterAction::MoveTail(main)
                }
            });
        }
    }
}

impl CacheExtOps for S3Fifo {
    fn name(&self) -> &str {
        "s3fifo"
    }

    fn init(&mut self, cx: &mut CacheExtCtx) -> Result<(), String> {
        self.main = Some(cx.list_create().map_err(|e| e.to_string())?);
        self.small = Some(cx.list_create().map_err(|e| e.to_string())?);
        let n = cx.nr_folio_slots();
        self.freq = vec![0; n];
        self.in_main = vec![false; n];
        self.ghost = vec![(0, 0); (2 * n).next_power_of_two().max(2)];
        Ok(())
    }

    fn folio_added(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        let (Some(small), Some(main)) = (self.small, self.main) else {
            return;
        };
        let key = ghost_key(&cx.folio(id));
        let window = cx.nr_valid().max(1);
        let to_main = self.ghost_take(key, window);
        let list = if to_main { main } else { small };
        if cx.list_add_tail(list, id).is_ok() {
            self.freq[id as usize] = 0;
            self.in_main[id as usize] = to_main;
            if to_main {
                self.main_size += 1;
            } else {
                self.small_size += 1;
            }
        }
    }

    fn folio_accessed(&mut self, _cx: &mut CacheExtCtx, id: FolioId) {
        let c = &mut self.freq[id as usize];
        *c = (*c + 1).min(3);
    }

    fn folio_evicted(&mut self, cx: &mut CacheExtCtx, id: FolioId) {
        let key = ghost_key(&cx.folio(id));
        self.ghost_insert(key);
        if self.in_main[id as usize] {
            self.main_size -= 1;
        } else {
            self.small_size -= 1;
        }
        self.in_main[id as usize] = false;
    }

    fn evict_folios(&mut self, cx: &mut CacheExtCtx, ev: &mut EvictionCtx) {
        let cache = cx.nr_valid() as i64;
        if self.small_size >= cache / 15 || self.main_size <= 2 * self.small_size {
            self.evict_small(cx, ev);
        } else {
            self.evict_main(cx, ev);
        }
    }
}
