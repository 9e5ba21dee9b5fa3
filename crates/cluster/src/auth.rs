//! Authentication of internal traffic with the cluster's shared secret
//! (HMAC-SHA256). Two layers: a token the dialing node puts on its upgrade
//! request (so the receiving node can refuse a client without the secret
//! before any replica operation is possible), and a mutual
//! challenge-response on the connection itself once it is upgraded (so a
//! recorded token cannot be replayed, and the dialer knows it reached a
//! member). Owns the secret's use; must not know how the connection was
//! opened.

use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;
use strata_api::access::same;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

type HmacSha256 = Hmac<Sha256>;

/// The cluster's shared secret.
#[derive(Clone)]
pub struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// The secret, trimmed of surrounding white space, if it is one a
    /// machine made (`strength::check`: at least 128 bits as hex or
    /// base64 whose characters look random, and not published in Strata's
    /// repository). A refusal says why and how to make one.
    pub fn new(s: impl Into<Vec<u8>>) -> Result<Secret, String> {
        let s: Vec<u8> = s.into();
        let trimmed = s.trim_ascii().to_vec();
        crate::strength::check(&trimmed).map_err(|why| format!("{why}; {MAKE_ONE}"))?;
        Ok(Secret(trimmed))
    }

    /// A fresh random secret (32 bytes from the system's generator, hex).
    pub fn generate() -> Secret {
        Secret(Secret::generate_hex().into_bytes())
    }

    /// The secret's bytes (trimmed), for what is derived from it (the
    /// operator token).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// A fresh random secret, hex (for `strata cluster up`).
    pub fn generate_hex() -> String {
        strata_api::access::random_secret()
    }

    fn mac(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut m = HmacSha256::new_from_slice(&self.0).expect("any key length");
        for p in parts {
            m.update(&(p.len() as u32).to_le_bytes());
            m.update(p);
        }
        m.finalize().into_bytes().into()
    }

    /// The token a node puts on its upgrade request: `nonce.mac`, hex.
    pub fn upgrade_token(&self, from: &str) -> String {
        let mut nonce = [0u8; 16];
        rand::rng().fill_bytes(&mut nonce);
        let mac = self.mac(&[b"strata-upgrade-v0", &nonce, from.as_bytes()]);
        format!("{}.{}", hex(&nonce), hex(&mac))
    }

    /// Check a token made by `upgrade_token(from)` (constant time).
    pub fn check_upgrade_token(&self, from: &str, token: &str) -> bool {
        let Some((n, m)) = token.split_once('.') else {
            return false;
        };
        let (Some(nonce), Some(mac)) = (unhex(n), unhex(m)) else {
            return false;
        };
        let want = self.mac(&[b"strata-upgrade-v0", &nonce, from.as_bytes()]);
        same(&want, &mac)
    }
}

/// How to make a secret, for refusals.
pub const MAKE_ONE: &str =
    "make one with `strata secret new --out FILE` (a new file only its owner reads; or `(umask 077; openssl rand -hex 32 > FILE)`) and give every member --cluster-secret-file FILE";

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || s.len() > 128 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("peer failed the cluster-secret challenge")]
    Refused,
    #[error("handshake: {0}")]
    Io(#[from] std::io::Error),
}

/// The accepting side: challenge the dialer, answer its challenge. Returns
/// the dialer's member id.
pub async fn accept<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    secret: &Secret,
) -> Result<u64, HandshakeError> {
    let mut ours = [0u8; 32];
    rand::rng().fill_bytes(&mut ours);
    s.write_all(&ours).await?;
    s.flush().await?;
    // dialer id, its challenge, its proof
    let mut msg = [0u8; 8 + 32 + 32];
    s.read_exact(&mut msg).await?;
    let id = u64::from_le_bytes(msg[..8].try_into().unwrap());
    let theirs = &msg[8..40];
    let want = secret.mac(&[b"dialer", &ours, &msg[..8]]);
    if !same(&want, &msg[40..]) {
        return Err(HandshakeError::Refused);
    }
    s.write_all(&secret.mac(&[b"acceptor", theirs])).await?;
    s.flush().await?;
    Ok(id)
}

/// The dialing side, with its own member id.
pub async fn dial<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut S,
    secret: &Secret,
    my_id: u64,
) -> Result<(), HandshakeError> {
    let mut challenge = [0u8; 32];
    s.read_exact(&mut challenge).await?;
    let mut ours = [0u8; 32];
    rand::rng().fill_bytes(&mut ours);
    let id = my_id.to_le_bytes();
    let mut msg = Vec::with_capacity(72);
    msg.extend_from_slice(&id);
    msg.extend_from_slice(&ours);
    msg.extend_from_slice(&secret.mac(&[b"dialer", &challenge, &id]));
    s.write_all(&msg).await?;
    s.flush().await?;
    let mut proof = [0u8; 32];
    s.read_exact(&mut proof).await?;
    if !same(&proof, &secret.mac(&[b"acceptor", &ours])) {
        return Err(HandshakeError::Refused);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_bind_secret_and_sender() {
        let s = Secret::generate();
        let other = Secret::generate();
        let t = s.upgrade_token("http://a:1");
        assert!(s.check_upgrade_token("http://a:1", &t));
        assert!(!s.check_upgrade_token("http://b:1", &t));
        assert!(!other.check_upgrade_token("http://a:1", &t));
        assert!(!s.check_upgrade_token("http://a:1", "garbage"));
        assert!(!s.check_upgrade_token("http://a:1", "00.zz"));
        assert!(Secret::new("short").unwrap_err().contains("too short"));
        let e = Secret::new("replace-me-with-32-random-bytes-0123456789abcdef").unwrap_err();
        assert!(
            e.contains("public") && e.contains("strata secret new --out FILE"),
            "{e}"
        );
        for people in [
            "replace-me-with-32-random-bytes-0123456789abcdeF",
            "insert-a-long-random-string-here-please",
            "p4ssw0rd-ch4ng3m3-pl34s3",
        ] {
            let e = Secret::new(people).unwrap_err();
            assert!(
                e.contains("cluster secret") && e.contains("openssl rand -hex 32"),
                "{people}: {e}"
            );
        }
        let hex = Secret::generate_hex();
        assert_eq!(
            Secret::new(format!(" {hex}\n")).unwrap().as_bytes(),
            hex.as_bytes()
        );
    }

    #[tokio::test]
    async fn challenge_response_both_ways() {
        let s = Secret::generate();
        let (mut a, mut b) = tokio::io::duplex(1024);
        let s2 = s.clone();
        let acc = tokio::spawn(async move { accept(&mut b, &s2).await.map_err(|e| e.to_string()) });
        dial(&mut a, &s, 42).await.unwrap();
        assert_eq!(acc.await.unwrap().unwrap(), 42);
        // Wrong secret: refused.
        let wrong = Secret::generate();
        let (mut a, mut b) = tokio::io::duplex(1024);
        let s2 = s.clone();
        let acc = tokio::spawn(async move { accept(&mut b, &s2).await.is_err() });
        let _ = dial(&mut a, &wrong, 42).await;
        assert!(acc.await.unwrap());
    }
}
