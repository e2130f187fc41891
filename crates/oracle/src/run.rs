//! One case on the real host, repeated, next to the model's figures.
//!
//! Every repeat: drop the page cache, warm the workload's own executable
//! (so its text does not count as the workload's major faults), create a
//! fresh memory cgroup with the case's limit, run the workload in it, read
//! memory.stat and the /proc/vmstat deltas, remove the group. Around the
//! repeats: set the case's read_ahead_kb and restore it, lay out the files
//! and remove them (unless kept). The guards restore/remove on error and
//! panic too.

use crate::cases::{Case, CaseKind};
use crate::cgroup::{read_vmstat, vmstat_delta, MemCgroup};
use crate::compare::{compare_paired, CounterRow};
use crate::ext4::FileLayout;
use crate::host::HostInfo;
use crate::jobsafe;
use crate::journal::{self, Kind, Token};
use crate::probe::{self, ProbeOutcome};
use crate::{fio, ModelFn};
use foliosim_workload::mmap_probe::ProbeSpec;
use serde::Serialize;
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

pub const DEFAULT_DIR: &str = "/var/tmp/foliosim-oracle";
pub const DEFAULT_REPEAT: u32 = 3;

#[derive(Clone, Debug)]
pub struct RunOpts {
    /// Scratch directory for the workload's files (on the device under test).
    pub dir: PathBuf,
    pub repeat: u32,
    /// Keep the files after the run.
    pub keep: bool,
    /// The probe child: program and leading arguments (the CLI passes
    /// `[current_exe, "oracle", "__probe"]`); [`probe_child_args`] follow.
    pub probe_cmd: Vec<OsString>,
    /// Progress lines on stderr.
    pub verbose: bool,
    /// A scenario run still going after this long is killed and reported
    /// failed (scn::RUN_TIMEOUT unless told; a slow guest needs more).
    pub run_timeout: std::time::Duration,
}

#[derive(Clone, Debug, Serialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Outcome {
    Ran {
        /// The real runs' counters, in run order.
        runs: Vec<BTreeMap<String, f64>>,
        /// Each real run's file layout (fio cases on ext4), in run order:
        /// with `runs`, what the model needs to be run again (remodel).
        #[serde(skip_serializing_if = "layouts_unset")]
        layouts: Vec<Option<FileLayout>>,
        /// Set when the model callback failed (rows then have no model).
        model_error: Option<String>,
        rows: Vec<CounterRow>,
    },
    Skipped {
        reason: String,
    },
    Failed {
        error: String,
    },
}

#[derive(Clone, Debug, Serialize)]
pub struct CaseResult {
    pub name: String,
    pub workload: String,
    pub about: String,
    pub source: String,
    pub memcg_limit: u64,
    pub read_ahead_kb: u32,
    /// Of the held-out half (cases::Case::held_out).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub held_out: bool,
    pub outcome: Outcome,
}

impl CaseResult {
    pub fn rows(&self) -> &[CounterRow] {
        match &self.outcome {
            Outcome::Ran { rows, .. } => rows,
            _ => &[],
        }
    }
    pub fn row(&self, counter: &str) -> Option<&CounterRow> {
        self.rows().iter().find(|r| r.counter == counter)
    }
}

/// Files laid out for cases; removed on drop unless kept. Each is in the
/// host-change journal from before it is made until it is removed, so that
/// a killed oracle's files are removed by the next one.
pub struct Scratch {
    pub dir: PathBuf,
    keep: bool,
    made: Vec<(PathBuf, Option<Token>)>,
    made_dir: Option<Token>,
}

impl Scratch {
    pub fn new(dir: &Path, keep: bool) -> Result<Scratch, String> {
        let made_dir = if !keep && !dir.exists() {
            Some(journal::record(Kind::Dir, dir, "")?)
        } else {
            None
        };
        if let Err(e) = fs::create_dir_all(dir) {
            if let Some(t) = made_dir {
                t.done();
            }
            return Err(format!("{}: {e}", dir.display()));
        }
        Ok(Scratch {
            dir: dir.to_path_buf(),
            keep,
            made: vec![],
            made_dir,
        })
    }
    /// Call before creating `p`.
    pub(crate) fn track(&mut self, p: PathBuf) -> Result<(), String> {
        if !self.made.iter().any(|(q, _)| q == &p) {
            let t = match self.keep {
                false => Some(journal::record(Kind::Path, &p, "")?),
                true => None,
            };
            self.made.push((p, t));
        }
        Ok(())
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        for (p, t) in self.made.drain(..).rev() {
            let r = if p.is_dir() {
                fs::remove_dir_all(&p)
            } else {
                fs::remove_file(&p)
            };
            match r {
                Err(e) if e.kind() != io::ErrorKind::NotFound => {
                    eprintln!("foliosim oracle: could not remove {}: {e}", p.display())
                }
                _ => t.map_or((), Token::done),
            }
        }
        if let Some(t) = self.made_dir.take() {
            let _ = fs::remove_dir(&self.dir);
            t.done();
        }
    }
}

/// The file in scratch the latency probes read (measure_read_latency writes
/// it), and its size.
const LATENCY_FILE: &str = "foliosim-read-latency";
const LATENCY_FILE_SIZE: u64 = 64 << 20;

/// The scratch device's read latency, as the model's device latency: the
/// median of random 4 KiB O_DIRECT reads at queue depth 1 over a 64 MiB file
/// written for it in the scratch directory (removed with the scratch; its
/// cached pages are dropped after the write). Reads by a fixed sequence, so
/// only the device's own timing varies between runs.
pub fn measure_read_latency(scratch: &mut Scratch) -> Result<u64, String> {
    use std::io::Write;
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    const READS: usize = 1024;
    let p = scratch.dir.join(LATENCY_FILE);
    scratch.track(p.clone())?;
    let err = |e: io::Error| format!("{}: {e}", p.display());
    {
        let mut f = fs::File::create(&p).map_err(err)?;
        let chunk: Vec<u8> = (0..1u32 << 20)
            .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
            .collect();
        for _ in 0..LATENCY_FILE_SIZE >> 20 {
            f.write_all(&chunk).map_err(err)?;
        }
        f.sync_all().map_err(err)?;
        // SAFETY: posix_fadvise only reads its arguments; the fd is open.
        unsafe {
            use std::os::fd::AsRawFd;
            libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        }
    }
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&p)
        .map_err(err)?;
    // O_DIRECT wants a block-aligned buffer: the aligned 4 KiB inside 8 KiB.
    let mut raw = vec![0u8; 8192];
    let off = raw.as_ptr().align_offset(4096);
    let buf = &mut raw[off..off + 4096];
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut ns = Vec::with_capacity(READS);
    for i in 0..READS + 16 {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let block = (x >> 33) % (LATENCY_FILE_SIZE / 4096);
        let t = Instant::now();
        f.read_exact_at(buf, block * 4096).map_err(err)?;
        // The first reads warm the path (inode, extent tree): not counted.
        if i >= 16 {
            ns.push(t.elapsed().as_nanos() as u64);
        }
    }
    ns.sort_unstable();
    Ok(ns[ns.len() / 2])
}

/// The mean time of a 4 KiB buffered read() that misses the page cache, on
/// measure_read_latency's file (its pages dropped first; POSIX_FADV_RANDOM
/// turns read-ahead off, so each read is one page's I/O): the device and
/// the page-cache read path together (folio allocation and charge, the bio,
/// the completion's wake-up, the copy). Distinct pages, so none hits.
/// Then the mean time of reading the same pages again, each now a hit
/// (the syscall, the page cache lookup, the copy): (miss, hit).
pub fn measure_buffered_read(scratch: &Scratch) -> Result<(u64, u64), String> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    const PAGES: u64 = LATENCY_FILE_SIZE / 4096;
    const READS: u64 = 1024;
    let p = scratch.dir.join(LATENCY_FILE);
    let err = |e: io::Error| format!("{}: {e}", p.display());
    let f = fs::File::open(&p).map_err(err)?;
    // SAFETY: posix_fadvise only reads its arguments; the fd is open.
    unsafe {
        libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
        libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM);
    }
    let mut buf = vec![0u8; 4096];
    // A stride coprime with PAGES visits distinct pages in a scattered order.
    let block = |i: u64| (i * 7919 + 11) % PAGES;
    for i in 0..16 {
        f.read_exact_at(&mut buf, block(i) * 4096).map_err(err)?;
    }
    let t = Instant::now();
    for i in 16..16 + READS {
        f.read_exact_at(&mut buf, block(i) * 4096).map_err(err)?;
    }
    let ns = t.elapsed().as_nanos() as u64 / READS;
    // The same pages again: hits (in the same scattered order).
    let t = Instant::now();
    for i in 16..16 + READS {
        f.read_exact_at(&mut buf, block(i) * 4096).map_err(err)?;
    }
    let hit = t.elapsed().as_nanos() as u64 / READS;
    // SAFETY: as above.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    Ok((ns, hit))
}

/// A fresh private anonymous mapping of `len` bytes with huge pages
/// refused (MADV_NOHUGEPAGE: the 4 KiB fault path), untouched.
pub(crate) fn map_anon_4k(len: usize) -> Result<*mut u8, String> {
    // SAFETY: mmap of new anonymous memory has no preconditions; madvise
    // only advises on the range just mapped.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        );
        if p == libc::MAP_FAILED {
            return Err(format!("mmap: {}", io::Error::last_os_error()));
        }
        libc::madvise(p, len, libc::MADV_NOHUGEPAGE);
        Ok(p.cast::<u8>())
    }
}

/// A new shared read-only mapping of `len` bytes of the open file `f`.
pub(crate) fn map_file_shared(f: &fs::File, len: usize) -> Result<*const u8, String> {
    use std::os::fd::AsRawFd;
    // SAFETY: mmap of an open file has no preconditions; failure checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return Err(format!("mmap: {}", io::Error::last_os_error()));
    }
    Ok(p.cast::<u8>())
}

/// The mean time of a first-touch write fault on anonymous memory: 64 MiB
/// mapped private, huge pages refused (MADV_NOHUGEPAGE: the 4 KiB fault
/// path), one byte written per page; the median of three such passes.
pub fn measure_anon_fault() -> Result<u64, String> {
    const LEN: usize = 64 << 20;
    let mut per_page = Vec::new();
    for _ in 0..3 {
        let b = map_anon_4k(LEN)?;
        let t = Instant::now();
        for off in (0..LEN).step_by(4096) {
            // SAFETY: off < LEN: inside the mapping.
            unsafe { std::ptr::write_volatile(b.add(off), 1) };
        }
        let t = t.elapsed().as_nanos() as u64;
        // SAFETY: the mapping made above, no longer used.
        unsafe { libc::munmap(b.cast(), LEN) };
        per_page.push(t / (LEN as u64 / 4096));
    }
    per_page.sort_unstable();
    Ok(per_page[1])
}

/// The probe child's other job (`__probe --file PATH --read-pages`): every
/// 4 KiB page of the file read once with read-ahead off, so that the page
/// cache it leaves is order-0 folios, as a workload's random 4 KiB reads
/// leave it (an mmap read-around brings large folios on 6.16+ ext4).
const READ_PAGES: &str = "--read-pages";

/// How much of the file --read-pages reads: 8,192 pages, about 0.4 s at a
/// 50 us miss.
const RECLAIM_PROBE_BYTES: u64 = 32 << 20;

fn read_pages(p: &Path) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    let err = |e: io::Error| format!("{}: {e}", p.display());
    let f = fs::File::open(p).map_err(err)?;
    // SAFETY: posix_fadvise only reads its arguments; the fd is open.
    unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_RANDOM) };
    let pages = f.metadata().map_err(err)?.len().min(RECLAIM_PROBE_BYTES) / 4096;
    if pages == 0 {
        return Err(format!("{}: no whole page to read", p.display()));
    }
    let mut buf = vec![0u8; 4096];
    // A stride coprime with the page count: each page once, scattered.
    let stride = (1..)
        .map(|k| 7919 * k)
        .find(|s| gcd(*s, pages) == 1)
        .unwrap_or(1);
    for i in 0..pages {
        f.read_exact_at(&mut buf, (i * stride % pages) * 4096)
            .map_err(err)?;
    }
    Ok(())
}

/// The probe child's third job (`__probe --file PATH --anon-swap`): map
/// ANON_SWAP_BYTES of anonymous memory and say `ready`; told to go (a line
/// on stdin), write it as the scenario executor's first writing pass does
/// and print the nanoseconds that took; told again, read every page back
/// in order and print those.
const ANON_SWAP: &str = "--anon-swap";

const ANON_SWAP_BYTES: usize = 64 << 20;

fn anon_swap_child() -> Result<(), String> {
    use std::io::{BufRead, Write};
    let len = ANON_SWAP_BYTES;
    // Touched only within its length; the process exits with it mapped.
    let b = map_anon_4k(len)?.cast::<u64>();
    let pages = (len / 4096) as u64;
    let mut out = io::stdout().lock();
    let mut stdin = io::stdin().lock();
    let mut say = |w: &str| {
        writeln!(out, "{w}")
            .and_then(|_| out.flush())
            .map_err(|e| e.to_string())
    };
    // End of input: the oracle is gone (killed); stop rather than swap.
    let mut wait = || match stdin.read_line(&mut String::new()) {
        Ok(0) => Err("the oracle closed the pipe".to_string()),
        Ok(_) => Ok(()),
        Err(e) => Err(e.to_string()),
    };
    say("ready")?;
    wait()?;
    let t = Instant::now();
    for page in 0..pages {
        // SAFETY: page < pages: inside the mapping, 8-byte aligned.
        unsafe {
            std::ptr::write_volatile(
                b.add(page as usize * 512),
                crate::scn::exec::touch_word(page, page),
            )
        };
    }
    say(&t.elapsed().as_nanos().to_string())?;
    wait()?;
    let t = Instant::now();
    let mut sum = 0u64;
    for page in 0..pages {
        // SAFETY: as above.
        sum = sum.wrapping_add(unsafe { std::ptr::read_volatile(b.add(page as usize * 512)) });
    }
    std::hint::black_box(sum);
    say(&t.elapsed().as_nanos().to_string())
}

/// Runs of measure_zram_swap's probe: five, as the swap-out, a difference
/// of two passes' times, spreads more than the other probes (4.8-7.8 us a
/// page between oracles with three).
const ZRAM_PROBE_RUNS: usize = 5;

/// Swap to zram on this host, measured as the scenario cases use it: a
/// zram0 swap set up as theirs (ZramSwap, journaled, reset after), and the
/// probe child (`--anon-swap`) in a memory cgroup limited to half its
/// 64 MiB of anonymous memory, which it writes as the executor writes:
/// past the limit its own charges reclaim and swap out its earlier pages,
/// as a workload's do (the TLB shootdowns of unmapping its own pages
/// included). Per page swapped out (`pswpout`): the pass's time less
/// `host.anon_fault_ns` for each of its faults. Then the limit is raised
/// and the child reads its pages back: per page swapped in (`pswpin`), the
/// pass's time (a major fault on zram's synchronous path, which skips the
/// swap cache; the pages still resident cost next to nothing). Medians of
/// ZRAM_PROBE_RUNS: (swap-out ns a page, swap-in fault ns). Needs the anonymous
/// fault measured, zram0 unused and no other swap; it holds the host as
/// real runs do.
pub fn measure_zram_swap(host: &HostInfo, probe_cmd: &[OsString]) -> Result<(u64, u64), String> {
    use std::io::{BufRead, BufReader, Write};
    let limit = match &host.cgroup {
        crate::host::CgroupFlavor::V1 { .. } => "memory.limit_in_bytes",
        crate::host::CgroupFlavor::V2 { .. } => "memory.max",
        crate::host::CgroupFlavor::None { reason } => return Err(reason.clone()),
    };
    let fault = host
        .anon_fault_ns
        .ok_or("the anonymous fault is not measured")?;
    let (exe, args) = probe_cmd.split_first().ok_or("no probe command")?;
    // Checked once the host is held: another oracle may have been using it.
    let _host = crate::scn::hostcfg::hold_host()?;
    if let Some(why) = crate::scn::hostcfg::zram_unusable() {
        return Err(why);
    }
    let others = crate::scn::hostcfg::active_swaps();
    if !others.is_empty() {
        return Err(format!("other swap active ({})", others.join(", ")));
    }
    let _zram = crate::scn::hostcfg::ZramSwap::setup(256 << 20)?;
    let vm = |k: &str| -> Result<u64, String> {
        read_vmstat()?
            .get(k)
            .copied()
            .ok_or_else(|| format!("/proc/vmstat has no {k}"))
    };
    let pages = (ANON_SWAP_BYTES / 4096) as u64;
    let (mut outs, mut ins) = (Vec::new(), Vec::new());
    for _ in 0..ZRAM_PROBE_RUNS {
        let g = MemCgroup::create(host, ANON_SWAP_BYTES as u64 / 2)?;
        let mut c = std::process::Command::new(exe);
        c.args(args)
            .arg("--file")
            .arg("-")
            .arg(ANON_SWAP)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        g.enter_on_spawn(&mut c)?;
        // On one CPU, as the scenarios' processes run (exec::pin_on_spawn).
        crate::scn::exec::pin_on_last_cpu(&mut c);
        let mut child = c.spawn().map_err(|e| format!("probe child: {e}"))?;
        let mut stdin = child.stdin.take().ok_or("probe child: no stdin")?;
        let mut lines =
            BufReader::new(child.stdout.take().ok_or("probe child: no stdout")?).lines();
        fn next(lines: &mut impl Iterator<Item = io::Result<String>>) -> Result<String, String> {
            lines
                .next()
                .ok_or_else(|| "probe child: ended early".to_string())?
                .map_err(|e| format!("probe child: {e}"))
        }
        let go = |stdin: &mut std::process::ChildStdin,
                  lines: &mut std::io::Lines<BufReader<std::process::ChildStdout>>|
         -> Result<u64, String> {
            writeln!(stdin, "go").map_err(|e| format!("probe child: {e}"))?;
            next(lines)?
                .trim()
                .parse()
                .map_err(|e| format!("probe child: {e}"))
        };
        let res = (|| -> Result<(u64, u64), String> {
            if next(&mut lines)? != "ready" {
                return Err("probe child: no ready line".into());
            }
            let out0 = vm("pswpout")?;
            let write_ns = go(&mut stdin, &mut lines)?;
            let out = vm("pswpout")? - out0;
            if out < pages / 4 {
                return Err(format!(
                    "writing past the limit swapped out only {out} pages"
                ));
            }
            let lim = g.path().join(limit);
            fs::write(&lim, (1u64 << 30).to_string())
                .map_err(|e| format!("{}: {e}", lim.display()))?;
            let in0 = vm("pswpin")?;
            let read_ns = go(&mut stdin, &mut lines)?;
            let n = vm("pswpin")? - in0;
            if n < pages / 4 {
                return Err(format!("reading back swapped in only {n} pages"));
            }
            Ok((write_ns.saturating_sub(pages * fault) / out, read_ns / n))
        })();
        drop(stdin);
        let st = child.wait().map_err(|e| format!("probe child: {e}"))?;
        let (o, i) = res?;
        if !st.success() {
            return Err(format!("probe child: {st}"));
        }
        outs.push(o);
        ins.push(i);
    }
    outs.sort_unstable();
    ins.sort_unstable();
    Ok((outs[ZRAM_PROBE_RUNS / 2], ins[ZRAM_PROBE_RUNS / 2]))
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The mean time limit reclaim takes per page of clean, unmapped page
/// cache in order-0 folios, ns: a memory cgroup (1 GiB limit) is filled
/// with 32 MiB of measure_read_latency's file by the probe child
/// (`probe_cmd` with --read-pages, its pages dropped first), then its limit
/// is written down to 4 MiB, which reclaims in the writer, timed. On v1
/// (mem_cgroup_resize_max()) that is try_to_free_mem_cgroup_pages() for
/// one page (32 reclaimed a call) until usage fits, as a charge that meets
/// the limit calls it; v2's memory.max write asks for the whole excess in
/// one call, so its per-call overhead weighs less there. The median of
/// three; at least 4,096 pages must go each time. It changes the host (a cgroup), so it holds
/// the host as real runs do (the instance lock, DAMON paused).
pub fn measure_limit_reclaim(
    host: &HostInfo,
    scratch: &Scratch,
    probe_cmd: &[OsString],
) -> Result<u64, String> {
    use std::os::fd::AsRawFd;
    const TARGET: u64 = 4 << 20;
    let (usage, limit) = match &host.cgroup {
        crate::host::CgroupFlavor::V1 { .. } => ("memory.usage_in_bytes", "memory.limit_in_bytes"),
        crate::host::CgroupFlavor::V2 { .. } => ("memory.current", "memory.max"),
        crate::host::CgroupFlavor::None { reason } => return Err(reason.clone()),
    };
    let (exe, args) = probe_cmd.split_first().ok_or("no probe command")?;
    let p = scratch.dir.join(LATENCY_FILE);
    let read = |g: &Path| -> Result<u64, String> {
        let f = g.join(usage);
        fs::read_to_string(&f)
            .map_err(|e| format!("{}: {e}", f.display()))?
            .trim()
            .parse::<u64>()
            .map_err(|e| format!("{}: {e}", f.display()))
    };
    let _host = crate::scn::hostcfg::hold_host()?;
    let mut per_page = Vec::new();
    for _ in 0..3 {
        {
            let f = fs::File::open(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            // SAFETY: posix_fadvise only reads its arguments; the fd is open.
            unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        }
        let g = crate::cgroup::MemCgroup::create(host, 1 << 30)?;
        let mut c = std::process::Command::new(exe);
        c.args(args)
            .arg("--file")
            .arg(&p)
            .arg(READ_PAGES)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        g.enter_on_spawn(&mut c)?;
        // On one CPU, as the scenarios' processes run (exec::pin_on_spawn).
        crate::scn::exec::pin_on_last_cpu(&mut c);
        let st = c.status().map_err(|e| format!("probe child: {e}"))?;
        if !st.success() {
            return Err(format!("probe child: {st}"));
        }
        let before = read(g.path())?;
        let lim = g.path().join(limit);
        let t = Instant::now();
        fs::write(&lim, TARGET.to_string()).map_err(|e| format!("{}: {e}", lim.display()))?;
        let ns = t.elapsed().as_nanos() as u64;
        let pages = before.saturating_sub(read(g.path())?) / 4096;
        if pages < 4096 {
            return Err(format!("the limit write reclaimed only {pages} pages"));
        }
        per_page.push(ns / pages);
    }
    per_page.sort_unstable();
    Ok(per_page[1])
}

/// `host` with its measured read latency (measure_read_latency), buffered
/// read miss (measure_buffered_read), anonymous fault cost
/// (measure_anon_fault) and, given the probe child's command, limit
/// reclaim's cost per page (measure_limit_reclaim) and zram's swap-out and
/// swap-in costs (measure_zram_swap); without one, and the reason on
/// stderr, when it cannot be measured.
pub fn with_measured_costs(
    host: &HostInfo,
    scratch: &mut Scratch,
    probe_cmd: &[OsString],
    verbose: bool,
) -> HostInfo {
    /// The value, or None with the reason on stderr.
    fn measured<T>(r: Result<T, String>, what: &str, otherwise: &str) -> Option<T> {
        r.map_err(|e| eprintln!("foliosim oracle: {what} not measured ({e}){otherwise}"))
            .ok()
    }
    const KEEPS: &str = ": the model keeps its own";
    let us = |ns: u64| ns as f64 / 1e3;
    let say = |line: String| {
        if verbose {
            eprintln!("{line}");
        }
    };
    let mut h = host.clone();
    let latency = measure_read_latency(scratch);
    let keeps_profile = ": the model keeps its device profile's";
    if let Some(ns) = measured(latency, "read latency", keeps_profile) {
        say(format!(
            "scratch device read latency (4 KiB, O_DIRECT, QD1): {:.1} us",
            us(ns)
        ));
        h.read_latency_ns = Some(ns);
        if !probe_cmd.is_empty() {
            let r = measure_limit_reclaim(&h, scratch, probe_cmd);
            if let Some(ns) = measured(r, "limit reclaim cost", KEEPS) {
                say(format!(
                    "limit reclaim (clean page cache): {:.2} us a page",
                    us(ns)
                ));
                h.reclaim_page_ns = Some(ns);
            }
        }
        if let Some((ns, hit)) = measured(measure_buffered_read(scratch), "buffered read miss", "")
        {
            say(format!(
                "buffered read miss (4 KiB, read-ahead off): {:.1} us; hit: {:.2} us",
                us(ns),
                us(hit)
            ));
            h.buffered_read_ns = Some(ns);
            h.buffered_hit_ns = Some(hit);
        }
    }
    if let Some(ns) = measured(measure_anon_fault(), "anonymous fault cost", KEEPS) {
        say(format!("anonymous write fault (4 KiB): {:.2} us", us(ns)));
        h.anon_fault_ns = Some(ns);
    }
    if !probe_cmd.is_empty() {
        if let Some((out, fault)) =
            measured(measure_zram_swap(&h, probe_cmd), "zram swap costs", KEEPS)
        {
            say(format!(
                "zram swap-out (limit reclaim of anon): {:.2} us a page; swap-in fault: {:.2} us",
                us(out),
                us(fault)
            ));
            h.swapout_page_ns = Some(out);
            h.swapin_fault_ns = Some(fault);
        }
    }
    h
}

/// Sets a device's read_ahead_kb and puts the old value back on drop; the
/// old value is in the journal while the new one is set.
pub struct ReadAheadGuard {
    path: PathBuf,
    old: String,
    token: Option<Token>,
}

impl ReadAheadGuard {
    pub fn set(path: &Path, kb: u32) -> Result<ReadAheadGuard, String> {
        let old = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let old = old.trim().to_string();
        let token = journal::record(Kind::Value, path, &old)?;
        if let Err(e) = fs::write(path, kb.to_string()) {
            token.done();
            return Err(format!("setting {} to {kb}: {e}", path.display()));
        }
        Ok(ReadAheadGuard {
            path: path.to_path_buf(),
            old,
            token: Some(token),
        })
    }
}

impl Drop for ReadAheadGuard {
    fn drop(&mut self) {
        match fs::write(&self.path, &self.old) {
            Ok(()) => self.token.take().map_or((), Token::done),
            // Left in the journal: the next oracle start tries again.
            Err(e) => eprintln!(
                "foliosim oracle: could not restore {} to {}: {e}",
                self.path.display(),
                self.old
            ),
        }
    }
}

/// Writes back dirty data, then drops the clean page cache, dentries and inodes.
pub fn drop_caches() -> Result<(), String> {
    // SAFETY: sync has no preconditions.
    unsafe { libc::sync() };
    fs::write("/proc/sys/vm/drop_caches", "3").map_err(|e| format!("/proc/sys/vm/drop_caches: {e}"))
}

/// Reads an executable and the shared libraries `ldd` lists into the page
/// cache, outside the measured group.
pub(crate) fn warm_executable(exe: &Path) {
    let mut files = vec![exe.to_path_buf()];
    if let Ok(out) = Command::new("ldd").arg(exe).stdin(Stdio::null()).output() {
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            // "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" or "/lib64/ld-linux... (0x...)"
            let p = l
                .split("=>")
                .last()
                .unwrap_or("")
                .split_whitespace()
                .next()
                .unwrap_or("");
            if p.starts_with('/') {
                files.push(PathBuf::from(p));
            }
        }
    }
    for f in files {
        if let Ok(mut fh) = fs::File::open(&f) {
            let _ = io::copy(&mut fh, &mut io::sink());
        }
    }
}

fn which(prog: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_string_lossy()
        .split(':')
        .map(|d| Path::new(d).join(prog))
        .find(|p| p.is_file())
}

/// The arguments after `probe_cmd` for the probe child; parsed back by
/// [`probe_child_main`].
pub fn probe_child_args(file: &Path, spec: &ProbeSpec) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec!["--file".into(), file.into()];
    for s in crate::cases::probe_options(spec).split_whitespace() {
        v.push(s.into());
    }
    v
}

/// The probe child's entry point (`foliosim oracle __probe ARGS`): runs the
/// probe and prints its [`ProbeOutcome`] as one JSON line on stdout.
pub fn probe_child_main(args: &[String]) -> Result<(), String> {
    let (file, rest) = match args {
        [f, path, rest @ ..] if f == "--file" => (PathBuf::from(path), rest),
        _ => return Err("__probe: expected --file PATH first".into()),
    };
    if let [m] = rest {
        if m == READ_PAGES {
            return read_pages(&file);
        }
        if m == ANON_SWAP {
            return anon_swap_child();
        }
    }
    let p = crate::cases::parse_probe_options(&rest.join(" "))?;
    let spec = ProbeSpec {
        file_size: p.spec_size,
        pattern: p.pattern,
        fraction: p.fraction,
        seed: p.seed,
    };
    let o = probe::run_real(&file, &spec)?;
    println!("{}", serde_json::to_string(&o).map_err(|e| e.to_string())?);
    Ok(())
}

/// One real run's counters (the crate-level contract's names).
type RealRun = BTreeMap<String, f64>;

/// One measured real run of `case` (files must be laid out).
fn run_once(
    case: &Case,
    host: &HostInfo,
    opts: &RunOpts,
    (work, job, logs): (&Path, &Path, &[PathBuf]),
) -> Result<BTreeMap<String, f64>, String> {
    // fio's job text goes to it on stdin, read before the drop, and its
    // working directory stays referenced through the drop: ext4 puts a file's
    // inode near its directory's, so the job file, the scratch directories
    // and the workload's files share inode-table readahead windows, and
    // opening the job file or the child's chdir() (which runs before it
    // enters the group) would read the workload's inode blocks outside the
    // group. Measured with the mm_filemap_add_to_page_cache tracepoint on a
    // one-file filestat job: the 33-block window then came in outside the
    // group and fio's start-up (below) was charged instead.
    let (fio_text, _cwd_pin) = match &case.kind {
        CaseKind::Fio { .. } => (
            Some(fs::read(job).map_err(|e| format!("{}: {e}", job.display()))?),
            Some(fs::File::open(work).map_err(|e| format!("{}: {e}", work.display()))?),
        ),
        _ => (None, None),
    };
    // The group is made before the drop: making it writes the oracle's
    // journal, and writing (or reading: atime) a file dirties its inode,
    // which reads the inode's table block with its readahead window. On
    // this host the journal's inode shares that window with the scratch
    // files', so after the drop it was read outside the group (traced with
    // a stack: touch_atime -> ext4_dirty_inode -> __ext4_get_inode_loc),
    // and the run read 1 block where the model reads 34.
    let cg = MemCgroup::create(host, case.memcg_limit)?;
    // A replayed log (read_iolog), opened before the drop and read after
    // it, outside the group: fio reads it whole at its start, which the
    // model does not. Held open, its inode and dentries stay through the
    // drop, so reading it reads no inode table block (which it may share
    // with the workload's files) outside the group.
    let held_logs = logs
        .iter()
        .map(|p| fs::File::open(p).map_err(|e| format!("{}: {e}", p.display())))
        .collect::<Result<Vec<_>, _>>()?;
    drop_caches()?;
    for mut f in &held_logs {
        let _ = io::copy(&mut f, &mut io::sink());
    }
    let mut cmd = match &case.kind {
        CaseKind::Probe { spec, .. } => {
            let (prog, lead) = opts
                .probe_cmd
                .split_first()
                .ok_or("no probe command configured")?;
            warm_executable(Path::new(prog));
            let mut c = Command::new(prog);
            c.args(lead).args(probe_child_args(work, spec));
            c
        }
        CaseKind::Scenario { .. } => return Err("scenarios run through crate::scn".into()),
        CaseKind::Fio { .. } => {
            if let Some(f) = which("fio") {
                warm_executable(&f);
            }
            fio::warm_startup();
            fio::command(work)
        }
    };
    cmd.stdin(if fio_text.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    cg.enter_on_spawn(&mut cmd)?;
    let before = read_vmstat()?;
    let t0 = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("starting the workload: {e}"))?;
    // From a thread: a job text past the pipe's capacity must not block the
    // reading of fio's output.
    let feeder = match (fio_text, child.stdin.take()) {
        (Some(text), Some(mut pipe)) => Some(std::thread::spawn(move || {
            let _ = io::Write::write_all(&mut pipe, &text);
        })),
        _ => None,
    };
    let out = child
        .wait_with_output()
        .map_err(|e| format!("waiting for the workload: {e}"))?;
    if let Some(f) = feeder {
        let _ = f.join();
    }
    let wall = t0.elapsed().as_secs_f64();
    let after = read_vmstat()?;
    let stat = cg.stat()?;
    let io = cg.io_stat()?;
    drop(cg);
    // The files' resident folios by order (issue 11), read from
    // /proc/kpageflags once every counter above is taken.
    let folios = crate::kpageflags::folio_orders(work);
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        return Err(format!(
            "workload {}: {}",
            out.status,
            fio::last_line(&out.stderr)
        ));
    }
    let mut m: BTreeMap<String, f64> = stat.into_iter().map(|(k, v)| (k, v as f64)).collect();
    m.extend(vmstat_delta(&before, &after));
    m.extend(io);
    if let Ok(h) = folios {
        for o in 0..=crate::kpageflags::MAX_ORDER {
            m.insert(format!("folios.order{o}"), *h.get(&o).unwrap_or(&0) as f64);
        }
    }
    match &case.kind {
        CaseKind::Probe { .. } => {
            let o: ProbeOutcome = serde_json::from_str(stdout.trim())
                .map_err(|e| format!("probe child output '{}': {e}", stdout.trim()))?;
            m.insert("elapsed_s".into(), o.elapsed_s);
        }
        CaseKind::Scenario { .. } => {}
        CaseKind::Fio { .. } => {
            let o = fio::parse_json(&stdout)?;
            m.extend(o.counters());
            m.insert(
                "elapsed_s".into(),
                if o.runtime_s > 0.0 { o.runtime_s } else { wall },
            );
        }
    }
    Ok(m)
}

/// Refuses, before anything on the host changes, a fio case whose working
/// directory under `scratch_dir` (left by `--keep`, or planted) holds a
/// symlink or a special file.
pub fn preflight(case: &Case, scratch_dir: &Path) -> Result<(), String> {
    if let CaseKind::Fio { job, .. } = &case.kind {
        jobsafe::check_tree(&fio_dir(case, scratch_dir), job, &case.source)
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn layout_job(case: &Case, scratch_dir: &Path) -> PathBuf {
    scratch_dir.join(format!("fio-{}-layout.fio", case.name))
}

fn fio_dir(case: &Case, scratch_dir: &Path) -> PathBuf {
    scratch_dir.join(format!("fio-{}", case.name))
}

/// Where a read_iolog case's logs are copied: beside fio's working
/// directory, not in it (its files' layout and resident folios are the
/// workload's alone).
fn logs_dir(case: &Case, scratch_dir: &Path) -> PathBuf {
    scratch_dir.join(format!("fio-{}.logs", case.name))
}

/// What [`prepare`] made: the probe's file or fio's directory, the job
/// file fio runs (the oracle's canonical one; unused for the probe), the
/// copied logs fio replays and the files they name.
struct Prepared {
    work: PathBuf,
    job: PathBuf,
    logs: Vec<PathBuf>,
    replay: Vec<jobsafe::replay::ReplayFile>,
}

/// Lays out a fio case's files before a run: the files its logs name
/// (fio lays out none for a replay), then fio's own setup, then any
/// sparse file filled.
fn lay_out_fio(case: &Case, scratch_dir: &Path, p: &Prepared) -> Result<(), String> {
    jobsafe::replay::lay_out(&p.work, &p.replay)?;
    fio::layout(&layout_job(case, scratch_dir), &p.work)?;
    fill_holes(&p.work)
}

/// Lays out the case's files (see [`Prepared`]).
fn prepare(case: &Case, scratch: &mut Scratch) -> Result<Prepared, String> {
    match &case.kind {
        CaseKind::Scenario { .. } => Err("scenarios run through crate::scn".into()),
        CaseKind::Probe { spec, .. } => {
            let f = scratch.dir.join(format!(
                "probe-{}.dat",
                crate::cases::size_str(spec.file_size)
            ));
            scratch.track(f.clone())?;
            probe::create_file(&f, spec.file_size)?;
            Ok(Prepared {
                work: f,
                job: PathBuf::new(),
                logs: Vec::new(),
                replay: Vec::new(),
            })
        }
        CaseKind::Fio { job, job_file } => {
            let mut text = job.text.clone();
            let (mut logs, mut replay) = (Vec::new(), Vec::new());
            if !job.iologs.is_empty() {
                // Copied from beside the job file and checked again as
                // copied: what fio reads is what was checked.
                let ld = logs_dir(case, &scratch.dir);
                scratch.track(ld.clone())?;
                let from = job_file.parent().unwrap_or(Path::new("/"));
                jobsafe::replay::copy_logs(job, &case.source, from, &ld)?;
                replay = jobsafe::replay::check(job, &job.text, &case.source, &ld)
                    .map_err(|e| e.to_string())?;
                logs = job.iologs.iter().map(|p| ld.join(&p.path)).collect();
                let name = ld.file_name().unwrap_or_default().to_string_lossy();
                text = jobsafe::replay::with_logs_at(&text, &format!("../{name}"));
            }
            let jf = scratch.dir.join(format!("fio-{}.fio", case.name));
            scratch.track(jf.clone())?;
            fs::write(&jf, &text).map_err(|e| format!("{}: {e}", jf.display()))?;
            let d = fio_dir(case, &scratch.dir);
            scratch.track(d.clone())?;
            fs::create_dir_all(&d).map_err(|e| format!("{}: {e}", d.display()))?;
            // fio wants a `directory=` to exist; jobsafe made it relative,
            // without `..`, and check_tree found no link on the way.
            for p in job.paths.iter().filter(|p| p.option == "directory") {
                let sub = d.join(&p.path);
                fs::create_dir_all(&sub).map_err(|e| format!("{}: {e}", sub.display()))?;
            }
            // The layout runs a job file of its own (see fio::layout_text).
            let lf = layout_job(case, &scratch.dir);
            scratch.track(lf.clone())?;
            fs::write(&lf, fio::layout_text(&text))
                .map_err(|e| format!("{}: {e}", lf.display()))?;
            let p = Prepared {
                work: d,
                job: jf,
                logs,
                replay,
            };
            lay_out_fio(case, &scratch.dir, &p)?;
            Ok(p)
        }
    }
}

/// Rewrites sparse files (fio lays out files for some engines, mmap among
/// them, with ftruncate only) with data: a hole is read without I/O.
fn fill_holes(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let rd = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for e in rd.flatten() {
        let md = e
            .metadata()
            .map_err(|err| format!("{}: {err}", e.path().display()))?;
        if md.is_file() && md.blocks() * 512 < md.len() {
            let p = e.path();
            fs::remove_file(&p).map_err(|err| format!("{}: {err}", p.display()))?;
            probe::create_file(&p, md.len())?;
        }
    }
    Ok(())
}

fn run_real(
    case: &Case,
    host: &HostInfo,
    opts: &RunOpts,
    scratch: &mut Scratch,
) -> Result<(Vec<RealRun>, Vec<Option<FileLayout>>), String> {
    if opts.repeat == 0 {
        return Err("--repeat must be at least 1".into());
    }
    if let CaseKind::Scenario { scenario } = &case.kind {
        let opts = RunOpts {
            repeat: opts.repeat.max(case.min_repeat),
            ..opts.clone()
        };
        let runs = crate::scn::run_real(scenario, host, &opts, scratch)?;
        let layouts = vec![None; runs.len()];
        return Ok((runs, layouts));
    }
    preflight(case, &scratch.dir)?;
    let _host = crate::scn::hostcfg::hold_host()?;
    let _ra = match case.read_ahead_kb {
        Some(kb) if kb != host.read_ahead_kb => {
            Some(ReadAheadGuard::set(&host.read_ahead_path, kb)?)
        }
        _ => None,
    };
    let prepared = prepare(case, scratch)?;
    let (work, job) = (&prepared.work, &prepared.job);
    // The model reads the metadata blocks of the files as laid out before
    // each run (their inodes, directory and data groups), as measured inputs.
    let read_layout = || match (&case.kind, &host.ext4) {
        (CaseKind::Fio { .. }, Ok(geo)) => crate::ext4::read_layout(work, geo).map(Some),
        _ => Ok(None),
    };
    let mut runs = Vec::new();
    let mut layouts = Vec::new();
    for i in 0..opts.repeat {
        if i > 0 && matches!(case.kind, CaseKind::Fio { .. }) {
            // A job may delete its files (filedelete, unlink=1): every
            // repeat starts from the laid-out files, not fio re-creating
            // them inside the group. Files still there are left as they are.
            // Re-created files get other inodes than the first layout's
            // (filedelete: 1,200 inodes over 108 table blocks, then over
            // 75 to 108 more), hence a layout per run.
            lay_out_fio(case, &scratch.dir, &prepared)?;
        }
        layouts.push(read_layout()?);
        let t = Instant::now();
        let m = run_once(case, host, opts, (work, job, &prepared.logs))?;
        if opts.verbose {
            eprintln!(
                "  {} run {}/{}: {:.1}s, pgmajfault {} io.rbytes {} vmstat.pgpgin {} KiB",
                case.name,
                i + 1,
                opts.repeat,
                t.elapsed().as_secs_f64(),
                m.get("pgmajfault").copied().unwrap_or(f64::NAN),
                m.get("io.rbytes").copied().unwrap_or(f64::NAN),
                m.get("vmstat.pgpgin").copied().unwrap_or(f64::NAN),
            );
        }
        runs.push(m);
    }
    Ok((runs, layouts))
}

/// What the model takes from one real run: only what was fixed before
/// the scored workload started, never an outcome of it. Its files'
/// layout, when the memcg stats flusher first ran after its start
/// (scn::STATS_FLUSH_PHASE: an exogenous initial condition, named in the
/// report) and the device's buffered read miss measured just before it
/// (scn::BUFFERED_READ); the last two for scenario runs only. The run's
/// own read misses (scn::READ_MISS, PRESSURE_READ_MISS) are outcomes:
/// reported, never fed back.
#[derive(Clone, Debug, PartialEq)]
struct RunInput {
    layout: Option<FileLayout>,
    stats_flush_phase_ns: Option<u64>,
    buffered_read_ns: Option<u64>,
}

impl RunInput {
    fn of(run: &RealRun, layout: Option<FileLayout>) -> RunInput {
        let ns = |k: &str| run.get(k).map(|s| (s * 1e9).round() as u64);
        RunInput {
            layout,
            stats_flush_phase_ns: ns(crate::scn::STATS_FLUSH_PHASE),
            buffered_read_ns: ns(crate::scn::BUFFERED_READ),
        }
    }
}

/// The model's counters for one real run's inputs.
type ModelRun = BTreeMap<String, f64>;

/// The model run on each real run's inputs (RunInput; runs with the same
/// inputs share one model run), as
/// counter-wise medians: the model's side of the comparison with the real
/// runs' medians. Where the inputs differ, also each real run's own model
/// run, in run order (empty when one run stands for all).
fn model_per_run(
    host: &HostInfo,
    case: &Case,
    inputs: Vec<RunInput>,
    model: ModelFn,
    verbose: bool,
) -> Result<(ModelRun, Vec<ModelRun>), String> {
    let mut done: Vec<(RunInput, BTreeMap<String, f64>)> = Vec::new();
    let mut per_run = Vec::new();
    for inp in inputs {
        let i = match done.iter().position(|(d, _)| *d == inp) {
            Some(i) => i,
            None => {
                let mut h = host.clone();
                h.layout = inp.layout.clone();
                h.stats_flush_phase_ns = inp.stats_flush_phase_ns;
                h.buffered_read_ns = inp.buffered_read_ns.or(host.buffered_read_ns);
                done.push((inp, model(&h, case)?));
                done.len() - 1
            }
        };
        per_run.push(i);
    }
    if done.len() == 1 {
        return Ok((done.pop().map(|(_, m)| m).unwrap_or_default(), Vec::new()));
    }
    if verbose {
        for (r, &i) in per_run.iter().enumerate() {
            let m = &done[i].1;
            eprintln!(
                "  {} model for run {}'s inputs: pgmajfault {} io.rbytes {} pswpout {}",
                case.name,
                r + 1,
                m.get("pgmajfault").copied().unwrap_or(f64::NAN),
                m.get("io.rbytes").copied().unwrap_or(f64::NAN),
                m.get("vmstat.pswpout").copied().unwrap_or(f64::NAN),
            );
        }
    }
    let median = crate::compare::median_of_maps(per_run.iter().map(|&i| &done[i].1));
    Ok((median, per_run.iter().map(|&i| done[i].1.clone()).collect()))
}

/// Runs `case` for real (`opts.repeat` times) and in the model, and
/// compares them. A host that lacks what the case needs gives `Skipped`.
pub fn run_case(
    case: &Case,
    host: &HostInfo,
    opts: &RunOpts,
    scratch: &mut Scratch,
    model: ModelFn,
) -> CaseResult {
    let outcome = match case.skip_reason(host) {
        Some(reason) => Outcome::Skipped { reason },
        None => match run_real(case, host, opts, scratch) {
            Err(error) => Outcome::Failed { error },
            Ok((runs, layouts)) => {
                model_and_compare(case, host, runs, layouts, model, opts.verbose)
            }
        },
    };
    case_result(case, host, outcome)
}

fn layouts_unset(l: &[Option<FileLayout>]) -> bool {
    l.iter().all(Option::is_none)
}

/// The model run on the real runs' inputs, and the comparison.
fn model_and_compare(
    case: &Case,
    host: &HostInfo,
    runs: Vec<RealRun>,
    layouts: Vec<Option<FileLayout>>,
    model: ModelFn,
    verbose: bool,
) -> Outcome {
    let inputs = runs
        .iter()
        .zip(layouts.iter().cloned())
        .map(|(r, l)| RunInput::of(r, l))
        .collect();
    let (m, each, model_error) = match model_per_run(host, case, inputs, model, verbose) {
        Ok((m, each)) => (m, each, None),
        Err(e) => (BTreeMap::new(), Vec::new(), Some(e)),
    };
    let rows = compare_paired(&runs, &m, &each);
    Outcome::Ran {
        runs,
        layouts,
        model_error,
        rows,
    }
}

/// A case's recorded real runs (a report's `runs` and `layouts`) against
/// the model as it is now: `oracle remodel`. The host is the report's
/// (its measured costs and latencies included). A fio case on ext4 needs
/// its runs' file layouts, which reports before they were kept lack.
pub fn remodel_case(
    case: &Case,
    host: &HostInfo,
    recorded: &serde_json::Value,
    model: ModelFn,
    verbose: bool,
) -> Result<CaseResult, String> {
    if recorded.get("status").and_then(|s| s.as_str()) != Some("ran") {
        return Err("no real runs recorded".into());
    }
    let runs: Vec<RealRun> = recorded
        .get("runs")
        .cloned()
        .map(serde_json::from_value)
        .transpose()
        .map_err(|e| format!("runs: {e}"))?
        .filter(|r: &Vec<RealRun>| !r.is_empty())
        .ok_or("no real runs recorded")?;
    let layouts: Vec<Option<FileLayout>> = match recorded.get("layouts") {
        Some(l) => serde_json::from_value(l.clone()).map_err(|e| format!("layouts: {e}"))?,
        None => vec![None; runs.len()],
    };
    if layouts.len() != runs.len() {
        return Err(format!(
            "{} layouts recorded for {} runs",
            layouts.len(),
            runs.len()
        ));
    }
    if matches!(case.kind, CaseKind::Fio { .. }) && host.ext4.is_ok() && layouts_unset(&layouts) {
        return Err("a fio case on ext4 needs its runs' file layouts, not recorded".into());
    }
    let outcome = model_and_compare(case, host, runs, layouts, model, verbose);
    Ok(case_result(case, host, outcome))
}

fn case_result(case: &Case, host: &HostInfo, outcome: Outcome) -> CaseResult {
    CaseResult {
        name: case.name.clone(),
        workload: case.describe(),
        about: case.about.clone(),
        source: case.source.clone(),
        memcg_limit: case.memcg_limit,
        read_ahead_kb: case.effective_read_ahead_kb(host),
        held_out: case.held_out,
        outcome,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cases::{fake_host, parse_probe_cases};
    use crate::host::CgroupFlavor;

    /// Each real run's inputs (layout, stats flush phase) get their model
    /// run (one per distinct inputs), and the model's side is the
    /// counter-wise median over the runs.
    #[test]
    fn model_runs_once_per_run_input_and_takes_the_median() {
        let case = parse_probe_cases("p: --file-size 1M --memcg-limit 1G", "p.txt")
            .unwrap()
            .remove(0);
        let lay = |ino: u64| RunInput {
            layout: Some(FileLayout {
                dir_ino: ino,
                ..FileLayout::default()
            }),
            stats_flush_phase_ns: None,
            buffered_read_ns: None,
        };
        let calls = std::cell::Cell::new(0);
        let model = |h: &HostInfo, _: &Case| {
            calls.set(calls.get() + 1);
            let ino = h.layout.as_ref().map_or(0, |l| l.dir_ino) as f64;
            let phase = h.stats_flush_phase_ns.unwrap_or(0) as f64;
            Ok(BTreeMap::from([
                ("io.rbytes".to_string(), ino * 4096.0),
                ("phase".to_string(), phase),
                ("miss".to_string(), h.buffered_read_ns.unwrap_or(0) as f64),
            ]))
        };
        let mut host = fake_host();
        host.buffered_read_ns = Some(40_000);
        let (m, each) =
            model_per_run(&host, &case, vec![lay(10), lay(30), lay(10)], &model, false).unwrap();
        assert_eq!(calls.get(), 2);
        assert_eq!(m["io.rbytes"], 10.0 * 4096.0);
        // Each real run keeps its own model run, in run order.
        let rb: Vec<f64> = each.iter().map(|e| e["io.rbytes"] / 4096.0).collect();
        assert_eq!(rb, [10.0, 30.0, 10.0]);
        let (m, _) =
            model_per_run(&host, &case, vec![lay(10), lay(30), lay(20)], &model, false).unwrap();
        assert_eq!(calls.get(), 5);
        assert_eq!(m["io.rbytes"], 20.0 * 4096.0);
        let none = RunInput {
            layout: None,
            stats_flush_phase_ns: None,
            buffered_read_ns: None,
        };
        let (m, each) =
            model_per_run(&host, &case, vec![none.clone(), none], &model, false).unwrap();
        assert_eq!((calls.get(), m["io.rbytes"]), (6, 0.0));
        assert!(each.is_empty(), "one model run for all: nothing per run");
        // A scenario run's phase reaches the model; equal phases share a run.
        let runs: Vec<RealRun> = [0.5, 1.75, 0.5]
            .iter()
            .map(|&p| BTreeMap::from([(crate::scn::STATS_FLUSH_PHASE.to_string(), p)]))
            .collect();
        let inputs = runs.iter().map(|r| RunInput::of(r, None)).collect();
        let (m, _) = model_per_run(&host, &case, inputs, &model, false).unwrap();
        assert_eq!((calls.get(), m["phase"]), (8, 500_000_000.0));
        assert_eq!(m["miss"], 40_000.0, "the host's, without a run's own");
        // A run's own read miss replaces the host's for its model run.
        let runs: Vec<RealRun> = [(0.5, 52e-6), (0.5, 52e-6), (0.5, 61e-6)]
            .iter()
            .map(|&(p, r)| {
                BTreeMap::from([
                    (crate::scn::STATS_FLUSH_PHASE.to_string(), p),
                    (crate::scn::BUFFERED_READ.to_string(), r),
                ])
            })
            .collect();
        let inputs = runs.iter().map(|r| RunInput::of(r, None)).collect();
        let (m, _) = model_per_run(&host, &case, inputs, &model, false).unwrap();
        assert_eq!((calls.get(), m["miss"]), (10, 52_000.0));
        // The run's own read misses are its outcome: the probe measured
        // before it configures the model, however many misses the run made.
        let own = |n: f64| {
            BTreeMap::from([
                (crate::scn::BUFFERED_READ.to_string(), 61e-6),
                (crate::scn::READ_MISS.to_string(), 48e-6),
                (crate::scn::READ_MISSES.to_string(), n),
                (crate::scn::PRESSURE_READ_MISS.to_string(), 90e-6),
                (crate::scn::PRESSURE_READ_MISSES.to_string(), n),
            ])
        };
        let ns = |r: &RealRun| RunInput::of(r, None).buffered_read_ns;
        assert_eq!(ns(&own(1000.0)), Some(61_000));
        let mut probe_less = own(1000.0);
        probe_less.remove(crate::scn::BUFFERED_READ);
        assert_eq!(ns(&probe_less), None, "no probe: the host's, not the run's");
        let failing = |_: &HostInfo, _: &Case| Err("model broke".to_string());
        assert_eq!(
            model_per_run(&host, &case, vec![lay(1)], &failing, false).unwrap_err(),
            "model broke"
        );
    }

    #[test]
    fn child_args_round_trip() {
        let c = parse_probe_cases(
            "p: --file-size 3M --pattern stride:7 --fraction 0.123 --seed 9 --memcg-limit 1G",
            "p.txt",
        )
        .unwrap()
        .remove(0);
        let CaseKind::Probe { spec, .. } = &c.kind else {
            panic!()
        };
        let args: Vec<String> = probe_child_args(Path::new("/x/f.dat"), spec)
            .into_iter()
            .map(|s| s.into_string().unwrap())
            .collect();
        assert_eq!(args[..2], ["--file", "/x/f.dat"]);
        let p = crate::cases::parse_probe_options(&args[2..].join(" ")).unwrap();
        assert_eq!((p.spec_size, p.fraction, p.seed), (3 << 20, 0.123, 9));
        assert_eq!(p.pattern, spec.pattern);
        assert!(probe_child_main(&["--pattern".into()])
            .unwrap_err()
            .contains("--file PATH"));
    }

    /// The read latency is measured on a file of the scratch directory,
    /// which leaves with the scratch.
    #[test]
    fn read_latency_is_measured_inside_the_scratch_and_removed_with_it() {
        // /var/tmp: on the root disk here (ext4), where O_DIRECT works.
        let dir = std::path::PathBuf::from(format!(
            "/var/tmp/foliosim-oracle-lat-{}",
            std::process::id()
        ));
        let mut s = Scratch::new(&dir, false).unwrap();
        let ns = measure_read_latency(&mut s).unwrap();
        assert!((100..1_000_000_000).contains(&ns), "{ns} ns");
        let f = dir.join(LATENCY_FILE);
        assert_eq!(std::fs::metadata(&f).unwrap().len(), 64 << 20);
        let h = with_measured_costs(&fake_host(), &mut s, &[], false);
        let direct = h.read_latency_ns.unwrap();
        // Buffered reads of dropped pages go to the device too (a read
        // served from the cache would take a microsecond or two).
        let buffered = h.buffered_read_ns.unwrap();
        assert!(
            buffered * 2 >= direct,
            "{buffered} ns vs O_DIRECT {direct} ns"
        );
        let fault = h.anon_fault_ns.unwrap();
        assert!((50..1_000_000).contains(&fault), "{fault} ns");
        // A hit copies from the cache: far cheaper than the miss.
        let hit = h.buffered_hit_ns.unwrap();
        assert!(
            hit > 0 && hit * 5 < buffered,
            "hit {hit} ns, miss {buffered} ns"
        );
        drop(s);
        assert!(
            !dir.exists(),
            "the file and the scratch directory are removed"
        );
    }

    #[test]
    fn skipped_case_runs_nothing_and_says_why() {
        let c = parse_probe_cases("p: --memcg-limit 1G", "p.txt")
            .unwrap()
            .remove(0);
        let mut h = fake_host();
        h.cgroup = CgroupFlavor::None {
            reason: "no memory controller here".into(),
        };
        let dir = std::env::temp_dir().join(format!("foliosim-oracle-skip-{}", std::process::id()));
        let mut s = Scratch::new(&dir, false).unwrap();
        let opts = RunOpts {
            dir: dir.clone(),
            repeat: 3,
            keep: false,
            probe_cmd: vec![],
            verbose: false,
            run_timeout: crate::scn::RUN_TIMEOUT,
        };
        let called = std::cell::Cell::new(false);
        let model = |_: &HostInfo, _: &Case| {
            called.set(true);
            Ok(BTreeMap::new())
        };
        let r = run_case(&c, &h, &opts, &mut s, &model);
        match &r.outcome {
            Outcome::Skipped { reason } => assert_eq!(reason, "no memory controller here"),
            o => panic!("{o:?}"),
        }
        assert!(r.rows().is_empty());
        assert!(!called.get());
        drop(s);
        assert!(!dir.exists(), "scratch dir made by the run is removed");
    }
}
