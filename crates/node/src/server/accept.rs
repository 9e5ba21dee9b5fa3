//! A node's connections: accepted within `--max-connections` (past the
//! overload guard's limit, parked unread and the oldest closed for the
//! newest), sorted by their first request (a peer's or an operator's goes
//! first, a client's waits its turn), refused with a 503 when it waited
//! past the longest wait, and served as HTTP/1.1 (TLS when configured)
//! with header and body timeouts until the node stops. Owns accepting and
//! serving connections; must not interpret requests (that is `api`).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::access::Peer;
use crate::api::{handle, priority_request, refuse_stale, Conn, Node};
use crate::arrival::TimedStream;
use crate::overload::{self, Guard};

/// Largest request head (request line and headers) accepted: the longest
/// URI the HTTP stack parses (65,534 bytes, which the longest key allowed
/// percent-encoded fits, `config::MAX_KEY_BYTES`) and 8 KiB of headers.
const MAX_HEAD_BYTES: usize = 72 << 10;

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
