//! Scenarios on the real host: the scenario's cgroup hierarchy (v1 or v2
//! knobs, whichever the host mounts; on v2 `[machine] swappiness` is
//! vm.swappiness) under a fresh oracle group, its swap (zram0), its files
//! (on the scratch disk, or on a tmpfs mounted in scratch), its sysctls;
//! then one child per process instance (`foliosim oracle __scenario-proc`,
//! [`exec`]) started inside its cgroup, barriers coordinated here, and the
//! counters read:
//! /proc/vmstat deltas, each cgroup's memory.stat and OOM kills, and
//! which instances the kernel killed. Every host change is journaled before
//! it is made and undone on drop (see [`hostcfg`]).
//!
//! Counter names (besides the crate-level contract): the scenario's root
//! group's hierarchical memory.stat under the plain v2 names (`anon`,
//! `file`, `swap`, `shmem`, `pgmajfault`, ...); each declared cgroup's as
//! `memcg[PATH].NAME`; `memcg[PATH].oom_kill` (v1 oom_control, v2
//! memory.events.local: local to the group) and `oom_kill` (their sum);
//! `killed[PROCESS]`: instances of the process that ended by SIGKILL; `ops[PROCESS]`: kv_get operations of
//! its instances and forked children; `start_s[NAME]`, `end_s[NAME]`: when
//! each instance or child that finished started and ended, in seconds from
//! the run's start, under the model report's names (`app[0]`,
//! `forker[0]/fork@26[1]`); `per_op.COUNTER`: [`PER_OP`] counters over the
//! operations, for runs whose length is a duration.

pub mod builtin;
pub mod exec;
pub mod hostcfg;

use crate::cgroup::{delegate, make_group, read_vmstat, sweep_stale, PREFIX};
use crate::host::{CgroupFlavor, HostInfo};
use crate::journal::{self, Token};
use crate::run::{drop_caches, warm_executable, RunOpts, Scratch};
use foliosim_workload::scenario::{
    Cgroup, FadviseStep, FileFs, IoStep, KvGetStep, MmapFileStep, Op, Scenario, Step,
};
use foliosim_workload::units::parse_size;
use hostcfg::{ScratchMount, SwapFile, ValueGuard, ZramSwap};
use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// A run that takes longer is killed and reported failed (a barrier that
/// never fills, a group with oom_kill_disable stuck under OOM); the
/// default of RunOpts::run_timeout (`oracle run --timeout`).
pub const RUN_TIMEOUT: Duration = Duration::from_secs(300);

/// Parses a scenario file's text (`file:line: key: msg` errors) and
/// refuses names that could reach outside scratch or the oracle's groups.
pub fn parse_scenario(text: &str, file: &str) -> Result<Scenario, String> {
    let sc = foliosim_workload::scenario::parse(text, file).map_err(|e| e.to_string())?;
    check_safe(&sc)?;
    Ok(sc)
}

/// A scenario file's `# about: text` comment (the suite's description).
pub fn about(text: &str) -> String {
    header(text, "about:")
        .map(|(_, a)| a.to_string())
        .unwrap_or_default()
}

/// The first `# KEY value` comment line of a scenario case file: its line
/// number (from 1) and the value, trimmed.
fn header<'t>(text: &'t str, key: &str) -> Option<(usize, &'t str)> {
    text.lines().enumerate().find_map(|(i, l)| {
        let v = l.trim().strip_prefix('#')?.trim().strip_prefix(key)?;
        Some((i + 1, v.trim()))
    })
}

/// A scenario case's `# repeat: N` comment (0 without one): the fewest
/// real runs its median is taken over (cases::Case::min_repeat).
pub fn min_repeat(text: &str, file: &str) -> Result<u32, String> {
    let Some((line, v)) = header(text, "repeat:") else {
        return Ok(0);
    };
    // The count, then any words saying why.
    let n = v.split_whitespace().next().unwrap_or("");
    match n.parse::<u32>() {
        Ok(c) if (1..=99).contains(&c) => Ok(c),
        _ => Err(format!(
            "{file}:{line}: repeat: '{n}' is not a count of runs from 1 to 99"
        )),
    }
}

/// Checks a name used as one path component in scratch or in the cgroup
/// tree: not empty, no '/', not '.' or '..', no leading '-', no NUL or
/// control characters.
pub fn check_name(what: &str, name: &str) -> Result<(), String> {
    let bad = |why: &str| Err(format!("{what} '{}': {why}", name.escape_debug()));
    if name.is_empty() {
        return bad("empty");
    }
    if name.contains('/') {
        return bad("a name, not a path ('/' refused)");
    }
    if name == "." || name == ".." {
        return bad("'.' and '..' are refused");
    }
    if name.starts_with('-') {
        return bad("a leading '-' is refused");
    }
    if name.chars().any(|c| c.is_control()) {
        return bad("control characters are refused");
    }
    Ok(())
}

fn walk<'a>(steps: &'a [Step], f: &mut dyn FnMut(&'a Step)) {
    for s in steps {
        f(s);
        match &s.op {
            Op::Loop { steps, .. } | Op::Fork { steps, .. } => walk(steps, f),
            _ => {}
        }
    }
}

fn all_steps(sc: &Scenario) -> Vec<&Step> {
    let mut v = Vec::new();
    for p in &sc.processes {
        for t in &p.threads {
            walk(&t.steps, &mut |s| v.push(s));
        }
    }
    v
}

/// Refuses a scenario whose names could reach outside scratch or the
/// oracle's cgroups. Nothing has been changed when this fails.
pub fn check_safe(sc: &Scenario) -> Result<(), String> {
    let at = |line: usize, e: String| format!("{}:{line}: {e}", sc.file);
    for f in &sc.files {
        check_name("file", &f.name).map_err(|e| at(f.line, e))?;
    }
    for c in &sc.cgroups {
        for part in c.path.split('/') {
            check_name("cgroup path component", part)
                .map_err(|e| at(c.line, format!("cgroup '{}': {e}", c.path)))?;
        }
    }
    for b in &sc.barriers {
        if b.name.is_empty() || b.name.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(format!(
                "{}: barrier '{}': no spaces or control characters",
                sc.file,
                b.name.escape_debug()
            ));
        }
    }
    for s in all_steps(sc) {
        let file = match &s.op {
            Op::MmapFile(MmapFileStep { file, .. })
            | Op::Io(IoStep { file, .. })
            | Op::KvGet(KvGetStep { file, .. })
            | Op::Fsync { file }
            | Op::Fadvise(FadviseStep { file, .. })
            | Op::Truncate { file, .. } => file,
            _ => continue,
        };
        check_name("file", file).map_err(|e| at(s.line, e))?;
        if !sc.files.iter().any(|f| &f.name == file) {
            return Err(at(
                s.line,
                format!("file '{file}': no [[file]] of that name"),
            ));
        }
    }
    Ok(())
}

/// The scenario's swap, from `[machine] swap`.
#[derive(Clone, Debug, PartialEq)]
pub enum SwapSpec {
    None,
    Zram(u64),
    Disk(u64),
}

pub fn parse_swap(s: Option<&str>) -> Result<SwapSpec, String> {
    let Some(s) = s else {
        return Ok(SwapSpec::None);
    };
    if s == "none" {
        return Ok(SwapSpec::None);
    }
    let (kind, size) = s
        .split_once(':')
        .ok_or_else(|| format!("swap '{s}': expected zram:SIZE, disk:SIZE or none"))?;
    let size = parse_size(size).map_err(|e| format!("swap '{s}': {e}"))?;
    match kind {
        "zram" => Ok(SwapSpec::Zram(size)),
        "disk" => Ok(SwapSpec::Disk(size)),
        _ => Err(format!("swap '{s}': expected zram:SIZE, disk:SIZE or none")),
    }
}

/// Why this host cannot run `sc` for real, or None.
pub fn skip_reason(sc: &Scenario, host: &HostInfo) -> Option<String> {
    if !host.is_root {
        return Some("needs root (cgroups, zram, swapon, drop_caches)".into());
    }
    let (mount, v2) = match host.cgroup.memory_mount() {
        Ok(m) => m,
        Err(reason) => return Some(reason.to_string()),
    };
    for c in &sc.cgroups {
        // Knobs of the other cgroup version, which the run would lack.
        let other = if v2 {
            vec![
                ("memory.memsw.limit_in_bytes", c.memsw_limit.is_some()),
                ("memory.swappiness", c.swappiness.is_some()),
                ("memory.oom_control", c.oom_kill_disable),
            ]
        } else {
            vec![
                ("memory.high", c.high.is_some()),
                ("memory.low", c.low.is_some()),
                ("memory.min", c.min.is_some()),
                ("memory.swap.max", c.swap_max.is_some()),
                ("memory.oom.group", c.oom_group),
            ]
        };
        if let Some((k, _)) = other.iter().find(|(_, set)| *set) {
            let (is, has) = if v2 { ("v1", "v2") } else { ("v2", "v1") };
            return Some(format!(
                "{}:{}: cgroup '{}': {k} is cgroup {is} only; this host has {has}",
                sc.file, c.line, c.path
            ));
        }
        if c.memsw_limit.is_some() && !mount.join("memory.memsw.limit_in_bytes").exists() {
            return Some("memsw_limit: this kernel has no memsw accounting (swapaccount=1)".into());
        }
    }
    if v2 {
        // v2 lets a group with controllers for its children hold no
        // processes of its own.
        for p in &sc.processes {
            if let Some(c) = child_group(sc, &p.cgroup) {
                let group = if p.cgroup.is_empty() {
                    "the scenario's root cgroup".to_string()
                } else {
                    format!("cgroup '{}'", p.cgroup)
                };
                return Some(format!(
                    "{}:{}: process '{}' runs in {group}, which has the child group '{}': cgroup v2 puts processes in leaf groups only",
                    sc.file, p.line, p.name, c.path
                ));
            }
        }
    }
    // [machine] memory, device and zram_ratio describe the model's machine:
    // the real run has the host's (the oracle configures the model from it).
    let m = &sc.machine;
    let mglru = host.lru_gen.is_some_and(|v| v != 0);
    match m.lru.as_deref() {
        Some("mglru") if !mglru => {
            return Some("lru = mglru: this host runs the classic LRU".into())
        }
        Some("classic") if mglru => return Some("lru = classic: this host runs MGLRU".into()),
        _ => {}
    }
    for (k, _) in &m.sysctl {
        if hostcfg::sysctl_path(k).is_none() {
            return Some(format!(
                "sysctl {k}: the oracle sets only {}, transparent_hugepage.enabled, transparent_hugepage.defrag and transparent_hugepage.hugepages-<size>kB.enabled",
                hostcfg::SYSCTLS.join(", ")
            ));
        }
    }
    let others = hostcfg::active_swaps();
    match parse_swap(m.swap.as_deref()) {
        Err(e) => return Some(e),
        Ok(_) if !others.is_empty() => {
            return Some(format!(
                "swap {} is active on the host: the run's swap would not be the scenario's",
                others.join(", ")
            ))
        }
        Ok(SwapSpec::Zram(_)) => {
            if let Some(why) = hostcfg::zram_unusable() {
                return Some(why);
            }
        }
        Ok(SwapSpec::Disk(_)) if host.read_ahead_path.as_os_str().is_empty() => {
            return Some("disk swap: the scratch directory is not on a block device".into())
        }
        Ok(SwapSpec::Disk(_)) | Ok(SwapSpec::None) => {}
    }
    if sc.files.iter().any(|f| f.fs == FileFs::Disk) && host.read_ahead_path.as_os_str().is_empty()
    {
        return Some("the scratch directory is not on a block device (disk files)".into());
    }
    for s in all_steps(sc) {
        let why = match &s.op {
            Op::Fio { .. } => Some("fio steps are not run by the oracle's scenario executor yet"),
            _ => None,
        };
        if let Some(w) = why {
            return Some(format!("{}:{}: {w}", sc.file, s.line));
        }
    }
    None
}

/// The scenario's groups, created fresh for a run; emptied and removed on drop.
struct Groups {
    root: PathBuf,
    /// (scenario path, directory), root first ("").
    dirs: Vec<(String, PathBuf)>,
    made: Vec<(PathBuf, Token)>,
    /// A cgroup v2 hierarchy (v1 otherwise).
    v2: bool,
}

static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn write_knob(dir: &Path, f: &str, v: &str) -> Result<(), String> {
    let p = dir.join(f);
    fs::write(&p, v).map_err(|e| format!("writing '{v}' to {}: {e}", p.display()))
}

/// A declared group under `path` ("" = the scenario's root), if any.
fn child_group<'a>(sc: &'a Scenario, path: &str) -> Option<&'a Cgroup> {
    sc.cgroups
        .iter()
        .find(|c| path.is_empty() || c.path.starts_with(&format!("{path}/")))
}

/// The value of `key` in a flat-keyed cgroup file ("max 3\noom 0\n").
fn flat_key(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
}

impl Groups {
    fn create(flavor: &CgroupFlavor, sc: &Scenario) -> Result<Groups, String> {
        let (mount, v2) = flavor.memory_mount()?;
        sweep_stale(mount);
        let root = mount.join(format!(
            "{PREFIX}{}-scn{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        let mut g = Groups {
            root: root.clone(),
            dirs: vec![(String::new(), root.clone())],
            made: vec![],
            v2,
        };
        if v2 {
            delegate(mount, "memory")?;
        }
        g.made.push(make_group(&root)?);
        // v1: children take their parent's swappiness when created. v2 has
        // no per-group swappiness: run_real sets vm.swappiness instead.
        if let (Some(s), false) = (sc.machine.swappiness, v2) {
            write_knob(&root, "memory.swappiness", &s.to_string())?;
        }
        if v2 && child_group(sc, "").is_some() {
            delegate(&root, "memory")?;
        }
        for c in &sc.cgroups {
            let d = root.join(&c.path);
            g.made.push(make_group(&d)?);
            g.dirs.push((c.path.clone(), d.clone()));
            if v2 {
                if child_group(sc, &c.path).is_some() {
                    delegate(&d, "memory")?;
                }
                for (f, v) in [
                    ("memory.max", c.max),
                    ("memory.high", c.high),
                    ("memory.low", c.low),
                    ("memory.min", c.min),
                    ("memory.swap.max", c.swap_max),
                ] {
                    if let Some(v) = v {
                        write_knob(&d, f, &v.to_string())?;
                    }
                }
                if c.oom_group {
                    write_knob(&d, "memory.oom.group", "1")?;
                }
                continue;
            }
            // memsw may not go below the memory limit: the limit first.
            if let Some(m) = c.max {
                write_knob(&d, "memory.limit_in_bytes", &m.to_string())?;
            }
            if let Some(m) = c.memsw_limit {
                write_knob(&d, "memory.memsw.limit_in_bytes", &m.to_string())?;
            }
            if let Some(s) = c.swappiness {
                write_knob(&d, "memory.swappiness", &s.to_string())?;
            }
            if c.oom_kill_disable {
                write_knob(&d, "memory.oom_control", "1")?;
            }
        }
        Ok(g)
    }

    fn dir(&self, path: &str) -> Result<&Path, String> {
        self.dirs
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, d)| d.as_path())
            .ok_or_else(|| format!("cgroup '{path}' is not declared"))
    }

    /// How often a charge met a group's limit, summed over the scenario's
    /// groups (v1 memory.failcnt, v2 memory.events' `max`).
    fn failcnt(&self) -> u64 {
        let f = if self.v2 {
            "memory.events.local"
        } else {
            "memory.failcnt"
        };
        self.dirs
            .iter()
            .skip(1)
            .map(|(_, d)| {
                let text = fs::read_to_string(d.join(f)).unwrap_or_default();
                if self.v2 {
                    flat_key(&text, "max")
                } else {
                    text.trim().parse().ok()
                }
                .unwrap_or(0)
            })
            .sum()
    }

    fn procs_left(&self) -> usize {
        self.dirs
            .iter()
            .map(|(_, d)| {
                fs::read_to_string(d.join("cgroup.procs"))
                    .unwrap_or_default()
                    .split_whitespace()
                    .count()
            })
            .sum()
    }

    /// Counters of every group (see the module docs).
    fn read(&self, m: &mut BTreeMap<String, f64>) -> Result<(), String> {
        let mut ooms = 0.0;
        // Each group's own (local) event counts, by path: the hierarchical
        // events are summed from them (subtree_events).
        let mut locals: Vec<(String, BTreeMap<String, u64>)> = Vec::new();
        // Children before their parents: reading a group's memory.stat
        // flushes its subtree's pending stats into it, so a parent read
        // first shows stale totals (measured: the root's total_pgmajfault
        // 91891 against its only child's 196660 in scn-anon-seq-zram).
        // v2: each group's hierarchical events as read, by path, for the
        // parents' sums.
        let mut read_v2: Vec<(String, BTreeMap<String, u64>)> = Vec::new();
        for (path, d) in self.dirs.iter().rev() {
            let p = d.join("memory.stat");
            let text = fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            let mut stat = if self.v2 {
                let mut stat = crate::cgroup::parse_memory_stat(&text, false)
                    .map_err(|e| format!("{}: {e}", p.display()))?;
                children_events(path, &read_v2, &mut stat);
                read_v2.push((path.clone(), stat.clone()));
                stat
            } else {
                let mut stat =
                    parse_total_stat(&text).map_err(|e| format!("{}: {e}", p.display()))?;
                let local = local_events(&text).map_err(|e| format!("{}: {e}", p.display()))?;
                locals.push((path.clone(), local));
                subtree_events(path, &locals, &mut stat);
                stat
            };
            // The group's own OOM kills (v1 oom_control's count is local).
            let f = if self.v2 {
                "memory.events.local"
            } else {
                "memory.oom_control"
            };
            let oc = fs::read_to_string(d.join(f)).unwrap_or_default();
            let oom = flat_key(&oc, "oom_kill").unwrap_or(0) as f64;
            ooms += oom;
            // Peak usage (memsw: memory + swap, v1 only), since the sizes
            // above are read after the processes exited.
            for (f, k) in [
                ("memory.max_usage_in_bytes", "peak"),
                ("memory.memsw.max_usage_in_bytes", "memsw_peak"),
                ("memory.peak", "peak"),
                // v1's kernel memory (slab, page tables, kernel stacks),
                // charged to the memory counter too.
                ("memory.kmem.max_usage_in_bytes", "kmem_peak"),
                ("memory.kmem.usage_in_bytes", "kmem"),
            ] {
                if let Some(v) = fs::read_to_string(d.join(f))
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                {
                    stat.insert(k.to_string(), v);
                }
            }
            if path.is_empty() {
                m.extend(stat.iter().map(|(k, v)| (k.clone(), *v as f64)));
            } else {
                m.extend(
                    stat.iter()
                        .map(|(k, v)| (format!("memcg[{path}].{k}"), *v as f64)),
                );
                m.insert(format!("memcg[{path}].oom_kill"), oom);
            }
        }
        m.insert("oom_kill".into(), ooms);
        Ok(())
    }
}

impl Drop for Groups {
    fn drop(&mut self) {
        // Children before parents.
        for (d, t) in self.made.drain(..).rev() {
            match journal::empty_and_remove_cgroup(&d) {
                Ok(_) => t.done(),
                Err(e) => eprintln!("foliosim oracle: {e}"),
            }
        }
        let _ = &self.root;
    }
}

/// The event counters whose hierarchical figure is summed from the groups'
/// own ones: a group's `total_*` can lag its children's (memcg stats are
/// flushed lazily: reading a group flushes it only past an update threshold;
/// measured: the root's total_workingset_refault_anon 36274 against its only
/// child's 98399 in scn-anon-seq-disk), where each group's own figure is
/// fresh once its memory.stat was read.
const SUMMED_EVENTS: &[&str] = &[
    "pgfault",
    "pgmajfault",
    "workingset_refault_anon",
    "workingset_refault_file",
];

/// A v1 memory.stat's local (non-`total_`) event counters of SUMMED_EVENTS.
fn local_events(text: &str) -> Result<BTreeMap<String, u64>, String> {
    let all = crate::cgroup::parse_memory_stat(text, false)?;
    Ok(SUMMED_EVENTS
        .iter()
        .filter_map(|k| all.get(*k).map(|v| (k.to_string(), *v)))
        .collect())
}

/// Replaces `stat`'s SUMMED_EVENTS with the sum of the local figures of
/// `path` and every group under it read so far (children are read first).
fn subtree_events(
    path: &str,
    locals: &[(String, BTreeMap<String, u64>)],
    stat: &mut BTreeMap<String, u64>,
) {
    let under = |p: &str| path.is_empty() || p == path || p.starts_with(&format!("{path}/"));
    for k in SUMMED_EVENTS {
        let sum: u64 = locals
            .iter()
            .filter(|(p, _)| under(p))
            .filter_map(|(_, l)| l.get(*k))
            .sum();
        if locals.iter().any(|(p, l)| under(p) && l.contains_key(*k)) {
            stat.insert(k.to_string(), sum);
        }
    }
}

/// v2's memory.stat is hierarchical but flushed lazily as v1's is (see
/// SUMMED_EVENTS): a group's SUMMED_EVENTS become at least the sum of its
/// direct children's, read before it (v2 groups with children hold no
/// processes, so the sum is the whole figure when it is fresh).
fn children_events(
    path: &str,
    read: &[(String, BTreeMap<String, u64>)],
    stat: &mut BTreeMap<String, u64>,
) {
    let is_child = |p: &str| {
        let rest = if path.is_empty() {
            Some(p).filter(|p| !p.is_empty())
        } else {
            p.strip_prefix(path).and_then(|r| r.strip_prefix('/'))
        };
        rest.is_some_and(|r| !r.contains('/'))
    };
    for k in SUMMED_EVENTS {
        let sum: u64 = read
            .iter()
            .filter(|(p, _)| is_child(p))
            .filter_map(|(_, s)| s.get(*k))
            .sum();
        if let Some(v) = stat.get_mut(*k) {
            *v = (*v).max(sum);
        }
    }
}

/// A v1 memory.stat's hierarchical (`total_*`) fields under the contract's
/// v2 names (v2's memory.stat is hierarchical); v1-only names kept.
pub fn parse_total_stat(text: &str) -> Result<BTreeMap<String, u64>, String> {
    let all = crate::cgroup::parse_memory_stat(&text.replace("total_", "TOTAL."), false)?;
    let renames: BTreeMap<&str, &str> = [
        ("cache", "file"),
        ("rss", "anon"),
        ("rss_huge", "anon_thp"),
        ("mapped_file", "file_mapped"),
        ("dirty", "file_dirty"),
        ("writeback", "file_writeback"),
    ]
    .into_iter()
    .collect();
    Ok(all
        .into_iter()
        .filter_map(|(k, v)| {
            let k = k.strip_prefix("TOTAL.")?;
            Some((renames.get(k).copied().unwrap_or(k).to_string(), v))
        })
        .collect())
}

/// The oracle side of barriers: "arrived NAME" lines from the children's
/// threads, "go" to all of a round once `parties` have arrived. Once an
/// instance is killed, rounds can no longer fill: every barrier then lets
/// each arrival through at once (`broken`).
struct Barriers {
    stop: Arc<AtomicBool>,
    pub broken: Arc<AtomicBool>,
    /// "done NAME OPS START END ..." lines of the processes that finished,
    /// each acknowledged with "ok" before the process exits.
    pub done: Arc<std::sync::Mutex<Vec<String>>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Barriers {
    fn start(sock: &Path, parties: HashMap<String, u32>) -> Result<Barriers, String> {
        let _ = fs::remove_file(sock);
        let l = UnixListener::bind(sock).map_err(|e| format!("{}: {e}", sock.display()))?;
        l.set_nonblocking(true).map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let broken = Arc::new(AtomicBool::new(false));
        let (s2, b2) = (stop.clone(), broken.clone());
        let done = Arc::new(std::sync::Mutex::new(Vec::new()));
        let d2 = done.clone();
        let handle = std::thread::spawn(move || {
            let (tx, rx) = mpsc::channel::<(usize, String)>();
            let mut conns: Vec<UnixStream> = Vec::new();
            let mut waiting: HashMap<String, Vec<usize>> = HashMap::new();
            while !s2.load(Ordering::Relaxed) {
                while let Ok((c, _)) = l.accept() {
                    let _ = c.set_nonblocking(false);
                    let id = conns.len();
                    if let (Ok(r), Ok(mut w)) = (c.try_clone(), c.try_clone()) {
                        let tx = tx.clone();
                        let d3 = d2.clone();
                        std::thread::spawn(move || {
                            for line in BufReader::new(r).lines() {
                                let Ok(line) = line else { break };
                                if let Some(n) = line.strip_prefix("arrived ") {
                                    if tx.send((id, n.to_string())).is_err() {
                                        break;
                                    }
                                } else if let Some(d) = line.strip_prefix("done ") {
                                    // Recorded before the ack the process
                                    // waits for: once it has exited, its
                                    // line is here.
                                    d3.lock().expect("not poisoned").push(d.to_string());
                                    let _ = w.write_all(b"ok\n");
                                }
                            }
                        });
                    }
                    conns.push(c);
                }
                let release = |ids: Vec<usize>, conns: &mut Vec<UnixStream>| {
                    for i in ids {
                        let _ = conns[i].write_all(b"go\n");
                    }
                };
                if b2.load(Ordering::Relaxed) {
                    let all: Vec<usize> = waiting.drain().flat_map(|(_, v)| v).collect();
                    release(all, &mut conns);
                }
                if let Ok((id, name)) = rx.recv_timeout(Duration::from_millis(10)) {
                    let w = waiting.entry(name.clone()).or_default();
                    w.push(id);
                    let need = parties.get(&name).copied().unwrap_or(1).max(1) as usize;
                    if w.len() >= need || b2.load(Ordering::Relaxed) {
                        let ids = std::mem::take(w);
                        release(ids, &mut conns);
                    }
                }
            }
        });
        Ok(Barriers {
            stop,
            broken,
            done,
            handle: Some(handle),
        })
    }
}

impl Drop for Barriers {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Where a scenario's things live in scratch.
struct Layout {
    base: PathBuf,
    paths: exec::ScratchPaths,
}

fn lay_out_files(sc: &Scenario, l: &Layout) -> Result<(), String> {
    // Every run's `append` writes start at the files' beginning.
    let ad = exec::append_dir(&l.paths.spec)?;
    fs::create_dir_all(&ad).map_err(|e| format!("{}: {e}", ad.display()))?;
    for f in &sc.files {
        let p = ad.join(&f.name);
        let _ = fs::remove_file(&p);
        fs::write(&p, [0u8; 8]).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    for f in &sc.files {
        let (dir, fresh) = match f.fs {
            FileFs::Disk => (&l.paths.files, !f.prefill),
            FileFs::Tmpfs => (&l.paths.tmpfs, true),
        };
        let p = dir.join(&f.name);
        if fresh {
            let _ = fs::remove_file(&p);
            let h = fs::File::create(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            // A tmpfs file is sized but holds no pages until written.
            if f.fs == FileFs::Tmpfs {
                h.set_len(f.size)
                    .map_err(|e| format!("{}: {e}", p.display()))?;
            }
        } else {
            crate::probe::create_file(&p, f.size)?;
        }
    }
    Ok(())
}

/// Runs `sc` for real `opts.repeat` times; one counter map per run.
pub fn run_real(
    sc: &Scenario,
    host: &HostInfo,
    opts: &RunOpts,
    scratch: &mut Scratch,
) -> Result<Vec<BTreeMap<String, f64>>, String> {
    check_safe(sc)?;
    if let Some(why) = skip_reason(sc, host) {
        return Err(why);
    }
    let _host = hostcfg::hold_host()?;
    let exe = opts
        .probe_cmd
        .first()
        .ok_or("no child command configured")?
        .clone();
    let base = scratch.dir.join(format!("scn-{}", std::process::id()));
    let l = Layout {
        paths: exec::ScratchPaths::under(&base),
        base,
    };
    scratch.track(l.base.clone())?;
    fs::create_dir_all(&l.paths.files).map_err(|e| format!("{}: {e}", l.paths.files.display()))?;
    fs::write(
        &l.paths.spec,
        serde_json::to_string(sc).map_err(|e| e.to_string())?,
    )
    .map_err(|e| format!("{}: {e}", l.paths.spec.display()))?;
    // Guards, dropped in reverse: tmpfs, sysctls, read-ahead, swap.
    let tmpfs_bytes: u64 = sc
        .files
        .iter()
        .filter(|f| f.fs == FileFs::Tmpfs)
        .map(|f| f.size)
        .sum();
    let _tmpfs = if tmpfs_bytes > 0 {
        Some(ScratchMount::tmpfs(
            &l.paths.tmpfs,
            tmpfs_bytes + (16 << 20),
            sc.machine.tmpfs_huge.as_deref(),
        )?)
    } else {
        None
    };
    let mut _values = Vec::new();
    // cgroup v2 has no memory.swappiness: every group follows vm.swappiness.
    if let (Some(s), CgroupFlavor::V2 { .. }) = (sc.machine.swappiness, &host.cgroup) {
        let p = hostcfg::sysctl_path("vm.swappiness").expect("a sysctl the oracle sets");
        _values.push(ValueGuard::set(&p, &s.to_string())?);
    }
    for (k, v) in &sc.machine.sysctl {
        let p = hostcfg::sysctl_path(k).expect("checked by skip_reason");
        _values.push(ValueGuard::set(&p, v)?);
    }
    if let Some(kb) = sc.machine.read_ahead_kb {
        if kb != host.read_ahead_kb as u64 {
            _values.push(ValueGuard::set(&host.read_ahead_path, &kb.to_string())?);
        }
    }
    let (_zram, _swapfile) = match parse_swap(sc.machine.swap.as_deref())? {
        SwapSpec::Zram(size) => (Some(ZramSwap::setup(size)?), None),
        // A swap file on the scratch disk.
        SwapSpec::Disk(size) => (None, Some(SwapFile::setup(&l.base.join("swapfile"), size)?)),
        SwapSpec::None => (None, None),
    };
    let parties: HashMap<String, u32> = sc
        .barriers
        .iter()
        .map(|b| (b.name.clone(), b.parties))
        .collect();
    // When the memcg stats flusher runs in each run (statsflush): the
    // model runs each real run's phase. Without the tracepoint, the model
    // takes its phases evenly.
    let watch = match crate::statsflush::FlushWatch::start(&l.base.join("tracefs")) {
        // The flusher is deferrable: on an idle host it may be late.
        Ok(w) if w.wait_first(Duration::from_secs(5))? => Some(w),
        Ok(_) => {
            if opts.verbose {
                eprintln!("  no stats flush phases (no flush seen in 5 s)");
            }
            None
        }
        Err(e) => {
            if opts.verbose {
                eprintln!("  no stats flush phases ({e})");
            }
            None
        }
    };
    let mut runs = Vec::new();
    for i in 0..opts.repeat {
        lay_out_files(sc, &l)?;
        // Groups first: making them writes the oracle's journal, whose inode
        // may share an inode-table window with the laid-out files (see
        // run::run_once); after the drop that would read it back outside
        // the groups.
        let g = Groups::create(&host.cgroup, sc)?;
        drop_caches()?;
        warm_executable(Path::new(&exe));
        // The device's latency drifts over minutes on a shared host: each
        // run's own, measured just before it, is the model's for that run
        // (where the scratch holds the measurement file).
        let read_miss = if host.buffered_read_ns.is_some() {
            crate::run::measure_buffered_read(scratch)
                .ok()
                .map(|(miss, _)| miss)
        } else {
            None
        };
        let bar = Barriers::start(&l.paths.sock, parties.clone())?;
        let t0 = Instant::now();
        let before = read_vmstat()?;
        // Run i of n aims at the phase in the middle of the i-th n-th of
        // the flusher's period (the setup before a run takes about 2.4 s
        // here, which would otherwise step the phase down by 0.4 s a run).
        let aim = watch.as_ref().map(|w| (w, i, opts.repeat));
        let r = run_instances(sc, &g, &bar, &l, &exe, aim, opts.run_timeout);
        let after = read_vmstat()?;
        let wall = t0.elapsed().as_secs_f64();
        drop(bar);
        let (mut m, start) = r?;
        if let Some(ns) = read_miss {
            m.insert(BUFFERED_READ.into(), ns as f64 / 1e9);
        }
        if let Some(w) = &watch {
            if let Some(p) = crate::statsflush::phase_after(&w.flushes()?, start) {
                m.insert(STATS_FLUSH_PHASE.into(), p as f64 / 1e9);
            }
        }
        g.read(&mut m)?;
        // tmpfs pages stay charged to the group until their file goes.
        for f in sc.files.iter().filter(|f| f.fs == FileFs::Tmpfs) {
            let _ = fs::remove_file(l.paths.tmpfs.join(&f.name));
        }
        drop(g);
        m.extend(crate::cgroup::vmstat_delta(&before, &after));
        m.insert("elapsed_s".into(), wall);
        add_per_op(&mut m);
        if opts.verbose {
            eprintln!(
                "  run {}/{}: {wall:.1}s, pswpout {} pswpin {} pgmajfault {} oom_kill {}, first stats flush at {}",
                i + 1,
                opts.repeat,
                m["vmstat.pswpout"],
                m["vmstat.pswpin"],
                m["vmstat.pgmajfault"],
                m["oom_kill"],
                m.get(STATS_FLUSH_PHASE).map_or("-".into(), |s| format!("{s:.3}s"))
            );
        }
        runs.push(m);
    }
    Ok(runs)
}

/// The run's counter of when the first periodic memcg stats flush came
/// after the start, in s (statsflush::phase_after); the model runs that
/// phase.
pub const STATS_FLUSH_PHASE: &str = "stats_flush_phase_s";

/// The run's counter of the host's buffered 4 KiB read miss, in s, measured
/// just before the run (run::measure_buffered_read): the model's device
/// latency for that run.
pub const BUFFERED_READ: &str = "buffered_read_s";

/// The run's counter of its own buffered 4 KiB read misses' mean
/// duration before memory pressure, in s (exec::read_miss_summary, over
/// every process): the device as the run's reads met it up to the first
/// limit, which the model takes for that run
/// when there are READ_MISS_MIN_COUNT of them (the probe before the run,
/// BUFFERED_READ, otherwise).
pub const READ_MISS: &str = "read_miss_s";

/// The number of read misses READ_MISS averages.
pub const READ_MISSES: &str = "read_misses";

/// The run's counter of its buffered 4 KiB read misses' mean duration
/// after memory pressure began, in s, every one of them: the device plus
/// each miss's share of limit reclaim. Both sides report it (the model's
/// ScenarioReport), so that the clock under pressure is compared, not set.
pub const PRESSURE_READ_MISS: &str = "pressure_read_miss_s";

/// The number of read misses PRESSURE_READ_MISS averages.
pub const PRESSURE_READ_MISSES: &str = "pressure_read_misses";

/// Fewer misses than this leave the model the probe's latency (a process
/// counts those before pressure, at most exec::READ_MISS_CAP a step).
pub const READ_MISS_MIN_COUNT: f64 = 256.0;

/// The run's counter of when a charge first met a scenario group's limit
/// (memory.failcnt's first count, of any group, polled every few ms), in
/// s from the start: when limit reclaim began, the other end of the
/// flush phase.
pub const FIRST_LIMIT: &str = "first_limit_s";

/// Starts every process instance in its group, waits for them (and for
/// their unwaited forks to leave the groups); the per-process kill counts,
/// and when they started (CLOCK_MONOTONIC ns).
fn run_instances(
    sc: &Scenario,
    g: &Groups,
    bar: &Barriers,
    l: &Layout,
    exe: &std::ffi::OsStr,
    aim: Option<(&crate::statsflush::FlushWatch, u32, u32)>,
    timeout: Duration,
) -> Result<(BTreeMap<String, f64>, u64), String> {
    let mut kids: Vec<(usize, Child, std::thread::JoinHandle<String>)> = Vec::new();
    let mut m = BTreeMap::new();
    // Every process starts when all are spawned, as the model's do at 0
    // (spawning one takes milliseconds; see exec's Op::Fork).
    let gate = exec::StartGate::new()?;
    // Each process instance pinned to a CPU, dealt out in turn.
    let cpus = exec::allowed_cpus();
    let last = *cpus.last().expect("at least one");
    let mut nth = 0;
    for (pi, p) in sc.processes.iter().enumerate() {
        m.insert(format!("killed[{}]", p.name), 0.0);
        for k in 0..p.count {
            let cpu = exec::cpu_for(&cpus, last, nth);
            nth += 1;
            let a = exec::ChildArgs {
                paths: l.paths.clone(),
                process: pi,
                instance: k,
                fork: vec![],
                ident: vec![],
                start_fd: Some(gate.read),
                cpu: Some(cpu),
                cpus: cpus.clone(),
            };
            let mut c = Command::new(exe);
            exec::pin_on_spawn(&mut c, cpu);
            c.args(["oracle", "__scenario-proc"])
                .args(a.to_args())
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped());
            crate::cgroup::enter_on_spawn(&mut c, &[g.dir(&p.cgroup)?.to_path_buf()])?;
            let mut child = c.spawn().map_err(|e| format!("starting {}: {e}", p.name))?;
            let mut err = child.stderr.take().expect("piped");
            let h = std::thread::spawn(move || {
                let mut s = String::new();
                let _ = err.read_to_string(&mut s);
                s
            });
            kids.push((pi, child, h));
        }
    }
    if let Some((w, i, n)) = aim {
        let at = crate::statsflush::aimed_start(&w.flushes()?, exec::monotonic_ns(), i, n);
        // Spin, every CPU, rather than sleep: the flusher's timer is
        // deferrable, and idle CPUs would hold it until the run woke them
        // (a 1.7 s sleep measured the flush 0.003-0.036 s after the start).
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        std::thread::scope(|s| {
            for _ in 0..cpus {
                s.spawn(|| {
                    while exec::monotonic_ns() < at {
                        std::hint::spin_loop();
                    }
                });
            }
        });
    }
    drop(gate);
    let t0 = exec::monotonic_ns();
    let deadline = Instant::now() + timeout;
    let mut errors = Vec::new();
    let mut left: Vec<_> = kids.into_iter().map(Some).collect();
    let mut first_limit: Option<u64> = None;
    while left.iter().any(Option::is_some) {
        if first_limit.is_none() && g.failcnt() > 0 {
            first_limit = Some(exec::monotonic_ns());
        }
        if Instant::now() > deadline {
            return Err(format!(
                "the scenario ran past {}s (--timeout); killed",
                timeout.as_secs()
            ));
        }
        for slot in left.iter_mut() {
            let Some((pi, c, _)) = slot.as_mut() else {
                continue;
            };
            let pi = *pi;
            let Some(st) = c.try_wait().map_err(|e| e.to_string())? else {
                continue;
            };
            let (_, _, h) = slot.take().expect("some");
            let stderr = h.join().unwrap_or_default();
            let name = &sc.processes[pi].name;
            if st.signal() == Some(libc::SIGKILL) {
                *m.get_mut(&format!("killed[{name}]")).expect("inserted") += 1.0;
                bar.broken.store(true, Ordering::Relaxed);
            } else if !st.success() {
                bar.broken.store(true, Ordering::Relaxed);
                errors.push(format!(
                    "process {name}: {st}: {}",
                    stderr.lines().last().unwrap_or("").trim()
                ));
            }
        }
        std::thread::sleep(Duration::from_millis(if first_limit.is_none() {
            2
        } else {
            20
        }));
    }
    if let Some(t) = first_limit {
        m.insert(FIRST_LIMIT.into(), t.saturating_sub(t0) as f64 / 1e9);
    }
    while g.procs_left() > 0 {
        if Instant::now() > deadline {
            return Err(format!(
                "forked workers ran past {}s (--timeout); killed",
                timeout.as_secs()
            ));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    if !errors.is_empty() {
        return Err(errors.join("; "));
    }
    add_done_lines(sc, &bar.done.lock().expect("not poisoned"), t0, &mut m);
    Ok((m, t0))
}

/// Counters a duration-bound run is compared on per operation: its totals
/// follow throughput, which the model's device sets.
pub const PER_OP: &[&str] = &[
    "vmstat.pgpgin",
    "vmstat.workingset_refault_file",
    "vmstat.workingset_activate_file",
    "vmstat.pgsteal_file",
    "vmstat.pgmajfault",
];

/// `per_op.COUNTER` for each of [`PER_OP`], over every process's `ops`
/// (none when the scenario has no kv_get operations). Both sides call it.
pub fn add_per_op(m: &mut BTreeMap<String, f64>) {
    let ops: f64 = m
        .iter()
        .filter(|(k, _)| k.starts_with("ops["))
        .map(|(_, v)| *v)
        .sum();
    if ops <= 0.0 {
        return;
    }
    for k in PER_OP {
        if let Some(v) = m.get(*k).copied() {
            m.insert(format!("per_op.{k}"), v / ops);
        }
    }
}

/// `ops[PROCESS]` (kv_get operations of its instances and forked children)
/// and `start_s[NAME]` / `end_s[NAME]` (from the start of the run) of each
/// instance and child that finished, from their "done" lines, under the
/// model report's names.
fn add_done_lines(sc: &Scenario, lines: &[String], t0: u64, m: &mut BTreeMap<String, f64>) {
    for p in &sc.processes {
        m.insert(format!("ops[{}]", p.name), 0.0);
    }
    // (count, summed ns) of the misses before pressure and under it.
    let (mut pre, mut post) = ((0u64, 0u64), (0u64, 0u64));
    let add = |n: &str, ns: &str, to: &mut (u64, u64)| {
        if let (Ok(n), Ok(ns)) = (n.parse::<u64>(), ns.parse::<u64>()) {
            to.0 += n;
            to.1 += ns;
        }
    };
    for l in lines {
        let f: Vec<&str> = l.split_whitespace().collect();
        // After END, pairs that later versions of the line appended: the
        // misses before pressure, those under it, the CPU times.
        let [name, ops, start, end, ref rest @ ..] = f[..] else {
            continue;
        };
        let (Ok(ops), Ok(start), Ok(end), true) = (
            ops.parse::<u64>(),
            start.parse::<u64>(),
            end.parse::<u64>(),
            matches!(rest.len(), 0 | 2 | 4 | 6),
        ) else {
            continue;
        };
        if let [n, ns, ..] = rest {
            add(n, ns, &mut pre);
        }
        if let [_, _, pn, pns, ..] = rest {
            add(pn, pns, &mut post);
        }
        if let [_, _, _, _, st, ut] = rest {
            if let (Ok(st), Ok(ut)) = (st.parse::<u64>(), ut.parse::<u64>()) {
                m.insert(format!("stime_s[{name}]"), st as f64 / 1e9);
                m.insert(format!("utime_s[{name}]"), ut as f64 / 1e9);
            }
        }
        let proc_name = name.split('[').next().unwrap_or(name);
        if let Some(v) = m.get_mut(&format!("ops[{proc_name}]")) {
            *v += ops as f64;
        }
        m.insert(
            format!("start_s[{name}]"),
            start.saturating_sub(t0) as f64 / 1e9,
        );
        m.insert(
            format!("end_s[{name}]"),
            end.saturating_sub(t0) as f64 / 1e9,
        );
    }
    for ((n, ns), count, mean) in [
        (pre, READ_MISSES, READ_MISS),
        (post, PRESSURE_READ_MISSES, PRESSURE_READ_MISS),
    ] {
        if n > 0 {
            m.insert(count.into(), n as f64);
            m.insert(mean.into(), ns as f64 / n as f64 / 1e9);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use foliosim_workload::scenario::{Cgroup, FileSpec, Process, Thread};

    #[test]
    fn done_lines_give_ops_times_and_per_op_counters() {
        let mut sc = Scenario::default();
        for n in ["ycsb", "forker"] {
            sc.processes.push(Process {
                name: n.into(),
                count: 1,
                ..Default::default()
            });
        }
        let lines = vec![
            "ycsb[0] 300 1000000100 3000000100".to_string(),
            "forker[0]/fork@26[1] 100 1500000100 2000000100".to_string(),
            "reader[0] 0 1000000100 2000000100 300 15000000".to_string(),
            "reader[1] 0 1000000100 2000000100 100 7000000".to_string(),
            "reader[2] 0 1000000100 2000000100 0 0 200 14000000".to_string(),
            "reader[3] 0 1000000100 2000000100 0 0 50 1000000 250000000 40000000".to_string(),
            "garbled".to_string(),
            "ycsb[1] x 1 2".to_string(),
        ];
        let mut m = BTreeMap::new();
        m.insert("vmstat.pgpgin".to_string(), 800.0);
        add_done_lines(&sc, &lines, 100, &mut m);
        assert_eq!(m["ops[ycsb]"], 300.0);
        assert_eq!(m["ops[forker]"], 100.0);
        assert_eq!(m["start_s[ycsb[0]]"], 1.0);
        assert_eq!(m["end_s[ycsb[0]]"], 3.0);
        assert_eq!(m["end_s[forker[0]/fork@26[1]]"], 2.0);
        assert!(!m.contains_key("end_s[ycsb[1]]"));
        // Read misses are pooled over processes: 22 ms over 400.
        assert_eq!(m[READ_MISSES], 400.0);
        assert!((m[READ_MISS] - 55e-6).abs() < 1e-12, "{}", m[READ_MISS]);
        // Those under pressure apart: 15 ms over 250.
        assert_eq!(m[PRESSURE_READ_MISSES], 250.0);
        assert!((m[PRESSURE_READ_MISS] - 60e-6).abs() < 1e-12);
        // The process's CPU time, where its line has it.
        assert_eq!(m["stime_s[reader[3]]"], 0.25);
        assert_eq!(m["utime_s[reader[3]]"], 0.04);
        assert!(!m.contains_key("stime_s[reader[2]]"));
        add_per_op(&mut m);
        assert_eq!(m["per_op.vmstat.pgpgin"], 2.0);
        // No operations: no per-op counters.
        let mut z = BTreeMap::new();
        z.insert("ops[a]".to_string(), 0.0);
        z.insert("vmstat.pgpgin".to_string(), 8.0);
        add_per_op(&mut z);
        assert!(!z.contains_key("per_op.vmstat.pgpgin"));
    }

    #[test]
    fn a_case_may_ask_for_more_runs() {
        assert_eq!(min_repeat("# about: x\n[machine]\n", "s.toml"), Ok(0));
        assert_eq!(min_repeat("# about: x\n# repeat: 9\n", "s.toml"), Ok(9));
        assert_eq!(min_repeat("# repeat: 5 (noisy)\n", "s.toml"), Ok(5));
        for bad in ["nine", "0", "100", ""] {
            let e = min_repeat(&format!("# about: x\n\n#repeat: {bad}\n"), "s.toml").unwrap_err();
            assert_eq!(
                e,
                format!("s.toml:3: repeat: '{bad}' is not a count of runs from 1 to 99")
            );
        }
    }

    #[test]
    fn hostile_names_are_refused() {
        for n in ["", "a/b", "..", ".", "-rf", "/etc/passwd", "x\ny"] {
            assert!(check_name("file", n).is_err(), "{n:?}");
        }
        check_name("file", "data.db").unwrap();
        let mut sc = Scenario {
            file: "s.toml".into(),
            ..Default::default()
        };
        sc.files.push(FileSpec {
            name: "../../etc/shadow".into(),
            line: 7,
            size: 4096,
            ..Default::default()
        });
        let e = check_safe(&sc).unwrap_err();
        assert!(
            e.starts_with("s.toml:7: file '../../etc/shadow': a name, not a path"),
            "{e}"
        );
        sc.files[0].name = "ok".into();
        sc.cgroups.push(Cgroup {
            path: "a/../../system.slice".into(),
            line: 3,
            ..Default::default()
        });
        let e = check_safe(&sc).unwrap_err();
        assert!(
            e.starts_with("s.toml:3: cgroup 'a/../../system.slice'"),
            "{e}"
        );
        sc.cgroups[0].path = "a".into();
        sc.processes.push(Process {
            name: "p".into(),
            count: 1,
            threads: vec![Thread {
                count: 1,
                steps: vec![Step {
                    line: 12,
                    id: 0,
                    op: Op::Loop {
                        count: Some(1),
                        duration_ns: None,
                        steps: vec![Step {
                            line: 13,
                            id: 1,
                            op: Op::Fsync { file: "-x".into() },
                        }],
                    },
                }],
            }],
            ..Default::default()
        });
        let e = check_safe(&sc).unwrap_err();
        assert!(e.starts_with("s.toml:13: file '-x': a leading '-'"), "{e}");
    }

    /// A scenario file "s.toml" declaring `cg`.
    fn scenario_with(cg: Cgroup) -> Scenario {
        Scenario {
            file: "s.toml".into(),
            cgroups: vec![cg],
            ..Default::default()
        }
    }

    #[test]
    fn flat_keyed_files_read_by_whole_key() {
        let oc = "oom_kill_disable 1\nunder_oom 0\noom_kill 3\n";
        assert_eq!(flat_key(oc, "oom_kill"), Some(3));
        assert_eq!(flat_key("low 0\nhigh 0\nmax 17\n", "max"), Some(17));
        assert_eq!(flat_key("low 0\n", "max"), None);
    }

    #[test]
    fn v2_knobs_and_other_hosts_skip_with_a_reason() {
        let h = crate::cases::fake_host();
        let mut sc = scenario_with(Cgroup {
            path: "db".into(),
            line: 4,
            high: Some(1 << 20),
            ..Default::default()
        });
        assert_eq!(
            skip_reason(&sc, &h).unwrap(),
            "s.toml:4: cgroup 'db': memory.high is cgroup v2 only; this host has v1"
        );
        sc.cgroups[0].high = None;
        sc.machine.sysctl = vec![("kernel.core_pattern".into(), "|x".into())];
        assert!(skip_reason(&sc, &h)
            .unwrap()
            .starts_with("sysctl kernel.core_pattern"));
        sc.machine.sysctl.clear();
        sc.machine.swap = Some("nvme:1G".into());
        assert!(skip_reason(&sc, &h).unwrap().starts_with("swap 'nvme:1G'"));
        sc.machine.swap = Some("disk:1G".into());
        let mut h3 = h.clone();
        h3.read_ahead_path = PathBuf::new();
        assert!(skip_reason(&sc, &h3)
            .unwrap()
            .starts_with("disk swap: the scratch"));
        let mut h2 = h.clone();
        h2.is_root = false;
        assert!(skip_reason(&sc, &h2).unwrap().starts_with("needs root"));
    }

    #[test]
    fn v2_hosts_take_v2_knobs_and_skip_v1_ones() {
        let mut h = crate::cases::fake_host();
        h.cgroup = CgroupFlavor::V2 {
            mount: "/sys/fs/cgroup".into(),
        };
        let mut sc = scenario_with(Cgroup {
            path: "db".into(),
            line: 4,
            high: Some(1 << 20),
            swap_max: Some(0),
            oom_group: true,
            ..Default::default()
        });
        assert_eq!(skip_reason(&sc, &h), None);
        sc.cgroups[0].swappiness = Some(10);
        assert_eq!(
            skip_reason(&sc, &h).unwrap(),
            "s.toml:4: cgroup 'db': memory.swappiness is cgroup v1 only; this host has v2"
        );
        sc.cgroups[0].swappiness = None;
        // The machine's swappiness is vm.swappiness there: no skip.
        sc.machine.swappiness = Some(140);
        assert_eq!(skip_reason(&sc, &h), None);
        // A process beside child groups: v2 has no internal processes.
        sc.cgroups.push(Cgroup {
            path: "db/shard".into(),
            line: 9,
            ..Default::default()
        });
        sc.processes.push(Process {
            name: "app".into(),
            line: 12,
            cgroup: "db".into(),
            count: 1,
            ..Default::default()
        });
        assert_eq!(
            skip_reason(&sc, &h).unwrap(),
            "s.toml:12: process 'app' runs in cgroup 'db', which has the child group 'db/shard': cgroup v2 puts processes in leaf groups only"
        );
        sc.processes[0].cgroup = "db/shard".into();
        assert_eq!(skip_reason(&sc, &h), None);
    }

    #[test]
    fn v2_parents_sum_their_childrens_fresher_events() {
        let mut read = vec![
            (
                "a/x".to_string(),
                BTreeMap::from([("pgmajfault".to_string(), 70u64)]),
            ),
            (
                "a/y".to_string(),
                BTreeMap::from([("pgmajfault".to_string(), 50u64)]),
            ),
        ];
        // A stale parent: the children's sum.
        let mut a = BTreeMap::from([
            ("pgmajfault".to_string(), 90u64),
            ("anon".to_string(), 4096u64),
        ]);
        children_events("a", &read, &mut a);
        assert_eq!(a["pgmajfault"], 120);
        assert_eq!(a["anon"], 4096, "sizes are not summed");
        // The root: only direct children count (a, not a's children again).
        read.push(("a".to_string(), a));
        let mut root = BTreeMap::from([("pgmajfault".to_string(), 100u64)]);
        children_events("", &read, &mut root);
        assert_eq!(root["pgmajfault"], 120);
        // A fresher parent keeps its own.
        let mut root = BTreeMap::from([("pgmajfault".to_string(), 130u64)]);
        children_events("", &read, &mut root);
        assert_eq!(root["pgmajfault"], 130);
    }

    #[test]
    fn swap_specs() {
        assert_eq!(parse_swap(None).unwrap(), SwapSpec::None);
        assert_eq!(
            parse_swap(Some("zram:1G")).unwrap(),
            SwapSpec::Zram(1 << 30)
        );
        assert_eq!(
            parse_swap(Some("disk:8M")).unwrap(),
            SwapSpec::Disk(8 << 20)
        );
        assert!(parse_swap(Some("nvme:1G")).is_err());
        assert!(parse_swap(Some("zram")).is_err());
    }

    #[test]
    fn subtree_events_sum_the_groups_own_figures() {
        // The root's total lags (a stale flush); its own and its children's
        // local figures are summed instead. Sizes keep the total_ figure.
        let leaf = "pgmajfault 100\nworkingset_refault_anon 900\ntotal_pgmajfault 100\ntotal_workingset_refault_anon 900\ntotal_rss 4096\n";
        let mid = "pgmajfault 0\nworkingset_refault_anon 0\ntotal_pgmajfault 40\ntotal_workingset_refault_anon 300\ntotal_rss 4096\n";
        let root = "pgmajfault 1\nworkingset_refault_anon 0\ntotal_pgmajfault 41\ntotal_workingset_refault_anon 300\ntotal_rss 4096\n";
        let mut locals = Vec::new();
        let mut out = Vec::new();
        for (path, text) in [("a/b", leaf), ("a", mid), ("c", mid), ("", root)] {
            let mut stat = parse_total_stat(text).unwrap();
            locals.push((path.to_string(), local_events(text).unwrap()));
            subtree_events(path, &locals, &mut stat);
            out.push(stat);
        }
        assert_eq!(out[0]["pgmajfault"], 100);
        assert_eq!(out[1]["pgmajfault"], 100, "a: its own 0 + a/b's 100");
        assert_eq!(out[1]["workingset_refault_anon"], 900);
        assert_eq!(out[2]["pgmajfault"], 0, "c has nothing under it");
        assert_eq!(out[3]["pgmajfault"], 101);
        assert_eq!(out[3]["workingset_refault_anon"], 900);
        assert_eq!(out[3]["anon"], 4096, "sizes stay total_");
        assert!(
            !out[3].contains_key("pgfault"),
            "absent locally: not made up"
        );
    }

    #[test]
    fn total_stat_is_hierarchical_under_v2_names() {
        let t = "cache 1\nrss 2\nswap 3\nhierarchical_memory_limit 9\ntotal_cache 10\ntotal_rss 20\ntotal_swap 30\ntotal_shmem 5\ntotal_pgmajfault 7\n";
        let m = parse_total_stat(t).unwrap();
        assert_eq!(m["file"], 10);
        assert_eq!(m["anon"], 20);
        assert_eq!(m["swap"], 30);
        assert_eq!(m["shmem"], 5);
        assert_eq!(m["pgmajfault"], 7);
        assert_eq!(m.len(), 5);
    }
}
