//! Direct I/O (fs/iomap/direct-io.c, block/fops.c): reads and writes that
//! bypass the page cache but keep it coherent, and NVMe passthrough
//! (io_uring_cmd), which bypasses both.

use super::filemap::OpenFile;
use super::vmscan::ReclaimPolicy;
use super::vmstat::Item;
use super::{Kernel, PAGE_SHIFT};

impl<P: ReclaimPolicy> Kernel<P> {
    /// Direct I/O of `count` bytes at `pos` (fs/iomap/direct-io.c
    /// __iomap_dio_rw; block/fops.c does the same for a block device):
    /// the data bypasses the page cache, but the cache of the range is
    /// kept coherent first. A read writes back dirty cached pages of the
    /// range and waits (kiocb_write_and_wait); a write does that and
    /// invalidates the range (kiocb_invalidate_pages), so cached copies
    /// cannot go stale. The bio is counted in pgpgin/pgpgout (submit_bio).
    /// Returns when the device completes it; the caller decides whether the
    /// task waits (synchronous engines) or not (libaio, io_uring).
    pub fn iomap_dio_rw(&mut self, file: &OpenFile, pos: u64, count: u64, write: bool) -> u64 {
        self.core.cpu(self.core.cost.syscall);
        let first = pos >> PAGE_SHIFT;
        let last = (pos + count.max(1) - 1) >> PAGE_SHIFT;
        if write {
            self.kiocb_invalidate_pages(file.mapping, first, last);
        } else {
            self.filemap_write_and_wait_range(file.mapping, first, last);
        }
        let item = if write { Item::PGPGOUT } else { Item::PGPGIN };
        self.core.count(file.memcg, item, count.div_ceil(1024));
        let done = self.core.dev.submit(self.core.now, count, write);
        if write {
            // kiocb_invalidate_post_direct_write(): pages a buffered reader
            // brought in meanwhile go too. The model runs it at submission
            // (nothing can run between submission and completion here).
            self.invalidate_inode_pages2_range(file.mapping, first, last);
        }
        done
    }

    /// kiocb_invalidate_pages(): write back and wait, then invalidate the
    /// range a direct write is about to overwrite (pages, inclusive).
    pub fn kiocb_invalidate_pages(&mut self, mapping: u32, first: u64, last: u64) {
        self.filemap_write_and_wait_range(mapping, first, last);
        self.invalidate_inode_pages2_range(mapping, first, last);
    }

    /// NVMe passthrough (io_uring_cmd, nvme_uring_cmd_io): the command goes
    /// to the device as a request built from the user buffer
    /// (blk_rq_map_user_io, blk_execute_rq_nowait): no page cache, no
    /// coherency with it, and no submit_bio, so no pgpgin/pgpgout.
    pub fn nvme_uring_cmd_io(&mut self, bytes: u64, write: bool) -> u64 {
        self.core.cpu(self.core.cost.syscall);
        self.core.dev.submit(self.core.now, bytes, write)
    }
}
