//! One SVG per group: a panel per table (operation and metric), the parameter on the x
//! axis, one line per implementation. Axes switch to a log scale when the values span
//! more than a decade or two.

use std::path::{Path, PathBuf};

use plotters::prelude::*;

use crate::measure::Measurement;

/// Distinct, print-friendly line colours (Tableau 10).
const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

/// Metrics not worth a panel (their tables are in the report).
const UNPLOTTED: [&str; 2] = ["allocs/item", "requested B/item"];

/// One line of a panel: an implementation's (param, value) points.
type Series = (String, Vec<(f64, f64)>);

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
            Scale::Log => v.log10(),
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

fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.3}M", v / 1e6)
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_owned()
            + ""
    } else if a >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        crate::fmt::fmt_value(v)
    }
}

/// The panels of a group: (title, x name, metric, lower is better, series).
fn panels(rows: &[&Measurement]) -> Vec<(String, String, String, Vec<Series>)> {
    let mut out: Vec<(String, String, String, Vec<Series>)> = Vec::new();
    for m in rows {
        let title = m.operation.clone();
        let idx = match out.iter().position(|p| p.0 == title && p.2 == m.metric) {
            Some(i) => i,
            None => {
                out.push((title, m.param_name.clone(), m.metric.clone(), Vec::new()));
                out.len() - 1
            }
        };
        let series = &mut out[idx].3;
        let s = match series.iter().position(|s| s.0 == m.implementation) {
            Some(i) => i,
            None => {
                series.push((m.implementation.clone(), Vec::new()));
                series.len() - 1
            }
        };
        series[s].1.push((m.param as f64, m.stats.median));
    }
    out
}

/// Draws `group`'s measurements into `dir/<group>.svg`; returns the path, or `None` if
/// the group has nothing to plot.
pub fn group_svg(
    dir: &Path,
    group: &str,
    results: &[Measurement],
) -> Result<Option<PathBuf>, String> {
    let rows: Vec<&Measurement> = results
        .iter()
        .filter(|m| {
            m.group == group && m.stats.samples > 0 && !UNPLOTTED.contains(&m.metric.as_str())
        })
        .collect();
    let panels = panels(&rows);
    if panels.is_empty() {
        return Ok(None);
    }
    let cols = panels.len().min(3);
    let nrows = panels.len().div_ceil(cols);
    let path = dir.join(format!("{group}.svg"));
    let target = path.clone();
    let root =
        SVGBackend::new(&target, (520 * cols as u32, 380 * nrows as u32)).into_drawing_area();
    let err = |e: &dyn std::fmt::Display| format!("plot {group}: {e}");
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let areas = root.split_evenly((nrows, cols));
    for ((title, xname, metric, series), area) in panels.iter().zip(areas.iter()) {
        let xs = series.iter().flat_map(|s| s.1.iter().map(|p| p.0));
        let ys = series.iter().flat_map(|s| s.1.iter().map(|p| p.1));
        let (xscale, yscale) = (
            Scale::choose(xs.clone(), 16.0),
            Scale::choose(ys.clone(), 30.0),
        );
        let (mut x0, mut x1) = minmax(xs.map(|x| xscale.to(x)));
        let (mut y0, mut y1) = minmax(ys.map(|y| yscale.to(y)));
        pad(&mut x0, &mut x1, 0.03);
        pad(&mut y0, &mut y1, 0.08);
        if yscale == Scale::Linear && y0 > 0.0 {
            y0 = 0.0;
        }
        let mut chart = ChartBuilder::on(area)
            .caption(format!("{group}: {title} ({metric})"), ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(x0..x1, y0..y1)
            .map_err(|e| err(&e))?;
        chart
            .configure_mesh()
            .x_desc(xscale.label(xname))
            .y_desc(yscale.label(metric))
            .x_label_formatter(&|v| tick(xscale.from(*v)))
            .y_label_formatter(&|v| tick(yscale.from(*v)))
            .light_line_style(WHITE.mix(0.0))
            .draw()
            .map_err(|e| err(&e))?;
        for (i, (name, points)) in series.iter().enumerate() {
            let color = PALETTE[i % PALETTE.len()].to_rgba();
            let pts: Vec<(f64, f64)> = points
                .iter()
                .map(|&(x, y)| (xscale.to(x), yscale.to(y)))
                .collect();
            chart
                .draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(|e| err(&e))?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                });
            chart
                .draw_series(pts.iter().map(|&p| Circle::new(p, 3, color.filled())))
                .map_err(|e| err(&e))?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK.mix(0.4))
            .label_font(("sans-serif", 12))
            .draw()
            .map_err(|e| err(&e))?;
    }
    root.present().map_err(|e| err(&e))?;
    Ok(Some(path))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Instrument, Stats};

    #[test]
    fn log_scale_only_for_wide_positive_ranges() {
        assert_eq!(Scale::choose([100.0, 1e6].into_iter(), 16.0), Scale::Log);
        assert_eq!(Scale::choose([0.0, 1e6].into_iter(), 16.0), Scale::Linear);
        assert_eq!(Scale::choose([8.0, 64.0].into_iter(), 16.0), Scale::Linear);
    }

    #[test]
    fn writes_an_svg_with_axes_and_legend() {
        let m = |imp: &str, p: u64, v: f64| Measurement {
            group: "g".into(),
            operation: "get".into(),
            implementation: imp.into(),
            param_name: "keys".into(),
            param: p,
            metric: "ns/op".into(),
            lower_is_better: true,
            instrument: Instrument::Time,
            stats: Stats::exact(v),
            baseline: None,
            ops: None,
        };
        let rows = vec![
            m("A", 100, 5.0),
            m("A", 1_000_000, 50.0),
            m("B", 100, 7.0),
            m("B", 1_000_000, 90.0),
        ];
        let dir = std::env::temp_dir().join(format!("bench-suite-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = group_svg(&dir, "g", &rows).unwrap().unwrap();
        let svg = std::fs::read_to_string(&p).unwrap();
        for want in [
            "keys (log scale)",
            "ns/op",
            "g: get (ns/op)",
            "\nA\n",
            "\nB\n",
        ] {
            assert!(svg.contains(want), "missing {want}");
        }
        assert!(group_svg(&dir, "empty", &rows).unwrap().is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
