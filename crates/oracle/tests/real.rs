//! Runs small cases on the real host kernel. Skips (saying why, and without
//! asserting anything) when the host cannot: not root, or no memory cgroup;
//! its fio and ext4 parts likewise without fio or ext4. Under CI=true, which
//! runs as root with a memory cgroup and installs fio, each of those fails.

use foliosim_oracle::cases::{fio_case, parse_probe_cases};
use foliosim_oracle::host::{read_host, CgroupFlavor};
use foliosim_oracle::journal;
use foliosim_oracle::run::{run_case, Outcome, RunOpts, Scratch};
use foliosim_oracle::{Case, HostInfo};
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

#[path = "../../../tests/require.rs"]
mod require;

fn no_model(_: &HostInfo, _: &Case) -> Result<BTreeMap<String, f64>, String> {
    Ok(BTreeMap::from([("pgmajfault".to_string(), 0.0)]))
}

fn leftover_groups(h: &HostInfo) -> Vec<String> {
    let (CgroupFlavor::V1 { mount } | CgroupFlavor::V2 { mount }) = &h.cgroup else {
        return vec![];
    };
    let me = format!("foliosim-oracle-{}-", std::process::id());
    fs::read_dir(mount)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(&me))
        .collect()
}

/// Removes the test's own scratch directory when the test ends, also when
/// an assertion fails (a failed run left its job files in /var/tmp).
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

#[test]
fn real_probe_and_fio_cases() {
    let dir = PathBuf::from(format!(
        "/var/tmp/foliosim-oracle-test-{}",
        std::process::id()
    ));
    let _cleanup = RemoveOnDrop(dir.clone());
    let host = read_host(&dir).unwrap();
    let _ = fs::remove_dir(&dir);
    let probe_case = parse_probe_cases(
        "t: --file-size 64M --pattern random --fraction 0.01 --seed 3 --memcg-limit 32M --read-ahead-kb 64",
        "test",
    )
    .unwrap()
    .remove(0);
    if let Some(why) = probe_case.skip_reason(&host) {
        require::skip(&why);
        return;
    }
    let opts = RunOpts {
        dir: dir.clone(),
        repeat: 2,
        keep: false,
        probe_cmd: vec![env!("CARGO_BIN_EXE_foliosim-oracle-probe").into()],
        verbose: true,
        run_timeout: foliosim_oracle::scn::RUN_TIMEOUT,
    };
    let ra_before = fs::read_to_string(&host.read_ahead_path).unwrap();
    let mut scratch = Scratch::new(&dir, false).unwrap();

    let r = run_case(&probe_case, &host, &opts, &mut scratch, &no_model);
    let Outcome::Ran {
        runs,
        layouts,
        rows,
        model_error,
    } = &r.outcome
    else {
        panic!("{:?}", r.outcome)
    };
    assert!(model_error.is_none());
    assert_eq!(runs.len(), 2);
    // One layout slot a run (an mmap probe's file has none recorded).
    assert_eq!(layouts.len(), runs.len());
    assert_eq!(r.read_ahead_kb, 64);
    // 1% of 16384 pages = 164 random touches; each one that misses faults
    // in a 64 KiB read-around window.
    let maj = r.row("pgmajfault").unwrap();
    let m = maj.real_median.unwrap();
    assert!((20.0..=200.0).contains(&m), "pgmajfault {m}");
    assert_eq!(maj.model, Some(0.0));
    if let Some(io) = r.row("io.rbytes") {
        // Every major fault reads; the file is 64 MiB.
        let b = io.real_median.unwrap();
        assert!(b >= m * 4096.0 && b <= 72.0 * 1048576.0, "io.rbytes {b}");
    }
    assert!(rows.iter().any(|r| r.counter == "vmstat.pgpgin"));
    assert!(r.row("elapsed_s").unwrap().real_median.unwrap() > 0.0);
    assert_eq!(
        fs::read_to_string(&host.read_ahead_path).unwrap(),
        ra_before,
        "read_ahead_kb restored"
    );
    assert!(leftover_groups(&host).is_empty(), "cgroups removed");

    if host.fio_version.is_some() {
        let job = dir.join("seq.fio");
        fs::write(
            &job,
            "; oracle: memcg_limit=64M\n[seq]\nrw=read\nbs=64k\nsize=32M\nioengine=psync\nfilename=seq.dat\n",
        )
        .unwrap();
        let fc = fio_case(&job, None, None).unwrap();
        let r = run_case(&fc, &host, &opts, &mut scratch, &no_model);
        let Outcome::Ran { runs, layouts, .. } = &r.outcome else {
            panic!("{:?}", r.outcome)
        };
        // On ext4 each run keeps its files' layout, for `oracle remodel`.
        assert_eq!(layouts.len(), runs.len());
        assert_eq!(
            layouts.iter().all(Option::is_some),
            host.ext4.is_ok(),
            "{layouts:?}"
        );
        assert_eq!(
            r.row("fio.read_bytes").unwrap().real_median,
            Some(32.0 * 1048576.0)
        );
        if let Some(io) = r.row("io.rbytes") {
            let b = io.real_median.unwrap();
            assert!(
                (32.0 * 1048576.0..=34.0 * 1048576.0).contains(&b),
                "cold 32 MiB read: io.rbytes {b}"
            );
        }
        assert!(leftover_groups(&host).is_empty());
        fs::remove_file(&job).unwrap();

        // fio's start-up (time zone, job file, its status-file lookup) and
        // the oracle's own walk to the scratch directory read nothing, in
        // the group or outside it: one stat() of a cold 4 KiB file reads its
        // directory block and at most one inode-table readahead window, and
        // the whole host reads no more than that while it runs. Before: 40 blocks in the group, 36 of them fio's
        // start-up, and the workload's window read outside the group.
        if let Ok(geo) = &host.ext4 {
            let job = dir.join("stat.fio");
            fs::write(
                &job,
                "; oracle: memcg_limit=64M\n[t0]\nioengine=filestat\nfilesize=4k\nnrfiles=1\n",
            )
            .unwrap();
            let fc = fio_case(&job, None, None).unwrap();
            let r = run_case(&fc, &host, &opts, &mut scratch, &no_model);
            let Outcome::Ran { runs, .. } = &r.outcome else {
                panic!("{:?}", r.outcome)
            };
            let blocks: Vec<f64> = runs.iter().map(|m| m["io.rbytes"] / 4096.0).collect();
            // The directory block and one window, plus 3 blocks of slack:
            // once in several runs fio took a major fault on a page the
            // warm-up had not cached (2 more blocks).
            let most = (geo.inode_readahead_blks + 2 + 3) as f64;
            assert!(
                blocks.iter().all(|&b| (1.0..=most).contains(&b)),
                "one cold stat(): blocks read in the group {blocks:?}, expected 1..={most}"
            );
            // Host-wide KiB read during each run, less the group's. A leak
            // of the harness reads outside the group in every run (the old
            // one read 140 KiB each time: its start-up and the workload's
            // window); another process on the host (a build) reads during
            // some runs only. So the cleanest run must be clean, with slack.
            let outside: Vec<f64> = runs
                .iter()
                .map(|m| m["vmstat.pgpgin"] - m["io.rbytes"] / 1024.0)
                .collect();
            let least = outside.iter().copied().fold(f64::INFINITY, f64::min);
            assert!(
                least <= 64.0,
                "KiB read outside the group during one-stat() runs: {outside:?}"
            );
            assert!(leftover_groups(&host).is_empty());
            fs::remove_file(&job).unwrap();
        } else if let Err(e) = &host.ext4 {
            require::skip(&format!("its one-stat() fio part: no ext4 geometry ({e})"));
        }

        // A job that deletes its files: the second repeat must find them
        // laid out again, not create them itself (fio's create_fsync would
        // write their 1 MiB from inside the group).
        let job = dir.join("del.fio");
        fs::write(
            &job,
            "; oracle: memcg_limit=64M\n[del]\nioengine=filedelete\nfilesize=64k\nnrfiles=16\n",
        )
        .unwrap();
        let fc = fio_case(&job, None, None).unwrap();
        let r = run_case(&fc, &host, &opts, &mut scratch, &no_model);
        let Outcome::Ran { runs, .. } = &r.outcome else {
            panic!("{:?}", r.outcome)
        };
        for (i, m) in runs.iter().enumerate() {
            let r = m.get("fio.read_bytes").copied();
            assert_eq!(r, Some(16.0 * 65536.0), "repeat {i}: 16 unlinks");
            if let Some(&w) = m.get("io.wbytes") {
                assert!(
                    w < 512.0 * 1024.0,
                    "repeat {i}: io.wbytes {w}: fio re-created the files"
                );
            }
        }
        assert!(leftover_groups(&host).is_empty());
        fs::remove_file(&job).unwrap();
    } else {
        require::skip("its fio part: fio is not installed (apt-get install -y fio; .ci/run does)");
    }
    drop(scratch);
    assert!(!dir.exists(), "scratch files removed");
    // The guards cleared their journal entries as they undid their changes.
    let me = std::process::id();
    let left: Vec<_> = journal::pending(&fs::read_to_string(journal::path()).unwrap_or_default())
        .into_iter()
        .filter(|e| e.pid == me)
        .collect();
    assert!(left.is_empty(), "journal entries left: {left:?}");
}

/// A replay of an iolog beside the job file (in a directory of its own):
/// the oracle copies it out of fio's working directory, lays out the file
/// it names (4 MiB: fio lays out none for a replay), and fio reads what
/// the log reads, cold each repeat. About 3 s.
#[test]
fn real_iolog_replay_case() {
    let dir = PathBuf::from(format!(
        "/var/tmp/foliosim-oracle-iolog-test-{}",
        std::process::id()
    ));
    let _cleanup = RemoveOnDrop(dir.clone());
    let host = read_host(&dir).unwrap();
    let _ = fs::remove_dir(&dir);
    fs::create_dir_all(&dir).unwrap();
    let job = dir.join("replay.fio");
    fs::write(
        &job,
        "; oracle: memcg_limit=64M\n[replay]\nread_iolog=logs/r.log\nioengine=psync\n",
    )
    .unwrap();
    let logs = dir.join("logs");
    fs::create_dir_all(&logs).unwrap();
    let mut log = String::from("fio version 3 iolog\n0 r.dat add\n1 r.dat open\n");
    for i in 0..64u64 {
        log.push_str(&format!("{} r.dat read {} 65536\n", 2 + i, i << 16));
    }
    log.push_str("70 r.dat close\n");
    fs::write(logs.join("r.log"), log).unwrap();
    let fc = fio_case(&job, None, None).unwrap();
    if let Some(why) = fc.skip_reason(&host) {
        require::skip(&why);
        return;
    }
    let scratch_dir = dir.join("scratch");
    let opts = RunOpts {
        dir: scratch_dir.clone(),
        repeat: 2,
        keep: false,
        probe_cmd: vec![],
        verbose: true,
        run_timeout: foliosim_oracle::scn::RUN_TIMEOUT,
    };
    let mut scratch = Scratch::new(&scratch_dir, false).unwrap();
    let r = run_case(&fc, &host, &opts, &mut scratch, &no_model);
    let Outcome::Ran { runs, layouts, .. } = &r.outcome else {
        panic!("{:?}", r.outcome)
    };
    assert_eq!(runs.len(), 2);
    for (i, m) in runs.iter().enumerate() {
        assert_eq!(m["fio.read_bytes"], 4.0 * 1048576.0, "repeat {i}");
        if let Some(&b) = m.get("io.rbytes") {
            assert!(
                (4.0 * 1048576.0..=5.0 * 1048576.0).contains(&b),
                "repeat {i}: cold 4 MiB replay: io.rbytes {b}"
            );
        }
    }
    for l in layouts.iter().flatten() {
        let names: Vec<&str> = l.files.iter().map(|f| f.0.as_str()).collect();
        assert_eq!(
            names,
            ["r.dat"],
            "only the replayed file in fio's directory"
        );
    }
    assert!(leftover_groups(&host).is_empty());
    drop(scratch);
    assert!(!scratch_dir.exists(), "the log's copy and its file removed");
}
