//! The model's integration tests as one test binary (one link and one
//! build of the model's generic code instead of one per file: the suite's
//! cold build was most of CI's time). Each file is a module named after
//! it: `cargo test -p foliosim --test model mglru::` runs one file.

mod common;

mod anon;
mod cache_ext;
mod cache_ext_policies;
mod cache_ext_workloads;
mod classic_reclaim;
#[path = "core.rs"]
mod core_model;
mod engines;
mod ext4;
mod fio_memory;
mod fio_options;
mod fio_zbd_steadystate;
mod fuzz_model;
mod kswapd;
mod large_folios;
mod lru_add;
mod memcg;
mod memory;
mod memsw;
mod mglru;
mod mthp;
mod parallel_cells;
mod reclaim_loop;
mod reproduce_cache_ext;
mod scenario;
mod stats_flush;
mod tmpfs_huge;
mod workingset_protection;

/// With autotests off, a new tests/*.rs file not listed above would
/// never build or run: fail until it is.
#[test]
fn every_test_file_is_a_module_here() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let me = std::fs::read_to_string(dir.join("model.rs")).unwrap();
    let mut missing = Vec::new();
    for e in std::fs::read_dir(&dir).unwrap() {
        let name = e.unwrap().file_name().into_string().unwrap();
        let Some(stem) = name.strip_suffix(".rs") else { continue };
        if stem != "model"
            && !me.contains(&format!("\nmod {stem};"))
            && !me.contains(&format!("#[path = \"{name}\"]"))
        {
            missing.push(name);
        }
    }
    missing.sort();
    assert!(missing.is_empty(), "tests/model.rs does not list {missing:?}");
}
