//! Processes' address spaces (struct mm_struct; mm/mmap.c, mm/vma.c and
//! kernel/fork.c's mm_alloc / exit_mmap): anonymous VMAs, the rss counters
//! the OOM killer reads, munmap and exit freeing anonymous memory and swap
//! entries. Processes themselves (threads, steps) are the workload's: the
//! kernel model only knows their mms.
//!
//! An anonymous VMA is modelled as an address space of its own (its slots
//! hold the folio, the swap entry or nothing for each page), so the anon
//! fault path and reclaim find a page by (mapping, index) as for files.

use super::filemap::Slot;
use super::folio::pg;
use super::memcontrol::MemcgId;
use super::vmscan::ReclaimPolicy;
use super::Kernel;

pub type MmId = u32;
/// The owner of a file's address space: no mm.
pub const NO_MM: MmId = u32::MAX;

/// enum mm_counter (include/linux/mm_types_task.h).
pub const MM_FILEPAGES: usize = 0;
pub const MM_ANONPAGES: usize = 1;
pub const MM_SWAPENTS: usize = 2;
pub const MM_SHMEMPAGES: usize = 3;
pub const NR_MM_COUNTERS: usize = 4;

/// struct mm_struct, as far as reclaim and the OOM killer look at it.
#[derive(Clone, Debug)]
pub struct MmStruct {
    /// The memcg of the mm's owner task (mm->owner's css).
    pub memcg: MemcgId,
    /// get_mm_counter(): pages by kind.
    pub rss: [u64; NR_MM_COUNTERS],
    /// Page-table pages of its anonymous regions (mm_pgtables_bytes /
    /// PAGE_SIZE).
    pub nr_ptes: u64,
    /// CPUs in mm_cpumask: one per thread of the process, each of which
    /// the workload runs on a CPU of its own (the oracle pins them so).
    pub nr_cpus: u32,
    /// /proc/PID/oom_score_adj of the owner.
    pub oom_score_adj: i32,
    /// The anonymous VMAs still mapped (their address-space ids).
    pub anon_vmas: Vec<u32>,
    /// exit_mmap() ran: the mm has no memory left.
    pub exited: bool,
    /// The OOM killer chose this mm's task (SIGKILL sent).
    pub oom_killed: bool,
}

impl<P: ReclaimPolicy> Kernel<P> {
    /// mm_alloc() for a new process in `memcg`.
    pub fn mm_alloc(&mut self, memcg: MemcgId, oom_score_adj: i32) -> MmId {
        let id = self.core.mms.len() as MmId;
        self.core.mms.push(MmStruct {
            memcg,
            rss: [0; NR_MM_COUNTERS],
            nr_ptes: 0,
            nr_cpus: 1,
            oom_score_adj,
            anon_vmas: Vec::new(),
            exited: false,
            oom_killed: false,
        });
        id
    }

    /// mmap(MAP_PRIVATE|MAP_ANONYMOUS) of `bytes`: a VMA with no pages yet.
    /// Returns the anonymous space's id for anon_access().
    pub fn mmap_anon(&mut self, mm: MmId, bytes: u64) -> u32 {
        let space = self.core.add_file(bytes);
        let a = &mut self.core.files[space as usize];
        a.owner = mm;
        self.core.mms[mm as usize].anon_vmas.push(space);
        space
    }

    /// munmap() of an anonymous VMA (zap_pte_range): its folios leave the
    /// LRU and are freed and uncharged, its swap entries are freed
    /// (free_swap_and_cache), no shadow survives.
    pub fn munmap_anon(&mut self, mm: MmId, space: u32) {
        let vmas = &mut self.core.mms[mm as usize].anon_vmas;
        let Some(pos) = vmas.iter().position(|&s| s == space) else {
            return;
        };
        vmas.swap_remove(pos);
        let n = self.core.files[space as usize].nr_pages();
        self.zap_anon_range(mm, space, 0, n);
        self.core.cpu(self.core.cost.range_entry * n);
        self.free_pgtables(space);
    }

    /// madvise(MADV_DONTNEED) of pages [first, end) of an anonymous VMA
    /// (zap_page_range_single()): as munmap for those pages, the VMA and
    /// its page tables stay; a later touch faults a fresh zero-filled
    /// page. A large folio the range covers only in part is split at the
    /// range's edges and the pieces inside go: the kernel unmaps those
    /// pages and queues the folio for a deferred split, which frees them
    /// under memory pressure; the model frees them at once. One it cannot
    /// split (in the swap cache, under writeback, off the LRU) keeps its
    /// pages mapped.
    pub fn madvise_dontneed_anon(&mut self, mm: MmId, space: u32, first: u64, end: u64) {
        let end = end.min(self.core.files[space as usize].nr_pages());
        if first >= end {
            return;
        }
        self.zap_anon_range(mm, space, first, end);
        self.core.cpu(self.core.cost.range_entry * (end - first));
    }

    /// zap_pte_range() over pages [first, end) of an anonymous VMA.
    fn zap_anon_range(&mut self, mm: MmId, space: u32, first: u64, end: u64) {
        let mut next = first;
        while let Some(idx) = self.core.files[space as usize].next_populated(next, end) {
            next = idx + 1;
            match self.core.files[space as usize].slot(idx) {
                Slot::Empty => {}
                Slot::Folio(id) => {
                    let f = self.core.folios.get(id);
                    let (fi, nr) = (f.index as u64, f.nr_pages());
                    if fi < first || fi + nr > end {
                        // Part of a large folio: split at the edges inside
                        // it, then look at this page again.
                        let swapcache = f.test(pg::SWAPCACHE);
                        let at = if fi < first { first } else { end };
                        if !swapcache && self.try_folio_split(id, at) {
                            next = idx;
                        } else {
                            next = fi + nr;
                        }
                        continue;
                    }
                    let f = self.core.folios.get_mut(id);
                    let memcg = f.memcg;
                    // A large (mTHP) folio is met at its first page and
                    // zapped whole: its PTEs are all in the range.
                    next = fi + nr;
                    let mapped = f.test(pg::MAPPED);
                    f.clear(pg::MAPPED | pg::PTE_YOUNG | pg::DIRTY);
                    if mapped {
                        self.core.memcgs[memcg as usize].nr_mapped -= nr;
                    }
                    for i in fi..fi + nr {
                        self.core.files[space as usize].replace_with_shadow(i, None);
                        self.core.workingset_update_node(space, i, memcg);
                    }
                    let rss = &mut self.core.mms[mm as usize].rss[MM_ANONPAGES];
                    *rss = rss.saturating_sub(nr);
                    // free_swap_cache(): the unmapped folio leaves the swap
                    // cache; one under writeback stays there until reclaim
                    // finds it.
                    let f = self.core.folios.get(id);
                    if f.test(pg::SWAPCACHE) && !self.core.folio_free_swap(id) {
                        continue;
                    }
                    self.free_anon_folio(id);
                }
                Slot::Shadow(_) => {
                    self.core.files[space as usize].clear_shadow(idx);
                    self.core.workingset_update_node(space, idx, 0);
                }
                Slot::Zero => {
                    self.core.files[space as usize].clear_swap_entry(idx);
                    self.core.workingset_update_node(space, idx, 0);
                }
                Slot::Swap(off) => {
                    self.core.files[space as usize].clear_swap_entry(idx);
                    self.core.workingset_update_node(space, idx, 0);
                    let rss = &mut self.core.mms[mm as usize].rss[MM_SWAPENTS];
                    *rss = rss.saturating_sub(1);
                    self.free_swap_and_cache(off);
                }
            }
        }
    }

    /// free_swap_and_cache(): the PTE's reference to the slot goes; a
    /// slot left only to the swap cache takes its folio with it
    /// (__try_to_reclaim_swap) unless it is under writeback or, for a
    /// large folio, another of its slots is still referenced.
    pub fn free_swap_and_cache(&mut self, off: super::swapfile::SwapOffset) {
        self.core.swap_put(off, false);
        if self.core.swap.swap_count(off) != 0 {
            return;
        }
        let Some(id) = self.core.swap.swap_cache_folio(off) else {
            return;
        };
        if self.core.folios.get(id).test(pg::MAPPED) || !self.core.folio_free_swap(id) {
            return;
        }
        self.free_anon_folio(id);
    }

    /// The last reference to an unmapped anonymous folio outside the swap
    /// cache goes: off the LRU, freed and uncharged, whole.
    fn free_anon_folio(&mut self, id: super::folio::FolioId) {
        let f = self.core.folios.get(id);
        let (memcg, nr) = (f.memcg, f.nr_pages());
        self.policy.folio_del_lru(&mut self.core, id);
        self.core.memcgs[memcg as usize].nr_anon -= nr;
        self.core.folios.get_mut(id).set_flags_keep_order(0);
        self.core.free_folio(id);
    }

    /// exit_mmap(): every anonymous VMA goes.
    pub fn exit_mm(&mut self, mm: MmId) {
        while let Some(&space) = self.core.mms[mm as usize].anon_vmas.last() {
            self.munmap_anon(mm, space);
        }
        self.core.mms[mm as usize].exited = true;
    }
}
