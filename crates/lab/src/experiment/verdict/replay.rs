//! A sweep's verdict judged again from its report alone: the trials, each
//! run's reasons, the deciding trial, the machine and the nodes not seen,
//! as `report.json` keeps them. A pure function of the report, so the
//! sweep prints what it gives, `strata report judge DIR` gives it again,
//! and the corpus's recorded sweeps are judged by it in CI. Every reading
//! is computed anew from the trials' raw figures (the thresholds of this
//! build, not those the sweep ran with). Reports of schema 1 (before the
//! evidence was kept whole) are read too: each run's reasons are judged
//! again from its percentiles and the SLO's words, the deciding trial is
//! found from the breaking point, and the machine is unknown. Owns the
//! reading of a report as evidence; must not run load or write files.

use crate::experiment::slo::{parse_fraction, Slo};
use crate::report::model::{Machine, Report, RunKind, Trial};

use super::{causes, verdict, Evidence, Verdict};

/// The verdict of the sweep in `r`, judged again; an error for a report
/// that is not a sweep's or has no trials.
pub fn replay(r: &Report) -> Result<Verdict, String> {
    if r.kind != RunKind::Sweep {
        return Err("not a sweep's report: a load run has no verdict".into());
    }
    let slo = r.slo.as_deref().map(slo_of).transpose()?;
    let machine = r.machine.unwrap_or(Machine {
        objective_ms: slo
            .as_ref()
            .and_then(|s| s.bounds.iter().map(|b| b.limit_ms).min_by(f64::total_cmp)),
        ..Machine::default()
    });
    let mut trials = r.trials.clone();
    for t in &mut trials {
        t.resources = causes::readings(t, machine);
        if r.schema < 2 && t.meets_slo == Some(false) {
            if let Some(s) = &slo {
                t.why = s.judge(t, &|q| latency_at(t, q));
            }
            if t.why.is_empty() {
                t.why = vec![
                    "as recorded; schema 1 kept no reasons, and its percentiles meet the SLO"
                        .into(),
                ];
            }
        }
    }
    let deciding = match r.deciding_trial {
        Some(i) if i < trials.len() => Some(i),
        Some(i) => {
            return Err(format!(
                "deciding_trial {i} is past the {} trials",
                trials.len()
            ))
        }
        None if r.schema < 2 => deciding_of(&trials, r.breaking_point),
        None => None,
    };
    Ok(verdict(&Evidence {
        trials: &trials,
        deciding: deciding.map(|i| (&trials[i], trials[i].why.as_slice())),
        breaking_point: r.breaking_point,
        range: r.breaking_range,
        machine,
        unseen: &r.unseen,
        cut_short: r.cut_short,
    }))
}

/// The SLO from its words (`p99<=10ms, errors<=0.1%`, as `Slo::describe`
/// writes them).
fn slo_of(words: &str) -> Result<Slo, String> {
    let mut latency = Vec::new();
    let mut errors = "100%".to_string();
    for part in words.split(',').map(str::trim) {
        match part.strip_prefix("errors<=") {
            Some(e) => errors = e.to_string(),
            None => latency.push(part),
        }
    }
    parse_fraction(&errors)?;
    Slo::parse(&latency.join(","), &errors).map_err(|e| format!("the report's slo: {e}"))
}

/// A trial's latency at quantile `q`, ms, from its percentiles (or its
/// spectrum's first point at or past `q`).
fn latency_at(t: &Trial, q: f64) -> f64 {
    let l = &t.latency;
    let at = [
        (0.5, l.p50_ms),
        (0.9, l.p90_ms),
        (0.95, l.p95_ms),
        (0.99, l.p99_ms),
        (0.999, l.p999_ms),
        (1.0, l.max_ms),
    ];
    if let Some((_, v)) = at.iter().find(|(x, _)| (x - q).abs() < 1e-9) {
        return *v;
    }
    t.spectrum
        .iter()
        .find(|p| p.quantile >= q)
        .map(|p| p.latency_ms)
        .unwrap_or(l.max_ms)
}

/// The deciding trial of a schema-1 sweep: the last failing run at the
/// lowest failing rate above the breaking point.
fn deciding_of(trials: &[Trial], pass: Option<f64>) -> Option<usize> {
    let fail = trials
        .iter()
        .filter(|t| t.meets_slo == Some(false))
        .filter_map(|t| t.offered_rate)
        .filter(|&r| pass.is_none_or(|p| r > p))
        .min_by(f64::total_cmp)?;
    trials
        .iter()
        .rposition(|t| t.offered_rate == Some(fail) && t.meets_slo == Some(false))
}
