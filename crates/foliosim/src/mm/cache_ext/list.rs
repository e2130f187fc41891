//! cache_ext's policy lists (mm/cache_ext.c's per-memcg lists and the
//! "valid folios set"): intrusive doubly linked lists threaded through
//! dense arrays indexed by FolioId, so every list operation on the
//! per-access path is O(1) and allocation-free. The arrays are sized once,
//! to the folio table, when the first policy attaches.

use crate::mm::folio::{FolioId, ListHead, ListLinks, NIL};

/// Lists a policy may create per memcg (cache_ext's limit).
pub const CACHE_EXT_MAX_LISTS: usize = 5;
/// Nodes one `list_iterate` call may visit.
pub const CACHE_EXT_ITERATE_MAX: usize = 4096;

/// A policy's list handle, local to its memcg (0..CACHE_EXT_MAX_LISTS).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ListId(pub u8);

/// Why a list operation was refused (the kfuncs' -EINVAL / -ENOSPC cases).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ListError {
    /// The memcg already has CACHE_EXT_MAX_LISTS lists.
    TooManyLists,
    /// No such list in this memcg.
    NoSuchList,
    /// The folio is not in the valid folios set of this memcg.
    InvalidFolio,
    /// list_add of a folio already on a list (use list_move).
    AlreadyOnList,
    /// move / del of a folio that is on no list.
    NotOnList,
}

impl std::fmt::Display for ListError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ListError::TooManyLists => "more than 5 lists in one memcg",
            ListError::NoSuchList => "no such list",
            ListError::InvalidFolio => "folio not in the valid folios set",
            ListError::AlreadyOnList => "folio already on a list",
            ListError::NotOnList => "folio on no list",
        })
    }
}

/// The links of cache_ext's lists, apart from the folios' LRU links.
#[derive(Default)]
struct Links {
    prev: Vec<FolioId>,
    next: Vec<FolioId>,
}

impl ListLinks for Links {
    #[inline]
    fn prev(&self, id: FolioId) -> FolioId {
        self.prev[id as usize]
    }
    #[inline]
    fn next(&self, id: FolioId) -> FolioId {
        self.next[id as usize]
    }
    #[inline]
    fn set_prev(&mut self, id: FolioId, p: FolioId) {
        self.prev[id as usize] = p;
    }
    #[inline]
    fn set_next(&mut self, id: FolioId, n: FolioId) {
        self.next[id as usize] = n;
    }
}

/// All memcgs' lists and the valid folios set. Memcg `m` owns global
/// lists `m * MAX .. m * MAX + nr_lists[m]`.
#[derive(Default)]
pub struct ListSpace {
    links: Links,
    /// Global list number + 1 of the folio; 0 when on no policy list.
    on: Vec<u16>,
    /// Memcg + 1 of a folio in the valid folios set; 0 when not in it.
    valid: Vec<u16>,
    pub(crate) heads: Vec<ListHead>,
    nr_lists: Vec<u8>,
    /// Folios in the valid set, per memcg.
    nr_valid: Vec<u64>,
}

impl ListSpace {
    /// Sizes the per-folio arrays (once) and the per-memcg ones.
    pub fn ensure(&mut self, nr_folios: usize, nr_memcgs: usize) {
        if self.links.prev.len() < nr_folios {
            self.links.prev.resize(nr_folios, NIL);
            self.links.next.resize(nr_folios, NIL);
            self.on.resize(nr_folios, 0);
            self.valid.resize(nr_folios, 0);
        }
        if self.nr_lists.len() < nr_memcgs {
            self.nr_lists.resize(nr_memcgs, 0);
            self.nr_valid.resize(nr_memcgs, 0);
            self.heads
                .resize(nr_memcgs * CACHE_EXT_MAX_LISTS, ListHead::default());
        }
    }

    pub fn list_create(&mut self, memcg: u16) -> Result<ListId, ListError> {
        let n = &mut self.nr_lists[memcg as usize];
        if *n as usize >= CACHE_EXT_MAX_LISTS {
            return Err(ListError::TooManyLists);
        }
        *n += 1;
        Ok(ListId(*n - 1))
    }

    #[inline]
    fn global(&self, memcg: u16, list: ListId) -> Result<usize, ListError> {
        if list.0 >= self.nr_lists[memcg as usize] {
            return Err(ListError::NoSuchList);
        }
        Ok(memcg as usize * CACHE_EXT_MAX_LISTS + list.0 as usize)
    }

    /// Adds a folio to the valid folios set of `memcg`.
    #[inline]
    pub fn register(&mut self, memcg: u16, id: FolioId) {
        debug_assert_eq!(self.valid[id as usize], 0);
        self.valid[id as usize] = memcg + 1;
        self.nr_valid[memcg as usize] += 1;
    }

    /// Drops a folio from the valid set and from its list. Returns whether
    /// it was in the set.
    #[inline]
    pub fn unregister(&mut self, id: FolioId) -> bool {
        let Some(v) = self.valid.get(id as usize).copied() else {
            return false;
        };
        if v == 0 {
            return false;
        }
        if self.on[id as usize] != 0 {
            self.unlink(id);
        }
        self.valid[id as usize] = 0;
        self.nr_valid[v as usize - 1] -= 1;
        true
    }

    /// Whether `id` is in `memcg`'s valid folios set.
    #[inline]
    pub fn is_valid(&self, memcg: u16, id: FolioId) -> bool {
        self.valid.get(id as usize).copied() == Some(memcg + 1)
    }

    pub fn nr_valid(&self, memcg: u16) -> u64 {
        self.nr_valid.get(memcg as usize).copied().unwrap_or(0)
    }

    /// The list a folio is on (local id), if any.
    #[inline]
    pub fn list_of(&self, id: FolioId) -> Option<ListId> {
        let g = *self.on.get(id as usize)?;
        (g != 0).then(|| ListId(((g - 1) as usize % CACHE_EXT_MAX_LISTS) as u8))
    }

    #[inline]
    fn unlink(&mut self, id: FolioId) {
        let g = self.on[id as usize] as usize - 1;
        self.heads[g].del(&mut self.links, id);
        self.on[id as usize] = 0;
    }

    #[inline]
    fn link(&mut self, g: usize, id: FolioId, tail: bool) {
        if tail {
            self.heads[g].add_tail(&mut self.links, id);
        } else {
            self.heads[g].add(&mut self.links, id);
        }
        self.on[id as usize] = g as u16 + 1;
    }

    /// list_add / list_add_tail: the folio must be valid and on no list.
    pub fn add(
        &mut self,
        memcg: u16,
        list: ListId,
        id: FolioId,
        tail: bool,
    ) -> Result<(), ListError> {
        let g = self.global(memcg, list)?;
        self.check_folio(memcg, id, false)?;
        self.link(g, id, tail);
        Ok(())
    }

    /// list_move: to `list`'s head or tail; the folio must be on a list.
    pub fn move_to(
        &mut self,
        memcg: u16,
        list: ListId,
        id: FolioId,
        tail: bool,
    ) -> Result<(), ListError> {
        let g = self.global(memcg, list)?;
        self.check_folio(memcg, id, true)?;
        self.unlink(id);
        self.link(g, id, tail);
        Ok(())
    }

    /// list_del: the folio stays valid, on no list.
    pub fn del(&mut self, memcg: u16, id: FolioId) -> Result<(), ListError> {
        self.check_folio(memcg, id, true)?;
        self.unlink(id);
        Ok(())
    }

    /// The kfuncs' checks of the folio: in `memcg`'s valid set, and on a
    /// list when `listed` (move, del), on none otherwise (add).
    #[inline]
    fn check_folio(&self, memcg: u16, id: FolioId, listed: bool) -> Result<(), ListError> {
        if !self.is_valid(memcg, id) {
            return Err(ListError::InvalidFolio);
        }
        match (self.on[id as usize] != 0, listed) {
            (true, false) => Err(ListError::AlreadyOnList),
            (false, true) => Err(ListError::NotOnList),
            _ => Ok(()),
        }
    }

    pub fn len(&self, memcg: u16, list: ListId) -> Result<u64, ListError> {
        Ok(self.heads[self.global(memcg, list)?].len)
    }

    pub fn head(&self, memcg: u16, list: ListId) -> Result<FolioId, ListError> {
        Ok(self.heads[self.global(memcg, list)?].head)
    }

    #[inline]
    pub fn next_of(&self, id: FolioId) -> FolioId {
        self.links.next[id as usize]
    }

    /// Checks links, lengths and membership (tests and --check).
    pub fn check(&self) -> Result<(), String> {
        let mut seen = 0u64;
        for (g, h) in self.heads.iter().enumerate() {
            let (mut id, mut prev, mut n) = (h.head, NIL, 0u64);
            while id != NIL {
                if self.on[id as usize] as usize != g + 1 {
                    return Err(format!(
                        "cache_ext: folio {id} on list {g} marked {}",
                        self.on[id as usize]
                    ));
                }
                if self.links.prev[id as usize] != prev {
                    return Err(format!("cache_ext: list {g} broken prev at {id}"));
                }
                if self.valid[id as usize] as usize != g / CACHE_EXT_MAX_LISTS + 1 {
                    return Err(format!(
                        "cache_ext: folio {id} on list {g} not valid for its memcg"
                    ));
                }
                prev = id;
                id = self.links.next[id as usize];
                n += 1;
            }
            if prev != h.tail || n != h.len {
                return Err(format!(
                    "cache_ext: list {g} tail/len mismatch ({n} vs {})",
                    h.len
                ));
            }
            seen += n;
        }
        let marked = self.on.iter().filter(|&&g| g != 0).count() as u64;
        if marked != seen {
            return Err(format!(
                "cache_ext: {marked} folios marked on lists, {seen} linked"
            ));
        }
        Ok(())
    }
}
