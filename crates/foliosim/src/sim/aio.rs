//! fio's queue for the engines that are not FIO_SYNCIO (libaio, io_uring,
//! posixaio, null): how their I/O is queued, committed and reaped, and
//! where it runs in the kernel.

use foliosim_workload::fio::{FioJob, IoEngine};
use foliosim_workload::iogen::{Dir, Io};

use super::FioJobStats;
use crate::mm::filemap::OpenFile;
use crate::mm::vmscan::ReclaimPolicy;
use crate::mm::Kernel;

/// How a queued engine's I/O runs in the kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AsyncExec {
    /// O_DIRECT through libaio or io_uring, or NVMe passthrough: the
    /// submitter issues the bio and goes on; the device completes it.
    Device,
    /// libaio on a buffered file: io_submit() does the whole read or write
    /// before it returns (aio has no asynchronous buffered path).
    InSubmit,
    /// io_uring buffered reads: each waits for its pages on its own (async
    /// page-unlock wakeups), so up to iodepth are in the kernel at once.
    Parallel,
    /// One request at a time on a worker, apart from the fio thread:
    /// io_uring buffered writes (io-wq hashes regular-file writes by
    /// inode) and glibc POSIX AIO (one thread serves a descriptor's
    /// requests in order).
    Serial,
    /// null: completes as soon as it is committed.
    Null,
}

/// fio's queue of a non-FIO_SYNCIO engine: io_us queued and committed in
/// iodepth_batch groups, reaped with iodepth_batch_complete_min/max, and
/// drained to iodepth_low when full (backend.c wait_for_completions,
/// ioengines.c td_io_queue / td_io_commit / td_io_getevents). The vectors
/// are sized once for iodepth: queueing allocates nothing.
pub(super) struct AsyncQueue {
    exec: AsyncExec,
    cmd: bool,
    /// The engine has a ->commit hook (libaio, io_uring): queued io_us
    /// wait for it; posixaio and null submit in ->queue.
    has_commit: bool,
    depth: usize,
    batch: usize,
    cmin: usize,
    cmax: usize,
    low: usize,
    /// Queued, not yet committed: (issue time, I/O).
    pending: Vec<(u64, Io)>,
    /// In flight, sorted by completion: (done, issue, write, len).
    inflight: Vec<(u64, u64, bool, u64)>,
    lane_free: u64,
    /// latency_target: the depth the search allows now (fio's
    /// latency_qd), and completions over the target not yet counted.
    pub(super) qd_limit: usize,
    lat_target_ns: u64,
    pub(super) lat_over: u64,
}

impl AsyncQueue {
    pub(super) fn new(j: &FioJob) -> Self {
        let exec = match j.ioengine {
            IoEngine::Null => AsyncExec::Null,
            IoEngine::IoUringCmd => AsyncExec::Device,
            IoEngine::Posixaio => AsyncExec::Serial,
            _ if j.direct => AsyncExec::Device,
            IoEngine::Libaio => AsyncExec::InSubmit,
            // io_uring buffered: reads in parallel, writes one at a time
            // (see commit()).
            _ => AsyncExec::Parallel,
        };
        let depth = j.iodepth.max(1) as usize;
        AsyncQueue {
            exec,
            cmd: j.ioengine == IoEngine::IoUringCmd,
            has_commit: matches!(
                j.ioengine,
                IoEngine::Libaio | IoEngine::IoUring | IoEngine::IoUringCmd
            ),
            depth,
            batch: (j.iodepth_batch as usize).clamp(1, depth),
            cmin: j.iodepth_batch_complete_min as usize,
            cmax: j.iodepth_batch_complete_max as usize,
            low: (j.iodepth_low as usize).min(depth),
            pending: Vec::with_capacity(depth),
            inflight: Vec::with_capacity(depth),
            lane_free: 0,
            qd_limit: depth,
            lat_target_ns: j.lat_target.map_or(0, |l| l.target_ns),
            lat_over: 0,
        }
    }

    /// td_io_queue() then, when the queue is full, wait_for_completions().
    /// Returns false when the task was OOM-killed.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn queue<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        j: &FioJob,
        file: &mut OpenFile,
        io: Io,
        issue: u64,
        fs: &mut FioJobStats,
        bytes: &mut [u64; 2],
        ios: &mut [u64; 2],
        stats: bool,
    ) -> bool {
        self.pending.push((issue, io));
        if (!self.has_commit || self.pending.len() >= self.batch) && !self.commit(k, j, file) {
            return false;
        }
        // queue_full(): with a latency target, the search's depth.
        let full = self.pending.len() + self.inflight.len() >= self.depth.min(self.qd_limit);
        if full || (self.cmin == 0 && self.cmax == 0) {
            let mut min = self.cmin.min(self.pending.len() + self.inflight.len());
            if (full && min == 0) || self.cmin == 0 {
                min = 1;
            }
            loop {
                if !self.commit(k, j, file) {
                    return false;
                }
                self.getevents(k, min, fs, bytes, ios, stats);
                if !(full && self.pending.len() + self.inflight.len() > self.low) {
                    break;
                }
            }
        }
        true
    }

    /// td_io_commit(): the queued io_us go to the kernel.
    pub(super) fn commit<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        j: &FioJob,
        file: &mut OpenFile,
    ) -> bool {
        if self.pending.is_empty() {
            return true;
        }
        // The io_submit / io_uring_enter system call is the one the kernel
        // functions below charge (direct and in-submit I/O); a hand-off to
        // a worker charges its own.
        for n in 0..self.pending.len() {
            let (issue, io) = self.pending[n];
            let write = matches!(io.dir, Dir::Write);
            let now0 = k.core.now;
            // io-wq hashes buffered writes to a regular file by inode (ext4
            // has no FOP_BUFFER_WASYNC, so they are punted there): they
            // run one at a time.
            let exec = match self.exec {
                AsyncExec::Parallel if write => AsyncExec::Serial,
                e => e,
            };
            let done = match exec {
                AsyncExec::Null => now0,
                AsyncExec::Device if self.cmd => k.nvme_uring_cmd_io(io.len, write),
                AsyncExec::Device => k.iomap_dio_rw(file, io.offset, io.len, write),
                AsyncExec::InSubmit => {
                    if !buffered_rw(k, file, io.offset, io.len, write) {
                        return false;
                    }
                    k.core.now
                }
                AsyncExec::Parallel | AsyncExec::Serial => {
                    let start = if exec == AsyncExec::Serial {
                        now0.max(self.lane_free)
                    } else {
                        now0
                    };
                    k.core.now = start;
                    let ok = if j.direct {
                        let d = k.iomap_dio_rw(file, io.offset, io.len, write);
                        k.core.wait_until(d);
                        true
                    } else {
                        buffered_rw(k, file, io.offset, io.len, write)
                    };
                    if !ok {
                        return false;
                    }
                    let done = k.core.now;
                    self.lane_free = done;
                    // The fio thread only paid for handing it over.
                    k.core.now = now0 + k.core.cost.syscall;
                    done
                }
            };
            let e = (done, issue, write, io.len);
            let at = self.inflight.partition_point(|x| x.0 <= done);
            self.inflight.insert(at, e);
        }
        self.pending.clear();
        true
    }

    /// td_io_getevents(min, iodepth_batch_complete_max): wait for `min`
    /// completions, then reap what has completed, up to the max.
    pub(super) fn getevents<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        min: usize,
        fs: &mut FioJobStats,
        bytes: &mut [u64; 2],
        ios: &mut [u64; 2],
        stats: bool,
    ) {
        let cur = self.inflight.len();
        let min = min.min(cur);
        let mut max = self.cmax.min(cur);
        if min > max {
            max = min;
        }
        if max == 0 {
            return;
        }
        k.core.cpu(k.core.cost.syscall);
        if min > 0 {
            k.core.wait_until(self.inflight[min - 1].0);
        }
        let now = k.core.now;
        let n = self.inflight.partition_point(|x| x.0 <= now).min(max);
        for &(done, issue, write, len) in &self.inflight[..n] {
            if stats {
                let d = write as usize;
                if self.lat_target_ns > 0 && done - issue > self.lat_target_ns {
                    self.lat_over += 1;
                }
                fs.io_complete(d, done - issue, done, len);
                bytes[d] += len;
                ios[d] += 1;
            }
        }
        self.inflight.drain(..n);
    }

    /// The job ends: commit what is still queued (fio's
    /// cleanup_pending_aio) and reap everything. False on OOM.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn drain<P: ReclaimPolicy>(
        &mut self,
        k: &mut Kernel<P>,
        j: &FioJob,
        file: &mut OpenFile,
        fs: &mut FioJobStats,
        bytes: &mut [u64; 2],
        ios: &mut [u64; 2],
        stats: bool,
    ) -> bool {
        if !self.commit(k, j, file) {
            self.pending.clear();
            return false;
        }
        while !self.inflight.is_empty() {
            let n = self.inflight.len();
            let saved = self.cmax;
            self.cmax = n;
            self.getevents(k, n, fs, bytes, ios, stats);
            self.cmax = saved;
        }
        true
    }
}

/// A buffered read or write through the page cache (filemap_read /
/// the write path). False when the task was OOM-killed.
pub(super) fn buffered_rw<P: ReclaimPolicy>(
    k: &mut Kernel<P>,
    file: &mut OpenFile,
    pos: u64,
    len: u64,
    write: bool,
) -> bool {
    if write {
        k.filemap_write(file, pos, len).is_some()
    } else {
        k.filemap_read(file, pos, len).is_some()
    }
}
