//! What the host is: kernel, memory, the tunables the model must copy, and
//! which cgroup hierarchy carries the memory controller.

use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};

/// The kernel's default `fault_around_bytes` (mm/memory.c), used when
/// debugfs is not mounted and the real value cannot be read.
pub const DEFAULT_FAULT_AROUND_BYTES: u64 = 65536;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "version", rename_all = "lowercase")]
pub enum CgroupFlavor {
    /// cgroup v1 memory controller mounted at `mount`.
    V1 { mount: PathBuf },
    /// cgroup v2 hierarchy at `mount` whose root offers `memory`.
    V2 { mount: PathBuf },
    /// No usable memory controller; why.
    None { reason: String },
}

impl CgroupFlavor {
    /// The memory controller's mount and whether it is cgroup v2; why not,
    /// where there is none.
    pub fn memory_mount(&self) -> Result<(&std::path::Path, bool), &str> {
        match self {
            CgroupFlavor::V1 { mount } => Ok((mount, false)),
            CgroupFlavor::V2 { mount } => Ok((mount, true)),
            CgroupFlavor::None { reason } => Err(reason),
        }
    }
}

/// Per-cgroup block I/O accounting, so that a run's reads are told apart
/// from whatever else the host reads meanwhile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum IoAccounting {
    /// v1 blkio mounted at `mount`: a group with a never-binding throttle
    /// limit on the disk, so that blk-throttle counts its bios.
    Blkio {
        mount: PathBuf,
    },
    /// v2 `io` controller, in the same group as memory (io.stat).
    Io,
    None {
        reason: String,
    },
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct HostInfo {
    /// `uname -r`.
    pub kernel_release: String,
    /// MemTotal, in bytes.
    pub ram_bytes: u64,
    /// The CPUs the oracle may run on (sched_getaffinity), which a
    /// scenario's real tasks are pinned to in turn; None in reports
    /// recorded before it was read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    pub page_size: u64,
    /// The block device holding the scratch directory, e.g. "vda" (empty when
    /// the directory is on a device-less filesystem such as tmpfs).
    pub block_device: String,
    /// Filesystem type of the scratch directory, from /proc/self/mountinfo.
    pub fs_type: String,
    /// `read_ahead_kb` of that device's queue, when the host was read.
    pub read_ahead_kb: u32,
    /// sysfs path of the `read_ahead_kb` file (empty if none).
    pub read_ahead_path: PathBuf,
    pub swappiness: u32,
    pub fault_around_bytes: u64,
    /// Where `fault_around_bytes` came from: "debugfs" or "kernel default".
    pub fault_around_source: String,
    /// Bracketed value of /sys/kernel/mm/transparent_hugepage/enabled.
    pub thp_enabled: String,
    /// /sys/kernel/mm/lru_gen/enabled (a bitmask; 0 = off), None when the
    /// kernel was built without MGLRU.
    pub lru_gen: Option<u32>,
    /// Total swap, in bytes (the oracle's workloads do not swap, but the
    /// model should know).
    pub swap_total_bytes: u64,
    /// DAMON monitoring threads running on the host (their sysfs state
    /// files); the oracle stops them for its real runs
    /// (scn::hostcfg::pause_damon).
    pub kdamonds_on: u32,
    /// Median latency of a random 4 KiB O_DIRECT read (QD1) on the scratch
    /// directory's device, ns (run::measure_read_latency; the model's
    /// device latency without `buffered_read_ns`). None until measured,
    /// or where it cannot be (tmpfs has no O_DIRECT).
    pub read_latency_ns: Option<u64>,
    /// Mean time of a 4 KiB buffered read() that misses the page cache
    /// (random, read-ahead off) on the same device, ns: the device plus
    /// the page-cache read path (run::measure_buffered_read). The model's
    /// device latency is set so that its own miss costs this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffered_read_ns: Option<u64>,
    /// Mean time of a 4 KiB buffered read() served from the page cache, ns
    /// (run::measure_buffered_read: the same pages read a second time):
    /// the model's read syscall is set so that its own hit costs this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffered_hit_ns: Option<u64>,
    /// Mean time of a first-touch write fault on anonymous memory (4 KiB
    /// pages), ns (run::measure_anon_fault): the model's fault cost is set
    /// so that its anonymous fault costs this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anon_fault_ns: Option<u64>,
    /// Mean time limit reclaim takes per page of clean, unmapped page
    /// cache, ns (run::measure_limit_reclaim): the model's cost of
    /// reclaiming a folio is set so that its reclaim costs this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reclaim_page_ns: Option<u64>,
    /// Limit reclaim of anonymous memory to zram, ns per page swapped out,
    /// and a swap-in fault from zram, ns (run::measure_zram_swap): the
    /// model's zram costs are set so that its swap-out and swap-in cost
    /// these.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swapout_page_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub swapin_fault_ns: Option<u64>,
    pub cgroup: CgroupFlavor,
    /// MAJ:MIN of the disk whose queue holds `read_ahead_path` (for
    /// per-cgroup block I/O accounting).
    pub disk_devno: String,
    /// How the run's own block I/O is counted (`io.rbytes`, ...).
    pub io_accounting: IoAccounting,
    /// Effective uid 0.
    pub is_root: bool,
    /// `fio --version`, None when fio is not installed.
    pub fio_version: Option<String>,
    /// The scratch directory's ext4 geometry (crate::ext4), or why there
    /// is none (not ext4, or not readable).
    pub ext4: Result<crate::ext4::Ext4Host, String>,
    /// A case's files as its layout left them: set for the model's call
    /// only (run::run_case), None in the host's own facts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub layout: Option<crate::ext4::FileLayout>,
    /// When the memcg stats flusher first ran after a real run's start
    /// (ns; crate::statsflush): set for the model's call only, as
    /// `layout`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stats_flush_phase_ns: Option<u64>,
}

impl HostInfo {
    /// A fixed host for tests (this crate's and the CLI's): Linux 6.18 on
    /// an 8 GiB x86 VM, ext4 on vda with read_ahead_kb 128, cgroup v1,
    /// fio 3.33, no swap, no ext4 geometry. Nothing here is probed.
    #[doc(hidden)]
    pub fn example() -> HostInfo {
        HostInfo {
            kernel_release: "6.18.0".into(),
            ram_bytes: 8 << 30,
            cpus: Some(2),
            page_size: 4096,
            block_device: "vda".into(),
            fs_type: "ext4".into(),
            read_ahead_kb: 128,
            read_ahead_path: "/sys/block/vda/queue/read_ahead_kb".into(),
            swappiness: 60,
            fault_around_bytes: 65536,
            fault_around_source: "kernel default".into(),
            thp_enabled: "madvise".into(),
            lru_gen: None,
            swap_total_bytes: 0,
            kdamonds_on: 0,
            read_latency_ns: None,
            buffered_read_ns: None,
            buffered_hit_ns: None,
            anon_fault_ns: None,
            reclaim_page_ns: None,
            swapout_page_ns: None,
            swapin_fault_ns: None,
            cgroup: CgroupFlavor::V1 {
                mount: "/sys/fs/cgroup/memory".into(),
            },
            disk_devno: "254:0".into(),
            io_accounting: IoAccounting::Blkio {
                mount: "/sys/fs/cgroup/blkio".into(),
            },
            is_root: true,
            fio_version: Some("fio-3.33".into()),
            ext4: Err("example host".into()),
            layout: None,
            stats_flush_phase_ns: None,
        }
    }
}

fn read_trim(p: &Path) -> Result<String, String> {
    fs::read_to_string(p)
        .map(|s| s.trim().to_string())
        .map_err(|e| format!("{}: {e}", p.display()))
}

fn parse_num<T: std::str::FromStr>(p: &Path, s: &str) -> Result<T, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("{}: not a number: '{}'", p.display(), s.trim()))
}

/// Reads the host's facts; `dir` is the scratch directory (created if
/// missing) whose device's read-ahead matters.
pub fn read_host(dir: &Path) -> Result<HostInfo, String> {
    // The scratch directory may not exist yet (the run makes it, journaled):
    // its nearest existing ancestor sits on the same device.
    let dir = dir
        .ancestors()
        .map(|d| {
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            }
        })
        .find(|d| d.exists())
        .ok_or_else(|| format!("{}: no existing ancestor", dir.display()))?;
    let kernel_release = read_trim(Path::new("/proc/sys/kernel/osrelease"))?;
    let meminfo_path = Path::new("/proc/meminfo");
    let meminfo = fs::read_to_string(meminfo_path).map_err(|e| format!("/proc/meminfo: {e}"))?;
    let ram_bytes =
        meminfo_kib(&meminfo, "MemTotal").ok_or("/proc/meminfo: no MemTotal line")? * 1024;
    let swap_total_bytes = meminfo_kib(&meminfo, "SwapTotal").unwrap_or(0) * 1024;
    // SAFETY: sysconf has no memory-safety preconditions.
    let page_size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    let (block_device, read_ahead_path) = device_of(dir)?;
    let disk_devno = read_ahead_path
        .parent()
        .and_then(|q| q.parent())
        .and_then(|d| fs::read_to_string(d.join("dev")).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    let read_ahead_kb = if read_ahead_path.as_os_str().is_empty() {
        0
    } else {
        parse_num(&read_ahead_path, &read_trim(&read_ahead_path)?)?
    };
    let mountinfo = fs::read_to_string("/proc/self/mountinfo")
        .map_err(|e| format!("/proc/self/mountinfo: {e}"))?;
    let fs_type = fs_type_of(&mountinfo, dir).unwrap_or_default();
    let sw = Path::new("/proc/sys/vm/swappiness");
    let swappiness = parse_num(sw, &read_trim(sw)?)?;
    let fa = Path::new("/sys/kernel/debug/fault_around_bytes");
    let (fault_around_bytes, fault_around_source) = match fs::read_to_string(fa) {
        Ok(s) => (parse_num(fa, &s)?, "debugfs".to_string()),
        Err(_) => (
            DEFAULT_FAULT_AROUND_BYTES,
            "kernel default (debugfs not mounted)".to_string(),
        ),
    };
    let thp = Path::new("/sys/kernel/mm/transparent_hugepage/enabled");
    let thp_enabled = match fs::read_to_string(thp) {
        Ok(s) => bracketed(&s).unwrap_or("unknown").to_string(),
        Err(_) => "unsupported".to_string(),
    };
    let lg = Path::new("/sys/kernel/mm/lru_gen/enabled");
    let lru_gen = match fs::read_to_string(lg) {
        Ok(s) => Some(
            parse_lru_gen(&s)
                .ok_or_else(|| format!("{}: bad value '{}'", lg.display(), s.trim()))?,
        ),
        Err(_) => None,
    };
    let cgroup = detect_cgroup(&mountinfo, |p| fs::read_to_string(p).ok());
    let io_accounting = detect_io(&mountinfo, &cgroup, &disk_devno, |p| {
        fs::read_to_string(p).ok()
    });
    // SAFETY: geteuid cannot fail and touches no memory.
    let is_root = unsafe { libc::geteuid() } == 0;
    let ext4 = match fs_type.as_str() {
        "ext4" => crate::ext4::read_ext4(dir, &block_device),
        t => Err(format!("the scratch directory is on '{t}', not ext4")),
    };
    Ok(HostInfo {
        kernel_release,
        ram_bytes,
        cpus: Some(crate::scn::exec::allowed_cpus().len() as u32),
        page_size,
        block_device,
        fs_type,
        read_ahead_kb,
        read_ahead_path,
        swappiness,
        fault_around_bytes,
        fault_around_source,
        thp_enabled,
        lru_gen,
        kdamonds_on: crate::scn::hostcfg::running_kdamonds().len() as u32,
        read_latency_ns: None,
        buffered_read_ns: None,
        buffered_hit_ns: None,
        anon_fault_ns: None,
        reclaim_page_ns: None,
        swapout_page_ns: None,
        swapin_fault_ns: None,
        swap_total_bytes,
        cgroup,
        disk_devno,
        io_accounting,
        is_root,
        fio_version: fio_version(),
        ext4,
        layout: None,
        stats_flush_phase_ns: None,
    })
}

fn fio_version() -> Option<String> {
    let out = std::process::Command::new("fio")
        .arg("--version")
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn meminfo_kib(meminfo: &str, key: &str) -> Option<u64> {
    meminfo.lines().find_map(|l| {
        let rest = l.strip_prefix(key)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// "always [madvise] never" -> "madvise".
pub fn bracketed(s: &str) -> Option<&str> {
    let a = s.find('[')?;
    let b = s[a..].find(']')? + a;
    Some(&s[a + 1..b])
}

/// lru_gen/enabled prints a hex mask such as "0x0007".
fn parse_lru_gen(s: &str) -> Option<u32> {
    let t = s.trim();
    match t.strip_prefix("0x") {
        Some(h) => u32::from_str_radix(h, 16).ok(),
        None => t.parse().ok(),
    }
}

/// The block device under `dir` and the sysfs path of its queue's
/// read_ahead_kb: st_dev -> /sys/dev/block/MAJ:MIN, or its parent disk for a
/// partition. ("", "") when the filesystem has no block device.
fn device_of(dir: &Path) -> Result<(String, PathBuf), String> {
    use std::os::unix::fs::MetadataExt;
    let dev = fs::metadata(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .dev();
    let (maj, min) = (libc::major(dev), libc::minor(dev));
    let link = PathBuf::from(format!("/sys/dev/block/{maj}:{min}"));
    let Ok(real) = fs::canonicalize(&link) else {
        return Ok((String::new(), PathBuf::new()));
    };
    let name = real
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let own = real.join("queue/read_ahead_kb");
    if own.exists() {
        return Ok((name, own));
    }
    // A partition: its queue is the parent disk's.
    let parent = real.parent().map(|p| p.join("queue/read_ahead_kb"));
    match parent {
        Some(p) if p.exists() => Ok((name, p)),
        _ => Ok((name, PathBuf::new())),
    }
}

/// Filesystem type of the mount holding `dir` (longest mount-point prefix).
fn fs_type_of(mountinfo: &str, dir: &Path) -> Option<String> {
    let dir = fs::canonicalize(dir).ok()?;
    let mut best: Option<(usize, String)> = None;
    for line in mountinfo.lines() {
        let Some((pre, post)) = line.split_once(" - ") else {
            continue;
        };
        let (Some(mnt), Some(fstype)) = (pre.split(' ').nth(4), post.split(' ').next()) else {
            continue;
        };
        if dir.starts_with(mnt) && best.as_ref().is_none_or(|(l, _)| mnt.len() >= *l) {
            best = Some((mnt.len(), fstype.to_string()));
        }
    }
    best.map(|(_, t)| t)
}

/// /proc/self/mountinfo lines as (mount point, fs type, super options).
fn mounts(mountinfo: &str) -> impl Iterator<Item = (&str, &str, &str)> {
    mountinfo.lines().filter_map(|line| {
        let (pre, post) = line.split_once(" - ")?;
        let mnt = pre.split(' ').nth(4)?;
        let mut post = post.split(' ');
        let fstype = post.next().unwrap_or("");
        let super_opts = post.nth(1).unwrap_or("");
        Some((mnt, fstype, super_opts))
    })
}

/// Finds the hierarchy with the memory controller: a v1 `cgroup` mount with
/// the `memory` option, else a `cgroup2` mount whose root lists `memory` in
/// cgroup.controllers. `read` reads a file (injected for tests).
pub fn detect_cgroup(mountinfo: &str, read: impl Fn(&Path) -> Option<String>) -> CgroupFlavor {
    let mut v2_without: Vec<String> = Vec::new();
    let mut v2: Option<PathBuf> = None;
    for (mnt, fstype, super_opts) in mounts(mountinfo) {
        match fstype {
            "cgroup" if super_opts.split(',').any(|o| o == "memory") => {
                return CgroupFlavor::V1 {
                    mount: PathBuf::from(mnt),
                };
            }
            "cgroup2" if v2.is_none() => {
                let ctl = read(&Path::new(mnt).join("cgroup.controllers")).unwrap_or_default();
                if ctl.split_whitespace().any(|c| c == "memory") {
                    v2 = Some(PathBuf::from(mnt));
                } else {
                    v2_without.push(mnt.to_string());
                }
            }
            _ => {}
        }
    }
    match v2 {
        Some(mount) => CgroupFlavor::V2 { mount },
        None if v2_without.is_empty() => CgroupFlavor::None {
            reason: "no cgroup hierarchy with the memory controller is mounted".into(),
        },
        None => CgroupFlavor::None {
            reason: format!(
                "no memory controller: no v1 memory mount, and the cgroup2 mount {} lacks it",
                v2_without.join(", ")
            ),
        },
    }
}

/// v2: `io` next to `memory` in the same hierarchy; v1: a blkio mount.
pub fn detect_io(
    mountinfo: &str,
    mem: &CgroupFlavor,
    devno: &str,
    read: impl Fn(&Path) -> Option<String>,
) -> IoAccounting {
    if devno.is_empty() {
        return IoAccounting::None {
            reason: "no block device under the scratch directory".into(),
        };
    }
    if let CgroupFlavor::V2 { mount } = mem {
        let ctl = read(&mount.join("cgroup.controllers")).unwrap_or_default();
        if ctl.split_whitespace().any(|c| c == "io") {
            return IoAccounting::Io;
        }
    }
    for (mnt, fstype, super_opts) in mounts(mountinfo) {
        if fstype == "cgroup" && super_opts.split(',').any(|o| o == "blkio") {
            return IoAccounting::Blkio {
                mount: PathBuf::from(mnt),
            };
        }
    }
    IoAccounting::None {
        reason: "no v1 blkio mount and no v2 io controller".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MI_V1: &str = "\
25 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard
30 25 0:26 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755
33 30 0:29 / /sys/fs/cgroup/cpu rw shared:8 - cgroup cgroup rw,cpu
35 30 0:31 / /sys/fs/cgroup/memory rw shared:10 - cgroup cgroup rw,memory
41 30 0:37 / /sys/fs/cgroup/unified rw shared:16 - cgroup2 cgroup2 rw
";

    #[test]
    fn v1_memory_mount_wins_over_v2_without_controller() {
        let f = detect_cgroup(MI_V1, |_| Some("cpu io pids".into()));
        assert_eq!(
            f,
            CgroupFlavor::V1 {
                mount: "/sys/fs/cgroup/memory".into()
            }
        );
    }

    #[test]
    fn v2_with_memory_is_found() {
        let mi = "41 30 0:37 / /sys/fs/cgroup rw shared:16 - cgroup2 cgroup2 rw,nsdelegate\n";
        let f = detect_cgroup(mi, |p| {
            assert_eq!(p, Path::new("/sys/fs/cgroup/cgroup.controllers"));
            Some("cpuset cpu io memory pids\n".into())
        });
        assert_eq!(
            f,
            CgroupFlavor::V2 {
                mount: "/sys/fs/cgroup".into()
            }
        );
    }

    #[test]
    fn no_controller_says_why() {
        let mi = "33 30 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n\
                  41 30 0:37 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n";
        match detect_cgroup(mi, |_| Some("cpu pids".into())) {
            CgroupFlavor::None { reason } => {
                assert!(
                    reason.contains("/sys/fs/cgroup/unified lacks it"),
                    "{reason}"
                )
            }
            f => panic!("{f:?}"),
        }
        match detect_cgroup("", |_| None) {
            CgroupFlavor::None { reason } => assert!(reason.contains("no cgroup hierarchy")),
            f => panic!("{f:?}"),
        }
    }

    #[test]
    fn io_accounting_found() {
        let mi = format!("{MI_V1}36 30 0:32 / /sys/fs/cgroup/blkio rw - cgroup cgroup rw,blkio\n");
        let mem = detect_cgroup(&mi, |_| None);
        assert_eq!(
            detect_io(&mi, &mem, "254:0", |_| None),
            IoAccounting::Blkio {
                mount: "/sys/fs/cgroup/blkio".into()
            }
        );
        assert!(matches!(
            detect_io(MI_V1, &mem, "254:0", |_| None),
            IoAccounting::None { .. }
        ));
        assert!(matches!(
            detect_io(&mi, &mem, "", |_| None),
            IoAccounting::None { .. }
        ));
        let v2 = CgroupFlavor::V2 {
            mount: "/sys/fs/cgroup".into(),
        };
        assert_eq!(
            detect_io("", &v2, "8:0", |_| Some("memory io".into())),
            IoAccounting::Io
        );
    }

    #[test]
    fn small_parsers() {
        assert_eq!(bracketed("always [madvise] never\n"), Some("madvise"));
        assert_eq!(bracketed("always madvise"), None);
        assert_eq!(parse_lru_gen("0x0007\n"), Some(7));
        assert_eq!(parse_lru_gen("0x0000"), Some(0));
        assert_eq!(
            meminfo_kib("MemTotal:       24684096 kB\nSwapTotal: 0 kB\n", "MemTotal"),
            Some(24684096)
        );
        assert_eq!(meminfo_kib("MemTotal: 5 kB\n", "SwapTotal"), None);
    }

    #[test]
    fn fs_type_takes_the_longest_mount() {
        let mi = "25 1 254:0 / / rw - ext4 /dev/vda rw\n26 25 0:5 / /proc rw - proc proc rw\n";
        assert_eq!(
            fs_type_of(mi, Path::new("/proc/self")).as_deref(),
            Some("proc")
        );
        assert_eq!(fs_type_of(mi, Path::new("/")).as_deref(), Some("ext4"));
    }
}
