//! fio's own examples/ (tests/corpora/fio-examples): each job file
//! either runs in the model or is refused with exactly one line naming
//! file, line and option, and exit code 2 — never a panic. The test prints
//! the list, and how many of the examples whose engine reaches files or
//! the page cache run; that count and the examples known to run are
//! asserted, so neither can regress (the target is 90%).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use foliosim::sim::{run_fio, SimConfig};
use foliosim_workload::fio::{parse_job_file, resolve_device_sizes};

#[path = "../../../tests/require.rs"]
mod require;

/// The corpus: $FOLIOSIM_FIO_EXAMPLES (another fio's examples/), else the
/// repository's copy; either missing fails the test.
fn corpus() -> PathBuf {
    match std::env::var_os("FOLIOSIM_FIO_EXAMPLES") {
        Some(p) => {
            let p = PathBuf::from(p);
            assert!(
                p.is_dir(),
                "FOLIOSIM_FIO_EXAMPLES={}: no such directory",
                p.display()
            );
            p
        }
        None => require::fio_examples(),
    }
}

/// The capacity given to block-device jobs without size= (fio would use
/// the device's).
const DISK: &str = "1G";
/// Simulated seconds each job may run: fio's runtime= caps every job,
/// time_based or not; the examples ask for up to an hour.
const RUNTIME_CAP_NS: u64 = 1_000_000_000;

/// Engines whose I/O reaches files or the page cache: everything the model
/// runs except null, cpuio and NVMe passthrough, plus the refused engines
/// that do go through the page cache (e4defrag's extent moves, the GPU
/// engines' posix modes). Network, user-space, passthrough and DAX
/// engines do not.
fn touches_page_cache(engine: &str) -> bool {
    matches!(
        engine,
        "psync"
            | "sync"
            | "pvsync"
            | "pvsync2"
            | "vsync"
            | "mmap"
            | "libaio"
            | "io_uring"
            | "posixaio"
            | "splice"
            | "falloc"
            | "ftruncate"
            | "filecreate"
            | "filestat"
            | "filedelete"
            | "dircreate"
            | "dirstat"
            | "dirdelete"
            | "e4defrag"
            | "libcufile"
            | "libhipfile"
    )
}

/// The engines a job file names; else those its usage comments pass as
/// `--ioengine=` (the xnvme examples); else fio's default, psync.
fn engines_of(text: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .lines()
        .map(|l| l.split([';', '#']).next().unwrap_or("").trim())
        .filter_map(|l| l.strip_prefix("ioengine"))
        .filter_map(|r| r.trim_start().strip_prefix('='))
        .map(|e| e.trim().to_string())
        .collect();
    if v.is_empty() {
        v = text
            .split("--ioengine=")
            .skip(1)
            .map(|r| {
                r.split(|c: char| !(c.is_alphanumeric() || c == '_'))
                    .next()
                    .unwrap_or("")
                    .to_string()
            })
            .collect();
    }
    if v.is_empty() {
        v.push("psync".into());
    }
    v.sort();
    v.dedup();
    v
}

#[test]
fn every_fio_example_runs_or_is_refused_in_one_line() {
    let dir = corpus();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "fio"))
        .collect();
    files.sort();
    assert!(
        files.len() > 50,
        "corpus at {} has {} files",
        dir.display(),
        files.len()
    );
    let disk = foliosim_workload::units::parse_size(DISK).unwrap();
    let mut outcome: BTreeMap<String, (bool, String, bool)> = BTreeMap::new();
    for p in &files {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(p).unwrap();
        let pc = engines_of(&text).iter().any(|e| touches_page_cache(e));
        if let Some((_, env, opts)) = DOCUMENTED_SETUP.iter().find(|d| d.0 == name) {
            let (ok, why) = run_with_setup(p, env, opts);
            outcome.insert(name, (ok, why, pc));
            continue;
        }
        let parsed = parse_job_file(p).and_then(|mut jobs| {
            resolve_device_sizes(&mut jobs, Some(disk))?;
            Ok(jobs)
        });
        match parsed {
            Ok(mut jobs) => {
                for j in &mut jobs {
                    j.runtime_ns = Some(j.runtime_ns.unwrap_or(u64::MAX).min(RUNTIME_CAP_NS));
                }
                let r = std::panic::catch_unwind(|| run_fio(SimConfig::default(), &jobs));
                let r = r.unwrap_or_else(|_| panic!("{name}: the model panicked"));
                assert_eq!(r.jobs.len(), jobs.len(), "{name}");
                outcome.insert(name, (true, String::new(), pc));
            }
            Err(e) => {
                // The command refuses it the same way: one line, exit 2.
                let out = Command::new(env!("CARGO_BIN_EXE_foliosim"))
                    .args(["fio", &format!("--disk-size={DISK}")])
                    .arg(p)
                    .output()
                    .unwrap();
                let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
                assert!(!stderr.contains("panicked"), "{name}: {stderr}");
                assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
                let line = stderr.trim_end();
                assert_eq!(line, format!("foliosim: {e}"), "{name}");
                // file:line: option: message
                let rest = line
                    .strip_prefix(&format!("foliosim: {}:", p.display()))
                    .unwrap_or_else(|| panic!("{name}: does not name the file: {line}"));
                let (lineno, rest) = rest.split_once(": ").unwrap();
                assert!(
                    lineno.parse::<usize>().is_ok(),
                    "{name}: no line number: {line}"
                );
                assert!(rest.contains(": "), "{name}: no option: {line}");
                outcome.insert(name, (false, rest.to_string(), pc));
            }
        }
    }
    let ran = outcome.values().filter(|o| o.0).count();
    let pc_total = outcome.values().filter(|o| o.2).count();
    let pc_ran = outcome.values().filter(|o| o.2 && o.0).count();
    println!("fio examples: {ran} of {} run", outcome.len());
    println!(
        "engines reaching files or the page cache: {pc_ran} of {pc_total} run ({:.0}%)",
        100.0 * pc_ran as f64 / pc_total.max(1) as f64
    );
    for (name, (ok, why, pc)) in &outcome {
        let tag = if *pc { "page-cache" } else { "other" };
        if *ok {
            println!("  ran      {tag:10} {name}");
        } else {
            println!("  refused  {tag:10} {name}: {why}");
        }
    }
    // Every page-cache example that runs today (the engines' and the
    // options' work); a new refusal among them is a regression.
    for must in [
        "1mbs_clients.fio",
        "aio-read.fio",
        "atomic-verify.fio",
        "backwards-read.fio",
        "basic-verify.fio",
        "cmdprio-bssplit.fio",
        "cmdprio-percentage.fio",
        "dedupe-global.fio",
        "dircreate-ioengine.fio",
        "dirdelete-ioengine.fio",
        "dirstat-ioengine.fio",
        "disk-zone-profile.fio",
        "exitwhat.fio",
        "filecreate-ioengine.fio",
        "filedelete-ioengine.fio",
        "filestat-ioengine.fio",
        "fio-rand-RW.fio",
        "fio-rand-read.fio",
        "fio-rand-write.fio",
        "fio-seq-RW.fio",
        "fio-seq-read.fio",
        "fio-seq-write.fio",
        "fixed-rate-submission.fio",
        "flow.fio",
        "fsx.fio",
        "ftruncate.fio",
        "iometer-file-access-server.fio",
        "jesd219.fio",
        "numa.fio",
        "poisson-rate-submission.fio",
        "rand-zones.fio",
        "ssd-steadystate.fio",
        "ssd-test.fio",
        "surface-scan.fio",
        "tiobench-example.fio",
        "waitfor.fio",
        "null.fio",
        "libcufile-cufile.fio",
        "libcufile-posix.fio",
        "libhipfile-hipfile.fio",
        "libhipfile-posix.fio",
        "xnvme-compare.fio",
        "zbd-rand-write.fio",
        "zbd-seq-read.fio",
        "zbd-rand-write-zone-reset-gc.fio",
        "steadystate.fio",
        // steadystate=lat and steadystate_check_interval: fio 3.42's.
        "example_latency_steadystate.fio",
        "latency-profile.fio",
        "falloc.fio",
        "zbd-rand-write-trim-gc.fio",
        // Runs as fio runs it on a file system: the punch_hole job's
        // libaio trim is BLKDISCARD, ENOTTY on a regular file, and its
        // error with exitall ends every job (checked with fio 3.33).
        "enospc-pressure.fio",
        // Anonymous memory through the model's fault paths.
        "page_fault.fio",
    ] {
        assert!(outcome[must].0, "{must}: {}", outcome[must].1);
    }
    assert!(
        pc_ran >= MIN_PAGE_CACHE_RUN,
        "{pc_ran} of {pc_total} page-cache examples run, fewer than {MIN_PAGE_CACHE_RUN}"
    );
}

/// Page-cache examples that run (of 56), those of [`DOCUMENTED_SETUP`]
/// given the setting their own comments document.
const MIN_PAGE_CACHE_RUN: usize = 51;

/// Examples that need what fio itself takes from outside the job file:
/// `${VAR}`s the file's header documents (fio 3.33 refuses them without:
/// an unset variable expands to nothing, "failed parsing directory="),
/// or a device as big as the file says it assumes. Each runs through the
/// command, as a user would run it, with exactly that setting and nothing
/// else; they count as running, because fio needs the same from its user.
/// (file, environment, machine options)
const DOCUMENTED_SETUP: &[(&str, &[(&str, &str)], &[&str])] = &[
    // "Required environment variables: GPU_DEV_IDS, FIO_DIR".
    ("libcufile-cufile.fio", GPU_ENV, &[DISK_OPT]),
    ("libcufile-posix.fio", GPU_ENV, &[DISK_OPT]),
    ("libhipfile-hipfile.fio", GPU_ENV, &[DISK_OPT]),
    ("libhipfile-posix.fio", GPU_ENV, &[DISK_OPT]),
    // The header's override example (FIO_BS="512" FIO_IODEPTH=16), with
    // FIO_RW the [default] section's own rw: its "verify" is no rw fio
    // 3.33 knows (fio refuses it too).
    (
        "xnvme-compare.fio",
        &[
            ("FIO_BS", "512"),
            ("FIO_RW", "randread"),
            ("FIO_IODEPTH", "16"),
        ],
        &[DISK_OPT],
    ),
    // zonemode=zbd on a device of the size the file's own offset and size
    // need (fio emulates zones on a device that is not zoned; on a smaller
    // one it fails the job): zone 524 + 40 zones read; 524z + 8z.
    ("zbd-seq-read.fio", &[], &["--disk-size=141G"]),
    (
        "zbd-rand-write-zone-reset-gc.fio",
        &[],
        &["--disk-size=133G"],
    ),
    ("zbd-rand-write-trim-gc.fio", &[], &["--disk-size=163G"]),
    // Runs with its environment, and is then refused as fio refuses it on
    // a file or a device that is not zoned: no zonesize.
    (
        "xnvme-zoned.fio",
        &[
            ("FIO_BS", "512"),
            ("FIO_RW", "write"),
            ("FIO_IODEPTH", "16"),
        ],
        &[DISK_OPT],
    ),
    // filename=/tmp/testfile with no size=: fio reads an existing file and
    // takes its size from it (and refuses the job without one); the file's
    // size is its user's choice, 64M here.
    ("butterfly.fio", &[], &["--existing-file-size=64M"]),
];
const DISK_OPT: &str = "--disk-size=1G";
const GPU_ENV: &[(&str, &str)] = &[("FIO_DIR", "/gpu-test"), ("GPU_DEV_IDS", "0:1")];

/// Runs `p` through the command with `env` and the machine options `opts` (and
/// `--runtime=1`, the cap the other examples get): (ran, why not). A
/// refusal is still one line and exit code 2.
fn run_with_setup(p: &Path, env: &[(&str, &str)], opts: &[&str]) -> (bool, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_foliosim"));
    c.arg("fio").args(opts).arg("--runtime=1").arg(p);
    for (k, v) in env {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let name = p.display();
    if out.status.code() == Some(0) {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("Run status group"), "{name}: {stdout}");
        return (true, String::new());
    }
    assert_eq!(out.status.code(), Some(2), "{name}: {stderr}");
    assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
    // As the other refusals are listed: "option: message".
    let line = stderr.trim_end();
    let rest = line
        .strip_prefix(&format!("foliosim: {name}:"))
        .and_then(|r| r.split_once(": "))
        .unwrap_or_else(|| panic!("{name}: does not name file and line: {line}"));
    (false, rest.1.to_string())
}

/// The GPU engines' examples take `directory=${FIO_DIR}` and
/// `gpu_dev_ids=${GPU_DEV_IDS}` from the environment, as their headers
/// say; without them fio 3.33 refuses them too ("failed parsing
/// directory="). Given both, all four run, as psync.
#[test]
fn gpu_engine_examples_run_with_their_environment() {
    let dir = corpus();
    for f in [
        "libcufile-cufile.fio",
        "libcufile-posix.fio",
        "libhipfile-hipfile.fio",
        "libhipfile-posix.fio",
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_foliosim"))
            .args(["fio", &format!("--disk-size={DISK}"), "--runtime=1"])
            .arg(dir.join(f))
            .env("FIO_DIR", "/gpu-test")
            .env("GPU_DEV_IDS", "0:1")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{f}: {stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(stdout.contains("Run status group"), "{f}: {stdout}");
        let without = Command::new(env!("CARGO_BIN_EXE_foliosim"))
            .args(["fio", &format!("--disk-size={DISK}")])
            .arg(dir.join(f))
            .env_remove("FIO_DIR")
            .env_remove("GPU_DEV_IDS")
            .output()
            .unwrap();
        let e = String::from_utf8_lossy(&without.stderr);
        assert_eq!(without.status.code(), Some(2), "{f}: {e}");
        assert!(e.contains(": directory: needs a value"), "{f}: {e}");
    }
}
