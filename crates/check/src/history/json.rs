//! How an operation's fields are written in a history's JSON lines: bytes
//! as a string when they are UTF-8, else base64; durations as nanoseconds;
//! a node's URL as a shared string. Owns the representation; must not
//! read or write files.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde::{Deserialize, Serialize};

/// Bytes in JSON: a string if they are UTF-8, else `{"base64": "…"}`; the
/// two cannot be confused.
pub(crate) mod bytes {
    use super::*;
    use serde::{Deserializer, Serializer};

    #[derive(Serialize, Deserialize)]
    #[serde(untagged)]
    pub(super) enum Repr {
        Text(String),
        Binary { base64: String },
    }

    pub(super) fn repr(v: &[u8]) -> Repr {
        match std::str::from_utf8(v) {
            Ok(s) => Repr::Text(s.to_string()),
            Err(_) => Repr::Binary {
                base64: base64::engine::general_purpose::STANDARD.encode(v),
            },
        }
    }

    pub(super) fn unrepr<E: serde::de::Error>(r: Repr) -> Result<Vec<u8>, E> {
        match r {
            Repr::Text(s) => Ok(s.into_bytes()),
            Repr::Binary { base64 } => base64::engine::general_purpose::STANDARD
                .decode(base64)
                .map_err(E::custom),
        }
    }

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        repr(v).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        unrepr(Repr::deserialize(d)?)
    }
}

pub(super) mod opt_bytes {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
        v.as_deref().map(bytes::repr).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<u8>>, D::Error> {
        Option::<bytes::Repr>::deserialize(d)?
            .map(bytes::unrepr)
            .transpose()
    }
}

/// A duration as integer nanoseconds: lossless, so the order of two
/// instants survives a round trip.
pub(super) mod nanos {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Duration, s: S) -> Result<S::Ok, S::Error> {
        (v.as_nanos() as u64).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_nanos(u64::deserialize(d)?))
    }
}

pub(super) mod arc_str {
    use super::*;
    use serde::{Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Arc<str>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<str>, D::Error> {
        Ok(Arc::from(String::deserialize(d)?))
    }
}
