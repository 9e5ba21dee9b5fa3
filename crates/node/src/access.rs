//! Who may call what (`docs/security.md`): each request's need
//! (`strata_api::access::Need`, from its method and path), the caller's
//! role (a bearer token from the tokens file, the operator token derived
//! from the cluster secret, or a verified client certificate's `OU=`), and
//! the answer when they do not match (`authorize`): `401` without
//! credentials, `403` with a role that may not. Owns the tokens file (read at start, again on
//! SIGHUP and when it changes) and the decision; must not verify
//! certificates (the TLS handshake did) or touch the internal channel's
//! secret (the cluster does).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};
use strata_api::routes;

use hyper::body::Incoming;
use hyper::header::HeaderValue;
use hyper::{Method, Request, Response, StatusCode};
use strata_api::access::{operator_token, same, token_digest, Need, Role};

use crate::reply::{text, Body};

/// Whether a data request (and a scrape) needs credentials.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    /// Data and metrics are served to anyone who reaches the port;
    /// operator endpoints still need operator credentials. Only when the
    /// operator asks for it (`--client-auth open`).
    Open,
    /// Data and metrics are served without credentials to loopback
    /// callers only (Redis's protected mode); anyone else needs a role
    /// that allows it. The default without a tokens file: a node that
    /// listens on loopback serves as `Open` would, one that listens
    /// beyond it is never open to the network by accident.
    Loopback,
    /// Everything but `/v0/status` needs a role that allows it.
    Required,
}

impl ClientAuth {
    pub fn name(self) -> &'static str {
        match self {
            ClientAuth::Open => "open",
            ClientAuth::Loopback => "loopback",
            ClientAuth::Required => "required",
        }
    }
}

impl std::str::FromStr for ClientAuth {
    type Err = String;
    fn from_str(s: &str) -> Result<ClientAuth, String> {
        match s {
            "open" => Ok(ClientAuth::Open),
            "loopback" => Ok(ClientAuth::Loopback),
            "required" => Ok(ClientAuth::Required),
            _ => Err(format!("client auth {s:?}: open, loopback or required")),
        }
    }
}

/// Whether a caller is on this machine's loopback (an IPv4 loopback
/// address reaching an IPv6 socket counts).
pub fn is_loopback(addr: &SocketAddr) -> bool {
    addr.ip().to_canonical().is_loopback()
}

/// What a connection proved when it opened: where it came from and, under
/// TLS, the verified client certificate's subject (set once the handshake
/// is done, before the first request is read).
#[derive(Debug, Default)]
pub struct Peer {
    pub addr: Option<SocketAddr>,
    pub cert: OnceLock<strata_tls::Subject>,
}

impl Peer {
    pub fn new(addr: Option<SocketAddr>, cert: Option<strata_tls::Subject>) -> Peer {
        let p = Peer {
            addr,
            cert: OnceLock::new(),
        };
        if let Some(c) = cert {
            let _ = p.cert.set(c);
        }
        p
    }

    /// The role a verified client certificate names (`OU=`), or why none.
    pub fn cert_role(&self) -> Option<Result<Role, String>> {
        let s = self.cert.get()?;
        Some(match s.ou.as_deref().and_then(Role::parse) {
            Some(r) => Ok(r),
            None => Err(format!(
                "the client certificate{} names no role (its OU= must be one of read, readwrite, monitor, operator, node; it is {})",
                s.cn.as_deref().map(|c| format!(" of {c:?}")).unwrap_or_default(),
                s.ou.as_deref().map(|o| format!("{o:?}")).unwrap_or("missing".into())
            )),
        })
    }
}

/// Why a request was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// `401`: no credentials, or ones the node does not know.
    Unauthenticated(String),
    /// `403`: a known caller whose role may not do this.
    Forbidden(String),
}

/// The tokens file, as last read: a token's digest to its role and name.
#[derive(Debug, Default)]
struct Tokens {
    by_digest: HashMap<String, (Role, String)>,
}

/// The node's access rules.
#[derive(Debug)]
pub struct Access {
    mode: ClientAuth,
    file: Option<PathBuf>,
    tokens: RwLock<Arc<Tokens>>,
    stamp: Mutex<Option<(std::time::SystemTime, u64)>>,
    /// The digest of the operator token derived from the cluster secret.
    operator: Option<String>,
    /// No cluster secret: a node on its own, whose operator endpoints are
    /// served to loopback callers without credentials.
    lone: bool,
}

/// What a request needs, from its method and path; `None` for the
/// internal channel (the cluster secret decides) and unknown paths.
pub fn need(method: &Method, path: &str) -> Option<Need> {
    let read = method == Method::GET || method == Method::HEAD;
    Some(match path {
        routes::STATUS => Need::Health,
        routes::ENTITY | routes::ENTITIES if read => Need::Read,
        routes::ENTITY | routes::ENTITIES => Need::Write,
        routes::CLUSTER => Need::Read,
        routes::METRICS => Need::Monitor,
        routes::CLUSTER_REPAIR | routes::CLUSTER_JOIN | routes::CLUSTER_LEAVE => Need::Operate,
        p if routes::under(p, routes::BACKUP) || p.starts_with(routes::DEBUG) => Need::Operate,
        _ => return None,
    })
}

impl Access {
    /// Rules from the tokens file (if any), the mode, and the cluster
    /// secret (if any). A tokens file that cannot be read, or has a bad
    /// line, is an error naming the file and line.
    pub fn new(
        file: Option<PathBuf>,
        mode: ClientAuth,
        secret: Option<&[u8]>,
    ) -> Result<Access, String> {
        let stamp = file.as_deref().and_then(stamp);
        let tokens = match &file {
            Some(f) => read_tokens(f)?,
            None => Tokens::default(),
        };
        Ok(Access {
            mode,
            file,
            tokens: RwLock::new(Arc::new(tokens)),
            stamp: Mutex::new(stamp),
            operator: secret.map(|s| token_digest(&operator_token(s))),
            lone: secret.is_none(),
        })
    }

    pub fn mode(&self) -> ClientAuth {
        self.mode
    }

    /// The tokens file, if there is one.
    pub fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Read the tokens file again if it changed (or `always`). `Ok(true)`:
    /// new requests are checked against it; on an error the tokens in use
    /// stay.
    pub fn reload(&self, always: bool) -> Result<bool, String> {
        let Some(f) = &self.file else {
            return Ok(false);
        };
        let now = stamp(f);
        let mut last = self.stamp.lock().unwrap_or_else(|e| e.into_inner());
        if !always && *last == now {
            return Ok(false);
        }
        *last = now;
        let fresh = read_tokens(f)?;
        *self.tokens.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(fresh);
        Ok(true)
    }

    /// Whether a request needing `need`, with this `Authorization` header
    /// value, from `peer`, may go ahead.
    pub fn check(
        &self,
        need: Need,
        authorization: Option<&[u8]>,
        peer: &Peer,
    ) -> Result<(), Refusal> {
        if need == Need::Health {
            return Ok(());
        }
        let (role, who) = match authorization {
            Some(h) => self.bearer(h)?,
            None => match peer.cert_role() {
                Some(Ok(r)) => (r, "the client certificate's role".to_string()),
                Some(Err(e)) => return Err(Refusal::Forbidden(e)),
                None => return self.anonymous(need, peer),
            },
        };
        if role.allows(need) {
            Ok(())
        } else {
            Err(Refusal::Forbidden(format!(
                "{who} is {:?}, which may not {}; that needs one of: {}",
                role.name(),
                what(need),
                Role::allowed_for(need).join(", ")
            )))
        }
    }

    fn anonymous(&self, need: Need, peer: &Peer) -> Result<(), Refusal> {
        let local = peer.addr.as_ref().is_some_and(is_loopback);
        let open = need != Need::Operate
            && match self.mode {
                ClientAuth::Open => true,
                ClientAuth::Loopback => local,
                ClientAuth::Required => false,
            };
        let lone_local = need == Need::Operate && self.lone && self.file.is_none() && local;
        if open || lone_local {
            return Ok(());
        }
        let mut why = format!(
            "{} needs credentials: `Authorization: Bearer TOKEN` or a client certificate, with one of the roles {}",
            capital(what(need)),
            Role::allowed_for(need).join(", ")
        );
        if self.mode == ClientAuth::Loopback && need != Need::Operate {
            why.push_str(&format!(
                ". This node serves callers without credentials on loopback only (it has no tokens file and --client-auth is not open), and {} is not a loopback address. To configure them, make a tokens file (`strata token new readwrite app --append tokens`) and start every member with `--auth-tokens tokens`, or give clients certificates (`--tls-ca`); to serve anyone who reaches the port, start it with `--client-auth open` (docs/security.md)",
                peer.addr.map(|a| a.ip().to_string()).unwrap_or("the caller's".into())
            ));
        }
        Err(Refusal::Unauthenticated(why))
    }

    /// The role of a bearer token, and how to name it in an answer.
    fn bearer(&self, header: &[u8]) -> Result<(Role, String), Refusal> {
        let token = std::str::from_utf8(header)
            .ok()
            .and_then(|h| {
                let (scheme, rest) = h.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then(|| rest.trim())
            })
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                Refusal::Unauthenticated(
                    "the Authorization header must be `Bearer TOKEN`".to_string(),
                )
            })?;
        // The token's digest against every one the node knows, each in
        // constant time (`same`), none skipped: how long the check takes
        // says nothing of which token came close.
        let digest = token_digest(token);
        if self
            .operator
            .as_deref()
            .is_some_and(|op| same(op.as_bytes(), digest.as_bytes()))
        {
            return Ok((Role::Operator, "the cluster's operator token".to_string()));
        }
        let tokens = self
            .tokens
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let mut known = None;
        for (d, holder) in &tokens.by_digest {
            if same(d.as_bytes(), digest.as_bytes()) {
                known = Some(holder);
            }
        }
        match known {
            Some((role, name)) => Ok((*role, format!("token {name:?}"))),
            None => Err(Refusal::Unauthenticated(
                "unknown token (not in this node's tokens file, and not the cluster's operator token)"
                    .to_string(),
            )),
        }
    }
}

/// The answer refusing a request whose caller may not make it: 401 (with
/// `WWW-Authenticate: Bearer`) without credentials the node knows, 403 for
/// a role that may not; `None` when it may go ahead.
pub fn authorize(access: &Access, req: &Request<Incoming>, peer: &Peer) -> Option<Response<Body>> {
    let need = need(req.method(), req.uri().path())?;
    let auth = req
        .headers()
        .get(hyper::header::AUTHORIZATION)
        .map(|v| v.as_bytes());
    match access.check(need, auth, peer) {
        Ok(()) => None,
        Err(Refusal::Unauthenticated(why)) => {
            let mut r = text(StatusCode::UNAUTHORIZED, &why);
            r.headers_mut().insert(
                hyper::header::WWW_AUTHENTICATE,
                HeaderValue::from_static("Bearer realm=\"strata\""),
            );
            Some(r)
        }
        Err(Refusal::Forbidden(why)) => Some(text(StatusCode::FORBIDDEN, &why)),
    }
}

fn what(need: Need) -> &'static str {
    match need {
        Need::Health => "read the status",
        Need::Read => "read data",
        Need::Monitor => "read metrics",
        Need::Write => "write data",
        Need::Operate => "operate the node (backup, repair, membership, profiles)",
    }
}

fn capital(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

fn stamp(path: &Path) -> Option<(std::time::SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// Create a tokens file at `path` (it must not exist; mode 0600) holding
/// an operator token `admin` and a readwrite token `app`; returns each
/// role, name and token, to be shown once.
pub fn create_tokens_file(
    path: &Path,
) -> Result<Vec<(&'static str, &'static str, String)>, String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let made: Vec<(Role, &'static str, String)> =
        [(Role::Operator, "admin"), (Role::ReadWrite, "app")]
            .into_iter()
            .map(|(r, n)| (r, n, strata_api::access::random_token()))
            .collect();
    let text: String = made
        .iter()
        .map(|(r, n, t)| strata_api::access::token_line(*r, n, t) + "\n")
        .collect();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("creating the tokens file {}: {e}", path.display()))?;
    f.write_all(text.as_bytes())
        .and_then(|()| f.sync_all())
        .map_err(|e| format!("writing the tokens file {}: {e}", path.display()))?;
    Ok(made.into_iter().map(|(r, n, t)| (r.name(), n, t)).collect())
}

/// A tokens file: one token a line, `ROLE NAME SHA256-HEX` (what
/// `strata token new` prints), `#` comments and blank lines ignored.
fn read_tokens(path: &Path) -> Result<Tokens, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut t = Tokens::default();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let at = |e: String| format!("{}:{}: {e}", path.display(), n + 1);
        let f: Vec<&str> = line.split_whitespace().collect();
        let [role, name, digest] = f[..] else {
            return Err(at("a line is `ROLE NAME SHA256-HEX`".into()));
        };
        let role = Role::parse(role).ok_or_else(|| {
            at(format!(
                "unknown role {role:?}: read, readwrite, monitor or operator"
            ))
        })?;
        if role == Role::Node {
            return Err(at("role node is for member certificates, not tokens".into()));
        }
        if digest.len() != 64 || !digest.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(at(format!(
                "{digest:?} is not a SHA-256 in hex (64 digits; `strata token new` prints one)"
            )));
        }
        let digest = digest.to_ascii_lowercase();
        if t.by_digest.contains_key(&digest) {
            return Err(at(format!("token of {name:?} appears twice")));
        }
        t.by_digest.insert(digest, (role, name.to_string()));
    }
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(mode: ClientAuth, secret: Option<&[u8]>) -> (tempfile::TempDir, Access) {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("tokens");
        std::fs::write(
            &f,
            format!(
                "# test\nread reader {}\nreadwrite app {}\nmonitor prom {}\noperator ops {}\n",
                token_digest("r-token"),
                token_digest("rw-token"),
                token_digest("m-token"),
                token_digest("o-token")
            ),
        )
        .unwrap();
        let a = Access::new(Some(f), mode, secret).unwrap();
        (d, a)
    }

    fn bearer(t: &str) -> Vec<u8> {
        format!("Bearer {t}").into_bytes()
    }

    #[test]
    fn each_token_gets_what_its_role_allows() {
        let (_d, a) = rules(ClientAuth::Required, Some(b"0123456789abcdef"));
        let p = Peer::default();
        use Need::*;
        for (token, allowed) in [
            ("r-token", [true, true, false, false, false]),
            ("rw-token", [true, true, false, true, false]),
            ("m-token", [true, false, true, false, false]),
            ("o-token", [true, true, true, true, true]),
        ] {
            let got = [Health, Read, Monitor, Write, Operate]
                .map(|n| a.check(n, Some(&bearer(token)), &p).is_ok());
            assert_eq!(got, allowed, "{token}");
        }
        let op = operator_token(b"0123456789abcdef");
        assert_eq!(a.check(Operate, Some(&bearer(&op)), &p), Ok(()));
        // Unknown and malformed tokens: 401, even where anonymous is fine.
        assert!(matches!(
            a.check(Read, Some(&bearer("nope")), &p),
            Err(Refusal::Unauthenticated(_))
        ));
        assert!(matches!(
            a.check(Read, Some(b"Basic eDp5"), &p),
            Err(Refusal::Unauthenticated(_))
        ));
        assert!(matches!(
            a.check(Read, None, &p),
            Err(Refusal::Unauthenticated(_))
        ));
        assert_eq!(a.check(Health, None, &p), Ok(()));
        match a.check(Write, Some(&bearer("r-token")), &p) {
            Err(Refusal::Forbidden(m)) => assert!(m.contains("readwrite, operator"), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn open_mode_serves_data_but_never_operations_anonymously() {
        let (_d, a) = rules(ClientAuth::Open, Some(b"0123456789abcdef"));
        let local = Peer::new(Some("127.0.0.1:5000".parse().unwrap()), None);
        for n in [Need::Read, Need::Write, Need::Monitor] {
            assert_eq!(a.check(n, None, &local), Ok(()));
        }
        assert!(matches!(
            a.check(Need::Operate, None, &local),
            Err(Refusal::Unauthenticated(_))
        ));
        // A lone node (no secret, no tokens file): loopback may operate,
        // nobody else.
        let lone = Access::new(None, ClientAuth::Open, None).unwrap();
        assert_eq!(lone.check(Need::Operate, None, &local), Ok(()));
        let far = Peer::new(Some("10.0.0.7:5000".parse().unwrap()), None);
        assert!(lone.check(Need::Operate, None, &far).is_err());
    }

    #[test]
    fn loopback_mode_serves_data_without_credentials_to_loopback_callers_only() {
        let a = Access::new(None, ClientAuth::Loopback, Some(b"0123456789abcdef")).unwrap();
        let v4 = Peer::new(Some("127.0.0.1:5000".parse().unwrap()), None);
        let v6 = Peer::new(Some("[::1]:5000".parse().unwrap()), None);
        let mapped = Peer::new(Some("[::ffff:127.0.0.1]:5000".parse().unwrap()), None);
        let far = Peer::new(Some("192.0.2.2:5000".parse().unwrap()), None);
        for n in [Need::Read, Need::Write, Need::Monitor] {
            for local in [&v4, &v6, &mapped] {
                assert_eq!(a.check(n, None, local), Ok(()), "{n:?} {:?}", local.addr);
            }
            match a.check(n, None, &far) {
                Err(Refusal::Unauthenticated(m)) => assert!(
                    m.contains("loopback only")
                        && m.contains("--auth-tokens")
                        && m.contains("--client-auth open")
                        && m.contains("192.0.2.2"),
                    "{m}"
                ),
                other => panic!("{n:?}: {other:?}"),
            }
        }
        assert_eq!(a.check(Need::Health, None, &far), Ok(()));
        // Credentials work from anywhere; operating needs them even here.
        let op = operator_token(b"0123456789abcdef");
        assert_eq!(a.check(Need::Write, Some(&bearer(&op)), &far), Ok(()));
        assert!(a.check(Need::Operate, None, &v4).is_err());
        assert_eq!("loopback".parse::<ClientAuth>(), Ok(ClientAuth::Loopback));
    }

    #[test]
    fn certificates_name_their_role() {
        let a = Access::new(None, ClientAuth::Required, Some(b"0123456789abcdef")).unwrap();
        let cert = |ou: Option<&str>| {
            Peer::new(
                None,
                Some(strata_tls::Subject {
                    ou: ou.map(str::to_string),
                    cn: Some("alice".into()),
                }),
            )
        };
        assert_eq!(a.check(Need::Read, None, &cert(Some("read"))), Ok(()));
        assert!(matches!(
            a.check(Need::Write, None, &cert(Some("read"))),
            Err(Refusal::Forbidden(_))
        ));
        assert_eq!(
            a.check(Need::Operate, None, &cert(Some("operator"))),
            Ok(())
        );
        match a.check(Need::Read, None, &cert(None)) {
            Err(Refusal::Forbidden(m)) => assert!(m.contains("alice") && m.contains("OU="), "{m}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_bad_tokens_file_names_its_line_and_a_reload_keeps_the_old() {
        let (d, a) = rules(ClientAuth::Required, None);
        let f = d.path().join("tokens");
        std::fs::write(&f, "read x abc\n").unwrap();
        let e = a.reload(true).unwrap_err();
        assert!(e.contains("tokens:1") && e.contains("SHA-256"), "{e}");
        assert_eq!(
            a.check(Need::Read, Some(&bearer("r-token")), &Peer::default()),
            Ok(())
        );
        std::fs::write(&f, format!("readwrite new {}\n", token_digest("n-token"))).unwrap();
        assert!(a.reload(true).unwrap());
        assert!(a
            .check(Need::Read, Some(&bearer("r-token")), &Peer::default())
            .is_err());
        assert_eq!(
            a.check(Need::Write, Some(&bearer("n-token")), &Peer::default()),
            Ok(())
        );
        std::fs::write(&f, format!("node n {}\n", token_digest("z"))).unwrap();
        assert!(a.reload(true).unwrap_err().contains("node"));
    }

    #[test]
    fn a_created_tokens_file_gives_its_tokens_their_roles() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("tokens");
        let made = create_tokens_file(&f).unwrap();
        let mode = std::fs::metadata(&f).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o600
        );
        let text = std::fs::read_to_string(&f).unwrap();
        let a = Access::new(Some(f.clone()), ClientAuth::Required, None).unwrap();
        for (role, _, token) in &made {
            assert!(
                !text.contains(token.as_str()),
                "the file holds digests only"
            );
            let want = Role::parse(role).unwrap();
            for need in [Need::Read, Need::Write, Need::Monitor, Need::Operate] {
                assert_eq!(
                    a.check(need, Some(&bearer(token)), &Peer::default())
                        .is_ok(),
                    want.allows(need),
                    "{role} {need:?}"
                );
            }
        }
        assert!(create_tokens_file(&f).unwrap_err().contains("exists"));
    }

    #[test]
    fn needs_follow_method_and_path() {
        assert_eq!(need(&Method::GET, "/v0/entity"), Some(Need::Read));
        assert_eq!(need(&Method::PUT, "/v0/entity"), Some(Need::Write));
        assert_eq!(need(&Method::DELETE, "/v0/entity"), Some(Need::Write));
        assert_eq!(
            need(&Method::GET, "/v0/backup/x/MANIFEST"),
            Some(Need::Operate)
        );
        assert_eq!(
            need(&Method::POST, "/v0/cluster/leave"),
            Some(Need::Operate)
        );
        assert_eq!(need(&Method::GET, "/debug/pprof/heap"), Some(Need::Operate));
        assert_eq!(need(&Method::GET, "/metrics"), Some(Need::Monitor));
        assert_eq!(need(&Method::GET, "/v0/status"), Some(Need::Health));
        assert_eq!(need(&Method::GET, "/v0/internal"), None);
    }
}
