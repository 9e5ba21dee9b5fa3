//! What the node answers when it cannot do what a request asks: a body
//! it could not read, a query it cannot parse, a write it could not make
//! durable, and each of the cluster's errors, as the statuses `docs/api.md`
//! names (with `Retry-After` and `strata-not-applied` where they apply).
//! Owns the mapping from errors to statuses; must not decide when a
//! request fails.

use hyper::header::{HeaderValue, RETRY_AFTER};
use hyper::{Response, StatusCode};
use strata_cluster::ClusterError;

use crate::body::BodyError;
use crate::query::BadQuery;
use crate::reply::{text, Body};

pub(super) fn unavailable(msg: &str) -> Response<Body> {
    let mut r = text(StatusCode::SERVICE_UNAVAILABLE, msg);
    r.headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

/// The answer to a body that could not be read.
pub(super) fn body_error(e: BodyError) -> Response<Body> {
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
pub(super) fn refused(msg: &str) -> Response<Body> {
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
pub(super) fn write_error(e: ClusterError) -> Response<Body> {
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
pub(super) fn cluster_error(e: ClusterError) -> Response<Body> {
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
