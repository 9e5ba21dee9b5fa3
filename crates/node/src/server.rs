//! The node's process: runtime, listener, connections with header and body
//! timeouts, and graceful shutdown on SIGTERM/SIGINT (status turns 503, the
//! listener closes, in-flight requests get `shutdown_timeout` to finish, the
//! engine closes); `spawn` runs the same node in this process with a
//! shutdown of the caller's (the node's own tests). Owns the lifecycle;
//! must not interpret requests.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use strata_cluster::Cluster;
use strata_engine::Db;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::access::Peer;
use crate::admission::{Mode, ADJUST_EVERY};
use crate::api::{handle, priority_request, refuse_stale, Conn, Node};
use crate::arrival::TimedStream;
use crate::config::Config;
use crate::metrics::{EngineEvents, Metrics};
use crate::overload::{self, Guard};
use crate::shards::{Runtimes, Shards, THREAD_NAME};

/// Largest request head (request line and headers) accepted: the longest
/// URI the HTTP stack parses (65,534 bytes, which the longest key allowed
/// percent-encoded fits, `config::MAX_KEY_BYTES`) and 8 KiB of headers.
const MAX_HEAD_BYTES: usize = 72 << 10;

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
        .name("strata-node-main".into())
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

/// Connections accepted past the overload limit, unread, newest last. Each
/// holds its place under --max-connections, which bounds them; with every
/// place taken the oldest is closed to make room for the next.
#[derive(Default)]
struct Parked {
    queue: std::sync::Mutex<VecDeque<(TcpStream, OwnedSemaphorePermit)>>,
    pushed: Notify,
}

impl Parked {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(TcpStream, OwnedSemaphorePermit)>> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn push(&self, stream: TcpStream, permit: OwnedSemaphorePermit, guard: &Guard) {
        self.lock().push_back((stream, permit));
        guard.parked.fetch_add(1, Ordering::Relaxed);
        // Turning a client away for now is refusing work, as a 503 is.
        guard.note_refusal();
        self.pushed.notify_one();
    }

    fn pop_newest(&self) -> Option<(TcpStream, OwnedSemaphorePermit)> {
        self.lock().pop_back()
    }

    fn pop_oldest(&self) -> Option<(TcpStream, OwnedSemaphorePermit)> {
        self.lock().pop_front()
    }
}

/// What a connection's first request is, from its first bytes peeked
/// before it is read.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum First {
    /// A peer's internal connection or an operator's request
    /// (`api::priority_request`): served whatever the load.
    Priority,
    /// Anything else: a client's request (or a closed connection).
    Client,
    /// Nothing has arrived yet.
    Unread,
}

fn first_request(stream: &TcpStream, tls: bool) -> First {
    if tls {
        // Under TLS the request is encrypted; the ClientHello is not, and
        // members and operators offer the priority protocol in it.
        let mut hello = [0u8; 4096];
        return match crate::arrival::peek(stream, &mut hello) {
            None => First::Unread,
            Some(n) => match strata_tls::hello(&hello[..n]) {
                strata_tls::Hello::Priority => First::Priority,
                strata_tls::Hello::Incomplete if n > 0 => First::Unread,
                _ => First::Client,
            },
        };
    }
    let mut head = [0u8; 24];
    match crate::arrival::peek(stream, &mut head) {
        None => First::Unread,
        Some(n) if priority_request(&head[..n]) => First::Priority,
        Some(_) => First::Client,
    }
}

/// A connection accepted while the node turns client connections away:
/// served at once if its first request is a priority one, parked
/// otherwise. One whose request has not arrived yet waits for it (at most
/// the header timeout) on a task of its own before it is sorted.
fn sort_accepted(
    node: &Arc<Node>,
    parked: &Arc<Parked>,
    stream: TcpStream,
    permit: OwnedSemaphorePermit,
    stop_rx: tokio::sync::watch::Receiver<bool>,
) {
    let tls = node.config.tls.is_some();
    match first_request(&stream, tls) {
        First::Priority => start(node, stream, permit, stop_rx, First::Priority),
        First::Client => parked.push(stream, permit, &node.guard),
        First::Unread => {
            let (node, parked) = (node.clone(), parked.clone());
            tokio::spawn(async move {
                let first = first_arrival(&stream, tls, node.config.header_timeout).await;
                if first == First::Priority || (node.guard.has_room() && parked.is_empty()) {
                    start(&node, stream, permit, stop_rx, first);
                } else {
                    parked.push(stream, permit, &node.guard);
                }
            });
        }
    }
}

/// Wait (at most `limit`) for enough of a connection's first bytes to sort
/// it: readiness may be reported before anything can be read (or, under
/// TLS, before the whole ClientHello has come), so each wake that still
/// finds it unread clears the readiness and waits again.
async fn first_arrival(stream: &TcpStream, tls: bool, limit: std::time::Duration) -> First {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.readable()).await {
            Ok(Ok(())) => {}
            _ => return first_request(stream, tls),
        }
        match first_request(stream, tls) {
            First::Unread => {
                let _ = stream.try_io(tokio::io::Interest::READABLE, || {
                    Err::<(), _>(std::io::ErrorKind::WouldBlock.into())
                });
            }
            first => return first,
        }
    }
}

/// Serve one accepted connection on its own task.
fn start(
    node: &Arc<Node>,
    stream: TcpStream,
    permit: OwnedSemaphorePermit,
    stop_rx: tokio::sync::watch::Receiver<bool>,
    first: First,
) {
    let guard = &node.guard;
    // A request that waited (in the kernel's backlog, or parked) past the
    // longest wait is not served: its connection gets a 503 and closes
    // (at the cost of one answer; the node does this only when it has
    // room). A priority request is served however long it waited.
    // (Peeked only for a connection that would be refused.)
    let stale = overload::unread_age(&stream).filter(|&age| {
        age > guard.stale_after()
            && first != First::Priority
            && first_request(&stream, node.config.tls.is_some()) != First::Priority
    });
    let open = Arc::new(guard.opened());
    let _ = stream.set_nodelay(true);
    let addr = stream.peer_addr().ok();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
    let awaiting = Arc::new(node.heads.register(
        addr.map_or(std::net::Ipv4Addr::UNSPECIFIED.into(), |a| {
            a.ip().to_canonical()
        }),
        fd,
    ));
    let peer = Arc::new(Peer::new(addr, None));
    let node2 = node.clone();
    let (header_timeout, tls) = (
        node.config.header_timeout,
        node.config.tls.as_ref().map(|t| t.server.clone()),
    );
    // Idle before its first head for this long, a connection gives up its
    // place under the overload limit (the wait target: a request that
    // waits that long in its socket is already late).
    let idle_after = node
        .guard
        .target()
        .unwrap_or(std::time::Duration::from_millis(5));
    node.shards.serve(stream, move |stream| async move {
        let _permit = permit;
        let (stream, arrival) = TimedStream::new(stream);
        let (peer2, open2, awaiting2) = (peer.clone(), open.clone(), awaiting.clone());
        let service = service_fn(move |req| {
            let node = node2.clone();
            let arrival = arrival.clone();
            if !awaiting2.has_arrived() {
                awaiting2.arrived();
                open2.retake();
            }
            let conn = Conn {
                peer: peer2.clone(),
                open: open2.clone(),
            };
            async move {
                match stale {
                    Some(age) => Ok(refuse_stale(&node, age, req).await),
                    None => handle(node, req, arrival, conn).await,
                }
            }
        });
        let serve = async {
            match tls {
                None => serve_http(stream, service, header_timeout, stop_rx).await,
                Some(server) => {
                    // The handshake gets the time a request's head gets.
                    let acceptor = tokio_rustls::TlsAcceptor::from(server);
                    match tokio::time::timeout(header_timeout, acceptor.accept(stream)).await {
                        Ok(Ok(tls)) => {
                            // A client certificate was verified in the
                            // handshake: its subject names the caller.
                            let cert = tls.get_ref().1.peer_certificates();
                            if let Some(s) =
                                cert.and_then(|c| c.first()).and_then(strata_tls::subject)
                            {
                                let _ = peer.cert.set(s);
                            }
                            serve_http(tls, service, header_timeout, stop_rx).await
                        }
                        Ok(Err(e)) => {
                            tracing::debug!(error = %e, "TLS handshake failed");
                            Ok(())
                        }
                        Err(_) => {
                            tracing::debug!("TLS handshake timed out");
                            Ok(())
                        }
                    }
                }
            }
        };
        let r = tokio::select! {
            r = serve => r,
            _ = watch_head(&awaiting, &open, fd, idle_after) => {
                tracing::debug!("closed: idle before its first request head while too many were");
                Ok(())
            }
        };
        if let Err(e) = r {
            tracing::debug!(error = %e, "connection ended with an error");
        }
    });
}

/// Until a connection's first request head is whole: give up its place
/// under the overload limit once it idles (everything it sent read, the
/// head still not whole) for `idle_after`; return if the registry asks for
/// it to close (`heads`). Never returns once the head has arrived.
async fn watch_head(
    awaiting: &crate::heads::Awaiting,
    open: &crate::overload::Open,
    fd: std::os::fd::RawFd,
    idle_after: std::time::Duration,
) {
    let mut wait = idle_after;
    loop {
        tokio::select! {
            _ = awaiting.closing() => return,
            _ = tokio::time::sleep(wait) => {}
        }
        if awaiting.has_arrived() {
            break;
        }
        if crate::heads::unread(fd) == Some(0) {
            open.release();
            // Nothing more to do but close when asked.
            return awaiting.closing().await;
        }
        // Bytes wait for the runtime: the node is behind, and the
        // connection counts; look again later.
        wait = (wait * 2).min(std::time::Duration::from_secs(1));
    }
    std::future::pending::<()>().await
}

/// HTTP/1.1 on one connection (plain or TLS) until it closes, or until
/// `stop` asks it to finish its request and close.
async fn serve_http<I, S>(
    io: I,
    service: S,
    header_timeout: std::time::Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<(), hyper::Error>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::HttpService<hyper::body::Incoming> + Send + 'static,
    S::Future: Send + 'static,
    S::ResBody: Send + 'static,
    <S::ResBody as hyper::body::Body>::Data: Send,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    // With upgrades: peers open internal connections on this port.
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(MAX_HEAD_BYTES)
        .keep_alive(true)
        .serve_connection(TokioIo::new(io), service)
        .with_upgrades();
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => r,
        _ = async { let _ = stop.wait_for(|s| *s).await; } => {
            conn.as_mut().graceful_shutdown();
            conn.await
        }
    }
}

/// Accept connections until `shutdown` resolves, then drain.
pub async fn serve(
    node: Arc<Node>,
    listener: TcpListener,
    shutdown: impl std::future::Future<Output = ()>,
) {
    let max = node.config.max_connections;
    let conns = Arc::new(Semaphore::new(max));
    // Tells every connection to finish its request and close.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    tokio::pin!(shutdown);
    let guard = node.guard.clone();
    let adjuster = tokio::spawn(guard.clone().run());
    let parked = Arc::new(Parked::default());
    let unparker = {
        let (node, parked, stop_rx) = (node.clone(), parked.clone(), stop_rx.clone());
        tokio::spawn(async move {
            loop {
                // A parked connection first, then room for it: nothing
                // polls while nothing is parked.
                if parked.is_empty() {
                    parked.pushed.notified().await;
                    continue;
                }
                if !node.guard.wait_room().await {
                    continue;
                }
                // The newest parked connection first: its request is the
                // freshest.
                if let Some((stream, permit)) = parked.pop_newest() {
                    start(&node, stream, permit, stop_rx.clone(), First::Client);
                }
            }
        })
    };
    loop {
        // Every place taken while connections are parked: the oldest parked
        // one, whose request has waited longest (past any deadline by now),
        // is closed unread and its place goes to the next connection, which
        // may be a peer or an operator (or a fresher request).
        let permit = match conns.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) => match parked.pop_oldest() {
                Some((oldest, p)) => {
                    drop(oldest);
                    guard.evicted.fetch_add(1, Ordering::Relaxed);
                    p
                }
                None => tokio::select! {
                    p = conns.clone().acquire_owned() => p.expect("connection semaphore"),
                    _ = &mut shutdown => break,
                },
            },
        };
        let (stream, _) = tokio::select! {
            r = listener.accept() => match r {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        // Past the overload limit a client's connection is parked,
        // unread: it costs the node an accept and a peek, and the kernel
        // never drops a client's connection attempt (a client whose SYN
        // was dropped waits a second or more to retry, idling a node that
        // has room again long before).
        if guard.has_room() && parked.is_empty() {
            start(&node, stream, permit, stop_rx.clone(), First::Client);
        } else {
            sort_accepted(&node, &parked, stream, permit, stop_rx.clone());
        }
    }
    unparker.abort();
    drop(parked);
    adjuster.abort();
    node.serving.store(false, Ordering::Release);
    drop(listener);
    let _ = stop_tx.send(true);
    tokio::select! {
        _ = conns.acquire_many(max as u32) => tracing::info!("all connections closed"),
        _ = tokio::time::sleep(node.config.shutdown_timeout) => {
            tracing::warn!("shutdown timeout: closing remaining connections")
        }
    }
}
