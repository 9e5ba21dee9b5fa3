//! Write batches: an ordered list of puts and deletes applied atomically.
//! Owns the batch body encoding shared by the WAL and the memtable insert;
//! must not assign sequence numbers (the commit path does).
//!
//! Body layout: `count: u32 LE`, then per entry `kind: u8`, `key_len: varint`,
//! `key`, and for puts `value_len: varint`, `value`.

use crate::coding::{put_u32, put_varint, Reader};
use crate::key::Kind;

/// An atomic group of updates.
#[derive(Clone, Debug)]
pub struct WriteBatch {
    pub(crate) body: Vec<u8>,
    pub(crate) count: u32,
    pub(crate) user_bytes: u64,
}

impl Default for WriteBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl WriteBatch {
    pub fn new() -> Self {
        let mut body = Vec::with_capacity(64);
        put_u32(&mut body, 0);
        WriteBatch {
            body,
            count: 0,
            user_bytes: 0,
        }
    }

    /// Pre-size for roughly `bytes` of keys and values.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut b = Self::new();
        b.body.reserve(bytes + 16);
        b
    }

    pub fn put(&mut self, key: &[u8], value: &[u8]) -> &mut Self {
        self.body.push(Kind::Put as u8);
        put_varint(&mut self.body, key.len() as u64);
        self.body.extend_from_slice(key);
        put_varint(&mut self.body, value.len() as u64);
        self.body.extend_from_slice(value);
        self.bump(key.len() + value.len())
    }

    pub fn delete(&mut self, key: &[u8]) -> &mut Self {
        self.body.push(Kind::Delete as u8);
        put_varint(&mut self.body, key.len() as u64);
        self.body.extend_from_slice(key);
        self.bump(key.len())
    }

    fn bump(&mut self, bytes: usize) -> &mut Self {
        self.count += 1;
        self.user_bytes += bytes as u64;
        self.body[..4].copy_from_slice(&self.count.to_le_bytes());
        self
    }

    pub fn len(&self) -> usize {
        self.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes of keys and values in the batch.
    pub fn user_bytes(&self) -> u64 {
        self.user_bytes
    }
}

/// One decoded entry, borrowing from the body. Offsets let the caller slice
/// a shared buffer without copying.
pub(crate) struct EntryRef {
    pub kind: Kind,
    pub key: (usize, usize),
    pub value: (usize, usize),
}

/// Decode a batch body; `None` if it is malformed.
#[cfg(test)]
pub(crate) fn decode(body: &[u8]) -> Option<Vec<EntryRef>> {
    let mut out = Vec::new();
    visit(body, |e| out.push(e))?;
    Some(out)
}

/// Call `f` for each entry of a batch body, in order; returns the entry
/// count, or `None` (having called `f` for nothing) if it is malformed.
pub(crate) fn visit(body: &[u8], mut f: impl FnMut(EntryRef)) -> Option<u64> {
    validate(body)?;
    let mut n = 0;
    walk(body, |e| {
        f(e);
        n += 1;
    });
    Some(n)
}

fn validate(body: &[u8]) -> Option<()> {
    walk(body, |_| {})
}

fn walk(body: &[u8], mut f: impl FnMut(EntryRef)) -> Option<()> {
    let mut r = Reader::new(body);
    let count = r.u32()? as usize;
    for _ in 0..count {
        let kind = Kind::from_u8(r.u8()?)?;
        let klen = r.varint()? as usize;
        let ks = r.pos;
        r.take(klen)?;
        let value = if kind == Kind::Put {
            let vlen = r.varint()? as usize;
            let vs = r.pos;
            r.take(vlen)?;
            (vs, vs + vlen)
        } else {
            (0, 0)
        };
        f(EntryRef {
            kind,
            key: (ks, ks + klen),
            value,
        });
    }
    if !r.done() {
        return None;
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode() {
        let mut b = WriteBatch::new();
        b.put(b"k1", b"v1").delete(b"k2").put(b"", b"");
        assert_eq!(b.len(), 3);
        let e = decode(&b.body).unwrap();
        assert_eq!(e.len(), 3);
        assert_eq!(&b.body[e[0].key.0..e[0].key.1], b"k1");
        assert_eq!(&b.body[e[0].value.0..e[0].value.1], b"v1");
        assert_eq!(e[1].kind, Kind::Delete);
        assert_eq!(e[2].key.0, e[2].key.1);
    }

    #[test]
    fn truncated_body_is_rejected() {
        let mut b = WriteBatch::new();
        b.put(b"key", b"value");
        assert!(decode(&b.body[..b.body.len() - 2]).is_none());
    }
}
