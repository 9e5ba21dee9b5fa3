//! "How many nodes, of what size, for this rate and SLO": a calibrated
//! cluster scenario moved onto the machine a user names (cores per node,
//! its disk's mean fsync), the load generator elsewhere, then the fewest
//! nodes whose run at the rate meets the scenario's SLO, searched in
//! virtual time (doubling, then halving the gap). Owns the machine's
//! overrides and the search; must not change how a run works (`cluster`)
//! nor word the answer beyond its own lines.

use std::path::Path;

use serde::Serialize;

use crate::dist::Sampler;
use crate::model::cluster::simulate;
use crate::predict::{judge_counts, Objective};
use crate::scenario::cluster::ClusterScenario;
use crate::units::{human_ns, rate, Dur};

use super::whatif::{at_rate, counts};

/// The machine each node runs on, as far as the model knows one.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Machine {
    /// Cores per node [default: as calibrated; nodes that shared one host
    /// get the host's cores each].
    pub cores: Option<u32>,
    /// The disk's mean fsync [default: as calibrated]; the calibrated
    /// distribution's shape is kept, its draws scaled.
    pub fsync_mean: Option<Dur>,
}

/// The question: this rate, on this machine, with at most this many nodes.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct SizeQuery {
    pub rate: f64,
    pub machine: Machine,
    pub max_nodes: u32,
}

/// The sizing question on a command line (`strata sim` and `strata
/// calibrate` take the same flags).
#[derive(clap::Args, Clone, Debug, Default)]
pub struct SizingArgs {
    /// With a cluster: the fewest nodes that carry this many requests per
    /// second within the SLO, each node on a machine of its own
    /// (--node-cores, --fsync), the generator elsewhere.
    #[arg(long, value_name = "RATE")]
    pub size_for: Option<f64>,
    /// With --size-for: cores per node [default: as calibrated; nodes that
    /// shared one host get its cores each].
    #[arg(long, value_name = "N", requires = "size_for")]
    pub node_cores: Option<u32>,
    /// With --size-for: the mean fsync of a node's disk (say 2ms); the
    /// calibrated distribution's shape is kept [default: as calibrated].
    #[arg(long, value_name = "DUR", value_parser = Dur::parse, requires = "size_for")]
    pub fsync: Option<Dur>,
    /// With --size-for: try at most this many nodes.
    #[arg(long, value_name = "N", default_value_t = 64, requires = "size_for")]
    pub max_nodes: u32,
}

impl SizingArgs {
    /// The question asked, if --size-for was given.
    pub fn query(&self) -> Option<SizeQuery> {
        self.size_for.map(|rate| SizeQuery {
            rate,
            machine: Machine {
                cores: self.node_cores,
                fsync_mean: self.fsync,
            },
            max_nodes: self.max_nodes,
        })
    }
}

/// One node count tried.
#[derive(Clone, Debug, Serialize)]
pub struct SizeRow {
    pub nodes: u32,
    pub met: bool,
    pub achieved: f64,
    /// The SLO's quantile of the lifetime, ns.
    pub at_bound_ns: u64,
    pub error_share: f64,
}

/// The answer: the fewest nodes that meet the SLO at the rate, if any up
/// to `max_nodes` does.
#[derive(Clone, Debug, Serialize)]
pub struct Sizing {
    pub rate: f64,
    pub machine: String,
    pub nodes: Option<u32>,
    pub max_nodes: u32,
    pub tried: Vec<SizeRow>,
}

/// The scenario on `m`: each node on a host of its own with `m.cores` (or
/// its calibrated cores), no generator on it, the WAL's fsync scaled to
/// `m.fsync_mean`.
pub fn on_machine(
    sc: &ClusterScenario,
    m: &Machine,
    base: &Path,
) -> Result<ClusterScenario, String> {
    let mut s = sc.clone();
    let c = &mut s.cluster;
    let cores = m.cores.or(c.cores).or(c.host_cores).unwrap_or(1).max(1);
    c.host_cores = None;
    c.cores = Some(cores);
    c.cpu.client = None;
    if let (Some(want), Some(wal)) = (m.fsync_mean, c.wal.as_mut()) {
        let now = Sampler::compile(&wal.fsync, base)?.mean();
        if now <= 0.0 {
            return Err("the scenario's fsync has a mean of 0: cannot scale it".into());
        }
        wal.fsync = wal.fsync.scaled(want.0 as f64 / now);
        wal.shared_disk = false;
    }
    s.check()?;
    Ok(s)
}

/// Describe `m` applied to `sc` for the answer's title.
fn describe(sc: &ClusterScenario, base: &Path) -> String {
    let c = &sc.cluster;
    let fsync = c
        .wal
        .as_ref()
        .and_then(|w| Sampler::compile(&w.fsync, base).ok())
        .map(|s| format!(", fsync mean {}", human_ns(s.mean())))
        .unwrap_or_else(|| ", no fsync on the request's path".into());
    let cores = c.cores.unwrap_or(1);
    format!(
        "{cores} core{}{fsync}; ack={} of from={}",
        if cores == 1 { "" } else { "s" },
        c.ack,
        c.from
    )
}

/// The fewest nodes (from `from`, at most `q.max_nodes`) whose run of `sc`
/// on `q.machine` at `q.rate` requests/s meets `obj`; `on_row` gets each count as
/// it is tried. Assumes more nodes never serve worse (the search doubles
/// until one meets, then halves the gap).
pub fn size_for(
    sc: &ClusterScenario,
    q: &SizeQuery,
    base: &Path,
    seed: u64,
    obj: &Objective,
    on_row: &mut dyn FnMut(&SizeRow),
) -> Result<Sizing, String> {
    let (m, target, max_nodes) = (&q.machine, q.rate, q.max_nodes);
    if !(target.is_finite() && target > 0.0) {
        return Err(format!(
            "the rate to size for must be positive, not {target}"
        ));
    }
    let moved = on_machine(sc, m, base)?;
    let lo_nodes = moved.cluster.from.max(1);
    let max_nodes = max_nodes.max(lo_nodes);
    let mut tried: Vec<SizeRow> = Vec::new();
    let mut attempt = |n: u32, tried: &mut Vec<SizeRow>| -> Result<bool, String> {
        if let Some(r) = tried.iter().find(|r| r.nodes == n) {
            return Ok(r.met);
        }
        let mut s = at_rate(&moved, target);
        s.cluster.nodes = n;
        s.cluster.down = 0;
        s.cluster.weights.clear();
        s.check()?;
        let run = simulate(&s, base, seed)?;
        let t = judge_counts(&counts(&run), target, obj);
        let row = SizeRow {
            nodes: n,
            met: t.met,
            achieved: t.achieved,
            at_bound_ns: t.at_bounds_ns.first().copied().unwrap_or(0),
            error_share: t.error_share,
        };
        on_row(&row);
        tried.push(row);
        Ok(t.met)
    };
    // Double until a count meets the SLO, then search the gap.
    let (mut bad, mut good) = (lo_nodes - 1, None);
    let mut n = lo_nodes;
    loop {
        if attempt(n, &mut tried)? {
            good = Some(n);
            break;
        }
        bad = n;
        if n >= max_nodes {
            break;
        }
        n = (n * 2).min(max_nodes);
    }
    if let Some(mut g) = good {
        while g - bad > 1 {
            let mid = bad + (g - bad) / 2;
            if attempt(mid, &mut tried)? {
                g = mid;
            } else {
                bad = mid;
            }
        }
        good = Some(g);
    }
    tried.sort_by_key(|r| r.nodes);
    Ok(Sizing {
        rate: target,
        machine: describe(&moved, base),
        nodes: good,
        max_nodes,
        tried,
    })
}

/// The answer's lines.
pub fn sizing_lines(z: &Sizing, slo: &str) -> Vec<String> {
    let mut v = vec![format!(
        "Nodes for {} req/s at {slo}, each on a machine of its own ({}), the generator elsewhere:",
        rate(z.rate),
        z.machine
    )];
    for r in &z.tried {
        v.push(format!(
            "  {:>3} nodes: {} (achieved {} req/s, SLO quantile {}, errors {:.2}%)",
            r.nodes,
            if r.met { "meets it" } else { "misses" },
            rate(r.achieved),
            human_ns(r.at_bound_ns as f64),
            r.error_share * 100.0
        ));
    }
    v.push(match z.nodes {
        Some(n) => format!("Answer: {n} nodes."),
        None => format!(
            "Answer: none up to {} nodes meets it (a node's own limit, its fsync or the SLO, not the count, is in the way).",
            z.max_nodes
        ),
    });
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::predict::Bound;

    fn scenario(wal: bool) -> ClusterScenario {
        let wal = if wal {
            "[cluster.wal]\nfsync = { dist = \"constant\", value = \"1ms\" }\n"
        } else {
            ""
        };
        ClusterScenario::from_toml(&format!(
            r#"
name = "t"
duration = "2s"
warmup = "200ms"
[clients]
mode = "open"
rate = 1000.0
write_fraction = 1.0
[cluster]
nodes = 3
from = 3
ack = 2
host_cores = 2
hop = {{ dist = "constant", value = "100us" }}
[cluster.cpu]
request = {{ dist = "constant", value = "50us" }}
replica = {{ dist = "constant", value = "30us" }}
client = {{ dist = "constant", value = "20us" }}
{wal}"#
        ))
        .unwrap()
    }

    fn p99_10ms() -> Objective {
        Objective {
            bounds: vec![Bound {
                quantile: 0.99,
                limit_ns: 10_000_000,
            }],
            max_errors: 0.001,
            min_achieved: 0.95,
        }
    }

    #[test]
    fn the_machine_moves_each_node_to_a_host_of_its_own() {
        let sc = scenario(true);
        let m = Machine {
            cores: Some(8),
            fsync_mean: Some(Dur(4_000_000)),
        };
        let s = on_machine(&sc, &m, Path::new(".")).unwrap();
        assert_eq!(s.cluster.cores, Some(8));
        assert_eq!(s.cluster.host_cores, None);
        assert!(s.cluster.cpu.client.is_none());
        let f = Sampler::compile(&s.cluster.wal.as_ref().unwrap().fsync, Path::new(".")).unwrap();
        assert!((f.mean() - 4e6).abs() < 1.0, "{}", f.mean());
        // Unnamed: the host's cores per node, the fsync as calibrated.
        let s = on_machine(&sc, &Machine::default(), Path::new(".")).unwrap();
        assert_eq!(s.cluster.cores, Some(2));
    }

    #[test]
    fn the_fewest_nodes_that_carry_the_rate() {
        // A write costs 50 µs at its coordinator + 3 × 30 µs at replicas
        // = 140 µs of CPU per request over the cluster: with 2 cores per
        // node, n nodes carry n × 2 / 140 µs = n × 14,286 req/s, so 60,000
        // req/s needs 5 nodes at the very least (4.2 nodes' worth).
        let sc = scenario(false);
        let m = Machine {
            cores: Some(2),
            fsync_mean: None,
        };
        let z = size_for(
            &sc,
            &SizeQuery {
                rate: 60_000.0,
                machine: m,
                max_nodes: 32,
            },
            Path::new("."),
            1,
            &p99_10ms(),
            &mut |_| {},
        )
        .unwrap();
        let n = z.nodes.expect("some count carries it");
        assert!((5..=7).contains(&n), "{z:?}");
        // The count below it was tried and missed: n is the fewest.
        assert!(z.tried.iter().any(|r| r.nodes == n - 1 && !r.met), "{z:?}");
        // Nodes twice the size: about half as many.
        let big = Machine {
            cores: Some(4),
            fsync_mean: None,
        };
        let z4 = size_for(
            &sc,
            &SizeQuery {
                rate: 60_000.0,
                machine: big,
                max_nodes: 32,
            },
            Path::new("."),
            1,
            &p99_10ms(),
            &mut |_| {},
        )
        .unwrap();
        assert!(z4.nodes.unwrap() < n, "{z4:?} vs {z:?}");
    }

    #[test]
    fn a_slow_disk_no_count_can_fix_is_said() {
        // Every write waits for a 20 ms fsync: p99 <= 10 ms is out of reach
        // at any node count.
        let sc = scenario(true);
        let m = Machine {
            cores: Some(2),
            fsync_mean: Some(Dur(20_000_000)),
        };
        let z = size_for(
            &sc,
            &SizeQuery {
                rate: 2_000.0,
                machine: m,
                max_nodes: 8,
            },
            Path::new("."),
            1,
            &p99_10ms(),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(z.nodes, None, "{z:?}");
        assert!(sizing_lines(&z, "p99<=10ms")
            .last()
            .unwrap()
            .contains("none up to 8"));
        // The same disk at 1 ms: a small cluster carries it.
        let fast = Machine {
            cores: Some(2),
            fsync_mean: Some(Dur(1_000_000)),
        };
        let z = size_for(
            &sc,
            &SizeQuery {
                rate: 2_000.0,
                machine: fast,
                max_nodes: 8,
            },
            Path::new("."),
            1,
            &p99_10ms(),
            &mut |_| {},
        )
        .unwrap();
        assert_eq!(z.nodes, Some(3), "{z:?}");
    }
}
