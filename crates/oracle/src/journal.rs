//! The journal of host changes: every change the oracle makes to the host
//! (a sysfs/procfs value such as read_ahead_kb, a cgroup it creates, a
//! scratch file or directory) is appended here, and fsync'ed, before it is
//! made, and marked undone once it is undone. A `kill -9` leaves the entry:
//! the next oracle start (or `foliosim oracle restore`) replays the journal
//! and undoes it: old values written back, leftover cgroups emptied (their
//! processes killed: they were the oracle's) and removed, scratch files
//! removed.
//!
//! Format, one record per line, fields tab-separated (`\\`, `\t`, `\n`
//! escaped): `+ ID PID START KIND PATH OLD` when a change is about to be
//! made, `- ID` when it is undone. PID and START (the process's start time
//! in /proc/PID/stat) name the owner: entries of a process that is still
//! running are left alone, so concurrent oracles do not undo each other's
//! changes. A last line without its newline is a torn write: its change was
//! never made (the record is synced before the change), so it is ignored.
//! The file is emptied when nothing in it is pending.

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub const DEFAULT_PATH: &str = "/var/lib/foliosim/oracle-journal";
/// Overrides the journal's path (tests; several independent oracles).
pub const ENV: &str = "FOLIOSIM_ORACLE_JOURNAL";

/// What a change is, hence how it is undone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A value written to a file (sysfs, procfs: read_ahead_kb, a sysctl);
    /// undone by writing the old value back.
    Value,
    /// A cgroup directory the oracle created; undone by killing what is in
    /// it and removing it.
    Cgroup,
    /// A scratch file or tree; undone by removing it.
    Path,
    /// A scratch directory; undone by removing it if empty.
    Dir,
    /// A swap area the oracle turned on (a device node or a scratch file);
    /// undone by swapoff.
    Swap,
    /// A zram device (its sysfs directory) the oracle configured; undone by
    /// swapoff of its node (in case the swap record was torn) and a reset.
    Zram,
    /// A filesystem (tmpfs, tracefs) mounted in scratch; undone by a lazy
    /// unmount.
    Mount,
    /// A tracing instance (a directory under a tracefs mount in scratch,
    /// with its own buffer and events); undone by removing it, before its
    /// mount (newer records are undone first).
    TraceInstance,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Value => "value",
            Kind::Cgroup => "cgroup",
            Kind::Path => "path",
            Kind::Dir => "dir",
            Kind::Swap => "swap",
            Kind::Zram => "zram",
            Kind::Mount => "mount",
            Kind::TraceInstance => "trace-instance",
        }
    }
    fn parse(s: &str) -> Option<Kind> {
        Some(match s {
            "value" => Kind::Value,
            "cgroup" => Kind::Cgroup,
            "path" => Kind::Path,
            "dir" => Kind::Dir,
            "swap" => Kind::Swap,
            "zram" => Kind::Zram,
            "mount" => Kind::Mount,
            "trace-instance" => Kind::TraceInstance,
            _ => return None,
        })
    }
}

/// The journal file: `$FOLIOSIM_ORACLE_JOURNAL`, else [`DEFAULT_PATH`] for
/// root; other users (who can change no host setting) get one in the
/// temporary directory.
pub fn path() -> PathBuf {
    if let Some(p) = std::env::var_os(ENV).filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    default_path()
}

/// The journal's place without `$FOLIOSIM_ORACLE_JOURNAL`: [`DEFAULT_PATH`]
/// for root, the temporary directory for other users.
fn default_path() -> PathBuf {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if uid == 0 {
        PathBuf::from(DEFAULT_PATH)
    } else {
        std::env::temp_dir().join(format!("foliosim-oracle-journal-{uid}"))
    }
}

/// A recorded change; [`Token::done`] marks it undone.
#[derive(Debug)]
pub struct Token {
    id: String,
    journal: PathBuf,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// The start time of `pid` (field 22 of /proc/PID/stat), which tells a
/// process from a later one that reuses its pid.
fn start_time(pid: u32) -> Option<u64> {
    let s = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and ')': count after the last ')'.
    let rest = &s[s.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => o.push_str("\\\\"),
            '\t' => o.push_str("\\t"),
            '\n' => o.push_str("\\n"),
            c => o.push(c),
        }
    }
    o
}

fn unescape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.next() {
                Some('t') => o.push('\t'),
                Some('n') => o.push('\n'),
                Some(c) => o.push(c),
                None => o.push('\\'),
            }
        } else {
            o.push(c);
        }
    }
    o
}

/// Held while an oracle changes host settings and runs real cases: one
/// oracle at a time per host. Two at once would each restore the value
/// they found (read_ahead_kb, DAMON's state), so the last to finish could
/// leave the other's change in place, and their runs would disturb each
/// other's measurements. The kernel drops the flock when its holder dies
/// (a kill -9 included).
pub struct InstanceLock(#[allow(dead_code)] File);

/// The instance lock's file: beside the default journal (it does not
/// follow `$FOLIOSIM_ORACLE_JOURNAL`: the host is shared whatever the
/// journal).
pub fn instance_lock_path() -> PathBuf {
    default_path().with_extension("lock")
}

/// Takes the instance lock, waiting (and saying so on stderr, one line)
/// while another oracle holds it.
pub fn instance_lock() -> Result<InstanceLock, String> {
    let p = instance_lock_path();
    if let Some(d) = p.parent().filter(|d| !d.exists()) {
        fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&p)
        .map_err(|e| format!("oracle lock {}: {e}", p.display()))?;
    // SAFETY: flock on an open descriptor.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        eprintln!(
            "foliosim oracle: another oracle is running real cases on this host (lock {}); waiting for it",
            p.display()
        );
        // SAFETY: as above; blocking until granted.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(format!(
                "oracle lock {}: {}",
                p.display(),
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(InstanceLock(f))
}

/// An exclusive flock on the journal, held while the handle lives.
struct Locked(File);

impl Locked {
    fn open(p: &Path, create: bool) -> Result<Option<Locked>, String> {
        if create {
            if let Some(d) = p.parent().filter(|d| !d.as_os_str().is_empty()) {
                if !d.exists() {
                    fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
                }
            }
        }
        let existed = p.exists();
        let f = match OpenOptions::new()
            .read(true)
            .append(true)
            .create(create)
            .open(p)
        {
            Ok(f) => f,
            Err(e) if !create && e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("journal {}: {e}", p.display())),
        };
        if create && !existed {
            // The new file's directory entry must survive a crash too.
            if let Some(d) = p.parent().and_then(|d| File::open(d).ok()) {
                let _ = d.sync_all();
            }
        }
        // SAFETY: flock on an open descriptor; blocking until granted.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            return Err(format!(
                "locking journal {}: {}",
                p.display(),
                std::io::Error::last_os_error()
            ));
        }
        let mut l = Locked(f);
        l.drop_torn_tail(p)?;
        Ok(Some(l))
    }

    /// Cuts a last line left without its newline by a crash mid-write (its
    /// change was never made), so that the next record starts a line.
    fn drop_torn_tail(&mut self, p: &Path) -> Result<(), String> {
        let text = self.read();
        if !text.is_empty() && !text.ends_with('\n') {
            let keep = text.rfind('\n').map_or(0, |i| i + 1);
            self.0
                .set_len(keep as u64)
                .and_then(|_| self.0.sync_data())
                .map_err(|e| format!("journal {}: {e}", p.display()))?;
        }
        Ok(())
    }

    fn append(&mut self, line: &str, p: &Path) -> Result<(), String> {
        self.0
            .write_all(line.as_bytes())
            .and_then(|_| self.0.sync_data())
            .map_err(|e| format!("journal {}: {e}", p.display()))
    }

    fn read(&mut self) -> String {
        let mut s = String::new();
        let _ = self.0.seek(SeekFrom::Start(0));
        let _ = self.0.read_to_string(&mut s);
        s
    }

    /// Empties the file when no change in it is pending.
    fn compact(&mut self) {
        if pending(&self.read()).is_empty() {
            let _ = self.0.set_len(0);
            let _ = self.0.sync_data();
        }
    }
}

/// A pending (recorded, not undone) change.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub id: String,
    pub pid: u32,
    pub start: u64,
    /// The kind's name as written (a newer oracle may write kinds this one
    /// does not know: those are reported and kept).
    pub kind: String,
    pub path: PathBuf,
    pub old: String,
}

/// The changes recorded and not undone, in the order they were made.
/// Malformed and torn lines are skipped.
pub fn pending(text: &str) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    let complete = match text.rfind('\n') {
        Some(p) => &text[..p],
        None => "",
    };
    for line in complete.split('\n') {
        let f: Vec<&str> = line.split('\t').collect();
        match f.as_slice() {
            ["+", id, pid, start, kind, path, old] => {
                let (Ok(pid), Ok(start)) = (pid.parse(), start.parse()) else {
                    continue;
                };
                out.push(Entry {
                    id: id.to_string(),
                    pid,
                    start,
                    kind: unescape(kind),
                    path: PathBuf::from(unescape(path)),
                    old: unescape(old),
                });
            }
            ["-", id] => out.retain(|e| e.id != *id),
            _ => {}
        }
    }
    out
}

/// Records a change about to be made to `path` (`old`: the value to put
/// back, for [`Kind::Value`]); returns once the record is on disk.
pub fn record(kind: Kind, path: &Path, old: &str) -> Result<Token, String> {
    let journal = self::path();
    let pid = std::process::id();
    let start = start_time(pid).unwrap_or(0);
    let id = format!("{pid}.{start}.{}", SEQ.fetch_add(1, Ordering::Relaxed));
    let line = format!(
        "+\t{id}\t{pid}\t{start}\t{}\t{}\t{}\n",
        kind.name(),
        escape(&path.to_string_lossy()),
        escape(old)
    );
    let mut l = Locked::open(&journal, true)?.expect("created");
    l.append(&line, &journal)?;
    Ok(Token { id, journal })
}

impl Token {
    /// The change is undone (or was never made): forget it.
    pub fn done(self) {
        let Ok(Some(mut l)) = Locked::open(&self.journal, false) else {
            return;
        };
        if let Err(e) = l.append(&format!("-\t{}\n", self.id), &self.journal) {
            eprintln!("foliosim oracle: {e}");
        }
        l.compact();
    }
}

/// Kills what is left in a cgroup directory and removes it.
pub fn empty_and_remove_cgroup(dir: &Path) -> Result<usize, String> {
    let mut killed = 0;
    for _ in 0..100 {
        let pids: Vec<i32> = fs::read_to_string(dir.join("cgroup.procs"))
            .unwrap_or_default()
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
        if pids.is_empty() {
            break;
        }
        for pid in pids {
            // SAFETY: kill has no memory-safety preconditions.
            if unsafe { libc::kill(pid, libc::SIGKILL) } == 0 {
                killed += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    for _ in 0..50 {
        match fs::remove_dir(dir) {
            Ok(()) => return Ok(killed),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(killed),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    Err(format!(
        "could not remove cgroup {}; remove it with rmdir",
        dir.display()
    ))
}

/// swapoff(2) of a swap area.
pub fn swapoff(p: &Path) -> std::io::Result<()> {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: a NUL-terminated path.
    if unsafe { libc::swapoff(c.as_ptr()) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// swapoff's answer for an area that is not swapped on (EINVAL), or gone.
pub fn is_not_swap(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOENT))
}

/// Undoes one change; says what it did.
fn undo(e: &Entry) -> Result<String, String> {
    let p = &e.path;
    let kind = Kind::parse(&e.kind).ok_or_else(|| {
        format!(
            "unknown change kind '{}' for {} (kept)",
            e.kind,
            p.display()
        )
    })?;
    match kind {
        Kind::Value => {
            fs::write(p, &e.old)
                .map_err(|err| format!("writing '{}' back to {}: {err}", e.old, p.display()))?;
            Ok(format!("restored {} to {}", p.display(), e.old))
        }
        Kind::Cgroup => {
            if !p.exists() {
                return Ok(format!("cgroup {} was already gone", p.display()));
            }
            let n = empty_and_remove_cgroup(p)?;
            Ok(format!(
                "removed cgroup {} (killed {n} process(es) left in it)",
                p.display()
            ))
        }
        Kind::Path => match fs::symlink_metadata(p) {
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                Ok(format!("scratch {} was already gone", p.display()))
            }
            Err(err) => Err(format!("{}: {err}", p.display())),
            Ok(md) => {
                let r = if md.is_dir() {
                    fs::remove_dir_all(p)
                } else {
                    fs::remove_file(p)
                };
                r.map_err(|err| format!("removing {}: {err}", p.display()))?;
                Ok(format!("removed scratch {}", p.display()))
            }
        },
        Kind::Swap => match swapoff(p) {
            Ok(()) => Ok(format!("turned swap {} off", p.display())),
            Err(err) if is_not_swap(&err) => Ok(format!("swap {} was already off", p.display())),
            Err(err) => Err(format!("swapoff {}: {err}", p.display())),
        },
        Kind::Zram => {
            let node = Path::new("/dev").join(p.file_name().unwrap_or_default());
            let _ = swapoff(&node);
            let reset = p.join("reset");
            fs::write(&reset, "1")
                .map_err(|err| format!("writing 1 to {}: {err}", reset.display()))?;
            Ok(format!("reset {}", p.display()))
        }
        Kind::Mount => {
            let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes())
                .map_err(|_| format!("{}: NUL in path", p.display()))?;
            // SAFETY: a NUL-terminated path; umount2 has no other preconditions.
            if unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) } == 0 {
                Ok(format!("unmounted {}", p.display()))
            } else {
                let err = std::io::Error::last_os_error();
                match err.raw_os_error() {
                    // Not a mount point (any more), or gone.
                    Some(libc::EINVAL) | Some(libc::ENOENT) => {
                        Ok(format!("{} was not mounted", p.display()))
                    }
                    _ => Err(format!("umount {}: {err}", p.display())),
                }
            }
        }
        Kind::TraceInstance => match fs::remove_dir(p) {
            Ok(()) => Ok(format!("removed tracing instance {}", p.display())),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {
                Ok(format!("tracing instance {} was already gone", p.display()))
            }
            Err(err) => Err(format!("removing tracing instance {}: {err}", p.display())),
        },
        Kind::Dir => match fs::remove_dir(p) {
            Ok(()) => Ok(format!("removed scratch directory {}", p.display())),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(format!(
                "scratch directory {} was already gone",
                p.display()
            )),
            // Someone else's files in it now: leave it, and forget it.
            Err(_) => Ok(format!(
                "left scratch directory {} (not empty)",
                p.display()
            )),
        },
    }
}

/// What a replay did: one line per change undone, and those it could not.
#[derive(Debug, Default)]
pub struct Replay {
    pub restored: Vec<String>,
    pub failed: Vec<String>,
}

/// Undoes, newest first, every pending change whose owner is no longer
/// running. Reads only, and creates nothing, when the journal is absent.
pub fn replay() -> Result<Replay, String> {
    replay_at(&path())
}

fn replay_at(journal: &Path) -> Result<Replay, String> {
    let mut r = Replay::default();
    let Some(mut l) = Locked::open(journal, false)? else {
        return Ok(r);
    };
    let text = l.read();
    for e in pending(&text).iter().rev() {
        if start_time(e.pid) == Some(e.start) {
            continue; // its oracle is still running
        }
        match undo(e) {
            Ok(msg) => {
                l.append(&format!("-\t{}\n", e.id), journal)?;
                r.restored.push(msg);
            }
            Err(msg) => r.failed.push(msg),
        }
    }
    l.compact();
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pending_pairs_records_and_ignores_torn_lines() {
        let t = "+\t1.5.0\t1\t5\tvalue\t/sys/x\t128\n\
                 +\t1.5.1\t1\t5\tcgroup\t/cg/a\\tb\t\n\
                 garbage\n\
                 -\t1.5.0\n\
                 +\t1.5.2\t1\t5\tpath\t/tmp/f\t";
        let p = pending(t);
        assert_eq!(p.len(), 1, "{p:?}");
        assert_eq!(p[0].id, "1.5.1");
        assert_eq!(p[0].kind, "cgroup");
        assert_eq!(p[0].path, PathBuf::from("/cg/a\tb"));
        assert!(pending("").is_empty());
        assert!(pending("+\t1.5.0\t1\t5\tvalue\t/x\t1").is_empty(), "torn");
    }

    #[test]
    fn escaping_round_trips() {
        for s in ["plain", "a\tb\nc\\d", "\\t", "end\\"] {
            assert_eq!(unescape(&escape(s)), s);
            assert!(!escape(s).contains(['\t', '\n']));
        }
    }

    #[test]
    fn replay_undoes_dead_owners_changes_newest_first() {
        let d = std::env::temp_dir().join(format!("foliosim-journal-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(d.join("scratch/tree")).unwrap();
        fs::create_dir_all(d.join("scratch/inst")).unwrap();
        let j = d.join("sub/journal");
        let ra = d.join("read_ahead_kb");
        fs::write(&ra, "8192").unwrap();
        fs::write(d.join("scratch/f"), "x").unwrap();
        fs::write(d.join("scratch/tree/g"), "x").unwrap();
        let me = std::process::id();
        let mine = start_time(me).unwrap();
        let line = |id: &str, pid: u32, start: u64, kind: &str, p: &Path, old: &str| {
            format!(
                "+\t{id}\t{pid}\t{start}\t{kind}\t{}\t{old}\n",
                escape(&p.to_string_lossy())
            )
        };
        // A dead owner (pid 0 has no /proc entry) made these; our own
        // running process owns the last one; one kind is from the future.
        let text = [
            line("a", 0, 1, "dir", &d.join("scratch"), ""),
            line("b", 0, 1, "value", &ra, "128"),
            line("c", 0, 1, "cgroup", &d.join("no-such-group"), ""),
            line("d", 0, 1, "path", &d.join("scratch/f"), ""),
            line("e", 0, 1, "path", &d.join("scratch/tree"), ""),
            line("f", 0, 1, "swapon", Path::new("/dev/zram9"), ""),
            line("h", 0, 1, "trace-instance", &d.join("scratch/inst"), ""),
            line("i", 0, 1, "trace-instance", &d.join("no-inst"), ""),
            line("g", me, mine, "value", &ra, "4"),
        ]
        .concat()
            + "+\tz\t0\t1\tvalue\t/x"; // torn: never applied
        assert!(
            replay_at(&j).unwrap().restored.is_empty(),
            "no journal: nothing to do"
        );
        assert!(!j.exists(), "and nothing created");
        fs::create_dir_all(j.parent().unwrap()).unwrap();
        fs::write(&j, text).unwrap();
        let r = replay_at(&j).unwrap();
        assert_eq!(
            r.restored,
            [
                format!(
                    "tracing instance {} was already gone",
                    d.join("no-inst").display()
                ),
                format!(
                    "removed tracing instance {}",
                    d.join("scratch/inst").display()
                ),
                format!("removed scratch {}", d.join("scratch/tree").display()),
                format!("removed scratch {}", d.join("scratch/f").display()),
                format!(
                    "cgroup {} was already gone",
                    d.join("no-such-group").display()
                ),
                format!("restored {} to 128", ra.display()),
                format!("removed scratch directory {}", d.join("scratch").display()),
            ]
        );
        assert_eq!(
            r.failed,
            ["unknown change kind 'swapon' for /dev/zram9 (kept)"]
        );
        assert_eq!(fs::read_to_string(&ra).unwrap(), "128");
        assert!(!d.join("scratch").exists());
        let left: Vec<String> = pending(&fs::read_to_string(&j).unwrap())
            .into_iter()
            .map(|e| e.id)
            .collect();
        assert_eq!(left, ["f", "g"], "unknown and live entries stay");
        // A second replay has nothing more to undo.
        let r = replay_at(&j).unwrap();
        assert!(r.restored.is_empty());
        assert_eq!(r.failed.len(), 1);
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn own_start_time_is_read() {
        let a = start_time(std::process::id()).unwrap();
        assert_eq!(start_time(std::process::id()), Some(a));
        assert_eq!(start_time(u32::MAX), None);
    }
}
