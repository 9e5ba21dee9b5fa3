//! Charts over time: latency and throughput with the node's events,
//! availability, each node's p99, and a soak's trends; the faults of a run
//! marked on each, trial boundaries, lines broken where data is missing.
//! Owns their drawing; must not compute statistics beyond picking what to
//! plot.

use plotters::coord::CoordTranslate;
use plotters::prelude::*;

use super::frame::*;
use super::Chart;
use crate::report::model::{FaultMark, Report, Second, ServerSample};

/// The right end of a time axis: the run's end, or a fault's if later.
pub(crate) fn time_hi(r: &Report) -> f64 {
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
pub(crate) fn draw_faults<CT>(
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
pub(crate) fn fault_legend(r: &Report) -> Option<(String, Mark)> {
    (!r.faults.is_empty()).then(|| (format!("fault ({})", r.faults.len()), Mark::Band(FAULT)))
}

/// What the fault marks are, for a caption (empty without faults).
pub(crate) fn fault_caption(r: &Report) -> &'static str {
    if r.faults.is_empty() {
        ""
    } else {
        " Faults are marked in magenta: a line where each was injected, shaded until it was \
         undone, labelled with the fault as given."
    }
}

/// Points split where `None` interrupts them, so a line does not bridge
/// seconds without data.
pub(crate) fn segments(points: impl Iterator<Item = Option<(f64, f64)>>) -> Vec<Vec<(f64, f64)>> {
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
pub(crate) fn over_time(r: &Report) -> Res<Chart> {
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
        let mut c = frame(
            &mut ChartBuilder::on(&plot),
            "Latency and throughput over time",
            Right::Axis,
        )
        .build_cartesian_2d(0.0..t_hi, (lo..top).log_scale())
        .map_err(err)?
        .set_secondary_coord(0.0..t_hi, 0.0..rate_hi);
        mesh(&mut c.configure_mesh())
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
pub(crate) fn draw_boundaries<CT>(
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
pub(crate) fn draw_segments<CT>(
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

pub(crate) fn pct_axis_label(v: &f64) -> String {
    format!("{v:.0}%")
}

/// (e) Availability: the share of each second's requests answered
/// successfully (dropped sends and errors are not), 0 to 100%, with trial
/// boundaries and faults.
pub(crate) fn availability(r: &Report) -> Res<Chart> {
    let t_hi = time_hi(r);
    let (lo, hi) = (0.0, 105.0);
    let svg = svg(|root| {
        let (plot, side) = root.split_horizontally(W - 190);
        let mut legend: Vec<(String, Mark)> =
            vec![("answered successfully".into(), Mark::Line(AVAILABLE, 2))];
        let mut c = frame(
            &mut ChartBuilder::on(&plot),
            "Availability over time",
            Right::Nothing,
        )
        .build_cartesian_2d(0.0..t_hi, lo..hi)
        .map_err(err)?;
        mesh(&mut c.configure_mesh())
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
             error, a failed answer (5xx, 401/403, other 4xx but 404) or a send dropped for \
             starting too late. Seconds without \
             requests are left blank.{}",
            fault_caption(r)
        ),
        svg,
    })
}

/// (f) Each node's p99 latency per second, one line per node, with trial
/// boundaries and faults. Seconds in which a node answered nothing are
/// left blank.
pub(crate) fn node_latency(r: &Report) -> Res<Chart> {
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
        let mut c = frame(
            &mut ChartBuilder::on(&plot),
            "p99 latency per node over time",
            Right::Nothing,
        )
        .build_cartesian_2d(0.0..t_hi, (lo..hi).log_scale())
        .map_err(err)?;
        mesh(&mut c.configure_mesh())
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
        let mut c = frame(&mut ChartBuilder::on(&plot), title, Right::Nothing)
            .build_cartesian_2d(0.0..t_hi, 0.0..y_hi)
            .map_err(err)?;
        mesh(&mut c.configure_mesh())
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
