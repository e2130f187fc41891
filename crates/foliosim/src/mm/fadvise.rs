//! posix_fadvise (mm/fadvise.c, Linux 6.18): generic_fadvise() on an open
//! file, shared by every workload that advises (scenarios, trace replays).

use super::filemap::OpenFile;
use super::vmscan::ReclaimPolicy;
use super::{Kernel, PAGE_SHIFT};

/// POSIX_FADV_*.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fadv {
    Normal,
    Random,
    Sequential,
    Willneed,
    Dontneed,
    Noreuse,
}

impl<P: ReclaimPolicy> Kernel<P> {
    /// generic_fadvise() of [off, off + len) (len 0: to the end) on `f`,
    /// whose device reads ahead `ra_kb`. Err names what the model does not
    /// do: DONTNEED of part of a file (it invalidates whole files) and
    /// NOREUSE (FMODE_NOREUSE).
    pub fn generic_fadvise(
        &mut self,
        f: &mut OpenFile,
        ra_kb: u64,
        advice: Fadv,
        off: u64,
        len: u64,
    ) -> Result<(), &'static str> {
        let size = self.core.files[f.mapping as usize].size;
        match advice {
            Fadv::Normal => {
                f.ra.ra_pages = ra_kb / 4;
                f.fmode_random = false;
            }
            Fadv::Sequential => {
                f.ra.ra_pages = ra_kb / 4 * 2;
                f.fmode_random = false;
            }
            Fadv::Random => f.fmode_random = true,
            Fadv::Willneed => {
                let end = if len == 0 {
                    size
                } else {
                    off.saturating_add(len).min(size)
                };
                if end > off {
                    let (first, last) = (off >> PAGE_SHIFT, (end - 1) >> PAGE_SHIFT);
                    self.force_page_cache_ra(f, first, last - first + 1);
                }
            }
            Fadv::Dontneed if off == 0 && (len == 0 || len >= size) => {
                // Dirty pages are written first (WB_SYNC_NONE); those still
                // dirty or under writeback stay cached.
                let m = f.mapping;
                self.filemap_fdatawrite_range(m, 0, u64::MAX >> PAGE_SHIFT, false);
                self.invalidate_mapping_pages(m);
            }
            Fadv::Dontneed => {
                return Err("dontneed of part of a file: the model invalidates whole files only")
            }
            Fadv::Noreuse => return Err("noreuse (FMODE_NOREUSE) is not modelled"),
        }
        Ok(())
    }
}
