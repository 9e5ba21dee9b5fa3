//! A model calibrated from a live Strata node's or cluster's `/metrics`
//! (Prometheus or OpenMetrics text) or from a sweep trial's samples of
//! them: one step's figures (`reading`), a node scenario from them
//! (`node`), the one fitting path from steps to a breaking point and its
//! range (`fit`), a cluster scenario from every node's scrapes
//! (`cluster`), and what a write's value size costs, from two steps at two
//! sizes (`value`). Owns the mapping from metrics to the model's figures; must
//! not fetch anything over the network (the lab and the binary do); only
//! `fit` runs the model (to search its breaking point).
//!
//! Here: the metric names read, the errors, and the readings both
//! configurations share (a histogram as a distribution, a request's
//! method and labels).

pub use strata_api::exposition::{parse_metrics, Hist, Metrics, ParseError, Sample};

use crate::dist::DistSpec;
use crate::units::Dur;

/// The node's metric names this model reads from `/metrics`, as the
/// contracts crate spells them (`strata_api::metrics`; the node's test
/// checks that a real node serves every one): `READS`, histograms by their
/// families in `HISTOGRAMS`, and those served only once a node has called
/// a peer in `CLUSTER_ONLY`.
pub mod names {
    pub use strata_api::metrics::{
        ADMISSION_LIMIT, ALLOWED_CPUS_STOLEN_SECONDS, CLUSTER_MEMBERS, COMMIT_GROUP, CPU_SECONDS,
        FSYNC_DURATION, HISTOGRAMS, HTTP_DURATION_COUNT, HTTP_DURATION_SUM, HTTP_REQUESTS,
        MAX_IN_SERVICE, MAX_WAITING, MAX_WAIT_SECONDS, PAUSE_LATENESS, PROCESS_CPUS, REPLICA_COUNT,
        REPLICA_SUM, RUNTIME_BUSY, RUNTIME_PARKS, RUNTIME_WORKERS, SERVICE_DURATION,
        WAL_WRITTEN_BYTES,
    };
    /// Every plain name above (histogram families excluded).
    pub const READS: &[&str] = &[
        HTTP_REQUESTS,
        HTTP_DURATION_SUM,
        HTTP_DURATION_COUNT,
        RUNTIME_WORKERS,
        RUNTIME_BUSY,
        RUNTIME_PARKS,
        PROCESS_CPUS,
        ALLOWED_CPUS_STOLEN_SECONDS,
        CLUSTER_MEMBERS,
        MAX_IN_SERVICE,
        MAX_WAITING,
        MAX_WAIT_SECONDS,
        ADMISSION_LIMIT,
        REPLICA_SUM,
        REPLICA_COUNT,
    ];
    /// Served only once a node has called a peer.
    pub const CLUSTER_ONLY: &[&str] = &[REPLICA_COUNT, REPLICA_SUM];
}

#[derive(Debug, thiserror::Error)]
pub enum CalibrationError {
    #[error("{0}")]
    Parse(#[from] ParseError),
    #[error("the metrics lack {0}: is this a Strata node's /metrics?")]
    Missing(&'static str),
    #[error("{0}")]
    Invalid(String),
}

/// A histogram read from `/metrics` as the simulator's distribution.
pub trait HistDist {
    fn to_dist(&self) -> Option<DistSpec>;
}

impl HistDist for Hist {
    /// As a `histogram` distribution: per-bucket counts, trailing empty
    /// buckets dropped.
    fn to_dist(&self) -> Option<DistSpec> {
        let mut le = Vec::new();
        let mut counts = Vec::new();
        let mut prev = 0.0;
        for &(bound, cum) in &self.buckets {
            let c = (cum - prev).max(0.0).round() as u64;
            prev = cum.max(prev);
            le.push(bound);
            counts.push(c);
        }
        while counts.last() == Some(&0) {
            counts.pop();
            le.pop();
        }
        if counts.iter().sum::<u64>() == 0 {
            return None;
        }
        Some(DistSpec::Histogram {
            le_seconds: le,
            counts,
            scale: None,
            shift: Dur::ZERO,
        })
    }
}

/// Whether a request's labels name a method that writes.
pub(crate) fn is_write_method(labels: &[(String, String)]) -> bool {
    labels
        .iter()
        .any(|(k, v)| k == "method" && matches!(v.as_str(), "PUT" | "DELETE" | "POST"))
}

/// A label's value.
pub(crate) fn label<'a>(labels: &'a [(String, String)], key: &str) -> Option<&'a str> {
    labels
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

pub mod cluster;
pub mod fit;
pub mod node;
pub mod reading;
pub mod value;
