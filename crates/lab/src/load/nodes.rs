//! The nodes a run spreads its connections over: the comma-separated URL
//! list of `strata load` and `strata sweep`, validated, and each
//! connection's choice of node, drawn from its own random stream seeded
//! from the run's seed and the connection's index (lesson 10: libri's
//! clients shared one seed and all hit the librarians in the same order).
//! For a cluster the run goes through `strata_client` (`--client smart`,
//! the default): the members come from the nodes' cluster view, each key
//! goes to one of its replicas, failures fail over; `--client direct`
//! keeps each connection on its one node. Owns the list and the choice;
//! must not send requests, pace or count.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use strata_client::conn::Target;

/// At most this many nodes in one list (one metrics sampler each).
pub const MAX_NODES: usize = 64;

/// The nodes of a run, in the order given (or the cluster's members, in
/// its layout's order, when the run goes through the client).
#[derive(Clone)]
pub struct Nodes {
    /// Each node's URL as given (without a trailing `/`), for reports.
    pub urls: Vec<String>,
    pub targets: Vec<Target>,
    /// The client the run's requests go through (`None`: each connection
    /// straight to its node).
    pub client: Option<strata_client::Client>,
}

impl std::fmt::Debug for Nodes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nodes")
            .field("urls", &self.urls)
            .field("client", &self.client.is_some())
            .finish()
    }
}

/// How a run's requests reach a cluster.
#[derive(clap::Args, Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ClientArgs {
    /// `smart`: through Strata's client library when the target is a
    /// cluster of more than one member (its members learned from a node's
    /// cluster view, each key sent to one of its replicas, failover within
    /// a retry budget, hedged GETs; docs/client.md); `direct`: each
    /// connection to its one node, as given, nothing retried.
    #[arg(long = "client", default_value = "smart", value_parser = ["smart", "direct"])]
    pub mode: String,
    /// With the smart client: send each key to the connection's own node
    /// (which forwards), not to one of the key's replicas.
    #[arg(long)]
    pub no_route: bool,
    /// With the smart client: never try another node when one fails.
    #[arg(long)]
    pub no_failover: bool,
    /// With the smart client: keep sending to a node that has answered
    /// nothing for a while with requests outstanding (a stopped node), as
    /// to any other.
    #[arg(long)]
    pub no_steer: bool,
    /// With the smart client: hedge a GET slower than this percentile of
    /// recent GETs to another replica (95, 99.9; `off`: never).
    #[arg(long, default_value = "95")]
    pub hedge: String,
    /// With the smart client: how long one attempt may take before it
    /// counts as failed (1s, 200ms; a bare number is seconds).
    #[arg(long, default_value_t = 1.0, value_parser = crate::units::seconds)]
    pub attempt_timeout: f64,
}

impl Default for ClientArgs {
    fn default() -> Self {
        ClientArgs {
            mode: "smart".into(),
            no_route: false,
            no_failover: false,
            no_steer: false,
            hedge: "95".into(),
            attempt_timeout: 1.0,
        }
    }
}

impl ClientArgs {
    /// The client's configuration, or why the switches are wrong.
    pub fn config(&self) -> Result<strata_client::Config, String> {
        let hedge = match self.hedge.trim() {
            "off" | "none" | "0" => None,
            p => {
                let v: f64 = p
                    .trim_end_matches('%')
                    .parse()
                    .map_err(|_| format!("--hedge {p}: a percentile (95, 99.9) or off"))?;
                if !(50.0..100.0).contains(&v) {
                    return Err(format!("--hedge {p}: between 50 and 100"));
                }
                Some(v / 100.0)
            }
        };
        if !crate::units::positive(self.attempt_timeout) {
            return Err("--attempt-timeout must be positive".into());
        }
        Ok(strata_client::Config {
            route: !self.no_route,
            failover: !self.no_failover,
            steer: !self.no_steer,
            hedge,
            timeout: std::time::Duration::from_secs_f64(self.attempt_timeout),
            // The lab's load shows the nodes the process's credentials
            // (--token, a local cluster's operator token).
            access: strata_client::Access::process(),
            ..Default::default()
        })
    }
}

impl Nodes {
    /// Parse `http://HOST:PORT[,http://HOST:PORT...]`. Every entry must be
    /// a valid URL; an empty entry or a node listed twice is an error.
    pub fn parse(list: &str) -> Result<Nodes, String> {
        let entries: Vec<&str> = list.split(',').map(str::trim).collect();
        if entries.len() > MAX_NODES {
            return Err(format!(
                "{} node URLs given; at most {MAX_NODES}",
                entries.len()
            ));
        }
        let n = entries.len();
        let mut urls: Vec<String> = Vec::with_capacity(n);
        let mut targets = Vec::with_capacity(n);
        for (i, e) in entries.iter().enumerate() {
            let which = if n == 1 {
                "node URL".to_string()
            } else {
                format!("node URL {} of {n}", i + 1)
            };
            if e.is_empty() {
                return Err(format!("{which} is empty in {list:?}"));
            }
            let url = e.trim_end_matches('/').to_string();
            let t = Target::parse(&url).map_err(|err| format!("{which}: {err}"))?;
            if urls.contains(&url) {
                return Err(format!("{which} ({e}) is listed twice"));
            }
            urls.push(url);
            targets.push(t);
        }
        Ok(Nodes {
            urls,
            targets,
            client: None,
        })
    }

    /// Parse, then with `--client smart` learn the cluster: when its
    /// members are more than one, the run goes through the client and its
    /// nodes are the members (so a single URL of a cluster reaches all of
    /// them). A target that does not answer a cluster view (not a Strata
    /// node, or one that is down), or whose members advertise URLs other
    /// than those given, is driven directly.
    pub fn discover(list: &str, c: &ClientArgs) -> Result<Nodes, String> {
        let nodes = Nodes::parse(list)?;
        let cfg = c.config()?;
        if c.mode != "smart" {
            return Ok(nodes);
        }
        let client = match strata_client::Client::connect_blocking(&nodes.urls, cfg.clone()) {
            Ok(client) => client,
            // Nodes that are each a cluster of their own (single nodes)
            // list different members, and are driven directly; members of
            // one cluster that disagree are an error.
            Err(e @ strata_client::Error::Disagree(_)) => {
                let alone = nodes.urls.iter().all(|u| {
                    strata_client::Client::connect_blocking(std::slice::from_ref(u), cfg.clone())
                        .is_ok_and(|c| c.members().len() == 1)
                });
                return if alone { Ok(nodes) } else { Err(e.to_string()) };
            }
            Err(_) => return Ok(nodes),
        };
        let m = client.members();
        if m.len() <= 1 {
            return Ok(nodes);
        }
        // Members that advertise other URLs than the ones given (a proxy
        // in front of each, as `cluster up --proxied` puts there) cannot be
        // routed to by their view: the given nodes are driven directly.
        if !nodes.urls.iter().all(|u| m.index_of(u).is_some()) {
            eprintln!(
                "note: the cluster's members advertise {} (not the URLs given): each connection goes straight to its node, without routing or failover",
                m.urls.join(",")
            );
            return Ok(nodes);
        }
        Ok(Nodes {
            urls: m.urls.clone(),
            targets: m.targets.clone(),
            client: Some(client),
        })
    }

    pub fn len(&self) -> usize {
        self.targets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.targets.is_empty()
    }

    /// Whether every node is on this machine (its cores are then known).
    pub fn all_loopback(&self) -> bool {
        self.targets.iter().all(|t| t.addr.ip().is_loopback())
    }

    /// The node connection `index` of a run seeded with `seed` talks to.
    pub fn choose(&self, seed: u64, index: usize) -> usize {
        node_for(seed, index, self.len())
    }

    /// How many of `connections` connections each node gets.
    pub fn spread(&self, seed: u64, connections: usize) -> Vec<u64> {
        let mut out = vec![0; self.len()];
        for c in 0..connections {
            out[self.choose(seed, c)] += 1;
        }
        out
    }
}

/// Connection `index`'s node among `n`: one draw from its own stream,
/// seeded from `seed` and `index` (salted so that it is not the stream the
/// connection's keys come from). The same (seed, index) always picks the
/// same node; different connections draw independently, so over many
/// connections each node gets about its share.
pub fn node_for(seed: u64, index: usize, n: usize) -> usize {
    if n <= 1 {
        return 0;
    }
    const SALT: u64 = 0x6E6F_6465_5F70_6963; // "node_pic"
    let s = (seed ^ SALT).wrapping_add((index as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9));
    SmallRng::seed_from_u64(s).random_range(0..n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_url_is_one_node_and_lists_are_validated() {
        let one = Nodes::parse("http://127.0.0.1:7001/").unwrap();
        assert_eq!(one.urls, vec!["http://127.0.0.1:7001"]);
        assert_eq!(one.choose(42, 17), 0);
        let two = Nodes::parse("http://127.0.0.1:7001, http://127.0.0.1:7002").unwrap();
        assert_eq!(two.len(), 2);
        assert!(two.all_loopback());
        let e = Nodes::parse("http://127.0.0.1:7001,ftp://x:1").unwrap_err();
        assert!(e.contains("node URL 2 of 2: ftp://x:1: "), "{e}");
        assert_eq!(e.matches("ftp://x:1").count(), 1, "each thing once: {e}");
        assert!(e.contains("only http://"), "{e}");
        let e = Nodes::parse("http://127.0.0.1:7001,").unwrap_err();
        assert!(e.contains("node URL 2 of 2 is empty"), "{e}");
        let e = Nodes::parse("http://127.0.0.1:7001,http://127.0.0.1:7001/").unwrap_err();
        assert!(e.contains("listed twice"), "{e}");
        let many = vec!["http://127.0.0.1:1"; MAX_NODES + 1].join(",");
        assert!(Nodes::parse(&many).unwrap_err().contains("at most"));
    }

    #[test]
    fn the_choice_is_seeded_per_connection() {
        let n = 4;
        // The same seed gives the same assignment, whatever order the
        // connections are asked in.
        let a: Vec<usize> = (0..256).map(|c| node_for(7, c, n)).collect();
        let b: Vec<usize> = (0..256).rev().map(|c| node_for(7, c, n)).collect();
        assert_eq!(a, b.into_iter().rev().collect::<Vec<_>>());
        // Another seed gives another assignment.
        let other: Vec<usize> = (0..256).map(|c| node_for(8, c, n)).collect();
        assert_ne!(a, other);
        // Connections do not all follow one another: not round-robin, not
        // one stream (libri's mistake: everyone on the same node in the
        // same order). Neighbouring connections agree about as often as
        // independent draws would (1 in n).
        let same_as_next = a.windows(2).filter(|w| w[0] == w[1]).count();
        assert!((30..=100).contains(&same_as_next), "{same_as_next} of 255");
        let round_robin = a.iter().enumerate().filter(|(c, k)| c % n == **k).count();
        assert!(round_robin < 128, "{round_robin}");
        // Across seeds, connection 0 does not always land on one node.
        let firsts: std::collections::BTreeSet<usize> =
            (0..64).map(|s| node_for(s, 0, n)).collect();
        assert_eq!(firsts.len(), n, "{firsts:?}");
    }

    #[test]
    fn the_spread_is_about_even_over_many_connections() {
        let nodes =
            Nodes::parse("http://127.0.0.1:1,http://127.0.0.1:2,http://127.0.0.1:3").unwrap();
        for seed in [1, 2, 99] {
            let s = nodes.spread(seed, 3000);
            assert_eq!(s.iter().sum::<u64>(), 3000);
            for k in &s {
                // 1000 expected; the binomial's sd is about 26.
                assert!((850..=1150).contains(k), "seed {seed}: {s:?}");
            }
        }
        // Two nodes, the default 64 connections: both get some.
        let two = Nodes::parse("http://127.0.0.1:1,http://127.0.0.1:2").unwrap();
        for seed in 0..100 {
            assert!(two.spread(seed, 64).iter().all(|&k| k > 0), "seed {seed}");
        }
    }
}
