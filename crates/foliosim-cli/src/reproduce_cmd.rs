//! `foliosim reproduce`: each seed's experiment beside the seed's
//! figures. Parsing and dispatch only: the experiments are the library's
//! (foliosim::reproduce).

use foliosim::reproduce;
use foliosim::sim::{LruKind, SimConfig};

use crate::machine::MachineArgs;
use crate::{run_cmd, trace_args};

/// Cells of a reproduction are independent seeded runs: by default they use
/// every CPU (the output does not depend on how many).
fn all_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[derive(clap::Subcommand)]
pub(crate) enum ReproduceCmd {
    /// Seed 002: pgpgin of the mmap_miss matrix, baseline / p1 / p2 / p1+p2.
    MmapMiss {
        #[arg(long, default_value = "table")]
        format: String,
        #[arg(long, default_value = "classic")]
        lru: String,
        /// Worker threads (cells run in parallel; output is the same).
        #[arg(long, default_value_t = all_cpus())]
        jobs: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Seed 000: refaults and bandwidth of strided mmap reads in a 400M
    /// memcg, MGLRU before/after with arm64 and x86 PTEs, and the classic LRU.
    StridedMmap {
        #[arg(long, default_value = "table")]
        format: String,
        #[arg(long, default_value_t = all_cpus())]
        jobs: usize,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Run one cell only: LRU,VARIANT,PTES as the table names it
        /// (e.g. mglru,pf-set-active,arm64); its row then carries the
        /// whole run's vmstat and memory.stat.
        #[arg(long, value_name = "LRU,VARIANT,PTES")]
        cell: Option<String>,
        /// The fio job's runtime in simulated seconds (the seed's 90);
        /// shorter runs count refaults from a third of it to its end.
        #[arg(long, default_value_t = 90)]
        runtime: u64,
        /// --trace needs --cell (one run, one trace).
        #[command(flatten)]
        trace: trace_args::TraceArgs,
    },
    /// Seed 003: the swappiness dispute (kernel build proxy with zram,
    /// swappiness 35..175) on mainline MGLRU, mm-new with and without the
    /// isolate_folios() fallback fix, and the classic LRU; the aging and
    /// throttling OOMs; MongoDB + YCSB workloadb; the fio row.
    ReclaimLoop {
        #[arg(long, default_value = "table")]
        format: String,
        #[arg(long, default_value_t = all_cpus())]
        jobs: usize,
        /// The swappiness sweep's cells are the mean of seeds 1..=N (the
        /// MGLRU cells need about ten to read their trends:
        /// docs/fidelity/seed003.md); the other experiments keep 1, 2, 3.
        #[arg(long, default_value_t = 3)]
        seeds: u64,
    },
    /// cache_ext (SOSP 2025): file search, YCSB C and Uniform, GET-SCAN and
    /// isolation (examples/cache_ext/) under the kernel's LRUs and
    /// cache_ext's policies, beside the paper's figures.
    CacheExt {
        /// text or json (rows: experiment, policy, metric, value, paper_value, kernel_ratio).
        #[arg(long, default_value = "text")]
        format: String,
        /// Worker threads (cells run in parallel; output is the same).
        #[arg(long, default_value_t = std::thread::available_parallelism().map_or(2, |n| n.get()))]
        jobs: usize,
    },
    /// Seed 004: MGLRU's workingset protection rework on the TPC-C and
    /// LULESH proxies (examples/seed004-*.toml), wsprot-legacy vs
    /// wsprot-rework, beside the seed's figures.
    WorkingsetProtection {
        /// text or json (rows: experiment, variant, metric, value, seed_value).
        #[arg(long, default_value = "text")]
        format: String,
        #[arg(long, default_value_t = all_cpus())]
        jobs: usize,
        /// Seed of the TPC-C run and of the first LULESH sample.
        #[arg(long, default_value_t = 4)]
        seed: u64,
        /// The other variants: seed (the kernel the seed measured:
        /// pf-set-active, reclaim-legacy) or newest (the defaults).
        #[arg(long, default_value = "seed")]
        base: String,
    },
}

/// How a reproduction prints its rows: `--format table` (or `text`, the
/// same) or `json`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RowFormat {
    Text,
    Json,
}

impl RowFormat {
    pub(crate) fn parse(s: &str) -> Result<Self, String> {
        match s {
            "table" | "text" => Ok(RowFormat::Text),
            "json" => Ok(RowFormat::Json),
            _ => Err(format!("--format: '{s}' is not table, text or json")),
        }
    }
}

pub(crate) fn run(which: &ReproduceCmd) -> Result<(), String> {
    match which {
        ReproduceCmd::MmapMiss {
            format,
            lru,
            jobs,
            seed,
        } => {
            let lru: LruKind = lru.parse().map_err(|e| format!("--lru: {e}"))?;
            let format = RowFormat::parse(format)?;
            trace_args::progress::install(None);
            let rows = reproduce::mmap_miss_matrix(lru, *seed, *jobs);
            trace_args::progress::done();
            print_rows(format, &rows, || reproduce::render_mmap_miss(&rows));
            Ok(())
        }
        ReproduceCmd::StridedMmap {
            format,
            jobs,
            seed,
            cell,
            runtime,
            trace,
        } => {
            let format = RowFormat::parse(format)?;
            if *runtime == 0 || *runtime > 3600 {
                return Err(format!("--runtime: {runtime} is not in 1..=3600 seconds"));
            }
            let rows = match cell {
                None if trace.trace.is_some() => {
                    return Err("--trace: needs --cell (one run, one trace)".into())
                }
                None if *runtime != 90 => return Err("--runtime: needs --cell".into()),
                None => {
                    trace_args::progress::install(None);
                    let rows = reproduce::strided_mmap(*seed, *jobs);
                    trace_args::progress::done();
                    rows
                }
                Some(c) => {
                    let parts: Vec<&str> = c.split(',').map(str::trim).collect();
                    let known = reproduce::STRIDED_CELLS.iter().find(|(l, v, p)| {
                        parts.len() == 3 && l.name() == parts[0] && *v == parts[1] && *p == parts[2]
                    });
                    let Some(&(l, v, p)) = known else {
                        let all: Vec<String> = reproduce::STRIDED_CELLS
                            .iter()
                            .map(|(l, v, p)| format!("{},{v},{p}", l.name()))
                            .collect();
                        return Err(format!("--cell: '{c}' is not one of {}", all.join(" ")));
                    };
                    let spec = trace.spec()?;
                    trace_args::progress::install(Some(*runtime));
                    let row =
                        reproduce::strided_mmap_cell_with(l, v, p, *seed, *runtime, spec.clone());
                    trace_args::progress::done();
                    trace_args::finish(&spec, trace.trace.as_deref())?;
                    vec![row]
                }
            };
            print_rows(format, &rows, || reproduce::render_strided(&rows));
            Ok(())
        }
        ReproduceCmd::ReclaimLoop {
            format,
            jobs,
            seeds,
        } => {
            use foliosim::reproduce::reclaim_loop;
            let format = RowFormat::parse(format)?;
            if !(1..=1000).contains(seeds) {
                return Err(format!("--seeds: {seeds} is not between 1 and 1000"));
            }
            let seeds: Vec<u64> = (1..=*seeds).collect();
            trace_args::progress::install(None);
            let rows = reclaim_loop::reproduce_all(*jobs, &seeds, shipped_scenario);
            trace_args::progress::done();
            let rows = rows?;
            print_rows(format, &rows, || reclaim_loop::render(&rows, &seeds));
            Ok(())
        }
        ReproduceCmd::CacheExt { format, jobs } => {
            use reproduce::cache_ext;
            let format = RowFormat::parse(format)?;
            // Each experiment's [machine] is the same; the first gives
            // the machine.
            let (_, base) =
                shipped_scenario(cache_ext::YCSB_C_TOML, "examples/cache_ext/ycsb-c.toml")?;
            trace_args::progress::install(None);
            let rows = cache_ext::cache_ext(&base, *jobs);
            trace_args::progress::done();
            let rows = rows?;
            print_rows(format, &rows, || cache_ext::render(&rows));
            Ok(())
        }
        ReproduceCmd::WorkingsetProtection {
            format,
            jobs,
            seed,
            base,
        } => {
            use reproduce::workingset_protection as wp;
            let format = RowFormat::parse(format)?;
            let size = wp::Size {
                base: base.parse().map_err(|e| format!("--base: {e}"))?,
                ..wp::Size::default()
            };
            trace_args::progress::install(None);
            let rows = wp::workingset_protection(*seed, size, *jobs);
            trace_args::progress::done();
            let rows = rows?;
            print_rows(format, &rows, || wp::render(&rows, size));
            Ok(())
        }
    }
}

/// A scenario shipped in examples/ (compiled in) and its machine, as
/// `foliosim run` builds it with no command-line options.
fn shipped_scenario(
    text: &str,
    label: &str,
) -> Result<(foliosim_workload::scenario::Scenario, SimConfig), String> {
    let sc = foliosim_workload::scenario::parse(text, label).map_err(|e| e.to_string())?;
    let cfg = run_cmd::with_scenario_defaults(&MachineArgs::default(), &sc)?.config()?;
    Ok((sc, cfg))
}

/// A reproduction's rows: JSON (`--format json`) or its text table.
fn print_rows<T: serde::Serialize + ?Sized>(
    format: RowFormat,
    rows: &T,
    text: impl FnOnce() -> String,
) {
    if format == RowFormat::Json {
        println!(
            "{}",
            serde_json::to_string_pretty(rows).expect("rows serialise")
        );
    } else {
        print!("{}", text());
    }
}
