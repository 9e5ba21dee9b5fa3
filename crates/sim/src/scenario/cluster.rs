//! The cluster scenario's format (`[cluster]` and its tables, the SLO),
//! read and written as TOML, its checks and its `--set` overrides. Owns
//! the format; must not run anything.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{default_seed, is_false, is_zero, Clients};
use crate::dist::DistSpec;
use crate::units::Dur;

fn is_zero_u32(v: &u32) -> bool {
    *v == 0
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
    /// What a write's value size costs, when calibrated at two sizes:
    /// the costs above are at `measured_at` bytes, and a write of `bytes`
    /// costs the difference more (or less).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<ValueSpec>,
}

/// A write's value size and what each KiB of it costs (measured at two
/// sizes at one rate, `calibrate::value`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValueSpec {
    /// The writes' value size, bytes.
    pub bytes: u64,
    /// The value size the CPU and WAL costs above were measured at.
    pub measured_at: u64,
    /// CPU a KiB of value adds to a write, on all the nodes its replicas
    /// touch together, charged to its coordinator.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub cpu_per_kib: Dur,
    /// Time a KiB of value adds to the WAL group its write is in (its
    /// bytes to the device before the fsync returns).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub wal_per_kib: Dur,
}

impl ValueSpec {
    /// KiB a write carries beyond (or short of) the measured size.
    pub fn extra_kib(&self) -> f64 {
        (self.bytes as f64 - self.measured_at as f64) / 1024.0
    }
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
        super::load(path, ClusterScenario::from_toml)
    }

    pub fn to_toml(&self) -> Result<String, String> {
        toml::to_string_pretty(self).map_err(|e| format!("cannot write the scenario as TOML: {e}"))
    }

    /// Nodes that are up (clients reach them, their replicas answer).
    pub fn live(&self) -> u32 {
        self.cluster.nodes - self.cluster.down
    }

    pub fn check(&self) -> Result<(), String> {
        super::check_run(self.duration, &self.clients)?;
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
        if let Some(v) = &c.value {
            if v.bytes == 0 || v.measured_at == 0 {
                return Err("cluster.value.bytes and measured_at must be >= 1".into());
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
        let set = |v: &mut toml::Value, k: &str, val: &str| {
            let first = k.split('.').next().unwrap_or("");
            if !TOP_KEYS.contains(&first) {
                return Err(format!(
                    "{k}: a cluster scenario's parameters start with one of {}",
                    TOP_KEYS.join(", ")
                ));
            }
            if val == "none" {
                unset(v, k)
            } else {
                super::set_param(v, k, val)
            }
        };
        super::overridden(self, sets, set, ClusterScenario::check)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::examples::CLUSTER as SMALL;

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
}
