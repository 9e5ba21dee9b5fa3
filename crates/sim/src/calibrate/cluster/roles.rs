//! The CPU a cluster's request costs, split into roles (the
//! coordinator's per request and per remote replica operation, a replica's
//! per operation it serves, the coordinator's own replica operation) from
//! a step whose load entered through one node only. Owns the split; must
//! not build a scenario.

use serde::Serialize;

use super::super::CalibrationError;
use crate::units::human_ns;

use super::scrape::{authority, node_delta, NodeDelta, NodeScrape};

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
