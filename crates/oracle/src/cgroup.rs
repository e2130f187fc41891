//! A throwaway memory cgroup with a limit: created per run, the workload's
//! process moved into it before exec, its memory.stat read, and removed on
//! drop (after killing whatever is still inside), also on error or panic.

use crate::host::{HostInfo, IoAccounting};
use crate::journal::{self, Kind, Token};
use std::collections::BTreeMap;
use std::ffi::CString;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

pub(crate) const PREFIX: &str = "foliosim-oracle-";
static SEQ: AtomicU32 = AtomicU32::new(0);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V1,
    V2,
}

#[derive(Debug)]
pub struct MemCgroup {
    path: PathBuf,
    version: Version,
    /// Per-group block I/O accounting: the v1 blkio group (its own
    /// directory) or, for v2, `path` itself; with the disk's MAJ:MIN.
    io: Option<(PathBuf, String)>,
    /// The group directories made, newest last, each with its journal entry.
    made: Vec<(PathBuf, Token)>,
}

/// Creates a group directory, journaled first so that a killed oracle's
/// group is emptied and removed by the next one.
pub(crate) fn make_group(p: &Path) -> Result<(PathBuf, Token), String> {
    let t = journal::record(Kind::Cgroup, p, "")?;
    match fs::create_dir(p) {
        Ok(()) => Ok((p.to_path_buf(), t)),
        Err(e) => {
            t.done();
            Err(format!("creating cgroup {}: {e}", p.display()))
        }
    }
}

/// Gives `dir`'s child groups the `controller` (cgroup v2: a parent
/// delegates it in its cgroup.subtree_control), unless it already does.
pub(crate) fn delegate(dir: &Path, controller: &str) -> Result<(), String> {
    let sc = dir.join("cgroup.subtree_control");
    let on = fs::read_to_string(&sc).unwrap_or_default();
    if on.split_whitespace().any(|x| x == controller) {
        return Ok(());
    }
    write_file(&sc, &format!("+{controller}"))
}

/// A throttle limit no workload reaches (1 TiB/s): blk-throttle only counts
/// the bios of groups that have a limit.
const NEVER_BINDING_BPS: u64 = 1 << 40;

fn write_file(p: &Path, v: &str) -> Result<(), String> {
    fs::write(p, v).map_err(|e| format!("writing '{v}' to {}: {e}", p.display()))
}

impl MemCgroup {
    /// Creates `<mount>/foliosim-oracle-<pid>-<n>` with `limit` bytes (and
    /// its block I/O accounting group where the host has one).
    pub fn create(host: &HostInfo, limit: u64) -> Result<Self, String> {
        let (mount, v2) = host.cgroup.memory_mount()?;
        let version = if v2 { Version::V2 } else { Version::V1 };
        sweep_stale(mount);
        if v2 {
            delegate(mount, "memory")?;
            if host.io_accounting == IoAccounting::Io {
                delegate(mount, "io")?;
            }
        }
        let name = format!(
            "{PREFIX}{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let path = mount.join(&name);
        let mut cg = MemCgroup {
            made: vec![make_group(&path)?],
            path,
            version,
            io: None,
        };
        match &host.io_accounting {
            IoAccounting::Io => cg.io = Some((cg.path.clone(), host.disk_devno.clone())),
            IoAccounting::Blkio { mount } => {
                sweep_stale(mount);
                let p = mount.join(&name);
                cg.made.push(make_group(&p)?);
                cg.io = Some((p.clone(), host.disk_devno.clone()));
                for f in [
                    "blkio.throttle.read_bps_device",
                    "blkio.throttle.write_bps_device",
                ] {
                    write_file(
                        &p.join(f),
                        &format!("{} {NEVER_BINDING_BPS}", host.disk_devno),
                    )?;
                }
            }
            IoAccounting::None { .. } => {}
        }
        let limit_file = match version {
            Version::V1 => "memory.limit_in_bytes",
            Version::V2 => "memory.max",
        };
        write_file(&cg.path.join(limit_file), &limit.to_string())?;
        Ok(cg)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Makes `cmd`'s child join this group between fork and exec, so that
    /// everything it faults or reads is charged here from its first page.
    pub fn enter_on_spawn(&self, cmd: &mut Command) -> Result<(), String> {
        let mut dirs = vec![self.path.clone()];
        if let Some((p, _)) = &self.io {
            if p != &self.path {
                dirs.push(p.clone());
            }
        }
        enter_on_spawn(cmd, &dirs)
    }

    /// Moves the process `pid` into this group (and its block I/O group).
    pub fn add_pid(&self, pid: i32) -> Result<(), String> {
        write_file(&self.path.join("cgroup.procs"), &pid.to_string())?;
        if let Some((p, _)) = self.io.as_ref().filter(|(p, _)| p != &self.path) {
            write_file(&p.join("cgroup.procs"), &pid.to_string())?;
        }
        Ok(())
    }

    /// The group's block I/O on the scratch disk: `io.rbytes`, `io.wbytes`,
    /// `io.rios`, `io.wios` (v2 io.stat names); empty without accounting.
    pub fn io_stat(&self) -> Result<BTreeMap<String, f64>, String> {
        let Some((p, devno)) = &self.io else {
            return Ok(BTreeMap::new());
        };
        let read = |f: &str| {
            let q = p.join(f);
            fs::read_to_string(&q).map_err(|e| format!("{}: {e}", q.display()))
        };
        if p == &self.path {
            parse_io_stat(&read("io.stat")?, devno)
        } else {
            parse_blkio_throttle(
                &read("blkio.throttle.io_service_bytes")?,
                &read("blkio.throttle.io_serviced")?,
                devno,
            )
        }
    }

    /// The group's memory.stat under the kernel's v2 names (crate docs).
    pub fn stat(&self) -> Result<BTreeMap<String, u64>, String> {
        let p = self.path.join("memory.stat");
        let text = fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        parse_memory_stat(&text, self.version == Version::V1)
            .map_err(|e| format!("{}: {e}", p.display()))
    }

    /// The group's peak usage in bytes (v1 max_usage_in_bytes, v2 memory.peak).
    pub fn peak_bytes(&self) -> Option<u64> {
        let f = match self.version {
            Version::V1 => "memory.max_usage_in_bytes",
            Version::V2 => "memory.peak",
        };
        fs::read_to_string(self.path.join(f))
            .ok()?
            .trim()
            .parse()
            .ok()
    }
}

/// Makes `cmd`'s child join the cgroups `dirs` between fork and exec.
pub fn enter_on_spawn(cmd: &mut Command, dirs: &[PathBuf]) -> Result<(), String> {
    let mut procs = Vec::new();
    for d in dirs {
        procs.push(
            CString::new(d.join("cgroup.procs").as_os_str().as_bytes())
                .map_err(|_| format!("{}: NUL in path", d.display()))?,
        );
    }
    // SAFETY: the closure runs in the forked child and only calls
    // open/write/close, which are async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            for p in &procs {
                let fd = libc::open(p.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                // "0" means the writing task itself, in v1 and v2.
                let n = libc::write(fd, b"0".as_ptr().cast(), 1);
                let err = std::io::Error::last_os_error();
                libc::close(fd);
                if n != 1 {
                    return Err(err);
                }
            }
            Ok(())
        });
    }
    Ok(())
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        // The memory group first: killing what is left there empties the
        // blkio group (the same processes) too.
        for (d, t) in self.made.drain(..) {
            match journal::empty_and_remove_cgroup(&d) {
                Ok(_) => t.done(),
                // Left in the journal: the next oracle start tries again.
                Err(e) => eprintln!("foliosim oracle: {e}"),
            }
        }
    }
}

/// v2 io.stat: "MAJ:MIN rbytes=.. wbytes=.. rios=.. wios=.. ..." per device.
pub fn parse_io_stat(text: &str, devno: &str) -> Result<BTreeMap<String, f64>, String> {
    let mut m: BTreeMap<String, f64> = ["rbytes", "wbytes", "rios", "wios"]
        .iter()
        .map(|k| (format!("io.{k}"), 0.0))
        .collect();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        if it.next() != Some(devno) {
            continue;
        }
        for kv in it {
            let Some((k, v)) = kv.split_once('=') else {
                continue;
            };
            let key = format!("io.{k}");
            if let Some(slot) = m.get_mut(&key) {
                *slot = v
                    .parse()
                    .map_err(|_| format!("io.stat: bad value '{kv}'"))?;
            }
        }
    }
    Ok(m)
}

/// v1 blkio.throttle.io_service_bytes / io_serviced: "MAJ:MIN Read N" lines.
pub fn parse_blkio_throttle(
    bytes: &str,
    serviced: &str,
    devno: &str,
) -> Result<BTreeMap<String, f64>, String> {
    let get = |text: &str, op: &str| -> Result<f64, String> {
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() == 3 && f[0] == devno && f[1] == op {
                return f[2]
                    .parse()
                    .map_err(|_| format!("blkio: bad value in '{line}'"));
            }
        }
        Ok(0.0)
    };
    Ok(BTreeMap::from([
        ("io.rbytes".to_string(), get(bytes, "Read")?),
        ("io.wbytes".to_string(), get(bytes, "Write")?),
        ("io.rios".to_string(), get(serviced, "Read")?),
        ("io.wios".to_string(), get(serviced, "Write")?),
    ]))
}

/// Removes empty groups left by an oracle process that no longer exists
/// (killed before its guards ran).
pub(crate) fn sweep_stale(mount: &Path) {
    let Ok(rd) = fs::read_dir(mount) else { return };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(PREFIX) else {
            continue;
        };
        let Some(pid) = rest.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir(e.path());
        }
    }
}

/// v1 names -> the v2 names the contract uses.
const V1_RENAMES: &[(&str, &str)] = &[
    ("cache", "file"),
    ("rss", "anon"),
    ("rss_huge", "anon_thp"),
    ("mapped_file", "file_mapped"),
    ("dirty", "file_dirty"),
    ("writeback", "file_writeback"),
];

/// Parses memory.stat text. For v1 the group's own fields are kept (the
/// oracle's groups have no children, so `total_*` adds nothing), the
/// `hierarchical_*` limits are dropped, and the renames above applied.
pub fn parse_memory_stat(text: &str, v1: bool) -> Result<BTreeMap<String, u64>, String> {
    let mut m = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let mut it = line.split_whitespace();
        let (Some(k), Some(v), None) = (it.next(), it.next(), it.next()) else {
            return Err(format!(
                "line {}: expected 'name value', got '{line}'",
                i + 1
            ));
        };
        let v: u64 = v
            .parse()
            .map_err(|_| format!("line {}: bad value '{v}' for {k}", i + 1))?;
        if v1 {
            if k.starts_with("total_") || k.starts_with("hierarchical_") {
                continue;
            }
            let k = V1_RENAMES
                .iter()
                .find(|(a, _)| *a == k)
                .map_or(k, |(_, b)| b);
            m.insert(k.to_string(), v);
        } else {
            m.insert(k.to_string(), v);
        }
    }
    Ok(m)
}

/// Parses /proc/vmstat into name -> value.
pub fn parse_vmstat(text: &str) -> Result<BTreeMap<String, u64>, String> {
    parse_memory_stat(text, false).map_err(|e| format!("/proc/vmstat: {e}"))
}

/// /proc/vmstat event counters the oracle reports (as `vmstat.<name>`
/// deltas), for fio jobs, probes and scenarios alike.
pub const VMSTAT_EVENTS: &[&str] = &[
    "pgpgin",
    "pgpgout",
    "pswpin",
    "pswpout",
    "pgfault",
    "pgmajfault",
    "pgactivate",
    "pgdeactivate",
    "pgrefill",
    "pgscan_kswapd",
    "pgscan_direct",
    "pgsteal_kswapd",
    "pgsteal_direct",
    "pgscan_anon",
    "pgscan_file",
    "pgsteal_anon",
    "pgsteal_file",
    "workingset_refault_anon",
    "workingset_refault_file",
    "workingset_activate_anon",
    "workingset_activate_file",
    "workingset_restore_anon",
    "workingset_restore_file",
    // Shadow-only xa_nodes the mm-shadow shrinker freed: refaults their
    // shadows would have counted are lost.
    "workingset_nodereclaim",
    "oom_kill",
    "nr_dirtied",
    "nr_written",
    // PMD mappings of file folios (do_set_pmd): the one place the host
    // shows page-cache folios of PMD order.
    "thp_file_mapped",
    "swpin_zero",
    "swpout_zero",
];

pub fn read_vmstat() -> Result<BTreeMap<String, u64>, String> {
    let t = fs::read_to_string("/proc/vmstat").map_err(|e| format!("/proc/vmstat: {e}"))?;
    parse_vmstat(&t)
}

/// `after - before` for [`VMSTAT_EVENTS`], keyed `vmstat.<name>`; counters
/// the kernel lacks are left out.
pub fn vmstat_delta(
    before: &BTreeMap<String, u64>,
    after: &BTreeMap<String, u64>,
) -> BTreeMap<String, f64> {
    VMSTAT_EVENTS
        .iter()
        .filter_map(|k| {
            let (a, b) = (after.get(*k)?, before.get(*k)?);
            Some((format!("vmstat.{k}"), a.saturating_sub(*b) as f64))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Trimmed from this host's v1 memory.stat (6.18).
    const V1: &str = "cache 10752000\nrss 6434816\nrss_huge 0\nmapped_file 7430144\n\
dirty 28672\nworkingset_refault_file 4\npgpgin 35174\npgpgout 31016\npgfault 39645\n\
pgmajfault 0\ninactive_file 327680\nactive_file 1425408\n\
hierarchical_memory_limit 9223372036854771712\ntotal_cache 695230464\ntotal_pgpgin 1383240\n";

    #[test]
    fn v1_stat_is_renamed_and_local() {
        let m = parse_memory_stat(V1, true).unwrap();
        assert_eq!(m["file"], 10752000);
        assert_eq!(m["anon"], 6434816);
        assert_eq!(m["file_mapped"], 7430144);
        assert_eq!(m["file_dirty"], 28672);
        assert_eq!(m["pgpgin"], 35174, "local, not total_pgpgin");
        assert_eq!(m["workingset_refault_file"], 4);
        assert!(!m.contains_key("cache"));
        assert!(!m
            .keys()
            .any(|k| k.starts_with("total_") || k.starts_with("hierarchical_")));
    }

    #[test]
    fn v2_stat_kept_as_is() {
        let m = parse_memory_stat(
            "file 4096\npgmajfault 3\nworkingset_refault_file 9\n",
            false,
        )
        .unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m["file"], 4096);
    }

    #[test]
    fn bad_stat_lines_name_the_line() {
        let e = parse_memory_stat("cache 1\nrss x\n", true).unwrap_err();
        assert_eq!(e, "line 2: bad value 'x' for rss");
        let e = parse_memory_stat("cache 1 2\n", true).unwrap_err();
        assert!(e.starts_with("line 1: expected"), "{e}");
    }

    #[test]
    fn io_accounting_parsers() {
        let m = parse_io_stat(
            "8:0 rbytes=1 wbytes=2 rios=3 wios=4\n254:0 rbytes=67297280 wbytes=0 rios=55 wios=0 dbytes=0 dios=0\n",
            "254:0",
        )
        .unwrap();
        assert_eq!(m["io.rbytes"], 67297280.0);
        assert_eq!(m["io.rios"], 55.0);
        assert_eq!(m.len(), 4);
        assert_eq!(parse_io_stat("", "254:0").unwrap()["io.rbytes"], 0.0);
        let b = "254:0 Read 67297280\n254:0 Write 4096\n254:0 Total 67301376\nTotal 67301376\n";
        let n = "254:0 Read 55\n254:0 Write 1\nTotal 56\n";
        let m = parse_blkio_throttle(b, n, "254:0").unwrap();
        assert_eq!(
            (m["io.rbytes"], m["io.wbytes"], m["io.rios"], m["io.wios"]),
            (67297280.0, 4096.0, 55.0, 1.0)
        );
        assert_eq!(
            parse_blkio_throttle("Total 0\n", "Total 0\n", "254:0").unwrap()["io.rbytes"],
            0.0
        );
    }

    #[test]
    fn vmstat_delta_prefixes_and_skips_missing() {
        let b = parse_vmstat("pgpgin 100\npgmajfault 5\nnr_free_pages 7\n").unwrap();
        let a = parse_vmstat("pgpgin 612\npgmajfault 9\nnr_free_pages 1\n").unwrap();
        let d = vmstat_delta(&b, &a);
        assert_eq!(d.len(), 2);
        assert_eq!(d["vmstat.pgpgin"], 512.0);
        assert_eq!(d["vmstat.pgmajfault"], 4.0);
    }
}
