//! What the kernel's counters mean and count, for captions and tables:
//! the name stays the kernel's, the sentence is for a reader who does not
//! know it by heart.

use crate::chart::Unit;

/// memory.stat entries that are sizes in bytes (the rest count events or
/// pages).
const BYTES: &[&str] = &[
    "anon",
    "file",
    "file_dirty",
    "file_mapped",
    "file_writeback",
    "active_anon",
    "inactive_anon",
    "active_file",
    "inactive_file",
    "unevictable",
    "pagetables",
    "swap",
    "shmem",
    "usage_in_bytes",
    "max_usage_in_bytes",
];

/// How a counter is measured. `pgpgin`/`pgpgout` are KiB in the kernel's
/// output; callers turn them into bytes with [`scale`].
pub fn unit(name: &str) -> Unit {
    let base = name.rsplit('.').next().unwrap_or(name);
    if BYTES.contains(&base) || base == "pgpgin" || base == "pgpgout" {
        Unit::Bytes
    } else if base.ends_with("_s") || base == "elapsed" {
        Unit::Seconds
    } else {
        Unit::Count
    }
}

/// The factor from the printed value to the unit's base (KiB -> bytes).
pub fn scale(name: &str) -> f64 {
    let base = name.rsplit('.').next().unwrap_or(name);
    if base == "pgpgin" || base == "pgpgout" {
        1024.0
    } else {
        1.0
    }
}

/// One sentence on the counters a report plots or compares.
pub fn describe(name: &str) -> &'static str {
    let base = name.rsplit('.').next().unwrap_or(name);
    match base {
        "workingset_refault_file" => {
            "evicted file pages read back in while their shadow entry remained (refaults, at any distance)"
        }
        "workingset_refault_anon" => {
            "evicted anonymous pages swapped back in while their shadow entry remained"
        }
        "workingset_activate_file" => {
            "file refaults whose refault distance fit the workingset: activated at once"
        }
        "workingset_restore_file" => "refaulted file pages that had been active before eviction",
        "workingset_nodereclaim" => {
            "shadow-entry nodes freed by the shadow shrinker (refaults no longer detectable)"
        }
        "pgpgin" => "data read from the block device (KiB in the kernel's output)",
        "pgpgout" => "data written to the block device (KiB in the kernel's output)",
        "pgmajfault" => "page faults that waited for I/O",
        "pgfault" => "page faults",
        "pgscan_kswapd" => "pages scanned by kswapd (background reclaim)",
        "pgscan_direct" => "pages scanned by direct reclaim (the allocating task reclaims)",
        "pgsteal_kswapd" => "pages reclaimed by kswapd",
        "pgsteal_direct" => "pages reclaimed by direct reclaim",
        "pgactivate" => "pages moved to the active list (or a younger generation)",
        "pgdeactivate" => "pages moved to the inactive list",
        "pswpin" => "pages swapped in",
        "pswpout" => "pages swapped out",
        "oom_kill" => "processes killed by the OOM killer",
        "allocstall_normal" => "allocations that entered direct reclaim",
        "usage_in_bytes" => "memory charged to the cgroup (memory.current)",
        "max_usage_in_bytes" => "the cgroup's peak usage",
        "file" => "page cache charged to the cgroup",
        "anon" => "anonymous memory charged to the cgroup",
        "elapsed_s" => "simulated run time",
        "foliosim_ra_pages" => "pages read ahead (foliosim's count, not the kernel's)",
        "foliosim_ra_unused_evicted" => "pages read ahead and evicted unused (foliosim's count)",
        _ => "",
    }
}

/// The counters a comparison or sweep shows first, in this order, when
/// they are there and move.
pub const KEY: &[&str] = &[
    "workingset_refault_file",
    "workingset_refault_anon",
    "pgpgin",
    "pgmajfault",
    "pgscan_kswapd",
    "pgscan_direct",
    "pgsteal_kswapd",
    "pgsteal_direct",
    "pswpin",
    "pswpout",
    "workingset_activate_file",
    "oom_kill",
];
