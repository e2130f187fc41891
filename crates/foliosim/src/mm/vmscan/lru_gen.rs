//! The multi-gen LRU (mm/vmscan.c lru_gen_*, mm/workingset.c lru_gen_*):
//! being written. Placeholder delegating to the classic LRU so the driver
//! builds.
pub type LruGen = super::classic::ClassicLru;
