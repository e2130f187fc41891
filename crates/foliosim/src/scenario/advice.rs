//! madvise(2) and fadvise(2) steps: the kernel's advice handlers the
//! model has (generic_fadvise, madvise_willneed / zap), and refusals for
//! those it has not.

use foliosim_workload::scenario::{Advice, Madvice};

use super::{err, Driver, FileRt, MapKind};
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::{Kernel, PAGE_SHIFT};

impl<'a> Driver<'a> {
    /// madvise(2) of a whole mapping.
    pub(super) fn madvise<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        p: usize,
        mi: usize,
        advice: Madvice,
        line: usize,
    ) -> Result<(), String> {
        let sc = self.sc;
        let mm = self.procs[p].mm;
        let single = |files: &[FileRt], fi: usize| files[fi].mappers == 1;
        let m = &mut self.procs[p].maps[mi];
        match (&mut m.kind, advice) {
            (_, Madvice::Cold | Madvice::Pageout) => {
                return Err(err(sc, line, "advice", "MADV_COLD / MADV_PAGEOUT need reclaim of a range, which the model does not have yet"));
            }
            (MapKind::Anon { .. }, Madvice::Normal) => {}
            (MapKind::Anon { .. }, Madvice::Sequential | Madvice::Random | Madvice::Willneed) => {
                return Err(err(sc, line, "advice", "random / sequential / willneed on an anonymous mapping: the model's anon fault and swap-in paths take no VMA hints yet"));
            }
            (MapKind::Anon { space }, Madvice::Dontneed) => {
                // zap_page_range: the pages and swap entries go, the VMA
                // stays (a fresh, empty anonymous region).
                let bytes = k.core.files[*space as usize].size;
                k.munmap_anon(mm, *space);
                *space = k.mmap_anon(mm, bytes);
            }
            (MapKind::File { open, .. }, Madvice::Normal) => {
                open.vm_rand_read = false;
                open.vm_seq_read = false;
            }
            (MapKind::File { open, .. }, Madvice::Sequential) => {
                open.vm_rand_read = false;
                open.vm_seq_read = true;
            }
            (MapKind::File { open, .. }, Madvice::Random) => {
                open.vm_rand_read = true;
                open.vm_seq_read = false;
            }
            (MapKind::File { open, first, .. }, Madvice::Willneed) => {
                // madvise_willneed() -> vfs_fadvise(POSIX_FADV_WILLNEED).
                let f = open.clone();
                k.force_page_cache_ra(&f, *first, m.pages);
            }
            (MapKind::File { open, .. }, Madvice::Dontneed)
                if open.pte != crate::mm::rmap::NO_PTES =>
            {
                // zap_page_range_single(): this process's PTEs go.
                k.munmap_ptes(open, false);
            }
            (MapKind::File { file, open, .. }, Madvice::Dontneed) => {
                if !single(&self.files, *file) {
                    return Err(err(sc, line, "advice", "dontneed on a file several processes map: the model keeps one set of PTEs per file"));
                }
                k.exit_mmap(open.mapping);
            }
        }
        Ok(())
    }

    /// generic_fadvise() on the thread's open file.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fadvise<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        id: usize,
        fi: usize,
        advice: Advice,
        offset: u64,
        len: u64,
        line: usize,
    ) -> Result<(), String> {
        let sc = self.sc;
        let size = k.core.files[self.files[fi].mapping as usize].size;
        let ra_kb = self.ra_kb;
        let f = self.fd(id, fi);
        match advice {
            Advice::Normal => {
                f.ra.ra_pages = ra_kb / 4;
                f.fmode_random = false;
            }
            Advice::Sequential => {
                f.ra.ra_pages = ra_kb / 4 * 2;
                f.fmode_random = false;
            }
            Advice::Random => f.fmode_random = true,
            Advice::Willneed => {
                let end = if len == 0 {
                    size
                } else {
                    (offset + len).min(size)
                };
                if end > offset {
                    let first = offset >> PAGE_SHIFT;
                    let last = (end - 1) >> PAGE_SHIFT;
                    let f = f.clone();
                    k.force_page_cache_ra(&f, first, last - first + 1);
                }
            }
            Advice::Dontneed => {
                let whole = offset == 0 && (len == 0 || len >= size);
                if !whole {
                    return Err(err(
                        sc,
                        line,
                        "offset",
                        "dontneed of part of a file: the model invalidates whole files only",
                    ));
                }
                // Dirty pages are written first (WB_SYNC_NONE); those still
                // dirty or under writeback stay cached.
                let m = f.mapping;
                k.filemap_fdatawrite_range(m, 0, u64::MAX >> PAGE_SHIFT, false);
                k.invalidate_mapping_pages(m);
            }
            Advice::Noreuse => {
                return Err(err(
                    sc,
                    line,
                    "advice",
                    "noreuse (FMODE_NOREUSE) is not modelled",
                ));
            }
        }
        Ok(())
    }
}
