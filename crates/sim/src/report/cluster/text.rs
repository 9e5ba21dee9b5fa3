//! A cluster run in words: the load and the model described, the text
//! report, the what-ifs' lines, sweeps over a parameter. Owns the
//! wording; must not run or analyse anything itself.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use crate::model::cluster::{simulate, ClusterRun, ROLES};
use crate::scenario::cluster::ClusterScenario;
use crate::scenario::{Arrivals, Clients, Start};
use crate::units::{grouped, human_ns, rate};

use super::*;

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
