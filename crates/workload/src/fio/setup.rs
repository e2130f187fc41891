//! What a job's engine and file need once its options are in: fio's
//! queue-depth fixups (init.c fixup_options), the checks fio's engines
//! make in their init, and the size of a job on a block device.

use super::builder::ZoneMode;
use super::{perr, Builder, FioJob, IoEngine, ParseError};

impl Builder {
    /// The job's file is a device: fio finds out by stat(); the model goes
    /// by the name, and sizes anything under /dev/ (a block device or an
    /// NVMe generic character device) as the disk.
    pub(super) fn is_block_device(&self) -> bool {
        self.filename
            .as_deref()
            .is_some_and(|f| f.starts_with("/dev/"))
    }

    /// (iodepth, batch, complete_min, complete_max, low) after fio's
    /// fixup_options(); FIO_SYNCIO engines run at depth 1.
    pub(super) fn depths(&self) -> (u32, u32, u32, u32, u32) {
        let sync =
            self.ioengine.is_sync() || (self.ioengine == IoEngine::Null && self.iodepth == 1);
        let depth = if sync { 1 } else { self.iodepth };
        let low = if self.iodepth_low > depth || self.iodepth_low == 0 {
            depth
        } else {
            self.iodepth_low
        };
        let batch = if self.iodepth_batch > depth || self.iodepth_batch == 0 {
            depth
        } else {
            self.iodepth_batch
        };
        let cmin = self.iodepth_batch_complete_min;
        let cmax = self.iodepth_batch_complete_max.max(cmin);
        (depth, batch, cmin, cmax, low)
    }

    /// What an engine needs from the rest of the job (fio checks these in
    /// the engine's init or setup).
    pub(super) fn check_engine(
        &self,
        file: &str,
        line: usize,
        name: &str,
    ) -> Result<(), ParseError> {
        if self.engine_opts.nowait && !self.direct {
            return Err(perr(file, line, "nowait", format!(
                "job '{name}': nowait=1 with buffered I/O fails with EAGAIN whenever the page cache would block, and fio ends the job; not modelled (use direct=1 or nowait=0)"
            )));
        }
        if self.ioengine == IoEngine::IoUring && self.engine_opts.hipri && !self.direct {
            // io_uring/rw.c: a polled ring (IORING_SETUP_IOPOLL) takes only
            // O_DIRECT I/O; everything else fails with EOPNOTSUPP.
            return Err(perr(file, line, "hipri", format!(
                "job '{name}': hipri=1 (IORING_SETUP_IOPOLL) needs direct=1: the kernel fails buffered I/O on a polled ring with EOPNOTSUPP"
            )));
        }
        if let Some(g) = self.engine_opts.gpu.filter(|g| g.gds && !self.direct) {
            let (mode, m) = if g.engine == "libcufile" {
                ("cuda_io", "cufile")
            } else {
                ("rocm_io", "hipfile")
            };
            return Err(perr(file, line, mode, format!(
                "job '{name}': {mode}={m} (GPUDirect Storage) needs direct=1 (fio's {}); use {mode}=posix for buffered I/O", g.engine
            )));
        }
        if self.atomic.0 && self.rw.has_writes() {
            // fio (init.c fixup_options): atomic needs an engine that sets
            // RWF_ATOMIC (FIO_ATOMICWRITES); it is dropped for jobs that
            // do not write. The kernel (generic_atomic_write_valid) fails
            // a buffered RWF_ATOMIC write with EOPNOTSUPP and one whose
            // length is not a power of two, or whose offset is not
            // aligned to it, with EINVAL. What passes is a plain direct
            // write to the model: torn-write protection only matters
            // across a power failure, which the model does not have.
            let e = |msg: String| {
                perr(
                    file,
                    self.atomic.1,
                    "atomic",
                    format!("job '{name}': {msg}"),
                )
            };
            if !matches!(
                self.ioengine,
                IoEngine::Pvsync2 | IoEngine::Libaio | IoEngine::IoUring
            ) {
                return Err(e(
                    "the ioengine does not support atomic writes (only pvsync2, libaio and io_uring set RWF_ATOMIC)".into(),
                ));
            }
            if !self.direct {
                return Err(e(
                    "atomic=1 needs direct=1: the kernel fails buffered RWF_ATOMIC writes with EOPNOTSUPP".into(),
                ));
            }
            let w = 1;
            let (lo, hi) = (
                if self.min_bs[w] == 0 {
                    self.bs[w]
                } else {
                    self.min_bs[w]
                },
                if self.max_bs[w] == 0 {
                    self.bs[w]
                } else {
                    self.max_bs[w]
                },
            );
            if lo != hi || !lo.is_power_of_two() || !self.bssplit[w].is_empty() {
                return Err(e(format!(
                    "atomic writes need one power-of-two write size (the kernel fails others with EINVAL); bs is {lo}-{hi}"
                )));
            }
        }
        if self.ioengine == IoEngine::Ftruncate && self.rw.has_reads() {
            return Err(perr(
                file,
                line,
                "rw",
                format!(
                "job '{name}': the ftruncate engine only does writes (fio fails reads with EINVAL)"
            ),
            ));
        }
        if self.ioengine == IoEngine::PageFault {
            self.check_page_fault(file, line, name)?;
        }
        if self.ioengine == IoEngine::CpuIo {
            if self.engine_opts.cpuload == 0 {
                return Err(perr(
                    file,
                    line,
                    "cpuload",
                    format!("job '{name}': cpuio needs cpuload= (fio: cpu thread needs rate)"),
                ));
            }
            if self.runtime_us == 0 {
                return Err(perr(
                    file,
                    line,
                    "runtime",
                    format!("job '{name}': cpuio does no I/O to end on: give runtime="),
                ));
            }
        }
        Ok(())
    }
}

impl Builder {
    /// page_fault (engines/page_fault.c) maps `size=` bytes of anonymous
    /// memory at init, for the job's first file only, and fails every I/O
    /// whose offset + length passes the region's end (its queue returns
    /// without doing it). What would put the job's I/O there is refused
    /// here, as is a job without size= (fio's mmap of 0 bytes fails).
    fn check_page_fault(&self, file: &str, line: usize, name: &str) -> Result<(), ParseError> {
        let e = |opt: &str, why: &str| {
            Err(perr(
                file,
                line,
                opt,
                format!("job '{name}': ioengine=page_fault {why}"),
            ))
        };
        // A replay's size is its log's bytes (checked with the log).
        if self.size.is_none() && self.iolog.read.is_none() {
            return e(
                "size",
                "maps size= bytes of anonymous memory: give size= (filesize= and a file's length do not size it)",
            );
        }
        if self.offset != 0 || (self.offset_increment != 0 && self.numjobs > 1) {
            return e(
                "offset",
                "maps size= bytes from offset 0: with offset= (or offset_increment=) the job's I/O runs past the region, and the engine fails each such I/O",
            );
        }
        if self.nr_files() > 1 {
            return e(
                "nrfiles",
                "keeps its region with the job's first file only: I/O to any other file fails",
            );
        }
        if self.zonemode == ZoneMode::Zbd {
            return e("zonemode", "has no zoned device to emulate zones on");
        }
        Ok(())
    }
}

/// Fills in the size of jobs on a block device given without size=: the
/// device's capacity (the machine's --disk-size) less the job's offset.
/// Without a capacity, such a job is an error naming its section.
pub fn resolve_device_sizes(jobs: &mut [FioJob], disk_size: Option<u64>) -> Result<(), ParseError> {
    for j in jobs.iter_mut().filter(|j| j.size_from_device) {
        let (file, line) = match j.source.rsplit_once(':') {
            Some((f, l)) => (f.to_string(), l.parse().unwrap_or(0)),
            None => (j.source.clone(), 0),
        };
        let e = |msg: String| perr(&file, line, "size", msg);
        let Some(d) = disk_size else {
            if j.ctl.fill_device && !j.filename.starts_with("/dev/") {
                return Err(e(format!(
                    "job '{}': fill_device=1 without size= writes until the file system is full: pass --disk-size (its free space)",
                    j.name
                )));
            }
            return Err(e(format!(
                "job '{}': {} is a block device and no size= is given: pass --disk-size (the device's capacity)",
                j.name, j.filename
            )));
        };
        if d <= j.offset || d - j.offset < j.bs {
            return Err(e(format!(
                "job '{}': --disk-size {d} leaves less than bs {} past offset {}",
                j.name, j.bs, j.offset
            )));
        }
        j.size = d - j.offset;
        j.size_from_device = false;
        // Every device file of the job is as large as the device (fio's
        // real_file_size per file).
        for f in &mut j.files {
            f.size = j.size;
        }
    }
    size_from_written_files(jobs, true, None)?;
    check_zbd(jobs)
}

/// fio fails a zbd job whose zones cannot be set up (zone size against the
/// file, regions not a whole zone): said here, once every size is known.
fn check_zbd(jobs: &[FioJob]) -> Result<(), ParseError> {
    let (_, per_job) = crate::zbd::setup(jobs);
    for (j, r) in jobs.iter().zip(per_job) {
        if let Some(Err(msg)) = r {
            let (file, line) = match j.source.rsplit_once(':') {
                Some((f, l)) => (f.to_string(), l.parse().unwrap_or(0)),
                None => (j.source.clone(), 0),
            };
            return Err(perr(
                &file,
                line,
                "zonemode",
                format!("job '{}': {}: {msg}", j.name, j.filename),
            ));
        }
    }
    Ok(())
}

/// Jobs with `ctl.size_from_file` (no size=, filesize= or device): fio's
/// setup_files() takes each file's existing length and does the whole of
/// it. In the model a file exists only through an earlier job of the run:
/// with create_serialize (the default) fio sets every job's files up
/// before any runs, in job order, so the job sees the length an earlier
/// job's setup gave the file (a fill_device writer leaves it empty); with
/// create_serialize=0 the job sets up when it starts, which after a
/// stonewall or wait_for is once the earlier jobs are done (a
/// fill_device writer has filled it). A writer still sized by the device
/// is waited for unless `last`. Without such a job fio refuses the job,
/// and so does this.
pub(super) fn size_from_written_files(
    jobs: &mut [FioJob],
    last: bool,
    existing_file_size: Option<u64>,
) -> Result<(), ParseError> {
    for i in 0..jobs.len() {
        if !jobs[i].ctl.size_from_file {
            continue;
        }
        let (before, rest) = jobs.split_at_mut(i);
        let j = &mut rest[0];
        let serial = j.ctl.create_serialize;
        let after_others = j.ctl.stonewall || j.ctl.wait_for.is_some();
        let mut lens = Vec::with_capacity(j.files.len());
        let mut pending = false;
        for f in &j.files {
            // A file that exists before the run has its size; earlier jobs'
            // writes may extend it.
            let mut len = existing_file_size.unwrap_or(0);
            for w in before.iter() {
                let sets_up = if serial {
                    w.ctl.create_serialize && !(w.ctl.fill_device && w.rw.has_writes())
                } else {
                    after_others
                };
                if !sets_up {
                    continue;
                }
                for wf in w.files.iter().filter(|wf| wf.name == f.name) {
                    pending |= w.size_from_device || w.ctl.size_from_file;
                    len = len.max(wf.offset + wf.size);
                }
            }
            lens.push(len);
        }
        if pending && !last {
            continue;
        }
        let size: u64 = j
            .files
            .iter()
            .zip(&lens)
            .map(|(f, &l)| l.saturating_sub(f.offset))
            .sum();
        if size < j.bs {
            let (file, line) = match j.source.rsplit_once(':') {
                Some((f, l)) => (f.to_string(), l.parse().unwrap_or(0)),
                None => (j.source.clone(), 0),
            };
            return Err(perr(&file, line, "size", format!(
                "job '{}': you need to specify size= (or filesize=): the model has no existing file to take the size from (give one with --existing-file-size)",
                j.name
            )));
        }
        for (f, l) in j.files.iter_mut().zip(lens) {
            f.size = l.saturating_sub(f.offset);
        }
        j.size = size;
        j.ctl.size_from_file = false;
    }
    Ok(())
}
