//! One node's part in a cluster's calibration: its `/metrics` before and
//! after a load, and what it did between them (requests it coordinated
//! and answered, replica operations it served, CPU, runtime parks, the
//! fsyncs of its WAL). Owns the difference of two scrapes; must not build
//! a scenario.

use std::collections::BTreeMap;

use serde::Serialize;

use super::super::{is_write_method, label, parse_metrics, CalibrationError, Hist, Metrics};

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
