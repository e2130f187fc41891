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
//! on `AddressSpace::shmem`. With the mount's `huge=always|within_size`
//! (MmConfig::tmpfs_huge) the file takes large folios
//! (shmem_allowable_huge_orders()), swapped out whole into one
//! multi-order swap entry and, from a synchronous device, swapped in whole
//! (shmem_swap_alloc_folio()). Simplifications: no fault-around on tmpfs
//! mappings, no tmpfs size limit, no folio past the file's size (the
//! kernel may allocate one and shrink it later); the mapping's PTEs are
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
        // mapping_set_large_folios() for a mount whose huge= is not never.
        if self.cfg.tmpfs_huge != super::TmpfsHuge::Never {
            self.files[id as usize].max_order = super::folio::MAX_PAGECACHE_ORDER;
        }
        id
    }

    /// The swap entry holding `index`: its first index and order (a
    /// multi-order entry of a large folio's swap-out, or the page's own).
    pub fn shmem_swap_entry(&self, mapping: u32, index: u64) -> (u64, u32) {
        let m = &self.files[mapping as usize].shmem_large_swap;
        if !m.is_empty() {
            for o in (1..=super::folio::MAX_PAGECACHE_ORDER).rev() {
                let start = index & !((1u64 << o) - 1);
                if m.get(&start) == Some(&(o as u8)) {
                    return (start, o);
                }
            }
        }
        (index, 0)
    }

    /// shmem_split_large_entry(): the multi-order entry holding `index`
    /// is split non-uniformly, so that `index` is an order-0 entry and its
    /// buddies keep aligned larger entries.
    pub fn shmem_split_swap_entry(&mut self, mapping: u32, index: u64) {
        let (start, order) = self.shmem_swap_entry(mapping, index);
        if order == 0 {
            return;
        }
        let m = &mut self.files[mapping as usize].shmem_large_swap;
        m.remove(&start);
        let mut base = start;
        for j in (0..order).rev() {
            let half = 1u64 << j;
            let piece = if index < base + half {
                base + half
            } else {
                let p = base;
                base += half;
                p
            };
            if j > 0 {
                m.insert(piece, j as u8);
            }
        }
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
        let nr = f.nr_pages();
        let off = self.swap.folio_swap(id);
        for i in 0..nr {
            let o = off + i as u32;
            self.files[f.mapping as usize].set_swap_entry(f.index as u64 + i, o);
            self.swap.swap_map[o as usize] += 1;
        }
        if nr > 1 {
            // One swap value entry of the folio's order replaces it.
            self.files[f.mapping as usize]
                .shmem_large_swap
                .insert(f.index as u64, f.order() as u8);
        }
        let m = f.memcg as usize;
        self.memcgs[m].nr_file -= nr;
        self.memcg_swap[m].nr_shmem -= nr;
        // From here on it is a swap-cache folio like an anon one.
        self.memcgs[m].nr_anon += nr;
    }

    /// shmem_writeout()'s split rule: a large folio is split before
    /// swap-out when the end of the file falls inside it.
    pub fn shmem_folio_crosses_eof(&self, id: FolioId) -> bool {
        let f = self.folios.get(id);
        let e = self.files[f.mapping as usize].size.div_ceil(PAGE_SIZE);
        let first = f.index as u64;
        first < e && e < first + f.nr_pages()
    }
}

/// shmem_get_folio()'s sgp_type, with what order selection needs: a
/// write's end (SGP_WRITE, no VMA) or a fault (SGP_CACHE through a VMA).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sgp {
    /// SGP_READ: a hole stays a hole.
    Read,
    /// SGP_WRITE up to this byte offset.
    Write(u64),
    /// SGP_CACHE from shmem_fault().
    Fault,
}

/// shmem_mapping_size_orders() (6.14 to 6.17): filemap_get_order() of the
/// write's length from `index` (the order it fills, rounded down), no
/// larger than the index's alignment nor MAX_PAGECACHE_ORDER; that order
/// and every large one below it.
fn shmem_mapping_size_orders(index: u64, write_end: u64) -> u32 {
    let size = write_end.saturating_sub(index << PAGE_SHIFT);
    let mut order = size.max(1).ilog2().saturating_sub(PAGE_SHIFT);
    if order > 0 && index & ((1u64 << order) - 1) != 0 {
        order = index.trailing_zeros();
    }
    (2u32 << order.min(super::folio::MAX_PAGECACHE_ORDER)) - 2
}

impl<P: ReclaimPolicy> Kernel<P> {
    /// shmem_get_folio_gfp(): the folio at `index`, swapped in if its slot
    /// holds a swap entry; for a hole, a new zeroed folio unless
    /// `Sgp::Read`. `fault` counts a swap-in as a major fault. Err on OOM.
    pub fn shmem_get_folio(
        &mut self,
        mapping: u32,
        index: u64,
        memcg: MemcgId,
        sgp: Sgp,
        fault: bool,
    ) -> Result<Option<FolioId>, ()> {
        match self.core.files[mapping as usize].slot(index) {
            Slot::Folio(id) => Ok(Some(id)),
            Slot::Swap(off) => self
                .shmem_swapin_folio(mapping, index, off, memcg, fault)
                .map(Some)
                .ok_or(()),
            Slot::Empty | Slot::Shadow(_) | Slot::Zero if sgp == Sgp::Read => Ok(None),
            Slot::Empty | Slot::Shadow(_) | Slot::Zero => self
                .shmem_alloc_and_add_folio(mapping, index, memcg, sgp)
                .map(Some)
                .ok_or(()),
        }
    }

    /// shmem_allowable_huge_orders() -> shmem_huge_global_enabled() for a
    /// tmpfs file: the large orders `huge=` allows at `index`. A fault
    /// (through a VMA) may take PMD order only; a write any order from PMD
    /// down (6.18), orders sized by the write (6.14 to 6.17) or PMD only
    /// (before 6.14). within_size keeps the orders whose aligned block
    /// ends within max(write end, i_size); advise needs MADV_HUGEPAGE,
    /// which the model's mappings never have.
    fn shmem_allowable_huge_orders(&self, mapping: u32, index: u64, sgp: Sgp) -> u32 {
        use super::folio::{HPAGE_PMD_ORDER, THP_ORDERS_ALL_FILE};
        use super::{TmpfsHuge, TmpfsWriteOrders};
        let a = &self.core.files[mapping as usize];
        if a.max_order == 0 {
            return 0;
        }
        let pmd = 1u32 << HPAGE_PMD_ORDER;
        let cands = match sgp {
            Sgp::Fault => pmd,
            // SGP_READ leaves a hole a hole: nothing is allocated.
            Sgp::Read => 0,
            Sgp::Write(end) => match self.core.cfg.tmpfs_write_orders() {
                TmpfsWriteOrders::Pmd => pmd,
                TmpfsWriteOrders::FromPmd => THP_ORDERS_ALL_FILE,
                TmpfsWriteOrders::WriteSize => shmem_mapping_size_orders(index, end),
            },
        };
        match self.core.cfg.tmpfs_huge {
            TmpfsHuge::Never | TmpfsHuge::Advise => 0,
            TmpfsHuge::Always => cands,
            TmpfsHuge::WithinSize => {
                // shmem_get_orders_within_size().
                // i_size: a workload's tmpfs file is sized at creation
                // (ftruncate), as the oracle's real one is.
                let end = match sgp {
                    Sgp::Write(e) => e.max(a.size),
                    _ => a.size,
                };
                let limit = end.div_ceil(PAGE_SIZE);
                super::folio::orders_desc(cands)
                    .find(|&o| (index + 1).next_multiple_of(1 << o) <= limit)
                    .map_or(0, |o| cands & ((2 << o) - 1))
            }
        }
    }

    /// shmem_alloc_and_add_folio(): the largest allowed order whose
    /// aligned range lies in the file and holds no entry
    /// (shmem_suitable_orders()), allocated with vma_thp_gfp_mask()'s
    /// reclaim (try_alloc_thp_folio): a failed allocation tries the next
    /// order (shmem_fallback), a failed charge goes straight to order 0
    /// (shmem_fallback_charge); order 0 as any page. Charged to the
    /// toucher's memcg, zeroed, in the page cache, on the anon LRU. Dirty
    /// from the start: it has no copy anywhere else.
    fn shmem_alloc_and_add_folio(
        &mut self,
        mapping: u32,
        index: u64,
        memcg: MemcgId,
        sgp: Sgp,
    ) -> Option<FolioId> {
        use super::huge_memory::MthpStat;
        let orders = self.shmem_allowable_huge_orders(mapping, index, sgp);
        let mut got = None;
        if orders != 0 {
            let a = &self.core.files[mapping as usize];
            let suitable = super::folio::orders_desc(orders)
                .find(|&o| {
                    let nr = 1u64 << o;
                    let start = index & !(nr - 1);
                    start + nr <= a.nr_pages()
                        && (start..start + nr)
                            .all(|i| matches!(a.slot(i), Slot::Empty | Slot::Shadow(_)))
                })
                .map_or(0, |o| orders & ((2 << o) - 1));
            for o in super::folio::orders_desc(suitable) {
                // thp_file_* count the PMD size only.
                let pmd = o == super::folio::HPAGE_PMD_ORDER;
                match self.try_alloc_thp_folio(memcg, o) {
                    Ok(id) => {
                        self.core.mthp_count(o, MthpStat::ShmemAlloc);
                        if pmd {
                            self.core.count_vm(Item::THP_FILE_ALLOC, 1);
                        }
                        got = Some((id, index & !((1u64 << o) - 1)));
                        break;
                    }
                    Err(charge) => {
                        self.core.mthp_count(o, MthpStat::ShmemFallback);
                        if pmd {
                            self.core.count_vm(Item::THP_FILE_FALLBACK, 1);
                        }
                        if charge {
                            self.core.mthp_count(o, MthpStat::ShmemFallbackCharge);
                            if pmd {
                                self.core.count_vm(Item::THP_FILE_FALLBACK_CHARGE, 1);
                            }
                            break;
                        }
                    }
                }
            }
        }
        let (id, start) = match got {
            Some(g) => g,
            None => (self.alloc_folio(memcg, true)?, index),
        };
        let nr = self.core.folios.get(id).nr_pages();
        self.core.cpu(self.core.cost.copy_page * nr);
        {
            let f = self.core.folios.get_mut(id);
            f.mapping = mapping;
            f.index = start as u32;
            f.set_flags_keep_order(pg::SWAPBACKED | pg::UPTODATE | pg::DIRTY);
        }
        for i in start..start + nr {
            if let Slot::Shadow(_) = self.core.files[mapping as usize].slot(i) {
                self.core.files[mapping as usize].clear_shadow(i);
            }
            self.core.files[mapping as usize].set_folio_pub(i, id);
            self.core.workingset_update_node(mapping, i, memcg);
        }
        self.core.memcgs[memcg as usize].nr_file += nr;
        self.core.memcg_swap[memcg as usize].nr_shmem += nr;
        self.folio_add_lru(id);
        Some(id)
    }

    /// shmem_swapin_folio(): from the swap cache, or read directly on a
    /// SWP_SYNCHRONOUS_IO device with a swap count of 1
    /// (shmem_swap_alloc_folio: the whole multi-order entry when it can,
    /// else order 0; no swap cache), or through swap_cluster_readahead
    /// (shmem_swapin_cluster; tmpfs has no VMA readahead). A folio smaller
    /// than its entry splits the entry (shmem_split_large_entry). The folio
    /// then leaves the swap cache for the file's page cache, dirty, and
    /// its slots are freed.
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
                self.shmem_swap_alloc_folio(mapping, index, off, m)?
            } else {
                self.swap_cluster_readahead_pub(off)?
            }
        };
        let f = *self.core.folios.get(id);
        let (fm, nr) = (f.memcg, f.nr_pages());
        if major && fault {
            self.core.count(fm, Item::PGMAJFAULT, 1);
        }
        // The folio's first index and slot.
        let (start, first) = if f.test(pg::SWAPCACHE) {
            let first = self.core.swap.folio_swap(id);
            (index - (off - first) as u64, first)
        } else {
            (f.index as u64, off - (index - f.index as u64) as u32)
        };
        if nr == 1 {
            // An order-0 folio for a page of a multi-order entry.
            self.core.shmem_split_swap_entry(mapping, index);
        } else {
            debug_assert_eq!(
                self.core.shmem_swap_entry(mapping, start),
                (start, f.order()),
                "a large folio swaps in its whole entry"
            );
            self.core.files[mapping as usize]
                .shmem_large_swap
                .remove(&start);
        }
        if f.test(pg::SWAPCACHE) {
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
        f.index = start as u32;
        f.clear(pg::UNUSED_MARKS);
        f.set(pg::DIRTY);
        for i in 0..nr {
            self.core.files[mapping as usize].set_folio_pub(start + i, id);
        }
        let m = fm as usize;
        self.core.memcgs[m].nr_anon -= nr;
        self.core.memcgs[m].nr_file += nr;
        self.core.memcg_swap[m].nr_shmem += nr;
        // swap_free_nr(): the file's references to the slots.
        for o in first..first + nr as u32 {
            self.core.swap_put(o, false);
        }
        // No folio_mark_accessed() here: the kernel marks a swapped-in
        // folio only for SGP_WRITE (shmem_write_begin), which
        // shmem_file_write_iter() does itself, as shmem_file_read_iter()
        // does for a read; a fault (SGP_CACHE) leaves only the young PTE,
        // so reclaim's first look keeps the folio and its second, if it
        // was not touched again, swaps it out.
        Some(id)
    }

    /// shmem_swap_alloc_folio(): the folio for a synchronous device's
    /// read, skipping the swap cache: the entry's whole order (6.14+)
    /// unless one of its slots is in the swap cache (non_swapcache_batch)
    /// or the allocation or charge fails, then order 0. The first slot's
    /// shadow goes to the refault; pswpin per page, swpin per large folio.
    fn shmem_swap_alloc_folio(
        &mut self,
        mapping: u32,
        index: u64,
        off: SwapOffset,
        memcg: MemcgId,
    ) -> Option<FolioId> {
        use super::swapfile::SWAP_HAS_CACHE;
        let (start, order) = self.core.shmem_swap_entry(mapping, index);
        let first = off - (index - start) as u32;
        let whole = order > 0
            && self.core.cfg.shmem_large_swapin()
            && (first..first + (1 << order))
                .all(|o| self.core.swap.swap_map[o as usize] & SWAP_HAS_CACHE == 0);
        let got = whole
            .then(|| self.try_alloc_thp_folio(memcg, order).ok())
            .flatten();
        let (id, start, first) = match got {
            Some(id) => (id, start, first),
            None => (self.alloc_folio(memcg, true)?, index, off),
        };
        self.swap_read_new_folio(id, mapping, start, first, memcg);
        Some(id)
    }

    /// shmem_file_read_iter(): holes read as zeroes without a folio; a
    /// folio is copied up to its end and marked accessed once.
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
            let folio = self
                .shmem_get_folio(mapping, index, file.memcg, Sgp::Read, false)
                .ok()?;
            let chunk_end = match folio {
                Some(id) => {
                    self.folio_mark_accessed(id);
                    let f = self.core.folios.get(id);
                    ((f.index as u64 + f.nr_pages()) << PAGE_SHIFT).min(end)
                }
                None => ((index + 1) << PAGE_SHIFT).min(end),
            };
            self.core
                .cpu(self.core.cost.copy_page * (chunk_end - pos) / PAGE_SIZE + 20);
            pos = chunk_end;
        }
        file.ra.prev_pos = pos;
        Some(end - start)
    }

    /// shmem_write_begin() / generic_perform_write() on tmpfs: no dirty
    /// accounting (noop_dirty_folio), no writeback, no throttling; each
    /// chunk (at most the mapping's largest folio) asks for a folio with
    /// the chunk's end (SGP_WRITE) and copies up to the folio's end.
    pub fn shmem_file_write_iter(
        &mut self,
        file: &mut OpenFile,
        pos: u64,
        count: u64,
    ) -> Option<u64> {
        let mapping = file.mapping;
        let a = &self.core.files[mapping as usize];
        let end = (pos + count).min(a.nr_pages() * PAGE_SIZE);
        let chunk = PAGE_SIZE << a.max_order;
        self.core.cpu(self.core.cost.syscall);
        let mut p = pos;
        while p < end {
            let index = p >> PAGE_SHIFT;
            let write_end = (p - p % chunk + chunk).min(end);
            let id = self
                .shmem_get_folio(mapping, index, file.memcg, Sgp::Write(write_end), false)
                .ok()??;
            let f = self.core.folios.get(id);
            let chunk_end = ((f.index as u64 + f.nr_pages()) << PAGE_SHIFT).min(write_end);
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
    /// a major fault. The whole folio is mapped (finish_fault(): one PMD
    /// for a PMD-sized folio, counted in thp_file_mapped).
    pub fn shmem_fault(&mut self, file: &mut OpenFile, index: u64) -> bool {
        self.core.cpu(self.core.cost.minor_fault);
        self.core.in_lru_fault = !(file.vm_rand_read || file.vm_seq_read);
        let r = self.shmem_get_folio(file.mapping, index, file.memcg, Sgp::Fault, true);
        self.core.in_lru_fault = false;
        self.core.count(file.memcg, Item::PGFAULT, 1);
        let Ok(Some(id)) = r else {
            return false;
        };
        let f = self.core.folios.get_mut(id);
        f.set(pg::PTE_YOUNG);
        f.clear(pg::UNUSED_MARKS);
        if !f.test(pg::MAPPED) {
            f.set(pg::MAPPED);
            let (m, order) = (f.memcg, f.order());
            self.core.memcgs[m as usize].nr_mapped += 1 << order;
            if order == super::folio::HPAGE_PMD_ORDER {
                self.core.count_vm(Item::THP_FILE_MAPPED, 1);
            }
        }
        true
    }

    /// shmem_undo_range() (shmem_truncate_range, shmem_evict_inode): the
    /// whole pages of bytes [lstart, lend] go, folios freed and swap
    /// entries released (free_swap_and_cache); no shadows are left. A
    /// multi-order swap entry the range cuts is swapped in first
    /// (shmem_get_partial_folio()); a large folio it cuts is split there
    /// (truncate_inode_partial_folio() -> try_folio_split()), and one
    /// that cannot be split stays whole (the kernel zeroes the range).
    pub fn shmem_undo_range(&mut self, mapping: u32, lstart: u64, lend: u64) {
        if lend < lstart {
            return;
        }
        let nr = self.core.files[mapping as usize].nr_pages();
        let start = lstart.div_ceil(PAGE_SIZE);
        let end = (lend.saturating_add(1) >> PAGE_SHIFT).min(nr);
        if start >= end {
            return;
        }
        // The range's ends inside large entries or folios: swap in, then
        // split at the end (both sides of it become separate folios).
        if self.core.files[mapping as usize].max_order > 0 {
            for edge in [start, end] {
                self.shmem_split_at(mapping, edge);
            }
        }
        let mut next = start;
        while let Some(idx) = self.core.files[mapping as usize].next_populated(next, end) {
            next = idx + 1;
            match self.core.files[mapping as usize].slot(idx) {
                Slot::Folio(id) => {
                    let f = *self.core.folios.get(id);
                    let (fi, fnr) = (f.index as u64, f.nr_pages());
                    if fi < start || fi + fnr > end {
                        // Not split: it stays, zeroed in the kernel.
                        next = fi + fnr;
                        continue;
                    }
                    next = fi + fnr;
                    let m = f.memcg;
                    let ff = self.core.folios.get_mut(id);
                    ff.clear(pg::MAPPED | pg::PTE_YOUNG | pg::DIRTY);
                    if f.test(pg::MAPPED) {
                        self.core.memcgs[m as usize].nr_mapped -= fnr;
                    }
                    self.policy.folio_del_lru(&mut self.core, id);
                    self.core.trace_delete_from_page_cache(id);
                    for i in fi..fi + fnr {
                        self.core.files[mapping as usize].replace_with_shadow(i, None);
                        self.core.workingset_update_node(mapping, i, m);
                    }
                    self.core.memcgs[m as usize].nr_file -= fnr;
                    self.core.memcg_swap[m as usize].nr_shmem -= fnr;
                    self.core.folios.get_mut(id).set_flags_keep_order(0);
                    self.core.free_folio(id);
                }
                Slot::Swap(off) => {
                    // A page of a multi-order entry inside the range: the
                    // entry's pages all go (the ends were split above).
                    self.core.shmem_split_swap_entry(mapping, idx);
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
        self.core.cpu(self.core.cost.range_entry * (end - start));
    }

    /// Makes `edge` the first page of its own entry or folio: a
    /// multi-order swap entry around it is swapped in (SGP_READ), then a
    /// large folio around it is split there (try_folio_split()).
    fn shmem_split_at(&mut self, mapping: u32, edge: u64) {
        let a = &self.core.files[mapping as usize];
        if edge == 0 || edge >= a.nr_pages() {
            return;
        }
        if let Slot::Swap(off) = a.slot(edge) {
            let (s, o) = self.core.shmem_swap_entry(mapping, edge);
            if o > 0 && s < edge {
                let memcg = self.core.swap.swap_cgroup[off as usize];
                if self
                    .shmem_get_folio(mapping, edge, memcg, Sgp::Read, false)
                    .is_err()
                {
                    return;
                }
            }
        }
        if let Slot::Folio(id) = self.core.files[mapping as usize].slot(edge) {
            let f = self.core.folios.get(id);
            if f.nr_pages() > 1 && (f.index as u64) < edge {
                // Split so that `edge` starts a piece: the buddy split at
                // the page before it leaves `edge` a piece's first page.
                self.try_folio_split(id, edge - 1);
            }
        }
    }
}
