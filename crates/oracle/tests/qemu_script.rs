//! oracle/qemu/run.sh (seed 003 in a QEMU guest) without QEMU: its skip
//! path, its argument errors, and the guest workload program's protocol
//! run natively at toy size. Nothing here boots a guest.

use serde_json::Value;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

#[path = "../../../tests/require.rs"]
mod require;

fn qemu_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../oracle/qemu")
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("foliosim-qemu-test-{}-{name}", std::process::id()));
    let _ = fs::remove_dir_all(&d);
    fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn run_sh_without_qemu_reports_skipped_and_exits_0() {
    let out = scratch("skip");
    let r = Command::new("bash")
        .arg(qemu_dir().join("run.sh"))
        .args(["--out", out.to_str().unwrap()])
        .env("FSIM_QEMU_BIN", "/nonexistent/qemu-system-x86_64")
        .env("FSIM_QEMU_NO_INSTALL", "1")
        .env("FSIM_QEMU_WORK", out.join("work"))
        .output()
        .unwrap();
    assert_eq!(
        r.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    let stdout: Value = serde_json::from_slice(&r.stdout).expect("stdout is one JSON object");
    let why = stdout["skipped"].as_str().expect("a \"skipped\" string");
    assert!(why.contains("qemu-system-x86"), "{why}");
    assert!(String::from_utf8_lossy(&r.stderr).contains(&format!("skipped: {why}")));
    let summary: Value =
        serde_json::from_str(&fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary, stdout);
    // It stopped before fetching or building anything.
    assert!(!out.join("work").exists());
    let _ = fs::remove_dir_all(&out);
}

#[test]
fn run_sh_rejects_bad_arguments_with_exit_2() {
    let out = scratch("args");
    for (args, needle) in [
        (
            vec!["--exp", "aging,bogus"],
            "--exp: unknown experiment 'bogus'",
        ),
        (vec!["--lru", "maybe"], "--lru: 'maybe' is not y or n"),
        (vec!["--frobnicate"], "unknown argument '--frobnicate'"),
        (vec!["--threads", "0"], "--threads: '0' is not 1..64"),
        (vec!["--readers", "8x"], "--readers: '8x' is not 1..256"),
        (vec!["--rounds", "-3"], "--rounds: '-3' is not 1..1000"),
        (vec!["--think", "20"], "--think: '20' is not A_US,F_US"),
        (vec!["--iops", "10,x"], "--iops: '10,x' is not N[,N...]"),
        (vec!["--dd-mb", "0"], "--dd-mb: '0' is not 1..4096"),
        (
            vec!["--kernel", "6.6"],
            "--kernel: '6.6' is not 6.1, 6.12, 7.N (7.0 to 7.3 are packaged) or cache-ext",
        ),
        (vec!["--kernel", "7"], "--kernel: '7' is not 6.1, 6.12, 7.N"),
        (
            vec!["--policy", "lfu"],
            "--policy: 'lfu' is not none, fifo, mru, sampling",
        ),
        (
            vec!["--policy", "sampling"],
            "--policy needs --kernel cache-ext",
        ),
        (
            vec!["--kernel", "cache-ext", "--policy-cgroup", "../x"],
            "--policy-cgroup: '../x' is not a cgroup path",
        ),
        (
            vec!["--kernel", "cache-ext", "--policy-cgroup", "ycsb"],
            "runs policies only in cgroups named cache_ext*",
        ),
        (
            vec!["--kernel", "cache-ext", "--policy-file", "a/b"],
            "--policy-file: 'a/b' is not a file name",
        ),
        (vec!["--secs", "0"], "--secs: '0' is not 1..3600"),
        (
            vec!["--exp", "ycsb,nope"],
            "--exp: unknown experiment 'nope'",
        ),
        (
            vec!["--swappiness", "35,x"],
            "--swappiness: '35,x' is not N[,N...]",
        ),
        (vec!["--repeat", "0"], "--repeat: '0' is not 1..10"),
        (
            vec!["--scenario", "/nonexistent.toml"],
            "--scenario: '/nonexistent.toml' is not a file",
        ),
    ] {
        let r = Command::new("bash")
            .arg(qemu_dir().join("run.sh"))
            .args(["--out", out.to_str().unwrap()])
            .args(&args)
            .env("FSIM_QEMU_NO_INSTALL", "1")
            .output()
            .unwrap();
        assert_eq!(r.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
    let env_cases = [
        ("FSIM_QEMU_SMP", "0", "1..64"),
        ("FSIM_QEMU_SMP", "8x", "1..64"),
        ("FSIM_QEMU_SMP", "65", "1..64"),
        ("FSIM_QEMU_SCRATCH_MB", "255", "256..65536"),
        ("FSIM_QEMU_SCRATCH_MB", "1G", "256..65536"),
        ("FSIM_QEMU_SCRATCH_MB", "65537", "256..65536"),
    ];
    for (var, v, range) in env_cases {
        let r = Command::new("bash")
            .arg(qemu_dir().join("run.sh"))
            .args(["--out", out.to_str().unwrap()])
            .env("FSIM_QEMU_NO_INSTALL", "1")
            .env(var, v)
            .output()
            .unwrap();
        assert_eq!(r.status.code(), Some(2), "{var}={v}");
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(
            err.contains(&format!("{var}: '{v}' is not {range}")),
            "{var}={v}: {err}"
        );
    }
    let _ = fs::remove_dir_all(&out);
}

/// Builds mixpress.c for this host (dynamically: the test needs no static
/// libc); None, said on stderr, where there is no C compiler (under CI it
/// fails instead).
fn build_mixpress(dir: &PathBuf) -> Option<PathBuf> {
    let cc = require::tool("cc", "gcc")?;
    let bin = dir.join("mixpress");
    let r = Command::new(cc)
        .args(["-O2", "-pthread", "-o"])
        .arg(&bin)
        .arg(qemu_dir().join("mixpress.c"))
        .arg("-lm")
        .output();
    match r {
        Ok(r) if r.status.success() => Some(bin),
        Ok(r) => panic!(
            "mixpress.c does not build: {}",
            String::from_utf8_lossy(&r.stderr)
        ),
        Err(e) => panic!("cc does not run: {e}"),
    }
}

fn result_line(stdout: &[u8]) -> Value {
    let s = String::from_utf8_lossy(stdout);
    let line = s
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .expect("a RESULT line");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("RESULT is not JSON ({e}): {line}"))
}

#[test]
fn mixpress_aging_counts_rounds_without_memory_pressure() {
    let dir = scratch("aging");
    let Some(bin) = build_mixpress(&dir) else {
        return;
    };
    let file = dir.join("data.bin");
    fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    // 2 MiB of anon in 2 threads, 2 readers with no pause, 3 rounds, no wait.
    let r = Command::new(&bin)
        .args([
            "aging",
            file.to_str().unwrap(),
            "2",
            "2",
            "2",
            "3",
            "0",
            "0",
            "60",
        ])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v = result_line(&r.stdout);
    assert_eq!(v["rounds"], 3);
    assert_eq!(v["rounds_done"], 3);
    assert_eq!(v["pressure_oom_killed"], false);
    assert_eq!(v["readers_oom_killed"], 0);
    assert_eq!(v["timed_out"], false);
    // One round per line on stderr, in order.
    let err = String::from_utf8_lossy(&r.stderr);
    let rounds: Vec<&str> = err.lines().filter(|l| l.contains(" round ")).collect();
    assert_eq!(rounds.len(), 3, "{err}");
    assert!(rounds[2].contains("round 3/3"), "{err}");

    // A malformed number is an error naming the argument, exit 2.
    let r = Command::new(&bin)
        .args([
            "aging",
            file.to_str().unwrap(),
            "2x",
            "2",
            "2",
            "3",
            "0",
            "0",
            "60",
        ])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("ANON_MB"));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn mixpress_swapmix_reports_both_workers() {
    let dir = scratch("swapmix");
    let Some(bin) = build_mixpress(&dir) else {
        return;
    };
    let file = dir.join("data.bin");
    fs::write(&file, vec![1u8; 1 << 20]).unwrap();
    // 1 s of 1 MiB anon and a 1 MiB file, no think time.
    let r = Command::new(&bin)
        .args(["swapmix", file.to_str().unwrap(), "1", "1", "0", "0"])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v = result_line(&r.stdout);
    assert_eq!(v["killed"], 0);
    assert!(v["anon_ops"].as_u64().unwrap() > 0, "{v}");
    assert!(v["file_ops"].as_u64().unwrap() > 0, "{v}");
    // Operations come in batches of 64 (the clock is read between batches).
    assert_eq!(v["anon_ops"].as_u64().unwrap() % 64, 0, "{v}");
    assert_eq!(v["file_ops"].as_u64().unwrap() % 64, 0, "{v}");
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn mixpress_ycsb_counts_operations_and_their_latency() {
    let dir = scratch("ycsb");
    let Some(bin) = build_mixpress(&dir) else {
        return;
    };
    let file = dir.join("data.bin");
    fs::write(&file, vec![3u8; 1 << 20]).unwrap();
    // 2 threads for 1 s: 1 MiB of cache, 32K reads, 1 ms of CPU each.
    let r = Command::new(&bin)
        .args(["ycsb", file.to_str().unwrap(), "1", "2", "1", "32", "1000"])
        .output()
        .unwrap();
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v = result_line(&r.stdout);
    let ops = v["ops"].as_u64().unwrap();
    // Two threads spinning 1 ms an operation for about a second: at most
    // about 2,000, and at least one each.
    assert!((2..=2100).contains(&ops), "{v}");
    assert!(v["avg_latency_us"].as_f64().unwrap() >= 1000.0, "{v}");
    // Bad sizes are refused, naming the rule, exit 2.
    for args in [["0", "2"], ["1", "65"]] {
        let r = Command::new(&bin)
            .args([
                "ycsb",
                file.to_str().unwrap(),
                args[0],
                args[1],
                "1",
                "32",
                "0",
            ])
            .output()
            .unwrap();
        assert_eq!(r.status.code(), Some(2), "{args:?}");
        assert!(String::from_utf8_lossy(&r.stderr).contains("THREADS 1..64"));
    }
    let _ = fs::remove_dir_all(&dir);
}

/// model.sh's section-4 knobs are checked before anything runs: one line
/// naming the variable, exit 2.
#[test]
fn model_sh_rejects_bad_released_kernel_knobs() {
    if require::tool("jq", "jq").is_none() {
        return;
    }
    for (var, val, needle) in [
        (
            "FSIM_MODEL_DD_LAT",
            "10",
            "FSIM_MODEL_DD_LAT: '10' is not DUR",
        ),
        (
            "FSIM_MODEL_YCSB_CPU_US",
            "3ms",
            "FSIM_MODEL_YCSB_CPU_US: '3ms' is not a number",
        ),
    ] {
        let r = Command::new("bash")
            .arg(qemu_dir().join("model.sh"))
            .arg("/bin/true")
            .env("FSIM_MODEL_EXPS", "ddoom")
            .env(var, val)
            .output()
            .unwrap();
        assert_eq!(r.status.code(), Some(2), "{var}");
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(err.contains(needle), "{var}: {err}");
        assert!(r.stdout.is_empty(), "{var}: ran something");
    }
}

/// table.sh turns the guest's and the model's result lines (their two
/// shapes: vmstat deltas and memory.stat v2 names from the guest, per-type
/// counters from the model) into the fidelity page's rows.
#[test]
fn table_sh_renders_guest_and_model_lines() {
    if require::tool("jq", "jq").is_none() {
        return;
    }
    let dir = scratch("table");
    let guest = dir.join("guest.json");
    let model = dir.join("model.jsonl");
    fs::write(
        &guest,
        concat!(
            r#"{"exp":"swapmix","kernel":"6.12.117+deb12-amd64","lru_gen":"0x0007","swappiness":70,"anon_mb":320,"anon_think_us":20,"file_think_us":50,"#,
            r#""run":{},"memory_stat":{"workingset_refault_anon":3,"workingset_refault_file":4,"pgsteal":5,"workingset_nodereclaim":0},"vmstat_delta":{"pswpout":1,"pswpin":2}}"#,
            "\n",
            r#"{"exp":"aging","kernel":"6.12.117+deb12-amd64","lru_gen":"0x0000","threads":8,"readers":8,"run":{"rounds":16,"rounds_done":13,"pressure_oom_killed":false,"readers_oom_killed":0},"#,
            r#""events":{"oom_kill":0},"memory_stat":{"workingset_refault_file":7,"pgsteal":8,"workingset_nodereclaim":0}}"#,
            "\n"
        ),
    )
    .unwrap();
    fs::write(
        &model,
        concat!(
            r#"{"exp":"swapmix","model":true,"lru":"mglru","kernel":"6.12","swappiness":70,"think_us":"500,1200","anon_mb":320,"#,
            r#""memory_stat":{"pswpout":10,"pswpin":11,"workingset_refault_anon":12,"workingset_refault_file":13,"pgsteal_anon":14,"pgsteal_file":15,"workingset_nodereclaim":16}}"#,
            "\n"
        ),
    )
    .unwrap();
    let run = |exp: &str| {
        let r = Command::new("bash")
            .arg(qemu_dir().join("table.sh"))
            .arg(exp)
            .args([&guest, &model])
            .output()
            .unwrap();
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        String::from_utf8(r.stdout).unwrap()
    };
    let sw = run("swapmix");
    let rows: Vec<&str> = sw.lines().skip(2).collect();
    assert_eq!(
        rows,
        [
            "| guest 6.12.117 mglru | 320 | 20,50 | 70 | 1 | 2 | 3 | 4 | 5 | 0 |",
            // pgsteal is the sum of the model's per-type counters.
            "| model 6.12 mglru | 320 | 500,1200 | 70 | 10 | 11 | 12 | 13 | 29 | 16 |",
        ]
    );
    let ag = run("aging");
    let rows: Vec<&str> = ag.lines().skip(2).collect();
    assert_eq!(
        rows,
        ["| guest 6.12.117 classic | 8 x 8 | 13/16 | false | 0 | 0 | 7 | 8 | 0 |"]
    );
    let r = Command::new("bash")
        .arg(qemu_dir().join("table.sh"))
        .arg("bogus")
        .arg(&guest)
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    let _ = fs::remove_dir_all(&dir);
}
