//! A scenario: what the simulator models, as a TOML file has it. Every
//! scenario has a head (name, description, the measured window, warm-up,
//! seed, notes) and clients (closed or open loop: `Clients`), and is one of
//! two configurations of the model (`Config`): one node's pipeline of
//! stages (`node`) or a cluster of nodes with replication (`cluster`, a
//! `[cluster]` table). Owns the formats, their checks, saving back to TOML
//! and `PARAM=VALUE` overrides (what `--set`, `--clients` and `--sweep`
//! change); must not run anything.
//!
//! Here: the clients, the overrides and `Config`; `node` and `cluster`
//! the two formats.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::dist::DistSpec;
use crate::units::Dur;

pub mod cluster;
pub mod node;

pub(crate) fn is_zero(d: &Dur) -> bool {
    d.0 == 0
}
pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}
pub(crate) fn one_f() -> f64 {
    1.0
}
pub(crate) fn is_one_f(v: &f64) -> bool {
    *v == 1.0
}
pub(crate) fn default_seed() -> u64 {
    1
}
pub(crate) fn default_in_flight() -> u32 {
    1_000_000
}

/// Read the scenario file at `path` with `parse` (errors name the file);
/// it and the directory its relative paths start from.
pub(crate) fn load<T>(
    path: &Path,
    parse: impl Fn(&str) -> Result<T, String>,
) -> Result<(T, PathBuf), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let s = parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
    Ok((s, base))
}

/// The model a scenario file configures: one node, or a cluster (boxed:
/// a scenario is read once and passed by reference).
#[derive(Clone, Debug, PartialEq)]
pub enum Config {
    Node(Box<node::Scenario>),
    Cluster(Box<cluster::ClusterScenario>),
}

impl Config {
    /// A scenario's text: a cluster's when it has a `[cluster]` table,
    /// else a node's.
    pub fn from_toml(text: &str) -> Result<Config, String> {
        if cluster::is_cluster_text(text) {
            cluster::ClusterScenario::from_toml(text).map(|s| Config::Cluster(Box::new(s)))
        } else {
            node::Scenario::from_toml(text).map(|s| Config::Node(Box::new(s)))
        }
    }

    /// Read a scenario file; returns it and the directory its relative
    /// paths start from.
    pub fn load(path: &Path) -> Result<(Config, PathBuf), String> {
        load(path, Config::from_toml)
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Start {
    /// Every client sends its first request at time 0 (threads or tasks
    /// spawned in a loop, as the seed program does).
    #[default]
    Together,
    /// First requests spread uniformly over one mean think time.
    Spread,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Arrivals {
    Constant,
    #[default]
    Poisson,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "snake_case", deny_unknown_fields)]
pub enum Clients {
    /// `count` clients, each: send, wait for the answer, think, repeat.
    Closed {
        count: u32,
        #[serde(default)]
        start: Start,
        /// The share of requests that write (the rest read).
        #[serde(default = "one_f", skip_serializing_if = "is_one_f")]
        write_fraction: f64,
        /// Timer granularity of the think time: the wake-up is rounded up
        /// to a multiple of it (tokio's timer has 1 ms ticks).
        #[serde(default, skip_serializing_if = "is_zero")]
        tick: Dur,
        /// The think time is a sleep on the scenario's `timer`.
        #[serde(default, skip_serializing_if = "is_false")]
        timer: bool,
        think: DistSpec,
    },
    /// Requests arrive at `rate` per second whatever happens to them.
    Open {
        rate: f64,
        #[serde(default)]
        arrivals: Arrivals,
        #[serde(default = "one_f", skip_serializing_if = "is_one_f")]
        write_fraction: f64,
        /// Arrivals beyond this many requests in the system are dropped and
        /// counted (a guard on memory when the load exceeds capacity).
        #[serde(default = "default_in_flight")]
        max_in_flight: u32,
    },
}

impl Clients {
    pub fn write_fraction(&self) -> f64 {
        match self {
            Clients::Closed { write_fraction, .. } | Clients::Open { write_fraction, .. } => {
                *write_fraction
            }
        }
    }
}

/// A scenario of either format with `PARAM=VALUE` overrides applied in
/// order to its TOML tree (`set`: the format's own rule for one), read
/// back and checked; an error names the overrides.
pub(crate) fn overridden<T>(
    sc: &T,
    sets: &[(String, String)],
    mut set: impl FnMut(&mut toml::Value, &str, &str) -> Result<(), String>,
    check: impl Fn(&T) -> Result<(), String>,
) -> Result<T, String>
where
    T: Clone + Serialize + serde::de::DeserializeOwned,
{
    if sets.is_empty() {
        return Ok(sc.clone());
    }
    let mut v = toml::Value::try_from(sc).map_err(|e| e.to_string())?;
    for (k, val) in sets {
        set(&mut v, k, val)?;
    }
    let describe = describe_sets(sets);
    let s: T = v
        .try_into()
        .map_err(|e: toml::de::Error| format!("after {describe}: {}", e.message()))?;
    check(&s).map_err(|e| format!("after {describe}: {e}"))?;
    Ok(s)
}

/// `K=V K=V`, for errors about overrides.
pub(crate) fn describe_sets(sets: &[(String, String)]) -> String {
    sets.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Split "a.b=v" into ("a.b", "v").
pub fn parse_assignment(s: &str) -> Result<(String, String), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?}: expected PARAM=VALUE, like semaphore.permits=16"))?;
    let (k, v) = (k.trim(), v.trim());
    if k.is_empty() || v.is_empty() {
        return Err(format!("{s:?}: expected PARAM=VALUE"));
    }
    Ok((k.to_string(), v.to_string()))
}

/// Set one parameter of a scenario's TOML tree. The path starts with a top
/// level key (`duration`, `warmup`, `seed`, `clients`) or a stage's name,
/// then goes down by field: `semaphore.permits`, `store.latency.sd`,
/// `clients.rate`. `clients` alone means the number of clients (or the
/// rate, for an open loop). The value is read as TOML when it parses
/// (16, 0.5, true, "x"), else taken as a string (10ms, fifo). `timer=off`
/// removes the runtime's timer: every stage and the clients wait exactly.
pub fn set_param(root: &mut toml::Value, path: &str, raw: &str) -> Result<(), String> {
    let value = parse_value(raw);
    let mut segs: Vec<&str> = path.split('.').collect();
    let top = root.as_table_mut().ok_or("scenario is not a table")?;
    if segs == ["clients"] {
        let open = top
            .get("clients")
            .and_then(|c| c.get("mode"))
            .and_then(|m| m.as_str())
            == Some("open");
        segs.push(if open { "rate" } else { "count" });
    }
    if segs.len() == 1 && HEAD_KEYS.contains(&segs[0]) {
        top.insert(segs[0].to_string(), value);
        return Ok(());
    }
    if segs == ["timer"] {
        // `timer=off`: every wait exact, in continuous time.
        if raw != "off" {
            return Err(format!(
                "{path}={raw}: only timer=off (else name a field, like timer.tick)"
            ));
        }
        top.remove("timer");
        if let Some(c) = top.get_mut("clients").and_then(|c| c.as_table_mut()) {
            c.remove("timer");
        }
        if let Some(stages) = top.get_mut("stages").and_then(|s| s.as_array_mut()) {
            for st in stages.iter_mut().filter_map(|s| s.as_table_mut()) {
                st.remove("timer");
            }
        }
        return Ok(());
    }
    if segs[0] == "timer" && !top.contains_key("timer") {
        // `--set timer.tick=1ms` starts the section.
        top.insert("timer".into(), toml::Value::Table(Default::default()));
    }
    let mut cur: &mut toml::Value = if top.contains_key(segs[0]) {
        top.get_mut(segs[0]).unwrap()
    } else {
        let stages = top
            .get_mut("stages")
            .and_then(|s| s.as_array_mut())
            .ok_or("scenario has no stages")?;
        let names: Vec<String> = stages
            .iter()
            .filter_map(|s| s.get("name").and_then(|n| n.as_str()).map(str::to_string))
            .collect();
        stages
            .iter_mut()
            .find(|s| s.get("name").and_then(|n| n.as_str()) == Some(segs[0]))
            .ok_or_else(|| {
                format!(
                    "{path}: no stage named {:?} (stages: {}; or a top-level key: {})",
                    segs[0],
                    names.join(", "),
                    HEAD_KEYS.join(", ")
                )
            })?
    };
    for (i, seg) in segs.iter().enumerate().skip(1) {
        let t = cur
            .as_table_mut()
            .ok_or_else(|| format!("{path}: {} is not a table", segs[..i].join(".")))?;
        if i == segs.len() - 1 {
            t.insert(seg.to_string(), value);
            return Ok(());
        }
        cur = t
            .entry(seg.to_string())
            .or_insert_with(|| toml::Value::Table(Default::default()));
    }
    // One segment naming a table (say "clients"): not a parameter.
    Err(format!("{path}: name a field inside it, like {path}.count"))
}

/// The top-level keys every scenario has, set as they are.
pub(crate) const HEAD_KEYS: [&str; 5] = ["duration", "warmup", "seed", "name", "description"];

fn parse_value(raw: &str) -> toml::Value {
    match toml::from_str::<toml::Table>(&format!("v = {raw}")) {
        Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(raw.into())),
        Err(_) => toml::Value::String(raw.to_string()),
    }
}

/// The checks every scenario (a pipeline's or a cluster's) makes of its
/// duration and clients.
pub(crate) fn check_run(duration: Dur, clients: &Clients) -> Result<(), String> {
    if duration.0 == 0 {
        return Err("duration must be > 0".into());
    }
    let wf = clients.write_fraction();
    if !(0.0..=1.0).contains(&wf) {
        return Err(format!("write_fraction {wf} must be within 0..=1"));
    }
    match clients {
        Clients::Closed { count, .. } if *count == 0 => Err("clients.count must be >= 1".into()),
        Clients::Open { rate, .. } if !(rate.is_finite() && *rate > 0.0) => {
            Err(format!("clients.rate {rate} must be > 0"))
        }
        _ => Ok(()),
    }
}

/// Scenario texts the tests of every module share.
#[cfg(test)]
pub(crate) mod examples {
    /// A node: a network hop, admission, an async store.
    pub const NODE: &str = r#"
name = "t"
duration = "10s"
[clients]
mode = "closed"
count = 3
think = { dist = "constant", value = "1s" }
[[stages]]
name = "net"
kind = "delay"
delay = { dist = "normal", mean = "1ms", sd = "0.1ms", shift = "0.5ms" }
[[stages]]
name = "semaphore"
kind = "admission"
permits = 8
[[stages]]
name = "store"
kind = "store"
max_concurrent = 8
write = "async"
latency = { dist = "normal", mean = "10ms", sd = "5ms", shift = "50ms" }
"#;

    /// A cluster of three on one host, writes replicated to all three.
    pub const CLUSTER: &str = r#"
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_configures_a_node_or_a_cluster() {
        let n = Config::from_toml(examples::NODE).unwrap();
        assert!(
            matches!(&n, Config::Node(s) if s.stages.len() == 3),
            "{n:?}"
        );
        let c = Config::from_toml(examples::CLUSTER).unwrap();
        assert!(
            matches!(&c, Config::Cluster(s) if s.cluster.nodes == 3),
            "{c:?}"
        );
        let (Config::Node(n), Config::Cluster(c)) = (n, c) else {
            unreachable!()
        };
        assert_eq!((n.name.as_str(), c.name.as_str()), ("t", "t"));
        let o = c
            .with_overrides(&[("clients.rate".into(), "10".into())])
            .unwrap();
        assert!(matches!(o.clients, Clients::Open { rate, .. } if rate == 10.0));
        let back = Config::from_toml(&o.to_toml().unwrap()).unwrap();
        assert_eq!(back, Config::Cluster(Box::new(o)));
        // A cluster's errors are a cluster's, not a node's.
        let e = Config::from_toml(&examples::CLUSTER.replace("ack = 2", "ack = 4")).unwrap_err();
        assert!(e.contains("ack 4 must be within"), "{e}");
    }
}
