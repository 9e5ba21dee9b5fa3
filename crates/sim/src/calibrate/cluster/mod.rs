//! A cluster scenario built from every node's `/metrics` before and after
//! a load: the CPU a client request costs across the cluster (all nodes'
//! process CPU over the requests they answered), split into roles (the
//! coordinator's work per request and per remote replica operation, a
//! replica's per operation it serves, the coordinator's own replica
//! operation) by a step whose load enters through one node only; the
//! network hop from the coordinators' replica round trips; each node's
//! WAL from the fsync histograms; admission from the node's limits; the
//! load generator's CPU when it shares the nodes' host. Owns the mapping
//! from the nodes' metrics to the cluster model; must not fetch anything
//! (the lab does) nor run the model.
//!
//! Here: the options and the scenario built; `scrape` one node's two
//! scrapes, `roles` the CPU split by role, `sleeps` CPU per request as
//! work plus sleeps.

use std::collections::BTreeMap;

use super::{CalibrationError, Hist, HistDist};

mod roles;
mod scrape;
mod sleeps;

use crate::dist::DistSpec;
use crate::scenario::cluster::{
    AdmissionSpec, ClusterScenario, ClusterSpec, CpuSpec, SloSpec, WalSpec,
};
use crate::scenario::{Arrivals, Clients};
use crate::units::{human_ns, rate, Dur};
pub use roles::{role_split, RoleCosts};
pub use scrape::{authority, node_delta, NodeDelta, NodeScrape};
pub use sleeps::{fit_sleeps, parks_point, SleepFit};

/// The CPU per request at the limit, when known better than this load's.
#[derive(Clone, Debug)]
pub struct AtLimit {
    /// The nodes' CPU seconds per client request.
    pub nodes: f64,
    /// The load generator's (one host only).
    pub generator: Option<f64>,
    /// How they were found.
    pub note: String,
}

/// How to turn the nodes' metrics into a cluster scenario.
#[derive(Clone, Debug)]
pub struct ClusterCalibrateOptions {
    /// Replication: the key's replicas and the replies awaited.
    pub from: u32,
    pub ack: u32,
    /// All nodes run on one host (their CPU is one pool).
    pub one_host: bool,
    /// Cores: the host's (one host) or each node's; default: the CPUs the
    /// nodes report they may run on.
    pub cores: Option<u32>,
    /// The load generator's CPU seconds over the same window, when it
    /// shares the nodes' host.
    pub generator_cpu_s: Option<f64>,
    /// The roles' costs found by a step through one node (`role_split`);
    /// scaled to this load's total. Without it: half of a request's CPU to
    /// the coordinator, half to its replica operations.
    pub roles: Option<RoleCosts>,
    /// The hop between nodes, if known better than this load's round
    /// trips tell (they include queueing for the replica's cores at a high
    /// load, which the model adds itself): the lab takes the least loaded
    /// step's.
    pub hop: Option<DistSpec>,
    /// CPU per request at the limit (from `fit_sleeps` over the steps);
    /// without it, this load's.
    pub at_limit: Option<AtLimit>,
    /// The objective the what-ifs are judged by.
    pub slo: SloSpec,
    /// Open-loop rate of the scenario; default: 80% of the capacity.
    pub rate: Option<f64>,
    pub name: Option<String>,
}

fn gamma(mean_s: f64) -> DistSpec {
    let ns = (mean_s * 1e9).round().max(1.0);
    DistSpec::Gamma {
        mean: Dur(ns as u64),
        sd: Dur((ns / 2.0).round().max(1.0) as u64),
        shift: Dur::ZERO,
    }
}

/// Sum histograms with the same buckets.
fn merge(hs: &[Hist]) -> Option<Hist> {
    let mut by_le: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
    let (mut sum, mut count) = (0.0, 0.0);
    for h in hs {
        for &(le, c) in &h.buckets {
            let e = by_le.entry(le.to_bits() ^ (1 << 63)).or_insert((le, 0.0));
            e.1 += c;
        }
        sum += h.sum;
        count += h.count;
    }
    if by_le.is_empty() {
        return None;
    }
    let mut buckets: Vec<(f64, f64)> = by_le.into_values().collect();
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    Some(Hist {
        buckets,
        sum,
        count,
    })
}

/// Build the cluster scenario from every node's scrapes around one load.
pub fn scenario_from_cluster_metrics(
    scrapes: &[NodeScrape],
    opts: &ClusterCalibrateOptions,
) -> Result<ClusterScenario, CalibrationError> {
    let d: Vec<NodeDelta> = scrapes.iter().map(node_delta).collect::<Result<_, _>>()?;
    let n = d.len() as u32;
    if n == 0 {
        return Err(CalibrationError::Invalid("no nodes".into()));
    }
    let requests: f64 = d.iter().map(|x| x.requests).sum();
    if requests <= 0.0 {
        return Err(CalibrationError::Invalid(
            "the nodes served no requests in the window: put load on them first".into(),
        ));
    }
    let writes: f64 = d.iter().map(|x| x.writes).sum();
    let wf = (writes / requests).clamp(0.0, 1.0);
    let cpu: f64 = d.iter().map(|x| x.cpu_s).sum();
    let measured = cpu / requests;
    let per_req = opts.at_limit.as_ref().map_or(measured, |a| a.nodes);
    let (from, ack) = (
        opts.from.clamp(1, n),
        opts.ack.clamp(1, opts.from.clamp(1, n)),
    );
    let mut notes = Vec::new();
    if let Some(m) = d.iter().find_map(|x| x.members) {
        if m.round() as u32 != n {
            notes.push(format!(
                "the nodes report {m:.0} members; {n} were scraped: the model has {n}"
            ));
        }
    }
    notes.push(format!(
        "CPU: {:.3} s of process CPU on {n} nodes / {} client requests = {} per request ({}% writes)",
        cpu,
        requests as u64,
        human_ns(measured * 1e9),
        (wf * 100.0).round()
    ));
    if let Some(a) = &opts.at_limit {
        notes.push(format!(
            "at the limit: {} per request on the nodes{}; {}",
            human_ns(a.nodes * 1e9),
            match a.generator {
                Some(g) => format!(", {} for the generator", human_ns(g * 1e9)),
                None => String::new(),
            },
            a.note
        ));
    }
    let (roles, how) = match opts.roles {
        Some(r) => {
            let k = per_req / r.per_request(n, from);
            (
                r.scaled(k),
                format!(
                    "roles split as the step through one node measured them, scaled by {k:.2} to this load's total"
                ),
            )
        }
        None => {
            let ops = from as f64;
            let half = per_req / 2.0 / ops;
            (
                RoleCosts {
                    request: per_req / 2.0,
                    send: half / 2.0,
                    replica: half / 2.0,
                    local: half,
                },
                "no step through one node: half of a request's CPU to the coordinator, half to its replica operations (an assumption)".into(),
            )
        }
    };
    notes.push(how);
    notes.push(format!(
        "roles: request {}, send {}, replica {}, local {} (per request at from={from} on {n} nodes: {})",
        human_ns(roles.request * 1e9),
        human_ns(roles.send * 1e9),
        human_ns(roles.replica * 1e9),
        human_ns(roles.local * 1e9),
        human_ns(roles.per_request(n, from) * 1e9)
    ));
    let cpus = d
        .iter()
        .filter_map(|x| x.cpus)
        .fold(None, |a: Option<f64>, c| Some(a.map_or(c, |a| a.max(c))));
    let cores = opts
        .cores
        .or(cpus.map(|c| c.round().max(1.0) as u32))
        .unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get() as u32)
                .unwrap_or(1)
        })
        .max(1);
    let generator = match (opts.one_host, opts.generator_cpu_s) {
        (true, Some(g)) if g > 0.0 => Some(
            opts.at_limit
                .as_ref()
                .and_then(|a| a.generator)
                .unwrap_or(g / requests),
        ),
        _ => None,
    };
    let capacity = if opts.one_host {
        cores as f64 / (per_req + generator.unwrap_or(0.0))
    } else {
        (n * cores) as f64 / per_req
    };
    if opts.one_host {
        notes.push(format!(
            "one host: {cores} cores shared by the {n} nodes{}",
            match generator {
                Some(g) => format!(
                    " and the load generator ({} of its CPU per request)",
                    human_ns(g * 1e9)
                ),
                None => String::new(),
            }
        ));
    } else {
        notes.push(format!("each node on its own {cores} cores"));
    }
    let sent: f64 = d.iter().map(|x| x.sent_total()).sum();
    let rtt = if sent > 0.0 {
        d.iter().map(|x| x.rtt_sum_s).sum::<f64>() / sent
    } else {
        0.0
    };
    let fsync = merge(&d.iter().filter_map(|x| x.fsync.clone()).collect::<Vec<_>>());
    let fsync_mean = fsync.as_ref().and_then(Hist::mean).unwrap_or(0.0);
    let wal_used = wf > 0.0 && fsync.as_ref().is_some_and(|h| h.count > 0.0);
    let service = roles.replica + if wal_used { 1.5 * fsync_mean } else { 0.0 };
    let hop = ((rtt - service) / 2.0).max(5e-6);
    let hop = match &opts.hop {
        Some(h) => {
            notes.push(format!(
                "hop: {} each way, as given (this load's round trips, {}, include queueing for cores)",
                h.describe(),
                human_ns(rtt * 1e9)
            ));
            h.clone()
        }
        None => {
            notes.push(format!(
                "hop: replica round trips averaged {} at the coordinators; less a replica's work{} and halved: {} each way",
                human_ns(rtt * 1e9),
                if wal_used { " and 1.5 fsyncs" } else { "" },
                human_ns(hop * 1e9)
            ));
            gamma(hop)
        }
    };
    let m0 = &d[0].metrics;
    let admission = m0
        .get(crate::calibrate::names::MAX_IN_SERVICE)
        .map(|p| AdmissionSpec {
            permits: p.round().max(1.0) as u32,
            max_waiting: m0
                .get(crate::calibrate::names::MAX_WAITING)
                .map(|v| v.round() as u32),
            max_wait: m0
                .get(crate::calibrate::names::MAX_WAIT_SECONDS)
                .map(Dur::from_secs_f64),
        });
    let wal = match (wal_used, fsync.as_ref().and_then(Hist::to_dist)) {
        (true, Some(dist)) => {
            notes.push(format!(
                "wal: {} fsyncs on {n} nodes, mean {} (measured under this load: it includes waiting for the others' on a shared disk)",
                fsync.as_ref().map(|h| h.count as u64).unwrap_or(0),
                human_ns(fsync_mean * 1e9)
            ));
            Some(WalSpec {
                fsync: dist,
                max_batch: 512,
                per_write: None,
                shared_disk: false,
            })
        }
        _ => {
            if wf > 0.0 {
                notes.push("wal: no fsyncs in the metrics (durability not sync?): no WAL".into());
            }
            None
        }
    };
    notes.push(format!(
        "first estimate of the capacity: {} req/s",
        rate(capacity)
    ));
    let rate_v = opts.rate.unwrap_or((capacity * 0.8).max(1.0));
    let sc = ClusterScenario {
        name: opts
            .name
            .clone()
            .unwrap_or_else(|| "strata-cluster (from metrics)".into()),
        description: "A Strata cluster calibrated from its nodes' /metrics by strata calibrate."
            .into(),
        duration: Dur(5_000_000_000),
        warmup: Dur(1_000_000_000),
        seed: 1,
        notes,
        slo: opts.slo.clone(),
        clients: Clients::Open {
            rate: (rate_v * 10.0).round() / 10.0,
            arrivals: Arrivals::Poisson,
            write_fraction: (wf * 1000.0).round() / 1000.0,
            max_in_flight: 1_000_000,
        },
        cluster: ClusterSpec {
            nodes: n,
            from,
            ack,
            down: 0,
            weights: Vec::new(),
            host_cores: opts.one_host.then_some(cores),
            cores: (!opts.one_host).then_some(cores),
            client_hop: None,
            hop,
            cpu: CpuSpec {
                request: gamma(roles.request),
                send: (roles.send > 0.0).then(|| gamma(roles.send)),
                replica: gamma(roles.replica),
                local: Some(gamma(roles.local)),
                client: generator.map(gamma),
                write: None,
            },
            admission,
            wal,
            value: None,
        },
    };
    sc.check().map_err(CalibrationError::Invalid)?;
    Ok(sc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_match_across_spellings() {
        assert_eq!(authority("http://localhost:7001/"), "127.0.0.1:7001");
        assert_eq!(authority("http://127.0.0.1:7001"), "127.0.0.1:7001");
        assert_eq!(authority("127.0.0.1:7001"), "127.0.0.1:7001");
    }

    #[test]
    fn sleeps_fit_a_line_and_extrapolate_to_none() {
        // 40 µs of work + 20 µs per sleep, at 8, 5, 2 and 0.5 sleeps.
        let pts: Vec<(f64, f64)> = [8.0, 5.0, 2.0, 0.5]
            .iter()
            .map(|&x| (x, 40e-6 + 20e-6 * x))
            .collect();
        let f = fit_sleeps(&pts).unwrap();
        assert!((f.work - 40e-6).abs() < 1e-12, "{f:?}");
        assert!((f.per_sleep - 20e-6).abs() < 1e-12, "{f:?}");
        // Too little spread, or a slope the wrong way: no fit.
        assert!(fit_sleeps(&[(8.0, 200e-6), (7.8, 190e-6)]).is_none());
        assert!(fit_sleeps(&[(8.0, 100e-6), (2.0, 200e-6)]).is_none());
        // The work is never above the least cost measured.
        let f = fit_sleeps(&[(8.0, 200e-6), (1.0, 30e-6)]).unwrap();
        assert!(f.work <= 30e-6 && f.work >= 6e-6, "{f:?}");
    }

    #[test]
    fn roles_add_up_per_request() {
        let r = RoleCosts {
            request: 30e-6,
            send: 5e-6,
            replica: 10e-6,
            local: 4e-6,
        };
        // 3 of 3: one local, two remote.
        assert!((r.per_request(3, 3) - (30e-6 + 4e-6 + 2.0 * 15e-6)).abs() < 1e-12);
        // 3 of 5: 0.6 local, 2.4 remote.
        assert!((r.per_request(5, 3) - (30e-6 + 0.6 * 4e-6 + 2.4 * 15e-6)).abs() < 1e-12);
    }
}
