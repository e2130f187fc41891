//! What a run reports (RunReport: fio's per-job statistics, the kernel's
//! counters, the lru_gen view) and its text output in the forms kernel
//! developers read: fio's summary (from `fio_output`), and counters under
//! their kernel names as /proc/vmstat and memory.stat show them.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use crate::sim::LruKind;

pub use crate::fio_stat::LatHist;
use crate::fio_stat::{LatDist, RateSamples, DEFAULT_PERCENTILES};

/// fio's per-direction statistics of one job.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DirStats {
    pub io_bytes: u64,
    pub total_ios: u64,
    pub runtime_ms: u64,
    pub bw_bytes: u64,
    pub iops: f64,
    pub clat_ns: BTreeMap<String, u64>,
    pub clat_mean_ns: f64,
    pub clat_stdev_ns: f64,
    pub clat_min_ns: u64,
    pub clat_max_ns: u64,
}

impl DirStats {
    /// As fio computes them (stat.c add_ddir_status_json): runtime in
    /// whole ms rounded up (backend.c update_runtime), only for a direction
    /// that moved bytes; bandwidth and IOPS from that runtime.
    pub fn from(h: &LatHist, bytes: u64, ios: u64, runtime_ns: u64) -> Self {
        let runtime_ms = if bytes > 0 {
            (runtime_ns / 1000).div_ceil(1000)
        } else {
            0
        };
        let clat = h.stat.calc().unwrap_or((0, 0, 0.0, 0.0));
        DirStats {
            io_bytes: bytes,
            total_ios: ios,
            runtime_ms,
            bw_bytes: (1000 * bytes).checked_div(runtime_ms).unwrap_or(0),
            iops: if runtime_ms > 0 {
                1000.0 * ios as f64 / runtime_ms as f64
            } else {
                0.0
            },
            clat_ns: h
                .percentiles(&DEFAULT_PERCENTILES)
                .into_iter()
                .map(|(p, v)| (format!("{p:.6}"), v))
                .collect(),
            clat_mean_ns: clat.2,
            clat_stdev_ns: clat.3,
            clat_min_ns: clat.0,
            clat_max_ns: clat.1,
        }
    }
}

/// What fio's thread_stat holds for one job beyond [`DirStats`]: the
/// histograms and samples its normal and JSON output are made from.
#[derive(Clone, Debug, Default)]
pub struct FioJobStats {
    /// Completion latencies, read and write.
    pub clat: [LatHist; 2],
    pub lat_dist: LatDist,
    pub rates: RateSamples,
    /// ms from the job's start (ramp included) to its end (fio's
    /// total_run_time).
    pub total_run_time_ms: u64,
    /// Faults taken during the job's I/O after ramp_time (fio's majf and
    /// minf from getrusage: pgmajfault, and pgfault less pgmajfault).
    pub majf: u64,
    pub minf: u64,
    pub groupid: u32,
    pub group_reporting: bool,
    /// zonemode=zbd: zones the job reset (fio's nr_zone_resets).
    pub zone_resets: u64,
}

impl FioJobStats {
    /// One I/O of `dir` (0 read, 1 write) completed at `t` after `lat` ns
    /// (fio's add_clat_sample and the bw/iops windows).
    #[inline]
    pub fn io_complete(&mut self, dir: usize, lat: u64, t: u64, bytes: u64) {
        self.clat[dir].add(lat);
        self.lat_dist.mark(lat);
        self.rates.io_done(t, dir, bytes);
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct JobReport {
    pub jobname: String,
    pub jobnum: u32,
    pub read: DirStats,
    pub write: DirStats,
    pub oom_killed: bool,
    /// fio's per-job error (errno; 5 = EIO when rate_min was not met).
    pub error: i32,
    /// Trims done and their bytes (rw=trim/randtrim; fio's DDIR_TRIM,
    /// which the per-direction statistics here do not cover).
    #[serde(skip)]
    pub trim: (u64, u64),
    /// fio's raw statistics (for `fio_output`; not in the `--json` object).
    #[serde(skip)]
    pub fio: FioJobStats,
}

/// One timeline sample: counters at the end of a simulated second.
#[derive(Clone, Debug, Serialize)]
pub struct TimelineSample {
    pub second: u64,
    pub vmstat: BTreeMap<&'static str, u64>,
    pub memcg: BTreeMap<&'static str, u64>,
}

/// Everything a run prints.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub lru: LruKind,
    pub variants: crate::mm::Variants,
    pub elapsed_ns: u64,
    pub io_wait_ns: u64,
    pub jobs: Vec<JobReport>,
    /// /proc/vmstat-style counters of the machine (pgpgin/pgpgout in KiB).
    pub vmstat: BTreeMap<&'static str, u64>,
    /// memory.stat-style counters of the workload's memcg (the root's when
    /// no limit was set).
    pub memcg: BTreeMap<&'static str, u64>,
    pub timeline: Option<Vec<TimelineSample>>,
    pub lru_gen: Option<serde_json::Value>,
    /// With --timeline under MGLRU: the lru_gen view at each simulated second.
    pub lru_gen_timeline: Option<Vec<(u64, serde_json::Value)>>,
    /// The workload memcg's cache_ext policy and its hook counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_ext: Option<CacheExtReport>,
    /// A cache_ext policy's failure (a Python policy raising or over its
    /// budget): the run stopped there, and drivers report this as the
    /// run's error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy_error: Option<String>,
    /// With large folios: the workload's files' resident page-cache folios
    /// at the end, order -> count (folioprobe.c reads the same from a
    /// real kernel's /proc/kpageflags).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_cache_folios: Option<BTreeMap<u32, u64>>,
    /// With anonymous mTHP enabled: each enabled size's events as
    /// /sys/kernel/mm/transparent_hugepage/hugepages-<size>kB/stats/ has
    /// them (anon_fault_alloc, swpout, swpin, their fallbacks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mthp: Option<BTreeMap<String, BTreeMap<&'static str, u64>>>,
}

/// A cache_ext policy's name and counters.
#[derive(Clone, Debug, Serialize)]
pub struct CacheExtReport {
    pub policy: String,
    pub stats: crate::mm::cache_ext::CacheExtStats,
}

/// fio's normal output (fio_output::render_normal), then the counters.
pub fn render_text(r: &RunReport, what: &str) -> String {
    let mut out = crate::fio_output::render_normal(r);
    out.push_str(&render_counters(r, what));
    out
}

/// Which cgroup file a key of a memcg map comes from, and its name there.
/// The maps hold memory.stat's counters beside memory.events', the v1
/// page counters' files and foliosim's own; text output keeps them apart.
fn memcg_file(key: &str) -> (&'static str, &str) {
    match key {
        // v1's memory.stat pgpgin/pgpgout: pages charged and uncharged.
        "memcg_pgpgin_events" => ("memory.stat", "pgpgin"),
        "memcg_pgpgout_events" => ("memory.stat", "pgpgout"),
        // The memcg's share of /proc/vmstat's pgpgin/pgpgout, in KiB.
        "pgpgin" | "pgpgout" => ("vmstat", key),
        "max" | "oom" => ("memory.events", key),
        "oom_kill_disable" | "under_oom" | "oom_kill" => ("memory.oom_control", key),
        _ if key.starts_with("events.") => ("memory.events", &key[7..]),
        _ if key.starts_with("foliosim_") => ("foliosim", key),
        "usage_in_bytes" | "max_usage_in_bytes" | "failcnt" | "swap.current" => ("files", key),
        _ if key.starts_with("memsw.") || key.starts_with("swap.events.") => ("files", key),
        _ => ("memory.stat", key),
    }
}

/// One memcg's counters under their files' names and units: memory.stat
/// (bytes; v1's pgpgin/pgpgout in pages), memory.events,
/// memory.oom_control, the page counters' own files, the memcg's vmstat
/// I/O in KiB, and foliosim's counters.
pub fn render_memcg(out: &mut String, whose: &str, m: &BTreeMap<&'static str, u64>) {
    let sections = [
        ("memory.stat", format!("memory.stat ({whose}; sizes in bytes, pgpgin/pgpgout in pages charged/uncharged as cgroup v1 counts them):")),
        ("memory.events", format!("memory.events ({whose}):")),
        ("memory.oom_control", format!("memory.oom_control ({whose}):")),
        ("files", format!("page counter files ({whose}; bytes):")),
        ("vmstat", format!("/proc/vmstat I/O charged to the {whose} (KiB):")),
        ("foliosim", format!("foliosim's own counters ({whose}):")),
    ];
    for (file, title) in sections {
        let rows: Vec<(&str, u64)> = m
            .iter()
            .filter(|(_, v)| **v != 0)
            .map(|(k, v)| (memcg_file(k), *v))
            .filter(|((f, _), _)| *f == file)
            .map(|((_, k), v)| (k, v))
            .collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "\n{title}");
        for (k, v) in rows {
            let k = if file == "files" {
                format!("memory.{k}")
            } else {
                k.to_string()
            };
            let _ = writeln!(out, "{k} {v}");
        }
    }
}

/// foliosim's part of the text output: the run, then the kernel's
/// counters under their kernel names.
pub fn render_counters(r: &RunReport, what: &str) -> String {
    let mut out = String::new();
    for j in r.jobs.iter().filter(|j| j.oom_killed) {
        let _ = writeln!(
            out,
            "\n{what}: job {} (jobnum {}) was OOM-killed",
            j.jobname, j.jobnum
        );
    }
    let _ = writeln!(
        out,
        "\n{what}: lru={} elapsed={:.3}s (io wait {:.3}s) patches: {}",
        r.lru.name(),
        r.elapsed_ns as f64 / 1e9,
        r.io_wait_ns as f64 / 1e9,
        r.variants.names().join(" ")
    );
    render_memcg(&mut out, "workload memcg", &r.memcg);
    let _ = writeln!(out, "\n/proc/vmstat (machine; pgpgin/pgpgout in KiB):");
    for (k, v) in &r.vmstat {
        if *v != 0 {
            let _ = writeln!(out, "{k} {v}");
        }
    }
    if let Some(m) = &r.mthp {
        let _ = writeln!(
            out,
            "\n/sys/kernel/mm/transparent_hugepage (enabled sizes' stats):"
        );
        for (size, stats) in m {
            for (k, v) in stats.iter().filter(|(_, v)| **v != 0) {
                let _ = writeln!(out, "{size}/stats/{k} {v}");
            }
        }
    }
    if let Some(c) = &r.cache_ext {
        let _ = writeln!(out, "\ncache_ext (policy {}):", c.policy);
        if let Ok(serde_json::Value::Object(m)) = serde_json::to_value(&c.stats) {
            for (k, v) in m {
                let _ = writeln!(out, "{k} {v}");
            }
        }
    }
    if let Some(v) = &r.lru_gen {
        let _ = writeln!(
            out,
            "\nlru_gen:\n{}",
            serde_json::to_string_pretty(v).unwrap_or_default()
        );
    }
    if let Some(tl) = &r.timeline {
        let _ = writeln!(out, "\ntimeline (per simulated second, deltas):");
        let keys = [
            "pgpgin",
            "pgmajfault",
            "workingset_refault_file",
            "workingset_activate_file",
            "pgscan_direct",
            "pgsteal_direct",
            "pgscan_kswapd",
            "pgsteal_kswapd",
        ];
        let _ = writeln!(
            out,
            "{:>6} {}",
            "second",
            keys.map(|k| format!("{k:>24}")).join(" ")
        );
        let mut prev: Option<&crate::sim::TimelineSample> = None;
        for s in tl {
            let vals: Vec<String> = keys
                .iter()
                .map(|k| {
                    let cur = s.memcg.get(k).copied().unwrap_or(0);
                    let p = prev.and_then(|p| p.memcg.get(k).copied()).unwrap_or(0);
                    format!("{:>24}", cur - p)
                })
                .collect();
            let _ = writeln!(out, "{:>6} {}", s.second, vals.join(" "));
            prev = Some(s);
        }
    }
    out
}
