//! fio's I/O engines (engines/*.c, fio 3.33 to 3.42): which ones foliosim
//! runs, the options each one takes, and, for the rest, why not.
//!
//! An engine is modelled when what it does reaches a file, a block device or
//! the page cache through the kernel paths the model has (read/write,
//! preadv2 flags, io_submit, io_uring, splice, fallocate, ftruncate,
//! unlink), or does no I/O at all (null, cpuio, the file-metadata engines).
//! Every other engine is refused with the reason, in one line.

use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum IoEngine {
    Psync,
    Sync,
    Pvsync,
    Mmap,
    /// readv/writev (fio merges adjacent io_us into one vector, but as a
    /// FIO_SYNCIO engine it runs at depth 1, so there is one io_u a call).
    Vsync,
    /// preadv2/pwritev2 with the hipri / uncached / nowait flags.
    Pvsync2,
    Libaio,
    IoUring,
    /// NVMe passthrough (IORING_OP_URING_CMD on /dev/ngXnY).
    IoUringCmd,
    /// glibc POSIX AIO.
    Posixaio,
    /// splice(2) through a pipe: the file side is a page-cache read/write.
    Splice,
    Falloc,
    Ftruncate,
    FileCreate,
    FileStat,
    FileDelete,
    DirCreate,
    DirStat,
    DirDelete,
    Null,
    CpuIo,
    /// fio's page_fault engine (engines/page_fault.c, after 3.33): an
    /// anonymous MAP_PRIVATE region of the job's size, read and written
    /// byte by byte (page faults), trimmed with MADV_DONTNEED.
    PageFault,
}

/// Engines fio knows that foliosim does not run, with the reason.
const REFUSED: &[(&str, &str)] = &[
    ("net", "network sockets: no file or page cache to model"),
    ("netsplice", "network sockets spliced to a pipe: no file or page cache to model"),
    ("rdma", "RDMA between hosts' memory: no file or page cache to model"),
    ("http", "HTTP/S3/Swift/WebDAV objects over the network: no local page cache"),
    ("rbd", "Ceph RBD through librbd in user space: no kernel page cache"),
    ("rados", "Ceph RADOS objects through librados in user space: no kernel page cache"),
    ("nbd", "libnbd talks NBD over a socket from user space: no kernel page cache"),
    ("libiscsi", "user-space iSCSI initiator: no kernel page cache"),
    ("nfs", "libnfs user-space NFS client: no kernel page cache"),
    ("gfapi", "GlusterFS through libgfapi in user space: no kernel page cache"),
    ("gfapi_async", "GlusterFS through libgfapi in user space: no kernel page cache"),
    ("libhdfs", "HDFS through its Java client: no kernel page cache"),
    ("dfs", "DAOS file system in user space: no kernel page cache"),
    ("ime_psync", "DDN IME native client in user space: no kernel page cache"),
    ("ime_psyncv", "DDN IME native client in user space: no kernel page cache"),
    ("ime_aio", "DDN IME native client in user space: no kernel page cache"),
    ("xnvme", "xNVMe's back ends (SPDK, vfio, passthrough) bypass or replace the kernel I/O path; not modelled"),
    ("spdk", "SPDK's user-space NVMe driver: no kernel page cache"),
    ("spdk_bdev", "SPDK's user-space NVMe driver: no kernel page cache"),
    ("sg", "SCSI generic passthrough (SG_IO): commands go to the device, not through the page cache"),
    ("libzbc", "libzbc passthrough to zoned SCSI/ATA disks: not through the page cache"),
    ("libblkio", "libblkio's user-space virtio-blk/vhost drivers: no kernel page cache"),
    ("mtd", "raw flash through /dev/mtd: no MTD model"),
    ("dev-dax", "loads and stores to a /dev/dax mapping of persistent memory: DAX has no page cache"),
    ("libpmem", "DAX mappings of persistent-memory files through libpmem: no page cache, and no DAX model"),
    ("pmemblk", "persistent-memory blocks through libpmemblk: no page cache"),
    ("librpma_apm_client", "RDMA to remote persistent memory: no page cache"),
    ("librpma_apm_server", "RDMA to remote persistent memory: no page cache"),
    ("librpma_gpspm_client", "RDMA to remote persistent memory: no page cache"),
    ("librpma_gpspm_server", "RDMA to remote persistent memory: no page cache"),
    ("e4defrag", "EXT4_IOC_MOVE_EXT moves a file's extents into a donor file through both files' page caches; foliosim has no extent model"),
    ("exec", "runs an external program: nothing for the model to do"),
    ("cpp_null", "a C++ example engine built from fio's source tree, not a real engine"),
    ("windowsaio", "Windows only"),
    ("solarisaio", "Solaris only"),
];

impl IoEngine {
    /// fio's ioengine= value (fio 3.33 names; `aio` is not an alias).
    pub fn parse(v: &str) -> Result<IoEngine, String> {
        Ok(match v {
            "psync" => IoEngine::Psync,
            "sync" => IoEngine::Sync,
            "pvsync" => IoEngine::Pvsync,
            "mmap" => IoEngine::Mmap,
            "vsync" => IoEngine::Vsync,
            "pvsync2" => IoEngine::Pvsync2,
            "libaio" => IoEngine::Libaio,
            "io_uring" => IoEngine::IoUring,
            "io_uring_cmd" => IoEngine::IoUringCmd,
            "posixaio" => IoEngine::Posixaio,
            "splice" => IoEngine::Splice,
            "falloc" => IoEngine::Falloc,
            "ftruncate" => IoEngine::Ftruncate,
            "filecreate" => IoEngine::FileCreate,
            "filestat" => IoEngine::FileStat,
            "filedelete" => IoEngine::FileDelete,
            "dircreate" => IoEngine::DirCreate,
            "dirstat" => IoEngine::DirStat,
            "dirdelete" => IoEngine::DirDelete,
            "null" => IoEngine::Null,
            "cpuio" => IoEngine::CpuIo,
            "page_fault" => IoEngine::PageFault,
            other => {
                if let Some((_, why)) = REFUSED.iter().find(|(n, _)| *n == other) {
                    return Err(format!("ioengine '{other}' is not modelled: {why}"));
                }
                if other.starts_with("external") || other.contains('/') {
                    return Err(format!(
                        "ioengine '{other}': external engines (shared objects) cannot be modelled"
                    ));
                }
                return Err(format!("unknown ioengine '{other}'"));
            }
        })
    }

    /// fio's FIO_SYNCIO: the I/O is done in ->queue(), so fio caps the
    /// queue depth at 1 (backend.c: "queue depth will be capped at 1").
    pub fn is_sync(self) -> bool {
        !matches!(
            self,
            IoEngine::Libaio
                | IoEngine::IoUring
                | IoEngine::IoUringCmd
                | IoEngine::Posixaio
                | IoEngine::Null
        )
    }

    /// The engine does file I/O through read/write-like calls (the page
    /// cache when buffered, direct I/O otherwise).
    pub fn is_rw(self) -> bool {
        matches!(
            self,
            IoEngine::Psync
                | IoEngine::Sync
                | IoEngine::Pvsync
                | IoEngine::Vsync
                | IoEngine::Pvsync2
                | IoEngine::Libaio
                | IoEngine::IoUring
                | IoEngine::Posixaio
                | IoEngine::Splice
        )
    }

    /// Engines that only operate on file metadata (fileoperations.c): one
    /// create/stat/unlink (or mkdir/stat/rmdir) per file, no data I/O.
    pub fn is_file_op(self) -> bool {
        matches!(
            self,
            IoEngine::FileCreate
                | IoEngine::FileStat
                | IoEngine::FileDelete
                | IoEngine::DirCreate
                | IoEngine::DirStat
                | IoEngine::DirDelete
        )
    }

    /// No file is opened for data (FIO_DISKLESSIO / FIO_NOIO / fake I/O).
    pub fn is_diskless(self) -> bool {
        self.is_file_op() || matches!(self, IoEngine::Null | IoEngine::CpuIo | IoEngine::PageFault)
    }
}

/// The engine-specific options foliosim reads (fio's per-engine option
/// structs); everything else an engine takes is accepted in
/// [`engine_option`] when it cannot change what the model computes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct EngineOpts {
    /// pvsync2 / io_uring `hipri`: RWF_HIPRI / IORING_SETUP_IOPOLL, polled
    /// completion of direct I/O (no interrupt; the model charges none).
    pub hipri: bool,
    /// pvsync2 / io_uring `uncached`: RWF_DONTCACHE on buffered I/O.
    pub uncached: bool,
    /// RWF_NOWAIT / IOCB_NOWAIT: only accepted with direct I/O (checked
    /// when the job is complete): on buffered I/O it fails with EAGAIN
    /// whenever the page cache would block, and fio ends the job there.
    /// With direct I/O it fails only where the range has cached pages
    /// (kiocb_invalidate_pages / kiocb_write_and_wait); the model runs
    /// such an I/O as a plain direct one.
    pub nowait: bool,
    /// cpuio: percentage of a CPU to burn (fio requires it, caps at 100).
    pub cpuload: u32,
    /// cpuio: burn cycle length in microseconds (fio default 50000).
    pub cpuchunks_us: u64,
    /// cpuio: cpumode=qsort (noop otherwise); the model only keeps time.
    pub cpumode_qsort: bool,
    /// filestat: stat_type (stat, lstat, statx).
    pub stat_type: String,
    /// libcufile / libhipfile: the job runs as psync (both are FIO_SYNCIO
    /// engines doing one pread/pwrite or cuFileRead/Write per I/O); this
    /// keeps which GPU engine it was and its I/O mode.
    pub gpu: Option<GpuIo>,
    /// page_fault: `madvise_hint` (none, random, sequential), madvised on
    /// the whole region at init.
    pub madvise_hint: MadviseHint,
    /// page_fault: `hugepage_delay` in ms; > 0: MADV_NOHUGEPAGE at init,
    /// MADV_HUGEPAGE on the whole region that long after (a helper thread).
    pub hugepage_delay_ms: u64,
}

/// page_fault's `madvise_hint` values (MADV_NORMAL, MADV_RANDOM,
/// MADV_SEQUENTIAL).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum MadviseHint {
    None,
    Random,
    Sequential,
}

/// The GPU engines' `cuda_io` / `rocm_io` modes (engines/libcufile.c,
/// engines/libhipfile.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct GpuIo {
    /// "libcufile" or "libhipfile".
    pub engine: &'static str,
    /// `cuda_io=cufile` / `rocm_io=hipfile` (the default): GPUDirect
    /// Storage DMA between the file and GPU memory, which fio requires
    /// direct=1 for: a direct read or write to the model. `posix`:
    /// pread/pwrite into a host buffer (then a GPU copy the model does
    /// not see): psync, buffered or direct as direct= says.
    pub gds: bool,
}

impl GpuIo {
    /// The job's `ioengine=` value names a GPU engine.
    pub fn parse(engine: &str) -> Option<GpuIo> {
        match engine {
            "libcufile" => Some(GpuIo {
                engine: "libcufile",
                gds: true,
            }),
            "libhipfile" => Some(GpuIo {
                engine: "libhipfile",
                gds: true,
            }),
            _ => None,
        }
    }

    /// The engine's own options; None when `key` is not one of them.
    pub fn option(&mut self, key: &str, val: Option<&str>) -> Option<Result<(), String>> {
        let mode_key = if self.engine == "libcufile" {
            "cuda_io"
        } else {
            "rocm_io"
        };
        let gds_name = if self.engine == "libcufile" {
            "cufile"
        } else {
            "hipfile"
        };
        Some(match key {
            // Which GPU each subjob uses: no model effect.
            "gpu_dev_ids" => match val {
                Some(v) if !v.is_empty() => Ok(()),
                _ => Err("needs a value".into()),
            },
            k if k == mode_key => match val {
                Some(v) if v == gds_name => {
                    self.gds = true;
                    Ok(())
                }
                Some("posix") => {
                    self.gds = false;
                    Ok(())
                }
                Some(v) => Err(format!("bad {mode_key} '{v}' ({gds_name}, posix)")),
                None => Err("needs a value".into()),
            },
            _ => return None,
        })
    }
}

impl Default for EngineOpts {
    fn default() -> Self {
        EngineOpts {
            hipri: false,
            uncached: false,
            nowait: false,
            cpuload: 0,
            cpuchunks_us: 50_000,
            cpumode_qsort: false,
            stat_type: "stat".into(),
            gpu: None,
            madvise_hint: MadviseHint::None,
            hugepage_delay_ms: 0,
        }
    }
}

fn flag(v: Option<&str>) -> Result<bool, String> {
    match v {
        None | Some("") | Some("1") => Ok(true),
        Some("0") => Ok(false),
        Some(o) => Err(format!("bad boolean '{o}' (0 or 1)")),
    }
}

fn num(v: Option<&str>, min: u64, max: u64) -> Result<u64, String> {
    let v = v.filter(|s| !s.is_empty()).ok_or("needs a value")?;
    let n: u64 = v.parse().map_err(|_| format!("bad number '{v}'"))?;
    if n < min || n > max {
        return Err(format!("{n} out of range [{min}, {max}]"));
    }
    Ok(n)
}

/// Engine options that shape only how fio talks to the engine (buffer
/// registration, submission threads, priorities, NVMe command details):
/// accepted, they do not change the page cache or the device model.
const IGNORED_URING: &[&str] = &[
    "fixedbufs",
    "registerfiles",
    "sqthread_poll",
    "sqthread_poll_cpu",
    "nonvectored",
    "force_async",
    "hipri_percentage",
    "cmdprio_percentage",
    "cmdprio_class",
    "cmdprio",
    "cmdprio_bssplit",
    "cmdprio_hint",
];
const IGNORED_URING_CMD: &[&str] = &[
    "cmd_type",
    "md_per_io_size",
    "pi_act",
    "pi_chk",
    "apptag",
    "apptag_mask",
    "fdp",
    "fdp_pli",
    "fdp_pli_select",
    "dataplacement",
    "plids",
    "plid_select",
    "num_range",
];

/// Applies one engine-specific option for `engine`. Returns None when the
/// option is not one of that engine's (the caller reports it as unknown).
pub fn engine_option(
    engine: IoEngine,
    opts: &mut EngineOpts,
    key: &str,
    val: Option<&str>,
) -> Option<Result<(), String>> {
    use IoEngine::*;
    let r = match (engine, key) {
        (Pvsync2 | IoUring | IoUringCmd, "hipri") => flag(val).map(|b| opts.hipri = b),
        (Pvsync2 | IoUring, "uncached") => match flag(val) {
            // fio 3.33 sends 0x40 for this (its RWF_UNCACHED, which Linux
            // 6.11+ reads as RWF_ATOMIC: buffered I/O then fails with
            // EOPNOTSUPP); fio 3.40+ sends RWF_DONTCACHE (0x80, Linux 6.14+),
            // whose drop-behind folios the model does not have yet.
            Ok(true) => Err("uncached=1 (RWF_DONTCACHE drop-behind, Linux 6.14+) is not modelled yet; with fio 3.33 the flag is sent as 0x40, which Linux 6.11+ reads as RWF_ATOMIC".into()),
            r => r.map(|b| opts.uncached = b),
        },
        (Pvsync2 | IoUring | Libaio, "nowait") => flag(val).map(|b| opts.nowait = b),
        (Libaio, "userspace_reap") => flag(val).map(|_| ()),
        (Libaio | IoUring | IoUringCmd, k) if IGNORED_URING.contains(&k) => Ok(()),
        (IoUringCmd, "write_mode") => match val {
            Some("write") => Ok(()),
            // Write Zeroes / Write Uncorrectable / Verify move no data, and
            // zone append needs zoned-device support.
            Some(o @ ("uncor" | "zeroes" | "verify" | "zone_append")) => Err(format!(
                "write_mode={o}: only plain writes are modelled (this command moves no data or needs a zoned device)"
            )),
            Some(o) => Err(format!("bad write_mode '{o}' (write, uncor, zeroes, verify, zone_append)")),
            None => Err("needs a value".into()),
        },
        (IoUringCmd, k) if IGNORED_URING_CMD.contains(&k) => match (k, val) {
            ("cmd_type", Some(v)) if v != "nvme" => Err(format!(
                "cmd_type={v}: only NVMe passthrough (cmd_type=nvme) is modelled"
            )),
            _ => Ok(()),
        },
        (CpuIo, "cpuload") => num(val, 1, u32::MAX as u64).map(|n| opts.cpuload = n.min(100) as u32),
        (CpuIo, "cpuchunks") => num(val, 1, u32::MAX as u64).map(|n| opts.cpuchunks_us = n),
        (CpuIo, "cpumode") => match val {
            Some(m @ ("noop" | "qsort")) => {
                opts.cpumode_qsort = m == "qsort";
                Ok(())
            }
            Some(o) => Err(format!("bad cpumode '{o}' (noop, qsort)")),
            None => Err("needs a value".into()),
        },
        (PageFault, "madvise_hint") => match val {
            Some(v) => match v {
                "none" => Ok(MadviseHint::None),
                "random" => Ok(MadviseHint::Random),
                "sequential" => Ok(MadviseHint::Sequential),
                o => Err(format!("bad madvise_hint '{o}' (none, random, sequential)")),
            }
            .map(|h| opts.madvise_hint = h),
            None => Err("needs a value".into()),
        },
        // FIO_OPT_INT: an unsigned int of milliseconds.
        (PageFault, "hugepage_delay") => {
            num(val, 0, u32::MAX as u64).map(|n| opts.hugepage_delay_ms = n)
        }
        (CpuIo, "exit_on_io_done") => flag(val).map(|_| ()),
        (FileStat | DirStat, "stat_type") => match val {
            Some(v @ ("stat" | "lstat" | "statx")) => {
                opts.stat_type = v.to_string();
                Ok(())
            }
            Some(o) => Err(format!("bad stat_type '{o}' (stat, lstat, statx)")),
            None => Err("needs a value".into()),
        },
        _ => return None,
    };
    Some(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modelled_and_refused_engines() {
        assert_eq!(IoEngine::parse("libaio"), Ok(IoEngine::Libaio));
        assert_eq!(IoEngine::parse("io_uring_cmd"), Ok(IoEngine::IoUringCmd));
        let e = IoEngine::parse("net").unwrap_err();
        assert!(
            e.starts_with("ioengine 'net' is not modelled: network"),
            "{e}"
        );
        assert!(IoEngine::parse("dev-dax").unwrap_err().contains("DAX"));
        assert!(IoEngine::parse("e4defrag").unwrap_err().contains("extent"));
        assert_eq!(
            IoEngine::parse("bogus"),
            Err("unknown ioengine 'bogus'".into())
        );
        assert!(IoEngine::parse("external:/x.so")
            .unwrap_err()
            .contains("external"));
        for (n, why) in REFUSED {
            let e = IoEngine::parse(n).unwrap_err();
            assert!(e.contains(why) && !e.contains('\n'), "{n}");
        }
        // fio's FIO_SYNCIO engines run at depth 1; the async ones do not.
        assert!(IoEngine::Psync.is_sync() && IoEngine::Pvsync2.is_sync());
        assert!(!IoEngine::Libaio.is_sync() && !IoEngine::IoUring.is_sync());
    }

    #[test]
    fn engine_options_belong_to_their_engine() {
        let mut o = EngineOpts::default();
        assert!(engine_option(IoEngine::Psync, &mut o, "hipri", None).is_none());
        assert_eq!(
            engine_option(IoEngine::Pvsync2, &mut o, "hipri", None),
            Some(Ok(()))
        );
        assert!(o.hipri);
        assert_eq!(
            engine_option(IoEngine::IoUring, &mut o, "nowait", Some("1")),
            Some(Ok(()))
        );
        assert!(o.nowait);
        assert_eq!(
            engine_option(IoEngine::CpuIo, &mut o, "cpuload", Some("150")),
            Some(Ok(()))
        );
        assert_eq!(o.cpuload, 100, "fio caps cpuload at 100");
        assert!(
            engine_option(IoEngine::IoUringCmd, &mut o, "cmd_type", Some("scsi"))
                .unwrap()
                .is_err()
        );
        // page_fault: a FIO_SYNCIO, FIO_DISKLESSIO engine with two options.
        assert_eq!(IoEngine::parse("page_fault"), Ok(IoEngine::PageFault));
        assert!(IoEngine::PageFault.is_sync() && IoEngine::PageFault.is_diskless());
        assert!(!IoEngine::PageFault.is_rw());
        assert!(engine_option(IoEngine::Psync, &mut o, "madvise_hint", Some("random")).is_none());
        assert_eq!(
            engine_option(
                IoEngine::PageFault,
                &mut o,
                "madvise_hint",
                Some("sequential")
            ),
            Some(Ok(()))
        );
        assert_eq!(o.madvise_hint, MadviseHint::Sequential);
        assert_eq!(
            engine_option(IoEngine::PageFault, &mut o, "hugepage_delay", Some("250")),
            Some(Ok(()))
        );
        assert_eq!(o.hugepage_delay_ms, 250);
        assert!(
            engine_option(IoEngine::PageFault, &mut o, "hugepage_delay", Some("1s"))
                .unwrap()
                .is_err()
        );
    }

    #[test]
    fn depth_follows_fios_fixups() {
        use crate::fio::parse_job_str;
        let one = |t: &str| parse_job_str(t, "t.fio").unwrap().remove(0);
        let err = |t: &str| parse_job_str(t, "t.fio").unwrap_err().to_string();
        // FIO_SYNCIO engines: capped at 1.
        let j = one("[a]\nsize=1m\nioengine=psync\niodepth=32\n");
        assert_eq!((j.iodepth, j.iodepth_batch, j.iodepth_low), (1, 1, 1));
        let j = one("[a]\nsize=1m\niodepth=32\nioengine=libaio\n");
        assert_eq!(
            (
                j.iodepth,
                j.iodepth_batch,
                j.iodepth_low,
                j.iodepth_batch_complete_min,
                j.iodepth_batch_complete_max
            ),
            (32, 1, 32, 1, 1)
        );
        let j = one("[a]\nsize=1m\nioengine=io_uring\niodepth=16\niodepth_batch=64\niodepth_low=4\niodepth_batch_complete_max=8\n");
        assert_eq!(
            (j.iodepth_batch, j.iodepth_low, j.iodepth_batch_complete_max),
            (16, 4, 8)
        );
        // null is FIO_SYNCIO only at depth 1.
        assert_eq!(one("[a]\nsize=1m\nioengine=null\niodepth=8\n").iodepth, 8);
        // The engine's options are parsed once the section's engine is
        // known, whatever the order of the lines.
        assert!(
            one("[a]\nsize=1m\nhipri\nioengine=pvsync2\n")
                .engine_opts
                .hipri
        );
        assert_eq!(
            err("[a]\nsize=1m\nhipri\n"),
            "t.fio:3: hipri: unknown or unsupported fio option"
        );
        assert!(err("[a]\nsize=1m\nioengine=io_uring\nnowait=1\n")
            .starts_with("t.fio:1: nowait: job 'a': nowait=1 with buffered I/O"));
        assert!(
            one("[a]\nsize=1m\nioengine=io_uring\nnowait=1\ndirect=1\n")
                .engine_opts
                .nowait
        );
        assert!(err("[a]\nsize=1m\nioengine=pvsync2\nuncached=1\n").contains("RWF_DONTCACHE"));
        assert!(err("[a]\nsize=1m\nioengine=io_uring\nhipri\n").contains("IORING_SETUP_IOPOLL"));
        assert!(
            one("[a]\nsize=1m\nioengine=io_uring\nhipri\ndirect=1\n")
                .engine_opts
                .hipri
        );
        assert!(
            one("[a]\nsize=1m\nioengine=pvsync2\nhipri\n")
                .engine_opts
                .hipri
        );
        assert!(err("[a]\nsize=1m\nioengine=cpuio\ntime_based\nruntime=1\n").contains("cpuload"));
        assert!(err("[a]\nioengine=cpuio\ncpuload=10\n").contains("runtime"));
        assert!(err("[a]\nsize=1m\nioengine=ftruncate\nrw=read\n").contains("only does writes"));
        assert_eq!(
            one("[a]\nfilesize=4k\nnrfiles=200\nioengine=filestat\n").nrfiles,
            200
        );
        // A block device without size= waits for the disk's capacity.
        let j = one("[a]\nfilename=/dev/sdb\n");
        assert!(j.size_from_device);
    }
}
