//! Dirty page accounting and writeback (mm/page-writeback.c, fs/fs-writeback.c).
//! Buffered writes dirty folios; the flusher writes them back once they are
//! older than dirty_expire_centisecs or when dirty pages pass
//! dirty_background_ratio of dirtyable memory; a writer past dirty_ratio is
//! throttled in balance_dirty_pages() until writeback completes. Reclaim
//! that meets a folio under writeback marks it PG_reclaim; on completion it
//! is rotated to the inactive tail (folio_rotate_reclaimable()).

use std::collections::VecDeque;

use super::folio::{pg, FolioId};
use super::vmscan::ReclaimPolicy;
use super::vmstat::Item;
use super::{Core, Kernel, PAGE_SHIFT, PAGE_SIZE};

/// Pages the flusher writes per pass (MAX_WRITEBACK_PAGES).
const MAX_WRITEBACK_PAGES: usize = 1024;

#[derive(Clone, Debug, Default)]
pub struct WbState {
    /// NR_FILE_DIRTY
    pub nr_dirty: u64,
    /// NR_WRITEBACK
    pub nr_writeback: u64,
    /// Dirty folios in the order they were dirtied, with the time.
    pub dirty: VecDeque<(FolioId, u64)>,
    /// Folios under writeback and when their I/O completes, in order.
    pub inflight: VecDeque<(FolioId, u64)>,
    /// When the flusher's next periodic pass is due.
    pub next_periodic: u64,
    /// Reused by range writeback (no allocation once grown).
    pub scratch: Vec<FolioId>,
}

impl<P: ReclaimPolicy> Kernel<P> {
    /// folio_mark_dirty(). Returns whether the folio was clean before.
    pub fn folio_mark_dirty(&mut self, id: FolioId) -> bool {
        let f = self.core.folios.get_mut(id);
        if f.test(pg::DIRTY) {
            return false;
        }
        f.set(pg::DIRTY);
        let (m, nr) = (f.memcg, f.nr_pages());
        self.core.memcgs[m as usize].nr_dirty += nr;
        self.core.wb.nr_dirty += nr;
        let now = self.core.now;
        self.core.wb.dirty.push_back((id, now));
        true
    }

    /// Thresholds of domain_dirty_limits() over global dirtyable memory
    /// (free pages plus file pages).
    fn dirty_thresholds(&self) -> (u64, u64) {
        let file: u64 = self.core.memcgs.iter().map(|m| m.nr_file).sum();
        let dirtyable = self.core.folios.nr_free + file;
        let thresh = dirtyable * self.core.cfg.dirty_ratio as u64 / 100;
        let bg = dirtyable * self.core.cfg.dirty_background_ratio as u64 / 100;
        (bg, thresh)
    }

    /// __filemap_fdatawrite_range(): start writeback of the mapping's dirty
    /// folios with index in [start, end] (write_cache_pages over the
    /// dirty-tagged range, in index order). Contiguous dirty folios go out
    /// together, up to 64 a request (the plug's merging). WB_SYNC_ALL (`sync_all`) first waits
    /// for writeback already in flight in the range; WB_SYNC_NONE leaves
    /// such folios alone (they are not dirty, so the walk skips them).
    pub fn filemap_fdatawrite_range(&mut self, mapping: u32, start: u64, end: u64, sync_all: bool) {
        let a = &self.core.files[mapping as usize];
        if a.nrpages == 0 || self.core.wb.nr_dirty == 0 {
            return;
        }
        let last = end.min(a.nr_pages().saturating_sub(1));
        if sync_all {
            self.filemap_fdatawait_range(mapping, start, last);
        }
        // The kernel finds the range's dirty folios by the xarray's dirty
        // tag, so its cost follows the dirty folios, not the range: walk
        // whichever is shorter, the range's slots or the flusher's queue
        // (stale entries there are folios no longer dirty, skipped here).
        let mut ids = std::mem::take(&mut self.core.wb.scratch);
        ids.clear();
        let folios = &self.core.folios;
        let wanted = |id: FolioId| {
            let f = folios.get(id);
            f.mapping == mapping
                && (start..=last).contains(&(f.index as u64))
                && f.test(pg::DIRTY)
                && !f.test(pg::WRITEBACK)
        };
        if (self.core.wb.dirty.len() as u64) < last - start + 1 {
            ids.extend(
                self.core
                    .wb
                    .dirty
                    .iter()
                    .map(|&(id, _)| id)
                    .filter(|&id| wanted(id)),
            );
            ids.sort_unstable_by_key(|&id| folios.get(id).index);
            ids.dedup();
        } else {
            let a = &self.core.files[mapping as usize];
            ids.extend(
                (start..=last)
                    .filter_map(|idx| a.folio(idx))
                    .filter(|&id| wanted(id)),
            );
        }
        // Batches of at most 64 pages (a larger folio goes alone).
        let mut batch = [0 as FolioId; 64];
        let (mut n, mut pages) = (0, 0);
        let mut prev_end = u64::MAX;
        for &id in &ids {
            let f = self.core.folios.get(id);
            // Each folio once, as the dirty tag finds it: a large folio
            // fills several slots of the walk, and the queue can hold a
            // folio twice (dirtied again after a writeback) beside stale
            // ids of the same index. Started ones are clean by now.
            if !f.test(pg::DIRTY) || f.test(pg::WRITEBACK) {
                continue;
            }
            let (idx, nr) = (f.index as u64, f.nr_pages());
            if n > 0 && (pages + nr > batch.len() as u64 || prev_end != idx) {
                self.submit_wb_batch(&batch[..n]);
                (n, pages) = (0, 0);
            }
            // Its entry in the flusher's queue goes stale; the flusher
            // skips folios that are no longer dirty.
            self.core.folio_start_writeback(id);
            batch[n] = id;
            n += 1;
            pages += nr;
            prev_end = idx + nr;
        }
        self.core.wb.scratch = ids;
        self.submit_wb_batch(&batch[..n]);
    }

    /// __filemap_fdatawait_range(): wait for the writeback of the mapping's
    /// folios with index in [start, end] (completions are in submission
    /// order, so the last one of the range is the one to wait for).
    pub fn filemap_fdatawait_range(&mut self, mapping: u32, start: u64, end: u64) {
        if self.core.wb.nr_writeback == 0 {
            return;
        }
        let folios = &self.core.folios;
        let last = self
            .core
            .wb
            .inflight
            .iter()
            .filter(|&&(id, _)| {
                let f = folios.get(id);
                f.mapping == mapping && (start..=end).contains(&(f.index as u64))
            })
            .map(|&(_, done)| done)
            .max();
        if let Some(done) = last {
            self.core.wait_until(done);
            self.wb_complete();
        }
    }

    /// filemap_write_and_wait_range() (mm/filemap.c): write back the dirty
    /// folios of pages [start, end] inclusive with WB_SYNC_ALL, then wait
    /// for all writeback there, including writeback already in flight.
    pub fn filemap_write_and_wait_range(&mut self, mapping: u32, start: u64, end: u64) {
        if self.core.wb.nr_dirty == 0 && self.core.wb.nr_writeback == 0 {
            return;
        }
        self.filemap_fdatawrite_range(mapping, start, end, true);
        self.filemap_fdatawait_range(mapping, start, end);
    }

    /// file_write_and_wait_range() (fsync and fdatasync of the file's data,
    /// e.g. ext4_sync_file; the journal commit is not modelled): write the
    /// dirty folios of the byte range with WB_SYNC_ALL and wait for them.
    pub fn file_write_and_wait_range(&mut self, mapping: u32, lstart: u64, lend: u64) {
        if lend < lstart {
            return;
        }
        let (start, end) = (lstart >> PAGE_SHIFT, lend >> PAGE_SHIFT);
        self.filemap_fdatawrite_range(mapping, start, end, true);
        self.filemap_fdatawait_range(mapping, start, end);
    }

    /// sync_file_range(2) (fs/sync.c) over bytes [offset, endbyte]:
    /// WAIT_BEFORE waits for writeback already started, WRITE starts it
    /// (WB_SYNC_ALL when WAIT_BEFORE and WAIT_AFTER are given too),
    /// WAIT_AFTER waits for it.
    pub fn sync_file_range(
        &mut self,
        mapping: u32,
        offset: u64,
        endbyte: u64,
        wait_before: bool,
        write: bool,
        wait_after: bool,
    ) {
        let (start, end) = (offset >> PAGE_SHIFT, endbyte >> PAGE_SHIFT);
        if wait_before {
            self.filemap_fdatawait_range(mapping, start, end);
        }
        if write {
            self.filemap_fdatawrite_range(mapping, start, end, wait_before && wait_after);
        }
        if wait_after {
            self.filemap_fdatawait_range(mapping, start, end);
        }
    }

    fn submit_wb_batch(&mut self, ids: &[FolioId]) {
        if ids.is_empty() {
            return;
        }
        let pages: u64 = ids
            .iter()
            .map(|&id| self.core.folios.get(id).nr_pages())
            .sum();
        let done = self.core.dev.submit(self.core.now, pages * PAGE_SIZE, true);
        for &id in ids {
            self.core.wb.inflight.push_back((id, done));
        }
    }

    /// Completes writeback whose I/O finished by now (folio_end_writeback()).
    pub fn wb_complete(&mut self) {
        super::vmscan::end_writeback_until_now(&mut self.core, &mut self.policy);
    }

    /// The flusher (wb_workfn): expired inodes and background writeback,
    /// run after each write and when reclaim asked for it.
    pub fn wb_flush(&mut self) {
        self.wb_complete();
        let (bg, _) = self.dirty_thresholds();
        let expire = self.core.cfg.dirty_expire_centisecs * 10_000_000;
        let now = self.core.now;
        let wake = std::mem::take(&mut self.core.wb_wakeup_flusher);
        // The periodic kupdate-style pass (wb_check_old_data_flush) runs
        // every dirty_writeback_centisecs; expired inodes wait for it.
        let periodic = now >= self.core.wb.next_periodic;
        if periodic {
            let interval = (self.core.cfg.dirty_writeback_centisecs * 10_000_000).max(1);
            self.core.wb.next_periodic = now - now % interval + interval;
        }
        // Drop stale entries (see writeback_oldest) so the oldest is real.
        while let Some(&(id, _)) = self.core.wb.dirty.front() {
            if self.core.folios.get(id).test(pg::DIRTY) {
                break;
            }
            self.core.wb.dirty.pop_front();
        }
        while self.core.wb.nr_dirty > 0 {
            let oldest = self.core.wb.dirty.front().map(|&(_, t)| t).unwrap_or(now);
            let expired = periodic
                && self.core.cfg.dirty_writeback_centisecs > 0
                && now.saturating_sub(oldest) >= expire;
            if !(self.core.wb.nr_dirty > bg || expired || wake) {
                break;
            }
            self.core.writeback_oldest(MAX_WRITEBACK_PAGES);
            if wake && self.core.wb.nr_dirty <= bg && !expired {
                break;
            }
        }
    }

    /// balance_dirty_pages(): start background writeback and throttle the
    /// writer while dirty + writeback pages exceed the dirty threshold.
    pub fn balance_dirty_pages(&mut self) {
        self.wb_flush();
        let (_, thresh) = self.dirty_thresholds();
        while self.core.wb.nr_dirty + self.core.wb.nr_writeback > thresh {
            match self.core.wb.inflight.front() {
                Some(&(_, done)) => {
                    self.core.wait_until(done);
                    self.wb_complete();
                }
                None => {
                    self.core.writeback_oldest(MAX_WRITEBACK_PAGES);
                }
            }
        }
    }

    /// Reclaim found dirty folios it cannot write itself: start writeback
    /// of every dirty folio (wakeup_flusher_threads) and wait for it.
    /// Returns whether any writeback completed.
    pub fn reclaim_writeback_wait(&mut self) -> bool {
        self.wakeup_flusher_threads();
        let before = self.core.wb.nr_writeback;
        if let Some(&(_, done)) = self.core.wb.inflight.back() {
            self.core.wait_until(done);
        }
        self.wb_complete();
        self.core.wb.nr_writeback < before
    }

    /// wakeup_flusher_threads(WB_REASON_VMSCAN) from reclaim that does not
    /// wait: the flusher starts writeback of every dirty folio (the work
    /// item's start_all, nr_pages = all dirty) and reclaim goes on.
    pub fn wakeup_flusher_threads(&mut self) {
        self.core.wakeup_flusher_threads_all();
    }

    /// fsync / the end of a job with end_fsync: write everything back and wait.
    pub fn sync_all(&mut self) {
        while self.core.wb.nr_dirty > 0 {
            self.core.writeback_oldest(MAX_WRITEBACK_PAGES);
        }
        if let Some(&(_, done)) = self.core.wb.inflight.back() {
            self.core.wait_until(done);
        }
        self.wb_complete();
    }
}

/// The flusher's side that needs no LRU policy: reclaim starts it from
/// inside its LRU walk.
impl Core {
    /// Writes back the oldest dirty folios, up to `nr` pages, as one
    /// batch (wb_writeback()).
    pub fn writeback_oldest(&mut self, nr: usize) {
        let mut ids = Vec::new();
        let mut pages = 0;
        while pages < nr as u64 {
            let Some((id, _)) = self.wb.dirty.pop_front() else {
                break;
            };
            // Entries go stale when a folio was written back by range
            // (filemap_write_and_wait_range) or truncated while dirty; a
            // stale entry's folio may since be an anonymous one, whose
            // PG_dirty the flusher never counted and never writes.
            let f = self.folios.get(id);
            if !f.test(pg::DIRTY) || f.test(pg::SWAPBACKED) {
                continue;
            }
            self.folio_start_writeback(id);
            pages += self.folios.get(id).nr_pages();
            ids.push(id);
        }
        if ids.is_empty() {
            return;
        }
        let done = self.dev.submit(self.now, pages * PAGE_SIZE, true);
        for id in ids {
            self.wb.inflight.push_back((id, done));
        }
    }

    /// folio_clear_dirty_for_io() + folio_start_writeback(): the folio
    /// moves from dirty to writeback, counted in pgpgout.
    pub fn folio_start_writeback(&mut self, id: FolioId) {
        let f = self.folios.get_mut(id);
        f.clear(pg::DIRTY);
        f.set(pg::WRITEBACK);
        let (m, nr) = (f.memcg, f.nr_pages());
        self.memcgs[m as usize].nr_dirty -= nr;
        self.memcgs[m as usize].nr_writeback += nr;
        self.wb.nr_dirty -= nr;
        self.wb.nr_writeback += nr;
        self.count(m, Item::PGPGOUT, nr * (PAGE_SIZE / 1024));
    }

    /// wakeup_flusher_threads(WB_REASON_VMSCAN): the flusher's work item
    /// (start_all, nr_pages = every dirty page) starts writeback of every
    /// dirty folio, oldest first.
    pub fn wakeup_flusher_threads_all(&mut self) {
        self.wb_wakeup_flusher = false;
        while self.wb.nr_dirty > 0 {
            self.writeback_oldest(MAX_WRITEBACK_PAGES);
        }
    }
}
