//! What a run hands back: live figures for a progress line, each counted
//! second with all threads merged, and the run's totals per operation, per
//! node and overall. Plain data; must not measure or pace anything.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;

use super::record::NodeInterval;
use crate::load::slowest::SlowRequest;

/// Live figures for a progress line.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Since the counted part began (zero during warm-up).
    pub elapsed: Duration,
    pub warming: bool,
    pub sent: u64,
    pub done: u64,
    pub errors: u64,
    /// Over the seconds finished so far, in microseconds.
    pub p50_us: u64,
    pub p99_us: u64,
}

/// One second of the counted run, all threads merged.
pub struct Second {
    /// 0 for the first counted second.
    pub index: u64,
    /// Histograms of the operations that ran in this second.
    pub per_op: Vec<(&'static str, Histogram<u64>)>,
    pub requests: u64,
    pub errors: u64,
    /// With several nodes: each node's requests, errors and latencies.
    pub(super) per_node: Vec<NodeInterval>,
}

/// Per operation type over the run.
pub struct OpTotals {
    pub op: &'static str,
    pub requests: u64,
    pub errors: u64,
    pub hist: Histogram<u64>,
}

/// Per node over the run, in the order the nodes were given.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct NodeTotals {
    /// Connections (open loop) or clients (closed loop) that chose it.
    pub connections: u64,
    pub requests: u64,
    /// Connection errors and failed answers (`record::failure_line`).
    pub errors: u64,
}

/// A second's summary for the timeline.
#[derive(Clone, Debug)]
pub struct SecondStats {
    pub index: u64,
    pub requests: u64,
    pub errors: u64,
    pub p50_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    /// Per node (with several): requests, errors, p99 of the answered.
    pub per_node: Vec<(u64, u64, u64)>,
}

/// What a run measured.
pub struct Outcome {
    /// When its first send was due (the warm-up's, if any).
    pub start: std::time::Instant,
    /// The same on the wall clock.
    pub started_wall: std::time::SystemTime,
    /// Requests counted (after the warm-up).
    pub counted: u64,
    /// Connection errors and failed answers (`record::failure_line`).
    pub errors: u64,
    pub statuses: BTreeMap<u16, u64>,
    /// Connection errors (no answer at all).
    pub conn_errors: u64,
    /// What the first of them said.
    pub first_conn_error: Option<String>,
    /// What the first failure said (`record::ThreadTotals`), and the
    /// index of the node it came from.
    pub first_failure: Option<(usize, String)>,
    /// Sends more than 1 ms behind their intended time, and the worst lag.
    pub late: u64,
    pub max_lag: Duration,
    /// Counted sends dropped because they could not start within
    /// `drop_after` of their intended time (not in `counted` nor
    /// `errors`: they were never sent).
    pub dropped: u64,
    /// Requests abandoned unanswered `drop_after` past the end (in
    /// `counted`, `errors` and `conn_errors`).
    pub unfinished: u64,
    /// Connections (or clients) opened over the run.
    pub connections: u64,
    /// Counted sends after which no connection was idle and the pool was
    /// at `max_connections`: the target held every connection.
    pub capped: u64,
    /// Connections closed again once the burst that opened them was over
    /// (more were waiting for a send than the run opened at the start).
    pub retired: u64,
    /// From the start of the counted part to the last counted answer (at
    /// least the planned duration).
    pub elapsed: Duration,
    pub all: Histogram<u64>,
    pub per_op: Vec<OpTotals>,
    pub timeline: Vec<SecondStats>,
    pub distinct_keys: u64,
    /// False when `distinct_keys` is an estimate (an unbounded key space).
    pub distinct_exact: bool,
    /// One per node of the plan (counted requests only).
    pub per_node: Vec<NodeTotals>,
    /// The slowest 1 % of the counted requests (unanswered ones too).
    pub slowest: Vec<SlowRequest>,
    /// Counted sends the generator's timer made late (more than 1 ms)
    /// while a connection was free: the generator's own lateness.
    pub generator_late: u64,
    /// The generator threads' time on a CPU and runnable but waiting for
    /// one (their schedstat), summed over the threads.
    pub generator_on_cpu: Duration,
    pub generator_run_queue: Duration,
    /// Each sending thread: its share of a core on a CPU and waiting.
    pub generator_threads: Vec<strata_api::threads::ThreadRate>,
}

impl Outcome {
    pub fn achieved_rate(&self) -> f64 {
        self.counted as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// The failed answers by status code.
    pub fn failed_statuses(&self) -> BTreeMap<u16, u64> {
        self.statuses
            .iter()
            .filter(|(c, _)| super::record::failed_status(**c))
            .map(|(c, n)| (*c, *n))
            .collect()
    }

    /// What the first failure said, with its node's name (`urls`: the
    /// nodes as given).
    pub fn first_failure_words(&self, urls: &[String]) -> Option<String> {
        self.first_failure.as_ref().map(|(i, why)| {
            match urls
                .get(*i)
                .map(|u| crate::load::slowest::node_name(urls, u))
            {
                Some(n) => format!("{n}: {why}"),
                None => why.clone(),
            }
        })
    }
}
