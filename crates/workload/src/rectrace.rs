//! foliosim's own trace of a recorded application (`foliosim record`,
//! docs/trace-format.md): a header of `# key: value` lines (the command,
//! the real run's counters), file declarations and one line per event of
//! each task, timestamps as deltas. This module reads it as a stream
//! (a line at a time, nothing loaded whole) and writes it.
//!
//! The reader checks what the replay relies on: every id named is
//! declared and alive (tasks, files, open files, mappings), a mapping is
//! used only by the process that mapped it, page indices fall inside
//! their mapping. A bad line is one [`ParseError`] naming the file and
//! line (option `trace`).

pub use crate::fio::ParseError;
use crate::scenario::{Advice, Madvice};
use std::collections::{HashMap as StdMap, HashSet as StdSet};
use std::hash::{BuildHasherDefault, Hasher};

/// A hasher for the trace's small integer ids: a multiply, no SipHash
/// (the ids are the trace's own, not an attacker's choice of collisions
/// worth defending against: a hostile trace only slows its own replay).
#[derive(Default, Clone, Copy)]
pub struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ b as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(n as u64);
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n)
            .wrapping_mul(0x9e37_79b9_7f4a_7c15)
            .rotate_left(29);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

/// Maps and sets keyed by trace ids.
pub type IdMap<K, V> = StdMap<K, V, BuildHasherDefault<IdHasher>>;
pub type IdSet<K> = StdSet<K, BuildHasherDefault<IdHasher>>;
type HashMap<K, V> = IdMap<K, V>;
type HashSet<K> = IdSet<K>;
use std::io::{BufRead, Write};

/// The first line of every trace of this version.
pub const MAGIC: &str = "# foliosim-trace v1";
const OPT: &str = "trace";
/// Limits that keep a hostile trace from asking the model for absurd
/// sizes: 1 PiB files and offsets, 2^40 pages in a mapping.
pub const MAX_BYTES: u64 = 1 << 50;
pub const MAX_PAGES: u64 = 1 << 40;
/// The anonymous pages a process touches outside the mappings the trace
/// saw made (heap, stacks, the executable's data): mapping id 0.
pub const MISC_VMA: u32 = 0;

/// A file the trace's events name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileDecl {
    pub id: u32,
    /// i_size when the run first opened it (0: created by the run).
    pub initial: u64,
    /// The largest size it had during the run (>= initial).
    pub size: u64,
    /// `MAJ:MIN:INO` (hex ino), or `-` when unknown.
    pub ino: String,
    /// Its path, or `-` when unknown (escaped as written: `%XX`).
    pub path: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    File(FileDecl),
    /// Pages FIRST.. (PAGES of them) of FILE were in the page cache when
    /// the run began, charged outside its cgroup: files other processes
    /// mapped, which drop_caches leaves.
    Cached {
        file: u32,
        first: u64,
        pages: u64,
    },
    /// The line's task created `child`: a thread (same mm) or a process.
    New {
        child: u32,
        thread: bool,
    },
    /// execve: the process's mappings go, a fresh mm.
    Exec,
    Exit,
    Open {
        ofd: u32,
        file: u32,
    },
    Close {
        ofd: u32,
    },
    Read {
        ofd: u32,
        off: u64,
        len: u64,
        dur_us: u64,
    },
    Write {
        ofd: u32,
        off: u64,
        len: u64,
        dur_us: u64,
    },
    Fsync {
        file: u32,
        dur_us: u64,
    },
    Fadvise {
        ofd: u32,
        advice: Advice,
        off: u64,
        len: u64,
    },
    Truncate {
        file: u32,
        size: u64,
    },
    Unlink {
        file: u32,
    },
    Rename {
        file: u32,
    },
    MmapAnon {
        vma: u32,
        pages: u64,
    },
    MmapFile {
        vma: u32,
        pages: u64,
        file: u32,
        pgoff: u64,
        shared: bool,
    },
    Munmap {
        vma: u32,
    },
    Madvise {
        vma: u32,
        advice: Madvice,
        first: u64,
        pages: u64,
    },
    /// A fault on page `index` of the file a mapping maps.
    FileFault {
        vma: u32,
        index: u64,
        write: bool,
    },
    /// A fault on page `page` of an anonymous mapping (of the process's
    /// other anonymous memory, address >> 12, for [`MISC_VMA`]).
    AnonFault {
        vma: u32,
        page: u64,
        write: bool,
    },
    /// Pages [first, last] of a file mapped by fault-around (informative).
    FaultAround {
        file: u32,
        first: u64,
        last: u64,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// Microseconds since the trace's start.
    pub t_us: u64,
    pub task: u32,
    pub op: Op,
    /// Its line in the trace (for the replay's own errors).
    pub line: usize,
}

/// A mapping: its process, pages, and (file, first page) if a file's.
type VmaInfo = (u32, u64, Option<(u32, u64)>);

/// What the reader tracks to check each line.
#[derive(Default)]
struct State {
    /// Live task -> its process (the task that is the process's first).
    tasks: HashMap<u32, u32>,
    /// Tasks that ever lived (an id is not reused).
    seen: HashSet<u32>,
    files: HashMap<u32, FileDecl>,
    /// Open file -> its file.
    ofds: HashMap<u32, u32>,
    /// Mapping -> (process, pages, first file page or None for anon).
    vmas: HashMap<u32, VmaInfo>,
    vma_seen: HashSet<u32>,
    ofd_seen: HashSet<u32>,
}

/// A streaming reader: the header at open, then [`Reader::next_event`].
pub struct Reader<R> {
    r: R,
    label: String,
    line: usize,
    raw: Vec<u8>,
    header: Vec<(String, String)>,
    t_us: u64,
    task: u32,
    st: State,
    /// A first event line read while looking for the header's end.
    pending: Option<String>,
}

fn perr(label: &str, line: usize, msg: impl Into<String>) -> ParseError {
    ParseError {
        file: label.to_string(),
        line,
        option: OPT.into(),
        msg: msg.into(),
    }
}

/// Whether `first_line` is this format's (for `foliosim replay`).
pub fn is_rectrace(first_line: &str) -> bool {
    first_line.trim_end() == MAGIC
}

/// Opens the trace at `path` (reads its header).
pub fn open(
    path: &std::path::Path,
) -> Result<Reader<std::io::BufReader<std::fs::File>>, ParseError> {
    let label = path.display().to_string();
    let f = std::fs::File::open(path).map_err(|e| perr(&label, 0, format!("cannot read: {e}")))?;
    Reader::new(std::io::BufReader::with_capacity(1 << 16, f), &label)
}

impl<R: BufRead> Reader<R> {
    pub fn new(r: R, label: &str) -> Result<Self, ParseError> {
        let mut rd = Reader {
            r,
            label: label.to_string(),
            line: 0,
            raw: Vec::new(),
            header: Vec::new(),
            t_us: 0,
            task: 0,
            st: State::default(),
            pending: None,
        };
        match rd.read_line()? {
            Some(l) if is_rectrace(&l) => {}
            Some(l) if l.starts_with("# foliosim-trace") => {
                return Err(perr(
                    label,
                    1,
                    format!(
                        "unsupported version '{}' (this foliosim reads v1)",
                        l.trim()
                    ),
                ))
            }
            _ => {
                return Err(perr(
                    label,
                    1,
                    format!("not a foliosim trace: no '{MAGIC}' first line"),
                ))
            }
        }
        while let Some(l) = rd.read_line()? {
            match l.strip_prefix('#') {
                Some(c) => {
                    if let Some((k, v)) = c.split_once(':') {
                        rd.header.push((k.trim().to_string(), v.trim().to_string()));
                    }
                }
                None => {
                    rd.pending = Some(l);
                    break;
                }
            }
        }
        Ok(rd)
    }

    /// The header's `key: value` lines, in order.
    pub fn header(&self) -> &[(String, String)] {
        &self.header
    }

    /// The header value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.header
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Reads the next line into `self.raw` (without its end); false at
    /// the end of the file.
    fn read_raw(&mut self) -> Result<bool, ParseError> {
        self.raw.clear();
        let n = self
            .r
            .read_until(b'\n', &mut self.raw)
            .map_err(|e| perr(&self.label, self.line + 1, format!("cannot read: {e}")))?;
        if n == 0 {
            return Ok(false);
        }
        self.line += 1;
        while matches!(self.raw.last(), Some(b'\n' | b'\r')) {
            self.raw.pop();
        }
        Ok(true)
    }

    fn read_line(&mut self) -> Result<Option<String>, ParseError> {
        if !self.read_raw()? {
            return Ok(None);
        }
        match std::str::from_utf8(&self.raw) {
            Ok(s) => Ok(Some(s.to_string())),
            Err(_) => Err(perr(&self.label, self.line, "not UTF-8 text")),
        }
    }

    /// The next event; None at the end. Blank and `#` lines are skipped.
    pub fn next_event(&mut self) -> Option<Result<Event, ParseError>> {
        if let Some(l) = self.pending.take() {
            if !(l.trim().is_empty() || l.starts_with('#')) {
                let r = self.parse_line(&l);
                return Some(r.map_err(|m| perr(&self.label, self.line, m)));
            }
        }
        loop {
            match self.read_raw() {
                Ok(true) => {}
                Ok(false) => return None,
                Err(e) => return Some(Err(e)),
            }
            // The line's buffer is lent to the parser, then put back.
            let raw = std::mem::take(&mut self.raw);
            let r = match std::str::from_utf8(&raw) {
                Err(_) => Some(Err("not UTF-8 text".to_string())),
                Ok(l) if l.trim().is_empty() || l.starts_with('#') => None,
                Ok(l) => Some(self.parse_line(l)),
            };
            self.raw = raw;
            if let Some(r) = r {
                return Some(r.map_err(|m| perr(&self.label, self.line, m)));
            }
        }
    }

    fn parse_line(&mut self, l: &str) -> Result<Event, String> {
        let mut f = l.split_ascii_whitespace();
        let first = f.next().unwrap_or("");
        if first == "C" {
            let file = id(&mut f, "file id")?;
            let first = pages(&mut f, "first page")?;
            let n = pages(&mut f, "pages")?;
            if let Some(x) = f.next() {
                return Err(format!("unexpected '{x}' after the pages"));
            }
            let size = self.st.file(file)?.size;
            if first.saturating_add(n) > size.div_ceil(4096).max(1) {
                return Err(format!(
                    "cached pages {first}+{n} are past the end of file {file} ({size} bytes)"
                ));
            }
            return Ok(Event {
                t_us: self.t_us,
                task: self.task,
                op: Op::Cached {
                    file,
                    first,
                    pages: n,
                },
                line: self.line,
            });
        }
        if first == "F" {
            let d = parse_file(&mut f)?;
            self.st.check_file(&d)?;
            return Ok(Event {
                t_us: self.t_us,
                task: self.task,
                op: Op::File(d),
                line: self.line,
            });
        }
        let dt = num(first, "time delta (µs)")?;
        let tid = match f.next() {
            Some(".") if self.task != 0 => self.task,
            Some(".") => return Err("'.' (the previous line's task) on the first event".into()),
            Some(t) => num(t, "task id")? as u32,
            None => return Err("expected 'DT TASK OP ...'".into()),
        };
        let op = parse_op(&mut f)?;
        if let Some(x) = f.next() {
            return Err(format!("unexpected '{x}' after the event's fields"));
        }
        self.st.check(tid, &op)?;
        self.t_us = self.t_us.saturating_add(dt);
        self.task = tid;
        Ok(Event {
            t_us: self.t_us,
            task: tid,
            op,
            line: self.line,
        })
    }
}

fn num(s: &str, what: &str) -> Result<u64, String> {
    s.parse::<u64>()
        .map_err(|_| format!("{what}: '{s}' is not a non-negative integer"))
}

fn field<'a>(f: &mut impl Iterator<Item = &'a str>, what: &str) -> Result<&'a str, String> {
    f.next().ok_or_else(|| format!("missing {what}"))
}

fn n<'a>(f: &mut impl Iterator<Item = &'a str>, what: &str) -> Result<u64, String> {
    num(field(f, what)?, what)
}

fn id<'a>(f: &mut impl Iterator<Item = &'a str>, what: &str) -> Result<u32, String> {
    let v = n(f, what)?;
    u32::try_from(v).map_err(|_| format!("{what}: {v} is too large"))
}

fn bytes<'a>(f: &mut impl Iterator<Item = &'a str>, what: &str) -> Result<u64, String> {
    let v = n(f, what)?;
    if v > MAX_BYTES {
        return Err(format!("{what}: {v} is over 1 PiB"));
    }
    Ok(v)
}

fn pages<'a>(f: &mut impl Iterator<Item = &'a str>, what: &str) -> Result<u64, String> {
    let v = n(f, what)?;
    if v > MAX_PAGES {
        return Err(format!("{what}: {v} pages is over 2^40"));
    }
    Ok(v)
}

fn rw<'a>(f: &mut impl Iterator<Item = &'a str>) -> Result<bool, String> {
    match field(f, "r|w")? {
        "r" => Ok(false),
        "w" => Ok(true),
        x => Err(format!("'{x}': expected r (load) or w (store)")),
    }
}

fn parse_file<'a>(f: &mut impl Iterator<Item = &'a str>) -> Result<FileDecl, String> {
    let id = id(f, "file id")?;
    let initial = bytes(f, "initial size")?;
    let size = bytes(f, "size")?;
    if initial > size {
        return Err(format!("initial size {initial} is over the size {size}"));
    }
    let ino = field(f, "MAJ:MIN:INO")?.to_string();
    let path = field(f, "path")?.to_string();
    if let Some(x) = f.next() {
        return Err(format!(
            "unexpected '{x}' after the path (spaces are written %20)"
        ));
    }
    Ok(FileDecl {
        id,
        initial,
        size,
        ino,
        path,
    })
}

const FADV: &[(&str, Advice)] = &[
    ("n", Advice::Normal),
    ("s", Advice::Sequential),
    ("r", Advice::Random),
    ("w", Advice::Willneed),
    ("d", Advice::Dontneed),
    ("o", Advice::Noreuse),
];
const MADV: &[(&str, Madvice)] = &[
    ("n", Madvice::Normal),
    ("s", Madvice::Sequential),
    ("r", Madvice::Random),
    ("w", Madvice::Willneed),
    ("d", Madvice::Dontneed),
    ("c", Madvice::Cold),
    ("p", Madvice::Pageout),
];

/// The letter of an fadvise or madvise advice, as written.
pub fn fadvice_letter(a: Advice) -> &'static str {
    FADV.iter().find(|(_, x)| *x == a).map_or("n", |(l, _)| l)
}
pub fn madvice_letter(a: Madvice) -> &'static str {
    MADV.iter().find(|(_, x)| *x == a).map_or("n", |(l, _)| l)
}

fn parse_op<'a>(f: &mut impl Iterator<Item = &'a str>) -> Result<Op, String> {
    let op = field(f, "operation")?;
    Ok(match op {
        "n" => {
            let child = id(f, "child task")?;
            let thread = match field(f, "p|t")? {
                "p" => false,
                "t" => true,
                x => return Err(format!("'{x}': expected p (process) or t (thread)")),
            };
            Op::New { child, thread }
        }
        "e" => Op::Exec,
        "x" => Op::Exit,
        "o" => Op::Open {
            ofd: id(f, "open file")?,
            file: id(f, "file")?,
        },
        "c" => Op::Close {
            ofd: id(f, "open file")?,
        },
        "r" | "w" => {
            let (ofd, off, len, dur_us) = (
                id(f, "open file")?,
                bytes(f, "offset")?,
                bytes(f, "length")?,
                n(f, "duration")?,
            );
            if op == "r" {
                Op::Read {
                    ofd,
                    off,
                    len,
                    dur_us,
                }
            } else {
                Op::Write {
                    ofd,
                    off,
                    len,
                    dur_us,
                }
            }
        }
        "s" => Op::Fsync {
            file: id(f, "file")?,
            dur_us: n(f, "duration")?,
        },
        "a" => {
            let ofd = id(f, "open file")?;
            let a = field(f, "advice")?;
            let advice = FADV
                .iter()
                .find(|(l, _)| *l == a)
                .map(|(_, x)| *x)
                .ok_or_else(|| format!("fadvise advice '{a}': expected one of n s r w d o"))?;
            Op::Fadvise {
                ofd,
                advice,
                off: bytes(f, "offset")?,
                len: bytes(f, "length")?,
            }
        }
        "t" => Op::Truncate {
            file: id(f, "file")?,
            size: bytes(f, "size")?,
        },
        "u" => Op::Unlink {
            file: id(f, "file")?,
        },
        "R" => Op::Rename {
            file: id(f, "file")?,
        },
        "ma" => Op::MmapAnon {
            vma: id(f, "mapping")?,
            pages: pages(f, "pages")?,
        },
        "mf" => {
            let (vma, npages, file, pgoff) = (
                id(f, "mapping")?,
                pages(f, "pages")?,
                id(f, "file")?,
                pages(f, "page offset")?,
            );
            let shared = match field(f, "s|p")? {
                "s" => true,
                "p" => false,
                x => return Err(format!("'{x}': expected s (MAP_SHARED) or p (MAP_PRIVATE)")),
            };
            Op::MmapFile {
                vma,
                pages: npages,
                file,
                pgoff,
                shared,
            }
        }
        "mu" => Op::Munmap {
            vma: id(f, "mapping")?,
        },
        "md" => {
            let vma = id(f, "mapping")?;
            let a = field(f, "advice")?;
            let advice = MADV
                .iter()
                .find(|(l, _)| *l == a)
                .map(|(_, x)| *x)
                .ok_or_else(|| format!("madvise advice '{a}': expected one of n s r w d c p"))?;
            Op::Madvise {
                vma,
                advice,
                first: pages(f, "first page")?,
                pages: pages(f, "pages")?,
            }
        }
        "pf" => Op::FileFault {
            vma: id(f, "mapping")?,
            index: pages(f, "page index")?,
            write: rw(f)?,
        },
        "pa" => Op::AnonFault {
            vma: id(f, "mapping")?,
            page: n(f, "page")?,
            write: rw(f)?,
        },
        "fa" => {
            let (file, first, last) = (
                id(f, "file")?,
                pages(f, "first page")?,
                pages(f, "last page")?,
            );
            if first > last {
                return Err(format!("fault-around range {first}-{last} is backwards"));
            }
            Op::FaultAround { file, first, last }
        }
        x => {
            return Err(format!(
                "unknown operation '{x}' (docs/trace-format.md lists them)"
            ))
        }
    })
}

impl State {
    fn check_file(&mut self, d: &FileDecl) -> Result<(), String> {
        if d.id == 0 || self.files.contains_key(&d.id) {
            return Err(format!("file {} declared twice (or id 0)", d.id));
        }
        self.files.insert(d.id, d.clone());
        Ok(())
    }

    fn file(&self, id: u32) -> Result<&FileDecl, String> {
        self.files
            .get(&id)
            .ok_or_else(|| format!("file {id} is not declared (an 'F {id} ...' line first)"))
    }

    fn ofd(&self, id: u32) -> Result<u32, String> {
        self.ofds
            .get(&id)
            .copied()
            .ok_or_else(|| format!("open file {id} is not open"))
    }

    /// The mapping `vma` of process `proc`: its pages and file.
    fn vma(&self, vma: u32, proc: u32) -> Result<(u64, Option<(u32, u64)>), String> {
        match self.vmas.get(&vma) {
            Some(&(p, pages, file)) if p == proc => Ok((pages, file)),
            Some(_) => Err(format!("mapping {vma} belongs to another process")),
            None => Err(format!("mapping {vma} is not mapped")),
        }
    }

    fn check(&mut self, tid: u32, op: &Op) -> Result<(), String> {
        let proc = match (self.tasks.get(&tid), op) {
            (Some(&p), _) => p,
            // The first task, created by the recorder (task 0).
            (None, Op::New { .. }) if tid == 0 && self.seen.is_empty() => 0,
            (None, _) => {
                return Err(format!(
                    "task {tid} is not alive (created by an 'n' line, not exited)"
                ))
            }
        };
        match *op {
            Op::File(_) | Op::Cached { .. } => unreachable!("parsed apart"),
            Op::New { child, thread } => {
                if child == 0 || !self.seen.insert(child) {
                    return Err(format!("task {child} created twice (or id 0)"));
                }
                if thread && tid == 0 {
                    return Err("the first task must be a process".into());
                }
                self.tasks.insert(child, if thread { proc } else { child });
            }
            Op::Exec => self.drop_vmas(proc),
            Op::Exit => {
                self.tasks.remove(&tid);
                if !self.tasks.values().any(|&p| p == proc) {
                    self.drop_vmas(proc);
                }
            }
            Op::Open { ofd, file } => {
                self.file(file)?;
                if !self.ofd_seen.insert(ofd) {
                    return Err(format!("open file {ofd} opened twice"));
                }
                self.ofds.insert(ofd, file);
            }
            Op::Close { ofd } => {
                self.ofd(ofd)?;
                self.ofds.remove(&ofd);
            }
            Op::Read { ofd, off, len, .. } | Op::Write { ofd, off, len, .. } => {
                self.ofd(ofd)?;
                if off.saturating_add(len) > MAX_BYTES {
                    return Err(format!("offset {off} + length {len} is over 1 PiB"));
                }
            }
            Op::Fadvise { ofd, .. } => {
                self.ofd(ofd)?;
            }
            Op::Fsync { file, .. }
            | Op::Unlink { file }
            | Op::Rename { file }
            | Op::FaultAround { file, .. } => {
                self.file(file)?;
            }
            Op::Truncate { file, size } => {
                if size > self.file(file)?.size {
                    return Err(format!(
                        "truncate of file {file} to {size} bytes, over its declared size"
                    ));
                }
            }
            Op::MmapAnon { vma, pages } => self.map(vma, proc, pages, None)?,
            Op::MmapFile {
                vma,
                pages,
                file,
                pgoff,
                ..
            } => {
                self.file(file)?;
                if pgoff.saturating_add(pages) > MAX_PAGES {
                    return Err(format!("page offset {pgoff} + {pages} pages is over 2^40"));
                }
                self.map(vma, proc, pages, Some((file, pgoff)))?
            }
            Op::Munmap { vma } => {
                self.vma(vma, proc)?;
                self.vmas.remove(&vma);
            }
            Op::Madvise {
                vma, first, pages, ..
            } => {
                let (n, _) = self.vma(vma, proc)?;
                if first.saturating_add(pages) > n {
                    return Err(format!(
                        "madvise of pages {first}+{pages} outside mapping {vma} ({n} pages)"
                    ));
                }
            }
            Op::FileFault { vma, index, .. } => match self.vma(vma, proc)? {
                (n, Some((_, pgoff))) if index >= pgoff && index - pgoff < n => {}
                (_, Some(_)) => return Err(format!("page {index} is outside file mapping {vma}")),
                (_, None) => {
                    return Err(format!("mapping {vma} is anonymous: 'pa' faults, not 'pf'"))
                }
            },
            Op::AnonFault { vma, page, .. } => {
                if vma != MISC_VMA {
                    match self.vma(vma, proc)? {
                        (n, None) if page < n => {}
                        (_, None) => return Err(format!("page {page} is outside mapping {vma}")),
                        (_, Some(_)) => {
                            return Err(format!("mapping {vma} maps a file: 'pf' faults, not 'pa'"))
                        }
                    }
                }
            }
        }
        Ok(())
    }

    fn map(
        &mut self,
        vma: u32,
        proc: u32,
        pages: u64,
        file: Option<(u32, u64)>,
    ) -> Result<(), String> {
        if vma == MISC_VMA || !self.vma_seen.insert(vma) {
            return Err(format!("mapping {vma} mapped twice (or id 0)"));
        }
        if pages == 0 {
            return Err(format!("mapping {vma} of 0 pages"));
        }
        self.vmas.insert(vma, (proc, pages, file));
        Ok(())
    }

    fn drop_vmas(&mut self, proc: u32) {
        self.vmas.retain(|_, v| v.0 != proc);
    }
}

/// Escapes a path for an `F` line: `%`, whitespace and control
/// characters as `%XX`; an empty path is `-`.
pub fn escape_path(p: &[u8]) -> String {
    if p.is_empty() {
        return "-".into();
    }
    let mut o = String::with_capacity(p.len());
    for &b in p {
        if b == b'%' || b <= b' ' || b == 0x7f || b >= 0x80 {
            o.push_str(&format!("%{b:02X}"));
        } else {
            o.push(b as char);
        }
    }
    o
}

/// Writes events with delta timestamps and `.` for a repeated task.
pub struct Writer<W: Write> {
    pub w: W,
    last_us: u64,
    last_task: u32,
    pub events: u64,
}

impl<W: Write> Writer<W> {
    pub fn new(w: W) -> Self {
        Writer {
            w,
            last_us: 0,
            last_task: 0,
            events: 0,
        }
    }

    /// One event line: `t_us` absolute (earlier than the last is written
    /// as no delta), `rest` the operation and its fields.
    pub fn event(
        &mut self,
        t_us: u64,
        task: u32,
        rest: std::fmt::Arguments,
    ) -> std::io::Result<()> {
        let dt = t_us.saturating_sub(self.last_us);
        self.last_us = self.last_us.max(t_us);
        self.events += 1;
        if task == self.last_task && task != 0 {
            writeln!(self.w, "{dt} . {rest}")
        } else {
            self.last_task = task;
            writeln!(self.w, "{dt} {task} {rest}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(text: &str) -> Result<Vec<Event>, ParseError> {
        let mut r = Reader::new(text.as_bytes(), "t.trace")?;
        let mut v = Vec::new();
        while let Some(e) = r.next_event() {
            v.push(e?);
        }
        Ok(v)
    }

    const OK: &str = "# foliosim-trace v1\n# cmd: cat f\n# real.vmstat.pgpgin: 65536\n\
F 1 8192 8192 254:0:4fa7d /tmp/a%20b\n\
0 0 n 1 p\n\
5 1 o 1 1\n\
10 . r 1 0 4096 3\n\
1 . r 1 4096 4096 0\n\
0 . a 1 s 0 0\n\
2 1 n 2 t\n\
3 2 mf 7 2 1 0 s\n\
1 2 pf 7 1 r\n\
0 . fa 1 0 1\n\
1 1 ma 8 4 \n\
1 1 pa 8 3 w\n\
1 1 pa 0 123456789 r\n\
0 2 x\n\
1 1 c 1\n\
1 1 mu 8\n\
0 . x\n";

    #[test]
    fn a_valid_trace_reads_in_order_with_absolute_times() {
        let r = Reader::new(OK.as_bytes(), "t").unwrap();
        assert_eq!(r.get("cmd"), Some("cat f"));
        assert_eq!(r.get("real.vmstat.pgpgin"), Some("65536"));
        let v = read_all(OK).unwrap();
        assert_eq!(v.len(), 17);
        assert_eq!(
            v[0].op,
            Op::File(FileDecl {
                id: 1,
                initial: 8192,
                size: 8192,
                ino: "254:0:4fa7d".into(),
                path: "/tmp/a%20b".into()
            })
        );
        assert_eq!((v[3].t_us, v[3].task), (15, 1));
        assert_eq!(
            v[3].op,
            Op::Read {
                ofd: 1,
                off: 0,
                len: 4096,
                dur_us: 3
            }
        );
        assert_eq!(
            v[5].op,
            Op::Fadvise {
                ofd: 1,
                advice: Advice::Sequential,
                off: 0,
                len: 0
            }
        );
        assert_eq!(
            v[8].op,
            Op::FileFault {
                vma: 7,
                index: 1,
                write: false
            }
        );
        assert_eq!((v[8].task, v[9].task), (2, 2), "'.' repeats the task");
        assert_eq!(
            v[12].op,
            Op::AnonFault {
                vma: 0,
                page: 123456789,
                write: false
            }
        );
        assert_eq!(v.last().unwrap().t_us, 27);
    }

    fn bad(body: &str) -> String {
        let text = format!(
            "# foliosim-trace v1\nF 1 0 100 - -\n0 0 n 1 p\n0 1 o 1 1\n0 1 ma 5 2\n{body}\n"
        );
        read_all(&text).unwrap_err().to_string()
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        assert_eq!(
            bad("0 1 r 9 0 1 0"),
            "t.trace:6: trace: open file 9 is not open"
        );
        assert_eq!(
            bad("x 1 x"),
            "t.trace:6: trace: time delta (µs): 'x' is not a non-negative integer"
        );
        assert_eq!(
            bad("0 7 x"),
            "t.trace:6: trace: task 7 is not alive (created by an 'n' line, not exited)"
        );
        assert_eq!(
            bad("0 1 zz"),
            "t.trace:6: trace: unknown operation 'zz' (docs/trace-format.md lists them)"
        );
        assert_eq!(
            bad("0 1 pa 5 2 r"),
            "t.trace:6: trace: page 2 is outside mapping 5"
        );
        assert_eq!(
            bad("0 1 pf 5 0 r"),
            "t.trace:6: trace: mapping 5 is anonymous: 'pa' faults, not 'pf'"
        );
        assert_eq!(
            bad("0 1 o 2 3"),
            "t.trace:6: trace: file 3 is not declared (an 'F 3 ...' line first)"
        );
        assert_eq!(
            bad("0 1 t 1 101"),
            "t.trace:6: trace: truncate of file 1 to 101 bytes, over its declared size"
        );
        // File 1 is 100 bytes: one page.
        assert_eq!(
            bad("C 1 0 2"),
            "t.trace:6: trace: cached pages 0+2 are past the end of file 1 (100 bytes)"
        );
        assert_eq!(
            bad("C 4 0 1"),
            "t.trace:6: trace: file 4 is not declared (an 'F 4 ...' line first)"
        );
        assert_eq!(
            read_all(&format!("{MAGIC}\nF 1 0 8192 - -\nC 1 1 1\n"))
                .unwrap()
                .last()
                .map(|e| e.op.clone()),
            Some(Op::Cached {
                file: 1,
                first: 1,
                pages: 1
            })
        );
        assert_eq!(
            bad("0 1 r 1 0 1 0 extra"),
            "t.trace:6: trace: unexpected 'extra' after the event's fields"
        );
        assert_eq!(
            bad("0 1 n 1 p"),
            "t.trace:6: trace: task 1 created twice (or id 0)"
        );
        assert_eq!(
            bad("0 1 x\n0 1 x"),
            "t.trace:7: trace: task 1 is not alive (created by an 'n' line, not exited)"
        );
        assert_eq!(
            bad("F 1 0 1 - -"),
            "t.trace:6: trace: file 1 declared twice (or id 0)"
        );
        assert_eq!(
            bad("0 1 r 1 1125899906842625 1 0"),
            "t.trace:6: trace: offset: 1125899906842625 is over 1 PiB"
        );
        // A mapping of one process is not another's.
        assert_eq!(
            bad("0 1 n 2 p\n0 2 pa 5 0 r"),
            "t.trace:7: trace: mapping 5 belongs to another process"
        );
        // exec drops the process's mappings.
        assert_eq!(
            bad("0 1 e\n0 1 mu 5"),
            "t.trace:7: trace: mapping 5 is not mapped"
        );
    }

    #[test]
    fn the_first_line_is_the_version() {
        let e = read_all("# foliosim-trace v9\n").unwrap_err().to_string();
        assert_eq!(
            e,
            "t.trace:1: trace: unsupported version '# foliosim-trace v9' (this foliosim reads v1)"
        );
        let e = read_all("").unwrap_err().to_string();
        assert!(
            e.starts_with("t.trace:1: trace: not a foliosim trace"),
            "{e}"
        );
        let e = read_all("# foliosim-trace v1\n0 . x\n")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "t.trace:2: trace: '.' (the previous line's task) on the first event"
        );
        let e = read_all("# foliosim-trace v1\n\u{ff}\n");
        assert!(e.is_ok() || e.is_err());
        assert!(is_rectrace("# foliosim-trace v1\r\n"));
    }

    #[test]
    fn the_writer_writes_what_the_reader_reads() {
        let mut w = Writer::new(Vec::new());
        w.event(0, 0, format_args!("n 1 p")).unwrap();
        w.event(100, 1, format_args!("ma 3 10")).unwrap();
        w.event(90, 1, format_args!("pa 3 9 w")).unwrap();
        w.event(250, 1, format_args!("x")).unwrap();
        let text = format!("{MAGIC}\n{}", String::from_utf8(w.w).unwrap());
        assert_eq!(
            text,
            "# foliosim-trace v1\n0 0 n 1 p\n100 1 ma 3 10\n0 . pa 3 9 w\n150 . x\n"
        );
        let v = read_all(&text).unwrap();
        assert_eq!(
            v.iter().map(|e| e.t_us).collect::<Vec<_>>(),
            [0, 100, 100, 250]
        );
        assert_eq!(escape_path(b"/a b%\n"), "/a%20b%25%0A");
        assert_eq!(escape_path(b""), "-");
    }
}
