//! The report's charts, drawn with plotters into SVG strings: latency
//! percentiles against offered rate, achieved against offered rate, latency
//! and throughput over time with server events, availability over time,
//! each node's p99 over time (several nodes), and the percentile spectrum;
//! every chart over time marks the faults injected (a sweep's evidence is
//! drawn by `evidence.rs`, with these helpers). Owns the drawing only;
//! must not compute statistics beyond picking what to plot, nor write files
//! or HTML around the SVG.

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, ValueFormatter};
use plotters::coord::CoordTranslate;
use plotters::prelude::*;

use super::markdown::{fmt_ms, offered};
use super::model::{FaultMark, Percentiles, Report, RunKind, Second, ServerSample, Trial};

/// One chart: an id for its `<figure>`, a caption, the SVG.
pub struct Chart {
    pub id: &'static str,
    pub caption: String,
    pub svg: String,
}

pub(crate) const W: u32 = 960;
pub(crate) const H: u32 = 420;
/// The spectrum chart shows at most this many trials.
pub const MAX_SPECTRUM_TRIALS: usize = 8;

pub(crate) const FONT: &str = "sans-serif";
const P50: RGBColor = RGBColor(31, 119, 180);
const P95: RGBColor = RGBColor(44, 160, 44);
const P99: RGBColor = RGBColor(255, 127, 14);
const P999: RGBColor = RGBColor(214, 39, 40);
pub(crate) const GRAY: RGBColor = RGBColor(150, 150, 150);
pub(crate) const LIGHT: RGBColor = RGBColor(238, 238, 238);
const FLUSH: RGBColor = RGBColor(23, 190, 207);
const COMPACTION: RGBColor = RGBColor(148, 103, 189);
const STALL: RGBColor = RGBColor(214, 39, 40);
const THROUGHPUT: RGBColor = RGBColor(44, 160, 44);
const FAULT: RGBColor = RGBColor(197, 27, 125);
const AVAILABLE: RGBColor = RGBColor(31, 119, 180);
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

/// All the charts of a report, in the order the page shows them: the
/// availability chart when there are seconds, the per-node one when the
/// seconds are split over nodes.
pub fn all(r: &Report) -> Res<Vec<Chart>> {
    let mut out = vec![latency_vs_rate(r)?, achieved_vs_offered(r)?, over_time(r)?];
    if r.trials.iter().any(|t| !t.timeline.is_empty()) {
        out.push(availability(r)?);
    }
    if r.node_seconds() > 0 {
        out.push(node_latency(r)?);
    }
    out.push(spectrum(r)?);
    Ok(out)
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
fn log_bounds(values: impl Iterator<Item = f64>) -> (f64, f64) {
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

fn ms_label(v: &f64) -> String {
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
struct Centers(usize);

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

type Pick = fn(&Percentiles) -> f64;
const LINES: [(&str, RGBColor, Pick); 4] = [
    ("p50", P50, |p| p.p50_ms),
    ("p95", P95, |p| p.p95_ms),
    ("p99", P99, |p| p.p99_ms),
    ("p99.9", P999, |p| p.p999_ms),
];

/// (a) Latency percentiles against offered rate (a sweep), or per
/// operation bars (a single trial, or a closed loop without rates).
fn latency_vs_rate(r: &Report) -> Res<Chart> {
    // A sweep runs its rates out of order (doubling, then bisecting); the
    // lines join them in order of rate.
    let mut rated: Vec<&Trial> = r
        .trials
        .iter()
        .filter(|t| t.offered_rate.is_some())
        .collect();
    rated.sort_by(|a, b| {
        a.offered_rate
            .partial_cmp(&b.offered_rate)
            .expect("rates are numbers")
    });
    if r.kind == RunKind::Sweep && rated.len() >= 2 {
        let xs = rated.iter().filter_map(|t| t.offered_rate);
        let x_hi = xs.fold(0.0f64, f64::max) * 1.05;
        let (lo, hi) = log_bounds(rated.iter().flat_map(|t| {
            let l = t.latency;
            LINES.iter().map(move |(_, _, f)| f(&l))
        }));
        let svg = svg(|root| {
            let mut c = ChartBuilder::on(&root)
                .caption("Latency against offered rate", (FONT, 20))
                .margin(12)
                .margin_right(36)
                .x_label_area_size(44)
                .y_label_area_size(72)
                .build_cartesian_2d(0.0..x_hi, (lo..hi).log_scale())
                .map_err(err)?;
            c.configure_mesh()
                .light_line_style(LIGHT)
                .label_style((FONT, 13))
                .axis_desc_style((FONT, 14))
                .x_desc("offered rate (req/s)")
                .y_desc("latency")
                .x_label_formatter(&rate_label)
                .y_label_formatter(&ms_label)
                .draw()
                .map_err(err)?;
            for (name, color, f) in LINES {
                let pts: Vec<(f64, f64)> = rated
                    .iter()
                    .map(|t| (t.offered_rate.unwrap_or(0.0), f(&t.latency).max(lo)))
                    .collect();
                c.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                    .map_err(err)?
                    .label(name)
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                    });
                c.draw_series(pts.into_iter().map(|p| Circle::new(p, 3, color.filled())))
                    .map_err(err)?;
            }
            if let Some(bp) = r.breaking_point {
                c.draw_series(std::iter::once(PathElement::new(
                    vec![(bp, lo), (bp, hi)],
                    BLACK.stroke_width(1),
                )))
                .map_err(err)?
                .label(format!("breaking point {}", rate_label(&bp)))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
            }
            c.configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(GRAY)
                .label_font((FONT, 14))
                .draw()
                .map_err(err)
        })?;
        return Ok(Chart {
            id: "latency-vs-rate",
            caption: "Latency percentiles (p50, p95, p99, p99.9) at each offered rate. \
                      Where the lines turn up, the node has begun to queue."
                .into(),
            svg,
        });
    }
    // One trial: percentiles per operation, as bars.
    let t = r.trials.first();
    let mut ops: Vec<(String, Percentiles)> = t
        .map(|t| t.per_op.iter().map(|o| (o.op.clone(), o.latency)).collect())
        .unwrap_or_default();
    if let Some(t) = t {
        ops.push(("all".into(), t.latency));
    }
    let n = ops.len().max(1);
    let (lo, hi) = log_bounds(
        ops.iter()
            .flat_map(|(_, l)| LINES.iter().map(move |(_, _, f)| f(l))),
    );
    let names: Vec<String> = ops.iter().map(|(o, _)| o.clone()).collect();
    let svg = svg(|root| {
        let mut c = ChartBuilder::on(&root)
            .caption("Latency percentiles per operation", (FONT, 20))
            .margin(12)
            .margin_right(36)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(Centers(n), (lo..hi).log_scale())
            .map_err(err)?;
        let op_label = |v: &f64| {
            names
                .get(v.floor().max(0.0) as usize)
                .cloned()
                .unwrap_or_default()
        };
        c.configure_mesh()
            .light_line_style(LIGHT)
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .disable_x_mesh()
            .x_desc("operation")
            .y_desc("latency")
            .x_label_formatter(&op_label)
            .y_label_formatter(&ms_label)
            .draw()
            .map_err(err)?;
        for (j, (name, color, f)) in LINES.into_iter().enumerate() {
            let bars = ops.iter().enumerate().map(|(i, (_, l))| {
                let x0 = i as f64 + 0.1 + 0.2 * j as f64;
                Rectangle::new([(x0, lo), (x0 + 0.18, f(l).max(lo))], color.filled())
            });
            c.draw_series(bars)
                .map_err(err)?
                .label(name)
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                });
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(GRAY)
            .label_font((FONT, 14))
            .draw()
            .map_err(err)
    })?;
    Ok(Chart {
        id: "latency-vs-rate",
        caption: "A single trial: latency percentiles (p50, p95, p99, p99.9) per operation \
                  and for all operations together. A sweep plots them against offered rate."
            .into(),
        svg,
    })
}

/// (b) Achieved against offered rate, with the line y = x on which a node
/// that keeps up lies. Closed loop: achieved rate against clients.
fn achieved_vs_offered(r: &Report) -> Res<Chart> {
    let open = r.trials.iter().any(|t| t.offered_rate.is_some());
    let pts: Vec<(f64, f64)> = r
        .trials
        .iter()
        .filter_map(|t| {
            let x = if open {
                t.offered_rate?
            } else {
                t.clients? as f64
            };
            Some((x, t.achieved_rate))
        })
        .collect();
    let mut pts = pts;
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    let x_hi = pts.iter().map(|p| p.0).fold(1.0f64, f64::max) * 1.1;
    let y_hi = pts
        .iter()
        .map(|p| p.1)
        .fold(if open { x_hi } else { 1.0 }, f64::max)
        * 1.05;
    let svg = svg(|root| {
        let mut c = ChartBuilder::on(&root)
            .caption(
                if open {
                    "Achieved against offered rate"
                } else {
                    "Achieved rate against clients"
                },
                (FONT, 20),
            )
            .margin(12)
            .margin_right(36)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..x_hi, 0.0..y_hi)
            .map_err(err)?;
        c.configure_mesh()
            .light_line_style(LIGHT)
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .x_desc(if open {
                "offered rate (req/s)"
            } else {
                "closed-loop clients"
            })
            .y_desc("achieved rate (req/s)")
            .x_label_formatter(&rate_label)
            .y_label_formatter(&rate_label)
            .draw()
            .map_err(err)?;
        if open {
            c.draw_series(DashedLineSeries::new(
                vec![(0.0, 0.0), (x_hi, x_hi)],
                6,
                4,
                GRAY.stroke_width(1),
            ))
            .map_err(err)?
            .label("y = x (keeps up)")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], GRAY));
        }
        c.draw_series(LineSeries::new(pts.clone(), P50.stroke_width(2)))
            .map_err(err)?
            .label("achieved")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], P50.stroke_width(2)));
        c.draw_series(pts.iter().map(|p| Circle::new(*p, 4, P50.filled())))
            .map_err(err)?;
        c.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(GRAY)
            .label_font((FONT, 14))
            .draw()
            .map_err(err)
    })?;
    Ok(Chart {
        id: "achieved-vs-offered",
        caption: if open {
            "Achieved rate against offered rate. Points below the dashed line y = x are \
             rates the node (or the generator) could not keep up with."
        } else {
            "Achieved rate against the number of closed-loop clients."
        }
        .into(),
        svg,
    })
}

/// What a legend entry looks like.
enum Mark {
    Line(RGBColor, u32),
    Dot(RGBColor),
    /// A shaded band with a line at its left edge (a fault).
    Band(RGBColor),
}

/// A legend drawn in its own panel beside a chart, where it hides no data.
fn side_legend(
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

/// The right end of a time axis: the run's end, or a fault's if later.
fn time_hi(r: &Report) -> f64 {
    r.faults
        .iter()
        .flat_map(|f| [Some(f.at_s), f.until_s])
        .flatten()
        .map(|t| t + 1.0)
        .fold(r.end_s().max(1.0), f64::max)
}

/// Mark each fault on a chart over time (x in seconds since the run
/// started, up to `x_hi`; y from `y_lo` to `y_hi`): a line where it was injected, a
/// shaded band until it was undone, and its spec as given, written near
/// the bottom (staggered over three rows so close faults stay legible).
fn draw_faults<CT>(
    c: &mut ChartContext<'_, SVGBackend<'_>, CT>,
    faults: &[FaultMark],
    x_hi: f64,
    y_lo: f64,
    y_hi: f64,
) -> Res<()>
where
    CT: CoordTranslate<From = (f64, f64)>,
{
    c.draw_series(faults.iter().filter_map(|f| {
        let u = f.until_s.filter(|u| *u > f.at_s)?;
        Some(Rectangle::new(
            [(f.at_s, y_lo), (u, y_hi)],
            FAULT.mix(0.12).filled(),
        ))
    }))
    .map_err(err)?;
    c.draw_series(
        faults
            .iter()
            .map(|f| PathElement::new(vec![(f.at_s, y_lo), (f.at_s, y_hi)], FAULT.stroke_width(2))),
    )
    .map_err(err)?;
    // Each label on a pale box, so it stays legible over the lines.
    let style = (FONT, 13).into_font().color(&FAULT);
    c.draw_series(faults.iter().enumerate().map(|(k, f)| {
        let y = -20 - 17 * (k % 3) as i32;
        let w = 6 * f.spec.chars().count() as i32 + 8;
        // Right of its line, or left of it near the right edge.
        let x = if f.at_s > 0.85 * x_hi { -w - 2 } else { 2 };
        EmptyElement::at((f.at_s, y_lo))
            + Rectangle::new([(x, y - 1), (x + w, y + 15)], WHITE.mix(0.8).filled())
            + Text::new(f.spec.clone(), (x + 3, y), style.clone())
    }))
    .map_err(err)?;
    Ok(())
}

/// The legend entry for the faults, if any.
fn fault_legend(r: &Report) -> Option<(String, Mark)> {
    (!r.faults.is_empty()).then(|| (format!("fault ({})", r.faults.len()), Mark::Band(FAULT)))
}

/// What the fault marks are, for a caption (empty without faults).
fn fault_caption(r: &Report) -> &'static str {
    if r.faults.is_empty() {
        ""
    } else {
        " Faults are marked in magenta: a line where each was injected, shaded until it was \
         undone, labelled with the fault as given."
    }
}

/// Points split where `None` interrupts them, so a line does not bridge
/// seconds without data.
fn segments(points: impl Iterator<Item = Option<(f64, f64)>>) -> Vec<Vec<(f64, f64)>> {
    let mut out: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    for p in points {
        match p {
            Some(p) => out.last_mut().expect("never empty").push(p),
            None if out.last().is_some_and(|s| !s.is_empty()) => out.push(Vec::new()),
            None => {}
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// (c) Latency per second (p50, p99) and throughput over the run, with the
/// node's flushes, compactions and stalls marked, trial boundaries, and
/// faults.
fn over_time(r: &Report) -> Res<Chart> {
    let seconds: Vec<_> = r.trials.iter().flat_map(|t| t.timeline.iter()).collect();
    let samples: Vec<_> = r.trials.iter().flat_map(|t| t.server.iter()).collect();
    let t_hi = time_hi(r);
    let (lo, hi) = log_bounds(seconds.iter().flat_map(|s| [s.p50_ms, s.p99_ms]));
    // Headroom above the data for the event markers.
    let top = hi * (hi / lo).powf(0.12);
    let rate_hi = seconds
        .iter()
        .map(|s| s.requests as f64)
        .fold(1.0f64, f64::max)
        * 1.15;
    type Field = fn(&ServerSample) -> Option<f64>;
    let events: [(&str, RGBColor, Field, f64); 3] = [
        ("flush", FLUSH, |s| s.flushes, 0.97),
        ("compaction", COMPACTION, |s| s.compactions, 0.92),
        ("stall", STALL, |s| s.stalls, 0.87),
    ];
    let svg = svg(|root| {
        let (plot, side) = root.split_horizontally(W - 190);
        let mut legend: Vec<(String, Mark)> = vec![
            ("p50".into(), Mark::Line(P50, 2)),
            ("p99".into(), Mark::Line(P99, 2)),
            ("throughput (right)".into(), Mark::Line(THROUGHPUT, 2)),
        ];
        let mut c = ChartBuilder::on(&plot)
            .caption("Latency and throughput over time", (FONT, 20))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .right_y_label_area_size(72)
            .build_cartesian_2d(0.0..t_hi, (lo..top).log_scale())
            .map_err(err)?
            .set_secondary_coord(0.0..t_hi, 0.0..rate_hi);
        c.configure_mesh()
            .light_line_style(LIGHT)
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .x_desc("time since the run started (s)")
            .y_desc("latency per second")
            .y_label_formatter(&ms_label)
            .draw()
            .map_err(err)?;
        c.configure_secondary_axes()
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .y_desc("throughput (req/s)")
            .y_label_formatter(&rate_label)
            .draw()
            .map_err(err)?;
        draw_boundaries(&mut c, r, lo, top, &mut legend)?;
        draw_faults(&mut c, &r.faults, t_hi, lo, top)?;
        legend.extend(fault_legend(r));
        // Server events: a faint line down from a dot at each sample whose
        // delta is > 0; each kind has its own row at the top.
        for (name, color, f, row) in events {
            let at: Vec<f64> = samples
                .iter()
                .filter(|s| f(s).is_some_and(|v| v > 0.0))
                .map(|s| s.t_s)
                .collect();
            if at.is_empty() {
                continue;
            }
            let head = lo * (top / lo).powf(row);
            let line = if name == "stall" {
                color.mix(0.5).stroke_width(2)
            } else {
                color.mix(0.25).stroke_width(1)
            };
            c.draw_series(
                at.iter()
                    .map(|&x| PathElement::new(vec![(x, lo), (x, head)], line)),
            )
            .map_err(err)?;
            c.draw_series(
                at.iter()
                    .map(|&x| Circle::new((x, head), 4, color.filled())),
            )
            .map_err(err)?;
            legend.push((format!("{name} ({})", at.len()), Mark::Dot(color)));
        }
        for t in &r.trials {
            let pts = |f: fn(&Second) -> f64| -> Vec<(f64, f64)> {
                t.timeline
                    .iter()
                    .map(|s| (s.t_s + 0.5, f(s).max(lo)))
                    .collect()
            };
            c.draw_series(LineSeries::new(pts(|s| s.p50_ms), P50.stroke_width(2)))
                .map_err(err)?;
            c.draw_series(LineSeries::new(pts(|s| s.p99_ms), P99.stroke_width(2)))
                .map_err(err)?;
            let thr: Vec<(f64, f64)> = t
                .timeline
                .iter()
                .map(|s| (s.t_s + 0.5, s.requests as f64))
                .collect();
            c.draw_secondary_series(LineSeries::new(thr, THROUGHPUT.mix(0.8).stroke_width(2)))
                .map_err(err)?;
        }
        side_legend(&side, &legend)
    })?;
    let caption = if samples.is_empty() {
        "p50 and p99 latency of each second (left, log scale) and requests per second \
         (right). No server metrics were sampled, so flushes, compactions and stalls \
         are not marked."
    } else {
        "p50 and p99 latency of each second (left, log scale) and requests per second \
         (right); dots and lines mark seconds in which the node flushed a memtable, \
         compacted or stalled writes; gray lines separate trials."
    };
    Ok(Chart {
        id: "over-time",
        caption: format!("{caption}{}", fault_caption(r)),
        svg,
    })
}

/// Gray lines between trials on a chart over time, and their legend entry.
fn draw_boundaries<CT>(
    c: &mut ChartContext<'_, SVGBackend<'_>, CT>,
    r: &Report,
    y_lo: f64,
    y_hi: f64,
    legend: &mut Vec<(String, Mark)>,
) -> Res<()>
where
    CT: CoordTranslate<From = (f64, f64)>,
{
    let bounds: Vec<f64> = r.trials.iter().skip(1).map(|t| t.started_s).collect();
    if bounds.is_empty() {
        return Ok(());
    }
    c.draw_series(
        bounds
            .iter()
            .map(|&x| PathElement::new(vec![(x, y_lo), (x, y_hi)], GRAY.stroke_width(1))),
    )
    .map_err(err)?;
    legend.push(("trial boundary".into(), Mark::Line(GRAY, 1)));
    Ok(())
}

/// Draw `segments` as lines of `color`, a dot for a segment of one point.
fn draw_segments<CT>(
    c: &mut ChartContext<'_, SVGBackend<'_>, CT>,
    segments: Vec<Vec<(f64, f64)>>,
    color: RGBColor,
) -> Res<()>
where
    CT: CoordTranslate<From = (f64, f64)>,
{
    for seg in segments {
        if let [p] = seg.as_slice() {
            c.draw_series(std::iter::once(Circle::new(*p, 2, color.filled())))
                .map_err(err)?;
        } else {
            c.draw_series(LineSeries::new(seg, color.stroke_width(2)))
                .map_err(err)?;
        }
    }
    Ok(())
}

fn pct_axis_label(v: &f64) -> String {
    format!("{v:.0}%")
}

/// (e) Availability: the share of each second's requests answered
/// successfully (dropped sends and errors are not), 0 to 100%, with trial
/// boundaries and faults.
fn availability(r: &Report) -> Res<Chart> {
    let t_hi = time_hi(r);
    let (lo, hi) = (0.0, 105.0);
    let svg = svg(|root| {
        let (plot, side) = root.split_horizontally(W - 190);
        let mut legend: Vec<(String, Mark)> =
            vec![("answered successfully".into(), Mark::Line(AVAILABLE, 2))];
        let mut c = ChartBuilder::on(&plot)
            .caption("Availability over time", (FONT, 20))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..t_hi, lo..hi)
            .map_err(err)?;
        c.configure_mesh()
            .light_line_style(LIGHT)
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .x_desc("time since the run started (s)")
            .y_desc("requests answered successfully")
            .y_label_formatter(&pct_axis_label)
            .draw()
            .map_err(err)?;
        draw_boundaries(&mut c, r, lo, hi, &mut legend)?;
        draw_faults(&mut c, &r.faults, t_hi, lo, hi)?;
        legend.extend(fault_legend(r));
        for t in &r.trials {
            let pts = t
                .timeline
                .iter()
                .map(|s| s.availability().map(|a| (s.t_s + 0.5, 100.0 * a)));
            draw_segments(&mut c, segments(pts), AVAILABLE)?;
        }
        side_legend(&side, &legend)
    })?;
    Ok(Chart {
        id: "availability",
        caption: format!(
            "The share of each second's requests answered successfully: not a connection \
             error, a 5xx answer or a send dropped for starting too late. Seconds without \
             requests are left blank.{}",
            fault_caption(r)
        ),
        svg,
    })
}

/// (f) Each node's p99 latency per second, one line per node, with trial
/// boundaries and faults. Seconds in which a node answered nothing are
/// left blank.
fn node_latency(r: &Report) -> Res<Chart> {
    let nodes = r.node_seconds();
    let t_hi = time_hi(r);
    let seconds = || r.trials.iter().flat_map(|t| t.timeline.iter());
    let (lo, hi) = log_bounds(seconds().flat_map(|s| s.per_node.iter().map(|n| n.p99_ms)));
    let color = |i: usize| NODES[i % NODES.len()];
    let svg = svg(|root| {
        let (plot, side) = root.split_horizontally(W - 190);
        let mut legend: Vec<(String, Mark)> = (0..nodes)
            .map(|i| (format!("node {} p99", i + 1), Mark::Line(color(i), 2)))
            .collect();
        let mut c = ChartBuilder::on(&plot)
            .caption("p99 latency per node over time", (FONT, 20))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..t_hi, (lo..hi).log_scale())
            .map_err(err)?;
        c.configure_mesh()
            .light_line_style(LIGHT)
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .x_desc("time since the run started (s)")
            .y_desc("p99 latency per second")
            .y_label_formatter(&ms_label)
            .draw()
            .map_err(err)?;
        draw_boundaries(&mut c, r, lo, hi, &mut legend)?;
        draw_faults(&mut c, &r.faults, t_hi, lo, hi)?;
        legend.extend(fault_legend(r));
        for t in &r.trials {
            for i in 0..nodes {
                let pts = t.timeline.iter().map(|s| {
                    s.per_node
                        .get(i)
                        .filter(|n| n.p99_ms > 0.0)
                        .map(|n| (s.t_s + 0.5, n.p99_ms.max(lo)))
                });
                draw_segments(&mut c, segments(pts), color(i))?;
            }
        }
        side_legend(&side, &legend)
    })?;
    let names: Vec<String> = (0..nodes)
        .filter_map(|i| r.node_url(i).map(|u| format!("node {} is {u}", i + 1)))
        .collect();
    let names = if names.is_empty() {
        String::new()
    } else {
        format!(" {}.", names.join(", "))
    };
    Ok(Chart {
        id: "node-latency",
        caption: format!(
            "The p99 latency of each second's answered requests, per node (log scale); \
             seconds in which a node answered nothing are left blank.{names}{}",
            fault_caption(r)
        ),
        svg,
    })
}

/// The trials the spectrum chart shows: all up to `MAX_SPECTRUM_TRIALS`,
/// else that many spread evenly, always with the first and the last.
pub fn spectrum_trials(n: usize) -> Vec<usize> {
    if n <= MAX_SPECTRUM_TRIALS {
        return (0..n).collect();
    }
    let k = MAX_SPECTRUM_TRIALS;
    let mut v: Vec<usize> = (0..k).map(|i| i * (n - 1) / (k - 1)).collect();
    v.dedup();
    v
}

/// A percentile label for x = 1/(1-q): 50%, 90%, 99%, 99.9%, ...
fn pct_label(x: &f64) -> String {
    let q = 100.0 * (1.0 - 1.0 / x.max(1.0));
    let mut s = format!("{q:.5}");
    while s.ends_with('0') {
        s.pop();
    }
    if s.ends_with('.') {
        s.pop();
    }
    format!("{s}%")
}

/// (d) The percentile spectrum: latency against 1/(1-q) on a log scale, one
/// line per trial.
fn spectrum(r: &Report) -> Res<Chart> {
    let picked = spectrum_trials(r.trials.len());
    let inv = |q: f64| 1.0 / (1.0 - q);
    let x_hi = picked
        .iter()
        .flat_map(|&i| r.trials[i].spectrum.iter())
        .filter(|p| p.quantile < 1.0)
        .map(|p| inv(p.quantile))
        .fold(100.0f64, f64::max);
    let decades = x_hi.log10().ceil() as i32;
    let x_hi = 10f64.powi(decades);
    let mut keys = vec![1.0, 2.0];
    keys.extend((1..=decades).map(|d| 10f64.powi(d)));
    let (lo, hi) = log_bounds(
        picked
            .iter()
            .flat_map(|&i| r.trials[i].spectrum.iter().map(|p| p.latency_ms)),
    );
    let svg = svg(|root| {
        let mut c = ChartBuilder::on(&root)
            .caption("Latency by percentile", (FONT, 20))
            .margin(12)
            .margin_right(36)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(
                (1.0..x_hi).log_scale().with_key_points(keys),
                (lo..hi).log_scale(),
            )
            .map_err(err)?;
        c.configure_mesh()
            .light_line_style(LIGHT)
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .x_desc("percentile")
            .y_desc("latency")
            .x_label_formatter(&pct_label)
            .y_label_formatter(&ms_label)
            .draw()
            .map_err(err)?;
        for (k, &i) in picked.iter().enumerate() {
            let t = &r.trials[i];
            let color = Palette99::pick(k).to_rgba();
            let pts: Vec<(f64, f64)> = t
                .spectrum
                .iter()
                .filter(|p| p.quantile < 1.0)
                .map(|p| (inv(p.quantile), p.latency_ms.max(lo)))
                .collect();
            c.draw_series(LineSeries::new(pts, color.stroke_width(2)))
                .map_err(err)?
                .label(format!("trial {}: {}", i + 1, offered(t)))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
        }
        c.configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(GRAY)
            .label_font((FONT, 13))
            .draw()
            .map_err(err)
    })?;
    let shown = if picked.len() < r.trials.len() {
        format!(
            " {} of the {} trials are shown.",
            picked.len(),
            r.trials.len()
        )
    } else {
        String::new()
    };
    Ok(Chart {
        id: "spectrum",
        caption: format!(
            "The percentile spectrum (HdrHistogram style): latency at each percentile, \
             the x axis stretched towards 100% so the tail is visible.{shown}"
        ),
        svg,
    })
}

/// A plain chart of named lines over time on linear axes (a soak's RSS,
/// open files and p99 per window), time in minutes; each line with its
/// fitted trend, dashed, when one is given.
pub fn trend(
    title: &str,
    y_desc: &str,
    y_fmt: &dyn Fn(&f64) -> String,
    lines: &[TrendLine],
) -> Res<String> {
    let pts = || lines.iter().flat_map(|l| l.points.iter());
    let t_hi = pts().map(|p| p.0).fold(0.0f64, f64::max).max(1.0) / 60.0;
    let y_hi = pts().map(|p| p.1).fold(0.0f64, f64::max).max(1e-9) * 1.15;
    svg(|root| {
        let (plot, side) = root.split_horizontally(W - 190);
        let mut legend = Vec::new();
        let mut c = ChartBuilder::on(&plot)
            .caption(title, (FONT, 20))
            .margin(12)
            .x_label_area_size(44)
            .y_label_area_size(72)
            .build_cartesian_2d(0.0..t_hi, 0.0..y_hi)
            .map_err(err)?;
        c.configure_mesh()
            .light_line_style(LIGHT)
            .label_style((FONT, 13))
            .axis_desc_style((FONT, 14))
            .x_desc("time since the run started (min)")
            .y_desc(y_desc)
            .y_label_formatter(y_fmt)
            .draw()
            .map_err(err)?;
        for (i, l) in lines.iter().enumerate() {
            let color = NODES[i % NODES.len()];
            c.draw_series(LineSeries::new(
                l.points.iter().map(|&(t, y)| (t / 60.0, y)),
                color.stroke_width(2),
            ))
            .map_err(err)?;
            legend.push((l.name.clone(), Mark::Line(color, 2)));
            if let Some((from, to, slope, at)) = l.fit {
                let y = |t: f64| at + slope * (t - from);
                c.draw_series(DashedLineSeries::new(
                    [(from / 60.0, y(from)), (to / 60.0, y(to))],
                    6,
                    4,
                    BLACK.stroke_width(1),
                ))
                .map_err(err)?;
            }
        }
        if lines.iter().any(|l| l.fit.is_some()) {
            legend.push(("fitted trend".into(), Mark::Line(BLACK, 1)));
        }
        side_legend(&side, &legend)
    })
}

/// One line of [`trend`]: points (seconds, value) and, optionally, a
/// fitted line from `fit.0` to `fit.1` seconds with slope `fit.2` per
/// second, worth `fit.3` at `fit.0`.
pub struct TrendLine {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub fit: Option<(f64, f64, f64, f64)>,
}
