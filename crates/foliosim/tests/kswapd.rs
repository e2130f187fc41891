//! kswapd (balance_pgdat, wakeup_kswapd, reclaim_throttle): the model runs
//! kswapd's work when it is woken, but on its own clock, so it can never do
//! more than one CPU's worth of reclaim, and folios cycling through the LRU
//! faster than a swap disk writes them throttle it.

use foliosim::mm::{CpuCosts, MmConfig, SwapKind};
use foliosim::scenario::{run_scenario, ScenarioReport};
use foliosim::sim::{LruKind, SimConfig};
use foliosim_workload::scenario::*;

const M: u64 = 1 << 20;

fn cfg(swap: SwapKind, lru: LruKind) -> SimConfig {
    SimConfig {
        mm: MmConfig {
            ram_bytes: 96 * M,
            reserved_bytes: 8 * M,
            swap,
            swap_bytes: 256 * M,
            check_invariants: true,
            ..MmConfig::default()
        },
        lru,
        ..SimConfig::default()
    }
}

/// Four threads of one process, each writing its own 32M of anon memory
/// and then sweeping it three more times: 128M in a 96M machine, global
/// reclaim only (no memcg limit), the LULESH shape of seed 004.
fn sweepers() -> Scenario {
    let step = |line: usize, op| Step {
        line,
        id: line as u64,
        op,
    };
    let touch = |line| {
        step(
            line,
            Op::Touch(TouchStep {
                map: "mesh".into(),
                pattern: Pattern::Seq,
                write: true,
                amount: Amount::Passes(1),
                think_ns: 1_000,
            }),
        )
    };
    Scenario {
        file: "kswapd.toml".into(),
        processes: vec![Process {
            name: "mesh".into(),
            line: 1,
            cgroup: String::new(),
            count: 1,
            threads: vec![Thread {
                count: 4,
                steps: vec![
                    step(
                        2,
                        Op::MmapAnon {
                            map: "mesh".into(),
                            size: 32 * M,
                        },
                    ),
                    touch(3),
                    touch(4),
                    touch(5),
                    touch(6),
                ],
            }],
            oom_score_adj: 0,
        }],
        ..Scenario::default()
    }
}

fn vm(r: &ScenarioReport, k: &str) -> u64 {
    r.run.vmstat.get(k).copied().unwrap_or(0)
}

/// kswapd's CPU time (scanning at cost.scan_folio a folio, compressing at
/// cost.zram_compress a page) fits in the run's simulated time.
fn assert_kswapd_within_one_cpu(r: &ScenarioReport, zram: bool) {
    let c = CpuCosts::default();
    let mut kswapd_ns = vm(r, "pgscan_kswapd") * c.scan_folio;
    if zram {
        kswapd_ns += vm(r, "pgsteal_kswapd") * c.zram_compress;
    }
    assert!(
        kswapd_ns <= r.run.elapsed_ns,
        "kswapd worked {kswapd_ns} ns in a {} ns run: {:?}",
        r.run.elapsed_ns,
        r.run.vmstat
    );
}

#[test]
fn kswapd_on_a_swap_disk_is_throttled_not_spinning() {
    for lru in [LruKind::Classic, LruKind::Mglru] {
        let r = run_scenario(cfg(SwapKind::Disk, lru), &sweepers()).unwrap();
        assert!(!r.processes[0].oom_killed, "{lru:?}");
        // Reclaim did happen, through swap, and kswapd took its share.
        assert!(
            vm(&r, "pswpout") > 32 * M / 4096,
            "{lru:?} {:?}",
            r.run.vmstat
        );
        assert!(vm(&r, "pgsteal_kswapd") > 0, "{lru:?}");
        assert_kswapd_within_one_cpu(&r, false);
    }
}

#[test]
fn kswapd_compressing_into_zram_stays_within_one_cpu() {
    let r = run_scenario(cfg(SwapKind::Zram, LruKind::Classic), &sweepers()).unwrap();
    assert!(vm(&r, "pswpout") > 32 * M / 4096, "{:?}", r.run.vmstat);
    assert_kswapd_within_one_cpu(&r, true);
    // What kswapd could not keep up with, the threads reclaimed themselves.
    assert!(vm(&r, "allocstall_normal") > 0, "{:?}", r.run.vmstat);
}
