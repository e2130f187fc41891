//! Text output in the forms kernel developers read: fio's summary (from
//! `fio_output`), and counters under their kernel names as /proc/vmstat
//! and memory.stat show them.

use std::fmt::Write;

use crate::sim::RunReport;

/// fio's normal output (fio_output::render_normal), then the counters.
pub fn render_text(r: &RunReport, what: &str) -> String {
    let mut out = crate::fio_output::render_normal(r);
    out.push_str(&render_counters(r, what));
    out
}

/// foliosim's part of the text output: the run, then the kernel's
/// counters under their kernel names.
pub fn render_counters(r: &RunReport, what: &str) -> String {
    let mut out = String::new();
    for j in r.jobs.iter().filter(|j| j.oom_killed) {
        let _ = writeln!(
            out,
            "\n{what}: job {} (jobnum {}) was OOM-killed",
            j.jobname, j.jobnum
        );
    }
    let _ = writeln!(
        out,
        "\n{what}: lru={:?} elapsed={:.3}s (io wait {:.3}s) variants: {}",
        r.lru,
        r.elapsed_ns as f64 / 1e9,
        r.io_wait_ns as f64 / 1e9,
        serde_json::to_string(&r.variants).unwrap_or_default()
    );
    let _ = writeln!(
        out,
        "\nmemory.stat (workload memcg; sizes in bytes, pgpgin/pgpgout in KiB):"
    );
    for (k, v) in &r.memcg {
        if *v != 0 {
            let _ = writeln!(out, "{k} {v}");
        }
    }
    let _ = writeln!(out, "\n/proc/vmstat (machine; pgpgin/pgpgout in KiB):");
    for (k, v) in &r.vmstat {
        if *v != 0 {
            let _ = writeln!(out, "{k} {v}");
        }
    }
    if let Some(v) = &r.lru_gen {
        let _ = writeln!(
            out,
            "\nlru_gen:\n{}",
            serde_json::to_string_pretty(v).unwrap_or_default()
        );
    }
    if let Some(tl) = &r.timeline {
        let _ = writeln!(out, "\ntimeline (per simulated second, deltas):");
        let keys = [
            "pgpgin",
            "pgmajfault",
            "workingset_refault_file",
            "workingset_activate_file",
            "pgscan_direct",
            "pgsteal_direct",
            "pgscan_kswapd",
            "pgsteal_kswapd",
        ];
        let _ = writeln!(
            out,
            "{:>6} {}",
            "second",
            keys.map(|k| format!("{k:>24}")).join(" ")
        );
        let mut prev: Option<&crate::sim::TimelineSample> = None;
        for s in tl {
            let vals: Vec<String> = keys
                .iter()
                .map(|k| {
                    let cur = s.memcg.get(k).copied().unwrap_or(0);
                    let p = prev.and_then(|p| p.memcg.get(k).copied()).unwrap_or(0);
                    format!("{:>24}", cur - p)
                })
                .collect();
            let _ = writeln!(out, "{:>6} {}", s.second, vals.join(" "));
            prev = Some(s);
        }
    }
    out
}
