//! Fuzz harness for the oracle's parsers of user input: the job-file
//! sanitizer (mutations of fio's own examples, every rejection one line;
//! whatever it accepts has only relative paths and re-sanitizes to itself)
//! and the suite's case files. FOLIOSIM_FUZZ_CASES sets the count per
//! target (default 3,000); `scripts/fuzz` runs more.

use foliosim_oracle::cases::{parse_fio_header, parse_probe_cases, parse_probe_options};
use foliosim_oracle::jobsafe::sanitize;
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use std::path::PathBuf;

#[path = "../../../tests/require.rs"]
mod require;

fn runner() -> TestRunner {
    let env = |k: &str| std::env::var(k).ok().and_then(|v| v.parse().ok());
    TestRunner::new(Config {
        cases: env("FOLIOSIM_FUZZ_CASES").unwrap_or(3000) as u32,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(env("FOLIOSIM_FUZZ_SEED").unwrap_or(1)),
        ..Config::default()
    })
}

fn corpus() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut v = Vec::new();
    // Both are in the repository: one missing fails the test rather than
    // fuzzing a smaller corpus.
    for dir in [require::fio_examples(), root.join("oracle/cases")] {
        let rd = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let mut p: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        p.sort();
        v.extend(
            p.iter()
                .filter(|p| p.extension().is_some_and(|e| e == "fio"))
                .map(|p| {
                    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
                }),
        );
    }
    assert!(!v.is_empty());
    v
}

fn hostile() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "exec_prerun=touch /tmp/x",
        "filename=/etc/passwd",
        "filename=../../x",
        "directory=/tmp",
        "filename_format=../$jobname",
        "filename=a\\:/b",
        "filename=ok:/dev/sda",
        "ioengine=exec",
        "ioengine=external:/tmp/x.so",
        "include /etc/fio.fio",
        "write_iolog=/tmp/log",
        "directory=${HOME}",
        "filename=${PWD}/x",
        "cgroup=x",
        "ioscheduler=none",
        "pid_file=/tmp/p",
        "mem=mmapshared:/dev/shm/x",
        "size=$mb_memory*2",
        "[../../x]",
        "[global]",
        "[a b]",
        "filename=-",
        "opendir=/",
        "trigger=x",
        "rw=read",
        "size=1m",
        "bs=4k",
        "ioengine=libaio",
        "numjobs=2",
        "",
        "\u{0}",
        "filename=a\u{0}b",
    ])
    .prop_map(String::from)
}

#[test]
fn fuzz_oracle_sanitizer_on_mutated_examples() {
    let corpus = corpus();
    let n = corpus.len();
    let env = |k: &str| {
        if k == "HOME" {
            Some("/root".to_string())
        } else {
            None
        }
    };
    let strat = (
        0..n,
        prop::collection::vec(
            (any::<prop::sample::Index>(), hostile(), any::<bool>()),
            0..5,
        ),
    );
    let (mut runs, mut refused) = (0u64, 0u64);
    let counts = std::cell::RefCell::new((&mut runs, &mut refused));
    runner()
        .run(&strat, |(i, muts)| {
            let mut lines: Vec<String> = corpus[i].lines().map(String::from).collect();
            for (at, l, replace) in muts {
                let k = at.index(lines.len() + 1);
                if replace && k < lines.len() {
                    lines[k] = l;
                } else {
                    lines.insert(k.min(lines.len()), l);
                }
            }
            let text = lines.join("\n");
            *counts.borrow_mut().0 += 1;
            match sanitize(&text, "x.fio", &env) {
                Err(e) => {
                    *counts.borrow_mut().1 += 1;
                    let s = e.to_string();
                    prop_assert!(
                        s.starts_with("x.fio:") && !s.chars().any(char::is_control),
                        "{:?}",
                        s
                    );
                }
                Ok(j) => {
                    for p in &j.paths {
                        prop_assert!(
                            !p.path.starts_with('/') && !p.path.split('/').any(|c| c == ".."),
                            "{:?}",
                            p.path
                        );
                    }
                    for l in j.text.lines() {
                        let k = l.split('=').next().unwrap_or("");
                        prop_assert!(
                            !k.starts_with("exec_")
                                && k != "include"
                                && k != "write_iolog"
                                && k != "cgroup",
                            "{}",
                            l
                        );
                    }
                    let again =
                        sanitize(&j.text, "x.fio", &env).expect("canonical file re-sanitizes");
                    prop_assert_eq!(again.text, j.text);
                }
            }
            Ok(())
        })
        .unwrap();
    drop(counts);
    eprintln!(
        "fuzz: oracle sanitizer: {runs} inputs, {refused} refused with one-line errors, 0 panics"
    );
    assert!(refused > 0 && refused < runs, "both outcomes reached");
}

#[test]
fn fuzz_oracle_case_files() {
    let line = prop_oneof![
        "[a-z0-9-]{1,8}: (--[a-z-]{2,12} [0-9a-zA-Z:.]{0,8} ?){0,5}",
        "# (about|oracle): [ -~]{0,30}",
        "; oracle: (memcg_limit|read_ahead_kb|needs|bogus)=[0-9A-Za-z]{0,6}",
        "\\PC{0,30}",
    ];
    let strat = prop::collection::vec(line, 0..10).prop_map(|v| v.join("\n"));
    let mut n = 0u64;
    let counter = std::cell::Cell::new(0u64);
    runner()
        .run(&strat, |text| {
            counter.set(counter.get() + 3);
            for r in [
                parse_probe_cases(&text, "p.txt").map(|_| ()),
                parse_fio_header(&text, "c.fio").map(|_| ()),
                parse_probe_options(&text).map(|_| ()),
            ] {
                if let Err(e) = r {
                    prop_assert!(!e.trim().is_empty() && !e.contains('\n'), "{:?}", e);
                }
            }
            Ok(())
        })
        .unwrap();
    n += counter.get();
    eprintln!("fuzz: oracle case files: {n} inputs, 0 panics");
}
