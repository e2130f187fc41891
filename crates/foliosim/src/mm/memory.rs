//! The fault path (mm/memory.c): handle_mm_fault() with the VM_FAULT_RETRY
//! loop of the arch fault handler, do_read_fault() with fault-around first
//! and ->fault as fallback.

use super::filemap::{OpenFile, VmFault, FAULT_FLAG_TRIED};
use super::huge_memory::MthpStat;
use super::memcontrol::MemcgId;
use super::vmscan::ReclaimPolicy;
use super::vmstat::Item;
use super::{Core, Kernel};

/// PTRS_PER_PTE on x86-64 and arm64 with 4K pages: fault-around never
/// crosses a page table.
const PTRS_PER_PTE: u64 = 512;

impl<P: ReclaimPolicy> Kernel<P> {
    /// A user read fault on page `index` of a shared file mapping (the vma
    /// maps the whole file from offset 0). Returns false if the task was
    /// OOM-killed.
    pub fn handle_mm_fault(&mut self, file: &mut OpenFile, index: u64) -> bool {
        let mut flags = 0u32;
        // __pte_alloc(): the first fault in a 2 MiB region allocates the
        // page-table page, charged to the task's memcg (GFP_PGTABLE_USER).
        if !self.pte_alloc(file, index) {
            return false;
        }
        loop {
            self.core.cpu(self.core.cost.minor_fault);
            // lru_gen_enter_fault(): vma_has_recency() unless the vma is
            // marked for sequential or random reads.
            self.core.in_lru_fault = !(file.vm_rand_read || file.vm_seq_read);
            let r = self.do_read_fault(file, index, flags);
            self.core.in_lru_fault = false;
            // mm_account_fault(): pgfault counts completed faults only; a
            // VM_FAULT_RETRY is counted when its retry completes.
            if r != VmFault::Retry {
                self.core.count(file.memcg, Item::PGFAULT, 1);
            }
            match r {
                VmFault::Done => return true,
                VmFault::Oom => return false,
                VmFault::Retry => {
                    // The retry happens once the I/O that dropped the lock
                    // completes (the retry would sleep on the folio lock).
                    self.wait_uptodate(file.mapping, index);
                    flags |= FAULT_FLAG_TRIED;
                }
            }
        }
    }

    /// Charges the page-table page covering `index` on first use.
    fn pte_alloc(&mut self, file: &OpenFile, index: u64) -> bool {
        // A process with page tables of its own over the file (rmap.rs)
        // allocates its own page-table pages.
        match self.core.pte_table_alloc(file, index) {
            None => self.pte_alloc_space(file.mapping, index, file.memcg),
            Some(true) => true,
            Some(false) => {
                if file.memcg != 0 && !self.try_charge(file.memcg, 1, true) {
                    return false;
                }
                self.core.memcgs[file.memcg as usize].nr_pagetables += 1;
                true
            }
        }
    }

    /// __pte_alloc() for the 2 MiB region of `index` in `space` (a file
    /// mapping or an anonymous region): the first fault there allocates
    /// the page-table page, charged to the faulting task's memcg
    /// (GFP_PGTABLE_USER is __GFP_ACCOUNT). False: the charge OOM-killed
    /// the task.
    fn pte_alloc_space(&mut self, space: u32, index: u64, memcg: MemcgId) -> bool {
        let region = index / PTRS_PER_PTE;
        if self.core.files[space as usize].pte_table_present(region) {
            return true;
        }
        if memcg != 0 && !self.try_charge(memcg, 1, true) {
            return false;
        }
        self.core.memcgs[memcg as usize].nr_pagetables += 1;
        self.core.files[space as usize].set_pte_table(region, memcg);
        // mm_inc_nr_ptes(): the owner's page tables count in its OOM
        // badness (an anonymous region's; file mappings have no owner).
        let owner = self.core.files[space as usize].owner;
        if let Some(mm) = self.core.mms.get_mut(owner as usize) {
            mm.nr_ptes += 1;
        }
        true
    }

    /// free_pgtables() at munmap or exit: the region's page-table pages
    /// are freed and uncharged.
    pub(crate) fn free_pgtables(&mut self, space: u32) {
        let (n, memcg) = self.core.files[space as usize].free_pte_tables();
        if n > 0 {
            self.core.memcgs[memcg as usize].nr_pagetables -= n;
            self.core.mem_cgroup_uncharge(memcg, n);
            let owner = self.core.files[space as usize].owner;
            if let Some(mm) = self.core.mms.get_mut(owner as usize) {
                mm.nr_ptes -= n;
            }
        }
    }

    /// Process exit / munmap of a file mapping: PTEs go, page-table pages
    /// are freed and uncharged; the folios stay cached.
    pub fn exit_mmap(&mut self, mapping: u32) {
        self.unmap_mapping(mapping);
        self.free_pgtables(mapping);
    }

    /// do_read_fault(): ->map_pages over the fault-around window, then
    /// ->fault if the faulting page was not mapped.
    fn do_read_fault(&mut self, file: &mut OpenFile, index: u64, flags: u32) -> VmFault {
        let nr = (self.core.cfg.fault_around_bytes >> super::PAGE_SHIFT).clamp(1, PTRS_PER_PTE);
        if nr > 1 && self.do_fault_around(file, index, nr, flags) {
            return VmFault::Done;
        }
        self.filemap_fault(file, index, flags)
    }

    /// do_fault_around(): the window of fault_around_pages aligned down,
    /// clamped to the vma (the file) and to the page table.
    fn do_fault_around(&mut self, file: &mut OpenFile, index: u64, nr: u64, flags: u32) -> bool {
        // With the vma at address 0 of a page-table-aligned region, the PTE
        // offset is the page index modulo PTRS_PER_PTE.
        let pte_off = index % PTRS_PER_PTE;
        let from_pte = pte_off / nr * nr;
        let nr_file = self.core.files[file.mapping as usize].nr_pages();
        let to_pte = (from_pte + nr)
            .min(PTRS_PER_PTE)
            .min(pte_off + (nr_file - index))
            - 1;
        let start = index - (pte_off - from_pte);
        let end = index + (to_pte - pte_off);
        self.filemap_map_pages(file, start, end, index, flags)
    }
}

impl Core {
    /// Moves one page of an anonymous space's owner from one rss counter
    /// to another (a swap-out turns an anon page into a swap entry).
    #[inline]
    pub fn mm_counter_move(&mut self, space: u32, from: usize, to: usize) {
        let owner = self.files[space as usize].owner;
        if let Some(mm) = self.mms.get_mut(owner as usize) {
            mm.rss[from] = mm.rss[from].saturating_sub(1);
            mm.rss[to] += 1;
        }
    }

    /// add_mm_counter() moving `nr` pages from one rss counter to another.
    #[inline]
    pub fn mm_counter_move_nr(&mut self, space: u32, from: usize, to: usize, nr: u64) {
        let owner = self.files[space as usize].owner;
        if let Some(mm) = self.mms.get_mut(owner as usize) {
            mm.rss[from] = mm.rss[from].saturating_sub(nr);
            mm.rss[to] += nr;
        }
    }

    /// inc_mm_counter() for the owner of an anonymous space.
    #[inline]
    pub fn mm_counter_inc(&mut self, space: u32, counter: usize) {
        let owner = self.files[space as usize].owner;
        if let Some(mm) = self.mms.get_mut(owner as usize) {
            mm.rss[counter] += 1;
        }
    }
}

impl<P: ReclaimPolicy> Kernel<P> {
    /// A user access to page `index` of an anonymous region (modelled as an
    /// address space of its own): a present page is a PTE hit; an empty one
    /// is do_anonymous_page(); a write to the zero page is do_wp_page()'s
    /// copy; a swap entry is do_swap_page(). `memcg` is the faulting task's.
    /// Returns false when the task was OOM-killed.
    pub fn anon_access(&mut self, space: u32, index: u64, memcg: MemcgId, write: bool) -> bool {
        use super::filemap::Slot;
        use super::folio::pg;
        let mut slot = self.core.files[space as usize].slot(index);
        // A fault (not a present page) walks to the PTE first, allocating
        // the region's page table on its first fault; that charge may have
        // reclaimed, so the slot is read again.
        if !matches!(slot, Slot::Folio(_)) {
            if !self.pte_alloc_space(space, index, memcg) {
                return false;
            }
            slot = self.core.files[space as usize].slot(index);
        }
        match slot {
            Slot::Folio(id) => {
                // Under MADV_RANDOM / MADV_SEQUENTIAL reclaim ignores the
                // VMA's young PTEs (vma_has_recency()): as if never set.
                let young = !self.core.files[space as usize].vm_no_recency;
                let f = self.core.folios.get_mut(id);
                if young {
                    f.set(pg::PTE_YOUNG);
                }
                f.clear(pg::UNUSED_MARKS);
                if write {
                    // The PTE's dirty bit; try_to_unmap() moves it to the
                    // folio, which the model keeps there directly.
                    f.set(pg::DIRTY);
                }
                self.core.cpu(self.core.cost.touch_mapped);
                true
            }
            Slot::Zero if !write => {
                self.core.cpu(self.core.cost.touch_mapped);
                true
            }
            Slot::Zero => {
                // do_wp_page() -> wp_page_copy() from the zero page: a
                // new zeroed folio (order 0) replaces the PTE.
                self.core.files[space as usize].clear_swap_entry(index);
                self.core.workingset_update_node(space, index, memcg);
                self.do_anonymous_page(space, index, memcg, true, false)
            }
            Slot::Empty => self.do_anonymous_page(space, index, memcg, write, true),
            Slot::Shadow(_) => {
                // Anon shadows live in the swap cache; one here is from a
                // space used as a file before: it means nothing.
                self.core.files[space as usize].clear_shadow(index);
                self.do_anonymous_page(space, index, memcg, write, true)
            }
            Slot::Swap(off) => self.do_swap_page(space, index, memcg, write, off),
        }
    }

    /// do_anonymous_page(): a read maps the shared zero page (no folio, MM
    /// counters unchanged); a write allocates a zeroed folio, charges it
    /// (mem_cgroup_charge), maps it and adds it to the LRU
    /// (folio_add_lru_vma: the inactive anon list, or MGLRU's
    /// lru_gen_add_folio with the fault-path activation).
    fn do_anonymous_page(
        &mut self,
        space: u32,
        index: u64,
        memcg: MemcgId,
        write: bool,
        may_be_large: bool,
    ) -> bool {
        use super::folio::pg;
        self.core.count(memcg, Item::PGFAULT, 1);
        self.core.cpu(self.core.cost.minor_fault);
        if !write {
            self.core.files[space as usize].set_zero_pte(index);
            self.core.workingset_update_node(space, index, memcg);
            return true;
        }
        // lru_gen_enter_fault(): vma_has_recency().
        let recency = !self.core.files[space as usize].vm_no_recency;
        self.core.in_lru_fault = recency;
        let orders = match may_be_large {
            true => self
                .core
                .cfg
                .anon_orders(self.core.files[space as usize].vm_hugepage),
            false => 0,
        };
        let got = match orders {
            0 => self.alloc_folio(memcg, true).map(|id| (id, index)),
            _ => self.alloc_anon_folio(space, index, memcg, orders),
        };
        let ok = match got {
            None => false,
            Some((id, start)) => {
                let nr = self.core.folios.get(id).nr_pages();
                // clear_user_highpage() / folio_zero_user().
                self.core.cpu(self.core.cost.copy_page * nr);
                {
                    let f = self.core.folios.get_mut(id);
                    f.mapping = space;
                    f.index = start as u32;
                    let young = if recency { pg::PTE_YOUNG } else { 0 };
                    f.set_flags_keep_order(
                        pg::SWAPBACKED | pg::UPTODATE | pg::MAPPED | young | pg::DIRTY,
                    );
                }
                // set_ptes() over the folio's range.
                for idx in start..start + nr {
                    self.core.files[space as usize].set_folio_pub(idx, id);
                    self.core.workingset_update_node(space, idx, memcg);
                }
                self.core.memcgs[memcg as usize].nr_anon += nr;
                self.core.memcgs[memcg as usize].nr_mapped += nr;
                for _ in 0..nr {
                    self.core.mm_counter_inc(space, super::mmap::MM_ANONPAGES);
                }
                self.folio_add_lru(id);
                true
            }
        };
        self.core.in_lru_fault = false;
        ok
    }

    /// alloc_anon_folio(): the largest enabled mTHP order whose naturally
    /// aligned range around `index` lies inside the mapping
    /// (thp_vma_suitable_order) with every PTE still none
    /// (pte_range_none), allocated and charged; a failed charge falls back
    /// to the next order down (MTHP_STAT_ANON_FAULT_FALLBACK_CHARGE), and
    /// last to order 0. Returns the folio and its first index.
    fn alloc_anon_folio(
        &mut self,
        space: u32,
        index: u64,
        memcg: MemcgId,
        orders: u32,
    ) -> Option<(super::folio::FolioId, u64)> {
        use super::filemap::Slot;
        for order in super::folio::orders_desc(orders) {
            let nr = 1u64 << order;
            let start = index & !(nr - 1);
            let a = &self.core.files[space as usize];
            if start + nr > a.nr_pages() || !(start..start + nr).all(|i| a.slot(i) == Slot::Empty) {
                continue;
            }
            // A PMD-sized folio is do_huge_pmd_anonymous_page()'s, which
            // also counts the thp_fault_* events.
            let pmd = order == super::folio::HPAGE_PMD_ORDER;
            match self.try_alloc_thp_folio(memcg, order) {
                Ok(id) => {
                    self.core.mthp_count(order, MthpStat::AnonFaultAlloc);
                    if pmd {
                        self.core.count(memcg, Item::THP_FAULT_ALLOC, 1);
                    }
                    return Some((id, start));
                }
                Err(charge) => {
                    if charge {
                        self.core
                            .mthp_count(order, MthpStat::AnonFaultFallbackCharge);
                    }
                    self.core.mthp_count(order, MthpStat::AnonFaultFallback);
                    if pmd {
                        self.core.count_vm(Item::THP_FAULT_FALLBACK, 1);
                        if charge {
                            self.core.count_vm(Item::THP_FAULT_FALLBACK_CHARGE, 1);
                        }
                    }
                }
            }
        }
        self.alloc_folio(memcg, true).map(|id| (id, index))
    }

    /// do_swap_page() as in Linux 6.18: a folio still in the swap cache is
    /// mapped (a minor fault; a read-ahead one counts swap_ra_hit), a large
    /// one whole (its PTEs hold its run of entries); else on a
    /// SWP_SYNCHRONOUS_IO device (zram) with a swap count of 1 the folio
    /// is read directly, bypassing the swap cache and readahead, as large
    /// as alloc_swap_folio() allows, and its slots are freed at once; else
    /// swapin_readahead() reads it with its window into the swap cache.
    /// Either read is a major fault. Mapping drops the PTEs' references to
    /// the slots; a swap-cache folio also leaves the cache on a write fault
    /// or when swap is half full (should_try_to_free_swap). The shadow in
    /// the (first) slot goes to workingset_refault() when the folio is
    /// allocated.
    fn do_swap_page(
        &mut self,
        space: u32,
        index: u64,
        memcg: MemcgId,
        write: bool,
        off: super::swapfile::SwapOffset,
    ) -> bool {
        use super::folio::pg;
        // Completion interrupts that fired by now.
        self.wb_complete();
        self.core.count(memcg, Item::PGFAULT, 1);
        self.core.cpu(self.core.cost.minor_fault);
        let recency = !self.core.files[space as usize].vm_no_recency;
        self.core.in_lru_fault = recency;
        let mut major = false;
        let found = if let Some(id) = self.core.swap.swap_cache_folio(off) {
            self.swap_update_readahead(id, space, index);
            Some(id)
        } else if self.core.swap.synchronous_io() && self.core.swap.swap_count(off) == 1 {
            major = true;
            self.swapin_skip_swapcache(space, index, off)
        } else {
            major = true;
            self.swapin_readahead(off, space, index)
        };
        self.core.in_lru_fault = false;
        let Some(id) = found else {
            return false;
        };
        if major {
            self.core.count(memcg, Item::PGMAJFAULT, 1);
        }
        let nr = self.core.folios.get(id).nr_pages();
        // The folio's first page: a large folio's pages sit at the indexes
        // its slots were written from.
        let start = if self.core.folios.get(id).test(pg::SWAPCACHE) {
            let first = self.core.swap.folio_swap(id);
            debug_assert!(
                (0..nr).all(|i| self.core.files[space as usize]
                    .slot(index - (off - first) as u64 + i)
                    == super::filemap::Slot::Swap(first + i as u32)),
                "a swap-cache folio's PTEs hold its run of entries"
            );
            let start = index - (off - first) as u64;
            // folio_lock_or_retry(): wait for the read to complete.
            let done = self.core.swap.folio_io_done(id);
            self.core.wait_until(done);
            // swap_free_nr(): the PTEs no longer hold the entries.
            for o in first..first + nr as u32 {
                self.core.swap_put(o, false);
            }
            let fmemcg = self.core.folios.get(id).memcg;
            if write || self.core.mem_cgroup_swap_full(fmemcg) {
                self.core.folio_free_swap(id);
            }
            start
        } else {
            self.core.folios.get(id).index as u64
        };
        {
            let f = self.core.folios.get_mut(id);
            f.mapping = space;
            f.index = start as u32;
            f.clear(pg::UNUSED_MARKS);
            f.set(pg::MAPPED);
            if recency {
                f.set(pg::PTE_YOUNG);
            }
            if write {
                f.set(pg::DIRTY);
            }
        }
        let fmemcg = self.core.folios.get(id).memcg;
        for i in start..start + nr {
            self.core.files[space as usize].set_folio_pub(i, id);
        }
        self.core.memcgs[fmemcg as usize].nr_mapped += nr;
        self.core.mm_counter_move_nr(
            space,
            super::mmap::MM_SWAPENTS,
            super::mmap::MM_ANONPAGES,
            nr,
        );
        true
    }

    /// The "skip swapcache" branch of do_swap_page(): allocate (as large
    /// as alloc_swap_folio() allows), charge to the slot's memcg
    /// (mem_cgroup_swapin_charge_folio), refault, read synchronously and
    /// free the slots (their shadows go with them).
    fn swapin_skip_swapcache(
        &mut self,
        space: u32,
        index: u64,
        off: super::swapfile::SwapOffset,
    ) -> Option<super::folio::FolioId> {
        let owner = self.core.swap.swap_cgroup[off as usize];
        let memcg = if self.core.memcgs[owner as usize].oom_killed {
            0
        } else {
            owner
        };
        let (id, start, first) = self.alloc_swap_folio(space, index, off, memcg)?;
        let nr = self.core.folios.get(id).nr_pages();
        self.swap_read_new_folio(id, space, start, first, memcg);
        for o in first..first + nr as u32 {
            self.core.swap_put(o, false);
        }
        Some(id)
    }

    /// alloc_swap_folio() (6.12+): on a synchronous device, the largest
    /// enabled anon mTHP order below PMD order whose aligned range lies in
    /// the mapping,
    /// whose slot is aligned as the address is (thp_swap_suitable_orders)
    /// and whose PTEs all hold the contiguous entries around `off`, none
    /// of them in the swap cache (can_swapin_thp); a failed allocation or
    /// charge tries the next order down (swpin_fallback, and
    /// swpin_fallback_charge for a charge), and last order 0.
    /// Returns the folio, its first index and its first slot.
    fn alloc_swap_folio(
        &mut self,
        space: u32,
        index: u64,
        off: super::swapfile::SwapOffset,
        memcg: MemcgId,
    ) -> Option<(super::folio::FolioId, u64, super::swapfile::SwapOffset)> {
        use super::filemap::Slot;
        use super::swapfile::SWAP_HAS_CACHE;
        // Orders below PMD_ORDER only: a PMD-sized folio is never
        // swapped in whole.
        let orders = if self.core.cfg.large_anon_swap() {
            let hp = self.core.files[space as usize].vm_hugepage;
            self.core.cfg.anon_orders(hp) & ((1 << super::folio::HPAGE_PMD_ORDER) - 1)
        } else {
            0
        };
        for order in super::folio::orders_desc(orders) {
            let nr = 1u64 << order;
            let start = index & !(nr - 1);
            let a = &self.core.files[space as usize];
            if start + nr > a.nr_pages() || off as u64 % nr != index % nr {
                continue;
            }
            let first = off - (index - start) as u32;
            let si = &self.core.swap;
            if !(0..nr).all(|i| {
                let o = first + i as u32;
                a.slot(start + i) == Slot::Swap(o) && si.swap_map[o as usize] & SWAP_HAS_CACHE == 0
            }) {
                continue;
            }
            match self.try_alloc_thp_folio(memcg, order) {
                Ok(id) => return Some((id, start, first)),
                Err(charge) => {
                    if charge {
                        self.core.mthp_count(order, MthpStat::SwpinFallbackCharge);
                    }
                    self.core.mthp_count(order, MthpStat::SwpinFallback);
                }
            }
        }
        self.alloc_folio(memcg, true).map(|id| (id, index, off))
    }
}
