//! `foliosim run SCENARIO.toml`: a scenario (docs/scenarios.md) through
//! the model, or a vm-scalability usemem command line with `--usemem`.

use std::path::PathBuf;

use foliosim_workload::scenario::{Op, Scenario, Step};

use crate::MachineArgs;

#[derive(clap::Args)]
pub struct RunArgs {
    /// The scenario file (TOML).
    #[arg(required_unless_present = "usemem", conflicts_with = "usemem")]
    scenario: Option<PathBuf>,
    /// usemem's arguments instead of a file, e.g. --usemem "-n 4 --random 1G".
    #[arg(long, allow_hyphen_values = true)]
    usemem: Option<String>,
    #[command(flatten)]
    machine: MachineArgs,
}

pub fn run(a: &RunArgs) -> Result<(), String> {
    let r = report(a, None, false)?.expect("not a dry run");
    if a.machine.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&r).expect("report serialises")
        );
    } else {
        print!("{}", foliosim::scenario::render_text(&r));
    }
    Ok(())
}

/// The scenario's report; `text`, when given, replaces the scenario
/// file's contents (a sweep's `scenario.NAME` substitutions); `dry`
/// checks all but the run and returns None.
pub(crate) fn report(
    a: &RunArgs,
    text: Option<&str>,
    dry: bool,
) -> Result<Option<foliosim::scenario::ScenarioReport>, String> {
    let sc = match (&a.scenario, &a.usemem) {
        (Some(path), _) => {
            let file = path.display().to_string();
            let text = match text {
                Some(t) => t.to_string(),
                None => std::fs::read_to_string(path).map_err(|e| format!("{file}: {e}"))?,
            };
            foliosim_workload::scenario::parse(&text, &file).map_err(|e| e.to_string())?
        }
        (None, Some(args)) => {
            let args: Vec<String> = args.split_whitespace().map(String::from).collect();
            foliosim_workload::scenario::usemem::parse_args(&args)
                .map_err(|e| format!("--usemem: {e}"))?
        }
        (None, None) => return Err("run: give a scenario file or --usemem".into()),
    };
    let mut machine = a.machine.clone();
    let mut sc = sc;
    if a.usemem.is_some() {
        if let Some(l) = machine.memcg_limit.take() {
            in_memcg(&mut sc, crate::parse_memcg_limit(&l)?);
        }
    }
    let m = with_scenario_defaults(&machine, &sc)?;
    if m.fs.is_some() {
        return Err("--fs: only fio jobs run on the model's file system".into());
    }
    let mut cfg = m.config()?;
    // The ratio the zram device compresses the scenario's data at (the
    // oracle fills anon memory so that zram reaches it).
    if let Some(r) = sc.machine.zram_ratio {
        cfg.mm.zram_comp_ratio = r;
    }
    crate::check_footprint(&cfg, &footprint_sizes(&sc))?;
    if dry {
        return Ok(None);
    }
    let spec = crate::trace_args::arm(&m.trace)?;
    crate::trace_args::progress::install(None);
    let r = foliosim::scenario::run_scenario(cfg, &sc);
    crate::trace_args::progress::done();
    let r = r?;
    crate::trace_args::finish(&spec, m.trace.trace.as_deref())?;
    Ok(Some(r))
}

/// usemem's processes in one memcg of `limit` bytes (--memcg-limit), as
/// vm-scalability's memcg cases run usemem.
fn in_memcg(sc: &mut Scenario, limit: u64) {
    sc.cgroups.push(foliosim_workload::scenario::Cgroup {
        path: "usemem".into(),
        max: Some(limit),
        ..Default::default()
    });
    for p in &mut sc.processes {
        p.cgroup = "usemem".into();
    }
}

/// The command line's machine options over the scenario's `[machine]`
/// values (the scenario's are defaults; sysctls from the scenario come
/// first, so the command line's win). Also the oracle's model side of a
/// scenario case (`oracle_model`), so both read `[machine]` alike.
pub(crate) fn with_scenario_defaults(
    cli: &MachineArgs,
    sc: &Scenario,
) -> Result<MachineArgs, String> {
    // A scenario names its own cgroups: these two would have nowhere to go.
    if cli.policy.is_some() {
        return Err(format!(
            "--policy: {} sets each cgroup's cache_ext policy with the cgroup's `policy` key; --policy is for `foliosim fio`",
            sc.file
        ));
    }
    if cli.memcg_limit.is_some() {
        return Err(format!(
            "--memcg-limit: {} sets its cgroups' limits (memory.max / memory.limit_in_bytes); --memcg-limit is for `foliosim fio`",
            sc.file
        ));
    }
    let d = &sc.machine;
    let mut m = cli.clone();
    if m.memory.is_none() {
        m.memory = d.memory.map(|b| b.to_string());
    }
    if m.swap.is_none() {
        m.swap = d.swap.clone();
    }
    if m.lru.is_none() {
        m.lru = d.lru.clone();
    }
    if m.device.is_none() {
        m.device = d.device.clone();
    }
    if m.read_ahead_kb.is_none() {
        m.read_ahead_kb = d.read_ahead_kb;
    }
    if m.seed.is_none() {
        m.seed = d.seed;
    }
    if m.tmpfs_huge.is_none() {
        m.tmpfs_huge = d.tmpfs_huge.clone();
    }
    let mut sysctl: Vec<String> = Vec::new();
    if let Some(s) = d.swappiness {
        sysctl.push(format!("vm.swappiness={s}"));
    }
    sysctl.extend(d.sysctl.iter().map(|(k, v)| format!("{k}={v}")));
    sysctl.extend(cli.sysctl.iter().cloned());
    m.sysctl = sysctl;
    Ok(m)
}

/// Sizes of the address spaces the model allocates up front: the files
/// and every anonymous mapping of every process instance (loops counted
/// once).
fn footprint_sizes(sc: &Scenario) -> Vec<u64> {
    fn anon(steps: &[Step], mult: u64, out: &mut Vec<u64>) {
        for s in steps {
            match &s.op {
                Op::MmapAnon { size, .. } => {
                    out.extend(std::iter::repeat_n(*size, mult.min(4096) as usize))
                }
                Op::Loop { steps, .. } => anon(steps, mult, out),
                Op::Fork { count, steps, .. } => anon(steps, mult * *count as u64, out),
                _ => {}
            }
        }
    }
    let mut out: Vec<u64> = sc.files.iter().map(|f| f.size).collect();
    for p in &sc.processes {
        for t in &p.threads {
            anon(&t.steps, p.count as u64, &mut out);
        }
    }
    out
}
