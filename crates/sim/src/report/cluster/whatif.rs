//! A cluster scenario's breaking point in virtual time and its what-ifs
//! (more nodes, one node, another `ack`, a node down, larger values), each searched beside the
//! base's. Owns the search's objective and the cases; must not format
//! (that is `text`).

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::model::cluster::{simulate, ClusterRun};
use crate::predict::{judge_counts, search, Bound, Counts, Objective, Prediction};
use crate::scenario::cluster::ClusterScenario;
use crate::scenario::{Arrivals, Clients};
use crate::units::{human_ns, rate};

use super::*;

/// The scenario's SLO as the breaking-point search's objective.
pub fn objective(sc: &ClusterScenario) -> Objective {
    Objective {
        bounds: vec![Bound {
            quantile: sc.slo.quantile,
            limit_ns: sc.slo.limit.0,
        }],
        max_errors: sc.slo.max_errors,
        min_achieved: 0.95,
    }
}

/// The scenario with an open loop of Poisson arrivals at `rate`.
pub fn at_rate(sc: &ClusterScenario, r: f64) -> ClusterScenario {
    let mut s = sc.clone();
    s.clients = match &sc.clients {
        Clients::Open {
            arrivals,
            write_fraction,
            max_in_flight,
            ..
        } => Clients::Open {
            rate: r,
            arrivals: *arrivals,
            write_fraction: *write_fraction,
            max_in_flight: *max_in_flight,
        },
        Clients::Closed { write_fraction, .. } => Clients::Open {
            rate: r,
            arrivals: Arrivals::Poisson,
            write_fraction: *write_fraction,
            max_in_flight: 1_000_000,
        },
    };
    s
}

pub(super) fn counts(run: &ClusterRun) -> Counts<'_> {
    Counts {
        window_ns: run.window_ns,
        arrived: run.started + run.dropped,
        done: run.done,
        failed: run.errors(),
        lifetime: &run.lifetime.hist,
    }
}

/// The highest open-loop rate at which `sc` meets `obj`, searched in
/// virtual time from the capacity a run of `sc` names.
pub fn breaking_point(
    sc: &ClusterScenario,
    base: &Path,
    seed: u64,
    obj: &Objective,
    precision: f64,
) -> Result<Prediction, String> {
    predict(sc, base, seed, obj, precision).map(|(p, _)| p)
}

/// The prediction, and what a run of `sc` as it is saw: the share of
/// requests failed for want of live replicas, the mean and p99 lifetime.
fn predict(
    sc: &ClusterScenario,
    base: &Path,
    seed: u64,
    obj: &Objective,
    precision: f64,
) -> Result<(Prediction, (f64, f64, u64)), String> {
    let run = simulate(sc, base, seed)?;
    let a = analyse(&run);
    let not_enough = run.not_enough as f64 / run.started.max(1) as f64;
    let seen = (not_enough, a.lifetime.mean_ns, a.lifetime.p99_ns);
    let mut p = Prediction {
        capacity: a.capacity,
        capacity_text: a.capacity_text,
        bottleneck: a.bottleneck,
        breaking_point: None,
        trials: Vec::new(),
    };
    if not_enough > obj.max_errors {
        // No rate helps: requests fail for want of replicas, not load.
        return Ok((p, seen));
    }
    let (lo, trials) = search(a.capacity, precision, &mut |r| {
        let run = simulate(&at_rate(sc, r), base, seed)?;
        Ok(judge_counts(&counts(&run), r, obj))
    })?;
    p.breaking_point = lo;
    p.trials = trials;
    Ok((p, seen))
}

/// One what-if: the change, and what the model predicts with it.
#[derive(Clone, Debug, Serialize)]
pub struct WhatIf {
    pub label: String,
    /// The overrides that make it, as `--set` takes them.
    pub sets: Vec<(String, String)>,
    pub nodes: u32,
    pub up: u32,
    pub ack: u32,
    pub from: u32,
    pub capacity: f64,
    pub bottleneck: Option<String>,
    pub breaking_point: Option<f64>,
    /// Share of requests failed for want of live replicas.
    pub not_enough: f64,
    /// The lifetime at the base scenario's load: mean and p99, ns.
    pub mean_ns: f64,
    pub p99_ns: u64,
    pub error: Option<String>,
}

/// The questions the simulator is for: the base, two more nodes, ack=1
/// (or ack=from when it is 1 already), no fsync on the write's path (when
/// the scenario has a WAL), one more node down.
pub fn what_if_cases(sc: &ClusterScenario) -> Vec<(String, Vec<(String, String)>)> {
    let c = &sc.cluster;
    let mut v = vec![(
        format!(
            "as given: {} nodes{}, ack={} of from={}",
            c.nodes,
            if c.down > 0 {
                format!(" ({} down)", c.down)
            } else {
                String::new()
            },
            c.ack,
            c.from
        ),
        Vec::new(),
    )];
    let more = c.nodes + 2;
    let mut sets = vec![("cluster.nodes".to_string(), more.to_string())];
    if !c.weights.is_empty() {
        sets.push(("cluster.weights".into(), "[]".into()));
    }
    let host = match c.host_cores {
        Some(h) => format!(" (the same {h}-core host)"),
        None => String::new(),
    };
    v.push((format!("with {more} nodes{host}"), sets.clone()));
    if let Some(h) = c.host_cores {
        // The question before buying machines: each node on a host of its
        // own like this one, the load generator elsewhere.
        sets.extend([
            ("cluster.host_cores".to_string(), "none".to_string()),
            ("cluster.cores".to_string(), h.to_string()),
            ("cluster.cpu.client".to_string(), "none".to_string()),
        ]);
        v.push((
            format!("with {more} nodes, each on its own {h}-core host"),
            sets,
        ));
    }
    if c.nodes > 1 {
        // One node against the cluster: no replicas, every operation the
        // coordinator's own (what replication costs, read backwards).
        let mut one = vec![
            ("cluster.nodes".to_string(), "1".to_string()),
            ("cluster.from".to_string(), "1".to_string()),
            ("cluster.ack".to_string(), "1".to_string()),
            ("cluster.down".to_string(), "0".to_string()),
        ];
        if !c.weights.is_empty() {
            one.push(("cluster.weights".into(), "[]".into()));
        }
        v.push((format!("on one node{host}, without replicas"), one));
    }
    if c.ack > 1 {
        v.push(("at ack=1".into(), vec![("cluster.ack".into(), "1".into())]));
    } else if c.from > 1 {
        v.push((
            format!("at ack={}", c.from),
            vec![("cluster.ack".into(), c.from.to_string())],
        ));
    }
    if c.wal.is_some() {
        // `--durability interval(..)` or `none`: the write is acknowledged
        // once in the memtable and the WAL's buffer; no fsync on its path.
        v.push((
            "without the fsync on the write's path (durability interval or none)".into(),
            vec![("cluster.wal".into(), "none".into())],
        ));
    }
    if c.down + 1 < c.nodes {
        let label = if c.down == 0 {
            "with one node down".to_string()
        } else {
            format!("with {} nodes down", c.down + 1)
        };
        v.push((
            label,
            vec![("cluster.down".into(), (c.down + 1).to_string())],
        ));
    }
    if let Some(x) = &c.value {
        // The writes' values as large as the calibration's value step
        // wrote them (any other size: `--set cluster.value.bytes=N`).
        let big = crate::calibrate::value::bigger(x.bytes);
        v.push((
            format!("with {big}-byte values (writes)"),
            vec![("cluster.value.bytes".into(), big.to_string())],
        ));
    }
    v
}

/// Run every what-if's breaking-point search; `on_row` gets each as it is
/// ready.
pub fn what_ifs(
    sc: &ClusterScenario,
    base: &Path,
    seed: u64,
    obj: &Objective,
    precision: f64,
    on_row: &mut dyn FnMut(&WhatIf),
) -> Vec<WhatIf> {
    let mut out = Vec::new();
    for (label, sets) in what_if_cases(sc) {
        let mut w = WhatIf {
            label,
            sets: sets.clone(),
            nodes: sc.cluster.nodes,
            up: sc.live(),
            ack: sc.cluster.ack,
            from: sc.cluster.from,
            capacity: f64::NAN,
            bottleneck: None,
            breaking_point: None,
            not_enough: 0.0,
            mean_ns: 0.0,
            p99_ns: 0,
            error: None,
        };
        match sc.with_overrides(&sets).and_then(|s| {
            w.nodes = s.cluster.nodes;
            w.up = s.live();
            w.ack = s.cluster.ack;
            w.from = s.cluster.from;
            predict(&s, base, seed, obj, precision)
        }) {
            Ok((p, (not_enough, mean, p99))) => {
                w.not_enough = not_enough;
                w.mean_ns = mean;
                w.p99_ns = p99;
                w.capacity = p.capacity;
                w.bottleneck = p.bottleneck;
                w.breaking_point = p.breaking_point;
            }
            Err(e) => w.error = Some(e),
        }
        on_row(&w);
        out.push(w);
    }
    out
}

/// The header of the what-if table.
pub fn what_if_header(slo: &str, load: &str) -> String {
    format!(
        "What if (breaking point: the highest rate meeting {}; capacity: the bottleneck's limit; latency at {}):\n  {:<44} {:>14} {:>8} {:>12} {:>10} {:>10}  {}",
        slo,
        load,
        "",
        "breaking req/s",
        "vs base",
        "capacity",
        "mean",
        "p99",
        "bottleneck"
    )
}

/// One what-if line; `base` is the base's breaking point.
pub fn what_if_line(w: &WhatIf, base: Option<f64>) -> String {
    if let Some(e) = &w.error {
        return format!("  {:<44} error: {e}", w.label);
    }
    let bp = match w.breaking_point {
        Some(b) => rate(b),
        None if w.not_enough > 0.0 => "none (504s)".into(),
        None => "none".into(),
    };
    let vs = match (w.breaking_point, base) {
        (Some(b), Some(x)) if x > 0.0 => format!("{:.2}×", b / x),
        _ => "-".into(),
    };
    let mut s = format!(
        "  {:<44} {:>14} {:>8} {:>12} {:>10} {:>10}  {}",
        w.label,
        bp,
        vs,
        rate(w.capacity),
        human_ns(w.mean_ns),
        human_ns(w.p99_ns as f64),
        w.bottleneck.as_deref().unwrap_or("-")
    );
    if w.not_enough > 0.0 {
        let _ = write!(
            s,
            "; {:.1}% of requests find fewer than ack={} of from={} replicas up",
            w.not_enough * 100.0,
            w.ack,
            w.from
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::what_if_cases;
    use crate::model::cluster::simulate;
    use crate::scenario::cluster::ClusterScenario;

    fn scenario() -> ClusterScenario {
        ClusterScenario::from_toml(
            r#"
name = "t"
duration = "1s"
warmup = "100ms"
[clients]
mode = "open"
rate = 1000.0
write_fraction = 1.0
[cluster]
nodes = 1
from = 1
ack = 1
cores = 2
hop = { dist = "constant", value = "100us" }
[cluster.cpu]
request = { dist = "constant", value = "50us" }
replica = { dist = "constant", value = "30us" }
[cluster.wal]
fsync = { dist = "constant", value = "1ms" }
[cluster.value]
bytes = 100
measured_at = 100
cpu_per_kib = "10us"
wal_per_kib = "5us"
"#,
        )
        .unwrap()
    }

    #[test]
    fn a_larger_value_costs_its_kib_on_the_coordinator_and_in_the_wal() {
        let sc = scenario();
        let run = simulate(&sc, Path::new("."), 1).unwrap();
        // At the measured size: the costs as given.
        assert!((run.role_mean_ns[1][1] - 50_000.0).abs() < 1.0);
        assert_eq!(run.per_write_mean_ns, 0.0);
        // The what-if writes 4 KiB more: 4 × 10 us more CPU, 4 × 5 us more
        // per write in its WAL group.
        let (label, sets) = what_if_cases(&sc)
            .into_iter()
            .find(|(l, _)| l.contains("4096-byte values"))
            .expect("a value what-if");
        let big = sc.with_overrides(&sets).unwrap();
        let run = simulate(&big, Path::new("."), 1).unwrap();
        let kib = (4096.0 - 100.0) / 1024.0;
        assert!(
            (run.role_mean_ns[1][1] - (50_000.0 + kib * 10_000.0)).abs() < 1.0,
            "{label}: {:?}",
            run.role_mean_ns
        );
        assert!((run.per_write_mean_ns - kib * 5_000.0).abs() < 1.0);
        // Reads are not charged.
        assert!((run.role_mean_ns[1][0] - 50_000.0).abs() < 1.0);
    }

    #[test]
    fn one_node_against_the_cluster_is_a_what_if() {
        let mut sc = scenario();
        sc.cluster.nodes = 3;
        sc.cluster.from = 3;
        sc.cluster.ack = 2;
        sc.cluster.down = 1;
        let (_, sets) = what_if_cases(&sc)
            .into_iter()
            .find(|(l, _)| l.starts_with("on one node"))
            .expect("a one-node what-if");
        let one = sc.with_overrides(&sets).unwrap();
        let c = &one.cluster;
        assert_eq!((c.nodes, c.from, c.ack, c.down), (1, 1, 1, 0));
        // Every operation the coordinator's own: no remote replica work.
        let run = simulate(&one, Path::new("."), 1).unwrap();
        assert_eq!(run.nodes.len(), 1);
        assert!(run.ok() > 0);
    }

    #[test]
    fn without_a_value_spec_there_is_no_value_what_if() {
        let mut sc = scenario();
        sc.cluster.value = None;
        assert!(!what_if_cases(&sc).iter().any(|(l, _)| l.contains("values")));
    }
}
