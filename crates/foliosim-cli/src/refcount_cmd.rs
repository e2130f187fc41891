//! `foliosim refcount-bench`: thin glue over `foliosim_refcount::bench`.

use foliosim_refcount::bench;

/// Time try_get/put schemes from seed 001 under contention, beside pread(2)
/// on the host kernel.
#[derive(clap::Args, Debug, Clone)]
pub struct RefcountBenchArgs {
    /// Thread counts: N (1 up to N), A-B, or a list like 1,2
    /// [default: 1 up to the CPUs available]
    #[arg(long, value_name = "N|A-B|LIST")]
    pub threads: Option<String>,

    /// Runs per configuration; the table shows their median and spread
    #[arg(long, default_value_t = 5)]
    pub runs: usize,

    /// Length of one run in milliseconds
    #[arg(long = "duration-ms", default_value_t = 300)]
    pub duration_ms: u64,

    /// Only these schemes (repeatable or comma-separated): cmpxchg-loop,
    /// optimistic, locked-bit, xadd, kernel
    #[arg(long = "scheme", value_name = "SCHEME", value_delimiter = ',')]
    pub schemes: Vec<String>,

    /// Only these workloads (repeatable or comma-separated): will-it-scale,
    /// bare, kernel-pread
    #[arg(long = "workload", value_name = "WORKLOAD", value_delimiter = ',')]
    pub workloads: Vec<String>,

    /// Print a JSON list of {scheme, workload, threads, ops_per_sec,
    /// spread_pct} instead of the table
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &RefcountBenchArgs) -> Result<(), String> {
    let opts = bench::opts_from_cli(
        args.threads.as_deref(),
        args.runs,
        args.duration_ms,
        &args.schemes,
        &args.workloads,
    )?;
    let samples = bench::run_samples(&opts)?;
    let rows = bench::summarize(&samples);
    if args.json {
        print!("{}", bench::render_json(&rows));
    } else {
        print!("{}", bench::render_table(&rows));
        let gains = bench::render_gains(&samples);
        if !gains.is_empty() {
            // Same-round ratios: steadier than comparing medians on a busy box.
            print!("\n{gains}");
        }
    }
    Ok(())
}
