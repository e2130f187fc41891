//! `foliosim bench`: thin glue over `foliosim::bench`, plus the wall time
//! of the seeds' reproductions as users run them (this binary, run again).

use std::process::{Command, Stdio};
use std::time::Instant;

/// The model's cost per event and, with --runs, the reproductions' wall time.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Pages per event kind (at least 4096: the large-folio read events
    /// read 8 MiB windows in a group of a quarter of it).
    #[arg(long, default_value_t = 200_000)]
    pub pages: u64,
    /// Measure every event this many times and keep each one's fastest.
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Also time each `foliosim reproduce` command (minutes).
    #[arg(long)]
    pub runs: bool,
    /// Events of the synthetic trace whose replay speed is measured
    /// (0: none).
    #[arg(long, default_value_t = 1_000_000)]
    pub replay_events: u64,
    /// Also replay these recorded traces (`foliosim record`): events per
    /// second, and the recorded run's wall time over the replay's.
    #[arg(long = "trace-file")]
    pub trace_files: Vec<std::path::PathBuf>,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// One replay measured: what, events, host seconds, the real run's wall
/// seconds (a recorded trace's header).
struct ReplaySpeed {
    what: String,
    events: u64,
    secs: f64,
    real_wall_s: Option<f64>,
}

/// The synthetic trace and each recorded one, replayed once each with the
/// whole kernel model (classic LRU, the trace's kernel and memcg limit).
fn replay_speeds(a: &BenchArgs) -> Result<Vec<ReplaySpeed>, String> {
    let mut out = Vec::new();
    if a.replay_events > 0 {
        let t = foliosim::bench::synthetic_trace(a.replay_events);
        let cfg = foliosim::sim::SimConfig {
            memcg_limit: Some(128 << 20),
            ..Default::default()
        };
        let (events, secs) = foliosim::bench::replay_speed(cfg, t.as_bytes(), "synthetic")?;
        out.push(ReplaySpeed {
            what: format!("synthetic trace ({} events)", a.replay_events),
            events,
            secs,
            real_wall_s: None,
        });
    }
    for p in &a.trace_files {
        let text = std::fs::read(p).map_err(|e| format!("--trace-file {}: {e}", p.display()))?;
        let label = p.display().to_string();
        let rd = foliosim_workload::rectrace::Reader::new(&text[..], &label)
            .map_err(|e| e.to_string())?;
        let mut cfg = foliosim::sim::SimConfig::default();
        cfg.memcg_limit = rd.get("memcg-limit").and_then(|v| v.parse().ok());
        if let Some(k) = rd
            .get("kernel")
            .and_then(|k| foliosim::mm::KernelRelease::parse(k).ok())
        {
            crate::oracle_model::set_release(&mut cfg.mm, k);
        }
        let real_wall_s = rd.get("real.wall_s").and_then(|v| v.parse().ok());
        let (events, secs) = foliosim::bench::replay_speed(cfg, &text, &label)?;
        out.push(ReplaySpeed {
            what: label,
            events,
            secs,
            real_wall_s,
        });
    }
    Ok(out)
}

fn render_replays(r: &[ReplaySpeed]) -> String {
    use std::fmt::Write;
    let mut s = String::from("\nreplay speed (whole kernel model, one replay each)\n");
    let _ = writeln!(
        s,
        "{:<48} {:>10} {:>8} {:>12} {:>14}",
        "trace", "events", "host s", "events/s", "real wall / s"
    );
    for x in r {
        let ratio = x.real_wall_s.map_or("-".into(), |w| {
            format!("{w:.2} / {:.0}x", w / x.secs.max(1e-9))
        });
        let _ = writeln!(
            s,
            "{:<48} {:>10} {:>8.3} {:>12.0} {:>14}",
            x.what,
            x.events,
            x.secs,
            x.events as f64 / x.secs.max(1e-9),
            ratio
        );
    }
    s
}

const RUNS: &[&[&str]] = &[
    &["reproduce", "mmap-miss", "--format", "json"],
    &["reproduce", "strided-mmap", "--format", "json"],
    &["reproduce", "reclaim-loop", "--format", "json"],
    &["reproduce", "workingset-protection", "--format", "json"],
];

pub fn run(a: &BenchArgs) -> Result<(), String> {
    if a.pages < 4096 {
        return Err(format!("--pages: {} is below 4096", a.pages));
    }
    if a.rounds == 0 {
        return Err("--rounds: must be at least 1".into());
    }
    let rows = foliosim::bench::cost_per_event(a.pages, a.rounds);
    let replays = replay_speeds(a)?;
    let mut runs = Vec::new();
    if a.runs {
        let exe = std::env::current_exe().map_err(|e| format!("bench: {e}"))?;
        for args in RUNS {
            let t = Instant::now();
            let st = Command::new(&exe)
                .args(*args)
                .stdout(Stdio::null())
                .status()
                .map_err(|e| format!("bench: {}: {e}", args.join(" ")))?;
            if !st.success() {
                return Err(format!("bench: foliosim {} failed: {st}", args.join(" ")));
            }
            runs.push((
                format!("foliosim {}", args[..2].join(" ")),
                t.elapsed().as_secs_f64(),
            ));
        }
    }
    if a.json {
        let runs: Vec<_> = runs
            .iter()
            .map(|(w, s)| serde_json::json!({ "command": w, "wall_s": s }))
            .collect();
        let replays: Vec<_> = replays
            .iter()
            .map(|x| {
                serde_json::json!({ "trace": x.what, "events": x.events, "host_s": x.secs,
                    "events_per_s": x.events as f64 / x.secs.max(1e-9), "real_wall_s": x.real_wall_s })
            })
            .collect();
        let v = serde_json::json!({ "pages": a.pages, "events": rows, "runs": runs, "replays": replays });
        println!(
            "{}",
            serde_json::to_string_pretty(&v).expect("bench serialises")
        );
    } else {
        print!("{}", foliosim::bench::render(&rows, a.pages, &runs));
        print!("{}", render_replays(&replays));
    }
    Ok(())
}
