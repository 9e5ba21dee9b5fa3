//! Service-level objectives a sweep holds each trial to: latency bounds at
//! percentiles (`p99<=10ms,p50<=2ms`), an error budget (`0.1%`), and the
//! rule that a trial must achieve 95% of what it offered; `strata load`'s
//! optional objective (`LoadObjective`); and how a run ended against its
//! objective (`Ending`: the process's exit status, `EXIT_UNMET` when it
//! was not met or no request succeeded, as k6 exits on failed
//! thresholds). Owns parsing and judging one trial; must not run
//! anything.

use crate::report::model::Trial;

/// One latency bound: the `quantile` at most `limit_ms`.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    pub name: String,
    pub quantile: f64,
    pub limit_ms: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Slo {
    pub bounds: Vec<Bound>,
    /// Largest acceptable share of errors, as a fraction.
    pub max_errors: f64,
}

/// A trial must achieve this share of the offered rate.
pub const MIN_ACHIEVED: f64 = 0.95;
/// A trial whose sends were late more often than this did not quite offer
/// its rate: the generator, not only the server, set the pace. Lateness is
/// already in the latencies (they run from the intended send time), so it
/// does not fail a trial by itself; the table and the verdict say it.
pub const MAX_LATE: f64 = 0.01;

/// The exit status of a run whose objective was not met, or in which no
/// request succeeded (`docs/lab.md`, "Exit status").
pub const EXIT_UNMET: u8 = 3;

/// How a run ended against its objective.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    Met,
    /// Not met, and why (printed before the process exits `EXIT_UNMET`).
    Unmet(String),
}

/// `strata load`'s objective, when given: judged on the whole run.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct LoadObjective {
    /// Latency objective of the run, such as p99<=10ms,p99.9<=50ms; when
    /// it is not met (or the run achieved less than 95% of the offered
    /// rate), the command exits with status 3.
    #[arg(long)]
    pub slo: Option<String>,
    /// Error budget of the run (failed connections and failed answers:
    /// 5xx, 401/403, other 4xx but 404), such as 0.1%; past it, the
    /// command exits with status 3.
    #[arg(long)]
    pub max_errors: Option<String>,
}

impl LoadObjective {
    /// The objective, if one was given.
    pub fn parse(&self) -> Result<Option<Slo>, String> {
        let max_errors = self.max_errors.as_deref().unwrap_or("100%");
        match &self.slo {
            Some(latency) => Slo::parse(latency, max_errors).map(Some),
            None if self.max_errors.is_some() => Ok(Some(Slo {
                bounds: Vec::new(),
                max_errors: parse_fraction(max_errors)?,
            })),
            None => Ok(None),
        }
    }
}

/// Why a run counts as failed whatever its objective: none of its
/// requests succeeded.
pub fn nothing_succeeded(requests: u64, errors: u64) -> Option<String> {
    (requests == 0 || errors >= requests)
        .then(|| format!("no request succeeded ({requests} sent, {errors} failed)"))
}

/// How `strata load` ended: not met when no request succeeded, when the
/// objective given (`--slo`, `--max-errors`) failed over the whole run
/// (`latency_ms(q)`: its latency at quantile q), or when the consistency
/// check failed.
pub fn load_ending(
    objective: Option<&Slo>,
    t: &Trial,
    latency_ms: &dyn Fn(f64) -> f64,
    check_failed: bool,
) -> Ending {
    if let Some(why) = nothing_succeeded(t.requests, t.errors) {
        return Ending::Unmet(why);
    }
    if let Some(slo) = objective {
        let why = slo.judge(t, latency_ms);
        if !why.is_empty() {
            return Ending::Unmet(format!(
                "the objective ({}) was not met: {}",
                slo.describe(),
                why.join("; ")
            ));
        }
    }
    if check_failed {
        return Ending::Unmet("the consistency check failed (see the report's section)".into());
    }
    Ending::Met
}

/// A latency bound in milliseconds: the simulator's duration syntax, but
/// the unit may not be left out (is "10" seconds or milliseconds?) and the
/// bound must be above zero.
fn parse_duration_ms(s: &str) -> Result<f64, String> {
    let s = s.trim();
    if !s.ends_with(|c: char| c.is_alphabetic()) {
        return Err(format!("{s}: give a unit (us, ms or s)"));
    }
    let ms = strata_sim::Dur::parse(s)?.secs() * 1e3;
    if !positive(ms) {
        return Err(format!("{s}: must be positive"));
    }
    Ok(ms)
}

pub use crate::units::positive;

/// `0.1%` or `0.001`.
pub fn parse_fraction(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let v = match s.strip_suffix('%') {
        Some(p) => p.trim().parse::<f64>().map(|v| v / 100.0),
        None => s.parse::<f64>(),
    }
    .map_err(|_| format!("{s}: not a fraction (e.g. 0.1% or 0.001)"))?;
    if !(0.0..=1.0).contains(&v) {
        return Err(format!("{s}: must be between 0 and 100%"));
    }
    Ok(v)
}

/// The objective as the command line gives it (`strata sweep` and
/// `strata calibrate` take the same two flags).
#[derive(clap::Args, Clone, Debug)]
pub struct SloArgs {
    /// Latency objective: comma-separated bounds such as p99<=10ms,p99.9<=50ms.
    #[arg(long, default_value = "p99<=10ms")]
    pub slo: String,
    /// Error budget (failed connections and failed answers: 5xx, 401/403,
    /// other 4xx but 404), e.g. 0.1%.
    #[arg(long, default_value = "0.1%")]
    pub max_errors: String,
}

impl SloArgs {
    pub fn parse(&self) -> Result<Slo, String> {
        Slo::parse(&self.slo, &self.max_errors)
    }
}

impl Slo {
    /// Parse `p99<=10ms,p99.9<=50ms,max<=1s` and an error budget.
    pub fn parse(latency: &str, max_errors: &str) -> Result<Slo, String> {
        let mut bounds = Vec::new();
        for part in latency.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (name, limit) = part
                .split_once("<=")
                .or_else(|| part.split_once('<'))
                .ok_or_else(|| format!("{part}: expected e.g. p99<=10ms"))?;
            let name = name.trim().to_ascii_lowercase();
            let quantile = match name.as_str() {
                "max" => 1.0,
                "mean" => return Err("mean: use a percentile (p50, p99, ...)".into()),
                n => {
                    let p: f64 = n
                        .strip_prefix('p')
                        .and_then(|d| d.parse().ok())
                        .ok_or_else(|| format!("{n}: expected p50, p99, p99.9 or max"))?;
                    if !(0.0..100.0).contains(&p) {
                        return Err(format!("{n}: the percentile must be below 100"));
                    }
                    p / 100.0
                }
            };
            bounds.push(Bound {
                name,
                quantile,
                limit_ms: parse_duration_ms(limit)?,
            });
        }
        if bounds.is_empty() {
            return Err("the SLO needs at least one bound, e.g. p99<=10ms".into());
        }
        Ok(Slo {
            bounds,
            max_errors: parse_fraction(max_errors)?,
        })
    }

    pub fn describe(&self) -> String {
        let b: Vec<String> = self
            .bounds
            .iter()
            .map(|b| format!("{}<={}ms", b.name, fmt_num(b.limit_ms)))
            .collect();
        let errors = format!("errors<={}%", fmt_num(self.max_errors * 100.0));
        if b.is_empty() {
            errors
        } else {
            format!("{}, {errors}", b.join(", "))
        }
    }

    /// Why `t` fails (empty if it passes). `latency_ms(q)` reads the
    /// trial's latency at quantile q.
    pub fn judge(&self, t: &Trial, latency_ms: &dyn Fn(f64) -> f64) -> Vec<String> {
        let mut why = Vec::new();
        for b in &self.bounds {
            let v = latency_ms(b.quantile);
            if v > b.limit_ms {
                why.push(format!(
                    "{} {} ms > {} ms",
                    b.name,
                    fmt_num(v),
                    fmt_num(b.limit_ms)
                ));
            }
        }
        let errors = t.errors as f64 / t.requests.max(1) as f64;
        if errors > self.max_errors {
            why.push(format!(
                "errors {}% > {}%",
                fmt_num(errors * 100.0),
                fmt_num(self.max_errors * 100.0)
            ));
        }
        if let Some(offered) = t.offered_rate {
            if t.achieved_rate < MIN_ACHIEVED * offered {
                why.push(format!(
                    "achieved {:.0} req/s, {:.0}% of offered",
                    t.achieved_rate,
                    100.0 * t.achieved_rate / offered
                ));
            }
        }
        why
    }
}

pub use crate::units::fmt_num;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bounds_and_budgets() {
        let s = Slo::parse("p99<=10ms, p99.9<=0.05s,max<=500us", "0.1%").unwrap();
        assert_eq!(s.bounds.len(), 3);
        assert_eq!(s.bounds[0].quantile, 0.99);
        assert!((s.bounds[1].quantile - 0.999).abs() < 1e-12);
        assert_eq!(s.bounds[1].limit_ms, 50.0);
        assert_eq!(s.bounds[2].quantile, 1.0);
        assert_eq!(s.bounds[2].limit_ms, 0.5);
        assert!((s.max_errors - 0.001).abs() < 1e-12);
        assert_eq!(
            s.describe(),
            "p99<=10ms, p99.9<=50ms, max<=0.5ms, errors<=0.1%"
        );
        assert_eq!(parse_fraction("0.02").unwrap(), 0.02);
    }

    #[test]
    fn rejects_nonsense() {
        assert!(Slo::parse("p99<=10", "0").is_err());
        assert!(Slo::parse("p100<=10ms", "0").is_err());
        assert!(Slo::parse("q99<=10ms", "0").is_err());
        assert!(Slo::parse("", "0").is_err());
        assert!(Slo::parse("p99<=10ms", "150%").is_err());
        assert!(Slo::parse("p99<=-1ms", "0").is_err());
    }
}
