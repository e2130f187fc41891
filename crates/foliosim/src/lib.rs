//! foliosim: a deterministic model of the Linux page cache and reclaim.
