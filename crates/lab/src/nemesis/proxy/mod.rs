//! A fault-injecting TCP proxy for the internal traffic of a local
//! cluster: real sockets, real silence. Each route listens on its own
//! loopback port and relays every connection to one node's real port; the
//! route's URL is what that node advertises, so every connection *to* the
//! node passes through it. The proxy reads the head of each connection (up
//! to the end of an HTTP request head) for `X-Strata-From`, which says
//! which node dialled; ordinary clients carry none.
//!
//! Partitioning a node (by its advertised URL) black-holes every relayed
//! connection from it or to it: both directions stop, the bytes read are
//! counted and dropped, the sockets stay open and nothing arrives, as when
//! a network splits. New such connections are accepted and black-holed
//! too. Healing closes the black-holed connections with a reset (a stream
//! with a hole in it cannot resume), so the nodes reconnect, and relays
//! again. A [`Fault::Reset`] partition closes the node's connections at
//! once instead, and every new one as soon as it is tagged.
//!
//! Owns the relaying and the faults; must not know the internal protocol
//! beyond the request head's `X-Strata-From`, nor start or signal nodes.
//!
//! Here: routes, faults and counters; `relay` the bytes' way.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::{oneshot, watch};

/// Most bytes read from a new connection while looking for the end of its
/// request head.
const MAX_PEEK: usize = 16 * 1024;
/// How long a new connection may take to send its head; after that it is
/// relayed untagged.
const PEEK_TIMEOUT: Duration = Duration::from_secs(2);
const BUF: usize = 32 * 1024;

mod relay;

use relay::accept_loop;

/// What a partition does to a node's connections.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Stop relaying both ways; the connections stay open and silent.
    BlackHole,
    /// Close them with a reset, and every new one once tagged.
    Reset,
}

/// One route's counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkStats {
    /// Connections accepted since the route started.
    pub accepted: u64,
    /// Connections open now.
    pub open: u64,
    /// Of those, black-holed now.
    pub black_holed: u64,
    /// Connections the proxy closed (a reset partition, or a heal).
    pub closed_by_proxy: u64,
    /// Bytes relayed, both directions.
    pub bytes_forwarded: u64,
    /// Bytes read and dropped by a partition, both directions.
    pub bytes_dropped: u64,
}

/// The proxy: a tokio runtime on a thread of its own, the routes it
/// serves, the faults in force. Dropping it closes every route and
/// connection.
pub struct FaultProxy {
    shared: Arc<Shared>,
    handle: tokio::runtime::Handle,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

struct Shared {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// By normalised URL.
    faults: HashMap<String, Fault>,
    routes: Vec<Arc<Route>>,
    conns: Vec<Weak<Conn>>,
}

struct Route {
    url: String,
    accepted: AtomicU64,
    closed_by_proxy: AtomicU64,
    forwarded: AtomicU64,
    dropped: AtomicU64,
}

/// A relayed connection. Its state only moves forward: relaying, then
/// black-holed, then closed (or straight to closed).
struct Conn {
    route: Arc<Route>,
    /// The dialling node's URL once the head is read.
    from: Mutex<Option<String>>,
    state: watch::Sender<State>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Forward,
    BlackHole,
    Closed,
}

impl FaultProxy {
    /// Start the proxy's runtime thread, with no routes yet.
    pub fn start() -> io::Result<FaultProxy> {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let handle = rt.handle().clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("strata-fault-proxy".into())
            .spawn(move || {
                rt.block_on(async {
                    let _ = stopped.await;
                });
                // Dropping the runtime drops every task, and with them
                // every socket.
                drop(rt);
            })?;
        Ok(FaultProxy {
            shared: Arc::new(Shared {
                inner: Mutex::new(Inner::default()),
            }),
            handle,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// Relay connections accepted on `listener` to `upstream`. Returns the
    /// route's URL, `http://` and the listener's address: the URL the node
    /// behind it advertises, which names it in [`FaultProxy::partition`].
    pub fn add_route(
        &self,
        listener: std::net::TcpListener,
        upstream: SocketAddr,
    ) -> io::Result<String> {
        let url = format!("http://{}", listener.local_addr()?);
        listener.set_nonblocking(true)?;
        let listener = {
            let _g = self.handle.enter();
            TcpListener::from_std(listener)?
        };
        let route = Arc::new(Route {
            url: normalise(&url),
            accepted: AtomicU64::new(0),
            closed_by_proxy: AtomicU64::new(0),
            forwarded: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        });
        self.shared.lock().routes.push(route.clone());
        self.handle
            .spawn(accept_loop(listener, route, self.shared.clone(), upstream));
        Ok(url)
    }

    /// Bind `listen` and relay what it accepts to `upstream`.
    pub fn bind_route(&self, listen: SocketAddr, upstream: SocketAddr) -> io::Result<String> {
        self.add_route(std::net::TcpListener::bind(listen)?, upstream)
    }

    /// Cut the node advertised as `url` off: every connection from it or
    /// to it suffers `fault`, the open ones at once, new ones as they come.
    pub fn partition(&self, url: &str, fault: Fault) {
        let mut g = self.shared.lock();
        g.faults.insert(normalise(url), fault);
        g.settle_all();
    }

    /// Lift the partition of `url`. Its black-holed connections are closed
    /// (unless another partition still holds them) and new ones relayed.
    pub fn heal(&self, url: &str) {
        let mut g = self.shared.lock();
        g.faults.remove(&normalise(url));
        g.settle_all();
    }

    /// Lift every partition.
    pub fn heal_all(&self) {
        let mut g = self.shared.lock();
        g.faults.clear();
        g.settle_all();
    }

    /// The fault in force for `url`, if any.
    pub fn fault(&self, url: &str) -> Option<Fault> {
        self.shared.lock().faults.get(&normalise(url)).copied()
    }

    /// The counters of the route whose URL is `url`.
    pub fn stats(&self, url: &str) -> Option<LinkStats> {
        let url = normalise(url);
        let g = self.shared.lock();
        let route = g.routes.iter().find(|r| r.url == url)?;
        let mut s = LinkStats {
            accepted: route.accepted.load(Ordering::Relaxed),
            closed_by_proxy: route.closed_by_proxy.load(Ordering::Relaxed),
            bytes_forwarded: route.forwarded.load(Ordering::Relaxed),
            bytes_dropped: route.dropped.load(Ordering::Relaxed),
            ..LinkStats::default()
        };
        for c in g.conns.iter().filter_map(Weak::upgrade) {
            if c.route.url == url {
                let st = *c.state.borrow();
                if st != State::Closed {
                    s.open += 1;
                }
                if st == State::BlackHole {
                    s.black_holed += 1;
                }
            }
        }
        Some(s)
    }

    /// The routes' URLs, in the order they were added.
    pub fn routes(&self) -> Vec<String> {
        self.shared
            .lock()
            .routes
            .iter()
            .map(|r| r.url.clone())
            .collect()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn register(&self, route: &Arc<Route>) -> Arc<Conn> {
        let (state, _) = watch::channel(State::Forward);
        let conn = Arc::new(Conn {
            route: route.clone(),
            from: Mutex::new(None),
            state,
        });
        let mut g = self.lock();
        g.conns.retain(|c| c.strong_count() > 0);
        g.conns.push(Arc::downgrade(&conn));
        g.settle(&conn);
        conn
    }

    /// Record who dialled `conn`, and apply the faults that concern it.
    fn tag(&self, conn: &Conn, from: Option<String>) {
        let g = self.lock();
        *conn.from.lock().unwrap_or_else(|e| e.into_inner()) = from.map(|f| normalise(&f));
        g.settle(conn);
    }
}

impl Inner {
    fn settle_all(&mut self) {
        self.conns.retain(|c| c.strong_count() > 0);
        for c in self.conns.iter().filter_map(Weak::upgrade) {
            self.settle(&c);
        }
    }

    /// Move `conn` to the state the faults in force ask for.
    fn settle(&self, conn: &Conn) {
        let to = self.faults.get(&conn.route.url).copied();
        let from = conn
            .from
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|f| self.faults.get(f).copied());
        let fault = match (to, from) {
            (Some(Fault::Reset), _) | (_, Some(Fault::Reset)) => Some(Fault::Reset),
            (Some(_), _) | (_, Some(_)) => Some(Fault::BlackHole),
            (None, None) => None,
        };
        let cur = *conn.state.borrow();
        let next = match (cur, fault) {
            (State::Closed, _) => State::Closed,
            (_, Some(Fault::Reset)) => State::Closed,
            (State::Forward, Some(Fault::BlackHole)) => State::BlackHole,
            (State::BlackHole, None) => State::Closed,
            (s, _) => s,
        };
        if next != cur {
            if next == State::Closed {
                conn.route.closed_by_proxy.fetch_add(1, Ordering::Relaxed);
            }
            conn.state.send_replace(next);
        }
    }
}

/// URLs compare without surrounding blanks or a trailing slash.
fn normalise(url: &str) -> String {
    url.trim().trim_end_matches('/').to_string()
}

#[cfg(test)]
mod tests;
