//! The internal protocol between nodes, byte by byte. After the connection
//! is authenticated (`auth`), both directions carry frames:
//!
//! ```text
//! len u32 LE (bytes after this field) | id u64 LE | kind u8 | hlc u64 LE | body
//! ```
//!
//! `id` pairs an answer with its request, so one connection carries many
//! operations at once; `hlc` is the sender's clock, which the receiver
//! observes (so every message moves clocks forward). Requests: `WRITE` (key,
//! record), `READ` (key), `PING`, `SCAN` (a page of records). Answers set the
//! high bit of the kind; `ERROR` carries a transient flag and a message.
//! Owns encoding and decoding, with a bound on frame size; must not do I/O.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::record::{Record, Version};
use crate::store::Outcome;

/// Largest frame accepted: a 32 MiB value, its key and headroom.
pub const MAX_FRAME: usize = 40 << 20;
/// Bytes of a frame before its body (after the length).
pub const HEAD: usize = 8 + 1 + 8;

const WRITE: u8 = 1;
const READ: u8 = 2;
const PING: u8 = 3;
const SCAN: u8 = 4;
const REPAIR: u8 = 5;
const WRITTEN: u8 = 0x81;
const READ_ANSWER: u8 = 0x82;
const PONG: u8 = 0x83;
const SCANNED: u8 = 0x84;
const ERROR: u8 = 0xFF;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// A fresh write (or a hint): refused as too old when stamped longer
    /// ago than the tombstone grace period.
    Write {
        key: Bytes,
        record: Record,
    },
    /// A read repair: the newest version some replica holds, whatever
    /// its age.
    Repair {
        key: Bytes,
        record: Record,
    },
    Read {
        key: Bytes,
    },
    Ping,
    /// Up to `limit` records with `start <= key < end`, tombstones included.
    Scan {
        start: Bytes,
        end: Option<Bytes>,
        limit: u32,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    Written(Outcome),
    Read(Option<Record>),
    Pong,
    /// A page of records; `more` if the range goes on after the last one.
    Scanned {
        entries: Vec<(Bytes, Record)>,
        more: bool,
    },
    /// `transient`: busy or closing, worth trying again later.
    Error {
        transient: bool,
        message: String,
    },
}

/// A decoded frame.
#[derive(Debug)]
pub struct Frame<T> {
    pub id: u64,
    pub hlc: u64,
    pub msg: T,
}

#[derive(Debug, thiserror::Error)]
#[error("malformed frame: {0}")]
pub struct BadFrame(pub String);

fn bad(m: &str) -> BadFrame {
    BadFrame(m.to_string())
}

fn begin(out: &mut BytesMut, id: u64, kind: u8, hlc: u64) -> usize {
    let at = out.len();
    out.put_u32_le(0);
    out.put_u64_le(id);
    out.put_u8(kind);
    out.put_u64_le(hlc);
    at
}

fn finish(out: &mut BytesMut, at: usize) {
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

fn put_bytes(out: &mut BytesMut, b: &[u8]) {
    out.put_u32_le(b.len() as u32);
    out.put_slice(b);
}

fn put_record(out: &mut BytesMut, r: &Record) {
    out.put_u32_le(r.encoded_len() as u32);
    r.encode_into(out);
}

fn get_bytes(b: &mut Bytes) -> Result<Bytes, BadFrame> {
    if b.remaining() < 4 {
        return Err(bad("short length"));
    }
    let n = b.get_u32_le() as usize;
    if b.remaining() < n {
        return Err(bad("short bytes"));
    }
    Ok(b.split_to(n))
}

fn get_record(b: &mut Bytes) -> Result<Record, BadFrame> {
    let r = get_bytes(b)?;
    Record::decode(&r).map_err(|e| BadFrame(e.to_string()))
}

pub fn encode_request(out: &mut BytesMut, id: u64, hlc: u64, req: &Request) {
    match req {
        Request::Write { key, record } | Request::Repair { key, record } => {
            let kind = if matches!(req, Request::Write { .. }) {
                WRITE
            } else {
                REPAIR
            };
            let at = begin(out, id, kind, hlc);
            put_bytes(out, key);
            put_record(out, record);
            finish(out, at);
        }
        Request::Read { key } => {
            let at = begin(out, id, READ, hlc);
            put_bytes(out, key);
            finish(out, at);
        }
        Request::Ping => {
            let at = begin(out, id, PING, hlc);
            finish(out, at);
        }
        Request::Scan { start, end, limit } => {
            let at = begin(out, id, SCAN, hlc);
            out.put_u32_le(*limit);
            put_bytes(out, start);
            match end {
                Some(e) => {
                    out.put_u8(1);
                    put_bytes(out, e);
                }
                None => out.put_u8(0),
            }
            finish(out, at);
        }
    }
}

pub fn encode_response(out: &mut BytesMut, id: u64, hlc: u64, resp: &Response) {
    match resp {
        Response::Written(o) => {
            let at = begin(out, id, WRITTEN, hlc);
            let (tag, v) = match o {
                Outcome::Applied => (0, Version::default()),
                Outcome::Superseded(v) => (1, *v),
            };
            out.put_u8(tag);
            out.put_u64_le(v.hlc);
            out.put_u64_le(v.node);
            finish(out, at);
        }
        Response::Read(r) => {
            let at = begin(out, id, READ_ANSWER, hlc);
            match r {
                Some(r) => {
                    out.put_u8(1);
                    put_record(out, r);
                }
                None => out.put_u8(0),
            }
            finish(out, at);
        }
        Response::Pong => {
            let at = begin(out, id, PONG, hlc);
            finish(out, at);
        }
        Response::Scanned { entries, more } => {
            let at = begin(out, id, SCANNED, hlc);
            out.put_u8(*more as u8);
            out.put_u32_le(entries.len() as u32);
            for (k, r) in entries {
                put_bytes(out, k);
                put_record(out, r);
            }
            finish(out, at);
        }
        Response::Error { transient, message } => {
            let at = begin(out, id, ERROR, hlc);
            out.put_u8(*transient as u8);
            put_bytes(out, message.as_bytes());
            finish(out, at);
        }
    }
}

/// Split off one whole frame (`len` and all) from the front of `buf`, if
/// it holds one: `(id, kind, hlc, body)`.
pub fn split_frame(buf: &mut BytesMut) -> Result<Option<(u64, u8, u64, Bytes)>, BadFrame> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = u32::from_le_bytes(buf[..4].try_into().unwrap()) as usize;
    if len > MAX_FRAME {
        return Err(BadFrame(format!("frame of {len} bytes is over the limit")));
    }
    if len < HEAD {
        return Err(bad("frame shorter than its head"));
    }
    if buf.len() < 4 + len {
        buf.reserve(4 + len - buf.len());
        return Ok(None);
    }
    let mut f = buf.split_to(4 + len).freeze();
    f.advance(4);
    let id = f.get_u64_le();
    let kind = f.get_u8();
    let hlc = f.get_u64_le();
    Ok(Some((id, kind, hlc, f)))
}

pub fn decode_request(kind: u8, mut b: Bytes) -> Result<Request, BadFrame> {
    let r = match kind {
        WRITE | REPAIR => {
            let key = get_bytes(&mut b)?;
            let record = get_record(&mut b)?;
            if kind == WRITE {
                Request::Write { key, record }
            } else {
                Request::Repair { key, record }
            }
        }
        READ => Request::Read {
            key: get_bytes(&mut b)?,
        },
        PING => Request::Ping,
        SCAN => {
            if b.remaining() < 4 {
                return Err(bad("short scan"));
            }
            let limit = b.get_u32_le();
            let start = get_bytes(&mut b)?;
            if !b.has_remaining() {
                return Err(bad("short scan"));
            }
            let end = match b.get_u8() {
                0 => None,
                _ => Some(get_bytes(&mut b)?),
            };
            Request::Scan { start, end, limit }
        }
        k => return Err(BadFrame(format!("unknown request kind {k}"))),
    };
    if b.has_remaining() {
        return Err(bad("trailing bytes"));
    }
    Ok(r)
}

pub fn decode_response(kind: u8, mut b: Bytes) -> Result<Response, BadFrame> {
    let r = match kind {
        WRITTEN => {
            if b.remaining() != 17 {
                return Err(bad("bad write answer"));
            }
            let tag = b.get_u8();
            let v = Version {
                hlc: b.get_u64_le(),
                node: b.get_u64_le(),
            };
            Response::Written(match tag {
                0 => Outcome::Applied,
                _ => Outcome::Superseded(v),
            })
        }
        READ_ANSWER => {
            if !b.has_remaining() {
                return Err(bad("short read answer"));
            }
            match b.get_u8() {
                0 => Response::Read(None),
                _ => Response::Read(Some(get_record(&mut b)?)),
            }
        }
        PONG => Response::Pong,
        SCANNED => {
            if b.remaining() < 5 {
                return Err(bad("short scan answer"));
            }
            let more = b.get_u8() != 0;
            let n = b.get_u32_le() as usize;
            let mut entries = Vec::with_capacity(n.min(4096));
            for _ in 0..n {
                let k = get_bytes(&mut b)?;
                let r = get_record(&mut b)?;
                entries.push((k, r));
            }
            Response::Scanned { entries, more }
        }
        ERROR => {
            if !b.has_remaining() {
                return Err(bad("short error"));
            }
            let transient = b.get_u8() != 0;
            let m = get_bytes(&mut b)?;
            Response::Error {
                transient,
                message: String::from_utf8_lossy(&m).into_owned(),
            }
        }
        k => return Err(BadFrame(format!("unknown answer kind {k}"))),
    };
    if b.has_remaining() {
        return Err(bad("trailing bytes"));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(v: Option<&'static [u8]>) -> Record {
        Record {
            version: Version { hlc: 99, node: 7 },
            value: v.map(Bytes::from_static),
        }
    }

    #[test]
    fn every_message_round_trips_through_a_byte_stream() {
        let reqs = vec![
            Request::Write {
                key: Bytes::from_static(b"k"),
                record: rec(Some(b"value")),
            },
            Request::Write {
                key: Bytes::from_static(b""),
                record: rec(None),
            },
            Request::Repair {
                key: Bytes::from_static(b"r"),
                record: rec(None),
            },
            Request::Read {
                key: Bytes::from_static(b"k2"),
            },
            Request::Ping,
            Request::Scan {
                start: Bytes::from_static(b"a"),
                end: Some(Bytes::from_static(b"z")),
                limit: 10,
            },
            Request::Scan {
                start: Bytes::from_static(b"a"),
                end: None,
                limit: 1,
            },
        ];
        let resps = vec![
            Response::Written(Outcome::Applied),
            Response::Written(Outcome::Superseded(Version { hlc: 5, node: 6 })),
            Response::Read(None),
            Response::Read(Some(rec(Some(b"x")))),
            Response::Pong,
            Response::Scanned {
                entries: vec![(Bytes::from_static(b"a"), rec(None))],
                more: true,
            },
            Response::Error {
                transient: true,
                message: "busy".into(),
            },
        ];
        let mut buf = BytesMut::new();
        for (i, r) in reqs.iter().enumerate() {
            encode_request(&mut buf, i as u64, 1000 + i as u64, r);
        }
        // Fed a byte at a time, frames come out whole and in order.
        let all = buf.split().freeze();
        let mut feed = BytesMut::new();
        let mut got = Vec::new();
        for b in all.iter() {
            feed.put_u8(*b);
            while let Some((id, kind, hlc, body)) = split_frame(&mut feed).unwrap() {
                assert_eq!(hlc, 1000 + id);
                got.push(decode_request(kind, body).unwrap());
            }
        }
        assert_eq!(got, reqs);
        for (i, r) in resps.iter().enumerate() {
            encode_response(&mut buf, i as u64, 0, r);
        }
        let mut got = Vec::new();
        while let Some((_, kind, _, body)) = split_frame(&mut buf).unwrap() {
            got.push(decode_response(kind, body).unwrap());
        }
        assert_eq!(got, resps);
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let mut buf = BytesMut::from(&[0xff, 0xff, 0xff, 0x7f][..]);
        assert!(split_frame(&mut buf).is_err());
        let mut buf = BytesMut::from(&[3, 0, 0, 0, 1, 2, 3][..]);
        assert!(split_frame(&mut buf).is_err());
        assert!(decode_request(WRITE, Bytes::from_static(&[9, 0, 0, 0, 1])).is_err());
        assert!(decode_request(77, Bytes::new()).is_err());
        assert!(decode_response(READ_ANSWER, Bytes::from_static(&[1, 200, 0, 0, 0])).is_err());
    }
}
