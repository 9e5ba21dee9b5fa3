//! TLS for Strata's HTTP port: the node's certificate and key read from PEM
//! files into a rustls server configuration, the trust a client (a peer
//! dialing a member, or the lab) puts in the certificates it is shown, and
//! the ALPN protocol a member's or an operator's connection offers so that
//! an overloaded node can tell it from a client's before it reads (or even
//! decrypts) a byte of its requests. Owns the rustls configurations and the
//! protocol names; must not open connections or speak HTTP (the node and
//! the lab do).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};

pub use rustls;

/// Plain HTTP/1.1: what a client's connection offers.
pub const HTTP11: &[u8] = b"http/1.1";
/// HTTP/1.1 from a member (internal traffic) or an operator (status,
/// metrics, membership changes): served at once however loaded the node
/// is, as the same requests are on a plain port (`priority_request` reads
/// their path there; under TLS the path is encrypted, the ALPN list in the
/// ClientHello is not).
pub const PRIORITY: &[u8] = b"strata-priority/0";

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The node's side: its certificate chain and private key (PEM files).
/// Both protocol names are accepted; a client offering neither gets no
/// ALPN and plain HTTP/1.1.
pub fn server_config(cert: &Path, key: &Path) -> Result<Arc<ServerConfig>, String> {
    let chain = certificates(cert)?;
    let key = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        format!(
            "{}: no private key in PEM form ({e}): PKCS#8, PKCS#1 or SEC1",
            key.display()
        )
    })?;
    let mut c = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("{}: {e}", cert.display()))?;
    c.alpn_protocols = vec![HTTP11.to_vec(), PRIORITY.to_vec()];
    Ok(Arc::new(c))
}

/// Every certificate in a PEM file; none is an error naming the file.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate in PEM form", path.display()));
    }
    Ok(certs)
}

/// The certificates a client trusts: those in `ca` (a PEM bundle), or
/// the system's when there is none.
fn roots(ca: Option<&Path>) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    match ca {
        Some(path) => {
            for c in certificates(path)? {
                roots
                    .add(c)
                    .map_err(|e| format!("{}: {e}", path.display()))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(
                    "no trusted certificates: give the certificate authority with --tls-ca".into(),
                );
            }
        }
    }
    Ok(roots)
}

/// A client's side: trusting `ca` (or the system's roots), offering
/// `alpn`.
pub fn client_config(ca: Option<&Path>, alpn: &[u8]) -> Result<Arc<ClientConfig>, String> {
    let mut c = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots(ca)?)
        .with_no_client_auth();
    c.alpn_protocols = vec![alpn.to_vec()];
    Ok(Arc::new(c))
}

/// The name a client checks the node's certificate against: the URL's
/// host, a DNS name or an IP address (`host:port` or `[v6]:port`).
pub fn server_name(hostport: &str) -> Result<ServerName<'static>, String> {
    let host = match hostport.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(rest),
        None => hostport.rsplit_once(':').map_or(hostport, |(h, _)| h),
    };
    ServerName::try_from(host.to_string()).map_err(|e| format!("{host}: {e}"))
}

/// What the first bytes of a connection say about it, read without
/// consuming them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hello {
    /// A whole ClientHello offering [`PRIORITY`].
    Priority,
    /// A whole ClientHello without it, or bytes that are not TLS at all
    /// (the handshake will refuse them).
    Other,
    /// Not a whole ClientHello yet.
    Incomplete,
}

/// Read the ClientHello in `peeked` (a copy of the connection's first
/// bytes) and say whether it offers the priority protocol.
pub fn hello(peeked: &[u8]) -> Hello {
    let mut acceptor = rustls::server::Acceptor::default();
    let mut rd = peeked;
    while !rd.is_empty() {
        if acceptor.read_tls(&mut rd).is_err() {
            return Hello::Other;
        }
        match acceptor.accept() {
            Ok(Some(accepted)) => {
                let offered = accepted
                    .client_hello()
                    .alpn()
                    .is_some_and(|mut a| a.any(|p| p == PRIORITY));
                return if offered {
                    Hello::Priority
                } else {
                    Hello::Other
                };
            }
            Ok(None) => {}
            Err(_) => return Hello::Other,
        }
    }
    Hello::Incomplete
}

/// The lab's trust, for every https:// URL this process dials: set once
/// from `--tls-ca` (or `STRATA_TLS_CA`) before any connection opens.
static CLIENT_CA: OnceLock<Option<PathBuf>> = OnceLock::new();
static CLIENTS: OnceLock<Result<[Arc<ClientConfig>; 2], String>> = OnceLock::new();

/// Set the certificate authority the lab's clients trust (`None`: the
/// system's). Only the first call counts.
pub fn trust(ca: Option<PathBuf>) {
    let _ = CLIENT_CA.set(ca);
}

/// The lab's client configuration: offering [`PRIORITY`] (control
/// requests, scrapes) or [`HTTP11`] (load). Built on first use.
pub fn lab_client(priority: bool) -> Result<Arc<ClientConfig>, String> {
    let both = CLIENTS.get_or_init(|| {
        let ca = CLIENT_CA.get().cloned().flatten();
        Ok([
            client_config(ca.as_deref(), HTTP11)?,
            client_config(ca.as_deref(), PRIORITY)?,
        ])
    });
    match both {
        Ok(c) => Ok(c[usize::from(priority)].clone()),
        Err(e) => Err(e.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_from_host_and_port() {
        assert_eq!(
            server_name("127.0.0.1:8443").unwrap(),
            ServerName::try_from("127.0.0.1").unwrap()
        );
        assert_eq!(
            server_name("strata-0.strata:8080").unwrap(),
            ServerName::try_from("strata-0.strata").unwrap()
        );
        assert_eq!(
            server_name("[::1]:8443").unwrap(),
            ServerName::try_from("::1").unwrap()
        );
    }

    #[test]
    fn plain_http_is_not_a_hello() {
        assert_eq!(hello(b"GET /v0/status HTTP/1.1\r\n\r\n"), Hello::Other);
        assert_eq!(hello(b""), Hello::Incomplete);
    }

    /// A real ClientHello, written by rustls's client, read back.
    fn client_hello(alpn: &[u8]) -> Vec<u8> {
        let roots = RootCertStore::empty();
        let mut c = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        c.alpn_protocols = vec![alpn.to_vec()];
        let mut conn =
            rustls::ClientConnection::new(Arc::new(c), server_name("node:1").unwrap()).unwrap();
        let mut out = Vec::new();
        conn.write_tls(&mut out).unwrap();
        out
    }

    #[test]
    fn the_priority_protocol_is_read_from_the_hello() {
        let p = client_hello(PRIORITY);
        assert_eq!(hello(&p), Hello::Priority);
        assert_eq!(hello(&client_hello(HTTP11)), Hello::Other);
        // Half a hello: not yet.
        assert_eq!(hello(&p[..p.len() / 2]), Hello::Incomplete);
    }
}
