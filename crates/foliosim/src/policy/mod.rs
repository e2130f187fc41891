//! cache_ext policies.

pub mod lhd_model;
