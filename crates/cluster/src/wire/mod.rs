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
//! record), `READ` (key), `VERSION` (key, and a write id when the write
//! is named: the newest version only, no value, and the version at which
//! the named write was applied if it was: a write's first phase), `PING`, `SCAN` (a page of records), and
//! anti-entropy's `HASHES` (a level of a home set's Merkle tree), `KEYS`
//! (keys and versions in some leaves, a page at a time), `FETCH` (records
//! by key) and `PUSH` (records to apply as repairs). Answers set the high
//! bit of the kind; `ERROR` carries a transient flag and a message.
//! Owns encoding and decoding, with a bound on frame size (the fields'
//! byte layouts in `fields`); must not do I/O.

use bytes::{Buf, BufMut, Bytes, BytesMut};

use crate::error::ClusterError;
use crate::layout::{LayoutState, StreamStats};
use crate::record::{Record, Version, WriteId};
use crate::store::Outcome;
use crate::trace::LocalTiming;

mod fields;
use fields::*;

/// Largest frame accepted: a 32 MiB value, its key and headroom.
pub const MAX_FRAME: usize = 40 << 20;
/// Bytes of a frame before its body (after the length).
pub const HEAD: usize = 8 + 1 + 8;

const WRITE: u8 = 1;
const READ: u8 = 2;
const PING: u8 = 3;
const SCAN: u8 = 4;
const REPAIR: u8 = 5;
const HASHES: u8 = 6;
const KEYS: u8 = 7;
const FETCH: u8 = 8;
const PUSH: u8 = 9;
const LAYOUT: u8 = 10;
const LAYOUT_GET: u8 = 11;
const VERSION: u8 = 12;
const VERSION_ANSWER: u8 = 0x8C;
const LAYOUT_ANSWER: u8 = 0x8A;
const HASHES_ANSWER: u8 = 0x86;
const KEYS_ANSWER: u8 = 0x87;
const FETCHED: u8 = 0x88;
const PUSHED: u8 = 0x89;
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
    /// The newest version held of `key` (a tombstone's too), without its
    /// value, and whether the write named `write` was applied here: what a
    /// write learns before it is stamped.
    Version {
        key: Bytes,
        write: Option<WriteId>,
    },
    Ping,
    /// Up to `limit` records with `start <= key < end`, tombstones included.
    Scan {
        start: Bytes,
        end: Option<Bytes>,
        limit: u32,
    },
    /// A level of home set `set`'s tree: 0 the root, 1 the branches, 2
    /// the leaves under `branches`.
    Hashes {
        set: u64,
        level: u8,
        branches: Vec<u16>,
    },
    /// Keys of home set `set` in `leaves` (every leaf when `all`), with
    /// their versions, in key order after `after`: a page of at most
    /// `limit`.
    Keys {
        set: u64,
        all: bool,
        leaves: Vec<u16>,
        after: Option<Bytes>,
        limit: u32,
    },
    /// The stored records of these keys (as many as fit an answer).
    Fetch {
        keys: Vec<Bytes>,
    },
    /// Records to apply as repairs (newer-version-wins, any age).
    Push {
        entries: Vec<(Bytes, Record)>,
    },
    /// Adopt this stage of a layout change (`cleanup`: and drop the keys
    /// no longer held).
    Layout {
        state: LayoutState,
        cleanup: bool,
    },
    /// The layout held and what this node streamed.
    LayoutGet,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// The outcome, and the replica's own stages (zero from a peer that
    /// does not report them).
    Written(Outcome, LocalTiming),
    Read(Option<Record>),
    /// The newest version (`None`: nothing stored for the key), and the
    /// version the asked-about named write was applied at, if it was.
    Version(Option<Version>, Option<Version>),
    Pong,
    /// A page of records; `more` if the range goes on after the last one.
    Scanned {
        entries: Vec<(Bytes, Record)>,
        more: bool,
    },
    /// A tree level; `ready` false while the tree is still being built
    /// (then the hashes mean nothing).
    Hashes {
        ready: bool,
        keys: u64,
        root: u64,
        hashes: Vec<u64>,
    },
    /// A page of keys: (key, version, tombstone), in key order; `resume`
    /// is the last key examined (the next page starts after it), `None`
    /// when the store was examined to its end.
    Keys {
        entries: Vec<(Bytes, Version, bool)>,
        resume: Option<Bytes>,
    },
    /// The records of the first `records.len()` keys asked for, in order
    /// (`None`: nothing stored).
    Fetched(Vec<Option<Record>>),
    /// Records applied (the others were superseded).
    Pushed {
        applied: u32,
    },
    Layout {
        state: LayoutState,
        stream: StreamStats,
    },
    /// `transient`: busy or closing, worth trying again later;
    /// `read_only`: the replica's store refuses writes (send writes
    /// elsewhere for a while).
    Error {
        transient: bool,
        read_only: bool,
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
        Request::Version { key, write } => {
            let at = begin(out, id, VERSION, hlc);
            put_bytes(out, key);
            if let Some(w) = write {
                out.put_u128_le(w.0);
            }
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
        Request::Hashes {
            set,
            level,
            branches,
        } => {
            let at = begin(out, id, HASHES, hlc);
            out.put_u64_le(*set);
            out.put_u8(*level);
            put_u16s(out, branches);
            finish(out, at);
        }
        Request::Keys {
            set,
            all,
            leaves,
            after,
            limit,
        } => {
            let at = begin(out, id, KEYS, hlc);
            out.put_u64_le(*set);
            out.put_u8(*all as u8);
            put_u16s(out, leaves);
            put_opt_bytes(out, after.as_deref());
            out.put_u32_le(*limit);
            finish(out, at);
        }
        Request::Fetch { keys } => {
            let at = begin(out, id, FETCH, hlc);
            out.put_u32_le(keys.len() as u32);
            for k in keys {
                put_bytes(out, k);
            }
            finish(out, at);
        }
        Request::Push { entries } => {
            let at = begin(out, id, PUSH, hlc);
            out.put_u32_le(entries.len() as u32);
            for (k, r) in entries {
                put_bytes(out, k);
                put_record(out, r);
            }
            finish(out, at);
        }
        Request::Layout { state, cleanup } => {
            let at = begin(out, id, LAYOUT, hlc);
            out.put_u8(*cleanup as u8);
            put_layout(out, state);
            finish(out, at);
        }
        Request::LayoutGet => {
            let at = begin(out, id, LAYOUT_GET, hlc);
            finish(out, at);
        }
    }
}

pub fn encode_response(out: &mut BytesMut, id: u64, hlc: u64, resp: &Response) {
    match resp {
        Response::Written(o, t) => {
            let at = begin(out, id, WRITTEN, hlc);
            let (tag, v) = match o {
                Outcome::Applied => (0, Version::default()),
                Outcome::Superseded(v) => (1, *v),
            };
            out.put_u8(tag);
            out.put_u64_le(v.hlc);
            out.put_u64_le(v.node);
            for d in [t.queued, t.stall, t.fsync, t.apply] {
                out.put_u32_le(d.as_micros().min(u32::MAX as u128) as u32);
            }
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
        Response::Version(v, applied) => {
            let at = begin(out, id, VERSION_ANSWER, hlc);
            for v in [v, applied] {
                match v {
                    Some(v) => {
                        out.put_u8(1);
                        out.put_u64_le(v.hlc);
                        out.put_u64_le(v.node);
                    }
                    None => out.put_u8(0),
                }
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
        Response::Hashes {
            ready,
            keys,
            root,
            hashes,
        } => {
            let at = begin(out, id, HASHES_ANSWER, hlc);
            out.put_u8(*ready as u8);
            out.put_u64_le(*keys);
            out.put_u64_le(*root);
            out.put_u32_le(hashes.len() as u32);
            for h in hashes {
                out.put_u64_le(*h);
            }
            finish(out, at);
        }
        Response::Keys { entries, resume } => {
            let at = begin(out, id, KEYS_ANSWER, hlc);
            out.put_u32_le(entries.len() as u32);
            for (k, v, tomb) in entries {
                put_bytes(out, k);
                out.put_u64_le(v.hlc);
                out.put_u64_le(v.node);
                out.put_u8(*tomb as u8);
            }
            put_opt_bytes(out, resume.as_deref());
            finish(out, at);
        }
        Response::Fetched(records) => {
            let at = begin(out, id, FETCHED, hlc);
            out.put_u32_le(records.len() as u32);
            for r in records {
                match r {
                    Some(r) => {
                        out.put_u8(1);
                        put_record(out, r);
                    }
                    None => out.put_u8(0),
                }
            }
            finish(out, at);
        }
        Response::Pushed { applied } => {
            let at = begin(out, id, PUSHED, hlc);
            out.put_u32_le(*applied);
            finish(out, at);
        }
        Response::Layout { state, stream } => {
            let at = begin(out, id, LAYOUT_ANSWER, hlc);
            put_layout(out, state);
            put_stream(out, stream);
            finish(out, at);
        }
        Response::Error {
            transient,
            read_only,
            message,
        } => {
            let at = begin(out, id, ERROR, hlc);
            out.put_u8(*transient as u8 | (*read_only as u8) << 1);
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
        VERSION => {
            let key = get_bytes(&mut b)?;
            let write = match b.remaining() {
                0 => None,
                16 => Some(WriteId(b.get_u128_le())),
                _ => return Err(bad("a version request's write id is not 16 bytes")),
            };
            Request::Version { key, write }
        }
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
        HASHES => Request::Hashes {
            set: get_u64(&mut b)?,
            level: get_u8(&mut b)?,
            branches: get_u16s(&mut b)?,
        },
        KEYS => {
            let set = get_u64(&mut b)?;
            let all = get_u8(&mut b)? != 0;
            let leaves = get_u16s(&mut b)?;
            let after = get_opt_bytes(&mut b)?;
            if b.remaining() < 4 {
                return Err(bad("short keys request"));
            }
            Request::Keys {
                set,
                all,
                leaves,
                after,
                limit: b.get_u32_le(),
            }
        }
        FETCH => {
            let n = get_count(&mut b, 4)?;
            let mut keys = Vec::with_capacity(n);
            for _ in 0..n {
                keys.push(get_bytes(&mut b)?);
            }
            Request::Fetch { keys }
        }
        PUSH => {
            let n = get_count(&mut b, 8)?;
            let mut entries = Vec::with_capacity(n);
            for _ in 0..n {
                let k = get_bytes(&mut b)?;
                entries.push((k, get_record(&mut b)?));
            }
            Request::Push { entries }
        }
        LAYOUT => {
            let cleanup = get_u8(&mut b)? != 0;
            Request::Layout {
                cleanup,
                state: get_layout(&mut b)?,
            }
        }
        LAYOUT_GET => Request::LayoutGet,
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
            // 17 bytes from a peer that reports no stages, 33 with them.
            if b.remaining() != 17 && b.remaining() != 33 {
                return Err(bad("bad write answer"));
            }
            let tag = b.get_u8();
            let v = Version {
                hlc: b.get_u64_le(),
                node: b.get_u64_le(),
            };
            let mut t = LocalTiming::default();
            if b.has_remaining() {
                let mut us = || std::time::Duration::from_micros(b.get_u32_le() as u64);
                t = LocalTiming {
                    queued: us(),
                    stall: us(),
                    fsync: us(),
                    apply: us(),
                };
            }
            Response::Written(
                match tag {
                    0 => Outcome::Applied,
                    _ => Outcome::Superseded(v),
                },
                t,
            )
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
        VERSION_ANSWER => {
            let get = |b: &mut Bytes| -> Result<Option<Version>, BadFrame> {
                Ok(match get_u8(b)? {
                    0 => None,
                    _ => Some(Version {
                        hlc: get_u64(b)?,
                        node: get_u64(b)?,
                    }),
                })
            };
            let newest = get(&mut b)?;
            let applied = if b.has_remaining() {
                get(&mut b)?
            } else {
                None
            };
            Response::Version(newest, applied)
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
        HASHES_ANSWER => {
            let ready = get_u8(&mut b)? != 0;
            let keys = get_u64(&mut b)?;
            let root = get_u64(&mut b)?;
            let n = get_count(&mut b, 8)?;
            Response::Hashes {
                ready,
                keys,
                root,
                hashes: (0..n).map(|_| b.get_u64_le()).collect(),
            }
        }
        KEYS_ANSWER => {
            let n = get_count(&mut b, 4 + 17)?;
            let mut entries = Vec::with_capacity(n);
            for _ in 0..n {
                let k = get_bytes(&mut b)?;
                if b.remaining() < 17 {
                    return Err(bad("short key entry"));
                }
                let v = Version {
                    hlc: b.get_u64_le(),
                    node: b.get_u64_le(),
                };
                entries.push((k, v, b.get_u8() != 0));
            }
            Response::Keys {
                entries,
                resume: get_opt_bytes(&mut b)?,
            }
        }
        FETCHED => {
            let n = get_count(&mut b, 1)?;
            let mut records = Vec::with_capacity(n);
            for _ in 0..n {
                records.push(match get_u8(&mut b)? {
                    0 => None,
                    _ => Some(get_record(&mut b)?),
                });
            }
            Response::Fetched(records)
        }
        PUSHED => {
            if b.remaining() < 4 {
                return Err(bad("short push answer"));
            }
            Response::Pushed {
                applied: b.get_u32_le(),
            }
        }
        ERROR => {
            if !b.has_remaining() {
                return Err(bad("short error"));
            }
            let flags = b.get_u8();
            let m = get_bytes(&mut b)?;
            Response::Error {
                transient: flags & 1 != 0,
                read_only: flags & 2 != 0,
                message: String::from_utf8_lossy(&m).into_owned(),
            }
        }
        LAYOUT_ANSWER => Response::Layout {
            state: get_layout(&mut b)?,
            stream: get_stream(&mut b)?,
        },
        k => return Err(BadFrame(format!("unknown answer kind {k}"))),
    };
    if b.has_remaining() {
        return Err(bad("trailing bytes"));
    }
    Ok(r)
}

/// A cluster error as the answer to a peer (here, beside the answer it
/// becomes, so that the errors need not know the wire).
impl ClusterError {
    /// The error as an answer to a peer (`transient`: busy or closing).
    pub(crate) fn into_response(self) -> Response {
        Response::Error {
            transient: matches!(
                self,
                ClusterError::Busy(_) | ClusterError::Closed | ClusterError::NotMember
            ),
            read_only: matches!(self, ClusterError::ReadOnly(_)),
            message: self.to_string(),
        }
    }
}

#[cfg(test)]
mod tests;
