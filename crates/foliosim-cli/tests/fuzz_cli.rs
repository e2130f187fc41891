//! The command line fuzzed through the real binary: random machine options
//! (hostile and valid values) around small workloads. Every run exits 0, or
//! 2 with exactly one line on stderr that starts with "foliosim: ".
//! FOLIOSIM_FUZZ_CLI_CASES sets the count (default 150: each is a process).

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestRunner};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn value() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "",
        "0",
        "-1",
        "1",
        "7",
        "128",
        "8192",
        "64M",
        "256M",
        "1G",
        "2G",
        "1P",
        "99999999999T",
        "18446744073709551616",
        "4k",
        "x",
        "1Q",
        "nan",
        "-5M",
        "classic",
        "mglru",
        "lru",
        "nvme",
        "hdd",
        "zram",
        "zram:1G",
        "zram:",
        "disk:64M",
        "disk:x",
        "none",
        "p1",
        "p1,p2",
        "p9",
        "arm64",
        "pf-set-active",
        "wsprot-legacy",
        "vm.swappiness=60",
        "vm.swappiness=201",
        "vm.dirty_ratio=x",
        "lru_gen.enabled=y",
        "lru_gen.enabled=7",
        "lru_gen.min_ttl_ms=-1",
        "fault_around_bytes=3",
        "fault_around_bytes=4096",
        "=",
        "a=b",
        "é",
        "\u{1}",
        "x\ny",
        "random",
        "stride:7",
        "stride:0",
        "stride:",
        "zigzag",
        "0.5",
        "1.5",
        "0.0001",
    ])
    .prop_map(String::from)
}

fn machine_opt() -> impl Strategy<Value = Vec<String>> {
    let name = prop::sample::select(vec![
        "--memory",
        "--memcg-limit",
        "--read-ahead-kb",
        "--lru",
        "--variant",
        "--device",
        "--swap",
        "--sysctl",
        "--seed",
        "--bogus",
    ]);
    prop_oneof![
        4 => (name, value()).prop_map(|(n, v)| vec![n.to_string(), v]),
        1 => value().prop_map(|v| vec![v]),
        1 => prop::sample::select(vec!["--timeline", "--json", "--check-invariants", "--"]).prop_map(|f| vec![f.to_string()]),
    ]
}

fn argv(job: String) -> impl Strategy<Value = Vec<String>> {
    let probe_opt = (
        prop::sample::select(vec![
            "--file-size",
            "--pattern",
            "--fraction",
            "--memory",
            "--memcg-limit",
            "--read-ahead-kb",
            "--variant",
            "--seed",
        ]),
        value(),
    )
        .prop_map(|(n, v)| {
            // A valid probe over a large file would run for minutes: sizes stay small.
            let v = if n == "--file-size" && !v.ends_with('M') && !v.ends_with('k') {
                format!("{v}Q")
            } else {
                v
            };
            vec![n.to_string(), v]
        });
    prop_oneof![
        (prop::collection::vec(machine_opt(), 0..5), any::<bool>()).prop_map(
            move |(opts, first)| {
                let mut v = vec!["fio".to_string()];
                if first {
                    v.push(job.clone());
                }
                v.extend(opts.into_iter().flatten());
                if !first {
                    v.push(job.clone());
                }
                v
            }
        ),
        (prop::collection::vec(probe_opt, 0..5), 0u8..2).prop_map(|(opts, small)| {
            let mut v = vec![
                "mmap-probe".to_string(),
                "--file-size".to_string(),
                if small == 0 {
                    "4M".into()
                } else {
                    "64M".into()
                },
            ];
            v.extend(opts.into_iter().flatten());
            v
        }),
        prop::collection::vec(value(), 0..4).prop_map(|mut v| {
            v.insert(0, "reproduce".to_string());
            // Only invalid reproduce invocations: a valid one runs the seeds' matrix.
            v.push("--format=bogus".to_string());
            v
        }),
    ]
}

#[test]
fn random_command_lines_exit_0_or_one_line_2() {
    let dir = std::env::temp_dir().join(format!("foliosim-fuzz-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("tiny.fio");
    std::fs::write(&job, "[tiny]\nsize=256k\nrw=randread\nbs=4k\n").unwrap();
    let cases = std::env::var("FOLIOSIM_FUZZ_CLI_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(150);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(
            std::env::var("FOLIOSIM_FUZZ_SEED")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1),
        ),
        ..Config::default()
    });
    let (mut ok, mut rejected) = (0u32, 0u32);
    let counts = std::cell::RefCell::new((&mut ok, &mut rejected));
    runner
        .run(&argv(job.display().to_string()), |args| {
            let mut child = Command::new(env!("CARGO_BIN_EXE_foliosim"))
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let t0 = Instant::now();
            let status = loop {
                if let Some(s) = child.try_wait().unwrap() {
                    break s;
                }
                if t0.elapsed() > Duration::from_secs(60) {
                    let _ = child.kill();
                    let _ = child.wait();
                    return Err(TestCaseError::fail(format!("ran over 60 s: {args:?}")));
                }
                std::thread::sleep(Duration::from_millis(2));
            };
            let mut err = String::new();
            std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
            match status.code() {
                Some(0) => *counts.borrow_mut().0 += 1,
                Some(2) => {
                    *counts.borrow_mut().1 += 1;
                    let lines: Vec<&str> = err.lines().collect();
                    prop_assert_eq!(lines.len(), 1, "{:?}: stderr {:?}", args, err);
                    prop_assert!(lines[0].starts_with("foliosim: "), "{:?}: {:?}", args, err);
                    prop_assert!(!lines[0].chars().any(char::is_control), "{:?}", err);
                }
                c => prop_assert!(false, "{:?}: exit {:?}, stderr {}", args, c, err),
            }
            Ok(())
        })
        .unwrap();
    drop(counts);
    eprintln!(
        "fuzz: command lines: {} runs, {ok} exit 0, {rejected} one-line exit 2, 0 panics",
        ok + rejected
    );
    let _ = std::fs::remove_dir_all(&dir);
}
