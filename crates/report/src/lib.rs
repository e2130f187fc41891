//! foliosim's report: runs, comparisons and sweeps as one self-contained
//! HTML page (inline SVG plots, inline CSS, nothing fetched), and the same
//! plots as SVG or PNG files. Output depends on the input alone: no clock,
//! no host fonts, ordered maps.

pub mod chart;
pub mod counters;
mod html;
pub mod input;
mod sweep;

use std::collections::BTreeMap;

use chart::{Bar, Chart, Kind, Series, Unit, XAxis};
use input::{Input, Run, Sample};

pub use html::render_html;

/// Choices the command line passes on.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The report's heading (default: "foliosim report").
    pub title: Option<String>,
    /// Sweep result columns to plot (default: the key counters that vary).
    pub metrics: Vec<String>,
    /// The sweep parameter on the x axis (default: the first that varies).
    pub x: Option<String>,
}

/// A table for people: a header row, then rows of cells (already text).
#[derive(Clone, Debug)]
pub struct Table {
    pub caption: String,
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Columns holding numbers (right-aligned).
    pub numeric_from: usize,
    /// Shown folded (long counter lists).
    pub folded: bool,
}

#[derive(Clone, Debug)]
pub enum Item {
    Chart {
        chart: Chart,
        caption: String,
    },
    Table(Table),
    /// A short paragraph of plain text.
    Note(String),
}

#[derive(Clone, Debug)]
pub struct Section {
    pub id: String,
    pub title: String,
    pub items: Vec<Item>,
}

pub struct Report {
    pub title: String,
    /// The inputs as the command line named them.
    pub sources: Vec<String>,
    pub sections: Vec<Section>,
}

impl Report {
    /// Every chart, in page order.
    pub fn charts(&self) -> impl Iterator<Item = &Chart> {
        self.sections.iter().flat_map(|s| {
            s.items.iter().filter_map(|i| match i {
                Item::Chart { chart, .. } => Some(chart),
                _ => None,
            })
        })
    }
}

const WIDE: (u32, u32) = (660, 320);
const SMALL: (u32, u32) = (380, 260);

/// Bar charts widen so that the runs' names under the bars stay apart.
fn bar_size(runs: &[Run]) -> (u32, u32) {
    let longest = runs
        .iter()
        .map(|r| r.label.chars().count())
        .max()
        .unwrap_or(0) as u32;
    let per_bar = (longest * 6 + 8).max(60);
    (
        SMALL.0.max(110 + per_bar * runs.len() as u32).min(1500),
        SMALL.1,
    )
}

/// Builds the report's sections from the loaded inputs (`sources[i]` is
/// the name `inputs[i]` was given by).
pub fn build(inputs: &[Input], sources: &[String], opts: &Options) -> Result<Report, String> {
    let mut sections = Vec::new();
    let mut runs: Vec<Run> = Vec::new();
    let mut sweeps = Vec::new();
    for (inp, src) in inputs.iter().zip(sources) {
        match inp {
            Input::Runs { runs: rs, .. } => runs.extend(rs.iter().cloned()),
            Input::Sweep(s) => sweeps.push((s, src)),
        }
    }
    // Labels name the runs in legends: make them unique.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for r in &mut runs {
        let n = seen.entry(r.label.clone()).or_default();
        *n += 1;
        if *n > 1 {
            r.label = format!("{} #{n}", r.label);
        }
    }
    if runs.len() >= 2 {
        sections.push(comparison(&runs));
    }
    for (i, r) in runs.iter().enumerate() {
        sections.push(run_section(r, i));
    }
    for (i, (s, _)) in sweeps.iter().enumerate() {
        sections.push(sweep::section(s, i, opts)?);
    }
    if !opts.metrics.is_empty() && sweeps.is_empty() {
        return Err("--metric: only for a sweep's CSV".into());
    }
    if opts.x.is_some() && sweeps.is_empty() {
        return Err("--x: only for a sweep's CSV".into());
    }
    Ok(Report {
        title: opts
            .title
            .clone()
            .unwrap_or_else(|| "foliosim report".into()),
        sources: sources.to_vec(),
        sections,
    })
}

/// A slug for ids and file names: lowercase letters, digits and dashes.
pub fn slug(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') && !out.is_empty() {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

fn counter(m: &BTreeMap<String, u64>, k: &str) -> u64 {
    m.get(k).copied().unwrap_or(0)
}

/// Per-second increments of a cumulative memcg counter, in the counter's
/// base unit (pgpgin's KiB as bytes).
fn rate(tl: &[Sample], k: &str) -> Vec<(f64, f64)> {
    let mut prev = 0u64;
    tl.iter()
        .map(|s| {
            let v = counter(&s.memcg, k);
            let d = v.saturating_sub(prev);
            prev = v;
            (s.second, d as f64 * counters::scale(k))
        })
        .collect()
}

/// A chart of per-second rates of `keys` that moved during the run.
fn rate_chart(
    r: &Run,
    idx: usize,
    name: &str,
    title: &str,
    y: &str,
    unit: Unit,
    keys: &[&str],
) -> Option<Item> {
    let series: Vec<Series> = keys
        .iter()
        .filter(|k| r.timeline.iter().any(|s| counter(&s.memcg, k) > 0))
        .map(|k| Series {
            name: k.to_string(),
            points: rate(&r.timeline, k),
            range: None,
        })
        .collect();
    if series.is_empty() {
        return None;
    }
    let caption = series
        .iter()
        .map(|s| format!("{}: {}", s.name, counters::describe(&s.name)))
        .collect::<Vec<_>>()
        .join("; ");
    Some(Item::Chart {
        chart: Chart {
            slug: format!("run{idx}-{}-{name}", slug(&r.label)),
            title: format!("{title} — {}", r.label),
            x_label: "simulated time (s)".into(),
            y_label: y.into(),
            unit,
            kind: Kind::Lines {
                x: XAxis::Numeric,
                series,
            },
            size: WIDE,
        },
        caption: format!("Per simulated second, the workload's memcg. {caption}."),
    })
}

fn run_section(r: &Run, idx: usize) -> Section {
    let mut items = Vec::new();
    let variants: Vec<String> = r.variants.iter().map(|(k, v)| format!("{k}={v}")).collect();
    items.push(Item::Table(Table {
        caption: "The run".into(),
        head: vec!["".into(), "".into()],
        rows: vec![
            vec!["result of".into(), r.kind.clone()],
            vec!["reclaim (lru)".into(), r.lru.clone()],
            vec!["variants".into(), variants.join(", ")],
            vec!["simulated time".into(), format!("{:.3} s", r.elapsed_s)],
            vec![
                "of it waiting on I/O".into(),
                format!("{:.3} s", r.io_wait_s),
            ],
        ],
        numeric_from: usize::MAX,
        folded: false,
    }));
    if r.timeline.is_empty() {
        items.push(Item::Note(
            "No timeline in this result: run it with --timeline for plots over simulated time."
                .into(),
        ));
    }
    let charts = [
        rate_chart(
            r,
            idx,
            "refaults",
            "Refaults",
            "pages per second",
            Unit::Count,
            &[
                "workingset_refault_file",
                "workingset_refault_anon",
                "workingset_activate_file",
            ],
        ),
        rate_chart(
            r,
            idx,
            "pgpgin",
            "Block I/O (pgpgin, pgpgout)",
            "bytes per second",
            Unit::Bytes,
            &["pgpgin", "pgpgout"],
        ),
        rate_chart(
            r,
            idx,
            "faults",
            "Major faults",
            "faults per second",
            Unit::Count,
            &["pgmajfault"],
        ),
        rate_chart(
            r,
            idx,
            "reclaim",
            "Reclaim: pages scanned and reclaimed",
            "pages per second",
            Unit::Count,
            &[
                "pgscan_kswapd",
                "pgsteal_kswapd",
                "pgscan_direct",
                "pgsteal_direct",
            ],
        ),
        rate_chart(
            r,
            idx,
            "swap",
            "Swap",
            "pages per second",
            Unit::Count,
            &["pswpin", "pswpout"],
        ),
    ];
    items.extend(charts.into_iter().flatten());
    if r.timeline
        .iter()
        .any(|s| s.memcg.contains_key("usage_in_bytes"))
    {
        let pts = r
            .timeline
            .iter()
            .map(|s| (s.second, counter(&s.memcg, "usage_in_bytes") as f64))
            .collect();
        items.push(Item::Chart {
            chart: Chart {
                slug: format!("run{idx}-{}-usage", slug(&r.label)),
                title: format!("memcg usage — {}", r.label),
                x_label: "simulated time (s)".into(),
                y_label: "usage_in_bytes".into(),
                unit: Unit::Bytes,
                kind: Kind::Lines {
                    x: XAxis::Numeric,
                    series: vec![Series { name: "usage_in_bytes".into(), points: pts, range: None }],
                },
                size: WIDE,
            },
            caption: "Memory charged to the workload's memcg at the end of each simulated second (memory.current; memory.usage_in_bytes in cgroup v1).".into(),
        });
    }
    if !r.gen_timeline.is_empty() {
        items.push(gen_chart(r, idx));
    }
    if !r.jobs.is_empty() {
        let mut rows = Vec::new();
        for j in &r.jobs {
            for (d, name) in j.dirs.iter().zip(["read", "write"]) {
                if d.0 == 0 {
                    continue;
                }
                rows.push(vec![
                    format!(
                        "{}{}",
                        j.name,
                        if j.oom_killed { " (OOM-killed)" } else { "" }
                    ),
                    name.into(),
                    chart::fmt_bytes(d.0 as f64),
                    format!("{}/s", chart::fmt_bytes(d.1 as f64)),
                    chart::fmt_si(d.2),
                    format!("{:.0}", d.3),
                    d.4.map_or("—".into(), |p| p.to_string()),
                ]);
            }
        }
        items.push(Item::Table(Table {
            caption: "fio jobs".into(),
            head: [
                "job",
                "dir",
                "io",
                "bw",
                "IOPS",
                "clat mean (ns)",
                "clat p99 (ns)",
            ]
            .map(String::from)
            .to_vec(),
            rows,
            numeric_from: 2,
            folded: false,
        }));
    }
    if let Some(g) = &r.lru_gen {
        items.push(Item::Table(Table {
            caption: "MGLRU generations at the end (/sys/kernel/debug/lru_gen)".into(),
            head: ["seq", "age_ms", "anon (pages)", "file (pages)"]
                .map(String::from)
                .to_vec(),
            rows: g
                .iter()
                .map(|g| {
                    vec![
                        g.seq.to_string(),
                        g.age_ms.to_string(),
                        g.anon.to_string(),
                        g.file.to_string(),
                    ]
                })
                .collect(),
            numeric_from: 0,
            folded: false,
        }));
    }
    items.push(Item::Table(counter_table(
        "memory.stat (the workload's memcg)",
        &r.memcg,
    )));
    items.push(Item::Table(counter_table(
        "/proc/vmstat (the machine)",
        &r.vmstat,
    )));
    if !r.cgroups.is_empty() {
        let paths: Vec<&String> = r.cgroups.keys().collect();
        let mut names: Vec<&String> = r.cgroups.values().flat_map(|m| m.keys()).collect();
        names.sort();
        names.dedup();
        let rows = names
            .into_iter()
            .filter(|n| r.cgroups.values().any(|m| counter(m, n) != 0))
            .map(|n| {
                let mut row = vec![n.clone()];
                row.extend(paths.iter().map(|p| counter(&r.cgroups[*p], n).to_string()));
                row
            })
            .collect();
        let mut head = vec!["counter".to_string()];
        head.extend(paths.iter().map(|p| p.to_string()));
        items.push(Item::Table(Table {
            caption: "memory.stat per cgroup (non-zero counters)".into(),
            head,
            rows,
            numeric_from: 1,
            folded: true,
        }));
    }
    if !r.processes.is_empty() {
        items.push(Item::Table(Table {
            caption: "Processes".into(),
            head: [
                "process",
                "cgroup",
                "OOM-killed",
                "ran (s)",
                "rss_anon",
                "rss_file",
                "swapents",
            ]
            .map(String::from)
            .to_vec(),
            rows: r
                .processes
                .iter()
                .map(|p| {
                    vec![
                        p.name.clone(),
                        p.cgroup.clone(),
                        if p.oom_killed {
                            "yes".into()
                        } else {
                            "no".into()
                        },
                        format!("{:.3}", p.elapsed_s),
                        chart::fmt_bytes(p.rss_anon as f64),
                        chart::fmt_bytes(p.rss_file as f64),
                        p.swapents.to_string(),
                    ]
                })
                .collect(),
            numeric_from: 3,
            folded: r.processes.len() > 12,
        }));
    }
    Section {
        id: format!("run{idx}-{}", slug(&r.label)),
        title: format!("Run: {}", r.label),
        items,
    }
}

/// MGLRU generation sizes over time, youngest on top: how aging and
/// eviction moved pages between generations.
fn gen_chart(r: &Run, idx: usize) -> Item {
    let depth = r
        .gen_timeline
        .iter()
        .map(|(_, g)| g.len())
        .max()
        .unwrap_or(0);
    // Rank 0 is the youngest (max_seq); stacked oldest first.
    let mut series: Vec<Series> = (0..depth)
        .rev()
        .map(|rank| Series {
            name: if rank == 0 {
                "max_seq (youngest)".into()
            } else {
                format!("max_seq-{rank}")
            },
            points: r
                .gen_timeline
                .iter()
                .map(|(t, gens)| {
                    let mut g: Vec<_> = gens.iter().collect();
                    g.sort_by_key(|g| std::cmp::Reverse(g.seq));
                    let v = g.get(rank).map_or(0, |g| g.anon + g.file);
                    (*t, (v * 4096) as f64)
                })
                .collect(),
            range: None,
        })
        .collect();
    if let Some(s) = series.first_mut() {
        if depth > 1 {
            s.name.push_str(" (oldest)");
        }
    }
    Item::Chart {
        chart: Chart {
            slug: format!("run{idx}-{}-lru-gen", slug(&r.label)),
            title: format!("MGLRU generation sizes — {}", r.label),
            x_label: "simulated time (s)".into(),
            y_label: "anon + file (bytes)".into(),
            unit: Unit::Bytes,
            kind: Kind::Stacked { series },
            size: WIDE,
        },
        caption: "The workload memcg's generations (lru_gen's view, 4 KiB pages as bytes) at the end of each simulated second, by age: aging adds a generation at the top, eviction empties the oldest.".into(),
    }
}

fn counter_table(caption: &str, m: &BTreeMap<String, u64>) -> Table {
    let rows = m
        .iter()
        .filter(|(_, v)| **v != 0)
        .map(|(k, v)| {
            let u = counters::unit(k);
            let readable = if u == Unit::Bytes {
                u.fmt(*v as f64 * counters::scale(k))
            } else {
                String::new()
            };
            vec![
                k.clone(),
                v.to_string(),
                readable,
                counters::describe(k).to_string(),
            ]
        })
        .collect();
    let zero = m.values().filter(|v| **v == 0).count();
    Table {
        caption: format!("{caption}: non-zero counters ({zero} more are 0)"),
        head: ["counter", "value", "", "meaning"]
            .map(String::from)
            .to_vec(),
        rows,
        numeric_from: 1,
        folded: false,
    }
}

fn pct(base: f64, v: f64) -> String {
    if base == v {
        "=".into()
    } else if base == 0.0 {
        format!("{:+}", v - base)
    } else {
        format!("{:+.1}%", (v - base) / base * 100.0)
    }
}

/// Several runs side by side: A/B bars of the key counters with their
/// change against the first run, timelines overlaid, all counters in one
/// table.
fn comparison(runs: &[Run]) -> Section {
    let mut items = vec![Item::Note(format!(
        "{} runs; deltas are against the first, {}.",
        runs.len(),
        runs[0].label
    ))];
    let get = |r: &Run, k: &str| -> f64 {
        (if k == "elapsed_s" {
            r.elapsed_s
        } else {
            r.memcg
                .get(k)
                .or_else(|| r.vmstat.get(k))
                .copied()
                .unwrap_or(0) as f64
        }) * counters::scale(k)
    };
    for k in counters::KEY.iter().chain(&["elapsed_s"]) {
        let vals: Vec<f64> = runs.iter().map(|r| get(r, k)).collect();
        if vals.iter().all(|&v| v == 0.0) {
            continue;
        }
        let bars = runs
            .iter()
            .zip(&vals)
            .enumerate()
            .map(|(i, (r, &v))| Bar {
                label: r.label.clone(),
                value: v,
                note: if i == 0 {
                    String::new()
                } else {
                    pct(vals[0], v)
                },
            })
            .collect();
        let unit = counters::unit(k);
        items.push(Item::Chart {
            chart: Chart {
                slug: format!("compare-{}", slug(k)),
                title: k.to_string(),
                x_label: String::new(),
                y_label: match unit {
                    Unit::Bytes => "bytes".into(),
                    Unit::Seconds => "seconds".into(),
                    Unit::Count => {
                        if k.starts_with("pg") && *k != "pgmajfault" {
                            "pages".into()
                        } else {
                            "events".into()
                        }
                    }
                },
                unit,
                kind: Kind::Bars(bars),
                size: bar_size(runs),
            },
            caption: format!("{k}: {}.", counters::describe(k)),
        });
    }
    let with_tl: Vec<&Run> = runs.iter().filter(|r| !r.timeline.is_empty()).collect();
    if with_tl.len() >= 2 {
        for (k, title, unit, y) in [
            (
                "workingset_refault_file",
                "workingset_refault_file per second",
                Unit::Count,
                "pages per second",
            ),
            (
                "pgpgin",
                "pgpgin per second",
                Unit::Bytes,
                "bytes per second",
            ),
        ] {
            if with_tl
                .iter()
                .all(|r| r.timeline.iter().all(|s| counter(&s.memcg, k) == 0))
            {
                continue;
            }
            items.push(Item::Chart {
                chart: Chart {
                    slug: format!("compare-{}-timeline", slug(k)),
                    title: title.into(),
                    x_label: "simulated time (s)".into(),
                    y_label: y.into(),
                    unit,
                    kind: Kind::Lines {
                        x: XAxis::Numeric,
                        series: with_tl
                            .iter()
                            .map(|r| Series {
                                name: r.label.clone(),
                                points: rate(&r.timeline, k),
                                range: None,
                            })
                            .collect(),
                    },
                    size: WIDE,
                },
                caption: format!("{k}: {}; one line per run.", counters::describe(k)),
            });
        }
    }
    let mut names: Vec<(&str, String)> = Vec::new();
    for (src, f) in [("memory.stat", 0), ("vmstat", 1)] {
        let mut ks: Vec<&String> = runs
            .iter()
            .flat_map(|r| {
                if f == 0 {
                    r.memcg.keys()
                } else {
                    r.vmstat.keys()
                }
            })
            .collect();
        ks.sort();
        ks.dedup();
        names.extend(ks.into_iter().map(|k| (src, k.clone())));
    }
    let mut rows = Vec::new();
    for (src, k) in &names {
        let vals: Vec<u64> = runs
            .iter()
            .map(|r| {
                counter(
                    if *src == "vmstat" {
                        &r.vmstat
                    } else {
                        &r.memcg
                    },
                    k,
                )
            })
            .collect();
        if vals.iter().all(|&v| v == 0) {
            continue;
        }
        let mut row = vec![format!("{src}: {k}")];
        row.extend(vals.iter().map(u64::to_string));
        row.extend(vals[1..].iter().map(|&v| pct(vals[0] as f64, v as f64)));
        rows.push(row);
    }
    let mut head = vec!["counter".to_string()];
    head.extend(runs.iter().map(|r| r.label.clone()));
    head.extend(runs[1..].iter().map(|r| format!("Δ {}", r.label)));
    items.push(Item::Table(Table {
        caption: "All non-zero counters side by side (Δ against the first run)".into(),
        head,
        rows,
        numeric_from: 1,
        folded: true,
    }));
    Section {
        id: "comparison".into(),
        title: "Comparison".into(),
        items,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(label: &str, refaults: &[u64]) -> Run {
        let mut r = Run {
            label: label.into(),
            kind: "fio".into(),
            lru: "mglru".into(),
            ..Run::default()
        };
        let mut acc = 0;
        for (i, d) in refaults.iter().enumerate() {
            acc += d;
            let mut m = BTreeMap::new();
            m.insert("workingset_refault_file".to_string(), acc);
            m.insert("pgpgin".to_string(), acc * 4);
            r.timeline.push(Sample {
                second: (i + 1) as f64,
                memcg: m.clone(),
                vmstat: m,
            });
        }
        r.memcg = r
            .timeline
            .last()
            .map(|s| s.memcg.clone())
            .unwrap_or_default();
        r.vmstat = r.memcg.clone();
        r
    }

    #[test]
    fn timelines_plot_per_second_increments() {
        let r = run("a", &[5, 0, 7]);
        assert_eq!(
            rate(&r.timeline, "workingset_refault_file"),
            [(1.0, 5.0), (2.0, 0.0), (3.0, 7.0)]
        );
        // pgpgin is KiB: plotted as bytes.
        assert_eq!(rate(&r.timeline, "pgpgin")[2], (3.0, 28.0 * 1024.0));
    }

    #[test]
    fn a_comparison_has_bars_with_deltas_against_the_first_run() {
        let runs = [
            run("base", &[10, 10]),
            run("p1", &[5, 10]),
            run("p1", &[10, 20]),
        ];
        let inputs: Vec<Input> = runs
            .iter()
            .map(|r| Input::Runs {
                compare: false,
                runs: vec![r.clone()],
            })
            .collect();
        let srcs: Vec<String> = (0..3).map(|i| format!("r{i}.json")).collect();
        let rep = build(&inputs, &srcs, &Options::default()).unwrap();
        assert_eq!(rep.sections[0].id, "comparison");
        let bars = rep
            .charts()
            .find_map(|c| match &c.kind {
                Kind::Bars(b) if c.title == "workingset_refault_file" => Some(b.clone()),
                _ => None,
            })
            .unwrap();
        let got: Vec<(&str, f64, &str)> = bars
            .iter()
            .map(|b| (b.label.as_str(), b.value, b.note.as_str()))
            .collect();
        // Same labels are told apart.
        assert_eq!(
            got,
            [
                ("base", 20.0, ""),
                ("p1", 15.0, "-25.0%"),
                ("p1 #2", 30.0, "+50.0%")
            ]
        );
        // Three run sections after it, each with its refault timeline.
        assert_eq!(rep.sections.len(), 4);
        assert!(rep.charts().any(|c| c.slug == "run1-p1-refaults"));
    }

    #[test]
    fn generations_stack_by_age_from_the_lru_gen_timeline() {
        use input::Gen;
        let g = |seq, file| Gen {
            seq,
            age_ms: 0,
            anon: 0,
            file,
        };
        let mut r = run("m", &[1]);
        r.gen_timeline = vec![
            (1.0, vec![g(2, 10), g(3, 20)]),
            (2.0, vec![g(3, 5), g(4, 1), g(2, 7)]),
        ];
        let Item::Chart { chart, .. } = gen_chart(&r, 0) else {
            unreachable!()
        };
        let Kind::Stacked { series } = chart.kind else {
            unreachable!()
        };
        let names: Vec<&str> = series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["max_seq-2 (oldest)", "max_seq-1", "max_seq (youngest)"]
        );
        let pg = 4096.0;
        assert_eq!(series[0].points, [(1.0, 0.0), (2.0, 7.0 * pg)]);
        assert_eq!(series[2].points, [(1.0, 20.0 * pg), (2.0, 1.0 * pg)]);
    }
}
