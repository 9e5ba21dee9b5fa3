//! `strata calibrate URL,URL,...`: the cluster's breaking point predicted
//! from its nodes' own measurements. Like the single node's calibration it
//! climbs: each step offers one open-loop rate through every node (each
//! connection's node seeded, as `strata load` does), reads every node's
//! `/metrics` before and after (and, when the nodes share this machine,
//! the generator's own CPU), and hands them to the simulator, which builds
//! the cluster's model and names its capacity.
//!
//! On a local cluster the CPU a request costs falls steeply with the load
//! (every request crosses threads and processes several times; a runtime
//! worker that runs out of work parks, and its wake-up costs tens of
//! microseconds on a virtual machine; near the limit workers stop
//! parking), so the capacity a step predicts from its own cost is far
//! below the limit and a climb at 90% of it crawls. The climb therefore
//! fits CPU per request against the nodes' parks per request (and the
//! generator's against its voluntary context switches) over the last
//! steps, predicts the capacity at no parks, and steps to 85% of it (at
//! most three times the last rate); it ends when two predictions agree
//! and the last step ran near the limit (80% of its prediction), or when
//! a step did not keep up. The model takes that last step's own cost.
//!
//! One more step sends its load through the first node only, so that the
//! other nodes do replica work alone: that separates what a coordinator
//! costs from what a replica costs, which the what-ifs need (more nodes
//! change the share of remote operations; a node down removes one). Then
//! the simulator searches the breaking point in virtual time, the steps'
//! own evidence checks it (`bracket`), two steps price a write's value
//! size (`value`), and the simulator answers the what-ifs.
//!
//! Owns that loop; must not model anything itself (`strata_sim` does) nor
//! pace requests (the driver does).

use std::path::Path;

use serde::Serialize;
use strata_sim::calibrate::cluster::{
    fit_sleeps, parks_point, role_split, scenario_from_cluster_metrics, AtLimit,
    ClusterCalibrateOptions, NodeScrape, RoleCosts,
};
use strata_sim::dist::DistSpec;
use strata_sim::model::cluster::simulate;
use strata_sim::report::cluster::{
    analyse, at_rate, breaking_point, size_for, sizing_lines, what_ifs, Sizing, WhatIf,
};
use strata_sim::scenario::cluster::SloSpec;
use strata_sim::units::human_ns;
use strata_sim::units::Dur;

use super::measure::{measure, Measured};
use super::{next_step, objective, CalibrateArgs, Calibration, Step, NEXT_STEP_SHARE};
use crate::experiment::slo::fmt_num;
use crate::experiment::trial::Progress;
use crate::load::nodes::Nodes;
use crate::report::scrape::{fetch_metrics, metric_sums};

/// The role step runs at this share of the last predicted capacity, all
/// of it through one node.
pub const ROLE_STEP_SHARE: f64 = 0.3;

/// The next step runs at this share of the capacity the last one
/// predicted (at its CPU per request at the limit), at most `MAX_GROWTH`
/// times the last rate.
pub const CLUSTER_STEP_SHARE: f64 = 0.85;
pub const MAX_GROWTH: f64 = 3.0;

/// A step at this share of the capacity it predicts (or one that did not
/// keep up) is near the limit: its own CPU per request is the model's.
pub const NEAR_LIMIT: f64 = 0.8;

/// The sleep fit uses this many of the last steps.
pub const FIT_STEPS: usize = 3;

/// A step kept up when it answered this share of what it offered.
pub const KEPT_UP: f64 = 0.97;

/// The CPU per request at the limit, from the steps so far: the nodes'
/// and (one host) the generator's CPU per request against their sleeps
/// per request, extrapolated to none (`fit_sleeps`). None until the steps
/// spread enough to fit the nodes'.
pub fn limit_costs(
    nodes: &[(f64, f64)],
    generator: &[(f64, f64)],
    one_host: bool,
) -> Option<AtLimit> {
    let n = fit_sleeps(nodes)?;
    let g = if one_host {
        fit_sleeps(generator)
    } else {
        None
    };
    let mut note = format!(
        "the CPU a request costs falls as the nodes' runtime workers park less (sleep for want of work, to be woken by the next message); over {} steps it was {} + {} per park, and parks vanish at the limit: the nodes' CPU per request there is taken as {}",
        n.points,
        human_ns(n.work * 1e9),
        human_ns(n.per_sleep * 1e9),
        human_ns(n.work * 1e9)
    );
    if let Some(g) = &g {
        note.push_str(&format!(
            "; the generator's: {} + {} per sleep, taken as {}",
            human_ns(g.work * 1e9),
            human_ns(g.per_sleep * 1e9),
            human_ns(g.work * 1e9)
        ));
    }
    Some(AtLimit {
        nodes: n.work,
        generator: g.map(|g| g.work),
        note,
    })
}

/// What the cluster's calibration adds to a node's.
#[derive(Clone, Debug, Serialize)]
pub struct ClusterCalibration {
    pub nodes: Vec<String>,
    pub from: u32,
    pub ack: u32,
    /// Whether the nodes (and the generator) share this machine's cores.
    pub one_host: bool,
    pub role_step: Option<RoleStep>,
    /// The two steps that priced a write's value size (`value`), when the
    /// workload writes values of `--value-size`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value_step: Option<super::value::ValueStep>,
    /// The load the what-ifs' latencies are taken at (the model's rate).
    pub load: String,
    pub what_if: Vec<WhatIf>,
    /// `--size-for`: the fewest nodes of the named size for the rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizing: Option<Sizing>,
    /// The model's breaking point over the steps' answer, when the steps
    /// found the model that much too high: the sizing was for the asked
    /// rate times this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sizing_factor: Option<f64>,
}

/// The step through one node.
#[derive(Clone, Debug, Serialize)]
pub struct RoleStep {
    pub entry: String,
    pub offered: f64,
    pub achieved: f64,
    /// CPU seconds per unit of work, as measured at this step.
    pub costs: RoleCosts,
    pub notes: Vec<String>,
}

/// Whether the load generator (this process) runs on the nodes' cores:
/// unless the CPUs the nodes may use (the most any reports,
/// `strata_process_cpus`) and the generator's own fit in the machine's
/// together, as when `taskset` put them apart. Unknown counts: it does.
pub(super) fn generator_shares_cores(nodes: &Nodes) -> bool {
    let node_cpus = nodes
        .urls
        .iter()
        .filter_map(|u| fetch_metrics(u).ok())
        .filter_map(|m| {
            metric_sums(&m)
                .get(strata_api::metrics::PROCESS_CPUS)
                .copied()
        })
        .fold(None, |a: Option<f64>, c| Some(a.map_or(c, |a| a.max(c))));
    match (
        node_cpus,
        crate::load::cpu::own_cpus(),
        crate::load::cpu::online_cores(),
    ) {
        (Some(n), Some(g), Some(m)) => n + g > m,
        _ => true,
    }
}

/// The nodes' CPU seconds and client requests over a measurement.
fn totals(scrapes: &[NodeScrape]) -> (f64, f64) {
    let mut cpu = 0.0;
    let mut reqs = 0.0;
    for s in scrapes {
        let (b, a) = (metric_sums(&s.before), metric_sums(&s.after));
        let d = |k: &str| a.get(k).copied().unwrap_or(0.0) - b.get(k).copied().unwrap_or(0.0);
        cpu += d(strata_api::metrics::CPU_SECONDS);
        reqs += d(strata_api::metrics::HTTP_REQUESTS);
    }
    (cpu, reqs)
}

/// Run the cluster's calibration over `nodes`; `on_line` receives the
/// table as it grows.
pub fn run(
    a: &CalibrateArgs,
    nodes: &Nodes,
    out: &Path,
    on_line: &mut dyn FnMut(&str),
) -> Result<Calibration, String> {
    let slo = a.objective.parse()?;
    let t = &a.target;
    let workload = t.workload()?;
    t.maybe_preload(nodes, &workload)?;
    let n = nodes.len() as u32;
    // Replication as the nodes are configured (requests carry no ack or
    // from, so they get the node's default: from = replication, ack =
    // from / 2 + 1).
    let (from, members) = match strata_client::control::cluster_view(
        &nodes.urls[0],
        std::time::Duration::from_secs(2),
    ) {
        Ok(v) => (v.head.replication as u32, v.head.members.len() as u32),
        Err(e) => {
            on_line(&format!(
                "{}: /v0/cluster: {e}; taking replication min(3, {n})",
                nodes.urls[0]
            ));
            (n.min(3), n)
        }
    };
    if members != n {
        on_line(&format!(
            "note: the cluster has {members} members and {n} URLs were given; the model has {n} nodes"
        ));
    }
    let from = from.clamp(1, n);
    let ack = from / 2 + 1;
    let one_host = nodes.all_loopback();
    // Whether this generator takes the nodes' cores: on one host, unless
    // the nodes and the generator were given CPUs apart (their counts fit
    // in the machine's together).
    let shares = one_host && generator_shares_cores(nodes);
    let so = SloSpec {
        quantile: slo.bounds.first().map_or(0.99, |b| b.quantile),
        limit: Dur::from_secs_f64(slo.bounds.first().map_or(0.01, |b| b.limit_ms / 1e3)),
        max_errors: slo.max_errors,
    };
    let opts = |roles: Option<RoleCosts>,
                gen: Option<f64>,
                hop: Option<DistSpec>,
                at_limit: Option<AtLimit>,
                rate: f64| {
        ClusterCalibrateOptions {
            from,
            ack,
            one_host,
            cores: a.cores,
            generator_cpu_s: gen.filter(|_| shares),
            roles,
            hop,
            at_limit,
            slo: so.clone(),
            rate: None,
            name: Some(format!("{} nodes calibrated at {} req/s", n, fmt_num(rate))),
        }
    };
    let progress = Progress::new(t.quiet || t.json);
    on_line(&format!(
        "{} nodes, replication ack={ack} of from={from}, {}",
        n,
        if shares {
            "all on this machine: one host's cores shared by the nodes and this generator"
        } else if one_host {
            "all on this machine, the nodes' cores apart from this generator's"
        } else {
            "each node on its own machine"
        }
    ));
    on_line(&format!(
        "{:>10} {:>10} {:>9} {:>9} {:>9} {:>12} {:>9} {:>8} {:>9} {:>12}  {}",
        "offered",
        "achieved",
        "nodes cpu",
        "lab cpu",
        "other cpu",
        "cpu/req µs",
        "parks/req",
        "p99 ms",
        "model p99",
        "capacity",
        "bottleneck"
    ));
    let mut steps: Vec<Step> = Vec::new();
    let mut capacities = Vec::new();
    let mut last: Option<Measured> = None;
    let mut rate = a.start_rate;
    let mut converged = false;
    let mut hop: Option<DistSpec> = None;
    let mut others = Vec::new();
    // (sleeps per request, CPU seconds per request) of each step: the
    // nodes' runtime parks, the generator's voluntary context switches.
    let mut node_points = Vec::new();
    let mut gen_points = Vec::new();
    let mut at_limit = None;
    let mut near_limit = false;
    for i in 0..a.steps {
        let label = format!("step {} at {} req/s: ", i + 1, fmt_num(rate));
        let m = measure(
            a,
            nodes,
            nodes,
            &workload,
            rate,
            t.seed.wrapping_add(i as u64),
            &label,
            &progress,
        )?;
        let (cpu, reqs) = totals(&m.scrapes);
        let parks = parks_point(&m.scrapes).map_err(|e| e.to_string())?;
        if let Some(p) = parks {
            node_points.push(p);
        }
        if let (Some(g), Some(z)) = (m.generator_cpu_s, m.generator_sleeps) {
            if reqs > 0.0 {
                gen_points.push((z / reqs, g / reqs));
            }
        }
        at_limit = limit_costs(&node_points, &gen_points, shares);
        let sc = scenario_from_cluster_metrics(
            &m.scrapes,
            &opts(None, m.generator_cpu_s, None, at_limit.clone(), rate),
        )
        .map_err(|e| e.to_string())?;
        // The least loaded step's hop: at higher loads the round trips
        // include queueing for cores, which the model adds itself.
        let mean = |d: &DistSpec| {
            strata_sim::dist::Sampler::compile(d, Path::new("."))
                .map(|s| s.mean())
                .unwrap_or(f64::INFINITY)
        };
        if hop.as_ref().is_none_or(|h| mean(&sc.cluster.hop) < mean(h)) {
            hop = Some(sc.cluster.hop.clone());
        }
        let an = analyse(&simulate(&sc, Path::new("."), sc.seed)?);
        // The model's latency at this step's own rate, beside the one the
        // generator measured.
        let at_step = simulate(&at_rate(&sc, rate), Path::new("."), sc.seed)?;
        let model_p99 = at_step.lifetime.hist.value_at_quantile(0.99) as f64 / 1e6;
        let step = Step {
            offered: rate,
            achieved: m.outcome.achieved_rate(),
            node_cpu_cores: Some(cpu / m.secs),
            cpu_per_request_us: Some(cpu / reqs.max(1.0) * 1e6),
            capacity: an.capacity,
            bottleneck: an.bottleneck.clone(),
            generator_cpu_cores: if shares {
                m.generator_cpu_s.map(|g| g / m.secs)
            } else {
                None
            },
            parks_per_request: parks.map(|p| p.0),
            p99_ms: Some(m.outcome.all.value_at_quantile(0.99) as f64 / 1e3),
            model_p99_ms: Some(model_p99),
            generator_sleeps_per_request: m
                .generator_sleeps
                .filter(|_| reqs > 0.0)
                .map(|z| z / reqs),
            overloaded: super::overloaded(&m.outcome, rate),
            generator_behind: false,
            shared_cpu_per_request_us: None,
            met_slo: Some(super::bracket::meets(&m.outcome, rate, &slo)),
            // The cluster's model does not price steal (a single node's
            // does): not measured here.
            stolen_share: None,
        };
        // What the machine was busy with besides the nodes and the lab
        // (the driver's window is the steps' seconds; the busy counter
        // spans the same load).
        let other = if one_host {
            m.host_busy_s
                .zip(m.generator_cpu_s)
                .map(|(h, g)| ((h - g - cpu) / m.secs).max(0.0))
        } else {
            None
        };
        if let Some(o) = other {
            others.push(o);
        }
        on_line(&format!(
            "{:>10.0} {:>10.0} {:>9} {:>9} {:>9} {:>12} {:>9} {:>8} {:>9} {:>12.0}  {}",
            step.offered,
            step.achieved,
            step.node_cpu_cores
                .map(fmt_num)
                .unwrap_or_else(|| "-".into()),
            step.generator_cpu_cores
                .map(fmt_num)
                .unwrap_or_else(|| "-".into()),
            other.map(fmt_num).unwrap_or_else(|| "-".into()),
            step.cpu_per_request_us
                .map(fmt_num)
                .unwrap_or_else(|| "-".into()),
            step.parks_per_request
                .map(fmt_num)
                .unwrap_or_else(|| "-".into()),
            step.p99_ms.map(fmt_num).unwrap_or_else(|| "-".into()),
            step.model_p99_ms.map(fmt_num).unwrap_or_else(|| "-".into()),
            step.capacity,
            step.bottleneck.as_deref().unwrap_or("-")
        ));
        capacities.push(an.capacity);
        let kept_up = step.achieved >= KEPT_UP * step.offered;
        near_limit = !kept_up || step.offered >= NEAR_LIMIT * an.capacity;
        steps.push(step);
        last = Some(m);
        if !kept_up {
            // At the limit: its cost per request is the limit's; no
            // higher step can tell more.
            on_line("(the cluster did not keep up with this step: the climb ends here)");
            converged = true;
            break;
        }
        let next = next_step(&capacities, a.tolerance);
        if next.is_none() && near_limit {
            converged = true;
            break;
        }
        // Two predictions agree but this step was far below them: one
        // more, near the limit, to measure the cost there.
        let r = next.unwrap_or(an.capacity * NEXT_STEP_SHARE);
        rate = (r / NEXT_STEP_SHARE * CLUSTER_STEP_SHARE).min(rate * MAX_GROWTH);
    }
    let last = last.ok_or("no step ran")?;
    // A last step near the limit measured the cost there: the model takes
    // it as it is. Else the cost is extrapolated to no parks.
    if near_limit {
        at_limit = None;
    } else if let Some(x) = &at_limit {
        on_line(&format!(
            "the last step ran far below the limit: its CPU per request is extrapolated to no parks ({})",
            x.note
        ));
    }
    let busiest_other = others.iter().copied().fold(0.0, f64::max);
    if busiest_other > 0.15 {
        on_line(&format!(
            "!!! other processes used up to {} cores of this machine during the steps: the nodes had less than the model gives them, and the prediction is too high by about that share; calibrate on a quiet machine",
            fmt_num(busiest_other)
        ));
    }
    let last_rate = steps.last().map_or(rate, |s| s.offered);
    // The role step: everything through the first node.
    let role_rate = capacities.last().copied().unwrap_or(rate) * ROLE_STEP_SHARE;
    let entry = Nodes::parse(&nodes.urls[0])?;
    let label = format!(
        "through {} only at {} req/s: ",
        nodes.urls[0],
        fmt_num(role_rate)
    );
    let role_step = if from > 1 && n > 1 {
        let m = measure(
            a,
            nodes,
            &entry,
            &workload,
            role_rate,
            t.seed.wrapping_add(1000),
            &label,
            &progress,
        )?;
        let per_park = fit_sleeps(&node_points).map(|f| f.per_sleep);
        match role_split(&m.scrapes, 0, from, per_park) {
            Ok((costs, notes)) => {
                on_line(&format!(
                    "role step through {} only at {} req/s (achieved {}): coordinator {} µs per request + {} µs per remote operation, replica {} µs per operation, own replica operation {} µs",
                    nodes.urls[0],
                    fmt_num(role_rate.round()),
                    fmt_num(m.outcome.achieved_rate().round()),
                    fmt_num(costs.request * 1e6),
                    fmt_num(costs.send * 1e6),
                    fmt_num(costs.replica * 1e6),
                    fmt_num(costs.local * 1e6)
                ));
                Some(RoleStep {
                    entry: nodes.urls[0].clone(),
                    offered: role_rate,
                    achieved: m.outcome.achieved_rate(),
                    costs,
                    notes,
                })
            }
            Err(e) => {
                on_line(&format!(
                    "role step: {e}; the roles are split by assumption"
                ));
                None
            }
        }
    } else {
        None
    };
    let sc = scenario_from_cluster_metrics(
        &last.scrapes,
        &opts(
            role_step.as_ref().map(|r| r.costs),
            last.generator_cpu_s,
            hop,
            at_limit,
            last_rate,
        ),
    )
    .map_err(|e| e.to_string())?;
    let obj = objective(&slo);
    let base = Path::new(".");
    let mut prediction = breaking_point(&sc, base, sc.seed, &obj, 0.02)?;
    // The steps' own evidence against the model's breaking point; a step
    // between the bracket's ends is judged twice before it fails.
    let judged: Vec<(f64, Option<bool>)> = steps
        .iter()
        .filter(|s| !s.generator_behind)
        .map(|s| (s.offered, s.met_slo))
        .collect();
    let mut k = 0u64;
    let mut bisect = |r: f64| -> Result<Option<bool>, String> {
        let label = format!("bracket step at {} req/s: ", fmt_num(r));
        super::bracket::judge_twice(r, &slo, on_line, &mut || {
            k += 1;
            let seed = t.seed.wrapping_add(200 + k);
            let m = measure(a, nodes, nodes, &workload, r, seed, &label, &progress)?;
            Ok(Some(m.outcome))
        })
    };
    let (evidence, answer) =
        super::bracket::settle(&judged, prediction.breaking_point, &mut bisect)?;
    prediction.breaking_point = answer;
    // What a write's value size costs: two steps after the others (the
    // larger values they write would change the store the others measure).
    let value_rate = capacities.last().copied().unwrap_or(rate) * super::value::VALUE_STEP_SHARE;
    let value_step = super::value::steps(a, nodes, value_rate, t.seed, &progress, on_line)?;
    let mut sc = sc;
    sc.cluster.value = value_step.as_ref().map(|v| v.spec.clone());
    let what_if = what_ifs(&sc, base, sc.seed, &obj, 0.02, &mut |_| {});
    // The model's error the steps measured, carried into the sizing: a
    // model the steps found too high by a factor is sized for that factor
    // more than asked (never less: a model found low sizes as it is, on
    // the safe side).
    let sizing_factor = evidence
        .model_breaking_point
        .zip(answer)
        .filter(|(m, a)| *a > 0.0 && m > a)
        .map(|(m, a)| m / a);
    let sizing = match a.sizing.query() {
        Some(mut q) => {
            q.rate *= sizing_factor.unwrap_or(1.0);
            Some(size_for(&sc, &q, base, sc.seed, &obj, &mut |_| {})?)
        }
        None => None,
    };
    let scenario_file = super::save_scenario(out, sc.to_toml()?)?;
    let c = Calibration {
        target: t.url.clone(),
        workload: workload.describe(),
        slo: slo.describe(),
        steps,
        converged,
        prediction,
        scenario_file,
        cluster: Some(ClusterCalibration {
            nodes: nodes.urls.clone(),
            from,
            ack,
            one_host,
            role_step,
            value_step,
            load: strata_sim::report::cluster::describe_load(&sc),
            what_if,
            sizing,
            sizing_factor,
        }),
        evidence: Some(evidence),
        range: None,
        host_moved: None,
    };
    super::save_calibration(out, &c)?;
    Ok(c)
}

/// The what-if lines of a cluster's calibration.
pub fn what_if_lines(c: &ClusterCalibration, slo: &str) -> Vec<String> {
    let mut v = vec![strata_sim::report::cluster::what_if_header(slo, &c.load)];
    let base = c.what_if.first().and_then(|w| w.breaking_point);
    for w in &c.what_if {
        v.push(strata_sim::report::cluster::what_if_line(w, base));
    }
    if let Some(z) = &c.sizing {
        v.push(String::new());
        if let Some(f) = c.sizing_factor {
            v.push(format!(
                "The steps found the model {}× too high: the sizing below is for {} req/s, that many times the rate asked.",
                fmt_num((f * 100.0).round() / 100.0),
                fmt_num(z.rate.round())
            ));
        }
        v.extend(sizing_lines(z, slo));
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cost_at_the_limit_comes_from_the_last_steps_parks() {
        // Nodes: 30 µs + 18 µs per park; generator: 8 µs + 5 µs per sleep.
        let nodes: Vec<(f64, f64)> = [8.3, 7.4, 2.0, 0.3]
            .iter()
            .map(|&p| (p, 30e-6 + 18e-6 * p))
            .collect();
        let generator: Vec<(f64, f64)> = [6.0, 5.0, 2.0, 1.0]
            .iter()
            .map(|&z| (z, 8e-6 + 5e-6 * z))
            .collect();
        let a = limit_costs(&nodes, &generator, true).unwrap();
        assert!((a.nodes - 30e-6).abs() < 1e-12, "{a:?}");
        assert!((a.generator.unwrap() - 8e-6).abs() < 1e-12, "{a:?}");
        assert!(a.note.contains("per park"), "{}", a.note);
        // Nodes on machines of their own: the generator is not modelled.
        assert!(limit_costs(&nodes, &generator, false)
            .unwrap()
            .generator
            .is_none());
        // One step, or steps that parked alike: nothing to extrapolate.
        assert!(limit_costs(&nodes[..1], &generator, true).is_none());
        assert!(limit_costs(&[(8.3, 200e-6), (8.1, 190e-6)], &generator, true).is_none());
    }
}
