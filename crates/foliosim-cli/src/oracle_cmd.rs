//! `foliosim oracle`: a workload on the real host kernel (in a memory
//! cgroup) against the model. The real side is `foliosim_oracle`; the model
//! side comes in as a callback from main.

use crate::probe_args::ProbeArgs;
use foliosim_oracle::cases::{fio_case, Case, CaseKind};
use foliosim_oracle::compare::render_text;
use foliosim_oracle::host::read_host;
use foliosim_oracle::journal;
use foliosim_oracle::run::{
    preflight, run_case, Outcome, RunOpts, Scratch, DEFAULT_DIR, DEFAULT_REPEAT,
};
use foliosim_oracle::suite::{self, render_markdown, shown_rows, SuiteOpts};
use foliosim_oracle::{HostInfo, ModelFn};
use foliosim_workload::units::parse_size;
use std::path::PathBuf;

#[derive(clap::Args, Clone, Debug)]
pub struct RealArgs {
    /// Real runs per case; the report gives their median and spread.
    #[arg(long, default_value_t = DEFAULT_REPEAT)]
    pub repeat: u32,
    /// Keep the workload's files in --dir afterwards.
    #[arg(long)]
    pub keep: bool,
    /// Scratch directory for the files (on the block device under test, not tmpfs).
    #[arg(long, default_value = DEFAULT_DIR)]
    pub dir: PathBuf,
    /// No progress lines on stderr.
    #[arg(long)]
    pub quiet: bool,
    /// Seconds a scenario's real run may take before it is killed and
    /// reported failed.
    #[arg(long, default_value_t = foliosim_oracle::scn::RUN_TIMEOUT.as_secs())]
    pub timeout: u64,
}

#[derive(clap::Subcommand, Clone, Debug)]
pub enum OracleCmd {
    /// Run a fio job, or a scenario, on the host in memory cgroups and in
    /// the model; compare.
    Run {
        /// The fio job file (its `; oracle: memcg_limit=.. read_ahead_kb=..`
        /// header gives defaults for the options below), a scenario
        /// (`*.toml`), or `builtin:NAME` (a built-in scenario case).
        job: PathBuf,
        #[arg(long)]
        memcg_limit: Option<String>,
        /// read_ahead_kb to set on the device for the run (restored after).
        #[arg(long)]
        read_ahead_kb: Option<u32>,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        real: RealArgs,
    },
    /// Run the mmap probe on the host in a memory cgroup and in the model.
    MmapProbe {
        #[command(flatten)]
        probe: ProbeArgs,
        #[command(flatten)]
        real: RealArgs,
    },
    /// Run the calibration suite and write the fidelity report.
    Suite {
        /// The calibration half's cases.
        #[arg(long, default_value = "oracle/cases")]
        cases: PathBuf,
        /// The held-out half's cases (nothing in the model is adjusted
        /// against them; the report leads with them).
        #[arg(long, default_value = "oracle/heldout")]
        held_out: PathBuf,
        /// Leave the held-out half out.
        #[arg(long)]
        calibration_only: bool,
        /// Directory for report.md and report.json.
        #[arg(long, default_value = "docs/fidelity")]
        out: PathBuf,
        /// Run only this case (repeatable).
        #[arg(long = "case")]
        only: Vec<String>,
        #[command(flatten)]
        real: RealArgs,
    },
    /// Run the model again on a report's recorded real runs (a suite's
    /// report.json, or `oracle run --json`'s output): the model as it is
    /// now against the same real runs, at each run's own inputs, with the
    /// report's host (its measured costs included). Nothing runs on the
    /// host: a model change is judged without the host's day-to-day spread.
    Remodel {
        /// The recorded report (JSON).
        report: PathBuf,
        /// Where the recorded cases are looked up by name (else by the
        /// source path each records).
        #[arg(long, default_value = "oracle/cases")]
        cases: PathBuf,
        /// Where the held-out half's cases are looked up by name.
        #[arg(long, default_value = "oracle/heldout")]
        held_out: PathBuf,
        /// Directory for the new report.md and report.json.
        #[arg(long)]
        out: PathBuf,
        /// Only this case (repeatable).
        #[arg(long = "case")]
        only: Vec<String>,
        /// No progress lines on stderr.
        #[arg(long)]
        quiet: bool,
        /// Write each model run's tracepoints (as `foliosim run --trace`)
        /// to DIR/CASE-phase<ms>-miss<ns>.trace: one file per distinct
        /// run input (a scenario's recorded flush phase and read miss).
        #[arg(long, value_name = "DIR")]
        trace_dir: Option<PathBuf>,
        /// With --trace-dir: only these events (as --trace-events).
        #[arg(long, value_name = "EVENTS", requires = "trace_dir")]
        trace_events: Option<String>,
    },
    /// Measure this host as a machine profile for the model (root): the
    /// oracle's probes, the disk's bandwidth and queue depth, a mapped
    /// page's touch and copy, the real fio's mapped-hit I/O, ext4's
    /// metadata calls; each value with its unit and method
    /// (docs/calibration.md).
    Calibrate {
        /// Where the profile goes (TOML; default: stdout).
        #[arg(long)]
        out: Option<PathBuf>,
        /// The machine's name in the profile.
        #[arg(long, default_value = "this-host")]
        name: String,
        /// Scratch directory (on the disk to measure, not tmpfs).
        #[arg(long, default_value = DEFAULT_DIR)]
        dir: PathBuf,
        /// No progress lines on stderr.
        #[arg(long)]
        quiet: bool,
    },
    /// Run a real application on the host in a memory cgroup, record it
    /// (as `foliosim record`), replay the recording in the model
    /// configured as the host, and compare (root).
    App(crate::oracle_app::AppArgs),
    /// Undo what a killed oracle left on the host (every other oracle
    /// command does this first): read_ahead_kb and other values written
    /// back, its cgroups emptied and removed, its scratch files removed.
    Restore,
    /// The probe child, run inside the cgroup by the commands above.
    #[command(name = "__probe", hide = true)]
    Probe {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// One scenario process instance, run inside its cgroup by `oracle run`.
    #[command(name = "__scenario-proc", hide = true)]
    ScenarioProc {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

/// A scenario case from `builtin:NAME` or a scenario file.
fn scenario_case(arg: &std::path::Path) -> Result<Option<Case>, String> {
    let s = arg.to_string_lossy();
    if let Some(name) = s.strip_prefix("builtin:") {
        let (n, a, sc) = foliosim_oracle::scn::builtin::find(name).ok_or_else(|| {
            let names: Vec<_> = foliosim_oracle::scn::builtin::test_cases()
                .iter()
                .map(|c| c.0)
                .collect();
            format!("no built-in scenario '{name}' ({})", names.join(", "))
        })?;
        return Ok(Some(foliosim_oracle::cases::scenario_case(n, a, sc)));
    }
    if arg.extension().is_some_and(|e| e == "toml") {
        let file = arg.display().to_string();
        let text = std::fs::read_to_string(arg).map_err(|e| format!("{file}: {e}"))?;
        let sc = foliosim_oracle::scn::parse_scenario(&text, &file)?;
        let name = arg
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| file.clone());
        let about = foliosim_oracle::scn::about(&text);
        let mut case = foliosim_oracle::cases::scenario_case(&name, &about, sc);
        case.min_repeat = foliosim_oracle::scn::min_repeat(&text, &file)?;
        return Ok(Some(case));
    }
    Ok(None)
}

fn run_opts(real: &RealArgs) -> Result<RunOpts, String> {
    if real.repeat == 0 {
        return Err("--repeat: must be at least 1".into());
    }
    if real.timeout == 0 {
        return Err("--timeout: must be at least 1 (seconds)".into());
    }
    let exe = std::env::current_exe().map_err(|e| format!("finding the foliosim binary: {e}"))?;
    Ok(RunOpts {
        dir: real.dir.clone(),
        repeat: real.repeat,
        keep: real.keep,
        probe_cmd: vec![exe.into(), "oracle".into(), "__probe".into()],
        verbose: !real.quiet,
        run_timeout: std::time::Duration::from_secs(real.timeout),
    })
}

fn host_line(h: &HostInfo) -> String {
    format!(
        "host: Linux {}, {} MiB RAM, {} ({}) read_ahead_kb {}, swappiness {}, THP {}, lru_gen {}, {}, DAMON kdamonds running {} (stopped for the real runs)",
        h.kernel_release,
        h.ram_bytes >> 20,
        h.block_device,
        h.fs_type,
        h.read_ahead_kb,
        h.swappiness,
        h.thp_enabled,
        h.lru_gen
            .map_or("absent".to_string(), |v| format!("{v:#x}")),
        match &h.ext4 {
            Ok(g) => format!(
                "ext4 {} inodes of {} B per group, inode_readahead_blks {}, flex_bg {}",
                g.inodes_per_group, g.inode_size, g.inode_readahead_blks, g.flex_bg_size
            ),
            Err(e) => format!("no ext4 metadata model ({e})"),
        },
        h.kdamonds_on
    )
}

/// One case: run, print, and turn a skip or failure into an error.
fn one_case(
    case: &Case,
    real: &RealArgs,
    json: bool,
    check: &dyn Fn(&HostInfo) -> Result<(), String>,
    model: ModelFn,
) -> Result<(), String> {
    let opts = run_opts(real)?;
    preflight(case, &opts.dir)?;
    let host = read_host(&opts.dir)?;
    check(&host)?;
    let mut scratch = Scratch::new(&opts.dir, opts.keep)?;
    let host =
        foliosim_oracle::run::with_measured_costs(&host, &mut scratch, &opts.probe_cmd, !json);
    let r = run_case(case, &host, &opts, &mut scratch, model);
    drop(scratch);
    if json {
        let v = serde_json::json!({ "host": host, "case": r });
        println!(
            "{}",
            serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?
        );
    } else {
        println!("{}", host_line(&host));
        println!(
            "{}: {} in a {} MiB memory cgroup, read_ahead_kb {}",
            r.name,
            r.workload,
            r.memcg_limit >> 20,
            r.read_ahead_kb
        );
        if let Outcome::Ran {
            rows, model_error, ..
        } = &r.outcome
        {
            if let Some(e) = model_error {
                println!("model failed: {e}");
            }
            let shown: Vec<_> = shown_rows(rows).into_iter().cloned().collect();
            print!("{}", render_text(&shown));
            print!("{}", foliosim_oracle::suite::render_run_by_run(rows));
        }
    }
    match r.outcome {
        Outcome::Ran { .. } => Ok(()),
        Outcome::Skipped { reason } => Err(format!("{}: skipped: {reason}", r.name)),
        Outcome::Failed { error } => Err(format!("{}: {error}", r.name)),
    }
}

/// `oracle remodel`: the recorded cases' real runs against the model now.
fn remodel(
    report: &std::path::Path,
    cases_dir: &std::path::Path,
    held_out_dir: &std::path::Path,
    out: &std::path::Path,
    only: &[String],
    verbose: bool,
    model: ModelFn,
) -> Result<(), String> {
    let file = report.display().to_string();
    let text = std::fs::read_to_string(report).map_err(|e| format!("{file}: {e}"))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{file}: not JSON: {e}"))?;
    let host: HostInfo = serde_json::from_value(v.get("host").cloned().unwrap_or_default())
        .map_err(|e| format!("{file}: host: {e}"))?;
    // A suite's report has `cases`, `oracle run --json` one `case`.
    let recorded: Vec<&serde_json::Value> = match (v.get("cases"), v.get("case")) {
        (Some(serde_json::Value::Array(cs)), _) => cs.iter().collect(),
        (None, Some(c)) => vec![c],
        _ => return Err(format!("{file}: no recorded cases ('cases' or 'case')")),
    };
    let name_of = |c: &serde_json::Value| {
        c.get("name")
            .and_then(|n| n.as_str())
            .unwrap_or_default()
            .to_string()
    };
    for n in only {
        if !recorded.iter().any(|c| name_of(c) == *n) {
            return Err(format!("{file}: no recorded case named '{n}'"));
        }
    }
    let suite_cases = if cases_dir.is_dir() {
        let held = held_out_dir.is_dir().then_some(held_out_dir);
        foliosim_oracle::cases::load_suite_halves(cases_dir, held)?
    } else {
        Vec::new()
    };
    let mut results = Vec::new();
    let mut repeat = 0;
    for c in recorded {
        let name = name_of(c);
        if !only.is_empty() && !only.contains(&name) {
            continue;
        }
        let case = match suite_cases.iter().find(|k| k.name == name) {
            Some(k) => Ok(k.clone()),
            None => recorded_source_case(c).map(|mut k| {
                k.held_out = c.get("held_out").and_then(|h| h.as_bool()) == Some(true);
                k
            }),
        };
        let r = case.and_then(|k| {
            foliosim_oracle::run::remodel_case(
                &k,
                &host,
                c.get("outcome").unwrap_or(&serde_json::Value::Null),
                model,
                verbose,
            )
        });
        match r {
            Ok(r) => {
                if let Outcome::Ran { runs, .. } = &r.outcome {
                    repeat = repeat.max(runs.len() as u32);
                }
                if verbose {
                    eprintln!("remodelled {name}");
                }
                results.push(r);
            }
            Err(e) => eprintln!("foliosim oracle remodel: {name}: not re-modelled: {e}"),
        }
    }
    if results.is_empty() {
        return Err(format!("{file}: no case could be re-modelled"));
    }
    let repeat = v
        .get("repeat")
        .and_then(|r| r.as_u64())
        .map_or(repeat, |r| r as u32);
    let mut r = suite::build_report(host, repeat, results);
    r.remodelled = true;
    suite::write_report(&r, out)?;
    let md = render_markdown(&r);
    let end = md.find("\n### ").unwrap_or(md.len());
    println!("{}", &md[..end]);
    println!("wrote {}/report.md and report.json", out.display());
    Ok(())
}

/// A recorded case that is not in the cases directory, from the source
/// path it records (a scenario or a fio job file).
fn recorded_source_case(c: &serde_json::Value) -> Result<Case, String> {
    let src = c
        .get("source")
        .and_then(|s| s.as_str())
        .ok_or("no source recorded")?;
    let p = std::path::Path::new(src);
    if let Some(case) = scenario_case(p)? {
        return Ok(case);
    }
    if p.extension().is_some_and(|x| x == "fio") {
        return fio_case(p, None, None);
    }
    Err(format!(
        "not in the cases directory, and its source '{src}' is not a case file"
    ))
}

/// Replays the host-change journal (see `foliosim_oracle::journal`),
/// saying on stderr what it undid; what it could not undo is an error.
fn restore() -> Result<(), String> {
    let r = journal::replay()?;
    for m in &r.restored {
        eprintln!(
            "foliosim oracle: journal {}: {m}",
            journal::path().display()
        );
    }
    if r.failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "journal {}: could not undo: {}",
            journal::path().display(),
            r.failed.join("; ")
        ))
    }
}

pub fn run(cmd: &OracleCmd, model: ModelFn) -> Result<(), String> {
    // A killed oracle's leftovers go before anything else is changed (not
    // in the probe child, which runs while its parent oracle is alive).
    let restore_first = || {
        if let Err(e) = restore() {
            eprintln!("foliosim oracle: {e}");
        }
    };
    match cmd {
        OracleCmd::Probe { args } => foliosim_oracle::run::probe_child_main(args),
        OracleCmd::ScenarioProc { args } => foliosim_oracle::scn::exec::child_main(args),
        OracleCmd::Restore => restore(),
        OracleCmd::App(a) => {
            restore_first();
            crate::oracle_app::run(a)
        }
        OracleCmd::Calibrate {
            out,
            name,
            dir,
            quiet,
        } => {
            restore_first();
            crate::calibrate_cmd::calibrate(name, dir, out.as_deref(), *quiet)
        }
        OracleCmd::Run {
            job,
            memcg_limit,
            read_ahead_kb,
            json,
            real,
        } => {
            if let Some(case) = scenario_case(job)? {
                if memcg_limit.is_some() || read_ahead_kb.is_some() {
                    return Err(
                        "oracle run: a scenario sets its limits in its cgroups and [machine]"
                            .into(),
                    );
                }
                restore_first();
                return one_case(&case, real, *json, &|_| Ok(()), model);
            }
            restore_first();
            let limit = memcg_limit
                .as_deref()
                .map(|s| parse_size(s).map_err(|e| format!("--memcg-limit: {e}")))
                .transpose()?;
            let case = fio_case(job, limit, *read_ahead_kb)?;
            one_case(&case, real, *json, &|_| Ok(()), model)
        }
        OracleCmd::MmapProbe { probe, real } => {
            restore_first();
            let spec = probe.spec()?;
            let limit = probe
                .memcg_limit_bytes()?
                .ok_or("oracle mmap-probe: --memcg-limit is required (the run's memory cgroup)")?;
            let name = format!("mmap-probe-{}", spec.pattern);
            let case = Case::new(
                name,
                CaseKind::Probe {
                    spec,
                    variant: probe.variant.clone(),
                },
                limit,
                probe.read_ahead_kb,
                String::new(),
                "command line".into(),
            );
            one_case(
                &case,
                real,
                probe.json,
                &|h| probe.check_host_memory(h.ram_bytes),
                model,
            )
        }
        OracleCmd::Remodel {
            report,
            cases,
            held_out,
            out,
            only,
            quiet,
            trace_dir,
            trace_events,
        } => {
            let Some(dir) = trace_dir else {
                return remodel(report, cases, held_out, out, only, !quiet, model);
            };
            std::fs::create_dir_all(dir)
                .map_err(|e| format!("--trace-dir: {}: {e}", dir.display()))?;
            // Each model call gets its own trace, armed for its run.
            let traced = |h: &HostInfo, case: &Case| {
                let name = format!(
                    "{}-phase{}ms-miss{}ns.trace",
                    case.name,
                    h.stats_flush_phase_ns.unwrap_or(0) / 1_000_000,
                    h.buffered_read_ns.unwrap_or(0)
                );
                let args = crate::trace_args::TraceArgs {
                    trace: Some(dir.join(name)),
                    trace_events: trace_events.clone(),
                    ..Default::default()
                };
                let spec = crate::trace_args::arm(&args)?;
                let r = model(h, case);
                crate::trace_args::finish(&spec, args.trace.as_deref())?;
                r
            };
            remodel(report, cases, held_out, out, only, !quiet, &traced)
        }
        OracleCmd::Suite {
            cases,
            held_out,
            calibration_only,
            out,
            only,
            real,
        } => {
            restore_first();
            let opts = run_opts(real)?;
            let host = read_host(&opts.dir)?;
            let so = SuiteOpts {
                cases_dir: cases.clone(),
                held_out_dir: (!calibration_only).then(|| held_out.clone()),
                out_dir: out.clone(),
                only: only.clone(),
                run: opts,
            };
            let report = suite::run(&host, &so, model)?;
            let md = render_markdown(&report);
            // The summary part (up to the per-case sections) on stdout.
            let end = md.find("\n### ").unwrap_or(md.len());
            println!("{}", &md[..end]);
            println!("wrote {}/report.md and report.json", out.display());
            let failed: Vec<&str> = report
                .cases
                .iter()
                .filter(|c| matches!(c.outcome, Outcome::Failed { .. }))
                .map(|c| c.name.as_str())
                .collect();
            if failed.is_empty() {
                Ok(())
            } else {
                Err(format!(
                    "{} case(s) failed: {}",
                    failed.len(),
                    failed.join(", ")
                ))
            }
        }
    }
}
