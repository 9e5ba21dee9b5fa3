//! What a run means and how it reads, for each configuration of the
//! model: one node's pipeline (`node`: stages, Little's law, the stage
//! that saturates first; `node::text` the report in the seed's layout) and
//! a cluster (`cluster`: resources per node, the what-ifs, sizing, the
//! text and JSON reports). Owns the interpretation and the output; must not
//! change how a run works (that is `model`).
//!
//! Here: a latency histogram summed up as both reports show it.

use serde::Serialize;

use crate::model::Latency;

pub mod cluster;
pub mod node;

#[derive(Clone, Debug, Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub mean_ns: f64,
    pub min_ns: u64,
    pub max_ns: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub sd_ns: f64,
    /// Power-of-two buckets: (lowest value of the bucket, count), non-zero only.
    pub quantize: Vec<(u64, u64)>,
}

impl LatencySummary {
    pub fn of(l: &Latency) -> LatencySummary {
        let h = &l.hist;
        let n = h.len();
        let q = |x: f64| if n == 0 { 0 } else { h.value_at_quantile(x) };
        LatencySummary {
            count: n,
            mean_ns: l.mean(),
            min_ns: if n == 0 { 0 } else { h.min() },
            max_ns: if n == 0 { 0 } else { h.max() },
            p50_ns: q(0.5),
            p90_ns: q(0.9),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            sd_ns: if n == 0 { 0.0 } else { h.stdev() },
            quantize: l
                .pow2
                .iter()
                .enumerate()
                .filter(|(_, &c)| c > 0)
                .map(|(k, &c)| (if k == 0 { 0 } else { 1u64 << (k - 1) }, c))
                .collect(),
        }
    }
}
