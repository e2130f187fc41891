//! Units of the counters in a run map, so that the report never leaves a
//! reader guessing whether `pgpgin` is pages or KiB.

/// memory.stat fields that are sizes in bytes (v2 names; v1 names are mapped
/// onto these by `cgroup::normalize_stat`).
const BYTE_FIELDS: &[&str] = &[
    "anon",
    "file",
    "kernel",
    "kernel_stack",
    "pagetables",
    "sec_pagetables",
    "percpu",
    "sock",
    "vmalloc",
    "shmem",
    "zswap",
    "zswapped",
    "file_mapped",
    "file_dirty",
    "file_writeback",
    "swapcached",
    "anon_thp",
    "file_thp",
    "shmem_thp",
    "inactive_anon",
    "active_anon",
    "inactive_file",
    "active_file",
    "unevictable",
    "slab_reclaimable",
    "slab_unreclaimable",
    "slab",
    "swap",
    // memory.peak (v1 max_usage_in_bytes) and the memsw one (scenarios).
    "peak",
    "memsw_peak",
    // v1 memory.kmem.{max_,}usage_in_bytes: kernel memory (slab, page
    // tables, kernel stacks) the memory counter holds too.
    "kmem_peak",
    "kmem",
];

/// The unit of a counter of the run map (see the crate docs).
pub fn unit_of(counter: &str) -> &'static str {
    // A scenario cgroup's counter: `memcg[PATH].NAME` has NAME's unit.
    let counter = match counter
        .strip_prefix("memcg[")
        .and_then(|c| c.rsplit_once("]."))
    {
        Some((_, name)) => name,
        None => counter,
    };
    match counter {
        "vmstat.pgpgin" | "vmstat.pgpgout" => "KiB",
        "pgpgin" | "pgpgout" => "folio charges (memcg v1 events)",
        "elapsed_s"
        | "stats_flush_phase_s"
        | "first_limit_s"
        | "buffered_read_s"
        | "read_miss_s"
        | "pressure_read_miss_s" => "s",
        "read_misses" | "pressure_read_misses" => "reads",
        c if c.starts_with("start_s[")
            || c.starts_with("end_s[")
            || c.starts_with("stime_s[")
            || c.starts_with("utime_s[") =>
        {
            "s"
        }
        c if c.starts_with("ops[") => "operations",
        c if c.starts_with("per_op.vmstat.pgpgin") => "KiB per operation",
        c if c.starts_with("per_op.") => "events per operation",
        c if c.starts_with("fio.") => "bytes",
        "io.rbytes" | "io.wbytes" => "bytes",
        "io.rios" | "io.wios" => "bios",
        c if c.starts_with("vmstat.nr_") && !c.ends_with("dirtied") && !c.ends_with("written") => {
            "pages"
        }
        c if BYTE_FIELDS.contains(&c) => "bytes",
        c if c.starts_with("folios.") => "folios",
        _ => "events",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgpgin_units_are_told_apart() {
        assert_eq!(unit_of("vmstat.pgpgin"), "KiB");
        assert_eq!(unit_of("pgpgin"), "folio charges (memcg v1 events)");
        assert_eq!(unit_of("active_file"), "bytes");
        assert_eq!(unit_of("pgmajfault"), "events");
        assert_eq!(unit_of("vmstat.nr_dirtied"), "events");
        assert_eq!(unit_of("elapsed_s"), "s");
        assert_eq!(unit_of("stats_flush_phase_s"), "s");
    }
}
