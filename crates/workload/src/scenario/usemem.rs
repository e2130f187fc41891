//! vm-scalability's `usemem` command line as a scenario: `usemem -n 4
//! --random 1G` becomes 4 processes that each map 1 GiB anonymous memory,
//! write it at random and unmap it. The options keep usemem's names and
//! meanings (usemem.c: getopt_long, memparse, do_units/do_unit/do_rw_once);
//! those with no counterpart in the model are refused by name. The result
//! is written as scenario TOML (`to_toml`, editable) and read back by the
//! scenario parser, so it passes the same checks as a file.

use super::Scenario;
use std::fmt::Write as _;

/// usemem's long options: (long name, short letter, takes an argument).
/// The names are usemem.c's `opts[]` plus the spellings its usage text
/// gives for -O, -x, -N and -W.
const OPTS: &[(&str, char, bool)] = &[
    ("malloc", 'a', false),
    ("unit", 'u', true),
    ("step", 'j', true),
    ("mlock", 'M', false),
    ("readonly", 'o', false),
    ("open-rw", 'w', false),
    ("quiet", 'q', false),
    ("random", 'R', false),
    ("msync", 'S', false),
    ("msync-async", 'A', false),
    ("nproc", 'n', true),
    ("thread", 't', true),
    ("bind", 'b', true),
    ("prealloc", 'P', false),
    ("prefault", 'F', false),
    ("repeat", 'r', true),
    ("file", 'f', true),
    ("offset", 'B', true),
    ("pid-file", 'p', true),
    ("detach", 'd', false),
    ("sleep", 's', true),
    ("runtime", 'T', true),
    ("getchar", 'g', false),
    ("Lock", 'L', false),
    ("advice", 'D', false),
    ("remap", 'E', false),
    ("mincore", 'N', false),
    ("mncr_hgpgs", 'H', false),
    ("write-signal-read", 'W', false),
    ("sync-rw", 'y', false),
    ("sync-free", 'x', false),
    ("delay", 'e', true),
    ("anonymous", 'O', false),
    ("hugetlb", 'U', false),
    ("read-again", 'Z', false),
    ("punch-holes", '\0', false),
    ("init-time", '\0', false),
    ("touch-alloc", '\0', false),
    ("help", 'h', false),
];

/// The -m option (MiB, "kept for compatibility") has no long name.
const SHORT_ONLY: &[(char, bool)] = &[('m', true)];

/// Units usemem keeps pointers to (MAX_POINTERS): it unmaps them at the
/// end only when there are no more than this many.
const MAX_POINTERS: u64 = 32;

/// Chunks (size / --unit) a scenario may spell out one by one.
const MAX_UNITS: u64 = 1024;

const PAGE: u64 = 4096;

#[derive(Default)]
struct Opts {
    nproc: u64,
    thread: u64,
    unit: u64,
    step: u64,
    repeat: u64,
    readonly: bool,
    random: bool,
    sleep_s: u64,
    runtime_s: u64,
    delay_ns: u64,
    sync_rw: bool,
    sync_free: bool,
    read_again: bool,
    prefault: bool,
    touch_alloc: bool,
    malloc: bool,
    size: Option<u64>,
}

/// usemem's memparse: a number (decimal, or 0x hex) with an optional
/// k/m/g/t suffix, powers of 1024. Trailing text, which usemem ignores, is
/// refused here.
fn memparse(opt: &str, s: &str) -> Result<u64, String> {
    let t = s.trim();
    let (digits, radix) = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => (h, 16),
        None => (t, 10),
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    let n =
        u64::from_str_radix(&digits[..end], radix).map_err(|_| format!("{opt}: bad size '{s}'"))?;
    let shift = match &digits[end..] {
        "" => 0,
        "k" | "K" => 10,
        "m" | "M" => 20,
        "g" | "G" => 30,
        "t" | "T" => 40,
        rest => return Err(format!("{opt}: bad size '{s}' (unknown suffix '{rest}')")),
    };
    n.checked_mul(1 << shift)
        .ok_or_else(|| format!("{opt}: size '{s}' overflows"))
}

fn number(opt: &str, s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| format!("{opt}: bad number '{s}'"))
}

/// usemem's time_parse for --delay: nanoseconds, or with a 'u' (us) or
/// 'm' (ms) suffix.
fn delay_ns(opt: &str, s: &str) -> Result<u64, String> {
    let t = s.trim();
    let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let n: u64 = t[..end]
        .parse()
        .map_err(|_| format!("{opt}: bad delay '{s}'"))?;
    let mul = match &t[end..] {
        "" => 1,
        "u" => 1_000,
        "m" => 1_000_000,
        rest => return Err(format!("{opt}: bad delay '{s}' (unknown unit '{rest}')")),
    };
    n.checked_mul(mul)
        .ok_or_else(|| format!("{opt}: delay '{s}' overflows"))
}

/// Why an option is refused.
fn refusal(long: &str) -> Option<&'static str> {
    Some(match long {
        "file" | "offset" | "open-rw" => {
            "maps a file: write a scenario file with [[file]] and mmap_file"
        }
        "prealloc" => "memory shared copy-on-write across fork is not modelled",
        "mlock" | "Lock" => "mlock is not modelled",
        "msync" | "msync-async" => "msync is not modelled",
        "detach" | "pid-file" | "getchar" | "write-signal-read" => {
            "interactive or signal-driven runs have no counterpart"
        }
        "bind" => "CPU binding has no counterpart in the model",
        "advice" | "remap" | "mincore" | "mncr_hgpgs" => "this mode of usemem is not modelled",
        "hugetlb" => "hugetlb pages are not modelled",
        "punch-holes" => "not modelled (write madvise dontneed steps in a scenario file)",
        "help" => "no help text here: see docs/scenarios.md",
        "m" => "-m is usemem's old size option and SIZE overrides it: give SIZE only",
        _ => return None,
    })
}

fn parse_opts(args: &[String]) -> Result<Opts, String> {
    let mut o = Opts {
        repeat: 1,
        ..Default::default()
    };
    let args = match args.first() {
        Some(a) if a == "usemem" || a.ends_with("/usemem") => &args[1..],
        _ => args,
    };
    let mut positional = Vec::new();
    let mut i = 0;
    // (display name, long name or short letter, value)
    let mut found: Vec<(String, String, Option<String>)> = Vec::new();
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            positional.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            // getopt_long takes an unambiguous prefix of a long name.
            let exact = OPTS.iter().find(|(l, _, _)| *l == name);
            let cands: Vec<_> = OPTS
                .iter()
                .filter(|(l, _, _)| l.starts_with(name))
                .collect();
            let (long, _, has_arg) = match (exact, cands.len()) {
                (Some(e), _) => *e,
                (None, 1) if !name.is_empty() => *cands[0],
                (None, 0) | (None, 1) => return Err(format!("--{name}: unknown usemem option")),
                _ => {
                    let names: Vec<_> = cands.iter().map(|c| format!("--{}", c.0)).collect();
                    return Err(format!("--{name}: ambiguous ({})", names.join(", ")));
                }
            };
            let val = if has_arg {
                match inline {
                    Some(v) => Some(v),
                    None => {
                        let v = args
                            .get(i)
                            .cloned()
                            .ok_or_else(|| format!("--{long}: needs a value"))?;
                        i += 1;
                        Some(v)
                    }
                }
            } else {
                if inline.is_some() {
                    return Err(format!("--{long}: takes no value"));
                }
                None
            };
            found.push((format!("--{long}"), long.to_string(), val));
        } else if a.len() > 1 && a.starts_with('-') {
            let chars: Vec<char> = a[1..].chars().collect();
            let mut j = 0;
            while j < chars.len() {
                let c = chars[j];
                j += 1;
                let (key, has_arg) =
                    if let Some((l, _, h)) = OPTS.iter().find(|(_, s, _)| *s == c && c != '\0') {
                        (l.to_string(), *h)
                    } else if let Some((_, h)) = SHORT_ONLY.iter().find(|(s, _)| *s == c) {
                        (c.to_string(), *h)
                    } else {
                        return Err(format!("-{c}: unknown usemem option"));
                    };
                let val = if has_arg {
                    let rest: String = chars[j..].iter().collect();
                    j = chars.len();
                    if rest.is_empty() {
                        let v = args
                            .get(i)
                            .cloned()
                            .ok_or_else(|| format!("-{c}: needs a value"))?;
                        i += 1;
                        Some(v)
                    } else {
                        Some(rest)
                    }
                } else {
                    None
                };
                found.push((format!("-{c}"), key, val));
            }
        } else {
            positional.push(a.clone());
        }
    }
    for (shown, key, val) in found {
        if let Some(why) = refusal(&key) {
            return Err(format!("{shown}: not supported ({why})"));
        }
        let v = val.as_deref().unwrap_or("");
        match key.as_str() {
            "nproc" => o.nproc = number(&shown, v)?,
            "thread" => o.thread = number(&shown, v)?,
            "unit" => o.unit = memparse(&shown, v)?,
            "step" => o.step = memparse(&shown, v)?,
            "repeat" => o.repeat = number(&shown, v)?,
            "readonly" => o.readonly = true,
            "random" => o.random = true,
            "sleep" => o.sleep_s = number(&shown, v)?,
            "runtime" => o.runtime_s = number(&shown, v)?,
            "delay" => o.delay_ns = delay_ns(&shown, v)?,
            "sync-rw" => o.sync_rw = true,
            "sync-free" => o.sync_free = true,
            "read-again" => o.read_again = true,
            "prefault" => o.prefault = true,
            "touch-alloc" => o.touch_alloc = true,
            "malloc" => o.malloc = true,
            // MAP_ANONYMOUS instead of /dev/zero: the same private anon
            // memory to the kernel.
            "anonymous" => {}
            // Output only.
            "quiet" | "init-time" => {}
            _ => return Err(format!("{shown}: not supported")),
        }
    }
    match positional.len() {
        0 => return Err("usemem: missing SIZE (usemem [options] SIZE[k|m|g|t])".into()),
        1 => {}
        _ => {
            return Err(format!(
                "usemem: one SIZE expected, got {}",
                positional.join(" ")
            ))
        }
    }
    let size = memparse("SIZE", &positional[0])?;
    if size == 0 {
        return Err(
            "SIZE: 0 bytes allocates nothing (usemem's fork-bomb mode is not modelled)".into(),
        );
    }
    o.size = Some(size);
    if o.repeat == 0 {
        return Err("--repeat: 0 passes touch nothing".into());
    }
    // usemem raises a step below a word to a word.
    o.step = o.step.max(8);
    if o.step > PAGE && !o.step.is_multiple_of(PAGE) {
        return Err(format!("--step: {} is over a page and not a multiple of it: the pages it visits are not modelled", o.step));
    }
    if o.unit == 0 || o.unit > size {
        o.unit = size;
    }
    if o.sync_rw && o.unit != size {
        return Err(
            "--sync-rw: to sync tasks after allocation, unit must equal total size (as usemem)"
                .into(),
        );
    }
    let units = size.div_ceil(o.unit);
    if units > MAX_UNITS {
        return Err(format!(
            "--unit: {units} chunks; at most {MAX_UNITS} are supported"
        ));
    }
    if o.runtime_s > 0 && units > 1 {
        return Err("--runtime: supported with one unit only (no --unit smaller than SIZE)".into());
    }
    Ok(o)
}

/// The accesses of one do_rw_once pass over `bytes`, as a touch step.
fn touch(out: &mut String, map: &str, o: &Opts, bytes: u64, write: bool, passes: u64) {
    let words = bytes / 8;
    let per_pass = words.div_ceil(o.step / 8).max(1);
    let mut line = format!("  {{ op = \"touch\", map = \"{map}\", write = {write}");
    if o.random {
        // One random word per iteration: bytes/step accesses a pass, each
        // on a uniformly random page.
        let _ = write!(
            line,
            ", pattern = \"random\", accesses = {}",
            per_pass * passes
        );
    } else if o.step > PAGE {
        let stride = o.step / PAGE;
        let pages = bytes.div_ceil(PAGE);
        let _ = write!(
            line,
            ", pattern = \"stride:{stride}\", accesses = {}",
            pages.div_ceil(stride)
        );
    } else {
        let _ = write!(line, ", pattern = \"seq\", passes = {passes}");
    }
    if o.delay_ns > 0 {
        let _ = write!(line, ", think = \"{}ns\"", o.delay_ns);
    }
    line.push_str(" },\n");
    // Strided passes restart at the first page each time: one step a pass.
    if o.step > PAGE && !o.random && passes > 1 {
        let _ = writeln!(out, "  {{ op = \"loop\", count = {passes}, steps = [");
        out.push_str("  ");
        out.push_str(&line);
        out.push_str("  ] },\n");
    } else {
        out.push_str(&line);
    }
}

/// The scenario TOML that `args` (usemem's arguments, with or without the
/// program name first) stand for.
pub fn to_toml(args: &[String]) -> Result<String, String> {
    let o = parse_opts(args)?;
    let size = o.size.unwrap_or(0);
    let units = size.div_ceil(o.unit);
    let nproc = o.nproc.max(1);
    let tasks = if o.thread > 0 {
        nproc * o.thread
    } else {
        nproc
    };
    if nproc > u32::MAX as u64 || o.thread > u32::MAX as u64 {
        return Err("--nproc/--thread: too many tasks".into());
    }
    let mut s = String::new();
    let shown = match args.first() {
        Some(a) if a == "usemem" || a.ends_with("/usemem") => &args[1..],
        _ => args,
    };
    // Escaped: an argument's newline must not end the comment.
    let _ = writeln!(s, "# usemem {}", crate::units::one_line(&shown.join(" ")));
    s.push_str("[[process]]\nname = \"usemem\"\n");
    let _ = writeln!(s, "count = {nproc}");
    let _ = writeln!(s, "[[process.thread]]\ncount = {}", o.thread.max(1));
    s.push_str("steps = [\n");
    // Every task waits for the others before its first allocation unless
    // --sync-rw moves the wait after it (usemem's ready() pipes).
    if tasks > 1 && !o.sync_rw {
        s.push_str("  { op = \"barrier\", name = \"start\" },\n");
    }
    let write = !o.readonly;
    for u in 0..units {
        let bytes = o.unit.min(size - u * o.unit);
        let map = format!("unit{u}");
        let _ = writeln!(
            s,
            "  {{ op = \"mmap_anon\", map = \"{map}\", size = {bytes} }},"
        );
        if o.prefault && !o.malloc {
            // MAP_POPULATE faults a writable private mapping for write.
            let _ = writeln!(s, "  {{ op = \"touch\", map = \"{map}\", write = {write}, pattern = \"seq\", passes = 1 }},");
        }
        if o.touch_alloc {
            let _ = writeln!(s, "  {{ op = \"touch\", map = \"{map}\", write = true, pattern = \"seq\", passes = 1 }},");
        }
        if o.sync_rw && tasks > 1 {
            s.push_str("  { op = \"barrier\", name = \"sync-rw\" },\n");
        }
        if o.runtime_s > 0 {
            // --runtime stops the passes early: a loop ending at the count
            // or the time, whichever comes first.
            let _ = writeln!(
                s,
                "  {{ op = \"loop\", count = {}, duration = \"{}s\", steps = [",
                o.repeat, o.runtime_s
            );
            s.push_str("  ");
            touch(&mut s, &map, &o, bytes, write, 1);
            s.push_str("  ] },\n");
        } else {
            touch(&mut s, &map, &o, bytes, write, o.repeat);
        }
    }
    if o.read_again {
        for u in 0..units {
            let bytes = o.unit.min(size - u * o.unit);
            touch(&mut s, &format!("unit{u}"), &o, bytes, false, o.repeat);
        }
    }
    if o.sleep_s > 0 {
        let _ = writeln!(s, "  {{ op = \"sleep\", time = \"{}s\" }},", o.sleep_s);
    }
    if o.sync_free && tasks > 1 {
        s.push_str("  { op = \"barrier\", name = \"sync-free\" },\n");
    }
    if units <= MAX_POINTERS {
        for u in 0..units {
            let _ = writeln!(s, "  {{ op = \"munmap\", map = \"unit{u}\" }},");
        }
    }
    s.push_str("]\n");
    Ok(s)
}

/// usemem's command line as a scenario (see `to_toml`).
pub fn parse_args(args: &[String]) -> Result<Scenario, String> {
    let text = to_toml(args)?;
    super::parse(&text, "usemem").map_err(|e| e.to_string())
}
