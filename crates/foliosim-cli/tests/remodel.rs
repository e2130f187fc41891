//! `foliosim oracle remodel`: a report's recorded real runs against the
//! model as it is now, without the host. Runs on the committed fidelity
//! report (docs/fidelity/report.json), whatever suite wrote it.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn foliosim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("foliosim-remodel-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn remodel(report: &Path, out: &Path, case: &str) -> (i32, String, String) {
    remodel_with(report, out, case, &[])
}

fn remodel_with(report: &Path, out: &Path, case: &str, more: &[&str]) -> (i32, String, String) {
    let cases = root().join("oracle/cases");
    let mut args = vec![
        "oracle",
        "remodel",
        report.to_str().unwrap(),
        "--cases",
        cases.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--case",
        case,
        "--quiet",
    ];
    args.extend_from_slice(more);
    foliosim(&args)
}

fn read(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn case<'a>(r: &'a Value, name: &str) -> &'a Value {
    r["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no case {name}"))
}

const CASE: &str = "scn-anon-seq-zram";

#[test]
fn remodel_keeps_the_real_runs_and_runs_the_model_again() {
    let report = root().join("docs/fidelity/report.json");
    let recorded = read(&report);
    let (a, b) = (tmp("a"), tmp("b"));
    let (rc, stdout, stderr) = remodel(&report, &a, CASE);
    assert_eq!(rc, 0, "{stderr}");
    assert!(stdout.contains("wrote "), "{stdout}");
    let got = read(&a.join("report.json"));
    assert_eq!(got["cases"].as_array().unwrap().len(), 1);
    let (old, new) = (case(&recorded, CASE), case(&got, CASE));
    // The real side is the recorded one, run for run.
    assert_eq!(old["outcome"]["runs"], new["outcome"]["runs"]);
    let rows = new["outcome"]["rows"].as_array().unwrap();
    let row = |name: &str| {
        rows.iter()
            .find(|r| r["counter"] == name)
            .unwrap_or_else(|| panic!("no row {name}"))
    };
    let old_row = |name: &str| {
        old["outcome"]["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["counter"] == name)
            .unwrap()
            .clone()
    };
    assert_eq!(
        row("vmstat.pswpout")["real_median"],
        old_row("vmstat.pswpout")["real_median"]
    );
    assert!(row("vmstat.pswpout")["model"].as_f64().unwrap() > 0.0);
    // Deterministic: the same report again gives the same bytes.
    assert_eq!(remodel(&report, &b, CASE).0, 0);
    assert_eq!(
        std::fs::read(a.join("report.json")).unwrap(),
        std::fs::read(b.join("report.json")).unwrap()
    );
    // The model side is run, not copied: a report whose recorded model
    // values are wrong gives the same new ones.
    let mut spoiled = recorded.clone();
    for c in spoiled["cases"].as_array_mut().unwrap() {
        if let Some(rows) = c["outcome"]["rows"].as_array_mut() {
            for r in rows {
                r["model"] = Value::from(-1.0);
            }
        }
    }
    let d = tmp("spoiled");
    let sp = d.join("spoiled.json");
    std::fs::write(&sp, serde_json::to_string(&spoiled).unwrap()).unwrap();
    let c = tmp("c");
    assert_eq!(remodel(&sp, &c, CASE).0, 0);
    assert_eq!(
        std::fs::read(a.join("report.json")).unwrap(),
        std::fs::read(c.join("report.json")).unwrap()
    );
}

#[test]
fn remodel_refuses_what_it_cannot_run_in_one_line() {
    let report = root().join("docs/fidelity/report.json");
    let out = tmp("bad");
    // A case the report does not have.
    let (rc, _, e) = remodel(&report, &out, "no-such-case");
    assert_eq!(rc, 2);
    assert!(e.contains("no recorded case named 'no-such-case'"), "{e}");
    assert_eq!(e.trim().lines().count(), 1, "{e}");
    // Not JSON: the file is named.
    let junk = out.join("junk.json");
    std::fs::write(&junk, "{ nope").unwrap();
    let (rc, _, e) = remodel(&junk, &out, CASE);
    assert_eq!(rc, 2);
    assert!(e.contains("junk.json: not JSON"), "{e}");
    // A fio case on ext4 needs its runs' layouts; a report without them
    // says so for that case, and with nothing left to run, fails.
    let recorded = read(&report);
    if recorded["host"]["ext4"].get("Ok").is_some() {
        // With its layouts recorded, the fio case runs again (its model
        // reads what it read).
        if case(&recorded, "psync-rand-fit")["outcome"]
            .get("layouts")
            .is_some()
        {
            let ok = tmp("fio");
            let (rc, _, e) = remodel(&report, &ok, "psync-rand-fit");
            assert_eq!(rc, 0, "{e}");
            let got = read(&ok.join("report.json"));
            let model = |r: &Value| {
                case(r, "psync-rand-fit")["outcome"]["rows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|x| x["counter"] == "io.rbytes")
                    .map(|x| x["model"].clone())
            };
            assert!(model(&got).is_some_and(|m| m.as_f64().unwrap() > 0.0));
        }
        let mut r = recorded.clone();
        for c in r["cases"].as_array_mut().unwrap() {
            c["outcome"].as_object_mut().unwrap().remove("layouts");
        }
        let p = out.join("nolayouts.json");
        std::fs::write(&p, serde_json::to_string(&r).unwrap()).unwrap();
        let (rc, _, e) = remodel(&p, &out, "psync-rand-fit");
        assert_eq!(rc, 2, "{e}");
        assert!(
            e.contains(
                "psync-rand-fit: not re-modelled: a fio case on ext4 needs its runs' file layouts"
            ),
            "{e}"
        );
    }
}

/// --trace-dir: each distinct run input's model run writes its own trace,
/// and the probes the oracle's costs run in the model do not take it.
#[test]
fn remodel_traces_each_model_run_on_its_own() {
    let report = root().join("docs/fidelity/report.json");
    let recorded = read(&report);
    let (out, dir) = (tmp("traced"), tmp("traces"));
    let (rc, _, e) = remodel_with(
        &report,
        &out,
        CASE,
        &[
            "--trace-dir",
            dir.to_str().unwrap(),
            "--trace-events",
            "vmscan",
        ],
    );
    assert_eq!(rc, 0, "{e}");
    // One trace per distinct (flush phase, read miss) input of the runs.
    let runs = case(&recorded, CASE)["outcome"]["runs"]
        .as_array()
        .unwrap()
        .clone();
    let mut inputs: Vec<String> = runs
        .iter()
        .map(|r| {
            format!(
                "{:?}/{:?}",
                r.get("stats_flush_phase_s").and_then(Value::as_f64),
                r.get("read_miss_s").and_then(Value::as_f64)
            )
        })
        .collect();
    inputs.sort();
    inputs.dedup();
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), inputs.len(), "{files:?}");
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with(&format!("{CASE}-phase")) && name.ends_with(".trace"));
        let text = std::fs::read_to_string(f).unwrap();
        // The case swaps 64 MiB of anon: its reclaim is in the trace, and
        // only vmscan's events are.
        assert!(text.contains("mm_vmscan_lru_shrink_inactive"), "{name}");
        assert!(!text.contains("mm_filemap_add_to_page_cache"), "{name}");
    }
    // --trace-events needs --trace-dir.
    let (rc, _, e) = foliosim(&[
        "oracle",
        "remodel",
        report.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--trace-events",
        "vmscan",
    ]);
    assert_eq!(rc, 2);
    assert!(e.contains("--trace-dir"), "{e}");
}
