//! foliosim: a deterministic userspace model of the Linux kernel's page
//! cache, readahead and fault-around, reclaim (classic LRU and MGLRU),
//! workingset refault detection, memcg limits, swap and writeback.
//!
//! `mm` is the kernel model, one module per kernel file; `sim` drives
//! workloads (from the `foliosim-workload` crate) through it; `report`
//! prints the kernel's counters, `fio_stat` / `fio_output` fio's statistics
//! and its normal and JSON output; `reproduce` holds the seeds' experiments.

pub mod bench;
pub mod fio_output;
pub mod fio_stat;
pub mod fs;
pub mod mm;
pub mod policy;
pub mod progress;
pub mod recreplay;
pub mod report;
pub mod reproduce;
pub mod scenario;
pub mod sim;
pub mod suggest;
pub mod trace;
