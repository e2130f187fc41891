//! `foliosim oracle app`: a real application run on this host in a memory
//! cgroup and recorded (`foliosim record`), then the recording replayed in
//! the model configured as the host (what the oracle measured of it before
//! the run, nothing of the run), and the two compared as the suite does.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;

use foliosim_oracle::compare::{err_pct, median};

#[derive(clap::Args, Clone, Debug)]
pub struct AppArgs {
    /// The memory cgroup's limit (memory.limit_in_bytes), e.g. 600M.
    #[arg(long)]
    memcg_limit: String,
    /// Real runs (each recorded and replayed on its own).
    #[arg(long, default_value_t = 1)]
    repeat: u32,
    /// Where the traces and app.json go.
    #[arg(long, default_value = "foliosim-app")]
    out: PathBuf,
    /// The name the report gives the run (default: the command).
    #[arg(long)]
    name: Option<String>,
    /// Print the comparison as JSON.
    #[arg(long)]
    json: bool,
    /// The tracing ring buffer per CPU, in KiB.
    #[arg(long, default_value_t = 65536)]
    buffer_kb: u64,
    /// Swap for the real runs and the model alike: zram:SIZE (/dev/zram0,
    /// reset after) or disk:SIZE (a swap file in --out), or none. An
    /// application whose anonymous memory is over its limit needs it.
    #[arg(long, default_value = "none")]
    swap: String,
    /// Run nothing on the host: replay the recordings --out already holds
    /// (run0.trace...) in the model as it is now, their real counters
    /// from the traces' headers: a model change re-scored in seconds.
    #[arg(long)]
    remodel: bool,
    /// The command and its arguments, after `--` (run by execve, no shell).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    cmd: Vec<OsString>,
}

/// The judged counters: (name, the model's key and the recording's key,
/// tolerance %, judged only above this real value).
const JUDGED: &[(&str, &str, &str, f64, f64)] = &[
    (
        "pgpgin (group's block reads, bytes)",
        "io.rbytes",
        "io.rbytes",
        15.0,
        0.0,
    ),
    ("pgmajfault", "pgmajfault", "memcg.pgmajfault", 15.0, 0.0),
    (
        "workingset_refault_file",
        "workingset_refault_file",
        "memcg.workingset_refault_file",
        25.0,
        1000.0,
    ),
];

/// Shown beside them, not judged.
const SHOWN: &[(&str, &str, &str)] = &[
    ("memcg pgpgin (charge events)", "pgpgin", "memcg.pgpgin"),
    ("memcg pgfault", "pgfault", "memcg.pgfault"),
    (
        "vmstat.pgpgin (whole host, KiB)",
        "vmstat.pgpgin",
        "vmstat.pgpgin",
    ),
    ("file at the end (bytes)", "file", "memcg.file"),
    ("wall time / simulated (s)", "elapsed_s", "wall_s"),
];

#[derive(serde::Serialize)]
struct Row {
    counter: String,
    real_runs: Vec<f64>,
    model_runs: Vec<f64>,
    real_median: Option<f64>,
    model_median: Option<f64>,
    err_pct: Option<f64>,
    tolerance_pct: Option<f64>,
    /// None: not judged (a refault count of at most 1,000, or not a
    /// judged counter).
    within: Option<bool>,
}

#[derive(serde::Serialize)]
struct AppReport {
    name: String,
    cmd: Vec<String>,
    memcg_limit: u64,
    kernel: String,
    traces: Vec<String>,
    /// Events the recorder lost (a ring buffer that filled), per run.
    lost: Vec<u64>,
    /// Host seconds a replay (all flush phases) took, per run.
    replay_host_s: Vec<f64>,
    rows: Vec<Row>,
}

pub fn run(a: &AppArgs) -> Result<(), String> {
    let limit =
        crate::parse_memcg_limit(&a.memcg_limit).map_err(|e| format!("--memcg-limit: {e}"))?;
    if a.repeat == 0 {
        return Err("--repeat: 0 runs".into());
    }
    std::fs::create_dir_all(&a.out).map_err(|e| format!("{}: {e}", a.out.display()))?;
    let host = foliosim_oracle::host::read_host(&a.out)?;
    let mut cfg = crate::oracle_model::host_sim_config(&host, host.read_ahead_kb as u64, limit)?;
    let swap =
        foliosim_oracle::scn::parse_swap(Some(&a.swap)).map_err(|e| format!("--swap: {e}"))?;
    // Set up before the first run, swapped off and undone after the last
    // (journaled: `foliosim oracle restore` after a kill -9).
    let _swap_guard = if a.remodel {
        model_swap(&swap, &mut cfg);
        Box::new(())
    } else {
        swap_on(&swap, &a.out, &mut cfg)?
    };
    let mut real = Vec::new();
    let mut model = Vec::new();
    let mut rep = AppReport {
        name: a.name.clone().unwrap_or_else(|| {
            let v: Vec<_> = a.cmd.iter().map(|s| s.to_string_lossy()).collect();
            v.join(" ")
        }),
        cmd: a.cmd.iter().map(|s| s.to_string_lossy().into()).collect(),
        memcg_limit: limit,
        kernel: host.kernel_release.clone(),
        traces: Vec::new(),
        lost: Vec::new(),
        replay_host_s: Vec::new(),
        rows: Vec::new(),
    };
    for i in 0..a.repeat {
        let trace = a.out.join(format!("run{i}.trace"));
        let r = if a.remodel {
            recorded(&trace)?
        } else {
            record_run(a, limit, i, &trace)?
        };
        eprintln!(
            "foliosim oracle app: run {i}: {} events, {:.2} s; replaying",
            r.events,
            r.counters.get("wall_s").copied().unwrap_or(0.0)
        );
        let t0 = std::time::Instant::now();
        let m = crate::oracle_model::over_flush_phases(cfg.clone(), None, |c| {
            let rd = foliosim_workload::rectrace::open(&trace).map_err(|e| e.to_string())?;
            let (r, _) = foliosim::recreplay::replay(c, rd, Default::default())?;
            Ok(crate::oracle_model::oracle_counters(&r))
        })?;
        rep.replay_host_s.push(t0.elapsed().as_secs_f64());
        rep.traces.push(trace.display().to_string());
        rep.lost.push(r.lost);
        real.push(r.counters);
        model.push(m);
    }
    rep.rows = rows(&real, &model);
    let json = serde_json::to_string_pretty(&rep).expect("serialises");
    let path = a.out.join("app.json");
    std::fs::write(&path, &json).map_err(|e| format!("{}: {e}", path.display()))?;
    if a.json {
        println!("{json}");
    } else {
        print!("{}", render(&rep));
    }
    Ok(())
}

/// Run `i` on the host, from a cold page cache as every oracle run.
fn record_run(
    a: &AppArgs,
    limit: u64,
    i: u32,
    trace: &std::path::Path,
) -> Result<foliosim_oracle::record::Recording, String> {
    foliosim_oracle::run::drop_caches()?;
    let o = foliosim_oracle::record::RecordOpts {
        cmd: a.cmd.clone(),
        memcg_limit: Some(limit),
        out: trace.to_path_buf(),
        scratch: a.out.join(format!("scratch{i}")),
        buffer_kb: a.buffer_kb,
        raw: None,
    };
    let r = foliosim_oracle::record::record(&o)?;
    if r.exit_status != 0 {
        return Err(format!(
            "{}: exited with status {} (run {i})",
            a.cmd[0].to_string_lossy(),
            r.exit_status
        ));
    }
    Ok(r)
}

/// A recording made before (--remodel): its real counters, events and
/// lost events from the trace's header.
fn recorded(trace: &std::path::Path) -> Result<foliosim_oracle::record::Recording, String> {
    let rd = foliosim_workload::rectrace::open(trace).map_err(|e| e.to_string())?;
    let num = |k: &str| -> Result<f64, String> {
        let v = rd
            .get(k)
            .ok_or_else(|| format!("{}: no '# {k}:' header line", trace.display()))?;
        v.parse()
            .map_err(|_| format!("{}: '# {k}: {v}' is not a number", trace.display()))
    };
    let mut r = foliosim_oracle::record::Recording {
        events: num("events")? as u64,
        lost: num("lost-events")? as u64,
        ..Default::default()
    };
    for (k, v) in rd.header() {
        if let Some(name) = k.strip_prefix("real.") {
            let v = v
                .parse()
                .map_err(|_| format!("{}: '# {k}: {v}' is not a number", trace.display()))?;
            r.counters.insert(name.to_string(), v);
        }
    }
    Ok(r)
}

/// The host's swap for the runs, and the model's the same.
fn swap_on(
    s: &foliosim_oracle::scn::SwapSpec,
    out: &std::path::Path,
    cfg: &mut foliosim::sim::SimConfig,
) -> Result<Box<dyn std::any::Any>, String> {
    use foliosim_oracle::scn::{hostcfg, SwapSpec};
    let guard: Box<dyn std::any::Any> = match *s {
        SwapSpec::None => Box::new(()),
        SwapSpec::Zram(n) => Box::new(hostcfg::ZramSwap::setup(n)?),
        SwapSpec::Disk(n) => Box::new(hostcfg::SwapFile::setup(&out.join("swapfile"), n)?),
    };
    model_swap(s, cfg);
    Ok(guard)
}

/// The model's swap as --swap says, the host left alone (--remodel).
fn model_swap(s: &foliosim_oracle::scn::SwapSpec, cfg: &mut foliosim::sim::SimConfig) {
    use foliosim::mm::SwapKind;
    use foliosim_oracle::scn::SwapSpec;
    (cfg.mm.swap, cfg.mm.swap_bytes) = match *s {
        SwapSpec::None => (SwapKind::None, 0),
        SwapSpec::Zram(n) => (SwapKind::Zram, n),
        SwapSpec::Disk(n) => (SwapKind::Disk, n),
    };
}

fn rows(real: &[BTreeMap<String, f64>], model: &[BTreeMap<String, f64>]) -> Vec<Row> {
    let judged = JUDGED
        .iter()
        .map(|&(n, m, r, t, min)| (n, m, r, Some((t, min))));
    let shown = SHOWN.iter().map(|&(n, m, r)| (n, m, r, None));
    judged
        .chain(shown)
        .map(|(name, mk, rk, judge)| {
            let real_runs: Vec<f64> = real.iter().filter_map(|c| c.get(rk).copied()).collect();
            let model_runs: Vec<f64> = model.iter().filter_map(|c| c.get(mk).copied()).collect();
            let (rm, mm) = (median(&real_runs), median(&model_runs));
            let err = match (rm, mm) {
                (Some(r), Some(m)) => Some(err_pct(r, m)),
                _ => None,
            };
            let within = match (judge, rm, err) {
                (Some((tol, min)), Some(r), Some(e)) if r > min => Some(e.abs() <= tol),
                _ => None,
            };
            Row {
                counter: name.into(),
                real_runs,
                model_runs,
                real_median: rm,
                model_median: mm,
                err_pct: err,
                tolerance_pct: judge.map(|j| j.0),
                within,
            }
        })
        .collect()
}

fn render(r: &AppReport) -> String {
    use std::fmt::Write;
    let mut s = format!(
        "{}: {} MiB group, {} run(s) on {}, replayed in the model configured as this host\n",
        r.name,
        r.memcg_limit >> 20,
        r.real_runs(),
        r.kernel
    );
    let _ = writeln!(
        s,
        "{:<36} {:>16} {:>16} {:>8}  within",
        "counter", "real (median)", "model (median)", "err %"
    );
    for row in &r.rows {
        let f = |v: Option<f64>| v.map_or("-".into(), foliosim_oracle::compare::fmt_num);
        let within = match (row.within, row.tolerance_pct) {
            (Some(true), Some(t)) => format!("yes (±{t}%)"),
            (Some(false), Some(t)) => format!("NO (±{t}%)"),
            (None, Some(_)) => "not judged".into(),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "{:<36} {:>16} {:>16} {:>8}  {within}",
            row.counter,
            f(row.real_median),
            f(row.model_median),
            row.err_pct.map_or("-".into(), |e| format!("{e:+.1}"))
        );
    }
    if r.lost.iter().any(|&l| l > 0) {
        let _ = writeln!(
            s,
            "WARNING: the recorder lost events ({:?}): the traces are incomplete",
            r.lost
        );
    }
    s
}

impl AppReport {
    fn real_runs(&self) -> usize {
        self.traces.len()
    }
}
