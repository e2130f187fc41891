//! fio's own output for a model run: `--output-format=normal|json|json+`
//! as fio 3.33 prints them (stat.c show_thread_status_normal,
//! show_group_stats, show_thread_status_json, add_ddir_status_json,
//! json_add_job_opts; json.c's printer; lib/num2str.c), with the jobs of a
//! group merged under group_reporting as __show_run_stats does.
//!
//! What the model cannot know is printed as fio prints an idle value and
//! listed under `foliosim.unmodelled`: slat (sync engines have none), CPU
//! usage and context switches, disk_util. `lat` equals `clat` (no
//! submission latency is modelled). The clock fields are the simulated
//! epoch: `timestamp` 0 and `time` 1970-01-01, pid 0, so output is
//! deterministic. foliosim's own results (kernel counters, variants, lru)
//! sit under the top-level `foliosim` key, after fio's keys.

use std::fmt::Write;

use crate::fio_stat::{IoStat, LatDist, LatHist, DEFAULT_PERCENTILES};
use crate::sim::RunReport;

/// The fio release whose output layout is reproduced.
pub const FIO_VERSION: &str = "fio-3.33";
/// ctime(3) of the simulated epoch (0), which `time` shows.
const EPOCH_CTIME: &str = "Thu Jan  1 00:00:00 1970";
/// get_jobs_eta's eta_sec once every job is done, as fio 3.33 prints it.
const ETA_DONE: i64 = i32::MAX as i64;
const DDIR_NAMES: [&str; 3] = ["read", "write", "trim"];

/// Which of fio's outputs to print (`--output-format`, comma separated).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OutputFormat {
    pub normal: bool,
    pub json: bool,
    /// json+: json with each latency histogram's non-empty buckets.
    pub json_plus: bool,
}

impl std::str::FromStr for OutputFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let mut f = OutputFormat::default();
        for part in s.split(',') {
            match part.trim() {
                "normal" => f.normal = true,
                "json" => f.json = true,
                "json+" => {
                    f.json = true;
                    f.json_plus = true
                }
                "terse" => return Err("terse output is not supported (normal, json, json+)".into()),
                other => {
                    return Err(format!(
                        "unknown output format '{other}' (normal, json, json+)"
                    ))
                }
            }
        }
        Ok(f)
    }
}

/// The options of each job as the user wrote them, for fio's
/// `global options` and `job options` (options given without a value are
/// left out, as fio 3.33 leaves them out).
#[derive(Clone, Debug, Default)]
pub struct JobOptions {
    pub global: Vec<(String, String)>,
    /// One list per job of the report, in order.
    pub jobs: Vec<Vec<(String, String)>>,
}

// ---------------------------------------------------------------------------
// fio's thread_stat / group_run_stats, merged from the model's jobs

struct ThreadStat {
    name: String,
    groupid: u32,
    members: u32,
    io_bytes: [u64; 2],
    total_ios: [u64; 2],
    runtime: [u64; 2],
    clat: [LatHist; 2],
    lat_dist: LatDist,
    bw: [IoStat; 2],
    iops: [IoStat; 2],
    majf: u64,
    minf: u64,
    zone_resets: u64,
    total_run_time: u64,
    /// The last member job (fio keeps the last member's option list).
    last_job: usize,
}

#[derive(Default)]
struct GroupRunStats {
    min_run: [u64; 2],
    max_run: [u64; 2],
    min_bw: [u64; 2],
    max_bw: [u64; 2],
    iobytes: [u64; 2],
    agg: [u64; 2],
}

/// __show_run_stats: a job starts a new entry unless it has
/// group_reporting and is in the same group as the previous job.
fn thread_stats(r: &RunReport) -> Vec<ThreadStat> {
    let mut out: Vec<ThreadStat> = Vec::new();
    let mut last_group = None;
    for (i, j) in r.jobs.iter().enumerate() {
        let f = &j.fio;
        let merge = !out.is_empty() && f.group_reporting && last_group == Some(f.groupid);
        last_group = Some(f.groupid);
        if !merge {
            out.push(ThreadStat {
                name: j.jobname.clone(),
                groupid: f.groupid,
                members: 0,
                io_bytes: [0; 2],
                total_ios: [0; 2],
                runtime: [0; 2],
                clat: Default::default(),
                lat_dist: LatDist::default(),
                bw: Default::default(),
                iops: Default::default(),
                majf: 0,
                minf: 0,
                zone_resets: 0,
                total_run_time: 0,
                last_job: i,
            });
        }
        let ts = out.last_mut().expect("pushed above");
        ts.members += 1;
        ts.last_job = i;
        for (d, ds) in [&j.read, &j.write].into_iter().enumerate() {
            ts.io_bytes[d] += ds.io_bytes;
            ts.total_ios[d] += ds.total_ios;
            ts.runtime[d] = ts.runtime[d].max(ds.runtime_ms);
            ts.clat[d].merge(&f.clat[d]);
            ts.bw[d].sum(&f.rates.bw[d]);
            ts.iops[d].sum(&f.rates.iops[d]);
        }
        ts.lat_dist.add(&f.lat_dist);
        ts.majf += f.majf;
        ts.minf += f.minf;
        ts.zone_resets += f.zone_resets;
        ts.total_run_time += f.total_run_time_ms;
    }
    out
}

fn group_stats(ts: &[ThreadStat]) -> Vec<GroupRunStats> {
    let n = ts.iter().map(|t| t.groupid as usize + 1).max().unwrap_or(1);
    let mut rs: Vec<GroupRunStats> = (0..n)
        .map(|_| GroupRunStats {
            min_run: [u64::MAX; 2],
            min_bw: [u64::MAX; 2],
            ..Default::default()
        })
        .collect();
    for t in ts {
        let g = &mut rs[t.groupid as usize];
        for d in 0..2 {
            if t.runtime[d] == 0 {
                continue;
            }
            g.min_run[d] = g.min_run[d].min(t.runtime[d]);
            g.max_run[d] = g.max_run[d].max(t.runtime[d]);
            let bw = t.io_bytes[d] * 1000 / t.runtime[d];
            g.min_bw[d] = g.min_bw[d].min(bw);
            g.max_bw[d] = g.max_bw[d].max(bw);
            g.iobytes[d] += t.io_bytes[d];
        }
    }
    for g in &mut rs {
        for d in 0..2 {
            g.agg[d] = (g.iobytes[d] * 1000).checked_div(g.max_run[d]).unwrap_or(0);
        }
    }
    rs
}

/// stat.c convert_agg_kbytes_percent (its mean is an int parameter).
fn agg_percent(rs: &GroupRunStats, d: usize, mean: f64) -> f64 {
    if rs.agg[d] > 1024 {
        ((mean as i32) as f64 * 100.0 / (rs.agg[d] as f64 / 1024.0)).min(100.0)
    } else {
        100.0
    }
}

/// stat.c stat_calc_lat: percent of all I/Os, at least 0.01 when any.
fn lat_percents(counts: &[u64], total: u64) -> Vec<f64> {
    counts
        .iter()
        .map(|&c| {
            if total == 0 {
                return 0.0;
            }
            let v = c as f64 / total as f64 * 100.0;
            if v < 0.01 && c != 0 {
                0.01
            } else {
                v
            }
        })
        .collect()
}

/// Sync engines: every I/O goes at depth 1, submitted and completed one at
/// a time (io_u_map[0], io_u_submit[1], io_u_complete[1]).
fn depth_dist(total: u64, idx: usize) -> [f64; 7] {
    let mut d = [0.0; 7];
    if total > 0 {
        d[idx] = 100.0;
    }
    d
}

// ---------------------------------------------------------------------------
// JSON, printed as fio's json.c prints it

enum J {
    Int(i64),
    Float(f64),
    Str(String),
    /// A number already formatted (foliosim's extras keep serde's form).
    Raw(String),
    Obj(Vec<(String, J)>),
    Arr(Vec<J>),
}

struct Obj(Vec<(String, J)>);

impl Obj {
    fn new() -> Obj {
        Obj(Vec::new())
    }
    fn int(&mut self, k: &str, v: impl TryInto<i64>) -> &mut Self {
        self.0
            .push((k.into(), J::Int(v.try_into().unwrap_or(i64::MAX))));
        self
    }
    fn float(&mut self, k: &str, v: f64) -> &mut Self {
        self.0.push((k.into(), J::Float(v)));
        self
    }
    fn str(&mut self, k: &str, v: &str) -> &mut Self {
        self.0.push((k.into(), J::Str(v.into())));
        self
    }
    fn obj(&mut self, k: &str, o: Obj) -> &mut Self {
        self.0.push((k.into(), J::Obj(o.0)));
        self
    }
}

fn from_serde(v: &serde_json::Value) -> J {
    use serde_json::Value;
    match v {
        Value::Null => J::Raw("null".into()),
        Value::Bool(b) => J::Raw(b.to_string()),
        Value::Number(n) => J::Raw(n.to_string()),
        Value::String(s) => J::Str(s.clone()),
        Value::Array(a) => J::Arr(a.iter().map(from_serde).collect()),
        Value::Object(o) => J::Obj(o.iter().map(|(k, v)| (k.clone(), from_serde(v))).collect()),
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serialises")
}

fn indent(out: &mut String, level: usize) {
    for _ in 0..level {
        out.push_str("  ");
    }
}

/// json.c json_print_value: "key" : value pairs, two spaces a level, an
/// empty object or array still broken over two lines, floats as "%f".
fn print_json(v: &J, level: usize, out: &mut String) {
    match v {
        J::Int(i) => {
            let _ = write!(out, "{i}");
        }
        J::Float(f) => {
            let _ = write!(out, "{f:.6}");
        }
        J::Str(s) => out.push_str(&json_string(s)),
        J::Raw(s) => out.push_str(s),
        J::Obj(pairs) => {
            out.push_str("{\n");
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, level + 1);
                let _ = write!(out, "{} : ", json_string(k));
                print_json(v, level + 1, out);
            }
            out.push('\n');
            indent(out, level);
            out.push('}');
        }
        J::Arr(vals) => {
            out.push_str("[\n");
            for (i, v) in vals.iter().enumerate() {
                if i > 0 {
                    out.push_str(",\n");
                }
                indent(out, level + 1);
                print_json(v, level + 1, out);
            }
            out.push('\n');
            indent(out, level);
            out.push(']');
        }
    }
}

/// stat.c add_ddir_lat_json.
fn lat_json(stat: &IoStat, hist: Option<&LatHist>, plus: bool) -> Obj {
    let (min, max, mean, dev) = stat.calc().unwrap_or((0, 0, 0.0, 0.0));
    let mut o = Obj::new();
    o.int("min", min)
        .int("max", max)
        .float("mean", mean)
        .float("stddev", dev)
        .int("N", stat.samples);
    if let Some(h) = hist.filter(|_| stat.samples > 0) {
        let mut p = Obj::new();
        for (q, v) in h.percentiles(&DEFAULT_PERCENTILES) {
            p.int(&format!("{q:.6}"), v);
        }
        o.obj("percentile", p);
        if plus {
            let mut b = Obj::new();
            for (v, c) in h.bins() {
                b.int(&v.to_string(), c);
            }
            o.obj("bins", b);
        }
    }
    o
}

/// stat.c add_ddir_status_json for read, write and trim.
fn ddir_json(ts: &ThreadStat, rs: &GroupRunStats, d: usize, plus: bool) -> Obj {
    let empty = LatHist::default();
    let (bytes, ios, runt, clat) = if d < 2 {
        (ts.io_bytes[d], ts.total_ios[d], ts.runtime[d], &ts.clat[d])
    } else {
        (0, 0, 0, &empty)
    };
    let bw_bytes = (1000 * bytes).checked_div(runt).unwrap_or(0);
    let iops = if runt > 0 {
        1000.0 * ios as f64 / runt as f64
    } else {
        0.0
    };
    let mut o = Obj::new();
    o.int("io_bytes", bytes)
        .int("io_kbytes", bytes >> 10)
        .int("bw_bytes", bw_bytes)
        .int("bw", bw_bytes / 1024)
        .float("iops", iops)
        .int("runtime", runt)
        .int("total_ios", ios)
        .int("short_ios", 0)
        .int("drop_ios", 0)
        .obj("slat_ns", lat_json(&IoStat::default(), None, plus))
        .obj("clat_ns", lat_json(&clat.stat, Some(clat), plus))
        .obj("lat_ns", lat_json(&clat.stat, None, plus));
    let none = IoStat::default();
    let (bw, iops_s) = if d < 2 {
        (&ts.bw[d], &ts.iops[d])
    } else {
        (&none, &none)
    };
    let (min, max, mean, dev, agg) = match bw.calc() {
        Some((mi, ma, me, de)) => (mi, ma, me, de, agg_percent(rs, d.min(1), me)),
        None => (0, 0, 0.0, 0.0, 0.0),
    };
    o.int("bw_min", min)
        .int("bw_max", max)
        .float("bw_agg", agg)
        .float("bw_mean", mean)
        .float("bw_dev", dev)
        .int("bw_samples", bw.samples);
    let (min, max, mean, dev) = iops_s.calc().unwrap_or((0, 0, 0.0, 0.0));
    o.int("iops_min", min)
        .int("iops_max", max)
        .float("iops_mean", mean)
        .float("iops_stddev", dev)
        .int("iops_samples", iops_s.samples);
    o
}

fn opts_obj(list: &[(String, String)]) -> Option<Obj> {
    if list.is_empty() {
        return None;
    }
    let mut o = Obj::new();
    for (k, v) in list {
        o.str(k, v);
    }
    Some(o)
}

/// stat.c show_thread_status_json.
fn job_json(
    ts: &ThreadStat,
    rs: &GroupRunStats,
    r: &RunReport,
    opts: &JobOptions,
    plus: bool,
) -> Obj {
    let mut o = Obj::new();
    o.str("jobname", &ts.name)
        .int("groupid", ts.groupid)
        .int("error", 0)
        .int("eta", ETA_DONE)
        .int("elapsed", (r.elapsed_ns / 1_000_000).div_ceil(1000));
    if let Some(jo) = opts.jobs.get(ts.last_job).and_then(|l| opts_obj(l)) {
        o.obj("job options", jo);
    }
    for (d, name) in DDIR_NAMES.iter().enumerate() {
        o.obj(name, ddir_json(ts, rs, d, plus));
    }
    let mut sync = Obj::new();
    sync.int("total_ios", 0)
        .obj("lat_ns", lat_json(&IoStat::default(), None, plus));
    o.obj("sync", sync);
    o.int("job_runtime", ts.total_run_time)
        .float("usr_cpu", 0.0)
        .float("sys_cpu", 0.0)
        .int("ctx", 0)
        .int("majf", ts.majf)
        .int("minf", ts.minf);
    let total = ts.total_ios[0] + ts.total_ios[1];
    let mut lvl = Obj::new();
    for (i, v) in depth_dist(total, 0).iter().enumerate() {
        let k = if i < 6 {
            (1 << i).to_string()
        } else {
            format!(">={}", 1 << i)
        };
        lvl.float(&k, *v);
    }
    o.obj("iodepth_level", lvl);
    for name in ["iodepth_submit", "iodepth_complete"] {
        let mut s = Obj::new();
        for (i, v) in depth_dist(total, 1).iter().enumerate() {
            let k = match i {
                0 => "0".to_string(),
                1..=5 => (1 << (i + 1)).to_string(),
                _ => format!(">={}", 1 << i),
            };
            s.float(&k, *v);
        }
        o.obj(name, s);
    }
    const R10: [&str; 10] = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    const R12: [&str; 12] = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    for (name, counts, ranges) in [
        ("latency_ns", &ts.lat_dist.n[..], &R10[..]),
        ("latency_us", &ts.lat_dist.u[..], &R10[..]),
        ("latency_ms", &ts.lat_dist.m[..], &R12[..]),
    ] {
        let mut l = Obj::new();
        for (k, v) in ranges.iter().zip(lat_percents(counts, total)) {
            l.float(k, v);
        }
        o.obj(name, l);
    }
    // td->latency_qd: the queue depth, 1 for the modelled sync engines.
    o.int("latency_depth", 1)
        .int("latency_target", 0)
        .float("latency_percentile", 100.0)
        .int("latency_window", 0);
    o
}

/// foliosim's own results, under the top-level `foliosim` key.
fn foliosim_json(r: &RunReport) -> J {
    let mut v = serde_json::to_value(r).expect("report serialises");
    if let Some(m) = v.as_object_mut() {
        let jobs: Vec<serde_json::Value> = r
            .jobs
            .iter()
            .map(|j| {
                serde_json::json!({
                    "jobname": j.jobname,
                    "jobnum": j.jobnum,
                    "groupid": j.fio.groupid,
                    "oom_killed": j.oom_killed,
                })
            })
            .collect();
        m.insert("jobs".into(), jobs.into());
        m.insert(
            "generator".into(),
            format!(
                "foliosim {} (fio output of {FIO_VERSION})",
                env!("CARGO_PKG_VERSION")
            )
            .into(),
        );
        m.insert(
            "unmodelled".into(),
            serde_json::json!([
                "slat_ns",
                "usr_cpu",
                "sys_cpu",
                "ctx",
                "disk_util",
                "timestamp",
                "time"
            ]),
        );
    }
    from_serde(&v)
}

/// fio's JSON (or json+) document for a run.
pub fn render_json(r: &RunReport, opts: &JobOptions, plus: bool) -> String {
    let ts = thread_stats(r);
    let rs = group_stats(&ts);
    let mut root = Obj::new();
    root.str("fio version", FIO_VERSION)
        .int("timestamp", 0)
        .int("timestamp_ms", 0)
        .str("time", EPOCH_CTIME);
    if let Some(g) = opts_obj(&opts.global) {
        root.obj("global options", g);
    }
    let jobs = ts
        .iter()
        .map(|t| J::Obj(job_json(t, &rs[t.groupid as usize], r, opts, plus).0))
        .collect();
    root.0.push(("jobs".into(), J::Arr(jobs)));
    root.0.push(("disk_util".into(), J::Arr(Vec::new())));
    root.0.push(("foliosim".into(), foliosim_json(r)));
    let mut out = String::new();
    print_json(&J::Obj(root.0), 0, &mut out);
    out.push('\n');
    out
}

// ---------------------------------------------------------------------------
// normal output

/// lib/num2str.c num2str: `num` shortened to `maxlen` digits with a
/// decimal or binary prefix; `unit` is "", "B" or "B/s".
pub fn num2str(mut num: u64, maxlen: usize, pow2: bool, unit: &str) -> String {
    const SI: [&str; 7] = ["", "k", "M", "G", "T", "P", "E"];
    const IEC: [&str; 7] = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let prefix = if pow2 { IEC } else { SI };
    let thousand: u64 = if pow2 { 1024 } else { 1000 };
    let mut post = 0;
    let mut modulo: Option<u64> = None;
    let mut carry = false;
    while post < SI.len() {
        if num.to_string().len() <= maxlen {
            break;
        }
        let m = num % thousand;
        modulo = Some(m);
        num /= thousand;
        carry = m >= thousand / 2;
        post += 1;
    }
    if post >= SI.len() {
        post = 0;
    }
    let Some(m) = modulo else {
        return format!("{num}{}{unit}", prefix[post]);
    };
    let digits = num.to_string().len();
    if maxlen as i64 - digits as i64 <= 1 {
        if carry {
            num += 1;
        }
        return format!("{num}{}{unit}", prefix[post]);
    }
    let frac = format!("{:.*}", maxlen - digits - 1, m as f64 / thousand as f64);
    if frac.starts_with('1') {
        num += 1;
    }
    format!("{num}.{}{}{unit}", &frac[2..], prefix[post])
}

/// stat.c display_lat.
fn display_lat(out: &mut String, name: &str, s: &IoStat) {
    let Some((mut min, mut max, mut mean, mut dev)) = s.calc() else {
        return;
    };
    let mut base = "(nsec)";
    if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        (min, max, mean, dev) = (min / 1_000_000, max / 1_000_000, mean / 1e6, dev / 1e6);
        base = "(msec)";
    } else if min > 2000 && max > 99_999 && dev > 1000.0 {
        (min, max, mean, dev) = (min / 1000, max / 1000, mean / 1e3, dev / 1e3);
        base = "(usec)";
    }
    let _ = writeln!(
        out,
        "    {name} {base}: min={}, max={}, avg={mean:5.02}, stdev={dev:5.02}",
        num2str(min, 6, false, ""),
        num2str(max, 6, false, "")
    );
}

/// stat.c show_clat_percentiles (percentile_precision 2).
pub fn show_percentiles(out: &mut String, h: &LatHist, pre: &str) {
    let vals = h.percentiles(&DEFAULT_PERCENTILES);
    if vals.is_empty() {
        return;
    }
    let minv = vals.iter().map(|v| v.1).min().unwrap_or(0);
    let maxv = vals.iter().map(|v| v.1).max().unwrap_or(0);
    let (scale_down, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000, "msec")
    } else if minv > 2000 && maxv > 99_999 {
        (1, 1000, "usec")
    } else {
        (0, 1, "nsec")
    };
    let _ = write!(out, "    {pre} percentiles ({unit}):\n     |");
    let scaled = maxv / divisor;
    let time_width = if scaled == 0 {
        5
    } else {
        ((scaled as f64).log10() as usize + 1).max(5)
    };
    let precision = 2;
    let per_line = (80 - 7) / (precision + 10 + time_width);
    for (j, &(p, v)) in vals.iter().enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let last = j == vals.len() - 1;
        let mut v = v;
        for _ in 0..scale_down {
            v = v.div_ceil(1000);
        }
        let _ = write!(
            out,
            " {p:w$.precision$}th=[{v:>time_width$}]{}",
            if last { '\n' } else { ',' },
            w = precision + 3
        );
        if last {
            break;
        }
        if j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// stat.c show_ddir_status for read or write.
fn show_ddir(out: &mut String, ts: &ThreadStat, rs: &GroupRunStats, d: usize) {
    let runt = ts.runtime[d];
    if runt == 0 {
        return;
    }
    let bw = 1000 * ts.io_bytes[d] / runt;
    let iops = 1000 * ts.total_ios[d] / runt;
    // zbd_write_status: fio 3.33 always reports zone resets for writes.
    let post = if d == 1 {
        format!("; {} zone resets", ts.zone_resets)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  {}: IOPS={}, BW={} ({})({}/{runt}msec){post}",
        DDIR_NAMES[d],
        num2str(iops, 4, false, ""),
        num2str(bw, 4, true, "B/s"),
        num2str(bw, 4, false, "B/s"),
        num2str(ts.io_bytes[d], 4, true, "B"),
    );
    display_lat(out, "clat", &ts.clat[d].stat);
    display_lat(out, " lat", &ts.clat[d].stat);
    if ts.clat[d].samples() > 0 {
        show_percentiles(out, &ts.clat[d], "clat");
    }
    if let Some((mut min, mut max, mut mean, mut dev)) = ts.bw[d].calc() {
        let per = agg_percent(rs, d, mean);
        let mut unit = "KiB";
        if mean > 1024.0 * 1024.0 {
            (min, max, mean, dev) = (min / 1024, max / 1024, mean / 1024.0, dev / 1024.0);
            unit = "MiB";
        }
        let _ = writeln!(
            out,
            "   bw ({unit:>5}/s): min={min:5}, max={max:5}, per={per:3.2}%, avg={mean:5.02}, stdev={dev:5.02}, samples={}",
            ts.bw[d].samples
        );
    }
    if let Some((min, max, mean, dev)) = ts.iops[d].calc() {
        let _ = writeln!(
            out,
            "   iops        : min={min:5}, max={max:5}, avg={mean:5.02}, stdev={dev:5.02}, samples={}",
            ts.iops[d].samples
        );
    }
}

/// stat.c show_lat: the non-zero ranges of one unit, five a line.
fn show_lat(out: &mut String, pcts: &[f64], ranges: &[&str], unit: &str) {
    let mut line = 0;
    let mut shown = false;
    for (p, r) in pcts.iter().zip(ranges) {
        if *p <= 0.0 {
            continue;
        }
        if line == 0 {
            if shown {
                out.push('\n');
            }
            let _ = write!(out, "  lat ({unit})   : ");
        } else {
            out.push_str(", ");
        }
        shown = true;
        let _ = write!(out, "{r}={p:3.2}%");
        line = (line + 1) % 5;
    }
    if shown {
        out.push('\n');
    }
}

/// stat.c show_thread_status_normal.
fn show_thread_normal(out: &mut String, ts: &ThreadStat, rs: &GroupRunStats) {
    let total = ts.total_ios[0] + ts.total_ios[1];
    if ts.io_bytes[0] + ts.io_bytes[1] == 0 && total == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "{}: (groupid={}, jobs={}): err= 0: pid=0: {EPOCH_CTIME}",
        ts.name, ts.groupid, ts.members
    );
    for d in 0..2 {
        if ts.io_bytes[d] > 0 {
            show_ddir(out, ts, rs, d);
        }
    }
    const R10: [&str; 10] = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
    ];
    const R12: [&str; 12] = [
        "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
    ];
    show_lat(out, &lat_percents(&ts.lat_dist.n, total), &R10, "nsec");
    show_lat(out, &lat_percents(&ts.lat_dist.u, total), &R10, "usec");
    show_lat(out, &lat_percents(&ts.lat_dist.m, total), &R12, "msec");
    let _ = writeln!(
        out,
        "  cpu          : usr={:3.2}%, sys={:3.2}%, ctx=0, majf={}, minf={}",
        0.0, 0.0, ts.majf, ts.minf
    );
    let l = depth_dist(total, 0);
    let _ = writeln!(
        out,
        "  IO depths    : 1={:3.1}%, 2={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, >=64={:3.1}%",
        l[0], l[1], l[2], l[3], l[4], l[5], l[6]
    );
    let s = depth_dist(total, 1);
    for name in ["submit    ", "complete  "] {
        let _ = writeln!(
            out,
            "     {name}: 0={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, 64={:3.1}%, >=64={:3.1}%",
            s[0], s[1], s[2], s[3], s[4], s[5], s[6]
        );
    }
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},0,0 short=0,0,0,0 dropped=0,0,0,0",
        ts.total_ios[0], ts.total_ios[1]
    );
    let _ = writeln!(
        out,
        "     latency   : target=0, window=0, percentile=100.00%, depth=1"
    );
}

/// stat.c show_group_stats.
fn show_group(out: &mut String, g: usize, rs: &GroupRunStats) {
    let _ = writeln!(out, "\nRun status group {g} (all jobs):");
    for (d, label) in ["   READ", "  WRITE"].iter().enumerate() {
        if rs.max_run[d] == 0 {
            continue;
        }
        let b = |v: u64, p2: bool| num2str(v, 4, p2, "B/s");
        let _ = writeln!(
            out,
            "{label}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
            b(rs.agg[d], true),
            b(rs.agg[d], false),
            b(rs.min_bw[d], true),
            b(rs.max_bw[d], true),
            b(rs.min_bw[d], false),
            b(rs.max_bw[d], false),
            num2str(rs.iobytes[d], 4, true, "B"),
            num2str(rs.iobytes[d], 4, false, "B"),
            rs.min_run[d],
            rs.max_run[d]
        );
    }
}

/// fio's normal output for a run: each job (or group under
/// group_reporting), then the run status of each group. The disk stats
/// section is left out (no per-device counters are modelled).
pub fn render_normal(r: &RunReport) -> String {
    let ts = thread_stats(r);
    let rs = group_stats(&ts);
    let mut out = String::from("\n");
    for t in &ts {
        show_thread_normal(&mut out, t, &rs[t.groupid as usize]);
    }
    for (g, s) in rs.iter().enumerate() {
        show_group(&mut out, g, s);
    }
    out
}

/// fio's job options from the arguments of `foliosim fio` (fio's own, the
/// machine options taken out) for jobs parsed from them: options before
/// the first `--name` and `[global]` sections are global; a job file
/// section's lines are its job's options, a `--name`'s following
/// arguments on the command line (with the name itself, as fio lists it).
/// Jobs of one section (numjobs) share the list. fio orders each list by
/// its options' parse priority; here they are in the order written.
pub fn job_options(args: &[String], jobs: &[foliosim_workload::fio::FioJob]) -> JobOptions {
    const CMDLINE: &str = "<command line>";
    use foliosim_workload::fio::CMDLINE_IGNORED as NOT_JOB;
    let split = |a: &str| -> Option<(String, Option<String>)> {
        let o = a.strip_prefix("--").or_else(|| a.strip_prefix('-'))?;
        Some(match o.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (o.to_string(), None),
        })
    };
    // Command line: (position of each --name, its options), and globals.
    let mut global = Vec::new();
    let mut by_pos: Vec<(usize, Vec<(String, String)>)> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let Some((k, mut v)) = split(&args[i]) else {
            i += 1;
            continue;
        };
        let pos = i + 1;
        i += 1;
        if v.is_none() && foliosim_workload::fio::takes_value(&k) {
            if let Some(next) = args.get(i).filter(|n| !n.starts_with('-')) {
                v = Some(next.clone());
                i += 1;
            }
        }
        if NOT_JOB.contains(&k.as_str()) {
            continue;
        }
        if k == "name" {
            by_pos.push((pos, Vec::new()));
        }
        // Options written without a value are not listed by fio.
        let Some(v) = v else { continue };
        match by_pos.last_mut() {
            Some((_, l)) => l.push((k, v)),
            None => global.push((k, v)),
        }
    }
    let mut files: Vec<(String, Vec<String>)> = Vec::new();
    let mut out = JobOptions::default();
    for j in jobs {
        let (file, line) = j
            .source
            .rsplit_once(':')
            .map(|(f, l)| (f.to_string(), l.parse::<usize>().unwrap_or(0)))
            .unwrap_or_default();
        if file == CMDLINE {
            let l = by_pos
                .iter()
                .find(|(p, _)| *p == line)
                .map(|(_, l)| l.clone());
            out.jobs.push(l.unwrap_or_default());
            continue;
        }
        if !files.iter().any(|(f, _)| *f == file) {
            let text = std::fs::read_to_string(&file).unwrap_or_default();
            let lines: Vec<String> = text.lines().map(str::to_string).collect();
            // The [global] sections of this file.
            let mut in_global = false;
            for l in &lines {
                let l = strip_comment(l);
                if let Some(h) = l.strip_prefix('[') {
                    in_global = h.trim_end_matches(']').trim().starts_with("global");
                } else if in_global {
                    if let Some((k, v)) = l.split_once('=') {
                        global.push((k.trim().to_string(), v.trim().to_string()));
                    }
                }
            }
            files.push((file.clone(), lines));
        }
        let lines = &files
            .iter()
            .find(|(f, _)| *f == file)
            .expect("read above")
            .1;
        let mut l = Vec::new();
        for raw in lines.iter().skip(line) {
            let s = strip_comment(raw);
            if s.starts_with('[') {
                break;
            }
            if let Some((k, v)) = s.split_once('=') {
                l.push((k.trim().to_string(), v.trim().to_string()));
            }
        }
        out.jobs.push(l);
    }
    out.global = global;
    out
}

fn strip_comment(l: &str) -> &str {
    l.split([';', '#']).next().unwrap_or("").trim()
}

#[cfg(test)]
mod tests {
    use super::*;

    // Strings fio 3.33 printed on this host for the same numbers (see the
    // module tests of the CLI for the runs): BW=28.0MiB/s (29.3MB/s) for
    // 8 MiB in 286 ms, 8192KiB, IOPS=7160 and 248k, max=12512k and
    // 1030.0k in the clat line, io=291MiB.
    #[test]
    fn num2str_as_fio() {
        let bw = 1000 * 8388608 / 286;
        assert_eq!(num2str(bw, 4, true, "B/s"), "28.0MiB/s");
        assert_eq!(num2str(bw, 4, false, "B/s"), "29.3MB/s");
        assert_eq!(num2str(8388608, 4, true, "B"), "8192KiB");
        assert_eq!(num2str(8388608, 4, false, "B"), "8389kB");
        assert_eq!(num2str(1000 * 2048 / 286, 4, false, ""), "7160");
        assert_eq!(num2str(1000 * 74541 / 301, 4, false, ""), "248k");
        assert_eq!(num2str(12_512_345, 6, false, ""), "12512k");
        assert_eq!(num2str(1_030_012, 6, false, ""), "1030.0k");
        assert_eq!(num2str(74541 * 4096, 4, true, "B"), "291MiB");
    }

    #[test]
    fn percentiles_print_in_fios_layout() {
        let mut h = LatHist::default();
        for v in 1..=100 {
            h.add(v);
        }
        let mut out = String::new();
        show_percentiles(&mut out, &h, "clat");
        // Below 128 ns every value is its own bucket; width 5, four a line.
        // 30th and 60th are 31 and 61: fio's x87 bound 30/100*100 rounds
        // above 30 (fio_stat::x87_percentile_rank).
        assert_eq!(
            out,
            "    clat percentiles (nsec):\n\
             \x20    |  1.00th=[    1],  5.00th=[    5], 10.00th=[   10], 20.00th=[   20],\n\
             \x20    | 30.00th=[   31], 40.00th=[   40], 50.00th=[   50], 60.00th=[   61],\n\
             \x20    | 70.00th=[   70], 80.00th=[   80], 90.00th=[   90], 95.00th=[   95],\n\
             \x20    | 99.00th=[   99], 99.50th=[  100], 99.90th=[  100], 99.95th=[  100],\n\
             \x20    | 99.99th=[  100]\n"
        );
        // Microseconds (rounded up) once min > 2000 and max > 99999 ns:
        // 3000 and 200000 ns sit in buckets printed 2992 and 199680.
        let mut h = LatHist::default();
        h.add(3000);
        h.add(200_000);
        let mut out = String::new();
        show_percentiles(&mut out, &h, "clat");
        assert!(
            out.starts_with("    clat percentiles (usec):\n     |  1.00th=[    3],"),
            "{out}"
        );
        assert!(out.ends_with(" 99.99th=[  200]\n"), "{out}");
    }

    #[test]
    fn lat_ranges_five_a_line() {
        let mut out = String::new();
        show_lat(
            &mut out,
            &[0.0, 10.0, 0.0, 20.0, 20.0, 10.0, 10.0, 10.0, 0.005, 20.0],
            &[
                "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
            ],
            "usec",
        );
        assert_eq!(
            out,
            "  lat (usec)   : 4=10.00%, 20=20.00%, 50=20.00%, 100=10.00%, 250=10.00%\n  lat (usec)   : 500=10.00%, 750=0.01%, 1000=20.00%\n"
        );
        let p = lat_percents(&[1, 0, 99_999], 100_000);
        assert_eq!(&p[..2], [0.01, 0.0], "at least 0.01 when any");
        assert!((p[2] - 99.999).abs() < 1e-9);
    }
}
