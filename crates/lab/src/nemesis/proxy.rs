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

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{oneshot, watch};

/// Most bytes read from a new connection while looking for the end of its
/// request head.
const MAX_PEEK: usize = 16 * 1024;
/// How long a new connection may take to send its head; after that it is
/// relayed untagged.
const PEEK_TIMEOUT: Duration = Duration::from_secs(2);
const BUF: usize = 32 * 1024;

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

async fn accept_loop(
    listener: TcpListener,
    route: Arc<Route>,
    shared: Arc<Shared>,
    upstream: SocketAddr,
) {
    loop {
        match listener.accept().await {
            Ok((sock, _)) => {
                let _ = sock.set_nodelay(true);
                route.accepted.fetch_add(1, Ordering::Relaxed);
                tokio::spawn(relay(sock, route.clone(), shared.clone(), upstream));
            }
            // Out of descriptors and the like: wait, do not spin.
            Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// One accepted connection, from its head to its close.
async fn relay(
    mut client: TcpStream,
    route: Arc<Route>,
    shared: Arc<Shared>,
    upstream: SocketAddr,
) {
    let conn = shared.register(&route);
    let mut rx = conn.state.subscribe();
    let mut head = Vec::with_capacity(1024);
    read_head(&mut client, &mut head, &mut rx).await;
    shared.tag(&conn, header(&head, "x-strata-from"));
    let state = *rx.borrow_and_update();
    match state {
        State::Closed => {
            let _ = client.set_zero_linger();
        }
        State::BlackHole => {
            route
                .dropped
                .fetch_add(head.len() as u64, Ordering::Relaxed);
            let (r, w) = client.into_split();
            pump(r, None, rx, &route).await;
            w.forget();
        }
        State::Forward => {
            let Ok(up) = TcpStream::connect(upstream).await else {
                // The node is down: the dialler sees a reset, as it would
                // from the node's own closed port.
                let _ = client.set_zero_linger();
                return;
            };
            let _ = up.set_nodelay(true);
            let (cr, cw) = client.into_split();
            let (ur, mut uw) = up.into_split();
            if *rx.borrow_and_update() == State::Forward && uw.write_all(&head).await.is_ok() {
                route
                    .forwarded
                    .fetch_add(head.len() as u64, Ordering::Relaxed);
            } else {
                route
                    .dropped
                    .fetch_add(head.len() as u64, Ordering::Relaxed);
            }
            let rx2 = conn.state.subscribe();
            // Each pump owns the write half it writes to; on a proxy close
            // it forgets it so that no FIN goes before the reset.
            tokio::join!(
                pump(cr, Some(uw), rx, &route),
                pump(ur, Some(cw), rx2, &route)
            );
        }
    }
    drop(conn);
}

/// Read the start of a connection into `head`: up to the end of an HTTP
/// request head, `MAX_PEEK` bytes, end of stream, `PEEK_TIMEOUT`, or the
/// proxy closing the connection, whichever comes first.
async fn read_head(s: &mut TcpStream, head: &mut Vec<u8>, rx: &mut watch::Receiver<State>) {
    let deadline = tokio::time::sleep(PEEK_TIMEOUT);
    tokio::pin!(deadline);
    let mut b = [0u8; 4096];
    while head.len() < MAX_PEEK && !head.windows(4).any(|w| w == b"\r\n\r\n") {
        tokio::select! {
            _ = &mut deadline => return,
            _ = rx.wait_for(|s| *s == State::Closed) => return,
            r = s.read(&mut b[..(MAX_PEEK - head.len()).min(4096)]) => match r {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&b[..n]),
            },
        }
    }
}

/// The value of header `name` in the request head at the start of `head`.
fn header(head: &[u8], name: &str) -> Option<String> {
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")?;
    let text = std::str::from_utf8(&head[..end]).ok()?;
    text.split("\r\n").skip(1).find_map(|line| {
        let (k, v) = line.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case(name)
            .then(|| v.trim().to_string())
    })
}

/// Relay `src` to `dst` while the connection relays; read and drop while
/// it is black-holed (`dst` is `None` for a connection black-holed from
/// its start); close with a reset when the proxy closes it.
async fn pump(
    mut src: OwnedReadHalf,
    mut dst: Option<OwnedWriteHalf>,
    mut rx: watch::Receiver<State>,
    route: &Route,
) {
    let mut buf = vec![0u8; BUF];
    let mut src_open = true;
    loop {
        if *rx.borrow_and_update() == State::Closed {
            let _ = src.as_ref().set_zero_linger();
            if let Some(d) = dst {
                let _ = d.as_ref().set_zero_linger();
                d.forget();
            }
            return;
        }
        tokio::select! {
            r = rx.changed() => {
                if r.is_err() {
                    return;
                }
            }
            r = src.read(&mut buf), if src_open => {
                // The state now, not before the read: bytes that arrive
                // after a partition are never relayed.
                let st = *rx.borrow();
                match r {
                    Ok(n) if n > 0 && st == State::Forward => {
                        let d = dst.as_mut().expect("a relaying connection has a destination");
                        let wrote = tokio::select! {
                            biased;
                            _ = rx.wait_for(|s| *s != State::Forward) => None,
                            r = d.write_all(&buf[..n]) => Some(r.is_ok()),
                        };
                        match wrote {
                            Some(true) => {
                                route.forwarded.fetch_add(n as u64, Ordering::Relaxed);
                            }
                            Some(false) => return,
                            None => {
                                route.dropped.fetch_add(n as u64, Ordering::Relaxed);
                            }
                        }
                    }
                    Ok(n) if n > 0 => {
                        route.dropped.fetch_add(n as u64, Ordering::Relaxed);
                    }
                    // End of stream or an error.
                    _ if st == State::Forward => {
                        if let Some(d) = dst.as_mut() {
                            let _ = d.shutdown().await;
                        }
                        return;
                    }
                    // Black-holed: the other side hears nothing of it.
                    _ => src_open = false,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{ErrorKind, Read, Write};
    use std::net::{TcpListener as StdListener, TcpStream as StdStream};
    use std::time::Instant;

    const QUIET: Duration = Duration::from_millis(300);

    /// A node stand-in: a listener whose connections the test accepts.
    struct Upstream {
        l: StdListener,
    }

    impl Upstream {
        fn new() -> Upstream {
            let l = StdListener::bind("127.0.0.1:0").unwrap();
            l.set_nonblocking(true).unwrap();
            Upstream { l }
        }

        fn addr(&self) -> SocketAddr {
            self.l.local_addr().unwrap()
        }

        /// The next relayed connection, if one comes within `within`.
        fn accept(&self, within: Duration) -> Option<StdStream> {
            let end = Instant::now() + within;
            loop {
                match self.l.accept() {
                    Ok((s, _)) => {
                        s.set_nonblocking(false).unwrap();
                        s.set_read_timeout(Some(QUIET)).unwrap();
                        return Some(s);
                    }
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        if Instant::now() > end {
                            return None;
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
    }

    fn head(from: Option<&str>) -> String {
        match from {
            Some(f) => format!(
                "GET /v0/internal HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: strata-internal/0\r\nx-strata-from: {f}\r\n\r\n"
            ),
            None => "GET /v0/status HTTP/1.1\r\nHost: x\r\n\r\n".into(),
        }
    }

    fn dial(route: &str, from: Option<&str>) -> StdStream {
        let mut s = StdStream::connect(route.strip_prefix("http://").unwrap()).unwrap();
        s.set_read_timeout(Some(QUIET)).unwrap();
        s.write_all(head(from).as_bytes()).unwrap();
        s
    }

    /// A connection through `route` from `from`, and the node's end of it.
    fn pair(route: &str, up: &Upstream, from: Option<&str>) -> (StdStream, StdStream) {
        let c = dial(route, from);
        let mut n = up.accept(Duration::from_secs(5)).expect("relayed");
        let h = head(from);
        let mut got = vec![0u8; h.len()];
        n.read_exact(&mut got).unwrap();
        assert_eq!(got, h.as_bytes());
        (c, n)
    }

    /// Whether `msg` written on `a` arrives on `b`.
    fn passes(a: &mut StdStream, b: &mut StdStream, msg: &[u8]) -> bool {
        a.write_all(msg).unwrap();
        let mut got = vec![0u8; msg.len()];
        match b.read_exact(&mut got) {
            Ok(()) => {
                assert_eq!(got, msg);
                true
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => false,
            Err(e) => panic!("connection broke instead of going silent: {e}"),
        }
    }

    fn both_ways(c: &mut StdStream, n: &mut StdStream) -> (bool, bool) {
        (passes(c, n, b"ping"), passes(n, c, b"pong"))
    }

    /// Whether `s` is closed (end of stream or reset) within two seconds.
    fn closed(s: &mut StdStream) -> bool {
        let end = Instant::now() + Duration::from_secs(2);
        let mut b = [0u8; 64];
        while Instant::now() < end {
            match s.read(&mut b) {
                Ok(0) => return true,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => return true,
            }
        }
        false
    }

    #[test]
    fn relays_both_ways_and_counts() {
        let p = FaultProxy::start().unwrap();
        let up = Upstream::new();
        let a = p
            .bind_route("127.0.0.1:0".parse().unwrap(), up.addr())
            .unwrap();
        let (mut c, mut n) = pair(&a, &up, None);
        assert_eq!(both_ways(&mut c, &mut n), (true, true));
        // The counter moves just after the bytes do.
        let want = head(None).len() as u64 + 8;
        let end = Instant::now() + Duration::from_secs(2);
        while p.stats(&a).unwrap().bytes_forwarded < want && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
        let s = p.stats(&a).unwrap();
        assert_eq!(s.accepted, 1);
        assert_eq!(s.open, 1);
        assert_eq!(s.bytes_forwarded, want);
        assert_eq!(s.bytes_dropped, 0);
        // A close on one side reaches the other.
        drop(n);
        assert!(closed(&mut c));
    }

    #[test]
    fn a_partition_silences_the_node_s_connections_both_ways_and_a_heal_restores() {
        let p = FaultProxy::start().unwrap();
        let (up_a, up_b) = (Upstream::new(), Upstream::new());
        let any = "127.0.0.1:0".parse().unwrap();
        let a = p.bind_route(any, up_a.addr()).unwrap();
        let b = p.bind_route(any, up_b.addr()).unwrap();
        let c_url = "http://127.0.0.1:1";

        let (mut a_to_b, mut a_to_b_n) = pair(&b, &up_b, Some(&a));
        let (mut b_to_a, mut b_to_a_n) = pair(&a, &up_a, Some(&b));
        let (mut c_to_b, mut c_to_b_n) = pair(&b, &up_b, Some(c_url));
        let (mut client_b, mut client_b_n) = pair(&b, &up_b, None);
        for (x, y) in [
            (&mut a_to_b, &mut a_to_b_n),
            (&mut b_to_a, &mut b_to_a_n),
            (&mut c_to_b, &mut c_to_b_n),
            (&mut client_b, &mut client_b_n),
        ] {
            assert_eq!(both_ways(x, y), (true, true));
        }

        p.partition(&format!("{a}/"), Fault::BlackHole);
        assert_eq!(p.fault(&a), Some(Fault::BlackHole));
        // From A and to A: silent both ways, and still open.
        assert_eq!(both_ways(&mut a_to_b, &mut a_to_b_n), (false, false));
        assert_eq!(both_ways(&mut b_to_a, &mut b_to_a_n), (false, false));
        // Neither: untouched.
        assert_eq!(both_ways(&mut c_to_b, &mut c_to_b_n), (true, true));
        assert_eq!(both_ways(&mut client_b, &mut client_b_n), (true, true));
        // A new connection from A is accepted, and goes nowhere.
        let mut late = dial(&b, Some(&a));
        assert!(up_b.accept(QUIET).is_none());
        let mut b1 = [0u8; 1];
        assert!(late.write_all(b"more").is_ok());
        assert!(matches!(
            late.read(&mut b1).map_err(|e| e.kind()),
            Err(ErrorKind::WouldBlock | ErrorKind::TimedOut)
        ));
        // So is a new one to A, tagged or not.
        let mut late_to_a = dial(&a, None);
        assert!(up_a.accept(QUIET).is_none());

        let (sa, sb) = (p.stats(&a).unwrap(), p.stats(&b).unwrap());
        assert_eq!((sa.open, sa.black_holed), (2, 2));
        assert_eq!((sb.open, sb.black_holed), (4, 2));
        assert!(sa.bytes_dropped >= 8, "{sa:?}");
        assert!(sb.bytes_dropped >= 8 + 4, "{sb:?}");

        p.heal(&a);
        assert_eq!(p.fault(&a), None);
        // The black-holed connections are closed, so the nodes reconnect.
        for s in [
            &mut a_to_b,
            &mut a_to_b_n,
            &mut b_to_a,
            &mut b_to_a_n,
            &mut late,
            &mut late_to_a,
        ] {
            assert!(closed(s));
        }
        assert_eq!(both_ways(&mut c_to_b, &mut c_to_b_n), (true, true));
        assert_eq!(both_ways(&mut client_b, &mut client_b_n), (true, true));
        let (mut again, mut again_n) = pair(&b, &up_b, Some(&a));
        assert_eq!(both_ways(&mut again, &mut again_n), (true, true));
        let sb = p.stats(&b).unwrap();
        assert_eq!(sb.black_holed, 0);
        assert_eq!(sb.closed_by_proxy, 2);
    }

    #[test]
    fn a_reset_partition_closes_at_once_and_refuses_until_healed() {
        let p = FaultProxy::start().unwrap();
        let (up_a, up_b) = (Upstream::new(), Upstream::new());
        let any = "127.0.0.1:0".parse().unwrap();
        let a = p.bind_route(any, up_a.addr()).unwrap();
        let b = p.bind_route(any, up_b.addr()).unwrap();
        let (mut a_to_b, mut a_to_b_n) = pair(&b, &up_b, Some(&a));
        let (mut client_b, mut client_b_n) = pair(&b, &up_b, None);

        p.partition(&a, Fault::Reset);
        assert!(closed(&mut a_to_b));
        assert!(closed(&mut a_to_b_n));
        assert_eq!(both_ways(&mut client_b, &mut client_b_n), (true, true));
        let mut refused = dial(&a, None);
        assert!(closed(&mut refused));
        assert!(up_a.accept(QUIET).is_none());

        p.heal_all();
        let (mut x, mut y) = pair(&a, &up_a, Some(&b));
        assert_eq!(both_ways(&mut x, &mut y), (true, true));
    }

    #[test]
    fn finds_the_dialler_in_the_head() {
        let h = b"GET /v0/internal HTTP/1.1\r\nUpgrade: strata-internal/0\r\nX-Strata-From:  http://127.0.0.1:7001 \r\n\r\nbinary";
        assert_eq!(
            header(h, "x-strata-from").as_deref(),
            Some("http://127.0.0.1:7001")
        );
        assert_eq!(
            header(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", "x-strata-from"),
            None
        );
        assert_eq!(
            header(b"GET / HTTP/1.1\r\nX-Strata-From: u\r\n", "x-strata-from"),
            None
        );
    }
}
