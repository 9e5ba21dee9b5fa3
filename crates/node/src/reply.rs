//! Plain answers every handler builds: the body type, a sized body, a line
//! of text, a JSON document. Owns their shape; must not decide statuses.

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::{Response, StatusCode};

/// Every answer's body.
pub type Body = BoxBody<Bytes, std::io::Error>;

/// `status` with `body`.
pub fn full(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).map_err(|e| match e {}).boxed());
    *r.status_mut() = status;
    r
}

/// `status` with one line of text.
pub fn text(status: StatusCode, msg: &str) -> Response<Body> {
    full(status, format!("{msg}\n"))
}

/// `status` with a JSON document.
pub fn json(status: StatusCode, body: &serde_json::Value) -> Response<Body> {
    let mut r = full(status, format!("{body}\n"));
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}
