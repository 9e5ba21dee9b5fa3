//! What a cluster run means and how it reads: the demand each resource
//! (a node's CPU or the shared host's, a node's WAL or the shared disk)
//! carries per request, its utilisation and capacity, the bottleneck by
//! node and resource; the what-ifs ("with 5 nodes", "at ack=1", "with one
//! node down"), each a breaking point searched in virtual time beside the
//! base's; the text and JSON reports, sweeps, and the command line of a
//! cluster scenario. Owns the interpretation and the output; must not
//! change how a run works (that is `cluster`).
//!
//! Here: the analysis; `whatif` the breaking point and the what-ifs,
//! `sizing` the fewest nodes of a given size for a rate, `text` the
//! reports and sweeps, `cli` the command line.

use serde::Serialize;

use crate::model::cluster::ClusterRun;
use crate::report::LatencySummary;
use crate::scenario::Clients;
use crate::units::{grouped, human_ns, rate};

mod sizing;
mod text;
mod whatif;

pub use sizing::*;
pub use text::*;
pub use whatif::*;

/// A resource and what it carries.
#[derive(Clone, Debug, Serialize)]
pub struct Resource {
    /// "host cpu", "node 2 cpu", "node 1 wal", "disk".
    pub name: String,
    /// "cpu", "wal" or "disk".
    pub kind: &'static str,
    /// The node (0-based), if it is one node's.
    pub node: Option<usize>,
    /// Cores, or 1 for a WAL.
    pub servers: f64,
    /// Its busy time per request answered by the cluster, ns (a WAL: its
    /// writes per request).
    pub demand: f64,
    pub utilisation: f64,
    /// Requests per second of the whole cluster it can carry.
    pub capacity: f64,
    pub text: String,
}

/// One node over the window.
#[derive(Clone, Debug, Serialize)]
pub struct NodeView {
    pub node: usize,
    pub up: bool,
    pub coordinated_per_s: f64,
    pub replica_ops_per_s: f64,
    pub local_ops_per_s: f64,
    /// Cores its work kept busy.
    pub cpu_cores: f64,
    /// Its CPU time per admitted request of the cluster, ns, by role.
    pub cpu_per_request_ns: [f64; 5],
    pub wal_writes_per_s: f64,
    pub mean_group: f64,
    /// Share of the window its WAL spent in fsyncs (a group commit is
    /// always busy while writes wait; its capacity is in `resources`).
    pub fsync_busy: f64,
    pub waited: u64,
    pub refused: u64,
    pub timeouts: u64,
}

/// A cluster run, interpreted.
#[derive(Clone, Debug, Serialize)]
pub struct ClusterAnalysis {
    pub offered: Option<f64>,
    /// Answered per second (ok or not).
    pub throughput: f64,
    /// Answered without error per second.
    pub goodput: f64,
    pub lifetime: LatencySummary,
    pub nodes: Vec<NodeView>,
    pub resources: Vec<Resource>,
    pub bottleneck: Option<String>,
    pub capacity: f64,
    pub capacity_text: String,
    pub warnings: Vec<String>,
}

fn per_s(n: u64, window_ns: u64) -> f64 {
    n as f64 / (window_ns as f64 / 1e9)
}

/// Utilisation, demand per request and capacity of every resource.
pub fn analyse(run: &ClusterRun) -> ClusterAnalysis {
    let sc = &run.scenario;
    let c = &sc.cluster;
    let w = run.window_ns;
    let secs = w as f64 / 1e9;
    let admitted = run.admitted.max(1) as f64;
    let arrived = run.started.max(1) as f64;
    // A node's CPU demand per request: jobs queued by role × the role's
    // mean cost (queued jobs count, so an overloaded run does not hide
    // work it has not done yet); the load generator's per arrival.
    let demand_of = |i: usize| -> f64 {
        let st = &run.nodes[i];
        let mut d = 0.0;
        for (r, kinds) in st.jobs.iter().enumerate() {
            for (k, &n) in kinds.iter().enumerate() {
                let per = if r == 0 { arrived } else { admitted };
                d += n as f64 * run.role_mean_ns[r][k] / per;
            }
        }
        d
    };
    let mut resources = Vec::new();
    if let Some(h) = c.host_cores {
        let d: f64 = (0..run.nodes.len()).map(demand_of).sum();
        let cap = h as f64 / d * 1e9;
        resources.push(Resource {
            name: "host cpu".into(),
            kind: "cpu",
            node: None,
            servers: h as f64,
            demand: d,
            utilisation: run.pools[0].busy_ns / (w as f64 * h as f64),
            capacity: cap,
            text: format!(
                "{h} cores shared by the nodes{} / {} of CPU per request = {} req/s",
                if run.role_mean_ns[0][0] > 0.0 {
                    " and the load generator"
                } else {
                    ""
                },
                human_ns(d),
                rate(cap)
            ),
        });
    } else if let Some(k) = c.cores {
        for i in 0..run.nodes.len() {
            if i >= sc.live() as usize {
                continue;
            }
            let d = demand_of(i);
            let cap = k as f64 / d * 1e9;
            resources.push(Resource {
                name: format!("node {} cpu", i + 1),
                kind: "cpu",
                node: Some(i),
                servers: k as f64,
                demand: d,
                utilisation: run.pools[i].busy_ns / (w as f64 * k as f64),
                capacity: cap,
                text: format!(
                    "{k} cores / {} of this node's CPU per request = {} req/s",
                    human_ns(d),
                    rate(cap)
                ),
            });
        }
    }
    if let Some(wal) = &c.wal {
        let group_ns = run.fsync_mean_ns + wal.max_batch as f64 * run.per_write_mean_ns;
        let writes_per_s = wal.max_batch as f64 / group_ns * 1e9;
        let mut add = |name: String, node: Option<usize>, writes: u64| {
            let per_req = writes as f64 / admitted;
            if per_req <= 0.0 {
                return;
            }
            let cap = writes_per_s / per_req;
            resources.push(Resource {
                name,
                kind: if node.is_some() { "wal" } else { "disk" },
                node,
                servers: 1.0,
                demand: per_req,
                // As for the single node's group commit: writes/s over
                // what full groups could carry.
                utilisation: writes as f64 / secs / writes_per_s,
                capacity: cap,
                text: format!(
                    "{} writes per fsync of {} = {} writes/s, {:.2} writes per request = {} req/s",
                    wal.max_batch,
                    human_ns(run.fsync_mean_ns),
                    rate(writes_per_s),
                    per_req,
                    rate(cap)
                ),
            });
        };
        if wal.shared_disk {
            let writes = run.nodes.iter().map(|n| n.wal_writes).sum();
            add("disk".into(), None, writes);
        } else {
            for (i, n) in run.nodes.iter().enumerate() {
                add(format!("node {} wal", i + 1), Some(i), n.wal_writes);
            }
        }
    }
    let best = resources
        .iter()
        .map(|r| r.capacity)
        .fold(f64::INFINITY, f64::min);
    let close: Vec<&Resource> = resources
        .iter()
        .filter(|r| r.capacity <= best * 1.01)
        .collect();
    let (bottleneck, capacity_text) = match close.first() {
        Some(r) => {
            let more = match close.len() {
                1 => String::new(),
                k => format!(" (and {} more within 1%)", k - 1),
            };
            (Some(format!("{}{more}", r.name)), r.text.clone())
        }
        None => (None, "no resource limits it".into()),
    };
    let nodes = run
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut per = [0.0; 5];
            for (r, p) in per.iter_mut().enumerate() {
                let d = if r == 0 { arrived } else { admitted };
                *p = n.cpu_ns[r] / d;
            }
            NodeView {
                node: i,
                up: i < sc.live() as usize,
                coordinated_per_s: per_s(n.coordinated, w),
                replica_ops_per_s: per_s(n.replica_ops, w),
                local_ops_per_s: per_s(n.local_ops, w),
                cpu_cores: n.cpu_ns.iter().sum::<f64>() / w as f64,
                cpu_per_request_ns: per,
                wal_writes_per_s: per_s(n.wal_writes, w),
                mean_group: if n.wal_groups > 0 {
                    n.wal_writes as f64 / n.wal_groups as f64
                } else {
                    0.0
                },
                fsync_busy: n.wal_busy_ns / w as f64,
                waited: n.waited,
                refused: n.refused,
                timeouts: n.timeouts,
            }
        })
        .collect();
    let mut warnings = Vec::new();
    if run.not_enough > 0 {
        warnings.push(format!(
            "!!! {} requests ({:.1}%) failed at once (504): fewer than ack = {} of their replicas are up",
            grouped(run.not_enough as i64),
            run.not_enough as f64 / arrived * 100.0,
            c.ack
        ));
    }
    if run.refused > 0 {
        warnings.push(format!(
            "!!! {} requests ({:.1}%) refused at admission (no room to wait, or waited too long)",
            grouped(run.refused as i64),
            run.refused as f64 / arrived * 100.0
        ));
    }
    if run.dropped > 0 {
        warnings.push(format!(
            "!!! {} arrivals dropped: more than max_in_flight requests in the cluster",
            grouped(run.dropped as i64)
        ));
    }
    let throughput = run.done as f64 / secs;
    if run.in_flight_end as f64 > throughput.max(1.0) * 0.1 {
        warnings.push(format!(
            "!!! {} requests still in flight at the end: queues grew (offered above capacity?)",
            grouped(run.in_flight_end as i64)
        ));
    }
    ClusterAnalysis {
        offered: match &sc.clients {
            Clients::Open { rate, .. } => Some(*rate),
            Clients::Closed { .. } => None,
        },
        throughput,
        goodput: run.ok() as f64 / secs,
        lifetime: LatencySummary::of(&run.lifetime),
        nodes,
        resources,
        bottleneck,
        capacity: best,
        capacity_text,
        warnings,
    }
}
