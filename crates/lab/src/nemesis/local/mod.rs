//! A local cluster: N real `strata serve` processes on loopback, each with
//! its own data directory (`DIR/node-1` …) and log (`DIR/node-1.log`,
//! stdout and stderr, appended across restarts), one generated secret
//! (`DIR/cluster-secret`, mode 0600, passed by file), and every member's
//! URL in every node's `--cluster` list, so ports are chosen before any
//! node starts. With `proxied`, node i advertises the URL of its own route
//! in a [`FaultProxy`], so all internal traffic to it passes through the
//! proxy, and partitions are real silences on real sockets; clients still
//! use the nodes' own ports.
//!
//! Owns ports, directories, the secret, the processes and their signals
//! (kill, stop, continue, terminate, restart), partitions by node index;
//! must not know what a node does with its flags beyond starting and
//! answering `GET /v0/status`.
//!
//! Here: the cluster's nodes, starting, signals and restarts; `options`
//! how a cluster is started, `faults` partitions, cuts and clocks,
//! `process` the system calls beneath.
//!
//! Nodes are numbered from 0 in this API (`urls()[i]`, `kill(i)`), and
//! from 1 in names on disk and in messages (`node-{i+1}`).

use std::ffi::OsString;
use std::fs::OpenOptions;
use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};
use strata_api::routes;

use super::netns::NetLab;
use super::proxy::FaultProxy;
use strata_client::control;

mod faults;
mod options;
mod process;

pub use options::ClusterOptions;
use options::Program;
use process::{node_ports, port_at, signal, tail, terminate_all, write_secret};

struct Node {
    /// `serve` and everything after it.
    args: Vec<OsString>,
    /// The client URL: the node's own port.
    url: String,
    /// The URL in every `--cluster` list: the proxy's in proxied mode.
    advertised: String,
    data: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

/// A running local cluster. Dropping it kills every node (SIGKILL) and
/// waits for them; [`LocalCluster::terminate_all`] stops them gracefully.
pub struct LocalCluster {
    program: Program,
    dir: PathBuf,
    secret_file: PathBuf,
    nodes: Vec<Node>,
    proxy: Option<FaultProxy>,
    /// The nodes' network namespaces, with `netns`.
    net: Option<NetLab>,
    ready_timeout: Duration,
}

impl LocalCluster {
    /// Start the cluster and wait until every node answers `/v0/status`
    /// with 200. `strata` runs the `strata` binary (the binary itself, or
    /// a wrapper such as `taskset -c 1 strata` that the arguments follow);
    /// the launcher adds `serve` and its flags.
    pub fn start(opts: &ClusterOptions, strata: Command) -> Result<LocalCluster, String> {
        if opts.nodes == 0 {
            return Err("a cluster needs at least one node".into());
        }
        let dir =
            std::path::absolute(&opts.dir).map_err(|e| format!("{}: {e}", opts.dir.display()))?;
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let secret_file = dir.join("cluster-secret");
        write_secret(&secret_file)?;
        let secret =
            std::fs::read(&secret_file).map_err(|e| format!("{}: {e}", secret_file.display()))?;
        let token = strata_api::access::operator_token(&secret);

        let n = opts.nodes;
        // Free ports stay held until the proxies have bound theirs, so that
        // no proxy gets a node's port.
        let (ports, held) = node_ports(opts.base_port, n)?;
        let proxy = if opts.proxied {
            Some(FaultProxy::start().map_err(|e| format!("starting the proxy: {e}"))?)
        } else {
            None
        };
        if opts.netns && opts.proxied {
            return Err("a cluster in network namespaces is not proxied".into());
        }
        let net = if opts.netns {
            Some(NetLab::create(n)?)
        } else {
            None
        };
        // Where node i listens: loopback, or its namespace's address.
        let host = |i: usize| match &net {
            Some(net) => net.ip(i).to_string(),
            None => "127.0.0.1".to_string(),
        };
        let mut advertised = Vec::with_capacity(n);
        for (i, &port) in ports.iter().enumerate() {
            let direct = format!("http://{}:{port}", host(i));
            match &proxy {
                None => advertised.push(direct),
                Some(p) => {
                    let listen = if opts.base_port == 0 {
                        0
                    } else {
                        port_at(opts.base_port, n + i)?
                    };
                    let l = TcpListener::bind(("127.0.0.1", listen))
                        .map_err(|e| format!("proxy of node-{} on port {listen}: {e}", i + 1))?;
                    let upstream: SocketAddr = ([127, 0, 0, 1], port).into();
                    let url = p
                        .add_route(l, upstream)
                        .map_err(|e| format!("proxy of node-{}: {e}", i + 1))?;
                    advertised.push(url);
                }
            }
        }
        drop(held);
        let members = advertised.join(",");
        // The lab operates the cluster it starts (repair, membership,
        // backups, profiles): with the operator token of its secret, sent
        // to its nodes only.
        for (i, (port, url)) in ports.iter().zip(&advertised).enumerate() {
            strata_client::stream::set_token_for(&format!("{}:{port}", host(i)), &token);
            strata_client::stream::set_token_for(url, &token);
        }

        let mut nodes = Vec::with_capacity(n);
        for (i, &port) in ports.iter().enumerate() {
            let data = dir.join(format!("node-{}", i + 1));
            let mut args: Vec<OsString> = vec!["serve".into(), "--listen".into()];
            args.push(format!("{}:{port}", host(i)).into());
            args.push("--data-dir".into());
            args.push(data.clone().into());
            args.extend(["--log-level".into(), opts.log_level.clone().into()]);
            args.extend(["--cluster".into(), members.clone().into()]);
            args.extend(["--advertise".into(), advertised[i].clone().into()]);
            args.push("--cluster-secret-file".into());
            args.push(secret_file.clone().into());
            if let Some(r) = opts.replication {
                args.extend(["--replication".into(), r.to_string().into()]);
            }
            if net.is_some() {
                args.extend(NetLab::client_auth(&opts.serve_args).map(OsString::from));
            }
            args.extend(opts.serve_args.iter().map(OsString::from));
            if let Some(extra) = opts.node_args.get(i) {
                args.extend(extra.iter().map(OsString::from));
            }
            nodes.push(Node {
                args,
                url: format!("http://{}:{port}", host(i)),
                advertised: advertised[i].clone(),
                data,
                log: dir.join(format!("node-{}.log", i + 1)),
                child: None,
            });
        }
        let mut c = LocalCluster {
            program: Program::of(&strata),
            dir,
            secret_file,
            nodes,
            proxy,
            net,
            ready_timeout: opts.ready_timeout,
        };
        // Start them all, then wait for them all: a node may wait for its
        // peers before it answers.
        for i in 0..n {
            c.spawn(i)?;
        }
        let deadline = Instant::now() + c.ready_timeout;
        for i in 0..n {
            c.wait_ready(i, deadline)?;
        }
        // `c` is dropped on an error above, which kills what started.
        Ok(c)
    }

    /// Start one more node outside the cluster, with `--seed` naming
    /// node 1, to be added by `strata cluster join` (its flags are node
    /// 1's otherwise). Returns its index once it answers `/v0/status`.
    pub fn add_node(&mut self) -> Result<usize, String> {
        if self.proxy.is_some() || self.net.is_some() {
            return Err("adding a node to a proxied or namespaced cluster is not supported".into());
        }
        let i = self.nodes.len();
        let (ports, held) = node_ports(0, 1)?;
        drop(held);
        let url = format!("http://127.0.0.1:{}", ports[0]);
        let data = self.dir.join(format!("node-{}", i + 1));
        let seed = self.nodes[0].advertised.clone();
        let mut args = Vec::new();
        let mut it = self.nodes[0].args.iter();
        while let Some(a) = it.next() {
            let value = match a.to_str() {
                Some("--listen") => format!("127.0.0.1:{}", ports[0]).into(),
                Some("--data-dir") => data.clone().into(),
                Some("--advertise") => url.clone().into(),
                Some("--cluster") => {
                    it.next();
                    args.push(OsString::from("--seed"));
                    args.push(seed.clone().into());
                    continue;
                }
                _ => {
                    args.push(a.clone());
                    continue;
                }
            };
            it.next();
            args.push(a.clone());
            args.push(value);
        }
        self.nodes.push(Node {
            args,
            url: url.clone(),
            advertised: url,
            data,
            log: self.dir.join(format!("node-{}.log", i + 1)),
            child: None,
        });
        self.spawn(i)?;
        let deadline = Instant::now() + self.ready_timeout;
        self.wait_ready(i, deadline)?;
        Ok(i)
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the cluster has no nodes (never, once started).
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The client URLs, `http://127.0.0.1:P_i`: the nodes' own ports.
    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.url.clone()).collect()
    }

    /// The members' advertised URLs, as in every `--cluster` list: the
    /// proxies' in proxied mode, else the same as [`LocalCluster::urls`].
    pub fn advertised(&self) -> Vec<String> {
        self.nodes.iter().map(|n| n.advertised.clone()).collect()
    }

    /// The base directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The file holding the cluster secret.
    pub fn secret_file(&self) -> &Path {
        &self.secret_file
    }

    /// Node i's data directory.
    pub fn data_dir(&self, i: usize) -> &Path {
        &self.nodes[i].data
    }

    /// Node i's log (its stdout and stderr).
    pub fn log_path(&self, i: usize) -> &Path {
        &self.nodes[i].log
    }

    /// Node i's `strata` arguments, from `serve` on.
    pub fn args(&self, i: usize) -> Vec<String> {
        self.nodes[i]
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    /// Node i's process id, if it is running (or stopped).
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.nodes[i].child.as_ref().map(Child::id)
    }

    /// Whether node i's process is alive (running or stopped); reaps it if
    /// it has exited.
    pub fn is_running(&mut self, i: usize) -> bool {
        self.exited(i).is_none() && self.nodes[i].child.is_some()
    }

    /// If node i has exited since the last look: its status (the process
    /// is reaped and forgotten).
    pub fn exited(&mut self, i: usize) -> Option<ExitStatus> {
        let node = &mut self.nodes[i];
        let st = node.child.as_mut()?.try_wait().ok()??;
        node.child = None;
        Some(st)
    }

    /// SIGKILL node i and wait for it.
    pub fn kill(&mut self, i: usize) -> Result<(), String> {
        let mut child = self.take_child(i)?;
        signal(&child, libc::SIGKILL);
        child
            .wait()
            .map_err(|e| format!("waiting for node-{}: {e}", i + 1))?;
        Ok(())
    }

    /// SIGSTOP node i: it freezes, its sockets stay open.
    pub fn stop(&mut self, i: usize) -> Result<(), String> {
        signal(self.child(i)?, libc::SIGSTOP);
        Ok(())
    }

    /// SIGCONT node i after [`LocalCluster::stop`].
    pub fn cont(&mut self, i: usize) -> Result<(), String> {
        signal(self.child(i)?, libc::SIGCONT);
        Ok(())
    }

    /// SIGTERM node i (and SIGCONT, in case it is stopped) and wait for
    /// its graceful exit, at most `ready_timeout`; after that it is killed
    /// and the answer is an error.
    pub fn terminate(&mut self, i: usize) -> Result<ExitStatus, String> {
        let child = self.take_child(i)?;
        let deadline = Instant::now() + self.ready_timeout;
        terminate_all([(i, child)], deadline)
            .pop()
            .expect("one node")
    }

    /// SIGTERM every running node at once, then wait for each (at most
    /// `ready_timeout` in all, then SIGKILL). Returns each node's exit
    /// status, `None` for a node that was not running.
    pub fn terminate_all(&mut self) -> Vec<Option<Result<ExitStatus, String>>> {
        let running: Vec<(usize, Child)> = (0..self.nodes.len())
            .filter_map(|i| self.nodes[i].child.take().map(|c| (i, c)))
            .collect();
        let deadline = Instant::now() + self.ready_timeout;
        let which: Vec<usize> = running.iter().map(|(i, _)| *i).collect();
        let mut out: Vec<Option<Result<ExitStatus, String>>> = vec![None; self.nodes.len()];
        for (i, r) in which.into_iter().zip(terminate_all(running, deadline)) {
            out[i] = Some(r);
        }
        out
    }

    /// Start node i again, with the same arguments and data directory, and
    /// wait until it answers `/v0/status` with 200. It must not be running
    /// (kill or terminate it first).
    pub fn restart(&mut self, i: usize) -> Result<(), String> {
        self.restart_unwaited(i)?;
        self.wait_serving(i)
    }

    /// Start node i again without waiting for it to serve (it may be cut
    /// off); [`LocalCluster::wait_serving`] waits later.
    pub fn restart_unwaited(&mut self, i: usize) -> Result<(), String> {
        if self.is_running(i) {
            return Err(format!("node-{} is still running", i + 1));
        }
        self.spawn(i)
    }

    /// Wait until node i answers `/v0/status` with 200.
    pub fn wait_serving(&mut self, i: usize) -> Result<(), String> {
        let deadline = Instant::now() + self.ready_timeout;
        self.wait_ready(i, deadline)
    }

    /// Kill every node (SIGKILL) and wait for them; stop the proxy.
    pub fn shutdown(mut self) {
        self.kill_all();
        self.proxy = None;
    }

    fn kill_all(&mut self) {
        for n in &mut self.nodes {
            if let Some(c) = &n.child {
                signal(c, libc::SIGKILL);
            }
        }
        for n in &mut self.nodes {
            if let Some(mut c) = n.child.take() {
                let _ = c.wait();
            }
        }
    }

    fn child(&mut self, i: usize) -> Result<&Child, String> {
        if !self.is_running(i) {
            return Err(format!("node-{} is not running", i + 1));
        }
        Ok(self.nodes[i].child.as_ref().expect("running"))
    }

    fn take_child(&mut self, i: usize) -> Result<Child, String> {
        self.child(i)?;
        Ok(self.nodes[i].child.take().expect("running"))
    }

    fn spawn(&mut self, i: usize) -> Result<(), String> {
        let node = &mut self.nodes[i];
        let name = format!("node-{}", i + 1);
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&node.log)
            .map_err(|e| format!("{}: {e}", node.log.display()))?;
        let prefix = self
            .net
            .as_ref()
            .map(|n| n.exec_prefix(i))
            .unwrap_or_default();
        let mut cmd = self.program.command(&prefix);
        cmd.args(&node.args)
            // The secret comes from the file; an inherited one would clash.
            .env_remove("STRATA_CLUSTER_SECRET")
            .stdin(Stdio::null())
            .stdout(log.try_clone().map_err(|e| format!("{name} log: {e}"))?)
            .stderr(log.try_clone().map_err(|e| format!("{name} log: {e}"))?);
        let _ = writeln!(
            log,
            "--- strata-lab: starting {name}: {}",
            std::iter::once(&self.program.program)
                .chain(&self.program.args)
                .chain(&node.args)
                .map(|a| a.to_string_lossy())
                .collect::<Vec<_>>()
                .join(" ")
        );
        let child = cmd
            .spawn()
            .map_err(|e| format!("starting {name} ({:?}): {e}", self.program.program))?;
        node.child = Some(child);
        Ok(())
    }

    /// Poll node i's `/v0/status` until 200; an error if it exits first
    /// or `deadline` passes.
    fn wait_ready(&mut self, i: usize, deadline: Instant) -> Result<(), String> {
        let url = self.nodes[i].url.clone();
        loop {
            if let Some(st) = self.exited(i) {
                return Err(format!(
                    "node-{} exited ({st}) before it was ready; the end of {}:\n{}",
                    i + 1,
                    self.nodes[i].log.display(),
                    tail(&self.nodes[i].log, 20)
                ));
            }
            let last = match control::get(&url, routes::STATUS, Duration::from_secs(1)) {
                Ok(r) if r.status == 200 => return Ok(()),
                Ok(r) => format!("status {}", r.status),
                Err(e) => e,
            };
            if Instant::now() >= deadline {
                return Err(format!(
                    "node-{} at {url} was not ready in {:?} (last: {last}); the end of {}:\n{}",
                    i + 1,
                    self.ready_timeout,
                    self.nodes[i].log.display(),
                    tail(&self.nodes[i].log, 20)
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for LocalCluster {
    fn drop(&mut self) {
        self.kill_all();
    }
}

#[cfg(test)]
mod tests;
