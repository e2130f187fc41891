//! The TOML form of a scenario (docs/scenarios.md is its reference): a
//! spanned TOML document, read key by key so that every refusal names the
//! line and key it is about. Cross-references (cgroups, files, maps,
//! barriers) are checked afterwards by `check`.

use super::*;
use crate::fio::ParseError;
use crate::units::{parse_size, parse_time_ns};
use std::ops::Range;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

type Val<'i> = Spanned<DeValue<'i>>;

/// A TOML table's leaves with nested plain tables flattened into dotted
/// keys (`memory.max = "1G"`, `sysctl.vm.swappiness = 10`), each with its
/// key's span, in file order. Shared with the sweep's grid files.
pub fn flatten_table<'a, 'i>(t: &'a DeTable<'i>) -> Vec<(String, Range<usize>, &'a Val<'i>)> {
    fn walk<'a, 'i>(
        prefix: &str,
        t: &'a DeTable<'i>,
        out: &mut Vec<(String, Range<usize>, &'a Val<'i>)>,
    ) {
        for (k, v) in t.iter() {
            let key = if prefix.is_empty() {
                k.get_ref().to_string()
            } else {
                format!("{prefix}.{}", k.get_ref())
            };
            match v.get_ref() {
                DeValue::Table(sub) => walk(&key, sub, out),
                _ => out.push((key, k.span(), v)),
            }
        }
    }
    let mut out = Vec::new();
    walk("", t, &mut out);
    out.sort_by_key(|e| e.1.start);
    out
}

/// Device profiles the model knows (foliosim's blkdev::PROFILES; the
/// workload crate cannot depend on the model, so the names are repeated).
const DEVICES: &[&str] = &["nvme", "sata-ssd", "hdd", "virtio", "ramdisk", "zram"];

/// Parses and validates a scenario file's text; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Scenario, ParseError> {
    let cx = Cx::new(text, file);
    let doc = DeTable::parse(text).map_err(|e| {
        let line = e.span().map_or(1, |s| cx.line(s.start));
        // toml's message spans several lines (a source excerpt): keep its
        // first line, the reason.
        let msg = e
            .message()
            .lines()
            .next()
            .unwrap_or("invalid TOML")
            .to_string();
        cx.error_at(line, "toml", format!("invalid TOML: {msg}"))
    })?;
    let root_span = doc.span();
    let mut root = Tbl::new(&cx, doc.get_ref(), root_span, "the top level")
        .knows(&["machine", "cgroup", "file", "process"]);
    let mut sc = Scenario {
        file: file.to_string(),
        ..Default::default()
    };
    if let Some((_, v)) = root.take(&["machine"]) {
        sc.machine = machine(&cx, v)?;
    }
    if let Some((k, v)) = root.take(&["cgroup"]) {
        for t in tables(&cx, v, k)? {
            sc.cgroups.push(cgroup(&cx, t)?);
        }
    }
    if let Some((k, v)) = root.take(&["file"]) {
        for t in tables(&cx, v, k)? {
            sc.files.push(file_spec(&cx, t)?);
        }
    }
    cx.cgroups
        .replace(sc.cgroups.iter().map(|c| c.path.clone()).collect());
    cx.files
        .replace(sc.files.iter().map(|f| f.name.clone()).collect());
    if let Some((k, v)) = root.take(&["process"]) {
        for t in tables(&cx, v, k)? {
            sc.processes.push(process(&cx, t)?);
        }
    }
    root.finish()?;
    sc.number_steps();
    super::check::check(&cx, &mut sc)?;
    if sc.processes.is_empty() {
        return Err(cx.error_at(
            1,
            "process",
            "a scenario needs at least one [[process]]".into(),
        ));
    }
    Ok(sc)
}

/// Reads and parses a scenario file; errors name it as given.
pub fn parse_file(path: &std::path::Path) -> Result<Scenario, ParseError> {
    let label = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ParseError {
        file: label.clone(),
        line: 0,
        option: "scenario file".into(),
        msg: format!("cannot read: {e}"),
    })?;
    parse(&text, &label)
}

/// Positions to lines, and errors in the fio ParseError form.
pub(crate) struct Cx<'a> {
    file: &'a str,
    line_starts: Vec<usize>,
    /// Declared cgroup paths and file names, known before the processes
    /// are read so a reference is refused at its own line.
    cgroups: std::cell::RefCell<Vec<String>>,
    files: std::cell::RefCell<Vec<String>>,
    /// Loops and forks around the step being read.
    depth: std::cell::Cell<u32>,
}

impl<'a> Cx<'a> {
    fn new(text: &str, file: &'a str) -> Self {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Cx {
            file,
            line_starts,
            cgroups: Default::default(),
            files: Default::default(),
            depth: Default::default(),
        }
    }

    /// 1-based line of a byte offset.
    pub(crate) fn line(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= offset).max(1)
    }

    pub(crate) fn error_at(&self, line: usize, key: &str, msg: String) -> ParseError {
        ParseError {
            file: self.file.to_string(),
            line,
            option: key.to_string(),
            msg,
        }
    }

    pub(crate) fn error(&self, span: &Range<usize>, key: &str, msg: String) -> ParseError {
        self.error_at(self.line(span.start), key, msg)
    }
}

/// One table's entries in file order, each taken at most once; `finish`
/// refuses whatever was not taken, naming the keys that table knows.
struct Tbl<'c, 'a, 'i> {
    cx: &'c Cx<'c>,
    /// (key, key's span, value), in the order they appear in the file.
    entries: Vec<(String, Range<usize>, &'a Val<'i>)>,
    taken: Vec<bool>,
    span: Range<usize>,
    what: &'static str,
    /// The keys this table knows ('|' between spellings of one key), for
    /// messages; set before the first `req` so a missing key caused by a
    /// misspelt one is reported as the misspelling.
    known: &'static [&'static str],
}

impl<'c, 'a, 'i> Tbl<'c, 'a, 'i> {
    fn new(cx: &'c Cx<'c>, t: &'a DeTable<'i>, span: Range<usize>, what: &'static str) -> Self {
        let mut entries: Vec<_> = t
            .iter()
            .map(|(k, v)| (k.get_ref().to_string(), k.span(), v))
            .collect();
        entries.sort_by_key(|e| e.1.start);
        let taken = vec![false; entries.len()];
        Tbl {
            cx,
            entries,
            taken,
            span,
            what,
            known: &[],
        }
    }

    /// Like `new`, with nested plain tables flattened into dotted keys, so
    /// `memory.max = "1G"` (a dotted key: a table `memory`) reads as the
    /// cgroup file name "memory.max".
    fn flat(cx: &'c Cx<'c>, t: &'a DeTable<'i>, span: Range<usize>, what: &'static str) -> Self {
        let entries = flatten_table(t);
        let taken = vec![false; entries.len()];
        Tbl {
            cx,
            entries,
            taken,
            span,
            what,
            known: &[],
        }
    }

    /// The value of the first untaken key among `names` (aliases of one
    /// key), with the spelling used.
    fn take(&mut self, names: &[&'static str]) -> Option<(&'static str, &'a Val<'i>)> {
        let i = (0..self.entries.len())
            .find(|&i| !self.taken[i] && names.contains(&self.entries[i].0.as_str()))?;
        self.taken[i] = true;
        let name = names.iter().copied().find(|n| *n == self.entries[i].0)?;
        Some((name, self.entries[i].2))
    }

    /// `take` that refuses two spellings of one key.
    fn take1(
        &mut self,
        names: &[&'static str],
    ) -> Result<Option<(&'static str, &'a Val<'i>)>, ParseError> {
        let first = self.take(names);
        if let Some((k1, _)) = first {
            if let Some((k2, v2)) = self.take(names) {
                return Err(self.cx.error(
                    &v2.span(),
                    k2,
                    format!("given twice (as '{k1}' and '{k2}')"),
                ));
            }
        }
        Ok(first)
    }

    fn knows(mut self, known: &'static [&'static str]) -> Self {
        self.known = known;
        self
    }

    fn req(&mut self, names: &[&'static str]) -> Result<(&'static str, &'a Val<'i>), ParseError> {
        if let Some(v) = self.take1(names)? {
            return Ok(v);
        }
        self.unknown()?;
        Err({
            self.cx.error(
                &self.span,
                names[0],
                format!("missing in {} (required)", self.what),
            )
        })
    }

    /// The first key (in file order) that this table does not know.
    fn unknown(&self) -> Result<(), ParseError> {
        for e in &self.entries {
            let known = self.known.iter().any(|k| k.split('|').any(|s| s == e.0));
            if !known {
                return Err(self.cx.error(
                    &e.1,
                    &e.0,
                    format!(
                        "unknown key in {} (known: {})",
                        self.what,
                        self.known.join(", ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Refuses what was not taken: an unknown key, or a known one that
    /// does not apply (the second spelling of a key was refused earlier).
    fn finish(self) -> Result<(), ParseError> {
        self.unknown()?;
        for (i, e) in self.entries.iter().enumerate() {
            if !self.taken[i] {
                return Err(self.cx.error(
                    &e.1,
                    &e.0,
                    format!("does not apply here in {}", self.what),
                ));
            }
        }
        Ok(())
    }
}

/// The tables of an array of tables (`[[x]]` or `x = [{...}, ...]`); a lone
/// table `[x]` is taken as an array of one.
fn tables<'a, 'i>(
    cx: &Cx,
    v: &'a Val<'i>,
    key: &str,
) -> Result<Vec<(&'a DeTable<'i>, Range<usize>)>, ParseError> {
    match v.get_ref() {
        DeValue::Array(a) => a
            .iter()
            .map(|e| match e.get_ref() {
                DeValue::Table(t) => Ok((t, e.span())),
                _ => Err(cx.error(
                    &e.span(),
                    key,
                    format!("expected a table (write [[{key}]] or {{...}})"),
                )),
            })
            .collect(),
        DeValue::Table(t) => Ok(vec![(t, v.span())]),
        _ => Err(cx.error(&v.span(), key, format!("expected [[{key}]] tables"))),
    }
}

fn kind(v: &DeValue) -> &'static str {
    match v {
        DeValue::String(_) => "a string",
        DeValue::Integer(_) => "an integer",
        DeValue::Float(_) => "a float",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Datetime(_) => "a date",
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

fn string<'a>(cx: &Cx, k: &str, v: &'a Val) -> Result<&'a str, ParseError> {
    match v.get_ref() {
        DeValue::String(s) => Ok(s.as_ref()),
        other => Err(cx.error(
            &v.span(),
            k,
            format!("expected a string, found {}", kind(other)),
        )),
    }
}

fn int(cx: &Cx, k: &str, v: &Val) -> Result<i64, ParseError> {
    match v.get_ref() {
        DeValue::Integer(i) => {
            let digits: String = i.as_str().chars().filter(|c| *c != '_').collect();
            i64::from_str_radix(&digits, i.radix()).map_err(|_| {
                cx.error(
                    &v.span(),
                    k,
                    format!("integer '{}' out of range", i.as_str()),
                )
            })
        }
        other => Err(cx.error(
            &v.span(),
            k,
            format!("expected an integer, found {}", kind(other)),
        )),
    }
}

fn int_in(cx: &Cx, k: &str, v: &Val, lo: i64, hi: i64) -> Result<i64, ParseError> {
    let n = int(cx, k, v)?;
    if n < lo || n > hi {
        return Err(cx.error(&v.span(), k, format!("{n} is out of range ({lo}..={hi})")));
    }
    Ok(n)
}

/// A count: 1 or more.
fn count(cx: &Cx, k: &str, v: &Val) -> Result<u64, ParseError> {
    int_in(cx, k, v, 1, i64::MAX).map(|n| n as u64)
}

fn count32(cx: &Cx, k: &str, v: &Val) -> Result<u32, ParseError> {
    int_in(cx, k, v, 1, u32::MAX as i64).map(|n| n as u32)
}

fn boolean(cx: &Cx, k: &str, v: &Val) -> Result<bool, ParseError> {
    match v.get_ref() {
        DeValue::Boolean(b) => Ok(*b),
        other => Err(cx.error(
            &v.span(),
            k,
            format!("expected true or false, found {}", kind(other)),
        )),
    }
}

/// A size: "4k", "1G", "600M" (powers of 1024) or an integer of bytes.
fn size(cx: &Cx, k: &str, v: &Val) -> Result<u64, ParseError> {
    match v.get_ref() {
        DeValue::String(s) => parse_size(s).map_err(|e| cx.error(&v.span(), k, e)),
        DeValue::Integer(_) => int_in(cx, k, v, 0, i64::MAX).map(|n| n as u64),
        other => Err(cx.error(
            &v.span(),
            k,
            format!("expected a size such as \"1G\", found {}", kind(other)),
        )),
    }
}

fn nonzero_size(cx: &Cx, k: &str, v: &Val) -> Result<u64, ParseError> {
    let n = size(cx, k, v)?;
    if n == 0 {
        return Err(cx.error(&v.span(), k, "size must be more than 0".into()));
    }
    Ok(n)
}

/// A duration with its unit ("120ms", "10s", "1m"): a bare number would be
/// ambiguous between fio's seconds and its microseconds, so it is refused.
fn time(cx: &Cx, k: &str, v: &Val) -> Result<u64, ParseError> {
    let s = match v.get_ref() {
        DeValue::String(s) => s.as_ref(),
        other => {
            return Err(cx.error(
                &v.span(),
                k,
                format!(
                    "expected a time with a unit such as \"120ms\", found {}",
                    kind(other)
                ),
            ))
        }
    };
    let t = s.trim();
    if t.is_empty() || t.chars().all(|c| c.is_ascii_digit()) {
        return Err(cx.error(
            &v.span(),
            k,
            format!("time '{s}' needs a unit (ns, us, ms, s, m, h)"),
        ));
    }
    parse_time_ns(t, 1).map_err(|e| cx.error(&v.span(), k, e))
}

fn nonzero_time(cx: &Cx, k: &str, v: &Val) -> Result<u64, ParseError> {
    let n = time(cx, k, v)?;
    if n == 0 {
        return Err(cx.error(&v.span(), k, "time must be more than 0".into()));
    }
    Ok(n)
}

/// `append` is O_APPEND's end of file, shared by the file's writers: a
/// write step's pattern only.
fn append_for_writes(
    cx: &Cx,
    k: &str,
    v: &Val,
    pat: &Pattern,
    write: bool,
) -> Result<(), ParseError> {
    if *pat == Pattern::Append && !write {
        return Err(cx.error(
            &v.span(),
            k,
            "pattern 'append' is for write steps (each write goes after the last one any writer appended to the file)".to_string(),
        ));
    }
    Ok(())
}

/// The pattern names of docs/scenarios.md.
pub(crate) fn parse_pattern(s: &str) -> Result<Pattern, String> {
    let (name, arg) = match s.split_once(':') {
        Some((n, a)) => (n.trim(), Some(a.trim())),
        None => (s.trim(), None),
    };
    let num = |a: Option<&str>| -> Result<f64, String> {
        let a = a.ok_or_else(|| format!("pattern '{s}' needs a value ({name}:N)"))?;
        match a.parse::<f64>() {
            Ok(x) if x.is_finite() => Ok(x),
            _ => Err(format!("bad number '{a}' in pattern '{s}'")),
        }
    };
    let int = |a: Option<&str>| -> Result<u64, String> {
        let a = a.ok_or_else(|| format!("pattern '{s}' needs a value ({name}:N)"))?;
        a.parse::<u64>()
            .map_err(|_| format!("bad integer '{a}' in pattern '{s}'"))
    };
    let no_arg = |p: Pattern| -> Result<Pattern, String> {
        match arg {
            None => Ok(p),
            Some(_) => Err(format!("pattern '{name}' takes no value")),
        }
    };
    match name {
        "seq" | "sequential" => no_arg(Pattern::Seq),
        "append" => no_arg(Pattern::Append),
        "random" | "rand" => no_arg(Pattern::Random),
        "zipf" => {
            let theta = num(arg)?;
            if theta <= 0.0 || theta == 1.0 {
                return Err(format!("zipf theta must be > 0 and not 1 (got {theta})"));
            }
            Ok(Pattern::Zipf { theta })
        }
        "ycsb" => {
            let theta = if arg.is_some() { num(arg)? } else { 0.99 };
            // YCSB's zeta-based generator divides by (1 - theta).
            if !(theta > 0.0 && theta < 1.0) {
                return Err(format!("ycsb theta must be in (0, 1) (got {theta})"));
            }
            Ok(Pattern::Ycsb { theta })
        }
        "nurand" => {
            let a = int(arg)?;
            if a == 0 {
                return Err("nurand A must be more than 0 (TPC-C uses 255, 1023, 8191)".into());
            }
            Ok(Pattern::Nurand { a })
        }
        "hotcold" => {
            let a = arg.ok_or_else(|| format!("pattern '{s}' needs hotcold:HOT_PCT/SIZE_PCT"))?;
            let (h, z) = a
                .split_once('/')
                .ok_or_else(|| format!("pattern '{s}' needs hotcold:HOT_PCT/SIZE_PCT, e.g. hotcold:90/10"))?;
            let hot_pct: u32 = h.trim().parse().map_err(|_| format!("bad percentage '{h}' in '{s}'"))?;
            let hot_size_pct: u32 =
                z.trim().parse().map_err(|_| format!("bad percentage '{z}' in '{s}'"))?;
            if hot_pct > 100 {
                return Err(format!("hot access share {hot_pct}% is over 100%"));
            }
            if hot_size_pct == 0 || hot_size_pct >= 100 {
                return Err(format!("hot size {hot_size_pct}% must be in 1..=99"));
            }
            Ok(Pattern::HotCold {
                hot_pct,
                hot_size_pct,
            })
        }
        "stride" => {
            let stride = int(arg)?;
            if stride == 0 {
                return Err("stride must be 1 page or more".into());
            }
            Ok(Pattern::Stride { stride })
        }
        _ => Err(format!(
            "unknown pattern '{s}' (seq, append, random, zipf:THETA, ycsb[:THETA], nurand:A, hotcold:HOT/SIZE, stride:PAGES)"
        )),
    }
}

fn pattern(cx: &Cx, k: &str, v: &Val) -> Result<Pattern, ParseError> {
    parse_pattern(string(cx, k, v)?).map_err(|e| cx.error(&v.span(), k, e))
}

fn machine(cx: &Cx, v: &Val) -> Result<MachineDefaults, ParseError> {
    let t = match v.get_ref() {
        DeValue::Table(t) => t,
        other => {
            return Err(cx.error(
                &v.span(),
                "machine",
                format!("expected a [machine] table, found {}", kind(other)),
            ))
        }
    };
    let mut t = Tbl::new(cx, t, v.span(), "[machine]").knows(&[
        "memory",
        "swap",
        "lru",
        "swappiness|vm.swappiness",
        "device",
        "read_ahead_kb",
        "zram_ratio",
        "tmpfs_huge",
        "seed",
        "sysctl",
    ]);
    let mut m = MachineDefaults::default();
    if let Some((k, v)) = t.take1(&["memory"])? {
        m.memory = Some(nonzero_size(cx, k, v)?);
    }
    if let Some((k, v)) = t.take1(&["swap"])? {
        let s = string(cx, k, v)?;
        check_swap(s).map_err(|e| cx.error(&v.span(), k, e))?;
        m.swap = Some(s.to_string());
    }
    if let Some((k, v)) = t.take1(&["lru"])? {
        let s = string(cx, k, v)?;
        if s != "classic" && s != "mglru" {
            return Err(cx.error(&v.span(), k, format!("unknown lru '{s}' (classic, mglru)")));
        }
        m.lru = Some(s.to_string());
    }
    if let Some((k, v)) = t.take1(&["swappiness", "vm.swappiness"])? {
        m.swappiness = Some(int_in(cx, k, v, 0, 200)? as u32);
    }
    if let Some((k, v)) = t.take1(&["device"])? {
        let s = string(cx, k, v)?;
        if !DEVICES.contains(&s) {
            return Err(cx.error(
                &v.span(),
                k,
                format!("unknown device '{s}' ({})", DEVICES.join(", ")),
            ));
        }
        m.device = Some(s.to_string());
    }
    if let Some((k, v)) = t.take1(&["read_ahead_kb"])? {
        m.read_ahead_kb = Some(int_in(cx, k, v, 0, 1 << 30)? as u64);
    }
    if let Some((k, v)) = t.take1(&["zram_ratio"])? {
        let r = match v.get_ref() {
            DeValue::Float(_) | DeValue::Integer(_) => {
                let s = match v.get_ref() {
                    DeValue::Float(f) => f.as_str().replace('_', ""),
                    _ => int(cx, k, v)?.to_string(),
                };
                s.parse::<f64>().ok()
            }
            _ => None,
        };
        match r {
            Some(r) if r.is_finite() && r >= 1.0 => m.zram_ratio = Some(r),
            _ => return Err(cx.error(
                &v.span(),
                k,
                "expected a compression ratio of 1.0 or more (uncompressed/compressed, e.g. 3.0)"
                    .into(),
            )),
        }
    }
    if let Some((k, v)) = t.take1(&["tmpfs_huge"])? {
        let s = string(cx, k, v)?;
        if !["never", "always", "within_size", "advise"].contains(&s) {
            return Err(cx.error(
                &v.span(),
                k,
                format!("unknown huge= option '{s}' (never, always, within_size, advise)"),
            ));
        }
        m.tmpfs_huge = Some(s.to_string());
    }
    if let Some((k, v)) = t.take1(&["seed"])? {
        m.seed = Some(int_in(cx, k, v, 0, i64::MAX)? as u64);
    }
    if let Some((k, v)) = t.take1(&["sysctl"])? {
        let st = match v.get_ref() {
            DeValue::Table(st) => st,
            other => {
                return Err(cx.error(
                    &v.span(),
                    k,
                    format!("expected a table of sysctls, found {}", kind(other)),
                ))
            }
        };
        let f = Tbl::flat(cx, st, v.span(), "[machine.sysctl]");
        for (name, kspan, val) in &f.entries {
            let s = match val.get_ref() {
                DeValue::String(s) => s.to_string(),
                DeValue::Integer(_) => int(cx, name, val)?.to_string(),
                DeValue::Boolean(b) => if *b { "y" } else { "n" }.to_string(),
                other => {
                    return Err(cx.error(
                        kspan,
                        name,
                        format!("expected a string or integer value, found {}", kind(other)),
                    ))
                }
            };
            if s.contains(char::is_whitespace) || s.is_empty() {
                return Err(cx.error(kspan, name, format!("bad sysctl value '{s}'")));
            }
            m.sysctl.push((name.clone(), s));
        }
    }
    t.finish()?;
    Ok(m)
}

/// "none", "zram:SIZE" or "disk:SIZE" (the CLI's --swap).
pub(crate) fn check_swap(s: &str) -> Result<(), String> {
    if s == "none" {
        return Ok(());
    }
    match s.split_once(':') {
        Some(("zram" | "disk", sz)) => match parse_size(sz)? {
            0 => Err(format!("swap size in '{s}' must be more than 0")),
            _ => Ok(()),
        },
        _ => Err(format!("bad swap '{s}' (none, zram:SIZE, disk:SIZE)")),
    }
}

/// "db" or "jobs/a": relative to the scenario's root cgroup, each part a
/// plain directory name.
fn check_cgroup_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err(
            "empty cgroup path (the root is implied: processes without cgroup run there)".into(),
        );
    }
    for part in path.split('/') {
        let ok = !part.is_empty()
            && part != "."
            && part != ".."
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
        if !ok {
            return Err(format!(
                "bad cgroup path '{path}' (relative, '/'-separated names of letters, digits, '_', '-', '.')"
            ));
        }
    }
    Ok(())
}

/// A cgroup limit: a size, "max" (unlimited: the kernel's default) or -1
/// (v1's spelling of unlimited).
fn limit(cx: &Cx, k: &str, v: &Val) -> Result<Option<u64>, ParseError> {
    match v.get_ref() {
        DeValue::String(s) if s.trim() == "max" => Ok(None),
        DeValue::Integer(_) if int(cx, k, v)? == -1 => Ok(None),
        _ => size(cx, k, v).map(Some),
    }
}

/// A cgroup flag: a boolean, or 0/1 as the cgroup files take it.
fn flag(cx: &Cx, k: &str, v: &Val) -> Result<bool, ParseError> {
    match v.get_ref() {
        DeValue::Integer(_) => Ok(int_in(cx, k, v, 0, 1)? == 1),
        _ => boolean(cx, k, v),
    }
}

fn cgroup(cx: &Cx, (t, span): (&DeTable, Range<usize>)) -> Result<Cgroup, ParseError> {
    let mut t = Tbl::flat(cx, t, span.clone(), "[[cgroup]]").knows(&[
        "path",
        "max|memory.max|limit_in_bytes|memory.limit_in_bytes",
        "high|memory.high",
        "low|memory.low",
        "min|memory.min",
        "swappiness|memory.swappiness",
        "swap_max|swap.max|memory.swap.max",
        "memsw_limit|memsw.limit_in_bytes|memory.memsw.limit_in_bytes",
        "oom_group|oom.group|memory.oom.group",
        "oom_kill_disable|memory.oom_control.oom_kill_disable",
        "policy",
    ]);
    let (k, v) = t.req(&["path"])?;
    let path = string(cx, k, v)?;
    check_cgroup_path(path).map_err(|e| cx.error(&v.span(), k, e))?;
    let mut cg = Cgroup {
        path: path.to_string(),
        line: cx.line(span.start),
        ..Default::default()
    };
    if let Some((k, v)) = t.take1(&[
        "max",
        "memory.max",
        "limit_in_bytes",
        "memory.limit_in_bytes",
    ])? {
        cg.max = limit(cx, k, v)?;
    }
    if let Some((k, v)) = t.take1(&["high", "memory.high"])? {
        cg.high = limit(cx, k, v)?;
    }
    if let Some((k, v)) = t.take1(&["low", "memory.low"])? {
        cg.low = Some(size(cx, k, v)?);
    }
    if let Some((k, v)) = t.take1(&["min", "memory.min"])? {
        cg.min = Some(size(cx, k, v)?);
    }
    if let Some((k, v)) = t.take1(&["swappiness", "memory.swappiness"])? {
        cg.swappiness = Some(int_in(cx, k, v, 0, 200)? as u32);
    }
    if let Some((k, v)) = t.take1(&["swap_max", "swap.max", "memory.swap.max"])? {
        cg.swap_max = limit(cx, k, v)?;
    }
    if let Some((k, v)) = t.take1(&[
        "memsw_limit",
        "memsw.limit_in_bytes",
        "memory.memsw.limit_in_bytes",
    ])? {
        cg.memsw_limit = limit(cx, k, v)?;
    }
    if let Some((k, v)) = t.take1(&["oom_group", "oom.group", "memory.oom.group"])? {
        cg.oom_group = flag(cx, k, v)?;
    }
    if let Some((k, v)) = t.take1(&["oom_kill_disable", "memory.oom_control.oom_kill_disable"])? {
        cg.oom_kill_disable = flag(cx, k, v)?;
    }
    if let Some((k, v)) = t.take1(&["policy"])? {
        cg.policy = Some(string(cx, k, v)?.to_string());
    }
    t.finish()?;
    Ok(cg)
}

fn file_spec(cx: &Cx, (t, span): (&DeTable, Range<usize>)) -> Result<FileSpec, ParseError> {
    let mut t = Tbl::new(cx, t, span.clone(), "[[file]]").knows(&["name", "size", "fs", "prefill"]);
    let (k, v) = t.req(&["name"])?;
    let name = string(cx, k, v)?.to_string();
    let (k, v) = t.req(&["size"])?;
    let size = nonzero_size(cx, k, v)?;
    let mut fs = FileFs::Disk;
    if let Some((k, v)) = t.take1(&["fs"])? {
        fs = match string(cx, k, v)? {
            "disk" => FileFs::Disk,
            "tmpfs" | "shmem" => FileFs::Tmpfs,
            s => return Err(cx.error(&v.span(), k, format!("unknown fs '{s}' (disk, tmpfs)"))),
        };
    }
    // A disk file exists with its data unless told otherwise; a tmpfs file
    // cannot (its pages would be charged to nobody).
    let mut prefill = fs == FileFs::Disk;
    if let Some((k, v)) = t.take1(&["prefill"])? {
        prefill = boolean(cx, k, v)?;
        if prefill && fs == FileFs::Tmpfs {
            return Err(cx.error(
                &v.span(),
                k,
                "a tmpfs file starts empty: write it in a step".into(),
            ));
        }
    }
    t.finish()?;
    Ok(FileSpec {
        name,
        line: cx.line(span.start),
        size,
        fs,
        prefill,
    })
}

fn process(cx: &Cx, (t, span): (&DeTable, Range<usize>)) -> Result<Process, ParseError> {
    let mut t = Tbl::new(cx, t, span.clone(), "[[process]]").knows(&[
        "name",
        "cgroup",
        "count",
        "oom_score_adj",
        "steps|step",
        "thread|threads",
    ]);
    let (k, v) = t.req(&["name"])?;
    let mut p = Process {
        name: string(cx, k, v)?.to_string(),
        line: cx.line(span.start),
        count: 1,
        ..Default::default()
    };
    if let Some((k, v)) = t.take1(&["cgroup"])? {
        let cg = string(cx, k, v)?.trim_matches('/');
        if !cg.is_empty() && !cx.cgroups.borrow().iter().any(|c| c == cg) {
            return Err(cx.error(
                &v.span(),
                k,
                format!("cgroup '{cg}' is not declared (add a [[cgroup]] with path = \"{cg}\")"),
            ));
        }
        p.cgroup = cg.to_string();
    }
    if let Some((k, v)) = t.take1(&["count"])? {
        p.count = count32(cx, k, v)?;
    }
    if let Some((k, v)) = t.take1(&["oom_score_adj"])? {
        p.oom_score_adj = int_in(cx, k, v, -1000, 1000)? as i32;
    }
    let steps = t.take1(&["steps", "step"])?;
    let threads = t.take1(&["thread", "threads"])?;
    match (steps, threads) {
        (Some(_), Some((k, v))) => {
            return Err(cx.error(
                &v.span(),
                k,
                "give either steps (one thread) or [[process.thread]], not both".into(),
            ))
        }
        (Some((k, v)), None) => p.threads.push(Thread {
            count: 1,
            steps: step_list(cx, k, v)?,
        }),
        (None, Some((k, v))) => {
            for (tt, tspan) in tables(cx, v, k)? {
                p.threads.push(thread(cx, tt, tspan)?);
            }
            if p.threads.is_empty() {
                return Err(cx.error(&v.span(), k, "no threads".into()));
            }
        }
        (None, None) => {
            return Err(cx.error(
                &span,
                "steps",
                "missing in [[process]]: give steps or [[process.thread]]".into(),
            ))
        }
    }
    t.finish()?;
    Ok(p)
}

fn thread(cx: &Cx, t: &DeTable, span: Range<usize>) -> Result<Thread, ParseError> {
    let mut t = Tbl::new(cx, t, span, "[[process.thread]]").knows(&["count", "steps|step"]);
    let mut th = Thread {
        count: 1,
        steps: Vec::new(),
    };
    if let Some((k, v)) = t.take1(&["count"])? {
        th.count = count32(cx, k, v)?;
    }
    let (k, v) = t.req(&["steps", "step"])?;
    th.steps = step_list(cx, k, v)?;
    t.finish()?;
    Ok(th)
}

/// Loops and forks nested deeper than this are refused: the checks follow
/// each loop body twice, so their cost doubles with each level.
const MAX_NESTING: u32 = 8;

fn step_list(cx: &Cx, k: &str, v: &Val) -> Result<Vec<Step>, ParseError> {
    let list = tables(cx, v, k)?;
    if list.is_empty() {
        return Err(cx.error(&v.span(), k, "no steps".into()));
    }
    list.into_iter().map(|(t, s)| step(cx, t, s)).collect()
}

const OPS: &str = "mmap_anon, mmap_file, touch, munmap|free, madvise, read, write, kv_get, fsync, fadvise, truncate, fio, sleep, compute, barrier, loop, fork, exit";

/// How long a touch or I/O step goes on: passes (default 1), accesses,
/// duration, or for I/O an amount of bytes.
fn amount(cx: &Cx, t: &mut Tbl, bs: Option<u64>) -> Result<Amount, ParseError> {
    let mut got: Vec<(&str, Range<usize>, Amount)> = Vec::new();
    if let Some((k, v)) = t.take1(&["passes"])? {
        got.push((k, v.span(), Amount::Passes(count(cx, k, v)?)));
    }
    if let Some((k, v)) = t.take1(&["accesses"])? {
        got.push((k, v.span(), Amount::Accesses(count(cx, k, v)?)));
    }
    if let Some((k, v)) = t.take1(&["duration"])? {
        got.push((k, v.span(), Amount::Duration(nonzero_time(cx, k, v)?)));
    }
    if let Some(bs) = bs {
        if let Some((k, v)) = t.take1(&["amount"])? {
            let n = nonzero_size(cx, k, v)?;
            if n % bs != 0 {
                return Err(cx.error(
                    &v.span(),
                    k,
                    format!("amount {n} is not a multiple of bs {bs}"),
                ));
            }
            got.push((k, v.span(), Amount::Accesses(n / bs)));
        }
    }
    match got.len() {
        0 => Ok(Amount::Passes(1)),
        1 => Ok(got.pop().unwrap().2),
        _ => Err(cx.error(
            &got[1].1,
            got[1].0,
            format!(
                "give one of passes, accesses, duration{} (also got '{}')",
                if bs.is_some() { ", amount" } else { "" },
                got[0].0
            ),
        )),
    }
}

fn map_name(cx: &Cx, t: &mut Tbl) -> Result<String, ParseError> {
    let (k, v) = t.req(&["map"])?;
    let s = string(cx, k, v)?;
    if s.is_empty() {
        return Err(cx.error(&v.span(), k, "empty map name".into()));
    }
    Ok(s.to_string())
}

fn file_name(cx: &Cx, t: &mut Tbl) -> Result<String, ParseError> {
    let (k, v) = t.req(&["file"])?;
    let f = string(cx, k, v)?;
    if !cx.files.borrow().iter().any(|n| n == f) {
        return Err(cx.error(
            &v.span(),
            k,
            format!("file '{f}' is not declared (add a [[file]] with name = \"{f}\")"),
        ));
    }
    Ok(f.to_string())
}

fn think(cx: &Cx, t: &mut Tbl) -> Result<u64, ParseError> {
    match t.take1(&["think"])? {
        Some((k, v)) => time(cx, k, v),
        None => Ok(0),
    }
}

/// madvise(2) and posix_fadvise(2) advice by name, in the order errors
/// list them.
const MADVICE: &[(&str, Madvice)] = &[
    ("normal", Madvice::Normal),
    ("sequential", Madvice::Sequential),
    ("random", Madvice::Random),
    ("willneed", Madvice::Willneed),
    ("dontneed", Madvice::Dontneed),
    ("cold", Madvice::Cold),
    ("pageout", Madvice::Pageout),
];
const FADVICE: &[(&str, Advice)] = &[
    ("normal", Advice::Normal),
    ("sequential", Advice::Sequential),
    ("random", Advice::Random),
    ("willneed", Advice::Willneed),
    ("dontneed", Advice::Dontneed),
    ("noreuse", Advice::Noreuse),
];

/// The `advice` of a `call` step (madvise, fadvise): one of `names`, in
/// any case, with or without MADV_ / POSIX_FADV_.
fn advice<A: Copy>(cx: &Cx, t: &mut Tbl, call: &str, names: &[(&str, A)]) -> Result<A, ParseError> {
    let (k, v) = t.req(&["advice"])?;
    let s = advice_word(string(cx, k, v)?);
    match names.iter().find(|(n, _)| *n == s) {
        Some(&(_, a)) => Ok(a),
        None => {
            let all: Vec<&str> = names.iter().map(|(n, _)| *n).collect();
            let msg = format!("unknown {call} advice '{s}' ({})", all.join(", "));
            Err(cx.error(&v.span(), k, msg))
        }
    }
}

fn advice_word(s: &str) -> String {
    let l = s.trim().to_ascii_lowercase();
    let l = l.strip_prefix("posix_fadv_").unwrap_or(&l);
    let l = l.strip_prefix("madv_").unwrap_or(l);
    l.to_string()
}

/// The steps of a loop or fork.
fn nested(cx: &Cx, k: &str, v: &Val) -> Result<Vec<Step>, ParseError> {
    let d = cx.depth.get();
    if d >= MAX_NESTING {
        return Err(cx.error(
            &v.span(),
            k,
            format!("loops and forks nested more than {MAX_NESTING} deep"),
        ));
    }
    cx.depth.set(d + 1);
    let r = step_list(cx, k, v);
    cx.depth.set(d);
    r
}

/// The keys each op takes ('|' between spellings of one key).
fn op_keys(op: &str) -> Option<&'static [&'static str]> {
    const IO: &[&str] = &[
        "op", "file", "bs", "pattern", "direct", "passes", "accesses", "duration", "amount",
        "think",
    ];
    Some(match op {
        "mmap_anon" => &["op", "map", "size"],
        "mmap_file" => &["op", "map", "file", "offset", "len|size", "private"],
        "touch" => &[
            "op", "map", "pattern", "write", "passes", "accesses", "duration", "think",
        ],
        "munmap" | "free" => &["op", "map"],
        "madvise" => &["op", "map", "advice"],
        "read" | "write" => IO,
        "kv_get" => &[
            "op",
            "file",
            "keys",
            "record",
            "table_size",
            "table_cache",
            "block_cache",
            "level_base",
            "records",
            "pattern",
            "passes",
            "accesses",
            "duration",
            "think",
        ],
        "fsync" => &["op", "file"],
        "fadvise" => &["op", "file", "advice", "offset", "len"],
        "truncate" => &["op", "file", "size"],
        "fio" => &["op", "job"],
        "sleep" => &["op", "time"],
        "compute" => &["op", "time", "sys"],
        "barrier" => &["op", "name"],
        "loop" => &["op", "count", "duration", "steps|step"],
        "fork" => &["op", "count", "wait", "steps|step"],
        "exit" => &["op"],
        _ => return None,
    })
}

fn step(cx: &Cx, tbl: &DeTable, span: Range<usize>) -> Result<Step, ParseError> {
    let line = cx.line(span.start);
    let mut t = Tbl::new(cx, tbl, span.clone(), "a step");
    let (k, v) = t.req(&["op"])?;
    let op_name = string(cx, k, v)?;
    t.known = match op_keys(op_name) {
        Some(keys) => keys,
        None => return Err(cx.error(&v.span(), "op", format!("unknown op '{op_name}' ({OPS})"))),
    };
    let op = match op_name {
        "mmap_anon" => {
            let map = map_name(cx, &mut t)?;
            let (k, v) = t.req(&["size"])?;
            let size = nonzero_size(cx, k, v)?;
            Op::MmapAnon { map, size }
        }
        "mmap_file" => {
            let map = map_name(cx, &mut t)?;
            let file = file_name(cx, &mut t)?;
            let mut offset = 0;
            if let Some((k, v)) = t.take1(&["offset"])? {
                offset = size(cx, k, v)?;
                // mmap(2) wants a page-aligned offset (EINVAL otherwise).
                if offset % 4096 != 0 {
                    return Err(cx.error(
                        &v.span(),
                        k,
                        format!("offset {offset} is not a multiple of the 4096-byte page"),
                    ));
                }
            }
            let mut len = 0;
            if let Some((k, v)) = t.take1(&["len", "size"])? {
                len = nonzero_size(cx, k, v)?;
            }
            let mut private = false;
            if let Some((k, v)) = t.take1(&["private"])? {
                private = boolean(cx, k, v)?;
            }
            Op::MmapFile(MmapFileStep {
                map,
                file,
                offset,
                len,
                private,
            })
        }
        "touch" => {
            let map = map_name(cx, &mut t)?;
            let mut pat = Pattern::Seq;
            if let Some((k, v)) = t.take1(&["pattern"])? {
                pat = pattern(cx, k, v)?;
                append_for_writes(cx, k, v, &pat, false)?;
            }
            let mut write = false;
            if let Some((k, v)) = t.take1(&["write"])? {
                write = boolean(cx, k, v)?;
            }
            let amount = amount(cx, &mut t, None)?;
            let think_ns = think(cx, &mut t)?;
            Op::Touch(TouchStep {
                map,
                pattern: pat,
                write,
                amount,
                think_ns,
            })
        }
        "munmap" | "free" => Op::Munmap {
            map: map_name(cx, &mut t)?,
        },
        "madvise" => {
            let map = map_name(cx, &mut t)?;
            let advice = advice(cx, &mut t, "madvise", MADVICE)?;
            Op::Madvise { map, advice }
        }
        "read" | "write" => {
            let file = file_name(cx, &mut t)?;
            let mut bs = 4096;
            if let Some((k, v)) = t.take1(&["bs"])? {
                bs = nonzero_size(cx, k, v)?;
            }
            let mut pat = Pattern::Seq;
            if let Some((k, v)) = t.take1(&["pattern"])? {
                pat = pattern(cx, k, v)?;
                append_for_writes(cx, k, v, &pat, op_name == "write")?;
            }
            let mut direct = false;
            if let Some((k, v)) = t.take1(&["direct"])? {
                direct = boolean(cx, k, v)?;
                // O_DIRECT I/O must be aligned to the logical block size.
                if direct && bs % 512 != 0 {
                    return Err(cx.error(
                        &v.span(),
                        k,
                        format!("direct I/O needs bs a multiple of 512 (bs is {bs})"),
                    ));
                }
            }
            let amount = amount(cx, &mut t, Some(bs))?;
            let think_ns = think(cx, &mut t)?;
            Op::Io(IoStep {
                file,
                pattern: pat,
                write: op_name == "write",
                bs,
                amount,
                direct,
                think_ns,
            })
        }
        "kv_get" => {
            let file = file_name(cx, &mut t)?;
            let (k, v) = t.req(&["keys"])?;
            let keys = count(cx, k, v)?;
            let keys_span = v.span();
            // YCSB's default record: 10 fields of 100 bytes.
            let mut record = 1000;
            if let Some((k, v)) = t.take1(&["record"])? {
                record = nonzero_size(cx, k, v)?;
            }
            // LevelDB's max_file_size.
            let mut table_size = 2 << 20;
            if let Some((k, v)) = t.take1(&["table_size"])? {
                table_size = nonzero_size(cx, k, v)?;
            }
            // LevelDB's max_open_files (1000) less its 10 reserved.
            let mut table_cache = 990;
            if let Some((k, v)) = t.take1(&["table_cache"])? {
                table_cache = count(cx, k, v)?;
            }
            // LevelDB's block cache when Options::block_cache is unset.
            let mut block_cache = crate::lsm::BLOCK_CACHE_BYTES;
            if let Some((k, v)) = t.take1(&["block_cache"])? {
                block_cache = size(cx, k, v)?;
            }
            // LevelDB's MaxBytesForLevel(1).
            let mut level_base = crate::lsm::LEVEL_BASE;
            let mut level_base_span = None;
            if let Some((k, v)) = t.take1(&["level_base"])? {
                level_base = nonzero_size(cx, k, v)?;
                level_base_span = Some(v.span());
            }
            let mut records = 1;
            if let Some((k, v)) = t.take1(&["records"])? {
                records = count(cx, k, v)?;
            }
            let mut pat = Pattern::Ycsb { theta: 0.99 };
            if let Some((k, v)) = t.take1(&["pattern"])? {
                pat = pattern(cx, k, v)?;
                append_for_writes(cx, k, v, &pat, false)?;
            }
            crate::lsm::SstLayout::new(keys, record, 4096, table_size, level_base).map_err(
                |e| match &level_base_span {
                    Some(sp) if e.starts_with("a level of") => cx.error(sp, "level_base", e),
                    _ => cx.error(&keys_span, "keys", e),
                },
            )?;
            let amount = amount(cx, &mut t, None)?;
            let think_ns = think(cx, &mut t)?;
            Op::KvGet(KvGetStep {
                file,
                keys,
                record,
                table_size,
                table_cache,
                block_cache,
                level_base,
                records,
                pattern: pat,
                amount,
                think_ns,
            })
        }
        "fsync" => Op::Fsync {
            file: file_name(cx, &mut t)?,
        },
        "fadvise" => {
            let file = file_name(cx, &mut t)?;
            let advice = advice(cx, &mut t, "fadvise", FADVICE)?;
            let mut offset = 0;
            if let Some((k, v)) = t.take1(&["offset"])? {
                offset = size(cx, k, v)?;
            }
            let mut len = 0;
            if let Some((k, v)) = t.take1(&["len"])? {
                len = size(cx, k, v)?;
            }
            Op::Fadvise(FadviseStep {
                file,
                advice,
                offset,
                len,
            })
        }
        "truncate" => {
            let file = file_name(cx, &mut t)?;
            let (k, v) = t.req(&["size"])?;
            Op::Truncate {
                file,
                size: size(cx, k, v)?,
            }
        }
        "fio" => {
            let (k, v) = t.req(&["job"])?;
            let job = string(cx, k, v)?;
            if job.trim().is_empty() {
                return Err(cx.error(&v.span(), k, "empty job file path".into()));
            }
            Op::Fio {
                job: job.to_string(),
            }
        }
        "sleep" | "compute" => {
            let (k, v) = t.req(&["time"])?;
            let ns = nonzero_time(cx, k, v)?;
            if op_name == "sleep" {
                Op::Sleep { ns }
            } else {
                let mut sys = false;
                if let Some((k, v)) = t.take1(&["sys"])? {
                    sys = boolean(cx, k, v)?;
                }
                Op::Compute { ns, sys }
            }
        }
        "barrier" => {
            let (k, v) = t.req(&["name"])?;
            let name = string(cx, k, v)?;
            if name.is_empty() {
                return Err(cx.error(&v.span(), k, "empty barrier name".into()));
            }
            Op::Barrier {
                name: name.to_string(),
            }
        }
        "loop" => {
            let mut count_ = None;
            if let Some((k, v)) = t.take1(&["count"])? {
                count_ = Some(count(cx, k, v)?);
            }
            let mut duration_ns = None;
            if let Some((k, v)) = t.take1(&["duration"])? {
                duration_ns = Some(nonzero_time(cx, k, v)?);
            }
            if count_.is_none() && duration_ns.is_none() {
                return Err(cx.error(&span, "count", "a loop needs count or duration".into()));
            }
            let (k, v) = t.req(&["steps", "step"])?;
            let steps = nested(cx, k, v)?;
            Op::Loop {
                count: count_,
                duration_ns,
                steps,
            }
        }
        "fork" => {
            let mut n = 1;
            if let Some((k, v)) = t.take1(&["count"])? {
                n = count32(cx, k, v)?;
            }
            let mut wait = true;
            if let Some((k, v)) = t.take1(&["wait"])? {
                wait = boolean(cx, k, v)?;
            }
            let (k, v) = t.req(&["steps", "step"])?;
            let steps = nested(cx, k, v)?;
            Op::Fork {
                count: n,
                wait,
                steps,
            }
        }
        "exit" => Op::Exit,
        _ => unreachable!("op_keys knows every op"),
    };
    t.finish()?;
    // Numbered once the whole file is read (Scenario::number_steps).
    Ok(Step { line, id: 0, op })
}
