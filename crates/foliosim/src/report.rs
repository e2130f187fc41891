//! Text output in the forms kernel developers read: fio's summary, and
//! counters under their kernel names as /proc/vmstat and memory.stat show
//! them.

use std::fmt::Write;

use crate::sim::{DirStats, RunReport};

fn human_bytes_iec(b: f64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = b;
    let mut i = 0;
    // fio keeps four significant digits before switching unit.
    while v >= 10000.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if v >= 100.0 || i == 0 {
        format!("{v:.0}{}", units[i])
    } else {
        format!("{v:.1}{}", units[i])
    }
}

fn human_bytes_si(b: f64) -> String {
    let units = ["B", "kB", "MB", "GB", "TB"];
    let mut v = b;
    let mut i = 0;
    while v >= 10000.0 && i + 1 < units.len() {
        v /= 1000.0;
        i += 1;
    }
    if v >= 100.0 || i == 0 {
        format!("{v:.0}{}", units[i])
    } else {
        format!("{v:.1}{}", units[i])
    }
}

fn human_count(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn dir_block(out: &mut String, name: &str, d: &DirStats) {
    if d.total_ios == 0 {
        return;
    }
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={}/s ({}/s)({}/{}msec)",
        human_count(d.iops),
        human_bytes_iec(d.bw_bytes as f64),
        human_bytes_si(d.bw_bytes as f64),
        human_bytes_iec(d.io_bytes as f64),
        d.runtime_ms
    );
    let _ = writeln!(
        out,
        "    clat (nsec): min={}, max={}, avg={:.2}, stdev={:.2}",
        d.clat_min_ns, d.clat_max_ns, d.clat_mean_ns, d.clat_stdev_ns
    );
    let _ = writeln!(out, "    clat percentiles (nsec):");
    let keys: Vec<(&String, &u64)> = d.clat_ns.iter().collect();
    for row in keys.chunks(4) {
        let cells: Vec<String> = row
            .iter()
            .map(|(k, v)| {
                let q: f64 = k.parse().unwrap_or(0.0);
                format!("{:>6.2}th=[{:>8}]", q, v)
            })
            .collect();
        let _ = writeln!(out, "     | {}", cells.join(", "));
    }
}

/// fio's normal output for each job, then the counters.
pub fn render_text(r: &RunReport, what: &str) -> String {
    let mut out = String::new();
    for j in &r.jobs {
        let _ = writeln!(
            out,
            "{}: (groupid=0, jobs=1): err= 0: jobnum={}{}",
            j.jobname,
            j.jobnum,
            if j.oom_killed { " (OOM-killed)" } else { "" }
        );
        dir_block(&mut out, "read", &j.read);
        dir_block(&mut out, "write", &j.write);
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

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn human_units() {
        assert_eq!(human_bytes_iec(5078.0 * 1048576.0), "5078MiB");
        assert_eq!(human_bytes_iec(58.5 * 1048576.0), "58.5MiB");
        assert_eq!(human_bytes_si(15000.0), "15.0kB");
        assert_eq!(human_count(1_300_000.0), "1.3M");
    }
}
