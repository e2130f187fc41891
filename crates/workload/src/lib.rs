//! Workloads, kept apart from the kernel model: they produce I/O requests and
//! page touches; `foliosim` drives them through the model.

pub mod access;
pub mod engines;
pub mod fio;
pub mod fio_rand;
pub mod iogen;
pub mod jobio;
pub mod lat_target;
pub mod lsm;
pub mod mmap_probe;
pub mod rectrace;
pub mod scenario;
pub mod steadystate;
pub mod trace;
pub mod units;
pub mod zbd;
