//! Fuzz harness for every parser of user input in the workload crate: fio
//! job files, fio's command-line form, sizes and times, libCacheSim csv
//! parameter strings and trace files (csv and oracleGeneral), fio iologs
//! (v2, v3, and the replay they become), scenario files (TOML) and usemem
//! command lines.
//!
//! Inputs come from three generators: a grammar of fio's own option names
//! with hostile values, mutations of real job files (fio's examples corpus in
//! tests/corpora and this repo's examples), and raw bytes. The property is the
//! same everywhere: no panic, and every rejection is one line naming what
//! was wrong. Case counts: FOLIOSIM_FUZZ_CASES per target (default 3,000
//! for the test suite; `scripts/fuzz` runs a million in all).

use foliosim_workload::fio::iolog::{self, Act, IoLog, ReplayOpts};
use foliosim_workload::fio::{parse_cmdline, parse_job_str, parse_size, parse_time_us, ParseError};
use foliosim_workload::jobio::{JobIo, Op};
use foliosim_workload::scenario::{self, gen};
use foliosim_workload::trace::{self, CsvSpec, TraceFormat};
use foliosim_workload::units;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

#[path = "../../../tests/require.rs"]
mod require;

const FIO_OPTIONS: &[&str] = &[
    "allow_file_create",
    "allow_mounted_write",
    "allrandrepeat",
    "arguments",
    "atomic",
    "ba",
    "bindname",
    "block",
    "block_error_percentiles",
    "blockalign",
    "blocksize",
    "blocksize_range",
    "blocksize_unaligned",
    "bs",
    "bs_is_seq_rand",
    "bsrange",
    "bssplit",
    "buffer_compress_chunk",
    "buffer_compress_percentage",
    "buffer_pattern",
    "buffered",
    "busy_poll",
    "busy_wait_polling",
    "bwavgtime",
    "cgroup",
    "cgroup_nodelete",
    "cgroup_weight",
    "chunk_size",
    "clat_percentiles",
    "clientname",
    "clocksource",
    "clustername",
    "cmd_type",
    "cmdprio",
    "cmdprio_bssplit",
    "cmdprio_class",
    "cmdprio_percentage",
    "conf",
    "cont",
    "continue_on_error",
    "cpuchunks",
    "cpuload",
    "cpumask",
    "cpumode",
    "cpus_allowed",
    "cpus_allowed_policy",
    "create_fsync",
    "create_on_open",
    "create_only",
    "create_serialize",
    "cuda_io",
    "dedupe_global",
    "dedupe_mode",
    "dedupe_percentage",
    "dedupe_working_set_percentage",
    "description",
    "device",
    "dir",
    "direct",
    "direct_write_to_pmem",
    "directory",
    "disable_bw_measurement",
    "disable_clat",
    "disable_lat",
    "disable_slat",
    "disk_util",
    "do_verify",
    "donorname",
    "end_fsync",
    "error_dump",
    "exec_postrun",
    "exec_prerun",
    "exit_on_io_done",
    "exit_what",
    "exitall",
    "exitall_on_error",
    "experimental_verify",
    "fadvise_hint",
    "fallocate",
    "fdatasync",
    "file_append",
    "file_service_type",
    "filename",
    "filename_format",
    "fileoffset",
    "filesize",
    "fill_device",
    "fixedbufs",
    "flow",
    "flow_id",
    "flow_sleep",
    "force_async",
    "fsync",
    "fsync_on_close",
    "gid",
    "gpu_dev_ids",
    "grace_time",
    "group_reporting",
    "gtod_cpu",
    "gtod_reduce",
    "hdfsdirectory",
    "hipri",
    "hipri_percentage",
    "hostname",
    "http_host",
    "http_mode",
    "http_pass",
    "http_s3_key",
    "http_s3_keyid",
    "http_s3_region",
    "http_s3_sse_customer_algorithm",
    "http_s3_sse_customer_key",
    "http_s3_storage_class",
    "http_swift_auth_token",
    "http_user",
    "http_verbose",
    "https",
    "hugepage",
    "ignore_error",
    "ignore_zone_limits",
    "inplace",
    "interface",
    "invalidate",
    "io_limit",
    "io_size",
    "io_submit_mode",
    "iodepth",
    "iodepth_batch",
    "iodepth_batch_complete_max",
    "iodepth_batch_complete_min",
    "iodepth_batch_submit",
    "iodepth_low",
    "ioengine",
    "iomem",
    "iomem_align",
    "iopsavgtime",
    "ioscheduler",
    "job_max_open_zones",
    "kb_base",
    "large",
    "lat_percentiles",
    "latency_percentile",
    "latency_run",
    "latency_target",
    "latency_window",
    "listen",
    "load",
    "lockfile",
    "lockmem",
    "log_alternate_epoch",
    "log_alternate_epoch_clock_id",
    "log_avg_msec",
    "log_compression",
    "log_compression_cpus",
    "log_entries",
    "log_hist_coarseness",
    "log_hist_msec",
    "log_max_value",
    "log_offset",
    "log_store_compressed",
    "log_unix_epoch",
    "loops",
    "max_latency",
    "max_open_zones",
    "merge_blktrace_file",
    "merge_blktrace_iters",
    "merge_blktrace_scalars",
    "mss",
    "name",
    "namenode",
    "new_group",
    "nfs_url",
    "nice",
    "nodelay",
    "nonvectored",
    "norandommap",
    "nowait",
    "nr_files",
    "nrfiles",
    "numa_cpu_nodes",
    "numa_mem_policy",
    "number_ios",
    "numjobs",
    "numruns",
    "object_class",
    "offset",
    "offset_align",
    "offset_increment",
    "opendir",
    "openfiles",
    "overwrite",
    "per_job_logs",
    "percentage_random",
    "percentile_list",
    "pingpong",
    "pool",
    "port",
    "pre_read",
    "prep",
    "prio",
    "prioclass",
    "profile",
    "program",
    "protocol",
    "ramp_time",
    "random_distribution",
    "random_generator",
    "randrepeat",
    "randseed",
    "rate",
    "rate_cycle",
    "rate_ignore_thinktime",
    "rate_iops",
    "rate_iops_min",
    "rate_min",
    "rate_process",
    "rbdname",
    "read",
    "read_beyond_wp",
    "read_iolog",
    "read_iolog_chunked",
    "readfua",
    "readwrite",
    "refill_buffers",
    "registerfiles",
    "replay_align",
    "replay_no_stall",
    "replay_redirect",
    "replay_scale",
    "replay_skip",
    "replay_time_scale",
    "runtime",
    "rw",
    "rw_sequencer",
    "rwmixread",
    "rwmixwrite",
    "scramble_buffers",
    "serialize_overlap",
    "serverip",
    "sg_write_mode",
    "significant_figures",
    "size",
    "skip_bad",
    "slat_percentiles",
    "softrandommap",
    "sqthread_poll",
    "sqthread_poll_cpu",
    "startdelay",
    "stat_type",
    "stats",
    "std_redirect",
    "steadystate",
    "steadystate_duration",
    "steadystate_ramp_time",
    "stonewall",
    "stream_id",
    "sync",
    "sync_file_range",
    "test",
    "thinktime",
    "thinktime_blocks",
    "thinktime_blocks_type",
    "thinktime_iotime",
    "thinktime_spin",
    "thread",
    "threads",
    "time_based",
    "timeout",
    "touch_objects",
    "trim_backlog",
    "trim_backlog_batch",
    "trim_percentage",
    "trim_verify_zero",
    "ttl",
    "uid",
    "unified_rw_reporting",
    "unique_filename",
    "unit_base",
    "unlink",
    "unlink_each_loop",
    "uri",
    "userspace_reap",
    "verb",
    "verify",
    "verify_async",
    "verify_async_cpus",
    "verify_backlog",
    "verify_backlog_batch",
    "verify_dump",
    "verify_fatal",
    "verify_interval",
    "verify_offset",
    "verify_only",
    "verify_pattern",
    "verify_state_load",
    "verify_state_save",
    "wait_for",
    "window_size",
    "write_barrier",
    "write_bw_log",
    "write_hint",
    "write_hist_log",
    "write_iolog",
    "write_iops_log",
    "write_lat_log",
    "writefua",
    "xnvme_admin",
    "xnvme_async",
    "xnvme_dev_nsid",
    "xnvme_iovec",
    "xnvme_sync",
    "zero_buffers",
    "zone_reset_frequency",
    "zone_reset_threshold",
    "zonecapacity",
    "zonemode",
    "zonerange",
    "zonesize",
    "zoneskip",
];

fn cases() -> u32 {
    std::env::var("FOLIOSIM_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3000)
}

fn runner() -> TestRunner {
    TestRunner::new(Config {
        cases: cases(),
        failure_persistence: None,
        // Fixed RNG: the same inputs every run (reproducible failures).
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
    })
}

/// A one-line error: no line breaks or other control characters, and it
/// names a file label and a line number ("file:line: option: msg").
fn assert_one_line(e: &ParseError, label: &str) {
    let s = e.to_string();
    assert!(
        !s.chars().any(|c| c.is_control()),
        "error is not one clean line: {s:?}"
    );
    assert!(s.starts_with(label), "error does not name the file: {s:?}");
    assert!(
        !e.option.is_empty() || e.line == 0,
        "no option named: {s:?}"
    );
}

/// Errors returned as plain strings are wrapped into a ParseError or
/// printed by the CLI through `one_line`; here they must say something and
/// add no line breaks of their own (the inputs of these targets have none).
fn assert_clean_msg(s: &str) {
    assert!(!s.trim().is_empty(), "empty error message");
    assert!(!s.contains(['\n', '\r']), "error spans lines: {s:?}");
}

fn report(target: &str, n: &AtomicU64, rejected: &AtomicU64) {
    eprintln!(
        "fuzz: {target}: {} inputs, {} rejected with one-line errors, 0 panics",
        n.load(Ordering::Relaxed),
        rejected.load(Ordering::Relaxed)
    );
}

fn corpus() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut v = Vec::new();
    // All three are in the repository: one missing fails the test rather
    // than fuzzing a smaller corpus.
    for dir in [
        require::fio_examples(),
        root.join("examples"),
        root.join("oracle/cases"),
    ] {
        let rd = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let mut paths: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        paths.sort();
        for p in paths {
            if p.extension().is_some_and(|e| e == "fio") {
                v.push(
                    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
                );
            }
        }
    }
    assert!(!v.is_empty(), "no job files found for the mutation corpus");
    v
}

/// Values that break parsers: sizes with every suffix, ranges, lists,
/// percentages, signs, huge and odd numbers, env references, unicode.
fn value() -> impl Strategy<Value = String> {
    let num = prop_oneof![
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("18446744073709551615".to_string()),
        Just("18446744073709551616".to_string()),
        Just("99999999999999999999999".to_string()),
        Just("0x10".to_string()),
        Just("1e9".to_string()),
        Just("nan".to_string()),
        (0u64..100_000).prop_map(|n| n.to_string()),
        any::<u64>().prop_map(|n| n.to_string()),
        (0.0f64..2.0).prop_map(|f| format!("{f}")),
    ];
    let suffix = prop::sample::select(vec![
        "", "k", "K", "kb", "KiB", "m", "M", "MiB", "g", "G", "t", "p", "e", "z", "%", "s", "ms",
        "us", "m", "h", "d", "ki", "b", "x", "kk",
    ]);
    let atom = (num, suffix).prop_map(|(n, s)| format!("{n}{s}"));
    let word = prop::sample::select(vec![
        "read",
        "write",
        "randread",
        "randwrite",
        "rw",
        "randrw",
        "readwrite",
        "trim",
        "randtrim",
        "trimwrite",
        "psync",
        "sync",
        "libaio",
        "io_uring",
        "mmap",
        "null",
        "exec",
        "net",
        "random",
        "zipf",
        "pareto",
        "normal",
        "zoned",
        "zoned_abs",
        "gauss",
        "strided",
        "none",
        "zbd",
        "sequential",
        "identical",
        "roundrobin",
        "md5",
        "crc32c",
        "1",
        "0",
        "true",
        "yes",
        "${HOME}",
        "${NOPE_UNSET_VAR}",
        "${",
        "$pagesize",
        "$mb_memory",
        "$ncpus",
        "$jobnum",
        "$jobname",
        "$filenum",
        "/dev/sda",
        "../../etc/passwd",
        "/etc/passwd",
        "a:b",
        "a\\:b",
        "",
        " ",
        "=",
        "[",
        "]",
        ";",
        "#",
        "é",
        "\u{0}",
        "\u{7f}",
        "\t",
    ])
    .prop_map(String::from);
    let list = prop::collection::vec(
        (
            atom.clone(),
            prop::sample::select(vec![":", "/", ",", "-", ":-"]),
        ),
        1..5,
    )
    .prop_map(|v| {
        v.into_iter()
            .map(|(a, s)| format!("{a}{s}"))
            .collect::<String>()
    });
    prop_oneof![
        3 => atom,
        3 => word,
        2 => list,
        1 => (prop::sample::select(vec!["read", "write", "randread", "rw", "randrw"]), atom_small())
            .prop_map(|(w, a)| format!("{w}:{a}")),
        1 => "\\PC{0,12}",
    ]
}

fn atom_small() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["-", ""]),
        0u64..100_000,
        prop::sample::select(vec!["", "k", "m"]),
    )
        .prop_map(|(s, n, u)| format!("{s}{n}{u}"))
}

fn option_name() -> impl Strategy<Value = String> {
    prop_oneof![
        8 => prop::sample::select(FIO_OPTIONS).prop_map(String::from),
        1 => "[a-z_]{1,12}",
        1 => Just("include".to_string()),
    ]
}

fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (option_name(), value()).prop_map(|(k, v)| format!("{k}={v}")),
        1 => option_name(),
        2 => "[a-z0-9_]{1,10}".prop_map(|n| format!("[{n}]")),
        1 => Just("[global]".to_string()),
        1 => prop::sample::select(vec!["[", "[]", "[a", "]", "=", "=x", " ; comment", "# x", "include x.fio", "\u{feff}[job]"]).prop_map(String::from),
    ]
}

/// Either free grammar, or a job that is valid up to a few hostile lines
/// (so the parser's later stages, not only its first check, see them).
fn job_text() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::collection::vec(line(), 0..24).prop_map(|ls| ls.join("\n")),
        (
            prop::collection::vec(line(), 0..3),
            any::<prop::sample::Index>()
        )
            .prop_map(|(extra, at)| {
                let mut ls: Vec<String> = ["[global]", "size=1m", "[job]", "bs=4k", "rw=randread"]
                    .iter()
                    .map(|s| s.to_string())
                    .collect();
                let p = 1 + at.index(ls.len());
                for (i, l) in extra.into_iter().enumerate() {
                    ls.insert((p + i).min(ls.len()), l);
                }
                ls.join("\n")
            }),
    ]
}

/// Mutations of a real job file: replace, insert, delete lines or bytes.
fn mutated(corpus: Vec<String>) -> impl Strategy<Value = String> {
    let n = corpus.len();
    (
        0..n,
        prop::collection::vec(
            (0u8..5, any::<prop::sample::Index>(), line(), any::<u8>()),
            1..6,
        ),
    )
        .prop_map(move |(i, muts)| {
            let mut lines: Vec<String> = corpus[i].lines().map(String::from).collect();
            for (op, at, l, b) in muts {
                let len = lines.len();
                match op {
                    0 if len > 0 => lines[at.index(len)] = l,
                    1 => lines.insert(at.index(len + 1), l),
                    2 if len > 0 => {
                        lines.remove(at.index(len));
                    }
                    3 if len > 0 => {
                        // Replace the value of an option line with a hostile one.
                        let k = at.index(len);
                        if let Some((key, _)) = lines[k].clone().split_once('=') {
                            lines[k] =
                                format!("{key}={}", l.split_once('=').map(|x| x.1).unwrap_or(&l));
                        }
                    }
                    _ if len > 0 => {
                        let k = at.index(len);
                        let mut bytes = lines[k].clone().into_bytes();
                        let p = at.index(bytes.len() + 1);
                        bytes.insert(p, b);
                        lines[k] = String::from_utf8_lossy(&bytes).into_owned();
                    }
                    _ => {}
                }
            }
            lines.join("\n")
        })
}

fn check_job_text(text: &str, n: &AtomicU64, rej: &AtomicU64) {
    n.fetch_add(1, Ordering::Relaxed);
    match parse_job_str(text, "fuzz.fio") {
        Ok(jobs) => {
            for j in &jobs {
                assert!(j.bs > 0, "accepted bs=0: {j:?}");
                if j.size_from_device || j.ctl.size_from_file {
                    // A block device without size=: --disk-size fills it
                    // in; so it does a file such a job writes for a later
                    // create_serialize=0 job.
                    assert_eq!(j.size, 0, "{j:?}");
                } else {
                    assert!(j.size >= j.bs, "accepted size < bs: {j:?}");
                }
                assert!(j.offset.checked_add(j.size).is_some());
            }
        }
        Err(e) => {
            rej.fetch_add(1, Ordering::Relaxed);
            assert_one_line(&e, "fuzz.fio:");
        }
    }
}

#[test]
fn fuzz_fio_job_files_from_grammar() {
    let (n, rej) = (AtomicU64::new(0), AtomicU64::new(0));
    runner()
        .run(&job_text(), |t| {
            check_job_text(&t, &n, &rej);
            Ok(())
        })
        .unwrap();
    report("fio job files (grammar)", &n, &rej);
    assert_eq!(n.load(Ordering::Relaxed), cases() as u64);
}

#[test]
fn fuzz_fio_job_files_mutated_from_corpus() {
    let (n, rej) = (AtomicU64::new(0), AtomicU64::new(0));
    runner()
        .run(&mutated(corpus()), |t| {
            check_job_text(&t, &n, &rej);
            Ok(())
        })
        .unwrap();
    report("fio job files (mutated corpus)", &n, &rej);
    assert!(
        rej.load(Ordering::Relaxed) > 0,
        "mutations never produced a bad job"
    );
}

#[test]
fn fuzz_fio_job_files_raw_bytes() {
    let (n, rej) = (AtomicU64::new(0), AtomicU64::new(0));
    runner()
        .run(&prop::collection::vec(any::<u8>(), 0..400), |b| {
            check_job_text(&String::from_utf8_lossy(&b), &n, &rej);
            Ok(())
        })
        .unwrap();
    report("fio job files (raw bytes)", &n, &rej);
}

#[test]
fn fuzz_fio_command_lines() {
    let (n, rej) = (AtomicU64::new(0), AtomicU64::new(0));
    let arg = prop_oneof![
        4 => (option_name(), value()).prop_map(|(k, v)| format!("--{k}={v}")),
        2 => option_name().prop_map(|k| format!("--{k}")),
        2 => "[a-z]{1,6}".prop_map(|n| format!("--name={n}")),
        1 => value(),
        1 => Just("-".to_string()),
        1 => Just("--".to_string()),
    ];
    runner()
        .run(&prop::collection::vec(arg, 0..16), |args| {
            n.fetch_add(1, Ordering::Relaxed);
            // Positional arguments are job files: keep them from naming real
            // files by prefixing a directory that does not exist.
            let args: Vec<String> = args
                .into_iter()
                .map(|a| {
                    if a.starts_with('-') && a != "-" {
                        a
                    } else {
                        format!("/nonexistent-fuzz/{a}")
                    }
                })
                .collect();
            if let Err(e) = parse_cmdline(&args) {
                rej.fetch_add(1, Ordering::Relaxed);
                let s = e.to_string();
                assert_clean_msg(&s);
                assert!(
                    s.starts_with("fio option --")
                        || s.starts_with("<command line>")
                        || s.starts_with("/nonexistent-fuzz/"),
                    "{s:?}"
                );
            }
            Ok(())
        })
        .unwrap();
    report("fio command lines", &n, &rej);
}

#[test]
fn fuzz_sizes_and_times() {
    let (n, rej) = (AtomicU64::new(0), AtomicU64::new(0));
    runner()
        .run(&prop_oneof![value(), "\\PC{0,20}"], |v| {
            n.fetch_add(4, Ordering::Relaxed);
            for r in [
                parse_size(&v, 1024).map(|_| ()),
                parse_size(&v, 1000).map(|_| ()),
                parse_time_us(&v, true).map(|_| ()),
                units::parse_size(&v).map(|_| ()),
            ] {
                if let Err(e) = r {
                    rej.fetch_add(1, Ordering::Relaxed);
                    assert_clean_msg(&e);
                }
            }
            if let Err(e) = units::parse_time_ns(&v, 1) {
                assert_clean_msg(&e);
            }
            Ok(())
        })
        .unwrap();
    report("sizes and times", &n, &rej);
}

#[test]
fn fuzz_trace_csv_specs() {
    let (n, rej) = (AtomicU64::new(0), AtomicU64::new(0));
    let kv = (
        prop::sample::select(vec![
            "time-col",
            "obj-id-col",
            "obj-size-col",
            "obj_id_col",
            "delimiter",
            "has-header",
            "header",
            "obj-id-is-num",
            "next-access-col",
            "cnt-col",
            "bogus",
            "TIME-COL",
        ]),
        prop_oneof![value(), Just(",".to_string()), Just("\\t".to_string())],
    )
        .prop_map(|(k, v)| format!("{k}={v}"));
    let spec = prop_oneof![
        3 => prop::collection::vec(kv, 0..6).prop_map(|v| v.join(", ")),
        1 => "\\PC{0,40}",
    ];
    runner()
        .run(&spec, |s| {
            n.fetch_add(1, Ordering::Relaxed);
            if let Err(e) = trace::parse_csv_spec(&s) {
                rej.fetch_add(1, Ordering::Relaxed);
                assert_clean_msg(&e);
            }
            Ok(())
        })
        .unwrap();
    report("trace csv parameter strings", &n, &rej);
}

/// Trace files: csv text and oracleGeneral bytes, read to the end; a bad
/// record ends the stream with one error naming the file and record.
#[test]
fn fuzz_trace_files() {
    let (n, rej) = (AtomicU64::new(0), AtomicU64::new(0));
    let dir = std::env::temp_dir().join(format!("foliosim-fuzz-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let csv_line = prop_oneof![
        3 => (0u64..1000, 0u64..100_000, 0u64..10_000).prop_map(|(a, b, c)| format!("{a},{b},{c}")),
        1 => (value(), value(), value()).prop_map(|(a, b, c)| format!("{a},{b},{c}")),
        1 => "\\PC{0,30}",
    ];
    let input = prop_oneof![
        (prop::collection::vec(csv_line, 0..20), any::<bool>()).prop_map(|(ls, h)| (
            true,
            h,
            ls.join("\n").into_bytes()
        )),
        prop::collection::vec(any::<u8>(), 0..200).prop_map(|b| (false, false, b)),
    ];
    let path = dir.join("t.trace");
    runner()
        .run(&input, |(csv, header, bytes)| {
            n.fetch_add(1, Ordering::Relaxed);
            std::fs::write(&path, &bytes).unwrap();
            let fmt = if csv {
                TraceFormat::Csv(CsvSpec {
                    has_header: header.then_some(true),
                    ..CsvSpec::default()
                })
            } else {
                TraceFormat::OracleGeneral
            };
            let label = path.display().to_string();
            match trace::open(&path, &fmt) {
                Err(e) => {
                    rej.fetch_add(1, Ordering::Relaxed);
                    assert_one_line(&e, &label);
                }
                Ok(r) => {
                    let mut errors = 0;
                    for req in r {
                        if let Err(e) = req {
                            errors += 1;
                            assert_one_line(&e, &label);
                        }
                    }
                    assert!(errors <= 1, "the stream must end after an error");
                    if errors == 1 {
                        rej.fetch_add(1, Ordering::Relaxed);
                    }
                    if !csv {
                        // A whole number of 24-byte records reads cleanly.
                        assert_eq!(errors == 0, bytes.len() % trace::ORACLE_GENERAL_RECORD == 0);
                    }
                }
            }
            Ok(())
        })
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    report("trace files", &n, &rej);
}

// ---- fio iologs (read_iolog) ----

fn iolog_fixtures() -> Vec<String> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/iolog");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no iolog fixtures");
    v.iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

/// One log line from a grammar of fio's actions, names and numbers, with
/// hostile values.
fn iolog_line(v3: bool) -> impl Strategy<Value = String> {
    let name = prop::sample::select(vec!["f", "g", "/dev/sdb", "a b", "", "é", "x\u{0}"]);
    let act = prop::sample::select(vec![
        "add", "open", "close", "read", "write", "trim", "sync", "datasync", "wait", "reed", "ADD",
        "",
    ]);
    let num = prop_oneof![
        (0u64..1 << 24).prop_map(|n| n.to_string()),
        value(),
        Just("18446744073709551616".to_string()),
        Just("4294967296".to_string()),
    ];
    let ts = (0u64..100_000, any::<bool>()).prop_map(move |(t, on)| match (v3, on) {
        (true, true) => format!("{t} "),
        _ => String::new(),
    });
    prop_oneof![
        6 => (ts.clone(), name.clone(), act.clone(), num.clone(), num)
            .prop_map(|(t, n, a, o, l)| format!("{t}{n} {a} {o} {l}")),
        3 => (ts, name, act).prop_map(|(t, n, a)| format!("{t}{n} {a}")),
        1 => "\\PC{0,30}",
    ]
}

/// A log fio would replay: two files added and opened, then I/O, syncs,
/// reopens and (v2) waits, with timestamps that mostly go forward.
fn valid_iolog() -> impl Strategy<Value = String> {
    let step = (
        0u8..8,
        any::<bool>(),
        0u64..1 << 24,
        1u64..65536,
        0u64..3000,
    );
    (any::<bool>(), prop::collection::vec(step, 1..24)).prop_map(|(v3, steps)| {
        let mut t = 0u64;
        let mut out = String::from(if v3 {
            "fio version 3 iolog\n"
        } else {
            "fio version 2 iolog\n"
        });
        let mut line = |t: u64, rest: String| {
            let ts = if v3 { format!("{t} ") } else { String::new() };
            out += &format!("{ts}{rest}\n");
        };
        for f in ["f", "g"] {
            line(0, format!("{f} add"));
            line(0, format!("{f} open"));
        }
        for (kind, on_g, off, len, dt) in steps {
            // Mostly forward, now and then back in time.
            t = if dt < 100 {
                t.saturating_sub(dt)
            } else {
                t + dt
            };
            let f = if on_g { "g" } else { "f" };
            let rest = match kind {
                0..=2 => format!("{f} read {off} {len}"),
                3 | 4 => format!("{f} write {off} {len}"),
                5 => format!("{f} {} 0 0", if on_g { "sync" } else { "datasync" }),
                6 => format!(
                    "{f} close\n{}{f} open",
                    if v3 { format!("{t} ") } else { String::new() }
                ),
                _ if v3 => format!("{f} read {off} {len}"),
                _ => format!("{f} wait {} 0", dt / 100),
            };
            line(t, rest);
        }
        out
    })
}

fn iolog_text() -> impl Strategy<Value = String> {
    let grammar = any::<bool>().prop_flat_map(|v3| {
        let head = if v3 {
            "fio version 3 iolog"
        } else {
            "fio version 2 iolog"
        };
        let files = if v3 {
            "0 f add\n0 f open\n"
        } else {
            "f add\nf open\n"
        };
        (prop::collection::vec(iolog_line(v3), 0..16), any::<bool>()).prop_map(
            move |(ls, valid_start)| {
                let start = if valid_start { files } else { "" };
                format!("{head}\n{start}{}\n", ls.join("\n"))
            },
        )
    });
    let fixtures = iolog_fixtures();
    let n = fixtures.len();
    let mutated = (
        0..n,
        prop::collection::vec(
            (
                0u8..4,
                any::<prop::sample::Index>(),
                iolog_line(true),
                any::<u8>(),
            ),
            1..5,
        ),
    )
        .prop_map(move |(i, muts)| {
            let mut lines: Vec<String> = fixtures[i].lines().map(String::from).collect();
            for (op, at, l, b) in muts {
                let len = lines.len();
                match op {
                    0 if len > 0 => lines[at.index(len)] = l,
                    1 => lines.insert(at.index(len + 1), l),
                    2 if len > 0 => {
                        lines.remove(at.index(len));
                    }
                    _ if len > 0 => {
                        let k = at.index(len);
                        let mut bytes = lines[k].clone().into_bytes();
                        bytes.insert(at.index(bytes.len() + 1), b);
                        lines[k] = String::from_utf8_lossy(&bytes).into_owned();
                    }
                    _ => {}
                }
            }
            lines.join("\n")
        });
    prop_oneof![
        3 => valid_iolog(),
        3 => grammar,
        3 => mutated,
        1 => prop::collection::vec(any::<u8>(), 0..300).prop_map(|b| String::from_utf8_lossy(&b).into_owned()),
    ]
}

/// The replay options a log is read with (fio applies them while parsing).
fn replay_opts() -> impl Strategy<Value = ReplayOpts> {
    (
        prop::option::of(prop::sample::select(vec!["r", "/dev/sdc"])),
        any::<bool>(),
        prop::sample::select(vec![0u64, 1, 512, 4096, 1 << 31]),
        prop::sample::select(vec![0u64, 1, 3, 256, u32::MAX as u64]),
        prop::sample::select(vec![1u64, 50, 100, 300, u32::MAX as u64]),
    )
        .prop_map(
            |(redirect, no_stall, align, scale, time_scale)| ReplayOpts {
                redirect: redirect.map(String::from),
                no_stall,
                align,
                scale,
                time_scale,
            },
        )
}

/// What the parser promises of an accepted log: every entry names a file
/// it added, data moves bytes, and there is something to replay.
fn check_log(l: &IoLog, o: &ReplayOpts) {
    assert!(!l.files.is_empty());
    assert!(l.rw().is_some() || l.count(Act::Wait) > 0);
    for e in &l.entries {
        assert!((e.file as usize) < l.files.len(), "{e:?}");
        assert!(!e.act.is_data() || e.len > 0, "{e:?}");
        assert!(
            o.align == 0 || e.act == Act::Wait || e.offset % o.align == 0,
            "{e:?}"
        );
        assert!(!o.no_stall || e.delay_us == 0, "{e:?}");
    }
    if let Some(r) = &o.redirect {
        assert_eq!(l.files, vec![r.clone()]);
    }
}

/// An accepted log as a job: the replay's operations end, and each names
/// one of the job's files.
fn check_replay(path: &std::path::Path, l: &IoLog, o: &ReplayOpts) {
    let mut text = format!("[r]\nread_iolog={}\nreplay_scale={}\nreplay_time_scale={}\nreplay_no_stall={}\nend_fsync=1\nunlink=1\n", path.display(), o.scale, o.time_scale, o.no_stall as u8);
    if o.align > 0 {
        text += &format!("replay_align={}\n", o.align);
    }
    if let Some(r) = &o.redirect {
        text += &format!("replay_redirect={r}\n");
    }
    let j = parse_job_str(&text, "fuzz.fio").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let j = &j[0];
    assert_eq!(j.files.len(), l.files.len());
    let mut g = JobIo::new(j, 1);
    let mut n = 0;
    while let Some(op) = g.next_op() {
        n += 1;
        assert!(
            n <= 3 * l.entries.len() + 3 * l.files.len(),
            "runaway replay"
        );
        let f = match op {
            Op::Io { file, io, .. } => {
                assert!(io.len > 0);
                file
            }
            Op::Sync { file, .. } | Op::Invalidate(file) | Op::Unlink(file) => file,
            Op::Stall(_) => 0,
        };
        assert!(f < j.files.len());
    }
}

#[test]
fn fuzz_iologs() {
    let (n, rej) = (AtomicU64::new(0), AtomicU64::new(0));
    let dir = std::env::temp_dir().join(format!("foliosim-fuzz-iolog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("fuzz.log");
    let label = path.display().to_string();
    runner()
        .run(&(iolog_text(), replay_opts()), |(text, o)| {
            n.fetch_add(1, Ordering::Relaxed);
            std::fs::write(&path, &text).unwrap();
            match iolog::load(&label, &o) {
                Ok(l) => {
                    check_log(&l, &o);
                    check_replay(&path, &l, &o);
                }
                Err(e) => {
                    rej.fetch_add(1, Ordering::Relaxed);
                    assert_one_line(&e, &label);
                }
            }
            Ok(())
        })
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    report("fio iologs", &n, &rej);
    let (n, r) = (n.load(Ordering::Relaxed), rej.load(Ordering::Relaxed));
    assert!(
        r > 0 && r < n,
        "both accepted and refused logs: {r} of {n} refused"
    );
}

// ---- Scenario files (TOML) and usemem command lines ----

/// Keys a scenario knows, at every level, for hostile lines.
const SCENARIO_KEYS: &[&str] = &[
    "memory",
    "swap",
    "lru",
    "swappiness",
    "device",
    "read_ahead_kb",
    "zram_ratio",
    "seed",
    "sysctl",
    "path",
    "max",
    "memory.max",
    "memory.limit_in_bytes",
    "high",
    "low",
    "min",
    "swap_max",
    "memory.memsw.limit_in_bytes",
    "oom_group",
    "oom_kill_disable",
    "name",
    "size",
    "fs",
    "prefill",
    "cgroup",
    "count",
    "oom_score_adj",
    "steps",
    "step",
    "op",
    "map",
    "file",
    "pattern",
    "write",
    "passes",
    "accesses",
    "duration",
    "think",
    "bs",
    "amount",
    "direct",
    "advice",
    "offset",
    "len",
    "private",
    "job",
    "time",
    "wait",
];

fn scenario_value() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("\"1G\"".to_string()),
        Just("\"0\"".to_string()),
        Just("0".to_string()),
        Just("-1".to_string()),
        Just("9223372036854775807".to_string()),
        Just("\"99999999999999999P\"".to_string()),
        Just("\"max\"".to_string()),
        Just("\"zipf:0\"".to_string()),
        Just("\"hotcold:101/0\"".to_string()),
        Just("\"stride:0\"".to_string()),
        Just("\"nurand:\"".to_string()),
        Just("\"ycsb:nan\"".to_string()),
        Just("\"120ms\"".to_string()),
        Just("\"10\"".to_string()),
        Just("true".to_string()),
        Just("1.5e308".to_string()),
        Just("[]".to_string()),
        Just("{}".to_string()),
        Just("[{ op = \"barrier\", name = \"X\" }]".to_string()),
        Just("[{ op = \"loop\", count = 99999999999, steps = [{ op = \"barrier\", name = \"b0\" }] }]".to_string()),
        Just("[{ op = \"fork\", steps = [{ op = \"exit\" }] }]".to_string()),
        Just("\"zram:4G\"".to_string()),
        Just("\"a/../b\"".to_string()),
        "\"[ -~]{0,12}\"".prop_map(|s| s),
        "[0-9]{1,20}".prop_map(|s| s),
    ]
}

fn scenario_line() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => (prop::sample::select(SCENARIO_KEYS), scenario_value())
            .prop_map(|(k, v)| format!("{k} = {v}")),
        1 => prop::sample::select(&["[machine]", "[[cgroup]]", "[[file]]", "[[process]]", "[[process.thread]]", "[[process.step]]", "[[process.thread.steps]]", "[process]"][..])
            .prop_map(String::from),
        1 => "[ -~]{0,30}".prop_map(|s| s),
    ]
}

fn scenario_corpus() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    let mut v: Vec<(PathBuf, String)> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .map(|p| {
            let t = std::fs::read_to_string(&p).unwrap();
            (p, t)
        })
        .collect();
    v.sort();
    let mut texts: Vec<String> = v.into_iter().map(|x| x.1).collect();
    texts.extend((0..40).map(|s| gen::random_scenario(s, gen::Limits::default())));
    texts
}

fn scenario_mutated(corpus: Vec<String>) -> impl Strategy<Value = String> {
    let n = corpus.len();
    (
        0..n,
        prop::collection::vec(
            (
                0u8..5,
                any::<prop::sample::Index>(),
                scenario_line(),
                any::<u8>(),
            ),
            1..5,
        ),
    )
        .prop_map(move |(i, muts)| {
            let mut lines: Vec<String> = corpus[i].lines().map(String::from).collect();
            for (op, at, l, b) in muts {
                let len = lines.len();
                match op {
                    0 if len > 0 => lines[at.index(len)] = l,
                    1 => lines.insert(at.index(len + 1), l),
                    2 if len > 0 => {
                        lines.remove(at.index(len));
                    }
                    3 if len > 0 => {
                        // Keep the key, give it a hostile value.
                        let k = at.index(len);
                        if let Some((key, _)) = lines[k].clone().split_once('=') {
                            let v = l.split_once('=').map(|x| x.1).unwrap_or(&l).to_string();
                            lines[k] = format!("{key}={v}");
                        }
                    }
                    _ if len > 0 => {
                        let k = at.index(len);
                        let mut bytes = lines[k].clone().into_bytes();
                        let p = at.index(bytes.len() + 1);
                        bytes.insert(p, b);
                        lines[k] = String::from_utf8_lossy(&bytes).into_owned();
                    }
                    _ => {}
                }
            }
            lines.join("\n")
        })
}

/// No panic; a refusal is one line naming the file; an accepted scenario
/// holds the invariants its consumers rely on.
fn check_scenario_text(text: &str, n: &AtomicU64, rej: &AtomicU64) {
    n.fetch_add(1, Ordering::Relaxed);
    match scenario::parse(text, "fuzz.toml") {
        Ok(sc) => {
            assert!(!sc.processes.is_empty());
            for (i, c) in sc.cgroups.iter().enumerate() {
                if let Some((parent, _)) = c.path.rsplit_once('/') {
                    assert!(sc.cgroups[..i].iter().any(|p| p.path == parent), "{sc:?}");
                }
            }
            for p in &sc.processes {
                assert!(p.count >= 1 && !p.threads.is_empty());
                assert!(p.cgroup.is_empty() || sc.cgroups.iter().any(|c| c.path == p.cgroup));
                assert!(p
                    .threads
                    .iter()
                    .all(|t| t.count >= 1 && !t.steps.is_empty()));
            }
            assert!(
                sc.barriers.iter().all(|b| b.parties >= 2),
                "{:?}",
                sc.barriers
            );
        }
        Err(e) => {
            rej.fetch_add(1, Ordering::Relaxed);
            assert_one_line(&e, "fuzz.toml:");
        }
    }
}

#[test]
fn fuzz_scenarios_mutated_from_examples() {
    let (n, rej) = (AtomicU64::new(0), AtomicU64::new(0));
    runner()
        .run(&scenario_mutated(scenario_corpus()), |t| {
            check_scenario_text(&t, &n, &rej);
            Ok(())
        })
        .unwrap();
    report("scenario files (mutated examples)", &n, &rej);
    assert!(
        rej.load(Ordering::Relaxed) > 0,
        "mutations never produced a bad scenario"
    );
}

#[test]
fn fuzz_scenarios_raw_bytes() {
    let (n, rej) = (AtomicU64::new(0), AtomicU64::new(0));
    runner()
        .run(&prop::collection::vec(any::<u8>(), 0..400), |b| {
            check_scenario_text(&String::from_utf8_lossy(&b), &n, &rej);
            Ok(())
        })
        .unwrap();
    report("scenario files (raw bytes)", &n, &rej);
}

#[test]
fn fuzz_usemem_command_lines() {
    let (n, rej) = (AtomicU64::new(0), AtomicU64::new(0));
    let arg = prop_oneof![
        3 => prop::sample::select(&[
            "-n", "-t", "-u", "-j", "-r", "-s", "-T", "-e", "-R", "-o", "-y", "-x", "-Z", "-F", "-a", "-O", "-q",
            "-P", "-f", "--random", "--repeat", "--unit", "--step", "--runtime", "--delay", "--touch-alloc",
            "--sync-rw", "--nproc=2", "--thread=3", "--r", "--", "-nR", "-t0",
        ][..]).prop_map(String::from),
        3 => prop::sample::select(&["1G", "4k", "0", "1", "3", "0x10m", "16k", "64m", "5u", "18446744073709551615", "1t", "1Q", ""][..])
            .prop_map(String::from),
        1 => "[ -~]{0,10}".prop_map(|s| s),
    ];
    runner()
        .run(&prop::collection::vec(arg, 0..8), |args| {
            n.fetch_add(1, Ordering::Relaxed);
            match scenario::usemem::parse_args(&args) {
                Ok(sc) => assert_eq!(sc.processes.len(), 1),
                Err(e) => {
                    rej.fetch_add(1, Ordering::Relaxed);
                    assert_clean_msg(&e);
                }
            }
            Ok(())
        })
        .unwrap();
    report("usemem command lines", &n, &rej);
}

// ---- foliosim traces (foliosim record, docs/trace-format.md) ----

/// A line of a foliosim trace: mostly well formed over a few ids (so that
/// the reader's checks of tasks, files, open files and mappings are met
/// both ways), some hostile.
fn rectrace_line() -> impl Strategy<Value = String> {
    let id = || prop_oneof![4 => 0u64..4, 1 => Just(u32::MAX as u64), 1 => Just(u64::MAX)];
    let big = || prop_oneof![3 => 0u64..70_000, 1 => Just(1u64 << 50), 1 => Just(u64::MAX)];
    let task = prop_oneof![3 => (0u64..4).prop_map(|t| t.to_string()), 1 => Just(".".to_string())];
    let op = prop_oneof![
        (id(), prop::sample::select(vec!["p", "t", "x"])).prop_map(|(c, k)| format!("n {c} {k}")),
        Just("e".to_string()),
        Just("x".to_string()),
        (id(), id()).prop_map(|(o, f)| format!("o {o} {f}")),
        id().prop_map(|o| format!("c {o}")),
        (
            prop::sample::select(vec!["r", "w"]),
            id(),
            big(),
            big(),
            big()
        )
            .prop_map(|(k, o, a, b, d)| format!("{k} {o} {a} {b} {d}")),
        (id(), big()).prop_map(|(f, d)| format!("s {f} {d}")),
        (
            id(),
            prop::sample::select(vec!["n", "s", "r", "w", "d", "o", "q"]),
            big(),
            big()
        )
            .prop_map(|(o, a, b, c)| format!("a {o} {a} {b} {c}")),
        (id(), big()).prop_map(|(f, s)| format!("t {f} {s}")),
        id().prop_map(|f| format!("u {f}")),
        (id(), big()).prop_map(|(v, p)| format!("ma {v} {p}")),
        (
            id(),
            big(),
            id(),
            big(),
            prop::sample::select(vec!["s", "p", "z"])
        )
            .prop_map(|(v, p, f, o, s)| format!("mf {v} {p} {f} {o} {s}")),
        id().prop_map(|v| format!("mu {v}")),
        (
            id(),
            prop::sample::select(vec!["n", "d", "w", "c"]),
            big(),
            big()
        )
            .prop_map(|(v, a, f, p)| format!("md {v} {a} {f} {p}")),
        (
            prop::sample::select(vec!["pf", "pa"]),
            id(),
            big(),
            prop::sample::select(vec!["r", "w", "x"])
        )
            .prop_map(|(k, v, p, w)| format!("{k} {v} {p} {w}")),
        (id(), big(), big()).prop_map(|(f, a, b)| format!("fa {f} {a} {b}")),
    ];
    prop_oneof![
        8 => (big(), task, op).prop_map(|(dt, t, op)| format!("{dt} {t} {op}")),
        2 => (id(), big(), big(), "[a-z/%]{0,8}").prop_map(|(i, a, b, p)| format!("F {i} {a} {b} 254:0:1 {p}")),
        1 => Just("0 0 n 1 p".to_string()),
        1 => "\\PC{0,30}",
    ]
}

#[test]
fn fuzz_foliosim_traces() {
    use foliosim_workload::rectrace::{Reader, MAGIC};
    let (n, rej) = (AtomicU64::new(0), AtomicU64::new(0));
    let input = prop_oneof![
        4 => prop::collection::vec(rectrace_line(), 0..24)
            .prop_map(|ls| format!("{MAGIC}\n# real.vmstat.pgpgin: 1\n0 0 n 1 p\n{}\n", ls.join("\n")).into_bytes()),
        1 => prop::collection::vec(any::<u8>(), 0..200),
    ];
    runner()
        .run(&input, |bytes| {
            n.fetch_add(1, Ordering::Relaxed);
            match Reader::new(bytes.as_slice(), "fuzz.trace") {
                Err(e) => {
                    rej.fetch_add(1, Ordering::Relaxed);
                    assert_one_line(&e, "fuzz.trace");
                }
                Ok(mut r) => {
                    let mut k = 0;
                    while let Some(e) = r.next_event() {
                        k += 1;
                        assert!(k <= bytes.len() + 1, "more events than lines");
                        if let Err(e) = e {
                            rej.fetch_add(1, Ordering::Relaxed);
                            assert_one_line(&e, "fuzz.trace:");
                            break;
                        }
                    }
                }
            }
            Ok(())
        })
        .unwrap();
    report("foliosim traces", &n, &rej);
}
