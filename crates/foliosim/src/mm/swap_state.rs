//! The swap cache and swap readahead (mm/swap_state.c, mm/swap_table.h;
//! Linux 6.18). A folio given a slot by folio_alloc_swap() sits in the swap
//! cache (PG_swapcache, its slot's table entry) while it is written out and
//! until __remove_mapping() replaces it by a shadow entry
//! (workingset_eviction); swap-in looks the slot up, and readahead brings
//! neighbouring slots into the cache unmapped, PG_readahead set, for a later
//! fault to find (swap_ra / swap_ra_hit).

use super::filemap::Slot;
use super::folio::{pg, FolioId};
use super::swapfile::{SwapInfo, SwapOffset, SWAP_HAS_CACHE};
use super::vmscan::ReclaimPolicy;
use super::vmstat::Item;
use super::workingset::Shadow;
use super::{Core, Kernel};

const TABLE_SHADOW: u64 = 1 << 63;

/// SWAP_RA_ORDER_CEILING: the VMA readahead window is at most 1 << 5 pages.
pub const SWAP_RA_ORDER_CEILING: u32 = 5;

/// SWAP_RA_HITS_MAX: the hits field of swap_readahead_info is
/// SWAP_RA_WIN_SHIFT (PAGE_SHIFT / 2) bits wide.
pub const SWAP_RA_HITS_MAX: u32 = (1 << (super::PAGE_SHIFT / 2)) - 1;

/// vma->swap_readahead_info: the last fault's page, window and hits.
#[derive(Clone, Copy, Debug, Default)]
pub struct VmaRa {
    pub prev_index: u64,
    pub win: u32,
    pub hits: u32,
}

/// swap_state.c's readahead globals.
#[derive(Clone, Debug, Default)]
pub struct SwapRaState {
    /// swapin_nr_pages()'s prev_offset and last_readahead_pages.
    pub prev_offset: u32,
    pub last_readahead_pages: u32,
    /// swapin_readahead_hits.
    pub hits: u32,
    /// Per anon space (VMA): swap_readahead_info.
    pub vma: Vec<VmaRa>,
    /// Reads gathered under one plug: (folio, slot), submitted as runs of
    /// contiguous slots (swap_read_unplug).
    pub plug: Vec<(FolioId, SwapOffset)>,
}

impl SwapInfo {
    /// swap_cache_get_folio() without the readahead update.
    #[inline]
    pub fn swap_cache_folio(&self, off: SwapOffset) -> Option<FolioId> {
        let v = self.table[off as usize];
        (v != 0 && v & TABLE_SHADOW == 0).then(|| (v - 1) as FolioId)
    }

    /// get_shadow_from_swap_cache().
    #[inline]
    pub fn swap_cache_shadow(&self, off: SwapOffset) -> Option<Shadow> {
        let v = self.table[off as usize];
        (v & TABLE_SHADOW != 0).then_some(Shadow(v & !TABLE_SHADOW))
    }

    /// __swap_cache_add_folio(): the slot (SWAP_HAS_CACHE already taken)
    /// now holds the folio.
    #[inline]
    pub fn swap_cache_add(&mut self, off: SwapOffset, id: FolioId) {
        self.swap_cache_add_nr(off, id, 1);
    }

    /// __swap_cache_add_folio() of a folio of `nr` pages: each of its
    /// slots, from `off` (folio->swap), points at it.
    #[inline]
    pub fn swap_cache_add_nr(&mut self, off: SwapOffset, id: FolioId, nr: u64) {
        for o in off as usize..off as usize + nr as usize {
            debug_assert!(self.swap_map[o] & SWAP_HAS_CACHE != 0);
            self.table[o] = id as u64 + 1;
        }
        self.set_folio_swap(id, off);
    }

    /// Folios in the swap cache (nr_swapcached).
    pub fn nr_swapcached(&self) -> u64 {
        self.table
            .iter()
            .filter(|&&v| v != 0 && v & TABLE_SHADOW == 0)
            .count() as u64
    }
}

impl Core {
    /// Drops SWAP_HAS_CACHE or one PTE reference from a slot and frees it
    /// once nothing refers to it (swap_entries_put_cache / swap_put_entries
    /// -> swap_entries_free): the memcg's swap charge and zram's copy go.
    pub fn swap_put(&mut self, off: SwapOffset, cache: bool) {
        let m = &mut self.swap.swap_map[off as usize];
        if cache {
            debug_assert!(*m & SWAP_HAS_CACHE != 0);
            *m &= !SWAP_HAS_CACHE;
        } else {
            debug_assert!(*m & !SWAP_HAS_CACHE > 0);
            *m -= 1;
        }
        if *m == 0 {
            let memcg = self.swap.swap_entry_free(off);
            self.mem_cgroup_uncharge_swap(memcg, 1);
            if !cache {
                // The last reference to data only on swap: its memsw
                // charge goes with it.
                self.memcg1_swap_account(memcg, -1);
            }
            self.zram_slot_free_notify(off);
        }
    }

    /// folio_alloc_swap() (6.18's add_to_swap): charge the memcg's swap
    /// (mem_cgroup_try_charge_swap), take the folio's slots (a large folio
    /// a naturally aligned run of them, swapfile.rs) and put it in the
    /// swap cache, dirty so pageout() writes it. False when swap is full,
    /// no run for a large folio is left or the memcg's swap limit is
    /// reached: reclaim keeps the folio (or splits a large one).
    pub fn folio_alloc_swap(&mut self, id: FolioId) -> bool {
        let f = *self.folios.get(id);
        let (order, nr) = (f.order(), f.nr_pages());
        if self.swap.nr_free() < nr {
            return false;
        }
        if !self.mem_cgroup_try_charge_swap(f.memcg, nr) {
            return false;
        }
        let Some(off) = self
            .swap
            .get_swap_pages(f.memcg, (f.mapping, f.index), order)
        else {
            self.mem_cgroup_uncharge_swap(f.memcg, nr);
            return false;
        };
        self.swap.swap_cache_add_nr(off, id, nr);
        let f = self.folios.get_mut(id);
        f.set(pg::SWAPCACHE | pg::DIRTY);
        true
    }

    /// folio_free_swap(): a folio whose slots nothing else needs (no PTE
    /// holds any of its entries: folio_swapped()) leaves the swap cache
    /// and the slots are freed; not while under writeback.
    pub fn folio_free_swap(&mut self, id: FolioId) -> bool {
        let f = self.folios.get(id);
        if !f.test(pg::SWAPCACHE) || f.test(pg::WRITEBACK) {
            return false;
        }
        let nr = f.nr_pages() as u32;
        let off = self.swap.folio_swap(id);
        if (off..off + nr).any(|o| self.swap.swap_count(o) != 0) {
            return false;
        }
        self.swap_cache_del_folio(id, None);
        // The data now lives only in memory: it must be written again.
        self.folios.get_mut(id).set(pg::DIRTY);
        true
    }

    /// __swap_cache_del_folio(): the folio leaves the swap cache, leaving
    /// `shadow` in each of its slots (None when they are being freed).
    pub fn swap_cache_del_folio(&mut self, id: FolioId, shadow: Option<Shadow>) {
        let off = self.swap.folio_swap(id);
        let f = self.folios.get_mut(id);
        f.clear(pg::SWAPCACHE);
        let nr = f.nr_pages() as u32;
        let entry = shadow.map_or(0, |s| s.0 | TABLE_SHADOW);
        for o in off..off + nr {
            self.swap.table[o as usize] = entry;
            self.swap_put(o, true);
            if self.swap.swap_map[o as usize] != 0 {
                // memcg1_swapout(): the data is now only on swap; the
                // entry keeps the memsw charge the folio had.
                let memcg = self.swap.swap_cgroup[o as usize];
                self.memcg1_swap_account(memcg, 1);
            }
        }
    }
}

impl<P: ReclaimPolicy> Kernel<P> {
    /// __read_swap_cache_async(): the slot's folio from the swap cache, or
    /// a new one allocated, charged to the slot's memcg
    /// (mem_cgroup_swapin_charge_folio), added to the cache and the LRU
    /// (with workingset_refault() for the slot's shadow) and queued for
    /// reading. None when the slot is no longer in use or memory ran out.
    /// The bool says whether a new folio was allocated.
    fn read_swap_cache_async(
        &mut self,
        off: SwapOffset,
        may_retry: bool,
    ) -> Option<(FolioId, bool)> {
        if let Some(id) = self.core.swap.swap_cache_folio(off) {
            return Some((id, false));
        }
        // swap_entry_swapped(): nothing to read for a freed slot.
        if self.core.swap.swap_count(off) == 0 {
            return None;
        }
        let memcg = self.core.swap.swap_cgroup[off as usize];
        let memcg = if self.core.memcgs[memcg as usize].oom_killed {
            0
        } else {
            memcg
        };
        let id = self.alloc_folio(memcg, may_retry)?;
        // The allocation may have reclaimed: the slot could have been
        // populated meanwhile (swapcache_prepare failing in the kernel).
        if let Some(other) = self.core.swap.swap_cache_folio(off) {
            self.core.folios.get_mut(id).flags = 0;
            self.core.free_folio(id);
            return Some((other, false));
        }
        let (space, index) = self.core.swap.owner[off as usize];
        {
            let f = self.core.folios.get_mut(id);
            f.mapping = space;
            f.index = index;
            f.flags = pg::SWAPBACKED | pg::SWAPCACHE | pg::LOCKED;
        }
        self.core.swap.swap_map[off as usize] |= SWAP_HAS_CACHE;
        let shadow = self.core.swap.swap_cache_shadow(off);
        self.core.swap.swap_cache_add(off, id);
        // memcg1_swapin(): the new folio carries the memsw charge now.
        let slot_memcg = self.core.swap.swap_cgroup[off as usize];
        self.core.memcg1_swap_account(slot_memcg, -1);
        self.core.memcgs[memcg as usize].nr_anon += 1;
        if let Some(s) = shadow {
            self.policy.workingset_refault(&mut self.core, id, s);
        }
        self.folio_add_lru(id);
        Some((id, true))
    }

    /// A folio newly allocated for a swap-in that skips the swap cache
    /// (do_swap_page()'s and shmem_swap_alloc_folio()'s synchronous
    /// path): it takes pages [start, start + nr) of `mapping`, dirty (its
    /// data is only in memory once the slots are freed), the shadow of
    /// its first slot goes to workingset_refault(), it joins the LRU and
    /// is read (pswpin per page, swpin per large folio).
    pub(super) fn swap_read_new_folio(
        &mut self,
        id: FolioId,
        mapping: u32,
        start: u64,
        first: SwapOffset,
        memcg: super::memcontrol::MemcgId,
    ) {
        let nr = self.core.folios.get(id).nr_pages();
        {
            let f = self.core.folios.get_mut(id);
            f.mapping = mapping;
            f.index = start as u32;
            f.set_flags_keep_order(pg::SWAPBACKED | pg::UPTODATE | pg::DIRTY);
        }
        self.core.memcgs[memcg as usize].nr_anon += nr;
        if let Some(s) = self.core.swap.swap_cache_shadow(first) {
            self.policy.workingset_refault(&mut self.core, id, s);
        }
        self.folio_add_lru(id);
        self.core.swap_read_folio_sync(id);
    }

    /// swap_read_unplug(): submit the reads gathered so far.
    #[inline]
    fn swap_read_unplug(&mut self) {
        self.core.swap_read_plugged();
    }

    /// swap_update_readahead() on a swap-cache hit in do_swap_page():
    /// PG_readahead cleared, swap_ra_hit counted, the hit fed to the
    /// readahead window.
    pub fn swap_update_readahead(&mut self, id: FolioId, space: u32, index: u64) {
        let f = self.core.folios.get_mut(id);
        let readahead = f.test_clear(pg::READAHEAD);
        f.clear(pg::UNUSED_MARKS);
        let memcg = f.memcg;
        let vma_ra = self.swap_use_vma_readahead();
        if vma_ra {
            let ra = self.vma_ra(space);
            ra.prev_index = index;
            if readahead {
                ra.hits = (ra.hits + 1).min(SWAP_RA_HITS_MAX);
            }
        }
        if readahead {
            self.core.count(memcg, Item::SWAP_RA_HIT, 1);
            if !vma_ra {
                self.core.swap.ra.hits += 1;
            }
        }
    }

    /// swap_use_vma_readahead(): /sys/kernel/mm/swap/vma_ra_enabled and no
    /// rotational swap device (nr_rotate_swap).
    #[inline]
    fn swap_use_vma_readahead(&self) -> bool {
        self.core.cfg.vma_ra_enabled && self.core.swap.flags & super::swapfile::SWP_SOLIDSTATE != 0
    }

    fn vma_ra(&mut self, space: u32) -> &mut VmaRa {
        let v = &mut self.core.swap.ra.vma;
        if v.len() <= space as usize {
            v.resize(space as usize + 1, VmaRa::default());
        }
        &mut v[space as usize]
    }

    /// swapin_readahead(): the faulting slot and its readahead window
    /// read into the swap cache; returns the faulting slot's folio.
    pub fn swapin_readahead(&mut self, off: SwapOffset, space: u32, index: u64) -> Option<FolioId> {
        if self.swap_use_vma_readahead() {
            self.swap_vma_readahead(off, space, index)
        } else {
            self.swap_cluster_readahead(off)
        }
    }

    /// swap_cluster_readahead(): the aligned block of swapin_nr_pages()
    /// slots around the faulting one (the header slot skipped).
    fn swap_cluster_readahead(&mut self, off: SwapOffset) -> Option<FolioId> {
        let mask = self.swapin_nr_pages(off) - 1;
        if mask > 0 {
            let start = (off & !mask).max(1);
            let end = (off | mask).min(self.core.swap.max - 1);
            for o in start..=end {
                self.swap_ra_one(o, o != off);
            }
            self.swap_read_unplug();
        }
        self.swap_read_target(off)
    }

    /// swap_cluster_readahead() for shmem_swapin_cluster().
    pub fn swap_cluster_readahead_pub(&mut self, off: SwapOffset) -> Option<FolioId> {
        self.swap_cluster_readahead(off)
    }

    /// The faulting slot itself, read if readahead did not bring it.
    fn swap_read_target(&mut self, off: SwapOffset) -> Option<FolioId> {
        let (id, allocated) = self.read_swap_cache_async(off, true)?;
        if allocated {
            self.core.swap.ra.plug.push((id, off));
            self.swap_read_unplug();
        }
        Some(id)
    }

    /// One slot of a readahead window: read if not cached; a page other
    /// than the faulting one is marked PG_readahead and counted in swap_ra.
    fn swap_ra_one(&mut self, o: SwapOffset, ahead: bool) {
        let Some((id, allocated)) = self.read_swap_cache_async(o, !ahead) else {
            return;
        };
        if !allocated {
            return;
        }
        self.core.swap.ra.plug.push((id, o));
        if ahead {
            let f = self.core.folios.get_mut(id);
            f.set(pg::READAHEAD | pg::RA_UNUSED);
            let memcg = f.memcg;
            self.core.count(memcg, Item::SWAP_RA, 1);
        }
    }

    /// swapin_nr_pages() / __swapin_nr_pages(): the cluster readahead
    /// window, grown by hits (hits + 2 rounded up to a power of two, at
    /// least 4), capped at 1 << page_cluster, shrinking at most by half per
    /// fault; one page when there were no hits and the fault does not
    /// follow the previous one.
    fn swapin_nr_pages(&mut self, off: SwapOffset) -> u32 {
        let max_pages = 1u32 << self.core.cfg.page_cluster.min(31);
        if max_pages <= 1 {
            return 1;
        }
        let ra = &mut self.core.swap.ra;
        let hits = std::mem::take(&mut ra.hits);
        let pages = swapin_window(
            ra.prev_offset as u64,
            off as u64,
            hits,
            max_pages,
            ra.last_readahead_pages,
        );
        if hits == 0 {
            ra.prev_offset = off;
        }
        ra.last_readahead_pages = pages;
        pages
    }

    /// swap_vma_readahead(): the PTEs around the fault (swap_vma_ra_win:
    /// the window placed ahead of a forward-sequential fault, behind a
    /// backward one, centred otherwise; within the VMA and its page table)
    /// whose entries are in swap are read into the swap cache.
    fn swap_vma_readahead(&mut self, off: SwapOffset, space: u32, index: u64) -> Option<FolioId> {
        let page_cluster = self.core.cfg.page_cluster;
        let nr = self.core.files[space as usize].nr_pages();
        let ra = *self.vma_ra(space);
        let max_win = 1u32 << page_cluster.min(SWAP_RA_ORDER_CEILING);
        let (lo, hi) = if max_win == 1 {
            (index, index + 1)
        } else {
            let win = swapin_window(ra.prev_index, index, ra.hits, max_win, ra.win);
            let r = self.vma_ra(space);
            r.win = win;
            r.hits = 0;
            r.prev_index = index;
            let win = win as u64;
            if win == 1 {
                (index, index + 1)
            } else {
                let (l, r) = if index == ra.prev_index + 1 {
                    (index, index + win)
                } else if ra.prev_index == index + 1 {
                    ((index + 1).saturating_sub(win), index + 1)
                } else {
                    let left = (win - 1) / 2;
                    (index.saturating_sub(left), index + win - left)
                };
                // The PMD the fault is in (PTRS_PER_PTE = 512).
                let pmd = index / 512 * 512;
                (l.max(pmd), r.min(pmd + 512).min(nr))
            }
        };
        for i in lo..hi {
            let Slot::Swap(o) = self.core.files[space as usize].slot(i) else {
                continue;
            };
            self.swap_ra_one(o, i != index);
        }
        self.swap_read_unplug();
        self.swap_read_target(off)
    }
}

/// __swapin_nr_pages(): the readahead window from the previous fault's
/// offset, the hits since and the previous window.
pub fn swapin_window(prev: u64, cur: u64, hits: u32, max_pages: u32, prev_win: u32) -> u32 {
    let mut pages = hits + 2;
    if pages == 2 {
        if cur != prev + 1 && cur + 1 != prev {
            pages = 1;
        }
    } else {
        let mut roundup = 4;
        while roundup < pages {
            roundup <<= 1;
        }
        pages = roundup;
    }
    pages.min(max_pages).max(prev_win / 2)
}

#[cfg(test)]
mod tests {
    use super::swapin_window;
    #[test]
    fn window_grows_with_hits_and_shrinks_by_half() {
        // No hits, random fault: one page; sequential: two.
        assert_eq!(swapin_window(10, 50, 0, 8, 0), 1);
        assert_eq!(swapin_window(10, 11, 0, 8, 0), 2);
        // 3 hits -> 5 -> rounded to 8; capped by page-cluster.
        assert_eq!(swapin_window(10, 50, 3, 8, 0), 8);
        assert_eq!(swapin_window(10, 50, 3, 4, 0), 4);
        // Shrinks no faster than half the last window.
        assert_eq!(swapin_window(10, 50, 0, 8, 8), 4);
    }
}

impl Core {
    /// Swap invariants: each slot's count equals the PTEs holding its
    /// entry, SWAP_HAS_CACHE is set exactly for slots with a swap-cache
    /// folio (so slots in use = slots with entries or a cached folio),
    /// folio->swap and the table agree, each memcg's swap usage equals the
    /// slots charged to it, each mm's MM_SWAPENTS / MM_ANONPAGES equal its
    /// swap entries / mapped anon folios, and zram's pool fits its data.
    pub fn check_swap_invariants(&self) -> Result<(), String> {
        let si = &self.swap;
        if si.max == 0 {
            return Ok(());
        }
        si.check()?;
        let mut refs = vec![0u32; si.max as usize];
        let mut rss = vec![[0u64; 2]; self.mms.len()];
        for (space, a) in self.files.iter().enumerate() {
            // Anonymous spaces made without an mm (tests) count for the
            // slots but have no rss to check.
            let owner = (a.owner != super::mmap::NO_MM).then_some(a.owner as usize);
            for idx in a.populated(0, u64::MAX) {
                match a.slot(idx) {
                    Slot::Swap(o) => {
                        refs[o as usize] += 1;
                        if let Some(mm) = owner {
                            rss[mm][1] += 1;
                        }
                    }
                    Slot::Folio(id) => {
                        let f = self.folios.get(id);
                        // A large (file) folio fills the slots of its
                        // pages from its first index.
                        if f.mapping != space as u32
                            || idx.wrapping_sub(f.index as u64) >= f.nr_pages()
                        {
                            return Err(format!(
                                "{space}:{idx}: folio {id} says {}:{}",
                                f.mapping, f.index
                            ));
                        }
                        if let Some(mm) = owner {
                            rss[mm][0] += 1;
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut charged = vec![0u64; self.memcgs.len()];
        for o in 1..si.max {
            let m = si.swap_map[o as usize];
            let count = (m & !SWAP_HAS_CACHE) as u32;
            if count != refs[o as usize] {
                return Err(format!(
                    "swap slot {o}: count {count} but {} PTEs hold it",
                    refs[o as usize]
                ));
            }
            let cached = si.swap_cache_folio(o);
            if (m & SWAP_HAS_CACHE != 0) != cached.is_some() {
                return Err(format!(
                    "swap slot {o}: SWAP_HAS_CACHE {} but cache folio {cached:?}",
                    m & SWAP_HAS_CACHE != 0
                ));
            }
            if let Some(id) = cached {
                let f = self.folios.get(id);
                // A large folio holds a run of slots from folio->swap.
                if f.test(pg::FREE)
                    || !f.test(pg::SWAPCACHE)
                    || o.wrapping_sub(si.folio_swap(id)) as u64 >= f.nr_pages()
                {
                    return Err(format!(
                        "swap slot {o}: cache folio {id} flags {:#x} swap {}",
                        f.flags,
                        si.folio_swap(id)
                    ));
                }
            }
            if m != 0 {
                charged[si.swap_cgroup[o as usize] as usize] += 1;
            }
        }
        for (id, f) in self.folios.f.iter().enumerate() {
            if !f.test(pg::FREE) && f.test(pg::SWAPCACHE) {
                let o = si.folio_swap(id as FolioId);
                if si.swap_cache_folio(o) != Some(id as FolioId) {
                    return Err(format!(
                        "folio {id} in the swap cache at {o} but the slot says otherwise"
                    ));
                }
            }
        }
        // Each level's counters: its own slots plus its children's. Own
        // swap-only slots (no cache folio) hold the v1 memsw charge.
        let mut swap_only = vec![0u64; self.memcg_swap.len()];
        for o in 1..si.max {
            let m = si.swap_map[o as usize];
            if m != 0 && m != super::swapfile::SWAP_MAP_BAD && si.swap_cache_folio(o).is_none() {
                swap_only[si.swap_cgroup[o as usize] as usize] += 1;
            }
        }
        for (m, s) in self.memcg_swap.iter().enumerate() {
            let (want, want1) = self
                .memcg_subtree(m as super::memcontrol::MemcgId)
                .fold((0, 0), |(a, b), c| {
                    (a + charged[c as usize], b + swap_only[c as usize])
                });
            if s.usage != want || s.memsw_swap != want1 {
                return Err(format!(
                    "memcg {m}: swap usage {} / memsw swap {} but its subtree charged {want} / {want1}",
                    s.usage, s.memsw_swap
                ));
            }
            let mc = &self.memcgs[m];
            if m != 0 && mc.swap_max.is_some_and(|l| s.usage > l) {
                return Err(format!("memcg {m}: swap usage {} over swap.max", s.usage));
            }
            if m != 0
                && !mc.limit_overrun
                && mc
                    .memsw_limit
                    .is_some_and(|l| self.memcg_memsw_usage(m as _) > l)
            {
                return Err(format!(
                    "memcg {m}: memsw usage {} over memsw.limit",
                    self.memcg_memsw_usage(m as _)
                ));
            }
        }
        for (i, mm) in self.mms.iter().enumerate() {
            let want = [
                mm.rss[super::mmap::MM_ANONPAGES],
                mm.rss[super::mmap::MM_SWAPENTS],
            ];
            if want != rss[i] {
                return Err(format!(
                    "mm {i}: rss anon/swapents {want:?} but its PTEs say {:?}",
                    rss[i]
                ));
            }
        }
        if let Some(z) = &si.zram {
            if z.pool.len() as u64 != z.stored_bytes.div_ceil(super::PAGE_SIZE) {
                return Err(format!(
                    "zram: {} pool pages for {} bytes",
                    z.pool.len(),
                    z.stored_bytes
                ));
            }
        }
        Ok(())
    }
}
