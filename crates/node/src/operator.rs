//! The operator's cluster endpoints: `GET /v0/cluster` (this node's view,
//! its head typed in `strata_api::view`), `POST /v0/cluster/join` and
//! `/leave` (a layout change), `POST /v0/cluster/repair` (anti-entropy now),
//! and `/debug/clock` (the wall clock behind versions; a test may move it).
//! Owns their JSON; must not decide membership (the cluster does).

use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};

use strata_cluster::Cluster;

use crate::query::Query;
use crate::reply::{json, text, Body};

/// `GET /v0/cluster`: this node's view of the cluster as JSON.
pub(crate) fn cluster_view(cluster: &Cluster, req: &Request<Incoming>) -> Response<Body> {
    if req.method() != Method::GET {
        return text(StatusCode::METHOD_NOT_ALLOWED, "use GET");
    }
    let v = cluster.view();
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
    let ranges: Vec<serde_json::Value> = v
        .ranges
        .iter()
        .map(|r| {
            let synced: Vec<serde_json::Value> = r
                .synced
                .iter()
                .map(|(peer, ago, last)| {
                    serde_json::json!({
                        "peer": peer,
                        "last_sync_ms_ago": ago.map(|d| d.as_millis() as u64),
                        "last": last.as_ref().map(exchange_json),
                    })
                })
                .collect();
            serde_json::json!({
                "set": format!("{:016x}", r.set),
                "members": r.members,
                "keys": r.keys,
                "tree_ready": r.ready,
                "synced": synced,
            })
        })
        .collect();
    let head = strata_api::view::ClusterHead {
        node: v.node.clone(),
        replication: v.replication,
        members,
        layout: layout_view(&v.layout),
    };
    let mut body = serde_json::to_value(&head).unwrap_or_default();
    let rest = serde_json::json!({
        "ranges": ranges,
        "stream": stream_json(&v.stream),
        "change": v.change.as_ref().map(|c| serde_json::json!({
            "target": layout_json(&c.target),
            "step": c.step,
            "elapsed_ms": c.elapsed.as_millis() as u64,
            "done": c.done,
            "error": c.error,
            "skipped": c.skipped,
            "streams": c.streams.iter().map(|(u, s)| {
                let mut j = stream_json(s);
                j["node"] = serde_json::json!(u);
                j
            }).collect::<Vec<_>>(),
        })),
    });
    if let (Some(b), serde_json::Value::Object(r)) = (body.as_object_mut(), rest) {
        b.extend(r);
    }
    json(StatusCode::OK, &body)
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

fn layout_json(l: &strata_cluster::LayoutState) -> serde_json::Value {
    serde_json::to_value(layout_view(l)).unwrap_or_default()
}

fn stream_json(s: &strata_cluster::rebalance::StreamStats) -> serde_json::Value {
    serde_json::json!({
        "version": s.version,
        "done": s.done,
        "scanned": s.scanned,
        "keys": s.keys,
        "copies": s.copies,
        "records": s.records,
        "applied": s.applied,
        "bytes": s.bytes,
        "removed": s.removed,
        "error": s.error,
    })
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
        Ok(target) => json(
            StatusCode::ACCEPTED,
            &serde_json::json!({ "node": cluster.advertise(), "target": layout_json(&target) }),
        ),
        Err(e) => text(StatusCode::CONFLICT, &e),
    }
}

/// One anti-entropy exchange as JSON.
fn exchange_json(x: &strata_cluster::Exchange) -> serde_json::Value {
    serde_json::json!({
        "set": format!("{:016x}", x.set),
        "peer": x.peer,
        "local_keys": x.local_keys,
        "peer_keys": x.peer_keys,
        "roots_equal": x.roots_equal,
        "leaves_differing": x.leaves_differing,
        "keys_compared": x.keys_compared,
        "pulled": x.pulled,
        "pushed": x.pushed,
        "already_there": x.already_there,
        "bytes_sent": x.bytes_sent,
        "bytes_received": x.bytes_received,
        "elapsed_ms": x.elapsed.as_secs_f64() * 1000.0,
        "error": x.error,
    })
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
    let body = serde_json::json!({
        "node": cluster.advertise(),
        "exchanges": xs.iter().map(exchange_json).collect::<Vec<_>>(),
        "failed": failed,
    });
    json(StatusCode::OK, &body)
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
    json(
        StatusCode::OK,
        &serde_json::json!({
            "wall_ms": hlc.wall_ms(),
            "offset_ms": hlc.offset_ms(),
            "hlc": hlc.peek(),
            "hook": hook,
        }),
    )
}
