//! A cluster of nodes in virtual time: clients send to a coordinator node,
//! which fans each request out to the key's `from` replicas (itself
//! directly when it is one of them, the others over a network hop each
//! way) and answers at the `ack`-th reply, while the rest finish in the
//! background and still cost their CPU and their WAL's time. Every node
//! has a CPU (its own cores, or cores shared by all nodes on one host, the
//! load generator included), optional admission permits for client
//! requests, and a WAL with group commit for the writes it applies. Nodes
//! can be down: their replicas do not answer, and a request that cannot
//! reach `ack` live replicas fails at once (504), as the real coordinator
//! does. Owns the cluster scenario's format (`[cluster]`), its checks and
//! overrides, and the event loop with its raw counts; must not interpret
//! the counts (that is `cluster_report`), build scenarios from metrics
//! (that is `cluster_calibrate`), or touch the single-node pipeline of
//! `model`.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Instant;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::des::{same_gen, Ev, EventQueue, Slab};
use crate::dist::{DistSpec, Sampler};
use crate::model::Latency;
use crate::rng::SimRng;
use crate::scenario::{Arrivals, Clients, Start};
use crate::units::Dur;

fn is_zero(d: &Dur) -> bool {
    d.0 == 0
}
fn is_zero_u32(v: &u32) -> bool {
    *v == 0
}
fn is_false(v: &bool) -> bool {
    !*v
}
fn default_seed() -> u64 {
    1
}
fn default_duration() -> Dur {
    Dur(10_000_000_000)
}
fn default_batch() -> u32 {
    512
}
fn default_quantile() -> f64 {
    0.99
}
fn default_limit() -> Dur {
    Dur(10_000_000)
}
fn default_errors() -> f64 {
    0.001
}

/// A cluster scenario as a TOML file has it: the clients, the cluster, the
/// objective the what-ifs' breaking points are judged by.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterScenario {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The measured window of virtual time.
    #[serde(default = "default_duration")]
    pub duration: Dur,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub warmup: Dur,
    #[serde(default = "default_seed")]
    pub seed: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// What a breaking point must meet (the what-ifs are judged by it).
    #[serde(default)]
    pub slo: SloSpec,
    pub clients: Clients,
    pub cluster: ClusterSpec,
}

/// A latency bound on the request lifetime and an error budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SloSpec {
    /// 0.99 for p99; 1.0 for the maximum.
    #[serde(default = "default_quantile")]
    pub quantile: f64,
    #[serde(default = "default_limit")]
    pub limit: Dur,
    /// Largest share of requests that may fail (504, refused, dropped).
    #[serde(default = "default_errors")]
    pub max_errors: f64,
}

impl Default for SloSpec {
    fn default() -> Self {
        SloSpec {
            quantile: default_quantile(),
            limit: default_limit(),
            max_errors: default_errors(),
        }
    }
}

impl SloSpec {
    pub fn describe(&self) -> String {
        let p = self.quantile * 100.0;
        let q = if self.quantile >= 1.0 {
            "max".to_string()
        } else if (p - p.round()).abs() < 1e-9 {
            format!("p{p:.0}")
        } else {
            format!("p{}", (p * 1000.0).round() / 1000.0)
        };
        format!(
            "{q}<={}, errors<={}%",
            self.limit,
            (self.max_errors * 100.0 * 1000.0).round() / 1000.0
        )
    }
}

/// The cluster: its nodes, replication, resources and costs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterSpec {
    pub nodes: u32,
    /// Replicas of each key (the node's `--replication`, a request's
    /// `from`).
    pub from: u32,
    /// Replies the coordinator waits for before it answers.
    pub ack: u32,
    /// Nodes down (the last `down` of the list): clients do not reach them
    /// and their replicas do not answer.
    #[serde(default, skip_serializing_if = "is_zero_u32")]
    pub down: u32,
    /// Share of client requests each node coordinates (empty: even).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub weights: Vec<f64>,
    /// All nodes run on one host with this many cores, shared by every
    /// node (and by the load generator, `cpu.client`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_cores: Option<u32>,
    /// Each node has this many cores of its own (nodes on separate
    /// machines). One of `host_cores` and `cores`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cores: Option<u32>,
    /// The hop between a client and its coordinator, each way (none if
    /// absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_hop: Option<DistSpec>,
    /// The hop between two nodes, each way.
    pub hop: DistSpec,
    pub cpu: CpuSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admission: Option<AdmissionSpec>,
    /// Each node's WAL (writes only); absent when durability is not sync.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal: Option<WalSpec>,
}

/// CPU time per unit of work, by role.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuSpec {
    /// The coordinator, once per client request: HTTP in and out, the plan.
    pub request: DistSpec,
    /// The coordinator, once per remote replica operation: sending it and
    /// taking its reply (none if absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<DistSpec>,
    /// A replica serving a remote coordinator's operation: receive, apply
    /// or read, answer.
    pub replica: DistSpec,
    /// The coordinator's own replica operation (default: `replica`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<DistSpec>,
    /// The load generator, once per request, on the shared host's cores
    /// (only with `host_cores`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<DistSpec>,
    /// Other costs for writes (what is absent here is the same as reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write: Option<CpuWrite>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpuWrite {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<DistSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send: Option<DistSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<DistSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<DistSpec>,
}

/// Admission of client requests, per node (FIFO, as the node's own).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdmissionSpec {
    pub permits: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_waiting: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wait: Option<Dur>,
}

/// A node's WAL: one group at a time, every waiting write (at most
/// `max_batch`) made durable by one fsync.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WalSpec {
    pub fsync: DistSpec,
    #[serde(default = "default_batch")]
    pub max_batch: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_write: Option<DistSpec>,
    /// One disk for all nodes: one fsync at a time across the host.
    #[serde(default, skip_serializing_if = "is_false")]
    pub shared_disk: bool,
}

/// The keys a `--set` path may start with.
pub const TOP_KEYS: [&str; 8] = [
    "duration",
    "warmup",
    "seed",
    "name",
    "description",
    "slo",
    "clients",
    "cluster",
];

impl ClusterScenario {
    pub fn from_toml(text: &str) -> Result<ClusterScenario, String> {
        let s: ClusterScenario = toml::from_str(text).map_err(|e| e.to_string())?;
        s.check()?;
        Ok(s)
    }

    /// Read a cluster scenario file; returns it and the directory its
    /// relative paths start from.
    pub fn load(path: &Path) -> Result<(ClusterScenario, PathBuf), String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let s =
            ClusterScenario::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok((s, base))
    }

    pub fn to_toml(&self) -> Result<String, String> {
        toml::to_string_pretty(self).map_err(|e| format!("cannot write the scenario as TOML: {e}"))
    }

    /// Nodes that are up (clients reach them, their replicas answer).
    pub fn live(&self) -> u32 {
        self.cluster.nodes - self.cluster.down
    }

    pub fn check(&self) -> Result<(), String> {
        crate::scenario::check_run(self.duration, &self.clients)?;
        let c = &self.cluster;
        if c.nodes == 0 || c.nodes > 1024 {
            return Err(format!("cluster.nodes {} must be within 1..=1024", c.nodes));
        }
        if c.from == 0 || c.from > c.nodes || c.from > 255 {
            return Err(format!(
                "cluster.from {} must be within 1..=nodes ({})",
                c.from, c.nodes
            ));
        }
        if c.ack == 0 || c.ack > c.from {
            return Err(format!(
                "cluster.ack {} must be within 1..=from ({})",
                c.ack, c.from
            ));
        }
        if c.down >= c.nodes {
            return Err(format!(
                "cluster.down {} must leave a node up (of {})",
                c.down, c.nodes
            ));
        }
        if !c.weights.is_empty() {
            if c.weights.len() != c.nodes as usize {
                return Err(format!(
                    "cluster.weights has {} entries for {} nodes",
                    c.weights.len(),
                    c.nodes
                ));
            }
            if c.weights.iter().any(|w| !(w.is_finite() && *w >= 0.0)) {
                return Err("cluster.weights must be finite and >= 0".into());
            }
            if c.weights[..self.live() as usize].iter().sum::<f64>() <= 0.0 {
                return Err("cluster.weights give the nodes that are up no requests".into());
            }
        }
        match (c.host_cores, c.cores) {
            (Some(_), Some(_)) => {
                return Err(
                    "give cluster.host_cores (one host) or cluster.cores (per node), not both"
                        .into(),
                )
            }
            (None, None) => {
                return Err(
                    "cluster.host_cores (one host) or cluster.cores (per node) is missing".into(),
                )
            }
            (Some(0), _) | (_, Some(0)) => return Err("cores must be >= 1".into()),
            _ => {}
        }
        if c.cpu.client.is_some() && c.host_cores.is_none() {
            return Err("cluster.cpu.client (the load generator's CPU) needs host_cores: the generator shares a host with the nodes".into());
        }
        if let Some(a) = &c.admission {
            if a.permits == 0 {
                return Err("cluster.admission.permits must be >= 1".into());
            }
        }
        if let Some(w) = &c.wal {
            if w.max_batch == 0 {
                return Err("cluster.wal.max_batch must be >= 1".into());
            }
        }
        if !(self.slo.quantile > 0.0 && self.slo.quantile <= 1.0) {
            return Err(format!(
                "slo.quantile {} must be within (0, 1]",
                self.slo.quantile
            ));
        }
        if !(0.0..=1.0).contains(&self.slo.max_errors) {
            return Err(format!(
                "slo.max_errors {} must be within 0..=1",
                self.slo.max_errors
            ));
        }
        Ok(())
    }

    /// Apply `PARAM=VALUE` overrides in order: `cluster.nodes=5`,
    /// `cluster.ack=1`, `cluster.down=1`, `cluster.cpu.request.mean=20us`,
    /// `clients.rate=30000`, `slo.limit=5ms`; `none` removes an optional
    /// field (`cluster.host_cores=none`).
    pub fn with_overrides(&self, sets: &[(String, String)]) -> Result<ClusterScenario, String> {
        if sets.is_empty() {
            return Ok(self.clone());
        }
        let mut v = toml::Value::try_from(self).map_err(|e| e.to_string())?;
        for (k, val) in sets {
            let first = k.split('.').next().unwrap_or("");
            if !TOP_KEYS.contains(&first) {
                return Err(format!(
                    "{k}: a cluster scenario's parameters start with one of {}",
                    TOP_KEYS.join(", ")
                ));
            }
            if val == "none" {
                unset(&mut v, k)?;
            } else {
                crate::scenario::set_param(&mut v, k, val)?;
            }
        }
        let describe = sets
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ");
        let s: ClusterScenario = v
            .try_into()
            .map_err(|e: toml::de::Error| format!("after {describe}: {}", e.message()))?;
        s.check().map_err(|e| format!("after {describe}: {e}"))?;
        Ok(s)
    }
}

/// Remove the optional field at `path` (`--set cluster.host_cores=none`).
fn unset(root: &mut toml::Value, path: &str) -> Result<(), String> {
    let segs: Vec<&str> = path.split('.').collect();
    let mut cur = root;
    for seg in &segs[..segs.len() - 1] {
        cur = cur
            .get_mut(*seg)
            .ok_or_else(|| format!("{path}: no {seg} to take a field from"))?;
    }
    let t = cur
        .as_table_mut()
        .ok_or_else(|| format!("{path}: not a field of a table"))?;
    t.remove(segs[segs.len() - 1]);
    Ok(())
}

/// Whether a scenario file's text is a cluster scenario (has `[cluster]`).
pub fn is_cluster_text(text: &str) -> bool {
    toml::from_str::<toml::Table>(text)
        .map(|t| t.contains_key("cluster"))
        .unwrap_or(false)
}

// ---------------------------------------------------------------- the model

/// Roles of CPU work.
pub const ROLES: [&str; 5] = ["client", "request", "send", "replica", "local"];
const R_CLIENT: usize = 0;
const R_REQUEST: usize = 1;
const R_SEND: usize = 2;
const R_REPLICA: usize = 3;
const R_LOCAL: usize = 4;

const EV_WAKE: u8 = 0;
const EV_ARRIVAL: u8 = 1;
const EV_CPU: u8 = 2;
const EV_HOP_IN: u8 = 3;
const EV_HOP_OUT: u8 = 4;
const EV_TO_REPLICA: u8 = 5;
const EV_TO_COORD: u8 = 6;
const EV_GROUP: u8 = 7;
const EV_TIMEOUT: u8 = 8;

const F_WRITE: u8 = 1;
const F_FAILED: u8 = 2;
const F_WAITING: u8 = 4;
const F_ANSWERED: u8 = 8;
const F_OUT: u8 = 16;
const F_PERMIT: u8 = 32;
const F_FREED: u8 = 64;

#[derive(Clone, Copy)]
struct Req {
    start: u64,
    mark: u64,
    client: u32,
    gen: u32,
    coord: u16,
    flags: u8,
    got: u8,
    outstanding: u8,
}

#[derive(Clone, Copy)]
struct Op {
    req: u32,
    node: u16,
    local: bool,
    write: bool,
}

#[derive(Clone, Copy)]
struct Job {
    role: u8,
    write: bool,
    node: u16,
    /// A request (client, request roles) or an operation.
    id: u32,
    created: u64,
}

struct Pool {
    servers: u32,
    busy: u32,
    queue: VecDeque<u32>,
}

/// What a node did over the measured window.
#[derive(Clone, Debug, Default, Serialize)]
pub struct NodeStats {
    /// Client requests that reached it (it coordinates them).
    pub coordinated: u64,
    /// Of them, admitted (took a permit, or no admission).
    pub admitted: u64,
    /// Operations it served for a remote coordinator.
    pub replica_ops: u64,
    /// Its own replica operations as a coordinator.
    pub local_ops: u64,
    /// Jobs queued on its CPU, by role (see `ROLES`) and read (0) / write (1).
    pub jobs: [[u64; 2]; 5],
    /// CPU time its jobs started, by role, ns.
    pub cpu_ns: [f64; 5],
    /// Writes queued to its WAL.
    pub wal_writes: u64,
    pub wal_groups: u64,
    pub wal_busy_ns: f64,
    /// Admission: had to wait, refused (no room to wait), timed out.
    pub waited: u64,
    pub refused: u64,
    pub timeouts: u64,
    pub wait_ns: f64,
}

/// A CPU pool's use over the window.
#[derive(Clone, Debug, Default, Serialize)]
pub struct PoolStats {
    pub servers: u32,
    pub busy_ns: f64,
    pub jobs: u64,
    /// Time jobs waited for a core.
    pub wait_ns: f64,
}

struct NodeRt {
    rng: SimRng,
    wal_rng: SimRng,
    in_use: u32,
    waiting: u32,
    adm_q: VecDeque<(u32, u32)>,
    wal_q: VecDeque<u32>,
    wal_busy: bool,
    batch: Vec<u32>,
    in_disk_q: bool,
    st: NodeStats,
}

enum ClientsRt {
    Closed {
        think: Sampler,
    },
    Open {
        mean_gap: f64,
        poisson: bool,
        max_in_flight: u32,
    },
}

struct WalRt {
    max_batch: u32,
    fsync: Sampler,
    per_write: Option<Sampler>,
    shared: bool,
}

/// Everything a cluster run measured.
#[derive(Serialize)]
pub struct ClusterRun {
    #[serde(skip)]
    pub scenario: ClusterScenario,
    pub seed: u64,
    pub window_ns: u64,
    pub warmup_ns: u64,
    /// Requests started in the window (arrived at the cluster).
    pub started: u64,
    /// Requests answered in the window (ok or not).
    pub done: u64,
    /// Answered with a failure: not enough live replicas (504).
    pub not_enough: u64,
    /// Refused at admission (no room to wait, or waited too long).
    pub refused: u64,
    /// Arrivals dropped by the open loop's max_in_flight guard.
    pub dropped: u64,
    /// Requests that passed admission in the window.
    pub admitted: u64,
    #[serde(skip)]
    pub lifetime: Latency,
    pub nodes: Vec<NodeStats>,
    pub pools: Vec<PoolStats>,
    /// Mean CPU time per job, by role and read/write (from the
    /// distributions), ns.
    pub role_mean_ns: [[f64; 2]; 5],
    /// Mean fsync and per-write time, ns (0 without a WAL).
    pub fsync_mean_ns: f64,
    pub per_write_mean_ns: f64,
    pub events: u64,
    pub wall_s: f64,
    pub in_flight_end: u64,
}

impl ClusterRun {
    /// Answered without error.
    pub fn ok(&self) -> u64 {
        self.done.saturating_sub(self.not_enough + self.refused)
    }
    /// Failed requests and dropped arrivals.
    pub fn errors(&self) -> u64 {
        self.not_enough + self.refused + self.dropped
    }
}

/// A compiled cluster scenario, ready to run for one seed.
pub struct ClusterSim {
    now: u64,
    t0: u64,
    end: u64,
    q: EventQueue,
    reqs: Slab<Req>,
    ops: Slab<Op>,
    jobs: Slab<Job>,
    gen: u32,
    n: usize,
    from: usize,
    ack: u8,
    live: usize,
    coord_cum: Vec<f64>,
    pools: Vec<Pool>,
    pool_st: Vec<PoolStats>,
    host: bool,
    cost: [[Option<Sampler>; 2]; 5],
    client_hop: Option<Sampler>,
    hop: Sampler,
    permits: Option<(u32, u32, u64)>,
    nodes: Vec<NodeRt>,
    wal: Option<WalRt>,
    disk_busy: bool,
    disk_q: VecDeque<u16>,
    client_rng: SimRng,
    place_rng: SimRng,
    hop_rng: SimRng,
    clients: ClientsRt,
    write_fraction: f64,
    scratch: Vec<u16>,
    in_system: u64,
    started: u64,
    done: u64,
    not_enough: u64,
    refused: u64,
    dropped: u64,
    admitted: u64,
    lifetime: Latency,
    events: u64,
    scenario: ClusterScenario,
    seed: u64,
}

fn new_latency() -> Latency {
    let mut hist = Histogram::new_with_bounds(1, 1 << 44, 3).expect("histogram bounds");
    hist.auto(true);
    Latency {
        hist,
        pow2: [0; 65],
        sum: 0.0,
    }
}

impl ClusterSim {
    /// Compile a cluster scenario (files relative to `base`) for a seed.
    pub fn new(sc: &ClusterScenario, base: &Path, seed: u64) -> Result<ClusterSim, String> {
        sc.check()?;
        let c = &sc.cluster;
        let comp = |what: &str, d: &DistSpec| {
            Sampler::compile(d, base).map_err(|e| format!("cluster.{what}: {e}"))
        };
        let opt = |what: &str, d: &Option<DistSpec>| -> Result<Option<Sampler>, String> {
            d.as_ref().map(|d| comp(what, d)).transpose()
        };
        let cpu = &c.cpu;
        let w = cpu.write.clone().unwrap_or_default();
        let request = comp("cpu.request", &cpu.request)?;
        let send = opt("cpu.send", &cpu.send)?;
        let replica = comp("cpu.replica", &cpu.replica)?;
        let local = match &cpu.local {
            Some(d) => comp("cpu.local", d)?,
            None => replica.clone(),
        };
        let client = if c.host_cores.is_some() {
            opt("cpu.client", &cpu.client)?
        } else {
            None
        };
        let w_request = opt("cpu.write.request", &w.request)?.unwrap_or(request.clone());
        let w_send = match &w.send {
            Some(d) => Some(comp("cpu.write.send", d)?),
            None => send.clone(),
        };
        let w_replica = opt("cpu.write.replica", &w.replica)?.unwrap_or(replica.clone());
        let w_local = match (&w.local, &w.replica, &cpu.local) {
            (Some(d), _, _) => comp("cpu.write.local", d)?,
            // A write's replica cost given, no local cost anywhere: the
            // local one follows the write's replica cost.
            (None, Some(_), None) => w_replica.clone(),
            _ => local.clone(),
        };
        let cost = [
            [client.clone(), client],
            [Some(request), Some(w_request)],
            [send, w_send],
            [Some(replica), Some(w_replica)],
            [Some(local), Some(w_local)],
        ];
        let n = c.nodes as usize;
        let live = (c.nodes - c.down) as usize;
        let mut cum = Vec::with_capacity(live);
        let mut acc = 0.0;
        for i in 0..live {
            acc += if c.weights.is_empty() {
                1.0
            } else {
                c.weights[i]
            };
            cum.push(acc);
        }
        let (pools, host) = match (c.host_cores, c.cores) {
            (Some(h), _) => (vec![h], true),
            (None, Some(k)) => (vec![k; n], false),
            _ => unreachable!("checked"),
        };
        let pool_st = pools
            .iter()
            .map(|&s| PoolStats {
                servers: s,
                ..Default::default()
            })
            .collect();
        let pools = pools
            .into_iter()
            .map(|servers| Pool {
                servers,
                busy: 0,
                queue: VecDeque::new(),
            })
            .collect();
        let nodes = (0..n)
            .map(|i| NodeRt {
                rng: SimRng::new(seed, 100 + 2 * i as u64),
                wal_rng: SimRng::new(seed, 101 + 2 * i as u64),
                in_use: 0,
                waiting: 0,
                adm_q: VecDeque::new(),
                wal_q: VecDeque::new(),
                wal_busy: false,
                batch: Vec::new(),
                in_disk_q: false,
                st: NodeStats::default(),
            })
            .collect();
        let wal = match &c.wal {
            Some(w) => Some(WalRt {
                max_batch: w.max_batch,
                fsync: comp("wal.fsync", &w.fsync)?,
                per_write: opt("wal.per_write", &w.per_write)?,
                shared: w.shared_disk,
            }),
            None => None,
        };
        let clients = match &sc.clients {
            Clients::Closed { think, .. } => ClientsRt::Closed {
                think: Sampler::compile(think, base).map_err(|e| format!("clients.think: {e}"))?,
            },
            Clients::Open {
                rate,
                arrivals,
                max_in_flight,
                ..
            } => ClientsRt::Open {
                mean_gap: 1e9 / rate,
                poisson: *arrivals == Arrivals::Poisson,
                max_in_flight: *max_in_flight,
            },
        };
        Ok(ClusterSim {
            now: 0,
            t0: sc.warmup.0,
            end: sc.warmup.0 + sc.duration.0,
            q: EventQueue::new(),
            reqs: Slab::new(),
            ops: Slab::new(),
            jobs: Slab::new(),
            gen: 0,
            n,
            from: c.from as usize,
            ack: c.ack as u8,
            live,
            coord_cum: cum,
            pools,
            pool_st,
            host,
            cost,
            client_hop: opt("client_hop", &c.client_hop)?,
            hop: comp("hop", &c.hop)?,
            permits: c.admission.as_ref().map(|a| {
                (
                    a.permits,
                    a.max_waiting.unwrap_or(u32::MAX),
                    a.max_wait.map(|d| d.0).unwrap_or(0),
                )
            }),
            nodes,
            wal,
            disk_busy: false,
            disk_q: VecDeque::new(),
            client_rng: SimRng::new(seed, 1),
            place_rng: SimRng::new(seed, 2),
            hop_rng: SimRng::new(seed, 3),
            clients,
            write_fraction: sc.clients.write_fraction(),
            scratch: (0..n as u16).collect(),
            in_system: 0,
            started: 0,
            done: 0,
            not_enough: 0,
            refused: 0,
            dropped: 0,
            admitted: 0,
            lifetime: new_latency(),
            events: 0,
            scenario: sc.clone(),
            seed,
        })
    }

    #[inline]
    fn win(&self) -> bool {
        self.now >= self.t0
    }

    /// Run to the end of the window.
    pub fn run(mut self) -> ClusterRun {
        let wall = Instant::now();
        match &self.scenario.clients {
            Clients::Closed { count, start, .. } => {
                let count = *count;
                let spread = *start == Start::Spread;
                let mean = match &self.clients {
                    ClientsRt::Closed { think } => think.mean(),
                    _ => 0.0,
                };
                for i in 0..count {
                    let t = if spread {
                        (self.client_rng.unit() * mean) as u64
                    } else {
                        0
                    };
                    self.q.push(t, Ev::new(EV_WAKE, 0, i));
                }
            }
            Clients::Open { .. } => self.q.push(0, Ev::new(EV_ARRIVAL, 0, 0)),
        }
        while let Some((t, ev)) = self.q.pop() {
            if t > self.end {
                break;
            }
            self.now = t;
            self.events += 1;
            let i = ev.index();
            match ev.kind() {
                EV_WAKE => self.new_request(i),
                EV_ARRIVAL => {
                    let ClientsRt::Open {
                        mean_gap, poisson, ..
                    } = self.clients
                    else {
                        unreachable!()
                    };
                    let gap = if poisson {
                        -(1.0 - self.client_rng.unit()).ln() * mean_gap
                    } else {
                        mean_gap
                    };
                    self.q.push(
                        self.now + gap.round().max(1.0) as u64,
                        Ev::new(EV_ARRIVAL, 0, 0),
                    );
                    self.new_request(u32::MAX);
                }
                EV_CPU => self.job_done(i),
                EV_HOP_IN => self.at_coordinator(i),
                EV_HOP_OUT => self.out(i),
                EV_TO_REPLICA => {
                    let o = self.ops[i];
                    self.job(R_REPLICA, o.write, o.node, i);
                }
                EV_TO_COORD => self.op_answered(i),
                EV_GROUP => self.group_done(i as usize),
                EV_TIMEOUT => self.timeout(i, ev.gen()),
                _ => unreachable!("unknown event"),
            }
        }
        let window_ns = self.end - self.t0;
        let mean = |s: &Option<Sampler>| s.as_ref().map(Sampler::mean).unwrap_or(0.0);
        let mut role_mean_ns = [[0.0; 2]; 5];
        for (r, pair) in self.cost.iter().enumerate() {
            role_mean_ns[r] = [mean(&pair[0]), mean(&pair[1])];
        }
        let (fsync_mean_ns, per_write_mean_ns) = match &self.wal {
            Some(w) => (
                w.fsync.mean(),
                w.per_write.as_ref().map(Sampler::mean).unwrap_or(0.0),
            ),
            None => (0.0, 0.0),
        };
        ClusterRun {
            scenario: self.scenario,
            seed: self.seed,
            window_ns,
            warmup_ns: self.t0,
            started: self.started,
            done: self.done,
            not_enough: self.not_enough,
            refused: self.refused,
            dropped: self.dropped,
            admitted: self.admitted,
            lifetime: self.lifetime,
            nodes: self.nodes.into_iter().map(|n| n.st).collect(),
            pools: self.pool_st,
            role_mean_ns,
            fsync_mean_ns,
            per_write_mean_ns,
            events: self.events,
            wall_s: wall.elapsed().as_secs_f64(),
            in_flight_end: self.in_system,
        }
    }

    fn new_request(&mut self, client: u32) {
        if let ClientsRt::Open { max_in_flight, .. } = self.clients {
            if self.in_system >= max_in_flight as u64 {
                if self.win() {
                    self.dropped += 1;
                }
                return;
            }
        }
        let write = self.write_fraction >= 1.0
            || (self.write_fraction > 0.0 && self.client_rng.unit() < self.write_fraction);
        let coord = if self.coord_cum.len() == 1 {
            0
        } else {
            let total = *self.coord_cum.last().expect("a live node");
            let x = self.client_rng.unit() * total;
            self.coord_cum
                .partition_point(|&c| c <= x)
                .min(self.live - 1)
        };
        self.gen = self.gen.wrapping_add(1);
        let r = self.reqs.alloc(Req {
            start: self.now,
            mark: self.now,
            client,
            gen: self.gen,
            coord: coord as u16,
            flags: if write { F_WRITE } else { 0 },
            got: 0,
            outstanding: 0,
        });
        self.in_system += 1;
        if self.win() {
            self.started += 1;
        }
        if self.cost[R_CLIENT][0].is_some() {
            self.job(R_CLIENT, write, coord as u16, r);
        } else {
            self.after_client(r);
        }
    }

    fn after_client(&mut self, r: u32) {
        match &self.client_hop {
            Some(h) => {
                let d = h.sample(&mut self.hop_rng);
                self.q.push(self.now + d, Ev::new(EV_HOP_IN, 0, r));
            }
            None => self.at_coordinator(r),
        }
    }

    fn at_coordinator(&mut self, r: u32) {
        let node = self.reqs[r].coord as usize;
        let win = self.win();
        if win {
            self.nodes[node].st.coordinated += 1;
        }
        let Some((permits, max_waiting, max_wait)) = self.permits else {
            self.admitted(r);
            return;
        };
        let nd = &mut self.nodes[node];
        if nd.in_use < permits {
            nd.in_use += 1;
            self.reqs[r].flags |= F_PERMIT;
            self.admitted(r);
        } else if nd.waiting >= max_waiting {
            if win {
                nd.st.refused += 1;
                self.refused += 1;
            }
            self.reqs[r].flags |= F_FAILED;
            self.answer(r);
        } else {
            nd.waiting += 1;
            nd.adm_q.push_back((r, self.reqs[r].gen));
            if win {
                nd.st.waited += 1;
            }
            let req = &mut self.reqs[r];
            req.flags |= F_WAITING;
            req.mark = self.now;
            if max_wait > 0 {
                self.q
                    .push(self.now + max_wait, Ev::new(EV_TIMEOUT, req.gen, r));
            }
        }
    }

    fn admitted(&mut self, r: u32) {
        let req = self.reqs[r];
        if self.win() {
            self.admitted += 1;
            self.nodes[req.coord as usize].st.admitted += 1;
        }
        self.job(R_REQUEST, req.flags & F_WRITE != 0, req.coord, r);
    }

    fn timeout(&mut self, r: u32, gen: u32) {
        let req = self.reqs[r];
        if !same_gen(req.gen, gen) || req.flags & F_WAITING == 0 {
            return;
        }
        let node = req.coord as usize;
        let win = self.win();
        let nd = &mut self.nodes[node];
        nd.waiting -= 1;
        if win {
            nd.st.timeouts += 1;
            nd.st.wait_ns += (self.now - req.mark) as f64;
            self.refused += 1;
        }
        let req = &mut self.reqs[r];
        req.flags = (req.flags & !F_WAITING) | F_FAILED;
        self.answer(r);
    }

    /// Hand node `node`'s permit to its next live waiter, or free it.
    fn release_permit(&mut self, node: usize) {
        let win = self.win();
        loop {
            let Some((w, gen)) = self.nodes[node].adm_q.pop_front() else {
                self.nodes[node].in_use -= 1;
                return;
            };
            let req = &mut self.reqs[w];
            if req.gen != gen || req.flags & F_WAITING == 0 {
                continue; // timed out earlier
            }
            req.flags = (req.flags & !F_WAITING) | F_PERMIT;
            let waited = self.now - req.mark;
            let nd = &mut self.nodes[node];
            nd.waiting -= 1;
            if win {
                nd.st.wait_ns += waited as f64;
            }
            self.admitted(w);
            return;
        }
    }

    /// Queue a CPU job of `role` on `node`'s CPU.
    fn job(&mut self, role: usize, write: bool, node: u16, id: u32) {
        if self.win() {
            self.nodes[node as usize].st.jobs[role][write as usize] += 1;
        }
        let j = self.jobs.alloc(Job {
            role: role as u8,
            write,
            node,
            id,
            created: self.now,
        });
        let p = if self.host { 0 } else { node as usize };
        let pool = &mut self.pools[p];
        if pool.busy < pool.servers {
            pool.busy += 1;
            self.start_job(p, j);
        } else {
            pool.queue.push_back(j);
        }
    }

    fn start_job(&mut self, p: usize, j: u32) {
        let job = self.jobs[j];
        let node = job.node as usize;
        let s = self.cost[job.role as usize][job.write as usize]
            .as_ref()
            .expect("a job of a role with a cost");
        let x = s.sample(&mut self.nodes[node].rng);
        if self.now >= self.t0 {
            self.nodes[node].st.cpu_ns[job.role as usize] += x as f64;
            let ps = &mut self.pool_st[p];
            ps.busy_ns += x as f64;
            ps.jobs += 1;
            ps.wait_ns += (self.now - job.created) as f64;
        }
        self.q.push(self.now + x, Ev::new(EV_CPU, 0, j));
    }

    fn job_done(&mut self, j: u32) {
        let job = self.jobs[j];
        self.jobs.release(j);
        let p = if self.host { 0 } else { job.node as usize };
        match self.pools[p].queue.pop_front() {
            Some(next) => self.start_job(p, next),
            None => self.pools[p].busy -= 1,
        }
        match job.role as usize {
            R_CLIENT => self.after_client(job.id),
            R_REQUEST => self.fan_out(job.id),
            R_SEND => {
                let d = self.hop.sample(&mut self.hop_rng);
                self.q.push(self.now + d, Ev::new(EV_TO_REPLICA, 0, job.id));
            }
            R_REPLICA | R_LOCAL => {
                let o = self.ops[job.id];
                if o.write && self.wal.is_some() {
                    self.wal_enqueue(o.node as usize, job.id);
                } else {
                    self.replied(job.id);
                }
            }
            _ => unreachable!("unknown role"),
        }
    }

    /// An operation's work is done at its replica: the reply goes back.
    fn replied(&mut self, o: u32) {
        if self.ops[o].local {
            self.op_answered(o);
        } else {
            let d = self.hop.sample(&mut self.hop_rng);
            self.q.push(self.now + d, Ev::new(EV_TO_COORD, 0, o));
        }
    }

    /// The coordinator has planned request `r`: pick its replicas, send.
    fn fan_out(&mut self, r: u32) {
        let req = self.reqs[r];
        // `from` distinct nodes, uniformly (rendezvous hashing over random
        // keys): a partial Fisher-Yates shuffle.
        let n = self.n;
        for i in 0..self.from {
            let k = i + (self.place_rng.bits() % (n - i) as u64) as usize;
            self.scratch.swap(i, k);
        }
        let live = self.scratch[..self.from]
            .iter()
            .filter(|&&m| (m as usize) < self.live)
            .count();
        if live < self.ack as usize {
            // The failure detector knows ack is out of reach: 504 at once.
            if self.win() {
                self.not_enough += 1;
            }
            self.reqs[r].flags |= F_FAILED;
            self.answer(r);
            return;
        }
        let write = req.flags & F_WRITE != 0;
        let win = self.win();
        for i in 0..self.from {
            let m = self.scratch[i];
            if m as usize >= self.live {
                continue;
            }
            let local = m == req.coord;
            let o = self.ops.alloc(Op {
                req: r,
                node: m,
                local,
                write,
            });
            self.reqs[r].outstanding += 1;
            if local {
                if win {
                    self.nodes[m as usize].st.local_ops += 1;
                }
                self.job(R_LOCAL, write, m, o);
            } else {
                if win {
                    self.nodes[m as usize].st.replica_ops += 1;
                }
                if self.cost[R_SEND][write as usize].is_some() {
                    self.job(R_SEND, write, req.coord, o);
                } else {
                    let d = self.hop.sample(&mut self.hop_rng);
                    self.q.push(self.now + d, Ev::new(EV_TO_REPLICA, 0, o));
                }
            }
        }
    }

    fn op_answered(&mut self, o: u32) {
        let r = self.ops[o].req;
        self.ops.release(o);
        let req = &mut self.reqs[r];
        req.outstanding -= 1;
        if req.flags & F_ANSWERED == 0 {
            req.got += 1;
            if req.got >= self.ack {
                // The answer frees the request once it is out (and this
                // was its last operation): not here as well.
                self.answer(r);
                return;
            }
        }
        self.maybe_free(r);
    }

    /// The coordinator answers (ok at the ack-th reply, or a failure).
    fn answer(&mut self, r: u32) {
        let req = &mut self.reqs[r];
        req.flags |= F_ANSWERED;
        let coord = req.coord as usize;
        if req.flags & F_PERMIT != 0 {
            req.flags &= !F_PERMIT;
            self.release_permit(coord);
        }
        match &self.client_hop {
            Some(h) => {
                let d = h.sample(&mut self.hop_rng);
                self.q.push(self.now + d, Ev::new(EV_HOP_OUT, 0, r));
            }
            None => self.out(r),
        }
    }

    /// The answer reached the client.
    fn out(&mut self, r: u32) {
        let req = &mut self.reqs[r];
        req.flags |= F_OUT;
        let (start, client) = (req.start, req.client);
        self.in_system -= 1;
        if self.now >= self.t0 {
            self.done += 1;
            self.lifetime.record(self.now - start);
        }
        if let ClientsRt::Closed { think } = &self.clients {
            let t = self.now + think.sample(&mut self.client_rng);
            self.q.push(t, Ev::new(EV_WAKE, 0, client));
        }
        self.maybe_free(r);
    }

    fn maybe_free(&mut self, r: u32) {
        let req = &mut self.reqs[r];
        if req.flags & F_OUT != 0 && req.outstanding == 0 {
            debug_assert!(req.flags & F_FREED == 0, "request {r} freed twice");
            req.flags |= F_FREED;
            self.reqs.release(r);
        }
    }

    fn wal_enqueue(&mut self, node: usize, o: u32) {
        let win = self.win();
        let nd = &mut self.nodes[node];
        nd.wal_q.push_back(o);
        if win {
            nd.st.wal_writes += 1;
        }
        if !nd.wal_busy {
            self.start_group(node);
        }
    }

    fn start_group(&mut self, node: usize) {
        let wal = self.wal.as_ref().expect("a WAL");
        let nd = &mut self.nodes[node];
        if nd.wal_busy || nd.wal_q.is_empty() {
            return;
        }
        if wal.shared && self.disk_busy {
            if !nd.in_disk_q {
                nd.in_disk_q = true;
                self.disk_q.push_back(node as u16);
            }
            return;
        }
        let k = (wal.max_batch as usize).min(nd.wal_q.len());
        nd.batch.extend(nd.wal_q.drain(..k));
        nd.wal_busy = true;
        if wal.shared {
            self.disk_busy = true;
        }
        let mut x = wal.fsync.sample(&mut nd.wal_rng);
        if let Some(p) = &wal.per_write {
            for _ in 0..k {
                x += p.sample(&mut nd.wal_rng);
            }
        }
        if self.now >= self.t0 {
            nd.st.wal_groups += 1;
            nd.st.wal_busy_ns += x as f64;
        }
        self.q.push(self.now + x, Ev::new(EV_GROUP, 0, node as u32));
    }

    fn group_done(&mut self, node: usize) {
        let batch = std::mem::take(&mut self.nodes[node].batch);
        self.nodes[node].wal_busy = false;
        for &o in &batch {
            self.replied(o);
        }
        let mut batch = batch;
        batch.clear();
        self.nodes[node].batch = batch;
        let shared = self.wal.as_ref().is_some_and(|w| w.shared);
        if shared {
            self.disk_busy = false;
            let nd = &mut self.nodes[node];
            if !nd.wal_q.is_empty() && !nd.in_disk_q {
                nd.in_disk_q = true;
                self.disk_q.push_back(node as u16);
            }
            if let Some(next) = self.disk_q.pop_front() {
                self.nodes[next as usize].in_disk_q = false;
                self.start_group(next as usize);
            }
        } else {
            self.start_group(node);
        }
    }
}

/// Run a cluster scenario once.
pub fn simulate(sc: &ClusterScenario, base: &Path, seed: u64) -> Result<ClusterRun, String> {
    Ok(ClusterSim::new(sc, base, seed)?.run())
}

#[cfg(test)]
mod tests {
    use super::*;

    const SMALL: &str = r#"
name = "t"
duration = "2s"
warmup = "200ms"
[clients]
mode = "open"
rate = 2000.0
write_fraction = 0.5
[cluster]
nodes = 3
from = 3
ack = 2
host_cores = 2
hop = { dist = "constant", value = "50us" }
[cluster.cpu]
request = { dist = "constant", value = "20us" }
replica = { dist = "constant", value = "10us" }
[cluster.wal]
fsync = { dist = "constant", value = "200us" }
"#;

    #[test]
    fn parse_save_reload_and_override() {
        let s = ClusterScenario::from_toml(SMALL).unwrap();
        let back = ClusterScenario::from_toml(&s.to_toml().unwrap()).unwrap();
        assert_eq!(back, s);
        let o = s
            .with_overrides(&[
                ("cluster.nodes".into(), "5".into()),
                ("cluster.ack".into(), "1".into()),
                ("cluster.down".into(), "1".into()),
                ("cluster.cpu.request.value".into(), "30us".into()),
            ])
            .unwrap();
        assert_eq!((o.cluster.nodes, o.cluster.ack, o.cluster.down), (5, 1, 1));
        let e = s
            .with_overrides(&[("cluster.ack".into(), "4".into())])
            .unwrap_err();
        assert!(e.contains("ack 4 must be within"), "{e}");
        let e = s
            .with_overrides(&[("semaphore.permits".into(), "4".into())])
            .unwrap_err();
        assert!(e.contains("start with one of"), "{e}");
        assert!(is_cluster_text(SMALL));
        assert!(!is_cluster_text(
            "name = \"x\"\n[clients]\nmode = \"open\"\n"
        ));
    }

    #[test]
    fn every_request_is_answered_and_every_op_ends() {
        let s = ClusterScenario::from_toml(SMALL).unwrap();
        let r = simulate(&s, Path::new("."), 1).unwrap();
        assert!(r.done > 3000, "{}", r.done);
        assert_eq!(r.errors(), 0);
        // from = nodes = 3: each request has one local and two remote ops.
        let local: u64 = r.nodes.iter().map(|n| n.local_ops).sum();
        let remote: u64 = r.nodes.iter().map(|n| n.replica_ops).sum();
        let adm = r.admitted as f64;
        assert!((local as f64 / adm - 1.0).abs() < 0.01, "{local} / {adm}");
        assert!((remote as f64 / adm - 2.0).abs() < 0.01, "{remote} / {adm}");
        assert!(r.in_flight_end < 20, "{}", r.in_flight_end);
    }
}
