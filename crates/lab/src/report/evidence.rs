//! A sweep's evidence drawn: each resource's reading against offered rate,
//! as a share of its threshold (the knee shows where a line crosses 100 %),
//! the verdict's ranking of causes with the shares its words give, and
//! where the slowest 1 % of the deciding trial's requests spent their
//! time, part by part. Owns these two drawings; must not judge the
//! readings (the verdict did, and the report holds its readings).

use plotters::prelude::*;

use super::charts::{
    err, frame, legend, mesh, rate_label, svg, Chart, Res, Right, FONT, GRAY, NODES,
};
use super::model::{Report, RunKind, Trial};

/// A sweep's evidence charts, in the order the page shows them after the
/// others (none for a load run).
pub fn all(r: &Report) -> Res<Vec<Chart>> {
    let mut out = Vec::new();
    if r.kind == RunKind::Sweep {
        out.extend(resources_vs_rate(r)?);
        out.extend(ranked_causes(r)?);
        out.extend(slowest_parts(r)?);
    }
    Ok(out)
}

/// The largest share of its threshold the chart shows (a reading far past
/// it is drawn at the top).
const TOP: f64 = 2.0;

/// Each resource of each node against offered rate (the mean of its
/// readings at each rate), as a share of its threshold; `None` without
/// readings.
pub fn resources_vs_rate(r: &Report) -> Res<Option<Chart>> {
    let mut lines: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    let mut rates: Vec<f64> = r.trials.iter().filter_map(|t| t.offered_rate).collect();
    rates.sort_by(f64::total_cmp);
    rates.dedup();
    for &rate in &rates {
        let at: Vec<&Trial> = r
            .trials
            .iter()
            .filter(|t| t.offered_rate == Some(rate))
            .collect();
        for t in &at {
            for x in &t.resources {
                let name = match &x.node {
                    Some(n) => format!("{} {n}", x.resource),
                    None => x.resource.clone(),
                };
                let v = (x.ratio()).min(TOP) / at.len() as f64;
                match lines.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, pts)) => match pts.last_mut() {
                        Some(p) if p.0 == rate => p.1 += v,
                        _ => pts.push((rate, v)),
                    },
                    None => lines.push((name, vec![(rate, v)])),
                }
            }
        }
    }
    if lines.is_empty() {
        return Ok(None);
    }
    // Lines that never come near their threshold only crowd the chart
    // (all of them are drawn when none does).
    if lines.iter().any(|(_, pts)| pts.iter().any(|p| p.1 >= 0.25)) {
        lines.retain(|(_, pts)| pts.iter().any(|p| p.1 >= 0.25));
    }
    let x_hi = rates.last().copied().unwrap_or(1.0) * 1.1;
    let svg = svg(|root| {
        let mut c = frame(
            &mut ChartBuilder::on(&root),
            "Each resource against offered rate",
            Right::Margin,
        )
        .build_cartesian_2d(0.0..x_hi, 0.0..TOP * 1.05)
        .map_err(err)?;
        mesh(&mut c.configure_mesh())
            .x_desc("offered rate (req/s)")
            .y_desc("reading / its threshold")
            .x_label_formatter(&rate_label)
            .y_label_formatter(&|v| format!("{:.0}%", v * 100.0))
            .draw()
            .map_err(err)?;
        c.draw_series(DashedLineSeries::new(
            vec![(0.0, 1.0), (x_hi, 1.0)],
            6,
            4,
            GRAY.stroke_width(1),
        ))
        .map_err(err)?
        .label("threshold")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], GRAY));
        for (i, (name, pts)) in lines.iter().enumerate() {
            let color = NODES[i % NODES.len()];
            c.draw_series(LineSeries::new(pts.clone(), color.stroke_width(2)))
                .map_err(err)?
                .label(name.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
                });
            c.draw_series(pts.iter().map(|p| Circle::new(*p, 3, color.filled())))
                .map_err(err)?;
        }
        legend(&mut c, SeriesLabelPosition::UpperLeft, 13)
    })?;
    Ok(Some(Chart {
        id: "resources-vs-rate",
        caption: "Each resource's reading against offered rate, as a share of the threshold the \
                  verdict judges it by (fsync busy, stalls, CPU, pauses, admission, the \
                  generator's own lateness, the machine): the knee is where a line crosses the \
                  dashed line. Readings far past it are drawn at 200 %."
            .into(),
        svg,
    }))
}

/// Horizontal bars, largest first: one per (label, share).
fn bars(title: String, x_desc: &str, items: &[(String, f64)]) -> Res<String> {
    let n = items.len();
    svg(|root| {
        let mut c = ChartBuilder::on(&root)
            .caption(title, (FONT, 20))
            .margin(12)
            .margin_right(36)
            .x_label_area_size(44)
            .y_label_area_size(200)
            .build_cartesian_2d(0.0..1.0, (0..n).into_segmented())
            .map_err(err)?;
        mesh(&mut c.configure_mesh())
            .x_desc(x_desc)
            .x_label_formatter(&|v| format!("{:.0}%", v * 100.0))
            .y_label_formatter(&|v| match v {
                SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => (n - 1)
                    .checked_sub(*i)
                    .and_then(|k| items.get(k))
                    .map(|p| p.0.clone())
                    .unwrap_or_default(),
                SegmentValue::Last => String::new(),
            })
            .y_labels(n)
            .draw()
            .map_err(err)?;
        c.draw_series(items.iter().enumerate().map(|(i, (_, share))| {
            let y = n - 1 - i;
            Rectangle::new(
                [
                    (0.0, SegmentValue::Exact(y)),
                    (share.clamp(0.0, 1.0), SegmentValue::Exact(y + 1)),
                ],
                NODES[0].mix(0.8).filled(),
            )
        }))
        .map_err(err)?;
        Ok(())
    })
}

/// The verdict's ranking: each cause it weighed, in its order, with its
/// share of the slowest requests' time as the verdict's words give it;
/// `None` without a ranking or with no shares (a verdict on failures).
pub fn ranked_causes(r: &Report) -> Res<Option<Chart>> {
    let items: Vec<(String, f64)> = r
        .ranking
        .iter()
        .filter_map(|c| {
            c.share.map(|s| {
                (
                    format!(
                        "{}{}",
                        c.cause,
                        c.node
                            .as_ref()
                            .map(|n| format!(" ({n})"))
                            .unwrap_or_default()
                    ),
                    s,
                )
            })
        })
        .take(8)
        .collect();
    if items.is_empty() {
        return Ok(None);
    }
    let items: Vec<(String, f64)> = items
        .into_iter()
        .enumerate()
        .map(|(i, (l, s))| (format!("{}. {l}", i + 1), s))
        .collect();
    let svg = bars(
        format!(
            "The verdict's causes, ranked, at {} req/s",
            rate_label(&r.verdict_trial_rate.unwrap_or(0.0))
        ),
        "share of the slowest 1 %'s time (not counting the wait for a free connection)",
        &items,
    )?;
    Ok(Some(Chart {
        id: "ranked-causes",
        caption: "The causes the verdict weighed, in its order (its cause first), each with its \
                  share of the slowest requests' time as its words give it: the same numbers \
                  (report.json's ranking). A share leaves out the wait for a free connection \
                  (the other requests' slowness), so the bars below, of the whole latency, can \
                  differ."
            .into(),
        svg,
    }))
}

/// The deciding trial's slowest 1 %: each part's share of their time, as
/// bars, largest first; `None` when no trial failed or none kept them.
pub fn slowest_parts(r: &Report) -> Res<Option<Chart>> {
    // The trial the verdict read (its last run at that rate, a failing
    // one first); in reports from before it said, the lowest failing
    // rate's.
    let deciding = match r.verdict_trial_rate {
        Some(rate) => {
            let at = |t: &&crate::report::model::Trial| {
                t.offered_rate == Some(rate) && t.slowest.is_some()
            };
            r.trials
                .iter()
                .rfind(|t| at(t) && t.meets_slo == Some(false))
                .or_else(|| r.trials.iter().rfind(at))
        }
        None => r
            .trials
            .iter()
            .filter(|t| t.meets_slo == Some(false) && t.slowest.is_some())
            .min_by(|a, b| {
                a.offered_rate
                    .unwrap_or(0.0)
                    .total_cmp(&b.offered_rate.unwrap_or(0.0))
            }),
    };
    let Some(t) = deciding else {
        return Ok(None);
    };
    let s = t.slowest.as_ref().expect("filtered");
    let parts: Vec<(String, f64)> = s
        .parts
        .iter()
        .take(10)
        .map(|p| {
            (
                format!(
                    "{}{}",
                    p.what,
                    p.node
                        .as_ref()
                        .map(|n| format!(" ({n})"))
                        .unwrap_or_default()
                ),
                p.share,
            )
        })
        .collect();
    if parts.is_empty() {
        return Ok(None);
    }
    let svg = bars(
        format!(
            "Where the slowest 1 % spent their time, at {} req/s",
            rate_label(&t.offered_rate.unwrap_or(0.0))
        ),
        "share of their summed latency",
        &parts,
    )?;
    Ok(Some(Chart {
        id: "slowest-parts",
        caption: format!(
            "The slowest 1 % of the trial at {} req/s ({} requests, from {:.1} ms, {} unanswered): \
             each part's share of their summed latency, by node (Server-Timing stages, the \
             generator's own lateness, the wait for a free connection, the network).",
            rate_label(&t.offered_rate.unwrap_or(0.0)),
            s.requests,
            s.from_ms,
            s.unanswered
        ),
        svg,
    }))
}
