//! Internal keys: a user key plus a trailer of (sequence number << 8 | kind).
//! Owns the ordering every sorted structure in the engine shares: user key
//! ascending, then sequence descending, so the newest version comes first.
//! Must not know about files or memtables.

use std::cmp::Ordering;

/// Largest sequence number (56 bits).
pub const MAX_SEQ: u64 = (1 << 56) - 1;

/// What an entry does to its key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    Delete = 0,
    Put = 1,
}

impl Kind {
    pub fn from_u8(b: u8) -> Option<Kind> {
        match b {
            0 => Some(Kind::Delete),
            1 => Some(Kind::Put),
            _ => None,
        }
    }
}

/// Pack a sequence number and kind into a trailer.
#[inline]
pub fn trailer(seq: u64, kind: Kind) -> u64 {
    (seq << 8) | kind as u64
}

#[inline]
pub fn trailer_seq(t: u64) -> u64 {
    t >> 8
}

#[inline]
pub fn trailer_kind(t: u64) -> Option<Kind> {
    Kind::from_u8((t & 0xff) as u8)
}

/// The trailer used to seek to the newest version visible at `snapshot`:
/// it sorts before every entry whose sequence is <= snapshot.
#[inline]
pub fn seek_trailer(snapshot: u64) -> u64 {
    (snapshot << 8) | 0xff
}

/// Encode `user || trailer` (trailer as 8 big-endian bytes) into `out`.
#[inline]
pub fn encode_into(out: &mut Vec<u8>, user: &[u8], trailer: u64) {
    out.extend_from_slice(user);
    out.extend_from_slice(&trailer.to_be_bytes());
}

pub fn encode(user: &[u8], trailer: u64) -> Vec<u8> {
    let mut v = Vec::with_capacity(user.len() + 8);
    encode_into(&mut v, user, trailer);
    v
}

/// Split an encoded internal key. Callers guarantee `k.len() >= 8`.
#[inline]
pub fn split(k: &[u8]) -> (&[u8], u64) {
    let n = k.len() - 8;
    (&k[..n], u64::from_be_bytes(k[n..].try_into().unwrap()))
}

#[inline]
pub fn user_key(k: &[u8]) -> &[u8] {
    &k[..k.len() - 8]
}

/// Compare two encoded internal keys.
#[inline]
pub fn compare(a: &[u8], b: &[u8]) -> Ordering {
    let (ua, ta) = split(a);
    let (ub, tb) = split(b);
    cmp_bytes(ua, ub).then_with(|| tb.cmp(&ta))
}

/// Bytewise comparison, eight bytes at a time. Short keys are the common
/// case and a call into `memcmp` costs more than the comparison itself.
#[inline]
pub fn cmp_bytes(a: &[u8], b: &[u8]) -> Ordering {
    let n = a.len().min(b.len());
    let mut i = 0;
    while i + 8 <= n {
        let x = u64::from_be_bytes(a[i..i + 8].try_into().unwrap());
        let y = u64::from_be_bytes(b[i..i + 8].try_into().unwrap());
        if x != y {
            return x.cmp(&y);
        }
        i += 8;
    }
    while i < n {
        if a[i] != b[i] {
            return a[i].cmp(&b[i]);
        }
        i += 1;
    }
    a.len().cmp(&b.len())
}

/// The first eight bytes of `k`, zero-padded, as a big-endian number:
/// `prefix8(a) < prefix8(b)` implies `a < b`. The tables' index searches
/// an array of these, a fifth of the bytes of its entries.
#[inline]
pub fn prefix8(k: &[u8]) -> u64 {
    (prefix(k) >> 64) as u64
}

/// The first 16 bytes of a key as a big-endian integer, zero padded: equal
/// prefixes order like the bytes they come from, so most comparisons in the
/// memtable are one integer comparison without touching the key's heap data.
#[inline]
pub fn prefix(k: &[u8]) -> u128 {
    let mut b = [0u8; 16];
    let n = k.len().min(16);
    b[..n].copy_from_slice(&k[..n]);
    u128::from_be_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordering_newest_first_and_prefix_safe() {
        let a1 = encode(b"a", trailer(1, Kind::Put));
        let a2 = encode(b"a", trailer(2, Kind::Put));
        let ab = encode(b"ab", trailer(0, Kind::Put));
        assert_eq!(compare(&a2, &a1), Ordering::Less);
        assert_eq!(compare(&a1, &ab), Ordering::Less);
        assert_eq!(compare(&a2, &ab), Ordering::Less);
        let seek = encode(b"a", seek_trailer(1));
        assert_eq!(compare(&seek, &a1), Ordering::Less);
        assert_eq!(compare(&seek, &a2), Ordering::Greater);
    }

    #[test]
    fn fast_compare_matches_slice_compare() {
        let keys: Vec<&[u8]> = vec![
            b"",
            b"a",
            b"ab",
            b"abcdefgh",
            b"abcdefghi",
            b"abcdefgi",
            b"b",
            b"abcdefgh\0",
            b"\xff\xff",
        ];
        for a in &keys {
            for b in &keys {
                assert_eq!(cmp_bytes(a, b), a.cmp(b), "{a:?} {b:?}");
                if prefix(a) != prefix(b) {
                    assert_eq!(prefix(a).cmp(&prefix(b)), a.cmp(b), "{a:?} {b:?}");
                }
            }
        }
    }
}
