//! CPU per request as work plus the runtime's sleeps: a least-squares
//! line over steps at several loads, so that the CPU a request costs at
//! the limit (where sleeps vanish) is not overstated by the sleeps of a
//! lighter load. Owns the fit; must not build a scenario.

use serde::Serialize;

use super::super::CalibrationError;

use super::scrape::{node_delta, NodeDelta, NodeScrape};

/// CPU per request as work plus sleeps: `work + per_sleep × sleeps per
/// request`. A worker that runs out of work sleeps, and the next message
/// wakes it; on a virtual machine a sleep and its wake-up cost tens of
/// microseconds of CPU. The busier the node, the fewer sleeps per request
/// (they vanish at the limit), so the CPU a request costs below the limit
/// overstates what it costs at the limit, by far on a local cluster where
/// every request crosses threads and processes several times.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SleepFit {
    /// CPU seconds per request without sleeps.
    pub work: f64,
    /// CPU seconds per sleep.
    pub per_sleep: f64,
    pub points: usize,
}

/// Least squares of CPU per request on sleeps per request over steps
/// `(sleeps per request, CPU seconds per request)`. None when the steps do
/// not spread over at least half a sleep per request, or the slope is not
/// positive. The work is kept between a fifth of the least CPU per request
/// measured and that least (the line is extrapolated to no sleeps).
pub fn fit_sleeps(points: &[(f64, f64)]) -> Option<SleepFit> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite() && *x >= 0.0 && *y > 0.0)
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let (lo, hi) = pts.iter().fold((f64::INFINITY, 0.0f64), |(l, h), (x, _)| {
        (l.min(*x), h.max(*x))
    });
    if hi - lo < 0.5 {
        return None;
    }
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    if slope.is_nan() || slope <= 0.0 {
        return None;
    }
    let least = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let work = (my - slope * mx).clamp(least * 0.2, least);
    Some(SleepFit {
        work,
        per_sleep: slope,
        points: pts.len(),
    })
}

/// The nodes' (runtime parks per request, CPU seconds per request) over
/// one load, if they report parks.
pub fn parks_point(scrapes: &[NodeScrape]) -> Result<Option<(f64, f64)>, CalibrationError> {
    let d: Vec<NodeDelta> = scrapes.iter().map(node_delta).collect::<Result<_, _>>()?;
    let requests: f64 = d.iter().map(|x| x.requests).sum();
    let cpu: f64 = d.iter().map(|x| x.cpu_s).sum();
    let parks: Option<f64> = d.iter().map(|x| x.parks).sum();
    Ok(match parks {
        Some(p) if requests > 0.0 => Some((p / requests, cpu / requests)),
        _ => None,
    })
}
