//! oracle/qemu/run.sh (seed 003 in a QEMU guest) without QEMU: its skip
//! path, its argument errors, and the guest workload program's protocol
//! run natively at toy size. Nothing here boots a guest.

use serde_json::Value;
use std::fs;
use std::path::PathBuf;
use std::process::Command;

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
    assert_eq!(r.status.code(), Some(0), "stderr: {}", String::from_utf8_lossy(&r.stderr));
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
        (vec!["--exp", "aging,bogus"], "--exp: unknown experiment 'bogus'"),
        (vec!["--lru", "maybe"], "--lru: 'maybe' is not y or n"),
        (vec!["--frobnicate"], "unknown argument '--frobnicate'"),
        (vec!["--threads", "0"], "--threads: '0' is not 1..64"),
        (vec!["--readers", "8x"], "--readers: '8x' is not 1..256"),
        (vec!["--rounds", "-3"], "--rounds: '-3' is not 1..1000"),
        (vec!["--think", "20"], "--think: '20' is not A_US,F_US"),
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
    let _ = fs::remove_dir_all(&out);
}

/// Builds mixpress.c for this host (dynamically: the test needs no static
/// libc); None, said on stderr, where there is no C compiler.
fn build_mixpress(dir: &PathBuf) -> Option<PathBuf> {
    let bin = dir.join("mixpress");
    let r = Command::new("cc")
        .args(["-O2", "-pthread", "-o"])
        .arg(&bin)
        .arg(qemu_dir().join("mixpress.c"))
        .arg("-lm")
        .output();
    match r {
        Ok(r) if r.status.success() => Some(bin),
        Ok(r) => panic!("mixpress.c does not build: {}", String::from_utf8_lossy(&r.stderr)),
        Err(e) => {
            eprintln!("skipped: no C compiler ({e})");
            None
        }
    }
}

fn result_line(stdout: &[u8]) -> Value {
    let s = String::from_utf8_lossy(stdout);
    let line = s.lines().find_map(|l| l.strip_prefix("RESULT ")).expect("a RESULT line");
    serde_json::from_str(line).unwrap_or_else(|e| panic!("RESULT is not JSON ({e}): {line}"))
}

#[test]
fn mixpress_aging_counts_rounds_without_memory_pressure() {
    let dir = scratch("aging");
    let Some(bin) = build_mixpress(&dir) else { return };
    let file = dir.join("data.bin");
    fs::write(&file, vec![7u8; 1 << 20]).unwrap();
    // 2 MiB of anon in 2 threads, 2 readers with no pause, 3 rounds, no wait.
    let r = Command::new(&bin)
        .args(["aging", file.to_str().unwrap(), "2", "2", "2", "3", "0", "0", "60"])
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
        .args(["aging", file.to_str().unwrap(), "2x", "2", "2", "3", "0", "0", "60"])
        .output()
        .unwrap();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("ANON_MB"));
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn mixpress_swapmix_reports_both_workers() {
    let dir = scratch("swapmix");
    let Some(bin) = build_mixpress(&dir) else { return };
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
