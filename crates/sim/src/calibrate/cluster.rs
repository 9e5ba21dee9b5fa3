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

use std::collections::BTreeMap;

use serde::Serialize;

use super::{is_write_method, label, parse_metrics, CalibrationError, Hist, HistDist, Metrics};
use crate::dist::DistSpec;
use crate::scenario::cluster::{
    AdmissionSpec, ClusterScenario, ClusterSpec, CpuSpec, SloSpec, WalSpec,
};
use crate::scenario::{Arrivals, Clients};
use crate::units::{human_ns, rate, Dur};

/// One node's `/metrics` text before and after a load.
#[derive(Clone, Debug)]
pub struct NodeScrape {
    /// The URL the load went to (as the node's peers name it, ideally).
    pub url: String,
    pub before: String,
    pub after: String,
}

/// What one node did between its two scrapes.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NodeDelta {
    pub url: String,
    /// Client requests it answered (it coordinated them).
    pub requests: f64,
    pub writes: f64,
    pub cpu_s: f64,
    /// Time its runtime's workers ran tasks (HTTP, the transport, the
    /// coordinator); the rest of its CPU is the applier, the WAL's sync
    /// and background threads.
    pub runtime_busy_s: Option<f64>,
    /// Times its runtime's workers ran out of work and slept.
    pub parks: Option<f64>,
    /// Replica operations it sent, by the peer's URL as labelled.
    pub sent: BTreeMap<String, f64>,
    /// Their round trips: sum of seconds.
    pub rtt_sum_s: f64,
    pub cpus: Option<f64>,
    pub members: Option<f64>,
    #[serde(skip)]
    pub fsync: Option<Hist>,
    #[serde(skip)]
    pub metrics: Metrics,
}

/// `host:port` of a URL, `localhost` as 127.0.0.1.
pub fn authority(url: &str) -> String {
    let s = url.trim().trim_end_matches('/');
    let s = s.split_once("://").map(|(_, r)| r).unwrap_or(s);
    let s = s.split('/').next().unwrap_or(s);
    s.replace("localhost", "127.0.0.1")
}

/// The difference of one node's two scrapes.
pub fn node_delta(s: &NodeScrape) -> Result<NodeDelta, CalibrationError> {
    let m = parse_metrics(&s.after)?.minus(&parse_metrics(&s.before)?);
    let requests =
        m.get(crate::calibrate::names::HTTP_REQUESTS)
            .ok_or(CalibrationError::Missing(
                crate::calibrate::names::HTTP_REQUESTS,
            ))?;
    let cpu_s = m
        .get(crate::calibrate::names::CPU_SECONDS)
        .ok_or(CalibrationError::Missing(
            crate::calibrate::names::CPU_SECONDS,
        ))?;
    let mut sent = BTreeMap::new();
    let mut rtt_sum_s = 0.0;
    for x in &m.samples {
        let op = label(&x.labels, "op");
        if !matches!(op, Some("write") | Some("read")) {
            continue;
        }
        if x.name == crate::calibrate::names::REPLICA_COUNT {
            if let Some(p) = label(&x.labels, "peer") {
                *sent.entry(authority(p)).or_insert(0.0) += x.value;
            }
        } else if x.name == crate::calibrate::names::REPLICA_SUM {
            rtt_sum_s += x.value;
        }
    }
    Ok(NodeDelta {
        url: s.url.clone(),
        requests,
        writes: m
            .sum(crate::calibrate::names::HTTP_REQUESTS, is_write_method)
            .unwrap_or(0.0),
        cpu_s,
        runtime_busy_s: m.get(crate::calibrate::names::RUNTIME_BUSY),
        parks: m.get(crate::calibrate::names::RUNTIME_PARKS),
        sent,
        rtt_sum_s,
        cpus: m.get(crate::calibrate::names::PROCESS_CPUS),
        members: m.get(crate::calibrate::names::CLUSTER_MEMBERS),
        fsync: m.histogram(crate::calibrate::names::FSYNC_DURATION),
        metrics: m,
    })
}

impl NodeDelta {
    /// Replica operations it sent (to every peer).
    pub fn sent_total(&self) -> f64 {
        self.sent.values().sum()
    }
}

/// CPU seconds per unit of work, by role (see `CpuSpec`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct RoleCosts {
    pub request: f64,
    pub send: f64,
    pub replica: f64,
    pub local: f64,
}

impl RoleCosts {
    /// CPU per client request across the cluster, for `from` replicas on
    /// `nodes` nodes (the coordinator is one of them with probability
    /// from / nodes, as rendezvous placement gives).
    pub fn per_request(&self, nodes: u32, from: u32) -> f64 {
        let local = from as f64 / nodes as f64;
        let remote = from as f64 - local;
        self.request + local * self.local + remote * (self.send + self.replica)
    }

    pub fn scaled(&self, k: f64) -> RoleCosts {
        RoleCosts {
            request: self.request * k,
            send: self.send * k,
            replica: self.replica * k,
            local: self.local * k,
        }
    }
}

/// The roles' costs from a step whose load entered through node `entry`
/// only: the other nodes did replica work alone (CPU per operation they
/// served); of a replica's cost, the part outside the runtime's workers
/// (the applier and the WAL) is what the coordinator's own replica
/// operation costs too; sending an operation and taking its reply is taken
/// to cost the coordinator what receiving and answering it costs the
/// replica (the replica's cost less that engine part); the coordinator's
/// per-request cost is what is left of its CPU. Returns the costs and how
/// each was found.
pub fn role_split(
    scrapes: &[NodeScrape],
    entry: usize,
    from: u32,
    per_park: Option<f64>,
) -> Result<(RoleCosts, Vec<String>), CalibrationError> {
    let mut d: Vec<NodeDelta> = scrapes.iter().map(node_delta).collect::<Result<_, _>>()?;
    // The nodes that only serve replica operations idle between them and
    // park far more per unit of work than the busy entry node: without
    // their parks' CPU, the split compares work with work.
    let mut parks_note = None;
    if let Some(p) = per_park.filter(|p| *p > 0.0) {
        let mut parts = Vec::new();
        for x in d.iter_mut() {
            if let Some(k) = x.parks {
                let work = (x.cpu_s - p * k).max(0.2 * x.cpu_s);
                parts.push(format!(
                    "{} {:.0} parks, {:.3} s of {:.3} s",
                    x.url, k, work, x.cpu_s
                ));
                x.cpu_s = work;
            }
        }
        parks_note = Some(format!(
            "parks taken out at {} each (the climb's fit): {}",
            human_ns(p * 1e9),
            parts.join("; ")
        ));
    }
    let n = d.len();
    if n < 2 || entry >= n {
        return Err(CalibrationError::Invalid(
            "the role split needs two nodes or more".into(),
        ));
    }
    let e = &d[entry];
    if e.requests <= 0.0 {
        return Err(CalibrationError::Invalid(
            "the entry node served no requests in the role step".into(),
        ));
    }
    let sent = e.sent_total();
    let mut served = 0.0;
    let mut cpu = 0.0;
    let mut outside = 0.0;
    let mut have_busy = true;
    for (i, x) in d.iter().enumerate() {
        if i == entry {
            continue;
        }
        let s = e
            .sent
            .get(&authority(&x.url))
            .copied()
            .unwrap_or(sent / (n - 1) as f64);
        served += s;
        cpu += x.cpu_s;
        match x.runtime_busy_s {
            Some(b) => outside += (x.cpu_s - b).max(0.0),
            None => have_busy = false,
        }
    }
    if served <= 0.0 {
        return Err(CalibrationError::Invalid(
            "no replica operations went to the other nodes in the role step (replication 1?)"
                .into(),
        ));
    }
    let mut notes: Vec<String> = parks_note.into_iter().collect();
    let replica = cpu / served;
    let local = if have_busy {
        (outside / served).min(replica)
    } else {
        replica / 2.0
    };
    let send = (replica - local).max(0.0);
    let locals = e.requests * from as f64 / n as f64;
    let mut request = (e.cpu_s - locals * local - sent * send) / e.requests;
    notes.push(format!(
        "role step through {} only: the other nodes spent {:.3} s of CPU on {} replica operations = {} each",
        e.url,
        cpu,
        served as u64,
        human_ns(replica * 1e9)
    ));
    if have_busy {
        notes.push(format!(
            "of it, outside the runtime's workers (applier, WAL): {} per operation; the coordinator's own replica operation is charged that",
            human_ns(local * 1e9)
        ));
    } else {
        notes.push(
            "no runtime busy time in the metrics: the coordinator's own replica operation is charged half a replica's".into(),
        );
    }
    let floor = 0.1 * e.cpu_s / e.requests;
    if request < floor {
        notes.push(format!(
            "the entry node's CPU left {} per request after its replica work; taken as {}",
            human_ns(request * 1e9),
            human_ns(floor * 1e9)
        ));
        request = floor;
    }
    notes.push(format!(
        "the entry node: {:.3} s of CPU for {} requests, {} local and {} remote operations: {} per request as coordinator, {} per remote operation sent",
        e.cpu_s,
        e.requests as u64,
        locals as u64,
        sent as u64,
        human_ns(request * 1e9),
        human_ns(send * 1e9)
    ));
    Ok((
        RoleCosts {
            request,
            send,
            replica,
            local,
        },
        notes,
    ))
}

/// CPU per request as work plus sleeps: `work + per_sleep × sleeps per
/// request`. A worker that runs out of work sleeps, and the next message
/// wakes it; on a virtual machine a sleep and its wake-up cost tens of
/// microseconds of CPU. The busier the node, the fewer sleeps per request
/// (they vanish at the limit), so the CPU a request costs below the limit
/// overstates what it costs at the limit, by far on a local cluster where
/// every request crosses threads and processes several times.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SleepFit {
    /// CPU seconds per request without sleeps.
    pub work: f64,
    /// CPU seconds per sleep.
    pub per_sleep: f64,
    pub points: usize,
}

/// Least squares of CPU per request on sleeps per request over steps
/// `(sleeps per request, CPU seconds per request)`. None when the steps do
/// not spread over at least half a sleep per request, or the slope is not
/// positive. The work is kept between a fifth of the least CPU per request
/// measured and that least (the line is extrapolated to no sleeps).
pub fn fit_sleeps(points: &[(f64, f64)]) -> Option<SleepFit> {
    let pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, y)| x.is_finite() && y.is_finite() && *x >= 0.0 && *y > 0.0)
        .collect();
    if pts.len() < 2 {
        return None;
    }
    let (lo, hi) = pts.iter().fold((f64::INFINITY, 0.0f64), |(l, h), (x, _)| {
        (l.min(*x), h.max(*x))
    });
    if hi - lo < 0.5 {
        return None;
    }
    let n = pts.len() as f64;
    let mx = pts.iter().map(|p| p.0).sum::<f64>() / n;
    let my = pts.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = pts.iter().map(|p| (p.0 - mx) * (p.0 - mx)).sum();
    let sxy: f64 = pts.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    let slope = sxy / sxx;
    if slope.is_nan() || slope <= 0.0 {
        return None;
    }
    let least = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let work = (my - slope * mx).clamp(least * 0.2, least);
    Some(SleepFit {
        work,
        per_sleep: slope,
        points: pts.len(),
    })
}

/// The nodes' (runtime parks per request, CPU seconds per request) over
/// one load, if they report parks.
pub fn parks_point(scrapes: &[NodeScrape]) -> Result<Option<(f64, f64)>, CalibrationError> {
    let d: Vec<NodeDelta> = scrapes.iter().map(node_delta).collect::<Result<_, _>>()?;
    let requests: f64 = d.iter().map(|x| x.requests).sum();
    let cpu: f64 = d.iter().map(|x| x.cpu_s).sum();
    let parks: Option<f64> = d.iter().map(|x| x.parks).sum();
    Ok(match parks {
        Some(p) if requests > 0.0 => Some((p / requests, cpu / requests)),
        _ => None,
    })
}

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
