//! What a cluster run means and how it reads: the demand each resource
//! (a node's CPU or the shared host's, a node's WAL or the shared disk)
//! carries per request, its utilisation and capacity, the bottleneck by
//! node and resource; the what-ifs ("with 5 nodes", "at ack=1", "with one
//! node down"), each a breaking point searched in virtual time beside the
//! base's; the text and JSON reports, sweeps, and the command line of a
//! cluster scenario. Owns the interpretation and the output; must not
//! change how a run works (that is `cluster`).

use std::fmt::Write as _;
use std::io::Write;
use std::path::Path;

use serde::Serialize;

use crate::cluster::{simulate, ClusterRun, ClusterScenario, ROLES};
use crate::predict::{judge_counts, search, Bound, Counts, Objective, Prediction};
use crate::report::LatencySummary;
use crate::scenario::{Arrivals, Clients, Start};
use crate::units::{grouped, human_ns, rate};

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

fn counts(run: &ClusterRun) -> Counts<'_> {
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
/// (or ack=from when it is 1 already), one more node down.
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
    if c.ack > 1 {
        v.push(("at ack=1".into(), vec![("cluster.ack".into(), "1".into())]));
    } else if c.from > 1 {
        v.push((
            format!("at ack={}", c.from),
            vec![("cluster.ack".into(), c.from.to_string())],
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

/// The load the what-ifs' latencies are taken at, in a few words.
pub fn describe_load(sc: &ClusterScenario) -> String {
    match &sc.clients {
        Clients::Open { rate: r, .. } => format!("{} req/s", rate(*r)),
        Clients::Closed { count, .. } => format!("{} clients", grouped(*count as i64)),
    }
}

/// The clients in words.
pub fn describe_clients(sc: &ClusterScenario) -> String {
    match &sc.clients {
        Clients::Closed {
            count,
            start,
            write_fraction,
            think,
            ..
        } => format!(
            "{} closed-loop clients, think {}, starting {}, {:.0}% writes",
            grouped(*count as i64),
            think.describe(),
            match start {
                Start::Together => "together",
                Start::Spread => "spread",
            },
            write_fraction * 100.0
        ),
        Clients::Open {
            rate: r,
            arrivals,
            write_fraction,
            ..
        } => format!(
            "open loop at {} req/s ({} arrivals), {:.0}% writes",
            rate(*r),
            match arrivals {
                Arrivals::Poisson => "Poisson",
                Arrivals::Constant => "constant",
            },
            write_fraction * 100.0
        ),
    }
}

/// The model in a few lines.
pub fn describe_model(sc: &ClusterScenario) -> Vec<String> {
    let c = &sc.cluster;
    let mut v = Vec::new();
    let cores = match (c.host_cores, c.cores) {
        (Some(h), _) => format!("{h} cores shared by all nodes (one host)"),
        (_, Some(k)) => format!("{k} cores per node"),
        _ => String::new(),
    };
    v.push(format!(
        "  nodes        {} ({} up), each key on from={} of them, answer at ack={}; {cores}",
        c.nodes,
        sc.live(),
        c.from,
        c.ack
    ));
    if !c.weights.is_empty() {
        v.push(format!(
            "  weights      {:?} of the client requests",
            c.weights
        ));
    }
    if let Some(h) = &c.client_hop {
        v.push(format!("  client hop   {} each way", h.describe()));
    }
    v.push(format!("  node hop     {} each way", c.hop.describe()));
    let cpu = &c.cpu;
    let mut parts = vec![format!("request {}", cpu.request.describe())];
    if let Some(s) = &cpu.send {
        parts.push(format!("send {}", s.describe()));
    }
    parts.push(format!("replica {}", cpu.replica.describe()));
    if let Some(l) = &cpu.local {
        parts.push(format!("local {}", l.describe()));
    }
    if let Some(g) = &cpu.client {
        parts.push(format!("load generator {}", g.describe()));
    }
    v.push(format!("  cpu          {}", parts.join(", ")));
    if let Some(w) = &cpu.write {
        let mut p = Vec::new();
        for (n, d) in [
            ("request", &w.request),
            ("send", &w.send),
            ("replica", &w.replica),
            ("local", &w.local),
        ] {
            if let Some(d) = d {
                p.push(format!("{n} {}", d.describe()));
            }
        }
        if !p.is_empty() {
            v.push(format!("  cpu (writes) {}", p.join(", ")));
        }
    }
    if let Some(a) = &c.admission {
        let mut s = format!("  admission    {} permits per node, fifo", a.permits);
        if let Some(m) = a.max_waiting {
            let _ = write!(s, ", at most {m} waiting");
        }
        if let Some(m) = a.max_wait {
            let _ = write!(s, ", {m} longest wait");
        }
        v.push(s);
    }
    match &c.wal {
        Some(w) => v.push(format!(
            "  wal          per node, at most {} writes per fsync of {}{}",
            w.max_batch,
            w.fsync.describe(),
            if w.shared_disk {
                "; one disk: one fsync at a time across the host"
            } else {
                ""
            }
        )),
        None => v.push("  wal          none (writes are not fsynced)".into()),
    }
    v
}

/// The text report of one run (without the what-ifs).
pub fn text(run: &ClusterRun, a: &ClusterAnalysis, perf: bool) -> String {
    let sc = &run.scenario;
    let mut o = String::new();
    let _ = writeln!(o, "strata sim: {} (seed {})", sc.name, run.seed);
    let _ = writeln!(
        o,
        "{}; {} measured{}",
        describe_clients(sc),
        crate::units::Dur(run.window_ns),
        if run.warmup_ns > 0 {
            format!(" after {} of warm-up", crate::units::Dur(run.warmup_ns))
        } else {
            String::new()
        }
    );
    let _ = writeln!(o, "cluster:");
    for l in describe_model(sc) {
        let _ = writeln!(o, "{l}");
    }
    for n in &sc.notes {
        let _ = writeln!(o, "  note: {n}");
    }
    let l = &a.lifetime;
    let _ = writeln!(
        o,
        "\nRequests: {} started, {} answered ({} req/s), {} ok ({} req/s); 504 {}, refused {}, dropped {}",
        grouped(run.started as i64),
        grouped(run.done as i64),
        rate(a.throughput),
        grouped(run.ok() as i64),
        rate(a.goodput),
        grouped(run.not_enough as i64),
        grouped(run.refused as i64),
        grouped(run.dropped as i64)
    );
    let _ = writeln!(
        o,
        "Lifetime: mean {}, p50 {}, p90 {}, p99 {}, p99.9 {}, max {}",
        human_ns(l.mean_ns),
        human_ns(l.p50_ns as f64),
        human_ns(l.p90_ns as f64),
        human_ns(l.p99_ns as f64),
        human_ns(l.p999_ns as f64),
        human_ns(l.max_ns as f64)
    );
    let _ = writeln!(
        o,
        "\nPer node (per second; CPU per request = this node's CPU time per request of the cluster):\n  {:<6} {:>10} {:>10} {:>10} {:>9} {:>12} {:>12} {:>12} {:>10} {:>6} {:>7} {:>8}",
        "node",
        "coord/s",
        "remote/s",
        "local/s",
        "cpu cores",
        "cpu/req",
        "of it coord",
        "of it repl.",
        "wal wr/s",
        "group",
        "fsync%",
        "waited"
    );
    for n in &a.nodes {
        let p = &n.cpu_per_request_ns;
        let _ = writeln!(
            o,
            "  {:<6} {:>10} {:>10} {:>10} {:>9.3} {:>12} {:>12} {:>12} {:>10} {:>6.1} {:>6.1}% {:>8}",
            format!("{}{}", n.node + 1, if n.up { "" } else { " down" }),
            rate(n.coordinated_per_s),
            rate(n.replica_ops_per_s),
            rate(n.local_ops_per_s),
            n.cpu_cores,
            human_ns(p.iter().sum()),
            human_ns(p[1] + p[2]),
            human_ns(p[3] + p[4]),
            rate(n.wal_writes_per_s),
            n.mean_group,
            n.fsync_busy * 100.0,
            grouped(n.waited as i64)
        );
    }
    if run.pools.len() == 1 && sc.cluster.host_cores.is_some() {
        let p = &run.pools[0];
        let _ = writeln!(
            o,
            "  host: {:.1}% of {} cores busy, mean wait for a core {}{}",
            p.busy_ns / (run.window_ns as f64 * p.servers as f64) * 100.0,
            p.servers,
            human_ns(p.wait_ns / p.jobs.max(1) as f64),
            match a.nodes.iter().map(|n| n.cpu_per_request_ns[0]).sum::<f64>() {
                g if g > 0.0 => format!("; the load generator {} per request", human_ns(g)),
                _ => String::new(),
            }
        );
    }
    let _ = writeln!(
        o,
        "  CPU per request by role (all nodes): {}",
        ROLES
            .iter()
            .enumerate()
            .map(|(r, name)| format!(
                "{name} {}",
                human_ns(a.nodes.iter().map(|n| n.cpu_per_request_ns[r]).sum())
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        o,
        "\nResources (capacity in requests per second of the whole cluster):"
    );
    for r in &a.resources {
        let _ = writeln!(
            o,
            "  {:<14} {:>6.1}% busy  {}",
            r.name,
            r.utilisation * 100.0,
            r.text
        );
    }
    let _ = writeln!(
        o,
        "\nBottleneck: {}: {}.{}",
        a.bottleneck.as_deref().unwrap_or("none"),
        a.capacity_text,
        match a.offered {
            Some(off) => format!(
                " Offered {} req/s = {:.0}% of it; the run answered {} req/s.",
                rate(off),
                off / a.capacity * 100.0,
                rate(a.throughput)
            ),
            None => format!(" The run answered {} req/s.", rate(a.throughput)),
        }
    );
    for w in &a.warnings {
        let _ = writeln!(o, "{w}");
    }
    if perf {
        let _ = writeln!(
            o,
            "\nsimulated {} in {:.3} s of wall time: {} events, {:.1} M events/s",
            crate::units::Dur(run.window_ns + run.warmup_ns),
            run.wall_s,
            grouped(run.events as i64),
            run.events as f64 / run.wall_s.max(1e-9) / 1e6
        );
    }
    o
}

/// One sweep row.
#[derive(Clone, Debug, Serialize)]
pub struct SweepRow {
    pub value: String,
    pub throughput: f64,
    pub goodput: f64,
    pub not_enough: f64,
    pub refused: f64,
    pub lifetime_mean_ns: f64,
    pub lifetime_p50_ns: u64,
    pub lifetime_p99_ns: u64,
    pub bottleneck: Option<String>,
    pub bottleneck_utilisation: Option<f64>,
    pub capacity: f64,
    pub events: u64,
    pub wall_s: f64,
}

pub fn sweep_header(param: &str) -> String {
    format!(
        "{:>14} {:>10} {:>10} {:>7} {:>8} {:>10} {:>10} {:>10}  bottleneck (util) / capacity req/s",
        param, "req/s", "ok/s", "504", "refused", "life mean", "life p50", "life p99"
    )
}

pub fn sweep_line(r: &SweepRow) -> String {
    format!(
        "{:>14} {:>10} {:>10} {:>6.1}% {:>7.1}% {:>10} {:>10} {:>10}  {} ({}) / {}",
        r.value,
        rate(r.throughput),
        rate(r.goodput),
        r.not_enough * 100.0,
        r.refused * 100.0,
        human_ns(r.lifetime_mean_ns),
        human_ns(r.lifetime_p50_ns as f64),
        human_ns(r.lifetime_p99_ns as f64),
        r.bottleneck.as_deref().unwrap_or("-"),
        r.bottleneck_utilisation
            .map(|u| format!("{:.0}%", u * 100.0))
            .unwrap_or_else(|| "-".into()),
        rate(r.capacity)
    )
}

/// One run per value of `param` after `sets`.
pub fn sweep(
    sc: &ClusterScenario,
    base: &Path,
    seed: u64,
    sets: &[(String, String)],
    param: &str,
    values: &[String],
    on_row: &mut dyn FnMut(&SweepRow),
) -> Result<Vec<SweepRow>, String> {
    let mut rows = Vec::new();
    for v in values {
        let mut all = sets.to_vec();
        all.push((param.to_string(), v.clone()));
        let s = sc.with_overrides(&all)?;
        let run = simulate(&s, base, seed)?;
        let a = analyse(&run);
        let started = run.started.max(1) as f64;
        let bu = a
            .resources
            .iter()
            .find(|r| {
                a.bottleneck
                    .as_deref()
                    .is_some_and(|b| b.starts_with(&r.name))
            })
            .map(|r| r.utilisation);
        let row = SweepRow {
            value: v.clone(),
            throughput: a.throughput,
            goodput: a.goodput,
            not_enough: run.not_enough as f64 / started,
            refused: run.refused as f64 / started,
            lifetime_mean_ns: a.lifetime.mean_ns,
            lifetime_p50_ns: a.lifetime.p50_ns,
            lifetime_p99_ns: a.lifetime.p99_ns,
            bottleneck: a.bottleneck.clone(),
            bottleneck_utilisation: bu,
            capacity: a.capacity,
            events: run.events,
            wall_s: run.wall_s,
        };
        on_row(&row);
        rows.push(row);
    }
    Ok(rows)
}

/// `--json`'s object for one run and its what-ifs.
#[derive(Serialize)]
struct JsonReport<'a> {
    scenario: &'a str,
    seed: u64,
    clients: String,
    window_s: f64,
    warmup_s: f64,
    run: &'a ClusterRun,
    analysis: &'a ClusterAnalysis,
    slo: String,
    what_if: &'a [WhatIf],
}

/// Precision of the what-ifs' breaking-point searches.
pub const WHAT_IF_PRECISION: f64 = 0.02;

/// `strata sim CLUSTER.toml` with its arguments: one run (or a sweep),
/// then the what-ifs.
pub fn run_cli(
    sc: &ClusterScenario,
    base: &Path,
    args: &crate::SimArgs,
    out: &mut dyn Write,
) -> Result<(), crate::SimError> {
    use crate::SimError;
    let io = |e: std::io::Error| SimError::Io {
        path: "<stdout>".into(),
        source: e,
    };
    let mut sets = Vec::new();
    if let Some(d) = args.duration {
        sets.push(("duration".to_string(), d.to_string()));
    }
    if let Some(d) = args.warmup {
        sets.push(("warmup".to_string(), d.to_string()));
    }
    if let Some(n) = args.clients {
        if !matches!(sc.clients, Clients::Closed { .. }) {
            return Err(SimError::Scenario(
                "--clients: this scenario's clients are an open loop; use --set clients.rate=R"
                    .into(),
            ));
        }
        sets.push(("clients.count".to_string(), n.to_string()));
    }
    for s in &args.set {
        let (k, v) = crate::scenario::parse_assignment(s).map_err(SimError::Scenario)?;
        // `clients=N`: the count, or the rate of an open loop.
        let k = if k == "clients" {
            match sc.clients {
                Clients::Open { .. } => "clients.rate".to_string(),
                Clients::Closed { .. } => "clients.count".to_string(),
            }
        } else {
            k
        };
        sets.push((k, v));
    }
    let effective = sc.with_overrides(&sets).map_err(SimError::Scenario)?;
    let seed = args.seed.unwrap_or(effective.seed);
    if let Some(p) = &args.save_scenario {
        let text = effective.to_toml().map_err(SimError::Scenario)?;
        std::fs::write(p, text).map_err(|source| SimError::Io {
            path: p.clone(),
            source,
        })?;
    }
    if let Some(sw) = &args.sweep {
        let (param, values) = crate::sweep::parse_sweep(sw).map_err(SimError::Scenario)?;
        let param = if param == "clients" {
            match sc.clients {
                Clients::Open { .. } => "clients.rate".to_string(),
                Clients::Closed { .. } => "clients.count".to_string(),
            }
        } else {
            param
        };
        if !args.json {
            writeln!(
                out,
                "strata sim: {} (seed {seed}), sweep of {param}; {} measured per run",
                effective.name, effective.duration
            )
            .map_err(io)?;
            writeln!(out, "{}", sweep_header(&param)).map_err(io)?;
        }
        let json = args.json;
        let mut werr = None;
        let rows = sweep(sc, base, seed, &sets, &param, &values, &mut |r| {
            if !json {
                if let Err(e) = writeln!(out, "{}", sweep_line(r)) {
                    werr.get_or_insert(e);
                }
                let _ = out.flush();
            }
        })
        .map_err(SimError::Scenario)?;
        if let Some(e) = werr {
            return Err(io(e));
        }
        if json {
            let j = serde_json::json!({
                "scenario": effective.name, "seed": seed, "param": param, "rows": rows,
            });
            writeln!(
                out,
                "{}",
                serde_json::to_string_pretty(&j).expect("serializable")
            )
            .map_err(io)?;
        }
        return Ok(());
    }
    let run = simulate(&effective, base, seed).map_err(SimError::Scenario)?;
    let a = analyse(&run);
    if !args.json {
        write!(out, "{}", text(&run, &a, true)).map_err(io)?;
        let _ = out.flush();
    }
    let mut rows = Vec::new();
    if !args.no_what_if {
        if !args.json {
            writeln!(
                out,
                "\n{}",
                what_if_header(&effective.slo.describe(), &describe_load(&effective))
            )
            .map_err(io)?;
        }
        let json = args.json;
        let mut base_bp = None;
        let mut werr = None;
        let mut first = true;
        let obj = objective(&effective);
        rows = what_ifs(&effective, base, seed, &obj, WHAT_IF_PRECISION, &mut |w| {
            if first {
                base_bp = w.breaking_point;
                first = false;
            }
            if !json {
                if let Err(e) = writeln!(out, "{}", what_if_line(w, base_bp)) {
                    werr.get_or_insert(e);
                }
                let _ = out.flush();
            }
        });
        if let Some(e) = werr {
            return Err(io(e));
        }
    }
    if args.json {
        let j = JsonReport {
            scenario: &effective.name,
            seed,
            clients: describe_clients(&effective),
            window_s: run.window_ns as f64 / 1e9,
            warmup_s: run.warmup_ns as f64 / 1e9,
            run: &run,
            analysis: &a,
            slo: effective.slo.describe(),
            what_if: &rows,
        };
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&j).expect("serializable")
        )
        .map_err(io)?;
    }
    Ok(())
}
