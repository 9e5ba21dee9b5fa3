//! What every chart of a report shares: its size, font and colors, the
//! frame (caption, margins, axis areas), the mesh's style, the legend's
//! box, the axes' labels, and a legend in a panel of its own. Owns the
//! look; must not decide what a chart plots.

use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, ValueFormatter};
use plotters::coord::CoordTranslate;
use plotters::prelude::*;

use crate::report::markdown::fmt_ms;
use crate::report::model::Percentiles;

pub(crate) const W: u32 = 960;
pub(crate) const H: u32 = 420;

pub(crate) const FONT: &str = "sans-serif";
pub(crate) const P50: RGBColor = RGBColor(31, 119, 180);
pub(crate) const P95: RGBColor = RGBColor(44, 160, 44);
pub(crate) const P99: RGBColor = RGBColor(255, 127, 14);
pub(crate) const P999: RGBColor = RGBColor(214, 39, 40);
pub(crate) const GRAY: RGBColor = RGBColor(150, 150, 150);
pub(crate) const LIGHT: RGBColor = RGBColor(238, 238, 238);
pub(crate) const FLUSH: RGBColor = RGBColor(23, 190, 207);
pub(crate) const COMPACTION: RGBColor = RGBColor(148, 103, 189);
pub(crate) const STALL: RGBColor = RGBColor(214, 39, 40);
pub(crate) const THROUGHPUT: RGBColor = RGBColor(44, 160, 44);
pub(crate) const FAULT: RGBColor = RGBColor(197, 27, 125);
pub(crate) const AVAILABLE: RGBColor = RGBColor(31, 119, 180);
/// The nodes' lines, in turn (no red or magenta: those mark stalls and
/// faults).
pub(crate) const NODES: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(23, 190, 207),
    RGBColor(188, 189, 34),
    RGBColor(127, 127, 127),
];

pub(crate) type Res<T> = Result<T, String>;

pub(crate) fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("chart: {e:?}")
}

/// Draw into an SVG string of the standard size.
pub(crate) fn svg(
    draw: impl FnOnce(DrawingArea<SVGBackend, plotters::coord::Shift>) -> Res<()>,
) -> Res<String> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (W, H)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        draw(root.clone())?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}

/// Bounds of a log axis of milliseconds holding `values`: whole decades,
/// so every decade line is labelled.
pub(crate) fn log_bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (mut lo, mut hi) = (f64::INFINITY, 0.0f64);
    for v in values.filter(|v| v.is_finite() && *v > 0.0) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if hi <= 0.0 {
        return (0.01, 10.0);
    }
    let lo = 10f64.powf((lo / 1.2).log10().floor());
    let hi = 10f64.powf((hi * 1.2).log10().ceil());
    (lo, hi)
}

pub(crate) fn ms_label(v: &f64) -> String {
    fmt_ms(*v)
}

pub(crate) fn rate_label(v: &f64) -> String {
    if *v >= 10_000.0 {
        format!("{:.0}k", v / 1000.0)
    } else if *v >= 1000.0 {
        format!("{:.1}k", v / 1000.0)
    } else {
        format!("{v:.0}")
    }
}

/// An x axis of `n` categories, 0..n, labelled at their centers.
pub(crate) struct Centers(pub(crate) usize);

impl Ranged for Centers {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;
    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = v / self.0 as f64;
        limit.0 + (f * (limit.1 - limit.0) as f64).round() as i32
    }
    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        (0..self.0).map(|i| i as f64 + 0.5).collect()
    }
    fn range(&self) -> std::ops::Range<f64> {
        0.0..self.0 as f64
    }
}

impl ValueFormatter<f64> for Centers {
    fn format(v: &f64) -> String {
        format!("{v}")
    }
}

pub(crate) type Pick = fn(&Percentiles) -> f64;
pub(crate) const LINES: [(&str, RGBColor, Pick); 4] = [
    ("p50", P50, |p| p.p50_ms),
    ("p95", P95, |p| p.p95_ms),
    ("p99", P99, |p| p.p99_ms),
    ("p99.9", P999, |p| p.p999_ms),
];

/// What a legend entry looks like.
pub(crate) enum Mark {
    Line(RGBColor, u32),
    Dot(RGBColor),
    /// A shaded band with a line at its left edge (a fault).
    Band(RGBColor),
}

/// A legend drawn in its own panel beside a chart, where it hides no data.
pub(crate) fn side_legend(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    entries: &[(String, Mark)],
) -> Res<()> {
    for (k, (label, mark)) in entries.iter().enumerate() {
        let y = 60 + 22 * k as i32;
        match mark {
            Mark::Line(c, w) => area
                .draw(&PathElement::new(vec![(8, y), (30, y)], c.stroke_width(*w)))
                .map_err(err)?,
            Mark::Dot(c) => area
                .draw(&Circle::new((19, y), 5, c.filled()))
                .map_err(err)?,
            Mark::Band(c) => {
                area.draw(&Rectangle::new(
                    [(8, y - 7), (30, y + 7)],
                    c.mix(0.15).filled(),
                ))
                .map_err(err)?;
                area.draw(&PathElement::new(
                    vec![(8, y - 7), (8, y + 7)],
                    c.stroke_width(2),
                ))
                .map_err(err)?
            }
        }
        area.draw(&Text::new(
            label.clone(),
            (38, y - 7),
            (FONT, 14).into_font().color(&BLACK),
        ))
        .map_err(err)?;
    }
    Ok(())
}

/// What lies right of a chart's plot: a margin for the last label of the
/// x axis, or a second y axis.
pub(crate) enum Right {
    Margin,
    Axis,
    Nothing,
}

/// The frame of a chart: its caption and the margins and axis areas every
/// chart shares.
pub(crate) fn frame<'m, 'a, 'b, DB: DrawingBackend>(
    b: &'m mut ChartBuilder<'a, 'b, DB>,
    caption: impl AsRef<str>,
    right: Right,
) -> &'m mut ChartBuilder<'a, 'b, DB> {
    b.caption(caption, (FONT, 20))
        .margin(12)
        .x_label_area_size(44)
        .y_label_area_size(72);
    match right {
        Right::Margin => b.margin_right(36),
        Right::Axis => b.right_y_label_area_size(72),
        Right::Nothing => b,
    }
}

/// The mesh's style every chart shares (light lines, label fonts).
pub(crate) fn mesh<'m, 'a, 'b, X: Ranged, Y: Ranged, DB: DrawingBackend>(
    m: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB> {
    m.light_line_style(LIGHT)
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 14))
}

/// The series' legend in a pale box at `at`, its labels of `size` points.
pub(crate) fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    c: &mut ChartContext<'a, DB, CT>,
    at: SeriesLabelPosition,
    size: u32,
) -> Res<()> {
    c.configure_series_labels()
        .position(at)
        .background_style(WHITE.mix(0.85))
        .border_style(GRAY)
        .label_font((FONT, size))
        .draw()
        .map_err(err)
}
