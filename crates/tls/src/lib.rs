//! TLS for Strata's HTTP port: the node's certificate and key read from PEM
//! files into a rustls server configuration, the trust a client (a peer
//! dialing a member, or the lab) puts in the certificates it is shown, and
//! the ALPN protocol a member's or an operator's connection offers so that
//! an overloaded node can tell it from a client's before it reads (or even
//! decrypts) a byte of its requests. Owns the rustls configurations and the
//! protocol names; must not open connections or speak HTTP (the node and
//! the lab do).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::{ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, ServerConfig};

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

/// The node's side: its certificate chain and private key (PEM files),
/// served through a [`Certificate`] that [`Certificate::reload`] swaps
/// for what the files hold later. Both protocol names are accepted; a
/// client offering neither gets no ALPN and plain HTTP/1.1.
///
///
/// With `clients` (a [`Trust`]: a CA file, reloadable), a client may
/// present a certificate: one that this CA signed is verified in the
/// handshake and its subject is then the caller's identity ([`subject`]);
/// one it did not sign fails the handshake. A client without a
/// certificate is let through: whether it needs one is the node's
/// decision, request by request.
pub fn server_config(
    cert: &Path,
    key: &Path,
    clients: Option<Arc<Trust>>,
) -> Result<(Arc<ServerConfig>, Arc<Certificate>), String> {
    server_config_with(Certificate::load(cert, key)?, clients)
}

/// As [`server_config`], with the certificate already loaded.
pub fn server_config_with(
    current: Arc<Certificate>,
    clients: Option<Arc<Trust>>,
) -> Result<(Arc<ServerConfig>, Arc<Certificate>), String> {
    let builder = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match clients {
        None => builder.with_no_client_auth(),
        Some(t) => builder.with_client_cert_verifier(t),
    };
    let mut c = builder.with_cert_resolver(current.clone());
    c.alpn_protocols = vec![HTTP11.to_vec(), PRIORITY.to_vec()];
    Ok((Arc::new(c), current))
}

/// What a verified client certificate says of its holder: the subject's
/// organizational unit (`OU=`, Strata reads it as the role) and common
/// name (`CN=`, the holder's name in logs).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subject {
    pub ou: Option<String>,
    pub cn: Option<String>,
}

/// The subject of a certificate (DER); `None` if it does not parse.
pub fn subject(cert: &CertificateDer<'_>) -> Option<Subject> {
    let (_, c) = x509_parser::parse_x509_certificate(cert.as_ref()).ok()?;
    let s = c.subject();
    let ou = s.iter_organizational_unit().next();
    let cn = s.iter_common_name().next();
    let text = |a: Option<&x509_parser::x509::AttributeTypeAndValue<'_>>| {
        a.and_then(|a| a.as_str().ok()).map(str::to_string)
    };
    Some(Subject {
        ou: text(ou),
        cn: text(cn),
    })
}

/// The node's certificate and key, as its files held when last loaded.
/// New handshakes get what `reload` last loaded; connections already open
/// keep theirs.
#[derive(Debug)]
pub struct Certificate {
    cert: PathBuf,
    key: PathBuf,
    now: RwLock<Arc<CertifiedKey>>,
    /// The files' modification times and lengths when last loaded.
    stamps: Mutex<Stamps>,
}

type Stamps = [Option<(std::time::SystemTime, u64)>; 2];

fn stamps(cert: &Path, key: &Path) -> Stamps {
    [cert, key].map(|p| {
        std::fs::metadata(p)
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())))
    })
}

/// The chain and key in the files, checked to belong together.
fn load_certified(cert: &Path, key: &Path) -> Result<Arc<CertifiedKey>, String> {
    let chain = certificates(cert)?;
    let der = PrivateKeyDer::from_pem_file(key).map_err(|e| {
        format!(
            "{} (no private key in PEM form: PKCS#8, PKCS#1 or SEC1)",
            pem_error(key, e)
        )
    })?;
    let signing = provider()
        .key_provider
        .load_private_key(der)
        .map_err(|e| format!("{}: {e}", key.display()))?;
    let certified = CertifiedKey::new(chain, signing);
    certified.keys_match().map_err(|e| {
        format!(
            "{} and {} do not belong together: {e}",
            cert.display(),
            key.display()
        )
    })?;
    Ok(Arc::new(certified))
}

impl Certificate {
    /// The chain and key in the files, checked to belong together.
    pub fn load(cert: &Path, key: &Path) -> Result<Arc<Certificate>, String> {
        // The files' stamps before they are read: a change in between is
        // then seen by the next reload.
        let stamped = stamps(cert, key);
        Ok(Arc::new(Certificate {
            cert: cert.to_path_buf(),
            key: key.to_path_buf(),
            now: RwLock::new(load_certified(cert, key)?),
            stamps: Mutex::new(stamped),
        }))
    }

    fn current(&self) -> Arc<CertifiedKey> {
        self.now.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Load the files again if they changed since the last load (or
    /// `always`). `Ok(true)`: new handshakes now get the new certificate.
    /// On an error (a file half written, a key that does not match) the
    /// certificate in use stays.
    pub fn reload(&self, always: bool) -> Result<bool, String> {
        let now = stamps(&self.cert, &self.key);
        let mut last = self.stamps.lock().unwrap_or_else(|e| e.into_inner());
        if !always && *last == now {
            return Ok(false);
        }
        // Remembered even on an error: the same bad files are reported
        // once, not at every check.
        *last = now;
        let fresh = load_certified(&self.cert, &self.key)?;
        *self.now.write().unwrap_or_else(|e| e.into_inner()) = fresh;
        Ok(true)
    }

    /// The certificate files, for logs.
    pub fn files(&self) -> (&Path, &Path) {
        (&self.cert, &self.key)
    }
}

impl ResolvesServerCert for Certificate {
    fn resolve(&self, _: rustls::server::ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }
}

/// A PEM reading error in words (rustls's own shows markers as bytes).
fn pem_error(path: &Path, e: rustls::pki_types::pem::Error) -> String {
    use rustls::pki_types::pem::Error as E;
    let what = match e {
        E::MissingSectionEnd { end_marker } => format!(
            "a PEM section without its END {} line (a file cut short?)",
            String::from_utf8_lossy(&end_marker)
        ),
        E::IllegalSectionStart { line } => {
            format!("a bad BEGIN line: {}", String::from_utf8_lossy(&line))
        }
        other => other.to_string(),
    };
    format!("{}: {what}", path.display())
}

/// Every certificate in a PEM file; none is an error naming the file.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .map_err(|e| pem_error(path, e))?
        .collect::<Result<_, _>>()
        .map_err(|e| pem_error(path, e))?;
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

/// The certificate authorities a node trusts when it dials its peers
/// (`--tls-ca`), as the file held when last loaded: a verifier that
/// [`Trust::reload`] swaps, so that a CA rotated in (a bundle of the old
/// and the new, then the new alone) is trusted without a restart.
/// Connections already open stay; new ones are checked against what was
/// last loaded.
#[derive(Debug)]
pub struct Trust {
    ca: PathBuf,
    now: RwLock<Verifiers>,
    stamp: Mutex<Option<(std::time::SystemTime, u64)>>,
}

/// What one CA file verifies: servers (a node's peers, for the dialing
/// node) and clients (certificates shown to a node).
#[derive(Debug, Clone)]
struct Verifiers {
    servers: Arc<WebPkiServerVerifier>,
    clients: Arc<dyn ClientCertVerifier>,
}

fn stamp(path: &Path) -> Option<(std::time::SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

fn verifier(ca: &Path) -> Result<Verifiers, String> {
    let roots = Arc::new(roots(Some(ca))?);
    let fail = |e: rustls::server::VerifierBuilderError| format!("{}: {e}", ca.display());
    Ok(Verifiers {
        servers: WebPkiServerVerifier::builder_with_provider(roots.clone(), provider())
            .build()
            .map_err(fail)?,
        clients: WebPkiClientVerifier::builder_with_provider(roots, provider())
            .allow_unauthenticated()
            .build()
            .map_err(fail)?,
    })
}

impl Trust {
    /// The authorities in the CA file `ca` (PEM).
    pub fn load(ca: &Path) -> Result<Arc<Trust>, String> {
        Ok(Arc::new(Trust {
            ca: ca.to_path_buf(),
            stamp: Mutex::new(stamp(ca)),
            now: RwLock::new(verifier(ca)?),
        }))
    }

    /// Load the file again if it changed since the last load (or
    /// `always`). `Ok(true)`: new connections are checked against it. On
    /// an error the authorities in use stay.
    pub fn reload(&self, always: bool) -> Result<bool, String> {
        let now = stamp(&self.ca);
        let mut last = self.stamp.lock().unwrap_or_else(|e| e.into_inner());
        if !always && *last == now {
            return Ok(false);
        }
        *last = now;
        let fresh = verifier(&self.ca)?;
        *self.now.write().unwrap_or_else(|e| e.into_inner()) = fresh;
        Ok(true)
    }

    /// The CA file, for logs.
    pub fn file(&self) -> &Path {
        &self.ca
    }

    fn current(&self) -> Arc<WebPkiServerVerifier> {
        self.now
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .servers
            .clone()
    }

    fn clients(&self) -> Arc<dyn ClientCertVerifier> {
        self.now
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clients
            .clone()
    }
}

/// Client certificates are optional (the node decides, request by
/// request, what needs one) and checked against what was last loaded.
impl ClientCertVerifier for Trust {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        self.clients()
            .verify_client_cert(end_entity, intermediates, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.clients().verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.clients().verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.clients().supported_verify_schemes()
    }
}

impl ServerCertVerifier for Trust {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        self.current().verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        )
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current().verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.current().verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.current().supported_verify_schemes()
    }
}

/// Presents the certificate as a client's (a node to its peers, the lab
/// to a node that asks for one): whatever `reload` last loaded.
impl rustls::client::ResolvesClientCert for Certificate {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<CertifiedKey>> {
        Some(self.current())
    }

    fn has_certs(&self) -> bool {
        true
    }
}

/// A node's side as a client of its peers: trusting `ca` (reloadable:
/// the [`Trust`] is returned) or the system's roots, offering
/// [`PRIORITY`], presenting `own` (the node's certificate) when a peer
/// asks for a client certificate.
pub fn peer_config(
    ca: Option<&Path>,
    own: Option<Arc<Certificate>>,
) -> Result<(Arc<ClientConfig>, Option<Arc<Trust>>), String> {
    let Some(ca) = ca else {
        return Ok((client_config(None, PRIORITY, own)?, None));
    };
    let trust = Trust::load(ca)?;
    let c = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(trust.clone());
    let mut c = presenting(c, own);
    c.alpn_protocols = vec![PRIORITY.to_vec()];
    Ok((Arc::new(c), Some(trust)))
}

/// A client configuration that shows `own` when a server asks for a
/// client certificate (none without it).
fn presenting(
    c: rustls::ConfigBuilder<ClientConfig, rustls::client::WantsClientCert>,
    own: Option<Arc<Certificate>>,
) -> ClientConfig {
    match own {
        Some(own) => c.with_client_cert_resolver(own),
        None => c.with_no_client_auth(),
    }
}

/// A client's side: trusting `ca` (or the system's roots), offering
/// `alpn`, presenting `own` if a node asks for a client certificate.
pub fn client_config(
    ca: Option<&Path>,
    alpn: &[u8],
    own: Option<Arc<Certificate>>,
) -> Result<Arc<ClientConfig>, String> {
    let c = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots(ca)?);
    let mut c = presenting(c, own);
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
/// The lab's client certificate and key, if it has one (`--tls-client-cert`).
static CLIENT_ID: OnceLock<Option<(PathBuf, PathBuf)>> = OnceLock::new();
static CLIENTS: OnceLock<Result<[Arc<ClientConfig>; 2], String>> = OnceLock::new();

/// Set the certificate authority the lab's clients trust (`None`: the
/// system's). Only the first call counts.
pub fn trust(ca: Option<PathBuf>) {
    let _ = CLIENT_CA.set(ca);
}

/// Set the certificate and key (PEM files) the lab presents to a node that
/// asks for a client certificate. Only the first call counts.
pub fn identity(cert_and_key: Option<(PathBuf, PathBuf)>) {
    let _ = CLIENT_ID.set(cert_and_key);
}

/// The lab's client configuration: offering [`PRIORITY`] (control
/// requests, scrapes) or [`HTTP11`] (load). Built on first use.
pub fn lab_client(priority: bool) -> Result<Arc<ClientConfig>, String> {
    let both = CLIENTS.get_or_init(|| {
        let ca = CLIENT_CA.get().cloned().flatten();
        let own = match CLIENT_ID.get().cloned().flatten() {
            Some((cert, key)) => Some(Certificate::load(&cert, &key)?),
            None => None,
        };
        // The trust read once; the two differ only in what they offer.
        let http = client_config(ca.as_deref(), HTTP11, own)?;
        let mut priority = (*http).clone();
        priority.alpn_protocols = vec![PRIORITY.to_vec()];
        Ok([http, Arc::new(priority)])
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
