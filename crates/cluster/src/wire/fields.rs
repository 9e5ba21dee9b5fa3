//! The fields of the internal protocol's frames, byte by byte: a frame's
//! head and length, length-prefixed bytes and records, counts checked
//! against what is left, URL lists, layouts and stream reports. Owns
//! those encodings; must not know which message holds which field (the
//! module above does).

use bytes::{Buf, BufMut, Bytes, BytesMut};

use super::BadFrame;
use crate::layout::{LayoutState, Stage, StreamStats};
use crate::record::Record;

pub(super) fn bad(m: &str) -> BadFrame {
    BadFrame(m.to_string())
}

pub(super) fn begin(out: &mut BytesMut, id: u64, kind: u8, hlc: u64) -> usize {
    let at = out.len();
    out.put_u32_le(0);
    out.put_u64_le(id);
    out.put_u8(kind);
    out.put_u64_le(hlc);
    at
}

pub(super) fn finish(out: &mut BytesMut, at: usize) {
    let len = (out.len() - at - 4) as u32;
    out[at..at + 4].copy_from_slice(&len.to_le_bytes());
}

pub(super) fn put_bytes(out: &mut BytesMut, b: &[u8]) {
    out.put_u32_le(b.len() as u32);
    out.put_slice(b);
}

pub(super) fn put_record(out: &mut BytesMut, r: &Record) {
    out.put_u32_le(r.encoded_len() as u32);
    r.encode_into(out);
}

pub(super) fn get_bytes(b: &mut Bytes) -> Result<Bytes, BadFrame> {
    if b.remaining() < 4 {
        return Err(bad("short length"));
    }
    let n = b.get_u32_le() as usize;
    if b.remaining() < n {
        return Err(bad("short bytes"));
    }
    Ok(b.split_to(n))
}

pub(super) fn get_record(b: &mut Bytes) -> Result<Record, BadFrame> {
    let r = get_bytes(b)?;
    Record::decode(&r).map_err(|e| BadFrame(e.to_string()))
}

pub(super) fn put_urls(out: &mut BytesMut, urls: &[String]) {
    out.put_u32_le(urls.len() as u32);
    for u in urls {
        put_bytes(out, u.as_bytes());
    }
}

pub(super) fn get_urls(b: &mut Bytes) -> Result<Vec<String>, BadFrame> {
    let n = get_count(b, 4)?;
    (0..n)
        .map(|_| {
            let u = get_bytes(b)?;
            String::from_utf8(u.to_vec()).map_err(|_| bad("a member URL is not UTF-8"))
        })
        .collect()
}

pub(super) fn put_layout(out: &mut BytesMut, s: &LayoutState) {
    out.put_u64_le(s.version);
    out.put_u32_le(s.replication as u32);
    out.put_u8(s.stage.code());
    put_urls(out, &s.members);
    match &s.previous {
        Some(p) => {
            out.put_u8(1);
            put_urls(out, p);
        }
        None => out.put_u8(0),
    }
}

pub(super) fn get_layout(b: &mut Bytes) -> Result<LayoutState, BadFrame> {
    let version = get_u64(b)?;
    if b.remaining() < 5 {
        return Err(bad("short layout"));
    }
    let replication = b.get_u32_le() as usize;
    let stage = Stage::from_code(b.get_u8()).ok_or_else(|| bad("unknown layout stage"))?;
    let members = get_urls(b)?;
    let previous = match get_u8(b)? {
        0 => None,
        _ => Some(get_urls(b)?),
    };
    Ok(LayoutState {
        version,
        replication,
        members,
        previous,
        stage,
    })
}

pub(super) fn put_stream(out: &mut BytesMut, s: &StreamStats) {
    for v in [
        s.version, s.scanned, s.keys, s.copies, s.records, s.applied, s.bytes, s.removed,
    ] {
        out.put_u64_le(v);
    }
    out.put_u8(s.done as u8);
    put_opt_bytes(out, s.error.as_ref().map(|e| e.as_bytes()));
}

pub(super) fn get_stream(b: &mut Bytes) -> Result<StreamStats, BadFrame> {
    let mut v = [0u64; 8];
    for x in v.iter_mut() {
        *x = get_u64(b)?;
    }
    let done = get_u8(b)? != 0;
    let error = get_opt_bytes(b)?.map(|e| String::from_utf8_lossy(&e).into_owned());
    let [version, scanned, keys, copies, records, applied, bytes, removed] = v;
    Ok(StreamStats {
        version,
        done,
        scanned,
        keys,
        copies,
        records,
        applied,
        bytes,
        removed,
        error,
    })
}

pub(super) fn put_u16s(out: &mut BytesMut, v: &[u16]) {
    out.put_u32_le(v.len() as u32);
    for x in v {
        out.put_u16_le(*x);
    }
}

pub(super) fn put_opt_bytes(out: &mut BytesMut, b: Option<&[u8]>) {
    match b {
        Some(b) => {
            out.put_u8(1);
            put_bytes(out, b);
        }
        None => out.put_u8(0),
    }
}

pub(super) fn get_u16s(b: &mut Bytes) -> Result<Vec<u16>, BadFrame> {
    let n = get_count(b, 2)?;
    Ok((0..n).map(|_| b.get_u16_le()).collect())
}

/// A count of items of at least `min` bytes each, checked against what is
/// left (a forged count must not allocate).
pub(super) fn get_count(b: &mut Bytes, min: usize) -> Result<usize, BadFrame> {
    if b.remaining() < 4 {
        return Err(bad("short count"));
    }
    let n = b.get_u32_le() as usize;
    if n.saturating_mul(min) > b.remaining() {
        return Err(bad("count past the frame"));
    }
    Ok(n)
}

pub(super) fn get_opt_bytes(b: &mut Bytes) -> Result<Option<Bytes>, BadFrame> {
    if !b.has_remaining() {
        return Err(bad("short option"));
    }
    match b.get_u8() {
        0 => Ok(None),
        1 => Ok(Some(get_bytes(b)?)),
        _ => Err(bad("bad option tag")),
    }
}

pub(super) fn get_u64(b: &mut Bytes) -> Result<u64, BadFrame> {
    if b.remaining() < 8 {
        return Err(bad("short u64"));
    }
    Ok(b.get_u64_le())
}

pub(super) fn get_u8(b: &mut Bytes) -> Result<u8, BadFrame> {
    if !b.has_remaining() {
        return Err(bad("short u8"));
    }
    Ok(b.get_u8())
}
