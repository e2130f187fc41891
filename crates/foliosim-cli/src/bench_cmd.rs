//! `foliosim bench`: thin glue over `foliosim::bench`, plus the wall time
//! of the seeds' reproductions as users run them (this binary, run again).

use std::process::{Command, Stdio};
use std::time::Instant;

/// The model's cost per event and, with --runs, the reproductions' wall time.
#[derive(clap::Args, Debug, Clone)]
pub struct BenchArgs {
    /// Pages per event kind (at least 1024).
    #[arg(long, default_value_t = 200_000)]
    pub pages: u64,
    /// Measure every event this many times and keep each one's fastest.
    #[arg(long, default_value_t = 3)]
    pub rounds: u32,
    /// Also time each `foliosim reproduce` command (minutes).
    #[arg(long)]
    pub runs: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

const RUNS: &[&[&str]] = &[
    &["reproduce", "mmap-miss", "--format", "json"],
    &["reproduce", "strided-mmap", "--format", "json"],
    &["reproduce", "reclaim-loop", "--format", "json"],
    &["reproduce", "workingset-protection", "--format", "json"],
];

pub fn run(a: &BenchArgs) -> Result<(), String> {
    if a.pages < 1024 {
        return Err(format!("--pages: {} is below 1024", a.pages));
    }
    if a.rounds == 0 {
        return Err("--rounds: must be at least 1".into());
    }
    let rows = foliosim::bench::cost_per_event(a.pages, a.rounds);
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
        let v = serde_json::json!({ "pages": a.pages, "events": rows, "runs": runs });
        println!(
            "{}",
            serde_json::to_string_pretty(&v).expect("bench serialises")
        );
    } else {
        print!("{}", foliosim::bench::render(&rows, a.pages, &runs));
    }
    Ok(())
}
