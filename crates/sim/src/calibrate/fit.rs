//! The one fitting path from measured steps to a predicted breaking point,
//! for `strata calibrate` and for a sweep that checks the model against
//! its own breaking point. Each step is a reading at a rate the node was
//! measured at (`reading::Reading`) and whether that rate met the SLO. The
//! model built from the highest step (nearest the limit: a request costs
//! less the busier the node), with what that step measured beyond its
//! model added to every request (`UNMODELLED`: the delays the node has and
//! the model lacks, quantile by quantile), names the breaking point; the
//! range comes
//! from what the steps disagree on (the next step down's own model) and
//! from how the host moved between them (the top step's costs under each
//! other step's steal, stalls and fsyncs). When that range spans more than
//! `HOST_MOVED_SPAN`, the host moved too much for a prediction and the fit
//! says so instead of answering. An answer is never below a rate a step
//! met (and not above one that failed). Owns that rule; must not measure
//! anything (the lab does) nor judge a sweep.

use std::path::Path;

use serde::Serialize;

use crate::dist::DistSpec;
use crate::model::node::Sim;
use crate::predict::{Objective, Prediction};
use crate::report::node::breaking_point;
use crate::scenario::node::{Scenario, Stage};
use crate::scenario::Clients;
use crate::units::Dur;

use super::node::{scenario_from_reading, CalibrateOptions};
use super::reading::Reading;
use super::CalibrationError;

/// One measured step: the rate offered, what the node showed, and whether
/// the rate met the SLO (`None`: no evidence either way).
#[derive(Clone, Debug)]
pub struct FitStep {
    pub rate: f64,
    pub reading: Reading,
    pub met: Option<bool>,
    /// The latency the step measured, as (quantile, seconds), quantiles
    /// rising; empty when not kept.
    pub latency: Vec<(f64, f64)>,
}

/// How to fit: the scenario options (cores, batch), the virtual time each
/// simulated rate runs for, the seed and the search's precision.
#[derive(Clone, Debug)]
pub struct FitOptions {
    pub calibrate: CalibrateOptions,
    pub duration: Dur,
    pub warmup: Dur,
    pub seed: u64,
    pub precision: f64,
}

impl Default for FitOptions {
    fn default() -> Self {
        FitOptions {
            calibrate: CalibrateOptions::default(),
            duration: Dur(4_000_000_000),
            warmup: Dur(500_000_000),
            seed: 1,
            precision: 0.02,
        }
    }
}

/// A range wider than this (its top over its bottom) is no prediction:
/// the host moved too much between the steps.
pub const HOST_MOVED_SPAN: f64 = 2.0;

/// What the fit found.
#[derive(Clone, Debug, Serialize)]
pub struct Fit {
    /// The step the answer's model was built from (the highest rate with a
    /// reading).
    pub from_rate: f64,
    /// The model's own breaking point, from that step.
    pub model: Option<f64>,
    /// The answer: the model's breaking point held to the steps' evidence
    /// (at least the highest rate met); `None` when the host moved too
    /// much (`host_moved`) or no rate met the objective in the model.
    pub answer: Option<f64>,
    /// The range the answer is given with.
    pub low: Option<f64>,
    pub high: Option<f64>,
    /// Why no answer: the host moved this much between the steps.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_moved: Option<String>,
    /// The highest rate a step met (below any it failed).
    pub met: Option<f64>,
    #[serde(skip)]
    pub prediction: Prediction,
    #[serde(skip)]
    pub scenario: Scenario,
}

fn shortened(mut sc: Scenario, o: &FitOptions) -> Scenario {
    sc.duration = o.duration;
    sc.warmup = o.warmup;
    sc
}

/// The name of the stage that carries what the model lacks.
pub const UNMODELLED: &str = "unmodelled";

/// What the step measured beyond what its model gives at the step's own
/// rate, quantile by quantile (the difference, never below 0, made to
/// rise): the delays the node has and the model lacks (a runtime's
/// queues, pauses too short for the detector, the kernel's network
/// path), as a distribution. `None` when the step kept no latencies or
/// the model already accounts for all of them.
fn residual(sc: &Scenario, step: &FitStep, o: &FitOptions) -> Result<Option<DistSpec>, String> {
    if step.latency.is_empty() {
        return Ok(None);
    }
    let mut at = sc.clone();
    if let Clients::Open { rate, .. } = &mut at.clients {
        *rate = step.rate;
    }
    let run = Sim::new(&at, Path::new("."), o.seed)?.run();
    let h = &run.lifetime.hist;
    let (mut le, mut counts) = (Vec::new(), Vec::new());
    let (mut prev_q, mut top) = (0.0, 0.0f64);
    for &(q, measured) in &step.latency {
        let model = h.value_at_quantile(q.min(1.0)) as f64 / 1e9;
        top = top.max(measured - model);
        let n = ((q - prev_q) * 1e6).round() as u64;
        prev_q = q;
        if n == 0 {
            continue;
        }
        if le.last() == Some(&top) {
            *counts.last_mut().unwrap() += n;
        } else {
            le.push(top);
            counts.push(n);
        }
    }
    if top <= 0.0 {
        return Ok(None);
    }
    Ok(Some(DistSpec::Histogram {
        le_seconds: le,
        counts,
        scale: None,
        shift: Dur::ZERO,
    }))
}

/// `sc` with the unmodelled delay after its last stage (outside the
/// admission permits: it is not the node's queue).
fn with_residual(mut sc: Scenario, d: Option<DistSpec>) -> Scenario {
    if let Some(delay) = d {
        sc.stages.push(Stage::Delay {
            name: UNMODELLED.into(),
            only: Default::default(),
            tick: Dur::ZERO,
            timer: false,
            delay,
        });
        sc.notes.push(format!(
            "{UNMODELLED}: the latency the calibration step measured beyond what this model gives at its rate, quantile by quantile, added to every request"
        ));
    }
    sc
}

fn scenario(r: &Reading, o: &FitOptions) -> Result<Scenario, String> {
    let sc = scenario_from_reading(r, &o.calibrate).map_err(|e: CalibrationError| e.to_string())?;
    Ok(shortened(sc, o))
}

/// The model of `r` with an unmodelled delay (`given`, else measured
/// from `step` against this model), its prediction, and the delay used.
fn predict(
    r: &Reading,
    step: &FitStep,
    given: Option<&Option<DistSpec>>,
    o: &FitOptions,
    obj: &Objective,
) -> Result<(Scenario, Prediction, Option<DistSpec>), String> {
    let sc = scenario(r, o)?;
    let d = match given {
        Some(d) => d.clone(),
        None => residual(&sc, step, o)?,
    };
    let sc = with_residual(sc, d.clone());
    let p = breaking_point(&sc, Path::new("."), o.seed, obj, o.precision)?;
    Ok((sc, p, d))
}

/// The top step's costs under another step's host: its steal, its stalls
/// and its fsyncs.
fn under_host_of(top: &Reading, other: &Reading) -> Reading {
    let mut r = top.clone();
    r.stolen = other.stolen;
    r.stalls = other.stalls.clone();
    r.background_cores = other.background_cores;
    if r.fsync.is_some() && other.fsync.is_some() {
        r.fsync = other.fsync.clone();
    }
    r
}

/// Of `steps`, those whose host was the most and the least in the way:
/// the highest and lowest share of the cores lost (steal and stalls), the
/// slowest and fastest fsyncs; each once.
fn extreme_hosts<'a>(steps: &[&'a FitStep]) -> Vec<&'a FitStep> {
    let lost =
        |s: &FitStep| s.reading.stolen + s.reading.stall_share() + s.reading.background_share();
    let fsync = |s: &FitStep| s.reading.fsync.as_ref().map_or(0.0, |f| f.mean);
    let mut v: Vec<&'a FitStep> = Vec::new();
    for key in [&lost as &dyn Fn(&FitStep) -> f64, &fsync] {
        let by = |a: &&&FitStep, b: &&&FitStep| key(a).total_cmp(&key(b));
        for s in [steps.iter().max_by(by), steps.iter().min_by(by)]
            .into_iter()
            .flatten()
        {
            if !v.iter().any(|x| std::ptr::eq(*x, *s)) {
                v.push(s);
            }
        }
    }
    v
}

/// The highest rate met below the lowest failed (a met rate above a failed
/// one is noise on one side or the other).
fn met_below_failed(steps: &[FitStep]) -> (Option<f64>, Option<f64>) {
    let failed = steps
        .iter()
        .filter(|s| s.met == Some(false))
        .map(|s| s.rate)
        .reduce(f64::min);
    let met = steps
        .iter()
        .filter(|s| s.met == Some(true) && failed.is_none_or(|f| s.rate < f))
        .map(|s| s.rate)
        .reduce(f64::max);
    (met, failed)
}

/// Fit `steps` against `obj`.
pub fn fit(steps: &[FitStep], obj: &Objective, o: &FitOptions) -> Result<Fit, String> {
    let mut by_rate: Vec<&FitStep> = steps.iter().collect();
    by_rate.sort_by(|a, b| a.rate.total_cmp(&b.rate));
    let top = *by_rate.last().ok_or("no step to fit")?;
    let (scenario, prediction, top_residual) = predict(&top.reading, top, None, o, obj)?;
    let model = prediction.breaking_point;
    let mut others: Vec<Option<f64>> = Vec::new();
    if let [.., next, _] = by_rate.as_slice() {
        others.push(predict(&next.reading, next, None, o, obj)?.1.breaking_point);
    }
    for s in extreme_hosts(&by_rate[..by_rate.len() - 1]) {
        let r = under_host_of(&top.reading, &s.reading);
        if r != top.reading {
            others.push(
                predict(&r, top, Some(&top_residual), o, obj)?
                    .1
                    .breaking_point,
            );
        }
    }
    let (met, failed) = met_below_failed(steps);
    let all: Vec<f64> = std::iter::once(model)
        .chain(others)
        .map(|x| x.unwrap_or(0.0))
        .collect();
    let low = all.iter().copied().fold(f64::INFINITY, f64::min);
    let high = all.iter().copied().fold(0.0, f64::max);
    let hold = |x: f64| {
        let x = met.map_or(x, |m| x.max(m));
        failed.map_or(x, |f| x.min(f))
    };
    let moved = (high > 0.0 && (low <= 0.0 || high / low > HOST_MOVED_SPAN)).then(|| {
        format!(
            "the steps' models disagree from {} to {} req/s (more than {HOST_MOVED_SPAN}×): the host moved too much between them for a prediction",
            crate::units::rate(low),
            crate::units::rate(high)
        )
    });
    Ok(Fit {
        from_rate: top.rate,
        model,
        answer: if moved.is_some() {
            None
        } else {
            model.map(hold)
        },
        low: (high > 0.0).then(|| hold(low)),
        high: (high > 0.0).then(|| hold(high)),
        host_moved: moved,
        met,
        prediction,
        scenario,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::reading::Samples;
    use crate::predict::Bound;

    /// A GET node of one core at 100 µs a request: 10,000 req/s at most.
    fn reading(rate: f64, stolen: f64) -> Reading {
        Reading::from_samples(&Samples {
            requests: rate * 2.0,
            seconds: 2.0,
            cpu_cores: rate * 100e-6,
            cpus: 1.0,
            busy_share: Some(rate * 100e-6 + stolen),
            stolen_share: Some(stolen),
            ..Default::default()
        })
        .unwrap()
    }

    fn step(rate: f64, stolen: f64, met: bool) -> FitStep {
        FitStep {
            rate,
            reading: reading(rate, stolen),
            met: Some(met),
            latency: Vec::new(),
        }
    }

    fn p99(ms: u64) -> Objective {
        Objective {
            bounds: vec![Bound {
                quantile: 0.99,
                limit_ns: ms * 1_000_000,
            }],
            max_errors: 0.001,
            min_achieved: 0.95,
        }
    }

    #[test]
    fn the_model_from_the_top_step_answers_within_its_range() {
        let f = fit(
            &[step(2000.0, 0.0, true), step(4000.0, 0.0, true)],
            &p99(10),
            &FitOptions::default(),
        )
        .unwrap();
        let a = f.answer.unwrap();
        assert!((8_000.0..=10_300.0).contains(&a), "{f:?}");
        assert!(f.low.unwrap() <= a && a <= f.high.unwrap(), "{f:?}");
        assert_eq!(f.from_rate, 4000.0);
        assert!(f.host_moved.is_none());
    }

    #[test]
    fn an_answer_is_never_below_a_rate_a_step_met_nor_above_one_it_failed() {
        // The model says about 9,000-10,000; a step met 12,000 (the node
        // did better than its model): the answer is 12,000.
        let mut hi = step(4000.0, 0.0, true);
        hi.rate = 12_000.0;
        hi.reading = reading(4000.0, 0.0);
        let f = fit(
            &[step(2000.0, 0.0, true), hi],
            &p99(10),
            &FitOptions::default(),
        )
        .unwrap();
        assert_eq!(f.answer, Some(12_000.0), "{f:?}");
        assert!(f.model.unwrap() < 12_000.0);
        // A step failed 3,000: the answer is at most that.
        let f = fit(
            &[step(2000.0, 0.0, true), step(3000.0, 0.0, false)],
            &p99(10),
            &FitOptions::default(),
        )
        .unwrap();
        assert_eq!(f.answer, Some(3000.0), "{f:?}");
    }

    #[test]
    fn a_host_that_moved_too_much_leaves_no_answer() {
        // The hypervisor took 80 % of the core in one step and none in the
        // other: the top step's costs under the other's host break at a
        // fifth of the rate.
        let f = fit(
            &[step(1000.0, 0.8, true), step(2000.0, 0.0, true)],
            &p99(10),
            &FitOptions::default(),
        )
        .unwrap();
        assert!(
            f.host_moved
                .as_deref()
                .is_some_and(|w| w.contains("host moved")),
            "{f:?}"
        );
        assert_eq!(f.answer, None);
        assert!(f.model.is_some());
    }

    #[test]
    fn what_a_step_measured_beyond_its_model_is_added_to_every_request() {
        // The step measured 8 ms at its p99 where the model gives well
        // under a millisecond: with the unmodelled delay the model agrees
        // with the step at the step's rate, and breaks earlier for
        // p99 ≤ 10 ms (not by much: a CPU's queue grows fast near its
        // limit).
        let mut s = step(4000.0, 0.0, true);
        s.latency = vec![(0.5, 0.001), (0.9, 0.004), (0.99, 0.008), (1.0, 0.009)];
        let plain = fit(&[step(4000.0, 0.0, true)], &p99(10), &FitOptions::default()).unwrap();
        let f = fit(&[s], &p99(10), &FitOptions::default()).unwrap();
        assert!(
            f.scenario.stages.iter().any(|st| st.name() == UNMODELLED),
            "{:?}",
            f.scenario
        );
        assert!(
            f.model.unwrap() < plain.model.unwrap(),
            "{f:?} vs {plain:?}"
        );
        let mut at = f.scenario.clone();
        if let Clients::Open { rate, .. } = &mut at.clients {
            *rate = 4000.0;
        }
        let run = Sim::new(&at, Path::new("."), 1).unwrap().run();
        let p99 = run.lifetime.hist.value_at_quantile(0.99) as f64 / 1e6;
        assert!((6.0..=10.0).contains(&p99), "{p99} ms at the step's rate");
    }
}
