//! Taking pages out of the page cache on purpose (mm/truncate.c):
//! truncation (ftruncate, hole punching, the last unlink) and the
//! invalidation a direct write does. Unlike eviction, none of these leave
//! shadow entries, and they remove the ones they meet: a page read back
//! after truncation or invalidation is not a refault.

use super::filemap::Slot;
use super::folio::{pg, FolioId};
use super::vmscan::ReclaimPolicy;
use super::{Kernel, PAGE_SHIFT, PAGE_SIZE};

impl<P: ReclaimPolicy> Kernel<P> {
    /// folio_wait_writeback(): block until the folio's writeback I/O ends.
    pub fn folio_wait_writeback(&mut self, id: FolioId) {
        if !self.core.folios.get(id).test(pg::WRITEBACK) {
            return;
        }
        let done = self
            .core
            .wb
            .inflight
            .iter()
            .find(|&&(f, _)| f == id)
            .map(|&(_, d)| d);
        if let Some(d) = done {
            self.core.wait_until(d);
        }
        // Completions are in submission order, so everything up to this
        // folio's completes too.
        self.wb_complete();
    }

    /// Removes a folio from its mapping with no shadow entry
    /// (truncate_inode_folio / invalidate_complete_folio2 ->
    /// __filemap_remove_folio(mapping, folio, NULL)): PTEs are zapped, a
    /// dirty folio is cleaned without being written
    /// (folio_cancel_dirty), the frame is freed and uncharged.
    fn remove_folio_no_shadow(&mut self, mapping: u32, id: FolioId) {
        let idx = self.core.folios.get(id).index as u64;
        // A read still in flight holds the folio lock: wait for it.
        self.wait_uptodate(mapping, idx);
        self.folio_wait_writeback(id);
        self.core.rmap_unmap_folio(id);
        let f = self.core.folios.get_mut(id);
        let (memcg, nr) = (f.memcg, f.nr_pages());
        let (mapped, dirty) = (f.test(pg::MAPPED), f.test(pg::DIRTY));
        f.clear(pg::MAPPED | pg::PTE_YOUNG | pg::DIRTY);
        if mapped {
            self.core.memcgs[memcg as usize].nr_mapped -= nr;
        }
        if dirty {
            // Its entry in the flusher's queue goes stale; writeback skips
            // folios that are no longer dirty.
            self.core.memcgs[memcg as usize].nr_dirty -= nr;
            self.core.wb.nr_dirty -= nr;
        }
        self.policy.folio_del_lru(&mut self.core, id);
        self.core.trace_delete_from_page_cache(id);
        self.core.page_cache_delete(mapping, idx, nr, None, memcg);
        self.core.memcgs[memcg as usize].nr_file -= nr;
        self.core.free_folio(id);
        self.core.cpu(self.core.cost.scan_folio);
    }

    /// The cache holds nothing at all for the mapping: every range walk is
    /// skipped (as the kernel's mapping_empty() checks are).
    fn mapping_empty(&self, mapping: u32) -> bool {
        let a = &self.core.files[mapping as usize];
        a.nrpages == 0 && a.nrshadows == 0
    }

    /// truncate_inode_pages_range(): drop the whole pages of bytes
    /// [lstart, lend] (lend inclusive) and every shadow entry there.
    /// Partial pages at either end stay cached (the kernel zeroes the
    /// truncated part, truncate_inode_partial_folio). Dirty pages are
    /// discarded, not written. A large folio reaching out of the range is
    /// split (try_folio_split) and its pieces inside dropped; one that
    /// cannot be split stays whole, as in the kernel.
    pub fn truncate_inode_pages_range(&mut self, mapping: u32, lstart: u64, lend: u64) {
        if self.core.files[mapping as usize].shmem {
            return self.shmem_undo_range(mapping, lstart, lend);
        }
        if self.mapping_empty(mapping) || lend < lstart {
            // (lend == u64::MAX means "to the end", as the kernel's -1.)
            return;
        }
        let nr = self.core.files[mapping as usize].nr_pages();
        let start = lstart.div_ceil(PAGE_SIZE);
        // The page holding lend is whole only if lend is its last byte.
        let end = (lend.saturating_add(1) >> PAGE_SHIFT).min(nr);
        let mut next = start;
        while let Some(idx) = self.core.files[mapping as usize].next_populated(next, end) {
            next = idx + 1;
            match self.core.files[mapping as usize].slot(idx) {
                Slot::Folio(id) => {
                    let f = self.core.folios.get(id);
                    let (fi, nr) = (f.index as u64, f.nr_pages());
                    next = fi + nr;
                    if fi >= start && fi + nr <= end {
                        self.remove_folio_no_shadow(mapping, id);
                        continue;
                    }
                    // truncate_inode_partial_folio(): a large folio with
                    // pages in the range is split at the range's first
                    // page, and the piece reaching past its end at the
                    // end; the walk then drops the pieces inside.
                    let (s, e) = (fi.max(start), (fi + nr).min(end));
                    if s < e {
                        self.folio_wait_writeback(id);
                        if self.try_folio_split(id, s) {
                            if e < fi + nr {
                                if let Some(id2) = self.core.files[mapping as usize].folio(e) {
                                    self.try_folio_split(id2, e);
                                }
                            }
                            next = s;
                        }
                    }
                }
                Slot::Shadow(_) => {
                    self.core.files[mapping as usize].clear_shadow(idx);
                    self.core.workingset_update_node(mapping, idx, 0);
                }
                Slot::Empty | Slot::Swap(_) | Slot::Zero => {}
            }
        }
    }

    /// truncate_inode_pages_final(): the inode is being evicted (the last
    /// link and the last open file are gone): everything goes.
    pub fn truncate_inode_pages_final(&mut self, mapping: u32) {
        self.truncate_inode_pages_range(mapping, 0, u64::MAX);
    }

    /// truncate_pagecache(): after i_size moved down to `newsize`, drop the
    /// cache past it (the page straddling newsize stays, zeroed past EOF).
    pub fn truncate_pagecache(&mut self, mapping: u32, newsize: u64) {
        // The kernel unmaps, truncates, then unmaps again for racing
        // faults; with no concurrent faults one pass does both.
        self.truncate_inode_pages_range(mapping, newsize, u64::MAX);
    }

    /// truncate_setsize(): set i_size, and drop the cache past it when it
    /// shrinks. The model's mappings keep their slots: a file grows back
    /// at most to the size it was created with.
    pub fn truncate_setsize(&mut self, mapping: u32, newsize: u64) {
        let a = &mut self.core.files[mapping as usize];
        let old = a.size;
        a.size = newsize.min(a.nr_pages() * PAGE_SIZE);
        if newsize < old {
            self.truncate_pagecache(mapping, newsize);
        }
    }

    /// truncate_pagecache_range(): hole punching's cache side for bytes
    /// [lstart, lend] inclusive.
    pub fn truncate_pagecache_range(&mut self, mapping: u32, lstart: u64, lend: u64) {
        self.truncate_inode_pages_range(mapping, lstart, lend);
    }

    /// invalidate_inode_pages2_range(): drop the folios of pages
    /// [start, end] inclusive, unmapping mapped ones and waiting for
    /// writeback; a folio dirty again is left (-EBUSY; ext4 has no
    /// ->launder_folio). Shadow entries in the range are cleared
    /// (clear_shadow_entries). Returns false when a folio was left.
    pub fn invalidate_inode_pages2_range(&mut self, mapping: u32, start: u64, end: u64) -> bool {
        if self.mapping_empty(mapping) {
            return true;
        }
        let nr = self.core.files[mapping as usize].nr_pages();
        let mut ok = true;
        let end = end.min(nr.saturating_sub(1)).saturating_add(1);
        let mut next = start;
        while let Some(idx) = self.core.files[mapping as usize].next_populated(next, end) {
            next = idx + 1;
            match self.core.files[mapping as usize].slot(idx) {
                Slot::Folio(id) => {
                    // A large folio is dropped whole once any of it is in
                    // the range (folios are invalidated, not split).
                    let f = self.core.folios.get(id);
                    next = f.index as u64 + f.nr_pages();
                    self.folio_wait_writeback(id);
                    if self.core.folios.get(id).test(pg::DIRTY) {
                        ok = false;
                        continue;
                    }
                    self.remove_folio_no_shadow(mapping, id);
                }
                Slot::Shadow(_) => {
                    self.core.files[mapping as usize].clear_shadow(idx);
                    self.core.workingset_update_node(mapping, idx, 0);
                }
                Slot::Empty | Slot::Swap(_) | Slot::Zero => {}
            }
        }
        ok
    }
}

/// fallocate(2) modes (include/uapi/linux/falloc.h).
pub const FALLOC_FL_KEEP_SIZE: u32 = 0x01;
pub const FALLOC_FL_PUNCH_HOLE: u32 = 0x02;

impl<P: ReclaimPolicy> Kernel<P> {
    /// vfs_fallocate() (fs/open.c) into ext4_fallocate(), as far as the
    /// page cache sees it. Allocation (mode 0 or KEEP_SIZE) only changes
    /// extents, and i_size when it extends past EOF without KEEP_SIZE.
    /// PUNCH_HOLE (which the VFS only accepts with KEEP_SIZE) drops the
    /// cached pages of the hole, dirty ones unwritten: since Linux 6.15
    /// ext4 no longer writes the range back first outside data=journal
    /// (ext4_truncate_page_cache_block_range). Returns the errno name on
    /// a mode the VFS rejects.
    pub fn vfs_fallocate(
        &mut self,
        mapping: u32,
        mode: u32,
        offset: u64,
        len: u64,
    ) -> Result<(), &'static str> {
        self.core.cpu(self.core.cost.fallocate);
        if len == 0 {
            return Err("EINVAL");
        }
        if mode & FALLOC_FL_PUNCH_HOLE != 0 {
            if mode & FALLOC_FL_KEEP_SIZE == 0 {
                return Err("EOPNOTSUPP");
            }
            self.truncate_pagecache_range(mapping, offset, offset + len - 1);
            return Ok(());
        }
        if mode & FALLOC_FL_KEEP_SIZE == 0 {
            let a = &mut self.core.files[mapping as usize];
            let cap = a.nr_pages() * PAGE_SIZE;
            a.size = a.size.max((offset + len).min(cap));
        }
        Ok(())
    }
}
