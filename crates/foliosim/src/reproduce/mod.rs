//! The seeds' experiments, each runnable with one command and printed
//! beside the seed's own figures. Counter columns (the mechanism's) are
//! compared with the seed's; timing columns come from the reference
//! machine's measured profile (mm::profile), the seeds' machines being
//! unknown, and are labelled so, never compared.

pub mod cache_ext;
pub mod reclaim_loop;
pub mod tables;

use serde::Serialize;

pub mod workingset_protection;

use crate::mm::{MmConfig, Variants};
use crate::sim::{run_probe, LruKind, RunReport, SimConfig};
use tables::seed_table;

/// What a reproduction's timing columns are: the model on the reference
/// machine's profile, not a prediction of the seed's own machine.
pub fn timing_basis() -> String {
    format!(
        "on the reference machine's profile ({})",
        crate::mm::profile::reference().describe()
    )
}
use foliosim_workload::mmap_probe::{Pattern, ProbeSpec};

seed_table! {
    /// Seed 002's published cells (pgpgin GiB, elapsed s): a copy of
    /// ../shared/seed-tables/mmap_miss_seed002.csv.
    pub static SEED002: Seed002Cell = "mmap_miss_seed002.csv" {
        file_gib: u64,
        pattern: &'static str,
        variant: &'static str,
        pgpgin_gib: f64,
        elapsed_s: f64,
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct MmapMissRow {
    pub file_gib: u64,
    pub pattern: String,
    pub variant: String,
    pub pgpgin_gib: f64,
    /// Simulated seconds on the reference machine's profile
    /// (`timing`): not a prediction of the seed's machine.
    pub elapsed_s: f64,
    /// What elapsed_s is (timing_basis()).
    pub timing: String,
    pub seed_pgpgin_gib: Option<f64>,
    /// The seed's elapsed time on its own (unknown) machine: shown, not
    /// compared.
    pub seed_own_machine_elapsed_s: Option<f64>,
    pub pgmajfault: u64,
    pub ra_unused_evicted: u64,
}

pub const MMAP_MISS_PATTERNS: &[&str] = &[
    "random",
    "stride1021",
    "stride2053",
    "stride4099",
    "sequential",
];
pub const MMAP_MISS_VARIANTS: &[&str] = &["baseline", "p1", "p2", "p1+p2"];

/// One cell of seed 002's matrix: an 8 GiB guest, read_ahead_kb 8192,
/// cold cache, 1% of the file's pages touched through mmap.
pub fn mmap_miss_cell(
    file_gib: u64,
    pattern: &str,
    variant: &str,
    lru: LruKind,
    seed: u64,
) -> MmapMissRow {
    let (cfg, spec) = mmap_miss_setup(file_gib, pattern, variant, lru, seed);
    mmap_miss_row(file_gib, pattern, variant, &run_probe(cfg, &spec))
}

fn mmap_miss_setup(
    file_gib: u64,
    pattern: &str,
    variant: &str,
    lru: LruKind,
    seed: u64,
) -> (SimConfig, ProbeSpec) {
    let mut variants = Variants::newest();
    variants.apply(variant).expect("matrix variants are valid");
    // Large folios: the sequential cells' async windows use them;
    // order-0 folios give the same pgpgin to 0.01%.
    let cfg = seed_guest(8192, variants, lru, seed);
    let spec = ProbeSpec {
        file_size: file_gib << 30,
        pattern: pattern
            .parse::<Pattern>()
            .expect("matrix patterns are valid"),
        fraction: 0.01,
        seed,
    };
    (cfg, spec)
}

/// The guest of seeds 000 and 002: 8 GiB on the seeds' 7.0-era mm-new
/// kernel, the files on ext4, which holds large folios there
/// (docs/large_folios.md).
fn seed_guest(read_ahead_kb: u64, variants: Variants, lru: LruKind, seed: u64) -> SimConfig {
    SimConfig {
        mm: MmConfig {
            ram_bytes: 8 << 30,
            read_ahead_kb,
            variants,
            kernel: Some(crate::mm::KernelRelease::MmNew),
            large_folios: true,
            ..MmConfig::default()
        },
        lru,
        seed,
        ..SimConfig::default()
    }
}

fn mmap_miss_row(file_gib: u64, pattern: &str, variant: &str, r: &RunReport) -> MmapMissRow {
    let seedrow = SEED002
        .rows()
        .iter()
        .find(|c| c.file_gib == file_gib && c.pattern == pattern && c.variant == variant);
    MmapMissRow {
        file_gib,
        pattern: pattern.to_string(),
        variant: variant.to_string(),
        pgpgin_gib: r.vmstat["pgpgin"] as f64 / (1u64 << 20) as f64,
        elapsed_s: r.elapsed_ns as f64 / 1e9,
        timing: timing_basis(),
        seed_pgpgin_gib: seedrow.map(|c| c.pgpgin_gib),
        seed_own_machine_elapsed_s: seedrow.map(|c| c.elapsed_s),
        pgmajfault: r.vmstat["pgmajfault"],
        ra_unused_evicted: r.vmstat["foliosim_ra_unused_evicted"],
    }
}

/// Every cell of seed 002's matrix: both file sizes, all patterns, all four
/// variants (the seed published a subset; the rest have no seed figure).
pub fn mmap_miss_cells() -> Vec<(u64, &'static str, &'static str)> {
    let mut v = Vec::new();
    for gib in [20u64, 4] {
        for p in MMAP_MISS_PATTERNS {
            for var in MMAP_MISS_VARIANTS {
                v.push((gib, *p, *var));
            }
        }
    }
    v
}

/// The first loop of a scenario, in process then thread order: (count,
/// duration, body). The seeds' proxies time their measured phase by it.
pub fn first_loop(
    sc: &foliosim_workload::scenario::Scenario,
) -> Option<(
    Option<u64>,
    Option<u64>,
    &[foliosim_workload::scenario::Step],
)> {
    use foliosim_workload::scenario::{Op, Step};
    fn find(steps: &[Step]) -> Option<(Option<u64>, Option<u64>, &[Step])> {
        steps.iter().find_map(|s| match &s.op {
            Op::Loop {
                count,
                duration_ns,
                steps,
            } => Some((*count, *duration_ns, steps.as_slice())),
            _ => None,
        })
    }
    sc.processes
        .iter()
        .flat_map(|p| &p.threads)
        .find_map(|t| find(&t.steps))
}

/// Runs cells on `threads` worker threads. Each cell is an independent,
/// seeded model run and results are stored by cell index, so the output
/// does not depend on scheduling.
pub fn run_parallel<T: Send, C: Sync>(
    cells: &[C],
    threads: usize,
    f: impl Fn(&C) -> T + Sync,
) -> Vec<T> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<T>>> = Mutex::new((0..cells.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= cells.len() {
                    break;
                }
                crate::progress::cell(&format!("{}/{}", i + 1, cells.len()));
                let r = f(&cells[i]);
                out.lock().unwrap()[i] = Some(r);
            });
        }
    });
    out.into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every cell ran"))
        .collect()
}

/// Seed 002's whole matrix.
pub fn mmap_miss_matrix(lru: LruKind, seed: u64, threads: usize) -> Vec<MmapMissRow> {
    mmap_miss_matrix_of(&mmap_miss_cells(), lru, seed, threads)
}

/// The matrix's `cells` (file GiB, pattern, variant), each row the one
/// `mmap_miss_cell` gives, in the order given. The patches change only the
/// mmap_miss count (mm::filemap::MmapMissAlts), so each (file, pattern)
/// runs once, under the first of its variants, following the others: a
/// variant whose read-around decisions never differ takes that run's
/// figures; one that differs gets its own run, queued the moment it
/// differs (ahead of the cells not yet started), on `threads` threads.
/// Which run gives a row never depends on timing, so the rows do not.
pub fn mmap_miss_matrix_of(
    cells: &[(u64, &str, &str)],
    lru: LruKind,
    seed: u64,
    threads: usize,
) -> Vec<MmapMissRow> {
    use std::collections::VecDeque;
    use std::sync::{Condvar, Mutex};
    let pv = |v: &str| {
        let mut x = Variants::newest();
        x.apply(v).expect("matrix variants are valid");
        (x.mmap_miss_p1, x.mmap_miss_p2)
    };
    // Jobs: a leading cell and the cells it follows.
    let mut jobs: VecDeque<(usize, Vec<usize>)> = VecDeque::new();
    let mut placed = vec![false; cells.len()];
    for i in 0..cells.len() {
        if placed[i] {
            continue;
        }
        let mut follow = Vec::new();
        for j in i + 1..cells.len() {
            let same = cells[j].0 == cells[i].0 && cells[j].1 == cells[i].1;
            if same && !placed[j] && follow.len() < crate::mm::filemap::MMAP_MISS_MAX_ALTS {
                placed[j] = true;
                follow.push(j);
            }
        }
        placed[i] = true;
        jobs.push_back((i, follow));
    }
    struct Queue {
        jobs: VecDeque<(usize, Vec<usize>)>,
        running: usize,
        done: usize,
    }
    let q = Mutex::new(Queue {
        jobs,
        running: 0,
        done: 0,
    });
    let wake = Condvar::new();
    let out: Mutex<Vec<Option<MmapMissRow>>> = Mutex::new((0..cells.len()).map(|_| None).collect());
    let total = cells.len();
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let (lead, follow) = {
                    let mut g = q.lock().unwrap();
                    loop {
                        if let Some(j) = g.jobs.pop_front() {
                            g.running += 1;
                            break j;
                        }
                        if g.running == 0 {
                            return;
                        }
                        g = wake.wait(g).unwrap();
                    }
                };
                let (gib, pat, var) = cells[lead];
                let (cfg, spec) = mmap_miss_setup(gib, pat, var, lru, seed);
                let alts: Vec<(bool, bool)> = follow.iter().map(|&j| pv(cells[j].2)).collect();
                let (r, diverged) = crate::sim::run_probe_following(cfg, &spec, &alts, &mut |i| {
                    q.lock().unwrap().jobs.push_front((follow[i], Vec::new()));
                    wake.notify_one();
                });
                let mut rows = out.lock().unwrap();
                let mut n = 1;
                rows[lead] = Some(mmap_miss_row(gib, pat, var, &r));
                for (k, &j) in follow.iter().enumerate() {
                    if diverged[k].is_none() {
                        rows[j] = Some(mmap_miss_row(gib, pat, cells[j].2, &r));
                        n += 1;
                    }
                }
                drop(rows);
                let mut g = q.lock().unwrap();
                g.running -= 1;
                g.done += n;
                crate::progress::cell(&format!("{}/{}", g.done, total));
                drop(g);
                wake.notify_all();
            });
        }
    });
    out.into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every cell ran"))
        .collect()
}

/// One line of a fixed-width text table: each cell padded to its
/// column's width, left-aligned where the width is negative (`{:<w}`),
/// one space apart.
fn table_line<S: AsRef<str>>(s: &mut String, widths: &[i32], cells: &[S]) {
    use std::fmt::Write;
    for (i, (&w, c)) in widths.iter().zip(cells).enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let (c, n) = (c.as_ref(), w.unsigned_abs() as usize);
        let _ = if w < 0 {
            write!(s, "{c:<n$}")
        } else {
            write!(s, "{c:>n$}")
        };
    }
    s.push('\n');
}

/// The headings line of a table: `headings` separated by '|'.
fn table_header(s: &mut String, widths: &[i32], headings: &str) {
    table_line(s, widths, &headings.split('|').collect::<Vec<_>>());
}

/// A value the seed may not give, "-" where it does not.
fn or_dash(v: Option<String>) -> String {
    v.unwrap_or_else(|| "-".into())
}

/// The matrix as a table: the counters beside the seed's, the times on
/// the reference machine's profile.
pub fn render_mmap_miss(rows: &[MmapMissRow]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "seed 002 mmap_miss: 8 GiB RAM, read_ahead_kb=8192, cold cache, 1% of pages touched through mmap");
    let widths = [4, -11, -9, 12, 12, 8, 10, 14, 10, 14];
    table_header(&mut s, &widths, "GiB|pattern|variant|pgpgin GiB|seed GiB|err %|elapsed s*|seed s (own)**|majfault|ra unused evict");
    for r in rows {
        let (seed, err) = match r.seed_pgpgin_gib {
            Some(sv) => (
                format!("{sv:.3}"),
                format!("{:+.1}", (r.pgpgin_gib - sv) / sv * 100.0),
            ),
            None => ("-".into(), "-".into()),
        };
        let cells = [
            r.file_gib.to_string(),
            r.pattern.clone(),
            r.variant.clone(),
            format!("{:.3}", r.pgpgin_gib),
            seed,
            err,
            format!("{:.3}", r.elapsed_s),
            or_dash(r.seed_own_machine_elapsed_s.map(|v| format!("{v:.3}"))),
            r.pgmajfault.to_string(),
            r.ra_unused_evicted.to_string(),
        ];
        table_line(&mut s, &widths, &cells);
    }
    let _ = writeln!(s, "* {}", timing_basis());
    let _ = writeln!(
        s,
        "** the seed's own machine (unknown): shown, not compared"
    );
    s
}

/// Seed 000's fio job (examples/seed000-strided-mmap.fio), with the run cut
/// at `runtime_s` simulated seconds.
pub const SEED000_JOB: &str = "[hot_ws]\nrw=read\nbs=4K\nsize=600M\nzonemode=strided\nzonesize=4K\nzonerange=64K\ntime_based\nruntime=600\ndirect=0\nfilename=hot_data.bin\nioengine=mmap\nfadvise_hint=0\ngroup_reporting\nnumjobs=1\n";

#[derive(Clone, Debug, Serialize)]
pub struct StridedRow {
    pub lru: String,
    pub variant: String,
    pub ptes: String,
    /// workingset_refault_file of the memcg between second 30 and 90.
    pub refaults: u64,
    /// fio's read bandwidth over the run, on the reference machine's
    /// profile (`timing`): not a prediction of the seed's machine.
    pub bw_mib_s: f64,
    /// What bw_mib_s is (timing_basis()).
    pub timing: String,
    pub seed_refaults: Option<u64>,
    /// Refaults per MiB fio read in the window (the run's bandwidth times
    /// the window's seconds): the mechanism's rate, whatever the machine's
    /// speed, where `refaults` counts a fixed time. The seed's from its
    /// own refaults and bandwidth, the same way.
    pub refaults_per_mib: f64,
    pub seed_refaults_per_mib: Option<f64>,
    /// The seed's bandwidth on its own (unknown) arm64 machine: shown,
    /// not compared.
    pub seed_own_machine_bw_mib_s: Option<f64>,
    /// Explanations: pages read ahead and evicted unused, and faults,
    /// in the same window.
    pub ra_unused_evicted: u64,
    pub pgmajfault: u64,
    /// Shadow nodes the mm-shadow shrinker freed in the window: refaults
    /// of pages whose shadow went with them are not counted as refaults.
    pub workingset_nodereclaim: u64,
    /// The whole run's /proc/vmstat and memcg memory.stat, for a traced
    /// cell (its tracepoints add up to these).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vmstat: Option<std::collections::BTreeMap<&'static str, u64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memcg: Option<std::collections::BTreeMap<&'static str, u64>>,
}

/// One configuration of seed 000's experiment: a 600M file read 4K every
/// 64K through mmap in a 400M memcg; refaults counted from second 30 to 90.
pub fn strided_mmap_cell(lru: LruKind, variant: &str, ptes: &str, seed: u64) -> StridedRow {
    strided_mmap_cell_with(lru, variant, ptes, seed, 90, None)
}

/// One cell with the fio job's runtime in simulated seconds (90 in the
/// seed; a shorter run counts refaults from a third of it, at most second
/// 30, to its end) and optionally traced; the row carries the whole run's
/// /proc/vmstat and memory.stat.
pub fn strided_mmap_cell_with(
    lru: LruKind,
    variant: &str,
    ptes: &str,
    seed: u64,
    runtime_s: u64,
    trace: Option<crate::trace::TraceSpec>,
) -> StridedRow {
    let mut variants = Variants::newest();
    variants.apply(variant).expect("valid variant");
    variants.apply(ptes).expect("valid ptes");
    // The seed does not give its file system: taken as ext4. Its strided
    // faults read around in order-0 windows: order-0 folios give the
    // same table.
    let cfg = SimConfig {
        memcg_limit: Some(400 << 20),
        timeline: true,
        ..seed_guest(128, variants, lru, seed)
    };
    let traced = trace.is_some();
    if let Some(t) = trace {
        crate::trace::arm(t);
    }
    let mut jobs =
        foliosim_workload::fio::parse_job_str(SEED000_JOB, "seed000").expect("seed job parses");
    jobs[0].runtime_ns = Some(runtime_s * 1_000_000_000);
    let r = crate::sim::run_fio(cfg, &jobs);
    let tl = r.timeline.as_ref().expect("timeline on");
    let at = |s: u64, k: &str| {
        tl.iter()
            .find(|x| x.second == s)
            .and_then(|x| x.memcg.get(k).copied())
            .unwrap_or(0)
    };
    let (from, to) = (30.min(runtime_s / 3), runtime_s);
    let window = |k: &str| at(to, k).saturating_sub(at(from, k));
    let read = &r.jobs[0].read;
    let bw_mib_s = read.bw_bytes as f64 / (1u64 << 20) as f64;
    let per_mib = |refaults: u64, bw: f64| match bw * (to - from) as f64 {
        mib if mib > 0.0 => refaults as f64 / mib,
        _ => 0.0,
    };
    // The seed measured its v1 patch and the code before it, on arm64.
    let seedrow = SEED000
        .rows()
        .iter()
        .find(|c| c.lru == lru && c.ptes == ptes && c.variant == variant);
    let seed_refaults = seedrow.map(|c| c.workingset_refault_file);
    let seed_bw = seedrow.map(|c| c.bw_mib_s);
    StridedRow {
        lru: lru.name().to_string(),
        variant: if lru == LruKind::Classic {
            "-".into()
        } else {
            variant.to_string()
        },
        ptes: ptes.to_string(),
        refaults: window("workingset_refault_file"),
        bw_mib_s,
        timing: timing_basis(),
        seed_refaults,
        refaults_per_mib: per_mib(window("workingset_refault_file"), bw_mib_s),
        seed_refaults_per_mib: seed_refaults.zip(seed_bw).map(|(r, b)| per_mib(r, b)),
        seed_own_machine_bw_mib_s: seed_bw,
        ra_unused_evicted: window("foliosim_ra_unused_evicted"),
        pgmajfault: window("pgmajfault"),
        workingset_nodereclaim: window("workingset_nodereclaim"),
        vmstat: traced.then(|| r.vmstat.clone()),
        memcg: traced.then(|| r.memcg.clone()),
    }
}

seed_table! {
    /// Seed 000's published figures: the cells the seed measured (lru,
    /// prefaulted PTEs, fault-path variant), their refaults and bandwidth.
    pub static SEED000: Seed000Cell = "strided_mmap_seed000.csv" {
        lru: LruKind,
        ptes: &'static str,
        variant: &'static str,
        workingset_refault_file: u64,
        bw_mib_s: f64,
    }
}

/// Seed 002's and seed 000's tables.
pub static TABLES: &[&dyn tables::Embedded] = &[&SEED002, &SEED000];

/// The whole of seed 000's comparison.
pub fn strided_mmap(seed: u64, threads: usize) -> Vec<StridedRow> {
    run_parallel(STRIDED_CELLS, threads, |&(l, v, p)| {
        strided_mmap_cell(l, v, p, seed)
    })
}

/// Seed 000's cells: (lru, fault-path variant, prefaulted PTEs).
pub const STRIDED_CELLS: &[(LruKind, &str, &str)] = &[
    (LruKind::Mglru, "pf-set-active", "arm64"),
    (LruKind::Mglru, "pf-mark-accessed", "arm64"),
    (LruKind::Mglru, "pf-set-active", "x86"),
    (LruKind::Mglru, "pf-mark-accessed", "x86"),
    (LruKind::Mglru, "pf-merged", "arm64"),
    (LruKind::Mglru, "pf-merged", "x86"),
    (LruKind::Classic, "pf-mark-accessed", "arm64"),
    (LruKind::Classic, "pf-mark-accessed", "x86"),
];

pub fn render_strided(rows: &[StridedRow]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    let _ = writeln!(s, "seed 000 strided mmap: 600M file, 400M memcg, fio 4K every 64K via mmap; refaults between second 30 and 90");
    let widths = [-8, -17, -6, 12, 12, 11, 11, 10, 16, 15, 10, 12];
    table_header(&mut s, &widths, "lru|variant|ptes|refaults|seed|refault/MiB|seed|MiB/s*|seed MiB/s (own)**|ra unused evict|majfault|nodereclaim");
    for r in rows {
        let cells = [
            r.lru.clone(),
            r.variant.clone(),
            r.ptes.clone(),
            r.refaults.to_string(),
            or_dash(r.seed_refaults.map(|v| v.to_string())),
            format!("{:.1}", r.refaults_per_mib),
            or_dash(r.seed_refaults_per_mib.map(|v| format!("{v:.1}"))),
            format!("{:.1}", r.bw_mib_s),
            or_dash(r.seed_own_machine_bw_mib_s.map(|v| format!("{v:.1}"))),
            r.ra_unused_evicted.to_string(),
            r.pgmajfault.to_string(),
            r.workingset_nodereclaim.to_string(),
        ];
        table_line(&mut s, &widths, &cells);
    }
    let _ = writeln!(s, "refaults count only pages whose shadow entry survived: under MGLRU a memcg's shadow nodes are reclaimed early (nodereclaim), so thrashing shows in majfault and MiB/s");
    let _ = writeln!(s, "* {}; the window is 60 simulated seconds, so refaults, majfault and ra unused evict scale with that machine's speed too: refault/MiB (per MiB fio read in the window) is the mechanism's rate, the seed's from its own refaults and MiB/s", timing_basis());
    let _ = writeln!(
        s,
        "** the seed's own machine (unknown): shown, not compared"
    );
    s
}
