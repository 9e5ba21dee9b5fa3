//! Block compression: the codecs a data or index block may be stored with
//! (none, LZ4, zstd), the choice per level, and the bytes of a compressed block.
//! Owns encoding and decoding one block's payload; must not do I/O (the
//! builder writes, the table reads) and must not choose a level's codec
//! (the options do).
//!
//! A compressed payload is `uncompressed_len: varint` followed by the
//! codec's output (an LZ4 block, or a zstd frame). A block is stored
//! compressed only if that saves at least an eighth of its bytes, as
//! RocksDB does: a block that barely shrinks would cost a decompression on
//! every read for nothing. The trailer's compression byte says which.

use std::cell::RefCell;
use std::fmt;
use std::str::FromStr;

use crate::coding::{get_varint, put_varint};

/// How the data and index blocks of one level's tables are stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// As built.
    None,
    /// LZ4 (block format): fast to write and very fast to read.
    Lz4,
    /// zstd at the given level (1..=22; 3 is zstd's default): smaller than
    /// LZ4, slower to write, a little slower to read.
    Zstd(i32),
}

/// The trailer's compression byte for each codec.
pub const TYPE_NONE: u8 = 0;
pub const TYPE_LZ4: u8 = 1;
pub const TYPE_ZSTD: u8 = 2;

/// zstd's own default level.
const ZSTD_DEFAULT_LEVEL: i32 = 3;

impl Compression {
    /// The trailer byte of a block stored with this codec.
    pub fn type_byte(self) -> u8 {
        match self {
            Compression::None => TYPE_NONE,
            Compression::Lz4 => TYPE_LZ4,
            Compression::Zstd(_) => TYPE_ZSTD,
        }
    }

    /// Parse a list of codecs, one per level from level 0 (`"lz4"`,
    /// `"none,lz4,zstd"`, `"lz4,zstd:6"`); the last one also serves every
    /// deeper level.
    pub fn parse_per_level(s: &str) -> Result<Vec<Compression>, String> {
        s.split(',').map(str::parse).collect()
    }

    /// The codec for `level` from a per-level list (the last entry serves
    /// deeper levels; an empty list means none).
    pub fn for_level(per_level: &[Compression], level: usize) -> Compression {
        per_level
            .get(level)
            .or(per_level.last())
            .copied()
            .unwrap_or(Compression::None)
    }
}

impl FromStr for Compression {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        match s {
            "none" => Ok(Compression::None),
            "lz4" => Ok(Compression::Lz4),
            "zstd" => Ok(Compression::Zstd(ZSTD_DEFAULT_LEVEL)),
            _ => {
                let level = s.strip_prefix("zstd:").ok_or_else(|| {
                    format!("compression must be none, lz4, zstd or zstd:LEVEL, got {s:?}")
                })?;
                let level: i32 = level
                    .parse()
                    .map_err(|_| format!("bad zstd level in {s:?}"))?;
                if !(1..=22).contains(&level) {
                    return Err(format!("zstd level must be 1 to 22, got {level}"));
                }
                Ok(Compression::Zstd(level))
            }
        }
    }
}

impl fmt::Display for Compression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Compression::None => write!(f, "none"),
            Compression::Lz4 => write!(f, "lz4"),
            Compression::Zstd(ZSTD_DEFAULT_LEVEL) => write!(f, "zstd"),
            Compression::Zstd(l) => write!(f, "zstd:{l}"),
        }
    }
}

/// zstd's contexts, one pair per thread: making one is an allocation of
/// some hundred kilobytes, which a block per read cannot afford.
struct ZstdContexts {
    compressor: zstd::bulk::Compressor<'static>,
    compressor_level: i32,
    decompressor: zstd::bulk::Decompressor<'static>,
}

thread_local! {
    static ZSTD: RefCell<ZstdContexts> = RefCell::new(ZstdContexts {
        compressor: zstd::bulk::Compressor::new(ZSTD_DEFAULT_LEVEL)
            .expect("a zstd compression context"),
        compressor_level: ZSTD_DEFAULT_LEVEL,
        decompressor: zstd::bulk::Decompressor::new().expect("a zstd decompression context"),
    });
}

/// Display a per-level list the way [`Compression::parse_per_level`] reads it.
pub fn per_level_string(per_level: &[Compression]) -> String {
    let v: Vec<String> = per_level.iter().map(|c| c.to_string()).collect();
    v.join(",")
}

/// Compress `block` with `c` into `out` (cleared first). Returns the type
/// byte to store, or `None` if the block is better stored as it is (no
/// codec, or it would not shrink by an eighth).
pub fn compress(c: Compression, block: &[u8], out: &mut Vec<u8>) -> Option<u8> {
    out.clear();
    match c {
        Compression::None => return None,
        Compression::Lz4 => {
            put_varint(out, block.len() as u64);
            let start = out.len();
            out.resize(
                start + lz4_flex::block::get_maximum_output_size(block.len()),
                0,
            );
            let n = lz4_flex::block::compress_into(block, &mut out[start..]).ok()?;
            out.truncate(start + n);
        }
        Compression::Zstd(level) => {
            put_varint(out, block.len() as u64);
            let start = out.len();
            out.resize(start + zstd::zstd_safe::compress_bound(block.len()), 0);
            let n = ZSTD.with(|z| {
                let mut z = z.borrow_mut();
                if z.compressor_level != level {
                    z.compressor.set_compression_level(level).ok()?;
                    z.compressor_level = level;
                }
                z.compressor
                    .compress_to_buffer(block, &mut out[start..])
                    .ok()
            })?;
            out.truncate(start + n);
        }
    }
    let body = out.len() - varint_len(block.len() as u64);
    // A block that shrank past what `decompress` accepts (a huge run of
    // one byte under zstd) is stored as built: costlier on disk, never
    // unreadable.
    let decodable = block.len() as u64 <= max_decoded(c.type_byte(), body);
    (decodable && out.len() < block.len() - block.len() / 8).then(|| c.type_byte())
}

fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// The most bytes a codec's output of `body` bytes may decode to: a
/// claimed length beyond it is damage, not a reason to allocate.
fn max_decoded(kind: u8, body: usize) -> u64 {
    match kind {
        TYPE_LZ4 => body as u64 * 255 + 16,
        _ => body as u64 * 32_768 + 4096,
    }
}

/// Decompress a payload stored with trailer byte `kind`. `Err` carries
/// what is wrong with it (the caller names the file and offset).
pub fn decompress(kind: u8, payload: &[u8]) -> Result<Vec<u8>, &'static str> {
    let (len, used) = get_varint(payload).ok_or("malformed compressed block length")?;
    let body = &payload[used..];
    if kind != TYPE_LZ4 && kind != TYPE_ZSTD {
        return Err("unknown block compression type");
    }
    if len > max_decoded(kind, body.len()) {
        return Err("compressed block claims an impossible length");
    }
    let len = len as usize;
    let mut out = vec![0u8; len];
    let n = match kind {
        TYPE_LZ4 => {
            lz4_flex::block::decompress_into(body, &mut out).map_err(|_| "malformed lz4 block")?
        }
        _ => ZSTD
            .with(|z| {
                z.borrow_mut()
                    .decompressor
                    .decompress_to_buffer(body, &mut out)
            })
            .map_err(|_| "malformed zstd block")?,
    };
    if n != len {
        return Err("compressed block decodes to the wrong length");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compressible(n: usize) -> Vec<u8> {
        (0..n)
            .map(|i| b"strata-key-value"[i % 16] ^ (i / 512) as u8)
            .collect()
    }

    #[test]
    fn every_codec_round_trips() {
        let block = compressible(4096);
        for c in [
            Compression::Lz4,
            Compression::Zstd(3),
            Compression::Zstd(19),
        ] {
            let mut out = Vec::new();
            let kind = compress(c, &block, &mut out).expect("compressible");
            assert_eq!(kind, c.type_byte());
            assert!(out.len() < block.len() / 2, "{c}: {} bytes", out.len());
            assert_eq!(decompress(kind, &out).unwrap(), block, "{c}");
        }
    }

    #[test]
    fn incompressible_blocks_stay_as_they_are() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let block: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let mut out = Vec::new();
        assert_eq!(compress(Compression::Lz4, &block, &mut out), None);
        assert_eq!(compress(Compression::Zstd(3), &block, &mut out), None);
        assert_eq!(
            compress(Compression::None, &compressible(4096), &mut out),
            None
        );
    }

    #[test]
    fn damage_is_an_error_not_a_panic() {
        let block = compressible(4096);
        for c in [Compression::Lz4, Compression::Zstd(3)] {
            let mut out = Vec::new();
            let kind = compress(c, &block, &mut out).unwrap();
            // A length no codec could produce from these bytes.
            let mut lying = Vec::new();
            put_varint(&mut lying, 1 << 40);
            lying.extend_from_slice(&out[2..]);
            assert!(decompress(kind, &lying).is_err(), "{c}");
            // A body cut short.
            assert!(decompress(kind, &out[..out.len() / 2]).is_err(), "{c}");
            // A length that disagrees with the body.
            let mut short = Vec::new();
            put_varint(&mut short, 100);
            short.extend_from_slice(&out[2..]);
            assert!(decompress(kind, &short).is_err(), "{c}");
        }
        assert!(decompress(9, &[0]).is_err());
    }

    /// 16 MiB of one byte shrinks under zstd to near what the decoder
    /// believes (32,768 to 1): whatever is stored must read back.
    #[test]
    fn blocks_that_shrink_far_still_read_back() {
        let block = vec![7u8; 16 << 20];
        let mut out = Vec::new();
        match compress(Compression::Zstd(3), &block, &mut out) {
            None => {}
            Some(kind) => assert_eq!(decompress(kind, &out).unwrap(), block),
        }
        let kind = compress(Compression::Lz4, &block, &mut out).expect("LZ4 stays under 255:1");
        assert_eq!(decompress(kind, &out).unwrap(), block);
    }

    #[test]
    fn per_level_lists_parse_and_extend_downwards() {
        let v = Compression::parse_per_level("none, lz4,zstd:6").unwrap();
        assert_eq!(
            v,
            [Compression::None, Compression::Lz4, Compression::Zstd(6)]
        );
        assert_eq!(Compression::for_level(&v, 0), Compression::None);
        assert_eq!(Compression::for_level(&v, 6), Compression::Zstd(6));
        assert_eq!(Compression::for_level(&[], 3), Compression::None);
        assert_eq!(per_level_string(&v), "none,lz4,zstd:6");
        assert_eq!("zstd".parse::<Compression>().unwrap().to_string(), "zstd");
        assert!("snappy".parse::<Compression>().is_err());
        assert!("zstd:0".parse::<Compression>().is_err());
        assert!("zstd:23".parse::<Compression>().is_err());
    }
}
