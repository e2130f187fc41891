//! `foliosim record`: a real application's run on this host, recorded as
//! a foliosim trace (the oracle crate's record module does the work).

use std::ffi::OsString;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct RecordArgs {
    /// The memory cgroup's limit (memory.limit_in_bytes), e.g. 32M.
    #[arg(long)]
    memcg_limit: Option<String>,
    /// The trace to write.
    #[arg(long, default_value = "foliosim.trace")]
    out: PathBuf,
    /// Where the recorder keeps its tracefs mount and temporary files
    /// (default: a new directory in the temporary directory, removed).
    #[arg(long)]
    scratch: Option<PathBuf>,
    /// The tracing ring buffer per CPU, in KiB.
    #[arg(long, default_value_t = 32768)]
    buffer_kb: u64,
    /// Also keep the tracer's text (ftrace's format, as trace-cmd
    /// report prints it) in this file: what a bug report needs.
    #[arg(long)]
    raw: Option<PathBuf>,
    /// The command and its arguments, after `--` (run by execve, no shell).
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
    cmd: Vec<OsString>,
}

pub fn run(a: &RecordArgs) -> Result<(), String> {
    let memcg_limit = match &a.memcg_limit {
        Some(l) => Some(crate::parse_memcg_limit(l).map_err(|e| format!("--memcg-limit: {e}"))?),
        None => None,
    };
    if a.buffer_kb == 0 || a.buffer_kb > 1 << 22 {
        return Err(format!(
            "--buffer-kb: {} is not from 1 to 4194304",
            a.buffer_kb
        ));
    }
    let scratch = a.scratch.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("foliosim-record-{}", std::process::id()))
    });
    let o = foliosim_oracle::record::RecordOpts {
        cmd: a.cmd.clone(),
        memcg_limit,
        out: a.out.clone(),
        scratch,
        buffer_kb: a.buffer_kb,
        raw: a.raw.clone(),
    };
    let r = foliosim_oracle::record::record(&o)?;
    // The command's own output is on stdout: the measurement goes to stderr.
    let mut s = format!(
        "foliosim record: {} exited with status {}; {} events in {} ({:.3} s)\n",
        a.cmd[0].to_string_lossy(),
        r.exit_status,
        r.events,
        a.out.display(),
        r.counters.get("wall_s").copied().unwrap_or(0.0)
    );
    if r.lost > 0 {
        s += &format!(
            "foliosim record: WARNING: {} events LOST (the ring buffer filled; raise --buffer-kb); the trace is incomplete\n",
            r.lost
        );
    }
    if !r.missing_events.is_empty() {
        s += &format!(
            "foliosim record: this kernel has no {}\n",
            r.missing_events.join(", ")
        );
    }
    s += "real counters (memory.stat of the run's cgroup at its end, /proc/vmstat deltas):\n";
    for (k, v) in &r.counters {
        if *v != 0.0 {
            s += &format!("  {k} {v}\n");
        }
    }
    eprint!("{s}");
    Ok(())
}
