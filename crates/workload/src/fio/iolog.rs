//! fio's I/O logs (iolog.c of fio 3.33): versions 2 and 3 as `read_iolog`
//! reads them, the v3 lines `write_iolog` writes, and the `replay_*`
//! options. Written afresh from fio's source and HOWTO.
//!
//! The first line is `fio version 2 iolog` or `fio version 3 iolog` (fio
//! compares the line's start only). Every further line is one action:
//!
//! ```text
//! v2:           FILE add|open|close      FILE read|write|trim|sync|datasync|wait OFFSET LENGTH
//! v3: USEC      FILE add|open|close USEC FILE read|write|trim|sync|datasync     OFFSET LENGTH
//! ```
//!
//! * v3's timestamp is in microseconds (fio writes utime_since_now() and
//!   sleeps the difference with usec_sleep()). Each entry waits its
//!   timestamp minus the previous line's, times 100 / replay_time_scale,
//!   after the previous entry was issued (delay_since_ttime(),
//!   iolog_delay()); no wait for the first line, after a line stamped 0,
//!   for a timestamp going backwards, or with replay_no_stall.
//! * v2's `wait` sleeps until OFFSET milliseconds after fio started (the
//!   code's mtime_since_genesis(); the HOWTO's "microseconds since the
//!   previous wait" is not what 3.33 does); replay_no_stall drops it. v3
//!   has no `wait`.
//! * Files: `add` makes a file known by the name as written (relative
//!   names are fio's working directory's); with replay_redirect every
//!   line's file is that one, added once, and a second `open` of it is
//!   ignored. Offsets are divided by replay_scale, then rounded down to
//!   replay_align (ipo_bytes_align()); lengths are kept.
//!
//! fio prints an error and skips a line it cannot parse (and aborts on an
//! I/O to a file not added or not open); foliosim refuses the log with
//! one line naming the log, the line and what is wrong. The exception is
//! `sync_file_range`, which fio's writer writes and its reader skips:
//! skipped here too.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::{FioJob, IoEngine, JobFile, ParseError};

pub const HEADER_V2: &str = "fio version 2 iolog";
pub const HEADER_V3: &str = "fio version 3 iolog";
/// fio reads each name and action with "%256s".
const NAME_MAX: usize = 256;
/// The option errors are reported under.
const OPT: &str = "read_iolog";

/// One line's action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Act {
    /// Also an `open` or `close` that does nothing (see `file_state`).
    Add,
    Open,
    Close,
    Read,
    Write,
    Trim,
    Sync,
    Datasync,
    /// v2 only.
    Wait,
}

impl Act {
    fn parse(s: &str) -> Option<Act> {
        Some(match s {
            "add" => Act::Add,
            "open" => Act::Open,
            "close" => Act::Close,
            "read" => Act::Read,
            "write" => Act::Write,
            "trim" => Act::Trim,
            "sync" => Act::Sync,
            "datasync" => Act::Datasync,
            "wait" => Act::Wait,
            _ => return None,
        })
    }

    /// fio's io_ddir_name() and file action names.
    pub fn name(self) -> &'static str {
        match self {
            Act::Add => "add",
            Act::Open => "open",
            Act::Close => "close",
            Act::Read => "read",
            Act::Write => "write",
            Act::Trim => "trim",
            Act::Sync => "sync",
            Act::Datasync => "datasync",
            Act::Wait => "wait",
        }
    }

    /// A file action: no offset and length on its line.
    pub fn on_file(self) -> bool {
        matches!(self, Act::Add | Act::Open | Act::Close)
    }

    /// Moves data (fio's ddir_rw()): a length of 0 is refused.
    pub fn is_data(self) -> bool {
        matches!(self, Act::Read | Act::Write | Act::Trim)
    }
}

/// One entry of the log as fio queues it (its io_piece).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Entry {
    pub act: Act,
    /// Index in [`IoLog::files`] (0 for `wait`).
    pub file: u32,
    /// Bytes, after replay_scale and replay_align; `wait`: milliseconds
    /// after fio's start.
    pub offset: u64,
    pub len: u64,
    /// Microseconds to sleep after the previous entry's issue (v3).
    pub delay_us: u64,
}

/// A parsed log: its files in the order they were added, and entries.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IoLog {
    pub version: u8,
    pub files: Vec<String>,
    pub entries: Vec<Entry>,
}

impl IoLog {
    /// Entries with action `a`.
    pub fn count(&self, a: Act) -> u64 {
        self.entries.iter().filter(|e| e.act == a).count() as u64
    }

    /// Bytes of the entries with action `a`.
    pub fn bytes(&self, a: Act) -> u64 {
        let b = self.entries.iter().filter(|e| e.act == a);
        b.fold(0u64, |s, e| s.saturating_add(e.len))
    }

    /// How far into file `f` the log reads, writes or trims: the length
    /// the file must have.
    pub fn extent(&self, f: u32) -> u64 {
        let data = self
            .entries
            .iter()
            .filter(|e| e.file == f && e.act.is_data());
        data.map(|e| e.offset.saturating_add(e.len))
            .max()
            .unwrap_or(0)
    }

    /// Reads and writes: fio sets the job's direction from them
    /// (td_ddir); None when there are neither.
    pub fn rw(&self) -> Option<super::Rw> {
        use super::Rw;
        match (self.count(Act::Read) > 0, self.count(Act::Write) > 0) {
            (true, true) => Some(Rw::ReadWrite),
            (true, false) => Some(Rw::Read),
            (false, true) => Some(Rw::Write),
            (false, false) => None,
        }
    }
}

/// The options that shape a log as fio reads it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReplayOpts {
    pub redirect: Option<String>,
    pub no_stall: bool,
    /// A power of two; 0: none.
    pub align: u64,
    /// 0: none (fio's default is 1).
    pub scale: u64,
    /// Percent, at least 1.
    pub time_scale: u64,
}

impl Default for ReplayOpts {
    fn default() -> Self {
        ReplayOpts {
            redirect: None,
            no_stall: false,
            align: 0,
            scale: 1,
            time_scale: 100,
        }
    }
}

fn perr(file: &str, line: usize, msg: impl Into<String>) -> ParseError {
    ParseError {
        file: file.to_string(),
        line,
        option: OPT.into(),
        msg: msg.into(),
    }
}

/// Reads and parses the log at `path`. Errors name the log.
pub fn load(path: &str, o: &ReplayOpts) -> Result<Arc<IoLog>, ParseError> {
    let text = read_text(path).map_err(|m| perr(path, 0, m))?;
    parse(&text, path, o).map(Arc::new)
}

/// The text of the log at `path` (relative to the working directory, as
/// fio's fopen()).
pub fn read_text(path: &str) -> Result<String, String> {
    if path == "-" {
        return Err("reading the log from standard input is not supported".into());
    }
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read: {e}"))?;
    if !meta.is_file() {
        // fio would also take a Unix socket; a FIFO or device could block.
        return Err("not a regular file".into());
    }
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read: {e}"))?;
    if is_blktrace(&bytes) {
        return Err("a blktrace file: only fio's own iologs (v2, v3) are supported".into());
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// blktrace's BLK_IO_TRACE_MAGIC in either byte order (fio's is_blktrace()).
fn is_blktrace(b: &[u8]) -> bool {
    let Some(m) = b.get(..4) else { return false };
    let m = [m[0], m[1], m[2], m[3]];
    [u32::from_le_bytes(m), u32::from_be_bytes(m)]
        .iter()
        .any(|v| v & 0xffff_ff00 == 0x6561_7400)
}

/// Parses a log's text; `label` names it in errors.
pub fn parse(text: &str, label: &str, o: &ReplayOpts) -> Result<IoLog, ParseError> {
    let mut lines = text.lines();
    let first = lines.next().ok_or_else(|| {
        perr(
            label,
            1,
            "empty: no 'fio version 2 iolog' or 'fio version 3 iolog' line",
        )
    })?;
    let version = if first.starts_with(HEADER_V2) {
        2
    } else if first.starts_with(HEADER_V3) {
        3
    } else {
        let shown: String = first.chars().take(40).collect();
        return Err(perr(label, 1, format!(
            "not a fio iolog: the first line '{shown}' is not 'fio version 2 iolog' or 'fio version 3 iolog' (version 1 is no longer supported)"
        )));
    };
    let mut r = Reader {
        o,
        log: IoLog {
            version,
            ..IoLog::default()
        },
        index: Default::default(),
        open: Vec::new(),
        last_ttime: 0,
    };
    for (i, l) in lines.enumerate() {
        r.line(l).map_err(|m| perr(label, i + 2, m))?;
    }
    r.finish().map_err(|m| perr(label, 0, m))
}

struct Reader<'a> {
    o: &'a ReplayOpts,
    log: IoLog,
    /// Each file's index in `log.files`, and whether it is open.
    index: std::collections::HashMap<String, usize>,
    open: Vec<bool>,
    /// fio's io_log_last_ttime.
    last_ttime: u64,
}

/// A decimal number: digits only (fio's sscanf would take signs and
/// stop at the first non-digit).
fn number(s: &str, what: &str) -> Result<u64, String> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("{what} '{s}' is not a number"));
    }
    s.parse()
        .map_err(|_| format!("{what} '{s}' is out of range (at most {})", u64::MAX))
}

/// The line's action, once its fields (after v3's timestamp) are as
/// many as the action takes.
fn action(f: &[&str], v3: bool) -> Result<Act, String> {
    let ts = if v3 { "TIMESTAMP " } else { "" };
    let Some(&a) = f.get(1) else {
        return Err(format!(
            "missing field: expected {ts}FILE ACTION [OFFSET LENGTH]"
        ));
    };
    let waits = if v3 { "" } else { ", wait" };
    let act = Act::parse(a).ok_or_else(|| {
        format!("unknown action '{a}' (add, open, close, read, write, sync, datasync, trim{waits})")
    })?;
    if v3 && act == Act::Wait {
        return Err(
            "'wait' is not allowed in a version 3 iolog: the timestamps time the replay".into(),
        );
    }
    let (want, form) = match act.on_file() {
        true => (2, "FILE ACTION"),
        false => (4, "FILE ACTION OFFSET LENGTH"),
    };
    if f.len() != want {
        let n = v3 as usize;
        return Err(format!(
            "'{a}' takes {} fields ({ts}{form}), found {}",
            want + n,
            f.len() + n
        ));
    }
    if f[0].len() > NAME_MAX {
        return Err(format!(
            "file name longer than {NAME_MAX} bytes (fio reads at most {NAME_MAX})"
        ));
    }
    Ok(act)
}

impl Reader<'_> {
    fn line(&mut self, l: &str) -> Result<(), String> {
        let all: Vec<&str> = l.split_ascii_whitespace().collect();
        if all.is_empty() || l.starts_with(HEADER_V2) || l.starts_with(HEADER_V3) {
            // A log appended to by a second run (fio opens it "a") has a
            // header further down; fio's reader complains and goes on.
            return Ok(());
        }
        let v3 = self.log.version == 3;
        let (ttime, f) = match v3 {
            true => (Some(number(all[0], "timestamp")?), &all[1..]),
            false => (None, &all[..]),
        };
        if f.get(1) == Some(&"sync_file_range") {
            // fio writes these and skips them when reading.
            if let Some(t) = ttime {
                self.delay(t);
            }
            return Ok(());
        }
        let act = action(f, v3)?;
        let (offset, len) = match act.on_file() {
            true => (0, 0),
            false => (number(f[2], "offset")?, number(f[3], "length")?),
        };
        if len > u32::MAX as u64 {
            return Err(format!(
                "length {len} is more than fio's limit ({})",
                u32::MAX
            ));
        }
        let delay_us = ttime.map_or(0, |t| self.delay(t));
        self.entry(f[0], act, offset, len, delay_us)
    }

    /// delay_since_ttime(): the wait after the previous line, in µs.
    fn delay(&mut self, t: u64) -> u64 {
        let last = std::mem::replace(&mut self.last_ttime, t);
        if last == 0 || self.o.no_stall || t < last {
            return 0;
        }
        let scale = self.o.time_scale;
        if scale == 100 {
            return t - last;
        }
        // fio's double arithmetic, truncated as its conversion does.
        ((t - last) as f64 * (100.0 / scale as f64)) as u64
    }

    fn entry(
        &mut self,
        name: &str,
        act: Act,
        off: u64,
        len: u64,
        delay_us: u64,
    ) -> Result<(), String> {
        let name = self.o.redirect.as_deref().unwrap_or(name);
        if act == Act::Wait {
            // fio looks the file up but never uses it.
            if !self.o.no_stall {
                self.push(Act::Wait, 0, off, 0, delay_us);
            }
            return Ok(());
        }
        let found = self.index.get(name).copied();
        let file = match (act, found) {
            (Act::Add, Some(f)) => f,
            (Act::Add, None) => {
                // A name added twice is one file: fio's lookups find the first.
                self.log.files.push(name.to_string());
                self.open.push(false);
                self.index.insert(name.to_string(), self.open.len() - 1);
                self.open.len() - 1
            }
            (_, None) => {
                return Err(format!(
                    "file '{name}' was not added (its 'add' line must come first)"
                ))
            }
            (_, Some(f)) => f,
        };
        let act = self.file_state(file, name, act)?;
        if act.is_data() && len == 0 {
            return Err(format!(
                "'{}' of 0 bytes (fio 3.33 ends the replay there)",
                act.name()
            ));
        }
        let mut offset = off;
        if self.o.scale > 0 {
            offset /= self.o.scale;
        }
        if self.o.align > 0 {
            offset &= !(self.o.align - 1);
        }
        self.push(act, file as u32, offset, len, delay_us);
        Ok(())
    }

    /// Open and close as fio's asserts allow them; returns the action to
    /// keep (a re-open replay_redirect ignores, and put_file() of a file
    /// not open, do nothing).
    fn file_state(&mut self, f: usize, name: &str, act: Act) -> Result<Act, String> {
        let open = self.open[f];
        match act {
            Act::Open if open && self.o.redirect.is_some() => Ok(Act::Add),
            Act::Open if open => Err(format!("file '{name}' is already open (fio 3.33 aborts)")),
            Act::Add => Ok(act),
            Act::Close if !open => Ok(Act::Add),
            Act::Open | Act::Close => {
                self.open[f] = act == Act::Open;
                Ok(act)
            }
            _ if !open => Err(format!(
                "file '{name}' is not open (fio 3.33 aborts: an 'open' line must come first)"
            )),
            _ => Ok(act),
        }
    }

    fn push(&mut self, act: Act, file: u32, offset: u64, len: u64, delay_us: u64) {
        self.log.entries.push(Entry {
            act,
            file,
            offset,
            len,
            delay_us,
        });
    }

    /// read_iolog()'s end: fio refuses a log without reads, writes or
    /// waits; the model needs a file.
    fn finish(self) -> Result<IoLog, String> {
        let l = &self.log;
        if l.rw().is_none() && l.count(Act::Wait) == 0 {
            return Err("no read, write or wait in the log (fio 3.33 fails the job: 'failed initializing iolog')".into());
        }
        if l.files.is_empty() {
            return Err("no file added in the log".into());
        }
        Ok(self.log)
    }
}

/// read_iolog, write_iolog and replay_* as a job section sets them.
#[derive(Clone, Debug, Default)]
pub(super) struct IologOpts {
    /// The log (a ':' list gives numjobs clones one each, in turn), and
    /// where the option was set: file label and line.
    pub read: Option<(String, String, usize)>,
    pub write: Option<String>,
    pub replay: ReplayOpts,
    /// Where relative read_iolog paths are read from; None: the working
    /// directory, as fio (fio::parse_job_str_logs_in).
    pub dir: Option<std::path::PathBuf>,
}

/// Flags: bare means 1 (fio's FIO_OPT_BOOL).
pub(super) const FLAGS: &[&str] = &["replay_no_stall", "read_iolog_chunked"];

/// Applies option `key`; None when it is not one of this module's.
pub(super) fn option(
    o: &mut IologOpts,
    key: &str,
    val: Option<&str>,
    kb: u64,
    at: (&str, usize),
) -> Option<Result<(), String>> {
    let need = || {
        val.filter(|s| !s.is_empty())
            .ok_or_else(|| "needs a value".to_string())
    };
    let r = match key {
        "read_iolog" => need().map(|v| o.read = Some((v.to_string(), at.0.to_string(), at.1))),
        "write_iolog" => need().map(|v| o.write = Some(v.to_string())),
        // How fio reads the log (all at once or in parts), not what it replays.
        "read_iolog_chunked" => super::parse_bool(val).map(|_| ()),
        "replay_no_stall" => super::parse_bool(val).map(|b| o.replay.no_stall = b),
        "replay_redirect" => need().map(|v| o.replay.redirect = Some(v.to_string())),
        "replay_align" => fio_int(need(), kb, 0).and_then(|n| match n.is_power_of_two() {
            true => Ok(o.replay.align = n),
            false => Err(format!("{n}: must be a power of 2")),
        }),
        "replay_scale" => fio_int(need(), kb, 0).map(|n| o.replay.scale = n),
        "replay_time_scale" => fio_int(need(), kb, 1).map(|n| o.replay.time_scale = n),
        // fio 3.33 skips these kinds in blktrace replays only.
        "replay_skip" => need().and_then(replay_skip),
        _ => return None,
    };
    Some(r)
}

/// fio's FIO_OPT_INT: a size (suffixes, kb_base), kept in 32 bits.
fn fio_int(v: Result<&str, String>, kb: u64, min: u64) -> Result<u64, String> {
    let n = super::parse_size(v?, kb)?;
    if n > u32::MAX as u64 || n < min {
        return Err(format!("{n}: out of range ({min} to {})", u32::MAX));
    }
    Ok(n)
}

fn replay_skip(v: &str) -> Result<(), String> {
    for k in v.trim().split(',') {
        if !matches!(k, "read" | "write" | "trim" | "sync") {
            return Err(format!("unknown skip type '{k}' (read, write, trim, sync)"));
        }
    }
    Ok(())
}

/// fio's get_name_by_idx(): clone `idx` replays the idx-th log of a ':'
/// list, wrapping.
pub(super) fn log_for_clone(list: &str, idx: u32) -> String {
    let names = super::split_filenames(list);
    match names.len() {
        0 => list.to_string(),
        n => names[idx as usize % n].clone(),
    }
}

/// write_iolog: one job's issued I/O as fio 3.33 logs it (v3; µs since
/// the job started): its files added at the start, each opened before its
/// first operation (fio opens them as it first uses them) and closed at
/// the end; every I/O and sync at its issue (log_io_u(), log_file()).
/// Write errors are not reported, as fio ignores its fprintf()'s.
pub struct LogWriter<W: std::io::Write> {
    out: W,
    files: Vec<String>,
    opened: Vec<bool>,
    start_ns: u64,
    /// A sync's line carries the offset of the I/O before it (fio reuses
    /// the io_u) and length 0.
    last_off: u64,
}

impl<W: std::io::Write> LogWriter<W> {
    pub fn new(mut out: W, files: Vec<String>, start_ns: u64) -> Self {
        let _ = writeln!(out, "{HEADER_V3}");
        for f in &files {
            let _ = writeln!(out, "0 {f} add");
        }
        LogWriter {
            out,
            opened: vec![false; files.len()],
            files,
            start_ns,
            last_off: 0,
        }
    }

    fn line(&mut self, now_ns: u64, file: usize, what: std::fmt::Arguments) {
        let us = now_ns.saturating_sub(self.start_ns) / 1000;
        let Some(name) = self.files.get(file) else {
            return;
        };
        if !self.opened[file] {
            self.opened[file] = true;
            let _ = writeln!(self.out, "{us} {name} open");
        }
        let _ = writeln!(self.out, "{us} {name} {what}");
    }

    /// A read, write or trim.
    pub fn io(&mut self, now_ns: u64, file: usize, act: Act, off: u64, len: u64) {
        self.last_off = off;
        self.line(now_ns, file, format_args!("{} {off} {len}", act.name()));
    }

    /// fsync (`Act::Sync`) or fdatasync (`Act::Datasync`).
    pub fn sync(&mut self, now_ns: u64, file: usize, act: Act) {
        let off = self.last_off;
        self.line(now_ns, file, format_args!("{} {off} 0", act.name()));
    }

    /// sync_file_range over [off, end): fio writes the line, and its
    /// reader skips it.
    pub fn sync_file_range(&mut self, now_ns: u64, file: usize, off: u64, end: u64) {
        let len = end.saturating_sub(off);
        self.line(now_ns, file, format_args!("sync_file_range {off} {len}"));
    }

    /// The job is done: its open files close.
    pub fn finish(mut self, now_ns: u64) -> std::io::Result<()> {
        let us = now_ns.saturating_sub(self.start_ns) / 1000;
        for (f, name) in self.files.iter().enumerate() {
            if self.opened[f] {
                writeln!(self.out, "{us} {name} close")?;
            }
        }
        self.out.flush()
    }
}

impl super::Builder {
    /// read_iolog: fio's init_iolog() drops the job's files and adds the
    /// log's, and the log gives the direction; rw, bs, size, offset,
    /// filename, loops, io_size and number_ios give nothing.
    pub(super) fn finish_replay(&self, file: &str, line: usize) -> Result<Vec<FioJob>, ParseError> {
        let (list, at_file, at_line) = self.iolog.read.clone().expect("read_iolog set");
        let at = |m: String| super::perr(&at_file, at_line, OPT, m);
        self.replay_refusal().map_err(at)?;
        let mut logs: BTreeMap<String, Arc<IoLog>> = BTreeMap::new();
        let mut log_of = |jobnum: u32| -> Result<Arc<IoLog>, ParseError> {
            let path = log_for_clone(&list, jobnum);
            if let Some(l) = logs.get(&path) {
                return Ok(l.clone());
            }
            let at_path = match &self.iolog.dir {
                Some(d) if !path.starts_with('/') && path != "-" => {
                    d.join(&path).display().to_string()
                }
                _ => path.clone(),
            };
            let text = read_text(&at_path).map_err(|m| at(format!("'{at_path}': {m}")))?;
            let log = Arc::new(parse(&text, &at_path, &self.iolog.replay)?);
            logs.insert(path, log.clone());
            Ok(log)
        };
        let first = log_of(0)?;
        let mut b = self.clone();
        b.nz = [None; 5];
        b.size = Some(b.rw_min_bs().max(1));
        b.filesize = None;
        b.ctl.filesize_range = (0, 0);
        (
            b.offset,
            b.offset_increment,
            b.io_size,
            b.number_ios,
            b.loops,
        ) = (0, 0, 0, 0, 1);
        b.filename = None;
        b.rw = first.rw().unwrap_or(b.rw);
        let mut jobs = b.finish_bytes(file, line)?;
        for j in &mut jobs {
            let log = log_of(j.jobnum)?;
            if j.ioengine == IoEngine::PageFault {
                // The region is `size=` bytes, which the log's bytes make
                // (replay_job); the engine keeps it with the first file
                // only and fails I/O past it.
                let size = [Act::Read, Act::Write, Act::Trim]
                    .iter()
                    .fold(0u64, |s, &a| s.saturating_add(log.bytes(a)));
                if log.files.len() > 1 || log.extent(0) > size {
                    return Err(at(format!(
                        "ioengine=page_fault maps the log's {size} bytes (fio's size from a replay) for its first file only; this log goes to {} files and up to byte {}, where the engine fails the I/O",
                        log.files.len(),
                        log.extent(0)
                    )));
                }
            }
            replay_job(j, log);
        }
        Ok(jobs)
    }

    /// Options a replay does not model.
    fn replay_refusal(&self) -> Result<(), String> {
        let why = if self.directory.is_some() {
            "directory: fio 3.33 adds the log's files under it but looks them up by the log's names, and crashes"
        } else if self.ctl.ctl.verify {
            "verify: not modelled for a replay"
        } else if self.ctl.ctl.pre_read {
            "pre_read: not modelled for a replay"
        } else if self.zonemode != super::builder::ZoneMode::NotSet || self.zonesize != 0 {
            "zonemode / zonesize: not modelled for a replay"
        } else if self.ioengine.is_file_op() || self.ioengine == IoEngine::CpuIo {
            "this ioengine does no reads or writes to replay"
        } else {
            return Ok(());
        };
        Err(format!("cannot be combined with {why}"))
    }
}

/// The job as the log makes it: its files (each as long as the log goes
/// into it), its direction, and the log's bytes as its size (fio adds
/// every entry's length to `size`).
fn replay_job(j: &mut FioJob, log: Arc<IoLog>) {
    j.files = (0..log.files.len() as u32)
        .map(|f| JobFile {
            name: log.files[f as usize].clone(),
            offset: 0,
            size: log.extent(f),
        })
        .collect();
    j.filename = j.files[0].name.clone();
    j.nrfiles = j.files.len() as u32;
    j.offset = 0;
    j.size = [Act::Read, Act::Write, Act::Trim]
        .iter()
        .fold(0u64, |s, &a| s.saturating_add(log.bytes(a)));
    j.rw = log.rw().unwrap_or(j.rw);
    for (d, a) in [Act::Read, Act::Write].into_iter().enumerate() {
        let big = log.entries.iter().filter(|e| e.act == a).map(|e| e.len);
        j.max_bs[d] = j.max_bs[d].max(big.max().unwrap_or(0));
    }
    (j.io_size, j.number_ios, j.loops) = (None, None, 1);
    j.size_from_device = false;
    j.ctl.size_from_file = false;
    // fio: "read iolog overrides write_iolog".
    j.write_iolog = None;
    j.iolog = Some(log);
}
