//! The cache_ext workloads' building blocks at small scale: the kv_get
//! step (LevelDB-like sorted tables) through the kernel model, and the
//! direction each experiment's mechanism implies under the kernel's LRUs.

use foliosim::mm::MmConfig;
use foliosim::scenario::{run_scenario, ScenarioReport};
use foliosim::sim::{LruKind, SimConfig};
use foliosim_workload::lsm::SstLayout;
use foliosim_workload::scenario::parse;

fn cfg(lru: LruKind) -> SimConfig {
    SimConfig {
        mm: MmConfig {
            ram_bytes: 256 << 20,
            reserved_bytes: 8 << 20,
            check_invariants: true,
            ..MmConfig::default()
        },
        lru,
        ..SimConfig::default()
    }
}

fn run(text: &str, lru: LruKind) -> ScenarioReport {
    let sc = parse(text, "t.toml").unwrap_or_else(|e| panic!("{e}"));
    run_scenario(cfg(lru), &sc).unwrap_or_else(|e| panic!("{e}"))
}

fn kv(pattern: &str, limit: &str, accesses: u64, records: u64, table_cache: u64) -> String {
    kv_levels(pattern, limit, accesses, records, table_cache, "64M")
}

/// `kv` on levels of `level_base` (64M: one level), without LevelDB's
/// block cache: every data block a lookup needs is read.
fn kv_levels(
    pattern: &str,
    limit: &str,
    accesses: u64,
    records: u64,
    table_cache: u64,
    level_base: &str,
) -> String {
    kv_cached(
        pattern,
        limit,
        accesses,
        records,
        table_cache,
        level_base,
        "0",
        1,
    )
}

/// `kv_levels` with a block cache of `block_cache` and `threads` client
/// threads, each making `accesses` lookups.
#[allow(clippy::too_many_arguments)]
fn kv_cached(
    pattern: &str,
    limit: &str,
    accesses: u64,
    records: u64,
    table_cache: u64,
    level_base: &str,
    block_cache: &str,
    threads: u32,
) -> String {
    format!(
        r#"
[[cgroup]]
path = "db"
memory.max = "{limit}"

[[file]]
name = "db"
size = "16M"

[[process]]
name = "c"
cgroup = "db"

[[process.thread]]
count = {threads}
steps = [
  {{ op = "kv_get", file = "db", keys = 60000, record = 227, table_cache = {table_cache}, block_cache = "{block_cache}", level_base = "{level_base}", records = {records}, pattern = "{pattern}", accesses = {accesses} }},
]
"#
    )
}

#[test]
fn kv_get_reads_footer_index_and_block_per_table_open() {
    // A table cache holding every table: each table is opened once (its
    // footer and index read once), then each GET reads one data block
    // (4,103 bytes: 18 records, restart array, trailer).
    let l = SstLayout::new(60000, 227, 4096, 2 << 20, 64 << 20).unwrap();
    let r = run(&kv("random", "max", 5000, 1, 1000), LruKind::Classic);
    let p = &r.processes[0];
    assert_eq!(p.ops, 5000);
    // Every table is opened (5000 random keys over 7 tables).
    assert_eq!(l.tables, 7);
    assert_eq!(p.ios, 5000 + 2 * l.tables);
    assert_eq!(
        p.io_bytes,
        5000 * l.block_bytes
            + (0..l.tables)
                .map(|t| 48 + l.index_range(&l.table(0, t)).1)
                .sum::<u64>()
    );
    // A table cache of one: nearly every GET opens its table again.
    let r1 = run(&kv("random", "max", 5000, 1, 1), LruKind::Classic);
    let p1 = &r1.processes[0];
    assert_eq!(p1.ops, 5000);
    assert!(p1.ios > 5000 + 2 * 4000, "ios {}", p1.ios);
}

#[test]
fn leveldb_block_cache_serves_hot_blocks_for_every_thread() {
    // A block cache of 64 blocks over 3,334: skewed GETs find their
    // hottest blocks there and read them from no file; the cache is the
    // process's, so a second thread's GETs find the first's blocks.
    let reads = |block_cache: &str, threads: u32| {
        let r = run(
            &kv_cached(
                "ycsb:0.99",
                "max",
                3000,
                1,
                1000,
                "64M",
                block_cache,
                threads,
            ),
            LruKind::Classic,
        );
        let p = &r.processes[0];
        assert_eq!(p.ops, 3000 * threads as u64);
        // Data block reads: less the 7 tables' footer and index.
        p.ios - 2 * 7
    };
    let uncached = reads("0", 1);
    assert_eq!(uncached, 3000);
    let cached = reads("262144", 1);
    assert!(cached < uncached * 9 / 10, "{cached} of {uncached}");
    // Two threads sharing one cache miss less than twice one thread.
    let two = reads("262144", 2);
    assert!(two < 2 * cached, "two threads {two}, one {cached}");
}

#[test]
fn kv_scan_reads_consecutive_blocks() {
    // A SCAN of 18 * 40 records from a block's first record reads 40 or
    // 41 data blocks (41 when it starts mid-block).
    let r = run(&kv("random", "max", 10, 720, 1000), LruKind::Classic);
    let p = &r.processes[0];
    assert_eq!(p.ops, 10);
    let data_reads = p.ios - 2 * 7.min(p.ios / 2);
    assert!(
        p.ios >= 10 * 40 && data_reads <= 10 * 42 + 14,
        "ios {}",
        p.ios
    );
}

#[test]
fn skewed_keys_miss_less_than_uniform_ones() {
    // The database (16 MiB) is four times the cgroup (4 MiB): YCSB's
    // scrambled zipfian keeps a hot set in the cache, uniform keys do not,
    // so zipfian GETs read fewer pages from disk. The gap is modest: the
    // scrambled hot keys are spread over the blocks (18 records each), so
    // block popularity is flatter than key popularity.
    for lru in [LruKind::Classic, LruKind::Mglru] {
        let z = run(&kv("ycsb:0.99", "4M", 20000, 1, 1000), lru);
        let u = run(&kv("random", "4M", 20000, 1, 1000), lru);
        let (zi, ui) = (z.run.vmstat["pgpgin"], u.run.vmstat["pgpgin"]);
        assert!(
            zi * 10 < ui * 9,
            "{lru:?}: zipfian pgpgin {zi} vs uniform {ui}"
        );
    }
}

#[test]
fn looping_search_larger_than_the_cache_misses_every_pass_under_lru() {
    // The file search's pathology: files read in the same order each pass,
    // their total above the cgroup limit: LRU evicts each file before its
    // next pass, so every pass reads the whole tree from disk.
    let mut t = String::from("[[cgroup]]\npath = \"s\"\nmemory.max = \"3M\"\n");
    for i in 0..40 {
        t += &format!("[[file]]\nname = \"f{i}\"\nsize = \"100k\"\n");
    }
    t += "[[process]]\nname = \"rg\"\ncgroup = \"s\"\nsteps = [ { op = \"loop\", count = 4, steps = [\n";
    for i in 0..40 {
        t += &format!("  {{ op = \"read\", file = \"f{i}\", bs = \"64k\" }},\n");
    }
    t += "] } ]\n";
    let r = run(&t, LruKind::Classic);
    let tree_kib = 40 * 100;
    let pgpgin = r.run.vmstat["pgpgin"];
    assert!(
        pgpgin >= 4 * tree_kib,
        "pgpgin {pgpgin} KiB < 4 passes of {tree_kib}"
    );
}

#[test]
fn kv_get_errors_name_file_line_and_key() {
    let bad = kv("ycsb", "max", 10, 1, 3).replace("record = 227", "record = \"8k\"");
    let e = parse(&bad, "t.toml").unwrap_err().to_string();
    assert!(e.starts_with("t.toml:17: keys: "), "{e}");
    assert!(e.contains("does not fit"), "{e}");
    let small = kv("ycsb", "max", 10, 1, 3).replace("size = \"16M\"", "size = \"4M\"");
    let sc = parse(&small, "t.toml").unwrap();
    let e = run_scenario(cfg(LruKind::Classic), &sc).unwrap_err();
    assert!(e.starts_with("t.toml:17: keys: 60000 records"), "{e}");
    let unknown = kv("ycsb", "max", 10, 1, 3).replace("records = 1,", "records = 1, bs = 4096,");
    let e = parse(&unknown, "t.toml").unwrap_err().to_string();
    assert!(e.starts_with("t.toml:17: bs: "), "{e}");
    let cache =
        kv("ycsb", "max", 10, 1, 3).replace("block_cache = \"0\"", "block_cache = \"lots\"");
    let e = parse(&cache, "t.toml").unwrap_err().to_string();
    assert!(e.starts_with("t.toml:17: block_cache: "), "{e}");
    let tiny = kv_levels("ycsb", "max", 10, 1, 3, "100");
    let e = parse(&tiny, "t.toml").unwrap_err().to_string();
    assert_eq!(
        e,
        "t.toml:17: level_base: a level of 100 bytes holds no record of 227 bytes"
    );
}

#[test]
fn kv_get_walks_the_levels_down_to_the_key_s() {
    // 1 MiB levels: 4,545 records on level 1, 45,450 on level 2, the other
    // 10,005 on level 3, in 1 + 5 + 2 tables. A GET reads one data block
    // per level down to the key's own: on average (4545 * 1 + 45450 * 2 +
    // 10005 * 3) / 60000 = 2.09 blocks for uniform keys.
    let l = SstLayout::new(60000, 227, 4096, 2 << 20, 1 << 20).unwrap();
    let keys: Vec<u64> = l.levels[..l.nlevels].iter().map(|v| v.keys).collect();
    assert_eq!(keys, vec![4545, 45450, 10005]);
    assert_eq!(l.tables, 8);
    let r = run(
        &kv_levels("random", "max", 5000, 1, 1000, "1M"),
        LruKind::Classic,
    );
    let p = &r.processes[0];
    assert_eq!(p.ops, 5000);
    // Every table opened once (footer and index), the rest data blocks.
    let data = p.ios - 2 * l.tables;
    assert!(
        (2.0..2.2).contains(&(data as f64 / 5000.0)),
        "{data} data blocks for 5000 GETs"
    );
    // One level reads one block a GET.
    let one = run(&kv("random", "max", 5000, 1, 1000), LruKind::Classic);
    assert_eq!(one.processes[0].ios, 5000 + 2 * 7);
}

#[test]
fn kv_get_runs_are_deterministic() {
    let a = serde_json::to_string(&run(&kv("ycsb", "4M", 3000, 1, 2), LruKind::Mglru)).unwrap();
    let b = serde_json::to_string(&run(&kv("ycsb", "4M", 3000, 1, 2), LruKind::Mglru)).unwrap();
    assert_eq!(a, b);
}
