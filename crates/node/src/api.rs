//! The v0 HTTP API (`docs/api.md`): routing, request validation,
//! status codes, and the streaming range response. Owns the mapping from
//! HTTP to cluster calls and from errors to statuses; must not know how the
//! cluster stores or replicates.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_api::routes;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::body::{Frame, Incoming};
use hyper::header::{HeaderValue, CONNECTION, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};
use strata_api::timing::{ServerTiming, Stage};
use strata_cluster::record::WriteId;
use strata_cluster::trace::Trace;
use strata_cluster::{Cluster, ClusterError, Replication};

use crate::access::{self, Peer};
use crate::admission::{Admission, Refused, Ticket};
use crate::arrival::Arrival;
use crate::body::{Bodies, BodyError};
use crate::config::Config;
use crate::metrics::Metrics;
use crate::operator;
use crate::overload::{Guard, Open};
use crate::probes;
use crate::profile;
use crate::query::{BadQuery, Query};

pub use crate::reply::Body;
use crate::reply::{full, text};

/// A handler's answer; `Err` is an early answer (an error status), so that
/// validation can use `?`.
type Answer = Result<Response<Body>, Response<Body>>;

/// The connection a request came on: who is calling (for `access`), and
/// its place among the open connections (an internal connection keeps it
/// once upgraded, so it stays counted).
#[derive(Clone)]
pub struct Conn {
    pub peer: Arc<Peer>,
    pub open: Arc<Open>,
}

/// The bytes of request bodies a node holds at once, at least: a budget
/// that slow senders cannot exhaust by trickling (they hold only what they
/// have sent), and twice the value limit when that is more.
const BODY_BUDGET: usize = 256 << 20;

/// Everything a request handler needs.
pub struct Node {
    pub cluster: Arc<Cluster>,
    pub admission: Arc<Admission>,
    /// Limits client connections to keep the runtime's queue short.
    pub guard: Arc<Guard>,
    /// Connections awaiting their first whole request head, bounded.
    pub heads: Arc<crate::heads::Heads>,
    pub config: Config,
    pub metrics: Metrics,
    /// False while starting and once draining: `/v0/status` answers 503.
    pub serving: AtomicBool,
    /// The bytes of request bodies held at once (`body.rs`).
    pub bodies: Bodies,
    /// The runtimes connections are served on (`shards.rs`).
    pub shards: Arc<crate::shards::Shards>,
}

impl Node {
    pub fn new(
        cluster: Arc<Cluster>,
        config: Config,
        mut metrics: Metrics,
        shards: Arc<crate::shards::Shards>,
    ) -> Self {
        let admission = Arc::new(Admission::new(
            config.admission,
            config.max_in_service,
            config.max_waiting,
            config.max_wait,
        ));
        let guard = Arc::new(Guard::new(
            config.overload_lag,
            config.min_connections,
            config.max_connections,
            config.max_wait,
        ));
        let heads = Arc::new(crate::heads::Heads::new(
            config.max_awaiting_heads,
            config.max_awaiting_heads_per_peer,
        ));
        metrics.watch(
            admission.clone(),
            guard.clone(),
            heads.clone(),
            cluster.clone(),
            &shards,
        );
        Node {
            shards,
            bodies: Bodies::new(BODY_BUDGET.max(2 * config.max_value_bytes)),
            admission,
            guard,
            heads,
            cluster,
            config,
            metrics,
            serving: AtomicBool::new(false),
        }
    }
}

fn unavailable(msg: &str) -> Response<Body> {
    let mut r = text(StatusCode::SERVICE_UNAVAILABLE, msg);
    r.headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

/// The answer to a body that could not be read.
fn body_error(e: BodyError) -> Response<Body> {
    match e {
        BodyError::TooLarge { limit } => text(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!("value too large: the limit is {limit} bytes (--max-value-bytes)"),
        ),
        BodyError::TimedOut => text(StatusCode::REQUEST_TIMEOUT, "body did not arrive in time"),
        BodyError::Full { budget } => refused(&format!(
            "overloaded: request bodies being read hold all {} MiB this node allows",
            budget >> 20
        )),
        BodyError::Broken(e) => text(StatusCode::BAD_REQUEST, &format!("reading body: {e}")),
    }
}

/// A 503 for a request refused before the node acted on it: a client may
/// send it, a write too, to another node (`strata_api::headers`).
fn refused(msg: &str) -> Response<Body> {
    let mut r = unavailable(msg);
    r.headers_mut().insert(
        strata_api::headers::NOT_APPLIED,
        HeaderValue::from_static("1"),
    );
    r
}

impl From<BadQuery> for Response<Body> {
    fn from(e: BadQuery) -> Self {
        text(StatusCode::BAD_REQUEST, &e.0)
    }
}

/// A write's error: what the store could not make durable (a full disk, an
/// I/O error) is `507 Insufficient Storage` with the cause, as the API's
/// "Storage faults" says; the rest as for any request.
fn write_error(e: ClusterError) -> Response<Body> {
    let cause = match e {
        ClusterError::Storage(e) => e.to_string(),
        ClusterError::Failed(m) | ClusterError::ReadOnly(m) => m,
        e => return cluster_error(e),
    };
    tracing::warn!(error = %cause, "write not made durable");
    text(
        StatusCode::INSUFFICIENT_STORAGE,
        &format!("not made durable: {cause}"),
    )
}

/// The cluster's errors as HTTP answers: a bad `ack`/`from` is 400, too
/// few replicas in time 504, a busy, closing or not-yet-member node 503
/// (with `Retry-After`), a storage failure 500 (507 for a write, above).
fn cluster_error(e: ClusterError) -> Response<Body> {
    match e {
        ClusterError::BadReplication(m) => text(StatusCode::BAD_REQUEST, &m),
        e @ ClusterError::NotEnoughReplicas { .. } => {
            text(StatusCode::GATEWAY_TIMEOUT, &e.to_string())
        }
        e @ (ClusterError::Busy(_) | ClusterError::Closed | ClusterError::NotMember) => {
            unavailable(&e.to_string())
        }
        // Nothing was done: another member may take the request.
        ClusterError::Removed(why) => refused(&why),
        e @ (ClusterError::Storage(_) | ClusterError::Failed(_) | ClusterError::ReadOnly(_)) => {
            tracing::error!(error = %e, "storage error");
            text(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string())
        }
    }
}

/// Body bytes read (and dropped) before refusing a stale connection, and
/// how long that may take.
const DRAIN_BYTES: usize = 64 << 10;
const DRAIN_WITHIN: Duration = Duration::from_millis(10);

/// Read and drop up to `DRAIN_BYTES` of a request's body, for at most
/// `DRAIN_WITHIN`: what a client has already sent.
async fn drain(req: Request<Incoming>) {
    let body = Limited::new(req.into_body(), DRAIN_BYTES).collect();
    let _ = tokio::time::timeout(DRAIN_WITHIN, body).await;
}

/// The answer to a connection whose first request waited in the kernel's
/// backlog longer than the longest wait: 503, and the connection closes.
/// A small body already sent is read first: closing a socket with unread
/// data resets the connection, and the client could lose the 503.
pub async fn refuse_stale(node: &Node, age: Duration, req: Request<Incoming>) -> Response<Body> {
    let method = req.method().clone();
    drain(req).await;
    node.guard.stale_closed.fetch_add(1, Ordering::Relaxed);
    node.guard.note_refusal();
    let mut r = refused(&format!(
        "overloaded: the connection waited {} ms to be accepted",
        age.as_millis()
    ));
    r.headers_mut()
        .insert(CONNECTION, HeaderValue::from_static("close"));
    node.metrics.observe(method.as_str(), 503, age);
    r
}

/// Serve one request. Never fails: every problem is an HTTP status.
/// Request lines that are served at once even while the node turns client
/// connections away: a peer's internal connection (replication must not
/// starve behind client load) and an operator's scrape, status or profile
/// (what they show matters most in an overload). `head` is a connection's
/// first bytes, peeked before it is read.
pub fn priority_request(head: &[u8]) -> bool {
    const PRIORITY: [&[u8]; 8] = [
        b"GET /v0/internal ",
        b"GET /metrics ",
        b"GET /v0/status ",
        b"GET /v0/cluster ",
        b"POST /v0/cluster/repair ",
        b"POST /v0/cluster/join ",
        b"POST /v0/cluster/leave ",
        b"GET /debug/",
    ];
    PRIORITY.iter().any(|p| head.starts_with(p))
}

pub async fn handle(
    node: Arc<Node>,
    req: Request<Incoming>,
    arrival: Arrival,
    conn: Conn,
) -> Result<Response<Body>, Infallible> {
    let start = Instant::now();
    // Time from reaching the socket to being read: the queue before
    // admission.
    let waited = arrival.waited();
    node.guard.observe_wait(waited);
    let method = req.method().clone();
    let id = probes::next_id();
    probes::request__start!(|| (id, method.as_str(), req.uri().path()));
    let refusal = access::authorize(&node.config.access, &req, &conn.peer);
    let mut r = match refusal {
        Some(refused) => {
            // The body of a refused request is read (bounded) so that the
            // answer is not lost to a reset.
            drain(req).await;
            refused
        }
        None => route(&node, id, req, waited, conn).await,
    };

    // Over the connection limit: this connection closes after this answer
    // (its client reconnects, and waits in the kernel's backlog while the
    // node is full), the cheapest way to shed its next requests.
    // Refused answers shed too (a refused PUT's body was read: a socket
    // closed with unread data resets, and the client could lose the
    // answer); an upgrade to internal traffic is never shed.
    if r.status() != StatusCode::SWITCHING_PROTOCOLS && node.guard.take_shed() {
        r.headers_mut()
            .insert(CONNECTION, HeaderValue::from_static("close"));
    }
    let status = r.status().as_u16();
    if status == 503 {
        node.guard.note_refusal();
    }
    probes::request__done!(|| (id, status));
    let total = waited + start.elapsed();
    node.metrics.observe(method.as_str(), status, total);
    // Where the time went: the socket's queue, then what the handler
    // measured (entity requests), the rest as "other".
    let mut timing = ServerTiming::default();
    timing.add(Stage::Queue, waited, None);
    if let Some(t) = r.extensions_mut().remove::<ServerTiming>() {
        timing.entries.extend(t.entries);
    }
    timing.finish(total);
    if let Ok(v) = HeaderValue::from_str(&timing.encode()) {
        r.headers_mut().insert(strata_api::timing::HEADER, v);
    }
    Ok(r)
}

/// The handler of a request's path.
async fn route(
    node: &Arc<Node>,
    id: u64,
    req: Request<Incoming>,
    waited: Duration,
    conn: Conn,
) -> Response<Body> {
    match req.uri().path() {
        routes::ENTITY => entity(node, id, req, waited).await.unwrap_or_else(|r| r),
        routes::ENTITIES => entities(node, id, req, waited).await.unwrap_or_else(|r| r),
        routes::INTERNAL => crate::peer::accept(
            &node.cluster,
            node.config.tls.as_ref().is_some_and(|t| t.mutual),
            req,
            &conn.peer,
            conn.open,
        ),
        routes::STATUS => status(node, &req).await,
        routes::CLUSTER => operator::cluster_view(&node.cluster, &req),
        routes::CLUSTER_REPAIR => operator::repair(&node.cluster, &req).await,
        routes::CLUSTER_JOIN | routes::CLUSTER_LEAVE => operator::change(&node.cluster, &req).await,
        p if routes::under(p, routes::BACKUP) => {
            crate::backup::handle(&node.cluster, &node.config.data_dir, &req).await
        }
        routes::METRICS => metrics(node, &req).await,
        routes::PROFILE => profile(&req).await.unwrap_or_else(|r| r),
        routes::HEAP_PROFILE => heap_profile(&req).await.unwrap_or_else(|r| r),
        routes::CLOCK => operator::clock(&node.cluster, node.config.test_clock_hook, &req),
        _ => text(StatusCode::BAD_REQUEST, "unknown path"),
    }
}

/// The cluster's critical path as stages: this node's own part, then the
/// wait for the peer that completed the quorum, split into what that peer
/// reported of its own work (its fsync first) and the rest.
fn add_trace(st: &mut ServerTiming, t: &Trace) {
    if let Some(l) = t.local {
        st.add(Stage::Applier, l.queued, None);
        st.add(Stage::Stall, l.stall, None);
        st.add(Stage::Fsync, l.fsync, None);
        st.add(Stage::Apply, l.apply, None);
    }
    if let Some(r) = t.read {
        st.add(Stage::Read, r, None);
    }
    if let Some(p) = &t.peer {
        let node = Some(p.url.as_str());
        let mut left = p.waited;
        if let Some(o) = p.own {
            for (stage, d) in [
                (Stage::PeerFsync, o.fsync),
                (Stage::PeerApplier, o.queued),
                (Stage::PeerStall, o.stall),
                (Stage::PeerApply, o.apply),
            ] {
                let d = d.min(left);
                st.add(stage, d, node);
                left -= d;
            }
        }
        st.add(Stage::Replica, left, node);
    }
}

/// An answer carrying its stages to `handle`, which writes the header.
fn with_stages(mut r: Response<Body>, st: ServerTiming) -> Response<Body> {
    r.extensions_mut().insert(st);
    r
}

async fn profile(req: &Request<Incoming>) -> Answer {
    if req.method() != Method::GET {
        return Err(text(StatusCode::METHOD_NOT_ALLOWED, "use GET"));
    }
    let q = Query::parse(req.uri().query())?;
    let seconds = q.number("seconds")?.unwrap_or(30) as u64;
    if !(1..=300).contains(&seconds) {
        return Err(text(
            StatusCode::BAD_REQUEST,
            "seconds must be between 1 and 300",
        ));
    }
    let (format, ctype) = match q.get("format") {
        None | Some(b"proto") => (profile::Format::Protobuf, "application/octet-stream"),
        Some(b"svg") => (profile::Format::Svg, "image/svg+xml"),
        Some(_) => return Err(text(StatusCode::BAD_REQUEST, "format must be proto or svg")),
    };
    let body = profile::cpu(seconds, format).await.map_err(profile_error)?;
    let mut r = full(StatusCode::OK, body);
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(ctype));
    Ok(r)
}

fn profile_error(e: profile::ProfileError) -> Response<Body> {
    match e {
        profile::ProfileError::Busy => text(StatusCode::CONFLICT, "a profile is already running"),
        profile::ProfileError::Failed(m) => text(StatusCode::INTERNAL_SERVER_ERROR, &m),
        profile::ProfileError::Unavailable(m) => text(StatusCode::NOT_IMPLEMENTED, &m),
    }
}

/// `GET /debug/pprof/heap`: the heap profile, a gzipped pprof protobuf.
async fn heap_profile(req: &Request<Incoming>) -> Answer {
    if req.method() != Method::GET {
        return Err(text(StatusCode::METHOD_NOT_ALLOWED, "use GET"));
    }
    let body = profile::heap().await.map_err(profile_error)?;
    let mut r = full(StatusCode::OK, body);
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/octet-stream"),
    );
    Ok(r)
}

/// `GET /metrics`, rendered on the blocking pool: a render reads `/proc`
/// (every thread's schedstat, the CPUs, the cgroup) for a millisecond or
/// more, which on a runtime worker would hold up the requests queued
/// behind it once a second per scraper.
async fn metrics(node: &Arc<Node>, req: &Request<Incoming>) -> Response<Body> {
    if req.method() != Method::GET {
        return text(StatusCode::METHOD_NOT_ALLOWED, "use GET");
    }
    let n = node.clone();
    let Ok(body) = tokio::task::spawn_blocking(move || n.metrics.render()).await else {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            "rendering the metrics failed",
        );
    };
    let mut r = full(StatusCode::OK, body);
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    r
}

async fn status(node: &Node, req: &Request<Incoming>) -> Response<Body> {
    if req.method() != Method::GET {
        return text(StatusCode::METHOD_NOT_ALLOWED, "use GET");
    }
    node.cluster.ready().await;
    if let Some(why) = node.cluster.removed() {
        return refused(&format!("not serving: {why}"));
    }
    if node.serving.load(Ordering::Acquire) {
        // A store that refuses writes still serves reads: 200, saying so.
        match node.cluster.local().write_refusal() {
            None => text(StatusCode::OK, "serving"),
            Some(why) => text(
                StatusCode::OK,
                &format!("serving reads; writes refused: {why}"),
            ),
        }
    } else {
        refused("not serving (starting or draining)")
    }
}

async fn admit(node: &Node, id: u64, waited: Duration) -> Result<Ticket, Response<Body>> {
    let within = node.guard.max_wait(node.config.max_wait);
    let t = node
        .admission
        .admit_within(within, waited, || probes::request__block!(|| id))
        .await
        .map_err(|r| match r {
            Refused::QueueFull => refused("overloaded: admission queue full"),
            Refused::WaitedTooLong => refused("overloaded: waited too long for admission"),
        })?;
    if !t.waited {
        probes::request__nonblock!(|| id);
    }
    Ok(t)
}

async fn entity(node: &Arc<Node>, id: u64, req: Request<Incoming>, waited: Duration) -> Answer {
    let method = req.method().clone();
    if !matches!(method, Method::GET | Method::PUT | Method::DELETE) {
        return Err(text(
            StatusCode::METHOD_NOT_ALLOWED,
            "use GET, PUT or DELETE",
        ));
    }
    let q = Query::parse(req.uri().query())?;
    let key = q.required("id")?.to_vec();
    if key.len() > node.config.max_key_bytes {
        return Err(text(
            StatusCode::URI_TOO_LONG,
            &format!(
                "key too long: {} bytes, the limit is {} (--max-key-bytes)",
                key.len(),
                node.config.max_key_bytes
            ),
        ));
    }
    let (ack, from) = (q.number("ack")?, q.number("from")?);
    let wid = match req.headers().get(strata_api::headers::WRITE_ID) {
        None => None,
        Some(_) if method == Method::GET => {
            return Err(text(
                StatusCode::BAD_REQUEST,
                "strata-write-id names a write: a GET takes none",
            ))
        }
        Some(v) => match strata_api::headers::parse_write_id(v.as_bytes()) {
            Some(w) => Some(WriteId(w)),
            None => {
                return Err(text(
                    StatusCode::BAD_REQUEST,
                    "strata-write-id must be 32 hex digits (a random 128-bit id, the same on every attempt of one write)",
                ))
            }
        },
    };
    node.cluster.ready().await;
    let rep: Replication = node.cluster.replication(ack, from).map_err(cluster_error)?;
    let max = node.config.max_value_bytes;
    if method == Method::PUT {
        let declared = req
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if let Some(n) = declared.filter(|&n| n > max as u64) {
            return Err(text(
                StatusCode::PAYLOAD_TOO_LARGE,
                &format!("value too large: {n} bytes, the limit is {max} (--max-value-bytes)"),
            ));
        }
    }
    let mut st = ServerTiming::default();
    // A PUT's body is read before the request is admitted: a client that
    // sends it slowly holds its connection and its bytes, not a place in
    // service (`body.rs`).
    let body = if method == Method::PUT {
        let reading = Instant::now();
        let b = node
            .bodies
            .read(req.into_body(), max, node.config.body_timeout)
            .await
            .map_err(body_error)?;
        st.add(Stage::Body, reading.elapsed(), None);
        Some(b)
    } else {
        None
    };
    // Held until the answer is ready.
    let admitting = Instant::now();
    let _ticket = match admit(node, id, waited).await {
        Ok(t) => t,
        Err(refusal) => {
            st.add(Stage::Admit, admitting.elapsed(), None);
            return Err(with_stages(refusal, st));
        }
    };
    st.add(Stage::Admit, admitting.elapsed(), None);
    match method {
        Method::GET => {
            let (r, trace) = node.cluster.get_traced(id, &key, rep).await;
            add_trace(&mut st, &trace);
            let r = match r {
                Ok(Some(v)) => full(StatusCode::OK, v),
                Ok(None) => text(StatusCode::NOT_FOUND, "not found"),
                Err(e) => cluster_error(e),
            };
            Ok(with_stages(r, st))
        }
        Method::PUT => {
            let value = body.expect("a PUT's body was read").value;
            probes::persist__start!(|| id);
            let (r, trace) = node
                .cluster
                .write_traced(id, (Bytes::from(key), wid), Some(value), rep)
                .await;
            probes::persist__done!(|| id);
            add_trace(&mut st, &trace);
            let r = match r {
                Ok(()) => full(StatusCode::CREATED, Bytes::new()),
                Err(e) => write_error(e),
            };
            Ok(with_stages(r, st))
        }
        _ => {
            probes::persist__start!(|| id);
            let (r, trace) = node
                .cluster
                .write_traced(id, (Bytes::from(key), wid), None, rep)
                .await;
            probes::persist__done!(|| id);
            add_trace(&mut st, &trace);
            let r = match r {
                Ok(()) => full(StatusCode::ACCEPTED, Bytes::new()),
                Err(e) => write_error(e),
            };
            Ok(with_stages(r, st))
        }
    }
}

async fn entities(node: &Arc<Node>, id: u64, req: Request<Incoming>, waited: Duration) -> Answer {
    if req.method() != Method::GET {
        return Err(text(StatusCode::METHOD_NOT_ALLOWED, "use GET"));
    }
    let q = Query::parse(req.uri().query())?;
    let start = q.required("start")?.to_vec();
    let end = match q.get("end") {
        None => None,
        Some(_) => Some(q.required("end")?.to_vec()),
    };
    let cluster_scope = match q.get("scope") {
        None | Some(b"node") => false,
        Some(b"cluster") => true,
        Some(_) => {
            return Err(text(
                StatusCode::BAD_REQUEST,
                "scope must be node or cluster",
            ))
        }
    };
    if cluster_scope {
        node.cluster.ready().await;
        node.cluster.may_serve().map_err(cluster_error)?;
    }
    let ticket = admit(node, id, waited).await?;
    if cluster_scope {
        let body = MergedBody {
            scan: node
                .cluster
                .scan_cluster(Bytes::from(start), end.map(Bytes::from)),
            ticket: Some(ticket),
        };
        let mut r = Response::new(body.boxed());
        *r.status_mut() = StatusCode::OK;
        return Ok(r);
    }
    let iter = node
        .cluster
        .scan(&start, end.as_deref())
        .map_err(cluster_error)?;
    // The body pulls one entry per frame from the scan as the connection can
    // take it: memory stays at one entry (plus hyper's write buffer)
    // whatever the range, and the work runs on the runtime thread in short
    // turns instead of on an extra thread per range, which under load would
    // outnumber the cores and starve the threads that accept, parse and
    // refuse requests.
    let body = RangeBody {
        iter: std::sync::Mutex::new(iter),
        ticket: Some(ticket),
        turn: 0,
    };
    let mut r = Response::new(body.boxed());
    *r.status_mut() = StatusCode::OK;
    Ok(r)
}

/// One range entry as the contract frames it: the key, `\n`, the value.
fn entry_chunk(k: &[u8], v: &[u8]) -> Frame<Bytes> {
    let mut b = Vec::with_capacity(k.len() + 1 + v.len());
    b.extend_from_slice(k);
    b.push(b'\n');
    b.extend_from_slice(v);
    Frame::data(Bytes::from(b))
}

/// Entries a range body yields in one turn before it lets other
/// connections run.
const RANGE_TURN: u32 = 32;

/// The range response body: one frame (one chunk) per entry, read from the
/// scan when hyper asks for it. The admission ticket is held until the scan
/// ends or the client goes away.
struct RangeBody {
    /// A mutex only to make the body `Sync`; never contended.
    iter: std::sync::Mutex<strata_cluster::scan::LiveIter>,
    ticket: Option<Ticket>,
    turn: u32,
}

impl hyper::body::Body for RangeBody {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        use std::task::Poll;
        if self.ticket.is_none() {
            return Poll::Ready(None);
        }
        self.turn += 1;
        if self.turn > RANGE_TURN {
            // Cooperative yield: hyper flushes what it has, other tasks run.
            self.turn = 0;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let item = self.iter.get_mut().expect("range iterator lock").next();
        match item {
            Some(Ok((k, v))) => Poll::Ready(Some(Ok(entry_chunk(&k, &v)))),
            Some(Err(e)) => {
                tracing::error!(error = %e, "range scan failed");
                self.ticket = None;
                Poll::Ready(Some(Err(std::io::Error::other(e.to_string()))))
            }
            None => {
                self.ticket = None;
                Poll::Ready(None)
            }
        }
    }
}

/// A cluster-scoped range: entries merged by the cluster, one chunk each.
struct MergedBody {
    scan: strata_cluster::scan::ClusterScan,
    ticket: Option<Ticket>,
}

impl hyper::body::Body for MergedBody {
    type Data = Bytes;
    type Error = std::io::Error;
    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        use std::task::Poll;
        if self.ticket.is_none() {
            return Poll::Ready(None);
        }
        match self.scan.poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok((k, v)))) => Poll::Ready(Some(Ok(entry_chunk(&k, &v)))),
            Poll::Ready(Some(Err(e))) => {
                tracing::error!(error = %e, "cluster range failed");
                self.ticket = None;
                Poll::Ready(Some(Err(std::io::Error::other(e))))
            }
            Poll::Ready(None) => {
                self.ticket = None;
                Poll::Ready(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::priority_request;

    #[test]
    fn only_peers_and_operators_skip_the_overload_queue() {
        for head in [
            &b"GET /v0/internal HTTP/1.1\r\n"[..],
            b"GET /metrics HTTP/1.1\r\n",
            b"GET /v0/status HTTP/1.1",
            b"GET /v0/cluster HTTP/1.1",
            b"GET /debug/pprof/profile?seconds=5 HTTP/1.1",
        ] {
            assert!(priority_request(head), "{}", String::from_utf8_lossy(head));
        }
        for head in [
            &b"GET /v0/entity?id=k HTTP/1.1\r\n"[..],
            b"PUT /v0/entity?id=k HTTP/1.1",
            b"GET /v0/entities?start=a HTTP/1.1",
            b"POST /metrics HTTP/1.1",
            b"GET /metricsx HTTP/1.1",
            b"GET /v0/internalx HTTP/1.1",
            b"GET /v0/inter",
            b"",
        ] {
            assert!(!priority_request(head), "{}", String::from_utf8_lossy(head));
        }
    }
}
