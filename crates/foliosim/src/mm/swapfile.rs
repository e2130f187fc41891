//! Swap devices and slot allocation (mm/swapfile.c, Linux 6.18): one
//! swap_info_struct, its swap_map of per-slot counts, the cluster
//! allocator that hands out slots (folio_alloc_swap -> the per-cpu cluster,
//! then cluster_alloc_swap_entry's free / nonfull cluster lists), the
//! swap_cgroup record of which memcg a slot is charged to, and the
//! /proc/swaps totals. The swap cache itself (the slots' folios and shadows)
//! is mm/swap_state.rs; the I/O is mm/page_io.rs.
//!
//! The model has one CPU, so the per-cpu cluster is one "current cluster";
//! swap priorities do not matter with one device.

use std::collections::VecDeque;

use super::folio::{FolioId, NIL};
use super::memcontrol::MemcgId;
use super::SwapKind;

/// SWAPFILE_CLUSTER: slots per cluster (HPAGE_PMD_NR on x86-64).
pub const SWAPFILE_CLUSTER: u32 = 512;
/// SWAP_NR_ORDERS with THP_SWAP: slot runs of order 0 to PMD_ORDER.
pub const SWAP_NR_ORDERS: usize = 10;
/// SWAP_HAS_CACHE in swap_map: the slot's folio is in the swap cache.
pub const SWAP_HAS_CACHE: u8 = 0x40;
/// SWAP_MAP_BAD: the header page (offset 0) is never handed out.
pub const SWAP_MAP_BAD: u8 = 0x3f;
/// si->flags bits the model uses.
pub const SWP_SOLIDSTATE: u32 = 1 << 4;
pub const SWP_SYNCHRONOUS_IO: u32 = 1 << 12;

/// swp_offset() of a swap entry (the model's one device has type 0).
pub type SwapOffset = u32;

/// What a cluster is doing (struct swap_cluster_info's list membership).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ClusterState {
    Free,
    NonFull,
    Full,
    /// The per-cpu cluster: allocation goes on from `SwapInfo::next`.
    Current,
}

/// zram's compressed store (drivers/block/zram): each stored page takes
/// `comp_bytes` of zsmalloc memory; the zsmalloc pages come out of free
/// memory and are not charged to any memcg (zram, unlike zswap, has no
/// obj_cgroup accounting in 6.18). The frames are held as folio-table
/// entries flagged PG_zsmalloc so the page allocator's counts stay exact.
#[derive(Clone, Debug, Default)]
pub struct Zram {
    pub comp_bytes: u64,
    /// compr_data_size of /sys/block/zram0/mm_stat.
    pub stored_bytes: u64,
    /// Pages stored (orig_data_size / PAGE_SIZE).
    pub stored_pages: u64,
    /// zsmalloc's pages (mem_used_total / PAGE_SIZE).
    pub pool: Vec<FolioId>,
    /// Slots holding a compressed copy (zram's per-slot handle): a slot
    /// freed before it was ever written has nothing to free, a slot
    /// written again replaces its copy (zram_write_page frees the old one).
    pub stored: Vec<bool>,
}

/// struct swap_info_struct for the single swap device.
#[derive(Clone, Debug)]
pub struct SwapInfo {
    // The per-slot tables cost 1 + 2 + 8 + 8 bytes a slot (40 MiB for an
    // 8 GiB device) and the per-frame ones 12 bytes a page of RAM.
    pub kind: SwapKind,
    pub flags: u32,
    /// si->max: slots including the header page.
    pub max: u32,
    /// si->pages: usable slots.
    pub pages: u64,
    /// si->inuse_pages.
    pub inuse_pages: u64,
    /// Per slot: the swap count (PTEs holding the entry) | SWAP_HAS_CACHE.
    pub swap_map: Vec<u8>,
    /// lookup_swap_cgroup_id(): the memcg each used slot is charged to.
    pub swap_cgroup: Vec<MemcgId>,
    /// The page a slot holds: (anon space, index) of the PTE it was
    /// written from. The kernel finds a read-ahead folio's owner through
    /// rmap once it is mapped; the model keeps the pair so a read-ahead
    /// folio has its future mapping and index.
    pub owner: Vec<(u32, u32)>,
    /// The swap table (mm/swap_table.h in 6.18): per slot, the swap-cache
    /// folio (id + 1), a shadow (bit 63 set) or nothing. swap_state.rs.
    pub table: Vec<u64>,
    /// folio->swap for each folio frame in the swap cache. Grows as frames
    /// enter the swap cache (a frame never there reads 0), so it follows
    /// the frames used, not the RAM.
    folio_swap: Vec<SwapOffset>,
    /// When a swap-cache folio's read completes (folio locked until then);
    /// grows like folio_swap.
    folio_io_done: Vec<u64>,
    cluster_count: Vec<u16>,
    cluster_state: Vec<ClusterState>,
    /// ci->order: the order of the allocations a cluster serves, set by
    /// the first one into an empty cluster, reset when it empties.
    cluster_order: Vec<u8>,
    /// Whether a cluster has an entry queued on free / nonfull (lazy
    /// deletion: a popped entry whose state changed is skipped).
    cluster_queued: Vec<u8>,
    free_clusters: VecDeque<u32>,
    /// nonfull_clusters[order] and frag_clusters[order] as one list per
    /// order: partly used clusters serving that order.
    nonfull_clusters: [VecDeque<u32>; SWAP_NR_ORDERS],
    /// The per-cpu cluster of each order: percpu_swap_cluster.offset[order],
    /// where its next allocation starts; 0 = none.
    next: [u32; SWAP_NR_ORDERS],
    pub zram: Option<Zram>,
    /// Readahead state (swap_state.rs).
    pub ra: super::swap_state::SwapRaState,
}

const QUEUED_FREE: u8 = 1;
const QUEUED_NONFULL: u8 = 2;

impl SwapInfo {
    /// swapon of a device of `pages` pages (header included).
    /// `comp_ratio` is zram's.
    pub fn new(kind: SwapKind, pages: u64, comp_ratio: f64) -> Self {
        let max = if kind == SwapKind::None {
            0
        } else {
            pages.min(u32::MAX as u64) as u32
        };
        let nr_clusters = max.div_ceil(SWAPFILE_CLUSTER) as usize;
        let mut si = SwapInfo {
            kind,
            flags: 0,
            max,
            pages: (max as u64).saturating_sub(1),
            inuse_pages: 0,
            swap_map: vec![0; max as usize],
            swap_cgroup: vec![0; max as usize],
            owner: vec![(0, 0); max as usize],
            table: vec![0; max as usize],
            folio_swap: Vec::new(),
            folio_io_done: Vec::new(),
            cluster_count: vec![0; nr_clusters],
            cluster_state: vec![ClusterState::Free; nr_clusters],
            cluster_order: vec![0; nr_clusters],
            cluster_queued: vec![0; nr_clusters],
            free_clusters: VecDeque::with_capacity(nr_clusters),
            nonfull_clusters: Default::default(),
            next: [0; SWAP_NR_ORDERS],
            zram: None,
            ra: Default::default(),
        };
        if max == 0 {
            return si;
        }
        match kind {
            SwapKind::None => return si,
            // zram sets QUEUE_FLAG_SYNCHRONOUS and is non-rotational.
            SwapKind::Zram => {
                si.flags |= SWP_SYNCHRONOUS_IO | SWP_SOLIDSTATE;
                si.zram = Some(Zram {
                    comp_bytes: ((super::PAGE_SIZE as f64 / comp_ratio).round() as u64)
                        .clamp(1, super::PAGE_SIZE),
                    stored: vec![false; max as usize],
                    ..Default::default()
                });
            }
            SwapKind::Disk => {}
        }
        // The header page is marked bad (setup_swap_map_and_extents).
        si.swap_map[0] = SWAP_MAP_BAD;
        // A cluster with a short tail or holding the header counts those
        // slots as used so "full" means the same everywhere.
        for c in 0..nr_clusters {
            let start = c as u32 * SWAPFILE_CLUSTER;
            let end = (start + SWAPFILE_CLUSTER).min(max);
            let unusable = SWAPFILE_CLUSTER - (end - start) + (c == 0) as u32;
            si.cluster_count[c] = unusable as u16;
            si.cluster_state[c] = if unusable == 0 {
                ClusterState::Free
            } else if unusable < SWAPFILE_CLUSTER {
                ClusterState::NonFull
            } else {
                ClusterState::Full
            };
            si.queue(c as u32);
        }
        si
    }

    /// SWP_SOLIDSTATE: set for non-rotational disks (the caller knows the
    /// device profile).
    pub fn set_solidstate(&mut self, on: bool) {
        if on {
            self.flags |= SWP_SOLIDSTATE;
        } else {
            self.flags &= !SWP_SOLIDSTATE;
        }
    }

    #[inline]
    pub fn synchronous_io(&self) -> bool {
        self.flags & SWP_SYNCHRONOUS_IO != 0
    }

    /// get_nr_swap_pages(): free slots.
    #[inline]
    pub fn nr_free(&self) -> u64 {
        self.pages - self.inuse_pages
    }

    /// vm_swap_full(): more than half the swap in use.
    #[inline]
    pub fn vm_swap_full(&self) -> bool {
        self.nr_free() * 2 < self.pages
    }

    /// __swap_count(): PTEs holding the entry.
    #[inline]
    pub fn swap_count(&self, off: SwapOffset) -> u8 {
        self.swap_map[off as usize] & !SWAP_HAS_CACHE
    }

    /// /proc/swaps: (Size, Used) in KiB.
    pub fn proc_swaps(&self) -> (u64, u64) {
        (self.pages * 4, self.inuse_pages * 4)
    }

    fn queue(&mut self, c: u32) {
        let ci = c as usize;
        match self.cluster_state[ci] {
            ClusterState::Free if self.cluster_queued[ci] & QUEUED_FREE == 0 => {
                self.cluster_queued[ci] |= QUEUED_FREE;
                self.free_clusters.push_back(c);
            }
            ClusterState::NonFull if self.cluster_queued[ci] & QUEUED_NONFULL == 0 => {
                self.cluster_queued[ci] |= QUEUED_NONFULL;
                self.nonfull_clusters[self.cluster_order[ci] as usize].push_back(c);
            }
            _ => {}
        }
    }

    /// isolate_lock_cluster() on the free list (`free`) or on the nonfull
    /// lists: the first entry still in the list's state. Order 0 takes
    /// its own order's clusters first, then steals from the others
    /// (cluster_alloc_swap_entry's fallback; the cluster keeps its order).
    fn isolate(&mut self, free: bool) -> Option<u32> {
        if free {
            while let Some(c) = self.free_clusters.pop_front() {
                self.cluster_queued[c as usize] &= !QUEUED_FREE;
                if self.cluster_state[c as usize] == ClusterState::Free {
                    return Some(c);
                }
            }
            return None;
        }
        (0..SWAP_NR_ORDERS).find_map(|o| self.isolate_nonfull(o))
    }

    /// The first cluster still nonfull on nonfull_clusters[order] (lazy
    /// deletion: an entry whose cluster changed state or order is
    /// skipped).
    fn isolate_nonfull(&mut self, order: usize) -> Option<u32> {
        while let Some(c) = self.nonfull_clusters[order].pop_front() {
            let ci = c as usize;
            self.cluster_queued[ci] &= !QUEUED_NONFULL;
            if self.cluster_state[ci] == ClusterState::NonFull {
                if self.cluster_order[ci] as usize == order {
                    return Some(c);
                }
                // Its order changed while queued here: requeue it where
                // it belongs now.
                self.queue(c);
            }
        }
        None
    }

    /// relocate_cluster(): full, free (its order reset) or nonfull.
    fn relocate_cluster(&mut self, c: u32) {
        let ci = c as usize;
        self.cluster_state[ci] = if self.cluster_count[ci] as u32 >= SWAPFILE_CLUSTER {
            ClusterState::Full
        } else if self.cluster_count[ci] as u32 == self.unusable(ci) {
            self.cluster_order[ci] = 0;
            ClusterState::Free
        } else {
            ClusterState::NonFull
        };
        self.queue(c);
    }

    /// folio_alloc_swap() -> swap_alloc_fast() / swap_alloc_slow(): a
    /// naturally aligned run of 1 << order free slots inside one cluster
    /// (alloc_swap_scan_cluster and cluster_alloc_range), all taken with
    /// SWAP_HAS_CACHE. The order's per-cpu cluster goes on from where it
    /// stopped (so successive swap-outs get contiguous slots, as the
    /// kernel's do); one with no room left is relocated and replaced by a
    /// free cluster (whose order it sets), else by a partly used one:
    /// order 0 takes its own order's first, then steals from the others
    /// (the cluster keeps its order); a large order only its own, and PMD
    /// order only free clusters. None when swap is full or, for a large
    /// folio, no run is left: reclaim then splits the folio.
    pub fn get_swap_pages(
        &mut self,
        memcg: MemcgId,
        owner: (u32, u32),
        order: u32,
    ) -> Option<SwapOffset> {
        let o = order as usize;
        let nr = 1u32 << order;
        if self.nr_free() < nr as u64 || nr > SWAPFILE_CLUSTER {
            return None;
        }
        // Each partly used cluster is tried once per large allocation (the
        // kernel's walk of nonfull_clusters moves a failed one to frag).
        let mut tries = self.nonfull_clusters[o].len() + 1;
        let off = loop {
            let from = self.next[o];
            if from != 0 {
                let c = from / SWAPFILE_CLUSTER;
                if let Some(w) = self.scan_cluster(c, from, nr) {
                    break w;
                }
                self.relocate_cluster(c);
                self.next[o] = 0;
            }
            let c = match self.isolate(true) {
                Some(c) => c,
                None if order == 0 => self.isolate(false)?,
                None if order < super::folio::HPAGE_PMD_ORDER && tries > 0 => {
                    tries -= 1;
                    self.isolate_nonfull(o)?
                }
                None => return None,
            };
            let ci = c as usize;
            self.cluster_state[ci] = ClusterState::Current;
            if self.cluster_count[ci] as u32 == self.unusable(ci) {
                self.cluster_order[ci] = order as u8;
            }
            // cluster_is_empty(): a free cluster starts at its first slot;
            // a partly used one is scanned from its start for holes.
            self.next[o] = (c * SWAPFILE_CLUSTER).max(1);
        };
        let c = off / SWAPFILE_CLUSTER;
        self.cluster_count[c as usize] += nr as u16;
        // The per-cpu offset moves past the run; at the cluster's end the
        // cluster is relocated and the next allocation takes another.
        if off + nr >= ((c + 1) * SWAPFILE_CLUSTER).min(self.max) {
            self.relocate_cluster(c);
            self.next[o] = 0;
        } else {
            self.next[o] = off + nr;
        }
        for i in 0..nr {
            let s = (off + i) as usize;
            self.swap_map[s] = SWAP_HAS_CACHE;
            self.swap_cgroup[s] = memcg;
            self.owner[s] = (owner.0, owner.1 + i);
        }
        self.inuse_pages += nr as u64;
        Some(off)
    }

    /// alloc_swap_scan_cluster() for a run of `nr` slots: the first
    /// naturally aligned window at or after `from` whose slots are all
    /// free (the header's SWAP_MAP_BAD keeps cluster 0's first window
    /// out).
    fn scan_cluster(&self, c: u32, from: u32, nr: u32) -> Option<u32> {
        if self.cluster_count[c as usize] as u32 + nr > SWAPFILE_CLUSTER {
            return None;
        }
        let end = ((c + 1) * SWAPFILE_CLUSTER).min(self.max);
        let mut w = from.max(c * SWAPFILE_CLUSTER).next_multiple_of(nr);
        while w + nr <= end {
            if self.swap_map[w as usize..(w + nr) as usize]
                .iter()
                .all(|&m| m == 0)
            {
                return Some(w);
            }
            w += nr;
        }
        None
    }

    /// swap_entries_free(): the slot's count and cache bit are gone; the
    /// cluster goes back to the nonfull or free list. Returns the memcg the
    /// slot was charged to (mem_cgroup_uncharge_swap's).
    pub fn swap_entry_free(&mut self, off: SwapOffset) -> MemcgId {
        debug_assert_eq!(self.swap_map[off as usize], 0);
        self.inuse_pages -= 1;
        let c = (off / SWAPFILE_CLUSTER) as usize;
        self.cluster_count[c] -= 1;
        if self.cluster_state[c] != ClusterState::Current {
            // partial_free_cluster() / free_cluster() (which resets the
            // cluster's order).
            self.cluster_state[c] = if self.cluster_count[c] as u32 == self.unusable(c) {
                self.cluster_order[c] = 0;
                ClusterState::Free
            } else {
                ClusterState::NonFull
            };
            self.queue(c as u32);
        }
        self.table[off as usize] = 0;
        std::mem::replace(&mut self.swap_cgroup[off as usize], 0)
    }

    fn unusable(&self, c: usize) -> u32 {
        let start = c as u32 * SWAPFILE_CLUSTER;
        let end = (start + SWAPFILE_CLUSTER).min(self.max);
        SWAPFILE_CLUSTER - (end - start) + (c == 0) as u32
    }

    /// Per-slot consistency: map counts match the clusters' and inuse.
    pub fn check(&self) -> Result<(), String> {
        let mut inuse = 0u64;
        for c in 0..self.cluster_count.len() {
            let start = c as u32 * SWAPFILE_CLUSTER;
            let end = (start + SWAPFILE_CLUSTER).min(self.max);
            let used = (start..end)
                .filter(|&o| {
                    self.swap_map[o as usize] != 0 && self.swap_map[o as usize] != SWAP_MAP_BAD
                })
                .count() as u32;
            inuse += used as u64;
            if used + self.unusable(c) != self.cluster_count[c] as u32 {
                return Err(format!(
                    "swap cluster {c}: count {} but {used} slots in use",
                    self.cluster_count[c]
                ));
            }
        }
        if inuse != self.inuse_pages {
            return Err(format!(
                "swap: inuse_pages {} but {inuse} slots in use",
                self.inuse_pages
            ));
        }
        Ok(())
    }
}

impl SwapInfo {
    /// folio->swap of frame `id` (0 if it never was in the swap cache).
    #[inline]
    pub fn folio_swap(&self, id: FolioId) -> SwapOffset {
        self.folio_swap.get(id as usize).copied().unwrap_or(0)
    }

    #[inline]
    pub fn set_folio_swap(&mut self, id: FolioId, off: SwapOffset) {
        let i = id as usize;
        if i >= self.folio_swap.len() {
            self.folio_swap.resize(i + 1, 0);
        }
        self.folio_swap[i] = off;
    }

    /// When frame `id`'s swap-in read completes (0 if it never had one).
    #[inline]
    pub fn folio_io_done(&self, id: FolioId) -> u64 {
        self.folio_io_done.get(id as usize).copied().unwrap_or(0)
    }

    #[inline]
    pub fn set_folio_io_done(&mut self, id: FolioId, done: u64) {
        let i = id as usize;
        if i >= self.folio_io_done.len() {
            self.folio_io_done.resize(i + 1, 0);
        }
        self.folio_io_done[i] = done;
    }

    /// Bytes of the per-slot and per-frame tables (allocated; the per-slot
    /// ones are zeroed allocations the OS backs only where written).
    pub fn mem_footprint(&self) -> usize {
        use std::mem::size_of_val;
        size_of_val(&self.swap_map[..])
            + size_of_val(&self.swap_cgroup[..])
            + size_of_val(&self.owner[..])
            + size_of_val(&self.table[..])
            + self.folio_swap.capacity() * 4
            + self.folio_io_done.capacity() * 8
            + self.zram.as_ref().map_or(0, |z| z.stored.len())
    }
}

/// Unused in the folio_swap table.
pub const NO_FOLIO: FolioId = NIL;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_come_in_cluster_order_and_skip_the_header() {
        let mut si = SwapInfo::new(SwapKind::Disk, 2 * SWAPFILE_CLUSTER as u64, 3.0);
        assert_eq!(si.pages, 2 * SWAPFILE_CLUSTER as u64 - 1);
        let a: Vec<u32> = (0..4)
            .map(|_| si.get_swap_pages(0, (0, 0), 0).unwrap())
            .collect();
        // Cluster 0 holds the header, so it starts out nonfull: the free
        // cluster 1 is taken first, from its first slot, contiguously.
        assert_eq!(a, vec![512, 513, 514, 515]);
        for &o in &a[1..3] {
            si.swap_map[o as usize] = 0;
            si.swap_entry_free(o);
        }
        // The per-cpu cluster goes on past the holes.
        assert_eq!(si.get_swap_pages(0, (0, 0), 0), Some(516));
        si.check().unwrap();
        // Fill everything: 1023 usable slots, then None.
        let mut n = 3;
        while si.get_swap_pages(0, (0, 0), 0).is_some() {
            n += 1;
        }
        assert_eq!(n, 1023);
        assert_eq!(si.nr_free(), 0);
        assert!(si.swap_map[0] == SWAP_MAP_BAD);
        si.check().unwrap();
    }

    #[test]
    fn large_runs_are_aligned_and_keep_to_their_clusters() {
        let mut si = SwapInfo::new(SwapKind::Zram, 3 * SWAPFILE_CLUSTER as u64, 3.0);
        // Order 4 takes the first free cluster (1) and sets its order:
        // aligned 16-slot runs, one after the other.
        let a = si.get_swap_pages(0, (7, 32), 4).unwrap();
        let b = si.get_swap_pages(0, (7, 48), 4).unwrap();
        assert_eq!((a, b), (512, 528));
        assert!((a..a + 16).all(|o| si.swap_map[o as usize] == SWAP_HAS_CACHE));
        assert_eq!(si.owner[a as usize + 3], (7, 35));
        // Order 0 has its own per-cpu cluster: the next free one (2).
        assert_eq!(si.get_swap_pages(0, (0, 0), 0), Some(1024));
        // PMD order needs a free cluster: none is left.
        assert_eq!(si.get_swap_pages(0, (0, 0), 9), None);
        si.check().unwrap();
        // Freeing both runs leaves cluster 1 empty but still order 4's
        // per-cpu cluster.
        for o in (a..a + 16).chain(b..b + 16) {
            si.swap_map[o as usize] = 0;
            si.swap_entry_free(o);
        }
        // Order 4 goes on in it past the holes (the per-cpu offset).
        assert_eq!(si.get_swap_pages(0, (0, 0), 4), Some(544));
        si.check().unwrap();
        assert_eq!(si.inuse_pages, 17);
    }

    #[test]
    fn an_empty_device_is_no_swap() {
        let si = SwapInfo::new(SwapKind::Zram, 0, 3.0);
        assert_eq!((si.pages, si.nr_free()), (0, 0));
        let si = SwapInfo::new(SwapKind::Zram, 1, 3.0);
        assert_eq!(si.pages, 0);
    }
}
