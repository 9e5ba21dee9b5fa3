//! What a replica stores under a key: a value or a tombstone, with the
//! version of the write that made it. Owns the version order and the byte
//! layout of stored records (the engine sees them as opaque values); must
//! not decide which write wins beyond comparing versions.
//!
//! Layout: `tag u8` (1 = value, 2 = tombstone, 3 and 4 the same with
//! write marks), `hlc u64 LE`, `node u64 LE`; under tags 3 and 4 then
//! `marks u8` and each mark as `write id 16 bytes | hlc u64 LE | node u64
//! LE`; then the
//! value bytes (none for a tombstone). Records without marks keep the
//! layout of tags 1 and 2, so stores written before marks existed read the
//! same.
//!
//! A write mark says that the write a client named with that id was
//! applied, at that version: a record carries the marks of the last
//! `MAX_MARKS` named writes of its key within `MARK_RETAIN_MS` (its own
//! and those it superseded), so that a client repeating a write it is in
//! doubt about finds it done instead of applying it twice
//! (`docs/consistency.md`, "Writes safe to repeat").

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

/// A client's name for one write (`Strata-Write-Id`), the same on every
/// attempt of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WriteId(pub u128);

/// That a named write was applied, and at which version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    pub id: WriteId,
    pub version: Version,
}

/// Marks a record keeps at most: the key's last named writes.
pub const MAX_MARKS: usize = 16;
/// How long a mark is kept: far longer than any client retries a write
/// (its attempts are bounded by its timeout and budget, seconds), and
/// than a node takes to restart.
pub const MARK_RETAIN_MS: u64 = 10 * 60 * 1000;

/// A stored record: the newest write a replica holds for a key.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Record {
    pub version: Version,
    /// `None` is a tombstone.
    pub value: Option<Bytes>,
    /// The named writes of this key this replica applied lately, newest
    /// first (this record's own first when it was named).
    pub marks: Vec<Mark>,
}

pub(crate) const TAG_VALUE: u8 = 1;
const TAG_TOMBSTONE: u8 = 2;
const TAG_VALUE_MARKED: u8 = 3;
const TAG_TOMBSTONE_MARKED: u8 = 4;
pub const HEADER: usize = 17;
const MARK_LEN: usize = 32;

#[derive(Debug, thiserror::Error)]
#[error("malformed record ({0} bytes)")]
pub struct BadRecord(pub usize);

/// Whether stored record bytes (a checked tag) are a tombstone.
pub fn is_tombstone_tag(tag: u8) -> bool {
    matches!(tag, TAG_TOMBSTONE | TAG_TOMBSTONE_MARKED)
}

impl Record {
    /// A record without marks.
    pub fn new(version: Version, value: Option<Bytes>) -> Record {
        Record {
            version,
            value,
            marks: Vec::new(),
        }
    }

    pub fn is_tombstone(&self) -> bool {
        self.value.is_none()
    }

    /// The name of the write that made this record, if it was named (its
    /// mark at its own version).
    pub fn own_id(&self) -> Option<WriteId> {
        self.marks
            .iter()
            .find(|m| m.version == self.version)
            .map(|m| m.id)
    }

    /// The version at which the write named `id` was applied, if this
    /// record remembers it.
    pub fn applied(&self, id: WriteId) -> Option<Version> {
        self.marks.iter().find(|m| m.id == id).map(|m| m.version)
    }

    /// This record's marks followed by `older`'s (a record it replaces, or
    /// one it superseded) that are not already here, newest first, kept
    /// to `MAX_MARKS` and to those within `MARK_RETAIN_MS` of the newest.
    pub fn absorb_marks(&mut self, older: &[Mark]) {
        for m in older {
            if !self.marks.iter().any(|x| x.id == m.id) {
                self.marks.push(*m);
            }
        }
        if self.marks.is_empty() {
            return;
        }
        self.marks.sort_by_key(|m| std::cmp::Reverse(m.version));
        let floor = self.marks[0]
            .version
            .millis()
            .saturating_sub(MARK_RETAIN_MS);
        self.marks.retain(|m| m.version.millis() >= floor);
        self.marks.truncate(MAX_MARKS);
    }

    /// Bytes this record takes encoded.
    pub fn encoded_len(&self) -> usize {
        let marks = if self.marks.is_empty() {
            0
        } else {
            1 + MARK_LEN * self.marks.len().min(MAX_MARKS)
        };
        HEADER + marks + self.value.as_ref().map_or(0, |v| v.len())
    }

    pub fn encode_into<B: bytes::BufMut>(&self, out: &mut B) {
        let marked = !self.marks.is_empty();
        out.put_u8(match (self.value.is_some(), marked) {
            (true, false) => TAG_VALUE,
            (false, false) => TAG_TOMBSTONE,
            (true, true) => TAG_VALUE_MARKED,
            (false, true) => TAG_TOMBSTONE_MARKED,
        });
        out.put_u64_le(self.version.hlc);
        out.put_u64_le(self.version.node);
        if marked {
            let marks = &self.marks[..self.marks.len().min(MAX_MARKS)];
            out.put_u8(marks.len() as u8);
            for m in marks {
                out.put_u128_le(m.id.0);
                out.put_u64_le(m.version.hlc);
                out.put_u64_le(m.version.node);
            }
        }
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
        let (marks, body) = Self::decode_marks(b)?;
        let value = match b[0] {
            TAG_VALUE | TAG_VALUE_MARKED => Some(b.slice(body..)),
            _ if b.len() == body => None,
            _ => return Err(BadRecord(b.len())),
        };
        Ok(Record {
            version,
            value,
            marks,
        })
    }

    /// The marks of record bytes whose tag was checked, and where the
    /// value starts.
    pub fn decode_marks(b: &[u8]) -> Result<(Vec<Mark>, usize), BadRecord> {
        if !matches!(b[0], TAG_VALUE_MARKED | TAG_TOMBSTONE_MARKED) {
            return Ok((Vec::new(), HEADER));
        }
        let n = *b.get(HEADER).ok_or(BadRecord(b.len()))? as usize;
        let body = HEADER + 1 + n * MARK_LEN;
        if n == 0 || n > MAX_MARKS || b.len() < body {
            return Err(BadRecord(b.len()));
        }
        let marks = b[HEADER + 1..body]
            .chunks_exact(MARK_LEN)
            .map(|c| Mark {
                id: WriteId(u128::from_le_bytes(c[..16].try_into().unwrap())),
                version: Version {
                    hlc: u64::from_le_bytes(c[16..24].try_into().unwrap()),
                    node: u64::from_le_bytes(c[24..].try_into().unwrap()),
                },
            })
            .collect();
        Ok((marks, body))
    }

    /// Only the version (and check the tag).
    pub fn decode_version(b: &[u8]) -> Result<Version, BadRecord> {
        if b.len() < HEADER
            || !matches!(
                b[0],
                TAG_VALUE | TAG_TOMBSTONE | TAG_VALUE_MARKED | TAG_TOMBSTONE_MARKED
            )
        {
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
            let r = Record::new(v, value.clone());
            let b = Bytes::from(r.encode());
            assert_eq!(b.len(), r.encoded_len());
            assert_eq!(Record::decode(&b).unwrap(), r);
            let mut m = r.clone();
            m.marks = vec![
                Mark {
                    id: WriteId(u128::MAX - 5),
                    version: v,
                },
                Mark {
                    id: WriteId(42),
                    version: Version {
                        hlc: v.hlc - 1,
                        node: 9,
                    },
                },
            ];
            let b = Bytes::from(m.encode());
            assert_eq!(b.len(), m.encoded_len());
            assert_eq!(Record::decode(&b).unwrap(), m);
            assert_eq!(Record::decode_version(&b).unwrap(), v);
            assert_eq!(
                m.applied(WriteId(42)),
                Some(Version {
                    hlc: v.hlc - 1,
                    node: 9
                })
            );
            assert_eq!(m.applied(WriteId(43)), None);
            // A mark count past the bytes there is a damaged record.
            let mut short = m.encode();
            short.truncate(HEADER + 1 + MARK_LEN);
            assert!(Record::decode(&Bytes::from(short)).is_err());
        }
        assert!(Record::decode(&Bytes::from_static(b"short")).is_err());
        let mut bad = Record::new(v, None).encode();
        bad[0] = 9;
        assert!(Record::decode(&Bytes::from(bad)).is_err());
        // hlc first, node breaks ties
        assert!(Version { hlc: 2, node: 0 } > Version { hlc: 1, node: 9 });
        assert!(Version { hlc: 2, node: 2 } > Version { hlc: 2, node: 1 });
    }

    #[test]
    fn marks_are_kept_newest_first_bounded_in_count_and_age() {
        let ms = |ms: u64| ms << crate::hlc::LOGICAL_BITS;
        let mark = |id: u128, at: u64| Mark {
            id: WriteId(id),
            version: Version {
                hlc: ms(at),
                node: 1,
            },
        };
        let mut r = Record::new(
            Version {
                hlc: ms(MARK_RETAIN_MS + 1000),
                node: 1,
            },
            None,
        );
        r.marks = vec![mark(1, MARK_RETAIN_MS + 1000)];
        // One too old, one repeated, then more than fit.
        let mut older = vec![mark(2, 999), mark(1, MARK_RETAIN_MS + 1000)];
        older.extend((10..40).map(|i| mark(i, MARK_RETAIN_MS + i as u64)));
        r.absorb_marks(&older);
        assert_eq!(r.marks.len(), MAX_MARKS);
        assert_eq!(r.marks[0].id, WriteId(1));
        assert_eq!(r.marks[1].id, WriteId(39));
        assert!(r.applied(WriteId(2)).is_none(), "older than the retention");
        assert!(r.applied(WriteId(10)).is_none(), "past the count");
        assert_eq!(r.applied(WriteId(1)), Some(r.version));
    }
}
