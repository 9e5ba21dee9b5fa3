//! The key-value paths: `/v0/entity` (GET, PUT, DELETE of one key) and
//! `/v0/entities` (a range, streamed as chunks): admission, the query's
//! and the body's checks, the cluster call, and the answer with its
//! `Server-Timing` stages (the cluster's critical path included). Owns
//! these handlers; must not know how the cluster stores or replicates.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};
use hyper::header::CONTENT_LENGTH;
use hyper::{Method, Request, Response, StatusCode};
use strata_api::timing::{ServerTiming, Stage};
use strata_cluster::record::WriteId;
use strata_cluster::trace::Trace;
use strata_cluster::Replication;

use crate::admission::{Refused, Ticket};
use crate::probes;
use crate::query::Query;
use crate::reply::{full, text, Body};

use super::errors::{body_error, cluster_error, refused, write_error};
use super::{Answer, Node};

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

pub(super) async fn entity(
    node: &Arc<Node>,
    id: u64,
    req: Request<Incoming>,
    waited: Duration,
) -> Answer {
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

pub(super) async fn entities(
    node: &Arc<Node>,
    id: u64,
    req: Request<Incoming>,
    waited: Duration,
) -> Answer {
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
