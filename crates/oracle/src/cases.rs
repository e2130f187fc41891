//! Oracle cases: a fio job file or an mmap-probe line, with the memory
//! cgroup limit and read-ahead to run it under, and what the host must offer.
//!
//! Case files (the calibration suite in `oracle/cases/`):
//! * `NAME.fio`: a fio job; header comments `; oracle: memcg_limit=512M
//!   read_ahead_kb=128` (read_ahead_kb optional) and `; about: text`.
//! * `probes.txt`: one probe case per line, `NAME: OPTIONS`, where OPTIONS are
//!   those of `foliosim mmap-probe` (`--file-size 2G --pattern random
//!   --fraction 0.01 --seed 1 --memcg-limit 512M --read-ahead-kb 8192
//!   --variant p1,p2`), so a line can be pasted after either command. `#`
//!   starts a comment line; `# about: text` describes the next case.

use crate::host::{CgroupFlavor, HostInfo};
use crate::jobsafe::{self, SanitizedJob};
use foliosim_workload::mmap_probe::{Pattern, ProbeSpec};
use foliosim_workload::units::parse_size;
use serde::Serialize;
use std::fs;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub enum CaseKind {
    Fio {
        job_file: PathBuf,
        /// What fio runs instead of `job_file` (see [`crate::jobsafe`]).
        job: SanitizedJob,
    },
    Probe {
        spec: ProbeSpec,
        variant: Vec<String>,
    },
    /// A scenario (processes in cgroups), run by [`crate::scn`].
    Scenario {
        scenario: Box<foliosim_workload::scenario::Scenario>,
    },
}

/// What the host must offer to run a case for real.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Need {
    /// drop_caches, cgroups and read_ahead_kb are root's.
    Root,
    MemoryCgroup,
    Fio,
    /// The scratch directory sits on a block device with a read_ahead_kb
    /// (not tmpfs): without one there is no readahead to measure.
    BlockDevice,
}

#[derive(Clone, Debug)]
pub struct Case {
    pub name: String,
    pub kind: CaseKind,
    pub memcg_limit: u64,
    /// Set the device's read_ahead_kb to this for the case (restored after).
    pub read_ahead_kb: Option<u32>,
    pub needs: Vec<Need>,
    /// What the case checks, from its `about:` comment.
    pub about: String,
    /// "file:line" where the case is defined ("command line" for ad-hoc runs).
    pub source: String,
    /// At least this many real runs whatever `--repeat` says (a scenario's
    /// `# repeat: N` comment): a case whose host runs spread widely needs
    /// more of them for its median.
    pub min_repeat: u32,
    /// A case of the held-out half (`oracle/heldout/`): nothing in the
    /// model was adjusted against it; the report scores it apart.
    pub held_out: bool,
}

impl Case {
    pub fn new(
        name: String,
        kind: CaseKind,
        memcg_limit: u64,
        read_ahead_kb: Option<u32>,
        about: String,
        source: String,
    ) -> Case {
        let mut needs = vec![Need::Root, Need::MemoryCgroup, Need::BlockDevice];
        if matches!(kind, CaseKind::Fio { .. }) {
            needs.push(Need::Fio);
        }
        if matches!(kind, CaseKind::Scenario { .. }) {
            // The scenario's own checks (crate::scn::skip_reason) say
            // whether it needs a block device.
            needs.retain(|n| *n != Need::BlockDevice);
        }
        Case {
            name,
            kind,
            memcg_limit,
            read_ahead_kb,
            needs,
            about,
            source,
            min_repeat: 0,
            held_out: false,
        }
    }

    /// The read-ahead the run sees: the case's own, else the device's.
    pub fn effective_read_ahead_kb(&self, host: &HostInfo) -> u32 {
        self.read_ahead_kb.unwrap_or(host.read_ahead_kb)
    }

    /// One line describing the workload, for reports.
    pub fn describe(&self) -> String {
        match &self.kind {
            CaseKind::Fio { job_file, .. } => match self.source.as_str() {
                "" => format!("fio {}", job_file.display()),
                src => format!("fio {src}"),
            },
            CaseKind::Probe { spec, variant } => {
                let mut s = probe_options(spec);
                if !variant.is_empty() {
                    s.push_str(&format!(" --variant {}", variant.join(",")));
                }
                format!("mmap-probe {s}")
            }
            CaseKind::Scenario { scenario } => format!("scenario {}", scenario.file),
        }
    }

    /// Why this host cannot run the case, or None if it can.
    pub fn skip_reason(&self, host: &HostInfo) -> Option<String> {
        if let CaseKind::Scenario { scenario } = &self.kind {
            return crate::scn::skip_reason(scenario, host);
        }
        self.needs.iter().find_map(|n| match n {
            Need::Root if !host.is_root => {
                Some("needs root (drop_caches, cgroups, read_ahead_kb)".to_string())
            }
            Need::MemoryCgroup => match &host.cgroup {
                CgroupFlavor::None { reason } => Some(reason.clone()),
                _ => None,
            },
            Need::Fio if host.fio_version.is_none() => {
                Some("fio is not installed (apt-get install -y fio)".to_string())
            }
            Need::BlockDevice if host.read_ahead_path.as_os_str().is_empty() => Some(format!(
                "the scratch directory is on {} with no block device read_ahead_kb",
                if host.fs_type.is_empty() {
                    "a filesystem"
                } else {
                    &host.fs_type
                }
            )),
            _ => None,
        })
    }
}

/// The probe options as `foliosim mmap-probe` takes them.
pub fn probe_options(spec: &ProbeSpec) -> String {
    let pat = match spec.pattern {
        Pattern::Stride(n) => format!("stride:{n}"),
        p => p.to_string(),
    };
    format!(
        "--file-size {} --pattern {pat} --fraction {} --seed {}",
        size_str(spec.file_size),
        spec.fraction,
        spec.seed
    )
}

/// 2147483648 -> "2G"; sizes that are not whole units stay in bytes.
pub fn size_str(b: u64) -> String {
    for (shift, suf) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if b >= 1 << shift && b % (1 << shift) == 0 {
            return format!("{}{suf}", b >> shift);
        }
    }
    b.to_string()
}

/// The `; oracle:` / `; about:` header of a fio job file.
#[derive(Debug, Default, PartialEq)]
pub struct FioHeader {
    pub memcg_limit: Option<u64>,
    pub read_ahead_kb: Option<u32>,
    pub about: String,
}

pub fn parse_fio_header(text: &str, file: &str) -> Result<FioHeader, String> {
    let mut h = FioHeader::default();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        let Some(c) = t.strip_prefix(';').or_else(|| t.strip_prefix('#')) else {
            continue;
        };
        let c = c.trim();
        if let Some(a) = c.strip_prefix("about:") {
            h.about = a.trim().to_string();
        } else if let Some(kvs) = c.strip_prefix("oracle:") {
            for kv in kvs.split_whitespace() {
                let at = format!("{file}:{}", i + 1);
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| format!("{at}: oracle option '{kv}' is not key=value"))?;
                match k {
                    "memcg_limit" => {
                        h.memcg_limit =
                            Some(parse_size(v).map_err(|e| format!("{at}: memcg_limit: {e}"))?)
                    }
                    "read_ahead_kb" => {
                        h.read_ahead_kb = Some(
                            v.parse()
                                .map_err(|_| format!("{at}: read_ahead_kb: bad number '{v}'"))?,
                        )
                    }
                    _ => {
                        return Err(format!(
                            "{at}: unknown oracle option '{k}' (memcg_limit, read_ahead_kb)"
                        ))
                    }
                }
            }
        }
    }
    Ok(h)
}

/// A fio case from its job file; `memcg_limit`/`read_ahead_kb` override the
/// header's. Refuses, before anything runs, a job the oracle will not hand
/// to fio as root ([`jobsafe::sanitize`]) or one the model cannot parse (so
/// that a job never runs for real only to find the model refuses it).
pub fn fio_case(
    job: &Path,
    memcg_limit: Option<u64>,
    read_ahead_kb: Option<u32>,
) -> Result<Case, String> {
    let file = job.display().to_string();
    let text = fs::read_to_string(job).map_err(|e| format!("{file}: {e}"))?;
    let safe = jobsafe::sanitize_with_env(&text, &file).map_err(|e| e.to_string())?;
    let abs = fs::canonicalize(job).map_err(|e| format!("{file}: {e}"))?;
    if safe.iologs.is_empty() {
        foliosim_workload::fio::parse_job_str(&text, &file).map_err(|e| e.to_string())?;
    } else {
        // The logs beside the job file, as the model and (copied) fio read them.
        let dir = abs.parent().unwrap_or(Path::new("/"));
        jobsafe::replay::check(&safe, &text, &file, dir).map_err(|e| e.to_string())?;
    }
    let h = parse_fio_header(&text, &file)?;
    let limit = memcg_limit.or(h.memcg_limit).ok_or_else(|| {
        format!("{file}: no memcg limit (add '; oracle: memcg_limit=SIZE' or pass --memcg-limit)")
    })?;
    let name = job
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| file.clone());
    Ok(Case::new(
        name,
        CaseKind::Fio {
            job_file: abs,
            job: safe,
        },
        limit,
        read_ahead_kb.or(h.read_ahead_kb),
        h.about,
        file,
    ))
}

/// Probe options as parsed from a case line (the oracle-relevant subset of
/// the CLI's `ProbeArgs`).
#[derive(Debug, PartialEq)]
pub struct ProbeLine {
    pub spec_size: u64,
    pub pattern: Pattern,
    pub fraction: f64,
    pub seed: u64,
    pub memcg_limit: Option<u64>,
    pub read_ahead_kb: Option<u32>,
    pub variant: Vec<String>,
}

/// Parses `--opt value` / `--opt=value` probe options. Errors name the option.
pub fn parse_probe_options(s: &str) -> Result<ProbeLine, String> {
    let mut p = ProbeLine {
        spec_size: 2 << 30,
        pattern: Pattern::Random,
        fraction: 0.01,
        seed: 1,
        memcg_limit: None,
        read_ahead_kb: None,
        variant: vec![],
    };
    let toks: Vec<&str> = s.split_whitespace().collect();
    let mut i = 0;
    while i < toks.len() {
        let tok = toks[i];
        let opt = tok
            .strip_prefix("--")
            .ok_or_else(|| format!("unexpected '{tok}' (options are --name value)"))?;
        let (k, v) = match opt.split_once('=') {
            Some((k, v)) => (k, v),
            None => {
                i += 1;
                let v = toks
                    .get(i)
                    .ok_or_else(|| format!("option --{opt} needs a value"))?;
                (opt, *v)
            }
        };
        i += 1;
        let bad = |e: String| format!("option --{k}: {e}");
        match k {
            "file-size" => p.spec_size = parse_size(v).map_err(bad)?,
            "pattern" => p.pattern = v.parse().map_err(bad)?,
            "fraction" => p.fraction = parse_fraction(v).map_err(bad)?,
            "seed" => p.seed = v.parse().map_err(|_| bad(format!("bad number '{v}'")))?,
            "memcg-limit" => p.memcg_limit = Some(parse_size(v).map_err(bad)?),
            "read-ahead-kb" => {
                p.read_ahead_kb = Some(v.parse().map_err(|_| bad(format!("bad number '{v}'")))?)
            }
            "variant" => {
                p.variant = v
                    .split(',')
                    .filter(|s| !s.is_empty())
                    .map(String::from)
                    .collect()
            }
            "memory" => {
                return Err(bad(
                    "not allowed in an oracle case: the real run has the host's RAM".into(),
                ))
            }
            _ => return Err(format!("unknown option --{k}")),
        }
    }
    if p.spec_size == 0 {
        return Err("option --file-size: must be > 0".into());
    }
    Ok(p)
}

/// A fraction in (0, 1].
pub fn parse_fraction(v: &str) -> Result<f64, String> {
    match v.parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        _ => Err(format!("'{v}' is not in (0, 1]")),
    }
}

pub fn parse_probe_cases(text: &str, file: &str) -> Result<Vec<Case>, String> {
    let mut out: Vec<Case> = Vec::new();
    let mut about = String::new();
    for (i, line) in text.lines().enumerate() {
        let at = format!("{file}:{}", i + 1);
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(c) = t.strip_prefix('#') {
            if let Some(a) = c.trim().strip_prefix("about:") {
                about = a.trim().to_string();
            }
            continue;
        }
        let (name, opts) = t
            .split_once(':')
            .ok_or_else(|| format!("{at}: expected 'NAME: OPTIONS'"))?;
        let name = name.trim();
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(format!("{at}: bad case name '{name}'"));
        }
        if out.iter().any(|c| c.name == name) {
            return Err(format!("{at}: duplicate case name '{name}'"));
        }
        let p = parse_probe_options(opts).map_err(|e| format!("{at}: {e}"))?;
        let limit = p
            .memcg_limit
            .ok_or_else(|| format!("{at}: case '{name}' needs --memcg-limit"))?;
        let spec = ProbeSpec {
            file_size: p.spec_size,
            pattern: p.pattern,
            fraction: p.fraction,
            seed: p.seed,
        };
        out.push(Case::new(
            name.to_string(),
            CaseKind::Probe {
                spec,
                variant: p.variant,
            },
            limit,
            p.read_ahead_kb,
            std::mem::take(&mut about),
            at,
        ));
    }
    Ok(out)
}

/// A scenario case: the memcg limit shown is the largest of its groups'.
pub fn scenario_case(name: &str, about: &str, sc: foliosim_workload::scenario::Scenario) -> Case {
    let limit = sc.cgroups.iter().filter_map(|c| c.max).max().unwrap_or(0);
    let ra = sc.machine.read_ahead_kb.map(|k| k as u32);
    let source = sc.file.clone();
    Case::new(
        name.to_string(),
        CaseKind::Scenario {
            scenario: Box::new(sc),
        },
        limit,
        ra,
        about.to_string(),
        source,
    )
}

/// The suite in `dir`: every `*.fio` (by file name), then `probes.txt`,
/// then every `*.toml` scenario (by file name).
/// The calibration half from `calibration` and the held-out half from
/// `held_out` (when given), marked; a name may not be in both.
pub fn load_suite_halves(calibration: &Path, held_out: Option<&Path>) -> Result<Vec<Case>, String> {
    let mut cases = load_suite(calibration)?;
    let Some(dir) = held_out else {
        return Ok(cases);
    };
    for mut c in load_suite(dir)? {
        if let Some(k) = cases.iter().find(|k| k.name == c.name) {
            return Err(format!(
                "{}: case name '{}' is also a calibration case ({})",
                c.source, c.name, k.source
            ));
        }
        c.held_out = true;
        cases.push(c);
    }
    Ok(cases)
}

pub fn load_suite(dir: &Path) -> Result<Vec<Case>, String> {
    let rd = fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut jobs: Vec<PathBuf> = rd
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "fio"))
        .collect();
    jobs.sort();
    let mut cases = Vec::new();
    for j in &jobs {
        cases.push(fio_case(j, None, None)?);
    }
    let probes = dir.join("probes.txt");
    if probes.exists() {
        let f = probes.display().to_string();
        let text = fs::read_to_string(&probes).map_err(|e| format!("{f}: {e}"))?;
        cases.extend(parse_probe_cases(&text, &f)?);
    }
    let mut scns: Vec<PathBuf> = fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    scns.sort();
    for p in &scns {
        let f = p.display().to_string();
        let text = fs::read_to_string(p).map_err(|e| format!("{f}: {e}"))?;
        let sc = crate::scn::parse_scenario(&text, &f)?;
        let name = p
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| f.clone());
        let mut c = scenario_case(&name, &crate::scn::about(&text), sc);
        c.min_repeat = crate::scn::min_repeat(&text, &f)?;
        cases.push(c);
    }
    let mut names = std::collections::BTreeSet::new();
    for c in &cases {
        if !names.insert(c.name.clone()) {
            return Err(format!(
                "{}: case name '{}' is used twice",
                c.source, c.name
            ));
        }
    }
    if cases.is_empty() {
        return Err(format!(
            "{}: no cases (*.fio, probes.txt or *.toml)",
            dir.display()
        ));
    }
    Ok(cases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fio_header_parses_and_errors_name_file_line() {
        let h = parse_fio_header(
            "; about: psync reads\n; oracle: memcg_limit=512M read_ahead_kb=128\n[job]\nrw=read\n",
            "a.fio",
        )
        .unwrap();
        assert_eq!(
            h,
            FioHeader {
                memcg_limit: Some(512 << 20),
                read_ahead_kb: Some(128),
                about: "psync reads".into()
            }
        );
        let e = parse_fio_header("[g]\n; oracle: memcg_limit=12Q\n", "b.fio").unwrap_err();
        assert!(e.starts_with("b.fio:2: memcg_limit: bad size '12Q'"), "{e}");
        let e = parse_fio_header("; oracle: swappiness=1\n", "c.fio").unwrap_err();
        assert!(
            e.starts_with("c.fio:1: unknown oracle option 'swappiness'"),
            "{e}"
        );
        let e = parse_fio_header("; oracle: read_ahead_kb=lots\n", "d.fio").unwrap_err();
        assert_eq!(e, "d.fio:1: read_ahead_kb: bad number 'lots'");
    }

    #[test]
    fn probe_lines_parse() {
        let cs = parse_probe_cases(
            "# comment\n# about: seed 002\nrand: --file-size 2G --pattern=random --fraction 0.01 \
             --memcg-limit 512M --read-ahead-kb 8192 --variant p1,p2\n\
             seq: --pattern sequential --memcg-limit 1G\n",
            "p.txt",
        )
        .unwrap();
        assert_eq!(cs.len(), 2);
        assert_eq!(cs[0].name, "rand");
        assert_eq!(cs[0].about, "seed 002");
        assert_eq!(cs[0].memcg_limit, 512 << 20);
        assert_eq!(cs[0].read_ahead_kb, Some(8192));
        assert_eq!(cs[0].source, "p.txt:3");
        assert_eq!(
            cs[0].describe(),
            "mmap-probe --file-size 2G --pattern random --fraction 0.01 --seed 1 --variant p1,p2"
        );
        assert_eq!(cs[1].about, "", "about applies to one case only");
        match &cs[1].kind {
            CaseKind::Probe { spec, variant } => {
                assert_eq!(spec.pattern, Pattern::Sequential);
                assert_eq!(spec.file_size, 2 << 30);
                assert!(variant.is_empty());
            }
            _ => panic!(),
        }
        assert!(!cs[1].needs.contains(&Need::Fio));
    }

    #[test]
    fn probe_line_errors() {
        let e = |s: &str| parse_probe_cases(s, "p.txt").unwrap_err();
        assert_eq!(
            e("x: --fraction 0 --memcg-limit 1G"),
            "p.txt:1: option --fraction: '0' is not in (0, 1]"
        );
        assert_eq!(
            e("x: --fraction 1.5 --memcg-limit 1G"),
            "p.txt:1: option --fraction: '1.5' is not in (0, 1]"
        );
        assert_eq!(
            e("\nx: --pattern zigzag --memcg-limit 1G"),
            "p.txt:2: option --pattern: unknown pattern 'zigzag' (random, sequential, stride:N)"
        );
        assert_eq!(
            e("x: --file-size 2G"),
            "p.txt:1: case 'x' needs --memcg-limit"
        );
        assert_eq!(e("x: --bogus 1"), "p.txt:1: unknown option --bogus");
        assert_eq!(e("x: --seed"), "p.txt:1: option --seed needs a value");
        assert_eq!(e("no colon here"), "p.txt:1: expected 'NAME: OPTIONS'");
        assert!(e("x: --memory 8G --memcg-limit 1G").contains("option --memory: not allowed"));
        assert_eq!(
            e("x: --memcg-limit 1G\nx: --memcg-limit 1G"),
            "p.txt:2: duplicate case name 'x'"
        );
    }

    /// The shipped halves: as many held-out cases as calibration cases,
    /// each marked, with the kinds issue 51 asks for (anon+file mixes,
    /// several mapped readers of one file beside anonymous memory), and a
    /// name in both halves is refused.
    #[test]
    fn the_held_out_half_matches_the_calibration_half_in_size() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../oracle");
        let cs = load_suite_halves(&root.join("cases"), Some(&root.join("heldout"))).unwrap();
        let held: Vec<&Case> = cs.iter().filter(|c| c.held_out).collect();
        assert!(held.len() >= 20, "{} held-out cases", held.len());
        assert_eq!(held.len() * 2, cs.len(), "halves of one size");
        let scn = |c: &&Case| match &c.kind {
            CaseKind::Scenario { scenario } => Some(scenario.clone()),
            _ => None,
        };
        let mixes = held.iter().filter_map(scn).filter(|s| {
            let text = format!("{s:?}");
            text.contains("MmapAnon") && !s.files.is_empty()
        });
        assert!(mixes.count() >= 8, "anon+file mixes");
        let readers = held.iter().filter_map(scn).filter(|s| {
            s.processes
                .iter()
                .any(|p| p.count > 1 && format!("{p:?}").contains("MmapFile"))
        });
        assert!(readers.count() >= 2, "several mapped readers");
        let e = load_suite_halves(&root.join("cases"), Some(&root.join("cases"))).unwrap_err();
        assert!(e.contains("is also a calibration case"), "{e}");
    }

    #[test]
    fn the_suite_has_its_scenario_cases() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../oracle/cases");
        let cs = load_suite(&dir).unwrap();
        let scn: Vec<&Case> = cs
            .iter()
            .filter(|c| matches!(c.kind, CaseKind::Scenario { .. }))
            .collect();
        assert!(scn.len() >= 10, "{} scenario cases", scn.len());
        for c in scn {
            assert!(!c.about.is_empty(), "{}: no '# about:'", c.name);
            assert!(c.memcg_limit >= 128 << 20, "{}", c.name);
            let CaseKind::Scenario { scenario } = &c.kind else {
                unreachable!()
            };
            crate::scn::check_safe(scenario).unwrap();
            // Only what a v1 host runs (no v2-only knob, no unlisted sysctl).
            let mut h = host();
            h.cgroup = CgroupFlavor::V1 {
                mount: "/nonexistent".into(),
            };
            if let Some(r) = crate::scn::skip_reason(scenario, &h) {
                assert!(r.contains("zram") || r.contains("swap"), "{}: {r}", c.name);
            }
        }
    }

    /// oracle/iolog's cases replay the log beside them: loaded as fio
    /// cases with the log recorded, and as a suite directory of their own.
    #[test]
    fn the_iolog_cases_load_with_their_log() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../oracle/iolog");
        let cs = load_suite(&dir).unwrap();
        let names: Vec<&str> = cs.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["iolog-replay-cached", "iolog-replay"]);
        for c in &cs {
            let CaseKind::Fio { job, job_file } = &c.kind else {
                panic!("{}", c.name)
            };
            assert!(job_file.is_absolute());
            let logs: Vec<&str> = job.iologs.iter().map(|p| p.path.as_str()).collect();
            assert_eq!(logs, ["iolog-replay.log"]);
            assert_eq!(c.memcg_limit, 256 << 20);
            assert!(!c.about.is_empty());
            let files =
                jobsafe::replay::check(job, &job.text, &c.source, job_file.parent().unwrap())
                    .unwrap();
            assert_eq!(
                files,
                [jobsafe::replay::ReplayFile {
                    name: "data.bin".into(),
                    size: 512 << 20
                }]
            );
        }
    }

    #[test]
    fn size_str_round_trips() {
        for s in ["2G", "512M", "4K", "1T", "12345"] {
            assert_eq!(size_str(parse_size(s).unwrap()), s);
        }
    }

    fn host() -> HostInfo {
        HostInfo::example()
    }

    pub(crate) fn fake_host() -> HostInfo {
        host()
    }

    #[test]
    fn skips_name_the_missing_need() {
        let fio = Case::new(
            "f".into(),
            CaseKind::Fio {
                job_file: "x.fio".into(),
                job: crate::jobsafe::sanitize_with_env("[x]\nsize=1M\n", "x.fio").unwrap(),
            },
            1 << 30,
            None,
            String::new(),
            String::new(),
        );
        let probe = parse_probe_cases("p: --memcg-limit 1G", "p.txt")
            .unwrap()
            .remove(0);
        let h = host();
        assert_eq!(fio.skip_reason(&h), None);
        assert_eq!(probe.effective_read_ahead_kb(&h), 128);

        let mut h = host();
        h.fio_version = None;
        assert!(fio
            .skip_reason(&h)
            .unwrap()
            .contains("fio is not installed"));
        assert_eq!(probe.skip_reason(&h), None, "probe needs no fio");

        let mut h = host();
        h.cgroup = CgroupFlavor::None {
            reason: "no memory controller".into(),
        };
        assert_eq!(
            probe.skip_reason(&h).as_deref(),
            Some("no memory controller")
        );

        let mut h = host();
        h.is_root = false;
        assert!(probe.skip_reason(&h).unwrap().starts_with("needs root"));

        let mut h = host();
        h.read_ahead_path = PathBuf::new();
        h.fs_type = "tmpfs".into();
        assert!(probe.skip_reason(&h).unwrap().contains("tmpfs"));
    }
}

#[cfg(test)]
pub(crate) use tests::fake_host;
