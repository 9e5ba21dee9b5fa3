//! Who may do what: the roles a caller can hold, what each request class
//! needs, how a bearer token is stored (its SHA-256, never the token) and
//! the operator token every member derives from the cluster secret, and
//! the one comparison of credentials (`same`, constant time) that every
//! crate checking a token, a digest or a MAC uses. The node enforces
//! these, `strata token` and the lab produce them; both spell them here.
//! Owns the names, the derivations and the comparison; must not read
//! files or see a request.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// What a request needs, from least to most: the node's health, reading
/// data (and the cluster view a client routes with), metrics, writing
/// data, and operating the node (backup, repair, membership, profiles).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Need {
    /// `/v0/status`: served to anyone, always (load balancers, probes).
    Health,
    /// GET of `/v0/entity`, `/v0/entities`, `/v0/cluster`.
    Read,
    /// `/metrics`.
    Monitor,
    /// PUT and DELETE of `/v0/entity`.
    Write,
    /// Backup and its download, repair, join, leave, `/debug/`.
    Operate,
}

/// A caller's role: from a bearer token's line in the tokens file or a
/// client certificate's organizational unit (`OU=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// Reads data and the cluster view; nothing else.
    Read,
    /// Reads and writes data.
    ReadWrite,
    /// Reads metrics and the status; no data.
    Monitor,
    /// Everything a client can do: data, metrics, backups, membership,
    /// repair, profiles.
    Operator,
    /// A cluster member (a node certificate): everything an operator can,
    /// and the internal channel.
    Node,
}

impl Role {
    pub const ALL: [Role; 5] = [
        Role::Read,
        Role::ReadWrite,
        Role::Monitor,
        Role::Operator,
        Role::Node,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Role::Read => "read",
            Role::ReadWrite => "readwrite",
            Role::Monitor => "monitor",
            Role::Operator => "operator",
            Role::Node => "node",
        }
    }

    pub fn parse(s: &str) -> Option<Role> {
        Role::ALL.into_iter().find(|r| r.name() == s)
    }

    /// Whether this role may make a request that needs `need`.
    pub fn allows(self, need: Need) -> bool {
        matches!(
            (self, need),
            (_, Need::Health)
                | (Role::Operator | Role::Node, _)
                | (Role::Read, Need::Read)
                | (Role::ReadWrite, Need::Read | Need::Write)
                | (Role::Monitor, Need::Monitor)
        )
    }

    /// The roles that may make a request needing `need`, for an answer
    /// that says what was missing.
    pub fn allowed_for(need: Need) -> Vec<&'static str> {
        Role::ALL
            .into_iter()
            .filter(|r| r.allows(need) && *r != Role::Node)
            .map(Role::name)
            .collect()
    }
}

/// A new bearer token: 24 random bytes from the system's generator, hex,
/// after `st0_` (what `strata token new` prints).
pub fn random_token() -> String {
    let mut b = [0u8; 24];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut b);
    format!("st0_{}", hex(&b))
}

/// A new cluster secret: 32 random bytes from the system's generator,
/// hex (what `strata secret new` and a local cluster write).
pub fn random_secret() -> String {
    let mut b = [0u8; 32];
    rand::RngCore::fill_bytes(&mut rand::rng(), &mut b);
    hex(&b)
}

/// A token's line in a tokens file: `ROLE NAME SHA256-HEX`.
pub fn token_line(role: Role, name: &str, token: &str) -> String {
    format!("{} {name} {}", role.name(), token_digest(token))
}

/// What a tokens file stores for a token: its SHA-256, hex.
pub fn token_digest(token: &str) -> String {
    hex(&Sha256::digest(token.trim().as_bytes()))
}

/// The operator token of a cluster: an HMAC-SHA256 of a fixed label under
/// the cluster secret, hex. Every member derives the same one, so whoever
/// holds the secret can operate the cluster without a tokens file; it
/// cannot be turned back into the secret (which also admits members).
pub fn operator_token(secret: &[u8]) -> String {
    let mut m = Hmac::<Sha256>::new_from_slice(secret.trim_ascii()).expect("any key length");
    m.update(b"strata-operator-token-v0");
    format!("so0_{}", hex(&m.finalize().into_bytes()))
}

/// Whether two credentials (tokens, their digests, MACs) are equal, in
/// time that depends on their lengths only, never on their bytes or where
/// they first differ (`subtle`'s `ConstantTimeEq`). Every comparison of
/// a credential in Strata is this one.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    a.ct_eq(b).into()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_allow_what_they_say() {
        use Need::*;
        let table = [
            (Role::Read, [true, true, false, false, false]),
            (Role::ReadWrite, [true, true, false, true, false]),
            (Role::Monitor, [true, false, true, false, false]),
            (Role::Operator, [true, true, true, true, true]),
            (Role::Node, [true, true, true, true, true]),
        ];
        for (role, want) in table {
            let got = [Health, Read, Monitor, Write, Operate].map(|n| role.allows(n));
            assert_eq!(got, want, "{role:?}");
            assert_eq!(Role::parse(role.name()), Some(role));
        }
        assert_eq!(Role::parse("admin"), None);
        assert_eq!(Role::allowed_for(Need::Write), ["readwrite", "operator"]);
    }

    #[test]
    fn the_operator_token_depends_on_the_secret_only() {
        let a = operator_token(b"0123456789abcdef0123");
        assert_eq!(a, operator_token(b"0123456789abcdef0123\n"));
        assert_ne!(a, operator_token(b"0123456789abcdef0124"));
        assert!(a.starts_with("so0_") && a.len() == 4 + 64);
        assert_eq!(token_digest("x").len(), 64);
        assert_ne!(token_digest("x"), token_digest("y"));
    }

    #[test]
    fn same_is_equality() {
        assert!(same(b"", b""));
        assert!(same(b"so0_abc", b"so0_abc"));
        assert!(!same(b"so0_abc", b"so0_abd"));
        assert!(!same(b"so0_abc", b"so0_ab"));
        assert!(!same(b"so0_ab", b"so0_abc"));
        let d = token_digest("st0_x");
        assert!(same(d.as_bytes(), token_digest("st0_x").as_bytes()));
        assert!(!same(d.as_bytes(), token_digest("st0_y").as_bytes()));
    }
}
