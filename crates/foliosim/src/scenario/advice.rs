//! madvise(2) and fadvise(2) steps: the kernel's advice handlers the
//! model has (generic_fadvise, madvise_willneed / zap), and refusals for
//! those it has not.

use foliosim_workload::scenario::{Advice, Madvice};

use super::{err, Driver, FileRt, MapKind};
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::Kernel;

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
        let ra_kb = self.ra_kb;
        let f = self.fd(id, fi);
        let option = if advice == Advice::Noreuse {
            "advice"
        } else {
            "offset"
        };
        k.generic_fadvise(f, ra_kb, fadv(advice), offset, len)
            .map_err(|why| err(self.sc, line, option, why))
    }
}

/// A step's advice as posix_fadvise's.
pub(crate) fn fadv(a: Advice) -> crate::mm::fadvise::Fadv {
    use crate::mm::fadvise::Fadv;
    match a {
        Advice::Normal => Fadv::Normal,
        Advice::Random => Fadv::Random,
        Advice::Sequential => Fadv::Sequential,
        Advice::Willneed => Fadv::Willneed,
        Advice::Dontneed => Fadv::Dontneed,
        Advice::Noreuse => Fadv::Noreuse,
    }
}
