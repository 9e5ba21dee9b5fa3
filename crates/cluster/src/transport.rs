//! Internal traffic: a bounded pool of persistent, authenticated
//! connections per peer, each carrying many replica operations at once.
//! Requests are matched to answers by id; a writer task per connection
//! drains everything queued into one buffer and one `write`, so operations
//! issued together travel together (batching without waiting). Each
//! connection has a window of operations in flight; when it is full a call
//! fails at once instead of queueing (the coordinator then keeps a hint).
//! The accepting side runs the same framing in reverse and bounds the
//! operations it works on per connection. Owns connections, framing and
//! timeouts; must not decide what a request means (that is `coordinator`
//! and the handler it is given) nor how a connection is opened (the
//! `Dialer`, which the node provides: the cluster does not speak HTTP).

use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, Semaphore};

use crate::auth::{self, Secret};
use crate::hlc::Hlc;
use crate::wire::{self, Request, Response};

/// A byte stream to a peer, however it was opened.
pub trait Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send + 'static> Stream for T {}
pub type BoxStream = Box<dyn Stream>;
pub type DialFuture<'a> = Pin<Box<dyn Future<Output = io::Result<BoxStream>> + Send + 'a>>;

/// Opens a raw internal connection to a member's URL (the node does it
/// with an HTTP upgrade carrying the secret's token).
pub trait Dialer: Send + Sync + 'static {
    fn dial<'a>(&'a self, url: &'a str) -> DialFuture<'a>;
}

/// Serves requests arriving from peers.
pub trait Handler: Send + Sync + 'static {
    fn handle(
        self: Arc<Self>,
        from: u64,
        req: Request,
    ) -> Pin<Box<dyn Future<Output = Response> + Send>>;
    /// A frame from member `from` arrived (for the failure detector).
    fn heard(&self, _from: u64) {}
}

#[derive(Clone, Copy, Debug)]
pub struct TransportConfig {
    /// Connections per peer.
    pub pool: usize,
    /// Operations in flight per connection.
    pub window: usize,
    /// Time allowed to open and authenticate a connection.
    pub connect_timeout: Duration,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            pool: 2,
            window: 1024,
            connect_timeout: Duration::from_secs(1),
        }
    }
}

#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum CallError {
    #[error("connection refused")]
    Refused,
    #[error("cannot connect: {0}")]
    Unreachable(String),
    #[error("no answer in time")]
    Timeout,
    #[error("connection lost")]
    Lost,
    #[error("too many operations in flight")]
    Overloaded,
    #[error("peer answered: {message}")]
    Remote {
        transient: bool,
        read_only: bool,
        message: String,
    },
    #[error("unexpected answer")]
    Protocol,
}

/// The connection slot of the calling thread among `n`: each thread is
/// numbered at its first call and keeps slot `number % n`. A connection is
/// opened by the first thread to need its slot and its tasks run on that
/// thread's runtime, so with one runtime per thread (the node's per-core
/// runtimes, one slot each) a call, its frame's write and the answer's
/// wake-up stay on the caller's thread.
fn thread_slot(n: usize) -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local!(static MINE: usize = NEXT.fetch_add(1, Ordering::Relaxed));
    MINE.with(|m| *m % n.max(1))
}

/// What the client side shares with every connection.
pub struct Ctx {
    pub dialer: Arc<dyn Dialer>,
    pub secret: Secret,
    pub my_id: u64,
    pub hlc: Arc<Hlc>,
    pub cfg: TransportConfig,
}

/// The connections to one peer.
pub struct Peer {
    pub url: String,
    pub id: u64,
    ctx: Arc<Ctx>,
    slots: Vec<tokio::sync::Mutex<Option<Arc<Conn>>>>,
    /// Called with every answer's arrival (failure detector).
    on_answer: Arc<dyn Fn() + Send + Sync>,
}

/// A frame waiting for a connection's writer, encoded only there,
/// straight into the buffer that goes to the socket.
enum Outgoing {
    Request(u64, Request),
    Response(u64, Response),
}

struct Conn {
    tx: mpsc::Sender<Outgoing>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Response>>>,
    next_id: AtomicU64,
    alive: AtomicBool,
    window: Arc<Semaphore>,
    /// Answers received so far.
    answers: AtomicU64,
}

impl Peer {
    pub fn new(
        url: String,
        id: u64,
        ctx: Arc<Ctx>,
        on_answer: Arc<dyn Fn() + Send + Sync>,
    ) -> Peer {
        let slots = (0..ctx.cfg.pool.max(1))
            .map(|_| tokio::sync::Mutex::new(None))
            .collect();
        Peer {
            url,
            id,
            ctx,
            slots,
            on_answer,
        }
    }

    /// Connections open now.
    pub fn open_connections(&self) -> usize {
        self.slots
            .iter()
            .filter(|s| {
                s.try_lock()
                    .map(|c| c.as_ref().is_some_and(|c| c.alive.load(Ordering::Relaxed)))
                    .unwrap_or(true)
            })
            .count()
    }

    async fn conn(&self) -> Result<Arc<Conn>, CallError> {
        let i = thread_slot(self.slots.len());
        let mut slot = self.slots[i].lock().await;
        if let Some(c) = slot.as_ref() {
            if c.alive.load(Ordering::Acquire) {
                return Ok(c.clone());
            }
        }
        *slot = None;
        let c = tokio::time::timeout(self.ctx.cfg.connect_timeout, self.open())
            .await
            .map_err(|_| CallError::Unreachable("connect timed out".into()))??;
        *slot = Some(c.clone());
        Ok(c)
    }

    /// Open a connection; its writer and reader run as tasks of the
    /// calling thread's runtime.
    async fn open(&self) -> Result<Arc<Conn>, CallError> {
        let mut s = self
            .ctx
            .dialer
            .dial(&self.url)
            .await
            .map_err(|e| match e.kind() {
                io::ErrorKind::ConnectionRefused => CallError::Refused,
                _ => CallError::Unreachable(e.to_string()),
            })?;
        auth::dial(&mut s, &self.ctx.secret, self.ctx.my_id)
            .await
            .map_err(|e| CallError::Unreachable(e.to_string()))?;
        let (r, w) = tokio::io::split(s);
        let (tx, rx) = mpsc::channel(self.ctx.cfg.window.max(1));
        let conn = Arc::new(Conn {
            tx,
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            alive: AtomicBool::new(true),
            window: Arc::new(Semaphore::new(self.ctx.cfg.window.max(1))),
            answers: AtomicU64::new(0),
        });
        let c = conn.clone();
        let hlc_w = self.ctx.hlc.clone();
        tokio::spawn(async move {
            if let Err(e) = write_loop(w, rx, hlc_w).await {
                tracing::debug!(error = %e, "peer connection writer ended");
            }
            c.kill();
        });
        let c = conn.clone();
        let hlc = self.ctx.hlc.clone();
        let on_answer = self.on_answer.clone();
        tokio::spawn(async move {
            let r = read_answers(r, &c, &hlc, on_answer).await;
            if let Err(e) = r {
                tracing::debug!(error = %e, "peer connection reader ended");
            }
            c.kill();
        });
        Ok(conn)
    }

    /// Send one request and wait for its answer, at most `timeout`.
    pub async fn call(&self, req: Request, timeout: Duration) -> Result<Response, CallError> {
        let deadline = tokio::time::Instant::now() + timeout;
        let conn = tokio::time::timeout(timeout, self.conn())
            .await
            .map_err(|_| CallError::Timeout)??;
        let _permit = conn
            .window
            .clone()
            .try_acquire_owned()
            .map_err(|_| CallError::Overloaded)?;
        let id = conn.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        let answers = conn.answers.load(Ordering::Relaxed);
        conn.pending.lock().insert(id, tx);
        if conn.tx.send(Outgoing::Request(id, req)).await.is_err() {
            conn.pending.lock().remove(&id);
            return Err(CallError::Lost);
        }
        match tokio::time::timeout_at(deadline, rx).await {
            Ok(Ok(Response::Error {
                transient,
                read_only,
                message,
            })) => Err(CallError::Remote {
                transient,
                read_only,
                message,
            }),
            Ok(Ok(r)) => Ok(r),
            Ok(Err(_)) => Err(CallError::Lost),
            Err(_) => {
                conn.pending.lock().remove(&id);
                // Nothing at all came back on this connection while the
                // call waited: the peer is frozen or the path black-holes
                // (TCP may not say so for many minutes). Close it, so
                // that the next call dials afresh instead of queueing
                // behind a silent connection.
                if conn.answers.load(Ordering::Relaxed) == answers {
                    conn.kill();
                }
                Err(CallError::Timeout)
            }
        }
    }

    /// Close every connection (their pending calls fail with `Lost`).
    pub async fn close(&self) {
        for s in &self.slots {
            if let Some(c) = s.lock().await.take() {
                c.kill();
            }
        }
    }
}

impl Conn {
    fn kill(&self) {
        self.alive.store(false, Ordering::Release);
        // Dropping the senders fails the waiting calls with `Lost`, in
        // the order they were sent (not the map's, which is random per
        // process): the calls wake in a fixed order, as a deterministic
        // simulation needs.
        let mut waiting: Vec<_> = self.pending.lock().drain().collect();
        waiting.sort_unstable_by_key(|(id, _)| *id);
        drop(waiting);
    }
}

async fn read_answers<R: AsyncRead + Unpin>(
    mut r: R,
    conn: &Conn,
    hlc: &Hlc,
    heard: Arc<dyn Fn() + Send + Sync>,
) -> Result<(), String> {
    let mut buf = BytesMut::with_capacity(64 << 10);
    loop {
        while let Some((id, kind, their_hlc, body)) =
            wire::split_frame(&mut buf).map_err(|e| e.to_string())?
        {
            hlc.observe(their_hlc);
            let resp = wire::decode_response(kind, body).map_err(|e| e.to_string())?;
            heard();
            conn.answers.fetch_add(1, Ordering::Relaxed);
            if let Some(tx) = conn.pending.lock().remove(&id) {
                let _ = tx.send(resp);
            }
        }
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(64 << 10);
        }
        let n = r.read_buf(&mut buf).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("closed by peer".into());
        }
    }
}

/// Encode queued frames into one buffer and send them with one write,
/// until the channel closes. Each frame carries this node's clock as it
/// is when the frame is encoded.
async fn write_loop<W: AsyncWrite + Unpin>(
    mut w: W,
    mut rx: mpsc::Receiver<Outgoing>,
    hlc: Arc<Hlc>,
) -> io::Result<()> {
    let mut out = BytesMut::with_capacity(64 << 10);
    let encode = |out: &mut BytesMut, f: Outgoing| match f {
        Outgoing::Request(id, r) => wire::encode_request(out, id, hlc.peek(), &r),
        Outgoing::Response(id, r) => wire::encode_response(out, id, hlc.peek(), &r),
    };
    while let Some(first) = rx.recv().await {
        encode(&mut out, first);
        // Take what is queued; then let the tasks that are ready run once
        // (they are often about to queue more frames: the other replica
        // writes of the same requests, answers finishing together) and
        // take that too. One send per round instead of one per frame: on
        // loopback a send costs the receiver's processing as well.
        for round in 0..2 {
            while out.len() < (1 << 20) {
                match rx.try_recv() {
                    Ok(more) => encode(&mut out, more),
                    Err(_) => break,
                }
            }
            if round == 0 && out.len() < (1 << 20) {
                tokio::task::yield_now().await;
            }
        }
        w.write_all(&out).await?;
        out.clear();
    }
    w.shutdown().await
}

/// How long a peer has to answer the challenge on a new internal
/// connection.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Operations one accepted connection works on at once.
const SERVE_WINDOW: usize = 4096;

/// Serve one accepted internal connection until it closes: authenticate,
/// then answer requests (each in its own task, at most `SERVE_WINDOW` at
/// once; beyond that the connection is not read, which pushes back on the
/// sender through TCP).
pub async fn serve<S: Stream, H: Handler>(
    mut s: S,
    secret: &Secret,
    hlc: Arc<Hlc>,
    handler: Arc<H>,
) -> Result<(), String> {
    // A connection that does not finish the challenge in time is closed:
    // an upgrade token can be replayed, the answer to a fresh challenge
    // cannot, and a silent connection must not hold a place for ever.
    let from = tokio::time::timeout(HANDSHAKE_TIMEOUT, auth::accept(&mut s, secret))
        .await
        .map_err(|_| format!("no answer to the challenge within {HANDSHAKE_TIMEOUT:?}"))?
        .map_err(|e| e.to_string())?;
    let (mut r, w) = tokio::io::split(s);
    let (tx, rx) = mpsc::channel::<Outgoing>(SERVE_WINDOW);
    let writer = tokio::spawn(write_loop(w, rx, hlc.clone()));
    let permits = Arc::new(Semaphore::new(SERVE_WINDOW));
    let mut buf = BytesMut::with_capacity(64 << 10);
    let result = loop {
        let frame = match wire::split_frame(&mut buf) {
            Ok(f) => f,
            Err(e) => break Err(e.to_string()),
        };
        let Some((id, kind, their_hlc, body)) = frame else {
            if buf.capacity() - buf.len() < 4096 {
                buf.reserve(64 << 10);
            }
            match r.read_buf(&mut buf).await {
                Ok(0) => break Ok(()),
                Ok(_) => continue,
                Err(e) => break Err(e.to_string()),
            }
        };
        hlc.observe(their_hlc);
        handler.heard(from);
        let req = match wire::decode_request(kind, body) {
            Ok(r) => r,
            Err(e) => break Err(e.to_string()),
        };
        let permit = permits.clone().acquire_owned().await.expect("never closed");
        let tx = tx.clone();
        let fut = handler.clone().handle(from, req);
        tokio::spawn(async move {
            let resp = fut.await;
            let _ = tx.send(Outgoing::Response(id, resp)).await;
            drop(permit);
        });
    };
    drop(tx);
    let _ = writer.await;
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::{TcpListener, TcpStream};

    struct Tcp(std::net::SocketAddr);
    impl Dialer for Tcp {
        fn dial<'a>(&'a self, _url: &'a str) -> DialFuture<'a> {
            Box::pin(async move {
                let s = TcpStream::connect(self.0).await?;
                Ok(Box::new(s) as BoxStream)
            })
        }
    }

    struct Pong;
    impl Handler for Pong {
        fn handle(
            self: Arc<Self>,
            _from: u64,
            _req: Request,
        ) -> Pin<Box<dyn Future<Output = Response> + Send>> {
            Box::pin(async { Response::Pong })
        }
    }

    /// The first connection is accepted and authenticated, then never
    /// answered (a frozen peer, a black hole that keeps TCP up); later
    /// ones are served. A call that hears nothing on its connection closes
    /// it, so the next call gets through on a new one.
    #[tokio::test]
    async fn a_silent_connection_is_closed_and_the_next_call_dials_again() {
        let secret = Secret::generate();
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let hlc = Arc::new(Hlc::new(0, 60_000));
        let (s2, h2) = (secret.clone(), hlc.clone());
        tokio::spawn(async move {
            let mut held = Vec::new();
            for n in 0.. {
                let (mut s, _) = l.accept().await.unwrap();
                if n == 0 {
                    auth::accept(&mut s, &s2).await.unwrap();
                    held.push(s);
                } else {
                    let (s3, h3) = (s2.clone(), h2.clone());
                    tokio::spawn(async move { serve(s, &s3, h3, Arc::new(Pong)).await });
                }
            }
        });
        let ctx = Arc::new(Ctx {
            dialer: Arc::new(Tcp(addr)),
            secret,
            my_id: 1,
            hlc,
            cfg: TransportConfig {
                pool: 1,
                ..Default::default()
            },
        });
        let peer = Peer::new("http://peer".into(), 2, ctx, Arc::new(|| {}));
        let t = Duration::from_millis(300);
        assert_eq!(peer.call(Request::Ping, t).await, Err(CallError::Timeout));
        assert_eq!(peer.call(Request::Ping, t).await, Ok(Response::Pong));
        // A live connection is kept: calls keep getting answers on it.
        for _ in 0..3 {
            assert_eq!(peer.call(Request::Ping, t).await, Ok(Response::Pong));
        }
    }

    /// A thread keeps its slot; two threads take different ones while
    /// there are slots enough.
    #[test]
    fn each_thread_keeps_a_slot_of_its_own() {
        let slots: Vec<(usize, usize)> = (0..2)
            .map(|_| std::thread::spawn(|| (thread_slot(1 << 20), thread_slot(1 << 20))))
            .map(|t| t.join().unwrap())
            .collect();
        for (first, again) in &slots {
            assert_eq!(first, again, "a thread keeps its slot");
        }
        assert_ne!(slots[0].0, slots[1].0, "two threads, two slots");
        assert_eq!(thread_slot(1), 0);
    }
}
