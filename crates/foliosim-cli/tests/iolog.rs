//! fio's iologs between real fio 3.33 and foliosim, both ways: a log
//! real fio writes replays in the model with the job's own counters, and
//! a log foliosim writes (write_iolog) replays in real fio with the same
//! I/O. Needs fio (skipped without it, failing under CI).

use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../../../tests/require.rs"]
mod require;

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("foliosim-iolog-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// The JSON of a command run in `dir`.
fn json(dir: &Path, cmd: &str, args: &[&str]) -> serde_json::Value {
    let out = Command::new(cmd)
        .current_dir(dir)
        .args(args)
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{cmd} {args:?}: {e}: {text}"))
}

fn foliosim(dir: &Path, args: &[&str]) -> serde_json::Value {
    let mut a = vec!["fio"];
    a.extend_from_slice(args);
    a.push("--json");
    json(dir, env!("CARGO_BIN_EXE_foliosim"), &a)
}

fn have_fio() -> bool {
    require::tool("fio", "fio").is_some()
}

#[test]
fn a_log_real_fio_writes_replays_in_the_model_as_the_job() {
    if !have_fio() {
        return;
    }
    let dir = scratch("from-fio");
    let job = ["--name=sr", "--rw=read", "--bs=4k", "--size=256k"];
    let mut args = job.to_vec();
    args.extend(["--write_iolog=sr.log", "--output-format=json"]);
    json(&dir, "fio", &args);
    let direct = foliosim(&dir, &job);
    let r = foliosim(&dir, &["--name=replay", "--read_iolog=sr.log"]);
    assert_eq!(r["jobs"][0]["read"]["io_bytes"], 256 << 10);
    for k in [
        "pgpgin",
        "foliosim_ra_sync",
        "foliosim_ra_async",
        "pgalloc_normal",
    ] {
        assert_eq!(r["vmstat"][k], direct["vmstat"][k], "{k}");
    }
}

#[test]
fn a_log_foliosim_writes_replays_in_real_fio() {
    if !have_fio() {
        return;
    }
    let dir = scratch("from-model");
    let job = ["--name=rr", "--rw=randrw", "--bs=4k", "--size=128k"];
    let mut args = job.to_vec();
    args.push("--write_iolog=rr.log");
    let model = foliosim(&dir, &args);
    // fio replays onto files that exist (it lays out nothing for a log).
    std::fs::write(dir.join("rr.0.0"), vec![0u8; 128 << 10]).unwrap();
    let real = json(
        &dir,
        "fio",
        &[
            "--name=replay",
            "--read_iolog=rr.log",
            "--output-format=json",
        ],
    );
    for d in ["read", "write"] {
        let (m, f) = (&model["jobs"][0][d], &real["jobs"][0][d]);
        assert_eq!(m["io_bytes"], f["io_bytes"], "{d}");
        assert_eq!(m["total_ios"], f["total_ios"], "{d}");
    }
    assert_eq!(real["jobs"][0]["error"], 0);
}
