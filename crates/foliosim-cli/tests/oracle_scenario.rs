//! `foliosim oracle run` on scenarios, through the real binary: a small zram
//! scenario swaps for real and leaves zram0 reset and no swap on; a killed
//! oracle's swap, zram, tmpfs and cgroups are undone by `oracle restore`;
//! hostile arguments are refused in one line, exit 2. The real-kernel tests
//! are skipped, saying why, without root or a free zram0; under CI=true
//! (root, cgroup v1 memory with memsw, zram) they fail instead.

use foliosim_oracle::journal;
use foliosim_oracle::scn::hostcfg::{active_swaps, zram_unusable, ZRAM_NODE, ZRAM_SYSFS};
use std::fs;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "../../../tests/require.rs"]
mod require;

const BIN: &str = env!("CARGO_BIN_EXE_foliosim");

struct Base(PathBuf);

impl Base {
    fn new(tag: &str) -> Base {
        let d = PathBuf::from(format!(
            "/var/tmp/foliosim-scn-{tag}-{}",
            std::process::id()
        ));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        Base(d)
    }
    fn p(&self, rel: &str) -> PathBuf {
        self.0.join(rel)
    }
    fn oracle(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.arg("oracle")
            .args(args)
            .env(journal::ENV, self.p("journal"))
            .stdin(Stdio::null());
        c
    }
}

impl Drop for Base {
    fn drop(&mut self) {
        // Whatever a failed assertion left: undone through the journal.
        let _ = self.oracle(&["restore"]).output();
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// The real-kernel tests share zram0: one at a time.
static ZRAM: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn why_not_real() -> Option<String> {
    if !foliosim_oracle::host::read_host(std::path::Path::new("/var/tmp")).is_ok_and(|h| h.is_root)
    {
        return Some("not root".into());
    }
    if !std::path::Path::new("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes").exists() {
        return Some("no cgroup v1 memory controller with memsw".into());
    }
    if let Some(w) = zram_unusable() {
        return Some(w);
    }
    if !active_swaps().is_empty() {
        return Some(format!("swap already active: {:?}", active_swaps()));
    }
    None
}

fn zram_is_reset() -> bool {
    fs::read_to_string(format!("{ZRAM_SYSFS}/disksize"))
        .unwrap()
        .trim()
        == "0"
        && !active_swaps().iter().any(|s| s == ZRAM_NODE)
}

#[test]
fn a_zram_scenario_swaps_and_leaves_the_host_as_it_was() {
    let _one = ZRAM.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = why_not_real() {
        require::skip(&why);
        return;
    }
    let b = Base::new("smoke");
    let out = b
        .oracle(&[
            "run",
            "builtin:scn-test-smoke-zram",
            "--repeat",
            "1",
            "--quiet",
            "--json",
            "--dir",
            b.p("scratch").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: serde_json::Value = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{e}: {stdout} {}", String::from_utf8_lossy(&out.stderr)));
    // The model ran the same scenario, its counters beside the real ones.
    let outcome = &v["case"]["outcome"];
    assert!(
        outcome["model_error"].is_null(),
        "{}",
        outcome["model_error"]
    );
    let model = |k: &str| {
        outcome["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["counter"] == k)
            .and_then(|r| r["model"].as_f64())
            .unwrap_or_else(|| panic!("no model figure for {k}"))
    };
    assert!(model("vmstat.pswpout") >= (32 << 20) as f64 / 4096.0);
    assert_eq!(model("killed[smoke]"), 0.0);
    let run = &v["case"]["outcome"]["runs"][0];
    let f = |k: &str| run[k].as_f64().unwrap_or_else(|| panic!("no {k} in {run}"));
    // 96 MiB written through a 64 MiB limit: at least 32 MiB went out.
    assert!(f("vmstat.pswpout") >= (32 << 20) as f64 / 4096.0, "{run}");
    // Read back in order: what went out comes back in.
    assert!(f("vmstat.pswpin") > 0.0, "{run}");
    assert!(f("memcg[app].peak") <= (64 << 20) as f64, "{run}");
    // The root's hierarchical totals take in the child's (read leaf-first;
    // a per-CPU batch may still be pending).
    assert!(f("pgfault") >= f("memcg[app].pgfault") * 0.98, "{run}");
    assert_eq!(f("killed[smoke]"), 0.0);
    // The process's CPU time on both sides: the host's from getrusage()
    // in its done line, before its exit (swapping 32 MiB out and in takes
    // kernel time); the model's from its kernel paths, its exit's unmap
    // included (charged after its end time is taken: hence the 5%).
    let (st, mst) = (f("stime_s[smoke[0]]"), model("stime_s[smoke[0]]"));
    assert!(st > 0.0 && st <= f("elapsed_s") * 2.0, "{run}");
    let end = model("end_s[smoke[0]]");
    assert!(mst > end * 0.1 && mst <= end * 1.05, "{mst} {end}");
    assert!(f("utime_s[smoke[0]]") >= 0.0, "{run}");
    // The host's stats flusher was seen (every 2 s, so within about 2 s
    // of the start, or its deferral), and the model ran that phase.
    let phase = f("stats_flush_phase_s");
    assert!(phase > 0.0 && phase < 4.0, "{run}");
    assert_eq!(model("stats_flush_phase_s"), phase);
    // The run's own buffered read miss was measured before it.
    assert!(
        f("buffered_read_s") > 0.0 && f("buffered_read_s") < 0.1,
        "{run}"
    );
    // Limit reclaim of clean order-0 page cache, measured once before the
    // runs: well under a miss, well over nothing.
    let reclaim = v["host"]["reclaim_page_ns"].as_u64().unwrap_or(0);
    assert!((50..50_000).contains(&reclaim), "{}", v["host"]);
    // zram's swap-out and swap-in, measured once before the runs through
    // a zram swap of the oracle's own (reset after: checked below):
    // compressing a page costs more than dropping a clean one.
    let out = v["host"]["swapout_page_ns"].as_u64().unwrap_or(0);
    let fault = v["host"]["swapin_fault_ns"].as_u64().unwrap_or(0);
    assert!(out > reclaim && out < 200_000, "{}", v["host"]);
    assert!((100..200_000).contains(&fault), "{}", v["host"]);
    // Both sides say when the 64 MiB limit was first met: during the run.
    for t in [f("first_limit_s"), model("first_limit_s")] {
        assert!(
            t > 0.0 && t < f("elapsed_s").max(model("elapsed_s")),
            "{t} {run}"
        );
    }
    assert!(
        !fs::read_to_string("/proc/mounts")
            .unwrap()
            .contains(b.p("scratch").to_str().unwrap()),
        "tracefs and tmpfs unmounted"
    );
    assert!(zram_is_reset(), "zram0 reset and swapped off after the run");
    assert!(journal::pending(&fs::read_to_string(b.p("journal")).unwrap_or_default()).is_empty());
    assert!(!b.p("scratch").exists(), "scratch removed");
}

fn mounted(p: &std::path::Path) -> bool {
    fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some(p.to_str().unwrap()))
}

#[test]
fn a_killed_scenario_oracle_is_undone_by_restore() {
    let _one = ZRAM.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(why) = why_not_real() {
        require::skip(&why);
        return;
    }
    let b = Base::new("kill");
    let mut c = b
        .oracle(&[
            "run",
            "builtin:scn-test-hold",
            "--repeat",
            "1",
            "--quiet",
            "--dir",
            b.p("scratch").to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Until the process is in its group and has swapped (bounded).
    let t0 = Instant::now();
    let entries = loop {
        let e = journal::pending(&fs::read_to_string(b.p("journal")).unwrap_or_default());
        let app = e
            .iter()
            .find(|x| x.kind == "cgroup" && x.path.ends_with("app"))
            .map(|x| x.path.clone());
        let swapped = app.as_ref().is_some_and(|d| {
            fs::read_to_string(d.join("memory.stat"))
                .unwrap_or_default()
                .lines()
                .any(|l| l.starts_with("swap ") && l != "swap 0")
        });
        if swapped {
            break e;
        }
        if let Some(st) = c.try_wait().unwrap() {
            panic!("the oracle exited early: {st}");
        }
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "never swapped: {e:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    c.kill().unwrap(); // SIGKILL: no guard runs
    c.wait().unwrap();
    let kinds: Vec<&str> = entries.iter().map(|e| e.kind.as_str()).collect();
    for k in ["zram", "swap", "mount", "cgroup", "trace-instance"] {
        assert!(kinds.contains(&k), "{k} journaled: {kinds:?}");
    }
    let tmpfs = entries
        .iter()
        .find(|e| e.kind == "mount")
        .unwrap()
        .path
        .clone();
    let groups: Vec<PathBuf> = entries
        .iter()
        .filter(|e| e.kind == "cgroup")
        .map(|e| e.path.clone())
        .collect();
    let mounts: Vec<PathBuf> = entries
        .iter()
        .filter(|e| e.kind == "mount")
        .map(|e| e.path.clone())
        .collect();
    // Left behind by the kill.
    assert!(active_swaps().iter().any(|s| s == ZRAM_NODE));
    assert!(mounted(&tmpfs));
    assert!(mounts.iter().all(|m| mounted(m)), "{mounts:?}");
    assert!(groups.iter().all(|g| g.exists()));

    let out = b.oracle(&["restore"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(zram_is_reset(), "{stderr}");
    assert!(!mounted(&tmpfs), "{stderr}");
    assert!(mounts.iter().all(|m| !mounted(m)), "{stderr}");
    assert!(stderr.contains("removed tracing instance"), "{stderr}");
    assert!(groups.iter().all(|g| !g.exists()), "{stderr}");
    assert!(!b.p("scratch").exists(), "{stderr}");
    assert!(journal::pending(&fs::read_to_string(b.p("journal")).unwrap_or_default()).is_empty());
    assert!(stderr.contains("turned swap /dev/zram0 off"), "{stderr}");
}

#[test]
fn hostile_scenario_arguments_are_refused_in_one_line() {
    let b = Base::new("hostile");
    for (arg, want) in [
        (
            "builtin:../../etc/passwd",
            "no built-in scenario '../../etc/passwd'",
        ),
        ("builtin:", "no built-in scenario ''"),
    ] {
        let out = b
            .oracle(&["run", arg, "--dir", b.p("scratch").to_str().unwrap()])
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{e}");
        assert!(e.contains(want), "{e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
    }
    // Names in a scenario file that would reach outside scratch or the
    // oracle's groups: refused before anything is made, naming file:line.
    let hostile = [
        ("[[file]]\nname = \"../../etc/x\"\nsize = \"1M\"\n", ":1:"),
        ("[[file]]\nname = \"-rf\"\nsize = \"1M\"\n", ":1:"),
        ("[[cgroup]]\npath = \"a/../../system.slice\"\n", ":2:"),
    ];
    for (i, (text, line)) in hostile.iter().enumerate() {
        let f = b.p(&format!("hostile{i}.toml"));
        fs::write(&f, format!("{text}\n[[process]]\nname = \"p\"\nsteps = [{{ op = \"sleep\", time = \"1s\" }}]\n")).unwrap();
        let out = b
            .oracle(&[
                "run",
                f.to_str().unwrap(),
                "--dir",
                b.p("scratch").to_str().unwrap(),
            ])
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {e}");
        assert_eq!(e.trim_end().lines().count(), 1, "{e}");
        assert!(e.contains(&format!("hostile{i}.toml{line}")), "{e}");
        assert!(!b.p("scratch").exists(), "nothing was made: {e}");
    }
    let out = b
        .oracle(&[
            "run",
            "builtin:scn-test-smoke-zram",
            "--memcg-limit",
            "1G",
            "--dir",
            b.p("scratch").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("a scenario sets its limits"));
    assert!(!b.p("scratch").exists(), "nothing was made");
}
