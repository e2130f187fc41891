//! `--trace`: the tracepoints of seed 000's strided cell add up to the
//! run's counters, the lines have ftrace's layout, the filters filter, bad
//! options are refused, and the progress bar stays off a non-terminal.
//! Written as trace.dat, the same cell is read by `trace-cmd report`, an
//! independent reader (Debian's trace-cmd; .ci/run installs it).
//! (scripts/trace-perfetto reads the same trace with Perfetto's trace
//! processor where one is installed.)

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

#[path = "../../../tests/require.rs"]
mod require;

fn foliosim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .args(args)
        .env_remove("FOLIOSIM_PROGRESS_DELAY_MS")
        .output()
        .expect("foliosim runs")
}

/// One event line: `comm-pid [cpu] flags secs.usecs: event: fields`.
#[derive(Debug)]
struct Line {
    comm: String,
    pid: u32,
    ts_us: u64,
    event: String,
    fields: String,
}

fn parse_line(l: &str) -> Line {
    let t = l.trim_start();
    let (task, rest) = t.split_once(" [").unwrap_or_else(|| panic!("no cpu: {l}"));
    let task = task.trim_end();
    let (comm, pid) = task
        .rsplit_once('-')
        .unwrap_or_else(|| panic!("no pid: {l}"));
    let (cpu, rest) = rest.split_once("] ").unwrap();
    assert!(
        cpu.len() == 3 && cpu.bytes().all(|b| b.is_ascii_digit()),
        "{l}"
    );
    let (flags, rest) = rest.split_once(' ').unwrap();
    assert_eq!(flags.len(), 5, "five latency flags: {l}");
    let rest = rest.trim_start();
    let (ts, rest) = rest.split_once(": ").unwrap();
    let (s, us) = ts.split_once('.').unwrap();
    assert_eq!(us.len(), 6, "microseconds: {l}");
    let (event, fields) = rest
        .split_once(": ")
        .unwrap_or((rest.trim_end_matches(':'), ""));
    Line {
        comm: comm.to_string(),
        pid: pid.parse().unwrap_or_else(|_| panic!("pid: {l}")),
        ts_us: s.parse::<u64>().unwrap() * 1_000_000 + us.parse::<u64>().unwrap(),
        event: event.to_string(),
        fields: fields.to_string(),
    }
}

fn field(fields: &str, key: &str) -> u64 {
    fields
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {key} in {fields}"))
        .parse()
        .unwrap()
}

fn read_trace(path: &Path) -> Vec<Line> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("# tracer: nop"));
    lines
        .filter(|l| !l.starts_with('#'))
        .map(parse_line)
        .collect()
}

fn tmp(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("foliosim-trace-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// Runs the cell traced; returns the trace and the row's counters.
fn strided(extra: &[&str], name: &str) -> (Vec<Line>, serde_json::Value, Vec<u8>) {
    let path = tmp(name);
    let p = path.to_str().unwrap();
    let mut args = vec![
        "reproduce",
        "strided-mmap",
        "--cell",
        "mglru,pf-set-active,arm64",
        "--runtime",
        "3",
        "--format",
        "json",
        "--trace",
        p,
    ];
    args.extend_from_slice(extra);
    let out = foliosim(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stderr.is_empty(), "nothing on a non-terminal stderr");
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let lines = read_trace(&path);
    std::fs::remove_file(&path).unwrap();
    (lines, rows[0].clone(), bytes)
}

#[test]
fn strided_cell_trace_matches_counters() {
    let (lines, row, bytes) = strided(&["--trace-events", "filemap,vmscan,readahead"], "all.txt");
    let mut n: BTreeMap<&str, u64> = BTreeMap::new();
    let mut reclaimed = 0;
    let mut last = 0;
    for l in &lines {
        *n.entry(l.event.as_str()).or_default() += 1;
        assert_eq!(
            (l.comm.as_str(), l.pid),
            ("fio", 1000),
            "one fio job: {l:?}"
        );
        // One job on one clock: the trace is in time order.
        assert!(l.ts_us >= last, "time goes back at {l:?}");
        last = l.ts_us;
        if l.event == "mm_vmscan_lru_shrink_inactive" {
            reclaimed += field(&l.fields, "nr_reclaimed");
            assert!(
                l.fields.ends_with("flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC"),
                "{l:?}"
            );
        }
    }
    assert!(last <= 3_000_000 + 1_000, "inside the 3 s run: {last}");
    assert_counts_match_counters(&n, &row, reclaimed);
    assert!(
        !n.contains_key("mm_lru_insertion"),
        "pagemap was not asked for"
    );
    // Same seed, same trace, byte for byte.
    let (_, _, again) = strided(&["--trace-events", "filemap,vmscan,readahead"], "again.txt");
    assert!(bytes == again, "the trace is deterministic");
}

#[test]
fn filters_window_events_and_cgroup() {
    let (lines, _, _) = strided(
        &[
            "--trace-window",
            "1,2",
            "--trace-events",
            "mm_vmscan_lru_shrink_inactive,mm_lru_insertion",
        ],
        "window.txt",
    );
    assert!(!lines.is_empty());
    for l in &lines {
        assert!((1_000_000..2_000_000).contains(&l.ts_us), "{l:?}");
        assert!(
            l.event == "mm_vmscan_lru_shrink_inactive" || l.event == "mm_lru_insertion",
            "{l:?}"
        );
    }
    assert!(lines.iter().any(|l| l.event == "mm_lru_insertion"));
    // The job's memcg is /foliosim: another cgroup sees none of its events.
    let (other, _, _) = strided(
        &["--trace-cgroup", "/other", "--trace-window", "0,1"],
        "cg.txt",
    );
    assert!(other.is_empty(), "{:?}", other.first());
    let (mine, _, _) = strided(
        &["--trace-cgroup", "/foliosim", "--trace-window", "0,1"],
        "cg2.txt",
    );
    assert!(mine
        .iter()
        .any(|l| l.event == "mm_filemap_add_to_page_cache"));
    // The file filter: the seed job's file by its name, and another name.
    let (none, _, _) = strided(
        &[
            "--trace-file",
            "nosuch",
            "--trace-window",
            "0,1",
            "--trace-events",
            "filemap",
        ],
        "f.txt",
    );
    assert!(none.is_empty());
}

#[test]
fn bad_trace_options_exit_2_with_one_line() {
    let cases: &[(&[&str], &str)] = &[
        (
            &["--trace-events", "vmscan"],
            "--trace-events: needs --trace FILE",
        ),
        (
            &["--trace", "/nonexistent-dir/x.txt"],
            "--trace: /nonexistent-dir/x.txt",
        ),
        (
            &["--trace", "/dev/null", "--trace-events", "mm_nosuch"],
            "unknown event 'mm_nosuch'",
        ),
        (
            &["--trace", "/dev/null", "--trace-window", "3,1"],
            "END must be after START",
        ),
        (
            &["--trace", "/dev/null", "--trace-window", "x"],
            "is not START,END",
        ),
        (
            &["--trace", "/dev/null", "--trace-cgroup", "foliosim"],
            "is not a cgroup path",
        ),
        (
            &["--trace", "/dev/null", "--trace-format", "json"],
            "--trace-format: 'json' is not text or dat",
        ),
        (
            &["--trace-format", "dat"],
            "--trace-format: needs --trace FILE",
        ),
    ];
    for (extra, want) in cases {
        let mut args = vec!["mmap-probe", "--file-size", "64M"];
        args.extend_from_slice(extra);
        let out = foliosim(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    let out = foliosim(&["reproduce", "strided-mmap", "--trace", "/dev/null"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("needs --cell"));
}

#[test]
fn every_run_command_takes_trace() {
    let dir = tmp("cmds");
    std::fs::create_dir_all(&dir).unwrap();
    let t = dir.join("fio.txt");
    let out = foliosim(&[
        "fio",
        "--name=r",
        "--rw=read",
        "--bs=4k",
        "--size=8M",
        "--filename=data",
        "--trace",
        t.to_str().unwrap(),
        "--trace-file",
        "data",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines = read_trace(&t);
    // A sequential read of 8M: 2048 pages added, read ahead in windows.
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.event == "mm_filemap_add_to_page_cache")
            .count(),
        2048
    );
    assert!(lines.iter().any(|l| l.event == "page_cache_async_ra"));
    let t = dir.join("probe.txt");
    let out = foliosim(&[
        "mmap-probe",
        "--file-size",
        "64M",
        "--trace",
        t.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(read_trace(&t).iter().any(|l| l.event == "mm_filemap_fault"));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A scenario (anon memory over its limit, swapped to zram): every
/// pageout() to swap is one mm_vmscan_write_folio, charged to the process.
#[test]
fn scenario_swap_writes_are_traced() {
    let t = tmp("scn.txt");
    let scn = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/anon-over-limit-zram.toml"
    );
    let out = foliosim(&[
        "run",
        scn,
        "--json",
        "--trace",
        t.to_str().unwrap(),
        "--trace-events",
        "mm_vmscan_write_folio",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let lines = read_trace(&t);
    std::fs::remove_file(&t).unwrap();
    let pswpout = r["vmstat"]["pswpout"].as_u64().unwrap();
    assert!(pswpout > 0);
    assert_eq!(lines.len() as u64, pswpout);
    for l in &lines {
        assert!(
            l.fields.ends_with("flags=RECLAIM_WB_ANON|RECLAIM_WB_ASYNC"),
            "{l:?}"
        );
        assert!(l.pid >= 1000, "a scenario process: {l:?}");
    }
}

/// Progress goes to a terminal only: with stderr a pipe, nothing, even
/// with the bar's delay at 0 (under `script`, a pseudo-terminal, it shows;
/// without `script` that half is skipped, and fails under CI=true).
#[test]
fn progress_only_on_a_terminal() {
    let args = [
        "reproduce",
        "strided-mmap",
        "--cell",
        "classic,pf-mark-accessed,x86",
        "--runtime",
        "3",
    ];
    let out = Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .args(args)
        .env("FOLIOSIM_PROGRESS_DELAY_MS", "0")
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let Some(script) = require::tool("script", "bsdutils") else {
        return;
    };
    let cmd = format!(
        "{} {} >/dev/null",
        env!("CARGO_BIN_EXE_foliosim"),
        args.join(" ")
    );
    let out = Command::new(script)
        .args(["-qec", &cmd, "/dev/null"])
        .env("FOLIOSIM_PROGRESS_DELAY_MS", "0")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("s simulated"), "{text}");
}

/// Runs `trace-cmd report -i FILE` with `args`: Debian's trace-cmd, an
/// independent reader of trace.dat (libtraceevent, as KernelShark uses).
/// Returns stdout; trace-cmd must succeed and say nothing on stderr (it
/// warns there about formats or pages it cannot parse).
fn trace_cmd_report(path: &Path, args: &[&str]) -> String {
    let out = match Command::new("trace-cmd")
        .arg("report")
        .args(args)
        .arg("-i")
        .arg(path)
        .output()
    {
        Ok(o) => o,
        Err(e) => panic!(
            "trace-cmd could not be run ({e}): install it (apt-get install trace-cmd; .ci/run does)"
        ),
    };
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "trace-cmd report {args:?}: {err}");
    assert!(err.trim().is_empty(), "trace-cmd report {args:?}: {err}");
    String::from_utf8(out.stdout).unwrap()
}

/// Runs the cell with `--trace PATH` and `extra`; returns the row.
fn strided_to(path: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec![
        "reproduce",
        "strided-mmap",
        "--cell",
        "mglru,pf-set-active,arm64",
        "--runtime",
        "3",
        "--format",
        "json",
        "--trace",
        path.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = foliosim(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    rows[0].clone()
}

/// One line of `trace-cmd report -R -t`: `comm-pid [cpu] secs.nsecs:
/// event: name=value ...` with the raw field values.
fn report_line(l: &str) -> (&str, u64, &str, &str) {
    let (task, rest) = l.trim_start().split_once(" [").unwrap();
    let (cpu, rest) = rest.split_once("] ").unwrap();
    assert_eq!(cpu, "000", "{l}");
    let (ts, rest) = rest.trim_start().split_once(": ").unwrap();
    let (s, ns) = ts.split_once('.').unwrap();
    assert_eq!(ns.len(), 9, "-t prints nanoseconds: {l}");
    let ts = s.parse::<u64>().unwrap() * 1_000_000_000 + ns.parse::<u64>().unwrap();
    let (event, fields) = rest.split_once(':').unwrap_or((rest, ""));
    (task.trim_end(), ts, event, fields.trim())
}

/// A raw field value (decimal, or 0x hex as -R prints some).
fn raw(fields: &str, key: &str) -> u64 {
    let v = fields
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .unwrap_or_else(|| panic!("no {key} in {fields}"));
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).unwrap(),
        None => v.parse().unwrap(),
    }
}

/// The cell traced as trace-cmd's trace.dat (`--trace FILE.dat`): trace-cmd
/// reads it without a complaint, its event counts give the counters' sums
/// (the equalities of strided_cell_trace_matches_counters), the raw fields
/// decode with the kernel's layout, and the bytes are deterministic.
#[test]
fn strided_cell_dat_reads_in_trace_cmd() {
    let events = ["--trace-events", "filemap,vmscan,readahead"];
    let path = tmp("cell.dat");
    let row = strided_to(&path, &events);
    let bytes = std::fs::read(&path).unwrap();
    let text = trace_cmd_report(&path, &["-R", "-t"]);
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("cpus=1"));
    let mut n: BTreeMap<&str, u64> = BTreeMap::new();
    let (mut reclaimed, mut last) = (0, 0);
    for l in lines {
        let (task, ts, event, fields) = report_line(l);
        *n.entry(event).or_default() += 1;
        // saved_cmdlines names the pid; the clock is the simulated one.
        assert_eq!(task, "fio-1000", "{l}");
        assert!(ts >= last, "time goes back at {l}");
        last = ts;
        match event {
            "mm_vmscan_lru_shrink_inactive" => {
                reclaimed += raw(fields, "nr_reclaimed");
                // RECLAIM_WB_FILE | RECLAIM_WB_ASYNC; nid 0.
                assert_eq!(raw(fields, "reclaim_flags"), 0x2 | 0x8, "{l}");
                assert_eq!(raw(fields, "nid"), 0, "{l}");
            }
            "mm_filemap_add_to_page_cache" | "mm_filemap_delete_from_page_cache" => {
                // vda's dev_t (253 << 20), the job's one file, order 0.
                assert_eq!(raw(fields, "s_dev"), 253 << 20, "{l}");
                assert_eq!(raw(fields, "i_ino"), 1, "{l}");
                assert_eq!(raw(fields, "order"), 0, "{l}");
                assert!(raw(fields, "pfn") >= 0x100000, "{l}");
            }
            "mm_vmscan_memcg_reclaim_begin" => {
                assert_eq!(raw(fields, "gfp_flags"), 0xcc0, "GFP_KERNEL: {l}")
            }
            "page_cache_ra_order" => {
                // The window it is asked to read, before any folio order
                // is chosen: inside the device's ra_pages.
                assert_eq!(raw(fields, "s_dev"), 253 << 20, "{l}");
                assert_eq!(raw(fields, "i_ino"), 1, "{l}");
                let (size, ra_pages) = (raw(fields, "size"), raw(fields, "ra_pages"));
                assert!(size > 0 && size <= ra_pages, "{l}");
                assert!(raw(fields, "async_size") <= size, "{l}");
            }
            _ => {}
        }
    }
    assert!(
        last > 1_000_000_000 && last <= 3_001_000_000,
        "inside the 3 s run: {last}"
    );
    assert_counts_match_counters(&n, &row, reclaimed);
    let c = |e: &str| n.get(e).copied().unwrap_or(0);
    assert!(c("page_cache_ra_unbounded") > 0, "{n:?}");
    assert!(c("page_cache_ra_order") > 0, "{n:?}");
    assert_eq!(c("mm_lru_insertion"), 0, "pagemap was not asked for");
    // Same seed, same bytes.
    let again = tmp("again.dat");
    strided_to(&again, &events);
    assert!(bytes == std::fs::read(&again).unwrap(), "deterministic");
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_file(&again).unwrap();
}

/// trace-cmd prints the .dat's events with the print fmts it carries as
/// the text format prints them (the vmscan and readahead events of the
/// first 2 simulated seconds, line by line); `--trace-format` overrides the extension.
#[test]
fn dat_prints_like_the_text_trace() {
    let extra = [
        "--trace-events",
        "vmscan,readahead",
        "--trace-window",
        "0,2",
    ];
    let dat = tmp("vmscan.bin");
    strided_to(&dat, &[&extra[..], &["--trace-format", "dat"]].concat());
    let txt = tmp("vmscan.dat");
    strided_to(&txt, &[&extra[..], &["--trace-format", "text"]].concat());
    let want: Vec<String> = read_trace(&txt)
        .iter()
        .map(|l| format!("{}: {}", l.event, l.fields))
        .collect();
    let report = trace_cmd_report(&dat, &[]);
    let got: Vec<String> = report
        .lines()
        .skip(1)
        .map(|l| {
            let (_, rest) = l.split_once("] ").unwrap();
            let (_, ev) = rest.trim_start().split_once(": ").unwrap();
            // trace-cmd pads the event name to a column.
            let (name, fields) = ev.split_once(':').unwrap();
            format!("{name}: {}", fields.trim())
        })
        .collect();
    assert!(want.len() > 1000, "{}", want.len());
    assert!(got
        .iter()
        .any(|l| l.contains("flags=RECLAIM_WB_FILE|RECLAIM_WB_ASYNC")));
    assert!(got.iter().any(|l| l.contains("gfp_flags=GFP_KERNEL")));
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(g, w);
    }
    std::fs::remove_file(&dat).unwrap();
    std::fs::remove_file(&txt).unwrap();
}

/// Events 300 ms apart (fio's thinktime) need time-extend records (a
/// delta over 2^27 ns): trace-cmd's timestamps, in ns, are the text
/// trace's to the microsecond, and the reads are all there.
#[test]
fn dat_time_extends_keep_the_clock() {
    let run = |path: &Path| {
        let out = foliosim(&[
            "fio",
            "--name=r",
            "--rw=randread",
            "--bs=4k",
            "--size=4M",
            "--filename=data",
            "--thinktime=300000",
            "--number_ios=20",
            "--trace-events",
            "mm_filemap_add_to_page_cache",
            "--trace",
            path.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let (dat, txt) = (tmp("think.dat"), tmp("think.txt"));
    run(&dat);
    run(&txt);
    let want: Vec<u64> = read_trace(&txt).iter().map(|l| l.ts_us).collect();
    let report = trace_cmd_report(&dat, &["-t"]);
    let got: Vec<u64> = report
        .lines()
        .skip(1)
        .map(|l| report_line(l).1 / 1000)
        .collect();
    assert_eq!(want.len(), 20, "one page read in per I/O");
    assert!(want.windows(2).all(|w| w[1] - w[0] >= 300_000), "{want:?}");
    assert_eq!(got, want);
    std::fs::remove_file(&dat).unwrap();
    std::fs::remove_file(&txt).unwrap();
}

/// The strided cell's event counts against its counters: every page read
/// in was added to the page cache (pgpgin is in KiB); pages leave it only
/// by reclaim (no truncation), so deletions = pgsteal = the shrink_inactive
/// events' nr_reclaimed; what is left is the memcg's page cache; every
/// limit reclaim begins and ends; ->fault runs for every major fault and
/// for a cached page still being read (a minor one that retries), while a
/// retry maps its page by fault-around (mm_filemap_map_pages).
fn assert_counts_match_counters(n: &BTreeMap<&str, u64>, row: &serde_json::Value, reclaimed: u64) {
    let (v, m) = (&row["vmstat"], &row["memcg"]);
    let get = |o: &serde_json::Value, k: &str| o[k].as_u64().unwrap_or(0);
    let c = |e: &str| n.get(e).copied().unwrap_or(0);
    assert_eq!(c("mm_filemap_add_to_page_cache"), get(v, "pgpgin") / 4);
    let steal = get(m, "pgsteal_kswapd") + get(m, "pgsteal_direct");
    assert!(steal > 10_000, "the cell thrashes: {steal}");
    assert_eq!(c("mm_filemap_delete_from_page_cache"), steal);
    assert_eq!(reclaimed, steal);
    assert_eq!(
        c("mm_filemap_add_to_page_cache") - c("mm_filemap_delete_from_page_cache"),
        get(m, "file") / 4096
    );
    assert_eq!(
        c("mm_vmscan_memcg_reclaim_begin"),
        c("mm_vmscan_memcg_reclaim_end")
    );
    assert!(c("mm_vmscan_memcg_reclaim_begin") > 0);
    let (maj, retry) = (get(v, "pgmajfault"), get(v, "foliosim_fault_retry"));
    assert!(
        maj > 0 && (maj..=maj + retry).contains(&c("mm_filemap_fault")),
        "{maj} {retry} {n:?}"
    );
    assert!(c("mm_filemap_map_pages") >= c("mm_filemap_fault"));
}

/// mm_vmscan_lru_shrink_inactive's reclaim_stat on the anon list of an
/// anon+file mix (zram: no dirty or writeback folios): every scanned folio
/// was reclaimed, activated or kept by folio_check_references()
/// (nr_ref_keep: its young PTE seen for the first time), and the events sum
/// to vmstat's pgscan_anon and pgsteal_anon.
#[test]
fn shrink_inactive_accounts_for_every_scanned_anon_folio() {
    let path = tmp("mix60.txt");
    let case = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../oracle/cases/scn-mix-swappiness-60.toml"
    );
    let out = foliosim(&[
        "run",
        case,
        "--json",
        "--trace",
        path.to_str().unwrap(),
        "--trace-events",
        "mm_vmscan_lru_shrink_inactive",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (mut scanned, mut reclaimed, mut activated, mut kept) = (0, 0, 0, 0);
    for l in read_trace(&path) {
        if !l.fields.contains("RECLAIM_WB_ANON") {
            continue;
        }
        let (s, rc) = (
            field(&l.fields, "nr_scanned"),
            field(&l.fields, "nr_reclaimed"),
        );
        let a = field(&l.fields, "nr_activate_anon");
        let k = field(&l.fields, "nr_ref_keep");
        assert_eq!(s, rc + a + k, "{l:?}");
        (scanned, reclaimed, activated, kept) =
            (scanned + s, reclaimed + rc, activated + a, kept + k);
    }
    assert_eq!(scanned, r["vmstat"]["pgscan_anon"].as_u64().unwrap());
    assert_eq!(reclaimed, r["vmstat"]["pgsteal_anon"].as_u64().unwrap());
    assert!(
        kept > 0 && activated > 0 && reclaimed > 0,
        "{kept} {activated} {reclaimed}"
    );
}
