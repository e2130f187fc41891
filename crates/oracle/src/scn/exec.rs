//! The real executor of one scenario process instance: the CLI's hidden
//! `foliosim oracle __scenario-proc ...` child, started by the oracle inside
//! the process's cgroup (so every page it touches is charged there from the
//! first). It runs the process's threads with std::thread, touching
//! anonymous and file mappings, reading and writing scratch files, and
//! waits at barriers by asking the oracle (a Unix socket in scratch:
//! "arrived NAME" out, "go" back). Nothing of the scenario is executed as a
//! command: forks re-execute this same program into the same cgroup.

use foliosim_workload::access::{stream_seed, AccessGen};
use foliosim_workload::scenario::{
    Advice, Amount, FadviseStep, FileFs, IoStep, KvGetStep, Madvice, MmapFileStep, Op, Pattern,
    Scenario, Step, TouchStep,
};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant};

const PAGE: u64 = 4096;

/// "1.0.4": a list as one argument.
fn dotted<T: ToString>(v: &[T]) -> String {
    v.iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(".")
}

/// Where a scenario run's things live in scratch, the same for every
/// process of the run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ScratchPaths {
    /// The scenario, as JSON.
    pub spec: PathBuf,
    /// The barrier server's socket.
    pub sock: PathBuf,
    /// The directories of the disk and the tmpfs files.
    pub files: PathBuf,
    pub tmpfs: PathBuf,
}

impl ScratchPaths {
    pub fn under(base: &Path) -> ScratchPaths {
        ScratchPaths {
            spec: base.join("scenario.json"),
            sock: base.join("barrier.sock"),
            files: base.join("files"),
            tmpfs: base.join("tmpfs"),
        }
    }
}

/// What a child is told on its command line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChildArgs {
    pub paths: ScratchPaths,
    pub process: usize,
    pub instance: u32,
    /// A forked worker: thread index, then step indices through loops and
    /// forks down to the Fork step whose steps it runs.
    pub fork: Vec<usize>,
    /// A forked worker's identity for its random streams (the model
    /// driver's: its parent thread's, the fork's line, the fork's count so
    /// far in that thread, the child's index).
    pub ident: Vec<u64>,
    /// A forked worker's start gate: an inherited pipe's read end; the
    /// worker reads it to EOF before its steps (see `Op::Fork`).
    pub start_fd: Option<i32>,
    /// The CPU the process was pinned to before its exec (`pin_on_spawn`);
    /// its step threads and forked workers take the next ones of `cpus`
    /// (the oracle's own) in turn.
    pub cpu: Option<usize>,
    pub cpus: Vec<usize>,
}

impl ChildArgs {
    pub fn to_args(&self) -> Vec<String> {
        let p = &self.paths;
        let mut v = vec![
            "--spec".into(),
            p.spec.display().to_string(),
            "--process".into(),
            self.process.to_string(),
            "--instance".into(),
            self.instance.to_string(),
            "--sock".into(),
            p.sock.display().to_string(),
            "--files".into(),
            p.files.display().to_string(),
            "--tmpfs".into(),
            p.tmpfs.display().to_string(),
        ];
        if let Some(fd) = self.start_fd {
            v.push("--start-fd".into());
            v.push(fd.to_string());
        }
        if let Some(c) = self.cpu {
            v.push("--cpu".into());
            v.push(c.to_string());
            v.push("--cpus".into());
            v.push(dotted(&self.cpus));
        }
        if !self.fork.is_empty() {
            v.push("--fork".into());
            v.push(dotted(&self.fork));
            v.push("--ident".into());
            v.push(dotted(&self.ident));
        }
        v
    }

    pub fn parse(args: &[String]) -> Result<ChildArgs, String> {
        let mut a = ChildArgs::default();
        let mut it = args.iter();
        while let Some(k) = it.next() {
            let v = it
                .next()
                .ok_or_else(|| format!("__scenario-proc: {k} needs a value"))?;
            let num = |v: &str| {
                v.parse::<usize>()
                    .map_err(|_| format!("__scenario-proc: {k}: bad number '{v}'"))
            };
            match k.as_str() {
                "--spec" => a.paths.spec = v.into(),
                "--process" => a.process = num(v)?,
                "--instance" => a.instance = num(v)? as u32,
                "--sock" => a.paths.sock = v.into(),
                "--files" => a.paths.files = v.into(),
                "--tmpfs" => a.paths.tmpfs = v.into(),
                "--fork" => a.fork = v.split('.').map(num).collect::<Result<_, _>>()?,
                "--start-fd" => a.start_fd = Some(num(v)? as i32),
                "--cpu" => a.cpu = Some(num(v)?),
                "--cpus" => a.cpus = v.split('.').map(num).collect::<Result<_, _>>()?,
                "--ident" => {
                    a.ident = v
                        .split('.')
                        .map(|x| num(x).map(|x| x as u64))
                        .collect::<Result<_, _>>()?
                }
                _ => return Err(format!("__scenario-proc: unknown option {k}")),
            }
        }
        if a.paths.spec.as_os_str().is_empty() || a.paths.sock.as_os_str().is_empty() {
            return Err("__scenario-proc: --spec and --sock are required".into());
        }
        Ok(a)
    }
}

/// The stream of page (or block) indices of one step: the workload
/// crate's generators, seeded as the model's driver seeds them (the run's
/// seed, the thread's identity, the step's line), so that both draw the
/// same sequence.
fn access_gen<'a>(
    t: &'a mut ThreadCtx,
    step: &Step,
    pattern: &Pattern,
    n: u64,
) -> Result<&'a mut AccessGen, String> {
    let mut ident = t.ident.clone();
    ident.push(step.id);
    let seed = stream_seed(t.p.seed, &ident);
    // The same step again (a loop): the stream goes on, a sequential pass
    // starts over; a region of another size gets a new stream.
    Ok(match t.gens.entry(step.id) {
        std::collections::hash_map::Entry::Occupied(e) if e.get().len() == n => {
            let g = e.into_mut();
            g.restart();
            g
        }
        e => {
            let g = AccessGen::new(pattern, n, seed)?;
            match e {
                std::collections::hash_map::Entry::Occupied(mut o) => {
                    o.insert(g);
                    o.into_mut()
                }
                std::collections::hash_map::Entry::Vacant(v) => v.insert(g),
            }
        }
    })
}

/// A mapping of the process.
#[derive(Clone, Copy)]
struct Region {
    addr: usize,
    len: usize,
}

struct Proc {
    sc: Scenario,
    args: ChildArgs,
    maps: Mutex<HashMap<String, Region>>,
    seed: u64,
    /// Operations of kv_get steps, all threads (the model's `ops`).
    ops: std::sync::atomic::AtomicU64,
    /// Durations (ns) of this process's buffered 4 KiB preads that missed
    /// the page cache (READ_MISS_FLOOR_NS or longer) before pressure, all
    /// threads.
    read_misses: Mutex<Vec<u32>>,
    /// The count and summed duration of those after pressure, every one:
    /// each also carries its share of limit reclaim (what the model's
    /// clock is compared on, not set from).
    pressure_misses: Mutex<(u64, u64)>,
    /// Its groups' memory.failcnt files (own_failcnt_files).
    failcnt: Vec<PathBuf>,
    /// Set once a charge met one of their limits: misses stop counting.
    pressure: std::sync::atomic::AtomicBool,
    /// Files' `append` cursors mapped so far (append_cursor), by name.
    append: Mutex<HashMap<String, &'static std::sync::atomic::AtomicU64>>,
    /// kv_get's LevelDB block cache per file, shared by the threads as
    /// one DB instance's is (the model driver's Proc::block_caches).
    block_caches: Mutex<HashMap<String, foliosim_workload::lsm::BlockCache>>,
}

pub use foliosim_workload::scenario::READ_MISS_FLOOR_NS;

/// The misses read_miss_summary() looks at are those before memory
/// pressure: until a charge first meets a limit of the process's group or
/// its ancestors (memory.failcnt), a miss is the device, the syscall and
/// the page's allocation; later ones also carry reclaim, which the model
/// charges on its own. All of them, not the first few: the host's device
/// speed drifts within a run, and the model's clock must match the whole
/// stretch up to the first limit. At most this many per read step.
pub const READ_MISS_CAP: usize = 1 << 16;

/// The group's limit is looked at every this many misses (a read of
/// memory.failcnt costs a few us; a miss 40-80 us).
const PRESSURE_CHECK_EVERY: usize = 32;

/// The count and summed duration of the read misses given (those before
/// pressure), leaving out those over 3x their median (a miss whose charge
/// ran limit reclaim also takes the reclaim's time). The run's device
/// latency as its own reads met it.
pub fn read_miss_summary(d: &mut [u32]) -> (u64, u64) {
    if d.is_empty() {
        return (0, 0);
    }
    d.sort_unstable();
    let cap = d[d.len() / 2] as u64 * 3;
    d.iter()
        .map(|&x| x as u64)
        .take_while(|&x| x <= cap)
        .fold((0, 0), |(n, s), x| (n + 1, s + x))
}

/// The memory.failcnt files of this process's memory cgroup and its
/// ancestors below the v1 hierarchy's root, from /proc/self/cgroup ("N:
/// memory:/a/b"). Empty where there is no v1 memory controller line.
fn own_failcnt_files(proc_cgroup: &str, mount: &Path) -> Vec<PathBuf> {
    let Some(path) = proc_cgroup.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (_, ctl, path) = (f.next()?, f.next()?, f.next()?);
        ctl.split(',').any(|c| c == "memory").then_some(path)
    }) else {
        return Vec::new();
    };
    let mut v = Vec::new();
    let mut p = Path::new(path.trim());
    while let Ok(rel) = p.strip_prefix("/") {
        if rel.as_os_str().is_empty() {
            break;
        }
        v.push(mount.join(rel).join("memory.failcnt"));
        p = match p.parent() {
            Some(q) => q,
            None => break,
        };
    }
    v
}

/// Whether a charge has met a limit of this process's groups.
fn under_pressure(files: &[PathBuf]) -> bool {
    files.iter().any(|f| {
        std::fs::read_to_string(f)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .is_some_and(|n| n > 0)
    })
}

/// CLOCK_MONOTONIC in ns: the oracle and its children read the same clock.
pub(crate) fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The name the model's report gives this process instance or forked
/// child: "NAME[i]", "NAME[i]/fork@LINE[j]" (ScenarioReport's processes).
fn report_name(sc: &Scenario, a: &ChildArgs) -> String {
    let mut n = format!("{}[{}]", sc.processes[a.process].name, a.instance);
    // A fork child's ident: its parent thread's four numbers, then
    // (fork step's id, fork sequence, child) for each fork on the way;
    // the name gives the fork step's line, as the model's does.
    if !a.fork.is_empty() {
        for t in a.ident.get(4..).unwrap_or(&[]).chunks(3) {
            if let [id, _, j] = t {
                let line = sc.step_line(a.process, *id).unwrap_or(0);
                n.push_str(&format!("/fork@{line}[{j}]"));
            }
        }
    }
    n
}

/// Tells the oracle this process's figures as it leaves: "done NAME OPS
/// START_NS END_NS MISSES MISS_NS PMISSES PMISS_NS STIME_NS UTIME_NS"
/// (monotonic; the read misses before pressure as read_miss_summary()
/// counts them, then all those after it; the CPU time of all its threads
/// in the kernel and in user space, getrusage()), then waits for its
/// "ok", so that the
/// line is recorded before the exit the oracle waits for. Best effort: the
/// counters are read anyway.
fn report_done(p: &Proc, start_ns: u64) {
    let end = monotonic_ns();
    let Ok(mut s) = UnixStream::connect(&p.args.paths.sock) else {
        return;
    };
    let (misses, miss_ns) = read_miss_summary(&mut p.read_misses.lock().unwrap());
    let (pmisses, pmiss_ns) = *p.pressure_misses.lock().unwrap();
    let (stime, utime) = cpu_times();
    let line = format!(
        "done {} {} {} {} {} {} {} {} {} {}\n",
        report_name(&p.sc, &p.args),
        p.ops.load(std::sync::atomic::Ordering::Relaxed),
        start_ns,
        end,
        misses,
        miss_ns,
        pmisses,
        pmiss_ns,
        stime,
        utime
    );
    if s.write_all(line.as_bytes()).is_ok() {
        let _ = s.set_read_timeout(Some(std::time::Duration::from_secs(2)));
        let _ = BufReader::new(s).read_line(&mut String::new());
    }
}

/// This process's CPU time so far, all threads: (system, user) in ns.
fn cpu_times() -> (u64, u64) {
    // SAFETY: rusage is plain integers, valid when zeroed.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: getrusage() only writes the struct it is given.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return (0, 0);
    }
    let ns = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    (ns(ru.ru_stime), ns(ru.ru_utime))
}

struct ThreadCtx<'a> {
    p: &'a Proc,
    /// Who the thread is, for its streams' seeds (as the model's driver).
    ident: Vec<u64>,
    gens: HashMap<u64, AccessGen>,
    /// Forks this thread made so far.
    forks: u64,
    /// Connection to the oracle's barrier coordinator, opened on first use.
    sock: Option<(UnixStream, BufReader<UnixStream>)>,
    /// Where this thread's steps sit (thread index, step indices), for forks.
    path: Vec<usize>,
    /// Files this thread has open, by name and O_DIRECT, kept across its
    /// steps as the model driver's per-thread descriptors are: an open
    /// file's readahead state and fadvise mode carry from step to step.
    fds: HashMap<(String, bool), (File, u64)>,
    /// kv_get steps' table caches by step id, kept across a loop's runs of
    /// the step as the model driver's per-thread `kv` slots are.
    tables: HashMap<u64, foliosim_workload::lsm::TableCache>,
}

enum Flow {
    Next,
    Exit,
}

/// Entry point of `foliosim oracle __scenario-proc ARGS`.
pub fn child_main(args: &[String]) -> Result<(), String> {
    let a = ChildArgs::parse(args)?;
    let text = std::fs::read_to_string(&a.paths.spec)
        .map_err(|e| format!("{}: {e}", a.paths.spec.display()))?;
    let sc: Scenario =
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", a.paths.spec.display()))?;
    let proc_ = sc
        .processes
        .get(a.process)
        .ok_or_else(|| format!("__scenario-proc: no process {}", a.process))?;
    if a.fork.is_empty() && proc_.oom_score_adj != 0 {
        // Inherited by its forks; this process's own setting only.
        std::fs::write("/proc/self/oom_score_adj", proc_.oom_score_adj.to_string())
            .map_err(|e| format!("/proc/self/oom_score_adj: {e}"))?;
    }
    // The model's run seed: the scenario's (the CLI's default 1 without).
    let seed = sc.machine.seed.unwrap_or(1);
    let threads: Vec<(usize, u32, Vec<Step>)> = if a.fork.is_empty() {
        proc_
            .threads
            .iter()
            .enumerate()
            .map(|(i, t)| (i, t.count, t.steps.clone()))
            .collect()
    } else {
        vec![(0, 1, fork_steps(proc_, &a.fork)?)]
    };
    let p = Proc {
        sc: sc.clone(),
        args: a.clone(),
        maps: Mutex::new(HashMap::new()),
        seed,
        ops: std::sync::atomic::AtomicU64::new(0),
        read_misses: Mutex::new(Vec::new()),
        pressure_misses: Mutex::new((0, 0)),
        failcnt: match crate::host::detect_cgroup(
            &std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default(),
            |p| std::fs::read_to_string(p).ok(),
        ) {
            crate::host::CgroupFlavor::V1 { mount } => own_failcnt_files(
                &std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default(),
                &mount,
            ),
            _ => Vec::new(),
        },
        pressure: std::sync::atomic::AtomicBool::new(false),
        append: Mutex::new(HashMap::new()),
        block_caches: Mutex::new(HashMap::new()),
    };
    if let Some(fd) = a.start_fd {
        wait_for_start(fd);
    }
    let start_ns = monotonic_ns();
    let results: Vec<Result<Flow, String>> = std::thread::scope(|s| {
        let mut hs = Vec::new();
        // Step threads on this process's CPU and the next ones in turn.
        let mut nth = 0;
        for (ti, count, steps) in &threads {
            for k in 0..*count {
                let cpu = a.cpu.map(|c| cpu_for(&a.cpus, c, nth));
                nth += 1;
                let p = &p;
                let a = &a;
                let path = if a.fork.is_empty() {
                    vec![*ti]
                } else {
                    a.fork.clone()
                };
                hs.push(s.spawn(move || {
                    if let Some(c) = cpu {
                        pin_this_thread(c)?;
                    }
                    let mut t = ThreadCtx {
                        p,
                        ident: if a.fork.is_empty() {
                            vec![a.process as u64, a.instance as u64, *ti as u64, k as u64]
                        } else {
                            a.ident.clone()
                        },
                        gens: HashMap::new(),
                        forks: 0,
                        sock: None,
                        path,
                        fds: HashMap::new(),
                        tables: HashMap::new(),
                    };
                    let r = run_steps(&mut t, steps);
                    match r {
                        // exit(0) of the whole process, as the step says.
                        Ok(Flow::Exit) => {
                            report_done(p, start_ns);
                            std::process::exit(0)
                        }
                        // At once: the other threads may be waiting at a
                        // barrier this one will never reach.
                        Err(e) => {
                            eprintln!("foliosim oracle __scenario-proc: {e}");
                            std::process::exit(1)
                        }
                        Ok(Flow::Next) => Ok(Flow::Next),
                    }
                }));
            }
        }
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a thread panicked".into())))
            .collect()
    });
    for r in results {
        r?;
    }
    report_done(&p, start_ns);
    Ok(())
}

/// The steps of the Fork at `path` (thread index, then step indices).
fn fork_steps(
    p: &foliosim_workload::scenario::Process,
    path: &[usize],
) -> Result<Vec<Step>, String> {
    let bad = || format!("__scenario-proc: bad --fork path {path:?}");
    let (t, rest) = path.split_first().ok_or_else(bad)?;
    let mut steps = &p.threads.get(*t).ok_or_else(bad)?.steps;
    for (n, i) in rest.iter().enumerate() {
        match &steps.get(*i).ok_or_else(bad)?.op {
            Op::Loop { steps: s, .. } if n + 1 < rest.len() => steps = s,
            Op::Fork { steps: s, .. } => steps = s,
            _ => return Err(bad()),
        }
    }
    Ok(steps.clone())
}

/// The word a writing touch stores at the start of a page (the rest stays
/// as it was: zero on first touch), by page and access number: different
/// on each page and almost never zero, so zram compresses the page rather
/// than storing it as same-filled. run::measure_zram_swap writes the same.
pub fn touch_word(page: u64, i: u64) -> u64 {
    (page + 1) ^ i.wrapping_mul(0x9E37_79B9)
}

fn run_steps(t: &mut ThreadCtx, steps: &[Step]) -> Result<Flow, String> {
    for (i, st) in steps.iter().enumerate() {
        t.path.push(i);
        let r = run_step(t, st);
        t.path.pop();
        let at = |e: String| format!("{}:{}: {e}", t.p.sc.file, st.line);
        if let Flow::Exit = r.map_err(at)? {
            return Ok(Flow::Exit);
        }
    }
    Ok(Flow::Next)
}

fn region(t: &ThreadCtx, map: &str) -> Result<Region, String> {
    t.p.maps
        .lock()
        .unwrap()
        .get(map)
        .copied()
        .ok_or_else(|| format!("no mapping named '{map}' in this process"))
}

/// Accesses an Amount allows: a count, or until a wall-clock deadline.
struct Budget {
    left: Option<u64>,
    until: Option<Instant>,
}

impl Budget {
    fn new(a: &Amount, per_pass: u64) -> Budget {
        match *a {
            Amount::Passes(n) => Budget {
                left: Some(n.saturating_mul(per_pass)),
                until: None,
            },
            Amount::Accesses(n) => Budget {
                left: Some(n),
                until: None,
            },
            Amount::Duration(ns) => Budget {
                left: None,
                until: Some(Instant::now() + Duration::from_nanos(ns)),
            },
        }
    }
    fn take(&mut self, i: u64) -> bool {
        match (&mut self.left, self.until) {
            (Some(0), _) => false,
            (Some(n), _) => {
                *n -= 1;
                true
            }
            // Check the clock every 64 accesses only.
            (None, Some(u)) => !i.is_multiple_of(64) || Instant::now() < u,
            (None, None) => false,
        }
    }
}

/// Where the scenario's `append` cursors live: `append/NAME` in the
/// directory of the spec (the run's scratch base), 8 zero bytes each, laid
/// out before every run.
pub fn append_dir(spec: &Path) -> Result<PathBuf, String> {
    spec.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(|p| p.join("append"))
        .ok_or_else(|| format!("{}: the spec has no directory", spec.display()))
}

/// The shared end of file `name` for `append` writes (O_APPEND's offset,
/// kept inside the file's size): a counter every writer process maps from
/// scratch, as the model's driver keeps one per file.
fn append_cursor(
    t: &ThreadCtx,
    name: &str,
) -> Result<&'static std::sync::atomic::AtomicU64, String> {
    let mut m = t.p.append.lock().unwrap();
    if let Some(c) = m.get(name) {
        return Ok(c);
    }
    let path = append_dir(&t.p.args.paths.spec)?.join(name);
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    // SAFETY: a fresh shared mapping of the 8-byte file; it is never
    // unmapped, so the reference lives as long as the process.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            8,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(format!(
            "{}: mmap: {}",
            path.display(),
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: page-aligned, 8 bytes, only ever accessed atomically.
    let c: &'static std::sync::atomic::AtomicU64 =
        unsafe { &*(ptr as *const std::sync::atomic::AtomicU64) };
    m.insert(name.to_string(), c);
    Ok(c)
}

fn think(ns: u64) {
    if ns > 0 {
        std::thread::sleep(Duration::from_nanos(ns));
    }
}

fn file_path(t: &ThreadCtx, name: &str) -> Result<(PathBuf, u64), String> {
    let f =
        t.p.sc
            .files
            .iter()
            .find(|f| f.name == name)
            .ok_or_else(|| format!("no [[file]] named '{name}'"))?;
    let dir = match f.fs {
        FileFs::Disk => &t.p.args.paths.files,
        FileFs::Tmpfs => &t.p.args.paths.tmpfs,
    };
    Ok((dir.join(&f.name), f.size))
}

/// The thread's open file `name` (opened on first use, then kept; see
/// ThreadCtx::fds): a duplicate descriptor, which shares the open file.
fn thread_file(t: &mut ThreadCtx, name: &str, direct: bool) -> Result<(File, u64), String> {
    let key = (name.to_string(), direct);
    if !t.fds.contains_key(&key) {
        let opened = open(t, name, direct)?;
        t.fds.insert(key.clone(), opened);
    }
    let (f, size) = &t.fds[&key];
    let f = f.try_clone().map_err(|e| format!("dup of '{name}': {e}"))?;
    Ok((f, *size))
}

fn open(t: &ThreadCtx, name: &str, direct: bool) -> Result<(File, u64), String> {
    let (p, size) = file_path(t, name)?;
    let mut o = OpenOptions::new();
    o.read(true).write(true);
    // O_NOFOLLOW: the names were checked, and nothing may swap a link in.
    o.custom_flags(libc::O_NOFOLLOW | if direct { libc::O_DIRECT } else { 0 });
    let f = o.open(&p).map_err(|e| format!("{}: {e}", p.display()))?;
    Ok((f, size))
}

struct AlignedBuf {
    ptr: *mut u8,
    layout: std::alloc::Layout,
}

impl AlignedBuf {
    fn new(len: usize) -> Result<AlignedBuf, String> {
        let layout = std::alloc::Layout::from_size_align(len.max(512), 4096)
            .map_err(|e| format!("bs {len}: {e}"))?;
        // SAFETY: a non-zero size layout.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            return Err(format!("allocating a {len}-byte buffer"));
        }
        // Non-zero data so nothing treats it as zeros.
        // SAFETY: ptr is valid for layout.size() bytes.
        unsafe { std::ptr::write_bytes(ptr, 0x5a, layout.size()) };
        Ok(AlignedBuf { ptr, layout })
    }
    fn slice(&mut self, len: usize) -> &mut [u8] {
        // SAFETY: len <= layout.size(), the buffer is ours.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, len.min(self.layout.size())) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout.
        unsafe { std::alloc::dealloc(self.ptr, self.layout) };
    }
}

fn madvice(a: Madvice) -> libc::c_int {
    match a {
        Madvice::Normal => libc::MADV_NORMAL,
        Madvice::Sequential => libc::MADV_SEQUENTIAL,
        Madvice::Random => libc::MADV_RANDOM,
        Madvice::Willneed => libc::MADV_WILLNEED,
        Madvice::Dontneed => libc::MADV_DONTNEED,
        Madvice::Cold => libc::MADV_COLD,
        Madvice::Pageout => libc::MADV_PAGEOUT,
    }
}

fn fadvice(a: Advice) -> libc::c_int {
    match a {
        Advice::Normal => libc::POSIX_FADV_NORMAL,
        Advice::Sequential => libc::POSIX_FADV_SEQUENTIAL,
        Advice::Random => libc::POSIX_FADV_RANDOM,
        Advice::Willneed => libc::POSIX_FADV_WILLNEED,
        Advice::Dontneed => libc::POSIX_FADV_DONTNEED,
        Advice::Noreuse => libc::POSIX_FADV_NOREUSE,
    }
}

fn barrier(t: &mut ThreadCtx, name: &str) -> Result<(), String> {
    if t.sock.is_none() {
        let s = UnixStream::connect(&t.p.args.paths.sock)
            .map_err(|e| format!("barrier {name}: connecting to the oracle: {e}"))?;
        let r = BufReader::new(s.try_clone().map_err(|e| e.to_string())?);
        t.sock = Some((s, r));
    }
    let (s, r) = t.sock.as_mut().expect("connected");
    s.write_all(format!("arrived {name}\n").as_bytes())
        .map_err(|e| format!("barrier {name}: {e}"))?;
    let mut line = String::new();
    r.read_line(&mut line)
        .map_err(|e| format!("barrier {name}: {e}"))?;
    if line.trim() != "go" {
        return Err(format!("barrier {name}: the oracle said '{}'", line.trim()));
    }
    Ok(())
}

mod steps;
use steps::*;

fn run_step(t: &mut ThreadCtx, st: &Step) -> Result<Flow, String> {
    match &st.op {
        Op::MmapAnon { map, size } => mmap_anon(t, map, size)?,
        Op::MmapFile(s) => mmap_file(t, s)?,
        Op::Touch(s) => touch(t, st, s)?,
        Op::Munmap { map } => munmap(t, map)?,
        Op::Madvise { map, advice } => madvise(t, map, advice)?,
        Op::Io(s) => io(t, st, s)?,
        Op::KvGet(s) => kv_get(t, st, s)?,
        Op::Fsync { file } => {
            let (f, _) = thread_file(t, file, false)?;
            f.sync_all().map_err(|e| format!("fsync '{file}': {e}"))?;
        }
        Op::Fadvise(s) => fadvise(t, s)?,
        Op::Truncate { file, size } => {
            let (f, _) = thread_file(t, file, false)?;
            f.set_len(*size)
                .map_err(|e| format!("ftruncate '{file}': {e}"))?;
        }
        Op::Fio { .. } => return Err("fio steps are not run by the oracle's executor".into()),
        Op::Sleep { ns } => think(*ns),
        Op::Compute { ns, sys: true } => compute_sys(*ns)?,
        Op::Compute { ns, sys: false } => compute_user(*ns),
        Op::Barrier { name } => barrier(t, name)?,
        Op::Loop {
            count,
            duration_ns,
            steps,
        } => return run_loop(t, *count, *duration_ns, steps),
        Op::Fork { count, wait, .. } => fork(t, st, *count, *wait)?,
        Op::Exit => return Ok(Flow::Exit),
    }
    Ok(Flow::Next)
}

/// The CPUs the oracle may place scenario tasks on: its own affinity, read
/// once in the oracle and handed to each child (a pinned child's own
/// affinity is its one CPU).
pub fn allowed_cpus() -> Vec<usize> {
    // SAFETY: sched_getaffinity fills the local zeroed set; CPU_ISSET
    // reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0 {
            let v: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
                .filter(|&c| libc::CPU_ISSET(c, &set))
                .collect();
            if !v.is_empty() {
                return v;
            }
        }
    }
    vec![0]
}

/// Task `i`'s CPU when tasks are dealt out in turn from `from` (the
/// oracle starts at its last allowed CPU, then wraps to the first, the
/// second...): a lone task gets the last one, away from CPU 0, where the
/// oracle's polling and most interrupts land on a small VM.
pub fn cpu_for(cpus: &[usize], from: usize, i: usize) -> usize {
    let n = cpus.len().max(1);
    let start = cpus.iter().position(|&c| c == from).unwrap_or(n - 1);
    cpus.get((start + i) % n).copied().unwrap_or(0)
}

fn set_affinity(cpu: usize) -> std::io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(std::io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET and
    // sched_setaffinity only read and write that local set.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Pins a child to `cpu` before its exec. A task's memory map gains a CPU
/// in mm_cpumask wherever the task runs and keeps it until a flush trims
/// it; reclaim's batched TLB flush (try_to_unmap_flush_dirty(), once per
/// dirty folio paged out) then sends an IPI to every CPU in that mask
/// that is not in lazy TLB mode (an idle CPU on init_mm is not), about
/// 15 us each on this kind of VM, once the scheduler has moved the task
/// (docs/fidelity/scenarios.md, "The TLB flush of a task that moved").
/// The model runs each task on a CPU of its own, so the real runs do too.
pub fn pin_on_spawn(cmd: &mut std::process::Command, cpu: usize) {
    use std::os::unix::process::CommandExt;
    // SAFETY: the closure runs in the forked child and only calls
    // sched_setaffinity, which is async-signal-safe; it allocates nothing.
    unsafe {
        cmd.pre_exec(move || set_affinity(cpu));
    }
}

/// Pins a probe's child to the last allowed CPU, where a lone scenario
/// process runs.
pub fn pin_on_last_cpu(cmd: &mut std::process::Command) {
    let cpus = allowed_cpus();
    pin_on_spawn(cmd, cpus[cpus.len() - 1]);
}

/// Pins the calling thread to `cpu` (Linux applies it to this thread
/// only).
pub fn pin_this_thread(cpu: usize) -> Result<(), String> {
    set_affinity(cpu).map_err(|e| format!("sched_setaffinity(cpu {cpu}): {e}"))
}

/// Blocks until the start gate's write end is closed by the parent (EOF),
/// then closes the read end.
fn wait_for_start(fd: i32) {
    let mut b = [0u8; 16];
    loop {
        // SAFETY: reading into a local buffer from a descriptor this
        // process inherited for this purpose.
        let n = unsafe { libc::read(fd, b.as_mut_ptr().cast(), b.len()) };
        if n == 0
            || (n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted)
        {
            break;
        }
    }
    // SAFETY: the gate's descriptor, used no more.
    unsafe { libc::close(fd) };
}

/// The start gate of `Op::Fork`'s workers: a pipe whose read end the
/// workers inherit and whose write end (close-on-exec, so no worker holds
/// it) the parent closes once every worker is spawned.
pub(crate) struct StartGate {
    pub(crate) read: i32,
    write: i32,
}

impl StartGate {
    pub(crate) fn new() -> Result<StartGate, String> {
        let mut fds = [0i32; 2];
        // SAFETY: pipe2 fills the two-element array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(format!("fork: pipe: {}", std::io::Error::last_os_error()));
        }
        // The read end goes to the workers: not close-on-exec.
        // SAFETY: fcntl on the descriptor just made.
        if unsafe { libc::fcntl(fds[0], libc::F_SETFD, 0) } != 0 {
            let e = std::io::Error::last_os_error();
            // SAFETY: closing the two descriptors just made.
            unsafe {
                libc::close(fds[0]);
                libc::close(fds[1]);
            }
            return Err(format!("fork: fcntl: {e}"));
        }
        Ok(StartGate {
            read: fds[0],
            write: fds[1],
        })
    }
}

impl Drop for StartGate {
    /// Opens the gate: every worker spawned so far starts.
    fn drop(&mut self) {
        // SAFETY: the gate's own descriptors, closed once.
        unsafe {
            libc::close(self.read);
            libc::close(self.write);
        }
    }
}

fn insert_map(t: &ThreadCtx, map: &str, r: Region) -> Result<(), String> {
    let mut m = t.p.maps.lock().unwrap();
    if let Some(old) = m.insert(map.to_string(), r) {
        // A remap of the same name replaces the old mapping.
        // SAFETY: exactly a mapping this process made and held.
        unsafe { libc::munmap(old.addr as *mut _, old.len) };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn read_misses_leave_out_those_that_also_reclaimed() {
        assert_eq!(read_miss_summary(&mut []), (0, 0));
        // Median 50 us: up to 150 us counts; the 400 us one reclaimed.
        let mut d = [60_000, 40_000, 400_000, 50_000, 150_000];
        assert_eq!(read_miss_summary(&mut d), (4, 300_000));
        let mut one = [70_000];
        assert_eq!(read_miss_summary(&mut one), (1, 70_000));
        // Every miss given counts (the caller keeps those before
        // pressure): a device that slowed within the stretch weighs in.
        let mut v = vec![40_000; 3000];
        v.extend([90_000; 1000]);
        assert_eq!(read_miss_summary(&mut v), (4000, 210_000_000));
    }

    #[test]
    fn pressure_is_read_from_the_own_group_and_its_ancestors() {
        let m = Path::new("/sys/fs/cgroup/memory");
        let cg = "12:pids:/x\n7:memory:/foliosim-oracle-1-scn0/mix\n0::/user.slice\n";
        assert_eq!(
            own_failcnt_files(cg, m),
            vec![
                m.join("foliosim-oracle-1-scn0/mix/memory.failcnt"),
                m.join("foliosim-oracle-1-scn0/memory.failcnt"),
            ]
        );
        // A joint mount ("cpu,memory"), the root group, no v1 memory line.
        assert_eq!(
            own_failcnt_files("3:cpu,memory:/a\n", m),
            vec![m.join("a/memory.failcnt")]
        );
        assert!(own_failcnt_files("7:memory:/\n", m).is_empty());
        assert!(own_failcnt_files("0::/user.slice\n", m).is_empty());
        // failcnt files: any count above zero is pressure; a missing file
        // is none.
        let d = std::env::temp_dir().join(format!("fs-failcnt-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let (a, b) = (d.join("a"), d.join("b"));
        std::fs::write(&a, "0\n").unwrap();
        std::fs::write(&b, "0\n").unwrap();
        assert!(!under_pressure(&[a.clone(), b.clone(), d.join("none")]));
        std::fs::write(&b, "3\n").unwrap();
        assert!(under_pressure(&[a, b]));
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn report_names_are_the_model_reports() {
        // Fork steps on lines 13 and 14; the children's idents carry the
        // steps' numbers (1 and 2), their names the lines.
        let text = "[[file]]\nname = \"f\"\nsize = \"1M\"\n\n\
                    [[process]]\nname = \"resident\"\ncount = 2\n\
                    steps = [ { op = \"compute\", time = \"1ms\" } ]\n\
                    [[process]]\nname = \"forker\"\ncount = 2\nsteps = [\n\
                    { op = \"fork\", count = 2, steps = [\n\
                    { op = \"fork\", steps = [ { op = \"compute\", time = \"1ms\" } ] },\n\
                    ] },\n]\n";
        let sc = foliosim_workload::scenario::parse(text, "s.toml").unwrap();
        let mut a =
            ChildArgs::parse(&["--spec".into(), "x".into(), "--sock".into(), "y".into()]).unwrap();
        (a.process, a.instance) = (1, 1);
        assert_eq!(report_name(&sc, &a), "forker[1]");
        // The second child of the outer fork, then the first of the inner.
        a.fork = vec![0, 0];
        a.ident = vec![1, 1, 0, 0, 1, 0, 1];
        assert_eq!(report_name(&sc, &a), "forker[1]/fork@13[1]");
        a.fork = vec![0, 0, 0];
        a.ident.extend([2, 0, 0]);
        assert_eq!(report_name(&sc, &a), "forker[1]/fork@13[1]/fork@14[0]");
    }

    /// A process of an empty scenario whose spec is at `spec`, seed 1.
    fn test_proc(spec: &str) -> Proc {
        Proc {
            sc: Scenario::default(),
            args: ChildArgs::parse(&["--spec".into(), spec.into(), "--sock".into(), "y".into()])
                .unwrap(),
            maps: Mutex::new(HashMap::new()),
            seed: 1,
            ops: std::sync::atomic::AtomicU64::new(0),
            read_misses: Mutex::new(Vec::new()),
            pressure_misses: Mutex::new((0, 0)),
            failcnt: Vec::new(),
            pressure: std::sync::atomic::AtomicBool::new(false),
            append: Mutex::new(HashMap::new()),
            block_caches: Mutex::new(HashMap::new()),
        }
    }

    #[test]
    fn streams_are_the_model_drivers() {
        // The driver's seed for thread (process 0, instance 0, thread 0,
        // copy 0) and the step numbered 5 (whatever its line).
        let seed = stream_seed(1, &[0, 0, 0, 0, 5]);
        let mut a = AccessGen::new(&Pattern::Random, 1000, seed).unwrap();
        let want: Vec<u64> = (0..9).map(|_| a.next_index()).collect();
        let p = test_proc("x");
        let mut t = test_thread(&p);
        let st = Step {
            line: 9,
            id: 5,
            op: Op::Exit,
        };
        let g = access_gen(&mut t, &st, &Pattern::Random, 1000).unwrap();
        let got: Vec<u64> = (0..8).map(|_| g.next_index()).collect();
        assert_eq!(got, want[..8]);
        // Again (a loop): the random stream goes on, not over.
        let g = access_gen(&mut t, &st, &Pattern::Random, 1000).unwrap();
        assert_eq!(g.next_index(), want[8]);
        let mut s = access_gen(
            &mut t,
            &Step {
                line: 9,
                id: 6,
                op: Op::Exit,
            },
            &Pattern::Seq,
            3,
        )
        .unwrap()
        .clone();
        assert_eq!(
            [
                s.next_index(),
                s.next_index(),
                s.next_index(),
                s.next_index()
            ],
            [0, 1, 2, 0]
        );
    }

    /// A process of a scenario with one prefilled disk file `name` of
    /// `size` bytes, written in a fresh directory `dir` (tag: its name).
    fn proc_with_file(tag: &str, name: &str, size: u64) -> (Proc, PathBuf) {
        let d = std::env::temp_dir().join(format!("fs-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(name), vec![0x5au8; size as usize]).unwrap();
        let mut p = test_proc("x");
        p.args.paths.files = d.clone();
        p.sc.files.push(foliosim_workload::scenario::FileSpec {
            name: name.into(),
            line: 1,
            size,
            fs: FileFs::Disk,
            prefill: true,
        });
        (p, d)
    }

    /// Thread 0 of `p`, nothing open yet.
    fn test_thread(p: &Proc) -> ThreadCtx<'_> {
        ThreadCtx {
            p,
            ident: vec![0, 0, 0, 0],
            gens: HashMap::new(),
            forks: 0,
            sock: None,
            path: vec![0],
            fds: HashMap::new(),
            tables: HashMap::new(),
        }
    }

    /// Pages of `f`'s first `pages` resident in the page cache.
    fn resident(f: &File, pages: usize) -> usize {
        // SAFETY: a fresh read-only shared mapping of an open file, only
        // passed to mincore and unmapped here.
        unsafe {
            let len = pages * 4096;
            let p = libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_SHARED,
                f.as_raw_fd(),
                0,
            );
            assert_ne!(p, libc::MAP_FAILED);
            let mut v = vec![0u8; pages];
            assert_eq!(libc::mincore(p, len, v.as_mut_ptr()), 0);
            libc::munmap(p, len);
            v.iter().filter(|&&b| b & 1 != 0).count()
        }
    }

    #[test]
    fn a_thread_keeps_its_files_open_across_steps() {
        // The model driver keeps one open file per thread: its readahead
        // state and fadvise mode outlive a step. Opening afresh per step
        // lost POSIX_FADV_RANDOM before the next read.
        let (p, d) = proc_with_file("fds", "data", 1 << 20);
        let thread = test_thread;
        let step = |id: u64, op| Step {
            line: id as usize,
            id,
            op,
        };
        let advise = |advice| {
            Op::Fadvise(FadviseStep {
                file: "data".into(),
                advice,
                offset: 0,
                len: 0,
            })
        };
        let read = Op::Io(IoStep {
            file: "data".into(),
            pattern: Pattern::Seq,
            write: false,
            bs: 4096,
            amount: Amount::Accesses(1),
            direct: false,
            think_ns: 0,
        });
        // Pages a 4 KiB read at offset 0 leaves cached, with or without
        // POSIX_FADV_RANDOM given in an earlier step.
        let cached_after_read = |random: bool| {
            let mut t = thread(&p);
            let (f, _) = thread_file(&mut t, "data", false).unwrap();
            f.sync_all().unwrap();
            run_step(&mut t, &step(2, advise(Advice::Dontneed))).unwrap();
            let before = resident(&f, 64);
            if random {
                run_step(&mut t, &step(3, advise(Advice::Random))).unwrap();
            }
            run_step(&mut t, &step(4, read.clone())).unwrap();
            // One open file behind every step's descriptor.
            let (g, _) = thread_file(&mut t, "data", false).unwrap();
            use std::io::Seek;
            (&f).seek(std::io::SeekFrom::Start(12345)).unwrap();
            assert_eq!((&g).stream_position().unwrap(), 12345);
            (before, resident(&f, 64))
        };
        let (before, plain) = cached_after_read(false);
        let (_, random) = cached_after_read(true);
        let _ = std::fs::remove_dir_all(&d);
        // Where the cache could not be dropped (tmpfs) there is nothing
        // to tell apart.
        if before == 0 {
            assert!(plain > 1, "readahead without advice: {plain} pages");
            assert_eq!(random, 1, "FADV_RANDOM given in an earlier step");
        }
    }

    #[test]
    fn a_kv_get_step_keeps_its_table_cache_across_runs() {
        // As the model driver's per-thread `kv` slot: a loop's next run of
        // the step finds its tables open (no footer and index reread).
        let (p, d) = proc_with_file("kv", "db", 2 << 20);
        let mut t = test_thread(&p);
        let get = |table_cache| Step {
            line: 3,
            id: 7,
            op: Op::KvGet(KvGetStep {
                file: "db".into(),
                keys: 600,
                record: 227,
                table_size: 2 << 20,
                table_cache,
                block_cache: 0,
                level_base: 10 << 20,
                records: 1,
                pattern: Pattern::Random,
                amount: Amount::Accesses(5),
                think_ns: 0,
            }),
        };
        run_step(&mut t, &get(4)).unwrap();
        // The one table was opened and is still open for the next run.
        let c = t.tables.get_mut(&7).expect("kept after the step");
        assert_eq!(c.capacity(), 4);
        assert!(c.get(0), "table 0 open from the first run");
        // Another capacity at the same step starts afresh.
        run_step(&mut t, &get(2)).unwrap();
        assert_eq!(t.tables[&7].capacity(), 2);
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn append_cursors_are_shared_through_scratch() {
        // Two processes' Procs map the same 8-byte file: an append by one
        // moves the other's end of file (O_APPEND's shared offset).
        let d = std::env::temp_dir().join(format!("fs-append-{}", std::process::id()));
        let spec = d.join("scenario.json");
        std::fs::create_dir_all(append_dir(&spec).unwrap()).unwrap();
        std::fs::write(append_dir(&spec).unwrap().join("log"), [0u8; 8]).unwrap();
        let spec = spec.display().to_string();
        let (p1, p2) = (test_proc(&spec), test_proc(&spec));
        let t = test_thread;
        let (t1, t2) = (t(&p1), t(&p2));
        use std::sync::atomic::Ordering::Relaxed;
        let c1 = append_cursor(&t1, "log").unwrap();
        assert_eq!(c1.fetch_add(4096, Relaxed), 0);
        let c2 = append_cursor(&t2, "log").unwrap();
        assert_eq!(c2.fetch_add(4096, Relaxed), 4096);
        assert_eq!(c1.load(Relaxed), 8192);
        // The same process maps it once.
        assert!(std::ptr::eq(c1, append_cursor(&t1, "log").unwrap()));
        let e = append_cursor(&t1, "nope").unwrap_err();
        assert!(e.contains("append/nope"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn budget_counts_passes_and_accesses() {
        let mut b = Budget::new(&Amount::Passes(2), 5);
        assert_eq!((0..20).filter(|&i| b.take(i)).count(), 10);
        let mut b = Budget::new(&Amount::Accesses(3), 5);
        assert_eq!((0..20).filter(|&i| b.take(i)).count(), 3);
    }

    #[test]
    fn tasks_are_dealt_out_from_the_last_cpu() {
        // A lone process on the last CPU; the next ones wrap to the first.
        assert_eq!(cpu_for(&[0, 1], 1, 0), 1);
        assert_eq!(cpu_for(&[0, 1], 1, 1), 0);
        assert_eq!(cpu_for(&[0, 1], 1, 2), 1);
        // CPU ids, not indices: an oracle under taskset -c 2,5,7.
        assert_eq!(cpu_for(&[2, 5, 7], 7, 0), 7);
        assert_eq!(cpu_for(&[2, 5, 7], 7, 1), 2);
        assert_eq!(cpu_for(&[2, 5, 7], 5, 2), 2);
        // A CPU not in the list starts from the last.
        assert_eq!(cpu_for(&[2, 5, 7], 3, 0), 7);
        assert!(!allowed_cpus().is_empty());
    }

    fn cpus_allowed(status: &str) -> String {
        status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .expect("a Cpus_allowed_list line")
            .trim()
            .to_string()
    }

    #[test]
    fn a_spawned_child_and_a_thread_run_on_their_one_cpu() {
        let cpus = allowed_cpus();
        let last = *cpus.last().unwrap();
        let mut c = std::process::Command::new("cat");
        c.arg("/proc/self/status");
        pin_on_spawn(&mut c, last);
        let out = c.output().expect("cat runs");
        assert!(out.status.success());
        assert_eq!(
            cpus_allowed(&String::from_utf8_lossy(&out.stdout)),
            last.to_string()
        );
        let before = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        let first = cpus[0];
        let seen = std::thread::spawn(move || {
            pin_this_thread(first).unwrap();
            std::fs::read_to_string("/proc/thread-self/status").unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(cpus_allowed(&seen), first.to_string());
        // The calling thread is left as it was.
        let mine = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        assert_eq!(cpus_allowed(&mine), cpus_allowed(&before));
        // A CPU this host lacks (or past the set's size): an error.
        for bad in [1023, 1 << 20] {
            assert!(pin_this_thread(bad)
                .unwrap_err()
                .starts_with(&format!("sched_setaffinity(cpu {bad}): ")));
        }
    }

    #[test]
    fn child_args_round_trip() {
        let a = ChildArgs {
            paths: ScratchPaths {
                spec: "/s/x.json".into(),
                sock: "/s/sock".into(),
                files: "/s/files".into(),
                tmpfs: "/s/tmpfs".into(),
            },
            process: 2,
            instance: 3,
            fork: vec![0, 4, 1],
            ident: vec![1, 0, 0, 0, 12, 0, 1],
            start_fd: Some(7),
            cpu: Some(1),
            cpus: vec![0, 1, 3],
        };
        assert_eq!(ChildArgs::parse(&a.to_args()).unwrap(), a);
        let b = ChildArgs {
            start_fd: None,
            cpu: None,
            cpus: vec![],
            ..a
        };
        assert_eq!(ChildArgs::parse(&b.to_args()).unwrap(), b);

        // The start gate holds a reader until the gate drops.
        let gate = StartGate::new().unwrap();
        let fd = gate.read;
        let (tx, rx) = std::sync::mpsc::channel();
        // A dup, as a spawned worker has its own copy of the read end.
        // SAFETY: dup of a live descriptor.
        let mine = unsafe { libc::dup(fd) };
        let h = std::thread::spawn(move || {
            wait_for_start(mine);
            tx.send(()).unwrap();
        });
        assert!(rx
            .recv_timeout(std::time::Duration::from_millis(200))
            .is_err());
        drop(gate);
        rx.recv_timeout(std::time::Duration::from_secs(5)).unwrap();
        h.join().unwrap();
        assert!(ChildArgs::parse(&["--spec".into()])
            .unwrap_err()
            .contains("needs a value"));
        assert!(ChildArgs::parse(&["--bogus".into(), "1".into()])
            .unwrap_err()
            .contains("unknown option"));
    }
}
