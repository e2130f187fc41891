//! tmpfs files (mm/shmem.c, Linux 6.18). A shmem folio is SWAPBACKED: it
//! lives on the anon LRU while sitting in its file's page cache, is charged
//! to the memcg that first touches it and counts in NR_SHMEM (memory.stat
//! `shmem`) and the file pages. Nothing is read from or written back to a
//! disk: a hole reads as zeroes without allocating (SGP_READ), a write or
//! a fault allocates a zeroed folio; reclaim hands a shmem folio to
//! shmem_writeout(), which gives it a swap slot, puts the swap entry in the
//! file's slot and writes it to swap like an anon folio (its shadow is
//! kept in the swap cache's slot); shmem_swapin_folio() brings it back.
//!
//! The file is read, written and mapped through the same entry points as a
//! disk file (filemap_read, filemap_write, mmap_access), which dispatch here
//! on `AddressSpace::shmem`. Simplifications: no fault-around on tmpfs
//! mappings, no huge pages, no tmpfs size limit; the mapping's PTEs are
//! the file-mapping model's (no MM_SHMEMPAGES for an mm).

use super::filemap::{OpenFile, Slot};
use super::folio::{pg, FolioId};
use super::memcontrol::MemcgId;
use super::swapfile::SwapOffset;
use super::vmscan::ReclaimPolicy;
use super::vmstat::Item;
use super::{Core, Kernel, PAGE_SHIFT, PAGE_SIZE};

impl Core {
    /// shmem_file_setup(): a tmpfs file of `size_bytes`, empty.
    pub fn shmem_file_setup(&mut self, size_bytes: u64) -> u32 {
        let id = self.add_file(size_bytes);
        self.files[id as usize].shmem = true;
        id
    }

    /// Whether a folio sits in a tmpfs file's page cache (as opposed to a
    /// swap-cache-only folio or an anonymous one).
    #[inline]
    pub fn folio_in_shmem_cache(&self, id: FolioId) -> bool {
        let f = self.folios.get(id);
        let a = &self.files[f.mapping as usize];
        a.shmem && a.folio(f.index as u64) == Some(id)
    }

    /// NR_SHMEM of a memcg (memory.stat `shmem`), in pages; the machine's
    /// for the root.
    pub fn memcg_nr_shmem(&self, memcg: MemcgId) -> u64 {
        if memcg == 0 {
            self.memcg_swap.iter().map(|s| s.nr_shmem).sum()
        } else {
            self.memcg_swap[memcg as usize].nr_shmem
        }
    }

    /// shmem_writeout(): the folio (already given a slot by
    /// folio_alloc_swap) leaves the file's page cache for the swap cache;
    /// the file's slot holds the swap entry (swap_shmem_alloc takes its
    /// reference); shmem_delete_from_page_cache's counters follow.
    pub fn shmem_writeout(&mut self, id: FolioId) {
        let f = *self.folios.get(id);
        let off = self.swap.folio_swap(id);
        self.files[f.mapping as usize].set_swap_entry(f.index as u64, off);
        self.swap.swap_map[off as usize] += 1;
        let m = f.memcg as usize;
        self.memcgs[m].nr_file -= 1;
        self.memcg_swap[m].nr_shmem -= 1;
        // From here on it is a swap-cache folio like an anon one.
        self.memcgs[m].nr_anon += 1;
    }
}

impl<P: ReclaimPolicy> Kernel<P> {
    /// shmem_get_folio_gfp(): the folio at `index`, swapped in if its slot
    /// holds a swap entry; for a hole, a new zeroed folio when `alloc`
    /// (SGP_WRITE / SGP_CACHE), none for SGP_READ. `fault` counts a
    /// swap-in as a major fault. Err on OOM.
    pub fn shmem_get_folio(
        &mut self,
        mapping: u32,
        index: u64,
        memcg: MemcgId,
        alloc: bool,
        fault: bool,
    ) -> Result<Option<FolioId>, ()> {
        match self.core.files[mapping as usize].slot(index) {
            Slot::Folio(id) => Ok(Some(id)),
            Slot::Swap(off) => self
                .shmem_swapin_folio(mapping, index, off, memcg, fault)
                .map(Some)
                .ok_or(()),
            Slot::Empty | Slot::Shadow(_) | Slot::Zero if !alloc => Ok(None),
            Slot::Empty | Slot::Shadow(_) | Slot::Zero => self
                .shmem_alloc_and_add_folio(mapping, index, memcg)
                .map(Some)
                .ok_or(()),
        }
    }

    /// shmem_alloc_and_add_folio(): charged to the toucher's memcg, zeroed,
    /// in the page cache, on the anon LRU. Dirty from the start: it has no
    /// copy anywhere else.
    fn shmem_alloc_and_add_folio(
        &mut self,
        mapping: u32,
        index: u64,
        memcg: MemcgId,
    ) -> Option<FolioId> {
        let id = self.alloc_folio(memcg, true)?;
        self.core.cpu(self.core.cost.copy_page);
        {
            let f = self.core.folios.get_mut(id);
            f.mapping = mapping;
            f.index = index as u32;
            f.flags = pg::SWAPBACKED | pg::UPTODATE | pg::DIRTY;
        }
        if let Slot::Shadow(_) = self.core.files[mapping as usize].slot(index) {
            self.core.files[mapping as usize].clear_shadow(index);
        }
        self.core.files[mapping as usize].set_folio_pub(index, id);
        self.core.workingset_update_node(mapping, index, memcg);
        self.core.memcgs[memcg as usize].nr_file += 1;
        self.core.memcg_swap[memcg as usize].nr_shmem += 1;
        self.policy.folio_add_lru(&mut self.core, id);
        Some(id)
    }

    /// shmem_swapin_folio(): from the swap cache, or read directly on a
    /// SWP_SYNCHRONOUS_IO device with a swap count of 1 (shmem_swap_alloc_folio,
    /// no swap cache), or through swap_cluster_readahead (shmem_swapin_cluster;
    /// tmpfs has no VMA readahead). The folio then leaves the swap cache for
    /// the file's page cache, dirty, and the slot is freed.
    fn shmem_swapin_folio(
        &mut self,
        mapping: u32,
        index: u64,
        off: SwapOffset,
        memcg: MemcgId,
        fault: bool,
    ) -> Option<FolioId> {
        self.wb_complete();
        let mut major = false;
        let id = if let Some(id) = self.core.swap.swap_cache_folio(off) {
            // swap_update_readahead() with no VMA.
            let f = self.core.folios.get_mut(id);
            if f.test_clear(pg::READAHEAD) {
                let m = f.memcg;
                self.core.count(m, Item::SWAP_RA_HIT, 1);
                self.core.swap.ra.hits += 1;
            }
            id
        } else {
            major = true;
            if self.core.swap.synchronous_io() && self.core.swap.swap_count(off) == 1 {
                let owner = self.core.swap.swap_cgroup[off as usize];
                let m = if self.core.memcgs[owner as usize].oom_killed {
                    memcg
                } else {
                    owner
                };
                let id = self.alloc_folio(m, true)?;
                {
                    let f = self.core.folios.get_mut(id);
                    f.mapping = mapping;
                    f.index = index as u32;
                    f.flags = pg::SWAPBACKED | pg::UPTODATE | pg::DIRTY;
                }
                self.core.memcgs[m as usize].nr_anon += 1;
                if let Some(s) = self.core.swap.swap_cache_shadow(off) {
                    self.policy.workingset_refault(&mut self.core, id, s);
                }
                self.policy.folio_add_lru(&mut self.core, id);
                self.core.swap_read_folio_sync(id);
                id
            } else {
                self.swap_cluster_readahead_pub(off)?
            }
        };
        let fm = self.core.folios.get(id).memcg;
        if major && fault {
            self.core.count(fm, Item::PGMAJFAULT, 1);
        }
        if self.core.folios.get(id).test(pg::SWAPCACHE) {
            let done = self.core.swap.folio_io_done(id);
            self.core.wait_until(done);
            // shmem_add_to_page_cache(), then delete_from_swap_cache():
            // the folio cannot leave while under writeback (the kernel
            // waits for it: folio_wait_writeback).
            if self.core.folios.get(id).test(pg::WRITEBACK) {
                let until = self
                    .core
                    .wb
                    .inflight
                    .iter()
                    .find(|&&(w, _)| w == id)
                    .map_or(self.core.now, |&(_, d)| d);
                self.core.wait_until(until);
                self.wb_complete();
            }
            self.core.swap_cache_del_folio(id, None);
        }
        let f = self.core.folios.get_mut(id);
        f.mapping = mapping;
        f.index = index as u32;
        f.clear(pg::RA_UNUSED);
        f.set(pg::DIRTY);
        self.core.files[mapping as usize].set_folio_pub(index, id);
        let m = fm as usize;
        self.core.memcgs[m].nr_anon -= 1;
        self.core.memcgs[m].nr_file += 1;
        self.core.memcg_swap[m].nr_shmem += 1;
        // swap_free_nr(): the file's reference to the slot.
        self.core.swap_put(off, false);
        // No folio_mark_accessed() here: the kernel marks a swapped-in
        // folio only for SGP_WRITE (shmem_write_begin), which
        // shmem_file_write_iter() does itself, as shmem_file_read_iter()
        // does for a read; a fault (SGP_CACHE) leaves only the young PTE,
        // so reclaim's first look keeps the folio and its second, if it
        // was not touched again, swaps it out.
        Some(id)
    }

    /// shmem_file_read_iter(): holes read as zeroes without a folio.
    pub fn shmem_file_read_iter(
        &mut self,
        file: &mut OpenFile,
        mut pos: u64,
        count: u64,
    ) -> Option<u64> {
        let mapping = file.mapping;
        let isize = self.core.files[mapping as usize].size;
        if pos >= isize {
            return Some(0);
        }
        let end = (pos + count).min(isize);
        let start = pos;
        self.core.cpu(self.core.cost.syscall);
        while pos < end {
            let index = pos >> PAGE_SHIFT;
            let chunk_end = ((index + 1) << PAGE_SHIFT).min(end);
            if let Some(id) = self
                .shmem_get_folio(mapping, index, file.memcg, false, false)
                .ok()?
            {
                self.folio_mark_accessed(id);
            }
            self.core
                .cpu(self.core.cost.copy_page * (chunk_end - pos) / PAGE_SIZE + 20);
            pos = chunk_end;
        }
        file.ra.prev_pos = pos;
        Some(end - start)
    }

    /// shmem_write_begin() / generic_perform_write() on tmpfs: no dirty
    /// accounting (noop_dirty_folio), no writeback, no throttling.
    pub fn shmem_file_write_iter(
        &mut self,
        file: &mut OpenFile,
        pos: u64,
        count: u64,
    ) -> Option<u64> {
        let mapping = file.mapping;
        let end = (pos + count).min(self.core.files[mapping as usize].nr_pages() * PAGE_SIZE);
        self.core.cpu(self.core.cost.syscall);
        let mut p = pos;
        while p < end {
            let index = p >> PAGE_SHIFT;
            let chunk_end = ((index + 1) << PAGE_SHIFT).min(end);
            let id = self
                .shmem_get_folio(mapping, index, file.memcg, true, false)
                .ok()??;
            self.core
                .cpu(self.core.cost.copy_page * (chunk_end - p) / PAGE_SIZE + 20);
            self.core.folios.get_mut(id).set(pg::DIRTY);
            self.folio_mark_accessed(id);
            p = chunk_end;
        }
        let a = &mut self.core.files[mapping as usize];
        a.size = a.size.max(end);
        Some(end.saturating_sub(pos))
    }

    /// shmem_fault(): SGP_CACHE, so a hole gets a folio; a swap entry is
    /// a major fault.
    pub fn shmem_fault(&mut self, file: &mut OpenFile, index: u64) -> bool {
        self.core.cpu(self.core.cost.minor_fault);
        self.core.in_lru_fault = !(file.vm_rand_read || file.vm_seq_read);
        let r = self.shmem_get_folio(file.mapping, index, file.memcg, true, true);
        self.core.in_lru_fault = false;
        self.core.count(file.memcg, Item::PGFAULT, 1);
        let Ok(Some(id)) = r else {
            return false;
        };
        let f = self.core.folios.get_mut(id);
        f.set(pg::PTE_YOUNG);
        if !f.test(pg::MAPPED) {
            f.set(pg::MAPPED);
            let m = f.memcg;
            self.core.memcgs[m as usize].nr_mapped += 1;
        }
        true
    }

    /// shmem_undo_range() (shmem_truncate_range, shmem_evict_inode): the
    /// whole pages of bytes [lstart, lend] go, folios freed and swap
    /// entries released (free_swap_and_cache); no shadows are left.
    pub fn shmem_undo_range(&mut self, mapping: u32, lstart: u64, lend: u64) {
        if lend < lstart {
            return;
        }
        let nr = self.core.files[mapping as usize].nr_pages();
        let start = lstart.div_ceil(PAGE_SIZE);
        let end = (lend.saturating_add(1) >> PAGE_SHIFT).min(nr);
        let mut next = start;
        while let Some(idx) = self.core.files[mapping as usize].next_populated(next, end) {
            next = idx + 1;
            match self.core.files[mapping as usize].slot(idx) {
                Slot::Folio(id) => {
                    let f = self.core.folios.get_mut(id);
                    let m = f.memcg;
                    let mapped = f.test(pg::MAPPED);
                    f.clear(pg::MAPPED | pg::PTE_YOUNG | pg::DIRTY);
                    if mapped {
                        self.core.memcgs[m as usize].nr_mapped -= 1;
                    }
                    self.policy.folio_del_lru(&mut self.core, id);
                    self.core.trace_delete_from_page_cache(id);
                    self.core.files[mapping as usize].replace_with_shadow(idx, None);
                    self.core.workingset_update_node(mapping, idx, m);
                    self.core.memcgs[m as usize].nr_file -= 1;
                    self.core.memcg_swap[m as usize].nr_shmem -= 1;
                    self.core.folios.get_mut(id).flags = 0;
                    self.core.free_folio(id);
                }
                Slot::Swap(off) => {
                    self.core.files[mapping as usize].clear_swap_entry(idx);
                    self.core.workingset_update_node(mapping, idx, 0);
                    self.free_swap_and_cache(off);
                }
                Slot::Shadow(_) => {
                    self.core.files[mapping as usize].clear_shadow(idx);
                    self.core.workingset_update_node(mapping, idx, 0);
                }
                Slot::Empty | Slot::Zero => {}
            }
        }
        self.core
            .cpu(self.core.cost.scan_folio * (end - start.min(end)) / 8);
    }
}
