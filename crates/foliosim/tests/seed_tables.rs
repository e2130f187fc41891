//! The published figures the reproductions print beside the model are CSV
//! files under crates/foliosim/src/reproduce/data/, embedded at build time
//! (reproduce::tables). A malformed table is a bug in the data: every one
//! parses here, with its row count and a few of its values, and the
//! folder holds exactly the embedded tables. The dialect's parser refuses
//! what it does not read, naming the file and line.

use std::collections::BTreeSet;
use std::path::Path;

use foliosim::reproduce::tables::{all, parse_csv};
use foliosim::reproduce::{self, cache_ext, reclaim_loop, workingset_protection};
use foliosim::sim::LruKind;

#[test]
fn every_table_parses_with_its_rows() {
    let want = [
        ("mmap_miss_seed002.csv", 26),
        ("strided_mmap_seed000.csv", 2),
        ("reclaim_loop_seed003_swappiness.csv", 15),
        ("reclaim_loop_seed003_mongodb.csv", 6),
        ("reclaim_loop_seed003_chrome_node.csv", 2),
        ("reclaim_loop_seed003_aging_oom.csv", 3),
        ("reclaim_loop_seed003_throttle_oom.csv", 2),
        ("reclaim_loop_seed003_mysql.csv", 1),
        ("reclaim_loop_seed003_fio_mmap.csv", 1),
        ("reclaim_loop_seed003_kernel_build.csv", 1),
        ("workingset_protection_seed004_tpcc.csv", 6),
        ("workingset_protection_seed004_lulesh.csv", 2),
        ("cache_ext_paper.csv", 33),
        ("cache_ext_kernel_ratio.csv", 10),
    ];
    let got: Vec<(&str, usize)> = all()
        .iter()
        .map(|t| {
            let n = t.check().unwrap_or_else(|e| panic!("{e}"));
            (t.file(), n)
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn the_data_folder_holds_exactly_the_embedded_tables() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/reproduce/data");
    let files: BTreeSet<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let embedded: BTreeSet<String> = all().iter().map(|t| t.file().to_string()).collect();
    assert_eq!(
        files,
        embedded,
        "a CSV in {} not in tables::all(), or the reverse",
        dir.display()
    );
    // Each names its source in its comment header.
    for f in &files {
        let text = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(text.starts_with("# "), "{f}: no comment header");
        assert!(
            text.lines()
                .take_while(|l| l.starts_with('#'))
                .any(|l| l.contains("Seed 00") || l.contains("docs/fidelity/")),
            "{f}: the header names no source"
        );
    }
}

#[test]
fn seed002_cells() {
    let t = reproduce::SEED002.rows();
    let c = &t[0];
    assert_eq!(
        (c.file_gib, c.pattern, c.variant, c.pgpgin_gib, c.elapsed_s),
        (20, "random", "baseline", 223.377, 101.293)
    );
    let c = t
        .iter()
        .find(|c| c.file_gib == 20 && c.pattern == "stride2053" && c.variant == "p2")
        .unwrap();
    assert_eq!((c.pgpgin_gib, c.elapsed_s), (15.722, 5.485));
    let c = t.last().unwrap();
    assert_eq!(
        (c.file_gib, c.pattern, c.variant, c.pgpgin_gib, c.elapsed_s),
        (4, "sequential", "p1+p2", 0.056, 0.018)
    );
    // Every cell is one the matrix runs.
    for c in t {
        assert!(reproduce::MMAP_MISS_PATTERNS.contains(&c.pattern), "{c:?}");
        assert!(reproduce::MMAP_MISS_VARIANTS.contains(&c.variant), "{c:?}");
    }
}

#[test]
fn seed000_cells() {
    let t = reproduce::SEED000.rows();
    let before = t.iter().find(|c| c.variant == "pf-set-active").unwrap();
    let after = t.iter().find(|c| c.variant == "pf-mark-accessed").unwrap();
    assert_eq!((before.lru, before.ptes), (LruKind::Mglru, "arm64"));
    assert_eq!(
        (before.workingset_refault_file, before.bw_mib_s),
        (12_883_855, 58.5)
    );
    assert_eq!((after.workingset_refault_file, after.bw_mib_s), (0, 5078.0));
    for c in t {
        assert!(
            reproduce::STRIDED_CELLS.contains(&(c.lru, c.variant, c.ptes)),
            "{c:?} is not a cell the reproduction runs"
        );
    }
}

#[test]
fn seed003_tables() {
    let sw = reclaim_loop::SEED_SWAPPINESS.rows();
    // Three kernels at every swappiness of the sweep, each one it runs.
    for (name, _, _) in reclaim_loop::KERNELS {
        let swp: Vec<u32> = sw
            .iter()
            .filter(|c| c.kernel == *name)
            .map(|c| c.swappiness)
            .collect();
        if *name == "reclaim-rework" {
            assert!(swp.is_empty(), "the seed has no table for the fix");
        } else {
            assert_eq!(swp, reclaim_loop::SWAPPINESS, "{name}");
        }
    }
    let c = &sw[0];
    assert_eq!((c.kernel, c.swappiness), ("reclaim-legacy", 35));
    assert_eq!(
        c.metrics(),
        [933731.0, 3365968.0, 5649320.0, 13786572.0, 354998.0, 944323.0]
    );
    let c = sw.last().unwrap();
    assert_eq!((c.kernel, c.swappiness), ("classic", 175));
    assert_eq!(
        c.metrics(),
        [698228.0, 2908292.0, 3602884.0, 11945332.0, 117625.0, 708478.0]
    );
    let aging: Vec<_> = reclaim_loop::SEED_AGING_OOM
        .rows()
        .iter()
        .map(|o| (o.kernel, o.pressure_finished))
        .collect();
    assert_eq!(
        aging,
        [
            ("reclaim-legacy", 0.0),
            ("reclaim-rework", 1.0),
            ("classic", 1.0)
        ]
    );
    let throttle: Vec<_> = reclaim_loop::SEED_THROTTLE_OOM
        .rows()
        .iter()
        .map(|o| (o.kernel, o.writer_finished))
        .collect();
    assert_eq!(throttle, [("reclaim-legacy", 0.0), ("reclaim-rework", 1.0)]);
}

/// The seeds' before/after tables: a figure or two of each, and every
/// metric one the reproduction prints.
#[test]
fn before_after_tables() {
    use reclaim_loop::{
        SEED_CHROME_NODE, SEED_FIO_MMAP, SEED_KBUILD_STIME, SEED_MONGODB, SEED_MYSQL_TPS,
    };
    use workingset_protection::{SEED_LULESH, SEED_TPCC};
    for (t, metric, before, after) in [
        (&SEED_MONGODB, "pgpgout", 5413332.0, 5437456.0),
        (&SEED_CHROME_NODE, "jain_fairness", 0.997795, 0.991480),
        (&SEED_FIO_MMAP, "bandwidth_mb_s", 9196.481429, 9256.105),
        (&SEED_KBUILD_STIME, "system_time_s", 2589.63, 2543.58),
        (&SEED_MYSQL_TPS, "tps", 17260.781429, 17266.842857),
        (&SEED_TPCC, "time_s", 10801.0, 10801.0),
        (&SEED_TPCC, "workingset_nodes", 109070.0, 120244.0),
        (&SEED_LULESH, "throughput", 6894.0, 7574.0),
        (&SEED_LULESH, "deviation_pct", 12.96, 1.76),
    ] {
        assert_eq!(t.pair(metric), Some((before, after)), "{}", t.file);
    }
    let (b, a) = SEED_MONGODB.pair("throughput").unwrap();
    assert_eq!((b, a), (62485.02962831822, 79760.71784646061));
    for r in SEED_TPCC.rows() {
        assert!(
            workingset_protection::TPCC_METRICS.contains(&r.metric),
            "{r:?}"
        );
    }
    for r in SEED_LULESH.rows() {
        assert!(
            workingset_protection::LULESH_METRICS.contains(&r.metric),
            "{r:?}"
        );
    }
}

#[test]
fn cache_ext_tables() {
    use cache_ext::{kernel_ratio, paper_value};
    let per_op = "disk_read_bytes_per_op";
    for (got, want) in [
        (paper_value("file-search", "default", "runtime_s"), 49.99),
        (
            paper_value("ycsb-uniform", "mglru-bpf", "throughput_vs_mglru"),
            1.06,
        ),
        (paper_value("isolation", "tailored", "searches"), 122.0),
        (kernel_ratio("ycsb-c", "mru", per_op), 8.97),
        (kernel_ratio("ycsb-uniform", "default", per_op), 1.0),
    ] {
        assert_eq!(got, Some(want));
    }
    // Every figure is of an experiment and policy the reproduction runs.
    for t in [&cache_ext::PAPER, &cache_ext::KERNEL_RATIO] {
        for f in t.rows() {
            assert!(
                cache_ext::policies(f.experiment).contains(&f.policy),
                "{}: {f:?}",
                t.file
            );
        }
    }
}

#[test]
fn the_dialect() {
    let cols = &["name", "n", "x"];
    let text = "# a comment\n\n# another\nname,n,x\nab,1,2.5\n# between rows\ncd,20,-1e3\n";
    let csv = parse_csv("t.csv", text, cols).unwrap();
    let rows: Vec<(String, u64, f64)> = csv
        .rows()
        .map(|r| {
            (
                r.text("name").unwrap().to_string(),
                r.u64("n").unwrap(),
                r.f64("x").unwrap(),
            )
        })
        .collect();
    assert_eq!(rows, [("ab".into(), 1, 2.5), ("cd".into(), 20, -1000.0)]);
    // Reading a row: each error names the file, the line and the column.
    let csv = parse_csv("t.csv", "name,n,x\n,x1,inf\n", cols).unwrap();
    let r = csv.rows().next().unwrap();
    assert_eq!(r.text("name").unwrap_err(), "t.csv:2: name is empty");
    assert_eq!(
        r.u64("n").unwrap_err(),
        "t.csv:2: n 'x1' is not a whole number"
    );
    assert_eq!(r.f64("x").unwrap_err(), "t.csv:2: x 'inf' is not a number");
    assert_eq!(r.f64("y").unwrap_err(), "t.csv: no column 'y'");
    assert_eq!(
        r.parse::<LruKind>("n")
            .unwrap_err()
            .split(':')
            .take(2)
            .collect::<Vec<_>>(),
        ["t.csv", "2"]
    );
    // The text: the header, the fields, something to read.
    for (text, err) in [
        (
            "name,x,n\na,1,2\n",
            "t.csv:1: header 'name,x,n' is not 'name,n,x'",
        ),
        ("# only\n", "t.csv: no header"),
        ("name,n,x\n", "t.csv: no rows"),
        ("name,n,x\na,1\n", "t.csv:2: 2 fields, the header has 3"),
        ("name,n,x\na,1,2,3\n", "t.csv:2: 4 fields, the header has 3"),
        (
            "name,n,x\n\"a\",1,2\n",
            "t.csv:2: field '\"a\"' is quoted or padded (this dialect has neither)",
        ),
        (
            "name,n,x\na, 1,2\n",
            "t.csv:2: field ' 1' is quoted or padded (this dialect has neither)",
        ),
    ] {
        assert_eq!(parse_csv("t.csv", text, cols).unwrap_err(), err, "{text:?}");
    }
}
