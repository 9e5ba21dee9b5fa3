//! The faults a local cluster takes beside signals: partitions through
//! the fault proxy, cuts in network namespaces, a node's clock moved
//! (now, through its test hook, or from its next start). Owns those
//! operations on a running cluster; must not decide when they happen (the
//! nemesis does).

use std::time::Duration;

use strata_api::routes;
use strata_client::control;

use super::super::netns::{Cut, NetLab};
use super::super::proxy::{Fault, FaultProxy, LinkStats};
use super::LocalCluster;

impl LocalCluster {
    /// Black-hole every internal connection from or to node i (proxied
    /// clusters only); see [`FaultProxy::partition`].
    pub fn partition(&self, i: usize) -> Result<(), String> {
        self.partition_with(i, Fault::BlackHole)
    }

    /// Partition node i with the given fault (proxied clusters only).
    pub fn partition_with(&self, i: usize, fault: Fault) -> Result<(), String> {
        self.proxy()?.partition(&self.nodes[i].advertised, fault);
        Ok(())
    }

    /// Lift node i's partition: its black-holed connections are closed
    /// and new ones relayed.
    pub fn heal(&self, i: usize) -> Result<(), String> {
        self.proxy()?.heal(&self.nodes[i].advertised);
        Ok(())
    }

    /// Lift every partition.
    pub fn heal_all(&self) -> Result<(), String> {
        self.proxy()?.heal_all();
        Ok(())
    }

    /// Move node i's running clock by `ms` through its test hook (the
    /// node must run `--test-clock-hook`).
    pub fn jump_clock(&self, i: usize, ms: i64) -> Result<(), String> {
        let url = &self.nodes[i].url;
        let path = format!("{}?jump_ms={ms}", routes::CLOCK);
        let r = control::request("POST", url, &path, Duration::from_secs(10))?;
        if r.status != 200 {
            return Err(format!(
                "{url}{path} answered {}: {}",
                r.status,
                String::from_utf8_lossy(&r.body).trim()
            ));
        }
        Ok(())
    }

    /// Cut node i off in the network as `how` says (clusters in network
    /// namespaces only).
    pub fn cut(&self, i: usize, how: Cut) -> Result<(), String> {
        self.net()?.cut(i, how)
    }

    /// Lift node i's network cut.
    pub fn mend(&self, i: usize) -> Result<(), String> {
        self.net()?.heal(i)
    }

    fn net(&self) -> Result<&NetLab, String> {
        self.net
            .as_ref()
            .ok_or_else(|| "network cuts need a cluster in network namespaces (netns)".into())
    }

    /// The counters of node i's proxy route (proxied clusters only).
    pub fn proxy_stats(&self, i: usize) -> Option<LinkStats> {
        self.proxy.as_ref()?.stats(&self.nodes[i].advertised)
    }

    /// Whether internal traffic runs through the lab's proxy.
    pub fn proxied(&self) -> bool {
        self.proxy.is_some()
    }

    /// Whether the nodes run in network namespaces of their own.
    pub fn netns(&self) -> bool {
        self.net.is_some()
    }

    /// Remove the nodes' network namespaces, links and rules (once the
    /// nodes are stopped; dropping the cluster does it too).
    pub fn release_network(&mut self) {
        self.net = None;
    }

    /// Start node i with its wall clock off by `ms` milliseconds from its
    /// next start on (replacing any offset it had).
    pub fn set_clock_offset(&mut self, i: usize, ms: i64) {
        const FLAG: &str = "--test-clock-offset-ms";
        let args = &mut self.nodes[i].args;
        let mut k = 0;
        while k < args.len() {
            let a = args[k].to_string_lossy();
            if a == FLAG {
                args.drain(k..(k + 2).min(args.len()));
            } else if a.starts_with(&format!("{FLAG}=")) {
                args.remove(k);
            } else {
                k += 1;
            }
        }
        args.push(format!("{FLAG}={ms}").into());
    }

    fn proxy(&self) -> Result<&FaultProxy, String> {
        self.proxy
            .as_ref()
            .ok_or_else(|| "partitions need a proxied cluster".to_string())
    }
}
