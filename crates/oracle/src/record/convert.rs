//! ftrace text lines (instance options `fields` and `record-tgid`) of the
//! recorded command's tasks -> foliosim-trace v1 events.
//!
//! Syscall tracepoints carry pointers, not paths, and this host's kernel
//! has no eprobes or kprobes to read them: a file is identified when its
//! open is processed, by stat(2) and readlink(2) of /proc/PID/fd/FD (the
//! recorder reads the trace as it is written, milliseconds behind), and
//! failing that (the fd already closed) by the inode of the
//! mm_filemap_get_pages events of its first read. Positions come from the
//! syscalls (fd tables per process, offsets through read/write/lseek);
//! faults are page_fault_user/kernel addresses looked up in the mappings
//! the process made (mmap's return), so that a fault names the mapping
//! and the page. Mappings and open files are written when first used.

use foliosim_workload::rectrace::{escape_path, Writer, MISC_VMA};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;

/// What /proc says about an open fd or a path.
#[derive(Clone, Debug, PartialEq)]
pub struct Stat {
    /// (major, minor, ino).
    pub key: (u32, u32, u64),
    pub size: u64,
    pub regular: bool,
    pub path: Vec<u8>,
}

/// The recorder's view of the live processes (a fake in tests).
pub trait Procfs {
    /// stat and readlink of /proc/PID/fd/FD.
    fn fd(&self, pid: i32, fd: i64) -> Option<Stat>;
    /// The thread group of `pid` (/proc/PID/status Tgid).
    fn tgid(&self, pid: i32) -> Option<i32>;
    /// stat of a path (None: gone).
    fn path(&self, path: &[u8]) -> Option<(u32, u32, u64)>;
}

/// One parsed trace line.
#[derive(Debug)]
pub struct Line<'a> {
    pub pid: i32,
    pub tgid: Option<i32>,
    pub ts_us: u64,
    pub event: &'a str,
    pub fields: &'a str,
}

/// Splits `comm-PID (TGID) [CPU] FLAGS SECS.USECS: EVENT: FIELDS`.
pub fn parse_line(l: &str) -> Option<Line<'_>> {
    // The first ") [CPU]" after a "(TGID" column (comm may hold anything).
    let (cpu, open) = l.match_indices(") [").find_map(|(i, _)| {
        let open = l[..i].rfind('(')?;
        let tgid = l[open + 1..i].trim();
        let cpu = l[i + 3..].split(']').next()?;
        let ok = (tgid.bytes().all(|b| b.is_ascii_digit()) || tgid.bytes().all(|b| b == b'-'))
            && !cpu.is_empty()
            && cpu.bytes().all(|b| b.is_ascii_digit());
        ok.then_some((i, open))
    })?;
    let head = &l[..cpu];
    let pid = head[..open].trim_end().rsplit('-').next()?.parse().ok()?;
    let tgid = head[open + 1..].trim().parse().ok();
    let rest = &l[cpu + 3..];
    let rest = rest[rest.find(']')? + 1..].trim_start();
    let rest = rest[rest.find(' ')?..].trim_start(); // flags
    let (ts, rest) = rest.split_once(": ")?;
    let (event, fields) = rest
        .split_once(": ")
        .unwrap_or((rest.trim_end_matches(':'), ""));
    let (s, us) = ts.trim().split_once('.')?;
    let scale = 10u64.pow(6u32.saturating_sub(us.len() as u32));
    let ts_us = s.parse::<u64>().ok()? * 1_000_000 + us.parse::<u64>().ok()? * scale;
    Some(Line {
        pid,
        tgid,
        ts_us,
        event,
        fields,
    })
}

/// A numeric field of `fields`: the decimal the `fields` option prints in
/// parentheses after the hex (signed), else the value itself.
pub fn num(fields: &str, name: &str) -> Option<i64> {
    let mut it = fields.split(' ');
    while let Some(tok) = it.next() {
        let Some(v) = tok.strip_prefix(name).and_then(|r| r.strip_prefix('=')) else {
            continue;
        };
        if let Some(d) = it
            .next()
            .and_then(|n| n.strip_prefix('(')?.strip_suffix(')'))
        {
            if let Ok(d) = d.parse::<i64>() {
                return Some(d);
            }
            if let Ok(d) = d.parse::<u64>() {
                return Some(d as i64);
            }
        }
        return match v.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).ok().map(|v| v as i64),
            None => v.parse().ok(),
        };
    }
    None
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Anon,
    File {
        file: u32,
        pgoff: u64,
        shared: bool,
    },
    /// A file mapping whose fd was closed before the recorder could
    /// identify it (LevelDB maps a table and closes its fd at once): the
    /// first fault that reaches filemap_fault names its inode and offset.
    Unknown {
        shared: bool,
    },
}

/// A piece of a mapping: mappings split when part of them is unmapped or
/// mapped over; the pieces keep the mapping's id and origin.
#[derive(Clone, Copy)]
struct Piece {
    end: u64,
    vma: u32,
}

struct Vma {
    start: u64,
    pages: u64,
    kind: Kind,
    /// Written to the trace (at its first use).
    emitted: bool,
    pieces: u32,
}

#[derive(Clone, Copy)]
enum Fd {
    Open {
        ofd: u32,
        cloexec: bool,
    },
    /// Not yet identified: an open whose /proc entry was gone.
    Unknown {
        cloexec: bool,
        /// The last fadvise on it (letter, offset, len), written when a
        /// read identifies the file: RocksDB's POSIX_FADV_RANDOM on a
        /// table is what keeps its readahead off.
        advice: Option<(u8, i64, i64)>,
    },
}

struct Ofd {
    file: u32,
    pos: u64,
    append: bool,
    refs: u32,
    emitted: bool,
}

struct FileSt {
    key: (u32, u32, u64),
    initial: u64,
    size: u64,
    path: Vec<u8>,
    unlinked: bool,
    /// Its size at the first open was seen (not when identified by a
    /// read's inode after the fd was gone: it existed, at `size`).
    initial_known: bool,
}

struct Proc {
    fds: BTreeMap<i64, Fd>,
    pieces: BTreeMap<u64, Piece>,
    live: u32,
}

#[derive(Default)]
struct Task {
    id: u32,
    tgid: i32,
    /// The syscall entered: its name, fields and time.
    pending: Option<(String, String, u64)>,
    /// An unidentified fd being read: the inode get_pages saw.
    seen_ino: Option<(u32, u32, u64)>,
    /// A fault in a Kind::Unknown mapping, waiting for the task's next
    /// event: (mapping, page in it, "r"/"w", time).
    unknown_fault: Option<(u32, u64, &'static str, u64)>,
}

/// Counts of what the conversion met.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Counts {
    pub lines: u64,
    pub unparsed: u64,
    /// Lines of other tasks (the pid filter lags a context switch).
    pub foreign: u64,
    pub fd_unresolved: u64,
    /// Fds whose reads met another inode than /proc named (rebound).
    pub fd_rebound: u64,
    pub exec_image_faults: u64,
    /// File mappings of unidentified fds named by their first
    /// filemap_fault's inode.
    pub mappings_named_by_fault: u64,
}

pub struct Conv<W: Write, P: Procfs> {
    pub w: Writer<W>,
    pub counts: Counts,
    proc_fs: P,
    t0: Option<u64>,
    started: bool,
    root: i32,
    tasks: HashMap<i32, Task>,
    procs: HashMap<i32, Proc>,
    vmas: HashMap<u32, Vma>,
    ofds: HashMap<u32, Ofd>,
    files: Vec<FileSt>,
    by_key: HashMap<(u32, u32, u64), u32>,
    /// clone_flags of a new task (task_newtask, in its parent before
    /// sched_process_fork), by the child's pid.
    newtask: HashMap<i32, i64>,
    next_task: u32,
    next_vma: u32,
    next_ofd: u32,
    err: Option<std::io::Error>,
}

const PAGE: u64 = 4096;
const O_APPEND: i64 = 0o2000;
const O_CLOEXEC: i64 = 0o2000000;
const CLONE_THREAD: i64 = 0x10000;

impl<W: Write, P: Procfs> Conv<W, P> {
    /// Converts the tasks of `root` (the command, before its exec) and
    /// its descendants; `fds`: the fds it inherited, already open.
    pub fn new(w: W, proc_fs: P, root: i32, fds: &[(i64, Stat, u64)]) -> Self {
        let mut c = Conv {
            w: Writer::new(w),
            counts: Counts::default(),
            proc_fs,
            t0: None,
            started: false,
            root,
            tasks: HashMap::new(),
            procs: HashMap::new(),
            vmas: HashMap::new(),
            ofds: HashMap::new(),
            files: Vec::new(),
            by_key: HashMap::new(),
            newtask: HashMap::new(),
            next_task: 1,
            next_vma: 1,
            next_ofd: 1,
            err: None,
        };
        c.tasks.insert(
            root,
            Task {
                id: 1,
                tgid: root,
                ..Task::default()
            },
        );
        c.next_task = 2;
        let mut p = Proc {
            fds: BTreeMap::new(),
            pieces: BTreeMap::new(),
            live: 1,
        };
        for (fd, st, pos) in fds {
            if let Some(ofd) = c.new_ofd(st, 0) {
                c.ofds.get_mut(&ofd).expect("new").pos = *pos;
                p.fds.insert(
                    *fd,
                    Fd::Open {
                        ofd,
                        cloexec: false,
                    },
                );
            }
        }
        c.procs.insert(root, p);
        c
    }

    fn ev(&mut self, t: u64, task: u32, rest: std::fmt::Arguments) {
        if self.err.is_none() {
            if let Err(e) = self.w.event(t, task, rest) {
                self.err = Some(e);
            }
        }
    }

    /// The first write error, if any.
    pub fn error(&mut self) -> Option<std::io::Error> {
        self.err.take()
    }

    /// A regular file's trace id (declared at the end: [`Conv::files`]).
    fn file_of(&mut self, st: &Stat) -> u32 {
        if let Some(&f) = self.by_key.get(&st.key) {
            let f = &mut self.files[f as usize - 1];
            f.size = f.size.max(st.size);
            if f.path.is_empty() {
                f.path = st.path.clone();
            }
            return self.by_key[&st.key];
        }
        self.files.push(FileSt {
            key: st.key,
            initial: st.size,
            size: st.size,
            path: st.path.clone(),
            unlinked: false,
            initial_known: st.size > 0 || !st.path.is_empty(),
        });
        let id = self.files.len() as u32;
        self.by_key.insert(st.key, id);
        id
    }

    fn new_ofd(&mut self, st: &Stat, flags: i64) -> Option<u32> {
        if !st.regular {
            return None;
        }
        let file = self.file_of(st);
        let id = self.next_ofd;
        self.next_ofd += 1;
        self.ofds.insert(
            id,
            Ofd {
                file,
                pos: 0,
                append: flags & O_APPEND != 0,
                refs: 1,
                emitted: false,
            },
        );
        Some(id)
    }

    /// The `C` lines: the pages of the trace's files that were cached
    /// when the run began (`resident`, by device and inode).
    pub fn cached_lines(&self, resident: &super::residency::Residency) -> String {
        let mut s = String::new();
        for (i, f) in self.files.iter().enumerate() {
            let pages = f.size.div_ceil(PAGE).max(1);
            for &(first, n) in resident.get(&f.key).into_iter().flatten() {
                let n = n.min(pages.saturating_sub(first));
                if n > 0 {
                    s += &format!("C {} {first} {n}\n", i + 1);
                }
            }
        }
        s
    }

    /// The `F` lines, after the run: each file at the largest size seen.
    pub fn files(&self) -> String {
        let mut s = String::new();
        for (i, f) in self.files.iter().enumerate() {
            let (ma, mi, ino) = f.key;
            let ino = if ino == 0 {
                "-".to_string()
            } else {
                format!("{ma}:{mi}:{ino:x}")
            };
            let size = f.size.max(f.initial);
            let initial = if f.initial_known { f.initial } else { size };
            let path = escape_path(&f.path);
            s += &format!("F {} {initial} {size} {ino} {path}\n", i + 1);
        }
        s
    }

    /// One line of the trace.
    pub fn line(&mut self, l: &str) {
        self.counts.lines += 1;
        let Some(ln) = parse_line(l) else {
            if !l.starts_with('#') && !l.trim().is_empty() {
                self.counts.unparsed += 1;
            }
            return;
        };
        let t0 = *self.t0.get_or_insert(ln.ts_us);
        let t = ln.ts_us.saturating_sub(t0);
        if !self.tasks.contains_key(&ln.pid) {
            self.counts.foreign += 1;
            return;
        }
        if !self.started {
            // The recorder's child before its execve is not the command.
            if ln.event == "sys_exit_execve"
                && ln.pid == self.root
                && num(ln.fields, "ret") == Some(0)
            {
                self.started = true;
                self.ev(t, 0, format_args!("n 1 p"));
            }
            return;
        }
        self.event(t, &ln);
    }

    fn event(&mut self, t: u64, ln: &Line) {
        let f = ln.fields;
        if ln.event == "mm_filemap_fault" {
            self.resolve_unknown(t, ln.pid, f);
            return;
        }
        self.flush_unknown(t, ln.pid);
        if let Some(sc) = ln.event.strip_prefix("sys_enter_") {
            if let Some(task) = self.tasks.get_mut(&ln.pid) {
                task.pending = Some((sc.to_string(), f.to_string(), t));
                task.seen_ino = None;
            }
            self.enter(t, ln.pid, sc, f);
            return;
        }
        if let Some(sc) = ln.event.strip_prefix("sys_exit_") {
            let Some(task) = self.tasks.get_mut(&ln.pid) else {
                return;
            };
            let Some((name, args, t_in)) = task.pending.take() else {
                return;
            };
            if name == sc {
                let ret = num(f, "ret").unwrap_or(-1);
                self.exit(t_in, t, ln.pid, sc, &args, ret);
            }
            return;
        }
        match ln.event {
            "task_newtask" => {
                if let (Some(c), Some(fl)) = (num(f, "pid"), num(f, "clone_flags")) {
                    self.newtask.insert(c as i32, fl);
                }
            }
            "sched_process_fork" => self.fork(t, ln),
            "sched_process_exit" => self.task_exit(t, ln.pid),
            "page_fault_user" | "page_fault_kernel" => self.fault(t, ln.pid, f),
            "mm_filemap_get_pages" => {
                let key = dev_key(f);
                if let Some(task) = self.tasks.get_mut(&ln.pid) {
                    task.seen_ino = key;
                }
            }
            "mm_filemap_map_pages" => {
                if let (Some(k), Some(a), Some(b)) =
                    (dev_key(f), num(f, "index"), num(f, "last_index"))
                {
                    if let Some(&file) = self.by_key.get(&k) {
                        let id = self.tasks[&ln.pid].id;
                        self.ev(t, id, format_args!("fa {file} {a} {b}"));
                    }
                }
            }
            _ => {}
        }
    }

    fn tid(&self, pid: i32) -> (u32, i32) {
        let t = &self.tasks[&pid];
        (t.id, t.tgid)
    }

    /// Syscalls handled at their entry (no result needed).
    fn enter(&mut self, t: u64, pid: i32, sc: &str, f: &str) {
        let (id, tgid) = self.tid(pid);
        let fd = num(f, "fd").unwrap_or(-1);
        match sc {
            "close" => self.close_fd(t, id, tgid, fd),
            // readahead(2) is force_page_cache_readahead() of the range,
            // what FADV_WILLNEED does.
            "readahead" => {
                if let Some(ofd) = self.ofd_of(t, id, tgid, fd) {
                    let (off, len) = (
                        num(f, "offset").unwrap_or(0).max(0),
                        num(f, "count").unwrap_or(0).max(0),
                    );
                    if len > 0 {
                        self.ev(t, id, format_args!("a {ofd} w {off} {len}"));
                    }
                }
            }
            "fadvise64" => {
                let adv = match num(f, "advice") {
                    Some(0) => "n",
                    Some(1) => "r",
                    Some(2) => "s",
                    Some(3) => "w",
                    Some(4) => "d",
                    Some(5) => "o",
                    _ => return,
                };
                let (off, len) = (
                    num(f, "offset").unwrap_or(0).max(0),
                    num(f, "len").unwrap_or(0).max(0),
                );
                if let Some(ofd) = self.ofd_of(t, id, tgid, fd) {
                    self.ev(t, id, format_args!("a {ofd} {adv} {off} {len}"));
                } else if let Some(Fd::Unknown { advice, .. }) =
                    self.procs.get_mut(&tgid).and_then(|p| p.fds.get_mut(&fd))
                {
                    // Written when a read identifies the file.
                    *advice = Some((adv.as_bytes()[0], off, len));
                }
            }
            "ftruncate" => {
                let len = num(f, "length").unwrap_or(0).max(0) as u64;
                if let Some(ofd) = self.ofd_of(t, id, tgid, fd) {
                    let file = self.ofds[&ofd].file;
                    let fs = &mut self.files[file as usize - 1];
                    fs.size = fs.size.max(len);
                    self.ev(t, id, format_args!("t {file} {len}"));
                }
            }
            "munmap" => {
                let (a, len) = (
                    num(f, "addr").unwrap_or(0) as u64,
                    num(f, "len").unwrap_or(0) as u64,
                );
                self.unmap_range(t, id, tgid, a, a.saturating_add(len));
            }
            "madvise" => self.madvise(t, id, tgid, f),
            _ => {}
        }
    }

    /// Syscalls handled at their exit, with their result.
    fn exit(&mut self, t_in: u64, t: u64, pid: i32, sc: &str, a: &str, ret: i64) {
        let (id, tgid) = self.tid(pid);
        let dur = t.saturating_sub(t_in);
        let fd = num(a, "fd").unwrap_or(-1);
        match sc {
            "openat" | "open" | "creat" | "openat2" if ret >= 0 => {
                let flags = if sc == "creat" {
                    0
                } else {
                    num(a, "flags").unwrap_or(0)
                };
                self.opened(pid, tgid, ret, flags);
            }
            "read" | "readv" | "pread64" | "preadv" | "preadv2" | "write" | "writev"
            | "pwrite64" | "pwritev" | "pwritev2"
                if ret > 0 =>
            {
                let pos = match sc {
                    "pread64" | "pwrite64" => num(a, "pos"),
                    "preadv" | "pwritev" | "preadv2" | "pwritev2" => {
                        let lo = num(a, "pos_l").unwrap_or(-1);
                        (lo >= 0).then(|| lo | num(a, "pos_h").unwrap_or(0) << 32)
                    }
                    _ => None,
                };
                self.rw(
                    t_in,
                    id,
                    tgid,
                    fd,
                    pos,
                    ret as u64,
                    sc.starts_with('w') || sc.starts_with("pw"),
                    dur,
                );
            }
            "sendfile64" | "copy_file_range" if ret > 0 => {
                let (i, o) = if sc == "sendfile64" {
                    (
                        num(a, "in_fd").unwrap_or(-1),
                        num(a, "out_fd").unwrap_or(-1),
                    )
                } else {
                    (
                        num(a, "fd_in").unwrap_or(-1),
                        num(a, "fd_out").unwrap_or(-1),
                    )
                };
                self.rw(t_in, id, tgid, i, None, ret as u64, false, dur);
                self.rw(t_in, id, tgid, o, None, ret as u64, true, 0);
            }
            "lseek" if ret >= 0 => {
                if let Some(ofd) = self.ofd_of(t_in, id, tgid, fd) {
                    self.ofds.get_mut(&ofd).expect("open").pos = ret as u64;
                }
            }
            "dup" | "dup2" | "dup3" | "fcntl" if ret >= 0 => {
                let old = match sc {
                    "dup" => num(a, "fildes"),
                    "fcntl" if matches!(num(a, "cmd"), Some(0) | Some(1030)) => num(a, "fd"),
                    "fcntl" => return,
                    _ => num(a, "oldfd"),
                };
                let cloexec = sc == "fcntl" && num(a, "cmd") == Some(1030)
                    || sc == "dup3" && num(a, "flags").unwrap_or(0) & O_CLOEXEC != 0;
                self.dup(t, id, tgid, old.unwrap_or(-1), ret, cloexec);
            }
            "fsync" | "fdatasync" if ret == 0 => {
                if let Some(ofd) = self.ofd_of(t_in, id, tgid, fd) {
                    let file = self.ofds[&ofd].file;
                    self.ev(t_in, id, format_args!("s {file} {dur}"));
                }
            }
            "unlink" | "unlinkat" | "rename" | "renameat" | "renameat2" if ret == 0 => {
                self.names_changed(t_in, id, sc.starts_with('u'))
            }
            "mmap" if !(-4095..0).contains(&ret) => self.mmap(t, tgid, a, ret as u64),
            "mremap" if !(-4095..0).contains(&ret) => self.mremap(t, id, tgid, a, ret as u64),
            "execve" | "execveat" if ret == 0 => self.exec(t, id, tgid),
            _ => {}
        }
    }

    fn opened(&mut self, pid: i32, tgid: i32, fd: i64, flags: i64) {
        let cloexec = flags & O_CLOEXEC != 0;
        // A fd found pointing elsewhere (closed and reused since) is
        // identified by its reads' inode, like one already gone.
        // Threads share their process's fd table: a thread already gone
        // (RocksDB's table openers) is asked through its process.
        let st = self
            .proc_fs
            .fd(pid, fd)
            .or_else(|| (tgid != pid).then(|| self.proc_fs.fd(tgid, fd)).flatten());
        let slot = match st {
            Some(st) => match self.new_ofd(&st, flags) {
                Some(ofd) => Some(Fd::Open { ofd, cloexec }),
                None => Some(Fd::Unknown {
                    cloexec,
                    advice: None,
                }),
            },
            None => {
                self.counts.fd_unresolved += 1;
                Some(Fd::Unknown {
                    cloexec,
                    advice: None,
                })
            }
        };
        if let Some(p) = self.procs.get_mut(&tgid) {
            match slot {
                Some(s) => p.fds.insert(fd, s),
                None => p.fds.remove(&fd),
            };
        }
    }

    /// The open file behind `fd`, written to the trace at its first use;
    /// an unidentified one is identified by the inode its read met.
    fn ofd_of(&mut self, t: u64, id: u32, tgid: i32, fd: i64) -> Option<u32> {
        let slot = *self.procs.get(&tgid)?.fds.get(&fd)?;
        let mut held = None;
        let ofd = match slot {
            Fd::Open { ofd, .. } => ofd,
            Fd::Unknown { cloexec, advice } => {
                held = advice;
                let pid = self
                    .tasks
                    .iter()
                    .find(|(_, x)| x.id == id)
                    .map(|(p, _)| *p)?;
                let key = self.tasks[&pid].seen_ino?;
                let st = Stat {
                    key,
                    size: 0,
                    regular: true,
                    path: Vec::new(),
                };
                let ofd = self.new_ofd(&st, 0)?;
                self.procs
                    .get_mut(&tgid)?
                    .fds
                    .insert(fd, Fd::Open { ofd, cloexec });
                ofd
            }
        };
        let o = self.ofds.get_mut(&ofd)?;
        if !o.emitted {
            o.emitted = true;
            let file = o.file;
            self.ev(t, id, format_args!("o {ofd} {file}"));
        }
        if let Some((a, off, len)) = held {
            let a = a as char;
            self.ev(t, id, format_args!("a {ofd} {a} {off} {len}"));
        }
        Some(ofd)
    }

    #[allow(clippy::too_many_arguments)]
    fn rw(
        &mut self,
        t: u64,
        id: u32,
        tgid: i32,
        fd: i64,
        pos: Option<i64>,
        len: u64,
        write: bool,
        dur: u64,
    ) {
        if !write {
            self.check_identity(t, id, tgid, fd);
        }
        let Some(ofd) = self.ofd_of(t, id, tgid, fd) else {
            return;
        };
        let o = &self.ofds[&ofd];
        let file = o.file as usize - 1;
        let off = match pos {
            Some(p) => p.max(0) as u64,
            None if write && o.append => self.files[file].size,
            None => o.pos,
        };
        if pos.is_none() {
            self.ofds.get_mut(&ofd).expect("open").pos = off + len;
        }
        let fs = &mut self.files[file];
        fs.size = fs.size.max(off + len);
        let op = if write { "w" } else { "r" };
        self.ev(t, id, format_args!("{op} {ofd} {off} {len} {dur}"));
    }

    /// A read's page-cache inode (mm_filemap_get_pages) is the truth:
    /// an fd whose /proc entry named another file (the fd reused before
    /// the recorder looked) is rebound to the file the read met.
    fn check_identity(&mut self, t: u64, id: u32, tgid: i32, fd: i64) {
        let Some(pid) = self.tasks.iter().find(|(_, x)| x.id == id).map(|(p, _)| *p) else {
            return;
        };
        let Some(key) = self.tasks[&pid].seen_ino else {
            return;
        };
        let Some(&Fd::Open { ofd, cloexec }) = self.procs.get(&tgid).and_then(|p| p.fds.get(&fd))
        else {
            return;
        };
        if self.files[self.ofds[&ofd].file as usize - 1].key == key {
            return;
        }
        self.counts.fd_rebound += 1;
        let pos = self.ofds[&ofd].pos;
        let st = Stat {
            key,
            size: 0,
            regular: true,
            path: Vec::new(),
        };
        let Some(new) = self.new_ofd(&st, 0) else {
            return;
        };
        self.ofds.get_mut(&new).expect("new").pos = pos;
        self.procs
            .get_mut(&tgid)
            .expect("live")
            .fds
            .insert(fd, Fd::Open { ofd: new, cloexec });
        self.put_ofd(t, id, ofd);
    }

    fn close_fd(&mut self, t: u64, id: u32, tgid: i32, fd: i64) {
        let Some(p) = self.procs.get_mut(&tgid) else {
            return;
        };
        if let Some(Fd::Open { ofd, .. }) = p.fds.remove(&fd) {
            self.put_ofd(t, id, ofd);
        }
    }

    fn put_ofd(&mut self, t: u64, id: u32, ofd: u32) {
        let o = self.ofds.get_mut(&ofd).expect("open");
        o.refs -= 1;
        if o.refs == 0 {
            if o.emitted {
                self.ev(t, id, format_args!("c {ofd}"));
            }
            self.ofds.remove(&ofd);
        }
    }

    fn dup(&mut self, t: u64, id: u32, tgid: i32, old: i64, new: i64, cloexec: bool) {
        self.close_fd(t, id, tgid, new);
        let Some(p) = self.procs.get_mut(&tgid) else {
            return;
        };
        match p.fds.get(&old).copied() {
            Some(Fd::Open { ofd, .. }) => {
                p.fds.insert(new, Fd::Open { ofd, cloexec });
                self.ofds.get_mut(&ofd).expect("open").refs += 1;
            }
            Some(Fd::Unknown { .. }) => {
                // The new fd may still be open where the old one was not.
                let pid = self.tasks.iter().find(|(_, x)| x.id == id).map(|(p, _)| *p);
                let st = pid.and_then(|pid| self.proc_fs.fd(pid, new));
                match st.and_then(|st| self.new_ofd(&st, 0)) {
                    Some(ofd) => self
                        .procs
                        .get_mut(&tgid)
                        .expect("live")
                        .fds
                        .insert(new, Fd::Open { ofd, cloexec }),
                    None => self.procs.get_mut(&tgid).expect("live").fds.insert(
                        new,
                        Fd::Unknown {
                            cloexec,
                            advice: None,
                        },
                    ),
                };
            }
            None => {}
        }
    }

    /// After an unlink or rename: the files whose path no longer names them.
    fn names_changed(&mut self, t: u64, id: u32, unlink: bool) {
        for i in 0..self.files.len() {
            let f = &self.files[i];
            if f.path.is_empty() || f.unlinked {
                continue;
            }
            let now = self.proc_fs.path(&f.path);
            if now == Some(f.key) {
                continue;
            }
            let file = i + 1;
            if unlink || now.is_none() {
                self.files[i].unlinked = true;
                self.ev(t, id, format_args!("u {file}"));
            } else {
                self.ev(t, id, format_args!("R {file}"));
                self.files[i].path.clear();
            }
        }
    }

    fn fork(&mut self, t: u64, ln: &Line) {
        let (Some(parent), Some(child)) =
            (num(ln.fields, "parent_pid"), num(ln.fields, "child_pid"))
        else {
            return;
        };
        let (parent, child) = (parent as i32, child as i32);
        let Some(pt) = self.tasks.get(&parent) else {
            return;
        };
        let (pid_task, ptgid) = (pt.id, pt.tgid);
        // task_newtask has the flags of every clone, clone3's too (whose
        // flags the syscall tracepoint only shows behind a pointer).
        let flags = match (self.newtask.remove(&child), &pt.pending) {
            (Some(fl), _) => Some(fl),
            (None, Some((sc, args, _))) if sc == "clone" => num(args, "clone_flags"),
            (None, Some((sc, _, _))) if sc == "fork" || sc == "vfork" => Some(0),
            _ => None,
        };
        let thread = match flags {
            Some(fl) => fl & CLONE_THREAD != 0,
            // A kernel without task_newtask: the child's thread group, if
            // it is still there to be asked (a short-lived thread is not).
            None => self.proc_fs.tgid(child).is_some_and(|g| g == ptgid),
        };
        let id = self.next_task;
        self.next_task += 1;
        let tgid = if thread { ptgid } else { child };
        self.tasks.insert(
            child,
            Task {
                id,
                tgid,
                ..Task::default()
            },
        );
        if thread {
            if let Some(p) = self.procs.get_mut(&ptgid) {
                p.live += 1;
            }
        } else {
            let (fds, pieces) = match self.procs.get(&ptgid) {
                Some(p) => (p.fds.clone(), p.pieces.clone()),
                None => Default::default(),
            };
            for fd in fds.values() {
                if let Fd::Open { ofd, .. } = fd {
                    self.ofds.get_mut(ofd).expect("open").refs += 1;
                }
            }
            // The child's copies of the parent's mappings: new ids,
            // written at their first use.
            let mut remap = HashMap::new();
            let mut copied = BTreeMap::new();
            for (s, pc) in pieces {
                let v = *remap.entry(pc.vma).or_insert_with(|| {
                    let o = &self.vmas[&pc.vma];
                    let n = self.next_vma;
                    self.next_vma += 1;
                    self.vmas.insert(
                        n,
                        Vma {
                            start: o.start,
                            pages: o.pages,
                            kind: o.kind,
                            emitted: false,
                            pieces: 0,
                        },
                    );
                    n
                });
                self.vmas.get_mut(&v).expect("made").pieces += 1;
                copied.insert(
                    s,
                    Piece {
                        end: pc.end,
                        vma: v,
                    },
                );
            }
            self.procs.insert(
                child,
                Proc {
                    fds,
                    pieces: copied,
                    live: 1,
                },
            );
        }
        let k = if thread { "t" } else { "p" };
        self.ev(t, pid_task, format_args!("n {id} {k}"));
    }

    fn task_exit(&mut self, t: u64, pid: i32) {
        let Some(task) = self.tasks.remove(&pid) else {
            return;
        };
        self.ev(t, task.id, format_args!("x"));
        let Some(p) = self.procs.get_mut(&task.tgid) else {
            return;
        };
        p.live -= 1;
        if p.live > 0 {
            return;
        }
        let p = self.procs.remove(&task.tgid).expect("live");
        for fd in p.fds.into_values() {
            if let Fd::Open { ofd, .. } = fd {
                // Closed with the process; written under a live task
                // would be wrong, so dropped silently when it was the last.
                let o = self.ofds.get_mut(&ofd).expect("open");
                o.refs -= 1;
                if o.refs == 0 {
                    self.ofds.remove(&ofd);
                }
            }
        }
        for pc in p.pieces.values() {
            self.drop_piece(pc.vma);
        }
    }

    fn exec(&mut self, t: u64, id: u32, tgid: i32) {
        self.ev(t, id, format_args!("e"));
        let Some(p) = self.procs.get_mut(&tgid) else {
            return;
        };
        let pieces = std::mem::take(&mut p.pieces);
        let cloexec: Vec<i64> = p
            .fds
            .iter()
            .filter(|(_, f)| {
                matches!(
                    f,
                    Fd::Open { cloexec: true, .. } | Fd::Unknown { cloexec: true, .. }
                )
            })
            .map(|(fd, _)| *fd)
            .collect();
        for pc in pieces.values() {
            self.drop_piece(pc.vma);
        }
        for fd in cloexec {
            self.close_fd(t, id, tgid, fd);
        }
    }

    /// A piece went without a trace line (exec, exit: the replay drops the
    /// process's mappings itself).
    fn drop_piece(&mut self, vma: u32) {
        let v = self.vmas.get_mut(&vma).expect("mapped");
        v.pieces -= 1;
        if v.pieces == 0 {
            self.vmas.remove(&vma);
        }
    }

    fn mmap(&mut self, t: u64, tgid: i32, a: &str, addr: u64) {
        let len = num(a, "len").unwrap_or(0) as u64;
        let flags = num(a, "flags").unwrap_or(0);
        let fd = num(a, "fd").unwrap_or(-1);
        let pages = len.div_ceil(PAGE);
        if pages == 0 {
            return;
        }
        let id = self
            .tasks
            .values()
            .find(|x| x.tgid == tgid)
            .map_or(0, |x| x.id);
        // MAP_ANONYMOUS, or a file the recorder does not know (a device,
        // memfd): anonymous memory for the model.
        let file = if flags & 0x20 != 0 {
            None
        } else {
            let slot = self.procs.get(&tgid).and_then(|p| p.fds.get(&fd).copied());
            match slot {
                Some(Fd::Open { ofd, .. }) => Some(self.ofds[&ofd].file),
                _ => None,
            }
        };
        let kind = match file {
            Some(file) => Kind::File {
                file,
                pgoff: (num(a, "off").unwrap_or(0) as u64) / PAGE,
                shared: flags & 3 != 2 && flags & 1 != 0,
            },
            None if flags & 0x20 == 0 && fd >= 0 => Kind::Unknown {
                shared: flags & 3 != 2 && flags & 1 != 0,
            },
            None => Kind::Anon,
        };
        self.map(t, id, tgid, addr, pages, kind);
    }

    fn map(&mut self, t: u64, id: u32, tgid: i32, addr: u64, pages: u64, kind: Kind) {
        let end = addr.saturating_add(pages * PAGE);
        self.unmap_range(t, id, tgid, addr, end);
        let v = self.next_vma;
        self.next_vma += 1;
        self.vmas.insert(
            v,
            Vma {
                start: addr,
                pages,
                kind,
                emitted: false,
                pieces: 1,
            },
        );
        if let Some(p) = self.procs.get_mut(&tgid) {
            p.pieces.insert(addr, Piece { end, vma: v });
        }
    }

    fn mremap(&mut self, t: u64, id: u32, tgid: i32, a: &str, new: u64) {
        let old = num(a, "addr").unwrap_or(0) as u64;
        let old_len = num(a, "old_len").unwrap_or(0) as u64;
        let new_len = num(a, "new_len").unwrap_or(0) as u64;
        let kind = self.lookup(tgid, old).map(|(v, _)| self.vmas[&v].kind);
        let kind = match kind {
            Some(Kind::File {
                file,
                pgoff,
                shared,
            }) => {
                let (v, _) = self.lookup(tgid, old).expect("found");
                let extra = (old - self.vmas[&v].start) / PAGE;
                Kind::File {
                    file,
                    pgoff: pgoff + extra,
                    shared,
                }
            }
            _ => Kind::Anon,
        };
        self.unmap_range(t, id, tgid, old, old.saturating_add(old_len));
        self.map(t, id, tgid, new, new_len.div_ceil(PAGE).max(1), kind);
    }

    /// The process's pieces overlapping [start, end), last first.
    fn pieces_in(&self, tgid: i32, start: u64, end: u64) -> Vec<(u64, Piece)> {
        let Some(p) = self.procs.get(&tgid) else {
            return Vec::new();
        };
        p.pieces
            .range(..end)
            .rev()
            .take_while(|(_, pc)| pc.end > start)
            .map(|(s, pc)| (*s, *pc))
            .collect()
    }

    /// Removes [start, end) from the process's pieces; a mapping left with
    /// none is unmapped in the trace.
    fn unmap_range(&mut self, t: u64, id: u32, tgid: i32, start: u64, end: u64) {
        let hit = self.pieces_in(tgid, start, end);
        let Some(p) = self.procs.get_mut(&tgid) else {
            return;
        };
        let mut gone = Vec::new();
        for (s, pc) in hit {
            p.pieces.remove(&s);
            let mut kept = 0;
            if s < start {
                p.pieces.insert(
                    s,
                    Piece {
                        end: start,
                        vma: pc.vma,
                    },
                );
                kept += 1;
            }
            if pc.end > end {
                p.pieces.insert(
                    end,
                    Piece {
                        end: pc.end,
                        vma: pc.vma,
                    },
                );
                kept += 1;
            }
            let v = self.vmas.get_mut(&pc.vma).expect("mapped");
            v.pieces = v.pieces - 1 + kept;
            if v.pieces == 0 {
                gone.push(pc.vma);
            }
        }
        for v in gone {
            if self.vmas.remove(&v).is_some_and(|x| x.emitted) {
                self.ev(t, id, format_args!("mu {v}"));
            }
        }
    }

    /// The mapping at `addr` and the page's offset in it.
    fn lookup(&self, tgid: i32, addr: u64) -> Option<(u32, u64)> {
        let p = self.procs.get(&tgid)?;
        let (_, pc) = p.pieces.range(..=addr).next_back()?;
        (pc.end > addr).then(|| (pc.vma, (addr - self.vmas[&pc.vma].start) / PAGE))
    }

    /// Writes mapping `v` if it was not yet.
    fn emit_vma(&mut self, t: u64, id: u32, v: u32) {
        let m = self.vmas.get_mut(&v).expect("mapped");
        if m.emitted {
            return;
        }
        m.emitted = true;
        let (pages, kind) = (m.pages, m.kind);
        match kind {
            Kind::Anon | Kind::Unknown { .. } => self.ev(t, id, format_args!("ma {v} {pages}")),
            Kind::File {
                file,
                pgoff,
                shared,
            } => {
                let s = if shared { "s" } else { "p" };
                self.ev(t, id, format_args!("mf {v} {pages} {file} {pgoff} {s}"))
            }
        }
    }

    fn fault(&mut self, t: u64, pid: i32, f: &str) {
        let (Some(addr), Some(err)) = (num(f, "address"), num(f, "error_code")) else {
            return;
        };
        let addr = addr as u64;
        if addr >= 1 << 47 {
            return; // a kernel address
        }
        let (id, tgid) = self.tid(pid);
        let w = if err & 2 != 0 { "w" } else { "r" };
        match self.lookup(tgid, addr) {
            Some((v, page)) if matches!(self.vmas[&v].kind, Kind::Unknown { .. }) => {
                if let Some(task) = self.tasks.get_mut(&pid) {
                    task.unknown_fault = Some((v, page, w, t));
                }
            }
            Some((v, page)) => {
                self.emit_vma(t, id, v);
                match self.vmas[&v].kind {
                    Kind::Anon | Kind::Unknown { .. } => {
                        self.ev(t, id, format_args!("pa {v} {page} {w}"))
                    }
                    Kind::File { file, pgoff, .. } => {
                        let index = pgoff + page;
                        let fs = &mut self.files[file as usize - 1];
                        fs.size = fs.size.max((index + 1) * PAGE);
                        self.ev(t, id, format_args!("pf {v} {index} {w}"))
                    }
                }
            }
            // Instruction fetches outside the traced mappings are the
            // executable's text, which execve mapped (not modelled).
            None if err & 0x10 != 0 => self.counts.exec_image_faults += 1,
            None => self.ev(t, id, format_args!("pa {MISC_VMA} {} {w}", addr / PAGE)),
        }
    }

    /// filemap_fault of a task whose fault met a Kind::Unknown mapping:
    /// the inode and index name the mapping's file and offset (unless the
    /// trace already declared it anonymous), and the fault is written.
    /// (Written at `now`, this event's time: the trace's times only go
    /// forward.)
    fn resolve_unknown(&mut self, now: u64, pid: i32, f: &str) {
        let Some((v, page, w, _)) = self
            .tasks
            .get_mut(&pid)
            .and_then(|x| x.unknown_fault.take())
        else {
            return;
        };
        let (Some(key), Some(index)) = (dev_key(f), num(f, "index")) else {
            return self.unknown_as_anon(pid, v, page, w, now);
        };
        let index = index as u64;
        let (Some(m), true) = (self.vmas.get(&v), index >= page) else {
            return self.unknown_as_anon(pid, v, page, w, now);
        };
        if let (Kind::Unknown { shared }, false) = (m.kind, m.emitted) {
            let st = Stat {
                key,
                size: (index + 1) * PAGE,
                regular: true,
                path: Vec::new(),
            };
            let file = self.file_of(&st);
            self.vmas.get_mut(&v).expect("mapped").kind = Kind::File {
                file,
                pgoff: index - page,
                shared,
            };
            self.counts.mappings_named_by_fault += 1;
        }
        let id = self.tasks[&pid].id;
        self.emit_vma(now, id, v);
        if let Kind::File { file, .. } = self.vmas[&v].kind {
            let fs = &mut self.files[file as usize - 1];
            fs.size = fs.size.max((index + 1) * PAGE);
            self.ev(now, id, format_args!("pf {v} {index} {w}"));
        } else {
            self.ev(now, id, format_args!("pa {v} {page} {w}"));
        }
    }

    /// Any other event of the task: its pending fault did not reach
    /// filemap_fault (fault-around or a cached page served it).
    fn flush_unknown(&mut self, now: u64, pid: i32) {
        if let Some((v, page, w, _)) = self
            .tasks
            .get_mut(&pid)
            .and_then(|x| x.unknown_fault.take())
        {
            self.unknown_as_anon(pid, v, page, w, now);
        }
    }

    fn unknown_as_anon(&mut self, pid: i32, v: u32, page: u64, w: &'static str, t: u64) {
        if !self.vmas.contains_key(&v) {
            return;
        }
        let id = self.tasks[&pid].id;
        self.emit_vma(t, id, v);
        self.ev(t, id, format_args!("pa {v} {page} {w}"));
    }

    fn madvise(&mut self, t: u64, id: u32, tgid: i32, f: &str) {
        let (Some(start), Some(len)) = (num(f, "start"), num(f, "len_in")) else {
            return;
        };
        let adv = match num(f, "behavior") {
            Some(0) => "n",
            Some(1) => "r",
            Some(2) => "s",
            Some(3) => "w",
            Some(4) => "d",
            Some(20) => "c",
            Some(21) => "p",
            _ => return,
        };
        let (start, end) = (start as u64, (start as u64).saturating_add(len as u64));
        let hit = self.pieces_in(tgid, start, end);
        for (s, pc) in hit.into_iter().rev() {
            let v = pc.vma;
            if !self.vmas[&v].emitted && !matches!(adv, "w" | "s" | "r") {
                continue; // nothing faulted in it yet
            }
            self.emit_vma(t, id, v);
            let vs = self.vmas[&v].start;
            let (a, b) = (s.max(start), pc.end.min(end));
            let first = (a - vs) / PAGE;
            let n = (b - a).div_ceil(PAGE);
            self.ev(t, id, format_args!("md {v} {adv} {first} {n}"));
        }
    }
}

/// (major, minor, ino) of a filemap event (kernel dev_t: major << 20).
fn dev_key(f: &str) -> Option<(u32, u32, u64)> {
    let dev = num(f, "s_dev")? as u64;
    Some((
        (dev >> 20) as u32,
        (dev & 0xfffff) as u32,
        num(f, "i_ino")? as u64,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// /proc as a test sets it: fd 3 of pid 10 is /data/f (ino 7, 64 KiB).
    struct Fake;
    impl Procfs for Fake {
        fn fd(&self, pid: i32, fd: i64) -> Option<Stat> {
            (pid == 10 && fd == 3).then(|| Stat {
                key: (254, 0, 7),
                size: 65536,
                regular: true,
                path: b"/data/f".to_vec(),
            })
        }
        fn tgid(&self, _: i32) -> Option<i32> {
            None
        }
        fn path(&self, _: &[u8]) -> Option<(u32, u32, u64)> {
            None
        }
    }

    fn l(pid: i32, ts: &str, ev: &str, fields: &str) -> String {
        format!("           app-{pid}    (     10) [001] ..... {ts}: {ev}: {fields}")
    }

    #[test]
    fn lines_and_fields_parse() {
        let s = l(
            10,
            "816.951117",
            "sys_exit_read",
            "__syscall_nr=0x0 (0) ret=0x1000 (4096)",
        );
        let ln = parse_line(&s).unwrap();
        assert_eq!(
            (ln.pid, ln.tgid, ln.ts_us, ln.event),
            (10, Some(10), 816_951_117, "sys_exit_read")
        );
        assert_eq!(num(ln.fields, "ret"), Some(4096));
        assert_eq!(num("ret=0xfffffffffffffffe (-2)", "ret"), Some(-2));
        assert_eq!(
            num("i_ino=0x4fa7d (326269) index=0x5c (92)", "index"),
            Some(92)
        );
        assert_eq!(
            num("buf=(0xffff88810a27301c) count=0x340 (832)", "count"),
            Some(832)
        );
        assert_eq!(num("x=1", "y"), None);
        let odd =
            "  a b-c (x) ) [0]-12    (   12) [000] d.... 1.5: page_fault_user: address=0x10 (16)";
        assert_eq!(parse_line(odd).unwrap().pid, 12);
        assert!(parse_line("# tracer: nop").is_none());
    }

    /// LevelDB maps a table and closes its fd before the recorder can
    /// name it: the mapping's first fault that reaches filemap_fault names
    /// the file (inode, and the offset from its index); a fault that does
    /// not leaves the mapping anonymous.
    #[test]
    fn an_unnamed_file_mapping_is_named_by_its_first_filemap_fault() {
        let mut c = Conv::new(Vec::new(), Fake, 10, &[]);
        let lines = [
            l(
                10,
                "1.000000",
                "sys_exit_execve",
                "__syscall_nr=0x3b (59) ret=0x0 (0)",
            ),
            l(
                10,
                "1.000010",
                "sys_enter_openat",
                "dfd=0xffffff9c (-100) filename=(0x1) flags=0x0 (0)",
            ),
            l(10, "1.000020", "sys_exit_openat", "ret=0x5 (5)"),
            l(
                10,
                "1.000030",
                "sys_enter_mmap",
                "addr=0x0 (0) len=0x8000 (32768) prot=0x1 (1) flags=0x1 (1) fd=0x5 (5) off=0x0 (0)",
            ),
            l(
                10,
                "1.000040",
                "sys_exit_mmap",
                "ret=0x7f0000000000 (139637976727552)",
            ),
            l(10, "1.000050", "sys_enter_close", "fd=0x5 (5)"),
            l(10, "1.000060", "sys_exit_close", "ret=0x0 (0)"),
            l(
                10,
                "1.000070",
                "page_fault_user",
                "address=0x7f0000003010 (139637976739856) ip=0x1 (1) error_code=0x4 (4)",
            ),
            l(
                10,
                "1.000080",
                "mm_filemap_fault",
                "i_ino=0x9 (9) s_dev=0xfe00000 (266338304) index=0x3 (3)",
            ),
            l(
                10,
                "1.000090",
                "page_fault_user",
                "address=0x7f0000005010 (139637976748048) ip=0x1 (1) error_code=0x4 (4)",
            ),
            l(
                10,
                "1.000100",
                "mm_filemap_fault",
                "i_ino=0x9 (9) s_dev=0xfe00000 (266338304) index=0x5 (5)",
            ),
            l(
                10,
                "1.000110",
                "sys_enter_openat",
                "dfd=0xffffff9c (-100) filename=(0x1) flags=0x0 (0)",
            ),
            l(10, "1.000120", "sys_exit_openat", "ret=0x6 (6)"),
            l(
                10,
                "1.000130",
                "sys_enter_mmap",
                "addr=0x0 (0) len=0x4000 (16384) prot=0x1 (1) flags=0x1 (1) fd=0x6 (6) off=0x0 (0)",
            ),
            l(
                10,
                "1.000140",
                "sys_exit_mmap",
                "ret=0x7f0000100000 (139637977776128)",
            ),
            l(
                10,
                "1.000150",
                "page_fault_user",
                "address=0x7f0000101000 (139637977780224) ip=0x1 (1) error_code=0x4 (4)",
            ),
            l(
                10,
                "1.000160",
                "sched_process_exit",
                "comm=app pid=0xa (10) prio=0x78 (120) group_dead=0x1 (1)",
            ),
        ];
        for s in &lines {
            c.line(s);
        }
        let body = String::from_utf8(c.w.w.clone()).unwrap();
        // The first mapping: file 1 (inode 9) from offset 0, shared; both
        // faults at their file index.
        assert!(body.contains(" mf 1 8 1 0 s\n"), "{body}");
        assert!(body.contains(" pf 1 3 r\n"), "{body}");
        assert!(body.contains(" pf 1 5 r\n"), "{body}");
        // The second: its fault reached no filemap_fault: anonymous.
        assert!(body.contains(" ma 2 4\n"), "{body}");
        assert!(body.contains(" pa 2 1 r\n"), "{body}");
        assert_eq!(c.counts.mappings_named_by_fault, 1);
        assert!(c.files().contains("254:0:9"), "{}", c.files());
    }

    /// glibc's pthread_create is clone3, whose flags the syscall event
    /// shows only as a pointer; a short-lived thread that opened a file
    /// (RocksDB's table openers) is gone before /proc can be asked, so its
    /// kind comes from task_newtask. Before, such a thread was taken for a
    /// process with a fd table of its own and the reads of its files by
    /// other threads were dropped.
    #[test]
    fn a_clone3_thread_shares_its_process_fds() {
        let mut c = Conv::new(Vec::new(), Fake, 10, &[]);
        let lines = [
            l(
                10,
                "1.000000",
                "sys_exit_execve",
                "__syscall_nr=0x3b (59) ret=0x0 (0)",
            ),
            l(
                10,
                "1.000010",
                "sys_enter_clone3",
                "uargs=0x1 (1) size=0x58 (88)",
            ),
            l(
                10,
                "1.000011",
                "task_newtask",
                "pid=0xb (11) comm=app clone_flags=0x3d0f00 (4001536) oom_score_adj=0x0 (0)",
            ),
            l(
                10,
                "1.000012",
                "sched_process_fork",
                "parent_comm=app parent_pid=0xa (10) child_comm=app child_pid=0xb (11)",
            ),
            l(
                11,
                "1.000020",
                "sys_enter_openat",
                "dfd=0xffffff9c (-100) filename=(0x1) flags=0x0 (0)",
            ),
            l(11, "1.000030", "sys_exit_openat", "ret=0x5 (5)"),
            l(
                11,
                "1.000032",
                "sys_enter_fadvise64",
                "fd=0x5 (5) offset=0x0 (0) len=0x0 (0) advice=0x1 (1)",
            ),
            l(11, "1.000033", "sys_exit_fadvise64", "ret=0x0 (0)"),
            // fd 3: /proc/11/fd/3 is gone with the thread; /proc/10/fd/3
            // is the same table.
            l(
                11,
                "1.000034",
                "sys_enter_openat",
                "dfd=0xffffff9c (-100) filename=(0x1) flags=0x0 (0)",
            ),
            l(11, "1.000035", "sys_exit_openat", "ret=0x3 (3)"),
            l(
                11,
                "1.000040",
                "sched_process_exit",
                "comm=app pid=0xb (11) prio=0x78 (120) group_dead=0x0 (0)",
            ),
            l(
                10,
                "1.000050",
                "sys_enter_pread64",
                "fd=0x5 (5) buf=(0x1) count=0x1000 (4096) pos=0x2000 (8192)",
            ),
            l(
                10,
                "1.000060",
                "mm_filemap_get_pages",
                "i_ino=0x9 (9) s_dev=0xfe00000 (266338304) index=0x2 (2) last_index=0x2 (2)",
            ),
            l(10, "1.000070", "sys_exit_pread64", "ret=0x1000 (4096)"),
        ];
        for s in &lines {
            c.line(s);
        }
        let body = String::from_utf8(c.w.w.clone()).unwrap();
        assert!(body.contains(" n 2 t\n"), "{body}");
        // The file is known at the read, and the advice the thread gave
        // before is written first.
        assert!(
            body.contains(" o 2 2\n0 . a 2 r 0 0\n0 . r 2 8192 4096 20\n"),
            "{body}"
        );
        assert_eq!(c.counts.fd_unresolved, 1, "fd 3 found through the process");
        assert!(c.files().contains("/data/f"), "{}", c.files());
    }

    #[test]
    fn a_run_becomes_trace_events() {
        let mut c = Conv::new(Vec::new(), Fake, 10, &[]);
        let lines = [
            l(10, "1.000000", "sys_exit_execve", "__syscall_nr=0x3b (59) ret=0x0 (0)"),
            l(10, "1.000010", "sys_enter_openat", "dfd=0xffffff9c (-100) filename=(0x1) flags=0x0 (0)"),
            l(10, "1.000020", "sys_exit_openat", "ret=0x3 (3)"),
            l(10, "1.000030", "sys_enter_read", "fd=0x3 (3) buf=(0x1) count=0x1000 (4096)"),
            l(10, "1.000040", "mm_filemap_get_pages", "i_ino=0x7 (7) s_dev=0xfe00000 (266338304) index=0x0 (0) last_index=0x0 (0)"),
            l(10, "1.000090", "sys_exit_read", "ret=0x1000 (4096)"),
            l(10, "1.000100", "sys_enter_mmap", "addr=0x0 (0) len=0x4000 (16384) prot=0x1 (1) flags=0x2 (2) fd=0x3 (3) off=0x1000 (4096)"),
            l(10, "1.000110", "sys_exit_mmap", "ret=0x7f0000000000 (139637976727552)"),
            l(10, "1.000120", "page_fault_user", "address=0x7f0000002010 (139637976735760) ip=0x1 (1) error_code=0x4 (4)"),
            l(10, "1.000130", "mm_filemap_map_pages", "i_ino=0x7 (7) s_dev=0xfe00000 (266338304) index=0x0 (0) last_index=0xf (15)"),
            l(10, "1.000140", "page_fault_user", "address=0x5000 (20480) ip=0x1 (1) error_code=0x6 (6)"),
            l(10, "1.000145", "page_fault_user", "address=0x6000 (24576) ip=0x6000 (24576) error_code=0x14 (20)"),
            l(10, "1.000150", "sys_enter_clone", "clone_flags=0x1200011 (18874385) newsp=0x0 (0)"),
            l(10, "1.000160", "sched_process_fork", "parent_comm=app parent_pid=0xa (10) child_comm=app child_pid=0xb (11)"),
            l(11, "1.000170", "page_fault_user", "address=0x7f0000000010 (139637976727568) ip=0x1 (1) error_code=0x4 (4)"),
            l(99, "1.000175", "page_fault_user", "address=0x10 (16) ip=0x1 (1) error_code=0x4 (4)"),
            l(11, "1.000180", "sched_process_exit", "comm=app pid=0xb (11) prio=0x78 (120) group_dead=0x1 (1)"),
            l(10, "1.000190", "sys_enter_lseek", "fd=0x3 (3) offset=0x0 (0) whence=0x0 (0)"),
            l(10, "1.000200", "sys_exit_lseek", "ret=0x0 (0)"),
            l(10, "1.000210", "sys_enter_read", "fd=0x3 (3) buf=(0x1) count=0x1000 (4096)"),
            l(10, "1.000220", "sys_exit_read", "ret=0x800 (2048)"),
            l(10, "1.000230", "sys_enter_munmap", "addr=0x7f0000000000 (139637976727552) len=0x4000 (16384)"),
            l(10, "1.000240", "sys_enter_close", "fd=0x3 (3)"),
            l(10, "1.000250", "sched_process_exit", "comm=app pid=0xa (10) prio=0x78 (120) group_dead=0x1 (1)"),
        ];
        for s in &lines {
            c.line(s);
        }
        let body = String::from_utf8(c.w.w.clone()).unwrap();
        assert_eq!(
            body,
            "0 0 n 1 p\n\
             30 1 o 1 1\n\
             0 . r 1 0 4096 60\n\
             90 . mf 1 4 1 1 p\n\
             0 . pf 1 3 r\n\
             10 . fa 1 0 15\n\
             10 . pa 0 5 w\n\
             20 . n 2 p\n\
             10 2 mf 2 4 1 1 p\n\
             0 . pf 2 1 r\n\
             10 . x\n\
             30 1 r 1 0 2048 10\n\
             20 . mu 1\n\
             10 . c 1\n\
             10 . x\n"
        );
        assert_eq!(c.counts.foreign, 1);
        assert_eq!(c.counts.exec_image_faults, 1);
        assert_eq!(c.files(), "F 1 65536 65536 254:0:7 /data/f\n");
        // Pages cached before the run, cut at the file's end (16 pages).
        let resident = [
            ((254, 0, 7), vec![(0, 2), (10, 100)]),
            ((254, 0, 8), vec![(0, 1)]),
        ]
        .into_iter()
        .collect();
        assert_eq!(c.cached_lines(&resident), "C 1 0 2\nC 1 10 6\n");
        // And the trace reads back.
        let text = format!(
            "{}\n{}{body}",
            foliosim_workload::rectrace::MAGIC,
            c.files()
        );
        let mut r = foliosim_workload::rectrace::Reader::new(text.as_bytes(), "t").unwrap();
        while let Some(e) = r.next_event() {
            e.unwrap();
        }
    }
}
