//! What a replica stores under a key: a value or a tombstone, with the
//! version of the write that made it. Owns the version order and the byte
//! layout of stored records (the engine sees them as opaque values); must
//! not decide which write wins beyond comparing versions.
//!
//! Layout: `tag u8` (1 = value, 2 = tombstone), `hlc u64 LE`, `node u64 LE`,
//! then the value bytes (none for a tombstone).

use bytes::Bytes;

/// A write's version: the coordinator's hybrid logical clock reading, ties
/// broken by the coordinator's node id. Ordered lexicographically.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    pub hlc: u64,
    pub node: u64,
}

impl Version {
    /// Wall-clock milliseconds of the HLC reading.
    pub fn millis(&self) -> u64 {
        self.hlc >> crate::hlc::LOGICAL_BITS
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}.{}@{:016x}",
            self.millis(),
            self.hlc & ((1 << crate::hlc::LOGICAL_BITS) - 1),
            self.node
        )
    }
}

/// A stored record: the newest write a replica holds for a key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub version: Version,
    /// `None` is a tombstone.
    pub value: Option<Bytes>,
}

pub(crate) const TAG_VALUE: u8 = 1;
const TAG_TOMBSTONE: u8 = 2;
pub const HEADER: usize = 17;

#[derive(Debug, thiserror::Error)]
#[error("malformed record ({0} bytes)")]
pub struct BadRecord(pub usize);

impl Record {
    pub fn is_tombstone(&self) -> bool {
        self.value.is_none()
    }

    /// Bytes this record takes encoded.
    pub fn encoded_len(&self) -> usize {
        HEADER + self.value.as_ref().map_or(0, |v| v.len())
    }

    pub fn encode_into<B: bytes::BufMut>(&self, out: &mut B) {
        out.put_u8(if self.value.is_some() {
            TAG_VALUE
        } else {
            TAG_TOMBSTONE
        });
        out.put_u64_le(self.version.hlc);
        out.put_u64_le(self.version.node);
        if let Some(v) = &self.value {
            out.put_slice(v);
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.encoded_len());
        self.encode_into(&mut v);
        v
    }

    /// Decode a stored record; the value shares `b`'s buffer.
    pub fn decode(b: &Bytes) -> Result<Record, BadRecord> {
        let version = Self::decode_version(b)?;
        let value = match b[0] {
            TAG_VALUE => Some(b.slice(HEADER..)),
            _ if b.len() == HEADER => None,
            _ => return Err(BadRecord(b.len())),
        };
        Ok(Record { version, value })
    }

    /// Only the version (and check the tag).
    pub fn decode_version(b: &[u8]) -> Result<Version, BadRecord> {
        if b.len() < HEADER || !matches!(b[0], TAG_VALUE | TAG_TOMBSTONE) {
            return Err(BadRecord(b.len()));
        }
        Ok(Version {
            hlc: u64::from_le_bytes(b[1..9].try_into().unwrap()),
            node: u64::from_le_bytes(b[9..17].try_into().unwrap()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_order() {
        let v = Version {
            hlc: 7 << 16,
            node: 3,
        };
        for value in [None, Some(Bytes::new()), Some(Bytes::from_static(b"hello"))] {
            let r = Record { version: v, value };
            let b = Bytes::from(r.encode());
            assert_eq!(b.len(), r.encoded_len());
            assert_eq!(Record::decode(&b).unwrap(), r);
        }
        assert!(Record::decode(&Bytes::from_static(b"short")).is_err());
        let mut bad = Record {
            version: v,
            value: None,
        }
        .encode();
        bad[0] = 9;
        assert!(Record::decode(&Bytes::from(bad)).is_err());
        // hlc first, node breaks ties
        assert!(Version { hlc: 2, node: 0 } > Version { hlc: 1, node: 9 });
        assert!(Version { hlc: 2, node: 2 } > Version { hlc: 2, node: 1 });
    }
}
