//! The workload commands' runs (fio, mmap-probe, replay; `run` is
//! run_cmd.rs) and `compare`: each parses its workload, builds the machine
//! from the shared machine options (machine.rs) and prints the report.

use std::collections::BTreeMap;

use clap::Parser;
use foliosim::fio_output::{self, OutputFormat};
use foliosim::mm::{patches, Variants};
use foliosim::sim::{self, RunReport, SimConfig};
use foliosim_workload::units::parse_size;

use crate::machine::split_fio_args;
use crate::{trace_args, Cli, Cmd};

/// How a workload's report is printed.
pub(crate) enum Output {
    /// foliosim's text, or with --json its own JSON object.
    Foliosim { json: bool },
    /// fio's --output-format (for `foliosim fio`).
    Fio {
        format: OutputFormat,
        options: fio_output::JobOptions,
    },
}

/// Takes fio's `--output-format=F` / `--output-format F` out of `foliosim
/// fio`'s arguments: foliosim prints, so the format is foliosim's choice.
fn take_output_format(args: &mut Vec<String>) -> Result<Option<OutputFormat>, String> {
    let mut found = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].trim_start_matches('-');
        let dashes = args[i].len() - a.len();
        let val = if !(1..=2).contains(&dashes) {
            None
        } else if let Some(v) = a.strip_prefix("output-format=") {
            Some(v.to_string())
        } else if a == "output-format" {
            if i + 1 >= args.len() {
                return Err("--output-format: missing value".into());
            }
            Some(args.remove(i + 1))
        } else {
            None
        };
        match val {
            Some(v) => {
                args.remove(i);
                found = Some(v.parse().map_err(|e| format!("--output-format: {e}"))?);
            }
            None => i += 1,
        }
    }
    Ok(found)
}

/// Refuses a run whose model could outgrow this host's memory (frames and
/// file slots grow as pages are touched, up to the bound computed here; a
/// failed allocation mid-run would abort the process instead of saying
/// why).
pub(crate) fn check_footprint(cfg: &SimConfig, file_sizes: &[u64]) -> Result<(), String> {
    let need = sim::footprint_bytes(&cfg.mm, file_sizes.iter().copied());
    let avail = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("MemAvailable:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u128>().ok())
        })
        .map(|kb| kb * 1024);
    match avail {
        Some(a) if need > a * 3 / 4 => Err(format!(
            "the model may need up to {} MiB for --memory {} MiB and {} MiB of files and mappings (24 bytes per page frame used, about 8 per page of file); this host has {} MiB available",
            need >> 20,
            cfg.mm.ram_bytes >> 20,
            file_sizes.iter().map(|&b| b as u128).sum::<u128>() >> 20,
            a >> 20
        )),
        _ => Ok(()),
    }
}

/// write_iolog: each file opens for appending (fio creates it when the
/// job starts), so the run cannot fail to write it for that reason.
fn check_write_iologs(jobs: &[foliosim_workload::fio::FioJob]) -> Result<(), String> {
    for j in jobs {
        if let Some(p) = &j.write_iolog {
            let open = std::fs::OpenOptions::new()
                .append(true)
                .create(true)
                .open(p);
            open.map_err(|e| format!("{}: write_iolog: '{p}': cannot open: {e}", j.source))?;
        }
    }
    Ok(())
}

pub(crate) fn run_workload(cmd: &Cmd) -> Result<(RunReport, Output, String), String> {
    Ok(run_workload_with(cmd, &[], false)?.expect("not a dry run"))
}

/// [`run_workload`] with fio job options that override every job's own
/// (a sweep's `fio.OPTION` parameters); `dry` checks everything up to
/// the run and returns None (a sweep checks its grid before it starts).
pub(crate) fn run_workload_with(
    cmd: &Cmd,
    fio_overrides: &[(String, String)],
    dry: bool,
) -> Result<Option<(RunReport, Output, String)>, String> {
    match cmd {
        Cmd::Fio { args } => {
            let (m, mut fio_args) = split_fio_args(args)?;
            let format = take_output_format(&mut fio_args)?;
            if fio_args.is_empty() {
                return Err("fio: no job file and no --name given".into());
            }
            let cfg = m.config()?;
            // fio's $mb_memory is the machine's memory: the modelled one.
            // The model gives each job its own CPU; $ncpus is 1.
            let existing_file_size = match &m.existing_file_size {
                Some(d) => Some(parse_size(d).map_err(|e| format!("--existing-file-size: {e}"))?),
                None => None,
            };
            let kw = foliosim_workload::fio::Keywords {
                pagesize: foliosim::mm::PAGE_SIZE,
                mb_memory: cfg.mm.ram_bytes >> 20,
                ncpus: 1,
                existing_file_size,
            };
            let mut jobs =
                foliosim_workload::fio::parse_cmdline_overriding(&fio_args, &kw, fio_overrides)
                    .map_err(|e| e.to_string())?;
            let disk = match &m.disk_size {
                Some(d) => Some(parse_size(d).map_err(|e| format!("--disk-size: {e}"))?),
                None => None,
            };
            foliosim_workload::fio::resolve_device_sizes(&mut jobs, disk)
                .map_err(|e| e.to_string())?;
            if jobs.is_empty() {
                return Err("fio: no jobs defined".into());
            }
            let out =
                match format {
                    Some(_) if m.json => return Err(
                        "--json and --output-format: choose one (--json is foliosim's own object)"
                            .into(),
                    ),
                    Some(format) => Output::Fio {
                        format,
                        options: fio_output::job_options(&fio_args, &jobs),
                    },
                    None => Output::Foliosim { json: m.json },
                };
            // Jobs naming the same file share one mapping, as in run_fio.
            let mut files: BTreeMap<&str, u64> = BTreeMap::new();
            for j in &jobs {
                if j.files.is_empty() {
                    let e = files.entry(j.filename.as_str()).or_default();
                    *e = (*e).max(j.file_size());
                }
                for f in &j.files {
                    let e = files.entry(f.name.as_str()).or_default();
                    *e = (*e).max(f.offset.saturating_add(f.size));
                }
            }
            let sizes: Vec<u64> = files.into_values().collect();
            check_footprint(&cfg, &sizes)?;
            if dry {
                return Ok(None);
            }
            check_write_iologs(&jobs)?;
            let spec = trace_args::arm(&m.trace)?;
            // The bar's end: the longest runtime= (jobs may end sooner).
            let runtime = jobs.iter().filter_map(|j| j.runtime_ns).max();
            trace_args::progress::install(runtime.map(|ns| ns / 1_000_000_000));
            let r = sim::run_fio(cfg, &jobs);
            trace_args::progress::done();
            trace_args::finish(&spec, m.trace.trace.as_deref())?;
            if let Some(e) = &r.policy_error {
                return Err(format!("--policy: {e}"));
            }
            Ok(Some((r, out, "fio".into())))
        }
        Cmd::MmapProbe { shape, machine } => {
            let spec = shape.spec(machine.seed.unwrap_or(1))?;
            if machine.fs.is_some() {
                return Err("--fs: only fio jobs run on the model's file system".into());
            }
            let cfg = machine.config()?;
            check_footprint(&cfg, &[spec.file_size])?;
            if dry {
                return Ok(None);
            }
            let tspec = trace_args::arm(&machine.trace)?;
            trace_args::progress::install(None);
            let r = sim::run_probe(cfg, &spec);
            trace_args::progress::done();
            trace_args::finish(&tspec, machine.trace.trace.as_deref())?;
            Ok(Some((
                r,
                Output::Foliosim { json: machine.json },
                "mmap-probe".into(),
            )))
        }
        Cmd::Replay { trace, .. } if is_rectrace_file(trace) => {
            Ok(rectrace_run(cmd, dry)?.map(|(r, _, _)| {
                let json = matches!(cmd, Cmd::Replay { machine, .. } if machine.json);
                (r, Output::Foliosim { json }, "replay".into())
            }))
        }
        Cmd::Replay {
            trace,
            format,
            csv_spec,
            file_pages,
            machine,
            timing,
            compute_scale,
        } => {
            use foliosim_workload::trace;
            if timing.is_some() || compute_scale.is_some() {
                return Err(
                    "--timing and --compute-scale: only for foliosim traces (foliosim record)"
                        .into(),
                );
            }
            let fmt = match (format.as_deref(), csv_spec) {
                (Some("oracleGeneral"), None) => trace::TraceFormat::OracleGeneral,
                (Some("oracleGeneral"), Some(_)) => {
                    return Err("--csv-spec: only with --format csv".into())
                }
                (Some("csv"), s) | (None, s @ Some(_)) => trace::TraceFormat::Csv(
                    trace::parse_csv_spec(s.as_deref().unwrap_or(""))
                        .map_err(|e| format!("--csv-spec: {e}"))?,
                ),
                (None, None) => trace::guess_format(trace),
                (Some(f), _) => {
                    return Err(format!(
                        "--format: unknown trace format '{f}' (oracleGeneral, csv)"
                    ))
                }
            };
            if *file_pages == 0 {
                return Err("--file-pages: must be > 0".into());
            }
            let reader = trace::open(trace, &fmt).map_err(|e| e.to_string())?;
            if machine.fs.is_some() {
                return Err("--fs: only fio jobs run on the model's file system".into());
            }
            let cfg = machine.config()?;
            check_footprint(&cfg, &[file_pages.saturating_mul(4096)])?;
            if dry {
                return Ok(None);
            }
            let tspec = trace_args::arm(&machine.trace)?;
            trace_args::progress::install(None);
            let r = sim::Sim::new(cfg).run_trace(reader, *file_pages);
            trace_args::progress::done();
            let r = r.map_err(|e| e.to_string())?;
            trace_args::finish(&tspec, machine.trace.trace.as_deref())?;
            Ok(Some((
                r,
                Output::Foliosim { json: machine.json },
                "replay".into(),
            )))
        }
        _ => unreachable!(),
    }
}

pub(crate) fn print_report(r: &RunReport, out: &Output, what: &str) {
    match out {
        Output::Foliosim { json: true } => println!(
            "{}",
            serde_json::to_string_pretty(r).expect("report serialises")
        ),
        Output::Foliosim { json: false } => print!("{}", foliosim::report::render_text(r, what)),
        Output::Fio { format, options } => {
            // fio prints its JSON before its normal output.
            if format.json {
                print!("{}", fio_output::render_json(r, options, format.json_plus));
            }
            if format.normal {
                print!("{}", foliosim::report::render_text(r, what));
            }
        }
    }
}

pub(crate) fn compare(sets: &[String], workload: &[String], json: bool) -> Result<(), String> {
    if sets.len() < 2 {
        return Err("compare: give at least two --set".into());
    }
    if workload.iter().any(|a| a.starts_with("--trace")) {
        return Err(
            "compare: --trace writes one run's trace; trace the workload on its own".into(),
        );
    }
    let mut reports = Vec::new();
    for set in sets {
        let mut argv: Vec<String> = vec!["foliosim".into()];
        argv.extend(workload.iter().cloned());
        let (lru, variants) = patches::split_set(set);
        // Validate before running.
        let mut probe = Variants::newest();
        for v in &variants {
            probe.apply(v).map_err(|e| format!("--set {set}: {e}"))?;
        }
        if !variants.is_empty() {
            argv.push(format!("--variant={}", variants.join(",")));
        }
        if let Some(l) = lru {
            argv.push(format!("--lru={l}"));
        }
        let cli = Cli::try_parse_from(&argv).map_err(|e| crate::clap_error_line(&e))?;
        if !matches!(
            cli.cmd,
            Cmd::Fio { .. } | Cmd::MmapProbe { .. } | Cmd::Replay { .. }
        ) {
            return Err("compare: the workload must be fio, mmap-probe or replay".into());
        }
        let (r, _, _) = run_workload(&cli.cmd)?;
        reports.push(r);
    }
    if json {
        let v = serde_json::json!({ "sets": sets, "workload": workload, "reports": reports });
        println!(
            "{}",
            serde_json::to_string_pretty(&v).expect("reports serialise")
        );
        return Ok(());
    }
    // Each counter under the file it is read from: the workload memcg's
    // (memory.stat and its other files) or the machine's /proc/vmstat.
    let mut rows: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (i, r) in reports.iter().enumerate() {
        let counters = r.memcg.iter().map(|(k, v)| (format!("memcg.{k}"), *v));
        let counters = counters.chain(r.vmstat.iter().map(|(k, v)| (format!("vmstat.{k}"), *v)));
        for (k, v) in counters {
            rows.entry(k).or_insert_with(|| vec![0; reports.len()])[i] = v;
        }
    }
    rows.retain(|_, vals| vals.iter().any(|&v| v != 0));
    println!("memcg.*: the workload memcg's counters (memory.stat and its other files); vmstat.*: the machine's /proc/vmstat (pgpgin/pgpgout in KiB)");
    print!("{:<32}", "counter");
    for s in sets {
        print!(" {:>18}", s);
    }
    for s in &sets[1..] {
        print!(" {:>14}", format!("d({s})"));
    }
    println!();
    let elapsed: Vec<u64> = reports.iter().map(|r| r.elapsed_ns / 1_000_000).collect();
    rows.insert("elapsed_ms".into(), elapsed);
    for (k, vals) in rows {
        print!("{:<32}", k);
        for v in &vals {
            print!(" {:>18}", v);
        }
        for v in &vals[1..] {
            let base = vals[0];
            let d = *v as f64 - base as f64;
            let pct = if base > 0 {
                format!("{:+.1}%", d / base as f64 * 100.0)
            } else {
                format!("{:+}", d)
            };
            print!(" {:>14}", pct);
        }
        println!();
    }
    Ok(())
}

/// Whether `path` is a foliosim trace (its first line says so).
pub(crate) fn is_rectrace_file(path: &std::path::Path) -> bool {
    use std::io::Read;
    let mut head = [0u8; 32];
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let n = f.read(&mut head).unwrap_or(0);
    let first = String::from_utf8_lossy(&head[..n]);
    foliosim_workload::rectrace::is_rectrace(first.lines().next().unwrap_or(""))
}

type RecRun = (
    RunReport,
    foliosim::recreplay::ReplayStats,
    BTreeMap<String, f64>,
);

/// `foliosim replay TRACE` of a foliosim trace: the report, what the
/// replay did and the recorded run's counters from the trace's header.
fn rectrace_run(cmd: &Cmd, dry: bool) -> Result<Option<RecRun>, String> {
    let Cmd::Replay {
        trace,
        format,
        csv_spec,
        machine,
        timing,
        compute_scale,
        ..
    } = cmd
    else {
        unreachable!("a replay")
    };
    if format.is_some() || csv_spec.is_some() {
        return Err("--format, --csv-spec: a foliosim trace has its own format".into());
    }
    let afap = match timing.as_deref() {
        None | Some("recorded") => false,
        Some("afap") => true,
        Some(t) => return Err(format!("--timing: '{t}' is not recorded or afap")),
    };
    let compute_scale = compute_scale.unwrap_or(1.0);
    if !compute_scale.is_finite() || compute_scale < 0.0 {
        return Err(format!(
            "--compute-scale: {compute_scale} is not a number >= 0"
        ));
    }
    if machine.fs.is_some() {
        return Err("--fs: only fio jobs run on the model's file system".into());
    }
    let rd = foliosim_workload::rectrace::open(trace).map_err(|e| e.to_string())?;
    let cfg = machine.config()?;
    if dry {
        return Ok(None);
    }
    let recorded = foliosim::recreplay::recorded_counters(&rd);
    let tspec = trace_args::arm(&machine.trace)?;
    trace_args::progress::install(None);
    let opts = foliosim::recreplay::ReplayOpts {
        afap,
        compute_scale,
    };
    let r = foliosim::recreplay::replay(cfg, rd, opts);
    trace_args::progress::done();
    let (r, st) = r?;
    trace_args::finish(&tspec, machine.trace.trace.as_deref())?;
    Ok(Some((r, st, recorded)))
}

/// Counters printed beside the recorded run's: (model key, header key).
const RECORDED_VS: &[(&str, &str)] = &[
    ("vmstat.pgpgin", "vmstat.pgpgin"),
    ("vmstat.pgpgout", "vmstat.pgpgout"),
    ("vmstat.pgmajfault", "vmstat.pgmajfault"),
    ("vmstat.pgfault", "vmstat.pgfault"),
    (
        "vmstat.workingset_refault_file",
        "vmstat.workingset_refault_file",
    ),
    (
        "vmstat.workingset_activate_file",
        "vmstat.workingset_activate_file",
    ),
    ("memcg.pgfault", "memcg.pgfault"),
    ("memcg.pgmajfault", "memcg.pgmajfault"),
    ("memcg.memcg_pgpgin_events", "memcg.pgpgin"),
    (
        "memcg.workingset_refault_file",
        "memcg.workingset_refault_file",
    ),
    ("memcg.file", "memcg.file"),
    ("memcg.anon", "memcg.anon"),
    ("elapsed_s", "wall_s"),
];

/// `foliosim replay` of a foliosim trace: the report, then what the
/// replay did and the recorded run's counters beside the model's.
pub(crate) fn rectrace_cmd(cmd: &Cmd) -> Result<(), String> {
    let (r, st, rec) = rectrace_run(cmd, false)?.expect("not a dry run");
    let json = matches!(cmd, Cmd::Replay { machine, .. } if machine.json);
    let model = |k: &str| -> Option<f64> {
        match k.split_once('.') {
            Some(("vmstat", n)) => r.vmstat.get(n).map(|v| *v as f64),
            Some(("memcg", n)) => r.memcg.get(n).map(|v| *v as f64),
            _ => Some(r.elapsed_ns as f64 / 1e9),
        }
    };
    let rows: Vec<(&str, f64, Option<f64>)> = RECORDED_VS
        .iter()
        .filter_map(|(m, h)| Some((*h, *rec.get(*h)?, model(m))))
        .collect();
    if json {
        let mut v = serde_json::to_value(&r).map_err(|e| e.to_string())?;
        v["trace_replay"] = serde_json::to_value(&st).map_err(|e| e.to_string())?;
        v["recorded"] = serde_json::to_value(&rec).map_err(|e| e.to_string())?;
        println!("{}", serde_json::to_string_pretty(&v).expect("serialises"));
        return Ok(());
    }
    print!("{}", foliosim::report::render_text(&r, "replay"));
    println!(
        "\ntrace replay: {} events, {} tasks in {} processes, {} files; {} reads ({} KiB), {} writes ({} KiB); {} file faults, {} anonymous faults; the real kernel mapped {} pages by fault-around; {} processes OOM-killed",
        st.events, st.tasks, st.processes, st.files, st.reads, st.read_bytes >> 10, st.writes,
        st.write_bytes >> 10, st.file_faults, st.anon_faults, st.real_fault_around_pages, st.oom_killed
    );
    for (why, n) in &st.skipped {
        println!("  not replayed: {why}: {n}");
    }
    if !rows.is_empty() {
        println!("\nrecorded run (real kernel) vs replay (model):");
        println!("  {:<36} {:>14} {:>14}", "counter", "real", "model");
        for (k, real, m) in rows {
            let p = if k == "wall_s" { 3 } else { 0 };
            let m = m.map_or("-".into(), |m| format!("{m:.p$}"));
            let real = format!("{real:.p$}");
            println!("  {k:<36} {real:>14} {m:>14}");
        }
    }
    Ok(())
}
