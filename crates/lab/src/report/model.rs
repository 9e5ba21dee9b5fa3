//! The report's data model: what a load run or a sweep measured, as plain
//! serializable data. The driver fills it; the renderers (Markdown, HTML,
//! charts) only read it. Owns the types, the two conversions from an
//! HdrHistogram of microseconds, and small readings of the data that both
//! renderers need (a second's availability, a fault's window, the nodes'
//! names); must not render, write files or run load.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use strata_api::threads::ThreadRate;

/// A single run at one load (`strata load`) or a sweep of trials.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunKind {
    Load,
    Sweep,
}

/// The schema of `report.json` this build writes. 1: before the sweep
/// kept all its verdict's evidence (no `schema`, `machine`, trials'
/// `why` or `deciding_trial`: `verdict::replay` derives them); 2: all of
/// it, so `strata report judge` gives the verdict the sweep printed.
pub const SCHEMA: u32 = 2;

fn schema_one() -> u32 {
    1
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Which shape of this file (`SCHEMA`); 1 when absent.
    #[serde(default = "schema_one")]
    pub schema: u32,
    pub kind: RunKind,
    pub title: String,
    /// RFC 3339, UTC.
    pub started_at: String,
    /// The command line that ran.
    pub command: String,
    /// The node's URL, or the comma-separated list of nodes' URLs.
    pub target: String,
    /// One line.
    pub workload: String,
    /// E.g. "p99<=10ms, errors<=0.1%".
    pub slo: Option<String>,
    /// A load run has one; a sweep one per step, in the order run.
    pub trials: Vec<Trial>,
    /// Sweep: the highest offered rate meeting the SLO.
    pub breaking_point: Option<f64>,
    /// Sweep: plain words, what saturated and what to try next.
    pub verdict: Option<String>,
    /// Sweep: the cause the verdict names (`fsync`, `cpu`, `pause`,
    /// `stalls`, `admission`, `network`, `generator`; `unknown` when it
    /// cannot tell), and the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause_node: Option<String>,
    /// Sweep: the offered rate of the trial whose slowest requests the
    /// verdict read (the slowest-1 % chart shows the same trial).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict_trial_rate: Option<f64>,
    /// Sweep: the breaking point's range over the repeats of the
    /// deciding rates (lowest, highest), and how many repeats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaking_range: Option<(f64, f64, u32)>,
    /// Sweep: the causes the verdict weighed, ranked (its cause first).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranking: Vec<RankedCause>,
    /// Sweep: the search stopped at `--max-trials` (this many) before it
    /// was done; its breaking point is the best so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cut_short: Option<usize>,
    /// Sweep: how the host changed under it (`verdict::host`); then the
    /// breaking point's range is widened.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub host_moved: Vec<HostMove>,
    /// Sweep: the index in `trials` of the trial that decided the
    /// breaking point (the last failing run at the lowest failing rate),
    /// as the search chose it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deciding_trial: Option<usize>,
    /// Sweep: what the verdict's readings need beyond the trials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<Machine>,
    /// Faults injected during the run (`--fault`), in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultMark>,
    /// `--check`: what the consistency checker found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckSummary>,
    /// Nodes whose `/metrics` refused the lab (401, 403), and why: their
    /// server figures are missing for that reason, not for want of load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unseen: Vec<String>,
    /// A load run that is one share of a run cut over several generators
    /// (`--segment`, `--start-at`): which share, and when it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share: Option<ShareSummary>,
    /// A sweep: the capacity model checked against its breaking point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_check: Option<super::model_check::ModelCheck>,
}

/// One generator's share of a run and its start.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ShareSummary {
    /// `I/N`, the I-th (from 1) of N; `1/1` for a whole run.
    pub segment: String,
    /// The instant asked for (`--start-at`), RFC 3339 to the millisecond.
    pub start_at: Option<String>,
    /// When the run's first send was due.
    pub started: String,
    /// How long after `start_at` that was (0 when it waited in time).
    pub late_ms: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Trial {
    /// None in closed loop.
    pub offered_rate: Option<f64>,
    /// Closed loop: the number of clients.
    pub clients: Option<usize>,
    /// Start offset from the run start, seconds.
    pub started_s: f64,
    pub duration_s: f64,
    pub requests: u64,
    pub achieved_rate: f64,
    /// Connection errors and failed answers (5xx, 401/403, other 4xx but
    /// 404), dropped sends and abandoned requests.
    pub errors: u64,
    pub error_pct: f64,
    /// All operations together.
    pub latency: Percentiles,
    /// Per operation type.
    pub per_op: Vec<OpSummary>,
    /// The full percentile spectrum, wrk2/HdrHistogram style.
    pub spectrum: Vec<SpectrumPoint>,
    /// One per second of the trial; `t_s` relative to the run start.
    pub timeline: Vec<Second>,
    /// `/metrics` samples; `t_s` relative to the run start. May be empty.
    /// With several nodes, summed over the nodes at each tick (see
    /// `per_node` for each node's own).
    pub server: Vec<ServerSample>,
    pub meets_slo: Option<bool>,
    /// Why this run failed the SLO, alone (empty when it met it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub why: Vec<String>,
    /// Sends more than 1 ms after their intended time.
    pub late_sends: u64,
    pub max_lag_ms: f64,
    /// Sends dropped for not starting within the bound of their intended
    /// time (already in `requests` and `errors`).
    #[serde(default)]
    pub dropped_sends: u64,
    /// Requests abandoned unanswered after the end (already in `errors`).
    #[serde(default)]
    pub unfinished: u64,
    /// Connections (or clients) the generator opened.
    #[serde(default)]
    pub connections_opened: Option<u64>,
    /// Sends after which every connection was busy and the pool at its
    /// cap: the target held all the connections the generator may open.
    #[serde(default)]
    pub capped_sends: u64,
    /// Cores the generator used, and the whole machine's busy cores when
    /// the nodes run on it (so the split can be told).
    #[serde(default)]
    pub generator_cpu_cores: Option<f64>,
    #[serde(default)]
    pub machine_cpu_cores: Option<f64>,
    pub distinct_keys: Option<u64>,
    /// Mean over the trial.
    pub server_cpu_cores: Option<f64>,
    /// Max over the trial.
    pub server_rss_bytes: Option<f64>,
    /// Per node, in the order given (one entry for a single node; absent
    /// in reports from before several nodes could be given).
    #[serde(default)]
    pub per_node: Vec<NodeSummary>,
    /// Where the slowest 1 % of the requests spent their time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowest: Option<Slowest>,
    /// Each resource's reading in this trial, against its threshold (the
    /// sweep fills them; `verdict::readings`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceReading>,
    /// How many times this rate was run, and how many of those met the
    /// SLO (this trial is one of them); absent for a rate run once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeat: Option<u32>,
    /// The generator's own evidence: sends its timer made late while a
    /// connection was free, and its threads' wait for a CPU as a share
    /// of their time.
    #[serde(default)]
    pub generator_late_sends: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_run_queue_share: Option<f64>,
    /// Each of the generator's threads over the trial, busiest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub generator_threads: Vec<ThreadRate>,
    /// With `--workers`: each worker's share of the trial, its lateness,
    /// its CPU (the generator's evidence, one worker at a time).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workers: Vec<WorkerReport>,
    /// Failed answers by status code, and what the first failure said
    /// (a connection error's words, or a failed answer's status and
    /// body), with the node it came from.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub failed_statuses: std::collections::BTreeMap<u16, u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_failure: Option<String>,
    /// What the cluster's client did beyond sending, during the trial
    /// (retries, hedges, ...; `strata_client::Stats`), when the run went
    /// through it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<std::collections::BTreeMap<String, u64>>,
}

/// Where the slowest 1 % of a trial's requests spent their time
/// (`slowest::breakdown`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Slowest {
    /// How many requests, of which never answered, and with the server's
    /// stages.
    pub requests: u64,
    pub unanswered: u64,
    pub with_timing: u64,
    /// The fastest of them (the trial's p99), and their mean, ms.
    pub from_ms: f64,
    pub mean_ms: f64,
    /// Each part's share of their summed latency, largest first.
    pub parts: Vec<SlowPart>,
    /// How many of them each node answered (or left unanswered), most
    /// first.
    pub by_node: Vec<(String, u64)>,
}

/// What a sweep's readings need beyond its trials: the machine the
/// generator (and a local target) ran on, and the objective.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// Cores of the machine the nodes run on, when they run on the
    /// generator's (a local target).
    pub cores: Option<f64>,
    /// Cores the generator may run on (its affinity).
    pub generator_cpus: Option<f64>,
    /// The objective's tightest latency bound, ms (`p99<=10ms`: 10): a
    /// WAL fsync is judged slow against it as well as busy.
    pub objective_ms: Option<f64>,
}

/// A reading that moved between a sweep's trials when it should have
/// held still: the host changed under the sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostMove {
    /// `repeats`, `steal`, `fsync`, `generator`.
    pub what: String,
    pub node: Option<String>,
    /// Its value in the two trials that differ (its unit the reading's:
    /// a rate for `repeats`, a share, ms), and when each started.
    pub from: f64,
    pub to: f64,
    pub from_s: f64,
    pub to_s: f64,
    pub words: String,
}

/// One cause of a verdict's ranking.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RankedCause {
    /// As the verdict names causes (`fsync`, `cpu`, ...), and the node.
    pub cause: String,
    pub node: Option<String>,
    /// Its share of the slowest requests' time (none when the verdict
    /// rests on failed answers instead).
    pub share: Option<f64>,
    /// Its reading against its threshold, when one was taken: the value
    /// as a share of the threshold, and in words.
    pub reading: Option<f64>,
    pub quote: Option<String>,
}

impl RankedCause {
    /// Its share of the slowest requests' time as the verdict's words and
    /// the report's ranking table both say it ("45%").
    pub fn share_words(&self) -> Option<String> {
        self.share
            .map(|s| format!("{}%", (s.max(0.0) * 100.0).round() as u64))
    }

    /// Its reading as a share of its threshold, as both say it ("328%").
    pub fn reading_words(&self) -> Option<String> {
        self.reading.map(|x| format!("{:.0}%", x * 100.0))
    }
}

/// The resources' names (`resource.rs`), where the model's users find them.
pub use super::resource;

/// One resource's utilization or saturation in one trial.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResourceReading {
    /// `fsync`, `cpu`, `pause`, `stalls`, `admission`, `generator`.
    pub resource: String,
    /// `node-N`; none for the generator and the machine.
    pub node: Option<String>,
    /// The figure judged (its unit depends on the resource: a share of
    /// time, cores waiting, milliseconds), and the threshold it is judged
    /// against.
    pub value: f64,
    pub threshold: f64,
    pub crossed: bool,
    /// The numbers in words, for the verdict to quote.
    pub quote: String,
    /// When another figure of the same reading is further past its own
    /// threshold (an fsync seldom busy but slow: its p99 against the
    /// objective), that figure's share of its threshold: what `ratio`
    /// gives, so the words and the charts agree with `crossed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst: Option<f64>,
}

impl ResourceReading {
    /// How far past its threshold the reading is, by its worst figure
    /// (1 is at the threshold).
    pub fn ratio(&self) -> f64 {
        self.worst.unwrap_or(self.value / self.threshold.max(1e-12))
    }
}

/// One part of the slowest requests' time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SlowPart {
    /// A `Server-Timing` stage (`fsync`, `peer-fsync`, `replica`, ...) or
    /// `generator`, `connection-wait`, `network`, `unanswered`.
    pub what: String,
    /// `node-N` (or a peer's URL); none for the generator's.
    pub node: Option<String>,
    /// Of the summed latency, in [0, 1].
    pub share: f64,
    /// Per slow request, ms.
    pub mean_ms: f64,
    /// In words: "waiting for node-2's WAL fsync".
    pub words: String,
}

/// One node's share of a trial.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeSummary {
    pub url: String,
    /// Connections (open loop) or clients (closed loop) that chose it.
    pub connections: u64,
    pub requests: u64,
    /// Connection errors and failed answers (5xx, 401/403, other 4xx but
    /// 404).
    pub errors: u64,
    /// Its `/metrics` samples during the trial.
    #[serde(default)]
    pub server: Vec<ServerSample>,
    /// Mean over the trial.
    pub server_cpu_cores: Option<f64>,
    /// Max over the trial.
    pub server_rss_bytes: Option<f64>,
    /// Each of its threads over the trial, busiest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<ThreadRate>,
}

/// Latency summary, milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Percentiles {
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OpSummary {
    pub op: String,
    pub requests: u64,
    pub errors: u64,
    pub latency: Percentiles,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct SpectrumPoint {
    /// In [0, 1].
    pub quantile: f64,
    pub latency_ms: f64,
}

/// One second of a trial.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Second {
    /// Relative to the run start.
    pub t_s: f64,
    /// Requests of the second: answered, failed, and dropped (which are
    /// also errors).
    pub requests: u64,
    pub errors: u64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    /// With several nodes, each one's share of the second, in the order
    /// given (dropped sends belong to no node).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_node: Vec<NodeSecond>,
}

/// One node's requests in one second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NodeSecond {
    pub requests: u64,
    pub errors: u64,
    /// Of its answered requests; 0 when it answered none.
    pub p99_ms: f64,
}

pub use crate::nemesis::schedule::FaultMark;

/// The consistency checker's verdict on the checked clients of a run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckSummary {
    pub passed: bool,
    /// Writes acknowledged, and of those the once-written keys verified
    /// by the final reads.
    pub writes_acknowledged: u64,
    pub set_acknowledged: u64,
    pub reads_checked: u64,
    /// Whether stale reads were judged (ack_read + ack_write > from).
    pub stale_checked: bool,
    pub lost: u64,
    pub stale: u64,
    pub impossible: u64,
    pub unverified: u64,
    /// Which checks, with their exact definitions.
    pub method: String,
    /// The checker's report as text: counts and the first examples.
    pub text: String,
    /// The shared keys' linearizability, when checked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linear: Option<LinearSummary>,
}

/// What the linearizability check decided, for the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LinearSummary {
    /// `linearizable`, `not linearizable` or `unknown`.
    pub verdict: String,
    pub keys: usize,
    pub operations: usize,
    pub violated: usize,
    pub undecided: usize,
    pub algorithm: String,
    /// The witnesses' operations, key by key.
    pub witness: Vec<WitnessOp>,
    /// The check's report as text.
    pub text: String,
}

/// One operation of a witness, as drawn.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WitnessOp {
    pub key: String,
    pub client: u32,
    /// `PUT "v"`, `GET -> "v"`, `GET -> not found`, `DELETE`.
    pub what: String,
    /// Since the run's start.
    pub start_ms: f64,
    pub end_ms: f64,
}

/// One sample of the node's `/metrics`. Gauges as read; counters as deltas
/// over the interval since the previous sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSample {
    /// Relative to the run start.
    pub t_s: f64,
    /// CPU seconds per second over the last interval.
    pub cpu_cores: Option<f64>,
    pub rss_bytes: Option<f64>,
    pub in_service: Option<f64>,
    pub waiting: Option<f64>,
    pub limit: Option<f64>,
    pub admitted_at_once: Option<f64>,
    pub admitted_after_wait: Option<f64>,
    pub refused: Option<f64>,
    pub flushes: Option<f64>,
    pub compactions: Option<f64>,
    pub stalls: Option<f64>,
    /// Share of the interval the WAL spent in fsync (one commit group at a
    /// time: near 1 means the fsync sets the pace of writes).
    #[serde(default)]
    pub fsync_busy: Option<f64>,
    /// Internal operations to peers that failed or timed out, and the
    /// mean time of those that answered, in milliseconds.
    #[serde(default)]
    pub replica_errors: Option<f64>,
    #[serde(default)]
    pub replica_mean_ms: Option<f64>,
    /// Requests answered 504 for want of replicas.
    #[serde(default)]
    pub not_enough: Option<f64>,
    /// Hints kept for peers (a gauge).
    #[serde(default)]
    pub hints_pending: Option<f64>,
    /// CPUs the node may use (a gauge).
    #[serde(default)]
    pub cpus: Option<f64>,
    /// File descriptors the node holds open (a gauge: files, sockets).
    #[serde(default)]
    pub open_fds: Option<f64>,
    /// Client connections the node holds open (a gauge; part of
    /// `open_fds`, and the client's choice).
    #[serde(default)]
    pub client_connections: Option<f64>,
    /// Of `rss_bytes`, anonymous memory (the heap).
    #[serde(default)]
    pub rss_anon_bytes: Option<f64>,
    /// The node's threads' wait for a CPU, seconds per second (cores'
    /// worth of runnable threads not running).
    #[serde(default)]
    pub run_queue_cores: Option<f64>,
    /// How busy the CPUs the node may run on were, whoever used them (a
    /// share of them all).
    #[serde(default)]
    pub allowed_cpus_busy: Option<f64>,
    /// Of that, the share the hypervisor took for other guests (steal):
    /// the node's cores ran nothing of this machine's then.
    #[serde(default)]
    pub allowed_cpus_stolen: Option<f64>,
    /// What the node's engine wrote per second: WAL, flushes and
    /// compactions, bytes.
    #[serde(default)]
    pub wal_bytes_per_s: Option<f64>,
    #[serde(default)]
    pub flush_bytes_per_s: Option<f64>,
    #[serde(default)]
    pub compaction_bytes_per_s: Option<f64>,
    /// Share of the interval the node's cgroup was held back by its CPU
    /// quota.
    #[serde(default)]
    pub throttled_share: Option<f64>,
    /// The machine's pressure: share of the interval at least one task
    /// waited for a CPU, for I/O, for memory.
    #[serde(default)]
    pub pressure_cpu: Option<f64>,
    #[serde(default)]
    pub pressure_io: Option<f64>,
    #[serde(default)]
    pub pressure_memory: Option<f64>,
    /// The pause detector: share of the interval its ticks woke late by,
    /// and its latest wake-up over the node's last 10 s, ms.
    #[serde(default)]
    pub paused_share: Option<f64>,
    #[serde(default)]
    pub pause_max_ms: Option<f64>,
    /// Writes waiting on the WAL (a gauge).
    #[serde(default)]
    pub writers_waiting: Option<f64>,
    /// WAL fsyncs in the interval, their p99 (from the histogram's
    /// buckets: an upper bound), and writes per fsync.
    #[serde(default)]
    pub fsyncs: Option<f64>,
    #[serde(default)]
    pub fsync_p99_ms: Option<f64>,
    #[serde(default)]
    pub writes_per_fsync: Option<f64>,
    /// Share of the interval writes were stalled.
    #[serde(default)]
    pub stall_share: Option<f64>,
    /// Seconds per second the node's commit groups waited for the WAL's
    /// lock while another thread held it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_lock_wait: Option<f64>,
    /// Memtable bytes and immutable memtables waiting for flush (gauges).
    #[serde(default)]
    pub memtable_bytes: Option<f64>,
    /// Bytes the block cache holds (a gauge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_cache_bytes: Option<f64>,
    #[serde(default)]
    pub immutables: Option<f64>,
    /// Level 0's tables (a gauge): the debt flush leaves to compaction.
    #[serde(default)]
    pub l0_tables: Option<f64>,
    /// Client connections closed by the node's connection limit.
    #[serde(default)]
    pub shed: Option<f64>,
    /// How long the lab's scrape of `/metrics` took, ms (a node that
    /// stops answers late, or not at all: then there is no sample).
    #[serde(default)]
    pub scrape_ms: Option<f64>,
}

impl Second {
    /// Share of the second's requests answered successfully, in [0, 1]
    /// (dropped sends count as failed); None for a second with none.
    pub fn availability(&self) -> Option<f64> {
        (self.requests > 0)
            .then(|| self.requests.saturating_sub(self.errors) as f64 / self.requests as f64)
    }
}

impl CheckSummary {
    /// Lost writes, stale reads and impossible reads together.
    pub fn anomalies(&self) -> u64 {
        self.lost + self.stale + self.impossible
    }
}

/// What the seconds during a fault's window say: from its injection until
/// the successful rate was back (or the run ended).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FaultWindow {
    pub from_s: f64,
    pub to_s: f64,
    pub requests: u64,
    pub errors: u64,
    /// The second with the lowest availability: its start and its share.
    pub worst: Option<(f64, f64)>,
}

impl Report {
    /// The end of the run on the time axis: the last trial's end or the
    /// last second's.
    pub fn end_s(&self) -> f64 {
        self.trials
            .iter()
            .map(|t| t.started_s + t.duration_s)
            .chain(
                self.trials
                    .iter()
                    .flat_map(|t| t.timeline.iter().map(|s| s.t_s + 1.0)),
            )
            .fold(0.0f64, f64::max)
    }

    /// How many nodes the seconds are split over (0 when they are not).
    pub fn node_seconds(&self) -> usize {
        self.trials
            .iter()
            .flat_map(|t| t.timeline.iter().map(|s| s.per_node.len()))
            .max()
            .unwrap_or(0)
    }

    /// Node `i`'s URL (0-based, as given), from the first trial that
    /// names it.
    pub fn node_url(&self, i: usize) -> Option<&str> {
        self.trials
            .iter()
            .find_map(|t| t.per_node.get(i))
            .map(|n| n.url.as_str())
    }

    /// The seconds from a fault's injection until the successful rate was
    /// back to its level before it, or until the run ended when it did not
    /// come back: their requests, errors and the worst second. A second
    /// counts if it overlaps the window.
    pub fn fault_window(&self, f: &FaultMark) -> FaultWindow {
        let end = self.end_s();
        let to_s = match f.recovered_after_s {
            Some(r) => f.until_s.unwrap_or(f.at_s) + r,
            None => end,
        }
        .max(f.until_s.unwrap_or(f.at_s))
        .min(end.max(f.at_s));
        let mut w = FaultWindow {
            from_s: f.at_s,
            to_s,
            requests: 0,
            errors: 0,
            worst: None,
        };
        let seconds = self.trials.iter().flat_map(|t| t.timeline.iter());
        for s in seconds.filter(|s| s.t_s + 1.0 > f.at_s && s.t_s < to_s.max(f.at_s + 1e-9)) {
            w.requests += s.requests;
            w.errors += s.errors;
            if let Some(a) = s.availability() {
                if w.worst.is_none_or(|(_, b)| a < b) {
                    w.worst = Some((s.t_s, a));
                }
            }
        }
        w
    }
}

/// Histograms given to these helpers hold microseconds.
const US_PER_MS: f64 = 1000.0;

impl Percentiles {
    /// Summarize a histogram of microseconds (as `load` records them:
    /// 1..=3.6e9, 3 significant digits). An empty histogram gives zeros.
    pub fn from_hist(h: &Histogram<u64>) -> Percentiles {
        let ms = |q: f64| h.value_at_quantile(q) as f64 / US_PER_MS;
        Percentiles {
            mean_ms: h.mean() / US_PER_MS,
            p50_ms: ms(0.5),
            p90_ms: ms(0.9),
            p95_ms: ms(0.95),
            p99_ms: ms(0.99),
            p999_ms: ms(0.999),
            max_ms: h.max() as f64 / US_PER_MS,
        }
    }
}

/// At most this many points in a spectrum.
pub const MAX_SPECTRUM_POINTS: usize = 100;

/// The percentile spectrum of a histogram of microseconds, as wrk2 and
/// HdrHistogram print it: two ticks per halving of the distance to 100%
/// (50%, 75%, 87.5%, …), ending with the maximum at quantile 1. Quantiles
/// strictly increase; an empty histogram gives no points.
pub fn spectrum_from_hist(h: &Histogram<u64>) -> Vec<SpectrumPoint> {
    let mut out: Vec<SpectrumPoint> = Vec::new();
    if h.is_empty() {
        return out;
    }
    for v in h.iter_quantiles(2) {
        let q = v.quantile_iterated_to();
        if out.last().is_some_and(|p| q <= p.quantile) {
            continue;
        }
        out.push(SpectrumPoint {
            quantile: q,
            latency_ms: h.highest_equivalent(v.value_iterated_to()) as f64 / US_PER_MS,
        });
    }
    if out.len() > MAX_SPECTRUM_POINTS {
        // Keep the tail, where the information is: drop from the body.
        let extra = out.len() - MAX_SPECTRUM_POINTS;
        out.drain(1..=extra);
    }
    match out.last_mut() {
        Some(p) if p.quantile >= 1.0 => p.latency_ms = h.max() as f64 / US_PER_MS,
        _ => out.push(SpectrumPoint {
            quantile: 1.0,
            latency_ms: h.max() as f64 / US_PER_MS,
        }),
    }
    out
}

/// Mean CPU (cores) and maximum RSS (bytes) over some samples.
pub fn cpu_and_rss(server: &[ServerSample]) -> (Option<f64>, Option<f64>) {
    let cpu: Vec<f64> = server.iter().filter_map(|s| s.cpu_cores).collect();
    let rss = server
        .iter()
        .filter_map(|s| s.rss_bytes)
        .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))));
    let mean = (!cpu.is_empty()).then(|| cpu.iter().sum::<f64>() / cpu.len() as f64);
    (mean, rss)
}

/// One worker's share of a trial, as the report shows it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerReport {
    pub url: String,
    /// Counted requests it sent.
    pub requests: u64,
    /// Its sends more than 1 ms late, those its own timer made late (a
    /// connection free), and those it dropped.
    pub late_sends: u64,
    pub generator_late_sends: u64,
    pub dropped_sends: u64,
    pub max_lag_ms: f64,
    /// Cores its sending threads used, and the share of their runnable
    /// time they waited for a CPU.
    pub cpu_cores: f64,
    pub run_queue_share: Option<f64>,
    /// How long after the instant named its first send was due.
    pub started_late_ms: f64,
}

impl WorkerReport {
    /// Its share of sends that left late or never: how far it fell behind.
    pub fn behind(&self) -> f64 {
        (self.generator_late_sends + self.dropped_sends) as f64
            / (self.requests + self.dropped_sends).max(1) as f64
    }
}
