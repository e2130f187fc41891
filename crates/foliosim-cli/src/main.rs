//! foliosim: the command line. Thin: parses options, calls the model
//! library, prints. Bad input exits 2 with one line naming what was wrong.
//! A library as well (`foliosim_cli`): [`run_argv`] runs one workload
//! command line as the binary would, for the Python bindings and sweeps.

mod bench_cmd;
mod calibrate_cmd;
mod machine;
mod oracle_app;
mod oracle_cmd;
mod oracle_model;
use oracle_model::oracle_model;
mod probe_args;
mod record_cmd;
mod refcount_cmd;
mod report_cmd;
mod reproduce_cmd;
mod run_cmd;
pub mod sweep;
mod sweep_parquet;
mod trace_args;
mod workload;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};
use foliosim::sim::RunReport;

pub(crate) use machine::{parse_device, parse_memcg_limit, MachineArgs};
use reproduce_cmd::ReproduceCmd;
pub(crate) use workload::check_footprint;
use workload::{compare, print_report, run_workload, run_workload_with};

#[derive(Parser)]
#[command(
    name = "foliosim",
    version,
    about = "A deterministic model of the Linux page cache, readahead and reclaim"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run fio jobs (job files and/or fio's --name=... command-line form)
    /// through the model. Machine options (--memory, --memcg-limit, --lru,
    /// --variant, ...) may be mixed in; `foliosim fio --help` lists them.
    #[command(disable_help_flag = true)]
    Fio {
        /// Job files, fio's options and machine options, in any order.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
        args: Vec<String>,
    },
    /// Seed 002's mmap_miss_probe in the model.
    MmapProbe {
        #[command(flatten)]
        shape: probe_args::ProbeShape,
        #[command(flatten)]
        machine: MachineArgs,
    },
    /// Replay a trace: a recorded application's (`foliosim record`,
    /// docs/trace-format.md; found by its first line) through the model's
    /// syscall, fault and anonymous paths, or a libCacheSim trace
    /// (oracleGeneral or csv): each object id a 4 KiB page of one file,
    /// read with pread and readahead off.
    Replay {
        /// The trace (its id is not `trace`: --trace, the tracepoint
        /// output among the machine options, has that one).
        #[arg(id = "trace_path", value_name = "TRACE")]
        trace: std::path::PathBuf,
        /// oracleGeneral or csv (default: by file extension).
        #[arg(long)]
        format: Option<String>,
        /// libCacheSim's csv spec, e.g. "time-col=1, obj-id-col=2, obj-size-col=3, delimiter=,, has-header=true".
        #[arg(long)]
        csv_spec: Option<String>,
        /// Size of the file the object ids map into, in pages (ids wrap modulo it).
        #[arg(long, default_value_t = 1 << 22)]
        file_pages: u64,
        /// A foliosim trace (`foliosim record`): `recorded` replays each
        /// task's think time between its events, `afap` none.
        #[arg(long)]
        timing: Option<String>,
        /// A foliosim trace: the recorded think time times this.
        #[arg(long)]
        compute_scale: Option<f64>,
        #[command(flatten)]
        machine: MachineArgs,
    },
    /// Run one workload under several variant sets and print the counters
    /// side by side with deltas: foliosim compare --set baseline --set p1+p2 -- mmap-probe --file-size 4G
    Compare {
        /// A variant set (variants, plus "classic"/"mglru"); give two or more.
        #[arg(long = "set", required = true)]
        sets: Vec<String>,
        /// Print one JSON object: the sets and each set's run object
        /// (as `--json` prints it), for `foliosim report`.
        #[arg(long)]
        json: bool,
        /// The workload command (fio ..., mmap-probe ..., replay ...).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        workload: Vec<String>,
    },
    /// Reproduce a seed's experiment beside the seed's figures.
    Reproduce {
        #[command(subcommand)]
        which: ReproduceCmd,
    },
    /// Run a workload on the real kernel of this host and compare with the model.
    Oracle {
        #[command(subcommand)]
        cmd: oracle_cmd::OracleCmd,
    },
    /// Run a command on this host in a memory cgroup of its own and record
    /// its syscalls and faults as a foliosim trace for `foliosim replay`
    /// (as root; docs/trace-format.md): foliosim record --memcg-limit 32M --out t.trace -- cat FILE
    Record(record_cmd::RecordArgs),
    /// Run a scenario (processes in cgroups; docs/scenarios.md) through
    /// the model. Machine options override the scenario's [machine].
    Run(run_cmd::RunArgs),
    /// Benchmark the folio refcount schemes of seed 001.
    RefcountBench(refcount_cmd::RefcountBenchArgs),
    /// The model's own cost per kernel event (ns of host time), classic and
    /// MGLRU, and with --runs the reproductions' wall time (docs/performance.md).
    Bench(bench_cmd::BenchArgs),
    /// Results (--json output, sweep CSV) as one self-contained HTML page
    /// with plots, or the plots as SVG/PNG files.
    Report(report_cmd::ReportArgs),
    /// The patch registry: every kernel patch and behaviour `--variant`
    /// takes, with its reference and the --kernel releases that carry it.
    Variants {
        /// table or json.
        #[arg(long, default_value = "table")]
        format: String,
    },
    /// Run a parameter study (docs/sweep.md): every point of a grid file,
    /// on every core or a Ray cluster, to CSV and Parquet; resumes.
    Sweep(sweep::SweepArgs),
}

fn run(cli: Cli) -> Result<(), String> {
    match &cli.cmd {
        Cmd::Fio { args } if args.iter().any(|a| a == "--help" || a == "-h") => {
            print!("{}", machine::fio_help());
            Ok(())
        }
        Cmd::Replay { trace, .. } if workload::is_rectrace_file(trace) => {
            workload::rectrace_cmd(&cli.cmd)
        }
        Cmd::Fio { .. } | Cmd::MmapProbe { .. } | Cmd::Replay { .. } => {
            let (r, out, what) = run_workload(&cli.cmd)?;
            print_report(&r, &out, &what);
            Ok(())
        }
        Cmd::Compare {
            sets,
            json,
            workload,
        } => compare(sets, workload, *json),
        Cmd::Reproduce { which } => reproduce_cmd::run(which),
        Cmd::Oracle { cmd } => oracle_cmd::run(cmd, &oracle_model),
        Cmd::Run(a) => run_cmd::run(a),
        Cmd::Record(a) => record_cmd::run(a),
        Cmd::RefcountBench(a) => refcount_cmd::run(a),
        Cmd::Bench(a) => bench_cmd::run(a),
        Cmd::Report(a) => report_cmd::run(a),
        Cmd::Sweep(a) => sweep::run(a),
        Cmd::Variants { format } => variants(format),
    }
}

/// One workload's report: fio's `jobs`/`vmstat`/`memcg` object, or a
/// scenario's (with `cgroups` and `processes` beside `run`).
pub enum Report {
    Run(RunReport),
    Scenario(foliosim::scenario::ScenarioReport),
}

impl Report {
    /// The machine-wide run report (a scenario's `run`).
    pub fn run(&self) -> &RunReport {
        match self {
            Report::Run(r) => r,
            Report::Scenario(s) => &s.run,
        }
    }

    /// foliosim's JSON object, as `--json` prints it.
    pub fn to_json(&self) -> String {
        match self {
            Report::Run(r) => serde_json::to_string(r),
            Report::Scenario(s) => serde_json::to_string(s),
        }
        .expect("report serialises")
    }
}

/// Runs one workload command line as `foliosim ARGV...` would (`fio ...`,
/// `run SCENARIO`, `mmap-probe ...`, `replay ...`, machine options and
/// variants included) and returns its report instead of printing it.
/// `fio_overrides` are fio job options applied over every job.
pub fn run_argv(argv: &[String], fio_overrides: &[(String, String)]) -> Result<Report, String> {
    let r = run_point(argv, fio_overrides, None, false)?;
    Ok(r.expect("not a dry run"))
}

/// [`run_argv`] with a scenario's text in place of its file's (`run`
/// only); `dry` checks all but the run and returns None.
pub(crate) fn run_point(
    argv: &[String],
    fio_overrides: &[(String, String)],
    scenario_text: Option<&str>,
    dry: bool,
) -> Result<Option<Report>, String> {
    let cmd = parse_workload(argv)?;
    if !fio_overrides.is_empty() && !matches!(cmd, Cmd::Fio { .. }) {
        return Err("fio options given for a workload that is not fio".into());
    }
    match &cmd {
        Cmd::Run(a) => Ok(run_cmd::report(a, scenario_text, dry)?.map(Report::Scenario)),
        _ => Ok(run_workload_with(&cmd, fio_overrides, dry)?.map(|r| Report::Run(r.0))),
    }
}

/// A workload command line parsed as the binary parses it.
fn parse_workload(argv: &[String]) -> Result<Cmd, String> {
    let full = std::iter::once("foliosim".to_string()).chain(argv.iter().cloned());
    let cli = Cli::try_parse_from(full).map_err(|e| clap_error_line(&e))?;
    match cli.cmd {
        c @ (Cmd::Fio { .. } | Cmd::MmapProbe { .. } | Cmd::Replay { .. } | Cmd::Run(_)) => Ok(c),
        _ => Err("the workload must be fio, run, mmap-probe or replay".into()),
    }
}

/// The command line as the binary parses it. clap renders fio's help
/// from its free-form arguments alone; `foliosim help fio` prints what
/// `foliosim fio --help` does, the machine options with them.
fn binary_command() -> clap::Command {
    Cli::command().mut_subcommand("fio", |c| c.override_help(machine::fio_help()))
}

/// The binary's entry point.
pub fn main() -> ExitCode {
    let parsed = binary_command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m));
    let cli = match parsed {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            eprintln!("foliosim: {}", clap_error_line(&e));
            return ExitCode::from(2);
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("foliosim: {}", foliosim_workload::units::one_line(&e));
            ExitCode::from(2)
        }
    }
}

/// `foliosim variants`: the patch registry as a table or JSON.
fn variants(format: &str) -> Result<(), String> {
    use foliosim::mm::patches;
    match reproduce_cmd::RowFormat::parse(format)? {
        reproduce_cmd::RowFormat::Text => print!("{}", patches::table_text()),
        reproduce_cmd::RowFormat::Json => println!(
            "{}",
            serde_json::to_string_pretty(&patches::table_json()).expect("registry serialises")
        ),
    }
    Ok(())
}

/// clap's error on one line, as every bad input is reported: an unknown
/// option or command named with the nearest valid one, anything else as
/// clap words it without its usage block.
pub(crate) fn clap_error_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let ctx = |k| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        Some(ContextValue::Strings(v)) => v.first().cloned(),
        _ => None,
    };
    let invalid = ctx(ContextKind::InvalidArg).or_else(|| ctx(ContextKind::InvalidSubcommand));
    let suggested =
        ctx(ContextKind::SuggestedArg).or_else(|| ctx(ContextKind::SuggestedSubcommand));
    if e.kind() == ErrorKind::ValueValidation {
        // "--large-folios: 'maybe' is not on or off", as the options
        // checked after parsing word it.
        if let (Some(arg), Some(why)) = (&invalid, std::error::Error::source(e)) {
            let flag = arg.split(' ').next().unwrap_or(arg);
            return foliosim_workload::units::one_line(&format!("{flag}: {why}")).into_owned();
        }
    }
    let what = match e.kind() {
        ErrorKind::UnknownArgument => "unknown foliosim option",
        ErrorKind::InvalidSubcommand => "unknown foliosim command",
        _ => return clap_text_line(e),
    };
    let Some(invalid) = invalid else {
        return clap_text_line(e);
    };
    // The name as typed may hold anything: one printable line.
    let invalid = foliosim_workload::units::one_line(invalid.split('=').next().unwrap_or(&invalid));
    match suggested {
        Some(s) => format!("{invalid}: {what} (did you mean {s}?)"),
        None => format!("{invalid}: {what} (see --help)"),
    }
}

/// clap's message up to its usage block, on one line (a missing argument
/// is named on the line after the first).
fn clap_text_line(e: &clap::Error) -> String {
    let text = e.to_string();
    let head = text.split("\n\n").next().unwrap_or("bad arguments");
    let head = head.lines().map(str::trim).collect::<Vec<_>>().join(" ");
    let first = head.strip_prefix("error: ").unwrap_or(&head);
    format!("{} (see --help)", foliosim_workload::units::one_line(first))
}
