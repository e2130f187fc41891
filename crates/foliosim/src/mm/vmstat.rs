//! Event and state counters under their kernel names (include/linux/vm_event_item.h,
//! include/linux/mmzone.h node_stat_item, mm/memcontrol.c memory_stats).
//!
//! Counters are a flat array indexed by `Item`, one array per memcg and one for
//! the machine, so counting on the hot path is one add.

macro_rules! items {
    ($($v:ident => $name:literal),* $(,)?) => {
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(usize)]
        pub enum Item { $($v),* }
        pub const NR_ITEMS: usize = [$($name),*].len();
        pub const NAMES: [&str; NR_ITEMS] = [$($name),*];
    };
}

items! {
    // Events (/proc/vmstat, memory.stat).
    PGPGIN => "pgpgin",
    PGPGOUT => "pgpgout",
    PSWPIN => "pswpin",
    PSWPOUT => "pswpout",
    PGFAULT => "pgfault",
    PGMAJFAULT => "pgmajfault",
    PGACTIVATE => "pgactivate",
    PGDEACTIVATE => "pgdeactivate",
    PGREFILL => "pgrefill",
    PGSCAN_KSWAPD => "pgscan_kswapd",
    PGSCAN_DIRECT => "pgscan_direct",
    PGSCAN_ANON => "pgscan_anon",
    PGSCAN_FILE => "pgscan_file",
    PGSTEAL_KSWAPD => "pgsteal_kswapd",
    PGSTEAL_DIRECT => "pgsteal_direct",
    PGSTEAL_ANON => "pgsteal_anon",
    PGSTEAL_FILE => "pgsteal_file",
    PGROTATED => "pgrotated",
    PGALLOC => "pgalloc_normal",
    PGFREE => "pgfree",
    ALLOCSTALL => "allocstall_normal",
    WORKINGSET_REFAULT_ANON => "workingset_refault_anon",
    WORKINGSET_REFAULT_FILE => "workingset_refault_file",
    WORKINGSET_ACTIVATE_ANON => "workingset_activate_anon",
    WORKINGSET_ACTIVATE_FILE => "workingset_activate_file",
    WORKINGSET_RESTORE_ANON => "workingset_restore_anon",
    WORKINGSET_RESTORE_FILE => "workingset_restore_file",
    WORKINGSET_NODERECLAIM => "workingset_nodereclaim",
    NR_VMSCAN_WRITE => "nr_vmscan_write",
    NR_VMSCAN_IMMEDIATE => "nr_vmscan_immediate_reclaim",
    OOM_KILL => "oom_kill",
    SWAP_RA => "swap_ra",
    SWAP_RA_HIT => "swap_ra_hit",
    THP_FILE_MAPPED => "thp_file_mapped",
    THP_SWPOUT => "thp_swpout",
    THP_SWPOUT_FALLBACK => "thp_swpout_fallback",
    THP_FAULT_ALLOC => "thp_fault_alloc",
    THP_FAULT_FALLBACK => "thp_fault_fallback",
    THP_FAULT_FALLBACK_CHARGE => "thp_fault_fallback_charge",
    THP_FILE_ALLOC => "thp_file_alloc",
    THP_FILE_FALLBACK => "thp_file_fallback",
    THP_FILE_FALLBACK_CHARGE => "thp_file_fallback_charge",
    // memcg v1 charge events (memory.stat pgpgin/pgpgout count pages charged
    // and uncharged, not KiB of I/O: kept apart from the vmstat ones).
    MEMCG_PGPGIN => "memcg_pgpgin_events",
    MEMCG_PGPGOUT => "memcg_pgpgout_events",
    MEMCG_MAX => "max",
    MEMCG_OOM => "oom",
    // Readahead accounting for the explain report (not kernel counters;
    // prefixed foliosim_ so no one mistakes them for one).
    RA_PAGES => "foliosim_ra_pages",
    RA_UNUSED_EVICTED => "foliosim_ra_unused_evicted",
    // MGLRU's sort_folio() protection: pages moved a generation on, and
    // those evicted later with no access in between.
    PROTECTED => "foliosim_protected",
    PROTECTED_UNUSED_EVICTED => "foliosim_protected_unused_evicted",
    RA_SYNC => "foliosim_ra_sync",
    RA_ASYNC => "foliosim_ra_async",
    FAULTAROUND_MAPPED => "foliosim_faultaround_mapped",
    FAULT_RETRY => "foliosim_fault_retry",
}

pub use Item::*;

#[derive(Clone, Debug)]
pub struct Counters(pub [u64; NR_ITEMS]);

impl Default for Counters {
    fn default() -> Self {
        Counters([0; NR_ITEMS])
    }
}

impl Counters {
    #[inline]
    pub fn add(&mut self, i: Item, n: u64) {
        self.0[i as usize] += n;
    }
    #[inline]
    pub fn get(&self, i: Item) -> u64 {
        self.0[i as usize]
    }
    /// Adds `other`'s counts to these (a memcg and its descendants).
    pub fn add_all(&mut self, other: &Counters) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }
    pub fn delta(&self, base: &Counters) -> Counters {
        let mut d = Counters::default();
        for k in 0..NR_ITEMS {
            d.0[k] = self.0[k] - base.0[k];
        }
        d
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn names_are_unique() {
        let mut v = NAMES.to_vec();
        v.sort();
        v.dedup();
        assert_eq!(v.len(), NR_ITEMS);
        assert_eq!(
            NAMES[WORKINGSET_REFAULT_FILE as usize],
            "workingset_refault_file"
        );
    }
}
