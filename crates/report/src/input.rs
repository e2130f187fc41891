//! The results a report reads: foliosim's JSON objects (`fio --json`,
//! `fio --output-format=json`, `run --json`, `mmap-probe --json`, `replay
//! --json`, `compare --json`) and a sweep's CSV. Read as JSON values, not
//! through the model's types: the report reads files from any foliosim of
//! the same schema and never links the model.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

/// One run's results.
#[derive(Clone, Debug, Default)]
pub struct Run {
    /// How the report names it: the file's stem, or the compare set.
    pub label: String,
    /// What produced it: "fio", "scenario", "compare" ...
    pub kind: String,
    pub lru: String,
    /// Variant switches as the run printed them (name = value).
    pub variants: Vec<(String, String)>,
    pub elapsed_s: f64,
    pub io_wait_s: f64,
    /// memory.stat of the workload's memcg (sizes in bytes).
    pub memcg: BTreeMap<String, u64>,
    /// /proc/vmstat of the machine.
    pub vmstat: BTreeMap<String, u64>,
    /// Counters at the end of each simulated second (cumulative).
    pub timeline: Vec<Sample>,
    /// MGLRU generations at each simulated second (`--timeline --lru mglru`).
    pub gen_timeline: Vec<(f64, Vec<Gen>)>,
    /// The lru_gen view at the end.
    pub lru_gen: Option<Vec<Gen>>,
    pub jobs: Vec<Job>,
    /// Scenarios: memory.stat per cgroup path.
    pub cgroups: BTreeMap<String, BTreeMap<String, u64>>,
    pub processes: Vec<Process>,
}

#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub second: f64,
    pub memcg: BTreeMap<String, u64>,
    pub vmstat: BTreeMap<String, u64>,
}

/// One MGLRU generation (a line of /sys/kernel/debug/lru_gen), in pages.
#[derive(Clone, Debug, PartialEq)]
pub struct Gen {
    pub seq: u64,
    pub age_ms: u64,
    pub anon: u64,
    pub file: u64,
}

/// A fio job's per-direction results.
#[derive(Clone, Debug, Default)]
pub struct Job {
    pub name: String,
    pub oom_killed: bool,
    /// read, write: (bytes, bandwidth B/s, IOPS, clat mean ns, clat p99 ns)
    pub dirs: [(u64, u64, f64, f64, Option<u64>); 2],
}

#[derive(Clone, Debug, Default)]
pub struct Process {
    pub name: String,
    pub cgroup: String,
    pub oom_killed: bool,
    pub elapsed_s: f64,
    pub rss_anon: u64,
    pub rss_file: u64,
    pub swapents: u64,
}

/// A sweep's table: one row per (point, repeat).
#[derive(Clone, Debug, Default)]
pub struct Sweep {
    pub label: String,
    /// Parameter names, without the `param.` prefix, in column order.
    pub params: Vec<String>,
    /// Numeric result columns (`memcg.*`, `vmstat.*`, `elapsed_s`, ...).
    pub metrics: Vec<String>,
    pub rows: Vec<SweepRow>,
}

#[derive(Clone, Debug)]
pub struct SweepRow {
    pub point: String,
    pub repeat: String,
    pub params: Vec<String>,
    /// None where the cell is empty (a point that failed).
    pub metrics: Vec<Option<f64>>,
}

#[derive(Clone, Debug)]
pub enum Input {
    /// One run, or a comparison's runs (one per set).
    Runs {
        compare: bool,
        runs: Vec<Run>,
    },
    Sweep(Sweep),
}

/// Reads one result file; errors name the file.
pub fn load(path: &Path) -> Result<Input, String> {
    let file = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| format!("{file}: {e}"))?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.clone());
    let is_csv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"))
        || bytes.starts_with(b"point,");
    if is_csv {
        return parse_sweep(&bytes, &stem)
            .map(Input::Sweep)
            .map_err(|e| format!("{file}: {e}"));
    }
    let v: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("{file}: not JSON or a sweep CSV (line {}: {e})", e.line()))?;
    parse_json(&v, &stem).map_err(|e| format!("{file}: {e}"))
}

pub fn parse_json(v: &Value, stem: &str) -> Result<Input, String> {
    let Some(o) = v.as_object() else {
        return Err("not a foliosim result: the JSON is not an object (fio --json, run --json, compare --json)".into());
    };
    if let (Some(sets), Some(reports)) = (o.get("sets"), o.get("reports")) {
        // compare --json: the workload under each set.
        let sets = sets.as_array().ok_or("compare: 'sets' is not an array")?;
        let reports = reports
            .as_array()
            .ok_or("compare: 'reports' is not an array")?;
        if sets.len() != reports.len() || sets.is_empty() {
            return Err("compare: 'sets' and 'reports' differ in length".into());
        }
        let runs = sets
            .iter()
            .zip(reports)
            .map(|(s, r)| {
                let set = s.as_str().ok_or("compare: a set is not a string")?;
                let mut run = parse_run(r, "compare").map_err(|e| format!("set {set}: {e}"))?;
                run.label = set.to_string();
                Ok(run)
            })
            .collect::<Result<Vec<_>, String>>()?;
        return Ok(Input::Runs {
            compare: true,
            runs,
        });
    }
    let mut run = if let Some(f) = o.get("foliosim").filter(|_| o.contains_key("fio version")) {
        // fio's JSON: foliosim's object under its own key, fio's jobs at the top.
        let mut run = parse_run(f, "fio").map_err(|e| format!("key foliosim: {e}"))?;
        if let Some(jobs) = o.get("jobs").and_then(Value::as_array) {
            run.jobs = jobs.iter().map(fio_job).collect();
        }
        run
    } else if o.contains_key("vmstat") && o.contains_key("memcg") {
        let kind = if o.contains_key("cgroups") {
            "scenario"
        } else {
            "run"
        };
        parse_run(v, kind)?
    } else {
        return Err("not a foliosim result: no 'vmstat' and 'memcg' (fio --json, run --json, compare --json)".into());
    };
    run.label = stem.to_string();
    Ok(Input::Runs {
        compare: false,
        runs: vec![run],
    })
}

fn counters(v: Option<&Value>, what: &str) -> Result<BTreeMap<String, u64>, String> {
    let o = v
        .and_then(Value::as_object)
        .ok_or_else(|| format!("'{what}' is missing or not an object"))?;
    o.iter()
        .map(|(k, v)| {
            v.as_u64()
                .map(|n| (k.clone(), n))
                .ok_or_else(|| format!("{what}.{k}: not a counter ({v})"))
        })
        .collect()
}

fn num(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn gens(v: &Value) -> Option<Vec<Gen>> {
    let g = v.get("generations")?.as_array()?;
    Some(
        g.iter()
            .map(|g| Gen {
                seq: g.get("seq").and_then(Value::as_u64).unwrap_or(0),
                age_ms: g.get("age_ms").and_then(Value::as_u64).unwrap_or(0),
                anon: g.get("anon").and_then(Value::as_u64).unwrap_or(0),
                file: g.get("file").and_then(Value::as_u64).unwrap_or(0),
            })
            .collect(),
    )
}

/// foliosim's run object (RunReport; a scenario's adds cgroups and processes).
fn parse_run(v: &Value, kind: &str) -> Result<Run, String> {
    let mut r = Run {
        kind: kind.to_string(),
        lru: v
            .get("lru")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string(),
        elapsed_s: num(v, "elapsed_ns") / 1e9,
        io_wait_s: num(v, "io_wait_ns") / 1e9,
        memcg: counters(v.get("memcg"), "memcg")?,
        vmstat: counters(v.get("vmstat"), "vmstat")?,
        ..Run::default()
    };
    if let Some(vs) = v.get("variants").and_then(Value::as_object) {
        r.variants = vs
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.as_str().map_or_else(|| v.to_string(), String::from),
                )
            })
            .collect();
    }
    if let Some(tl) = v.get("timeline").and_then(Value::as_array) {
        for (i, s) in tl.iter().enumerate() {
            r.timeline.push(Sample {
                second: num(s, "second"),
                memcg: counters(s.get("memcg"), &format!("timeline[{i}].memcg"))?,
                vmstat: counters(s.get("vmstat"), &format!("timeline[{i}].vmstat"))?,
            });
        }
    }
    if let Some(tl) = v.get("lru_gen_timeline").and_then(Value::as_array) {
        for s in tl {
            let (Some(t), Some(g)) = (s.get(0).and_then(Value::as_f64), s.get(1).and_then(gens))
            else {
                return Err("lru_gen_timeline: an entry is not [second, lru_gen view]".into());
            };
            r.gen_timeline.push((t, g));
        }
    }
    r.lru_gen = v.get("lru_gen").and_then(gens);
    if let Some(jobs) = v.get("jobs").and_then(Value::as_array) {
        r.jobs = jobs.iter().map(run_job).collect();
    }
    if let Some(cg) = v.get("cgroups").and_then(Value::as_object) {
        for (path, m) in cg {
            r.cgroups
                .insert(path.clone(), counters(Some(m), &format!("cgroups.{path}"))?);
        }
    }
    if let Some(ps) = v.get("processes").and_then(Value::as_array) {
        r.processes = ps
            .iter()
            .map(|p| Process {
                name: p.get("name").and_then(Value::as_str).unwrap_or("?").into(),
                cgroup: p.get("cgroup").and_then(Value::as_str).unwrap_or("").into(),
                oom_killed: p
                    .get("oom_killed")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
                elapsed_s: num(p, "elapsed_ns") / 1e9,
                rss_anon: num(p, "rss_anon") as u64,
                rss_file: num(p, "rss_file") as u64,
                swapents: num(p, "swapents") as u64,
            })
            .collect();
    }
    Ok(r)
}

/// A job of foliosim's own object.
fn run_job(j: &Value) -> Job {
    // Its clat mean and percentiles sit beside the direction's counts.
    let oom = j
        .get("oom_killed")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    job(j, oom, |v| (num(v, "clat_mean_ns"), v.get("clat_ns")))
}

/// A job of fio's JSON (fio's key names).
fn fio_job(j: &Value) -> Job {
    // fio nests them: clat_ns.mean, clat_ns.percentile.
    job(j, false, |v| {
        let clat = &v["clat_ns"];
        (num(clat, "mean"), clat.get("percentile"))
    })
}

/// A job whose read and write objects give their completion latency's
/// mean and percentile table through `clat`.
fn job(j: &Value, oom_killed: bool, clat: impl Fn(&Value) -> (f64, Option<&Value>)) -> Job {
    let dir = |d: &str| {
        let v = &j[d];
        let (mean, pct) = clat(v);
        (
            num(v, "io_bytes") as u64,
            num(v, "bw_bytes") as u64,
            num(v, "iops"),
            mean,
            pct.and_then(|p| p.get("99.000000")).and_then(Value::as_u64),
        )
    };
    Job {
        name: j
            .get("jobname")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .into(),
        oom_killed,
        dirs: [dir("read"), dir("write")],
    }
}

/// The sweep table: `point, repeat, seed`, `param.<name>` columns, then
/// numeric results. Columns that are neither (text the sweep adds) are
/// left out of the plots.
pub fn parse_sweep(bytes: &[u8], label: &str) -> Result<Sweep, String> {
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_reader(bytes);
    let header: Vec<String> = rd
        .headers()
        .map_err(|e| format!("line 1: {e}"))?
        .iter()
        .map(str::to_string)
        .collect();
    let col = |n: &str| header.iter().position(|h| h == n);
    let (Some(pc), Some(rc)) = (col("point"), col("repeat")) else {
        return Err("line 1: a sweep table needs 'point' and 'repeat' columns".into());
    };
    let param_cols: Vec<usize> = (0..header.len())
        .filter(|&i| header[i].starts_with("param."))
        .collect();
    if param_cols.is_empty() {
        return Err("line 1: no 'param.<name>' column".into());
    }
    let mut records = Vec::new();
    for (i, rec) in rd.records().enumerate() {
        let rec = rec.map_err(|e| format!("line {}: {e}", i + 2))?;
        if rec.len() != header.len() {
            return Err(format!(
                "line {}: {} fields, the header has {}",
                i + 2,
                rec.len(),
                header.len()
            ));
        }
        records.push(rec);
    }
    // A result column: every non-empty cell is a number.
    let skip = |i: usize| i == pc || i == rc || header[i] == "seed" || param_cols.contains(&i);
    let metric_cols: Vec<usize> = (0..header.len())
        .filter(|&i| !skip(i))
        .filter(|&i| {
            records
                .iter()
                .all(|r| r[i].is_empty() || r[i].parse::<f64>().is_ok())
        })
        .filter(|&i| records.iter().any(|r| !r[i].is_empty()))
        .collect();
    Ok(Sweep {
        label: label.to_string(),
        params: param_cols
            .iter()
            .map(|&i| header[i]["param.".len()..].to_string())
            .collect(),
        metrics: metric_cols.iter().map(|&i| header[i].clone()).collect(),
        rows: records
            .iter()
            .map(|r| SweepRow {
                point: r[pc].to_string(),
                repeat: r[rc].to_string(),
                params: param_cols.iter().map(|&i| r[i].to_string()).collect(),
                metrics: metric_cols.iter().map(|&i| r[i].parse().ok()).collect(),
            })
            .collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_table_splits_into_parameters_and_results() {
        let csv = "point,repeat,seed,param.swappiness,param.lru,memcg.pgpgin,vmstat.pswpout,elapsed_s,status\n\
                   0,0,1,60,mglru,100,5,1.5,ok\n\
                   0,1,2,60,mglru,110,,1.5,ok\n";
        let s = parse_sweep(csv.as_bytes(), "s").unwrap();
        assert_eq!(s.params, ["swappiness", "lru"]);
        // status is text: not a result to plot.
        assert_eq!(s.metrics, ["memcg.pgpgin", "vmstat.pswpout", "elapsed_s"]);
        assert_eq!(s.rows[1].params, ["60", "mglru"]);
        assert_eq!(s.rows[1].metrics, [Some(110.0), None, Some(1.5)]);
    }

    /// foliosim's own job object and fio's JSON name the completion
    /// latency differently; both give the same direction figures.
    #[test]
    fn jobs_read_clat_from_foliosim_and_from_fio_keys() {
        let read = serde_json::json!({"io_bytes": 4096, "bw_bytes": 2048, "iops": 0.5});
        let mut own = serde_json::json!({"jobname": "j", "oom_killed": true,
            "read": read.clone(), "write": read.clone()});
        own["read"]["clat_mean_ns"] = 7.0.into();
        own["read"]["clat_ns"] = serde_json::json!({"99.000000": 9});
        let mut fio = serde_json::json!({"jobname": "j", "read": read.clone(), "write": read});
        fio["read"]["clat_ns"] = serde_json::json!({"mean": 7.0, "percentile": {"99.000000": 9}});
        let (a, b) = (run_job(&own), fio_job(&fio));
        assert_eq!(a.dirs[0], (4096, 2048, 0.5, 7.0, Some(9)));
        assert_eq!(a.dirs, b.dirs);
        assert!(a.oom_killed && !b.oom_killed);
        assert_eq!(a.dirs[1].4, None, "no percentile table");
    }

    #[test]
    fn bad_tables_and_objects_say_what_is_wrong() {
        let e = parse_sweep(b"a,b\n1,2\n", "s").unwrap_err();
        assert_eq!(
            e,
            "line 1: a sweep table needs 'point' and 'repeat' columns"
        );
        let e = parse_sweep(b"point,repeat,param.x\n0,0\n", "s").unwrap_err();
        assert!(e.starts_with("line 2: "), "{e}");
        let e = parse_json(&serde_json::json!([1, 2]), "x").unwrap_err();
        assert!(e.starts_with("not a foliosim result"), "{e}");
        let e = parse_json(
            &serde_json::json!({"vmstat": {"pgpgin": -1}, "memcg": {}}),
            "x",
        )
        .unwrap_err();
        assert_eq!(e, "vmstat.pgpgin: not a counter (-1)");
    }
}
