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
//! does. Owns the event loop of a cluster scenario
//! (`scenario::cluster`) and its raw counts; must not interpret the counts
//! (that is `report::cluster`), build scenarios from metrics (that is
//! `calibrate::cluster`), or touch the node's pipeline (`model::node`).
//!
//! Here: the run's state and its loop; `events` what each event does.

use std::collections::VecDeque;
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::des::{same_gen, Ev, EventQueue, Slab};
use crate::dist::{DistSpec, Sampler};
use crate::model::{Latency, EV_ARRIVAL, EV_WAKE, F_FAILED, F_WAITING, F_WRITE};
use crate::rng::SimRng;
use crate::scenario::cluster::{ClusterScenario, ValueSpec};
use crate::scenario::{Arrivals, Clients, Start};
use crate::units::Dur;

mod events;

/// Roles of CPU work.
pub const ROLES: [&str; 5] = ["client", "request", "send", "replica", "local"];
const R_CLIENT: usize = 0;
const R_REQUEST: usize = 1;
const R_SEND: usize = 2;
const R_REPLICA: usize = 3;
const R_LOCAL: usize = 4;

const EV_CPU: u8 = 2;
const EV_HOP_IN: u8 = 3;
const EV_HOP_OUT: u8 = 4;
const EV_TO_REPLICA: u8 = 5;
const EV_TO_COORD: u8 = 6;
const EV_GROUP: u8 = 7;
const EV_TIMEOUT: u8 = 8;

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
        // A write's value beyond the measured size: its CPU on the
        // coordinator, its bytes in its WAL group (`ValueSpec`).
        let extra = |per: fn(&ValueSpec) -> Dur| {
            c.value
                .as_ref()
                .map_or(0.0, |v| v.extra_kib() * per(v).0 as f64)
        };
        // (A smaller value keeps the measured WAL cost: its bytes were a
        // small part of an fsync.)
        let (value_cpu, value_wal) = (extra(|v| v.cpu_per_kib), extra(|v| v.wal_per_kib).max(0.0));
        let w_request = opt("cpu.write.request", &w.request)?
            .unwrap_or(request.clone())
            .shifted(value_cpu);
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
                per_write: match opt("wal.per_write", &w.per_write)? {
                    Some(p) => Some(p.shifted(value_wal)),
                    None if value_wal != 0.0 => Some(Sampler::constant(value_wal)),
                    None => None,
                },
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
            lifetime: Latency::new(),
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
}

/// Run a cluster scenario once.
pub fn simulate(sc: &ClusterScenario, base: &Path, seed: u64) -> Result<ClusterRun, String> {
    Ok(ClusterSim::new(sc, base, seed)?.run())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::examples::CLUSTER as SMALL;

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
