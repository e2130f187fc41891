//! A sweep's table as plots: means over repeats, lines over one varied
//! parameter, heatmaps over two, a line per combination past that.

use std::collections::BTreeMap;

use crate::chart::{self, Chart, Kind, Series, XAxis};
use crate::input::Sweep;
use crate::{counters, slug, Item, Options, Section, Table};

/// The most lines one chart gets before the rest are left out (and said so).
const MAX_SERIES: usize = 10;

/// Bytes of a size such as "400M" or "1G" (the sweep's machine options).
fn size_bytes(s: &str) -> Option<f64> {
    let t = s.trim();
    let (num, mult) = match t.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => {
            let m = match t[i..]
                .trim_end_matches(['i', 'B', 'b'])
                .to_ascii_uppercase()
                .as_str()
            {
                "K" => 1u64 << 10,
                "M" => 1 << 20,
                "G" => 1 << 30,
                "T" => 1 << 40,
                _ => return None,
            };
            (&t[..i], m as f64)
        }
        None => (t, 1.0),
    };
    num.parse::<f64>().ok().map(|n| n * mult)
}

/// A parameter's distinct values in axis order: numerically when they are
/// numbers or sizes, else as they first appear.
fn axis_values(vals: impl Iterator<Item = String>) -> (Vec<String>, bool) {
    let mut v: Vec<String> = Vec::new();
    for x in vals {
        if !v.contains(&x) {
            v.push(x);
        }
    }
    let numeric = v.iter().all(|x| x.parse::<f64>().is_ok());
    if numeric {
        v.sort_by(|a, b| {
            a.parse::<f64>()
                .unwrap()
                .total_cmp(&b.parse::<f64>().unwrap())
        });
    } else if v.iter().all(|x| size_bytes(x).is_some()) {
        v.sort_by(|a, b| size_bytes(a).unwrap().total_cmp(&size_bytes(b).unwrap()));
    }
    (v, numeric)
}

/// mean, min, max and count of a cell's repeats.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stat {
    pub mean: f64,
    pub min: f64,
    pub max: f64,
    pub n: usize,
}

fn stat(v: &[f64]) -> Option<Stat> {
    if v.is_empty() {
        return None;
    }
    Some(Stat {
        mean: v.iter().sum::<f64>() / v.len() as f64,
        min: v.iter().copied().fold(f64::INFINITY, f64::min),
        max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        n: v.len(),
    })
}

/// The result column `m` names: exact, or the one ending in `.m`.
fn find_metric(s: &Sweep, m: &str) -> Result<usize, String> {
    if let Some(i) = s.metrics.iter().position(|c| c == m) {
        return Ok(i);
    }
    let ends: Vec<usize> = (0..s.metrics.len())
        .filter(|&i| s.metrics[i].rsplit('.').next() == Some(m))
        .collect();
    match ends.as_slice() {
        [i] => Ok(*i),
        [] => Err(format!(
            "--metric: '{m}' is not a result column of {} ({})",
            s.label,
            s.metrics.join(", ")
        )),
        _ => Err(format!(
            "--metric: '{m}' is ambiguous in {} ({})",
            s.label,
            ends.iter()
                .map(|&i| s.metrics[i].as_str())
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}

/// The columns plotted by default: the key counters (the memcg's where
/// there are both) and elapsed_s, those that differ between rows.
fn default_metrics(s: &Sweep) -> Vec<usize> {
    let varies = |i: usize| {
        let mut it = s.rows.iter().filter_map(|r| r.metrics[i]);
        let first = it.next();
        it.any(|v| Some(v) != first)
    };
    let mut out = Vec::new();
    for k in counters::KEY {
        let pick = [format!("memcg.{k}"), format!("vmstat.{k}")]
            .into_iter()
            .find_map(|c| s.metrics.iter().position(|m| *m == c));
        if let Some(i) = pick.filter(|&i| varies(i)) {
            out.push(i);
        }
    }
    out.truncate(5);
    if let Some(i) = s
        .metrics
        .iter()
        .position(|m| m == "elapsed_s")
        .filter(|&i| varies(i))
    {
        out.push(i);
    }
    out
}

pub fn section(s: &Sweep, idx: usize, opts: &Options) -> Result<Section, String> {
    let axes: Vec<(Vec<String>, bool)> = (0..s.params.len())
        .map(|p| axis_values(s.rows.iter().map(|r| r.params[p].clone())))
        .collect();
    let varied: Vec<usize> = (0..s.params.len())
        .filter(|&p| axes[p].0.len() > 1)
        .collect();
    let metrics: Vec<usize> = if opts.metrics.is_empty() {
        default_metrics(s)
    } else {
        opts.metrics
            .iter()
            .map(|m| find_metric(s, m))
            .collect::<Result<_, _>>()?
    };
    let x = match &opts.x {
        Some(name) => {
            let p = s.params.iter().position(|p| p == name).ok_or_else(|| {
                format!(
                    "--x: '{name}' is not a parameter of {} ({})",
                    s.label,
                    s.params.join(", ")
                )
            })?;
            if !varied.contains(&p) {
                return Err(format!("--x: '{name}' does not vary in {}", s.label));
            }
            Some(p)
        }
        None => varied.first().copied(),
    };
    // Repeats of each point, keyed by the parameters' values.
    let mut cells: BTreeMap<Vec<String>, Vec<Vec<f64>>> = BTreeMap::new();
    for r in &s.rows {
        let c = cells
            .entry(r.params.clone())
            .or_insert_with(|| vec![Vec::new(); s.metrics.len()]);
        for (i, v) in r.metrics.iter().enumerate() {
            if let Some(v) = v {
                c[i].push(*v);
            }
        }
    }
    let get = |key: &[String], m: usize| cells.get(key).and_then(|c| stat(&c[m]));
    let repeats = cells
        .values()
        .map(|c| c.iter().map(Vec::len).max().unwrap_or(0))
        .max()
        .unwrap_or(0);
    let mut items = vec![Item::Note(format!(
        "{} rows: {} points, up to {repeats} repeats each; plotted values are means over the repeats{}. Varied: {}.",
        s.rows.len(),
        cells.len(),
        if repeats > 1 { " (bars: lowest to highest repeat)" } else { "" },
        if varied.is_empty() { "nothing".into() } else {
            varied.iter().map(|&p| format!("{} ({} values)", s.params[p], axes[p].0.len())).collect::<Vec<_>>().join(", ")
        }
    ))];
    // The point's key from chosen values of the varied parameters; the
    // others have one value.
    let key_of = |chosen: &[(usize, &String)]| -> Vec<String> {
        (0..s.params.len())
            .map(|p| {
                chosen
                    .iter()
                    .find(|(q, _)| *q == p)
                    .map_or_else(|| axes[p].0[0].clone(), |(_, v)| (*v).clone())
            })
            .collect()
    };
    for &m in &metrics {
        let name = &s.metrics[m];
        let unit = counters::unit(name);
        let sc = counters::scale(name);
        let desc = counters::describe(name);
        let Some(xp) = x else { break };
        let others: Vec<usize> = varied.iter().copied().filter(|&p| p != xp).collect();
        if others.len() == 1 {
            let yp = others[0];
            let grid = axes[yp]
                .0
                .iter()
                .map(|yv| {
                    axes[xp]
                        .0
                        .iter()
                        .map(|xv| get(&key_of(&[(xp, xv), (yp, yv)]), m).map(|st| st.mean * sc))
                        .collect()
                })
                .collect();
            items.push(Item::Chart {
                chart: Chart {
                    slug: format!("sweep{idx}-{}-{}", slug(&s.label), slug(name)),
                    title: format!("{name} over {} and {}", s.params[xp], s.params[yp]),
                    x_label: s.params[xp].clone(),
                    y_label: s.params[yp].clone(),
                    unit,
                    kind: Kind::Heatmap {
                        xs: axes[xp].0.clone(),
                        ys: axes[yp].0.clone(),
                        cells: grid,
                    },
                    size: (780, 120 + 46 * axes[yp].0.len().clamp(3, 10) as u32),
                },
                caption: format!(
                    "{name}{}{desc}; mean over repeats in each cell.",
                    if desc.is_empty() { "" } else { ": " }
                ),
            });
            continue;
        }
        // Lines over x: one per combination of the other varied parameters.
        let mut combos: Vec<Vec<(usize, &String)>> = vec![Vec::new()];
        for &p in &others {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    axes[p].0.iter().map(move |v| {
                        let mut c = c.clone();
                        c.push((p, v));
                        c
                    })
                })
                .collect();
        }
        let total = combos.len();
        combos.truncate(MAX_SERIES);
        let (xs, numeric) = &axes[xp];
        let series = combos
            .iter()
            .map(|c| {
                let mut pts = Vec::new();
                let mut range = Vec::new();
                for (i, xv) in xs.iter().enumerate() {
                    let mut k = c.clone();
                    k.push((xp, xv));
                    if let Some(st) = get(&key_of(&k), m) {
                        let xpos = if *numeric {
                            xv.parse().unwrap_or(i as f64)
                        } else {
                            i as f64
                        };
                        pts.push((xpos, st.mean * sc));
                        range.push((st.min * sc, st.max * sc));
                    }
                }
                Series {
                    name: if c.is_empty() {
                        name.clone()
                    } else {
                        c.iter()
                            .map(|(p, v)| format!("{}={v}", s.params[*p]))
                            .collect::<Vec<_>>()
                            .join(", ")
                    },
                    points: pts,
                    range: (repeats > 1).then_some(range),
                }
            })
            .collect();
        let left_out = if total > MAX_SERIES {
            format!(" The first {MAX_SERIES} of {total} combinations are drawn; choose fewer with --x and a smaller sweep.")
        } else {
            String::new()
        };
        items.push(Item::Chart {
            chart: Chart {
                slug: format!("sweep{idx}-{}-{}", slug(&s.label), slug(name)),
                title: format!("{name} over {}", s.params[xp]),
                x_label: s.params[xp].clone(),
                y_label: format!(
                    "{name} ({})",
                    match unit {
                        chart::Unit::Bytes => "bytes",
                        chart::Unit::Seconds => "s",
                        chart::Unit::Count => "count",
                    }
                ),
                unit,
                kind: Kind::Lines {
                    x: if *numeric {
                        XAxis::Numeric
                    } else {
                        XAxis::Categories(xs.clone())
                    },
                    series,
                },
                size: (780, 340),
            },
            caption: format!(
                "{name}{}{desc}; mean over repeats.{left_out}",
                if desc.is_empty() { "" } else { ": " }
            ),
        });
    }
    // The means, one row per point.
    let mut head: Vec<String> = varied.iter().map(|&p| s.params[p].clone()).collect();
    let nparams = head.len();
    head.push("repeats".into());
    head.extend(metrics.iter().map(|&m| s.metrics[m].clone()));
    let mut keys: Vec<&Vec<String>> = cells.keys().collect();
    // Axis order, not string order.
    let pos = |p: usize, v: &String| axes[p].0.iter().position(|x| x == v).unwrap_or(0);
    keys.sort_by_key(|k| varied.iter().map(|&p| pos(p, &k[p])).collect::<Vec<_>>());
    let rows = keys
        .into_iter()
        .map(|k| {
            let mut row: Vec<String> = varied.iter().map(|&p| k[p].clone()).collect();
            row.push(cells[k].iter().map(Vec::len).max().unwrap_or(0).to_string());
            for &m in &metrics {
                row.push(match get(k, m) {
                    Some(st) if st.n > 1 && st.min != st.max => {
                        format!(
                            "{} ({}–{})",
                            chart::trim_float(st.mean, 2),
                            chart::trim_float(st.min, 2),
                            chart::trim_float(st.max, 2)
                        )
                    }
                    Some(st) => chart::trim_float(st.mean, 2),
                    None => "—".into(),
                });
            }
            row
        })
        .collect();
    items.push(Item::Table(Table {
        caption: "Means over repeats (lowest–highest)".into(),
        head,
        rows,
        numeric_from: nparams,
        folded: cells.len() > 30,
    }));
    Ok(Section {
        id: format!("sweep{idx}-{}", slug(&s.label)),
        title: format!("Sweep: {}", s.label),
        items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::parse_sweep;

    /// 2 swappiness values x 2 memcg sizes x 2 repeats; refaults are
    /// swappiness + size-in-M + repeat, so each mean is known.
    fn table() -> Sweep {
        let mut csv = String::from("point,repeat,seed,param.swappiness,param.memcg_limit,memcg.workingset_refault_file,elapsed_s\n");
        let mut point = 0;
        for sw in [100, 20] {
            for (lim, m) in [("1G", 1024), ("512M", 512)] {
                for rep in 0..2 {
                    csv.push_str(&format!(
                        "{point},{rep},{},{sw},{lim},{},2.5\n",
                        rep + 1,
                        sw + m + rep
                    ));
                }
                point += 1;
            }
        }
        parse_sweep(csv.as_bytes(), "grid").unwrap()
    }

    #[test]
    fn two_varied_parameters_give_a_heatmap_of_means_in_axis_order() {
        let sec = section(&table(), 0, &Options::default()).unwrap();
        let charts: Vec<&Chart> = sec
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Chart { chart, .. } => Some(chart),
                _ => None,
            })
            .collect();
        // elapsed_s does not vary: only the refaults are plotted.
        assert_eq!(charts.len(), 1);
        let Kind::Heatmap { xs, ys, cells } = &charts[0].kind else {
            panic!("{:?}", charts[0].kind)
        };
        assert_eq!(xs, &["20", "100"]);
        assert_eq!(ys, &["512M", "1G"]);
        // Mean of (sw + m) and (sw + m + 1).
        assert_eq!(cells[0], [Some(532.5), Some(612.5)]);
        assert_eq!(cells[1], [Some(1044.5), Some(1124.5)]);
    }

    #[test]
    fn one_parameter_on_x_gives_lines_with_the_repeats_range() {
        let opts = Options {
            metrics: vec!["workingset_refault_file".into()],
            x: Some("memcg_limit".into()),
            ..Options::default()
        };
        // Only memcg_limit varies when swappiness is held at 20.
        let mut s = table();
        s.rows.retain(|r| r.params[0] == "20");
        let sec = section(&s, 0, &opts).unwrap();
        let Some(Item::Chart { chart, .. }) = sec.items.get(1) else {
            panic!()
        };
        let Kind::Lines {
            x: XAxis::Categories(xs),
            series,
        } = &chart.kind
        else {
            panic!("{:?}", chart.kind)
        };
        assert_eq!(xs, &["512M", "1G"]);
        assert_eq!(series[0].points, [(0.0, 532.5), (1.0, 1044.5)]);
        assert_eq!(
            series[0].range.as_deref(),
            Some(&[(532.0, 533.0), (1044.0, 1045.0)][..])
        );
    }

    #[test]
    fn bad_metric_or_axis_names_the_columns() {
        let opts = Options {
            metrics: vec!["pgpgout".into()],
            ..Options::default()
        };
        let e = section(&table(), 0, &opts).unwrap_err();
        assert_eq!(e, "--metric: 'pgpgout' is not a result column of grid (memcg.workingset_refault_file, elapsed_s)");
        let opts = Options {
            x: Some("seed".into()),
            ..Options::default()
        };
        let e = section(&table(), 0, &opts).unwrap_err();
        assert_eq!(
            e,
            "--x: 'seed' is not a parameter of grid (swappiness, memcg_limit)"
        );
    }
}
