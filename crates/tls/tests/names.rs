//! The certificates `deploy/tls/make-certs.sh` makes verify for the names
//! the nodes are reached by, and only for those: a handshake in memory
//! between the node's configuration and a client's, for each name a
//! client would dial. The Kubernetes names are the ones
//! `deploy/kubernetes/tls/strata.yaml` gives its pods
//! (`strata-N.strata.NAMESPACE.svc`) and their fully qualified form, from
//! the wildcards docs/operations.md tells operators to put in the
//! certificate. (A wildcard over one label, `*.strata`, is refused by
//! rustls as `*.com` would be, which is why the pods are not named
//! `strata-N.strata` under TLS: this test found it.)

use std::path::{Path, PathBuf};
use std::process::Command;

use std::sync::Arc;

use rustls::{ClientConfig, ClientConnection, ServerConnection};

fn make_certs(dir: &Path, names: &[&str]) -> bool {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../deploy/tls/make-certs.sh");
    match Command::new("sh").arg(script).arg(dir).args(names).output() {
        Ok(o) if o.status.success() => true,
        Ok(o) => panic!("make-certs.sh: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => panic!("sh: {e}"),
    }
}

fn openssl_present() -> bool {
    Command::new("openssl").arg("version").output().is_ok()
}

/// A whole handshake in memory, the client checking the certificate
/// against `name`: Ok, or the client's error in words.
fn handshake(dir: &Path, name: &str) -> Result<(), String> {
    let client =
        strata_tls::client_config(Some(&dir.join("ca.pem")), strata_tls::HTTP11, None).unwrap();
    handshake_with(client, dir, name)
}

/// The same with the client's configuration given: `dir`'s node
/// certificate shown to it.
fn handshake_with(client: Arc<ClientConfig>, dir: &Path, name: &str) -> Result<(), String> {
    let (server, _cert) =
        strata_tls::server_config(&dir.join("node.pem"), &dir.join("node.key"), None).unwrap();
    let sn = strata_tls::server_name(&format!("{name}:8080"))?;
    let mut c = ClientConnection::new(client, sn).map_err(|e| e.to_string())?;
    let mut s = ServerConnection::new(server).map_err(|e| e.to_string())?;
    for _ in 0..10 {
        let mut buf = Vec::new();
        while c.wants_write() {
            c.write_tls(&mut buf).unwrap();
        }
        let mut rd = &buf[..];
        while !rd.is_empty() {
            s.read_tls(&mut rd).unwrap();
        }
        s.process_new_packets()
            .map_err(|e| format!("server: {e}"))?;
        let mut buf = Vec::new();
        while s.wants_write() {
            s.write_tls(&mut buf).unwrap();
        }
        let mut rd = &buf[..];
        while !rd.is_empty() {
            c.read_tls(&mut rd).unwrap();
        }
        c.process_new_packets().map_err(|e| e.to_string())?;
        if !c.is_handshaking() && !s.is_handshaking() {
            return Ok(());
        }
    }
    Err("the handshake did not finish".into())
}

#[test]
fn the_kubernetes_certificate_verifies_for_every_pods_names_and_no_other() {
    if !openssl_present() {
        panic!("tls names: openssl is missing; .ci/run installs it (apt-get install openssl)");
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("certs");
    assert!(make_certs(
        &dir,
        &["*.strata.default.svc", "*.strata.default.svc.cluster.local"]
    ));
    for pod in 0..3 {
        for name in [
            format!("strata-{pod}.strata.default.svc"),
            format!("strata-{pod}.strata.default.svc.cluster.local"),
        ] {
            handshake(&dir, &name).unwrap_or_else(|e| panic!("{name}: {e}"));
        }
    }
    // Names the certificate does not cover are refused: the short
    // name, another Service, another namespace, two labels under the
    // wildcard, an IP.
    for name in [
        "strata-0.strata",
        "strata-0.other.default.svc",
        "strata-0.strata.prod.svc",
        "a.strata-0.strata.default.svc",
        "127.0.0.1",
    ] {
        let e = handshake(&dir, name).expect_err(name);
        assert!(
            e.contains("NotValidForName") || e.contains("not valid for"),
            "{name}: {e}"
        );
    }
}

#[test]
fn a_local_certificate_verifies_for_its_ip_and_name_and_only_with_its_ca() {
    if !openssl_present() {
        panic!("tls names: openssl is missing; .ci/run installs it (apt-get install openssl)");
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("certs");
    assert!(make_certs(&dir, &["127.0.0.1", "localhost"]));
    handshake(&dir, "127.0.0.1").unwrap();
    handshake(&dir, "localhost").unwrap();
    assert!(handshake(&dir, "127.0.0.2").is_err());
    // Another CA's client refuses this node's certificate.
    let other = tmp.path().join("other");
    assert!(make_certs(&other, &["127.0.0.1"]));
    std::fs::copy(other.join("ca.pem"), dir.join("ca.pem")).unwrap();
    let e = handshake(&dir, "127.0.0.1").unwrap_err();
    assert!(e.contains("UnknownIssuer"), "{e}");
}

/// A node's trust in its peers follows its `--tls-ca` file: a CA rotated
/// in is trusted after a reload, a bad file leaves the old trust in place.
#[test]
fn a_peer_trust_follows_its_ca_file_on_reload() {
    if !openssl_present() {
        panic!("tls names: openssl is missing; .ci/run installs it (apt-get install openssl)");
    }
    let tmp = tempfile::tempdir().unwrap();
    let (old, new) = (tmp.path().join("old"), tmp.path().join("new"));
    assert!(make_certs(&old, &["127.0.0.1"]));
    assert!(make_certs(&new, &["127.0.0.1"]));
    let file = tmp.path().join("trusted.pem");
    std::fs::copy(old.join("ca.pem"), &file).unwrap();
    let (client, trust) = strata_tls::peer_config(Some(&file), None).unwrap();
    let trust = trust.expect("a file's trust is reloadable");
    handshake_with(client.clone(), &old, "127.0.0.1").unwrap();
    assert!(handshake_with(client.clone(), &new, "127.0.0.1").is_err());
    // Nothing changed: nothing reloaded.
    assert_eq!(trust.reload(false), Ok(false));
    // Both CAs in the file (a rotation's first step): both trusted.
    let both = [old.join("ca.pem"), new.join("ca.pem")]
        .map(|p| std::fs::read_to_string(p).unwrap())
        .concat();
    std::fs::write(&file, both).unwrap();
    assert_eq!(trust.reload(true), Ok(true));
    handshake_with(client.clone(), &old, "127.0.0.1").unwrap();
    handshake_with(client.clone(), &new, "127.0.0.1").unwrap();
    // A file cut short: an error, and the trust in use stays.
    std::fs::write(&file, "-----BEGIN CERTIFICATE-----\nMIIB\n").unwrap();
    let e = trust.reload(true).unwrap_err();
    assert!(e.contains("trusted.pem"), "{e}");
    handshake_with(client.clone(), &new, "127.0.0.1").unwrap();
    // The new CA alone (the rotation's end): the old is refused.
    std::fs::copy(new.join("ca.pem"), &file).unwrap();
    assert_eq!(trust.reload(true), Ok(true));
    handshake_with(client.clone(), &new, "127.0.0.1").unwrap();
    let e = handshake_with(client, &old, "127.0.0.1").unwrap_err();
    assert!(e.contains("UnknownIssuer"), "{e}");
}
