//! The reverse map of a file's folios (mm/rmap.c): each process that maps
//! a file does so through page tables of its own. A scenario process's
//! file mapping registers an MmPtes on the file's i_mmap: its faults map
//! pages into it, a hit is a present PTE of its own (another process's
//! PTE is no use to it), folio_referenced() counts the young PTEs across
//! the processes (more than one activates the folio at once) and
//! try_to_unmap() clears them all. PG_mapped stays what folio_mapped()
//! says (some process maps it) and PTE_YOUNG whether any young PTE may be
//! left. Mappings that do not register (fio's mmap engine, the mmap probe,
//! tmpfs files) keep one PTE per folio, those two flags standing for it.

use super::filemap::OpenFile;
use super::folio::{pg, FolioId};
use super::memcontrol::MemcgId;
use super::vmscan::ReclaimPolicy;
use super::{Core, Kernel};

/// OpenFile::pte of a mapping without page tables of its own.
pub const NO_PTES: u32 = u32::MAX;

/// Per-page PTE bits.
const PRESENT: u8 = 1;
const YOUNG: u8 = 2;

/// PTRS_PER_PTE: one page-table page maps 512 pages.
const PTRS_PER_PTE: u64 = 512;

/// One process's page tables over a file (a VMA on the file's i_mmap).
#[derive(Clone, Debug, Default)]
pub struct MmPtes {
    /// Per page of the file: PRESENT and YOUNG; empty once unmapped.
    ptes: Vec<u8>,
    /// Page-table pages: one bit per PTRS_PER_PTE-page region.
    tables: Vec<u64>,
    nr_tables: u64,
    /// The memcg its page-table pages are charged to.
    memcg: MemcgId,
}

impl MmPtes {
    #[inline]
    fn bits(&self, index: u64) -> u8 {
        self.ptes.get(index as usize).copied().unwrap_or(0)
    }

    /// Any PTE of pages [first, first + nr) with any of `mask`.
    fn any(&self, first: u64, nr: u64, mask: u8) -> bool {
        (first..first + nr).any(|i| self.bits(i) & mask != 0)
    }

    fn set(&mut self, first: u64, nr: u64, bits: u8) {
        let end = ((first + nr) as usize).min(self.ptes.len());
        for b in &mut self.ptes[(first as usize).min(end)..end] {
            *b |= bits;
        }
    }

    fn clear(&mut self, first: u64, nr: u64, bits: u8) {
        let end = ((first + nr) as usize).min(self.ptes.len());
        for b in &mut self.ptes[(first as usize).min(end)..end] {
            *b &= !bits;
        }
    }
}

impl Core {
    /// mmap() of `mapping` by a process in `memcg`: a VMA of its own on
    /// the file's i_mmap, no PTE present yet.
    pub fn mmap_ptes(&mut self, mapping: u32, memcg: MemcgId) -> u32 {
        let a = &mut self.files[mapping as usize];
        let n = a.nr_pages() as usize;
        a.i_mmap.push(MmPtes {
            ptes: vec![0; n],
            tables: Vec::new(),
            nr_tables: 0,
            memcg,
        });
        (a.i_mmap.len() - 1) as u32
    }

    /// Whether the task's access to page `index` (folio `id`) goes through
    /// a present PTE of its own.
    #[inline]
    pub fn pte_mapped(&self, file: &OpenFile, id: FolioId, index: u64) -> bool {
        if file.pte == NO_PTES {
            return self.folios.get(id).test(pg::MAPPED);
        }
        self.files[file.mapping as usize].i_mmap[file.pte as usize].bits(index) & PRESENT != 0
    }

    /// The access bit of the task's PTE for page `index`.
    #[inline]
    pub fn pte_mkyoung(&mut self, file: &OpenFile, index: u64) {
        if file.pte != NO_PTES {
            let t = &mut self.files[file.mapping as usize].i_mmap[file.pte as usize];
            if let Some(b) = t.ptes.get_mut(index as usize) {
                *b |= YOUNG;
            }
        }
    }

    /// set_pte_range() of folio `id` in the task's page tables (the model
    /// maps a large folio whole, as it does without them).
    #[inline]
    pub fn pte_map_folio(&mut self, file: &OpenFile, id: FolioId, young: bool) {
        if file.pte == NO_PTES {
            return;
        }
        let f = self.folios.get(id);
        let (first, nr) = (f.index as u64, f.nr_pages());
        let bits = PRESENT | if young { YOUNG } else { 0 };
        self.files[file.mapping as usize].i_mmap[file.pte as usize].set(first, nr, bits);
    }

    /// Whether the page-table page of `region` exists in the task's page
    /// tables, and if not, notes it as allocated and charged to the
    /// VMA's memcg (the caller charged it). None: no page tables of its own.
    pub fn pte_table_alloc(&mut self, file: &OpenFile, index: u64) -> Option<bool> {
        if file.pte == NO_PTES {
            return None;
        }
        let t = &mut self.files[file.mapping as usize].i_mmap[file.pte as usize];
        let region = index / PTRS_PER_PTE;
        let (w, b) = ((region / 64) as usize, region % 64);
        if t.tables.get(w).is_some_and(|x| x & (1 << b) != 0) {
            return Some(true);
        }
        if t.tables.len() <= w {
            t.tables.resize(w + 1, 0);
        }
        t.tables[w] |= 1 << b;
        t.nr_tables += 1;
        Some(false)
    }

    /// folio_referenced()'s rmap walk over the processes' page tables:
    /// how many map folio `id` with a young PTE (each counts once, as
    /// folio_referenced_one() does per VMA for a folio its PTEs map),
    /// their access bits cleared.
    pub fn folio_referenced_ptes(&mut self, id: FolioId) -> u32 {
        let f = self.folios.get(id);
        let (mapping, first, nr) = (f.mapping, f.index as u64, f.nr_pages());
        let mut n = 0;
        for t in &mut self.files[mapping as usize].i_mmap {
            if t.any(first, nr, YOUNG) {
                n += 1;
                t.clear(first, nr, YOUNG);
            }
        }
        n
    }

    /// try_to_unmap()'s rmap walk: every process's PTEs of folio `id` go.
    #[inline]
    pub fn rmap_unmap_folio(&mut self, id: FolioId) {
        let f = self.folios.get(id);
        let (mapping, first, nr) = (f.mapping, f.index as u64, f.nr_pages());
        for t in &mut self.files[mapping as usize].i_mmap {
            t.clear(first, nr, PRESENT | YOUNG);
        }
    }

    /// Whether a process other than VMA `pte` maps a page of the folio
    /// at [first, first + nr).
    fn mapped_elsewhere(&self, mapping: u32, pte: u32, first: u64, nr: u64) -> bool {
        let a = &self.files[mapping as usize];
        a.i_mmap
            .iter()
            .enumerate()
            .any(|(i, t)| i as u32 != pte && t.any(first, nr, PRESENT))
    }

    /// zap_present_folio_ptes() of one folio in VMA `pte`: its PTEs go,
    /// and the folio is unmapped if no other process maps it
    /// (folio_remove_rmap: NR_FILE_MAPPED). Returns whether a PTE was
    /// young.
    fn zap_folio_ptes(&mut self, mapping: u32, pte: u32, id: FolioId) -> bool {
        let f = self.folios.get(id);
        let (first, nr, young) = (f.index as u64, f.nr_pages(), f.test(pg::PTE_YOUNG));
        let t = &mut self.files[mapping as usize].i_mmap[pte as usize];
        let young = young && t.any(first, nr, YOUNG);
        t.clear(first, nr, PRESENT | YOUNG);
        if !self.mapped_elsewhere(mapping, pte, first, nr) {
            let f = self.folios.get_mut(id);
            if f.test(pg::MAPPED) {
                f.clear(pg::MAPPED | pg::PTE_YOUNG);
                let memcg = f.memcg;
                self.memcgs[memcg as usize].nr_mapped -= nr;
            }
        }
        young
    }

    /// free_pgtables() of VMA `pte`: its page-table pages are freed and
    /// uncharged.
    fn free_pte_tables(&mut self, mapping: u32, pte: u32) {
        let t = &mut self.files[mapping as usize].i_mmap[pte as usize];
        t.tables.clear();
        let (nr_tables, memcg) = (std::mem::take(&mut t.nr_tables), t.memcg);
        if nr_tables > 0 {
            self.memcgs[memcg as usize].nr_pagetables -= nr_tables;
            self.mem_cgroup_uncharge(memcg, nr_tables);
        }
    }
}

impl<P: ReclaimPolicy> Kernel<P> {
    /// zap_pte_range() over the task's whole file mapping (munmap, exit,
    /// MADV_DONTNEED): its PTEs go, and a folio whose PTE was young is
    /// marked accessed (vma_has_recency(): not under MADV_RANDOM or
    /// MADV_SEQUENTIAL), so that a page several processes used is
    /// activated as they exit. With `free_pgtables` (munmap and exit, not
    /// MADV_DONTNEED) the page-table pages go too. The VMA stays
    /// registered, empty.
    pub fn munmap_ptes(&mut self, file: &OpenFile, free_pgtables: bool) {
        if file.pte == NO_PTES {
            return;
        }
        let (m, p) = (file.mapping, file.pte);
        let recency = !(file.vm_rand_read || file.vm_seq_read);
        let n = self.core.files[m as usize].i_mmap[p as usize].ptes.len() as u64;
        let mut i = 0;
        while i < n {
            let present = self.core.files[m as usize].i_mmap[p as usize].bits(i) & PRESENT != 0;
            let Some(id) = present
                .then(|| self.core.files[m as usize].folio(i))
                .flatten()
            else {
                i += 1;
                continue;
            };
            let f = self.core.folios.get(id);
            i = f.index as u64 + f.nr_pages();
            if self.core.zap_folio_ptes(m, p, id) && recency {
                self.policy.folio_mark_accessed(&mut self.core, id);
            }
        }
        if free_pgtables {
            self.core.free_pte_tables(m, p);
        }
    }
}
