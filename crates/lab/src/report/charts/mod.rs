//! The report's charts, drawn with plotters into SVG strings: latency
//! percentiles against offered rate, achieved against offered rate, latency
//! and throughput over time with server events, availability over time,
//! each node's p99 over time (several nodes), and the percentile spectrum;
//! every chart over time marks the faults injected (a sweep's evidence is
//! drawn by `evidence.rs`, with these helpers). The frame every chart
//! shares, its colors and labels (`frame`); charts against rate or
//! percentile (`rate`); charts over time and their fault marks (`time`). Owns the drawing only;
//! must not compute statistics beyond picking what to plot, nor write files
//! or HTML around the SVG.

mod frame;
mod rate;
mod time;

pub(crate) use frame::{err, frame, legend, mesh, rate_label, svg, Res, Right, FONT, GRAY, NODES};
pub use rate::spectrum_trials;
pub use time::{trend, TrendLine};

use super::model::Report;

/// One chart: an id for its `<figure>`, a caption, the SVG.
pub struct Chart {
    pub id: &'static str,
    pub caption: String,
    pub svg: String,
}

/// The spectrum chart shows at most this many trials.
pub const MAX_SPECTRUM_TRIALS: usize = 8;

/// All the charts of a report, in the order the page shows them: the
/// availability chart when there are seconds, the per-node one when the
/// seconds are split over nodes.
pub fn all(r: &Report) -> Res<Vec<Chart>> {
    let mut out = vec![
        rate::latency_vs_rate(r)?,
        rate::achieved_vs_offered(r)?,
        time::over_time(r)?,
    ];
    if r.trials.iter().any(|t| !t.timeline.is_empty()) {
        out.push(time::availability(r)?);
    }
    if r.node_seconds() > 0 {
        out.push(time::node_latency(r)?);
    }
    out.push(rate::spectrum(r)?);
    Ok(out)
}
