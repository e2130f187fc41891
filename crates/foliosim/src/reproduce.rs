//! The seeds' experiments, each runnable with one command and printed
//! beside the seed's own figures.

use serde::Serialize;

use crate::mm::{MmConfig, Variants};
use crate::sim::{run_probe, LruKind, SimConfig};
use foliosim_workload::mmap_probe::{Pattern, ProbeSpec};

/// Seed 002's published cells (pgpgin GiB, elapsed s), transcribed from
/// the seed's tables (shared/seed-tables/mmap_miss_seed002.csv).
pub const SEED002: &[(u64, &str, &str, f64, f64)] = &[
    (20, "random", "baseline", 223.377, 101.293),
    (20, "random", "p1", 223.268, 98.481),
    (20, "random", "p2", 223.257, 100.091),
    (20, "random", "p1+p2", 1.010, 4.790),
    (20, "stride1021", "baseline", 204.214, 97.557),
    (20, "stride1021", "p1+p2", 204.208, 108.086),
    (20, "stride2053", "baseline", 409.584, 193.700),
    (20, "stride2053", "p1", 409.584, 197.645),
    (20, "stride2053", "p2", 15.722, 5.485),
    (20, "stride2053", "p1+p2", 0.970, 3.685),
    (20, "stride4099", "baseline", 406.452, 134.241),
    (20, "stride4099", "p1+p2", 0.975, 3.499),
    (20, "sequential", "baseline", 0.212, 0.050),
    (20, "sequential", "p1", 0.212, 0.046),
    (20, "sequential", "p2", 0.212, 0.050),
    (20, "sequential", "p1+p2", 0.212, 0.057),
    (4, "random", "baseline", 3.987, 1.960),
    (4, "random", "p1+p2", 0.980, 1.221),
    (4, "stride1021", "baseline", 4.002, 1.838),
    (4, "stride1021", "p1+p2", 4.002, 1.851),
    (4, "stride2053", "baseline", 3.991, 1.835),
    (4, "stride2053", "p1+p2", 0.811, 0.985),
    (4, "stride4099", "baseline", 4.001, 1.836),
    (4, "stride4099", "p1+p2", 0.819, 1.037),
    (4, "sequential", "baseline", 0.056, 0.013),
    (4, "sequential", "p1+p2", 0.056, 0.018),
];

#[derive(Clone, Debug, Serialize)]
pub struct MmapMissRow {
    pub file_gib: u64,
    pub pattern: String,
    pub variant: String,
    pub pgpgin_gib: f64,
    pub elapsed_s: f64,
    pub seed_pgpgin_gib: Option<f64>,
    /// Not in the field list but useful: the seed's elapsed time.
    pub seed_elapsed_s: Option<f64>,
    pub pgmajfault: u64,
    pub ra_unused_evicted: u64,
}

pub const MMAP_MISS_PATTERNS: &[&str] = &["random", "stride1021", "stride2053", "stride4099", "sequential"];
pub const MMAP_MISS_VARIANTS: &[&str] = &["baseline", "p1", "p2", "p1+p2"];

/// One cell of seed 002's matrix: an 8 GiB guest, read_ahead_kb 8192,
/// cold cache, 1% of the file's pages touched through mmap.
pub fn mmap_miss_cell(file_gib: u64, pattern: &str, variant: &str, lru: LruKind, seed: u64) -> MmapMissRow {
    let mut variants = Variants::newest();
    variants.apply(variant).expect("matrix variants are valid");
    let cfg = SimConfig {
        mm: MmConfig { ram_bytes: 8 << 30, read_ahead_kb: 8192, variants, ..MmConfig::default() },
        lru,
        memcg_limit: None,
        seed,
        timeline: false,
    };
    let spec = ProbeSpec { file_size: file_gib << 30, pattern: pattern.parse::<Pattern>().expect("matrix patterns are valid"), fraction: 0.01, seed };
    let r = run_probe(cfg, &spec);
    let seedrow = SEED002.iter().find(|c| c.0 == file_gib && c.1 == pattern && c.2 == variant);
    MmapMissRow {
        file_gib,
        pattern: pattern.to_string(),
        variant: variant.to_string(),
        pgpgin_gib: r.vmstat["pgpgin"] as f64 / (1u64 << 20) as f64,
        elapsed_s: r.elapsed_ns as f64 / 1e9,
        seed_pgpgin_gib: seedrow.map(|c| c.3),
        seed_elapsed_s: seedrow.map(|c| c.4),
        pgmajfault: r.vmstat["pgmajfault"],
        ra_unused_evicted: r.vmstat["foliosim_ra_unused_evicted"],
    }
}
