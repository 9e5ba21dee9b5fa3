//! `--sweep PARAM=V1,V2,...`: one run per value of one parameter (any
//! `--set` path: `clients`, `semaphore.permits`, `store.latency.sd`), one
//! row per run, and an SVG chart of throughput, predicted capacity, blocked
//! and failed shares against the value. Owns the loop over values, the row
//! layout and the chart; must not change how a single run works.

use std::path::Path;

use plotters::prelude::*;
use serde::Serialize;

use crate::model::node::Sim;
use crate::report::node::analyse;
use crate::report::LatencySummary;
use crate::scenario::node::Scenario;
use crate::units::{human_ns, rate};

#[derive(Clone, Debug, Serialize)]
pub struct SweepRow {
    pub value: String,
    pub throughput: f64,
    /// Answered without error, per second.
    pub goodput: f64,
    pub per_minute: f64,
    pub requests: u64,
    /// request-block / request-start.
    pub blocked: f64,
    /// Refused at admission (no room, or waited too long) / request-start.
    pub refused: f64,
    /// Failed writes / persist-start.
    pub failed_writes: f64,
    pub lifetime_mean_ns: f64,
    pub lifetime_p99_ns: u64,
    pub persist_mean_ns: f64,
    pub persist_p99_ns: u64,
    pub persist_sd_ns: f64,
    pub bottleneck: Option<String>,
    pub bottleneck_utilisation: Option<f64>,
    pub capacity: f64,
    pub little_error: f64,
    pub warnings: usize,
    pub events: u64,
    pub wall_s: f64,
}

/// Split "clients=1,15,125" into ("clients", ["1", "15", "125"]).
pub fn parse_sweep(s: &str) -> Result<(String, Vec<String>), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("--sweep {s:?}: expected PARAM=V1,V2,... like clients=1,15,125"))?;
    let values: Vec<String> = v
        .split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect();
    if k.trim().is_empty() || values.is_empty() {
        return Err(format!("--sweep {s:?}: expected PARAM=V1,V2,..."));
    }
    Ok((k.trim().to_string(), values))
}

fn frac(a: u64, b: u64) -> f64 {
    if b == 0 {
        0.0
    } else {
        a as f64 / b as f64
    }
}

/// Run `sc` once per value of `param` (after the other overrides in
/// `sets`), calling `on_row` as each row is ready.
pub fn sweep(
    sc: &Scenario,
    base: &Path,
    seed: u64,
    sets: &[(String, String)],
    param: &str,
    values: &[String],
    on_row: &mut dyn FnMut(&SweepRow),
) -> Result<Vec<SweepRow>, String> {
    let mut rows = Vec::with_capacity(values.len());
    for v in values {
        let mut all = sets.to_vec();
        all.push((param.to_string(), v.clone()));
        let s = sc.with_overrides(&all)?;
        let run = Sim::new(&s, base, seed)?.run();
        let a = analyse(&run);
        let p = &run.probes;
        let life = LatencySummary::of(&run.lifetime);
        let pers = LatencySummary::of(&run.persist);
        let bu = a
            .bottleneck
            .as_ref()
            .and_then(|b| a.stages.iter().find(|s| &s.name == b))
            .and_then(|s| s.utilisation);
        let row = SweepRow {
            value: v.clone(),
            throughput: a.throughput,
            goodput: a.goodput,
            per_minute: a.throughput * 60.0,
            requests: p.request_done,
            blocked: frac(p.request_block, p.request_start),
            refused: frac(p.request_refused + p.request_timeout, p.request_start),
            failed_writes: frac(p.persist_failed, p.persist_start),
            lifetime_mean_ns: life.mean_ns,
            lifetime_p99_ns: life.p99_ns,
            persist_mean_ns: pers.mean_ns,
            persist_p99_ns: pers.p99_ns,
            persist_sd_ns: pers.sd_ns,
            bottleneck: a.bottleneck.clone(),
            bottleneck_utilisation: bu,
            capacity: a.capacity,
            little_error: a.little.error,
            warnings: a.warnings.len(),
            events: run.events,
            wall_s: run.wall_s,
        };
        on_row(&row);
        rows.push(row);
    }
    Ok(rows)
}

pub fn header(param: &str) -> String {
    format!(
        "{:>12} {:>10} {:>10} {:>9} {:>8} {:>8} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10}  {}",
        param,
        "req/s",
        "ok/s",
        "req/min",
        "blocked",
        "refused",
        "failedW",
        "life mean",
        "life p99",
        "pers mean",
        "pers p99",
        "pers sd",
        "bottleneck (util) / capacity req/s"
    )
}

pub fn line(r: &SweepRow) -> String {
    let pct = |x: f64| format!("{:.1}%", x * 100.0);
    let dash = |ns: f64, present: bool| if present { human_ns(ns) } else { "-".into() };
    let has_persist = r.persist_mean_ns > 0.0;
    format!(
        "{:>12} {:>10} {:>10} {:>9} {:>8} {:>8} {:>8} {:>10} {:>10} {:>10} {:>10} {:>10}  {}{} / {}",
        r.value,
        rate(r.throughput),
        rate(r.goodput),
        crate::units::grouped(r.per_minute.round() as i64),
        pct(r.blocked),
        pct(r.refused),
        pct(r.failed_writes),
        human_ns(r.lifetime_mean_ns),
        human_ns(r.lifetime_p99_ns as f64),
        dash(r.persist_mean_ns, has_persist),
        dash(r.persist_p99_ns as f64, has_persist),
        dash(r.persist_sd_ns, has_persist),
        r.bottleneck.as_deref().unwrap_or("-"),
        r.bottleneck_utilisation
            .map(|u| format!(" ({:.0}%)", u * 100.0))
            .unwrap_or_default(),
        rate(r.capacity),
    )
}

fn err<E: std::fmt::Debug>(e: E) -> String {
    format!("chart: {e:?}")
}

const THROUGHPUT: RGBColor = RGBColor(44, 160, 44);
const GOODPUT: RGBColor = RGBColor(31, 119, 180);
const CAPACITY: RGBColor = RGBColor(150, 150, 150);
const BLOCKED: RGBColor = RGBColor(255, 127, 14);
const FAILED: RGBColor = RGBColor(214, 39, 40);
const REFUSED: RGBColor = RGBColor(148, 103, 189);

/// The sweep's chart: throughput and predicted capacity (left axis,
/// requests/s) and blocked, refused and failed-write shares (right axis,
/// %), one point per value, values evenly spaced in the order given.
pub fn svg(scenario: &str, param: &str, rows: &[SweepRow]) -> Result<String, String> {
    let mut buf = String::new();
    {
        let root = SVGBackend::with_string(&mut buf, (960, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let n = rows.len().max(1);
        let ymax = rows
            .iter()
            .flat_map(|r| {
                [
                    r.throughput,
                    if r.capacity.is_finite() {
                        r.capacity
                    } else {
                        0.0
                    },
                ]
            })
            .fold(1.0f64, f64::max)
            * 1.15;
        let x_range = -0.5f64..(n as f64 - 0.5);
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!("strata sim: {scenario}, sweep of {param}"),
                ("sans-serif", 20),
            )
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(75)
            .right_y_label_area_size(60)
            .build_cartesian_2d(x_range.clone(), 0f64..ymax)
            .map_err(err)?
            .set_secondary_coord(x_range, 0f64..100f64);
        let labels: Vec<String> = rows.iter().map(|r| r.value.clone()).collect();
        let fmt_x = |x: &f64| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                labels[i as usize].clone()
            } else {
                String::new()
            }
        };
        chart
            .configure_mesh()
            .x_labels(n * 2 + 1)
            .x_label_formatter(&fmt_x)
            .x_desc(param)
            .y_desc("requests/s")
            .y_label_formatter(&|v| format!("{v:.0}"))
            .disable_x_mesh()
            .max_light_lines(4)
            .light_line_style(RGBColor(238, 238, 238))
            .draw()
            .map_err(err)?;
        chart
            .configure_secondary_axes()
            .y_desc("% of requests (writes for failed)")
            .label_style(("sans-serif", 12))
            .y_label_formatter(&|v| format!("{v:.0}"))
            .draw()
            .map_err(err)?;
        let pts = |f: &dyn Fn(&SweepRow) -> f64| -> Vec<(f64, f64)> {
            rows.iter()
                .enumerate()
                .map(|(i, r)| (i as f64, f(r)))
                .collect()
        };
        let caps: Vec<(f64, f64)> = pts(&|r| r.capacity)
            .into_iter()
            .filter(|p| p.1.is_finite())
            .collect();
        chart
            .draw_series(LineSeries::new(caps, CAPACITY.stroke_width(2)))
            .map_err(err)?
            .label("predicted capacity")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], CAPACITY.stroke_width(2)));
        let tp = pts(&|r| r.throughput);
        chart
            .draw_series(LineSeries::new(tp.clone(), THROUGHPUT.stroke_width(3)))
            .map_err(err)?
            .label("throughput (req/s)")
            .legend(|(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], THROUGHPUT.stroke_width(3))
            });
        chart
            .draw_series(
                tp.into_iter()
                    .map(|p| Circle::new(p, 4, THROUGHPUT.filled())),
            )
            .map_err(err)?;
        if rows.iter().any(|r| r.goodput < r.throughput * 0.999) {
            chart
                .draw_series(LineSeries::new(
                    pts(&|r| r.goodput),
                    GOODPUT.stroke_width(2),
                ))
                .map_err(err)?
                .label("answered without error (req/s)")
                .legend(|(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], GOODPUT.stroke_width(2))
                });
        }
        for (name, color, f) in [
            (
                "blocked (%)",
                BLOCKED,
                (&|r: &SweepRow| r.blocked * 100.0) as &dyn Fn(&SweepRow) -> f64,
            ),
            ("refused (%)", REFUSED, &|r: &SweepRow| r.refused * 100.0),
            ("failed writes (%)", FAILED, &|r: &SweepRow| {
                r.failed_writes * 100.0
            }),
        ] {
            let series = pts(f);
            if series.iter().all(|p| p.1 == 0.0) && name != "blocked (%)" {
                continue;
            }
            chart
                .draw_secondary_series(LineSeries::new(series.clone(), color.stroke_width(2)))
                .map_err(err)?
                .label(name)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            chart
                .draw_secondary_series(
                    series
                        .into_iter()
                        .map(|p| Cross::new(p, 4, color.stroke_width(2))),
                )
                .map_err(err)?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(buf)
}
