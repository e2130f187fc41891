//! Replays of hand-written foliosim-trace v1 traces (crate::recreplay):
//! counters that follow from what the trace does.

use foliosim::recreplay::{replay, ReplayOpts, ReplayStats};
use foliosim::sim::{RunReport, SimConfig};
use foliosim_workload::rectrace::{Reader, MAGIC};
use std::fmt::Write;

fn run(text: &str, limit: Option<u64>, opts: ReplayOpts) -> (RunReport, ReplayStats) {
    let cfg = SimConfig {
        memcg_limit: limit,
        ..SimConfig::default()
    };
    let rd = Reader::new(text.as_bytes(), "t.trace").unwrap();
    replay(cfg, rd, opts).unwrap()
}

const MIB: u64 = 1 << 20;

fn vm(r: &RunReport, k: &str) -> u64 {
    r.vmstat.get(k).copied().unwrap_or(0)
}
fn mc(r: &RunReport, k: &str) -> u64 {
    r.memcg.get(k).copied().unwrap_or(0)
}

/// `cat` of a 64 MiB file, twice, in 128 KiB reads, 10 µs apart.
fn cat_twice() -> String {
    let mut t = format!("{MAGIC}\nF 1 {0} {0} 254:0:10 /f\n0 0 n 1 p\n", 64 * MIB);
    for pass in 0..2 {
        writeln!(t, "10 1 o {} 1", pass + 1).unwrap();
        for i in 0..512u64 {
            writeln!(t, "10 . r {} {} {} 50", pass + 1, i * 128 << 10, 128 << 10).unwrap();
        }
        writeln!(t, "1 . c {}", pass + 1).unwrap();
    }
    t + "1 . x\n"
}

#[test]
fn reading_a_file_twice_over_the_limit_refaults() {
    let (r, st) = run(&cat_twice(), Some(32 * MIB), ReplayOpts::default());
    assert_eq!(st.reads, 1024);
    assert_eq!(st.read_bytes, 128 * MIB);
    assert_eq!((st.tasks, st.processes, st.files), (1, 1, 1));
    // Every page read twice from disk: the second pass finds none of the
    // first's pages left in 32 MiB.
    let pgpgin = vm(&r, "pgpgin");
    assert!(
        (128 * 1024 - 512..=128 * 1024 + 512).contains(&pgpgin),
        "{pgpgin}"
    );
    // The second pass's misses refault (workingset shadows), some of them.
    let refaults = mc(&r, "workingset_refault_file");
    assert!(refaults > 1000, "{refaults}");
    // Without a limit, the second pass hits.
    let (r, _) = run(&cat_twice(), None, ReplayOpts::default());
    let pgpgin = vm(&r, "pgpgin");
    assert!((64 * 1024..=64 * 1024 + 512).contains(&pgpgin), "{pgpgin}");
    assert_eq!(vm(&r, "workingset_refault_file"), 0);
}

/// A process maps 16 MiB of a file and faults every 64th page: the
/// model's fault-around (64 KiB) and readahead bring in more than the
/// faulted pages, and every fault is a major fault's worth of reads.
#[test]
fn mapped_faults_go_through_fault_around() {
    let mut t = format!(
        "{MAGIC}\nF 1 {0} {0} - -\n0 0 n 1 p\n0 1 mf 3 4096 1 0 p\n",
        16 * MIB
    );
    for i in 0..64u64 {
        writeln!(t, "5 1 pf 3 {} r", i * 64).unwrap();
    }
    // Touch the neighbour of a faulted page: fault-around mapped it.
    t += "5 1 pf 3 1 r\n5 1 mu 3\n1 1 x\n";
    let (r, st) = run(&t, None, ReplayOpts::default());
    assert_eq!(st.file_faults, 65);
    let majflt = vm(&r, "pgmajfault");
    assert!((1..=64).contains(&majflt), "{majflt}");
    let mapped = vm(&r, "foliosim_faultaround_mapped");
    assert!(mapped >= 64 * 15, "fault-around mapped {mapped} pages");
    let pgfault = vm(&r, "pgfault");
    assert_eq!(pgfault, 64, "the neighbour was mapped by fault-around");
}

#[test]
fn anonymous_faults_charge_and_threads_share_the_mm() {
    let mut t = format!("{MAGIC}\n0 0 n 1 p\n0 1 ma 2 1024\n0 1 n 2 t\n");
    for i in 0..1024u64 {
        writeln!(t, "1 {} pa 2 {i} w", 1 + i % 2).unwrap();
    }
    // Heap pages outside any traced mapping.
    t += "1 1 pa 0 94000000000 w\n1 1 pa 0 94000000001 w\n0 2 x\n0 1 x\n";
    let (r, st) = run(&t, Some(64 * MIB), ReplayOpts::default());
    assert_eq!((st.tasks, st.processes, st.anon_faults), (2, 1, 1026));
    assert_eq!(vm(&r, "pgfault"), 1026);
    // All freed at exit.
    assert_eq!(mc(&r, "anon"), 0);
}

#[test]
fn timing_recorded_afap_and_scaled() {
    let t = format!("{MAGIC}\n0 0 n 1 p\n1000000 1 ma 2 1\n1000000 1 pa 2 0 w\n0 1 x\n");
    let el = |o| run(&t, None, o).0.elapsed_ns;
    let rec = el(ReplayOpts::default());
    assert!(rec >= 2_000_000_000, "{rec}");
    let afap = el(ReplayOpts {
        afap: true,
        compute_scale: 1.0,
    });
    assert!(afap < 1_000_000, "{afap}");
    let half = el(ReplayOpts {
        afap: false,
        compute_scale: 0.5,
    });
    assert!((1_000_000_000..1_100_000_000).contains(&half), "{half}");
}

#[test]
fn a_replay_is_deterministic() {
    let t = cat_twice();
    let a = serde_json::to_string(&run(&t, Some(32 * MIB), ReplayOpts::default()).0).unwrap();
    let b = serde_json::to_string(&run(&t, Some(32 * MIB), ReplayOpts::default()).0).unwrap();
    assert_eq!(a, b);
}

/// A 1 MiB library mapped privately, one page faulted: with its pages
/// cached before the run (a `C` line: another process maps it) the fault
/// is minor and charges nothing to the run's group; without, it is major.
/// NR_FILE_MAPPED goes to the folio's group (the root), so unmapping it
/// leaves every group's count whole (it underflowed before).
#[test]
fn pages_cached_before_the_run_fault_minor_and_stay_outside_the_group() {
    let lib = |cached: &str| {
        format!(
            "{MAGIC}\nF 1 {0} {0} 254:0:11 /lib.so\n{cached}0 0 n 1 p\n\
             10 1 mf 1 256 1 0 p\n10 . pf 1 3 r\n10 . mu 1\n10 . x\n",
            MIB
        )
    };
    let (warm, _) = run(&lib("C 1 0 256\n"), Some(64 * MIB), ReplayOpts::default());
    assert_eq!(mc(&warm, "pgmajfault"), 0);
    assert_eq!(
        mc(&warm, "file"),
        0,
        "cached in the root group, not the run's"
    );
    assert_eq!(mc(&warm, "file_mapped"), 0);
    let (cold, _) = run(&lib(""), Some(64 * MIB), ReplayOpts::default());
    assert_eq!(mc(&cold, "pgmajfault"), 1);
    assert!(mc(&cold, "file") > 0);
}

/// fsync of a file whose one large folio was written whole, while the
/// flusher's queue is longer than the file (so the range is walked by
/// index and meets the folio at each of its pages): the folio is written
/// once. Before, it was started four times, nr_dirty underflowed, and
/// balance_dirty_pages() spun for minutes (a LevelDB trace).
#[test]
fn fsync_starts_a_large_folio_once() {
    let mut t = format!(
        "{MAGIC}\nF 1 0 16384 254:0:12 /small\nF 2 {0} {0} 254:0:13 /big\n0 0 n 1 p\n\
         10 1 o 1 1\n10 . o 2 2\n",
        MIB
    );
    for i in 0..8u64 {
        writeln!(t, "10 . w 2 {} 1 5", i * 8 * 4096).unwrap();
    }
    t += "10 . w 1 0 16384 5\n10 . s 1 100\n10 . x\n";
    let mut cfg = SimConfig {
        memcg_limit: Some(64 * MIB),
        ..SimConfig::default()
    };
    cfg.mm.large_folios = true;
    let rd = Reader::new(t.as_bytes(), "t.trace").unwrap();
    let (r, _) = replay(cfg, rd, ReplayOpts::default()).unwrap();
    // The fsync wrote the 4 pages of file 1; file 2's 8 stay dirty.
    assert_eq!(vm(&r, "pgpgout"), 16, "KiB written back");
    assert_eq!(mc(&r, "file_dirty"), 8 * 4096);
}
