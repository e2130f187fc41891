//! Real runs against the model, per counter.

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CounterRow {
    pub counter: String,
    pub unit: &'static str,
    /// The real runs' values, in run order.
    pub real_runs: Vec<f64>,
    /// None when no real run has the counter (the model-only ones).
    pub real_median: Option<f64>,
    /// (max - min) / median of the real runs, in percent; None with < 2 runs
    /// or a zero median.
    pub real_spread_pct: Option<f64>,
    /// None when the model does not produce the counter.
    pub model: Option<f64>,
    /// (model - real median) / real median, in percent, signed. When the real
    /// median is 0 the divisor is 1 (one unit), so the figure is the
    /// absolute difference times 100, and `real_zero` flags it.
    pub err_pct: Option<f64>,
    pub real_zero: bool,
    /// The model at each real run's own inputs (its stats-flush phase, read
    /// latency, file layout), in run order, where those differ between
    /// runs; empty when one model run stands for all. NaN where that model
    /// run lacks the counter. `model` is their median.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub model_runs: Vec<f64>,
}

pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

/// Counter-wise medians of several runs' counters (a counter absent from
/// some runs is the median of the runs that have it).
pub fn median_of_maps<'a>(
    runs: impl IntoIterator<Item = &'a BTreeMap<String, f64>> + Clone,
) -> BTreeMap<String, f64> {
    let names: std::collections::BTreeSet<&String> =
        runs.clone().into_iter().flat_map(|m| m.keys()).collect();
    names
        .into_iter()
        .filter_map(|k| {
            let v: Vec<f64> = runs
                .clone()
                .into_iter()
                .filter_map(|m| m.get(k).copied())
                .collect();
            median(&v).map(|x| (k.clone(), x))
        })
        .collect()
}

pub fn spread_pct(v: &[f64]) -> Option<f64> {
    let m = median(v)?;
    if v.len() < 2 || m == 0.0 {
        return None;
    }
    let max = v.iter().cloned().fold(f64::MIN, f64::max);
    let min = v.iter().cloned().fold(f64::MAX, f64::min);
    Some((max - min) / m.abs() * 100.0)
}

/// Relative error of `model` against `real` (see [`CounterRow::err_pct`]).
pub fn err_pct(real: f64, model: f64) -> f64 {
    // One unit only for a zero median: a time under 1 s (first_limit_s,
    // a read miss) is divided by itself, not by 1 s.
    let d = if real == 0.0 { 1.0 } else { real.abs() };
    (model - real) / d * 100.0
}

/// One row per counter that either side has, sorted by name.
pub fn compare(
    real_runs: &[BTreeMap<String, f64>],
    model: &BTreeMap<String, f64>,
) -> Vec<CounterRow> {
    compare_paired(real_runs, model, &[])
}

/// As [`compare`], with the model run at each real run's inputs
/// (`model_runs`, one per real run, or empty) kept beside the real runs.
pub fn compare_paired(
    real_runs: &[BTreeMap<String, f64>],
    model: &BTreeMap<String, f64>,
    model_runs: &[BTreeMap<String, f64>],
) -> Vec<CounterRow> {
    let names: BTreeSet<&String> = real_runs
        .iter()
        .flat_map(|r| r.keys())
        .chain(model.keys())
        .collect();
    names
        .into_iter()
        .map(|name| {
            let runs: Vec<f64> = real_runs
                .iter()
                .filter_map(|r| r.get(name).copied())
                .collect();
            let real_median = median(&runs);
            let m = model.get(name).copied();
            let err = match (real_median, m) {
                (Some(r), Some(m)) => Some(err_pct(r, m)),
                _ => None,
            };
            CounterRow {
                counter: name.clone(),
                unit: crate::units::unit_of(name),
                real_spread_pct: spread_pct(&runs),
                real_zero: real_median == Some(0.0),
                real_runs: runs,
                real_median,
                model: m,
                err_pct: err,
                model_runs: model_runs
                    .iter()
                    .map(|r| r.get(name).copied().unwrap_or(f64::NAN))
                    .collect(),
            }
        })
        .collect()
}

/// Runs where the model at that run's own inputs is within `tol` percent
/// of that run (a real 0 takes one unit as divisor, as [`err_pct`]), and
/// the runs paired; None without per-run model values.
pub fn paired_within(row: &CounterRow, tol: f64) -> Option<(usize, usize)> {
    if row.model_runs.is_empty() || row.model_runs.len() != row.real_runs.len() {
        return None;
    }
    let n = row.real_runs.len();
    let k = row
        .real_runs
        .iter()
        .zip(&row.model_runs)
        .filter(|(r, m)| m.is_finite() && err_pct(**r, **m).abs() <= tol)
        .count();
    Some((k, n))
}

/// A number for a table: integers without decimals, others with up to 3
/// decimals, and small ones (a read miss in s) with 3 significant digits.
pub fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else if v.abs() < 0.01 {
        let decimals = (2 - v.abs().log10().floor() as i32).clamp(3, 12) as usize;
        format!("{v:.decimals$}")
    } else {
        format!("{v:.3}")
    }
}

pub fn fmt_opt_pct(v: Option<f64>) -> String {
    v.map_or("-".into(), |p| format!("{p:+.1}%"))
}

/// A plain-text table of rows (for the terminal).
pub fn render_text(rows: &[CounterRow]) -> String {
    let mut t = vec![[
        "counter".to_string(),
        "unit".into(),
        "real median".into(),
        "spread".into(),
        "model".into(),
        "error".into(),
    ]];
    for r in rows {
        t.push([
            r.counter.clone(),
            r.unit.to_string(),
            r.real_median.map_or("-".into(), fmt_num),
            r.real_spread_pct.map_or("-".into(), |s| format!("{s:.1}%")),
            r.model.map_or("-".into(), fmt_num),
            fmt_opt_pct(r.err_pct)
                + if r.real_zero && r.err_pct.is_some() {
                    " (real=0)"
                } else {
                    ""
                },
        ]);
    }
    let mut w = [0usize; 6];
    for row in &t {
        for (i, c) in row.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    let mut out = String::new();
    for row in &t {
        let mut line = String::new();
        for (i, c) in row.iter().enumerate() {
            if i == 0 || i == 1 {
                line.push_str(&format!("{c:<width$}  ", width = w[i]));
            } else {
                line.push_str(&format!("{c:>width$}  ", width = w[i]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(kv: &[(&str, f64)]) -> BTreeMap<String, f64> {
        kv.iter().map(|(k, v)| (k.to_string(), *v)).collect()
    }

    #[test]
    fn median_and_spread() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(spread_pct(&[90.0, 100.0, 110.0]), Some(20.0));
        assert_eq!(spread_pct(&[5.0]), None);
        assert_eq!(spread_pct(&[0.0, 0.0, 1.0]), None);
    }

    #[test]
    fn compare_rows() {
        let real = [
            m(&[
                ("pgmajfault", 100.0),
                ("vmstat.pgpgin", 4000.0),
                ("elapsed_s", 1.0),
            ]),
            m(&[
                ("pgmajfault", 110.0),
                ("vmstat.pgpgin", 4096.0),
                ("elapsed_s", 2.0),
            ]),
            m(&[
                ("pgmajfault", 90.0),
                ("vmstat.pgpgin", 4200.0),
                ("elapsed_s", 3.0),
            ]),
        ];
        let model = m(&[
            ("pgmajfault", 115.0),
            ("vmstat.pgpgin", 4096.0),
            ("workingset_refault_file", 0.0),
        ]);
        let rows = compare(&real, &model);
        let names: Vec<&str> = rows.iter().map(|r| r.counter.as_str()).collect();
        assert_eq!(
            names,
            [
                "elapsed_s",
                "pgmajfault",
                "vmstat.pgpgin",
                "workingset_refault_file"
            ]
        );
        let pf = &rows[1];
        assert_eq!(pf.real_median, Some(100.0));
        assert_eq!(pf.real_spread_pct, Some(20.0));
        assert_eq!(pf.err_pct, Some(15.0));
        assert_eq!(pf.real_runs, vec![100.0, 110.0, 90.0]);
        assert_eq!(rows[2].err_pct, Some(0.0));
        assert_eq!(rows[2].unit, "KiB");
        assert_eq!(rows[0].model, None);
        assert_eq!(rows[0].err_pct, None);
        assert_eq!(rows[3].real_median, None);
        assert_eq!(rows[3].err_pct, None);
    }

    #[test]
    fn zero_real_median_is_flagged_absolute() {
        let real = [
            m(&[("pgmajfault", 0.0)]),
            m(&[("pgmajfault", 0.0)]),
            m(&[("pgmajfault", 1.0)]),
        ];
        let rows = compare(&real, &m(&[("pgmajfault", 3.0)]));
        assert!(rows[0].real_zero);
        assert_eq!(rows[0].err_pct, Some(300.0));
        let rows = compare(&real, &m(&[("pgmajfault", 0.0)]));
        assert_eq!(rows[0].err_pct, Some(0.0));
        let t = render_text(&compare(&real, &m(&[("pgmajfault", 3.0)])));
        assert!(t.contains("+300.0% (real=0)"), "{t}");
        // A median under one unit (a time in s) is still its own divisor.
        let real = [m(&[("first_limit_s", 0.8)])];
        let rows = compare(&real, &m(&[("first_limit_s", 0.9)]));
        assert!((rows[0].err_pct.unwrap() - 12.5).abs() < 1e-9);
    }

    #[test]
    fn numbers_format() {
        assert_eq!(fmt_num(5243.0), "5243");
        assert_eq!(fmt_num(0.0496), "0.050");
        assert_eq!(fmt_num(1234.56), "1234.6");
        // A read miss in s keeps three significant digits, not "0.000".
        assert_eq!(fmt_num(5.234e-5), "0.0000523");
        assert_eq!(fmt_num(0.00512), "0.00512");
        assert_eq!(fmt_num(-0.0004), "-0.000400");
        assert_eq!(fmt_opt_pct(Some(-3.21)), "-3.2%");
        assert_eq!(fmt_opt_pct(None), "-");
    }
}
