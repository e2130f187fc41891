//! The command line: exit codes and one-line errors on bad input, and the
//! reproduce command's JSON shape.

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

fn job_file(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("foliosim-cli-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

#[test]
fn bad_job_files_exit_2_with_one_line_naming_file_line_option() {
    let cases = [
        (
            "unknown.fio",
            "[j]\nsize=1M\nfrobnicate=3\n",
            3,
            "frobnicate",
        ),
        ("badsize.fio", "[j]\nsize=12Q\n", 2, "size"),
        ("nosize.fio", "[j]\nrw=read\n", 1, "size"),
        ("bs0.fio", "[j]\nsize=1M\nbs=0\n", 3, "bs"),
        ("badrw.fio", "[j]\nsize=1M\nrw=sideways\n", 3, "rw"),
    ];
    for (name, text, line, option) in cases {
        let p = job_file(name, text);
        let (code, _, err) = foliosim(&["fio", p.to_str().unwrap()]);
        assert_eq!(code, 2, "{name}: {err}");
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines.len(), 1, "{name}: one line, got {err:?}");
        assert!(
            lines[0].contains(&format!("{}:{line}", p.display())),
            "{name}: {err}"
        );
        assert!(lines[0].contains(option), "{name}: {err}");
    }
}

#[test]
fn bad_options_exit_2() {
    let (code, _, err) = foliosim(&["mmap-probe", "--pattern", "zigzag"]);
    assert_eq!(code, 2);
    assert!(err.contains("--pattern"), "{err}");
    let (code, _, err) = foliosim(&["mmap-probe", "--file-size", "1G", "--variant", "p9"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown variant 'p9'"), "{err}");
    let (code, _, err) = foliosim(&["fio", "--name=x", "--size=1M", "--memcg-limit=12Q"]);
    assert_eq!(code, 2);
    assert!(err.contains("--memcg-limit"), "{err}");
    // Refused before any run.
    let (code, _, err) = foliosim(&["reproduce", "reclaim-loop", "--seeds", "0"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim(), "foliosim: --seeds: 0 is not between 1 and 1000");
    let (code, _, err) = foliosim(&["replay", "/nonexistent/trace.csv"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/nonexistent/trace.csv"), "{err}");
    // More page frames than a 32-bit folio id indexes (the fuzz campaign
    // found this one panicking).
    let (code, _, err) = foliosim(&["fio", "--name=x", "--size=1M", "--memory", "1P"]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim(), "foliosim: --memory: 1P is above the model's maximum of 16T (4 KiB page frames are 32-bit ids)");
}

#[test]
fn fio_cmdline_runs_and_json_is_deterministic() {
    let args = [
        "fio",
        "--name=r",
        "--rw=randread",
        "--bs=4k",
        "--size=64M",
        "--io_size=8M",
        "--memcg-limit=16M",
        "--json",
    ];
    let (code, a, err) = foliosim(&args);
    assert_eq!(code, 0, "{err}");
    let (_, b, _) = foliosim(&args);
    assert_eq!(a, b);
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 8 << 20);
    assert!(v["memcg"]["pgmajfault"].as_u64().is_some());
    assert!(
        v["vmstat"]["pgpgin"].as_u64().unwrap() >= 8 << 10,
        "pgpgin in KiB covers the 8M read"
    );
}

#[test]
fn mmap_probe_json_has_kernel_counters() {
    let (code, out, err) = foliosim(&[
        "mmap-probe",
        "--file-size",
        "512M",
        "--memory",
        "1G",
        "--read-ahead-kb",
        "2048",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for k in [
        "pgpgin",
        "pgmajfault",
        "pgfault",
        "workingset_refault_file",
        "pgscan_kswapd",
    ] {
        assert!(v["vmstat"][k].is_u64(), "missing {k}");
    }
}

#[test]
fn lru_gen_sysctls_select_and_configure_mglru() {
    let (code, out, err) = foliosim(&[
        "fio",
        "--name=x",
        "--size=8M",
        "--sysctl",
        "lru_gen.enabled=y",
        "--sysctl",
        "lru_gen.min_ttl_ms=1000",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["lru"], "mglru");
    assert!(v["lru_gen"].is_object(), "the lru_gen view is printed");
    let (code, out, _) = foliosim(&[
        "fio",
        "--name=x",
        "--size=8M",
        "--lru=mglru",
        "--sysctl",
        "lru_gen.enabled=n",
        "--json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["lru"], "classic");
    let (code, _, err) = foliosim(&[
        "fio",
        "--name=x",
        "--size=8M",
        "--sysctl",
        "lru_gen.min_ttl_ms=abc",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("lru_gen.min_ttl_ms") && err.contains("abc"),
        "{err}"
    );
}

#[test]
fn swap_sysctls_are_checked_and_memory_stat_has_swap_and_shmem() {
    let (code, out, err) = foliosim(&[
        "fio",
        "--name=x",
        "--size=8M",
        "--swap",
        "zram:64M",
        "--sysctl",
        "vm.page-cluster=0",
        "--sysctl",
        "vma_ra_enabled=0",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    for k in ["swap", "shmem"] {
        assert!(v["memcg"][k].is_u64(), "memory.stat {k}");
    }
    for k in ["swap_ra", "swap_ra_hit", "pswpin", "pswpout"] {
        assert!(v["vmstat"][k].is_u64(), "vmstat {k}");
    }
    // mm/swap.c caps page-cluster at 31.
    let (code, _, err) = foliosim(&[
        "fio",
        "--name=x",
        "--size=8M",
        "--sysctl",
        "vm.page-cluster=32",
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("vm.page-cluster=32") && err.lines().count() == 1,
        "{err}"
    );
}

#[test]
fn bad_cache_ext_policies_exit_2_with_one_line() {
    let cases: [(&[&str], &str); 6] = [
        (&["--policy", "lru9"], "--policy: unknown policy \"lru9\""),
        // Python policies are registered by the Python package; the binary
        // names where they run.
        (
            &["--policy", "py:mine"],
            "--policy: unknown policy \"py:mine\": no Python policy registered under that name",
        ),
        (
            &["--policy", "py:a b"],
            "--policy: unknown policy \"py:a b\"",
        ),
        (
            &["--policy", "lfu:sample=0"],
            "--policy: policy lfu: sample",
        ),
        (
            &["--policy", "fifo:x=1"],
            "--policy: policy fifo: takes no keys",
        ),
        (
            &["--policy", "fifo", "--lru", "mglru"],
            "needs the classic LRU",
        ),
    ];
    for (extra, want) in cases {
        let mut args = vec!["fio", "--name=x", "--size=1M"];
        args.extend_from_slice(extra);
        let (code, _, err) = foliosim(&args);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
    }
    // The list of policies comes with the unknown name.
    let (_, _, err) = foliosim(&["fio", "--name=x", "--size=1M", "--policy", "help"]);
    assert!(
        err.contains("fifo, mru, lfu, s3fifo, get-scan, admit-filter"),
        "{err}"
    );
    // `--help` lists every policy the registry has (it once left two out).
    let (_, help, _) = foliosim(&["run", "--help"]);
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for name in foliosim::policy::policy_names().iter().skip(1) {
        assert!(help.contains(name), "run --help lacks policy {name}");
    }
    // A scenario's cgroup names its policy; a bad one names file, line, key.
    let p = job_file(
        "policy.toml",
        "[[cgroup]]\npath = \"a\"\nmax = \"64M\"\npolicy = \"nope\"\n\n[[file]]\nname = \"f\"\nsize = \"8M\"\n\n[[process]]\nname = \"p\"\ncgroup = \"a\"\nsteps = [ { op = \"read\", file = \"f\" } ]\n",
    );
    let (code, _, err) = foliosim(&["run", p.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("{}:1: policy: unknown policy", p.display())),
        "{err}"
    );
}

#[test]
fn a_policy_run_reports_its_hooks() {
    let (code, out, err) = foliosim(&[
        "fio",
        "--name=x",
        "--size=64M",
        "--rw=read",
        "--loops=2",
        "--invalidate=0",
        "--memcg-limit=32M",
        "--policy",
        "mru",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ce = &v["cache_ext"];
    assert_eq!(ce["policy"], "mru");
    assert!(
        ce["stats"]["candidates_reclaimed"].as_u64().unwrap() > 0,
        "{ce}"
    );
    // Without a policy the field is absent (default output unchanged).
    let (_, out, _) = foliosim(&["fio", "--name=x", "--size=1M", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v.get("cache_ext").is_none());
}

/// oracleGeneral records {u32 time; u64 id; u32 size; i64 next}.
fn oracle_general(ids: &[u64]) -> Vec<u8> {
    let mut b = Vec::new();
    for (t, id) in ids.iter().enumerate() {
        b.extend_from_slice(&(t as u32).to_le_bytes());
        b.extend_from_slice(&id.to_le_bytes());
        b.extend_from_slice(&4096u32.to_le_bytes());
        b.extend_from_slice(&(-1i64).to_le_bytes());
    }
    b
}

#[test]
fn replay_reads_ahead_but_runs_every_request_and_reports_a_bad_record_where_it_is() {
    // More requests than the replay's look-ahead, ids repeating so that
    // hits and misses both occur.
    let ids: Vec<u64> = (0..100u64).map(|i| (i * 7) % 40).collect();
    let good = job_file("ahead.oracleGeneral.bin", "");
    std::fs::write(&good, oracle_general(&ids)).unwrap();
    let (code, out, err) = foliosim(&["replay", good.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 100);
    // Readahead is off: one page read in per distinct id.
    assert_eq!(v["vmstat"]["pgpgin"], 40 * 4);
    // A truncated record 21, read while record 5 runs: the error still
    // names record 21.
    let mut b = oracle_general(&ids[..20]);
    b.extend_from_slice(&[0u8; 10]);
    let bad = job_file("trunc-ahead.oracleGeneral.bin", "");
    std::fs::write(&bad, b).unwrap();
    let (code, out, err) = foliosim(&["replay", bad.to_str().unwrap(), "--json"]);
    assert_eq!(code, 2, "{out}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains(":21: oracleGeneral: truncated record 21"),
        "{err}"
    );
}

#[test]
fn bench_prints_every_event_and_refuses_too_few_pages() {
    let (code, _, err) = foliosim(&["bench", "--pages", "10"]);
    assert_eq!(code, 2);
    assert_eq!(err.trim(), "foliosim: --pages: 10 is below 4096");
    let (code, _, err) = foliosim(&["bench", "--trace-file", "/nonexistent.trace"]);
    assert_eq!(code, 2);
    assert!(
        err.starts_with("foliosim: --trace-file /nonexistent.trace: "),
        "{err}"
    );
    let (code, out, err) = foliosim(&[
        "bench",
        "--pages",
        "4096",
        "--rounds",
        "1",
        "--replay-events",
        "20000",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ev = v["events"].as_array().unwrap();
    for lru in ["classic", "mglru"] {
        let hit = ev
            .iter()
            .find(|e| e["lru"] == lru && e["event"] == "page-cache hit")
            .unwrap();
        assert_eq!(hit["events"], 4096);
    }
    // The synthetic trace's replay: every event replayed (its own task
    // and mapping lines on top).
    let r = &v["replays"][0];
    assert!(r["events"].as_u64().unwrap() >= 20000, "{r}");
    assert!(r["events_per_s"].as_f64().unwrap() > 0.0, "{r}");
    assert!(ev
        .iter()
        .any(|e| e["event"] == "MGLRU aging walk (per PTE)"));
}

/// Large folios and kernel releases: bad values exit 2 with one line; a
/// release decides the folio sizes with the files' file system.
#[test]
fn kernel_releases_and_large_folios() {
    let (code, _, err) = foliosim(&["fio", "--name=x", "--size=1M", "--kernel", "5.4"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.trim()
            .starts_with("foliosim: --kernel: kernel release '5.4' is older"),
        "{err}"
    );
    assert_eq!(err.trim().lines().count(), 1);
    let (code, _, err) = foliosim(&["fio", "--name=x", "--size=1M", "--large-folios", "maybe"]);
    assert_eq!(
        (code, err.trim()),
        (2, "foliosim: --large-folios: 'maybe' is not on or off")
    );
    let (code, _, err) = foliosim(&["fio", "--name=x", "--size=1M", "--fio-memory", "1"]);
    assert_eq!(
        (code, err.trim()),
        (2, "foliosim: --fio-memory: '1' is not on or off")
    );
    let (code, _, err) = foliosim(&["run", "--usemem", "-n 1 1M", "--process-memory", "yes"]);
    assert_eq!(
        (code, err.trim()),
        (2, "foliosim: --process-memory: 'yes' is not on or off")
    );
    let (code, _, err) = foliosim(&["fio", "--name=x", "--size=1M", "--fs", "zfs"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown file system 'zfs'"), "{err}");
    // A 64 MiB sequential read, 128 KiB at a time: charge events per folio.
    let events = |extra: &[&str]| {
        let mut a = vec![
            "fio",
            "--name=s",
            "--rw=read",
            "--bs=128k",
            "--size=64M",
            "--memcg-limit=1G",
            "--json",
        ];
        a.extend_from_slice(extra);
        let (code, out, err) = foliosim(&a);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["memcg"]["memcg_pgpgin_events"].as_u64().unwrap()
    };
    let order0 = events(&[]);
    assert_eq!(order0, 16384, "one event per page without --kernel");
    assert_eq!(
        events(&["--kernel", "6.12"]),
        order0,
        "ext4 before 6.16: order 0"
    );
    assert_eq!(
        events(&["--kernel", "6.12", "--fs", "xfs"]),
        events(&["--kernel", "6.18"])
    );
    assert_eq!(events(&["--kernel", "7.0", "--fs", "btrfs"]), order0);
    let large = events(&["--kernel", "6.18"]);
    assert!(
        large * 20 < order0,
        "64-page folios after the ramp: {large}"
    );
    assert_eq!(events(&["--large-folios", "on"]), large);
    assert_eq!(
        events(&["--kernel", "6.18", "--large-folios", "off"]),
        order0
    );
    // fio's own memory adds its pages' charges (2068 + 32 for the buffer).
    assert_eq!(
        events(&["--kernel", "6.18", "--fio-memory", "on"]),
        large + 2068 + 32
    );
}

/// The resident folios of a 64 MiB file read sequentially in 128 KiB
/// reads (read_ahead_kb 8192, fio's POSIX_FADV_SEQUENTIAL), and written
/// in 1 MiB writes: the histograms oracle/qemu/folioprobe.c read from
/// /proc/kpageflags on this project's 6.18 host after the same reads and
/// writes (docs/large_folios.md).
#[test]
fn page_cache_folios_match_the_hosts_kpageflags() {
    let hist = |rw: &str, bs: &str| {
        let (code, out, err) = foliosim(&[
            "fio",
            "--name=x",
            &format!("--rw={rw}"),
            &format!("--bs={bs}"),
            "--size=64M",
            "--ioengine=psync",
            "--read-ahead-kb",
            "8192",
            "--large-folios",
            "on",
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        v["page_cache_folios"].to_string()
    };
    assert_eq!(
        hist("read", "128k"),
        r#"{"0":128,"2":128,"4":64,"6":32,"7":1,"8":15,"9":17}"#
    );
    assert_eq!(hist("write", "1M"), r#"{"8":64}"#);
    // Without large folios the field is absent (output as before).
    let (_, out, _) = foliosim(&["fio", "--name=x", "--rw=read", "--size=1M", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert!(v.get("page_cache_folios").is_none());
}

/// `foliosim run SCENARIO --json EXTRA...`, which must succeed.
fn run_scenario_json(sc: &std::path::Path, extra: &[&str]) -> serde_json::Value {
    let mut a = vec!["run", sc.to_str().unwrap(), "--json"];
    a.extend_from_slice(extra);
    let (code, out, err) = foliosim(&a);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

/// `foliosim run SCENARIO EXTRA...` that must fail: exit 2, and its one
/// line of error.
fn run_scenario_err(sc: &std::path::Path, extra: &[&str]) -> String {
    let mut a = vec!["run", sc.to_str().unwrap()];
    a.extend_from_slice(extra);
    let (code, _, err) = foliosim(&a);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    err.trim().to_string()
}

/// Anonymous mTHP through the sysfs knobs as --sysctl keys: 64 KiB folios
/// take one fault and one charge per 16 pages; bad keys and values exit 2.
#[test]
fn anon_mthp_knobs() {
    let sc = job_file(
        "mthp.toml",
        "[machine]\nmemory = \"1G\"\nseed = 1\n[[cgroup]]\npath = \"a\"\n\"memory.max\" = \"512M\"\n\
         [[process]]\nname = \"w\"\ncgroup = \"a\"\nsteps = [\n  { op = \"mmap_anon\", map = \"b\", size = \"16M\" },\n  \
         { op = \"touch\", map = \"b\", pattern = \"seq\", write = true, passes = 1 },\n]\n",
    );
    let faults = |extra: &[&str]| {
        let v = run_scenario_json(&sc, extra);
        (
            v["cgroups"]["a"]["pgfault"].as_u64().unwrap(),
            v["cgroups"]["a"]["memcg_pgpgin_events"].as_u64().unwrap(),
        )
    };
    assert_eq!(faults(&[]), (4096, 4096));
    let k64 = "transparent_hugepage.hugepages-64kB.enabled=always";
    assert_eq!(faults(&["--sysctl", k64]), (256, 256));
    // 2048kB inherits the top-level `enabled` (madvise by default: never).
    assert_eq!(
        faults(&["--sysctl", "transparent_hugepage.enabled=always"]),
        (8, 8)
    );
    let err = run_scenario_err(
        &sc,
        &[
            "--sysctl",
            "transparent_hugepage.hugepages-48kB.enabled=always",
        ],
    );
    assert!(
        err.contains("unknown key 'transparent_hugepage.hugepages-48kB.enabled'"),
        "{err}"
    );
    let err = run_scenario_err(&sc, &["--sysctl", "transparent_hugepage.enabled=yes"]);
    assert_eq!(
        err,
        "foliosim: --sysctl: transparent_hugepage.enabled: 'yes' is not always, madvise or never"
    );
    // The sizes below PMD are 6.8's: the older presets refuse them.
    let err = run_scenario_err(&sc, &["--kernel", "6.6", "--sysctl", k64]);
    assert_eq!(err, "foliosim: --sysctl: transparent_hugepage.hugepages-64kB.enabled: kernel 6.6 has no multi-size THP (6.8 and later)");
}

/// Anon mTHP under a limit with zram: the JSON's `mthp` map is the sysfs
/// stats of each enabled size; the folios go out and come back whole
/// (pswpout = 16 x swpout), and only when mTHP is on is the map there.
#[test]
fn anon_mthp_swap_stats() {
    let sc = job_file(
        "mthp-swap.toml",
        "[machine]\nmemory = \"1G\"\nswap = \"zram:256M\"\nseed = 1\n[[cgroup]]\npath = \"a\"\n\"memory.max\" = \"8M\"\n\
         [[process]]\nname = \"w\"\ncgroup = \"a\"\nsteps = [\n  { op = \"mmap_anon\", map = \"b\", size = \"16M\" },\n  \
         { op = \"touch\", map = \"b\", pattern = \"seq\", write = true, passes = 2 },\n]\n",
    );
    let run = |extra: &[&str]| run_scenario_json(&sc, extra);
    let k64 = "transparent_hugepage.hugepages-64kB.enabled=always";
    // defrag=always: the charges may reclaim, every folio stays 64 KiB.
    let v = run(&[
        "--sysctl",
        k64,
        "--sysctl",
        "transparent_hugepage.defrag=always",
    ]);
    let st = &v["mthp"]["hugepages-64kB"];
    let (swpout, swpin) = (
        st["swpout"].as_u64().unwrap(),
        st["swpin"].as_u64().unwrap(),
    );
    assert!(swpout > 0 && swpin > 0, "{st}");
    assert_eq!(v["vmstat"]["pswpout"].as_u64().unwrap(), 16 * swpout);
    assert_eq!(v["vmstat"]["pswpin"].as_u64().unwrap(), 16 * swpin);
    // The first pass faults 256 folios; the second pass swaps them in.
    assert_eq!(st["anon_fault_alloc"].as_u64().unwrap(), 256);
    assert_eq!(v["mthp"].as_object().unwrap().len(), 1);
    // The default (madvise): no reclaim for an mTHP charge, so at the
    // limit faults and swap-ins fall back to order 0.
    let v = run(&["--sysctl", k64]);
    let st = &v["mthp"]["hugepages-64kB"];
    assert!(
        st["anon_fault_fallback_charge"].as_u64().unwrap() > 0,
        "{st}"
    );
    assert!(st["swpin_fallback_charge"].as_u64().unwrap() > 0, "{st}");
    let err = run_scenario_err(&sc, &["--sysctl", "transparent_hugepage.defrag=sometimes"]);
    assert_eq!(err, "foliosim: --sysctl: transparent_hugepage.defrag: 'sometimes' is not always, defer, defer+madvise, madvise or never");
    // 6.6 has no mTHP swap-in: the PMD size's folios come back in pages.
    let v = run(&[
        "--kernel",
        "6.6",
        "--sysctl",
        "transparent_hugepage.enabled=always",
    ]);
    let st = &v["mthp"]["hugepages-2048kB"];
    assert_eq!(
        (st["swpout"].as_u64(), st["swpin"].as_u64()),
        (Some(0), Some(0))
    );
    assert!(v["vmstat"]["pswpin"].as_u64().unwrap() > 0);
    assert!(run(&[]).get("mthp").is_none());
}

/// tmpfs huge=: `--tmpfs-huge always` puts a scenario's tmpfs file in
/// large folios (the JSON's mthp map has the sizes' shmem_alloc), never
/// leaves the map out; a bad value exits 2 with one line.
#[test]
fn tmpfs_huge_option() {
    let sc = job_file(
        "tmpfs-huge.toml",
        "[machine]\nmemory = \"1G\"\nseed = 1\n[[file]]\nname = \"t\"\nsize = \"8M\"\nfs = \"tmpfs\"\n\
         [[process]]\nname = \"w\"\nsteps = [\n  { op = \"write\", file = \"t\", bs = \"128k\", pattern = \"seq\" },\n]\n",
    );
    let run = |extra: &[&str]| run_scenario_json(&sc, extra);
    let v = run(&["--tmpfs-huge", "always"]);
    // 8 MiB: four PMD folios, one charge event each.
    assert_eq!(
        v["mthp"]["hugepages-2048kB"]["shmem_alloc"].as_u64(),
        Some(4)
    );
    assert_eq!(v["memcg"]["memcg_pgpgin_events"].as_u64(), Some(4));
    assert!(run(&[]).get("mthp").is_none());
    assert_eq!(
        run_scenario_err(&sc, &["--tmpfs-huge", "force"]),
        "foliosim: --tmpfs-huge: 'force' is not never, always, within_size or advise"
    );
}

/// One line on stderr, exit 2: the line (without "foliosim: ").
fn one_line_error(args: &[&str]) -> String {
    let (code, out, err) = foliosim(args);
    assert_eq!(code, 2, "{args:?}: {err}");
    assert!(out.is_empty(), "{args:?}: {out}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "{args:?}: one line, got {err:?}");
    lines[0]
        .strip_prefix("foliosim: ")
        .expect("prefixed")
        .to_string()
}

#[test]
fn a_mistyped_machine_option_is_named_with_the_nearest_on_every_command() {
    let job = job_file("ok.fio", "[j]\nsize=1M\n");
    let job = job.to_str().unwrap();
    let want = "--memcg-limt: unknown foliosim option (did you mean --memcg-limit?)";
    for args in [
        vec!["fio", job, "--memcg-limt", "256M"],
        vec!["fio", "--memcg-limt=256M", job],
        vec!["run", "examples/kernel-build.toml", "--memcg-limt", "256M"],
        vec!["mmap-probe", "--memcg-limt", "256M"],
        vec!["replay", "t.csv", "--memcg-limt", "256M"],
        vec![
            "compare",
            "--set",
            "p1",
            "--set",
            "p2",
            "--",
            "fio",
            job,
            "--memcg-limt",
            "256M",
        ],
    ] {
        assert_eq!(one_line_error(&args), want, "{args:?}");
    }
    // A fio option mistyped is fio's, and says which argument it was.
    assert_eq!(
        one_line_error(&["fio", "--name=j", "--size=1M", "--rww=read"]),
        "fio option --rww (argument 3): unknown or unsupported fio option"
    );
}

#[test]
fn a_negative_size_names_its_option() {
    for args in [
        vec!["fio", "--name=j", "--size=1M", "--memcg-limit", "-256M"],
        vec!["mmap-probe", "--memcg-limit", "-256M"],
        vec!["run", "--usemem", "-n 1 4M", "--memcg-limit", "-256M"],
    ] {
        assert_eq!(
            one_line_error(&args),
            "--memcg-limit: bad size '-256M'",
            "{args:?}"
        );
    }
    assert_eq!(
        one_line_error(&["mmap-probe", "--memory", "-1G"]),
        "--memory: bad size '-1G'"
    );
}

#[test]
fn a_missing_job_file_is_not_at_line_0() {
    let e = one_line_error(&["fio", "/nonexistent/job.fio"]);
    assert!(
        e.starts_with("/nonexistent/job.fio: job file: cannot read:"),
        "{e}"
    );
    assert!(!e.contains(":0:"), "{e}");
}

#[test]
fn a_mistyped_command_or_variant_gets_a_suggestion() {
    assert_eq!(
        one_line_error(&["fi", "--name=j"]),
        "fi: unknown foliosim command (did you mean fio?)"
    );
    assert_eq!(
        one_line_error(&["mmap-probe", "--variant", "wsprot-rewrok"]),
        "--variant: unknown variant 'wsprot-rewrok' (did you mean 'wsprot-rework'? `foliosim variants` lists them all)"
    );
    assert_eq!(
        one_line_error(&["reproduce", "mmap-miss", "--format", "csv"]),
        "--format: 'csv' is not table, text or json"
    );
}

#[test]
fn every_commands_help_lists_its_options() {
    // fio's help, before or after its job file or through `help`, lists
    // the machine options.
    for args in [
        vec!["fio", "--help"],
        vec!["fio", "job.fio", "--help"],
        vec!["fio", "-h"],
        vec!["help", "fio"],
    ] {
        let (code, out, err) = foliosim(&args);
        assert_eq!(code, 0, "{args:?}: {err}");
        for o in [
            "--memcg-limit",
            "--kernel",
            "--variant",
            "--output-format",
            "wsprot-rework",
        ] {
            assert!(out.contains(o), "{args:?} lacks {o}: {out}");
        }
    }
    assert_eq!(foliosim(&["help", "fio"]).1, foliosim(&["fio", "--help"]).1);
    for cmd in [
        "run",
        "mmap-probe",
        "replay",
        "compare",
        "variants",
        "sweep",
        "report",
        "bench",
    ] {
        let (code, out, err) = foliosim(&[cmd, "--help"]);
        assert_eq!(code, 0, "{cmd}: {err}");
        assert!(out.contains("Options:"), "{cmd}: {out}");
    }
    let (_, out, _) = foliosim(&["mmap-probe", "--help"]);
    for o in [
        "--kernel",
        "--large-folios",
        "--fs",
        "--device",
        "--file-size",
    ] {
        assert!(out.contains(o), "mmap-probe lacks {o}");
    }
}

#[test]
fn variants_prints_the_registry_with_its_releases() {
    let (code, out, err) = foliosim(&["variants"]);
    assert_eq!(code, 0, "{err}");
    let ws = out
        .lines()
        .find(|l| l.starts_with("wsprot-rework "))
        .unwrap();
    assert!(ws.contains("wsprot-legacy") && ws.contains("6.14"), "{ws}");
    let (code, out, _) = foliosim(&["variants", "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let p1 = &v[0];
    assert_eq!(p1["name"], "p1");
    assert_eq!(p1["releases"], serde_json::json!(["7.2"]));
}

#[test]
fn run_header_spells_the_lru_and_names_the_patches() {
    let (code, out, err) = foliosim(&[
        "fio",
        "--name=j",
        "--size=2M",
        "--lru=mglru",
        "--kernel=6.1",
        "--memcg-limit=1M",
    ]);
    assert_eq!(code, 0, "{err}");
    let head = out.lines().find(|l| l.starts_with("fio: lru=")).unwrap();
    assert!(head.starts_with("fio: lru=mglru "), "{head}");
    assert!(head.ends_with("patches: x86 pf-set-active"), "{head}");
    // memory.stat keeps to memory.stat's keys; the page counters' files,
    // memory.events and the vmstat I/O in KiB have their own sections.
    let stat = out.split("\nmemory.stat (").nth(1).unwrap();
    let stat = stat.split("\n\n").next().unwrap();
    for k in ["usage_in_bytes", "max ", "failcnt", "memsw."] {
        assert!(
            !stat.contains(&format!("\n{k}")),
            "{k} in memory.stat: {stat}"
        );
    }
    assert!(out.contains("\nmemory.usage_in_bytes "), "{out}");
    assert!(
        out.contains("/proc/vmstat I/O charged to the workload memcg (KiB):"),
        "{out}"
    );
}

/// read_iolog: a real fio log runs; a bad log line is one line on
/// stderr naming the log, its line and the fault, and exit code 2.
#[test]
fn iologs_run_and_bad_lines_exit_2_naming_log_and_line() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../workload/tests/data/iolog/seqread.v3.log");
    let arg = format!("--read_iolog={}", fixture.display());
    let (code, out, err) = foliosim(&["fio", "--name=r", &arg, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["jobs"][0]["read"]["io_bytes"], 65536);
    assert_eq!(v["vmstat"]["pgpgin"], 64);
    let head = "fio version 2 iolog\nf add\nf open\n";
    let cases = [
        (
            "header.log",
            "fio version 9 iolog\nf add\n".to_string(),
            1,
            "not a fio iolog",
        ),
        (
            "action.log",
            format!("{head}f read 0 4096\nf rewind 0 0\n"),
            5,
            "unknown action 'rewind'",
        ),
        (
            "field.log",
            format!("{head}f write 4096\n"),
            4,
            "'write' takes 4 fields",
        ),
        (
            "offset.log",
            format!("{head}f read 4k 4096\n"),
            4,
            "offset '4k' is not a number",
        ),
    ];
    for (name, text, line, what) in cases {
        let log = job_file(name, &text);
        let job = job_file(
            &format!("{name}.fio"),
            &format!("[r]\nread_iolog={}\n", log.display()),
        );
        let (code, _, err) = foliosim(&["fio", job.to_str().unwrap()]);
        assert_eq!(code, 2, "{name}: {err}");
        let want = format!("foliosim: {}:{line}: read_iolog: {what}", log.display());
        assert_eq!(err.lines().count(), 1, "{name}: {err:?}");
        assert!(err.starts_with(&want), "{name}: {err}");
    }
    // A log that cannot be read: the job file's line says so.
    let job = job_file("nolog.fio", "[r]\n\nread_iolog=/nonexistent/r.log\n");
    let (code, _, err) = foliosim(&["fio", job.to_str().unwrap()]);
    assert_eq!(code, 2);
    let want = format!(
        "foliosim: {}:3: read_iolog: '/nonexistent/r.log': cannot read",
        job.display()
    );
    assert!(err.starts_with(&want), "{err}");
    // write_iolog where no file can be made: the job's section says so.
    let job = job_file(
        "nowrite.fio",
        "[w]\nsize=64k\nwrite_iolog=/nonexistent/w.log\n",
    );
    let (code, _, err) = foliosim(&["fio", job.to_str().unwrap()]);
    assert_eq!(code, 2);
    let want = format!(
        "foliosim: {}:1: write_iolog: '/nonexistent/w.log': cannot open",
        job.display()
    );
    assert!(err.starts_with(&want), "{err}");
}
