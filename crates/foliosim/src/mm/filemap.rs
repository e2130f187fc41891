//! The page cache (mm/filemap.c): per-file slots holding folios or shadow
//! entries, the read(2) path and the mmap fault path's page-cache side
//! (filemap_fault, filemap_map_pages, do_sync_mmap_readahead,
//! do_async_mmap_readahead).

use super::folio::{pg, FolioId};
use super::memcontrol::MemcgId;
use super::readahead::FileRaState;
use super::vmscan::ReclaimPolicy;
use super::vmstat::Item;
use super::workingset::{Shadow, XaNode, XA_CHUNK_SHIFT};
use super::xarray::XArray;
use super::{Kernel, PAGE_SHIFT, PAGE_SIZE};

mod mmap_miss_alts;
pub use mmap_miss_alts::{MmapMissAlts, MMAP_MISS_MAX_ALTS};

/// The fixed part of copying one cached folio to or from user space
/// besides the copy itself (the folio's lookup, reference and accessed
/// mark), ns: a read() served from the cache costs the syscall, the copy
/// and this.
pub const HIT_OVERHEAD_NS: u64 = 20;

/// MMAP_LOTSAMISS: past this many net misses, mmap read-around stops.
pub const MMAP_LOTSAMISS: u32 = 100;

const SHADOW_BIT: u64 = 1 << 63;
/// A PTE holding a swap entry (the slot's offset below the bit); with
/// SHADOW_BIT too and no offset, a PTE mapping the shared zero page.
const SWAP_BIT: u64 = 1 << 62;
const ZERO_PTE: u64 = SWAP_BIT | SHADOW_BIT;

/// A page-cache slot: empty, a folio, or a shadow entry left by eviction
/// (the xarray value entry).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Empty,
    Folio(FolioId),
    Shadow(Shadow),
    /// Anonymous page in swap: the PTE's swap entry (its shadow, if any,
    /// is in the swap cache's slot).
    Swap(super::swapfile::SwapOffset),
    /// Anonymous page read before ever written: the zero page is mapped.
    Zero,
}

/// A slot's value as a Slot.
#[inline]
fn decode(v: u64) -> Slot {
    if v == 0 {
        Slot::Empty
    } else if v == ZERO_PTE {
        Slot::Zero
    } else if v & SWAP_BIT != 0 {
        Slot::Swap((v & !SWAP_BIT) as u32)
    } else if v & SHADOW_BIT != 0 {
        Slot::Shadow(Shadow(v & !SHADOW_BIT))
    } else {
        Slot::Folio((v - 1) as FolioId)
    }
}

/// HPAGE_PMD_ORDER on x86-64: a folio of this order is mapped by a PMD.
const HPAGE_PMD_ORDER: u32 = 9;

/// fgf_set_order(): the folio order a write of `size` bytes asks for.
#[inline]
fn fgf_set_order(size: u64) -> u32 {
    if size <= PAGE_SIZE {
        0
    } else {
        size.ilog2() - PAGE_SHIFT
    }
}

/// pos_same_folio(): byte `pos` lies in folio `f`.
#[inline]
fn pos_same_folio(pos: u64, f: &super::folio::Folio) -> bool {
    (pos >> PAGE_SHIFT).wrapping_sub(f.index as u64) < f.nr_pages()
}

/// Readahead I/O still in flight: pages [start, end) become uptodate at `done`.
#[derive(Clone, Copy, Debug, Default)]
struct InflightRead {
    start: u32,
    end: u32,
    done: u64,
}

/// Reads a file's tracker holds before it first grows: more are in flight
/// only with many readers on one file (it grows then, never forgets one).
const INFLIGHT_RING: usize = 8;

/// struct address_space: one per simulated file. Its slots (the i_pages
/// xarray) are sparse: leaves of 64 slots are made on first store
/// (xarray.rs), so memory follows the pages touched, not the file's size.
pub struct AddressSpace {
    pub id: u32,
    pub size: u64,
    slots: XArray,
    pub nrpages: u64,
    pub nrshadows: u64,
    /// The file's reads in flight (and completed ones whose slot was not
    /// reused yet): PG_locked and !PG_uptodate of the folios they bring in.
    inflight: Vec<InflightRead>,
    /// The latest completion time in `inflight`: past it, nothing is.
    inflight_until: u64,
    /// The pages `inflight` covers lie in [inflight_lo, inflight_hi): a
    /// page outside is not being read (reclaim asks about every folio it
    /// looks at).
    inflight_lo: u32,
    inflight_hi: u32,
    /// Page-table pages of the file's mapping: one bit per 512-page region.
    pte_tables: Vec<u64>,
    pte_tables_memcg: MemcgId,
    pub nr_pte_tables: u64,
    /// The mm of an anonymous VMA (mmap.rs); NO_MM for a file.
    pub owner: super::mmap::MmId,
    /// A tmpfs file (shmem.rs): the read, write and fault entry points
    /// dispatch to shmem's.
    pub shmem: bool,
    /// mapping_max_folio_order(): 0 for a mapping without large folio
    /// support (mapping_large_folio_support() false).
    pub max_order: u32,
    /// A tmpfs file's multi-order swap entries (shmem_writeout() of a
    /// large folio): first index -> order. Each page's slot holds its own
    /// swap offset; this keeps which of them form one entry.
    pub shmem_large_swap: std::collections::BTreeMap<u64, u8>,
    /// The processes mapping the file with page tables of their own
    /// (rmap.rs); empty for one PTE per folio.
    pub i_mmap: Vec<super::rmap::MmPtes>,
    /// An anonymous VMA's THP advice: Some(true) VM_HUGEPAGE
    /// (MADV_HUGEPAGE), Some(false) VM_NOHUGEPAGE (MADV_NOHUGEPAGE).
    pub vm_hugepage: Option<bool>,
    /// An anonymous VMA under MADV_RANDOM or MADV_SEQUENTIAL:
    /// vma_has_recency() is false, so its faults take no MGLRU fault-path
    /// activation and reclaim ignores its young PTEs.
    pub vm_no_recency: bool,
}

impl AddressSpace {
    pub fn new(id: u32, size: u64) -> Self {
        let n = size.div_ceil(PAGE_SIZE);
        AddressSpace {
            id,
            size,
            slots: XArray::new(n),
            nrpages: 0,
            nrshadows: 0,
            inflight: Vec::new(),
            inflight_until: 0,
            inflight_lo: u32::MAX,
            inflight_hi: 0,
            pte_tables: Vec::new(),
            pte_tables_memcg: 0,
            nr_pte_tables: 0,
            owner: super::mmap::NO_MM,
            shmem: false,
            max_order: 0,
            shmem_large_swap: std::collections::BTreeMap::new(),
            i_mmap: Vec::new(),
            vm_hugepage: None,
            vm_no_recency: false,
        }
    }

    /// mapping_large_folio_support().
    #[inline]
    pub fn large_folio_support(&self) -> bool {
        self.max_order > 0
    }

    /// Whether a folio is cached anywhere in [index, index + nr): what
    /// makes __filemap_add_folio() of a folio spanning it fail (-EEXIST).
    #[inline]
    pub fn range_has_folio(&self, index: u64, nr: u64) -> bool {
        (index..index + nr).any(|i| self.folio(i).is_some())
    }

    /// Extends the mapping to `size` bytes (new slots empty): the block
    /// device's mapping (fs/ext4) gets a slot per metadata block as it is
    /// first touched, so it grows instead of covering the whole disk.
    pub fn grow(&mut self, size: u64) {
        self.slots.grow(size.div_ceil(PAGE_SIZE));
        self.size = self.size.max(size);
    }

    #[inline]
    pub fn nr_pages(&self) -> u64 {
        self.slots.len()
    }

    /// The xarray leaf node `ni`'s counts (slots `ni * 64 ..`): how many
    /// entries and how many shadows it holds, for workingset_update_node().
    #[inline]
    pub fn node(&self, ni: usize) -> &XaNode {
        self.slots.node(ni)
    }

    #[inline]
    pub fn node_mut(&mut self, ni: usize) -> &mut XaNode {
        self.slots.node_mut(ni)
    }

    /// Releases node `ni`'s leaf once it holds nothing (its count is 0).
    #[inline]
    pub fn release_node(&mut self, ni: usize) {
        self.slots.remove_leaf(ni)
    }

    /// Leaf nodes in use (their memory is what the index costs).
    pub fn nr_nodes(&self) -> usize {
        self.slots.nr_leaves()
    }

    /// Leaf nodes that exist (hold an entry, or held one since last
    /// released), in index order.
    pub fn nodes(&self) -> impl Iterator<Item = (usize, &XaNode)> + '_ {
        self.slots.nodes()
    }

    /// Indices in `start..end` that may hold an entry, ascending: walks
    /// over the file skip the ranges that never held one.
    pub fn populated(&self, start: u64, end: u64) -> impl Iterator<Item = u64> + '_ {
        self.slots.populated(start, end)
    }

    /// The first index in `index..end` that may hold an entry.
    #[inline]
    pub fn next_populated(&self, index: u64, end: u64) -> Option<u64> {
        self.slots.next_populated(index, end)
    }

    /// Bytes the page-cache index holds.
    pub fn mem_footprint(&self) -> usize {
        self.slots.mem_footprint() + self.pte_tables.capacity() * 8
    }

    #[inline]
    pub fn slot(&self, index: u64) -> Slot {
        decode(self.slots.get(index))
    }

    #[inline]
    pub fn folio(&self, index: u64) -> Option<FolioId> {
        let v = self.slots.get(index);
        if v != 0 && v & (SHADOW_BIT | SWAP_BIT) == 0 {
            Some((v - 1) as FolioId)
        } else {
            None
        }
    }

    /// Starts fetching the slot of `index` (trace replay's look-ahead).
    #[inline]
    pub fn prefetch_slot(&self, index: u64) {
        if let Some(s) = self.slots.slot_ref(index) {
            super::prefetch_read(s);
        }
    }

    /// Starts fetching the slot of `index` and its node's counts (an
    /// eviction's look-ahead: both are written).
    #[inline]
    pub fn prefetch_entry(&self, index: u64) {
        if let Some((slot, node)) = self.slots.entry_ref(index) {
            super::prefetch_read(slot);
            super::prefetch_read(node);
        }
    }

    /// Stores folio `id` at `index` over what was there, which it returns
    /// with whether the slot's node is settled (XaNode::settled): one
    /// lookup for all three, on the page-cache insertion path.
    #[inline(always)]
    fn set_folio(&mut self, index: u64, id: FolioId) -> (Slot, bool) {
        let (slot, node) = self.slots.entry(index);
        let old = *slot;
        if old == 0 {
            node.count += 1;
        } else if old & (SHADOW_BIT | SWAP_BIT) == SHADOW_BIT {
            self.nrshadows -= 1;
            node.nr_values -= 1;
        }
        // A swap entry or zero-page PTE is replaced in place.
        *slot = id as u64 + 1;
        self.nrpages += 1;
        (decode(old), node.settled())
    }

    /// Marks the 64-slot ranges a folio of `order` at `index` is about to
    /// fill: an order of 6 or more is one multi-index entry in the node
    /// above (no leaf node), a lower order needs the leaf, which xas_split()
    /// makes from a multi-index shadow there.
    #[inline]
    pub fn set_multi_index(&mut self, index: u64, order: u32) {
        if order >= XA_CHUNK_SHIFT {
            let first = (index >> XA_CHUNK_SHIFT) as usize;
            for ni in first..first + (1usize << (order - XA_CHUNK_SHIFT)) {
                self.slots.node_mut(ni).large = true;
            }
        } else {
            let n = self.slots.node_mut((index >> XA_CHUNK_SHIFT) as usize);
            n.large = false;
        }
    }

    /// A split moves page `index` from its folio to `id`: the slot changes
    /// owner, nothing is counted.
    #[inline]
    pub fn move_to_piece(&mut self, index: u64, id: FolioId) {
        let slot = self.slots.entry(index).0;
        debug_assert!(*slot != 0 && *slot & (SHADOW_BIT | SWAP_BIT) == 0);
        *slot = id as u64 + 1;
    }

    #[inline]
    pub fn set_folio_pub(&mut self, index: u64, id: FolioId) {
        let _ = self.set_folio(index, id);
    }

    /// Replaces a folio by its shadow (or nothing) on eviction. Returns
    /// whether the slot's node is settled (XaNode::settled).
    #[inline]
    pub fn replace_with_shadow(&mut self, index: u64, shadow: Option<Shadow>) -> bool {
        self.nrpages -= 1;
        let (slot, node) = self.slots.entry(index);
        *slot = match shadow {
            Some(s) => {
                self.nrshadows += 1;
                node.nr_values += 1;
                s.0 | SHADOW_BIT
            }
            None => {
                node.count -= 1;
                0
            }
        };
        node.settled()
    }

    #[inline]
    pub fn pte_table_present(&self, region: u64) -> bool {
        let (w, b) = ((region / 64) as usize, region % 64);
        self.pte_tables.get(w).is_some_and(|x| x & (1 << b) != 0)
    }

    pub fn set_pte_table(&mut self, region: u64, memcg: MemcgId) {
        let (w, b) = ((region / 64) as usize, region % 64);
        if self.pte_tables.len() <= w {
            self.pte_tables.resize(w + 1, 0);
        }
        self.pte_tables[w] |= 1 << b;
        self.pte_tables_memcg = memcg;
        self.nr_pte_tables += 1;
    }

    /// Frees every page-table page; returns how many and their memcg.
    pub fn free_pte_tables(&mut self) -> (u64, MemcgId) {
        let n = self.nr_pte_tables;
        self.pte_tables.clear();
        self.nr_pte_tables = 0;
        (n, self.pte_tables_memcg)
    }

    /// Drops a shadow entry.
    #[inline]
    pub fn clear_shadow(&mut self, index: u64) {
        debug_assert!(matches!(self.slot(index), Slot::Shadow(_)));
        let (slot, node) = self.slots.entry(index);
        *slot = 0;
        self.nrshadows -= 1;
        node.count -= 1;
        node.nr_values -= 1;
    }

    /// try_to_unmap() of an anonymous folio in the swap cache: the PTE
    /// now holds its swap entry.
    #[inline]
    pub fn set_swap_entry(&mut self, index: u64, off: super::swapfile::SwapOffset) {
        debug_assert!(self.folio(index).is_some());
        self.nrpages -= 1;
        *self.slots.entry(index).0 = SWAP_BIT | off as u64;
    }

    /// do_anonymous_page() for a read: the zero page is mapped.
    #[inline]
    pub fn set_zero_pte(&mut self, index: u64) {
        let (slot, node) = self.slots.entry(index);
        debug_assert_eq!(*slot, 0);
        *slot = ZERO_PTE;
        node.count += 1;
    }

    /// The swap entry or zero-page PTE is zapped.
    #[inline]
    pub fn clear_swap_entry(&mut self, index: u64) {
        debug_assert!(matches!(self.slot(index), Slot::Swap(_) | Slot::Zero));
        let (slot, node) = self.slots.entry(index);
        *slot = 0;
        node.count -= 1;
    }

    /// shadow_lru_isolate(): drop a node that holds only shadow entries;
    /// returns how many shadows went.
    pub fn delete_shadow_node(&mut self, node: usize) -> u64 {
        let (slots, n) = self.slots.leaf(node);
        debug_assert!(n.count > 0 && n.count == n.nr_values);
        let dropped = n.count as u64;
        n.count = 0;
        n.nr_values = 0;
        for v in slots.iter_mut() {
            debug_assert!(*v == 0 || (*v & SHADOW_BIT != 0 && *v & SWAP_BIT == 0));
            *v = 0;
        }
        self.nrshadows -= dropped;
        dropped
    }

    /// page_cache_prev_miss(): the highest index < =`index` within
    /// `max_scan` pages that holds no folio, or u64::MAX when the cache is
    /// populated down to index 0 (the kernel's ULONG_MAX).
    pub fn page_cache_prev_miss(&self, index: u64, max_scan: u64) -> u64 {
        let mut i = index;
        let mut n = 0;
        loop {
            if n >= max_scan {
                return i;
            }
            if self.folio(i).is_none() {
                return i;
            }
            if i == 0 {
                return u64::MAX;
            }
            i -= 1;
            n += 1;
        }
    }

    /// page_cache_next_miss(): the lowest index >= `index` within
    /// `max_scan` pages that holds no folio.
    pub fn page_cache_next_miss(&self, index: u64, max_scan: u64) -> u64 {
        let mut i = index;
        for _ in 0..max_scan {
            if i >= self.nr_pages() || self.folio(i).is_none() {
                return i;
            }
            i += 1;
        }
        i
    }

    /// A read of pages [start, end) submitted at `now`, completing at
    /// `done`. It takes the slot of a read already complete; with none (as
    /// many reads in flight as slots) the tracker grows: a read it forgot
    /// would let reclaim evict its folios and readers skip the wait.
    #[inline]
    fn note_inflight(&mut self, start: u64, end: u64, done: u64, now: u64) {
        let (start, end) = (start as u32, end as u32);
        let new = InflightRead { start, end, done };
        self.inflight_until = self.inflight_until.max(done);
        let Some(slot) = self.inflight.iter().position(|r| r.done <= now) else {
            if self.inflight.capacity() == 0 {
                self.inflight.reserve_exact(INFLIGHT_RING);
            }
            self.inflight.push(new);
            self.inflight_lo = self.inflight_lo.min(start);
            self.inflight_hi = self.inflight_hi.max(end);
            return;
        };
        let old = std::mem::replace(&mut self.inflight[slot], new);
        if old.start == self.inflight_lo || old.end == self.inflight_hi {
            // The completed read may have set a bound: recompute over the
            // reads still in flight.
            let (mut lo, mut hi) = (u32::MAX, 0);
            for r in self.inflight.iter().filter(|r| r.done > now) {
                lo = lo.min(r.start);
                hi = hi.max(r.end);
            }
            (self.inflight_lo, self.inflight_hi) = (lo, hi);
        } else {
            self.inflight_lo = self.inflight_lo.min(start);
            self.inflight_hi = self.inflight_hi.max(end);
        }
    }

    /// When the read bringing in `index` completes, if still in flight.
    #[inline]
    pub fn io_done_at(&self, index: u64, now: u64) -> Option<u64> {
        let i = index as u32;
        if now >= self.inflight_until || i < self.inflight_lo || i >= self.inflight_hi {
            return None;
        }
        // Without branches: reclaim asks this of every folio it looks at
        // while reads are in flight. A read in flight completes after
        // `now`, so 0 means none.
        let mut latest = 0u64;
        for r in &self.inflight {
            let hit = (r.done > now) & (i >= r.start) & (i < r.end);
            latest = latest.max(if hit { r.done } else { 0 });
        }
        (latest != 0).then_some(latest)
    }
}

/// struct file: an open file description with its readahead state and the
/// hints that fadvise / madvise leave on it or on its mapping.
#[derive(Clone, Debug)]
pub struct OpenFile {
    pub mapping: u32,
    pub ra: FileRaState,
    /// FMODE_RANDOM (POSIX_FADV_RANDOM).
    pub fmode_random: bool,
    /// VM_RAND_READ / VM_SEQ_READ of the file's mmap (MADV_RANDOM / MADV_SEQUENTIAL).
    pub vm_rand_read: bool,
    pub vm_seq_read: bool,
    /// The memcg of the task using it.
    pub memcg: MemcgId,
    /// Its mapping's page tables on the file's i_mmap (rmap.rs), or
    /// NO_PTES: one PTE per folio, shared.
    pub pte: u32,
}

impl OpenFile {
    /// open() of `mapping` by a task in `memcg`: readahead state with the
    /// device's read_ahead_kb, no fadvise or madvise hints.
    pub fn new(mapping: u32, read_ahead_kb: u64, memcg: MemcgId) -> Self {
        OpenFile {
            mapping,
            ra: FileRaState::new(read_ahead_kb),
            fmode_random: false,
            vm_rand_read: false,
            vm_seq_read: false,
            memcg,
            pte: super::rmap::NO_PTES,
        }
    }
}

/// FAULT_FLAG_TRIED: this is the retry after VM_FAULT_RETRY.
pub const FAULT_FLAG_TRIED: u32 = 1 << 0;

/// vm_fault_t results used by the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VmFault {
    /// The page is mapped (VM_FAULT_NOPAGE / a completed fault).
    Done,
    /// The mmap lock was dropped for I/O: retry with FAULT_FLAG_TRIED.
    Retry,
    /// Could not allocate or charge: the task is OOM-killed.
    Oom,
}

impl super::Core {
    /// page_cache_delete(): the folio of `nr` pages at `index` leaves the
    /// page cache, its slots taking `shadow` (a multi-index shadow entry
    /// in the kernel; here the same shadow in each slot) or emptied.
    #[inline]
    pub fn page_cache_delete(
        &mut self,
        mapping: u32,
        index: u64,
        nr: u64,
        shadow: Option<Shadow>,
        memcg: MemcgId,
    ) {
        for idx in index..index + nr {
            let settled = self.files[mapping as usize].replace_with_shadow(idx, shadow);
            self.workingset_node_changed(mapping, idx, memcg, settled);
        }
    }
}

impl<P: ReclaimPolicy> Kernel<P> {
    /// filemap_add_folio(): allocate, charge and insert a folio at `index`,
    /// feeding a shadow entry found there to workingset_refault(), then put
    /// it on the LRU. `may_retry` is false for readahead (__GFP_NORETRY).
    #[inline(always)]
    pub fn filemap_add_folio(
        &mut self,
        mapping: u32,
        index: u64,
        memcg: MemcgId,
        may_retry: bool,
    ) -> Option<FolioId> {
        self.filemap_add_folio_order(mapping, index, 0, memcg, may_retry)
    }

    /// filemap_add_folio() of a folio of 1 << `order` pages at `index`
    /// (aligned to its size, inside the file, over no cached folio: the
    /// callers check, as __filemap_add_folio()'s -EEXIST would). Of the
    /// shadows it replaces, the last one found goes to
    /// workingset_refault(), as xas_for_each_conflict() leaves it.
    #[inline(always)]
    pub fn filemap_add_folio_order(
        &mut self,
        mapping: u32,
        index: u64,
        order: u32,
        memcg: MemcgId,
        may_retry: bool,
    ) -> Option<FolioId> {
        self.filemap_add_folio_gfp(mapping, index, order, memcg, may_retry, false)
    }

    /// filemap_add_folio() with the caller's __GFP_WRITE (`gfp_write`):
    /// a folio created to be written over (FGP_WRITE, write_begin) does
    /// not take its shadow to workingset_refault(): caching data about to
    /// be overwritten is no reason to activate it.
    #[inline(always)]
    pub fn filemap_add_folio_gfp(
        &mut self,
        mapping: u32,
        index: u64,
        order: u32,
        memcg: MemcgId,
        may_retry: bool,
        gfp_write: bool,
    ) -> Option<FolioId> {
        let nr = 1u64 << order;
        debug_assert!(
            index % nr == 0 && index + nr <= self.core.files[mapping as usize].nr_pages()
        );
        // The xarray nodes earlier insertions allocated are charged here,
        // before this folio exists: the charge may reclaim, and no folio
        // may be off the LRU meanwhile (the kernel's is locked and not yet
        // added; the model charges one insertion late).
        self.memcg_slab_settle(memcg, may_retry);
        let id = self.alloc_folio_order(memcg, order, may_retry)?;
        {
            let f = self.core.folios.get_mut(id);
            f.mapping = mapping;
            f.index = index as u32;
            // Locked and not uptodate while it is inserted, as
            // __filemap_add_folio() sees it; the model completes the read
            // (folio_end_read()) at the end of the insertion, and
            // CacheExt's reads-in-flight view shows it locked until the
            // read's completion time.
            f.set_flags_keep_order(pg::LOCKED);
        }
        self.core.files[mapping as usize].set_multi_index(index, order);
        let mut shadow = None;
        for idx in index..index + nr {
            let (old, settled) = self.core.files[mapping as usize].set_folio(idx, id);
            match old {
                Slot::Shadow(s) => shadow = Some(s),
                Slot::Empty => {}
                Slot::Folio(_) | Slot::Swap(_) | Slot::Zero => {
                    unreachable!("filemap_add_folio over a present folio or swap entry")
                }
            }
            self.core
                .workingset_node_changed(mapping, idx, memcg, settled);
        }
        self.core.memcgs[memcg as usize].nr_file += nr;
        if self.core.trace.is_some() {
            let rec = self.core.trace_folio(id);
            if let Some((t, cx)) = self.core.tracer() {
                t.filemap_op(crate::trace::Ev::AddToPageCache, cx, rec);
            }
        }
        if let Some(s) = shadow.filter(|_| !gfp_write) {
            self.policy.workingset_refault(&mut self.core, id, s);
        }
        // cache_ext's hook in __filemap_add_folio() (before the LRU add).
        self.core.cache_ext_folio_added(id);
        self.folio_add_lru(id);
        let f = self.core.folios.get_mut(id);
        f.set(pg::UPTODATE);
        f.clear(pg::LOCKED);
        Some(id)
    }

    /// obj_cgroup_charge() of the xarray nodes the insertion allocated:
    /// whole pages from the page counter as the group's slab bytes need
    /// them (reclaiming as any charge does).
    #[inline]
    fn memcg_slab_settle(&mut self, memcg: MemcgId, may_retry: bool) {
        while memcg != 0 {
            let g = &self.core.memcgs[memcg as usize];
            if g.slab_pages >= g.slab_bytes.div_ceil(PAGE_SIZE) {
                return;
            }
            if !self.try_charge(memcg, 1, may_retry) {
                return;
            }
            self.core.memcgs[memcg as usize].slab_pages += 1;
        }
    }

    /// folio_mark_accessed() (mm/swap.c): the LRU policy's aging, then
    /// cache_ext's folio_accessed() hook. PTE accessed bits never come
    /// here, so a cache_ext policy does not see mmap accesses.
    #[inline]
    pub fn folio_mark_accessed(&mut self, id: FolioId) {
        self.policy.folio_mark_accessed(&mut self.core, id);
        self.core.cache_ext_folio_accessed(id);
    }

    /// Submits the read of pages [start, end) of a file (read_pages /
    /// filemap_read_folio): pgpgin in KiB as /proc/vmstat counts it.
    /// Returns the completion time.
    pub fn submit_read(&mut self, mapping: u32, start: u64, end: u64, memcg: MemcgId) -> u64 {
        let nr = end - start;
        self.core
            .count(memcg, Item::PGPGIN, nr * (PAGE_SIZE / 1024));
        let done = self.core.dev.submit(self.core.now, nr * PAGE_SIZE, false);
        let now = self.core.now;
        self.core.files[mapping as usize].note_inflight(start, end, done, now);
        self.core.file_reads_until = self.core.file_reads_until.max(done);
        done
    }

    /// Waits for the read of `index` if it is still in flight
    /// (folio_wait_locked on a folio under read I/O).
    #[inline]
    pub fn wait_uptodate(&mut self, mapping: u32, index: u64) {
        if let Some(t) = self.core.files[mapping as usize].io_done_at(index, self.core.now) {
            self.core.wait_until(t);
        }
    }

    /// filemap_read() for `count` bytes at `pos` (read(2) / pread(2)).
    /// Returns the bytes read (short at EOF), or None if the task was
    /// OOM-killed.
    pub fn filemap_read(&mut self, file: &mut OpenFile, mut pos: u64, count: u64) -> Option<u64> {
        let mapping = file.mapping;
        if self.core.files[mapping as usize].shmem {
            return self.shmem_file_read_iter(file, pos, count);
        }
        let isize = self.core.files[mapping as usize].size;
        if pos >= isize {
            return Some(0);
        }
        let end = (pos + count).min(isize);
        let start = pos;
        let mut last_pos = file.ra.prev_pos;
        self.core.cpu(self.core.cost.syscall);
        // A read inside one cached page whose folio needs nothing more
        // (no readahead mark, no read in flight): the loop below would take
        // a batch of one and do exactly this.
        let index = pos >> PAGE_SHIFT;
        if end > pos && (end - 1) >> PAGE_SHIFT == index {
            let a = &self.core.files[mapping as usize];
            if let Some(id) = a.folio(index) {
                let f = self.core.folios.get(id);
                if !f.test(pg::READAHEAD) && a.io_done_at(index, self.core.now).is_none() {
                    let mark = !pos_same_folio(last_pos.wrapping_sub(1), f);
                    file.ra.prev_pos = self.filemap_copy_folio(id, mark, pos, end);
                    return Some(end - start);
                }
            }
        }
        let mut batch: [FolioId; 32] = [0; 32];
        while pos < end {
            let index = pos >> PAGE_SHIFT;
            let last_index = end.div_ceil(PAGE_SIZE);
            // filemap_get_pages()
            let mut n = self.filemap_get_read_batch(mapping, index, last_index, &mut batch);
            if n == 0 {
                // cache_ext's admit_folio() before synchronous readahead:
                // a bypassed read goes to the device for the rest of the
                // request and adds nothing to the page cache.
                let req = super::cache_ext::AdmissionCtx {
                    mapping,
                    index,
                    nr_pages: last_index - index,
                };
                if self.core.cache_ext_admit_folio(file.memcg, req) {
                    let bytes = (last_index - index) * PAGE_SIZE;
                    self.core.count(file.memcg, Item::PGPGIN, bytes / 1024);
                    let done = self.core.dev.submit(self.core.now, bytes, false);
                    self.core.wait_until(done);
                    self.core
                        .cpu(self.core.cost.copy_page * (end - pos).div_ceil(PAGE_SIZE));
                    pos = end;
                    break;
                }
                self.page_cache_sync_ra(file, index, last_index - index);
                n = self.filemap_get_read_batch(mapping, index, last_index, &mut batch);
            }
            if n == 0 {
                // filemap_create_folio(): read just this page.
                let id = self.filemap_add_folio(mapping, index, file.memcg, true)?;
                self.submit_read(mapping, index, index + 1, file.memcg);
                batch[0] = id;
                n = 1;
            }
            let last = batch[n - 1];
            let lf = self.core.folios.get(last);
            if lf.test(pg::READAHEAD) && !lf.test(pg::WRITEBACK) {
                let li = lf.index as u64;
                // The batch holds references on its folios, so reclaim
                // under the readahead's allocations cannot free them (the
                // only point of this loop where reclaim can run).
                for &id in &batch[..n] {
                    self.core.folios.get_mut(id).set(pg::EXTRA_REF);
                }
                self.page_cache_async_ra(file, last, li, last_index - li);
                for &id in &batch[..n] {
                    self.core.folios.get_mut(id).clear(pg::EXTRA_REF);
                }
            }
            for (i, &id) in batch[..n].iter().enumerate() {
                let fi = self.core.folios.get(id).index as u64;
                self.wait_uptodate(mapping, fi);
                // Only the first folio of a read that stays in the folio
                // of the previous read is not marked accessed again.
                // pos_same_folio(ki_pos, last_pos - 1): the previous read's
                // last byte (prev_pos starts at -1, as in the kernel).
                let mark =
                    i > 0 || !pos_same_folio(last_pos.wrapping_sub(1), self.core.folios.get(id));
                pos = self.filemap_copy_folio(id, mark, pos, end);
                last_pos = pos;
            }
        }
        file.ra.prev_pos = pos;
        Some(end - start)
    }

    /// filemap_read()'s copy of one uptodate folio from `pos` up to `end`
    /// or the folio's end: folio_mark_accessed() when `mark`, then the
    /// copy's cost. Returns where the copy stopped.
    #[inline]
    fn filemap_copy_folio(&mut self, id: FolioId, mark: bool, pos: u64, end: u64) -> u64 {
        if mark {
            self.folio_mark_accessed(id);
        }
        let f = self.core.folios.get_mut(id);
        f.clear(pg::UNUSED_MARKS);
        let fstart = (f.index as u64) << PAGE_SHIFT;
        let chunk_end = (fstart + (f.nr_pages() << PAGE_SHIFT)).min(end);
        let copied = chunk_end - pos.max(fstart);
        self.core
            .cpu(self.core.cost.copy_page * copied / PAGE_SIZE + HIT_OVERHEAD_NS);
        chunk_end
    }

    /// filemap_get_read_batch(): contiguous cached folios from `index`,
    /// stopping after one that is under readahead marking or not uptodate.
    fn filemap_get_read_batch(
        &mut self,
        mapping: u32,
        index: u64,
        last_index: u64,
        batch: &mut [FolioId; 32],
    ) -> usize {
        let a = &self.core.files[mapping as usize];
        let mut n = 0;
        let mut i = index;
        while i < last_index && n < batch.len() {
            match a.folio(i) {
                Some(id) => {
                    batch[n] = id;
                    n += 1;
                    let f = self.core.folios.get(id);
                    if f.test(pg::READAHEAD) || a.io_done_at(i, self.core.now).is_some() {
                        break;
                    }
                    // folio_next_index(): a large folio is one entry.
                    i = if f.order() == 0 {
                        i + 1
                    } else {
                        f.index as u64 + f.nr_pages()
                    };
                }
                None => break,
            }
        }
        n
    }

    /// A buffered write of `count` bytes at `pos`: each page is found or
    /// created (read first when partially overwritten and not cached),
    /// dirtied and marked accessed; then balance_dirty_pages().
    pub fn filemap_write(&mut self, file: &mut OpenFile, pos: u64, count: u64) -> Option<u64> {
        let mapping = file.mapping;
        if self.core.files[mapping as usize].shmem {
            return self.shmem_file_write_iter(file, pos, count);
        }
        let isize = self.core.files[mapping as usize].size;
        // A write past EOF extends the file (after a truncation), up to
        // the size the model's mapping was created with.
        let end = (pos + count).min(self.core.files[mapping as usize].nr_pages() * PAGE_SIZE);
        self.core.cpu(self.core.cost.syscall);
        // generic_perform_write()'s chunk: mapping_max_folio_size().
        let max_order = self.core.files[mapping as usize].max_order;
        let chunk = PAGE_SIZE << max_order;
        let mut p = pos;
        while p < end {
            let index = p >> PAGE_SHIFT;
            let id = match self.core.files[mapping as usize].folio(index) {
                Some(id) => {
                    self.wait_uptodate(mapping, index);
                    id
                }
                None => {
                    // write_begin: __filemap_get_folio(FGP_WRITEBEGIN |
                    // fgf_set_order(len)) for this chunk's bytes.
                    let len = (chunk - (p & (chunk - 1))).min(end - p);
                    let order = fgf_set_order(len).min(max_order);
                    let id = self.write_begin_folio(mapping, index, order, file.memcg)?;
                    self.write_begin_read(file, id, p, end, isize);
                    id
                }
            };
            let f = self.core.folios.get(id);
            let fend = (f.index as u64 + f.nr_pages()) << PAGE_SHIFT;
            let chunk_end = fend.min(end);
            self.core
                .cpu(self.core.cost.copy_page * (chunk_end - p) / PAGE_SIZE + HIT_OVERHEAD_NS);
            self.folio_mark_dirty(id);
            self.folio_mark_accessed(id);
            p = chunk_end;
        }
        if end > isize {
            self.core.files[mapping as usize].size = end;
        }
        self.balance_dirty_pages();
        Some(end - pos)
    }

    /// __filemap_get_folio(FGP_CREAT) for a write at `index`: a folio of
    /// `order` pages if the index is aligned to it (else the order its
    /// alignment allows), each smaller order tried in turn when the
    /// allocation or charge fails or a cached folio is in the way
    /// (-EEXIST). None when not even one page can be had (OOM).
    fn write_begin_folio(
        &mut self,
        mapping: u32,
        index: u64,
        order: u32,
        memcg: MemcgId,
    ) -> Option<FolioId> {
        let mut order = order;
        if index & ((1 << order) - 1) != 0 {
            order = index.trailing_zeros();
        }
        loop {
            let nr = 1u64 << order;
            let a = &self.core.files[mapping as usize];
            let fits = order == 0 || (index + nr <= a.nr_pages() && !a.range_has_folio(index, nr));
            if fits {
                if let Some(id) =
                    self.filemap_add_folio_gfp(mapping, index, order, memcg, true, true)
                {
                    return Some(id);
                }
                if order == 0 {
                    return None;
                }
            }
            order -= 1;
        }
    }

    /// The reads write_begin does on a folio it just created: the pages
    /// inside i_size that the write from `pos` to `end` does not cover
    /// (__block_write_begin() reads the blocks it does not overwrite).
    fn write_begin_read(&mut self, file: &OpenFile, id: FolioId, pos: u64, end: u64, isize: u64) {
        let f = self.core.folios.get(id);
        let (fi, nr) = (f.index as u64, f.nr_pages());
        let fstart = fi << PAGE_SHIFT;
        let fend = fstart + (nr << PAGE_SHIFT);
        let chunk_end = fend.min(end);
        if nr == 1 {
            let partial = pos > fstart || chunk_end < fend.min(isize);
            if partial {
                let done = self.submit_read(file.mapping, fi, fi + 1, file.memcg);
                self.core.wait_until(done);
            }
            return;
        }
        // Pages before the write's first full page and after its last,
        // inside i_size: at most two runs.
        let first_full = pos.div_ceil(PAGE_SIZE);
        let last_full = if chunk_end == fend || chunk_end >= isize {
            chunk_end.div_ceil(PAGE_SIZE)
        } else {
            chunk_end / PAGE_SIZE
        };
        let in_size = isize.div_ceil(PAGE_SIZE);
        let mut done = 0;
        for (s, e) in [(fi, first_full), (last_full, fi + nr)] {
            let e = e.min(in_size);
            if s < e {
                done = self.submit_read(file.mapping, s, e, file.memcg);
            }
        }
        self.core.wait_until(done);
    }

    /// A store through a shared file mapping: the access, then, for a
    /// folio still clean, the write-protect fault's dirtying
    /// (wp_page_shared -> folio_mark_dirty); a store to a folio already
    /// dirty goes through its writable PTE without entering the kernel.
    /// Returns (access ok, folio newly dirtied: the caller then runs
    /// balance_dirty_pages, as fault_dirty_shared_page does).
    pub fn mmap_write_access(&mut self, file: &mut OpenFile, index: u64) -> (bool, bool) {
        if !self.mmap_access(file, index) {
            return (false, false);
        }
        let dirtied = match self.core.files[file.mapping as usize].folio(index) {
            Some(id) => self.folio_mark_dirty(id),
            None => false,
        };
        (true, dirtied)
    }

    /// One user access to page `index` of a file mapping: a TLB-level hit on
    /// a mapped page just sets the PTE's accessed bit; anything else is a
    /// page fault (handle_mm_fault with the VM_FAULT_RETRY loop).
    #[inline]
    pub fn mmap_access(&mut self, file: &mut OpenFile, index: u64) -> bool {
        if let Some(id) = self.core.files[file.mapping as usize].folio(index) {
            if self.core.pte_mapped(file, id, index) {
                let f = self.core.folios.get_mut(id);
                f.set(pg::PTE_YOUNG);
                f.clear(pg::UNUSED_MARKS);
                self.core.pte_mkyoung(file, index);
                self.core.cpu(self.core.cost.touch_mapped);
                return true;
            }
        }
        if self.core.files[file.mapping as usize].shmem {
            return self.shmem_fault(file, index);
        }
        self.handle_mm_fault(file, index)
    }

    /// filemap_fault(): the ->fault handler, called when fault-around did
    /// not map the page.
    pub fn filemap_fault(&mut self, file: &mut OpenFile, index: u64, flags: u32) -> VmFault {
        let mapping = file.mapping;
        let memcg = file.memcg;
        if let Some((t, cx)) = self.core.tracer() {
            t.filemap_fault(cx, memcg, mapping, index);
        }
        let mut fpin = false;
        let id = match self.core.files[mapping as usize].folio(index) {
            Some(id) => {
                if flags & FAULT_FLAG_TRIED == 0 {
                    fpin = self.do_async_mmap_readahead(file, id, index);
                }
                if self.core.files[mapping as usize]
                    .io_done_at(index, self.core.now)
                    .is_some()
                {
                    // lock_folio_maybe_drop_mmap(): the folio is locked for
                    // I/O; drop the mmap lock and retry (unless already
                    // retried, when the task just waits).
                    if flags & FAULT_FLAG_TRIED == 0 {
                        fpin = true;
                    } else {
                        self.wait_uptodate(mapping, index);
                    }
                }
                id
            }
            None => {
                self.core.count(memcg, Item::PGMAJFAULT, 1);
                fpin = self.do_sync_mmap_readahead(file, index, flags);
                match self.core.files[mapping as usize].folio(index) {
                    Some(id) => id,
                    None => {
                        // __filemap_get_folio(FGP_CREAT) then the
                        // page_not_uptodate path: filemap_read_folio().
                        let Some(id) = self.filemap_add_folio(mapping, index, memcg, true) else {
                            return VmFault::Oom;
                        };
                        self.submit_read(mapping, index, index + 1, memcg);
                        if flags & FAULT_FLAG_TRIED == 0 {
                            fpin = true;
                        } else {
                            self.wait_uptodate(mapping, index);
                        }
                        id
                    }
                }
            }
        };
        if fpin {
            self.core.count_vm(Item::FAULT_RETRY, 1);
            return VmFault::Retry;
        }
        self.wait_uptodate(mapping, index);
        // finish_fault(): map the faulting page, young.
        self.map_folio_pte(file, id, true);
        VmFault::Done
    }

    /// Installs the PTE for a folio (set_pte_range + folio_add_file_rmap).
    #[inline]
    pub fn map_folio_pte(&mut self, file: &OpenFile, id: FolioId, young: bool) {
        self.core.pte_map_folio(file, id, young);
        let f = self.core.folios.get_mut(id);
        if young {
            f.set(pg::PTE_YOUNG);
        }
        if !f.test(pg::MAPPED) {
            f.set(pg::MAPPED);
            // NR_FILE_MAPPED is the folio's memcg's (lruvec_stat_mod_folio),
            // not the faulting task's: a page cached by another group.
            let (order, fm) = (f.order(), f.memcg);
            self.core.memcgs[fm as usize].nr_mapped += 1 << order;
            if order == HPAGE_PMD_ORDER {
                // finish_fault() -> do_set_pmd(): one PMD maps it.
                self.core.count_vm(Item::THP_FILE_MAPPED, 1);
            }
        }
    }

    /// filemap_map_pages(): map the uptodate, unlocked folios of
    /// [start, end] that are not marked for readahead, and settle
    /// mmap_miss. Returns true when the faulting page got mapped.
    pub fn filemap_map_pages(
        &mut self,
        file: &mut OpenFile,
        start: u64,
        end: u64,
        fault_index: u64,
        flags: u32,
    ) -> bool {
        let mapping = file.mapping;
        if let Some((t, cx)) = self.core.tracer() {
            let ev = crate::trace::Ev::FilemapMapPages;
            t.filemap_range(ev, cx, file.memcg, mapping, start, end);
        }
        let old_ptes = self.core.cfg.variants.old_prefaulted_ptes;
        let p1 = self.core.cfg.variants.mmap_miss_p1;
        let p2 = self.core.cfg.variants.mmap_miss_p2;
        let now = self.core.now;
        let (mut hits_all, mut hits_fault) = (0u32, 0u32);
        let mut mapped_fault = false;
        let end = end.min(self.core.files[mapping as usize].nr_pages() - 1);
        let mut nr_mapped_pages = 0u64;
        let mut idx = start;
        while idx <= end {
            let cur = idx;
            // The next index does not wait for this folio's load unless
            // it is large (the branch is predicted): the window's slots
            // and folios are fetched in parallel.
            idx += 1;
            let a = &self.core.files[mapping as usize];
            let Some(id) = a.folio(cur) else {
                continue;
            };
            let busy = a.io_done_at(cur, now).is_some();
            let f = self.core.folios.get_mut(id);
            // The pages of this folio inside the window: a large folio is
            // mapped by filemap_map_folio_range() over them, one step.
            let nr = f.nr_pages();
            let (in_range, has_fault) = if nr == 1 {
                (1, cur == fault_index)
            } else {
                let last = (f.index as u64 + nr - 1).min(end);
                idx = last + 1;
                (last + 1 - cur, (cur..=last).contains(&fault_index))
            };
            // next_uptodate_folio() skips locked and PG_readahead folios.
            if busy || f.test(pg::READAHEAD) || f.test(pg::LOCKED) {
                continue;
            }
            // Every page mapped (order 0: filemap_map_order0_folio(), a
            // large folio: filemap_map_folio_range()) that is not
            // workingset counts as a hit, even if its PTE already exists
            // (patch 1: only the faulting one).
            let hit = !f.test(pg::WORKINGSET) as u32;
            hits_all += hit * in_range as u32;
            if has_fault {
                mapped_fault = true;
                hits_fault += hit;
            }
            // Prefaulted PTEs are old where arch_wants_old_prefaulted_pte().
            let young = has_fault || !old_ptes;
            // This task's PTE (with page tables of its own, another
            // process's PTE is none of its).
            if self.core.pte_mapped(file, id, cur) {
                continue;
            }
            self.core.pte_map_folio(file, id, young);
            // The model keeps one PTE state per folio and process: a
            // large folio is mapped whole (its pages outside the window
            // too).
            let f = self.core.folios.get_mut(id);
            if young {
                f.set(pg::PTE_YOUNG);
            }
            if has_fault {
                f.clear(pg::UNUSED_MARKS);
            }
            nr_mapped_pages += in_range;
            if f.test(pg::MAPPED) {
                continue;
            }
            f.set(pg::MAPPED);
            let fm = f.memcg;
            self.core.memcgs[fm as usize].nr_mapped += nr;
            if nr == 1 << HPAGE_PMD_ORDER {
                // filemap_map_pmd() -> do_set_pmd(): a PMD-sized folio is
                // mapped whole by one PMD.
                self.core.count_vm(Item::THP_FILE_MAPPED, 1);
            }
        }
        self.core
            .count_vm(Item::FAULTAROUND_MAPPED, nr_mapped_pages);
        self.core.cpu(self.core.cost.map_page * (end + 1 - start));
        // Seed 002 patch 2: a FAULT_FLAG_TRIED retry finds the folio its own
        // miss just read; crediting it would cancel that miss.
        let tried = flags & FAULT_FLAG_TRIED != 0;
        if !(p2 && tried) {
            let hits = if p1 { hits_fault } else { hits_all };
            let mm = &mut file.ra.mmap_miss;
            *mm = mm.saturating_sub(hits);
        }
        if self.core.mmap_miss_alts.nr > 0 {
            let alts = self.core.mmap_miss_alts;
            alts.map_pages(&mut file.ra, hits_all, hits_fault, tried);
        }
        mapped_fault
    }

    /// do_sync_mmap_readahead(): read-around on a major fault. Returns
    /// whether the mmap lock was dropped for I/O (fpin).
    pub fn do_sync_mmap_readahead(&mut self, file: &mut OpenFile, index: u64, _flags: u32) -> bool {
        if file.vm_rand_read || file.ra.ra_pages == 0 {
            return false;
        }
        if file.vm_seq_read {
            self.page_cache_sync_ra(file, index, file.ra.ra_pages);
            return true;
        }
        let mut mmap_miss = file.ra.mmap_miss;
        if mmap_miss < MMAP_LOTSAMISS * 10 {
            mmap_miss += 1;
            file.ra.mmap_miss = mmap_miss;
        }
        if self.core.mmap_miss_alts.nr > 0 {
            let now = self.core.now;
            let stop = mmap_miss > MMAP_LOTSAMISS;
            self.core.mmap_miss_alts.sync_mmap(&mut file.ra, stop, now);
        }
        if mmap_miss > MMAP_LOTSAMISS {
            return false;
        }
        let ra_pages = file.ra.ra_pages;
        file.ra.start = index.saturating_sub(ra_pages / 2);
        file.ra.size = ra_pages;
        file.ra.async_size = ra_pages / 4;
        file.ra.order = 0;
        self.core.count_vm(Item::RA_SYNC, 1);
        let start = file.ra.start;
        self.page_cache_ra_order(file, start);
        true
    }

    /// do_async_mmap_readahead(): a cached folio was faulted on; count a hit
    /// and push the window if it carries PG_readahead.
    pub fn do_async_mmap_readahead(
        &mut self,
        file: &mut OpenFile,
        id: FolioId,
        index: u64,
    ) -> bool {
        if file.vm_rand_read || file.ra.ra_pages == 0 {
            return false;
        }
        if !self.racing_fault(file.mapping, id, index) {
            if file.ra.mmap_miss > 0 {
                file.ra.mmap_miss -= 1;
            }
            if self.core.mmap_miss_alts.nr > 0 {
                self.core.mmap_miss_alts.async_mmap(&mut file.ra);
            }
        }
        if self.core.folios.get(id).test(pg::READAHEAD) {
            let ra_pages = file.ra.ra_pages;
            self.page_cache_async_ra(file, id, index, ra_pages);
            return true;
        }
        false
    }

    /// With `mmap-miss-skip-locked` (Roman Gushchin, 6.18): a folio still
    /// locked (under read I/O) is most likely another task's fault in
    /// progress, whose miss must not be cancelled by this one's hit.
    fn racing_fault(&self, mapping: u32, id: FolioId, index: u64) -> bool {
        self.core.cfg.variants.mmap_miss_skip_locked
            && (self.core.folios.get(id).test(pg::LOCKED)
                || self.core.files[mapping as usize]
                    .io_done_at(index, self.core.now)
                    .is_some())
    }

    /// invalidate_mapping_pages(): drop clean, unmapped, unlocked folios
    /// (POSIX_FADV_DONTNEED, fio's invalidate=1). Shadows are not left.
    pub fn invalidate_mapping_pages(&mut self, mapping: u32) {
        // Only the leaves that exist can hold entries.
        let mut next = 0;
        while let Some(idx) = self.core.files[mapping as usize].next_populated(next, u64::MAX) {
            next = idx + 1;
            let id = match self.core.files[mapping as usize].slot(idx) {
                Slot::Folio(id) => id,
                Slot::Shadow(_) => {
                    // Shadow entries go too (clear_shadow_entries()): a
                    // page read after invalidation is not a refault.
                    self.core.files[mapping as usize].clear_shadow(idx);
                    self.core.workingset_update_node(mapping, idx, 0);
                    continue;
                }
                Slot::Empty | Slot::Swap(_) | Slot::Zero => continue,
            };
            let f = self.core.folios.get(id);
            // A large folio is met once, at its first index.
            let (fi, nr) = (f.index as u64, f.nr_pages());
            next = fi + nr;
            if f.test(pg::DIRTY)
                || f.test(pg::WRITEBACK)
                || f.test(pg::MAPPED)
                || f.test(pg::ISOLATED)
            {
                continue;
            }
            self.policy.folio_del_lru(&mut self.core, id);
            self.core.trace_delete_from_page_cache(id);
            let memcg = self.core.folios.get(id).memcg;
            self.core.page_cache_delete(mapping, fi, nr, None, memcg);
            self.core.memcgs[memcg as usize].nr_file -= nr;
            self.core.free_folio(id);
        }
    }

    /// munmap of a whole file mapping: PTEs go, folios stay cached.
    pub fn unmap_mapping(&mut self, mapping: u32) {
        let mut next = 0;
        while let Some(idx) = self.core.files[mapping as usize].next_populated(next, u64::MAX) {
            next = idx + 1;
            if let Some(id) = self.core.files[mapping as usize].folio(idx) {
                let f = self.core.folios.get_mut(id);
                if f.test(pg::MAPPED) {
                    f.clear(pg::MAPPED | pg::PTE_YOUNG);
                    let (m, nr) = (f.memcg, f.nr_pages());
                    self.core.memcgs[m as usize].nr_mapped -= nr;
                }
                self.core.rmap_unmap_folio(id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::AddressSpace;

    /// More reads in flight than the tracker's first slots: none is
    /// forgotten (the eight-slot ring overwrote the oldest, so readers
    /// skipped its wait and reclaim could evict its folios), and a
    /// completed read's slot is reused rather than grown into.
    #[test]
    fn reads_in_flight_are_all_remembered() {
        let mut a = AddressSpace::new(0, 1 << 30);
        for i in 0..20u64 {
            a.note_inflight(i * 10, i * 10 + 2, 1_000 + i, 0);
        }
        for i in 0..20u64 {
            assert_eq!(a.io_done_at(i * 10 + 1, 500), Some(1_000 + i), "read {i}");
            assert_eq!(a.io_done_at(i * 10 + 2, 500), None);
        }
        // At 1,005 reads 0-5 are complete: a new one takes a slot of theirs.
        a.note_inflight(500, 501, 2_000, 1_005);
        assert_eq!(a.inflight.len(), 20);
        assert_eq!(a.io_done_at(500, 1_005), Some(2_000));
        assert_eq!(a.io_done_at(1, 1_005), None);
        assert_eq!(a.io_done_at(191, 1_005), Some(1_019));
    }
}
