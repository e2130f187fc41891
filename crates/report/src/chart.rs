//! Charts: a description (what to draw) and its drawing with plotters, to
//! SVG for the HTML page and for files, and to PNG for papers and mails.
//! One drawing function serves both backends, so the PNG shows what the
//! page shows.

use std::sync::Once;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// How a y value (or a heatmap cell) is written.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Unit {
    /// A count of events or pages: 1.2M, 35k.
    Count,
    /// Bytes, written in binary units: 1.5 GiB.
    Bytes,
    /// Seconds.
    Seconds,
}

impl Unit {
    pub fn fmt(self, v: f64) -> String {
        match self {
            Unit::Count => fmt_si(v),
            Unit::Bytes => fmt_bytes(v),
            Unit::Seconds => format!("{} s", trim_float(v, 3)),
        }
    }
}

/// 1234567 -> "1.23M"; small values keep up to 3 decimals.
pub fn fmt_si(v: f64) -> String {
    let a = v.abs();
    let (d, s) = if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e4 {
        (1e3, "k")
    } else {
        (1.0, "")
    };
    format!(
        "{}{s}",
        trim_float(v / d, if d == 1.0 { 2 } else { 3 - digits(a / d) })
    )
}

pub fn fmt_bytes(v: f64) -> String {
    let a = v.abs();
    let units = [("GiB", 30), ("MiB", 20), ("KiB", 10)];
    for (u, sh) in units {
        let d = (1u64 << sh) as f64;
        if a >= d {
            return format!("{} {u}", trim_float(v / d, 3 - digits(a / d)));
        }
    }
    format!("{} B", trim_float(v, 0))
}

/// Decimal digits left of the point, at most 3 (for significant figures).
fn digits(a: f64) -> usize {
    if a >= 100.0 {
        3
    } else if a >= 10.0 {
        2
    } else {
        1
    }
}

/// `v` with at most `dec` decimals, trailing zeros dropped.
pub fn trim_float(v: f64, dec: usize) -> String {
    let s = format!("{v:.dec$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" {
        "0".into()
    } else {
        s
    }
}

#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    /// Per point: the lowest and highest value behind it (repeats).
    pub range: Option<Vec<(f64, f64)>>,
}

#[derive(Clone, Debug)]
pub enum XAxis {
    Numeric,
    /// Points sit at x = 0, 1, ... and are labelled with these.
    Categories(Vec<String>),
}

#[derive(Clone, Debug)]
pub struct Bar {
    pub label: String,
    pub value: f64,
    /// Written above the bar under its value (a delta against the first).
    pub note: String,
}

#[derive(Clone, Debug)]
pub enum Kind {
    Lines {
        x: XAxis,
        series: Vec<Series>,
    },
    /// Areas stacked bottom to top in series order (same x in each).
    Stacked {
        series: Vec<Series>,
    },
    Bars(Vec<Bar>),
    /// `cells[y][x]`; None where the sweep has no such point.
    Heatmap {
        xs: Vec<String>,
        ys: Vec<String>,
        cells: Vec<Vec<Option<f64>>>,
    },
}

#[derive(Clone, Debug)]
pub struct Chart {
    /// A file-name-safe name (the plot's file with --format svg|png).
    pub slug: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub unit: Unit,
    pub kind: Kind,
    pub size: (u32, u32),
}

const FONT: &str = "sans-serif";

/// Text is laid out with DejaVu Sans's metrics whatever the machine has;
/// the SVG names the generic family, so a browser uses its own sans-serif.
fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_err()
        {
            unreachable!("the dejavu crate ships a valid TrueType font");
        }
    });
}

/// Colours told apart also in greyscale and by most colour-blind readers
/// (Okabe and Ito's palette).
const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(213, 94, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(230, 159, 0),
    RGBColor(86, 180, 233),
    RGBColor(120, 120, 120),
    RGBColor(240, 228, 66),
];

pub fn color(i: usize) -> RGBColor {
    PALETTE[i % PALETTE.len()]
}

pub fn svg(c: &Chart) -> Result<String, String> {
    register_font();
    let mut s = String::new();
    {
        let root = SVGBackend::with_string(&mut s, c.size).into_drawing_area();
        draw(&root, c, 1.0)?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(s)
}

/// PNG at `scale` times the SVG's size (2 for print), RGB, deterministic.
pub fn png(c: &Chart, scale: u32) -> Result<Vec<u8>, String> {
    register_font();
    let (w, h) = (c.size.0 * scale, c.size.1 * scale);
    let mut rgb = vec![0u8; (w * h * 3) as usize];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, (w, h)).into_drawing_area();
        draw(&root, c, scale as f64)?;
        root.present().map_err(|e| e.to_string())?;
    }
    let mut out = Vec::new();
    let mut enc = png::Encoder::new(&mut out, w, h);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut wr = enc.write_header().map_err(|e| e.to_string())?;
    wr.write_image_data(&rgb).map_err(|e| e.to_string())?;
    wr.finish().map_err(|e| e.to_string())?;
    Ok(out)
}

type Area<DB> = DrawingArea<DB, Shift>;

/// An f64 axis whose ticks sit where the chart says (categories at 0, 1,
/// ...; round numbers) rather than where plotters would put them.
struct Ticks {
    range: std::ops::Range<f64>,
    at: Vec<f64>,
}

impl Ranged for Ticks {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let span = self.range.end - self.range.start;
        let f = if span > 0.0 {
            (v - self.range.start) / span
        } else {
            0.5
        };
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }
    fn key_points<H: KeyPointHint>(&self, _: H) -> Vec<f64> {
        self.at.clone()
    }
    fn range(&self) -> std::ops::Range<f64> {
        self.range.clone()
    }
}

fn ticks(range: std::ops::Range<f64>, at: Vec<f64>) -> Ticks {
    Ticks { range, at }
}

fn index_ticks(range: std::ops::Range<f64>, n: usize) -> Ticks {
    ticks(range, (0..n).map(|i| i as f64).collect())
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("drawing: {e:?}")
}

/// (min, max) padded so that a flat series still gets a visible range and
/// counts start at zero.
fn y_range(vals: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in vals.filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    lo = lo.min(0.0);
    if hi <= lo {
        hi = lo + 1.0;
    }
    (lo, hi + (hi - lo) * 0.08)
}

fn draw<DB: DrawingBackend>(root: &Area<DB>, c: &Chart, s: f64) -> Result<(), String> {
    root.fill(&WHITE).map_err(err)?;
    let px = |v: f64| (v * s).round() as u32;
    let title = (FONT, 19.0 * s).into_font().color(&BLACK);
    let label = (FONT, 14.0 * s).into_font().color(&BLACK);
    let tick = (FONT, 12.5 * s).into_font().color(&RGBColor(40, 40, 40));
    let unit = c.unit;
    let yfmt = move |v: &f64| unit.fmt(*v);
    // The line and stacked plots' axes: labelled, ticks formatted, a
    // light grid at the major ticks only. A macro: the chart's coordinate
    // types differ between the two.
    macro_rules! grid_mesh {
        ($ch:ident, $xfmt:expr) => {
            $ch.configure_mesh()
                .x_desc(&c.x_label)
                .y_desc(&c.y_label)
                .axis_desc_style(label.clone())
                .label_style(tick.clone())
                .x_label_formatter($xfmt)
                .y_label_formatter(&yfmt)
                .light_line_style(TRANSPARENT)
                .bold_line_style(RGBColor(215, 215, 215))
                .draw()
                .map_err(err)?
        };
    }
    // Legends get a column of their own right of the plot: drawn over the
    // plot they hide whichever lines run there.
    let legend: Vec<(String, RGBColor)> = match &c.kind {
        Kind::Lines { series, .. } if series.len() > 1 => series
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.clone(), color(i)))
            .collect(),
        // Top band first, as they stack.
        Kind::Stacked { series } => series
            .iter()
            .enumerate()
            .rev()
            .map(|(i, s)| (s.name.clone(), color(i)))
            .collect(),
        _ => Vec::new(),
    };
    let area = if legend.is_empty() {
        root.clone()
    } else {
        let longest = legend
            .iter()
            .map(|l| l.0.chars().count())
            .max()
            .unwrap_or(0);
        let w = px((longest as f64 * 7.0 + 40.0).min(300.0));
        let (plot, side) = root.split_horizontally(root.dim_in_pixel().0.saturating_sub(w));
        let filled = matches!(c.kind, Kind::Stacked { .. });
        for (i, (name, col)) in legend.iter().enumerate() {
            let y = px(52.0 + 21.0 * i as f64) as i32;
            let (x0, x1) = (px(2.0) as i32, px(22.0) as i32);
            if filled {
                side.draw(&Rectangle::new(
                    [(x0, y - px(6.0) as i32), (x1, y + px(6.0) as i32)],
                    col.filled(),
                ))
                .map_err(err)?;
            } else {
                side.draw(&PathElement::new(
                    vec![(x0, y), (x1, y)],
                    col.stroke_width(px(3.0)),
                ))
                .map_err(err)?;
            }
            let st = tick.clone().pos(Pos::new(HPos::Left, VPos::Center));
            side.draw(&Text::new(name.clone(), (x1 + px(6.0) as i32, y), st))
                .map_err(err)?;
        }
        plot
    };
    match &c.kind {
        Kind::Lines { x, series } => {
            let all_x = series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
            let (x0, x1) = match x {
                XAxis::Categories(l) => (-0.3, l.len() as f64 - 0.7),
                XAxis::Numeric => {
                    let (lo, hi) = all_x.fold((f64::INFINITY, f64::NEG_INFINITY), |a, v| {
                        (a.0.min(v), a.1.max(v))
                    });
                    if !lo.is_finite() {
                        (0.0, 1.0)
                    } else if hi > lo {
                        (lo, hi)
                    } else {
                        (lo - 0.5, lo + 0.5)
                    }
                }
            };
            let (y0, y1) = y_range(series.iter().flat_map(|s| {
                s.points.iter().map(|p| p.1).chain(
                    s.range
                        .iter()
                        .flat_map(|r| r.iter().flat_map(|&(a, b)| [a, b])),
                )
            }));
            let mut b = ChartBuilder::on(&area);
            b.caption(&c.title, title)
                .margin(px(12.0))
                .x_label_area_size(px(46.0))
                .y_label_area_size(px(78.0));
            let cats: Vec<String> = match x {
                XAxis::Categories(l) => l.clone(),
                XAxis::Numeric => Vec::new(),
            };
            let xr = match x {
                XAxis::Categories(l) => index_ticks(x0..x1, l.len()),
                XAxis::Numeric => ticks(x0..x1, nice_ticks(x0, x1, 8)),
            };
            let mut ch = b
                .build_cartesian_2d(xr, ticks(y0..y1, y_ticks(unit, y0, y1)))
                .map_err(err)?;
            let xfmt = |v: &f64| {
                if cats.is_empty() {
                    trim_float(*v, 3)
                } else {
                    cats.get(v.round() as usize).cloned().unwrap_or_default()
                }
            };
            grid_mesh!(ch, &xfmt);
            for (i, se) in series.iter().enumerate() {
                let col = color(i);
                if let Some(r) = &se.range {
                    let bars = se.points.iter().zip(r).map(|(p, &(lo, hi))| {
                        PathElement::new(
                            vec![(p.0, lo), (p.0, hi)],
                            col.mix(0.6).stroke_width(px(1.5)),
                        )
                    });
                    ch.draw_series(bars).map_err(err)?;
                }
                ch.draw_series(LineSeries::new(
                    se.points.iter().copied(),
                    col.stroke_width(px(2.0)),
                ))
                .map_err(err)?;
                if se.points.len() <= 40 {
                    ch.draw_series(
                        se.points
                            .iter()
                            .map(|&p| Circle::new(p, px(3.0), col.filled())),
                    )
                    .map_err(err)?;
                }
            }
        }
        Kind::Stacked { series } => {
            let n = series.first().map_or(0, |s| s.points.len());
            let mut tops: Vec<Vec<(f64, f64)>> = Vec::new();
            let mut acc = vec![0.0; n];
            for se in series {
                for (a, p) in acc.iter_mut().zip(&se.points) {
                    *a += p.1;
                }
                tops.push(se.points.iter().zip(&acc).map(|(p, &a)| (p.0, a)).collect());
            }
            let xs = series.first().map(|s| s.points.as_slice()).unwrap_or(&[]);
            let x0 = xs.first().map_or(0.0, |p| p.0);
            let x1 = xs.last().map_or(1.0, |p| p.0).max(x0 + 1.0);
            let (y0, y1) = y_range(acc.iter().copied());
            let mut ch = ChartBuilder::on(&area)
                .caption(&c.title, title)
                .margin(px(12.0))
                .x_label_area_size(px(46.0))
                .y_label_area_size(px(78.0))
                .build_cartesian_2d(
                    ticks(x0..x1, nice_ticks(x0, x1, 8)),
                    ticks(y0..y1, y_ticks(unit, y0, y1)),
                )
                .map_err(err)?;
            let xfmt = |v: &f64| trim_float(*v, 3);
            grid_mesh!(ch, &xfmt);
            // Highest first, each painted down to zero: the bands stack.
            for (i, top) in tops.iter().enumerate().rev() {
                let col = color(i);
                ch.draw_series(
                    AreaSeries::new(top.iter().copied(), 0.0, col.mix(0.85))
                        .border_style(col.stroke_width(px(1.0))),
                )
                .map_err(err)?;
            }
        }
        Kind::Bars(bars) => {
            let n = bars.len();
            let (y0, y1) = y_range(bars.iter().map(|b| b.value));
            // Room above the tallest bar for its value and note.
            let y1 = y1 + (y1 - y0) * 0.12;
            let mut ch = ChartBuilder::on(root)
                .caption(&c.title, title)
                .margin(px(12.0))
                .x_label_area_size(px(40.0))
                .y_label_area_size(px(78.0))
                .build_cartesian_2d(
                    index_ticks(-0.6..n as f64 - 0.4, n),
                    ticks(y0..y1, y_ticks(unit, y0, y1)),
                )
                .map_err(err)?;
            let labels: Vec<String> = bars.iter().map(|b| b.label.clone()).collect();
            let xfmt = |v: &f64| labels.get(v.round() as usize).cloned().unwrap_or_default();
            ch.configure_mesh()
                .disable_x_mesh()
                .x_desc(&c.x_label)
                .y_desc(&c.y_label)
                .axis_desc_style(label.clone())
                .label_style(tick.clone())
                .x_label_formatter(&xfmt)
                .y_label_formatter(&yfmt)
                .bold_line_style(RGBColor(215, 215, 215))
                .light_line_style(TRANSPARENT)
                .draw()
                .map_err(err)?;
            ch.draw_series(bars.iter().enumerate().map(|(i, b)| {
                let x = i as f64;
                Rectangle::new([(x - 0.32, 0.0), (x + 0.32, b.value)], color(i).filled())
            }))
            .map_err(err)?;
            let above = tick.clone().pos(Pos::new(HPos::Center, VPos::Bottom));
            ch.draw_series(bars.iter().enumerate().map(|(i, b)| {
                let text = if b.note.is_empty() {
                    unit.fmt(b.value)
                } else {
                    format!("{} ({})", unit.fmt(b.value), b.note)
                };
                Text::new(
                    text,
                    (i as f64, b.value.max(0.0) + (y1 - y0) * 0.01),
                    above.clone(),
                )
            }))
            .map_err(err)?;
        }
        Kind::Heatmap { xs, ys, cells } => {
            let vals = cells.iter().flatten().flatten().copied();
            let (lo, hi) = vals.fold((f64::INFINITY, f64::NEG_INFINITY), |a, v| {
                (a.0.min(v), a.1.max(v))
            });
            let (lo, hi) = if lo.is_finite() { (lo, hi) } else { (0.0, 1.0) };
            let (plot, bar) = root.split_horizontally(root.dim_in_pixel().0 - px(110.0));
            let mut ch = ChartBuilder::on(&plot)
                .caption(&c.title, title.clone())
                .margin(px(12.0))
                .x_label_area_size(px(46.0))
                .y_label_area_size(px(78.0))
                .build_cartesian_2d(
                    index_ticks(-0.5..xs.len() as f64 - 0.5, xs.len()),
                    index_ticks(-0.5..ys.len() as f64 - 0.5, ys.len()),
                )
                .map_err(err)?;
            let xfmt = |v: &f64| xs.get(v.round() as usize).cloned().unwrap_or_default();
            let yl = |v: &f64| ys.get(v.round() as usize).cloned().unwrap_or_default();
            ch.configure_mesh()
                .disable_mesh()
                .x_desc(&c.x_label)
                .y_desc(&c.y_label)
                .axis_desc_style(label.clone())
                .label_style(tick.clone())
                .x_label_formatter(&xfmt)
                .y_label_formatter(&yl)
                .draw()
                .map_err(err)?;
            let norm = |v: f64| if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
            let mut rects = Vec::new();
            let mut texts = Vec::new();
            let centre = tick.clone().pos(Pos::new(HPos::Center, VPos::Center));
            for (yi, row) in cells.iter().enumerate() {
                for (xi, v) in row.iter().enumerate() {
                    let (x, y) = (xi as f64, yi as f64);
                    let Some(v) = v else {
                        rects.push(Rectangle::new(
                            [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
                            RGBColor(245, 245, 245).filled(),
                        ));
                        continue;
                    };
                    let t = norm(*v);
                    let col: RGBColor = ViridisRGB.get_color(t as f32);
                    rects.push(Rectangle::new(
                        [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)],
                        col.filled(),
                    ));
                    // Dark text on viridis' light end, white on its dark end.
                    let fg = if t > 0.6 { &BLACK } else { &WHITE };
                    texts.push(Text::new(unit.fmt(*v), (x, y), centre.clone().color(fg)));
                }
            }
            ch.draw_series(rects).map_err(err)?;
            ch.draw_series(texts).map_err(err)?;
            // The colour scale.
            let mut cb = ChartBuilder::on(&bar)
                .margin_top(px(48.0))
                .margin_bottom(px(58.0))
                .margin_right(px(8.0))
                .y_label_area_size(px(70.0))
                .build_cartesian_2d(0.0..1.0, lo..hi.max(lo + f64::EPSILON))
                .map_err(err)?;
            cb.configure_mesh()
                .disable_mesh()
                .disable_x_axis()
                .label_style(tick.clone())
                .y_label_formatter(&yfmt)
                .y_labels(5)
                .draw()
                .map_err(err)?;
            let steps = 64;
            cb.draw_series((0..steps).map(|i| {
                let a = lo + (hi - lo) * i as f64 / steps as f64;
                let b = lo + (hi - lo) * (i + 1) as f64 / steps as f64;
                let col: RGBColor = ViridisRGB.get_color((i as f32 + 0.5) / steps as f32);
                Rectangle::new([(0.0, a), (1.0, b)], col.filled())
            }))
            .map_err(err)?;
        }
    }
    Ok(())
}

/// Round ticks in the unit a reader sees: bytes step in KiB/MiB/GiB so the
/// labels come out as 256 MiB rather than 268 MB's odd binary value.
fn y_ticks(unit: Unit, lo: f64, hi: f64) -> Vec<f64> {
    let m = lo.abs().max(hi.abs());
    let d = match unit {
        Unit::Bytes if m >= (1u64 << 30) as f64 => (1u64 << 30) as f64,
        Unit::Bytes if m >= (1u64 << 20) as f64 => (1u64 << 20) as f64,
        Unit::Bytes if m >= 1024.0 => 1024.0,
        _ => 1.0,
    };
    nice_ticks(lo / d, hi / d, 6)
        .into_iter()
        .map(|t| t * d)
        .collect()
}

/// Round tick positions (1, 2 or 5 times a power of ten) across [lo, hi].
pub fn nice_ticks(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    let span = hi - lo;
    if span.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) || !span.is_finite() {
        return vec![lo];
    }
    let raw = span / max.max(1) as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= max as f64)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|i| i as f64 * step).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_read_as_people_write_them() {
        assert_eq!(fmt_si(0.0), "0");
        assert_eq!(fmt_si(950.0), "950");
        assert_eq!(fmt_si(12_345.0), "12.3k");
        assert_eq!(fmt_si(1_234_567.0), "1.23M");
        assert_eq!(fmt_si(-2_500_000_000.0), "-2.5G");
        assert_eq!(fmt_bytes(400.0 * 1048576.0), "400 MiB");
        assert_eq!(fmt_bytes(1536.0), "1.5 KiB");
        assert_eq!(fmt_bytes(3.0 * 1073741824.0), "3 GiB");
        assert_eq!(Unit::Seconds.fmt(1.2346), "1.235 s");
    }

    #[test]
    fn ticks_are_round_and_inside() {
        assert_eq!(nice_ticks(0.0, 20.0, 8), vec![0.0, 5.0, 10.0, 15.0, 20.0]);
        assert_eq!(
            nice_ticks(35.0, 175.0, 8),
            vec![40.0, 60.0, 80.0, 100.0, 120.0, 140.0, 160.0]
        );
        let t = nice_ticks(0.3, 0.9, 8);
        assert!(
            t.iter().all(|&v| (0.3..=0.9).contains(&v)) && t.len() >= 3,
            "{t:?}"
        );
    }

    fn sample() -> Chart {
        Chart {
            slug: "t".into(),
            title: "refaults".into(),
            x_label: "simulated time (s)".into(),
            y_label: "pages/s".into(),
            unit: Unit::Count,
            kind: Kind::Lines {
                x: XAxis::Numeric,
                series: vec![Series {
                    name: "workingset_refault_file".into(),
                    points: (0..10).map(|i| (i as f64, (i * i) as f64)).collect(),
                    range: None,
                }],
            },
            size: (640, 320),
        }
    }

    #[test]
    fn svg_and_png_are_drawn_and_repeat_byte_for_byte() {
        let c = sample();
        let a = svg(&c).unwrap();
        assert!(a.starts_with("<svg") && a.contains("refaults") && a.contains("polyline"));
        assert_eq!(a, svg(&c).unwrap());
        let p = png(&c, 2).unwrap();
        assert_eq!(&p[1..4], b"PNG");
        // IHDR: width and height at twice the size.
        assert_eq!(u32::from_be_bytes(p[16..20].try_into().unwrap()), 1280);
        assert_eq!(u32::from_be_bytes(p[20..24].try_into().unwrap()), 640);
        assert_eq!(p, png(&c, 2).unwrap());
    }
}
