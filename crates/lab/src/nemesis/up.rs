//! `strata cluster up`: a local cluster in the foreground. Starts the
//! nodes (see `nemesis::local`), prints where to reach them and where their
//! secret, data and logs are, waits for Ctrl-C or SIGTERM (saying so if a
//! node exits on its own meanwhile), then stops every node with SIGTERM
//! and waits for them. Owns that sequence and its output; must not know
//! how a node is built or what it does.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use super::local::{ClusterOptions, LocalCluster};

#[derive(clap::Args, Clone, Debug)]
pub struct UpArgs {
    /// Number of nodes.
    #[arg(long, default_value_t = 3)]
    pub nodes: usize,
    /// Base directory: node-N data directories, node-N.log, cluster-secret.
    #[arg(long, default_value = "strata-cluster")]
    pub data_dir: PathBuf,
    /// Node N listens on base-port + N - 1 (with --proxied, its proxy on
    /// base-port + nodes + N - 1); 0 picks free ports.
    #[arg(long, default_value_t = 7001)]
    pub base_port: u16,
    /// Replication factor (the node's default: min(3, nodes)).
    #[arg(long)]
    pub replication: Option<usize>,
    /// Route internal traffic through a local fault-injecting proxy (for
    /// partition experiments); clients still use the nodes' own ports.
    #[arg(long)]
    pub proxied: bool,
    /// Run each node in a network namespace of its own, joined to this
    /// one by a veth pair (root, iproute2 and nftables), so that `strata
    /// load --fault isolate:N@T+H` (and oneway, inbound, internal) can cut
    /// its traffic in the network. Not with --proxied.
    #[arg(long, conflicts_with = "proxied")]
    pub netns: bool,
    /// Log level of every node.
    #[arg(long, default_value = "warn")]
    pub log_level: String,
    /// More `strata serve` arguments for every node, after `--`.
    #[arg(last = true)]
    pub serve_args: Vec<String>,
}

impl UpArgs {
    /// The launcher's options for these arguments.
    pub fn options(&self) -> ClusterOptions {
        let mut o = ClusterOptions::new(self.nodes, &self.data_dir);
        o.base_port = self.base_port;
        o.replication = self.replication;
        o.proxied = self.proxied;
        o.netns = self.netns;
        o.log_level = self.log_level.clone();
        o.serve_args = self.serve_args.clone();
        o
    }
}

/// Run `strata cluster up`; `strata` runs the `strata` binary (the
/// launcher adds `serve` and its flags).
pub fn up(args: &UpArgs, strata: Command) -> Result<(), String> {
    use tokio::signal::unix::{signal, SignalKind};
    // The handlers go in before any node starts, so that a signal during
    // the start does not leave the nodes orphaned.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let (mut int, mut term) = rt
        .block_on(async {
            Ok::<_, std::io::Error>((
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
            ))
        })
        .map_err(|e| format!("signal handlers: {e}"))?;

    let opts = args.options();
    println!(
        "Starting {} nodes under {}{}",
        opts.nodes,
        opts.dir.display(),
        if opts.proxied {
            ", internal traffic through a local proxy"
        } else if opts.netns {
            ", each in a network namespace of its own"
        } else {
            ""
        }
    );
    let c = std::sync::Arc::new(std::sync::Mutex::new(LocalCluster::start(&opts, strata)?));
    let lock = || c.lock().unwrap_or_else(|p| p.into_inner());
    print!("{}", summary(&lock()));
    let control = super::control::serve(&opts.dir, c.clone())?;
    println!(
        "Operator endpoints (backup, repair, join, leave, profiles) need its operator token: export STRATA_TOKEN=$(strata token operator --cluster-secret-file {})",
        lock().secret_file().display()
    );
    println!(
        "Faults during a run: strata load ... --fault kill:2@20s --cluster-dir {} (control socket {})",
        opts.dir.display(),
        control.display()
    );

    let interrupted = rt.block_on(async {
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                _ = int.recv() => return "Ctrl-C",
                _ = term.recv() => return "SIGTERM",
                _ = tick.tick() => {
                    let mut c = lock();
                    for i in 0..c.len() {
                        if let Some(st) = c.exited(i) {
                            println!(
                                "node-{} exited on its own ({st}); see {}",
                                i + 1,
                                c.log_path(i).display()
                            );
                        }
                    }
                }
            }
        }
    });
    println!("{interrupted}: stopping the nodes (SIGTERM)");
    let _ = std::fs::remove_file(&control);
    let mut c = lock();
    let mut failed = Vec::new();
    for (i, r) in c.terminate_all().into_iter().enumerate() {
        match r {
            None => {}
            Some(Ok(st)) if st.success() => {}
            Some(Ok(st)) => println!("node-{} exited with {st}", i + 1),
            Some(Err(e)) => failed.push(e),
        }
    }
    // The control thread keeps the cluster alive to the end: its
    // namespaces go now, not with the process.
    c.release_network();
    if !failed.is_empty() {
        return Err(failed.join("; "));
    }
    println!("All nodes stopped. Data in {}", c.dir().display());
    Ok(())
}

/// What `up` prints once the nodes are ready: a line per node, the client
/// URLs one per line, then together for `strata load`, then the files.
fn summary(c: &LocalCluster) -> String {
    let mut s = String::new();
    let urls = c.urls();
    let adv = c.advertised();
    s.push_str(&format!("{} nodes ready:\n", c.len()));
    for i in 0..c.len() {
        s.push_str(&format!(
            "  node-{}  {}  pid {}",
            i + 1,
            urls[i],
            c.pid(i).map_or("-".into(), |p| p.to_string())
        ));
        if adv[i] != urls[i] {
            s.push_str(&format!("  (peers reach it through {})", adv[i]));
        }
        s.push('\n');
    }
    s.push_str("Client URLs:\n");
    for u in &urls {
        s.push_str(u);
        s.push('\n');
    }
    s.push_str(&urls.join(","));
    s.push('\n');
    s.push_str(&format!(
        "Secret: {}\nData:   {}\nLogs:   {}\nCtrl-C or SIGTERM stops the cluster.\n",
        c.secret_file().display(),
        c.dir().join("node-N").display(),
        c.dir().join("node-N.log").display()
    ));
    s
}
