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
