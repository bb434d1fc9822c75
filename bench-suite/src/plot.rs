//! One SVG per group: a panel per table (operation and metric), and one legend for the
//! whole figure, outside the panels.
//!
//! - Every implementation has one fixed colour and marker in every panel of every plot
//!   ([`style`]): our crates' types in a blue family, each peer its own hue.
//! - A panel whose implementations were measured at several parameter values is a line
//!   chart with one tick per measured value (so thread counts are whole numbers); a panel
//!   where each was measured once is a horizontal bar chart.
//! - Times carry whiskers (the interquartile range); a noisy one (spread over
//!   [`NOISE_PCT`](crate::measure::NOISE_PCT)) is drawn hollow.
//! - The seeds' published figures appear as crosses beside our points; goals of target
//!   rows as lines or bands on their bars, the bar coloured by its verdict.
//! - Every title says whether lower or higher is better. Value axes switch to a log scale
//!   when the values span more than a factor of 30.

use std::path::{Path, PathBuf};

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::goal::{Goal, Verdict};
use crate::measure::{Instrument, Measurement};
use crate::seeds::{Claim, Ours};

/// Metrics not worth a panel (their tables are in the report).
const UNPLOTTED: [&str; 2] = ["allocs/item", "requested B/item"];

/// How a point is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Marker {
    /// A disc.
    Circle,
    /// A square.
    Square,
    /// A triangle pointing up.
    Triangle,
    /// A diamond.
    Diamond,
    /// A plus sign.
    Plus,
}

/// An implementation's colour and marker.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Style {
    /// The colour.
    pub color: RGBColor,
    /// The marker.
    pub marker: Marker,
}

const fn st(r: u8, g: u8, b: u8, marker: Marker) -> Style {
    Style {
        color: RGBColor(r, g, b),
        marker,
    }
}

/// Fixed styles. Ours: blues (dark to light: the main type, then its variants). Peers:
/// one hue each, the same hue for the same peer in every group.
const STYLES: &[(&str, Style)] = &[
    // lean-string
    ("LeanString", st(8, 69, 148, Marker::Circle)),
    ("LeanStr", st(33, 113, 181, Marker::Triangle)),
    ("LeanCString", st(66, 146, 198, Marker::Diamond)),
    (
        "LeanString (forced wide)",
        st(120, 180, 225, Marker::Square),
    ),
    ("LeanString (format_lean!)", st(0, 35, 90, Marker::Plus)),
    // cob-tree
    ("CobTree", st(8, 69, 148, Marker::Circle)),
    // gc-object
    ("gc-object", st(8, 48, 107, Marker::Diamond)),
    ("gc-object independent", st(8, 69, 148, Marker::Circle)),
    ("gc-object shared", st(33, 113, 181, Marker::Triangle)),
    ("gc-object cold", st(100, 165, 215, Marker::Square)),
    // arena-alloc
    ("arena-alloc", st(8, 69, 148, Marker::Circle)),
    ("arena-alloc heaps=1", st(100, 165, 215, Marker::Square)),
    // peers
    ("lean_string 0.8", st(148, 103, 189, Marker::Plus)),
    ("lean_string 0.7", st(148, 103, 189, Marker::Plus)),
    ("compact_str", st(255, 127, 14, Marker::Square)),
    ("smol_str", st(44, 160, 44, Marker::Triangle)),
    ("ecow", st(214, 39, 40, Marker::Diamond)),
    ("arcstr", st(140, 86, 75, Marker::Circle)),
    ("Arc<str>", st(227, 119, 194, Marker::Triangle)),
    ("String", st(90, 90, 90, Marker::Square)),
    ("Box<str>", st(188, 189, 34, Marker::Diamond)),
    ("BTreeMap", st(255, 127, 14, Marker::Square)),
    ("RwLock<BTreeMap>", st(214, 39, 40, Marker::Triangle)),
    ("SkipMap", st(44, 160, 44, Marker::Diamond)),
    ("sorted Vec", st(90, 90, 90, Marker::Plus)),
    ("Box", st(188, 189, 34, Marker::Square)),
    ("gc-arena", st(255, 127, 14, Marker::Triangle)),
    ("dumpster", st(44, 160, 44, Marker::Diamond)),
    ("HashMap std", st(214, 39, 40, Marker::Triangle)),
    ("HashMap fx", st(148, 103, 189, Marker::Square)),
    ("Vec", st(140, 86, 75, Marker::Diamond)),
    ("boa_gc HashMap", st(227, 119, 194, Marker::Plus)),
    ("slot array (floor)", st(90, 90, 90, Marker::Plus)),
    ("glibc", st(90, 90, 90, Marker::Square)),
    ("mimalloc", st(255, 127, 14, Marker::Triangle)),
    ("jemalloc", st(44, 160, 44, Marker::Diamond)),
    ("libc", st(140, 86, 75, Marker::Plus)),
];

/// Colours for names not in the table (chosen by a hash of the name, so stable).
const SPARE: [RGBColor; 5] = [
    RGBColor(23, 190, 207),
    RGBColor(188, 128, 34),
    RGBColor(128, 0, 64),
    RGBColor(0, 128, 96),
    RGBColor(96, 48, 160),
];

/// Blues for our own types not in the table.
const SPARE_BLUES: [RGBColor; 4] = [
    RGBColor(0, 35, 90),
    RGBColor(50, 90, 170),
    RGBColor(90, 130, 200),
    RGBColor(150, 190, 230),
];

/// Names of our crates' types (their variants get a blue when not in the table).
const OURS: [&str; 6] = [
    "Lean",
    "CobTree",
    "gc-object",
    "arena-alloc",
    "cob-tree",
    "lean-string",
];

/// The fixed style of `implementation`.
pub fn style(implementation: &str) -> Style {
    if let Some((_, s)) = STYLES.iter().find(|(n, _)| *n == implementation) {
        return *s;
    }
    let h = implementation
        .bytes()
        .fold(5381u32, |h, b| h.wrapping_mul(33) ^ u32::from(b));
    let spare: &[RGBColor] = if OURS.iter().any(|o| implementation.starts_with(o)) {
        &SPARE_BLUES
    } else {
        &SPARE
    };
    let markers = [
        Marker::Circle,
        Marker::Square,
        Marker::Triangle,
        Marker::Diamond,
        Marker::Plus,
    ];
    Style {
        color: spare[h as usize % spare.len()],
        marker: markers[(h / 7) as usize % markers.len()],
    }
}

const VERDICT_MET: RGBColor = RGBColor(44, 160, 44);
const VERDICT_MISSED: RGBColor = RGBColor(214, 39, 40);
const VERDICT_REFERENCE: RGBColor = RGBColor(150, 150, 150);
const GOAL: RGBColor = RGBColor(120, 0, 0);
const SEED: RGBColor = RGBColor(0, 0, 0);

/// A scale: linear, or log10 (values are plotted as their logarithms).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scale {
    /// Plain values.
    Linear,
    /// log10 of the values.
    Log,
}

impl Scale {
    /// Log when every value is positive and they span at least `ratio`.
    pub fn choose(values: impl Iterator<Item = f64> + Clone, ratio: f64) -> Scale {
        let min = values.clone().fold(f64::INFINITY, f64::min);
        let max = values.fold(f64::NEG_INFINITY, f64::max);
        if min > 0.0 && max / min >= ratio {
            Scale::Log
        } else {
            Scale::Linear
        }
    }

    fn to(self, v: f64) -> f64 {
        match self {
            Scale::Linear => v,
            Scale::Log => v.max(1e-12).log10(),
        }
    }

    fn from(self, v: f64) -> f64 {
        match self {
            Scale::Linear => v,
            Scale::Log => 10f64.powf(v),
        }
    }

    fn label(self, name: &str) -> String {
        match self {
            Scale::Linear => name.to_owned(),
            Scale::Log => format!("{name} (log scale)"),
        }
    }
}

/// A short axis label: `1.5k`, `2M`, or three significant digits.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    let trim = |s: String| {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s
        }
    };
    if a >= 1e6 {
        trim(format!("{:.2}", v / 1e6)) + "M"
    } else if a >= 1e3 {
        trim(format!("{:.1}", v / 1e3)) + "k"
    } else {
        crate::fmt::fmt_value(v)
    }
}

/// A parameter's tick: sizes in bytes in binary units (`64K`, `128K+1`, `1M`), other
/// counts as [`tick`] writes them.
pub fn param_tick(name: &str, v: u64) -> String {
    if name != "bytes" || v < 1024 {
        return tick(v as f64);
    }
    let (k, m) = (1u64 << 10, 1u64 << 20);
    match v {
        v if v % m == 0 => format!("{}M", v / m),
        v if v % k == 0 => format!("{}K", v / k),
        v if (v - 1) % k == 0 => format!("{}K+1", (v - 1) / k),
        v => v.to_string(),
    }
}

/// One point of a series.
#[derive(Clone, Copy, Debug)]
struct Point {
    param: u64,
    median: f64,
    /// The whisker (interquartile band) of a time with samples.
    band: Option<(f64, f64)>,
    noisy: bool,
    goal: Option<Goal>,
    worst: f64,
}

/// One panel: an operation and a metric.
#[derive(Debug)]
struct Panel {
    operation: String,
    metric: String,
    param_name: String,
    lower_is_better: bool,
    series: Vec<(String, Vec<Point>)>,
    /// Seed figures in our metric: (implementation, param, value).
    seeds: Vec<(String, u64, f64)>,
    /// A log value axis from a 2x range on (the scaling groups: with their sizes spaced
    /// 4x, one tick per size, the panel is log-log).
    log: bool,
}

impl Panel {
    fn is_bars(&self) -> bool {
        self.series.iter().all(|s| s.1.len() == 1)
    }

    fn title(&self) -> String {
        format!(
            "{}: {} ({} is better)",
            self.operation,
            self.metric,
            if self.lower_is_better {
                "lower"
            } else {
                "higher"
            }
        )
    }

    /// Every value the panel draws (for the axis range); `whiskers`: with the ends of
    /// the whiskers.
    fn values(&self, whiskers: bool) -> Vec<f64> {
        let mut v: Vec<f64> = Vec::new();
        for (_, pts) in &self.series {
            for p in pts {
                v.push(p.median);
                if let (Some((lo, hi)), true) = (p.band, whiskers) {
                    v.extend([lo, hi]);
                }
                if let Some(g) = p.goal {
                    let (lo, hi) = g.band();
                    v.extend(lo.into_iter().chain(hi));
                }
            }
        }
        v.extend(self.seeds.iter().map(|s| s.2));
        v.retain(|x| x.is_finite());
        v
    }
}

fn panels(group: &str, results: &[Measurement], claims: &[Claim]) -> Vec<Panel> {
    let mut out: Vec<Panel> = Vec::new();
    let log = group.starts_with(crate::groups::group::SCALING_PREFIX);
    for m in results.iter().filter(|m| {
        m.group == group
            && m.stats.samples > 0
            && !UNPLOTTED.contains(&m.metric.as_str())
            && !(log && m.stats.median <= 0.0)
    }) {
        let idx = match out
            .iter()
            .position(|p| p.operation == m.operation && p.metric == m.metric)
        {
            Some(i) => i,
            None => {
                out.push(Panel {
                    operation: m.operation.clone(),
                    metric: m.metric.clone(),
                    param_name: m.param_name.clone(),
                    lower_is_better: m.lower_is_better,
                    series: Vec::new(),
                    seeds: Vec::new(),
                    log,
                });
                out.len() - 1
            }
        };
        let series = &mut out[idx].series;
        let s = match series.iter().position(|s| s.0 == m.implementation) {
            Some(i) => i,
            None => {
                series.push((m.implementation.clone(), Vec::new()));
                series.len() - 1
            }
        };
        let timed = m.instrument == Instrument::Time && m.stats.samples > 1;
        series[s].1.push(Point {
            param: m.param,
            median: m.stats.median,
            // median ± IQR/2, kept inside the samples' range.
            band: timed.then(|| {
                let (lo, hi) = m.stats.band();
                (lo.max(m.stats.min), hi.min(m.stats.max))
            }),
            noisy: m.stats.noisy(),
            goal: m.goal,
            worst: m.stats.max,
        });
    }
    for p in &mut out {
        for c in claims
            .iter()
            .filter(|c| c.group == group && c.operation == p.operation && c.metric == p.metric)
        {
            let Ours::Value {
                implementation,
                scale,
            } = c.ours
            else {
                continue;
            };
            let measured = p.series.iter().any(|(name, pts)| {
                name == implementation && pts.iter().any(|pt| pt.param == c.param)
            });
            if measured && scale != 0.0 {
                p.seeds
                    .push((implementation.to_owned(), c.param, c.seed / scale));
            }
        }
        for (_, pts) in &mut p.series {
            pts.sort_by_key(|pt| pt.param);
        }
    }
    out
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

fn err<E: std::fmt::Display>(group: &str) -> impl Fn(E) -> String + '_ {
    move |e| format!("plot {group}: {e}")
}

/// Draws `m` at pixel `(x, y)` of `area`.
fn marker(area: &Area<'_>, (x, y): (i32, i32), s: Style, filled: bool) -> Result<(), String> {
    let e = err("marker");
    let c = s.color.to_rgba();
    let style = if filled {
        c.filled()
    } else {
        c.stroke_width(2)
    };
    let r = 5;
    match s.marker {
        Marker::Circle => area.draw(&Circle::new((x, y), r, style)),
        Marker::Square => area.draw(&Rectangle::new(
            [(x - r + 1, y - r + 1), (x + r - 1, y + r - 1)],
            style,
        )),
        Marker::Triangle => {
            let pts = vec![
                (x, y - r - 1),
                (x + r, y + r - 1),
                (x - r, y + r - 1),
                (x, y - r - 1),
            ];
            if filled {
                area.draw(&Polygon::new(pts, style))
            } else {
                area.draw(&PathElement::new(pts, style))
            }
        }
        Marker::Diamond => {
            let pts = vec![
                (x, y - r - 1),
                (x + r, y),
                (x, y + r + 1),
                (x - r, y),
                (x, y - r - 1),
            ];
            if filled {
                area.draw(&Polygon::new(pts, style))
            } else {
                area.draw(&PathElement::new(pts, style))
            }
        }
        Marker::Plus => {
            let w = if filled { 3 } else { 1 };
            area.draw(&PathElement::new(
                vec![(x - r, y), (x + r, y)],
                c.stroke_width(w),
            ))
            .and_then(|_| {
                area.draw(&PathElement::new(
                    vec![(x, y - r), (x, y + r)],
                    c.stroke_width(w),
                ))
            })
        }
    }
    .map_err(e)
}

/// The seed's figure: a black-outlined cross.
fn seed_mark(area: &Area<'_>, (x, y): (i32, i32), s: Style) -> Result<(), String> {
    let e = err("seed");
    let r = 6;
    for (w, c) in [(4, SEED.to_rgba()), (2, s.color.to_rgba())] {
        area.draw(&PathElement::new(
            vec![(x - r, y - r), (x + r, y + r)],
            c.stroke_width(w),
        ))
        .map_err(&e)?;
        area.draw(&PathElement::new(
            vec![(x - r, y + r), (x + r, y - r)],
            c.stroke_width(w),
        ))
        .map_err(&e)?;
    }
    Ok(())
}

fn text<'a>(size: u32) -> TextStyle<'a> {
    ("sans-serif", size).into_font().color(&BLACK)
}

fn minmax(v: impl Iterator<Item = f64>) -> (f64, f64) {
    v.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    })
}

fn pad(lo: &mut f64, hi: &mut f64, frac: f64) {
    let span = if *hi > *lo {
        *hi - *lo
    } else {
        lo.abs().max(1.0)
    };
    *lo -= span * frac;
    *hi += span * frac;
}

/// Tick values for a log axis from `lo` to `hi` (real values): 1-2-5 per decade, only
/// the powers of ten over many decades, more steps over less than one.
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let pick = |steps: &[f64]| -> Vec<f64> {
        let (a, b) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        (a..=b)
            .flat_map(|k| steps.iter().map(move |m| m * 10f64.powi(k)))
            .filter(|t| (lo..=hi).contains(t))
            .collect()
    };
    let t = pick(&[1.0, 2.0, 5.0]);
    if t.len() > 10 {
        pick(&[1.0])
    } else if t.len() < 3 {
        pick(&[1.0, 1.5, 2.0, 3.0, 5.0, 7.0])
    } else {
        t
    }
}

/// The value axis of a panel: scale and range (in scaled units). The scale follows the
/// medians, seeds and goals; the range also covers the whiskers (positive ones on a log
/// scale).
fn value_axis(p: &Panel, from_zero: bool) -> (Scale, f64, f64) {
    // A log-log panel whose values span less than 2x stays linear: a log axis over so
    // little has no round tick to label, and the line is as flat either way.
    let scale = Scale::choose(p.values(false).into_iter(), if p.log { 2.0 } else { 30.0 });
    let values: Vec<f64> = p
        .values(true)
        .into_iter()
        .filter(|v| scale == Scale::Linear || *v > 0.0)
        .collect();
    let (mut lo, mut hi) = minmax(values.iter().map(|v| scale.to(*v)));
    if !lo.is_finite() {
        (lo, hi) = (0.0, 1.0);
    }
    pad(&mut lo, &mut hi, 0.08);
    if scale == Scale::Linear && from_zero && lo > 0.0
        || scale == Scale::Linear && lo < 0.0 && values.iter().all(|v| *v >= 0.0)
    {
        lo = 0.0;
    }
    (scale, lo, hi)
}

fn line_panel(root: &Area<'_>, area: &Area<'_>, p: &Panel, group: &str) -> Result<(), String> {
    let e = err(group);
    let mut params: Vec<u64> = p
        .series
        .iter()
        .flat_map(|s| s.1.iter().map(|pt| pt.param))
        .collect();
    params.sort_unstable();
    params.dedup();
    let n = params.len();
    let x_of = |param: u64| params.iter().position(|q| *q == param).unwrap_or(0) as f64;
    let (scale, y0, y1) = value_axis(p, true);
    let mut chart = ChartBuilder::on(area)
        .caption(p.title(), ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(46)
        .y_label_area_size(64)
        .build_cartesian_2d(-0.5..(n as f64 - 0.5), y0..y1)
        .map_err(&e)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(scale.label(&p.metric))
        .y_labels(if scale == Scale::Log { 0 } else { 10 })
        .y_label_formatter(&|v| tick(scale.from(*v)))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
        .axis_desc_style(("sans-serif", 14))
        .label_style(("sans-serif", 12))
        .draw()
        .map_err(&e)?;
    if scale == Scale::Log {
        for t in log_ticks(scale.from(y0), scale.from(y1)) {
            let (xl, py) = chart.backend_coord(&(-0.5, scale.to(t)));
            let (xr, _) = chart.backend_coord(&(n as f64 - 0.5, scale.to(t)));
            root.draw(&PathElement::new(vec![(xl, py), (xr, py)], BLACK.mix(0.08)))
                .map_err(&e)?;
            root.draw(&PathElement::new(vec![(xl - 5, py), (xl, py)], BLACK))
                .map_err(&e)?;
            root.draw(&Text::new(
                tick(t),
                (xl - 7, py),
                text(12).pos(Pos::new(HPos::Right, VPos::Center)),
            ))
            .map_err(&e)?;
        }
    }
    // One tick per measured parameter, labelled with its exact value.
    for (i, param) in params.iter().enumerate() {
        let (px, py) = chart.backend_coord(&(i as f64, y0));
        root.draw(&PathElement::new(
            vec![(px, py), (px, py + 4)],
            BLACK.stroke_width(1),
        ))
        .map_err(&e)?;
        root.draw(&Text::new(
            param_tick(&p.param_name, *param),
            (px, py + 7),
            text(12).pos(Pos::new(HPos::Center, VPos::Top)),
        ))
        .map_err(&e)?;
    }
    let (px, py) = chart.backend_coord(&((n as f64 - 1.0) / 2.0, y0));
    root.draw(&Text::new(
        format!("{} (one tick per measured value)", p.param_name),
        (px, py + 26),
        text(14).pos(Pos::new(HPos::Center, VPos::Top)),
    ))
    .map_err(&e)?;
    for (name, pts) in &p.series {
        let s = style(name);
        let c = s.color.to_rgba();
        let coords: Vec<(f64, f64)> = pts
            .iter()
            .map(|pt| (x_of(pt.param), scale.to(pt.median)))
            .collect();
        chart
            .draw_series(LineSeries::new(coords.clone(), c.stroke_width(2)))
            .map_err(&e)?;
        for (pt, &(x, y)) in pts.iter().zip(&coords) {
            if let Some((lo, hi)) = pt.band {
                let (bx, blo) = chart.backend_coord(&(x, scale.to(lo)));
                let (_, bhi) = chart.backend_coord(&(x, scale.to(hi)));
                if (blo - bhi).abs() >= 3 {
                    for seg in [
                        vec![(bx, blo), (bx, bhi)],
                        vec![(bx - 4, blo), (bx + 4, blo)],
                        vec![(bx - 4, bhi), (bx + 4, bhi)],
                    ] {
                        root.draw(&PathElement::new(seg, c.mix(0.55).stroke_width(1)))
                            .map_err(&e)?;
                    }
                }
            }
            marker(root, chart.backend_coord(&(x, y)), s, !pt.noisy)?;
        }
    }
    for (name, param, v) in &p.seeds {
        seed_mark(
            root,
            chart.backend_coord(&(x_of(*param), scale.to(*v))),
            style(name),
        )?;
    }
    Ok(())
}

fn bar_panel(root: &Area<'_>, area: &Area<'_>, p: &Panel, group: &str) -> Result<(), String> {
    let e = err(group);
    let n = p.series.len();
    let (scale, mut x0, mut x1) = value_axis(p, true);
    // Room right of the longest bar for its value.
    x1 += (x1 - x0) * 0.18;
    let targets = p.series.iter().any(|s| s.1[0].goal.is_some());
    let longest = p
        .series
        .iter()
        .map(|s| s.0.chars().count())
        .max()
        .unwrap_or(4);
    let label_w = (longest as u32 * 7 + 16).clamp(60, 330);
    if scale == Scale::Log {
        x0 = x0.min(
            scale.to(p
                .values(false)
                .iter()
                .copied()
                .filter(|v| *v > 0.0)
                .fold(f64::INFINITY, f64::min)
                / 2.0),
        );
    }
    let mut chart = ChartBuilder::on(area)
        .caption(p.title(), ("sans-serif", 17))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(label_w)
        .build_cartesian_2d(x0..x1, -0.5..(n.max(3) as f64 - 0.5))
        .map_err(&e)?;
    let x_desc = if p.series.len() == 1
        || p.series
            .iter()
            .all(|s| s.1[0].param == p.series[0].1[0].param)
    {
        format!(
            "{} ({} = {})",
            scale.label(&p.metric),
            p.param_name,
            p.series[0].1[0].param
        )
    } else {
        scale.label(&p.metric)
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc(x_desc)
        .x_labels(if scale == Scale::Log { 0 } else { 10 })
        .x_label_formatter(&|v| tick(scale.from(*v)))
        .light_line_style(WHITE.mix(0.0))
        .bold_line_style(BLACK.mix(0.08))
        .axis_desc_style(("sans-serif", 14))
        .label_style(("sans-serif", 12))
        .draw()
        .map_err(&e)?;
    if scale == Scale::Log {
        let rows = n.max(3) as f64;
        for t in log_ticks(scale.from(x0), scale.from(x1)) {
            let (px, yb) = chart.backend_coord(&(scale.to(t), -0.5));
            let (_, yt) = chart.backend_coord(&(scale.to(t), rows - 0.5));
            root.draw(&PathElement::new(vec![(px, yb), (px, yt)], BLACK.mix(0.08)))
                .map_err(&e)?;
            root.draw(&PathElement::new(vec![(px, yb), (px, yb + 5)], BLACK))
                .map_err(&e)?;
            root.draw(&Text::new(
                tick(t),
                (px, yb + 7),
                text(12).pos(Pos::new(HPos::Center, VPos::Top)),
            ))
            .map_err(&e)?;
        }
    }
    let half = if n > 10 { 0.42 } else { 0.35 };
    for (i, (name, pts)) in p.series.iter().enumerate() {
        let pt = pts[0];
        // Top to bottom in measured order, centred when there are fewer than three.
        let y = (n.max(3) - 1 - i) as f64 - (n.max(3) - n) as f64 / 2.0;
        let s = style(name);
        let color = match pt.goal.map(|g| g.judge(pt.median, pt.worst)) {
            Some(Verdict::Met) => VERDICT_MET,
            Some(Verdict::Missed) => VERDICT_MISSED,
            Some(Verdict::Reference) => VERDICT_REFERENCE,
            None => s.color,
        };
        let c = color.to_rgba();
        let v = scale.to(pt.median);
        let bar = if pt.noisy {
            c.stroke_width(2)
        } else {
            c.mix(0.85).filled()
        };
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(x0, y - half), (v, y + half)],
                bar,
            )))
            .map_err(&e)?;
        if let Some((lo, hi)) = pt.band {
            let (blo, by) = chart.backend_coord(&(scale.to(lo), y));
            let (bhi, _) = chart.backend_coord(&(scale.to(hi), y));
            if (bhi - blo).abs() >= 3 {
                for seg in [
                    vec![(blo, by), (bhi, by)],
                    vec![(blo, by - 4), (blo, by + 4)],
                    vec![(bhi, by - 4), (bhi, by + 4)],
                ] {
                    root.draw(&PathElement::new(seg, BLACK.stroke_width(1)))
                        .map_err(&e)?;
                }
            }
        }
        if let Some(g) = pt.goal {
            let (lo, hi) = g.band();
            let at = |x: f64| chart.backend_coord(&(scale.to(x), y));
            let (_, ytop) = chart.backend_coord(&(x0, y + 0.48));
            let (_, ybot) = chart.backend_coord(&(x0, y - 0.48));
            match (lo, hi) {
                (Some(a), Some(b)) if a != b => {
                    let (xa, _) = at(a);
                    let (xb, _) = at(b);
                    root.draw(&Rectangle::new(
                        [(xa, ytop), (xb.max(xa + 2), ybot)],
                        GOAL.mix(0.25).filled(),
                    ))
                    .map_err(&e)?;
                }
                (Some(x), _) | (None, Some(x)) => {
                    let (xg, _) = at(x);
                    root.draw(&PathElement::new(
                        vec![(xg, ytop), (xg, ybot)],
                        GOAL.stroke_width(3),
                    ))
                    .map_err(&e)?;
                }
                (None, None) => {}
            }
        }
        for (sname, _, sv) in p.seeds.iter().filter(|sd| &sd.0 == name) {
            seed_mark(root, chart.backend_coord(&(scale.to(*sv), y)), style(sname))?;
        }
        // The name left of the bar, the value right of it.
        let (lx, ly) = chart.backend_coord(&(x0, y));
        root.draw(&Text::new(
            name.clone(),
            (lx - 6, ly),
            text(12).pos(Pos::new(HPos::Right, VPos::Center)),
        ))
        .map_err(&e)?;
        // Right of everything drawn on the row.
        let mut right = v;
        if let Some((_, hi)) = pt.band {
            right = right.max(scale.to(hi));
        }
        if let Some(g) = pt.goal {
            let (lo, hi) = g.band();
            right = right.max(scale.to(hi.or(lo).unwrap_or(0.0)));
        }
        for (_, _, sv) in p.seeds.iter().filter(|sd| &sd.0 == name) {
            right = right.max(scale.to(*sv));
        }
        let (vx, vy) = chart.backend_coord(&(right, y));
        let mut label = crate::fmt::fmt_value(pt.median);
        if let Some(g) = pt.goal {
            label = format!("{label} {}", g.judge(pt.median, pt.worst));
        }
        root.draw(&Text::new(
            label,
            (vx + 8, vy),
            text(11).pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(&e)?;
    }
    if targets || p.metric == "ratio" {
        // Ratios: 1 is "as fast / as big as the other".
        let (xg, ytop) = chart.backend_coord(&(scale.to(1.0), n.max(3) as f64 - 0.5));
        let (_, ybot) = chart.backend_coord(&(scale.to(1.0), -0.5));
        if (x0..=x1).contains(&scale.to(1.0)) {
            root.draw(&PathElement::new(
                vec![(xg, ytop), (xg, ybot)],
                BLACK.mix(0.5).stroke_width(1),
            ))
            .map_err(&e)?;
        }
    }
    Ok(())
}

/// The figure's legend, right of the panels: every implementation of the group once,
/// then what the marks mean.
fn legend(
    area: &Area<'_>,
    top: i32,
    names: &[String],
    has: (bool, bool, bool, bool),
) -> Result<(), String> {
    let e = err("legend");
    let (seeds, goals, noisy, whiskers) = has;
    let mut y = top + 20;
    area.draw(&Text::new("Implementations", (12, y), text(15)))
        .map_err(&e)?;
    y += 26;
    for name in names {
        let s = style(name);
        area.draw(&PathElement::new(
            vec![(12, y), (40, y)],
            s.color.to_rgba().stroke_width(2),
        ))
        .map_err(&e)?;
        marker(area, (26, y), s, true)?;
        area.draw(&Text::new(
            name.clone(),
            (48, y),
            text(13).pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(&e)?;
        y += 22;
    }
    y += 12;
    let note = |area: &Area<'_>,
                draw: &dyn Fn(&Area<'_>, i32) -> Result<(), String>,
                t: &str,
                y: &mut i32|
     -> Result<(), String> {
        draw(area, *y)?;
        area.draw(&Text::new(
            t.to_owned(),
            (48, *y),
            text(12).pos(Pos::new(HPos::Left, VPos::Center)),
        ))
        .map_err(&e)?;
        *y += 22;
        Ok(())
    };
    let gray = Style {
        color: RGBColor(90, 90, 90),
        marker: Marker::Circle,
    };
    if whiskers {
        note(
            area,
            &|a, y| {
                a.draw(&PathElement::new(
                    vec![(26, y - 7), (26, y + 7)],
                    BLACK.stroke_width(1),
                ))
                .map_err(err("legend"))
            },
            "whisker: interquartile range",
            &mut y,
        )?;
    }
    if noisy {
        note(
            area,
            &|a, y| marker(a, (26, y), gray, false),
            "hollow: noisy (IQR > 10%)",
            &mut y,
        )?;
    }
    if seeds {
        note(
            area,
            &|a, y| seed_mark(a, (26, y), gray),
            "seed's published figure",
            &mut y,
        )?;
    }
    if goals {
        note(
            area,
            &|a, y| {
                a.draw(&PathElement::new(
                    vec![(26, y - 8), (26, y + 8)],
                    GOAL.stroke_width(3),
                ))
                .map_err(err("legend"))
            },
            "goal (line: limit, band: range)",
            &mut y,
        )?;
        for (c, t) in [
            (VERDICT_MET, "bar: goal met"),
            (VERDICT_MISSED, "bar: goal missed"),
            (VERDICT_REFERENCE, "bar: reference point"),
        ] {
            note(
                area,
                &|a, y| {
                    a.draw(&Rectangle::new(
                        [(14, y - 6), (38, y + 6)],
                        c.mix(0.85).filled(),
                    ))
                    .map_err(err("legend"))
                },
                t,
                &mut y,
            )?;
        }
    }
    Ok(())
}

/// Panel size in pixels.
const PANEL: (u32, u32) = (560, 400);
/// Legend column width.
const LEGEND_W: u32 = 280;

/// Draws `group`'s measurements into `dir/<group>.svg`; returns the path, or `None` if
/// the group has nothing to plot. `claims` adds the seeds' figures beside ours.
pub fn group_svg(
    dir: &Path,
    group: &str,
    results: &[Measurement],
    claims: &[Claim],
) -> Result<Option<PathBuf>, String> {
    let panels = panels(group, results, claims);
    if panels.is_empty() {
        return Ok(None);
    }
    let cols = panels.len().min(3);
    let nrows = panels.len().div_ceil(cols);
    let path = dir.join(format!("{group}.svg"));
    let target = path.clone();
    let e = err(group);
    let mut names: Vec<String> = Vec::new();
    for p in &panels {
        for (n, pts) in &p.series {
            if pts[0].goal.is_none() && !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    let legend_h = 60 + 22 * names.len() as u32 + 8 * 22;
    // The last repeated legend starts at the top of its row of panels.
    let last_legend = (nrows as u32 - 1) / 3 * 3 * PANEL.1;
    let height = (PANEL.1 * nrows as u32).max(last_legend + legend_h) + 40;
    let root =
        SVGBackend::new(&target, (PANEL.0 * cols as u32 + LEGEND_W, height)).into_drawing_area();
    root.fill(&WHITE).map_err(&e)?;
    let (head, body) = root.split_vertically(40);
    head.draw(&Text::new(
        format!("bench-suite: {group}"),
        (12, 10),
        ("sans-serif", 20).into_font().color(&BLACK),
    ))
    .map_err(&e)?;
    let (grid, side) = body.split_horizontally(PANEL.0 * cols as u32);
    let grid = grid.shrink((0, 0), (PANEL.0 * cols as u32, PANEL.1 * nrows as u32));
    let areas = grid.split_evenly((nrows, cols));
    for (p, area) in panels.iter().zip(areas.iter()) {
        if p.is_bars() {
            bar_panel(&root, area, p, group)?;
        } else {
            line_panel(&root, area, p, group)?;
        }
    }
    let has = (
        panels.iter().any(|p| !p.seeds.is_empty()),
        panels
            .iter()
            .any(|p| p.series.iter().any(|s| s.1[0].goal.is_some())),
        panels
            .iter()
            .any(|p| p.series.iter().any(|s| s.1.iter().any(|pt| pt.noisy))),
        panels.iter().any(|p| {
            p.series
                .iter()
                .any(|s| s.1.iter().any(|pt| pt.band.is_some()))
        }),
    );
    // Repeated every three rows of panels, so a tall figure has one in view.
    for k in (0..nrows).step_by(3) {
        legend(&side, (k as u32 * PANEL.1) as i32, &names, has)?;
    }
    root.present().map_err(&e)?;
    Ok(Some(path))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Stats;

    #[test]
    fn log_scale_only_for_wide_positive_ranges() {
        assert_eq!(Scale::choose([100.0, 1e6].into_iter(), 16.0), Scale::Log);
        assert_eq!(Scale::choose([0.0, 1e6].into_iter(), 16.0), Scale::Linear);
        assert_eq!(Scale::choose([8.0, 64.0].into_iter(), 16.0), Scale::Linear);
    }

    #[test]
    fn every_implementation_keeps_its_style_and_ours_are_blue() {
        assert_eq!(style("SkipMap"), style("SkipMap"));
        assert_ne!(style("SkipMap").color, style("BTreeMap").color);
        for ours in [
            "LeanString",
            "LeanStr",
            "LeanCString",
            "LeanString (forced wide)",
        ] {
            let RGBColor(r, g, b) = style(ours).color;
            assert!(b > r && b > g, "{ours} is not blue");
        }
        let peers = [
            "lean_string 0.7",
            "compact_str",
            "smol_str",
            "ecow",
            "arcstr",
            "Arc<str>",
            "String",
        ];
        for (i, a) in peers.iter().enumerate() {
            for b in &peers[i + 1..] {
                assert_ne!(style(a).color, style(b).color, "{a} and {b}");
            }
        }
        assert_eq!(style("an unknown one"), style("an unknown one"));
        let RGBColor(r, g, b) = style("LeanString (a new variant)").color;
        assert!(b > r && b > g, "a new variant of ours is not blue");
    }

    #[test]
    fn log_ticks_are_round_numbers() {
        assert_eq!(
            log_ticks(3.0, 600.0),
            vec![5.0, 10.0, 20.0, 50.0, 100.0, 200.0, 500.0]
        );
        assert_eq!(
            log_ticks(0.5, 1e6),
            vec![1.0, 10.0, 100.0, 1e3, 1e4, 1e5, 1e6]
        );
        assert_eq!(log_ticks(1.2, 4.0), vec![1.5, 2.0, 3.0]);
    }

    #[test]
    fn byte_sizes_tick_in_binary_units() {
        assert_eq!(param_tick("bytes", 64), "64");
        assert_eq!(param_tick("bytes", 64 << 10), "64K");
        assert_eq!(param_tick("bytes", (128 << 10) + 1), "128K+1");
        assert_eq!(param_tick("bytes", 1 << 20), "1M");
        assert_eq!(param_tick("keys", 100_000), "100k");
    }

    #[test]
    fn ticks_are_short() {
        assert_eq!(tick(1_000_000.0), "1M");
        assert_eq!(tick(100_000.0), "100k");
        assert_eq!(tick(1500.0), "1.5k");
        assert_eq!(tick(2.0), "2");
    }

    fn m(op: &str, imp: &str, param_name: &str, p: u64, v: f64) -> Measurement {
        Measurement {
            group: "g".into(),
            operation: op.into(),
            implementation: imp.into(),
            param_name: param_name.into(),
            param: p,
            metric: "ns/op".into(),
            lower_is_better: true,
            instrument: Instrument::Time,
            stats: Stats::exact(v),
            baseline: None,
            ops: None,
            goal: None,
        }
    }

    #[test]
    fn writes_lines_bars_seeds_and_a_legend() {
        let mut noisy = m("get", "B", "keys", 1_000_000, 0.0);
        noisy.stats = Stats::of(&[70.0, 80.0, 90.0, 100.0, 120.0]);
        let mut target = m("target", "t: A / B (ns/op)", "lengths", 5, 0.0);
        target.metric = "ratio".into();
        target.stats = Stats {
            max: 1.2,
            ..Stats::exact(1.077)
        };
        target.goal = Some(Goal::AtMost(1.0));
        let rows = vec![
            m("get", "A", "keys", 100, 5.0),
            m("get", "A", "keys", 1_000_000, 50.0),
            m("get", "B", "keys", 100, 7.0),
            noisy,
            m("loop", "A", "threads", 1, 3.0),
            m("loop", "B", "threads", 1, 4.0),
            target,
        ];
        let claims = [Claim {
            group: "g",
            operation: "get",
            param: 100,
            metric: "ns/op",
            ours: Ours::Value {
                implementation: "A",
                scale: 1.0,
            },
            seed: 78.7,
            unit: "ns",
            what: "",
            note: "",
        }];
        let ps = panels("g", &rows, &claims);
        assert_eq!(ps.len(), 3);
        assert!(!ps[0].is_bars() && ps[1].is_bars() && ps[2].is_bars());
        assert_eq!(ps[0].seeds, vec![("A".to_owned(), 100, 78.7)]);
        assert!(ps[0].series[1].1[1].noisy);
        let dir = std::env::temp_dir().join(format!("bench-suite-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = group_svg(&dir, "g", &rows, &claims).unwrap().unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        if let Ok(keep) = std::env::var("BENCH_SUITE_KEEP_PLOT") {
            std::fs::copy(&p, keep).unwrap();
        }
        for want in [
            "get: ns/op (lower is better)",
            "loop: ns/op (lower is better)",
            "keys (one tick per measured value)",
            "\n100\n",
            "\n1M\n",
            "ns/op (threads = 1)",
            "1.08 MISSED",
            "seed&apos;s published figure",
            "hollow: noisy",
            "\nA\n",
            "\nB\n",
        ] {
            assert!(svg.contains(want), "missing {want}");
        }
        assert!(group_svg(&dir, "empty", &rows, &claims).unwrap().is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
