//! `foliosim sweep GRID`: a parameter study (docs/sweep.md). A grid file
//! names a workload, base values and the parameters to vary; every
//! (point, repeat) is one single-threaded deterministic run, several at
//! once on this machine's cores or as tasks on a Ray cluster. Each
//! finished row is appended to a journal as one complete CSV line and
//! fsynced, so a killed sweep resumes from it; the final CSV and Parquet
//! files are sorted by (point, repeat) and so do not depend on how many
//! workers ran them or in which order they finished.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use toml::de::{DeTable, DeValue};
use toml::Spanned;

use crate::Report;

#[derive(clap::Args, Debug, Clone)]
pub struct SweepArgs {
    /// The grid file (TOML; docs/sweep.md).
    pub grid: PathBuf,
    /// Output prefix: writes PREFIX.csv, PREFIX.parquet and the journal
    /// PREFIX.journal.csv (default: the grid file's path without .toml).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Runs at once (default: every core of this machine).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Insist on resuming: refuse to start when there is no journal (a
    /// journal found is resumed anyway).
    #[arg(long)]
    pub resume: bool,
    /// Run each point as a task on the Ray cluster at this address (as
    /// `ray start` prints it; needs the foliosim Python package and Ray).
    #[arg(long)]
    pub ray: Option<String>,
    /// The Python interpreter that has the foliosim package and Ray, for
    /// --ray.
    #[arg(long, default_value = "python3")]
    pub python: String,
}

/// A parameter's value at one point, as the grid file gives it.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    /// The text passed to the option (and written to the tables).
    pub text: String,
    /// A TOML integer (the column is an integer where all values are).
    pub int: bool,
    /// A TOML boolean: a flag given (true) or left out (false).
    pub flag: Option<bool>,
    /// The grid file's line of this value.
    pub line: usize,
}

/// A parsed grid file.
#[derive(Debug)]
pub struct Grid {
    /// The file as named (errors and messages).
    pub file: String,
    /// The workload command line, file arguments resolved against the
    /// grid file's folder.
    workload: Vec<String>,
    workload_line: usize,
    /// The scenario's text (`run` workloads), for `scenario.NAME`.
    scenario: Option<String>,
    /// Base values, in file order.
    base: Vec<(String, Value)>,
    /// The varied parameters' names, in file order.
    pub params: Vec<String>,
    /// Each point's values, one per parameter, and the line it comes
    /// from (for errors).
    points: Vec<(Vec<Value>, usize)>,
    pub repeats: u64,
    seed: u64,
}

/// Machine options a grid may not set: they shape the printed output,
/// and the sweep writes its own tables.
const OUTPUT_OPTIONS: &[&str] = &["json", "timeline", "output-format"];

fn err(file: &str, line: usize, key: &str, msg: impl std::fmt::Display) -> String {
    format!("{file}:{line}: {key}: {msg}")
}

struct Cx<'a> {
    file: &'a str,
    line_starts: Vec<usize>,
}

impl Cx<'_> {
    fn line(&self, span: &Range<usize>) -> usize {
        self.line_starts
            .partition_point(|&s| s <= span.start)
            .max(1)
    }
}

/// A table's entries with nested tables flattened to dotted names
/// (`sysctl.vm.swappiness = ...` is a dotted key), in file order.
fn flat<'a, 'i>(t: &'a DeTable<'i>) -> Vec<(String, Range<usize>, &'a Spanned<DeValue<'i>>)> {
    foliosim_workload::scenario::flatten_table(t)
}

fn scalar(cx: &Cx, key: &str, v: &Spanned<DeValue>) -> Result<Value, String> {
    let line = cx.line(&v.span());
    let (text, int, flag) = match v.get_ref() {
        DeValue::String(s) => (s.to_string(), false, None),
        DeValue::Integer(i) => {
            let digits: String = i.as_str().chars().filter(|c| *c != '_').collect();
            let n = i64::from_str_radix(&digits, i.radix()).map_err(|_| {
                err(
                    cx.file,
                    line,
                    key,
                    format!("integer '{}' out of range", i.as_str()),
                )
            })?;
            (n.to_string(), true, None)
        }
        DeValue::Float(f) => (f.as_str().to_string(), false, None),
        DeValue::Boolean(b) => (b.to_string(), false, Some(*b)),
        other => {
            return Err(err(
                cx.file,
                line,
                key,
                format!(
                    "expected a string, integer or boolean, found {}",
                    other.type_str()
                ),
            ))
        }
    };
    Ok(Value {
        text,
        int,
        flag,
        line,
    })
}

fn check_name(cx: &Cx, key: &str, line: usize) -> Result<(), String> {
    let plain = !key.contains('.');
    if key == "seed" || key == "set" {
        return Ok(());
    }
    if plain && OUTPUT_OPTIONS.contains(&key) {
        return Err(err(
            cx.file,
            line,
            key,
            "an output option: the sweep writes its own tables",
        ));
    }
    for prefix in ["sysctl.", "fio.", "scenario."] {
        if let Some(rest) = key.strip_prefix(prefix) {
            if rest.is_empty() {
                return Err(err(
                    cx.file,
                    line,
                    key,
                    format!("'{prefix}' needs a name after it"),
                ));
            }
            return Ok(());
        }
    }
    if plain && !key.is_empty() {
        return Ok(());
    }
    Err(err(
        cx.file,
        line,
        key,
        "unknown parameter (a machine option such as memcg-limit, seed, set, sysctl.KEY, fio.OPTION or scenario.NAME)",
    ))
}

impl Grid {
    /// Reads and checks a grid file's syntax (what each point runs is
    /// checked by [`Grid::check`]).
    pub fn load(path: &Path) -> Result<Grid, String> {
        let file = path.display().to_string();
        let text =
            std::fs::read_to_string(path).map_err(|e| format!("{file}: cannot read: {e}"))?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Grid::parse(&text, &file, &dir)
    }

    /// Parses a grid's text; `dir` is the folder relative file arguments
    /// are read from.
    pub fn parse(text: &str, file: &str, dir: &Path) -> Result<Grid, String> {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        let cx = Cx { file, line_starts };
        let doc = DeTable::parse(text).map_err(|e| {
            let line = e.span().map_or(1, |s| cx.line(&s));
            let msg = e
                .message()
                .lines()
                .next()
                .unwrap_or("invalid TOML")
                .to_string();
            err(file, line, "toml", format!("invalid TOML: {msg}"))
        })?;
        let mut grid = Grid {
            file: file.to_string(),
            workload: Vec::new(),
            workload_line: 1,
            scenario: None,
            base: Vec::new(),
            params: Vec::new(),
            points: Vec::new(),
            repeats: 1,
            seed: 1,
        };
        let mut vary: Vec<(String, usize, Vec<Value>)> = Vec::new();
        let mut explicit: Vec<(usize, Vec<(String, Value)>)> = Vec::new();
        let mut entries: Vec<_> = doc.get_ref().iter().collect();
        entries.sort_by_key(|(k, _)| k.span().start);
        for (k, v) in entries {
            let key = k.get_ref().as_ref();
            let line = cx.line(&k.span());
            match (key, v.get_ref()) {
                ("workload", DeValue::Array(a)) => {
                    grid.workload_line = line;
                    for item in a.iter() {
                        match item.get_ref() {
                            DeValue::String(s) => grid.workload.push(s.to_string()),
                            other => {
                                return Err(err(
                                    file,
                                    line,
                                    key,
                                    format!("expected strings, found {}", other.type_str()),
                                ))
                            }
                        }
                    }
                }
                ("repeats" | "seed", DeValue::Integer(_)) => {
                    let n: u64 = scalar(&cx, key, v)?
                        .text
                        .parse()
                        .map_err(|_| err(file, line, key, "must not be negative"))?;
                    if key == "repeats" {
                        if n == 0 || n > 1_000_000 {
                            return Err(err(file, line, key, "must be 1..=1000000"));
                        }
                        grid.repeats = n;
                    } else {
                        grid.seed = n;
                    }
                }
                ("base", DeValue::Table(t)) => {
                    for (name, span, val) in flat(t) {
                        let l = cx.line(&span);
                        check_name(&cx, &name, l)?;
                        if name == "seed" {
                            return Err(err(
                                file,
                                l,
                                &name,
                                "the first repeat's seed is the top-level `seed`",
                            ));
                        }
                        let values = match val.get_ref() {
                            // A list of values for one option (several
                            // --sysctl or --variant).
                            DeValue::Array(a) => a
                                .iter()
                                .map(|x| scalar(&cx, &name, x))
                                .collect::<Result<Vec<_>, _>>()?,
                            _ => vec![scalar(&cx, &name, val)?],
                        };
                        for x in values {
                            grid.base.push((name.clone(), x));
                        }
                    }
                }
                ("vary", DeValue::Table(t)) => {
                    for (name, span, val) in flat(t) {
                        let l = cx.line(&span);
                        check_name(&cx, &name, l)?;
                        let DeValue::Array(a) = val.get_ref() else {
                            return Err(err(file, l, &name, "expected a list of values"));
                        };
                        if a.is_empty() {
                            return Err(err(
                                file,
                                l,
                                &name,
                                "an empty list of values makes no points",
                            ));
                        }
                        let values = a
                            .iter()
                            .map(|x| scalar(&cx, &name, x))
                            .collect::<Result<Vec<_>, _>>()?;
                        vary.push((name, l, values));
                    }
                }
                ("point", DeValue::Array(a)) => {
                    for t in a.iter() {
                        let DeValue::Table(tbl) = t.get_ref() else {
                            return Err(err(file, line, key, "expected [[point]] tables"));
                        };
                        let mut vals = Vec::new();
                        for (name, span, val) in flat(tbl) {
                            let l = cx.line(&span);
                            check_name(&cx, &name, l)?;
                            vals.push((name.clone(), scalar(&cx, &name, val)?));
                        }
                        explicit.push((cx.line(&t.span()), vals));
                    }
                }
                ("workload" | "repeats" | "seed" | "base" | "vary" | "point", other) => {
                    return Err(err(
                        file,
                        line,
                        key,
                        format!("unexpected {}", other.type_str()),
                    ))
                }
                _ => {
                    return Err(err(
                        file,
                        line,
                        key,
                        "unknown key (workload, repeats, seed, [base], [vary], [[point]])",
                    ))
                }
            }
        }
        if grid.workload.is_empty() {
            return Err(err(
                file,
                1,
                "workload",
                "missing: e.g. workload = [\"fio\", \"job.fio\"]",
            ));
        }
        // File arguments (job files, scenarios, traces) are relative to
        // the grid file's folder.
        for a in grid.workload.iter_mut().skip(1) {
            if !a.starts_with('-') && !Path::new(a).is_absolute() && dir.join(&*a).is_file() {
                *a = dir.join(&*a).display().to_string();
            }
        }
        if grid.workload[0] == "run" {
            let path = grid.workload.iter().skip(1).find(|a| !a.starts_with('-'));
            if let Some(p) = path {
                grid.scenario = Some(std::fs::read_to_string(p).map_err(|e| {
                    err(
                        file,
                        grid.workload_line,
                        "workload",
                        format!("{p}: cannot read: {e}"),
                    )
                })?);
            }
        }
        // Parameters: [vary]'s in file order, then names only points give.
        for (name, line, _) in &vary {
            if grid.params.contains(name) {
                return Err(err(file, *line, name, "varied twice"));
            }
            grid.params.push(name.clone());
        }
        for (_, vals) in &explicit {
            for (name, v) in vals {
                if vals.iter().filter(|(n, _)| n == name).count() > 1 {
                    return Err(err(file, v.line, name, "given twice in one point"));
                }
                if !grid.params.contains(name) {
                    grid.params.push(name.clone());
                }
            }
        }
        // The Cartesian product, first parameter slowest.
        let mut points: Vec<(Vec<Option<Value>>, usize)> = Vec::new();
        if !vary.is_empty() {
            let line = vary[0].1;
            let total: usize = vary.iter().map(|v| v.2.len()).product();
            for mut i in 0..total {
                let mut vals = vec![None; grid.params.len()];
                for (j, (_, _, values)) in vary.iter().enumerate().rev() {
                    vals[j] = Some(values[i % values.len()].clone());
                    i /= values.len();
                }
                points.push((vals, line));
            }
            // Names only points vary: each point must give them all.
            if grid.params.len() > vary.len() {
                let name = &grid.params[vary.len()];
                return Err(err(file, line, name, "varied in [[point]] but not in [vary]: give it in every point and leave [vary] out, or vary it in [vary]"));
            }
        }
        for (line, vals) in explicit {
            let mut row = Vec::new();
            for name in &grid.params {
                match vals.iter().find(|(n, _)| n == name) {
                    Some((_, v)) => row.push(Some(v.clone())),
                    None => {
                        return Err(err(
                            file,
                            line,
                            name,
                            "this point gives no value for a varied parameter",
                        ))
                    }
                }
            }
            points.push((row, line));
        }
        if points.is_empty() {
            // No parameters: one point, the base run (repeated).
            points.push((Vec::new(), grid.workload_line));
        }
        grid.points = points
            .into_iter()
            .map(|(v, l)| {
                (
                    v.into_iter()
                        .map(|x| x.expect("every parameter set"))
                        .collect(),
                    l,
                )
            })
            .collect();
        Ok(grid)
    }

    /// Number of points (before repeats).
    pub fn len(&self) -> usize {
        self.points.len()
    }

    pub fn is_empty(&self) -> bool {
        self.points.is_empty()
    }

    fn is_fio(&self) -> bool {
        self.workload[0] == "fio"
    }

    /// The first repeat's seed of a point.
    fn point_seed(&self, point: usize) -> Result<u64, String> {
        match self.params.iter().position(|p| p == "seed") {
            Some(i) => {
                let v = &self.points[point].0[i];
                v.text.parse().map_err(|_| {
                    err(
                        &self.file,
                        v.line,
                        "seed",
                        format!("'{}' is not a non-negative integer", v.text),
                    )
                })
            }
            None => Ok(self.seed),
        }
    }

    /// The seed of (point, repeat): the point's first seed plus the repeat.
    pub fn seed(&self, point: usize, repeat: u64) -> Result<u64, String> {
        self.point_seed(point)?
            .checked_add(repeat)
            .ok_or_else(|| err(&self.file, self.workload_line, "seed", "too large"))
    }

    /// The command line, fio overrides and scenario text of a run with
    /// `values` (name, value) over the base.
    fn invocation(
        &self,
        values: &[(&str, &Value)],
        seed: u64,
    ) -> (Vec<String>, Vec<(String, String)>, Option<String>) {
        // (option, values): later values of a single-valued option replace
        // earlier ones; list options (sysctl, variant) accumulate.
        let mut opts: Vec<(String, Vec<Value>)> = Vec::new();
        let mut fio = Vec::new();
        let mut subs: Vec<(String, String)> = Vec::new();
        let mut add = |name: &str, v: &Value, base: bool| {
            if let Some(k) = name.strip_prefix("sysctl.") {
                // A value, never a bare flag: `sysctl.k = true` is k=true.
                let v = Value {
                    text: format!("{k}={}", v.text),
                    flag: None,
                    ..v.clone()
                };
                return push(&mut opts, "sysctl", v, true);
            }
            if let Some(o) = name.strip_prefix("fio.") {
                fio.retain(|(k, _): &(String, String)| k != o);
                fio.push((o.to_string(), v.text.clone()));
                return;
            }
            if let Some(n) = name.strip_prefix("scenario.") {
                subs.retain(|(k, _)| k != n);
                subs.push((n.to_string(), v.text.clone()));
                return;
            }
            if name == "set" {
                // compare's --set: variants, plus the LRU by name.
                let (lru, variants) = foliosim::mm::patches::split_set(&v.text);
                let value = |tok: &str| Value {
                    text: tok.to_string(),
                    flag: None,
                    ..v.clone()
                };
                if let Some(l) = lru {
                    push(&mut opts, "lru", value(l), false);
                }
                for tok in variants {
                    push(&mut opts, "variant", value(tok), true);
                }
                return;
            }
            // Base lists (several --variant) keep every entry.
            push(
                &mut opts,
                name,
                v.clone(),
                base || name == "variant" || name == "sysctl",
            );
        };
        fn push(opts: &mut Vec<(String, Vec<Value>)>, name: &str, v: Value, accumulate: bool) {
            match opts.iter_mut().find(|(n, _)| n == name) {
                Some((_, vs)) if accumulate => vs.push(v),
                Some((_, vs)) => *vs = vec![v],
                None => opts.push((name.to_string(), vec![v])),
            }
        }
        for (name, v) in &self.base {
            add(name, v, true);
        }
        for (name, v) in values {
            if *name != "seed" {
                add(name, v, false);
            }
        }
        let mut argv = self.workload.clone();
        for (name, vs) in &opts {
            for v in vs {
                match v.flag {
                    Some(true) => argv.push(format!("--{name}")),
                    Some(false) => {}
                    None => argv.push(format!("--{name}={}", v.text)),
                }
            }
        }
        argv.push(format!("--seed={seed}"));
        let scenario = self.scenario.as_ref().map(|t| {
            let mut t = t.clone();
            for (n, v) in &subs {
                t = t.replace(&format!("${{{n}}}"), v);
            }
            t
        });
        (argv, fio, scenario)
    }

    fn point_values(&self, point: usize) -> Vec<(&str, &Value)> {
        self.params
            .iter()
            .map(String::as_str)
            .zip(self.points[point].0.iter())
            .collect()
    }

    fn execute(
        &self,
        values: &[(&str, &Value)],
        seed: u64,
        dry: bool,
    ) -> Result<Option<Report>, String> {
        let (argv, fio, scenario) = self.invocation(values, seed);
        if !fio.is_empty() && !self.is_fio() {
            return Err("fio.OPTION parameters need a fio workload".into());
        }
        crate::run_point(&argv, &fio, scenario.as_deref(), dry)
    }

    /// Checks every point without running it: first each parameter's
    /// values alone over the base (an error names that value's line and
    /// the parameter), then each point (its line, `point N`).
    pub fn check(&self) -> Result<(), String> {
        if let Err(e) = self.execute(&[], self.seed, true) {
            if self.params.is_empty() {
                return Err(err(&self.file, self.workload_line, "workload", e));
            }
        }
        let mut seen = BTreeSet::new();
        for (i, name) in self.params.iter().enumerate() {
            for (vals, _) in &self.points {
                let v = &vals[i];
                if !seen.insert((i, v.text.clone())) {
                    continue;
                }
                if name == "seed" {
                    if v.text.parse::<u64>().is_err() {
                        return Err(err(
                            &self.file,
                            v.line,
                            name,
                            "must be a non-negative integer",
                        ));
                    }
                    continue;
                }
                if let Err(e) = self.execute(&[(name, v)], self.seed, true) {
                    return Err(err(&self.file, v.line, name, e));
                }
            }
        }
        for p in 0..self.points.len() {
            let seed = self.seed(p, 0)?;
            if let Err(e) = self.execute(&self.point_values(p), seed, true) {
                return Err(err(&self.file, self.points[p].1, &format!("point {p}"), e));
            }
        }
        Ok(())
    }

    /// Runs one (point, repeat) and returns its table row: the column
    /// names and the values, as text.
    pub fn run_row(&self, point: usize, repeat: u64) -> Result<(Vec<String>, Vec<String>), String> {
        if point >= self.points.len() || repeat >= self.repeats {
            return Err(format!("{}: no point {point} repeat {repeat}", self.file));
        }
        let seed = self.seed(point, repeat)?;
        let r = self
            .execute(&self.point_values(point), seed, false)
            .map_err(|e| format!("{}: point {point} repeat {repeat}: {e}", self.file))?
            .expect("not a dry run");
        Ok(self.row(point, repeat, seed, &r))
    }

    /// The columns before the counters, with this point's values.
    fn key_columns(&self, point: usize, repeat: u64, seed: u64) -> (Vec<String>, Vec<String>) {
        let mut names = vec!["point".to_string(), "repeat".into(), "seed".into()];
        let mut vals = vec![point.to_string(), repeat.to_string(), seed.to_string()];
        for (n, v) in self.point_values(point) {
            names.push(format!("param.{n}"));
            vals.push(v.text.clone());
        }
        (names, vals)
    }

    fn row(
        &self,
        point: usize,
        repeat: u64,
        seed: u64,
        rep: &Report,
    ) -> (Vec<String>, Vec<String>) {
        let r = rep.run();
        let (mut names, mut vals) = self.key_columns(point, repeat, seed);
        names.push("elapsed_s".into());
        vals.push(format!("{}", r.elapsed_ns as f64 / 1e9));
        if self.is_fio() {
            let rb: u64 = r.jobs.iter().map(|j| j.read.io_bytes).sum();
            let wb: u64 = r.jobs.iter().map(|j| j.write.io_bytes).sum();
            names.extend(["fio.read_bytes".to_string(), "fio.write_bytes".into()]);
            vals.extend([rb.to_string(), wb.to_string()]);
        }
        for (k, v) in &r.memcg {
            names.push(format!("memcg.{k}"));
            vals.push(v.to_string());
        }
        for (k, v) in &r.vmstat {
            names.push(format!("vmstat.{k}"));
            vals.push(v.to_string());
        }
        (names, vals)
    }

    /// Which parameters have integer values at every point (integer
    /// columns in Parquet).
    fn int_params(&self) -> Vec<bool> {
        (0..self.params.len())
            .map(|i| self.points.iter().all(|(v, _)| v[i].int))
            .collect()
    }
}

/// One CSV line (with its newline) of `fields`.
pub fn csv_line(fields: &[String]) -> String {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    w.write_record(fields).expect("writes to memory");
    String::from_utf8(w.into_inner().expect("flushes to memory")).expect("fields are UTF-8")
}

/// The journal: the header, then one line per finished (point, repeat) in
/// the order they finished.
struct Journal {
    path: PathBuf,
    file: File,
    header: Option<Vec<String>>,
    done: BTreeSet<(usize, u64)>,
}

impl Journal {
    /// Opens (or creates) the journal, dropping a torn last line (a kill
    /// during its write) and checking each recorded row against the grid.
    fn open(path: &Path, grid: &Grid) -> Result<Journal, String> {
        let name = path.display().to_string();
        let mut header = None;
        let mut done = BTreeSet::new();
        if let Ok(bytes) = std::fs::read(path) {
            let keep = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
            let mut rd = csv::ReaderBuilder::new()
                .has_headers(false)
                .flexible(true)
                .from_reader(&bytes[..keep]);
            for (i, rec) in rd.records().enumerate() {
                let rec = rec.map_err(|e| format!("{name}: {e}"))?;
                let fields: Vec<String> = rec.iter().map(String::from).collect();
                if i == 0 {
                    header = Some(fields);
                    continue;
                }
                let h = header.as_ref().expect("header first");
                let bad = |why: &str| {
                    format!("{name}:{}: {why}: the journal is not this grid's (remove it, or give another --out)", i + 1)
                };
                if fields.len() != h.len() {
                    return Err(bad("wrong number of fields"));
                }
                let (Ok(p), Ok(r)) = (fields[0].parse::<usize>(), fields[1].parse::<u64>()) else {
                    return Err(bad("bad point or repeat"));
                };
                if p >= grid.len() || r >= grid.repeats {
                    return Err(bad("a point or repeat the grid does not have"));
                }
                let seed = grid.seed(p, r)?;
                let (kn, kv) = grid.key_columns(p, r, seed);
                if h[..kn.len().min(h.len())] != kn[..] || fields[..kv.len()] != kv[..] {
                    return Err(bad("its parameters differ"));
                }
                if !done.insert((p, r)) {
                    return Err(bad("a row recorded twice"));
                }
            }
            // Cut the torn tail so the next row starts on a fresh line.
            let f = OpenOptions::new()
                .write(true)
                .open(path)
                .map_err(|e| format!("{name}: {e}"))?;
            f.set_len(keep as u64).map_err(|e| format!("{name}: {e}"))?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| format!("{name}: {e}"))?;
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            header,
            done,
        })
    }

    /// Appends a row (the header first, if the journal has none) in one
    /// write, then fsyncs: a row is either wholly recorded or torn and
    /// dropped on resume.
    fn append(
        &mut self,
        point: usize,
        repeat: u64,
        names: &[String],
        vals: &[String],
    ) -> Result<(), String> {
        let name = self.path.display().to_string();
        let mut text = String::new();
        match &self.header {
            None => {
                text.push_str(&csv_line(names));
                self.header = Some(names.to_vec());
            }
            Some(h) if h[..] != names[..] => {
                return Err(format!("{name}: the journal's columns differ from this run's (remove it, or give another --out)"))
            }
            Some(_) => {}
        }
        text.push_str(&csv_line(vals));
        self.file
            .write_all(text.as_bytes())
            .map_err(|e| format!("{name}: {e}"))?;
        self.file.sync_data().map_err(|e| format!("{name}: {e}"))?;
        self.done.insert((point, repeat));
        Ok(())
    }
}

/// What a sweep did.
pub struct Outcome {
    pub csv: PathBuf,
    pub parquet: PathBuf,
    /// Rows run now, and rows found in the journal.
    pub ran: usize,
    pub resumed: usize,
}

/// The output prefix: `--out`, or the grid's path without `.toml`.
pub fn prefix(a: &SweepArgs) -> PathBuf {
    a.out.clone().unwrap_or_else(|| a.grid.with_extension(""))
}

fn with_suffix(prefix: &Path, suffix: &str) -> PathBuf {
    let mut s = prefix.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Runs a sweep: checks the grid, resumes its journal, runs what is
/// missing and writes the sorted CSV and Parquet files.
pub fn sweep(a: &SweepArgs) -> Result<Outcome, String> {
    crate::trace_args::progress::disable();
    let grid = Grid::load(&a.grid)?;
    grid.check()?;
    let prefix = prefix(a);
    let jpath = with_suffix(&prefix, ".journal.csv");
    if a.resume && !jpath.exists() {
        return Err(format!(
            "--resume: no journal {} to resume",
            jpath.display()
        ));
    }
    let mut journal = Journal::open(&jpath, &grid)?;
    let resumed = journal.done.len();
    let pending: Vec<(usize, u64)> = (0..grid.len())
        .flat_map(|p| (0..grid.repeats).map(move |r| (p, r)))
        .filter(|k| !journal.done.contains(k))
        .collect();
    let ran = pending.len();
    match &a.ray {
        None => {
            let jobs = a
                .jobs
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
                .max(1);
            run_local(&grid, &pending, jobs, &mut journal)?;
        }
        Some(addr) => run_ray(a, addr, &pending, &mut journal)?,
    }
    let (csv, parquet) = (
        with_suffix(&prefix, ".csv"),
        with_suffix(&prefix, ".parquet"),
    );
    finish(&grid, &jpath, &csv, &parquet)?;
    Ok(Outcome {
        csv,
        parquet,
        ran,
        resumed,
    })
}

type RowResult = Result<(Vec<String>, Vec<String>), String>;

fn run_local(
    grid: &Grid,
    pending: &[(usize, u64)],
    jobs: usize,
    journal: &mut Journal,
) -> Result<(), String> {
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let (tx, rx) = mpsc::channel::<((usize, u64), RowResult)>();
    std::thread::scope(|s| {
        for _ in 0..jobs.min(pending.len()) {
            let tx = tx.clone();
            let (next, stop) = (&next, &stop);
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= pending.len() || stop.load(Ordering::Relaxed) {
                    break;
                }
                let (p, r) = pending[i];
                if tx.send(((p, r), grid.run_row(p, r))).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for ((p, r), res) in rx {
            let res = res.and_then(|(names, vals)| journal.append(p, r, &names, &vals));
            if let Err(e) = res {
                stop.store(true, Ordering::Relaxed);
                return Err(e);
            }
        }
        Ok(())
    })
}

/// Each pending (point, repeat) a Ray task: the foliosim Python package's
/// driver (`python -m foliosim._ray_driver`) submits them and prints one
/// JSON object per finished row; the rows are journalled here as local
/// ones are.
fn run_ray(
    a: &SweepArgs,
    addr: &str,
    pending: &[(usize, u64)],
    journal: &mut Journal,
) -> Result<(), String> {
    use std::process::{Command, Stdio};
    if pending.is_empty() {
        return Ok(());
    }
    let grid = std::fs::canonicalize(&a.grid).map_err(|e| format!("{}: {e}", a.grid.display()))?;
    let mut child = Command::new(&a.python)
        .args(["-m", "foliosim._ray_driver", "--address", addr])
        .arg(&grid)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("--ray: cannot start {}: {e}", a.python))?;
    {
        let mut stdin = child.stdin.take().expect("piped");
        let list: String = pending.iter().map(|(p, r)| format!("{p} {r}\n")).collect();
        stdin
            .write_all(list.as_bytes())
            .map_err(|e| format!("--ray: {e}"))?;
    }
    let out = BufReader::new(child.stdout.take().expect("piped"));
    let mut got = 0;
    for line in out.lines() {
        let line = line.map_err(|e| format!("--ray: {e}"))?;
        let v: serde_json::Value = serde_json::from_str(&line)
            .map_err(|e| format!("--ray: driver printed '{line}': {e}"))?;
        if let Some(e) = v.get("error").and_then(|e| e.as_str()) {
            let _ = child.kill();
            return Err(format!("--ray: {e}"));
        }
        let strs = |k: &str| -> Option<Vec<String>> {
            v.get(k)?
                .as_array()?
                .iter()
                .map(|x| x.as_str().map(String::from))
                .collect()
        };
        let (Some(p), Some(r), Some(names), Some(vals)) = (
            v.get("point").and_then(|x| x.as_u64()),
            v.get("repeat").and_then(|x| x.as_u64()),
            strs("names"),
            strs("values"),
        ) else {
            let _ = child.kill();
            return Err(format!("--ray: driver printed '{line}'"));
        };
        journal.append(p as usize, r, &names, &vals)?;
        got += 1;
    }
    let status = child.wait().map_err(|e| format!("--ray: {e}"))?;
    if !status.success() || got != pending.len() {
        return Err(format!(
            "--ray: the driver ended ({status}) after {got} of {} rows",
            pending.len()
        ));
    }
    Ok(())
}

/// Reads the complete journal, sorts it by (point, repeat) and writes the
/// final tables, each through a temporary file renamed into place.
fn finish(grid: &Grid, jpath: &Path, csv_path: &Path, parquet_path: &Path) -> Result<(), String> {
    let jname = jpath.display().to_string();
    let mut rd = csv::ReaderBuilder::new()
        .has_headers(true)
        .from_path(jpath)
        .map_err(|e| format!("{jname}: {e}"))?;
    let header: Vec<String> = rd
        .headers()
        .map_err(|e| format!("{jname}: {e}"))?
        .iter()
        .map(String::from)
        .collect();
    let mut rows: Vec<((usize, u64), Vec<String>)> = Vec::new();
    for rec in rd.records() {
        let rec = rec.map_err(|e| format!("{jname}: {e}"))?;
        let f: Vec<String> = rec.iter().map(String::from).collect();
        let key = (
            f[0].parse().map_err(|_| format!("{jname}: bad point"))?,
            f[1].parse().map_err(|_| format!("{jname}: bad repeat"))?,
        );
        rows.push((key, f));
    }
    rows.sort_by_key(|r| r.0);
    let expect = grid.len() * grid.repeats as usize;
    if rows.len() != expect || rows.windows(2).any(|w| w[0].0 == w[1].0) {
        return Err(format!(
            "{jname}: {} rows for {expect} (point, repeat) pairs",
            rows.len()
        ));
    }
    let mut text = csv_line(&header);
    for (_, f) in &rows {
        text.push_str(&csv_line(f));
    }
    write_atomically(csv_path, text.as_bytes())?;
    let table: Vec<Vec<String>> = rows.into_iter().map(|r| r.1).collect();
    let bytes =
        crate::sweep_parquet::encode(&header, &table, grid.params.len(), &grid.int_params())
            .map_err(|e| format!("{}: {e}", parquet_path.display()))?;
    write_atomically(parquet_path, &bytes)
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let name = path.display().to_string();
    let tmp = with_suffix(path, ".tmp");
    let mut f = File::create(&tmp).map_err(|e| format!("{name}: {e}"))?;
    f.write_all(bytes).map_err(|e| format!("{name}: {e}"))?;
    f.sync_all().map_err(|e| format!("{name}: {e}"))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("{name}: {e}"))
}

/// `foliosim sweep`.
pub fn run(a: &SweepArgs) -> Result<(), String> {
    let o = sweep(a)?;
    println!(
        "sweep: {} rows ({} run now, {} from the journal): {} {}",
        o.ran + o.resumed,
        o.ran,
        o.resumed,
        o.csv.display(),
        o.parquet.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(text: &str) -> Grid {
        Grid::parse(text, "g.toml", Path::new("/nonexistent")).unwrap()
    }

    #[test]
    fn a_point_becomes_the_command_line_with_base_values_replaced_or_added() {
        let g = grid(
            "workload = [\"fio\", \"--name=j\", \"--size=1M\"]\nseed = 10\n\
             [base]\nlru = \"classic\"\nvariant = [\"arm64\"]\nsysctl.vm.swappiness = 60\ncheck-invariants = true\n\
             [vary]\nset = [\"mglru+p1\"]\nsysctl.vm.dirty_ratio = [true]\nfio.bs = [\"8k\"]\n",
        );
        let (argv, fio, scenario) = g.invocation(&g.point_values(0), g.seed(0, 2).unwrap());
        assert_eq!(
            argv,
            [
                "fio",
                "--name=j",
                "--size=1M",
                // The set's LRU replaces the base's; its variant adds to
                // the base's; sysctls accumulate in order (a boolean is a
                // value there, not a flag); a true flag is bare.
                "--lru=mglru",
                "--variant=arm64",
                "--variant=p1",
                "--sysctl=vm.swappiness=60",
                "--sysctl=vm.dirty_ratio=true",
                "--check-invariants",
                "--seed=12",
            ]
        );
        assert_eq!(fio, [("bs".to_string(), "8k".to_string())]);
        assert_eq!(scenario, None);
    }

    #[test]
    fn the_product_varies_the_first_parameter_slowest_then_explicit_points_follow() {
        let g = grid(
            "workload = [\"fio\", \"--name=j\"]\n[vary]\nmemory = [\"1G\", \"2G\"]\nseed = [1, 5, 9]\n\
             [[point]]\nmemory = \"4G\"\nseed = 3\n",
        );
        assert_eq!(g.params, ["memory", "seed"]);
        let rows: Vec<(String, u64)> = (0..g.len())
            .map(|p| (g.points[p].0[0].text.clone(), g.seed(p, 1).unwrap()))
            .collect();
        let want = [
            ("1G", 2),
            ("1G", 6),
            ("1G", 10),
            ("2G", 2),
            ("2G", 6),
            ("2G", 10),
            ("4G", 4),
        ];
        assert_eq!(rows.len(), want.len());
        for (r, w) in rows.iter().zip(want) {
            assert_eq!((r.0.as_str(), r.1), w);
        }
        // Integer columns only where every point has an integer.
        assert_eq!(g.int_params(), [false, true]);
    }
}
