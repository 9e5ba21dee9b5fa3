//! How a local cluster is started: its size, directory, flags for every
//! node and for one, whether internal traffic runs through the fault proxy
//! or the nodes run in network namespaces, and the `strata` program with
//! the arguments every node's command line starts with. Owns the options;
//! must not start anything.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How a local cluster is started.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// Number of nodes.
    pub nodes: usize,
    /// Base directory: `node-i` data directories, `node-i.log`, the secret.
    pub dir: PathBuf,
    /// Node i listens on `base_port + i`, and with `proxied` its proxy on
    /// `base_port + nodes + i`; 0 picks free ports.
    pub base_port: u16,
    /// `--replication`; `None` leaves the node's default.
    pub replication: Option<usize>,
    /// `--log-level` of every node.
    pub log_level: String,
    /// More `strata serve` arguments for every node.
    pub serve_args: Vec<String>,
    /// More arguments for node i only (`node_args[i]`, after `serve_args`;
    /// the list may be shorter than `nodes`), e.g. a clock offset.
    pub node_args: Vec<Vec<String>>,
    /// Internal traffic through a [`FaultProxy`], for partitions.
    pub proxied: bool,
    /// Each node in a network namespace of its own (root, iproute2 and
    /// nftables), for real partitions of client and internal traffic
    /// ([`NetLab`]); not with `proxied`.
    pub netns: bool,
    /// How long every node has to answer `/v0/status` with 200.
    pub ready_timeout: Duration,
}

impl ClusterOptions {
    /// One more argument for node `i` only.
    pub fn add_node_arg(&mut self, i: usize, arg: String) {
        if self.node_args.len() <= i {
            self.node_args.resize(i + 1, vec![]);
        }
        self.node_args[i].push(arg);
    }

    /// `nodes` nodes under `dir`, ephemeral ports, default replication,
    /// log level `warn`, not proxied.
    pub fn new(nodes: usize, dir: impl Into<PathBuf>) -> ClusterOptions {
        ClusterOptions {
            nodes,
            dir: dir.into(),
            base_port: 0,
            replication: None,
            log_level: "warn".into(),
            serve_args: vec![],
            node_args: vec![],
            proxied: false,
            netns: false,
            ready_timeout: Duration::from_secs(30),
        }
    }
}

/// The program (and leading arguments) that runs `strata`, kept apart
/// from any one `Command` so that a node can be started again.
#[derive(Clone, Debug)]
pub(super) struct Program {
    pub(super) program: OsString,
    pub(super) args: Vec<OsString>,
    envs: Vec<(OsString, Option<OsString>)>,
    cwd: Option<PathBuf>,
}

impl Program {
    pub(super) fn of(c: &Command) -> Program {
        Program {
            program: c.get_program().to_owned(),
            args: c.get_args().map(OsStr::to_owned).collect(),
            envs: c
                .get_envs()
                .map(|(k, v)| (k.to_owned(), v.map(OsStr::to_owned)))
                .collect(),
            cwd: c.get_current_dir().map(Path::to_path_buf),
        }
    }

    /// The program, run through `prefix` (a namespace's `ip netns exec`)
    /// when one is given.
    pub(super) fn command(&self, prefix: &[String]) -> Command {
        let mut c = match prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(&self.program);
                c
            }
            None => Command::new(&self.program),
        };
        c.args(&self.args);
        for (k, v) in &self.envs {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        if let Some(d) = &self.cwd {
            c.current_dir(d);
        }
        c
    }
}
