//! The model driven by random valid fio jobs: every generated job file
//! must parse, run under both LRUs with the invariants checked after every
//! reclaim batch, give byte-identical reports when run twice, stay within
//! its memcg limit, and move the bytes fio would move. Case count:
//! FOLIOSIM_FUZZ_MODEL_CASES (default 64; `scripts/fuzz` runs more).

use foliosim::mm::MmConfig;
use foliosim::sim::{run_fio, LruKind, SimConfig};
use foliosim_workload::fio::parse_job_str;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

#[derive(Debug, Clone)]
struct Job {
    lines: Vec<String>,
    /// Bytes fio moves when the job ends by itself: None when time or an
    /// option other than size/io_size/loops decides.
    expect_bytes: Option<u64>,
    numjobs: u64,
}

fn job() -> impl Strategy<Value = Job> {
    let size_kb = 16u64..4096;
    let bs = prop::sample::select(vec![512u64, 4096, 8192, 65536]);
    let rw = prop::sample::select(vec![
        "read",
        "write",
        "randread",
        "randwrite",
        "rw",
        "randrw",
    ]);
    let engine = prop::sample::select(vec![
        "psync", "sync", "pvsync", "pvsync2", "vsync", "mmap", "libaio", "io_uring", "posixaio",
        "null",
    ]);
    let extra = prop::collection::vec(
        prop_oneof![
            Just("norandommap".to_string()),
            Just("fadvise_hint=0".to_string()),
            Just("fadvise_hint=sequential".to_string()),
            Just("invalidate=0".to_string()),
            Just("end_fsync=1".to_string()),
            (1u32..100).prop_map(|n| format!("rwmixread={n}")),
            prop::sample::select(vec!["random", "zipf:1.2", "pareto:0.3", "normal:10"])
                .prop_map(|d| format!("random_distribution={d}")),
            (0u64..2000).prop_map(|t| format!("thinktime={t}")),
            (1u64..5).prop_map(|s| format!("randseed={s}")),
            (1u32..64).prop_map(|d| format!("iodepth={d}")),
            (0u32..8).prop_map(|b| format!("iodepth_batch_complete_max={b}")),
        ],
        0..4,
    );
    (
        size_kb,
        bs,
        rw,
        engine,
        1u64..4,
        1u64..3,
        any::<bool>(),
        any::<bool>(),
        extra,
    )
        .prop_map(
            |(kb, bs, rw, engine, loops, numjobs, direct, timed, extra)| {
                let size = (kb * 1024).max(bs).div_ceil(bs) * bs;
                let direct = direct && engine != "mmap" && bs >= 4096;
                let mut lines = vec![
                    "[fz]".to_string(),
                    format!("size={size}"),
                    format!("bs={bs}"),
                    format!("rw={rw}"),
                    format!("ioengine={engine}"),
                    format!("direct={}", direct as u8),
                    format!("loops={loops}"),
                    format!("numjobs={numjobs}"),
                ];
                if timed {
                    lines.push("time_based".into());
                    lines.push("runtime=20ms".into());
                }
                lines.extend(extra);
                Job {
                    lines,
                    expect_bytes: (!timed).then_some(size * loops),
                    numjobs,
                }
            },
        )
}

fn cases() -> u32 {
    std::env::var("FOLIOSIM_FUZZ_MODEL_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

#[test]
fn random_valid_jobs_run_with_invariants() {
    let mut runner = TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
        // Fixed seed (the same inputs every run, so a failure reproduces);
        // FOLIOSIM_FUZZ_SEED explores other inputs.
        rng_seed: proptest::test_runner::RngSeed::Fixed(
            std::env::var("FOLIOSIM_FUZZ_SEED")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1),
        ),
        ..Config::default()
    });
    let strategy = (job(), any::<bool>(), 2u64..16);
    let ran = std::cell::Cell::new(0u64);
    runner
        .run(&strategy, |(j, mglru, limit_mb)| {
            let text = j.lines.join("\n");
            let jobs = parse_job_str(&text, "fuzz.fio")
                .map_err(|e| TestCaseError::fail(format!("valid job refused: {e}\n{text}")))?;
            prop_assert_eq!(jobs.len() as u64, j.numjobs);
            let cfg = SimConfig {
                mm: MmConfig {
                    ram_bytes: 256 << 20,
                    reserved_bytes: 16 << 20,
                    check_invariants: true,
                    ..MmConfig::default()
                },
                lru: if mglru {
                    LruKind::Mglru
                } else {
                    LruKind::Classic
                },
                memcg_limit: Some(limit_mb << 20),
                ..SimConfig::default()
            };
            if std::env::var_os("FOLIOSIM_FUZZ_TRACE").is_some() {
                eprintln!("--- case mglru={mglru} limit={limit_mb}M\n{text}");
            }
            let a = run_fio(cfg.clone(), &jobs);
            let b = run_fio(cfg, &jobs);
            prop_assert_eq!(
                serde_json::to_string(&a).unwrap(),
                serde_json::to_string(&b).unwrap(),
                "not deterministic"
            );
            let usage = a.memcg["max_usage_in_bytes"];
            prop_assert!(usage <= limit_mb << 20, "usage {} over the limit", usage);
            for r in &a.jobs {
                prop_assert!(!r.oom_killed, "file-only job OOM-killed:\n{}", text);
                if let Some(want) = j.expect_bytes {
                    prop_assert_eq!(
                        r.read.io_bytes + r.write.io_bytes,
                        want,
                        "bytes moved\n{}",
                        text
                    );
                }
            }
            ran.set(ran.get() + 1);
            Ok(())
        })
        .unwrap();
    eprintln!(
        "fuzz: model: {} random valid jobs run twice with invariants, 0 panics",
        ran.get()
    );
}

/// A valid fio iolog (v2 or v3) of up to three files: I/O, syncs, reopens,
/// with timestamps; and the bytes it reads and writes.
fn iolog() -> impl Strategy<Value = (String, u64)> {
    let step = (0u8..7, 0usize..3, 0u64..1 << 22, 1u64..65536, 0u64..500);
    (any::<bool>(), prop::collection::vec(step, 1..48)).prop_map(|(v3, steps)| {
        let mut out = String::from(if v3 {
            "fio version 3 iolog\n"
        } else {
            "fio version 2 iolog\n"
        });
        let (mut t, mut bytes) = (0u64, 0u64);
        let mut line = |t: u64, rest: &str| {
            let ts = if v3 { format!("{t} ") } else { String::new() };
            out += &format!("{ts}{rest}\n");
        };
        for f in ["a", "b", "c"] {
            line(t, &format!("{f} add"));
            line(t, &format!("{f} open"));
        }
        for (kind, f, off, len, dt) in steps {
            t += dt;
            let f = ["a", "b", "c"][f];
            let rest = match kind {
                0..=2 => format!("{f} read {off} {len}"),
                3 | 4 => format!("{f} write {off} {len}"),
                5 => format!("{f} sync 0 0"),
                _ => format!(
                    "{f} close\n{}{f} open",
                    if v3 { format!("{t} ") } else { String::new() }
                ),
            };
            if kind < 5 {
                bytes += len;
            }
            line(t, &rest);
        }
        (out, bytes)
    })
}

/// Random fio iologs replayed (read_iolog with random replay options and
/// engines): deterministic, within the memcg limit, and every byte of the
/// log moved.
#[test]
fn random_iologs_replay_with_invariants() {
    let mut runner = TestRunner::new(Config {
        cases: cases() / 2,
        failure_persistence: None,
        rng_algorithm: proptest::test_runner::RngAlgorithm::ChaCha,
        rng_seed: proptest::test_runner::RngSeed::Fixed(
            std::env::var("FOLIOSIM_FUZZ_SEED")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(1),
        ),
        ..Config::default()
    });
    let opts = prop::collection::vec(
        prop::sample::select(vec![
            "replay_no_stall=1",
            "replay_redirect=one",
            "replay_scale=4\nreplay_align=4096",
            "replay_time_scale=300",
            "invalidate=0",
            "ioengine=libaio\niodepth=8",
            "ioengine=mmap",
            "direct=1\nreplay_align=4096",
            "end_fsync=1",
            "thinktime=100",
        ]),
        0..3,
    );
    let dir =
        std::env::temp_dir().join(format!("foliosim-fuzz-model-iolog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fz.log");
    let ran = std::cell::Cell::new(0u64);
    runner
        .run(
            &(iolog(), opts, 2u64..16),
            |((log, bytes), opts, limit_mb)| {
                std::fs::write(&path, &log).unwrap();
                let text = format!("[fz]\nread_iolog={}\n{}\n", path.display(), opts.join("\n"));
                let jobs = match parse_job_str(&text, "fuzz.fio") {
                    Ok(j) => j,
                    // replay_redirect may close the one file under a later
                    // I/O, which fio aborts on: refused, and that is all.
                    Err(e) if opts.iter().any(|o| o.contains("redirect")) => {
                        prop_assert!(e.to_string().contains("is not open"), "{e}");
                        return Ok(());
                    }
                    Err(e) => {
                        return Err(TestCaseError::fail(format!(
                            "valid log refused: {e}\n{log}"
                        )))
                    }
                };
                let direct = opts.iter().any(|o| o.contains("direct"));
                if direct
                    && log.lines().any(|l| {
                        l.split(' ')
                            .last()
                            .is_some_and(|n| n.parse::<u64>().is_ok_and(|n| n % 512 != 0 && n > 0))
                    })
                {
                    // O_DIRECT needs aligned lengths; fio fails such I/O.
                    return Ok(());
                }
                let cfg = SimConfig {
                    mm: MmConfig {
                        ram_bytes: 256 << 20,
                        reserved_bytes: 16 << 20,
                        check_invariants: true,
                        ..MmConfig::default()
                    },
                    memcg_limit: Some(limit_mb << 20),
                    ..SimConfig::default()
                };
                let a = run_fio(cfg.clone(), &jobs);
                let b = run_fio(cfg, &jobs);
                prop_assert_eq!(
                    serde_json::to_string(&a).unwrap(),
                    serde_json::to_string(&b).unwrap(),
                    "not deterministic"
                );
                prop_assert!(a.memcg["max_usage_in_bytes"] <= limit_mb << 20);
                let r = &a.jobs[0];
                prop_assert!(!r.oom_killed);
                prop_assert_eq!(
                    r.read.io_bytes + r.write.io_bytes,
                    bytes,
                    "bytes moved\n{}\n{}",
                    text,
                    log
                );
                ran.set(ran.get() + 1);
                Ok(())
            },
        )
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    eprintln!(
        "fuzz: model: {} random iologs replayed twice with invariants, 0 panics",
        ran.get()
    );
}
