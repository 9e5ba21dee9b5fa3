//! What the calibration's own steps measured against the SLO, and what it
//! does when that contradicts the model. Every step is a real run at a
//! known rate: one that met the SLO says the breaking point is at least
//! its rate, one that failed it (and failed again when run once more) that
//! it is below. When the model's breaking point lies at or above a rate a
//! step failed twice, the model is missing a delay the node has, and the
//! measurement wins: the calibration runs at most `BISECTIONS` more steps
//! between the bracket's ends and answers its middle, saying so; the
//! model's own figure is kept beside it. A model below a step that met the
//! SLO is said, not changed (the safe side, and weaker evidence); failures
//! with no met rate below them, bisecting included, bound nothing (the
//! model stands, said as inconclusive). Owns the bracket and that rule;
//! must not run load itself (the caller's closure does) nor model anything.

use serde::Serialize;

use crate::experiment::slo::Slo;
use crate::load::driver::Outcome;

/// At most this many steps between the bracket's ends once the model is
/// contradicted: each halves the bracket.
pub const BISECTIONS: usize = 2;

/// Whether a step's outcome at `rate` met `slo` as a sweep's trial would:
/// every latency bound (from intended send times), the error budget,
/// nearly all of its rate answered.
pub fn meets(o: &Outcome, rate: f64, slo: &Slo) -> bool {
    let ms = |q: f64| o.all.value_at_quantile(q) as f64 / 1000.0;
    let latency_ok = slo.bounds.iter().all(|b| {
        let v = if b.quantile >= 1.0 {
            o.all.max() as f64 / 1000.0
        } else {
            ms(b.quantile)
        };
        v <= b.limit_ms
    });
    let errors = o.errors as f64 / (o.counted + o.dropped).max(1) as f64;
    latency_ok
        && errors <= slo.max_errors
        && o.achieved_rate() >= crate::experiment::slo::MIN_ACHIEVED * rate
}

/// The rates the steps bound the breaking point by: the highest that met
/// the SLO below the lowest that failed it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Bracket {
    pub met: Option<f64>,
    pub failed: Option<f64>,
}

impl Bracket {
    /// From each step's rate and whether it met the SLO (`None`: no
    /// evidence, say the generator fell behind): the lowest failed rate,
    /// and the highest met rate below it (a met step above a failed one is
    /// noise on one side or the other: the lower failure stands).
    pub fn from_steps(steps: &[(f64, Option<bool>)]) -> Bracket {
        let rates = |want: bool| steps.iter().filter(move |s| s.1 == Some(want)).map(|s| s.0);
        let failed = rates(false).reduce(f64::min);
        let met = rates(true)
            .filter(|&r| failed.is_none_or(|f| r < f))
            .reduce(f64::max);
        Bracket { met, failed }
    }

    /// Where the model's breaking point stands against the bracket.
    pub fn judge(&self, model: Option<f64>) -> Verdict {
        let m = model.unwrap_or(0.0);
        match (self.met, self.failed) {
            (_, Some(f)) if m >= f => Verdict::ModelAbove,
            (Some(lo), _) if m < lo => Verdict::ModelBelow,
            _ => Verdict::Agrees,
        }
    }

    /// The middle of a closed bracket (the lower end 0 if nothing met).
    pub fn middle(&self) -> Option<f64> {
        self.failed.map(|f| (self.met.unwrap_or(0.0) + f) / 2.0)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The model's breaking point lies within what the steps measured.
    Agrees,
    /// The model says the node meets the SLO at a rate a step failed it.
    ModelAbove,
    /// A step met the SLO above the model's breaking point.
    ModelBelow,
    /// Steps failed the SLO below the model's figure, and none met it,
    /// bisecting included: the node failed wherever it was measured then
    /// (a store still flushing what a preload wrote, a slow phase of the
    /// host), which bounds nothing; the model's figure stands.
    Inconclusive,
}

/// What the steps' evidence did to the prediction (written into
/// `calibration.json`).
#[derive(Clone, Debug, Serialize)]
pub struct Evidence {
    pub bracket: Bracket,
    pub verdict: Verdict,
    /// The model's own breaking point, before the evidence.
    pub model_breaking_point: Option<f64>,
    /// The rates of the steps run between the bracket's ends.
    pub bisected: Vec<f64>,
}

/// One bisecting step at `rate`: `run()` runs it (`None`: the generator
/// fell behind, no evidence); a failure counts only when a second run
/// fails too. Each run is said in a line.
pub fn judge_twice(
    rate: f64,
    slo: &Slo,
    on_line: &mut dyn FnMut(&str),
    run: &mut dyn FnMut() -> Result<Option<Outcome>, String>,
) -> Result<Option<bool>, String> {
    let mut met = None;
    for _ in 0..2 {
        let Some(o) = run()? else {
            return Ok(None);
        };
        let m = meets(&o, rate, slo);
        on_line(&format!(
            "  bracket step at {} req/s: p99 {} ms, {}",
            crate::experiment::slo::fmt_num(rate),
            crate::experiment::slo::fmt_num(o.all.value_at_quantile(0.99) as f64 / 1e3),
            if m { "met the SLO" } else { "failed the SLO" }
        ));
        met = Some(m);
        if m {
            break;
        }
    }
    Ok(met)
}

/// Check the model's breaking point against the steps and, where they
/// contradict it, bisect with `run_step(rate) -> met` (`None`: the step is
/// no evidence); returns the evidence and the breaking point to answer.
pub fn settle(
    steps: &[(f64, Option<bool>)],
    model: Option<f64>,
    run_step: &mut dyn FnMut(f64) -> Result<Option<bool>, String>,
) -> Result<(Evidence, Option<f64>), String> {
    let mut b = Bracket::from_steps(steps);
    let verdict = b.judge(model);
    let mut bisected = Vec::new();
    let answer = match verdict {
        Verdict::Agrees | Verdict::Inconclusive => model,
        // A step met the SLO above the model's figure: the model is
        // pessimistic here, and an answer below a rate the node was seen
        // to meet would contradict its own evidence. The answer is that
        // rate (the lowest the evidence allows); the model's figure is
        // kept beside it and the report says a step did better.
        Verdict::ModelBelow => b.met.or(model),
        Verdict::ModelAbove => {
            for _ in 0..BISECTIONS {
                let Some(mid) = b.middle() else { break };
                bisected.push(mid);
                match run_step(mid)? {
                    Some(true) => b.met = Some(mid),
                    Some(false) => b.failed = Some(mid),
                    None => break,
                }
            }
            // Without a rate that met the SLO the bracket has no lower
            // end, and its middle would be half of a failure, not a
            // measurement.
            if b.met.is_some() {
                b.middle()
            } else {
                model
            }
        }
    };
    let verdict = if verdict == Verdict::ModelAbove && b.met.is_none() {
        Verdict::Inconclusive
    } else {
        verdict
    };
    Ok((
        Evidence {
            bracket: b,
            verdict,
            model_breaking_point: model,
            bisected,
        },
        answer,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bracket_is_the_highest_met_below_the_lowest_failed() {
        let b = Bracket::from_steps(&[
            (2000.0, Some(true)),
            (20_000.0, Some(true)),
            (33_000.0, Some(false)),
            (36_000.0, None),
            (30_000.0, Some(false)),
            (31_000.0, Some(true)),
        ]);
        assert_eq!(b.met, Some(20_000.0));
        assert_eq!(b.failed, Some(30_000.0));
        assert_eq!(b.middle(), Some(25_000.0));
        assert_eq!(b.judge(Some(40_000.0)), Verdict::ModelAbove);
        assert_eq!(b.judge(Some(26_000.0)), Verdict::Agrees);
        assert_eq!(b.judge(Some(10_000.0)), Verdict::ModelBelow);
        assert_eq!(b.judge(None), Verdict::ModelBelow);
    }

    #[test]
    fn a_contradicted_model_gives_way_to_the_bisected_bracket() {
        // Met at 20k, failed at 30k, the model says 40k; the node really
        // breaks at 26k.
        let steps = [(20_000.0, Some(true)), (30_000.0, Some(false))];
        let mut ran = Vec::new();
        let (e, answer) = settle(&steps, Some(40_000.0), &mut |r| {
            ran.push(r);
            Ok(Some(r <= 26_000.0))
        })
        .unwrap();
        assert_eq!(ran, vec![25_000.0, 27_500.0]);
        assert_eq!(e.verdict, Verdict::ModelAbove);
        assert_eq!(e.model_breaking_point, Some(40_000.0));
        assert_eq!(answer, Some(26_250.0));
        // A model within the bracket stands, and nothing more runs.
        let (e, answer) = settle(&steps, Some(27_000.0), &mut |_| panic!("ran")).unwrap();
        assert_eq!((e.verdict, answer), (Verdict::Agrees, Some(27_000.0)));
        // A model below a met step gives way to the step's rate, and keeps
        // its own figure beside it.
        let (e, answer) = settle(&steps, Some(15_000.0), &mut |_| panic!("ran")).unwrap();
        assert_eq!((e.verdict, answer), (Verdict::ModelBelow, Some(20_000.0)));
        assert_eq!(e.model_breaking_point, Some(15_000.0));
    }

    #[test]
    fn failures_with_nothing_met_below_them_bound_nothing() {
        // The first steps after a preload failed (the store still
        // flushing), the model says 2,157, and the bisecting steps meet
        // nothing either or cannot be sent: the model's figure stands.
        let steps = [(2000.0, Some(false)), (1985.0, Some(false))];
        for outcome in [None, Some(false)] {
            let (e, answer) = settle(&steps, Some(2157.0), &mut |_| Ok(outcome)).unwrap();
            assert_eq!(e.verdict, Verdict::Inconclusive, "{outcome:?}");
            assert_eq!(answer, Some(2157.0));
            assert_eq!(e.model_breaking_point, Some(2157.0));
        }
        // One bisecting step that met closes the bracket: the measurement
        // wins again.
        let (e, answer) = settle(&steps, Some(2157.0), &mut |r| Ok(Some(r < 1000.0))).unwrap();
        assert_eq!(e.verdict, Verdict::ModelAbove);
        assert_eq!(e.bracket.met, Some(992.5));
        assert_eq!(answer, e.bracket.middle());
    }
}
