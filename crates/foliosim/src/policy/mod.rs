//! cache_ext policies.

pub mod lhd_model;
pub mod mglru_bpf_model;
