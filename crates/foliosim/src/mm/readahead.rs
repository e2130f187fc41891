//! Readahead (mm/readahead.c, Linux 6.18): the on-demand window with its
//! ramp-up, PG_readahead marks for asynchronous readahead, random-read
//! detection from the cache's history, and forced readahead for
//! FMODE_RANDOM. page_cache_ra_order() reads into large folios on a
//! mapping that supports them (ra->order ramps by 2 per async window),
//! and falls back to do_page_cache_ra()'s order-0 folios otherwise.

use super::filemap::OpenFile;
use super::folio::{pg, FolioId};
use super::vmscan::ReclaimPolicy;
use super::vmstat::Item;
use super::{Kernel, PAGE_SHIFT};

/// struct file_ra_state.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct FileRaState {
    pub start: u64,
    pub size: u64,
    pub async_size: u64,
    pub ra_pages: u64,
    pub order: u32,
    pub mmap_miss: u32,
    /// mmap_miss as each variant followed in `Core::mmap_miss_alts` would
    /// hold it (not the kernel's: the model's own bookkeeping).
    #[serde(skip)]
    pub mmap_miss_alt: [u32; super::filemap::MMAP_MISS_MAX_ALTS],
    /// Byte position after the previous read (ra->prev_pos); u64::MAX for
    /// a fresh file (the kernel starts at -1).
    pub prev_pos: u64,
}

impl FileRaState {
    /// file_ra_state_init(): ra_pages from the device's read_ahead_kb.
    pub fn new(read_ahead_kb: u64) -> Self {
        FileRaState {
            ra_pages: read_ahead_kb / 4,
            prev_pos: u64::MAX,
            ..Default::default()
        }
    }
}

/// get_init_ra_size(): the first window, rounded up to a power of two and
/// scaled by 4 or 2 while small.
pub fn get_init_ra_size(size: u64, max: u64) -> u64 {
    let newsize = size.next_power_of_two();
    if newsize <= max / 32 {
        newsize * 4
    } else if newsize <= max / 4 {
        newsize * 2
    } else {
        max
    }
}

/// get_next_ra_size(): ramp up the previous window.
pub fn get_next_ra_size(cur: u64, max: u64) -> u64 {
    if cur < max / 16 {
        4 * cur
    } else if cur <= max / 2 {
        2 * cur
    } else {
        max
    }
}

impl<P: ReclaimPolicy> Kernel<P> {
    /// page_cache_ra_unbounded(): add folios for [index, index+nr) that are
    /// not cached, mark the one at nr - lookahead with PG_readahead, and
    /// submit the reads, one request per contiguous run (read_pages()).
    /// Stops at the first allocation that fails (__GFP_NORETRY).
    pub fn page_cache_ra_unbounded(
        &mut self,
        file: &OpenFile,
        index: u64,
        nr_to_read: u64,
        lookahead: u64,
    ) {
        let mapping = file.mapping;
        let memcg = file.memcg;
        if let Some((t, cx)) = self.core.tracer() {
            t.ra_unbounded(cx, memcg, mapping, index, nr_to_read, lookahead);
        }
        let mark = nr_to_read.wrapping_sub(lookahead);
        // The batch being built: [start, end) of folios added, read as one
        // request (read_pages()).
        let mut run: Option<(u64, u64)> = None;
        let mut added = 0u64;
        for i in 0..nr_to_read {
            let idx = index + i;
            if self.core.files[mapping as usize].folio(idx).is_some() {
                // An already cached folio ends the batch; it is not marked.
                if let Some((s, e)) = run.take() {
                    self.submit_read(mapping, s, e, memcg);
                }
                continue;
            }
            let Some(id) = self.filemap_add_folio(mapping, idx, memcg, false) else {
                break;
            };
            let f = self.core.folios.get_mut(id);
            f.set(pg::RA_UNUSED);
            if i == mark {
                f.set(pg::READAHEAD);
            }
            added += 1;
            run = Some((run.map_or(idx, |(s, _)| s), idx + 1));
        }
        // A failed allocation stops the loop; what was added is still read.
        if let Some((s, e)) = run {
            self.submit_read(mapping, s, e, memcg);
        }
        self.core.count(memcg, Item::RA_PAGES, added);
    }

    /// do_page_cache_ra(): clamp to EOF (no PG_readahead mark at EOF).
    pub fn do_page_cache_ra(
        &mut self,
        file: &OpenFile,
        index: u64,
        mut nr_to_read: u64,
        mut lookahead: u64,
    ) {
        let isize = self.core.files[file.mapping as usize].size;
        if isize == 0 {
            return;
        }
        let end_index = (isize - 1) >> PAGE_SHIFT;
        if index > end_index {
            return;
        }
        if nr_to_read > end_index - index {
            nr_to_read = end_index - index + 1;
            lookahead = 0;
        }
        self.page_cache_ra_unbounded(file, index, nr_to_read, lookahead);
    }

    /// force_page_cache_ra(): read exactly what was asked, in 2 MiB chunks.
    pub fn force_page_cache_ra(&mut self, file: &OpenFile, mut index: u64, nr_to_read: u64) {
        let max_pages = file.ra.ra_pages.max(1);
        let mut left = nr_to_read.min(max_pages);
        while left > 0 {
            let chunk = left.min(512);
            self.do_page_cache_ra(file, index, chunk, 0);
            index += chunk;
            left -= chunk;
        }
    }

    /// page_cache_ra_order(): read the window the caller set up in
    /// `file.ra` from `start` into folios of ra->order (capped by the
    /// mapping's largest order and the window), smaller where the index
    /// is not aligned to it or the folio would cross the window's or the
    /// file's end. The folio holding the mark index gets PG_readahead,
    /// unless the window reaches EOF. A cached folio in the way or an
    /// allocation failure ends the loop, and do_page_cache_ra() reads the
    /// rest in order-0 folios. A mapping without large folios goes there
    /// directly.
    pub fn page_cache_ra_order(&mut self, file: &mut OpenFile, start: u64) {
        let mapping = file.mapping;
        if let Some((t, cx)) = self.core.tracer() {
            t.ra_order(cx, file.memcg, mapping, start, &file.ra);
        }
        let a = &self.core.files[mapping as usize];
        if !a.large_folio_support() {
            file.ra.order = 0;
            let (size, async_size) = (file.ra.size, file.ra.async_size);
            self.do_page_cache_ra(file, start, size, async_size);
            return;
        }
        let isize = a.size;
        if isize == 0 || file.ra.size == 0 {
            return;
        }
        let max_order = a.max_order;
        let mut limit = (isize - 1) >> PAGE_SHIFT;
        let (size, async_size) = (file.ra.size, file.ra.async_size);
        let mark = if limit > start + size - 1 {
            limit = start + size - 1;
            start + size - async_size
        } else {
            // The window reaches EOF: no marker.
            u64::MAX
        };
        let new_order = file.ra.order.min(max_order).min(size.ilog2());
        file.ra.order = new_order;
        let memcg = file.memcg;
        let mut index = start;
        let mut err = false;
        let mut added = 0u64;
        while index <= limit {
            let mut order = new_order;
            // Align with smaller folios if needed.
            if index & ((1 << order) - 1) != 0 {
                order = index.trailing_zeros();
            }
            // Don't allocate past the window's end or EOF.
            while order > 0 && index + (1 << order) - 1 > limit {
                order -= 1;
            }
            let nr = 1u64 << order;
            // ra_alloc_folio(): filemap_add_folio() fails with -EEXIST
            // over a cached folio.
            if self.core.files[mapping as usize].range_has_folio(index, nr) {
                err = true;
                break;
            }
            let Some(id) = self.filemap_add_folio_order(mapping, index, order, memcg, false) else {
                err = true;
                break;
            };
            let f = self.core.folios.get_mut(id);
            f.set(pg::RA_UNUSED);
            if mark != u64::MAX && index == mark & !(nr - 1) {
                f.set(pg::READAHEAD);
            }
            added += nr;
            index += nr;
        }
        // read_pages(): the folios added, one request.
        if added > 0 {
            self.submit_read(mapping, start, start + added, memcg);
            self.core.count(memcg, Item::RA_PAGES, added);
        }
        if !err {
            return;
        }
        // Cached pages left gaps: the order-0 path reads the rest.
        let done = index - start;
        if size > done {
            self.do_page_cache_ra(file, index, size - done, async_size);
        }
    }

    /// page_cache_sync_ra(): a cache miss at `index` for `req_count` pages.
    pub fn page_cache_sync_ra(&mut self, file: &mut OpenFile, index: u64, mut req_count: u64) {
        if let Some((t, cx)) = self.core.tracer() {
            let ev = crate::trace::Ev::SyncRa;
            t.ra_op(ev, cx, file.memcg, file.mapping, index, req_count, &file.ra);
        }
        let mut forced = file.fmode_random;
        if file.ra.ra_pages == 0 {
            req_count = 1;
            forced = true;
        }
        self.core.count_vm(Item::RA_SYNC, 1);
        if forced {
            self.force_page_cache_ra(file, index, req_count);
            return;
        }
        let max_pages = file.ra.ra_pages;
        let prev_index = if file.ra.prev_pos == u64::MAX {
            u64::MAX
        } else {
            file.ra.prev_pos >> PAGE_SHIFT
        };
        // Start of file, oversized read, or sequential miss (index - prev
        // of 0 or 1, computed unsigned as the kernel does).
        if index == 0 || req_count > max_pages || index.wrapping_sub(prev_index) <= 1 {
            file.ra.start = index;
            file.ra.size = get_init_ra_size(req_count, max_pages);
            file.ra.async_size = if file.ra.size > req_count {
                file.ra.size - req_count
            } else {
                file.ra.size >> 1
            };
        } else {
            let miss =
                self.core.files[file.mapping as usize].page_cache_prev_miss(index - 1, max_pages);
            let mut contig = index.wrapping_sub(miss).wrapping_sub(1);
            if contig <= req_count {
                // Standalone small random read: read as is, keep the state.
                self.do_page_cache_ra(file, index, req_count, 0);
                return;
            }
            if miss == u64::MAX {
                contig *= 2;
            }
            file.ra.start = index;
            file.ra.size = (contig + req_count).min(max_pages);
            file.ra.async_size = 1;
        }
        // readit: a synchronous window starts again from order-0 folios
        // (since 6.16 ra->order is the state async windows ramp; a stale
        // order would read a random miss's window into large folios that
        // meet cached pages sooner). Traced on this host: the sync
        // windows' page_cache_ra_order events show order=0.
        file.ra.order = 0;
        let start = file.ra.start;
        self.page_cache_ra_order(file, start);
    }

    /// page_cache_async_ra(): a PG_readahead folio was reached; push the
    /// window forward and ramp it up.
    pub fn page_cache_async_ra(
        &mut self,
        file: &mut OpenFile,
        folio: FolioId,
        index: u64,
        req_count: u64,
    ) {
        if file.ra.ra_pages == 0 {
            return;
        }
        let f = self.core.folios.get_mut(folio);
        if f.test(pg::WRITEBACK) {
            return;
        }
        if let Some((t, cx)) = self.core.tracer() {
            let ev = crate::trace::Ev::AsyncRa;
            t.ra_op(ev, cx, file.memcg, file.mapping, index, req_count, &file.ra);
        }
        let f = self.core.folios.get_mut(folio);
        f.clear(pg::READAHEAD);
        self.core.count_vm(Item::RA_ASYNC, 1);
        let max_pages = file.ra.ra_pages;
        let nr = self.core.folios.get(folio).nr_pages();
        let ra = &mut file.ra;
        // The mark is on the folio holding it: round down to the folio.
        let expected = (ra.start + ra.size - ra.async_size) & !(nr - 1);
        if index == expected {
            ra.start += ra.size;
            ra.size = ra.size.max(get_next_ra_size(ra.size, max_pages));
        } else {
            // A marked folio without matching state (interleaved streams):
            // rebuild the window from the cache.
            let start =
                self.core.files[file.mapping as usize].page_cache_next_miss(index + 1, max_pages);
            if start == 0 || start - index > max_pages {
                return;
            }
            let ra = &mut file.ra;
            ra.start = start;
            ra.size = start - index + req_count;
            ra.size = get_next_ra_size(ra.size, max_pages);
        }
        let ra = &mut file.ra;
        // Order ramps by 2 per async hit; with order-0 folios the alignment
        // of the window's end to the order is the only effect left.
        ra.order += 2;
        let align = 1u64 << ra.order.min(max_pages.trailing_zeros());
        let end = ra.start + ra.size;
        let aligned_end = end / align * align;
        if aligned_end > ra.start {
            ra.size -= end - aligned_end;
        }
        ra.async_size = ra.size;
        let start = ra.start;
        self.page_cache_ra_order(file, start);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_sizes_follow_the_kernel_ramp() {
        // 128 KiB read_ahead_kb = 32 pages.
        assert_eq!(get_init_ra_size(1, 32), 4);
        assert_eq!(get_init_ra_size(4, 32), 8);
        assert_eq!(get_init_ra_size(16, 32), 32);
        assert_eq!(get_next_ra_size(4, 32), 8);
        assert_eq!(get_next_ra_size(1, 32), 4);
        assert_eq!(get_next_ra_size(16, 32), 32);
        assert_eq!(get_next_ra_size(32, 32), 32);
    }
}
