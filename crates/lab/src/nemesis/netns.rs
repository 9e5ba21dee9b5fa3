//! Real network partitions for a local cluster, as Jepsen makes them with
//! iptables: each node runs in a network namespace of its own, joined to
//! this one by a veth pair (the node at `10.A.C.2`, this side at
//! `10.A.C.1`), and this namespace routes between them, so that the lab's
//! requests (client traffic) and the nodes' internal traffic both cross
//! this namespace, where an nftables table of the lab's drops what a cut
//! says: everything to and from a node, only what it sends, only what it
//! receives, or only its traffic with the other nodes. A cut drops
//! packets, it closes nothing: connections hang as they would on a real
//! network. Needs root, `ip` (iproute2) and `nft` (nftables); this
//! kernel has no netem, so delays are `strata cluster delay`'s. Owns the
//! namespaces, links and rules, and removes them all when dropped; must not
//! start nodes (`local` does, through `exec_prefix`).

use std::collections::BTreeMap;
use std::net::Ipv4Addr;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

/// What a cut drops, for one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Everything to and from the node: clients and peers.
    Both,
    /// What the node sends (it still hears, but nobody hears it).
    Outbound,
    /// What the node would receive.
    Inbound,
    /// Only its traffic with the other nodes; clients still reach it.
    Internal,
}

impl Cut {
    pub const ALL: [Cut; 4] = [Cut::Both, Cut::Outbound, Cut::Inbound, Cut::Internal];

    /// Its name as a fault (`--fault isolate:3@10s+5s`).
    pub fn name(self) -> &'static str {
        match self {
            Cut::Both => "isolate",
            Cut::Outbound => "oneway",
            Cut::Inbound => "inbound",
            Cut::Internal => "internal",
        }
    }

    pub fn parse(s: &str) -> Option<Cut> {
        Cut::ALL.into_iter().find(|c| c.name() == s)
    }
}

/// Namespaces made in this process so far (each lab takes a /20 of its
/// own under 10.A.0.0/16).
static LABS: AtomicU32 = AtomicU32::new(0);

pub struct NetLab {
    tag: String,
    names: Vec<String>,
    hosts: Vec<String>,
    ips: Vec<Ipv4Addr>,
    cuts: Mutex<BTreeMap<usize, Cut>>,
}

/// A command's standard output, if it succeeds.
fn run_out(args: &[&str]) -> Option<String> {
    let o = Command::new(args[0]).args(&args[1..]).output().ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).into_owned())
}

/// Remove the labs (namespaces, links, rule tables) of processes that no
/// longer run: a lab left behind by a process killed before it could clean
/// up would hold addresses a new one needs. A lab's tag is its process id
/// (the low 20 bits, in hex) and a digit.
fn reap_stale() {
    let Some(list) = run_out(&["ip", "netns", "list"]) else {
        return;
    };
    let mut stale = std::collections::BTreeSet::new();
    for name in list.split_whitespace() {
        let Some(tag) = name
            .strip_prefix("strata-")
            .and_then(|r| r.split('-').next())
        else {
            continue;
        };
        let Ok(low) = u32::from_str_radix(tag.get(..5).unwrap_or(""), 16) else {
            continue;
        };
        // Any live process whose id has these low bits may own it.
        let alive =
            (0..4u32).any(|k| std::path::Path::new(&format!("/proc/{}", low + (k << 20))).exists());
        if !alive {
            stale.insert(tag.to_string());
        }
    }
    for tag in stale {
        let _ = run(&["nft", "delete", "table", "inet", &format!("strata{tag}")]);
        for i in 0..16 {
            let _ = run(&["ip", "link", "del", &format!("s{tag}h{i}")]);
            let _ = run(&["ip", "netns", "del", &format!("strata-{tag}-{i}")]);
        }
    }
}

fn run(args: &[&str]) -> Result<(), String> {
    let o = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| {
            format!(
                "{}: {e} (network partitions need iproute2 and nftables, as root)",
                args[0]
            )
        })?;
    if !o.status.success() {
        return Err(format!(
            "{}: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr).trim()
        ));
    }
    Ok(())
}

impl NetLab {
    /// What a node in a namespace is started with beyond `chosen` (the
    /// user's own flags): `--client-auth open`, unless they chose how
    /// callers authenticate. It listens on an address of the lab's own
    /// veth pair that no other host routes to, so its callers (the lab's
    /// other processes, the tests) are served as on loopback, with no
    /// token to carry (docs/lab.md).
    pub fn client_auth(chosen: &[String]) -> impl Iterator<Item = &'static str> {
        let chose = chosen
            .iter()
            .any(|a| a.starts_with("--client-auth") || a.starts_with("--auth-tokens"));
        ["--client-auth", "open"]
            .into_iter()
            .filter(move |_| !chose)
    }

    /// Namespaces, links and an empty rule table for `n` nodes.
    pub fn create(n: usize) -> Result<NetLab, String> {
        if n > 16 {
            return Err("network namespaces for at most 16 nodes".into());
        }
        let lab = LABS.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        reap_stale();
        let block = (lab % 16) as u8;
        // A /16 whose block no interface uses yet (another process's lab
        // may be alive).
        let used = run_out(&["ip", "-br", "addr"]).unwrap_or_default();
        let a = (0..100u32)
            .map(|k| 100 + ((pid + k) % 100) as u8)
            .find(|a| !used.contains(&format!("10.{a}.{}.", block * 16)))
            .ok_or("no free 10.A.0.0/16 for a network lab")?;
        let tag = format!("{:05x}{}", pid & 0xfffff, lab % 16);
        let mut net = NetLab {
            tag: tag.clone(),
            names: Vec::new(),
            hosts: Vec::new(),
            ips: Vec::new(),
            cuts: Mutex::new(BTreeMap::new()),
        };
        std::fs::write("/proc/sys/net/ipv4/ip_forward", "1")
            .map_err(|e| format!("enabling IPv4 forwarding: {e} (needs root)"))?;
        for i in 0..n {
            let ns = format!("strata-{tag}-{i}");
            let host = format!("s{tag}h{i}");
            let peer = format!("s{tag}n{i}");
            let c = block * 16 + i as u8;
            let (mine, theirs) = (format!("10.{a}.{c}.1"), format!("10.{a}.{c}.2"));
            run(&["ip", "netns", "add", &ns])?;
            net.names.push(ns.clone());
            run(&[
                "ip", "link", "add", &host, "type", "veth", "peer", "name", &peer,
            ])?;
            net.hosts.push(host.clone());
            run(&["ip", "link", "set", &peer, "netns", &ns])?;
            run(&["ip", "addr", "add", &format!("{mine}/24"), "dev", &host])?;
            run(&["ip", "link", "set", &host, "up"])?;
            let inside = |args: &[&str]| {
                let mut v = vec!["ip", "netns", "exec", &ns];
                v.extend_from_slice(args);
                run(&v)
            };
            inside(&["ip", "addr", "add", &format!("{theirs}/24"), "dev", &peer])?;
            inside(&["ip", "link", "set", &peer, "up"])?;
            inside(&["ip", "link", "set", "lo", "up"])?;
            inside(&["ip", "route", "add", "default", "via", &mine])?;
            net.ips.push(theirs.parse().expect("an address"));
        }
        run(&["nft", "add", "table", "inet", &net.table()])?;
        for (chain, hook) in [
            ("lab_in", "input"),
            ("lab_out", "output"),
            ("lab_fwd", "forward"),
        ] {
            run(&[
                "nft",
                &format!(
                    "add chain inet {} {chain} {{ type filter hook {hook} priority 0; policy accept; }}",
                    net.table()
                ),
            ])?;
        }
        Ok(net)
    }

    fn table(&self) -> String {
        format!("strata{}", self.tag)
    }

    /// Node `i`'s address.
    pub fn ip(&self, i: usize) -> Ipv4Addr {
        self.ips[i]
    }

    /// The words that run a command in node `i`'s namespace.
    pub fn exec_prefix(&self, i: usize) -> Vec<String> {
        vec![
            "ip".into(),
            "netns".into(),
            "exec".into(),
            self.names[i].clone(),
        ]
    }

    /// Cut node `i` off as `how` says (replacing a cut it had).
    pub fn cut(&self, i: usize, how: Cut) -> Result<(), String> {
        self.cuts.lock().expect("cuts").insert(i, how);
        self.apply()
    }

    /// Lift node `i`'s cut.
    pub fn heal(&self, i: usize) -> Result<(), String> {
        self.cuts.lock().expect("cuts").remove(&i);
        self.apply()
    }

    /// The table's rules made anew from the cuts in force.
    fn apply(&self) -> Result<(), String> {
        let t = self.table();
        for chain in ["lab_in", "lab_out", "lab_fwd"] {
            run(&["nft", "flush", "chain", "inet", &t, chain])?;
        }
        let cuts = self.cuts.lock().expect("cuts").clone();
        for (i, how) in cuts {
            let ip = self.ips[i].to_string();
            let mut rules: Vec<(&str, &str)> = Vec::new();
            if matches!(how, Cut::Both | Cut::Outbound) {
                rules.push(("lab_in", "saddr"));
                rules.push(("lab_fwd", "saddr"));
            }
            if matches!(how, Cut::Both | Cut::Inbound) {
                rules.push(("lab_out", "daddr"));
                rules.push(("lab_fwd", "daddr"));
            }
            if how == Cut::Internal {
                rules.push(("lab_fwd", "saddr"));
                rules.push(("lab_fwd", "daddr"));
            }
            for (chain, dir) in rules {
                run(&[
                    "nft", "add", "rule", "inet", &t, chain, "ip", dir, &ip, "drop",
                ])?;
            }
        }
        Ok(())
    }
}

impl Drop for NetLab {
    fn drop(&mut self) {
        let _ = run(&["nft", "delete", "table", "inet", &self.table()]);
        for h in &self.hosts {
            let _ = run(&["ip", "link", "del", h]);
        }
        for ns in &self.names {
            let _ = run(&["ip", "netns", "del", ns]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::NetLab;

    #[test]
    fn namespaced_nodes_serve_their_callers_unless_told_how_to_authenticate() {
        let args = |chosen: &[&str]| -> Vec<&str> {
            let chosen: Vec<String> = chosen.iter().map(|s| s.to_string()).collect();
            NetLab::client_auth(&chosen).collect()
        };
        assert_eq!(args(&[]), ["--client-auth", "open"]);
        assert_eq!(args(&["--replication", "2"]), ["--client-auth", "open"]);
        assert!(args(&["--auth-tokens=/t"]).is_empty());
        assert!(args(&["--client-auth", "required"]).is_empty());
    }
}
