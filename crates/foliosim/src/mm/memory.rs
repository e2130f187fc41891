//! The fault path (mm/memory.c): handle_mm_fault() with the VM_FAULT_RETRY
//! loop of the arch fault handler, do_read_fault() with fault-around first
//! and ->fault as fallback.

use super::filemap::{OpenFile, VmFault, FAULT_FLAG_TRIED};
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
        let region = index / PTRS_PER_PTE;
        if self.core.files[file.mapping as usize].pte_table_present(region) {
            return true;
        }
        let memcg = file.memcg;
        if memcg != 0 && !self.try_charge(memcg, 1, true) {
            return false;
        }
        self.core.memcgs[memcg as usize].nr_pagetables += 1;
        self.core.files[file.mapping as usize].set_pte_table(region, memcg);
        true
    }

    /// Process exit / munmap of a file mapping: PTEs go, page-table pages
    /// are freed and uncharged; the folios stay cached.
    pub fn exit_mmap(&mut self, mapping: u32) {
        self.unmap_mapping(mapping);
        let (n, memcg) = self.core.files[mapping as usize].free_pte_tables();
        if n > 0 {
            self.core.memcgs[memcg as usize].nr_pagetables -= n;
            self.core.mem_cgroup_uncharge(memcg, n);
        }
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

    /// Called by reclaim once an anonymous folio is written to swap.
    pub fn anon_swapped_out(
        &mut self,
        mapping: u32,
        index: u64,
        shadow: super::workingset::Shadow,
    ) {
        self.files[mapping as usize].set_swap_entry(index, shadow);
        self.workingset_update_node(mapping, index, 0);
        self.mm_counter_move(mapping, super::mmap::MM_ANONPAGES, super::mmap::MM_SWAPENTS);
    }
}

impl<P: ReclaimPolicy> Kernel<P> {
    /// A user access to page `index` of an anonymous region (modelled as an
    /// address space of its own): a present page is a PTE hit; an empty one
    /// is do_anonymous_page(); a swap entry is do_swap_page(), a major
    /// fault reading from the swap device. Returns false on OOM.
    pub fn anon_access(&mut self, space: u32, index: u64, memcg: MemcgId, write: bool) -> bool {
        use super::filemap::Slot;
        use super::folio::pg;
        match self.core.files[space as usize].slot(index) {
            Slot::Folio(id) => {
                let f = self.core.folios.get_mut(id);
                f.set(pg::PTE_YOUNG);
                if write {
                    f.set(pg::DIRTY);
                }
                self.core.cpu(self.core.cost.touch_mapped);
                true
            }
            Slot::Empty | Slot::Shadow(_) => {
                self.core.count(memcg, Item::PGFAULT, 1);
                self.core.cpu(self.core.cost.minor_fault);
                self.core.in_lru_fault = true;
                let ok = self.add_anon_folio(space, index, memcg, None);
                self.core.in_lru_fault = false;
                ok
            }
            Slot::Swap(shadow) => {
                self.core.count(memcg, Item::PGFAULT, 1);
                self.core.count(memcg, Item::PGMAJFAULT, 1);
                self.core.count(memcg, Item::PSWPIN, 1);
                self.core
                    .count(memcg, Item::PGPGIN, super::PAGE_SIZE / 1024);
                self.core.cpu(self.core.cost.minor_fault);
                self.core.files[space as usize].clear_swap_entry(index);
                self.core.workingset_update_node(space, index, memcg);
                self.core.swap.free_slot();
                self.core
                    .mm_counter_move(space, super::mmap::MM_SWAPENTS, super::mmap::MM_ANONPAGES);
                let done = self.core.dev.submit(self.core.now, super::PAGE_SIZE, false);
                self.core.wait_until(done);
                self.core.in_lru_fault = true;
                let ok = self.add_anon_folio(space, index, memcg, Some(shadow));
                self.core.in_lru_fault = false;
                ok
            }
        }
    }

    fn add_anon_folio(
        &mut self,
        space: u32,
        index: u64,
        memcg: MemcgId,
        shadow: Option<super::workingset::Shadow>,
    ) -> bool {
        use super::folio::pg;
        let Some(id) = self.alloc_folio(memcg, true) else {
            return false;
        };
        {
            let f = self.core.folios.get_mut(id);
            f.mapping = space;
            f.index = index as u32;
            f.flags = pg::SWAPBACKED | pg::UPTODATE | pg::MAPPED | pg::PTE_YOUNG | pg::DIRTY;
        }
        self.core.files[space as usize].set_folio_pub(index, id);
        self.core.workingset_update_node(space, index, memcg);
        self.core.memcgs[memcg as usize].nr_anon += 1;
        self.core.memcgs[memcg as usize].nr_mapped += 1;
        if shadow.is_none() {
            let owner = self.core.files[space as usize].owner;
            if let Some(mm) = self.core.mms.get_mut(owner as usize) {
                mm.rss[super::mmap::MM_ANONPAGES] += 1;
            }
        }
        if let Some(s) = shadow {
            self.policy.workingset_refault(&mut self.core, id, s);
        }
        self.policy.folio_add_lru(&mut self.core, id);
        true
    }
}
