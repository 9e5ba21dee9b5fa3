//! The breaking point a scenario predicts: the highest open-loop rate at
//! which the simulated request lifetime meets latency bounds (p99 ≤ 10 ms,
//! ...), the error share stays within a budget and enough of the offered
//! rate is answered: the caller passes the test `strata sweep` applies to
//! a real node, so the two figures compare directly. Owns the objective,
//! the judging of one run's counts and the search over rates, for either
//! configuration of the model; must not run a model (each configuration's
//! `breaking_point` runs its own: `report::node`, `report::cluster`),
//! build scenarios (calibrate does) nor print.

/// A latency bound on the request lifetime: `quantile` (0.99 for p99, 1.0
/// for max) at most `limit_ns`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bound {
    pub quantile: f64,
    pub limit_ns: u64,
}

/// A sweep's pass test, in virtual time.
#[derive(Clone, Debug, PartialEq)]
pub struct Objective {
    pub bounds: Vec<Bound>,
    /// Largest acceptable share of failed requests (refused, timed out,
    /// dropped).
    pub max_errors: f64,
    /// Smallest share of the offered rate that must be answered.
    pub min_achieved: f64,
}

/// One simulated trial.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Trial {
    pub rate: f64,
    pub achieved: f64,
    /// The lifetime at each bound's quantile, ns.
    pub at_bounds_ns: Vec<u64>,
    pub error_share: f64,
    pub met: bool,
}

/// What the search found.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Prediction {
    /// The bottleneck's capacity, requests per second.
    pub capacity: f64,
    pub capacity_text: String,
    pub bottleneck: Option<String>,
    /// The highest rate that met the objective (None: not even the lowest
    /// tried).
    pub breaking_point: Option<f64>,
    pub trials: Vec<Trial>,
}

/// What a run measured, as a trial needs it (the single-node pipeline's
/// `Run` and the cluster's both give these).
pub struct Counts<'a> {
    pub window_ns: u64,
    /// Requests that arrived (dropped ones included).
    pub arrived: u64,
    /// Answered in the window.
    pub done: u64,
    /// Refused, timed out, failed or dropped.
    pub failed: u64,
    pub lifetime: &'a hdrhistogram::Histogram<u64>,
}

/// Judge one run at `rate` against `obj`.
pub fn judge_counts(c: &Counts, rate: f64, obj: &Objective) -> Trial {
    let secs = c.window_ns as f64 / 1e9;
    let error_share = c.failed as f64 / c.arrived.max(1) as f64;
    let achieved = c.done as f64 / secs;
    let at_bounds_ns: Vec<u64> = obj
        .bounds
        .iter()
        .map(|b| {
            if b.quantile >= 1.0 {
                c.lifetime.max()
            } else {
                c.lifetime.value_at_quantile(b.quantile)
            }
        })
        .collect();
    let met = achieved >= obj.min_achieved * rate
        && error_share <= obj.max_errors
        && obj
            .bounds
            .iter()
            .zip(&at_bounds_ns)
            .all(|(b, v)| *v <= b.limit_ns);
    Trial {
        rate,
        achieved,
        at_bounds_ns,
        error_share,
        met,
    }
}

/// The search itself, over any model: `run_at(rate)` runs it and judges
/// the run. First the capacity given, then bisection between a passing
/// and a failing rate until they are within `precision` (a fraction) of
/// each other. Returns the highest rate that passed (None: not even the
/// lowest tried) and every trial.
pub fn search(
    capacity: f64,
    precision: f64,
    run_at: &mut dyn FnMut(f64) -> Result<Trial, String>,
) -> Result<(Option<f64>, Vec<Trial>), String> {
    if !capacity.is_finite() || capacity <= 0.0 {
        return Err("the scenario names no finite capacity to search below".into());
    }
    let mut trials = Vec::new();
    let mut run_at = |rate: f64| -> Result<bool, String> {
        let t = run_at(rate)?;
        let met = t.met;
        trials.push(t);
        Ok(met)
    };
    // Bracket: a failing rate at or above capacity, a passing one below.
    let mut hi = capacity * 1.02;
    let mut lo = None;
    if run_at(hi)? {
        // Queueing never broke the bounds up to capacity: the limit is
        // the capacity itself.
        lo = Some(hi);
    } else {
        let mut r = capacity * 0.5;
        for _ in 0..8 {
            if run_at(r)? {
                lo = Some(r);
                break;
            }
            hi = r;
            r /= 2.0;
        }
    }
    if let Some(mut l) = lo.filter(|&l| l < hi) {
        while (hi - l) / l > precision {
            let mid = (l + hi) / 2.0;
            if run_at(mid)? {
                l = mid;
            } else {
                hi = mid;
            }
        }
        lo = Some(l);
    }
    Ok((lo, trials))
}
