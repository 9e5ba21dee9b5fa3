//! The node's process: runtime, listener, connections with header and body
//! timeouts, and graceful shutdown on SIGTERM/SIGINT (status turns 503, the
//! listener closes, in-flight requests get `shutdown_timeout` to finish, the
//! engine closes); `spawn` runs the same node in this process with a
//! shutdown of the caller's (the node's own tests). Owns the lifecycle;
//! must not interpret requests.
//!
//! Here: the process's start and stop; `accept` its connections.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use strata_cluster::Cluster;
use strata_engine::Db;
use tokio::net::TcpListener;

use crate::admission::{Mode, ADJUST_EVERY};
use crate::api::Node;
use crate::config::Config;
use crate::metrics::{EngineEvents, Metrics};
use crate::shards::{Runtimes, Shards, THREAD_NAME};

mod accept;

pub use accept::serve;

/// Open the store and serve until a signal arrives. Blocks.
pub fn run(config: Config) -> Result<(), String> {
    init_logging(&config.log_level);
    no_transparent_huge_pages();
    let rt = runtime(&config)?;
    // The main runtime's thread is one of the serving threads (per core,
    // the first shard): named as the others are, not as the process.
    std::thread::Builder::new()
        .name(THREAD_NAME.into())
        .spawn(move || {
            let shards = rt.shards();
            // The signal handlers need the runtime: registered inside it.
            rt.block_on(async { serve_until(config, shards, shutdown_signal(), |_| {}).await })
        })
        .map_err(|e| format!("spawn the node's thread: {e}"))?
        .join()
        .map_err(|_| "the node's thread panicked".to_string())?
}

/// Turn transparent huge pages off for this process, as Redis and most
/// stores advise. The allocator (mimalloc) advises them for the arenas it
/// maps, and the kernel's khugepaged (with `max_ptes_none` at its default,
/// 511) then fills any 2 MiB of an arena with one page in use out to a
/// whole huge page: in the hour's soak a node's memory less cache and
/// memtables stepped up 8-25 MiB at a time with nothing allocated
/// (docs/benchmarks.md, "An hour's soak, a fourth time"). The memtables'
/// chunks lose their huge pages too; a lookup is a bucket and a node or
/// two, small beside a request. Only `run`: a node spawned in a test's
/// process leaves the process as it is.
fn no_transparent_huge_pages() {
    // SAFETY: prctl with integer arguments only; it changes a flag of this
    // process and touches no memory of ours.
    let r = unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
    if r != 0 {
        tracing::warn!(
            "cannot turn transparent huge pages off: {}",
            std::io::Error::last_os_error()
        );
    }
}

/// A node serving in this process on a runtime of its own, until
/// `stop` (or drop): for tests of the node over real HTTP and for
/// embedding. The same path as `run`, but the shutdown comes from here,
/// not from a signal.
pub struct Spawned {
    /// Where it listens (`--listen 127.0.0.1:0` picks a free port).
    pub addr: std::net::SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
}

impl Spawned {
    /// Drain and close as on SIGTERM; what `run` would have returned.
    pub fn stop(mut self) -> Result<(), String> {
        self.finish()
    }

    fn finish(&mut self) -> Result<(), String> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        match self.thread.take() {
            Some(t) => t
                .join()
                .map_err(|_| "the node's thread panicked".to_string())?,
            None => Ok(()),
        }
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// Start a node in this process (see `Spawned`); returns once it listens,
/// or with the error that kept it from starting.
pub fn spawn(config: Config) -> Result<Spawned, String> {
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let thread = std::thread::Builder::new()
        .name(strata_api::threads::names::NODE_MAIN.into())
        .spawn(move || {
            let rt = runtime(&config)?;
            let ready = ready_tx.clone();
            let shards = rt.shards();
            let r = rt.block_on(serve_until(
                config,
                shards,
                async {
                    let _ = stop_rx.await;
                },
                move |addr| {
                    let _ = ready.send(Ok(addr));
                },
            ));
            if let Err(e) = &r {
                let _ = ready_tx.send(Err(e.clone()));
            }
            r
        })
        .map_err(|e| format!("spawn the node's thread: {e}"))?;
    match ready_rx.recv() {
        Ok(Ok(addr)) => Ok(Spawned {
            addr,
            stop: Some(stop_tx),
            thread: Some(thread),
        }),
        Ok(Err(e)) => {
            let _ = thread.join();
            Err(e)
        }
        Err(_) => Err(match thread.join() {
            Ok(Err(e)) => e,
            _ => "the node stopped before it listened".into(),
        }),
    }
}

fn runtime(config: &Config) -> Result<Runtimes, String> {
    crate::probes::register();
    Runtimes::build(
        config.runtime,
        config.worker_threads,
        config.max_in_service + 16,
    )
}

/// Open the store, serve until `shutdown` resolves, then drain and close;
/// `listening` learns the address once the node listens.
async fn serve_until(
    config: Config,
    shards: Arc<Shards>,
    shutdown: impl std::future::Future<Output = ()>,
    listening: impl FnOnce(std::net::SocketAddr),
) -> Result<(), String> {
    let listener =
        listen(config.listen).map_err(|e| format!("listen on {}: {e}", config.listen))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    // Listening on port 0 (a single node; a joining one needs a port):
    // the URL the node's cluster view advertises is the port it got, so
    // that a client that learns the members from the view reaches it.
    let mut config = config;
    if let Some(host) = config.cluster.advertise.strip_suffix(":0") {
        config.cluster.advertise = format!("{host}:{}", addr.port());
    }
    let events = Arc::new(EngineEvents::default());
    let mut opts = config.engine_options();
    opts.listener = Some(events.clone());
    let dir = config.data_dir.clone();
    let db = tokio::task::spawn_blocking(move || Db::open(&dir, opts))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("opening {}: {e}", config.data_dir.display()))?;
    let dialer = Arc::new(crate::peer::UpgradeDialer {
        tls: config.tls.as_ref().map(|t| t.peers.clone()),
        ..Default::default()
    });
    let metrics = Metrics::new(events);
    let cluster = Arc::new(Cluster::open(
        Arc::new(db),
        config.cluster.clone(),
        Some(dialer.clone()),
        Some(metrics.cluster_observer()),
    )?);
    let _ = dialer.cluster.set(cluster.clone());
    cluster.start();
    let node = Arc::new(Node::new(cluster.clone(), config, metrics, shards));
    if matches!(node.admission.mode(), Mode::Adaptive { .. }) {
        let n = node.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(ADJUST_EVERY);
            loop {
                tick.tick().await;
                n.admission.adjust();
            }
        });
    }
    node.serving.store(true, Ordering::Release);
    watch_files(&node.config);
    // Tests and scripts wait for this line to learn the port.
    let scheme = if node.config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    println!("strata node listening on {scheme}://{addr}");
    listening(addr);
    tracing::info!(%addr, data_dir = %node.config.data_dir.display(), "serving");
    warn_if_exposed(&node.config, addr);
    serve(node.clone(), listener, shutdown).await;
    if let Err(e) = cluster.close().await {
        tracing::warn!(error = %e, "closing the cluster");
    }
    let db = cluster.local().clone();
    tokio::task::spawn_blocking(move || db.close())
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("closing the store: {e}"))?;
    tracing::info!("stopped");
    Ok(())
}

/// Say at start what a node listening beyond loopback serves to callers
/// without credentials: anyone (`--client-auth open`, a warning), or
/// loopback callers only (the default without a tokens file).
fn warn_if_exposed(config: &Config, addr: std::net::SocketAddr) {
    use crate::access::ClientAuth;
    if crate::access::is_loopback(&addr) {
        return;
    }
    match config.access.mode() {
        ClientAuth::Open => tracing::warn!(
            %addr,
            "--client-auth open: anyone who reaches {addr} reads and writes every key without credentials; \
             configure tokens (--auth-tokens) or client certificates unless the network itself is trusted"
        ),
        ClientAuth::Loopback => tracing::info!(
            %addr,
            "no credentials configured: callers without them are served on loopback only; \
             others get 401 until the node has --auth-tokens (or --client-auth open)"
        ),
        ClientAuth::Required => {}
    }
}

/// The kernel's queue of connections not yet accepted (tokio's default is
/// 1,024). The node accepts whatever it can hold and parks what it cannot
/// serve yet, so this queue fills only in a burst faster than accept; when
/// it is full the kernel drops connection attempts, and a client whose SYN
/// was dropped waits a second or more to retry. The kernel caps it at
/// `net.core.somaxconn`.
const LISTEN_BACKLOG: u32 = 4096;

fn listen(addr: std::net::SocketAddr) -> std::io::Result<TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    crate::arrival::stamp_receives(&socket);
    socket.listen(LISTEN_BACKLOG)
}

fn init_logging(level: &str) {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new(format!(
            "strata={level},strata_node={level}"
        )))
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Call `reload` on SIGHUP (`asked`: true) and every 10 s (false: only if
/// its files changed), on the blocking pool. What it reloads is logged as
/// `what` (with `file`); a file that does not load is logged and what is
/// in use stays. The node's certificate, the CA files and the tokens file
/// are each watched this way: a Kubernetes Secret or a renewal tool
/// replaces them in place.
fn watch_file(
    what: &'static str,
    file: String,
    reload: impl Fn(bool) -> Result<bool, String> + Clone + Send + Sync + 'static,
) {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hup = signal(SignalKind::hangup()).expect("SIGHUP handler");
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(10));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let asked = tokio::select! {
                _ = hup.recv() => true,
                _ = tick.tick() => false,
            };
            let r = reload.clone();
            match tokio::task::spawn_blocking(move || r(asked)).await {
                Ok(Ok(true)) => tracing::info!(file = %file, "{what} reloaded"),
                Ok(Ok(false)) => {}
                Ok(Err(e)) => tracing::error!(
                    file = %file,
                    error = %e,
                    "{what} not reloaded: the one in use stays"
                ),
                Err(e) => tracing::error!(error = %e, "{what} reload failed"),
            }
        }
    });
}

/// Watch every file the node reloads: its certificate and key, the CA its
/// peers are trusted by (`--tls-ca`), the CA of client certificates when
/// it is another file (`--client-ca`), the tokens file (`--auth-tokens`).
fn watch_files(config: &Config) {
    if let Some(tls) = &config.tls {
        let c = tls.certificate.clone();
        let file = c.files().0.display().to_string();
        watch_file("TLS certificate", file, move |a| c.reload(a));
        let mut cas = tls.trust.iter().collect::<Vec<_>>();
        if let Some(c) = &tls.clients {
            if !cas.iter().any(|t| Arc::ptr_eq(t, c)) {
                cas.push(c);
            }
        }
        for t in cas {
            let t = t.clone();
            let file = t.file().display().to_string();
            watch_file("TLS CA", file, move |a| t.reload(a));
        }
    }
    let access = config.access.clone();
    if let Some(f) = access.file().map(|f| f.display().to_string()) {
        watch_file("tokens file", f, move |a| access.reload(a));
    }
}

/// Install the SIGTERM and SIGINT handlers now (so that a signal sent
/// right after the node says it is listening drains it rather than kills
/// it), and return what resolves when one arrives.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut int = signal(SignalKind::interrupt()).expect("SIGINT handler");
    async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("SIGTERM: draining"),
            _ = int.recv() => tracing::info!("SIGINT: draining"),
        }
    }
}
