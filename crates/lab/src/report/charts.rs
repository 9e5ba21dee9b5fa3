//! The report's charts, drawn with plotters into SVG strings: latency
//! percentiles against offered rate, achieved against offered rate, latency
//! and throughput over time with server events, and the percentile
//! spectrum. Owns the drawing only; must not compute statistics beyond
//! picking what to plot, nor write files or HTML around the SVG.

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, ValueFormatter};
use plotters::prelude::*;

use super::markdown::{fmt_ms, offered};
use super::model::{Percentiles, Report, RunKind, Second, ServerSample, Trial};

/// One chart: an id for its `<figure>`, a caption, the SVG.
pub struct Chart {
    pub id: &'static str,
    pub caption: String,
    pub svg: String,
}

const W: u32 = 960;
const H: u32 = 420;
/// The spectrum chart shows at most this many trials.
pub const MAX_SPECTRUM_TRIALS: usize = 8;

const FONT: &str = "sans-serif";
const P50: RGBColor = RGBColor(31, 119, 180);
const P95: RGBColor = RGBColor(44, 160, 44);
const P99: RGBColor = RGBColor(255, 127, 14);
const P999: RGBColor = RGBColor(214, 39, 40);
const GRAY: RGBColor = RGBColor(150, 150, 150);
const LIGHT: RGBColor = RGBColor(238, 238, 238);
const FLUSH: RGBColor = RGBColor(23, 190, 207);
const COMPACTION: RGBColor = RGBColor(148, 103, 189);
const STALL: RGBColor = RGBColor(214, 39, 40);
const THROUGHPUT: RGBColor = RGBColor(44, 160, 44);

type Res<T> = Result<T, String>;

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("chart: {e:?}")
}

/// All four charts of a report, in the order the page shows them.
pub fn all(r: &Report) -> Res<Vec<Chart>> {
    Ok(vec![
        latency_vs_rate(r)?,
        achieved_vs_offered(r)?,
        over_time(r)?,
        spectrum(r)?,
    ])
}

/// Draw into an SVG string of the standard size.
fn svg(
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

fn rate_label(v: &f64) -> String {
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

/// (c) Latency per second (p50, p99) and throughput over the run, with the
/// node's flushes, compactions and stalls marked, and trial boundaries.
fn over_time(r: &Report) -> Res<Chart> {
    let seconds: Vec<_> = r.trials.iter().flat_map(|t| t.timeline.iter()).collect();
    let samples: Vec<_> = r.trials.iter().flat_map(|t| t.server.iter()).collect();
    let t_hi = r
        .trials
        .iter()
        .map(|t| t.started_s + t.duration_s)
        .chain(seconds.iter().map(|s| s.t_s + 1.0))
        .fold(1.0f64, f64::max);
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
        // Trial boundaries.
        let bounds: Vec<f64> = r.trials.iter().skip(1).map(|t| t.started_s).collect();
        if !bounds.is_empty() {
            c.draw_series(
                bounds
                    .iter()
                    .map(|&x| PathElement::new(vec![(x, lo), (x, top)], GRAY.stroke_width(1))),
            )
            .map_err(err)?;
            legend.push(("trial boundary".into(), Mark::Line(GRAY, 1)));
        }
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
        caption: caption.into(),
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
