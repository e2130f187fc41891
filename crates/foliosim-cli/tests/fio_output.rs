//! `foliosim fio --output-format=normal|json|json+`: fio's own tools read
//! our json+, our JSON has the keys fio 3.33 prints, group_reporting
//! merges jobs, the text keeps fio's percentile order, output is
//! deterministic. The tests against fio's own tools skip without them,
//! and fail under CI=true.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

#[path = "../../../tests/require.rs"]
mod require;

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

/// A test's scratch directory, removed when the test ends (pass or fail).
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn scratch(name: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("foliosim-fio-output-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    Scratch(d)
}

/// A random read of a file twice the memcg's size, blocks chosen with
/// repeats (norandommap): page cache hits and misses, so the latency
/// histogram has more than one bucket.
const MIXED: &[&str] = &[
    "fio",
    "--name=mix",
    "--rw=randread",
    "--bs=4k",
    "--size=16M",
    "--io_size=8M",
    "--norandommap",
    "--memcg-limit=8M",
];

fn run_json(extra: &[&str]) -> (String, Value) {
    let mut args = MIXED.to_vec();
    args.extend_from_slice(extra);
    let (code, out, err) = foliosim(&args);
    assert_eq!(code, 0, "{err}");
    let v = serde_json::from_str(&out).expect("valid JSON");
    (out, v)
}

#[test]
fn fio_jsonplus_clat2csv_reads_our_json_plus() {
    let Some(tool) = require::tool("fio_jsonplus_clat2csv", "fio") else {
        return;
    };
    let Some(python) = require::tool("python3", "python3") else {
        return;
    };
    let (out, v) = run_json(&["--output-format=json+"]);
    let dir = scratch("clat2csv");
    let src = dir.join("mix.json");
    std::fs::write(&src, &out).unwrap();
    let dest = dir.join("mix.csv");
    for extra in [&[][..], &["--validate"][..]] {
        let st = Command::new(&python)
            .arg(&tool)
            .arg(&src)
            .arg(&dest)
            .args(extra)
            .output()
            .expect("python3 runs");
        assert!(
            st.status.success(),
            "fio_jsonplus_clat2csv {extra:?}: {}",
            String::from_utf8_lossy(&st.stderr)
        );
    }
    // One CSV per job: a header, then a row per latency bucket.
    let csv = std::fs::read_to_string(dir.join("mix_job0.csv")).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').map(str::trim).collect();
    assert_eq!(header[0], "nsec");
    assert_eq!(
        &header[1..4],
        [
            "read_slat_ns_count",
            "read_slat_ns_cumulative",
            "read_slat_ns_percentile"
        ]
    );
    // nsec + 3 directions x 3 latencies x 3 columns (and the trailing comma).
    assert_eq!(header.len(), 1 + 27 + 1);
    let col = header
        .iter()
        .position(|c| *c == "read_clat_ns_count")
        .unwrap();
    let cum = header
        .iter()
        .position(|c| *c == "read_clat_ns_cumulative")
        .unwrap();
    let bins = v["jobs"][0]["read"]["clat_ns"]["bins"].as_object().unwrap();
    assert!(bins.len() > 1, "hits and misses fall in different buckets");
    let rows: Vec<Vec<String>> = lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(',').map(|c| c.trim().to_string()).collect())
        .collect();
    assert_eq!(rows.len(), bins.len());
    let mut last_cum = 0;
    for r in &rows {
        assert_eq!(
            bins[&r[0]].as_u64().unwrap(),
            r[col].parse::<u64>().unwrap(),
            "bucket {}",
            r[0]
        );
        last_cum = r[cum].parse().unwrap();
    }
    assert_eq!(
        last_cum,
        v["jobs"][0]["read"]["clat_ns"]["N"].as_u64().unwrap()
    );
    assert_eq!(last_cum, 2048, "8M in 4k reads");
}

/// Every key path of a JSON document, with the keys of maps keyed by
/// values (percentiles, bins) left out.
fn key_paths(v: &Value, path: &str, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let p = format!("{path}/{k}");
                out.insert(p.clone());
                if k != "percentile" && k != "bins" {
                    key_paths(x, &p, out);
                }
            }
        }
        Value::Array(a) => {
            for x in a {
                key_paths(x, &format!("{path}[]"), out);
            }
        }
        _ => {}
    }
}

#[test]
fn json_keys_are_fio_3_33s() {
    if require::tool("fio", "fio").is_none() {
        return;
    }
    let have_fio = Command::new("fio")
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    let version = match have_fio {
        Ok(v) if v.starts_with("fio-3.") => v,
        other => {
            require::skip(&format!("no fio 3.x to compare with ({other:?})"));
            return;
        }
    };
    let dir = scratch("schema");
    let file = dir.join("f");
    let fname = format!("--filename={}", file.display());
    let job = ["--name=t", &fname, "--size=4M", "--rw=randread", "--bs=4k"];
    // fio prints its JSON, then its normal output, of the same run.
    let real = Command::new("fio")
        .args(job)
        .arg("--output-format=json+,normal")
        .output()
        .expect("fio runs");
    assert!(
        real.status.success(),
        "{}",
        String::from_utf8_lossy(&real.stderr)
    );
    let text = String::from_utf8_lossy(&real.stdout).into_owned();
    // (normal mode first prints the job lines and "Starting 1 process")
    let json_start = text.find("\n{\n").map_or(0, |i| i + 1);
    let json_end = text.find("\n}\n").expect("fio's JSON ends with a lone }") + 3;
    let real_normal = &text[json_end..];
    let real: Value = serde_json::from_str(&text[json_start..json_end]).expect("fio prints JSON");
    let mut args = vec!["fio"];
    args.extend_from_slice(&job);
    args.push("--output-format=json+");
    let (code, out, err) = foliosim(&args);
    assert_eq!(code, 0, "{err}");
    let ours: Value = serde_json::from_str(&out).unwrap();
    let (mut a, mut b) = (BTreeSet::new(), BTreeSet::new());
    key_paths(&ours, "", &mut a);
    key_paths(&real, "", &mut b);
    // foliosim's extras live under their own key; disk_util's entries
    // depend on the host's disks (we print none).
    a.retain(|k| !k.starts_with("/foliosim"));
    b.retain(|k| !k.starts_with("/disk_util[]"));
    assert_eq!(
        a.difference(&b).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "keys fio {version} does not print"
    );
    assert_eq!(
        b.difference(&a).collect::<Vec<_>>(),
        Vec::<&String>::new(),
        "keys fio {version} prints that we do not"
    );
    // Same job options, same counts; percentiles as fio's keys.
    assert_eq!(
        ours["jobs"][0]["job options"],
        real["jobs"][0]["job options"]
    );
    assert_eq!(ours["jobs"][0]["read"]["total_ios"], 1024);
    assert_eq!(real["jobs"][0]["read"]["total_ios"], 1024);
    let pk = |v: &Value| -> Vec<String> {
        v["jobs"][0]["read"]["clat_ns"]["percentile"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(pk(&ours), pk(&real));
    // fio's own percentiles from fio's own histogram: refilling our
    // histogram with real fio's json+ bins must give the percentiles real
    // fio printed (same buckets, same rank rule).
    let clat = &real["jobs"][0]["read"]["clat_ns"];
    let mut h = foliosim::fio_stat::LatHist::default();
    for (ns, n) in clat["bins"].as_object().unwrap() {
        for _ in 0..n.as_u64().unwrap() {
            h.add(ns.parse().unwrap());
        }
    }
    for (p, v) in h.percentiles(&foliosim::fio_stat::DEFAULT_PERCENTILES) {
        assert_eq!(
            clat["percentile"][format!("{p:.6}")].as_u64(),
            Some(v),
            "{p}th of fio's histogram"
        );
    }
    // And printed as fio's normal output prints them, character for
    // character.
    let mut ours_text = String::new();
    foliosim::fio_output::show_percentiles(&mut ours_text, &h, "clat");
    let start = real_normal
        .find("    clat percentiles")
        .expect("fio prints clat percentiles");
    assert_eq!(&real_normal[start..start + ours_text.len()], ours_text);
}

#[test]
fn json_is_deterministic_and_normal_text_is_in_fios_order() {
    let (a, v) = run_json(&["--output-format=json+"]);
    let (b, _) = run_json(&["--output-format=json+"]);
    assert_eq!(a, b, "two runs, byte-identical");
    assert_eq!(v["timestamp"], 0, "no wall clock");
    assert_eq!(v["fio version"], "fio-3.33");
    let j = &v["jobs"][0];
    assert_eq!(j["read"]["io_bytes"], 8 << 20);
    // The model's counters ride along under their own key, and majf is
    // the job's share of them (psync reads take no faults).
    assert!(v["foliosim"]["memcg"]["pgpgin"].as_u64().unwrap() > 0);
    assert_eq!(j["majf"], 0);
    // The text output: percentiles in numeric order, equal to the JSON's.
    let mut args = MIXED.to_vec();
    args.push("--output-format=normal");
    let (code, text, err) = foliosim(&args);
    assert_eq!(code, 0, "{err}");
    let (_, text2, _) = foliosim(&args);
    assert_eq!(text, text2);
    let mut cells = Vec::new();
    for l in text.lines().filter(|l| l.starts_with("     |")) {
        for c in l.trim_start_matches("     |").split("],") {
            let c = c.trim().trim_end_matches(']');
            if let Some((p, v)) = c.split_once("th=[") {
                cells.push((
                    p.trim().parse::<f64>().unwrap(),
                    v.trim().parse::<u64>().unwrap(),
                ));
            }
        }
    }
    let want: Vec<f64> = vec![
        1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9,
        99.95, 99.99,
    ];
    assert_eq!(cells.iter().map(|c| c.0).collect::<Vec<_>>(), want);
    let scale = if text.contains("clat percentiles (usec)") {
        1000
    } else {
        1
    };
    for (p, v) in &cells {
        let ns = j["read"]["clat_ns"]["percentile"][format!("{p:.6}")]
            .as_u64()
            .unwrap();
        assert_eq!(*v, ns.div_ceil(scale), "{p}th");
    }
    assert!(text.contains("\nRun status group 0 (all jobs):\n   READ: bw="));
    // foliosim's counters follow fio's part.
    let run_status = text.find("Run status group 0").unwrap();
    assert!(text.find("memory.stat").unwrap() > run_status);
}

#[test]
fn group_reporting_merges_a_group_and_new_group_starts_one() {
    let dir = scratch("groups");
    let job = dir.join("g.fio");
    std::fs::write(
        &job,
        "[global]\nsize=4M\nbs=4k\n\n[a]\nrw=read\nnumjobs=3\ngroup_reporting\n\n[b]\nnew_group\nrw=write\nnumjobs=2\n",
    )
    .unwrap();
    let (code, out, err) = foliosim(&["fio", job.to_str().unwrap(), "--output-format=json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap();
    let jobs = v["jobs"].as_array().unwrap();
    // a's three clones as one entry; b's two (no group_reporting) apart.
    let names: Vec<(&str, u64)> = jobs
        .iter()
        .map(|j| {
            (
                j["jobname"].as_str().unwrap(),
                j["groupid"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(names, [("a", 0), ("b", 1), ("b", 1)]);
    assert_eq!(jobs[0]["read"]["total_ios"], 3 * 1024);
    assert_eq!(jobs[0]["read"]["clat_ns"]["N"], 3 * 1024);
    assert_eq!(jobs[0]["read"]["io_bytes"], 3 * (4 << 20));
    assert_eq!(jobs[1]["write"]["total_ios"], 1024);
    assert_eq!(v["global options"]["size"], "4M");
    assert_eq!(jobs[0]["job options"]["numjobs"], "3");
    let (code, text, _) = foliosim(&["fio", job.to_str().unwrap(), "--output-format=normal"]);
    assert_eq!(code, 0);
    assert!(text.contains("a: (groupid=0, jobs=3): err= 0"), "{text}");
    assert_eq!(text.matches("b: (groupid=1, jobs=1): err= 0").count(), 2);
    assert!(text.contains("Run status group 0 (all jobs):\n   READ:"));
    assert!(text.contains("Run status group 1 (all jobs):\n  WRITE:"));
}

#[test]
fn output_format_errors_exit_2() {
    for (args, want) in [
        (
            &["--output-format=terse"][..],
            "terse output is not supported",
        ),
        (&["--output-format=xml"][..], "unknown output format 'xml'"),
        (&["--output-format"][..], "--output-format: missing value"),
        (
            &["--output-format=json", "--json"][..],
            "--json and --output-format",
        ),
    ] {
        let mut a = vec!["fio", "--name=x", "--size=1M"];
        a.extend_from_slice(args);
        let (code, _, err) = foliosim(&a);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
    // fio's `--output-format json` (value as the next argument) works too.
    let (code, out, err) = foliosim(&["fio", "--name=x", "--size=1M", "--output-format", "json"]);
    assert_eq!(code, 0, "{err}");
    assert!(serde_json::from_str::<Value>(&out).unwrap()["jobs"].is_array());
}
