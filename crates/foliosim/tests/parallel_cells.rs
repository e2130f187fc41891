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
