//! What a scenario run prints: `foliosim fio`'s counters, a memory.stat
//! map per cgroup, and each process instance's outcome.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::sim::RunReport;

/// What one process instance did.
#[derive(Clone, Debug, Serialize)]
pub struct ProcessReport {
    /// "name[i]" for the i-th of a `[[process]]`'s instances; a forked
    /// child is "parent/fork@LINE[j]" (the j-th child of that fork).
    pub name: String,
    pub cgroup: String,
    pub oom_killed: bool,
    /// Simulated time of the OOM kill.
    pub killed_at_ns: Option<u64>,
    pub start_ns: u64,
    pub end_ns: u64,
    pub elapsed_ns: u64,
    /// get_mm_counter() at the end (just before exit_mmap), in bytes.
    pub rss_anon: u64,
    pub rss_file: u64,
    pub rss_shmem: u64,
    pub swapents: u64,
    /// Page touches of mappings, and I/O blocks read or written.
    pub touches: u64,
    /// CPU time in the model's kernel paths (syscalls, faults, copies,
    /// the task's own reclaim), as /proc/PID/stat's stime; a forked
    /// child's is its own.
    pub stime_ns: u64,
    pub ios: u64,
    pub io_bytes: u64,
    /// Key-value operations (kv_get steps: GETs and SCANs), the unit of
    /// throughput in ops per simulated second.
    pub ops: u64,
    /// Its buffered 4 KiB preads that missed the cache (10 us or longer),
    /// as the oracle's executor times them: [before a charge first met a
    /// limit of its cgroup or an ancestor, after], each (count, summed
    /// ns). Under pressure a miss also carries its share of reclaim.
    pub read_misses: [(u64, u64); 2],
}

/// `foliosim fio`'s report plus one memory.stat map per cgroup and the
/// processes.
#[derive(Clone, Debug, Serialize)]
pub struct ScenarioReport {
    #[serde(flatten)]
    pub run: RunReport,
    /// memory.stat-style maps keyed by cgroup path (the scenario root's is
    /// `memcg`).
    pub cgroups: BTreeMap<String, BTreeMap<&'static str, u64>>,
    /// Under MGLRU, each cgroup's /sys/kernel/debug/lru_gen view with the
    /// PID controller's tiers and the aging/eviction statistics, keyed by
    /// cgroup path: why reclaim took what it took.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub cgroup_lru_gen: BTreeMap<String, serde_json::Value>,
    /// Each cgroup with a cache_ext policy: the policy and its own hook
    /// and eviction counts, keyed by cgroup path.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub cgroup_cache_ext: BTreeMap<String, crate::report::CacheExtReport>,
    /// When a charge first met a scenario cgroup's limit (v1 failcnt's
    /// first count, of any group), ns from the start: when limit reclaim
    /// began. The oracle compares it with the host's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_limit_ns: Option<u64>,
    pub processes: Vec<ProcessReport>,
}

/// Text for people: the counters as `foliosim fio` prints them, then each
/// cgroup's memory.stat and the processes.
pub fn render_text(r: &ScenarioReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for p in r.processes.iter().filter(|p| p.oom_killed) {
        let _ = writeln!(
            out,
            "run: process {} (cgroup '{}') was OOM-killed at {:.6}s",
            p.name,
            p.cgroup,
            p.killed_at_ns.unwrap_or(0) as f64 / 1e9
        );
    }
    out.push_str(&crate::report::render_counters(&r.run, "run"));
    for (path, c) in &r.cgroup_cache_ext {
        let s = &c.stats;
        let _ = writeln!(
            out,
            "\ncache_ext policy {} of cgroup {path}: folio_added {} folio_accessed {} folio_evicted {} admit_calls {} admit_bypassed {} evict_calls {} evict_aborted {} candidates {} candidates_invalid {} candidates_reclaimed {} fallthrough {}",
            c.policy,
            s.folio_added,
            s.folio_accessed,
            s.folio_evicted,
            s.admit_calls,
            s.admit_bypassed,
            s.evict_calls,
            s.evict_aborted,
            s.candidates,
            s.candidates_invalid,
            s.candidates_reclaimed,
            s.fallthrough
        );
    }
    for (path, m) in &r.cgroups {
        crate::report::render_memcg(&mut out, &format!("cgroup {path}"), m);
    }
    let _ = writeln!(
        out,
        "\n{:<28} {:<12} {:>6} {:>10} {:>10} {:>12} {:>12} {:>12} {:>10} {:>12} {:>10}",
        "process",
        "cgroup",
        "killed",
        "elapsed_s",
        "stime_s",
        "rss_anon",
        "swapents",
        "touches",
        "ios",
        "io_bytes",
        "ops"
    );
    for p in &r.processes {
        let _ = writeln!(
            out,
            "{:<28} {:<12} {:>6} {:>10.3} {:>10.3} {:>12} {:>12} {:>12} {:>10} {:>12} {:>10}",
            p.name,
            if p.cgroup.is_empty() { "/" } else { &p.cgroup },
            if p.oom_killed { "yes" } else { "no" },
            p.elapsed_ns as f64 / 1e9,
            p.stime_ns as f64 / 1e9,
            p.rss_anon,
            p.swapents,
            p.touches,
            p.ios,
            p.io_bytes,
            p.ops
        );
    }
    out
}
