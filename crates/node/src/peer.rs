//! Internal connections over HTTP. Dialing (`UpgradeDialer`): a TCP
//! connection to the peer's public port and an HTTP/1.1 upgrade to
//! `strata-internal/0`, carrying this node's URL and a token made with the
//! cluster secret; after `101 Switching Protocols` the raw connection is
//! the cluster's. Accepting (`accept`): the token checked, under mutual
//! TLS the peer's node certificate too, then the upgraded connection
//! handed to the cluster, still counted among the open connections. The node owns this because it is HTTP; the cluster only
//! sees a byte stream. Over TLS when the node has it (https:// members).
//! Must not read or write anything after the upgrade.

use std::io;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::{Method, Request, Response, StatusCode};
use strata_cluster::{BoxStream, Cluster, DialFuture, Dialer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::access::Peer;
use crate::overload::Open;
use crate::reply::{full, text, Body};

pub const UPGRADE: &str = "strata-internal/0";
pub const FROM_HEADER: &str = "x-strata-from";
pub const AUTH_HEADER: &str = "x-strata-auth";

/// Largest answer head read before giving up.
const MAX_HEAD: usize = 8 << 10;

/// The dialer; it needs the cluster (for tokens), which needs the dialer,
/// so the cluster is set once it exists. With `tls`, members' URLs are
/// https:// and every connection is TLS, offering the priority protocol.
#[derive(Default)]
pub struct UpgradeDialer {
    pub cluster: OnceLock<Arc<Cluster>>,
    pub tls: Option<Arc<strata_tls::rustls::ClientConfig>>,
}

impl Dialer for UpgradeDialer {
    fn dial<'a>(&'a self, url: &'a str) -> DialFuture<'a> {
        Box::pin(async move {
            let cluster = self
                .cluster
                .get()
                .ok_or_else(|| io::Error::other("cluster not ready"))?;
            let (from, token) = cluster
                .upgrade_token()
                .ok_or_else(|| io::Error::other("no cluster secret"))?;
            let (rest, tls) = match (url.strip_prefix("https://"), &self.tls) {
                (Some(rest), Some(tls)) => (rest, Some(tls)),
                (Some(_), None) => {
                    return Err(io::Error::other(format!(
                        "{url}: an https:// member, and this node has no TLS"
                    )))
                }
                (None, _) => (url.strip_prefix("http://").unwrap_or(url), None),
            };
            let hostport = rest.split('/').next().unwrap_or("");
            let s = TcpStream::connect(hostport).await?;
            s.set_nodelay(true)?;
            match tls {
                None => upgrade(s, hostport, &from, &token).await,
                Some(tls) => {
                    let name = strata_tls::server_name(hostport).map_err(io::Error::other)?;
                    let s = tokio_rustls::TlsConnector::from(tls.clone())
                        .connect(name, s)
                        .await?;
                    upgrade(s, hostport, &from, &token).await
                }
            }
        })
    }
}

/// Ask for the upgrade on `s` and read the answer's head; the stream is
/// the cluster's after a `101`.
async fn upgrade<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    mut s: S,
    hostport: &str,
    from: &str,
    token: &str,
) -> io::Result<BoxStream> {
    let req = format!(
        "GET /v0/internal HTTP/1.1\r\nHost: {hostport}\r\nConnection: Upgrade\r\nUpgrade: {UPGRADE}\r\n{FROM_HEADER}: {from}\r\n{AUTH_HEADER}: {token}\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await?;
    // Read the answer's head a byte at a time: whatever follows it
    // belongs to the cluster's handshake.
    let mut head = Vec::with_capacity(256);
    let mut b = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            return Err(io::Error::other("answer head too long"));
        }
        if s.read(&mut b).await? == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "closed during upgrade",
            ));
        }
        head.push(b[0]);
    }
    let status = String::from_utf8_lossy(&head);
    let line = status.lines().next().unwrap_or("");
    if !line.starts_with("HTTP/1.1 101") {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("upgrade refused: {line}"),
        ));
    }
    Ok(Box::new(s) as BoxStream)
}

/// `GET /v0/internal` with `Upgrade: strata-internal/0`: a peer opening an
/// internal connection. Without a valid token made with the cluster secret
/// the answer is 403 and nothing else happens; under mutual TLS
/// (`mutual`) the caller must also have shown a node certificate. `open`
/// keeps the connection counted for as long as it lives.
pub fn accept(
    cluster: &Arc<Cluster>,
    mutual: bool,
    mut req: Request<Incoming>,
    peer: &Peer,
    open: Arc<Open>,
) -> Response<Body> {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string()
    };
    let (from, token) = (header(FROM_HEADER), header(AUTH_HEADER));
    if req.method() != Method::GET
        || !header("upgrade").eq_ignore_ascii_case(UPGRADE)
        || !cluster.check_upgrade(&from, &token)
    {
        return text(
            StatusCode::FORBIDDEN,
            "internal traffic needs the cluster secret",
        );
    }
    // Under mutual TLS a member also shows a node certificate.
    if mutual && !matches!(peer.cert_role(), Some(Ok(strata_api::access::Role::Node))) {
        return text(
            StatusCode::FORBIDDEN,
            "internal traffic needs a node certificate (OU=node) signed by the cluster's CA",
        );
    }
    let upgrade = hyper::upgrade::on(&mut req);
    let n = cluster.clone();
    tokio::spawn(async move {
        // Counted among the open connections for as long as it lives.
        let _open = open;
        match upgrade.await {
            Ok(up) => {
                let io = hyper_util::rt::TokioIo::new(up);
                if let Err(e) = n.serve_peer(Box::new(io)).await {
                    tracing::debug!(peer = %from, error = %e, "internal connection ended");
                }
            }
            Err(e) => tracing::warn!(peer = %from, error = %e, "upgrade failed"),
        }
    });
    let mut r = full(StatusCode::SWITCHING_PROTOCOLS, Bytes::new());
    r.headers_mut().insert(
        hyper::header::CONNECTION,
        HeaderValue::from_static("Upgrade"),
    );
    r.headers_mut()
        .insert(hyper::header::UPGRADE, HeaderValue::from_static(UPGRADE));
    r
}
