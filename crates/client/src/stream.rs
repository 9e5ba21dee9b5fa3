//! How clients reach a node: where it is (`Target`, from its URL), with
//! what credentials (`Access`: a client's own token and TLS configuration,
//! and nothing else; or, for the lab's and the `strata` commands' own
//! connections only, the process's, set once from their flags with
//! [`credentials`] and asked for by name with [`Access::process`]), and a
//! TCP connection to it, wrapped in TLS for an https:// URL (trusting the
//! client's certificate authority, else the system's; the process's
//! connections: the one given once with `--tls-ca`, else the system's).
//! The load generator's connections (async)
//! offer plain HTTP/1.1; control requests and scrapes (blocking) offer the
//! priority protocol, as their paths do on a plain port. Owns opening a
//! connection; must not speak HTTP (`client`, `cluster::http` and `scrape`
//! do).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream as StdTcp};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use strata_tls::rustls;
use strata_tls::rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

/// A client's own credentials, for every node it reaches: a bearer token
/// and a TLS configuration (trust, and a client certificate to present).
/// `Access::default()` is none: no token is sent, and an https:// node is
/// trusted by the system's roots, with no client certificate. What the
/// process set ([`credentials`], [`set_token_for`], [`trust`]) applies only
/// where `process` is set ([`Access::process`]): never to a client built
/// with `Client::builder`.
#[derive(Clone, Default)]
pub struct Access {
    pub token: Option<Arc<str>>,
    pub tls: Option<Arc<rustls::ClientConfig>>,
    /// Where `token` or `tls` is empty, use the process's: the opt-in of
    /// the lab's and the `strata` commands' own connections.
    pub process: bool,
}

impl Access {
    /// The process's credentials ([`credentials`], [`set_token_for`],
    /// [`trust`]), for the lab's and the `strata` commands' connections:
    /// what [`Target::parse`] uses.
    pub fn process() -> Access {
        Access {
            process: true,
            ..Access::default()
        }
    }
}

impl std::fmt::Debug for Access {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Access")
            .field("token", &self.token.as_ref().map(|_| "(set)"))
            .field("tls", &self.tls.as_ref().map(|_| "(own)"))
            .field("process", &self.process)
            .finish()
    }
}

/// Where requests go: the address to connect to, the `Host` header, and
/// TLS for an https:// URL.
#[derive(Clone, Debug)]
pub struct Target {
    pub addr: SocketAddr,
    pub host: String,
    pub tls: Option<Tls>,
    /// The bearer token sent on every request (`Authorization: Bearer`):
    /// the `Access`'s own, else (with `Access::process`) the process's.
    pub token: Option<Arc<str>>,
}

impl Target {
    /// Parse `http://host:port[/...]` or `https://host:port[/...]`, with
    /// the process's credentials (`Access::process`): for the lab's and
    /// the `strata` commands' own requests.
    pub fn parse(url: &str) -> Result<Target, String> {
        Target::parse_with(url, &Access::process())
    }

    /// As `parse`, with these credentials: a client's own, and the
    /// process's only where `access.process` says so.
    pub fn parse_with(url: &str, access: &Access) -> Result<Target, String> {
        let (rest, https) = match (url.strip_prefix("http://"), url.strip_prefix("https://")) {
            (Some(rest), _) => (rest, false),
            (_, Some(rest)) => (rest, true),
            _ if !url.contains("://") => {
                return Err(format!(
                    "{url}: not a URL: give the scheme, http://{url} or https://{url}"
                ))
            }
            _ => {
                return Err(format!(
                    "{url}: only http:// and https:// URLs are supported"
                ))
            }
        };
        let hostport = rest.split('/').next().unwrap_or(rest);
        let addr = std::net::ToSocketAddrs::to_socket_addrs(hostport)
            .map_err(|e| format!("{hostport}: {e}"))?
            .next()
            .ok_or_else(|| format!("{hostport}: no address"))?;
        let own = |config: Arc<rustls::ClientConfig>| -> Result<Tls, String> {
            Ok(Tls {
                name: strata_tls::server_name(hostport).map_err(|e| format!("{url}: {e}"))?,
                config: Some(config),
            })
        };
        let tls = match (https, &access.tls) {
            (false, _) => None,
            (true, Some(config)) => Some(own(config.clone())?),
            (true, None) if access.process => {
                Some(Tls::new(hostport).map_err(|e| format!("{url}: {e}"))?)
            }
            (true, None) => Some(own(system_trust().map_err(|e| format!("{url}: {e}"))?)?),
        };
        let token = match &access.token {
            Some(t) => Some(t.clone()),
            None if access.process => token_for(hostport),
            None => None,
        };
        Ok(Target {
            addr,
            host: hostport.to_string(),
            tls,
            token,
        })
    }
}

/// What a client without TLS settings of its own trusts: the system's
/// roots, and no client certificate (built once).
fn system_trust() -> Result<Arc<rustls::ClientConfig>, String> {
    static OWN: std::sync::OnceLock<Result<Arc<rustls::ClientConfig>, String>> =
        std::sync::OnceLock::new();
    OWN.get_or_init(|| strata_tls::client_config(None, strata_tls::HTTP11, None))
        .clone()
}

static TOKEN: std::sync::RwLock<Option<Arc<str>>> = std::sync::RwLock::new(None);

/// The process's credentials (`docs/security.md`), for the lab's and the
/// `strata` commands' own connections: a bearer token sent on each
/// request of every target whose `Access` is [`Access::process`] (every
/// [`Target::parse`]) parsed after this, and a client certificate and key
/// (PEM files) they present to a node that asks for one under TLS (only
/// the first call's counts, and only before the first https://
/// connection). A client built with `Client::builder` never sends them:
/// its credentials are its own (`.token()`, `.client_certificate()`).
pub fn credentials(
    token: Option<String>,
    cert_and_key: Option<(std::path::PathBuf, std::path::PathBuf)>,
) {
    *TOKEN.write().unwrap_or_else(|e| e.into_inner()) = token.map(|t| Arc::from(t.trim()));
    strata_tls::identity(cert_and_key);
}

/// Tokens for particular nodes (`host:port`), before the process's.
static TOKENS: std::sync::RwLock<Vec<(String, Arc<str>)>> = std::sync::RwLock::new(Vec::new());

/// Send `token` to the node at `url` from now on, from the process's
/// connections ([`Access::process`]) parsed after this: a local cluster's
/// operator token, for the lab that started the cluster. It goes before
/// the process's token for that node only.
pub fn set_token_for(url: &str, token: &str) {
    let hostport = url
        .split_once("://")
        .map_or(url, |(_, r)| r)
        .split('/')
        .next()
        .unwrap_or("")
        .to_string();
    let mut t = TOKENS.write().unwrap_or_else(|e| e.into_inner());
    t.retain(|(h, _)| *h != hostport);
    t.push((hostport, Arc::from(token.trim())));
}

/// The token for the node at `hostport`.
fn token_for(hostport: &str) -> Option<Arc<str>> {
    let own = TOKENS.read().unwrap_or_else(|e| e.into_inner());
    match own.iter().find(|(h, _)| h == hostport) {
        Some((_, t)) => Some(t.clone()),
        None => TOKEN.read().unwrap_or_else(|e| e.into_inner()).clone(),
    }
}

/// Trust `ca` (a PEM file; `None`: the system's roots) for every https://
/// URL the process's connections ([`Access::process`]) dial. Call before
/// any connection opens.
pub fn trust(ca: Option<std::path::PathBuf>) {
    strata_tls::trust(ca);
}

/// What a TLS target needs: the name its certificate must carry, and the
/// client's own configuration (`None`: the process's).
#[derive(Clone, Debug)]
pub struct Tls {
    pub name: ServerName<'static>,
    pub config: Option<Arc<rustls::ClientConfig>>,
}

impl Tls {
    /// For `hostport` (an https:// URL's), checking now that the trust can
    /// be loaded, so a bad --tls-ca fails before a run starts.
    pub fn new(hostport: &str) -> Result<Tls, String> {
        strata_tls::lab_client(false)?;
        Ok(Tls {
            name: strata_tls::server_name(hostport)?,
            config: None,
        })
    }
}

/// An open connection to a node, for the async clients.
pub enum NodeStream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::client::TlsStream<TcpStream>>),
}

/// Open a connection to `t` (TCP_NODELAY set), TLS-handshaken for https.
pub async fn connect(t: &Target) -> io::Result<NodeStream> {
    let s = TcpStream::connect(t.addr).await?;
    s.set_nodelay(true)?;
    match &t.tls {
        None => Ok(NodeStream::Plain(s)),
        Some(tls) => {
            let config = match &tls.config {
                Some(own) => own.clone(),
                None => strata_tls::lab_client(false).map_err(io::Error::other)?,
            };
            let s = tokio_rustls::TlsConnector::from(config)
                .connect(tls.name.clone(), s)
                .await?;
            Ok(NodeStream::Tls(Box::new(s)))
        }
    }
}

impl AsyncRead for NodeStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            NodeStream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            NodeStream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for NodeStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            NodeStream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            NodeStream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            NodeStream::Plain(s) => Pin::new(s).poll_flush(cx),
            NodeStream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            NodeStream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            NodeStream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// An open connection to a node, for the blocking clients.
pub enum BlockingStream {
    Plain(StdTcp),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, StdTcp>>),
}

impl BlockingStream {
    /// The TCP connection under it (for timeouts).
    pub fn tcp(&self) -> &StdTcp {
        match self {
            BlockingStream::Plain(s) => s,
            BlockingStream::Tls(s) => s.get_ref(),
        }
    }
}

/// Open a connection to `t` within `timeout`, offering the priority
/// protocol under TLS (the handshake happens on the first write, bounded
/// by the timeouts set on the connection).
pub fn connect_blocking(t: &Target, timeout: Duration) -> Result<BlockingStream, String> {
    let s = StdTcp::connect_timeout(&t.addr, timeout).map_err(|e| e.to_string())?;
    let _ = s.set_nodelay(true);
    s.set_read_timeout(Some(timeout))
        .and_then(|()| s.set_write_timeout(Some(timeout)))
        .map_err(|e| e.to_string())?;
    match &t.tls {
        None => Ok(BlockingStream::Plain(s)),
        Some(tls) => {
            let config: Arc<rustls::ClientConfig> = strata_tls::lab_client(true)?;
            let conn = rustls::ClientConnection::new(config, tls.name.clone())
                .map_err(|e| e.to_string())?;
            Ok(BlockingStream::Tls(Box::new(rustls::StreamOwned::new(
                conn, s,
            ))))
        }
    }
}

impl Read for BlockingStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            BlockingStream::Plain(s) => s.read(buf),
            BlockingStream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for BlockingStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            BlockingStream::Plain(s) => s.write(buf),
            BlockingStream::Tls(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            BlockingStream::Plain(s) => s.flush(),
            BlockingStream::Tls(s) => s.flush(),
        }
    }
}
