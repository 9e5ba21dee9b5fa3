//! The v0 HTTP API (`docs/api.md`): routing, request validation,
//! status codes, and the streaming range response. Owns the mapping from
//! HTTP to cluster calls and from errors to statuses; must not know how the
//! cluster stores or replicates.
//!
//! Here: the node's state, a request's way through (`handle`, `route`),
//! the operator's and the instruments' small paths; `entity` the key-value
//! paths, `errors` the statuses of what fails.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata_api::routes;

use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONNECTION, CONTENT_TYPE};
use hyper::{Method, Request, Response, StatusCode};
use strata_api::timing::{ServerTiming, Stage};
use strata_cluster::Cluster;

use crate::access::{self, Peer};
use crate::admission::Admission;
use crate::arrival::Arrival;
use crate::body::Bodies;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::operator;
use crate::overload::{Guard, Open};
use crate::probes;
use crate::profile;
use crate::query::Query;

pub use crate::reply::Body;
use crate::reply::{full, text};

mod entity;
mod errors;

use entity::{entities, entity};
use errors::refused;

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
