//! `foliosim record`: runs a command (execve of its argv, never a shell)
//! in a fresh memory cgroup of its own, records its tasks' syscalls,
//! faults and page-cache events from a tracing instance of its own, and
//! writes a foliosim-trace v1 (docs/trace-format.md) whose header holds
//! the run's real counters: a recording is also a measurement.
//!
//! Every host change is journaled before it is made (the scratch files,
//! the tracefs mount inside scratch, the instance, the cgroup), so that
//! `foliosim oracle restore` undoes what a kill -9 of the recorder left.
//! Events are read from the instance's trace_pipe while the command runs;
//! what the ring buffer lost (per-CPU `overrun`, `dropped events`) is
//! counted and reported, never dropped silently.

pub mod convert;
pub mod residency;

use crate::cgroup::{read_vmstat, vmstat_delta, MemCgroup};
use crate::journal::{self, Kind, Token};
use crate::run::Scratch;
use crate::scn::hostcfg::ScratchMount;
use convert::{Conv, Procfs, Stat};
use std::collections::BTreeMap;
use std::ffi::{CString, OsString};
use std::fs::{self, File};
use std::io::{BufWriter, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub struct RecordOpts {
    /// The command and its arguments (argv; argv[0] looked up in PATH).
    pub cmd: Vec<OsString>,
    pub memcg_limit: Option<u64>,
    pub out: PathBuf,
    pub scratch: PathBuf,
    /// The instance's ring buffer per CPU.
    pub buffer_kb: u64,
    /// Where to keep the tracer's own text (ftrace's format), every line
    /// the converter read: what a bug report about a trace needs.
    pub raw: Option<PathBuf>,
}

/// What a recording measured and met.
#[derive(Debug, Default)]
pub struct Recording {
    /// `wall_s`, `memcg.NAME` (memory.stat, v2 names), `vmstat.NAME`
    /// (deltas), `io.rbytes`... as the trace header's `real.` lines.
    pub counters: BTreeMap<String, f64>,
    pub events: u64,
    /// Events the ring buffer lost.
    pub lost: u64,
    pub exit_status: i32,
    pub counts: convert::Counts,
    /// Events this kernel does not have (left out).
    pub missing_events: Vec<String>,
}

/// The tracepoints recorded: (group, event).
const SYSCALLS: &[&str] = &[
    "openat",
    "open",
    "creat",
    "openat2",
    "close",
    "read",
    "pread64",
    "readv",
    "preadv",
    "preadv2",
    "write",
    "pwrite64",
    "writev",
    "pwritev",
    "pwritev2",
    "lseek",
    "dup",
    "dup2",
    "dup3",
    "fcntl",
    "sendfile64",
    "copy_file_range",
    "fsync",
    "fdatasync",
    "fadvise64",
    "readahead",
    "ftruncate",
    "truncate",
    "unlink",
    "unlinkat",
    "rename",
    "renameat",
    "renameat2",
    "mmap",
    "munmap",
    "madvise",
    "mremap",
    "clone",
    "clone3",
    "fork",
    "vfork",
    "execve",
    "execveat",
    "exit",
    "exit_group",
];
const OTHERS: &[&str] = &[
    "filemap/mm_filemap_get_pages",
    "filemap/mm_filemap_fault",
    "filemap/mm_filemap_map_pages",
    "exceptions/page_fault_user",
    "exceptions/page_fault_kernel",
    "task/task_newtask",
    "sched/sched_process_fork",
    "sched/sched_process_exit",
];

/// A tracing instance of the recorder's own, removed on drop (journaled).
struct Instance {
    dir: PathBuf,
    token: Option<Token>,
}

impl Instance {
    fn make(mnt: &Path) -> Result<Instance, String> {
        let dir = mnt
            .join("instances")
            .join(format!("foliosim-record-{}", std::process::id()));
        let t = journal::record(Kind::TraceInstance, &dir, "")?;
        if let Err(e) = fs::create_dir(&dir) {
            t.done();
            return Err(format!("{}: {e}", dir.display()));
        }
        Ok(Instance {
            dir,
            token: Some(t),
        })
    }

    fn set(&self, file: &str, v: &str) -> Result<(), String> {
        let p = self.dir.join(file);
        fs::write(&p, v).map_err(|e| format!("writing '{v}' to {}: {e}", p.display()))
    }

    /// Enables the recorded events; returns those this kernel lacks.
    fn enable(&self) -> Result<Vec<String>, String> {
        let mut missing = Vec::new();
        let names = SYSCALLS
            .iter()
            .flat_map(|s| {
                [
                    format!("syscalls/sys_enter_{s}"),
                    format!("syscalls/sys_exit_{s}"),
                ]
            })
            .chain(OTHERS.iter().map(|s| s.to_string()));
        for ev in names {
            if self.dir.join("events").join(&ev).is_dir() {
                self.set(&format!("events/{ev}/enable"), "1")?;
            } else {
                missing.push(ev);
            }
        }
        Ok(missing)
    }

    /// Events lost to a full buffer, all CPUs (`overrun` and `dropped
    /// events` of per_cpu/cpuN/stats).
    fn lost(&self) -> u64 {
        let Ok(rd) = fs::read_dir(self.dir.join("per_cpu")) else {
            return 0;
        };
        let mut n = 0;
        for e in rd.flatten() {
            let s = fs::read_to_string(e.path().join("stats")).unwrap_or_default();
            for l in s.lines() {
                if let Some(v) = l
                    .strip_prefix("overrun:")
                    .or_else(|| l.strip_prefix("dropped events:"))
                {
                    n += v.trim().parse::<u64>().unwrap_or(0);
                }
            }
        }
        n
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.set("tracing_on", "0");
        if let Some(t) = self.token.take() {
            match fs::remove_dir(&self.dir) {
                Ok(()) => t.done(),
                Err(e) => eprintln!("foliosim record: removing {}: {e}", self.dir.display()),
            }
        }
    }
}

/// /proc of the live host.
struct HostProc;

impl Procfs for HostProc {
    fn fd(&self, pid: i32, fd: i64) -> Option<Stat> {
        let p = PathBuf::from(format!("/proc/{pid}/fd/{fd}"));
        // stat(2) follows the link to the open file; nothing is opened.
        let m = fs::metadata(&p).ok()?;
        let path = fs::read_link(&p)
            .map(|l| l.as_os_str().as_bytes().to_vec())
            .unwrap_or_default();
        let path = if path.starts_with(b"/") && !path.ends_with(b" (deleted)") {
            path
        } else {
            Vec::new()
        };
        Some(Stat {
            key: dev_key(&m),
            size: m.len(),
            regular: m.is_file(),
            path,
        })
    }
    fn tgid(&self, pid: i32) -> Option<i32> {
        let s = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        s.lines()
            .find_map(|l| l.strip_prefix("Tgid:")?.trim().parse().ok())
    }
    fn path(&self, path: &[u8]) -> Option<(u32, u32, u64)> {
        let m = fs::metadata(std::ffi::OsStr::from_bytes(path)).ok()?;
        Some(dev_key(&m))
    }
}

fn dev_key(m: &fs::Metadata) -> (u32, u32, u64) {
    let d = m.dev();
    (libc::major(d), libc::minor(d), m.ino())
}

/// A forked child waiting to exec the command until released.
struct Child {
    pid: i32,
    go: i32,
    err: i32,
}

/// Forks a child that waits on a pipe, then execs `cmd` (execvp: argv[0]
/// looked up in PATH, as a shell would, but no shell).
fn fork_waiting(cmd: &[OsString]) -> Result<Child, String> {
    let argv: Vec<CString> = cmd
        .iter()
        .map(|a| CString::new(a.as_bytes()).map_err(|_| "a NUL byte in the command".to_string()))
        .collect::<Result<_, _>>()?;
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let (mut go, mut err) = ([0i32; 2], [0i32; 2]);
    // SAFETY: pipe2 writes two fds into the arrays.
    if unsafe { libc::pipe2(go.as_mut_ptr(), libc::O_CLOEXEC) } != 0
        || unsafe { libc::pipe2(err.as_mut_ptr(), libc::O_CLOEXEC) } != 0
    {
        return Err(format!("pipe: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: the child calls only async-signal-safe functions (read,
    // execvp, write, _exit) on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        unsafe {
            let mut b = 0u8;
            if libc::read(go[0], (&mut b as *mut u8).cast(), 1) != 1 {
                libc::_exit(126);
            }
            libc::execvp(ptrs[0], ptrs.as_ptr());
            let e = *libc::__errno_location();
            libc::write(err[1], (&e as *const i32).cast(), 4);
            libc::_exit(127);
        }
    }
    // SAFETY: closing the child's ends in the parent.
    unsafe {
        libc::close(go[0]);
        libc::close(err[1]);
    }
    Ok(Child {
        pid,
        go: go[1],
        err: err[0],
    })
}

/// The regular files the child holds open before its exec (inherited:
/// a redirected stdout, say), with their positions.
fn inherited_fds(pid: i32) -> Vec<(i64, Stat, u64)> {
    let mut v = Vec::new();
    let Ok(rd) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return v;
    };
    for e in rd.flatten() {
        let Some(fd) = e.file_name().to_str().and_then(|s| s.parse::<i64>().ok()) else {
            continue;
        };
        if let Some(st) = HostProc.fd(pid, fd).filter(|s| s.regular) {
            let info = fs::read_to_string(format!("/proc/{pid}/fdinfo/{fd}")).unwrap_or_default();
            let pos = info
                .lines()
                .find_map(|l| l.strip_prefix("pos:")?.trim().parse().ok())
                .unwrap_or(0);
            v.push((fd, st, pos));
        }
    }
    v.sort_by_key(|x| x.0);
    v
}

/// Records `o.cmd` into `o.out`.
pub fn record(o: &RecordOpts) -> Result<Recording, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("foliosim record needs root (a memory cgroup, tracefs)".into());
    }
    if o.cmd.is_empty() {
        return Err("no command given (foliosim record [OPTIONS] -- CMD ARGS...)".into());
    }
    // Changes a killed recorder or oracle left are undone first.
    let r = journal::replay()?;
    for m in r.restored {
        eprintln!("foliosim record: {m}");
    }
    let host = crate::host::read_host(&o.scratch)?;
    let mut scratch = Scratch::new(&o.scratch, false)?;
    let pid = std::process::id();
    let body_path = o.scratch.join(format!("foliosim-record-{pid}.body"));
    scratch.track(body_path.clone())?;
    let mnt = ScratchMount::tracefs(&o.scratch.join(format!("foliosim-record-{pid}.tracefs")))?;
    let inst = Instance::make(&mnt.dir)?;
    inst.set("tracing_on", "0")?;
    inst.set("buffer_size_kb", &o.buffer_kb.to_string())?;
    inst.set("trace_clock", "mono")?;
    for (opt, v) in [
        ("event-fork", "1"),
        ("record-tgid", "1"),
        ("fields", "1"),
        ("overwrite", "0"),
    ] {
        inst.set(&format!("options/{opt}"), v)?;
    }
    let cg = MemCgroup::create(&host, o.memcg_limit.unwrap_or(i64::MAX as u64))?;
    let missing = inst.enable()?;
    let child = fork_waiting(&o.cmd)?;
    let guard = KillGuard(child.pid);
    let body = File::create(&body_path).map_err(|e| format!("{}: {e}", body_path.display()))?;
    let mut conv = Conv::new(
        BufWriter::with_capacity(1 << 20, body),
        HostProc,
        child.pid,
        &inherited_fds(child.pid),
    );
    // The pid filter first: with set_event_pid empty, an instance traces
    // every task.
    inst.set("set_event_pid", &child.pid.to_string())?;
    cg.add_pid(child.pid)?;
    let pipe = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(inst.dir.join("trace_pipe"))
        .map_err(|e| format!("trace_pipe: {e}"))?;
    // What a cold cache still holds (mapped by other processes), as the
    // command starts.
    let resident = residency::mapped_files_residency(child.pid);
    let before = read_vmstat()?;
    inst.set("tracing_on", "1")?;
    let t0 = Instant::now();
    release(&child)?;
    let mut raw = match &o.raw {
        Some(p) => Some(BufWriter::new(
            File::create(p).map_err(|e| format!("{}: {e}", p.display()))?,
        )),
        None => None,
    };
    let status = pump(pipe, &mut conv, &inst, child.pid, raw.as_mut())?;
    if let (Some(w), Some(p)) = (raw.as_mut(), &o.raw) {
        w.flush().map_err(|e| format!("{}: {e}", p.display()))?;
    }
    let wall = t0.elapsed().as_secs_f64();
    std::mem::forget(guard);
    let after = read_vmstat()?;
    let mut counters = BTreeMap::new();
    counters.insert("wall_s".to_string(), wall);
    for (k, v) in cg.stat()? {
        counters.insert(format!("memcg.{k}"), v as f64);
    }
    if let Some(p) = cg.peak_bytes() {
        counters.insert("memcg.max_usage_in_bytes".into(), p as f64);
    }
    counters.extend(cg.io_stat()?);
    counters.extend(vmstat_delta(&before, &after));
    drop(cg);
    let lost = inst.lost();
    if let Some(e) = conv.error() {
        return Err(format!("{}: {e}", body_path.display()));
    }
    conv.w
        .w
        .flush()
        .map_err(|e| format!("{}: {e}", body_path.display()))?;
    let rec = Recording {
        counters,
        events: conv.w.events,
        lost,
        exit_status: status,
        counts: conv.counts.clone(),
        missing_events: missing,
    };
    let files = conv.files() + &conv.cached_lines(&resident);
    write_trace(o, &rec, &files, &body_path, &host.kernel_release)?;
    drop(inst);
    drop(mnt);
    drop(scratch);
    Ok(rec)
}

/// Kills the child if the recorder fails before it is waited for.
struct KillGuard(i32);

impl Drop for KillGuard {
    fn drop(&mut self) {
        // SAFETY: kill and waitpid on our own child.
        unsafe {
            libc::kill(self.0, libc::SIGKILL);
            libc::waitpid(self.0, std::ptr::null_mut(), 0);
        }
    }
}

/// Lets the child exec; an exec failure is the recorder's error.
fn release(c: &Child) -> Result<(), String> {
    // SAFETY: our own pipe fds.
    unsafe {
        libc::write(c.go, b"g".as_ptr().cast(), 1);
        libc::close(c.go);
        let mut e = 0i32;
        let n = libc::read(c.err, (&mut e as *mut i32).cast(), 4);
        libc::close(c.err);
        if n == 4 {
            return Err(format!(
                "cannot execute the command: {}",
                std::io::Error::from_raw_os_error(e)
            ));
        }
    }
    Ok(())
}

/// Reads the trace while the command runs and after, until drained;
/// returns the command's exit status (128+signal when killed).
fn pump<W: Write>(
    mut pipe: File,
    conv: &mut Conv<W, HostProc>,
    inst: &Instance,
    pid: i32,
    mut raw: Option<&mut BufWriter<File>>,
) -> Result<i32, String> {
    let mut buf = vec![0u8; 1 << 20];
    let mut carry: Vec<u8> = Vec::new();
    let mut status = None;
    let mut idle_after_exit = 0;
    loop {
        match pipe.read(&mut buf) {
            Ok(n) if n > 0 => {
                carry.extend_from_slice(&buf[..n]);
                let end = carry.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                if let Some(w) = raw.as_mut() {
                    w.write_all(&carry[..end])
                        .map_err(|e| format!("--raw: {e}"))?;
                }
                for l in String::from_utf8_lossy(&carry[..end]).lines() {
                    conv.line(l);
                }
                carry.drain(..end);
                continue;
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(format!("trace_pipe: {e}")),
        }
        match status {
            None => {
                let mut st = 0;
                // SAFETY: waitpid on our own child.
                if unsafe { libc::waitpid(pid, &mut st, libc::WNOHANG) } == pid {
                    inst.set("tracing_on", "0")?;
                    status = Some(if libc::WIFEXITED(st) {
                        libc::WEXITSTATUS(st)
                    } else {
                        128 + libc::WTERMSIG(st)
                    });
                }
            }
            // Drained: three empty reads after the exit.
            Some(s) => {
                idle_after_exit += 1;
                if idle_after_exit >= 3 {
                    return Ok(s);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The trace: header (command, counters, losses), files, then the events.
fn write_trace(
    o: &RecordOpts,
    rec: &Recording,
    files: &str,
    body: &Path,
    kernel: &str,
) -> Result<(), String> {
    let e = |err: std::io::Error| format!("{}: {err}", o.out.display());
    let mut w = BufWriter::new(File::create(&o.out).map_err(e)?);
    let cmd: Vec<String> = o
        .cmd
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let mut h = format!("{}\n", foliosim_workload::rectrace::MAGIC);
    h += &format!(
        "# cmd: {}\n",
        foliosim_workload::units::one_line(&cmd.join(" "))
    );
    h += &format!("# kernel: {}\n", kernel.trim());
    h += &format!(
        "# memcg-limit: {}\n",
        o.memcg_limit.map_or("none".into(), |l| l.to_string())
    );
    h += &format!("# exit-status: {}\n", rec.exit_status);
    h += &format!("# events: {}\n", rec.events);
    h += &format!("# lost-events: {}\n", rec.lost);
    let c = &rec.counts;
    h += &format!(
        "# recorder: {} lines, {} unparsed, {} of other tasks, {} fds not identified at open, {} rebound by their reads' inode, {} exec-image faults, {} file mappings named by their first fault\n",
        c.lines, c.unparsed, c.foreign, c.fd_unresolved, c.fd_rebound, c.exec_image_faults, c.mappings_named_by_fault
    );
    if !rec.missing_events.is_empty() {
        h += &format!("# missing-events: {}\n", rec.missing_events.join(" "));
    }
    for (k, v) in &rec.counters {
        h += &format!("# real.{k}: {v}\n");
    }
    w.write_all(h.as_bytes()).map_err(e)?;
    w.write_all(files.as_bytes()).map_err(e)?;
    let mut b = File::open(body).map_err(|err| format!("{}: {err}", body.display()))?;
    std::io::copy(&mut b, &mut w).map_err(e)?;
    w.flush().map_err(e)
}
