//! Compact folio state (include/linux/page-flags.h, include/linux/mm_types.h).
//!
//! One `Folio` is 24 bytes. Folios live in one dense arena indexed by
//! `FolioId`; LRU lists are intrusive doubly linked lists through `prev` /
//! `next`, so list operations on the hot path never allocate.

pub type FolioId = u32;
pub const NIL: FolioId = u32::MAX;

/// Page flags, named as in page-flags.h. `PG_young_pte` stands for the
/// accessed bit of the (single) PTE mapping the folio: the model keeps one
/// mapping per folio (one mm per file mapping), which is what the seeds'
/// workloads have.
pub mod pg {
    pub const LOCKED: u32 = 1 << 0;
    pub const REFERENCED: u32 = 1 << 1;
    pub const UPTODATE: u32 = 1 << 2;
    pub const DIRTY: u32 = 1 << 3;
    pub const LRU: u32 = 1 << 4;
    pub const ACTIVE: u32 = 1 << 5;
    pub const WORKINGSET: u32 = 1 << 6;
    /// PG_readahead (shares PG_reclaim's bit in the kernel; separate here,
    /// with the kernel's rule that writeback folios never trigger async ra).
    pub const READAHEAD: u32 = 1 << 7;
    pub const RECLAIM: u32 = 1 << 8;
    pub const WRITEBACK: u32 = 1 << 9;
    pub const SWAPBACKED: u32 = 1 << 10;
    pub const SWAPCACHE: u32 = 1 << 11;
    pub const UNEVICTABLE: u32 = 1 << 12;
    /// Mapped by a PTE (folio_mapped()).
    pub const MAPPED: u32 = 1 << 13;
    /// The PTE's accessed ("young") bit.
    pub const PTE_YOUNG: u32 = 1 << 14;
    /// Mapped from a VM_EXEC vma.
    pub const VM_EXEC: u32 = 1 << 15;
    /// Isolated from the LRU by reclaim (not on any list).
    pub const ISOLATED: u32 = 1 << 16;
    /// Brought in by readahead and not yet accessed (for the explain report:
    /// PG_readahead only marks one folio per window).
    pub const RA_UNUSED: u32 = 1 << 17;
    /// The frame belongs to zram's zsmalloc pool (no folio, no LRU).
    pub const ZSMALLOC: u32 = 1 << 18;
    /// A reference beyond the page cache's and the page tables' is held
    /// (filemap_read()'s folio_batch): __remove_mapping()'s
    /// folio_ref_freeze() fails and reclaim keeps the folio. The model
    /// keeps no refcounts; this bit stands for the extra one.
    pub const EXTRA_REF: u32 = 1 << 19;
    /// In a CPU's lru_add folio_batch: folio_add_lru() was called, lru_add()
    /// has not run yet (mm/swap.c), so the folio is on no LRU list and
    /// its generation or list is chosen by its flags at the drain.
    pub const LRU_CACHED: u32 = 1 << 20;
    /// MGLRU: the generation bits say a generation other than the list the
    /// folio sits on. folio_update_gen() (the page-table walk) changes only
    /// the bits and the generations' sizes; sort_folio() or inc_min_seq()
    /// moves the folio when eviction reaches it. The generation is in the
    /// two bits at PENDING_GEN_SHIFT.
    pub const GEN_PENDING: u32 = 1 << 21;
    pub const PENDING_GEN_SHIFT: u32 = 22;
    pub const PENDING_GEN_MASK: u32 = 0x3 << PENDING_GEN_SHIFT;
    /// folio_order(): bits 24..28 hold the order (the kernel keeps it in
    /// the first tail page; the model has no tail pages). Not a flag:
    /// read it with Folio::order().
    pub const ORDER_SHIFT: u32 = 24;
    pub const ORDER_MASK: u32 = 0xf << ORDER_SHIFT;
    /// Moved a generation on by MGLRU's sort_folio() (tier protection or
    /// the rework's promotion of a saturated folio) and not accessed since
    /// (for the explain counters: protection that bought nothing).
    pub const PROT_UNUSED: u32 = 1 << 28;
    /// The explain marks an access clears.
    pub const UNUSED_MARKS: u32 = RA_UNUSED | PROT_UNUSED;
    /// The frame is on the free list (no folio).
    pub const FREE: u32 = 1 << 31;
}

/// Where a folio sits in the LRU (`lru` field): a classic list index or,
/// under MGLRU, the generation number plus one, as `folio->flags` LRU_GEN.
#[derive(Clone, Copy, Debug, Default)]
#[repr(C)]
pub struct Folio {
    pub flags: u32,
    /// File (address_space) id, or the anon space id for anonymous folios.
    pub mapping: u32,
    /// Page index in the mapping.
    pub index: u32,
    pub prev: FolioId,
    pub next: FolioId,
    /// Memory cgroup id.
    pub memcg: u16,
    /// List number (classic) or generation+1 (MGLRU); 0 when off-LRU.
    pub lru: u8,
    /// MGLRU: LRU_REFS (the refs counter beside PG_referenced); classic: unused.
    pub refs: u8,
}

const _: () = assert!(std::mem::size_of::<Folio>() == 24);

impl Folio {
    #[inline]
    pub fn test(&self, f: u32) -> bool {
        self.flags & f != 0
    }
    #[inline]
    pub fn set(&mut self, f: u32) {
        self.flags |= f;
    }
    #[inline]
    pub fn clear(&mut self, f: u32) {
        self.flags &= !f;
    }
    /// Test-and-clear, as folio_test_clear_referenced().
    #[inline]
    pub fn test_clear(&mut self, f: u32) -> bool {
        let was = self.flags & f != 0;
        self.flags &= !f;
        was
    }
    #[inline]
    pub fn is_file_lru(&self) -> bool {
        !self.test(pg::SWAPBACKED)
    }
    /// folio_order().
    #[inline]
    pub fn order(&self) -> u32 {
        (self.flags & pg::ORDER_MASK) >> pg::ORDER_SHIFT
    }
    /// folio_nr_pages().
    #[inline]
    pub fn nr_pages(&self) -> u64 {
        1 << self.order()
    }
    /// Page-flag writes that replace every flag keep the order (a folio's
    /// size is fixed from allocation to free) and LRU_CACHED, which is no
    /// page flag but the lru_add batch's hold on the folio.
    #[inline]
    pub fn set_flags_keep_order(&mut self, flags: u32) {
        self.flags = (self.flags & (pg::ORDER_MASK | pg::LRU_CACHED)) | flags;
    }
}

/// MAX_PAGECACHE_ORDER on x86-64 with 4 KiB pages: HPAGE_PMD_ORDER (9),
/// below MAX_XAS_ORDER.
pub const MAX_PAGECACHE_ORDER: u32 = 9;
/// HPAGE_PMD_ORDER on x86-64: a folio of this order is mapped by a PMD.
pub const HPAGE_PMD_ORDER: u32 = 9;
/// THP_ORDERS_ALL_FILE_DEFAULT: every large page-cache order, 1 to
/// MAX_PAGECACHE_ORDER, as an order mask.
pub const THP_ORDERS_ALL_FILE: u32 = (2 << MAX_PAGECACHE_ORDER) - 2;

/// The large orders (1 to PMD) set in an order mask, highest first: the
/// order the THP allocation paths try them in (highest_order/next_order).
#[inline]
pub fn orders_desc(mask: u32) -> impl Iterator<Item = u32> {
    (1..=HPAGE_PMD_ORDER)
        .rev()
        .filter(move |o| mask & (1 << o) != 0)
}

/// The folio arena with a free list threaded through `next`. Frames are
/// created as first used, not for the whole simulated RAM: `f` holds the
/// frames ever allocated and `capacity` bounds it. The free list holds
/// only frames freed since; when it is empty the next never-used frame
/// (`f.len()`) comes next. That is the order a list of all frames, in
/// index order, behind the freed ones would give, so every allocation
/// gets the same FolioId as with a fully built arena.
pub struct FolioTable {
    pub f: Vec<Folio>,
    free_head: FolioId,
    /// Page frames of the simulated RAM (managed pages).
    capacity: usize,
    pub nr_free: u64,
}

impl FolioTable {
    pub fn new(capacity: usize) -> Self {
        // FolioId is a u32 with NIL reserved.
        assert!(
            capacity < NIL as usize,
            "more page frames than FolioId can index"
        );
        FolioTable {
            f: Vec::new(),
            free_head: NIL,
            capacity,
            nr_free: capacity as u64,
        }
    }

    /// Page frames of the simulated RAM, allocated or not.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Frames ever allocated (the arena's length).
    #[inline]
    pub fn nr_frames(&self) -> usize {
        self.f.len()
    }

    /// Bytes the arena holds (its reserved capacity, what RSS pays).
    pub fn mem_footprint(&self) -> usize {
        self.f.capacity() * std::mem::size_of::<Folio>()
    }

    /// Takes a free folio; None when every page frame is in use.
    #[inline]
    pub fn alloc(&mut self) -> Option<FolioId> {
        self.alloc_order(0)
    }

    /// Takes a free folio of 1 << `order` pages; None when fewer pages are
    /// free. The model does not place frames, so a large folio is one
    /// arena entry that holds 1 << order of the free pages (no
    /// fragmentation: any free pages will do).
    #[inline]
    pub fn alloc_order(&mut self, order: u32) -> Option<FolioId> {
        let nr = 1u64 << order;
        if self.nr_free < nr {
            return None;
        }
        let fresh = Folio {
            flags: order << pg::ORDER_SHIFT,
            prev: NIL,
            next: NIL,
            ..Folio::default()
        };
        let id = self.free_head;
        if id == NIL {
            // A never-used entry; there are never more entries than pages.
            let id = self.f.len();
            debug_assert!(id < self.capacity);
            self.f.push(fresh);
            self.nr_free -= nr;
            return Some(id as FolioId);
        }
        let x = &mut self.f[id as usize];
        self.free_head = x.next;
        *x = fresh;
        self.nr_free -= nr;
        Some(id)
    }

    /// A new entry for a piece of a folio being split: its pages are the
    /// parent's already, so no free page is taken.
    pub fn alloc_split_piece(&mut self, piece: Folio) -> FolioId {
        let id = self.free_head;
        if id == NIL {
            let id = self.f.len();
            debug_assert!(id < self.capacity);
            self.f.push(piece);
            return id as FolioId;
        }
        let x = &mut self.f[id as usize];
        self.free_head = x.next;
        *x = piece;
        id
    }

    #[inline]
    pub fn free(&mut self, id: FolioId) {
        let x = &mut self.f[id as usize];
        debug_assert!(!x.test(pg::FREE) && !x.test(pg::LRU));
        let nr = x.nr_pages();
        x.flags = pg::FREE;
        x.prev = NIL;
        x.next = self.free_head;
        self.free_head = id;
        self.nr_free += nr;
    }

    /// The frame `id` if it exists (for a prefetch guess).
    #[inline]
    pub fn f_get(&self, id: FolioId) -> Option<&Folio> {
        self.f.get(id as usize)
    }

    #[inline]
    pub fn get(&self, id: FolioId) -> &Folio {
        &self.f[id as usize]
    }
    #[inline]
    pub fn get_mut(&mut self, id: FolioId) -> &mut Folio {
        &mut self.f[id as usize]
    }
}

/// An intrusive list head; `head` is the most recently added folio
/// (list_add), `tail` the oldest (lru_to_folio takes from the tail).
#[derive(Clone, Copy, Debug)]
pub struct ListHead {
    pub head: FolioId,
    pub tail: FolioId,
    /// Pages on the list (ListLinks::weight): folios where every folio is
    /// order 0.
    pub len: u64,
}

impl Default for ListHead {
    fn default() -> Self {
        ListHead {
            head: NIL,
            tail: NIL,
            len: 0,
        }
    }
}

/// The prev/next links a list threads through: the folios' own (the
/// kernel's folio->lru) or a separate pair of arrays (cache_ext's lists,
/// which a folio is on beside its LRU list).
pub trait ListLinks {
    fn prev(&self, id: FolioId) -> FolioId;
    fn next(&self, id: FolioId) -> FolioId;
    fn set_prev(&mut self, id: FolioId, p: FolioId);
    fn set_next(&mut self, id: FolioId, n: FolioId);
    /// What one entry adds to the list's length: its pages on an LRU list
    /// (lru_zone_size and lrugen->nr_pages count pages), 1 elsewhere.
    #[inline]
    fn weight(&self, _id: FolioId) -> u64 {
        1
    }
}

impl ListLinks for FolioTable {
    #[inline]
    fn prev(&self, id: FolioId) -> FolioId {
        self.get(id).prev
    }
    #[inline]
    fn next(&self, id: FolioId) -> FolioId {
        self.get(id).next
    }
    #[inline]
    fn set_prev(&mut self, id: FolioId, p: FolioId) {
        self.get_mut(id).prev = p;
    }
    #[inline]
    fn set_next(&mut self, id: FolioId, n: FolioId) {
        self.get_mut(id).next = n;
    }
    #[inline]
    fn weight(&self, id: FolioId) -> u64 {
        self.get(id).nr_pages()
    }
}

impl ListHead {
    /// list_add: at the head (most recent).
    #[inline]
    pub fn add<L: ListLinks>(&mut self, t: &mut L, id: FolioId) {
        self.insert(t, id, false);
    }

    /// list_add_tail: at the tail (oldest).
    #[inline]
    pub fn add_tail<L: ListLinks>(&mut self, t: &mut L, id: FolioId) {
        self.insert(t, id, true);
    }

    /// One routine for both ends: `tail` mirrors head and prev/next.
    #[inline]
    fn insert<L: ListLinks>(&mut self, t: &mut L, id: FolioId, tail: bool) {
        let old = if tail { self.tail } else { self.head };
        if tail {
            t.set_next(id, NIL);
            t.set_prev(id, old);
        } else {
            t.set_prev(id, NIL);
            t.set_next(id, old);
        }
        match (old != NIL, tail) {
            (true, true) => t.set_next(old, id),
            (true, false) => t.set_prev(old, id),
            (false, true) => self.head = id,
            (false, false) => self.tail = id,
        }
        if tail {
            self.tail = id;
        } else {
            self.head = id;
        }
        self.len += t.weight(id);
    }

    /// list_add_tail(&new->lru, &anchor->lru): `id` right before `anchor`,
    /// on the newer side (lru_add_split_folio()).
    pub fn insert_before<L: ListLinks>(&mut self, t: &mut L, anchor: FolioId, id: FolioId) {
        let p = t.prev(anchor);
        t.set_prev(id, p);
        t.set_next(id, anchor);
        t.set_prev(anchor, id);
        if p != NIL {
            t.set_next(p, id);
        } else {
            self.head = id;
        }
        self.len += t.weight(id);
    }

    /// A split's list side (lru_add_split_folio()): `parent`, listed here,
    /// shrank from `old_nr` pages to its new size; each piece joins the
    /// list right beside it. The list's page count is unchanged.
    pub fn add_split_pieces<L: ListLinks>(
        &mut self,
        t: &mut L,
        parent: FolioId,
        old_nr: u64,
        pieces: &[FolioId],
    ) {
        self.len -= old_nr - t.weight(parent);
        for &id in pieces {
            self.insert_before(t, parent, id);
        }
    }

    #[inline]
    pub fn del<L: ListLinks>(&mut self, t: &mut L, id: FolioId) {
        let (p, n) = (t.prev(id), t.next(id));
        if p != NIL {
            t.set_next(p, n);
        } else {
            self.head = n;
        }
        if n != NIL {
            t.set_prev(n, p);
        } else {
            self.tail = p;
        }
        t.set_prev(id, NIL);
        t.set_next(id, NIL);
        self.len -= t.weight(id);
    }

    /// Walks the list from head to tail (for invariant checks only).
    pub fn iter<'a>(&self, t: &'a FolioTable) -> impl Iterator<Item = FolioId> + 'a {
        let mut cur = self.head;
        std::iter::from_fn(move || {
            if cur == NIL {
                None
            } else {
                let id = cur;
                cur = t.get(id).next;
                Some(id)
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lazily grown arena hands out the same ids as a free list built
    /// over every frame up front (ids 0, 1, 2, ... behind the freed ones).
    #[test]
    fn lazy_arena_allocates_as_a_full_free_list_would() {
        let cap = 64;
        let mut t = FolioTable::new(cap);
        // The reference: a stack whose top is the list's head.
        let mut reference: Vec<FolioId> = (0..cap as FolioId).rev().collect();
        let mut live: Vec<FolioId> = vec![];
        let mut x = 12345u64;
        for _ in 0..2000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            if (x >> 33) % 3 != 0 || live.is_empty() {
                let got = t.alloc();
                assert_eq!(got, reference.pop());
                if let Some(id) = got {
                    live.push(id);
                }
            } else {
                let id = live.swap_remove((x >> 40) as usize % live.len());
                t.free(id);
                reference.push(id);
            }
            assert_eq!(t.nr_free, reference.len() as u64);
            assert!(t.nr_frames() <= cap);
        }
        assert_eq!(t.nr_frames(), cap, "the run used every frame at some point");
    }

    #[test]
    fn arena_grows_only_on_allocation() {
        let mut t = FolioTable::new(1 << 28);
        assert_eq!((t.nr_frames(), t.mem_footprint()), (0, 0));
        assert_eq!(t.nr_free, 1 << 28);
        let a = t.alloc().unwrap();
        let b = t.alloc().unwrap();
        assert_eq!((a, b, t.nr_frames()), (0, 1, 2));
        t.free(a);
        assert_eq!(t.alloc(), Some(a), "a freed frame before a new one");
        assert_eq!(t.nr_frames(), 2);
        assert!(t.mem_footprint() < 1024);
    }

    #[test]
    fn list_ops_keep_order_and_len() {
        let mut t = FolioTable::new(8);
        let mut l = ListHead::default();
        let a = t.alloc().unwrap();
        let b = t.alloc().unwrap();
        let c = t.alloc().unwrap();
        l.add(&mut t, a);
        l.add(&mut t, b);
        l.add_tail(&mut t, c);
        assert_eq!(l.iter(&t).collect::<Vec<_>>(), vec![b, a, c]);
        l.del(&mut t, a);
        assert_eq!(l.iter(&t).collect::<Vec<_>>(), vec![b, c]);
        assert_eq!(l.len, 2);
        assert_eq!(l.tail, c);
        l.del(&mut t, c);
        l.del(&mut t, b);
        assert_eq!((l.head, l.tail, l.len), (NIL, NIL, 0));
    }

    #[test]
    fn alloc_exhausts_and_free_recycles() {
        let mut t = FolioTable::new(2);
        let a = t.alloc().unwrap();
        let _b = t.alloc().unwrap();
        assert!(t.alloc().is_none());
        t.free(a);
        assert_eq!(t.nr_free, 1);
        assert_eq!(t.alloc(), Some(a));
    }
}
