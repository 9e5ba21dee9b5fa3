//! Faults injected into a local cluster while a run goes on: a node killed
//! (SIGKILL) and started again on its data, frozen (SIGSTOP, then
//! SIGCONT), cut off from the others (a partition of its internal traffic
//! in the proxy, then healed), or run with its wall clock shifted (a
//! node flag from the start, or a jump of a running node's clock and back),
//! or cut off in the network (its namespace's traffic dropped: both ways,
//! only what it sends, or killed and restarted while cut off).
//! Also the cluster's hint backlog, read from
//! every node's `/v0/cluster`, which tells when a node that came back is
//! level again. Owns when and how a fault happens; must not judge the
//! run (that is the checker's) nor know what a node does inside.

use std::fmt;
use std::str::FromStr;
use std::time::{Duration, Instant};

use super::local::{ClusterOptions, LocalCluster};
use super::netns::Cut;
use strata_client::control;

/// What goes wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Fault {
    /// SIGKILL, down for the hold time, then started again on its data.
    Kill,
    /// SIGSTOP for the hold time, then SIGCONT.
    Stop,
    /// Every internal connection from or to the node black-holed for the
    /// hold time (the cluster runs proxied), then healed.
    Partition,
    /// The node's wall clock is off by the offset for the whole run.
    Clock,
    /// The running node's clock jumps by the offset (its test clock hook,
    /// `--test-clock-hook`), stays there for the hold time, then jumps
    /// back.
    Jump,
    /// Everything to and from the node dropped in the network (its
    /// namespace's traffic, clients and peers) for the hold time.
    Isolate,
    /// Only what the node sends dropped: it hears everyone, nobody hears
    /// it.
    OneWay,
    /// Isolated, then killed while isolated, started again still cut off,
    /// then the cut lifted: a crash during a partition.
    IsolateKill,
    /// Only its traffic with the other nodes dropped, both ways; clients
    /// still reach it (what the proxy's `partition` does, in the network).
    Internal,
}

impl Fault {
    pub const ALL: [Fault; 5] = [
        Fault::Kill,
        Fault::Stop,
        Fault::Partition,
        Fault::Clock,
        Fault::Jump,
    ];

    /// The faults of real network partitions (network namespaces: root,
    /// iproute2, nftables): `--faults net`.
    pub const NET: [Fault; 4] = [
        Fault::Isolate,
        Fault::OneWay,
        Fault::IsolateKill,
        Fault::Internal,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Fault::Kill => "kill",
            Fault::Stop => "stop",
            Fault::Partition => "partition",
            Fault::Clock => "clock",
            Fault::Jump => "jump",
            Fault::Isolate => "isolate",
            Fault::OneWay => "oneway",
            Fault::IsolateKill => "isolate-kill",
            Fault::Internal => "internal",
        }
    }

    /// Comma-separated names, or `all`.
    pub fn parse_list(s: &str) -> Result<Vec<Fault>, String> {
        match s.trim() {
            "all" => return Ok(Fault::ALL.to_vec()),
            "net" => return Ok(Fault::NET.to_vec()),
            _ => {}
        }
        s.split(',').map(|f| f.trim().parse()).collect()
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Fault {
    type Err = String;
    fn from_str(s: &str) -> Result<Fault, String> {
        Fault::ALL
            .into_iter()
            .chain(Fault::NET)
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                format!("{s}: not a fault (kill, stop, partition, clock, jump, isolate, oneway, isolate-kill, internal)")
            })
    }
}

/// A fault on one node.
#[derive(Clone, Debug)]
pub struct Plan {
    pub fault: Fault,
    /// The node (0-based).
    pub node: usize,
    /// How long a kill, stop or partition lasts.
    pub hold: Duration,
    /// The clock offset of [`Fault::Clock`] and the jump of
    /// [`Fault::Jump`], in milliseconds (±).
    pub clock_offset_ms: i64,
}

impl Plan {
    /// Make the cluster's options fit the plan: proxied internal traffic
    /// for a partition, the clock flag on the node for a clock fault.
    pub fn prepare(&self, o: &mut ClusterOptions) {
        match self.fault {
            Fault::Partition => o.proxied = true,
            Fault::Clock => {
                let flag = format!("--test-clock-offset-ms={}", self.clock_offset_ms);
                o.add_node_arg(self.node, flag);
            }
            Fault::Jump => o.add_node_arg(self.node, "--test-clock-hook".into()),
            Fault::Isolate | Fault::OneWay | Fault::IsolateKill | Fault::Internal => o.netns = true,
            Fault::Kill | Fault::Stop => {}
        }
    }

    /// Inject the fault and undo it after the hold time (blocking that
    /// long); when it began and when the node was back (started again and
    /// serving, continued, healed). A clock fault lasts the whole run:
    /// nothing happens here and `None` comes back.
    pub fn inject(&self, c: &mut LocalCluster) -> Result<Option<Injected>, String> {
        let i = self.node;
        let began = Instant::now();
        match self.fault {
            Fault::Clock => return Ok(None),
            Fault::Kill => {
                c.kill(i)?;
                std::thread::sleep(self.hold);
                c.restart(i)?;
            }
            Fault::Stop => {
                c.stop(i)?;
                std::thread::sleep(self.hold);
                c.cont(i)?;
            }
            Fault::Partition => {
                c.partition(i)?;
                std::thread::sleep(self.hold);
                c.heal(i)?;
            }
            Fault::Jump => {
                c.jump_clock(i, self.clock_offset_ms)?;
                std::thread::sleep(self.hold);
                c.jump_clock(i, -self.clock_offset_ms)?;
            }
            Fault::Isolate | Fault::OneWay | Fault::Internal => {
                let how = match self.fault {
                    Fault::Isolate => Cut::Both,
                    Fault::OneWay => Cut::Outbound,
                    _ => Cut::Internal,
                };
                c.cut(i, how)?;
                std::thread::sleep(self.hold);
                c.mend(i)?;
            }
            Fault::IsolateKill => {
                c.cut(i, Cut::Both)?;
                std::thread::sleep(self.hold / 2);
                c.kill(i)?;
                std::thread::sleep(self.hold / 2);
                // Started again while still cut off: it cannot check its
                // layout with the others, and must not be waited on.
                c.restart_unwaited(i)?;
                std::thread::sleep(self.hold / 2);
                c.mend(i)?;
                c.wait_serving(i)?;
            }
        }
        Ok(Some(Injected {
            began,
            returned: Instant::now(),
        }))
    }
}

/// When an injected fault began and ended.
#[derive(Clone, Copy, Debug)]
pub struct Injected {
    pub began: Instant,
    pub returned: Instant,
}

/// Hints pending in the cluster as every node reports them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Backlog {
    /// Hints the other nodes keep for node i.
    pub toward: u64,
    /// Hints node i keeps for the others.
    pub held: u64,
    /// Hints anywhere in the cluster.
    pub total: u64,
    /// Hints dropped (over their bounds) anywhere, since the nodes started.
    pub dropped: u64,
}

impl Backlog {
    /// Every node's view of the hints concerning node `i`, asked at the
    /// nodes' client `urls` (`adv`: their advertised URLs, as members are
    /// named); an error if a node does not answer.
    pub fn of(urls: &[String], adv: &[String], i: usize) -> Result<Backlog, String> {
        let mut b = Backlog::default();
        for (j, u) in urls.iter().enumerate() {
            let v = control::cluster_view(u, Duration::from_secs(2))?;
            for m in v.head.members.iter().filter(|m| !m.is_self) {
                b.total += m.hints.count;
                b.dropped += m.hints.dropped;
                if j == i {
                    b.held += m.hints.count;
                } else if control::same_url(&m.url, &adv[i]) {
                    b.toward += m.hints.count;
                }
            }
        }
        Ok(b)
    }
}

/// Poll until nothing concerning node `i` is pending (`toward` and `held`
/// both 0), at most `limit`; how long it took, `None` if it did not
/// happen.
pub fn wait_level(c: &LocalCluster, i: usize, limit: Duration) -> Option<Duration> {
    let t0 = Instant::now();
    let (urls, adv) = (c.urls(), c.advertised());
    loop {
        if let Ok(b) = Backlog::of(&urls, &adv, i) {
            if b.toward == 0 && b.held == 0 {
                return Some(t0.elapsed());
            }
        }
        if t0.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_parse_and_prepare_the_cluster() {
        assert_eq!(Fault::parse_list("all").unwrap(), Fault::ALL);
        assert_eq!(
            Fault::parse_list("kill, clock").unwrap(),
            [Fault::Kill, Fault::Clock]
        );
        assert!(Fault::parse_list("kill,flood")
            .unwrap_err()
            .contains("flood"));
        let mut o = ClusterOptions::new(3, "/tmp/x");
        let mut p = Plan {
            fault: Fault::Clock,
            node: 2,
            hold: Duration::from_secs(3),
            clock_offset_ms: -10_000,
        };
        p.prepare(&mut o);
        assert_eq!(o.node_args[2], ["--test-clock-offset-ms=-10000"]);
        assert!(o.node_args[0].is_empty() && !o.proxied);
        p.fault = Fault::Partition;
        p.prepare(&mut o);
        assert!(o.proxied);
    }
}
