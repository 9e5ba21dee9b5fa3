//! A node scenario's breaking point: the search of `predict` over open-loop
//! rates, each rate a run of the node's pipeline judged by its counts.
//! Owns running the node's model for the search; must not judge (that is
//! `predict`) nor print.

use std::path::Path;

use crate::model::node::{Run, Sim};
use crate::predict::{judge_counts, search, Counts, Objective, Prediction, Trial};
use crate::scenario::node::Scenario;
use crate::scenario::Clients;

fn with_rate(sc: &Scenario, rate: f64) -> Result<Scenario, String> {
    let mut s = sc.clone();
    match &mut s.clients {
        Clients::Open { rate: r, .. } => *r = rate,
        Clients::Closed { .. } => {
            return Err("the breaking point is searched with open-loop clients".into())
        }
    }
    Ok(s)
}

fn judge(run: &Run, rate: f64, obj: &Objective) -> Trial {
    let p = &run.probes;
    let c = Counts {
        window_ns: run.window_ns,
        arrived: p.request_start + p.arrivals_dropped,
        done: p.request_done,
        failed: p.request_refused
            + p.request_timeout
            + p.request_failed
            + p.persist_failed
            + p.arrivals_dropped,
        lifetime: &run.lifetime.hist,
    };
    judge_counts(&c, rate, obj)
}

/// Search the open-loop rate of `sc` for the highest that meets `obj`:
/// first the capacity the analysis names, then bisection between a
/// passing and a failing rate until they are within `precision` (a
/// fraction) of each other.
pub fn breaking_point(
    sc: &Scenario,
    base: &Path,
    seed: u64,
    obj: &Objective,
    precision: f64,
) -> Result<Prediction, String> {
    let (_, a) = super::simulate(sc, base, seed).map_err(|e| e.to_string())?;
    let capacity = a.capacity;
    if !capacity.is_finite() || capacity <= 0.0 {
        return Err("the scenario names no finite capacity to search below".into());
    }
    let (lo, trials) = search(capacity, precision, &mut |rate| {
        let run = Sim::new(&with_rate(sc, rate)?, base, seed)?.run();
        Ok(judge(&run, rate, obj))
    })?;
    Ok(Prediction {
        capacity,
        capacity_text: a.capacity_text,
        bottleneck: a.bottleneck,
        breaking_point: lo,
        trials,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::Bound;

    /// An M/D/1 server of 100 µs: capacity 10,000 req/s. With a bound far
    /// above any wait the breaking point is the capacity's neighbourhood;
    /// with a tight bound it is lower.
    #[test]
    fn tighter_bounds_break_earlier() {
        let sc: Scenario = toml::from_str(
            r#"
name = "md1"
duration = "20s"
warmup = "1s"
[clients]
mode = "open"
rate = 5000.0
arrivals = "poisson"
[[stages]]
kind = "workers"
name = "cpu"
servers = 1
service = { dist = "constant", value = "100us" }
"#,
        )
        .unwrap();
        let loose = Objective {
            bounds: vec![Bound {
                quantile: 0.99,
                limit_ns: 1_000_000_000,
            }],
            max_errors: 0.001,
            min_achieved: 0.95,
        };
        let p = breaking_point(&sc, Path::new("."), 1, &loose, 0.02).unwrap();
        let b = p.breaking_point.unwrap();
        assert!((p.capacity - 10_000.0).abs() < 1.0, "{}", p.capacity);
        assert!((9_000.0..=10_300.0).contains(&b), "{b}");
        // p99 ≤ 1 ms: M/D/1 waits reach that near 90-95% utilisation.
        let tight = Objective {
            bounds: vec![Bound {
                quantile: 0.99,
                limit_ns: 1_000_000,
            }],
            max_errors: 0.001,
            min_achieved: 0.95,
        };
        let t = breaking_point(&sc, Path::new("."), 1, &tight, 0.02)
            .unwrap()
            .breaking_point
            .unwrap();
        assert!(t < b && t > 5_000.0, "tight {t}, loose {b}");
    }
}
