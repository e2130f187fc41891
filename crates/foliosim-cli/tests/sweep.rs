//! `foliosim sweep`: grid errors, the table's schema and order, the same
//! table however many workers ran it, and resuming a journal.

use std::path::{Path, PathBuf};
use std::process::Command;

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

/// A fresh folder with a small fio job beside the grids.
fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("foliosim-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("job.fio"), "[seqread]\nrw=read\nbs=4k\nsize=2M\n").unwrap();
    d
}

fn write(d: &Path, name: &str, text: &str) -> String {
    let p = d.join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn sweep(grid: &str, out: &Path, extra: &[&str]) -> String {
    let out = out.display().to_string();
    let mut args = vec!["sweep", grid, "--out", &out];
    args.extend(extra);
    let (code, stdout, stderr) = foliosim(&args);
    assert_eq!(code, 0, "{stderr}");
    stdout
}

const GRID: &str = "workload = [\"fio\", \"job.fio\"]\nrepeats = 2\nseed = 5\n\n\
[base]\nmemory = \"128M\"\n\n\
[vary]\nmemcg-limit = [\"1M\", \"4M\"]\nfio.size = [\"1M\", \"2M\", \"3M\"]\nset = [\"baseline\", \"mglru\"]\n";

#[test]
fn bad_grids_exit_2_with_one_line_naming_file_line_key() {
    let d = dir("bad");
    let cases: &[(&str, &str, &str)] = &[
        ("workload = [\"fio\", \"job.fio\"]\nfoo = 1\n", ":2: foo:", "unknown key"),
        ("workload = [\"fio\", \"job.fio\"]\n[vary]\nmemcg-limit = \"4M\"\n", ":3: memcg-limit:", "list"),
        (
            "workload = [\"fio\", \"job.fio\"]\n[vary]\nmemcg-limit = [\"4M\",\n  \"4Q\"]\n",
            ":4: memcg-limit:",
            "bad size '4Q'",
        ),
        ("workload = [\"fio\", \"job.fio\"]\n[vary]\nfio.bs = [\"4k\", \"zz\"]\n", ":3: fio.bs:", "bs: bad size 'zz'"),
        ("workload = [\"fio\", \"job.fio\"]\n[vary]\nno-such-option = [1]\n", ":3: no-such-option:", "no-such-option"),
        ("workload = [\"fio\", \"job.fio\"]\n[vary]\njson = [true]\n", ":3: json:", "output option"),
        ("workload = [\"fio\", \"job.fio\"]\n[base]\nseed = 3\n", ":3: seed:", "top-level"),
        ("[vary]\nlru = [\"mglru\"]\n", ":1: workload:", "missing"),
        ("workload = [\"fio\", \"job.fio\"\n", ":1: toml:", "invalid TOML"),
        (
            "workload = [\"fio\", \"job.fio\"]\n[[point]]\nlru = \"mglru\"\n[[point]]\nmemcg-limit = \"4M\"\n",
            // The first point (its [[point]] line) lacks the second's key.
            ":2: memcg-limit:",
            "no value",
        ),
        ("workload = [\"fio\", \"job.fio\"]\nrepeats = 0\n", ":2: repeats:", "1..="),
        ("workload = [\"run\", \"job.fio\"]\n[vary]\nfio.bs = [\"4k\"]\n", ":3: fio.bs:", "need a fio workload"),
    ];
    for (i, (text, at, msg)) in cases.iter().enumerate() {
        let g = write(&d, &format!("g{i}.toml"), text);
        let out = d.join(format!("o{i}"));
        let (code, stdout, stderr) = foliosim(&["sweep", &g, "--out", &out.display().to_string()]);
        assert_eq!(code, 2, "case {i}: {stderr}");
        assert!(stdout.is_empty(), "case {i}: {stdout}");
        assert_eq!(stderr.lines().count(), 1, "case {i}: {stderr}");
        assert!(
            stderr.starts_with(&format!("foliosim: {g}{at}")),
            "case {i}: {stderr}"
        );
        assert!(stderr.contains(msg), "case {i}: {stderr}");
        // Refused before anything ran: no journal, no table.
        assert!(!d.join(format!("o{i}.journal.csv")).exists(), "case {i}");
    }
}

#[test]
fn the_table_is_sorted_and_the_same_for_any_number_of_workers() {
    let d = dir("jobs");
    let g = write(&d, "grid.toml", GRID);
    sweep(&g, &d.join("one"), &["--jobs", "1"]);
    sweep(&g, &d.join("three"), &["--jobs", "3"]);
    let one = std::fs::read(d.join("one.csv")).unwrap();
    assert_eq!(one, std::fs::read(d.join("three.csv")).unwrap());
    assert_eq!(
        std::fs::read(d.join("one.parquet")).unwrap(),
        std::fs::read(d.join("three.parquet")).unwrap()
    );
    let text = String::from_utf8(one).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(
        header[..9],
        [
            "point",
            "repeat",
            "seed",
            "param.memcg-limit",
            "param.fio.size",
            "param.set",
            "elapsed_s",
            "fio.read_bytes",
            "fio.write_bytes"
        ]
    );
    let memcg = header.iter().position(|h| h.starts_with("memcg.")).unwrap();
    let vmstat = header
        .iter()
        .position(|h| h.starts_with("vmstat."))
        .unwrap();
    assert!(memcg < vmstat && header[vmstat..].iter().all(|h| h.starts_with("vmstat.")));
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    // 2 x 3 x 2 points, 2 repeats each, in (point, repeat) order; the
    // product's first parameter varies slowest.
    assert_eq!(rows.len(), 24);
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(r[0], (i / 2).to_string());
        assert_eq!(r[1], (i % 2).to_string());
        assert_eq!(r[2], (5 + i % 2).to_string(), "seed = grid seed + repeat");
        let p = i / 2;
        assert_eq!(r[3], ["1M", "4M"][p / 6]);
        assert_eq!(r[4], ["1M", "2M", "3M"][p / 2 % 3]);
        assert_eq!(r[5], ["baseline", "mglru"][p % 2]);
        // fio.size overrides the job file's size: fio reads it all.
        let size: u64 = [1, 2, 3][p / 2 % 3] << 20;
        assert_eq!(r[col("fio.read_bytes")], size.to_string());
        assert_eq!(r[col("fio.write_bytes")], "0");
    }
    // The 1M group holds less than the 2M and 3M files: reclaim ran there
    // and not under the 4M limit.
    let scanned = |i: usize| rows[i][col("memcg.pgscan_direct")].parse::<u64>().unwrap();
    assert!(scanned(4) > 0, "1M limit, 2M file");
    assert_eq!(scanned(12 + 4), 0, "4M limit, 2M file");
}

#[test]
fn a_journal_resumes_dropping_a_torn_line_and_the_table_is_unchanged() {
    let d = dir("resume");
    let g = write(&d, "grid.toml", GRID);
    sweep(&g, &d.join("full"), &[]);
    let journal = std::fs::read_to_string(d.join("full.journal.csv")).unwrap();
    let lines: Vec<&str> = journal.lines().collect();
    assert_eq!(lines.len(), 25);
    // A killed sweep's journal: the header, 9 rows in the order they
    // finished (here reversed), then a row cut mid-write.
    let mut part: String = lines[0].to_string() + "\n";
    for l in lines[16..25].iter().rev() {
        part.push_str(l);
        part.push('\n');
    }
    part.push_str(&lines[3][..lines[3].len() / 2]);
    std::fs::write(d.join("part.journal.csv"), part).unwrap();
    let out = sweep(&g, &d.join("part"), &["--resume"]);
    assert!(
        out.contains("24 rows (15 run now, 9 from the journal)"),
        "{out}"
    );
    assert_eq!(
        std::fs::read(d.join("full.csv")).unwrap(),
        std::fs::read(d.join("part.csv")).unwrap()
    );
    assert_eq!(
        std::fs::read(d.join("full.parquet")).unwrap(),
        std::fs::read(d.join("part.parquet")).unwrap()
    );
    // Each row once in the journal: the torn one was cut, not kept.
    let j = std::fs::read_to_string(d.join("part.journal.csv")).unwrap();
    assert_eq!(j.lines().count(), 25);
    // Run again: nothing left to run.
    let out = sweep(&g, &d.join("part"), &[]);
    assert!(out.contains("(0 run now, 24 from the journal)"), "{out}");
}

#[test]
fn a_journal_of_another_grid_is_refused() {
    let d = dir("other");
    let g = write(&d, "grid.toml", GRID);
    sweep(&g, &d.join("a"), &[]);
    let other = write(
        &d,
        "other.toml",
        &GRID.replace("\"1M\", \"4M\"", "\"1M\", \"8M\""),
    );
    let out = d.join("a").display().to_string();
    let (code, _, stderr) = foliosim(&["sweep", &other, "--out", &out]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("the journal is not this grid's"),
        "{stderr}"
    );
    let (code, _, stderr) = foliosim(&[
        "sweep",
        &g,
        "--out",
        &d.join("none").display().to_string(),
        "--resume",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("--resume: no journal"), "{stderr}");
}

#[test]
fn scenario_parameters_substitute_into_the_scenario() {
    let d = dir("scenario");
    write(
        &d,
        "anon.toml",
        "[[process]]\nname = \"p\"\nsteps = [\n  { op = \"mmap_anon\", map = \"heap\", size = \"${SIZE}\" },\n  \
         { op = \"touch\", map = \"heap\", pattern = \"seq\", write = true },\n]\n",
    );
    let g = write(
        &d,
        "grid.toml",
        "workload = [\"run\", \"anon.toml\"]\n[base]\nmemory = \"128M\"\n[vary]\nscenario.SIZE = [\"1M\", \"2M\"]\n",
    );
    sweep(&g, &d.join("o"), &[]);
    let text = std::fs::read_to_string(d.join("o.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert!(
        !header.contains(&"fio.read_bytes"),
        "no fio columns for a scenario"
    );
    let col = header.iter().position(|h| *h == "vmstat.pgfault").unwrap();
    let faults: Vec<u64> = lines
        .map(|l| l.split(',').nth(col).unwrap().parse().unwrap())
        .collect();
    // Writing each page of an anonymous mapping faults once: 256 more
    // pages, 256 more faults.
    assert_eq!(faults[1] - faults[0], 256, "{faults:?}");
}
