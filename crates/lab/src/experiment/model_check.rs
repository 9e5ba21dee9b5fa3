//! A sweep checks the capacity model against itself: its trials below
//! half the breaking point are a calibration (the rates a calibration
//! would climb through, never near the limit), and its breaking point is
//! the truth, measured minutes later on the same host. Each such trial's
//! per-second samples of the node become a reading
//! (`strata_sim::calibrate::reading::Reading::from_samples`) and the
//! simulator's one fitting path (`calibrate::fit`, which `strata
//! calibrate` uses too) predicts the breaking point and its range. Off by
//! more than a fifth, the fitted model runs once more at the failing rate
//! and each stage is set beside what the sweep measured there. A pure
//! function of the report, so the corpus replays it. Owns which trials
//! count and the comparison; must not model anything itself (the
//! simulator does) nor judge the sweep (the verdict does).

use std::path::Path;

use strata_sim::calibrate::fit::{fit, FitOptions, FitStep};
use strata_sim::calibrate::reading::{Reading, Samples};

use crate::experiment::calibrate::{latency_of, objective};
use crate::experiment::slo::Slo;
use crate::experiment::verdict::readings::mean;
use crate::report::model::{Report, Trial};
use crate::report::model_check::{ModelCheck, StageCompare, OFF_BY};

/// The trials a calibration would take: at most this share of the
/// breaking point.
pub const CALIBRATION_SHARE: f64 = 0.5;

/// A trial's samples of its one node, as the model reads them;
/// `generator_shares`: whether the generator ran on the node's cores.
pub fn samples(t: &Trial, generator_shares: bool) -> Option<Samples> {
    let ss = &t.server;
    if ss.is_empty() {
        return None;
    }
    let writes: u64 = t
        .per_op
        .iter()
        .filter(|o| matches!(o.op.as_str(), "put" | "delete" | "post"))
        .map(|o| o.requests)
        .sum();
    let answered = t.requests.saturating_sub(t.errors) as f64;
    // Each sample covers the interval since the one before (the first:
    // a second).
    let dts: Vec<f64> = ss
        .iter()
        .scan(None, |prev: &mut Option<f64>, s| {
            let dt = prev.map_or(1.0, |p| (s.t_s - p).max(1e-3));
            *prev = Some(s.t_s);
            Some(dt)
        })
        .collect();
    let covered: f64 = dts.iter().sum();
    let fsyncs: f64 = ss.iter().filter_map(|s| s.fsyncs).sum();
    let fsync_busy_s: f64 = ss
        .iter()
        .zip(&dts)
        .filter_map(|(s, dt)| Some(s.fsync_busy? * dt))
        .sum();
    let weighted_p99 = {
        let (s, n) = ss
            .iter()
            .filter_map(|s| Some((s.fsync_p99_ms? / 1e3, s.fsyncs?)))
            .fold((0.0, 0.0), |(s, n), (p, c)| (s + p * c, n + c));
        (n > 0.0).then(|| s / n)
    };
    Some(Samples {
        requests: answered,
        seconds: t.duration_s,
        write_share: writes as f64 / t.requests.max(1) as f64,
        cpu_cores: mean(ss.iter().filter_map(|s| s.cpu_cores))?,
        cpus: ss.iter().find_map(|s| s.cpus).unwrap_or(1.0),
        busy_share: mean(ss.iter().filter_map(|s| s.allowed_cpus_busy)),
        stolen_share: mean(ss.iter().filter_map(|s| s.allowed_cpus_stolen)),
        paused_share: mean(ss.iter().filter_map(|s| s.paused_share)),
        pause_max_s: ss
            .iter()
            .filter_map(|s| s.pause_max_ms)
            .reduce(f64::max)
            .map(|m| m / 1e3),
        fsyncs,
        fsync_busy: fsync_busy_s / covered.max(1e-3),
        fsync_p99_s: weighted_p99,
        writes_per_fsync: mean(ss.iter().filter_map(|s| s.writes_per_fsync)),
        permits: ss.iter().find_map(|s| s.limit),
        generator_cores: t.generator_cpu_cores.filter(|_| generator_shares),
    })
}

/// Whether the generator ran on the node's cores: the CPUs each may use
/// add up to more than the machine has (unpinned, as users run it).
fn generator_shares(r: &Report, t: &Trial) -> bool {
    let node = t.server.iter().find_map(|s| s.cpus).unwrap_or(1.0);
    match r.machine.and_then(|m| Some((m.cores?, m.generator_cpus?))) {
        Some((cores, generator)) => generator + node > cores + 0.5,
        // A remote target, or no record: the generator's cores are not the
        // node's.
        None => false,
    }
}

/// A trial's measured latency spectrum as (quantile, seconds).
pub fn latency(t: &Trial) -> Vec<(f64, f64)> {
    latency_of(&t.spectrum)
}

fn unchecked(r: &Report, why: &str) -> ModelCheck {
    ModelCheck {
        trials: 0,
        up_to: None,
        predicted: None,
        low: None,
        high: None,
        measured: r.breaking_point,
        error: None,
        host_moved: None,
        unchecked: Some(why.to_string()),
        stages: Vec::new(),
        at_rate: None,
    }
}

/// The SLO as `Slo::describe` wrote it (`p99<=10ms, errors<=0.1%`).
fn slo_of(r: &Report) -> Option<Slo> {
    let d = r.slo.as_deref()?;
    let (lat, err) = d.rsplit_once(", errors<=")?;
    Slo::parse(&lat.replace(", ", ","), err).ok()
}

/// The options every check fits with: the same for a live sweep and its
/// replay, so the corpus test sees what the sweep printed.
pub fn options() -> FitOptions {
    FitOptions::default()
}

/// Check the model against the sweep `r`.
pub fn check(r: &Report) -> ModelCheck {
    let Some(bp) = r.breaking_point else {
        return unchecked(r, "the sweep measured no breaking point");
    };
    if r.trials.iter().any(|t| t.per_node.len() > 1) {
        return unchecked(
            r,
            "a sweep of several nodes is checked by the cluster's calibration, not from its trials",
        );
    }
    let Some(slo) = slo_of(r) else {
        return unchecked(r, "the report names no SLO the model can read");
    };
    let steps: Vec<FitStep> = r
        .trials
        .iter()
        .filter(|t| t.offered_rate.is_some_and(|o| o <= bp * CALIBRATION_SHARE))
        .filter_map(|t| {
            Some(FitStep {
                rate: t.offered_rate?,
                reading: Reading::from_samples(&samples(t, generator_shares(r, t))?)?,
                met: t.meets_slo,
                latency: latency(t),
            })
        })
        .collect();
    if steps.is_empty() {
        return unchecked(
            r,
            &format!(
                "no trial ran at or below half the breaking point ({} req/s) with the node's samples",
                crate::experiment::slo::fmt_num((bp * CALIBRATION_SHARE).round())
            ),
        );
    }
    let obj = objective(&slo);
    let f = match fit(&steps, &obj, &options()) {
        Ok(f) => f,
        Err(e) => return unchecked(r, &format!("the model could not be fitted: {e}")),
    };
    let error = f.answer.map(|p| (p - bp) / bp);
    let mut c = ModelCheck {
        trials: steps.len(),
        up_to: Some(f.from_rate),
        predicted: f.answer,
        low: f.low,
        high: f.high,
        measured: Some(bp),
        error,
        host_moved: f.host_moved.clone(),
        unchecked: None,
        stages: Vec::new(),
        at_rate: None,
    };
    if error.is_none_or(|e| e.abs() > OFF_BY) {
        if let Some(failing) = failing_trial(r) {
            c.at_rate = failing.offered_rate;
            let top = steps
                .iter()
                .max_by(|a, b| a.rate.total_cmp(&b.rate))
                .map(|s| &s.reading);
            let shares = generator_shares(r, failing);
            c.stages = top.map_or_else(Vec::new, |top| {
                compare(&f.scenario, top, failing, shares, &obj)
            });
        }
    }
    c
}

/// The trial the verdict read (the deciding one), else the lowest failing.
fn failing_trial(r: &Report) -> Option<&Trial> {
    r.deciding_trial.and_then(|i| r.trials.get(i)).or_else(|| {
        r.trials
            .iter()
            .filter(|t| t.meets_slo == Some(false))
            .min_by(|a, b| {
                a.offered_rate
                    .unwrap_or(0.0)
                    .total_cmp(&b.offered_rate.unwrap_or(0.0))
            })
    })
}

/// The fitted model at the failing trial's rate, stage by stage, beside
/// what the trial measured; the stage the model had most wrong first
/// (the largest ratio either way).
fn compare(
    sc: &strata_sim::Scenario,
    top: &Reading,
    t: &Trial,
    generator_shares: bool,
    obj: &strata_sim::predict::Objective,
) -> Vec<StageCompare> {
    let Some(rate) = t.offered_rate else {
        return Vec::new();
    };
    let mut sc = sc.clone();
    if let strata_sim::scenario::Clients::Open { rate: r, .. } = &mut sc.clients {
        *r = rate;
    }
    let Ok((run, a)) = strata_sim::simulate(&sc, Path::new("."), sc.seed) else {
        return Vec::new();
    };
    let q = obj.bounds.first().map_or(0.99, |b| b.quantile);
    let p = run.lifetime.hist.value_at_quantile(q.min(0.9999)) as f64 / 1e6;
    let s = samples(t, generator_shares);
    let stage = |n: &str| a.stages.iter().find(|x| x.name == n);
    let mut v = vec![StageCompare {
        stage: "the whole request".into(),
        what: format!("p{} ms", crate::experiment::slo::fmt_num(q * 100.0)),
        predicted: p,
        measured: Some(t.latency.p99_ms),
    }];
    if let Some(cpu) = stage("cpu").and_then(|x| x.utilisation) {
        v.push(StageCompare {
            stage: "cpu".into(),
            what: "busy share of the node's cores".into(),
            predicted: cpu,
            measured: s.as_ref().and_then(|s| s.busy_share),
        });
    }
    if let Some(m) = s.as_ref().and_then(Reading::from_samples) {
        v.push(StageCompare {
            stage: "cpu".into(),
            what: "µs of CPU per request".into(),
            predicted: (top.own_cpu_per_request + top.shared_per_request) * 1e6,
            measured: Some((m.own_cpu_per_request + m.shared_per_request) * 1e6),
        });
        if let (Some(a), Some(b)) = (&top.fsync, &m.fsync) {
            v.push(StageCompare {
                stage: "wal".into(),
                what: "mean fsync ms".into(),
                predicted: a.mean * 1e3,
                measured: Some(b.mean * 1e3),
            });
        }
    }
    if let Some(adm) = stage("admission") {
        v.push(StageCompare {
            stage: "admission".into(),
            what: "requests waiting".into(),
            predicted: adm.mean_queue.unwrap_or(0.0),
            measured: mean(t.server.iter().filter_map(|s| s.waiting)),
        });
    }
    let off = |c: &StageCompare| match c.measured {
        Some(m) if m > 0.0 && c.predicted > 0.0 => (c.predicted / m).max(m / c.predicted),
        _ => 1.0,
    };
    v.sort_by(|a, b| off(b).total_cmp(&off(a)));
    v
}

/// The model's score on a set of checked sweeps: how many it could check,
/// how far off it was in each direction.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ModelScore {
    /// Sweeps with a breaking point and trials below half of it.
    pub checked: usize,
    /// Of them, those the model gave an answer for (the others: the host
    /// moved too much, or the model met no rate).
    pub predicted: usize,
    pub host_moved: usize,
    /// Answers within a fifth of the measured breaking point.
    pub within_fifth: usize,
    /// Answers at least twice the measured point, and at most half of it.
    pub over_twice: usize,
    pub under_half: usize,
    /// Answers above and below the measured point by more than a fifth.
    pub over: usize,
    pub under: usize,
    /// Checked sweeps whose stated range held the measured point.
    pub in_range: usize,
    /// The median of |error| over the answers, a share.
    pub median_error: f64,
}

impl ModelScore {
    pub fn of(checks: &[ModelCheck]) -> ModelScore {
        let checked: Vec<&ModelCheck> = checks.iter().filter(|c| c.unchecked.is_none()).collect();
        let errors: Vec<f64> = checked.iter().filter_map(|c| c.error).collect();
        let mut abs: Vec<f64> = errors.iter().map(|e| e.abs()).collect();
        abs.sort_by(f64::total_cmp);
        let count = |f: &dyn Fn(f64) -> bool| errors.iter().filter(|e| f(**e)).count();
        ModelScore {
            checked: checked.len(),
            predicted: errors.len(),
            host_moved: checked.iter().filter(|c| c.host_moved.is_some()).count(),
            within_fifth: count(&|e| e.abs() <= OFF_BY),
            over_twice: count(&|e| e >= 1.0),
            under_half: count(&|e| e <= -0.5),
            over: count(&|e| e > OFF_BY),
            under: count(&|e| e < -OFF_BY),
            in_range: checked
                .iter()
                .filter(|c| c.in_range() == Some(true))
                .count(),
            median_error: abs.get(abs.len() / 2).copied().unwrap_or(f64::NAN),
        }
    }
}
