//! `foliosim refcount-bench`: seed 001's will-it-scale loop and Pedro
//! Falcato's bare loop against one shared page, per scheme and thread count,
//! plus the same pread(2) loop on the host kernel as the real-world reference.
//!
//! Numbers are measurements, not simulation output: only the row order and
//! the format are deterministic.

use crate::{CmpxchgLoop, LockedBit, Optimistic, PageRef};
use serde::Serialize;
use std::fs::File;
use std::hint::black_box;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// A way of taking and dropping the reference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scheme {
    /// Today's `atomic_add_unless` read + cmpxchg loop.
    CmpxchgLoop,
    /// Linus's cmpxchg that assumes the count is 1.
    Optimistic,
    /// Gladyshev's locked bit with an unconditional fetch_add.
    LockedBit,
    /// Bare `lock xadd`: no try_get semantics, the lower bound.
    Xadd,
    /// The host kernel (workload `kernel-pread` only).
    Kernel,
}

impl Scheme {
    pub const ALL: [Scheme; 5] = [
        Scheme::CmpxchgLoop,
        Scheme::Optimistic,
        Scheme::LockedBit,
        Scheme::Xadd,
        Scheme::Kernel,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Scheme::CmpxchgLoop => CmpxchgLoop::NAME,
            Scheme::Optimistic => Optimistic::NAME,
            Scheme::LockedBit => LockedBit::NAME,
            Scheme::Xadd => "xadd",
            Scheme::Kernel => "kernel",
        }
    }

    pub fn parse(s: &str) -> Option<Scheme> {
        Scheme::ALL.into_iter().find(|x| x.name() == s)
    }
}

/// What each thread does per operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Workload {
    /// Seed 001's loop as filemap_read does it for one cached page: look the
    /// folio up in a shared index, try_get, recheck the slot, copy 64 bytes,
    /// put.
    WillItScale,
    /// Pedro Falcato's microbenchmark: the reference op alone, on one atomic
    /// (here paired with its put, so the count stays bounded).
    Bare,
    /// pread(fd, buf, 64, 0) on a tmpfs file, on the host kernel.
    KernelPread,
}

impl Workload {
    pub const ALL: [Workload; 3] = [Workload::WillItScale, Workload::Bare, Workload::KernelPread];

    pub fn name(self) -> &'static str {
        match self {
            Workload::WillItScale => "will-it-scale",
            Workload::Bare => "bare",
            Workload::KernelPread => "kernel-pread",
        }
    }

    pub fn parse(s: &str) -> Option<Workload> {
        Workload::ALL.into_iter().find(|x| x.name() == s)
    }

    /// Whether `scheme` runs under this workload: the modelled schemes run
    /// the model workloads; `kernel` runs `kernel-pread` only.
    pub fn accepts(self, scheme: Scheme) -> bool {
        (self == Workload::KernelPread) == (scheme == Scheme::Kernel)
    }
}

/// What to measure. Every accepted (scheme, workload) pair runs at every
/// thread count, `runs` times, `duration_ms` each.
#[derive(Clone, Debug)]
pub struct BenchOpts {
    pub threads: Vec<usize>,
    pub schemes: Vec<Scheme>,
    pub workloads: Vec<Workload>,
    pub runs: usize,
    pub duration_ms: u64,
}

impl Default for BenchOpts {
    fn default() -> Self {
        BenchOpts {
            threads: (1..=available_cpus().len().max(1)).collect(),
            schemes: Scheme::ALL.to_vec(),
            workloads: Workload::ALL.to_vec(),
            runs: 5,
            duration_ms: 300,
        }
    }
}

/// One line of the result: the median of the runs and their spread,
/// `(max - min) / median * 100`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BenchRow {
    pub scheme: String,
    pub workload: String,
    pub threads: usize,
    pub ops_per_sec: f64,
    pub spread_pct: f64,
}

/// The (workload, scheme) pairs `opts` selects, in output order.
pub fn configs(opts: &BenchOpts) -> Vec<(Workload, Scheme)> {
    let mut w = opts.workloads.clone();
    w.sort();
    w.dedup();
    let mut s = opts.schemes.clone();
    s.sort();
    s.dedup();
    let mut out = Vec::new();
    for &wl in &w {
        for &sc in &s {
            if wl.accepts(sc) {
                out.push((wl, sc));
            }
        }
    }
    out
}

/// Every run of one configuration, in run order.
#[derive(Clone, Debug, PartialEq)]
pub struct Samples {
    pub workload: Workload,
    pub scheme: Scheme,
    pub threads: usize,
    /// ops/s of each run; entry `r` of every configuration comes from the
    /// same round `r`.
    pub ops_per_sec: Vec<f64>,
}

/// Run the benchmark and summarize it into rows (median and spread).
pub fn run(opts: &BenchOpts) -> Result<Vec<BenchRow>, String> {
    Ok(summarize(&run_samples(opts)?))
}

/// Run the benchmark, keeping every run. Each round measures every
/// configuration once, and within a round the schemes of one (workload,
/// thread count) follow each other, so that drift on a shared machine hits
/// the schemes being compared alike (see [`paired_gain_pct`]).
pub fn run_samples(opts: &BenchOpts) -> Result<Vec<Samples>, String> {
    if opts.runs == 0 {
        return Err("refcount-bench: --runs 0: need at least 1 run".into());
    }
    if opts.duration_ms == 0 {
        return Err("refcount-bench: --duration-ms 0: expected 1 to 600000".into());
    }
    if let Some(t) = opts.threads.iter().find(|&&t| t == 0) {
        return Err(format!(
            "refcount-bench: --threads: {t} is not a thread count"
        ));
    }
    let cfgs = configs(opts);
    if cfgs.is_empty() {
        return Err(NOTHING_SELECTED.into());
    }
    let mut threads = opts.threads.clone();
    threads.sort_unstable();
    threads.dedup();
    let cpus = available_cpus();
    let dur = Duration::from_millis(opts.duration_ms);
    let shm = if cfgs.iter().any(|c| c.0 == Workload::KernelPread) {
        Some(ShmFile::create()?)
    } else {
        None
    };

    // Output order: workload, scheme, threads.
    let mut out: Vec<Samples> = Vec::new();
    for &(wl, sc) in &cfgs {
        for &n in &threads {
            out.push(Samples {
                workload: wl,
                scheme: sc,
                threads: n,
                ops_per_sec: Vec::with_capacity(opts.runs),
            });
        }
    }
    // Measuring order: round, workload, threads, scheme.
    let mut order: Vec<usize> = (0..out.len()).collect();
    order.sort_by_key(|&i| (out[i].workload, out[i].threads, out[i].scheme));
    for _ in 0..opts.runs {
        for &i in &order {
            let (wl, sc, n) = (out[i].workload, out[i].scheme, out[i].threads);
            let ops = match wl {
                Workload::KernelPread => kernel_pread(shm.as_ref().unwrap(), n, &cpus, dur)?,
                _ => measure_model(sc, wl, n, &cpus, dur),
            };
            out[i].ops_per_sec.push(ops);
        }
    }
    Ok(out)
}

/// One row per configuration: the median of its runs (whole ops/s) and the
/// spread (to 0.01%).
pub fn summarize(samples: &[Samples]) -> Vec<BenchRow> {
    samples
        .iter()
        .map(|s| {
            let (median, spread) = median_spread(&s.ops_per_sec);
            BenchRow {
                scheme: s.scheme.name().to_string(),
                workload: s.workload.name().to_string(),
                threads: s.threads,
                ops_per_sec: median.round(),
                spread_pct: (spread * 100.0).round() / 100.0,
            }
        })
        .collect()
}

/// Gain of `other` over `base` from runs of the same round:
/// `(other_r / base_r - 1) * 100` per round; returns (median, min, max).
/// Pairing cancels most of the slow drift a shared machine adds.
pub fn paired_gain_pct(base: &Samples, other: &Samples) -> Option<(f64, f64, f64)> {
    let g: Vec<f64> = base
        .ops_per_sec
        .iter()
        .zip(&other.ops_per_sec)
        .filter(|(b, _)| **b > 0.0)
        .map(|(b, o)| (o / b - 1.0) * 100.0)
        .collect();
    if g.is_empty() {
        return None;
    }
    let (median, _) = median_spread(&g);
    let min = g.iter().copied().fold(f64::INFINITY, f64::min);
    let max = g.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Some((median, min, max))
}

/// For each model workload and thread count, every scheme's paired gain
/// over `cmpxchg-loop` (today's kernel), as a fixed-width table; empty when
/// `cmpxchg-loop` was not run.
pub fn render_gains(samples: &[Samples]) -> String {
    let mut out = String::new();
    for base in samples.iter().filter(|s| s.scheme == Scheme::CmpxchgLoop) {
        for other in samples.iter().filter(|s| {
            s.workload == base.workload && s.threads == base.threads && s.scheme != base.scheme
        }) {
            if let Some((med, lo, hi)) = paired_gain_pct(base, other) {
                if out.is_empty() {
                    out.push_str(&format!(
                        "{:<14} {:<14} {:>7} {:>16} {:>19}\n",
                        "scheme", "workload", "threads", "vs cmpxchg-loop%", "per-round min..max"
                    ));
                }
                out.push_str(&format!(
                    "{:<14} {:<14} {:>7} {:>+16.1} {:>+9.1}..{:<+9.1}\n",
                    other.scheme.name(),
                    other.workload.name(),
                    other.threads,
                    med,
                    lo,
                    hi
                ));
            }
        }
    }
    out
}

/// Median and `(max - min) / median * 100` of `v` (0 spread for a 0 median).
pub fn median_spread(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    let median = if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    };
    let spread = if median > 0.0 {
        (s[n - 1] - s[0]) / median * 100.0
    } else {
        0.0
    };
    (median, spread)
}

/// Fixed-width table, one row per line, header first.
pub fn render_table(rows: &[BenchRow]) -> String {
    let mut out = format!(
        "{:<14} {:<14} {:>7} {:>14} {:>8}\n",
        "scheme", "workload", "threads", "ops/s", "spread%"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<14} {:<14} {:>7} {:>14.0} {:>8.2}\n",
            r.scheme, r.workload, r.threads, r.ops_per_sec, r.spread_pct
        ));
    }
    out
}

/// The rows as a JSON list of objects (`scheme, workload, threads,
/// ops_per_sec, spread_pct`).
pub fn render_json(rows: &[BenchRow]) -> String {
    // Serializing plain strings and finite floats cannot fail.
    let mut s = serde_json::to_string_pretty(rows).expect("rows serialize");
    s.push('\n');
    s
}

/// Parse `--threads`: a comma list (`1,2,4`), a range (`2-4`), or a single
/// `N` meaning 1 up to N.
pub fn parse_threads(spec: &str) -> Result<Vec<usize>, String> {
    let bad = |why: &str| format!("refcount-bench: --threads '{spec}': {why}");
    let num = |s: &str| -> Result<usize, String> {
        match s.trim().parse::<usize>() {
            Ok(0) => Err(bad("thread counts start at 1")),
            Ok(n) if n > 4096 => Err(bad("more than 4096 threads")),
            Ok(n) => Ok(n),
            Err(_) => Err(bad("expected N, A-B or a comma list like 1,2")),
        }
    };
    let spec_t = spec.trim();
    let mut out = if spec_t.contains(',') {
        spec_t.split(',').map(num).collect::<Result<Vec<_>, _>>()?
    } else if let Some((a, b)) = spec_t.split_once('-') {
        let (a, b) = (num(a)?, num(b)?);
        if a > b {
            return Err(bad("range runs backwards"));
        }
        (a..=b).collect()
    } else {
        (1..=num(spec_t)?).collect()
    };
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Build [`BenchOpts`] from command-line values: `threads` as
/// [`parse_threads`] reads it (default: 1 up to the CPUs available), empty
/// `schemes` / `workloads` meaning all of them.
pub fn opts_from_cli(
    threads: Option<&str>,
    runs: usize,
    duration_ms: u64,
    schemes: &[String],
    workloads: &[String],
) -> Result<BenchOpts, String> {
    let mut o = BenchOpts::default();
    if let Some(t) = threads {
        o.threads = parse_threads(t)?;
    }
    if runs == 0 {
        return Err("refcount-bench: --runs 0: need at least 1 run".into());
    }
    if duration_ms == 0 || duration_ms > 600_000 {
        return Err(format!(
            "refcount-bench: --duration-ms {duration_ms}: expected 1 to 600000"
        ));
    }
    o.runs = runs;
    o.duration_ms = duration_ms;
    if !schemes.is_empty() {
        o.schemes = parse_schemes(schemes)?;
    }
    if !workloads.is_empty() {
        o.workloads = parse_workloads(workloads)?;
    }
    if configs(&o).is_empty() {
        return Err(NOTHING_SELECTED.into());
    }
    Ok(o)
}

const NOTHING_SELECTED: &str = "refcount-bench: --scheme/--workload select nothing to run (scheme 'kernel' runs only workload 'kernel-pread')";

/// Parse scheme names given on the command line (`--scheme`).
pub fn parse_schemes(names: &[String]) -> Result<Vec<Scheme>, String> {
    parse_names(
        names,
        "scheme",
        Scheme::parse,
        Scheme::ALL.map(Scheme::name),
    )
}

/// Parse workload names given on the command line (`--workload`).
pub fn parse_workloads(names: &[String]) -> Result<Vec<Workload>, String> {
    parse_names(
        names,
        "workload",
        Workload::parse,
        Workload::ALL.map(Workload::name),
    )
}

/// `--KIND NAME...`: each name parsed, or one error naming the option and
/// the known names.
fn parse_names<T, const N: usize>(
    names: &[String],
    kind: &str,
    parse: fn(&str) -> Option<T>,
    known: [&str; N],
) -> Result<Vec<T>, String> {
    names
        .iter()
        .map(|n| {
            parse(n).ok_or_else(|| {
                format!(
                    "refcount-bench: --{kind} '{n}': unknown {kind} (one of {})",
                    known.join(", ")
                )
            })
        })
        .collect()
}

/// CPUs this process may run on (its affinity mask), ascending.
pub fn available_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            return (0..n).collect();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Pin the calling thread to `cpu`. Best effort: an unpinned thread still
/// measures, just noisier.
fn pin_to(cpu: usize) {
    // SAFETY: as above; 0 means the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// Taking and dropping one reference, per scheme.
trait BenchRef: Sync {
    fn page(count: i32) -> Self;
    fn get(&self) -> bool;
    fn put(&self) -> bool;
}

macro_rules! bench_ref_for_page_ref {
    ($t:ty) => {
        impl BenchRef for $t {
            fn page(count: i32) -> Self {
                <$t as PageRef>::new(count)
            }
            #[inline(always)]
            fn get(&self) -> bool {
                self.folio_try_get()
            }
            #[inline(always)]
            fn put(&self) -> bool {
                self.page_ref_dec_and_test()
            }
        }
    };
}
bench_ref_for_page_ref!(CmpxchgLoop);
bench_ref_for_page_ref!(Optimistic);
bench_ref_for_page_ref!(LockedBit);

/// Plain `lock xadd`: a get that cannot fail.
struct Xadd(AtomicI32);

impl BenchRef for Xadd {
    fn page(count: i32) -> Self {
        Xadd(AtomicI32::new(count))
    }
    #[inline(always)]
    fn get(&self) -> bool {
        self.0.fetch_add(1, Ordering::SeqCst);
        true
    }
    #[inline(always)]
    fn put(&self) -> bool {
        self.0.fetch_sub(1, Ordering::SeqCst) == 1
    }
}

/// A struct page: the count on its own cache line, like `_refcount` in the
/// vmemmap, away from the data and from the index.
#[repr(C, align(64))]
struct BenchPage<R> {
    refcount: R,
}

/// Slots of a shared index (one xarray node's worth); every slot names page
/// 0 so lookups of offset 0 all land on the same folio.
const INDEX_SLOTS: usize = 64;

#[repr(C, align(64))]
struct Shared<R> {
    index: [AtomicUsize; INDEX_SLOTS],
    page: BenchPage<R>,
    data: [u8; 4096],
    stop: CachePadded<AtomicBool>,
}

#[repr(C, align(64))]
struct CachePadded<T>(T);

/// Operations per iteration between looks at the stop flag.
const BATCH: u64 = 64;

fn measure_model(sc: Scheme, wl: Workload, n: usize, cpus: &[usize], dur: Duration) -> f64 {
    match sc {
        Scheme::CmpxchgLoop => measure::<CmpxchgLoop>(wl, n, cpus, dur),
        Scheme::Optimistic => measure::<Optimistic>(wl, n, cpus, dur),
        Scheme::LockedBit => measure::<LockedBit>(wl, n, cpus, dur),
        Scheme::Xadd => measure::<Xadd>(wl, n, cpus, dur),
        Scheme::Kernel => unreachable!("kernel runs kernel-pread only"),
    }
}

#[inline(always)]
fn will_it_scale_op<R: BenchRef>(sh: &Shared<R>, buf: &mut [u8; 64]) {
    let pgoff = black_box(0usize);
    loop {
        // filemap_get_read_batch: xas_load under RCU, folio_try_get, then
        // xas_reload to check the folio was not replaced meanwhile.
        let slot = sh.index[pgoff % INDEX_SLOTS].load(Ordering::Acquire);
        debug_assert_eq!(slot, 0);
        let page = &sh.page;
        if !page.refcount.get() {
            continue;
        }
        if sh.index[pgoff % INDEX_SLOTS].load(Ordering::Acquire) != slot {
            page.refcount.put();
            continue;
        }
        // copy_folio_to_iter of 64 bytes, then folio_put.
        buf.copy_from_slice(&sh.data[..64]);
        black_box(&mut *buf);
        if page.refcount.put() {
            unreachable!("the page cache holds a reference");
        }
        return;
    }
}

fn measure<R: BenchRef>(wl: Workload, n: usize, cpus: &[usize], dur: Duration) -> f64 {
    let sh = Box::new(Shared::<R> {
        index: std::array::from_fn(|_| AtomicUsize::new(0)),
        // The page cache's reference.
        page: BenchPage {
            refcount: R::page(1),
        },
        data: std::array::from_fn(|i| i as u8),
        stop: CachePadded(AtomicBool::new(false)),
    });
    let barrier = Barrier::new(n + 1);
    let total = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|i| {
                let sh = &*sh;
                let barrier = &barrier;
                let cpu = cpus.get(i % cpus.len().max(1)).copied();
                s.spawn(move || {
                    if let Some(c) = cpu {
                        pin_to(c);
                    }
                    let mut buf = [0u8; 64];
                    let mut ops = 0u64;
                    barrier.wait();
                    let t0 = Instant::now();
                    while !sh.stop.0.load(Ordering::Relaxed) {
                        for _ in 0..BATCH {
                            match wl {
                                Workload::WillItScale => will_it_scale_op(sh, &mut buf),
                                _ => {
                                    black_box(sh.page.refcount.get());
                                    black_box(sh.page.refcount.put());
                                }
                            }
                        }
                        ops += BATCH;
                    }
                    ops as f64 / t0.elapsed().as_secs_f64()
                })
            })
            .collect();
        barrier.wait();
        std::thread::sleep(dur);
        sh.stop.0.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or(0.0))
            .sum::<f64>()
    });
    total
}

/// A 4 KiB file in /dev/shm (tmpfs), removed on drop.
struct ShmFile {
    path: PathBuf,
}

impl ShmFile {
    fn create() -> Result<ShmFile, String> {
        let path = PathBuf::from(format!(
            "/dev/shm/foliosim-refcount-{}.dat",
            std::process::id()
        ));
        let err =
            |e: std::io::Error| format!("refcount-bench: kernel-pread: {}: {e}", path.display());
        let mut f = File::create(&path).map_err(err)?;
        let guard = ShmFile { path: path.clone() };
        let data: Vec<u8> = (0..4096u32).map(|i| i as u8).collect();
        f.write_all(&data).map_err(err)?;
        Ok(guard)
    }
}

impl Drop for ShmFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn kernel_pread(f: &ShmFile, n: usize, cpus: &[usize], dur: Duration) -> Result<f64, String> {
    let err =
        |e: std::io::Error| format!("refcount-bench: kernel-pread: {}: {e}", f.path.display());
    // Each worker opens the file itself, as in seed 001's loop.
    let files = (0..n)
        .map(|_| File::open(&f.path).map_err(err))
        .collect::<Result<Vec<_>, _>>()?;
    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(n + 1);
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = files
            .iter()
            .enumerate()
            .map(|(i, file)| {
                let (stop, barrier) = (&stop, &barrier);
                let cpu = cpus.get(i % cpus.len().max(1)).copied();
                s.spawn(move || -> std::io::Result<f64> {
                    if let Some(c) = cpu {
                        pin_to(c);
                    }
                    let mut buf = [0u8; 64];
                    let mut ops = 0u64;
                    barrier.wait();
                    let t0 = Instant::now();
                    while !stop.load(Ordering::Relaxed) {
                        for _ in 0..8 {
                            let got = file.read_at(&mut buf, 0)?;
                            if got != 64 {
                                return Err(std::io::Error::other(format!("short read {got}")));
                            }
                        }
                        ops += 8;
                    }
                    Ok(ops as f64 / t0.elapsed().as_secs_f64())
                })
            })
            .collect();
        barrier.wait();
        std::thread::sleep(dur);
        stop.store(true, Ordering::Relaxed);
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("worker panicked")))
            })
            .collect::<Vec<_>>()
    });
    let mut total = 0.0;
    for r in results {
        total += r.map_err(err)?;
    }
    Ok(total)
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn threads_spec() {
        assert_eq!(parse_threads("1,2").unwrap(), vec![1, 2]);
        assert_eq!(parse_threads("4").unwrap(), vec![1, 2, 3, 4]);
        assert_eq!(parse_threads("2-3").unwrap(), vec![2, 3]);
        assert_eq!(parse_threads("2,1,2").unwrap(), vec![1, 2]);
        assert_eq!(
            parse_threads("0").unwrap_err(),
            "refcount-bench: --threads '0': thread counts start at 1"
        );
        assert!(parse_threads("x").unwrap_err().contains("--threads 'x'"));
        assert!(parse_threads("3-1").unwrap_err().contains("backwards"));
        assert!(parse_threads("1,,2").is_err());
    }

    #[test]
    fn scheme_names_round_trip_and_errors() {
        for s in Scheme::ALL {
            assert_eq!(Scheme::parse(s.name()), Some(s));
        }
        let e = parse_schemes(&["locked-bit".into(), "lockedbit".into()]).unwrap_err();
        assert_eq!(
            e,
            "refcount-bench: --scheme 'lockedbit': unknown scheme (one of cmpxchg-loop, optimistic, locked-bit, xadd, kernel)"
        );
        assert!(parse_workloads(&["pread".into()])
            .unwrap_err()
            .contains("--workload 'pread'"));
    }

    #[test]
    fn configs_pair_kernel_with_pread_only() {
        let o = BenchOpts {
            threads: vec![1],
            schemes: vec![Scheme::Kernel, Scheme::LockedBit],
            workloads: Workload::ALL.to_vec(),
            runs: 1,
            duration_ms: 1,
        };
        assert_eq!(
            configs(&o),
            vec![
                (Workload::WillItScale, Scheme::LockedBit),
                (Workload::Bare, Scheme::LockedBit),
                (Workload::KernelPread, Scheme::Kernel),
            ]
        );
        let o = BenchOpts {
            schemes: vec![Scheme::Kernel],
            workloads: vec![Workload::Bare],
            ..o
        };
        assert!(run(&o).unwrap_err().contains("select nothing"));
    }

    #[test]
    fn cli_options() {
        let o = opts_from_cli(Some("1,2"), 3, 50, &["xadd".into()], &[]).unwrap();
        assert_eq!(o.threads, vec![1, 2]);
        assert_eq!((o.runs, o.duration_ms), (3, 50));
        assert_eq!(
            configs(&o),
            vec![
                (Workload::WillItScale, Scheme::Xadd),
                (Workload::Bare, Scheme::Xadd)
            ]
        );
        let d = opts_from_cli(None, 5, 300, &[], &[]).unwrap();
        assert_eq!(d.threads, (1..=available_cpus().len()).collect::<Vec<_>>());
        assert_eq!(configs(&d).len(), 9);
        assert_eq!(
            opts_from_cli(None, 0, 300, &[], &[]).unwrap_err(),
            "refcount-bench: --runs 0: need at least 1 run"
        );
        assert!(opts_from_cli(None, 1, 0, &[], &[])
            .unwrap_err()
            .contains("--duration-ms 0"));
        assert!(
            opts_from_cli(None, 1, 1, &["kernel".into()], &["bare".into()])
                .unwrap_err()
                .contains("select nothing")
        );
    }

    #[test]
    fn paired_gains() {
        let mk = |scheme, v: &[f64]| Samples {
            workload: Workload::Bare,
            scheme,
            threads: 2,
            ops_per_sec: v.to_vec(),
        };
        let base = mk(Scheme::CmpxchgLoop, &[100.0, 200.0, 50.0]);
        let lb = mk(Scheme::LockedBit, &[110.0, 230.0, 50.0]);
        let (med, lo, hi) = paired_gain_pct(&base, &lb).unwrap();
        assert!((med - 10.0).abs() < 1e-9 && lo.abs() < 1e-9 && (hi - 15.0).abs() < 1e-9);
        let t = render_gains(&[base.clone(), lb]);
        assert_eq!(t.lines().count(), 2);
        assert!(t
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("locked-bit     bare                 2            +10.0"));
        assert_eq!(render_gains(&[mk(Scheme::Xadd, &[1.0])]), "");
    }

    #[test]
    fn median_and_spread() {
        assert_eq!(median_spread(&[3.0, 1.0, 2.0]), (2.0, 100.0));
        assert_eq!(median_spread(&[4.0, 2.0]), (3.0, 2.0 / 3.0 * 100.0));
        assert_eq!(median_spread(&[0.0, 0.0]), (0.0, 0.0));
    }

    #[test]
    fn bench_rows_in_order_with_positive_rates_and_json_fields() {
        let o = BenchOpts {
            threads: vec![2, 1],
            schemes: vec![Scheme::Xadd, Scheme::CmpxchgLoop, Scheme::Kernel],
            workloads: vec![Workload::Bare, Workload::KernelPread],
            runs: 3,
            duration_ms: 5,
        };
        let rows = run(&o).unwrap();
        let keys: Vec<_> = rows
            .iter()
            .map(|r| (r.scheme.as_str(), r.workload.as_str(), r.threads))
            .collect();
        assert_eq!(
            keys,
            vec![
                ("cmpxchg-loop", "bare", 1),
                ("cmpxchg-loop", "bare", 2),
                ("xadd", "bare", 1),
                ("xadd", "bare", 2),
                ("kernel", "kernel-pread", 1),
                ("kernel", "kernel-pread", 2),
            ]
        );
        assert!(rows
            .iter()
            .all(|r| r.ops_per_sec > 0.0 && r.spread_pct >= 0.0));
        let v: serde_json::Value = serde_json::from_str(&render_json(&rows)).unwrap();
        let first = &v.as_array().unwrap()[0];
        let mut fields: Vec<_> = first.as_object().unwrap().keys().cloned().collect();
        fields.sort();
        assert_eq!(
            fields,
            ["ops_per_sec", "scheme", "spread_pct", "threads", "workload"]
        );
        // The tmpfs file is gone afterwards.
        let p = format!("/dev/shm/foliosim-refcount-{}.dat", std::process::id());
        assert!(!std::path::Path::new(&p).exists());
        let t = render_table(&rows);
        assert!(t.starts_with("scheme         workload       threads          ops/s  spread%\n"));
        assert_eq!(t.lines().count(), 7);
    }

    #[test]
    fn will_it_scale_keeps_the_page_cache_reference() {
        let sh = Shared::<LockedBit> {
            index: std::array::from_fn(|_| AtomicUsize::new(0)),
            page: BenchPage {
                refcount: LockedBit::new(1),
            },
            data: std::array::from_fn(|i| i as u8),
            stop: CachePadded(AtomicBool::new(false)),
        };
        let mut buf = [0u8; 64];
        for _ in 0..10 {
            will_it_scale_op(&sh, &mut buf);
        }
        assert_eq!(sh.page.refcount.raw(), 1);
        assert_eq!(buf[63], 63);
    }
}
