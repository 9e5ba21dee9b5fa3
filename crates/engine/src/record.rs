//! Checksummed record framing shared by the WAL and the manifest. Owns the
//! on-disk record header and the rules that tell a torn tail (a crash while
//! appending) from damage in the middle of a file. Must not interpret
//! payloads.
//!
//! Record layout: `len: u64 LE`, `payload_crc: u32 LE` (CRC-32 of the
//! payload), `header_crc: u32 LE` (CRC-32 of the first 12 header bytes),
//! then `len` payload bytes.

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::coding::{get_u32, get_u64};
use crate::error::{Error, IoContext, Result};

pub const HEADER_LEN: usize = 16;

/// Append one framed record to `buf`.
pub fn encode(buf: &mut Vec<u8>, payload: &[u8]) {
    let start = buf.len();
    buf.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    buf.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    let hcrc = crc32fast::hash(&buf[start..start + 12]);
    buf.extend_from_slice(&hcrc.to_le_bytes());
    buf.extend_from_slice(payload);
}

/// Start a record whose payload will be appended by the caller: writes a
/// placeholder header and returns its position for [`finish`].
pub fn begin(buf: &mut Vec<u8>) -> usize {
    let at = buf.len();
    buf.extend_from_slice(&[0u8; HEADER_LEN]);
    at
}

/// Fill in the header written by [`begin`] once the payload follows it.
pub fn finish(buf: &mut [u8], at: usize) {
    let len = (buf.len() - at - HEADER_LEN) as u64;
    let pcrc = crc32fast::hash(&buf[at + HEADER_LEN..]);
    buf[at..at + 8].copy_from_slice(&len.to_le_bytes());
    buf[at + 8..at + 12].copy_from_slice(&pcrc.to_le_bytes());
    let hcrc = crc32fast::hash(&buf[at..at + 12]);
    buf[at + 12..at + 16].copy_from_slice(&hcrc.to_le_bytes());
}

/// What the reader found next.
#[derive(Debug)]
pub enum Next {
    /// A valid record starting at `offset`.
    Record { offset: u64, payload: Vec<u8> },
    /// Clean end of file, or the start of zero-filled space after the
    /// last record.
    End,
    /// An incomplete or damaged final record: a crash while appending. The
    /// file's valid prefix ends at `offset`.
    Torn { offset: u64, reason: String },
}

/// Sequential reader over a record file.
pub struct RecordReader {
    path: PathBuf,
    r: BufReader<File>,
    len: u64,
    pos: u64,
}

impl RecordReader {
    pub fn open(path: &Path) -> Result<Self> {
        let f = File::open(path).ctx(path)?;
        let len = f.metadata().ctx(path)?.len();
        Ok(RecordReader {
            path: path.to_path_buf(),
            r: BufReader::with_capacity(256 << 10, f),
            len,
            pos: 0,
        })
    }

    /// True if every byte from `from` to the end of the file is zero (a
    /// filesystem may extend a file with zeros before data lands).
    fn rest_is_zero(&mut self, from: u64) -> Result<bool> {
        let path = self.path.clone();
        self.r.seek(SeekFrom::Start(from)).ctx(&path)?;
        let mut buf = [0u8; 8192];
        loop {
            let n = self.r.read(&mut buf).ctx(&path)?;
            if n == 0 {
                return Ok(true);
            }
            if buf[..n].iter().any(|&b| b != 0) {
                return Ok(false);
            }
        }
    }

    /// Read the next record. Damage that cannot be a torn tail is an
    /// [`Error::Corruption`] naming the file and offset.
    pub fn next(&mut self) -> Result<Next> {
        let offset = self.pos;
        let remaining = self.len - offset;
        if remaining == 0 {
            return Ok(Next::End);
        }
        if remaining < HEADER_LEN as u64 {
            return Ok(Next::Torn {
                offset,
                reason: format!("partial header of {remaining} bytes"),
            });
        }
        let mut h = [0u8; HEADER_LEN];
        let path = self.path.clone();
        self.r.read_exact(&mut h).ctx(&path)?;
        if h == [0u8; HEADER_LEN] && self.rest_is_zero(offset + HEADER_LEN as u64)? {
            // Zero-filled space ahead of the records (the WAL is
            // preallocated): the clean end of the log.
            return Ok(Next::End);
        }
        let len = get_u64(&h[0..8]);
        let pcrc = get_u32(&h[8..12]);
        let hcrc = get_u32(&h[12..16]);
        if crc32fast::hash(&h[..12]) != hcrc {
            if self.rest_is_zero(offset + HEADER_LEN as u64)? {
                return Ok(Next::Torn {
                    offset,
                    reason: "damaged header at end of file".into(),
                });
            }
            return Err(Error::corruption(
                &self.path,
                offset,
                "record header checksum mismatch",
            ));
        }
        let body_avail = remaining - HEADER_LEN as u64;
        if len > body_avail {
            return Ok(Next::Torn {
                offset,
                reason: format!("record of {len} bytes but only {body_avail} remain"),
            });
        }
        let mut payload = vec![0u8; len as usize];
        self.r.read_exact(&mut payload).ctx(&path)?;
        let end = offset + HEADER_LEN as u64 + len;
        if crc32fast::hash(&payload) != pcrc {
            if end == self.len || self.rest_is_zero(end)? {
                return Ok(Next::Torn {
                    offset,
                    reason: "damaged final record".into(),
                });
            }
            return Err(Error::corruption(
                &self.path,
                offset,
                "record payload checksum mismatch",
            ));
        }
        self.pos = end;
        Ok(Next::Record { offset, payload })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write_file(dir: &Path, bytes: &[u8]) -> PathBuf {
        let p = dir.join("f.log");
        File::create(&p).unwrap().write_all(bytes).unwrap();
        p
    }

    fn records(n: usize) -> Vec<u8> {
        let mut buf = Vec::new();
        for i in 0..n {
            encode(&mut buf, format!("record-{i}").as_bytes());
        }
        buf
    }

    #[test]
    fn roundtrip_and_begin_finish() {
        let d = tempfile::tempdir().unwrap();
        let mut buf = records(3);
        let at = begin(&mut buf);
        buf.extend_from_slice(b"tail");
        finish(&mut buf, at);
        let p = write_file(d.path(), &buf);
        let mut r = RecordReader::open(&p).unwrap();
        let mut got = vec![];
        while let Next::Record { payload, .. } = r.next().unwrap() {
            got.push(String::from_utf8(payload).unwrap());
        }
        assert_eq!(got, ["record-0", "record-1", "record-2", "tail"]);
    }

    #[test]
    fn truncated_tail_is_torn() {
        let d = tempfile::tempdir().unwrap();
        let buf = records(3);
        for cut in 1..20 {
            let p = write_file(d.path(), &buf[..buf.len() - cut]);
            let mut r = RecordReader::open(&p).unwrap();
            assert!(matches!(r.next().unwrap(), Next::Record { .. }));
            assert!(matches!(r.next().unwrap(), Next::Record { .. }));
            assert!(matches!(r.next().unwrap(), Next::Torn { .. }), "cut {cut}");
        }
    }

    #[test]
    fn middle_damage_is_corruption_with_offset() {
        let d = tempfile::tempdir().unwrap();
        let mut buf = records(3);
        let second = (HEADER_LEN + 8) as u64;
        buf[second as usize + HEADER_LEN + 2] ^= 0x55;
        let p = write_file(d.path(), &buf);
        let mut r = RecordReader::open(&p).unwrap();
        assert!(matches!(r.next().unwrap(), Next::Record { .. }));
        match r.next() {
            Err(Error::Corruption { offset, file, .. }) => {
                assert_eq!(offset, second);
                assert_eq!(file, p);
            }
            other => panic!("expected corruption, got {other:?}"),
        }
    }

    #[test]
    fn zero_filled_tail_is_the_end_and_a_half_record_before_it_is_torn() {
        let d = tempfile::tempdir().unwrap();
        let mut buf = records(2);
        buf.extend_from_slice(&[0u8; 100]);
        let p = write_file(d.path(), &buf);
        let mut r = RecordReader::open(&p).unwrap();
        r.next().unwrap();
        r.next().unwrap();
        assert!(matches!(r.next().unwrap(), Next::End));
        // A record whose payload was only partly written before zeros.
        let mut buf = records(3);
        let n = buf.len();
        for b in &mut buf[n - 4..] {
            *b = 0;
        }
        buf.extend_from_slice(&[0u8; 100]);
        let p = write_file(d.path(), &buf);
        let mut r = RecordReader::open(&p).unwrap();
        r.next().unwrap();
        r.next().unwrap();
        assert!(matches!(r.next().unwrap(), Next::Torn { .. }));
    }
}
