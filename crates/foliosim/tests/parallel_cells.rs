//! Reproduction cells run on several threads give the rows a serial run
//! gives, in the same order, byte for byte.

use foliosim::reproduce::{mmap_miss_cell, run_parallel};
use foliosim::sim::LruKind;

#[test]
fn mmap_miss_cells_parallel_equal_serial() {
    // Cheap cells of seed 002's matrix, mixed in cost so that threads
    // finish out of order.
    let cells: &[(u64, &str, &str)] = &[
        (4, "stride4099", "p1+p2"),
        (4, "sequential", "baseline"),
        (4, "random", "p1+p2"),
        (20, "sequential", "p1"),
        (4, "stride2053", "p1+p2"),
    ];
    let run = |threads| {
        let rows = run_parallel(cells, threads, |&(g, p, v)| {
            mmap_miss_cell(g, p, v, LruKind::Classic, 1)
        });
        serde_json::to_string(&rows).unwrap()
    };
    let serial = run(1);
    assert_eq!(run(3), serial);
    assert_eq!(run(cells.len() + 2), serial);
    // The rows are the cells in the order given.
    let v: serde_json::Value = serde_json::from_str(&serial).unwrap();
    let got: Vec<(u64, String)> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["file_gib"].as_u64().unwrap(),
                r["pattern"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(u64, String)> = cells.iter().map(|c| (c.0, c.1.to_string())).collect();
    assert_eq!(got, want);
}

/// Seed 002's matrix runs each (file, pattern) once and follows the other
/// variants alongside: every row is still the row of that cell's own run,
/// for any number of threads.
#[test]
fn mmap_miss_matrix_following_equals_own_runs() {
    use foliosim::reproduce::{mmap_miss_cells, mmap_miss_matrix_of};
    let cells: Vec<_> = mmap_miss_cells().into_iter().filter(|c| c.0 == 4).collect();
    assert_eq!(cells.len(), 20);
    let own: Vec<_> = cells
        .iter()
        .map(|&(g, p, v)| mmap_miss_cell(g, p, v, LruKind::Classic, 1))
        .collect();
    let own = serde_json::to_string(&own).unwrap();
    for threads in [1, 3] {
        let rows = mmap_miss_matrix_of(&cells, LruKind::Classic, 1, threads);
        assert_eq!(
            serde_json::to_string(&rows).unwrap(),
            own,
            "{threads} threads"
        );
    }
}

/// Which variants a run of the probe finds diverging: on 4 GiB with
/// stride 2053, patch 1 alone never changes a read-around decision (its
/// rows equal the baseline's), patch 2 does, from the first few hundred
/// milliseconds.
#[test]
fn mmap_miss_following_finds_the_diverging_variants() {
    use foliosim::mm::{MmConfig, Variants};
    use foliosim::sim::{run_probe, run_probe_following, SimConfig};
    use foliosim_workload::mmap_probe::ProbeSpec;
    let mut variants = Variants::newest();
    variants.apply("baseline").unwrap();
    let cfg = SimConfig {
        mm: MmConfig {
            ram_bytes: 8 << 30,
            read_ahead_kb: 8192,
            variants,
            ..MmConfig::default()
        },
        lru: LruKind::Classic,
        memcg_limit: None,
        seed: 1,
        timeline: false,
        lru_gen_sysctl: Vec::new(),
    };
    let spec = ProbeSpec {
        file_size: 4 << 30,
        pattern: "stride:2053".parse().unwrap(),
        fraction: 0.01,
        seed: 1,
    };
    let mut told = Vec::new();
    let (r, diverged) = run_probe_following(
        cfg.clone(),
        &spec,
        &[(true, false), (false, true), (true, true)],
        &mut |i| told.push(i),
    );
    assert_eq!(diverged[0], None);
    let t = diverged[1].expect("p2 diverges");
    assert!(t > 0 && t < r.elapsed_ns, "{t}");
    assert!(diverged[2].is_some());
    told.sort();
    assert_eq!(told, vec![1, 2]);
    // Following changes nothing in the run itself.
    let plain = run_probe(cfg, &spec);
    assert_eq!(plain.vmstat, r.vmstat);
    assert_eq!(plain.elapsed_ns, r.elapsed_ns);
}
