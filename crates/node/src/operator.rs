//! The operator's cluster endpoints: `GET /v0/cluster` (this node's view,
//! its head typed in `strata_api::view`), `POST /v0/cluster/join` and
//! `/leave` (a layout change), `POST /v0/cluster/repair` (anti-entropy now),
//! and `/debug/clock` (the wall clock behind versions; a test may move it).
//! Owns filling their JSON (typed in `strata_api::operate`); must not
//! decide membership (the cluster does).

use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};

use strata_api::operate as op;
use strata_cluster::Cluster;

use crate::query::Query;
use crate::reply::{json, text, Body};

/// `GET /v0/cluster`: this node's view of the cluster as JSON
/// (`strata_api::operate::ClusterView`).
pub(crate) fn cluster_view(cluster: &Cluster, req: &Request<Incoming>) -> Response<Body> {
    if req.method() != Method::GET {
        return text(StatusCode::METHOD_NOT_ALLOWED, "use GET");
    }
    let v = cluster.snapshot();
    let members: Vec<strata_api::view::Member> = v
        .members
        .iter()
        .map(|m| strata_api::view::Member {
            url: m.url.clone(),
            id: format!("{:016x}", m.id),
            is_self: m.is_self,
            state: m.state.as_str().to_string(),
            last_heard_ms: m.last_heard.map(|d| d.as_millis() as u64),
            connections: m.connections,
            hints: strata_api::view::Hints {
                count: m.hints.count,
                bytes: m.hints.bytes,
                written: m.hints.written,
                delivered: m.hints.delivered,
                dropped: m.hints.dropped,
            },
        })
        .collect();
    let ranges = v
        .ranges
        .iter()
        .map(|r| op::RangeView {
            set: format!("{:016x}", r.set),
            members: r.members.clone(),
            keys: r.keys,
            tree_ready: r.ready,
            synced: r
                .synced
                .iter()
                .map(|(peer, ago, last)| op::Synced {
                    peer: peer.clone(),
                    last_sync_ms_ago: ago.map(|d| d.as_millis() as u64),
                    last: last.as_ref().map(exchange),
                })
                .collect(),
        })
        .collect();
    let body = op::ClusterView {
        head: strata_api::view::ClusterHead {
            node: v.node.clone(),
            replication: v.replication,
            members,
            layout: layout_view(&v.layout),
        },
        ranges,
        stream: stream(&v.stream, None),
        change: v.change.as_ref().map(|c| op::Change {
            target: layout_view(&c.target),
            step: c.step.to_string(),
            elapsed_ms: c.elapsed.as_millis() as u64,
            done: c.done,
            error: c.error.clone(),
            skipped: c.skipped.clone(),
            streams: c.streams.iter().map(|(u, s)| stream(s, Some(u))).collect(),
        }),
    };
    typed(StatusCode::OK, &body)
}

/// A typed body as JSON.
fn typed(status: StatusCode, body: &impl serde::Serialize) -> Response<Body> {
    json(status, &serde_json::to_value(body).unwrap_or_default())
}

fn layout_view(l: &strata_cluster::LayoutState) -> strata_api::view::Layout {
    strata_api::view::Layout {
        version: l.version,
        stage: l.stage.as_str().to_string(),
        replication: l.replication,
        members: l.members.clone(),
        previous: l.previous.clone(),
    }
}

fn stream(s: &strata_cluster::rebalance::StreamStats, node: Option<&String>) -> op::Stream {
    op::Stream {
        node: node.cloned(),
        version: s.version,
        done: s.done,
        scanned: s.scanned,
        keys: s.keys,
        copies: s.copies,
        records: s.records,
        applied: s.applied,
        bytes: s.bytes,
        removed: s.removed,
        error: s.error.clone(),
    }
}

/// `POST /v0/cluster/join` (sent to a node started with `--seed`) and
/// `POST /v0/cluster/leave` (sent to the member that leaves, or with
/// `?node=URL` to another member, for a member that is down): start the
/// layout change; `202` with its target layout, which `GET /v0/cluster`
/// follows under `change`.
pub(crate) async fn change(cluster: &Cluster, req: &Request<Incoming>) -> Response<Body> {
    if req.method() != Method::POST {
        return text(StatusCode::METHOD_NOT_ALLOWED, "use POST");
    }
    let r = if req.uri().path().ends_with("/join") {
        cluster.join().await
    } else {
        // `?node=URL`: remove that member (one that is down) through
        // this one.
        match Query::parse(req.uri().query()) {
            Err(e) => return e.into(),
            Ok(q) => match q.get("node") {
                Some(u) => cluster.remove_member(&String::from_utf8_lossy(u)).await,
                None => cluster.leave().await,
            },
        }
    };
    match r {
        Ok(target) => typed(
            StatusCode::ACCEPTED,
            &op::Started {
                node: cluster.advertise().to_string(),
                target: layout_view(&target),
            },
        ),
        Err(e) => text(StatusCode::CONFLICT, &e),
    }
}

/// One anti-entropy exchange as the API gives it.
fn exchange(x: &strata_cluster::Exchange) -> op::Exchange {
    op::Exchange {
        set: format!("{:016x}", x.set),
        peer: x.peer.clone(),
        local_keys: x.local_keys,
        peer_keys: x.peer_keys,
        roots_equal: x.roots_equal,
        leaves_differing: x.leaves_differing as u64,
        keys_compared: x.keys_compared,
        pulled: x.pulled,
        pushed: x.pushed,
        already_there: x.already_there,
        bytes_sent: x.bytes_sent,
        bytes_received: x.bytes_received,
        elapsed_ms: x.elapsed.as_secs_f64() * 1000.0,
        error: x.error.clone(),
    }
}

/// `POST /v0/cluster/repair`: compare this node's ranges with every other
/// replica now (anti-entropy) and answer what each exchange did.
pub(crate) async fn repair(cluster: &Cluster, req: &Request<Incoming>) -> Response<Body> {
    if req.method() != Method::POST {
        return text(StatusCode::METHOD_NOT_ALLOWED, "use POST");
    }
    if cluster.size() < 2 {
        return text(
            StatusCode::BAD_REQUEST,
            "a cluster of one has no replicas to compare with",
        );
    }
    let xs = cluster.repair_now().await;
    let failed = xs.iter().filter(|x| x.error.is_some()).count();
    let body = op::Repaired {
        node: cluster.advertise().to_string(),
        exchanges: xs.iter().map(exchange).collect(),
        failed,
    };
    typed(StatusCode::OK, &body)
}

/// Furthest a test may move a node's clock, either way: a day.
const MAX_CLOCK_SHIFT_MS: i64 = 24 * 3600 * 1000;

/// `GET /debug/clock`: this node's wall clock as versions read it, its test
/// offset and its hybrid clock. `POST /debug/clock?jump_ms=N` (or
/// `offset_ms=N`, absolute) moves the wall clock of this running node, a
/// clock fault: only with `--test-clock-hook`, 404 otherwise. Signed
/// milliseconds, at most a day either way.
pub(crate) fn clock(cluster: &Cluster, hook: bool, req: &Request<Incoming>) -> Response<Body> {
    let hlc = cluster.hlc();
    match *req.method() {
        Method::GET => {}
        Method::POST if !hook => {
            return text(
                StatusCode::NOT_FOUND,
                "the clock hook is off: start the node with --test-clock-hook",
            )
        }
        Method::POST => {
            let q = match Query::parse(req.uri().query()) {
                Ok(q) => q,
                Err(e) => return text(StatusCode::BAD_REQUEST, &e.0),
            };
            let signed = |name: &str| -> Result<Option<i64>, String> {
                q.get(name)
                    .map(|v| {
                        std::str::from_utf8(v)
                            .ok()
                            .and_then(|s| s.parse::<i64>().ok())
                            .ok_or_else(|| format!("{name} is not a signed integer"))
                    })
                    .transpose()
            };
            let offset = match (signed("jump_ms"), signed("offset_ms")) {
                (Err(e), _) | (_, Err(e)) => return text(StatusCode::BAD_REQUEST, &e),
                (Ok(Some(j)), Ok(None)) => hlc.offset_ms().saturating_add(j),
                (Ok(None), Ok(Some(o))) => o,
                _ => {
                    return text(
                        StatusCode::BAD_REQUEST,
                        "give one of jump_ms (relative) or offset_ms (absolute)",
                    )
                }
            };
            if offset.abs() > MAX_CLOCK_SHIFT_MS {
                return text(
                    StatusCode::BAD_REQUEST,
                    &format!("offset {offset} ms is past the limit of {MAX_CLOCK_SHIFT_MS} ms"),
                );
            }
            hlc.set_offset_ms(offset);
            tracing::warn!(offset_ms = offset, "test clock hook moved the wall clock");
        }
        _ => return text(StatusCode::METHOD_NOT_ALLOWED, "use GET or POST"),
    }
    typed(
        StatusCode::OK,
        &op::Clock {
            wall_ms: hlc.wall_ms(),
            offset_ms: hlc.offset_ms(),
            hlc: hlc.peek(),
            hook,
        },
    )
}
