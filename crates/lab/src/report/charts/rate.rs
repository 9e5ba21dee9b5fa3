//! Charts against rate or percentile: latency percentiles against offered
//! rate (or per operation, for a single trial), achieved against offered
//! rate, and the percentile spectrum of each trial. Owns their drawing;
//! must not compute statistics beyond picking what to plot.

use plotters::prelude::*;

use super::frame::*;
use super::Chart;
use super::MAX_SPECTRUM_TRIALS;
use crate::report::markdown::offered;
use crate::report::model::{Percentiles, Report, RunKind, Trial};

/// (a) Latency percentiles against offered rate (a sweep), or per
/// operation bars (a single trial, or a closed loop without rates).
pub(crate) fn latency_vs_rate(r: &Report) -> Res<Chart> {
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
            let mut c = frame(
                &mut ChartBuilder::on(&root),
                "Latency against offered rate",
                Right::Margin,
            )
            .build_cartesian_2d(0.0..x_hi, (lo..hi).log_scale())
            .map_err(err)?;
            mesh(&mut c.configure_mesh())
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
            legend(&mut c, SeriesLabelPosition::UpperLeft, 14)
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
        let mut c = frame(
            &mut ChartBuilder::on(&root),
            "Latency percentiles per operation",
            Right::Margin,
        )
        .build_cartesian_2d(Centers(n), (lo..hi).log_scale())
        .map_err(err)?;
        let op_label = |v: &f64| {
            names
                .get(v.floor().max(0.0) as usize)
                .cloned()
                .unwrap_or_default()
        };
        mesh(&mut c.configure_mesh())
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
        legend(&mut c, SeriesLabelPosition::UpperLeft, 14)
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
pub(crate) fn achieved_vs_offered(r: &Report) -> Res<Chart> {
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
        let mut c = frame(
            &mut ChartBuilder::on(&root),
            if open {
                "Achieved against offered rate"
            } else {
                "Achieved rate against clients"
            },
            Right::Margin,
        )
        .build_cartesian_2d(0.0..x_hi, 0.0..y_hi)
        .map_err(err)?;
        mesh(&mut c.configure_mesh())
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
        legend(&mut c, SeriesLabelPosition::UpperLeft, 14)
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
pub(crate) fn pct_label(x: &f64) -> String {
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
pub(crate) fn spectrum(r: &Report) -> Res<Chart> {
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
        let mut c = frame(
            &mut ChartBuilder::on(&root),
            "Latency by percentile",
            Right::Margin,
        )
        .build_cartesian_2d(
            (1.0..x_hi).log_scale().with_key_points(keys),
            (lo..hi).log_scale(),
        )
        .map_err(err)?;
        mesh(&mut c.configure_mesh())
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
        legend(&mut c, SeriesLabelPosition::UpperLeft, 13)
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
