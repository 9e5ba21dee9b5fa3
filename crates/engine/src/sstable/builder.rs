//! Writes one SSTable: data blocks, filter, index, properties, footer. The
//! file is written under a temporary name, fsynced and renamed into place by
//! `finish`. Must not decide which entries go into a table (flush and
//! compaction do).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::coding::{put_bytes, put_u32, put_u64, put_varint};
use crate::error::{synced, IoContext, Result};
use crate::key::{self, Kind};
use crate::sstable::block::BlockBuilder;
use crate::sstable::compress::{self, Compression};
use crate::sstable::table::Props;
use crate::sstable::{bloom, FORMAT_VERSION, MAGIC};

/// The most an entry adds to a block besides its key and value: three
/// varint lengths and a restart offset.
const ENTRY_OVERHEAD_MAX: usize = 3 * 10 + 4;

pub struct TableBuilder {
    path: PathBuf,
    tmp: PathBuf,
    w: BufWriter<File>,
    offset: u64,
    block_size: usize,
    bloom_bits: u32,
    data: BlockBuilder,
    index: BlockBuilder,
    hashes: Vec<u64>,
    last_user: Vec<u8>,
    props: Props,
    /// Handle of the last finished data block, waiting for its index entry.
    pending: Option<(u64, u64)>,
    scratch: Vec<u8>,
    /// How data and index blocks are stored (the filter and properties
    /// never are compressed).
    compression: Compression,
    /// A compressed block, reused.
    packed: Vec<u8>,
    /// An index key, reused.
    separator: Vec<u8>,
}

impl TableBuilder {
    pub fn create(
        path: &Path,
        block_size: usize,
        restart_interval: usize,
        bloom_bits: u32,
        compression: Compression,
    ) -> Result<Self> {
        let tmp = path.with_extension("sst.tmp");
        let f = File::create(&tmp).ctx(&tmp)?;
        Ok(TableBuilder {
            path: path.to_path_buf(),
            tmp,
            w: BufWriter::with_capacity(1 << 20, f),
            offset: 0,
            block_size,
            bloom_bits,
            data: BlockBuilder::new(restart_interval),
            // Decoded whole at open, never searched in place: restarts
            // are needed only for prefix compression to start over.
            index: BlockBuilder::new(16),
            hashes: Vec::new(),
            last_user: Vec::new(),
            props: Props {
                min_seq: u64::MAX,
                ..Props::default()
            },
            pending: None,
            scratch: Vec::new(),
            compression,
            packed: Vec::new(),
            separator: Vec::new(),
        })
    }

    /// Add an entry (an encoded internal key) in increasing order.
    pub fn add(&mut self, ikey: &[u8], value: &[u8]) -> Result<()> {
        // A block read back is one allocation of the block and its
        // trailer: cut before an entry that would take it past the block
        // size, so that a 4 KiB block takes a 4 KiB allocation, not the
        // next size class up (5 KiB). An entry larger than a block sits
        // alone in its block.
        let bound = ikey.len() + value.len() + ENTRY_OVERHEAD_MAX;
        if !self.data.is_empty()
            && self.data.estimated_size() + bound + super::BLOCK_TRAILER_LEN > self.block_size
        {
            self.flush_data_block()?;
        }
        if let Some((off, len)) = self.pending.take() {
            self.add_index_entry(off, len, Some(ikey));
        }
        let (user, trailer) = key::split(ikey);
        if self.props.entries == 0 {
            self.props.first_key = ikey.to_vec();
        }
        if self.props.entries == 0 || user != self.last_user.as_slice() {
            self.hashes.push(bloom::hash(user));
            self.last_user.clear();
            self.last_user.extend_from_slice(user);
        }
        let seq = key::trailer_seq(trailer);
        self.props.min_seq = self.props.min_seq.min(seq);
        self.props.max_seq = self.props.max_seq.max(seq);
        self.props.entries += 1;
        if key::trailer_kind(trailer) == Some(Kind::Delete) {
            self.props.deletes += 1;
        }
        self.props.raw_key_bytes += user.len() as u64;
        self.props.raw_value_bytes += value.len() as u64;
        self.data.add(ikey, value);
        if self.data.estimated_size() + super::BLOCK_TRAILER_LEN >= self.block_size {
            self.flush_data_block()?;
        }
        Ok(())
    }

    /// The index entry of the block that ended with `props.last_key`;
    /// `next` is the first key of the block after it, if any.
    fn add_index_entry(&mut self, off: u64, len: u64, next: Option<&[u8]>) {
        self.scratch.clear();
        put_varint(&mut self.scratch, off);
        put_varint(&mut self.scratch, len);
        let last = std::mem::take(&mut self.props.last_key);
        let mut sep = std::mem::take(&mut self.separator);
        match next {
            Some(next) => separator(&last, next, &mut sep),
            None => {
                sep.clear();
                sep.extend_from_slice(&last);
            }
        }
        self.index.add(&sep, &self.scratch);
        self.separator = sep;
        self.props.last_key = last;
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data.is_empty() {
            return Ok(());
        }
        self.props.last_key.clear();
        self.props.last_key.extend_from_slice(self.data.last_key());
        let block = self.data.finish();
        let handle = self.write_compressed(&block)?;
        self.props.data_blocks += 1;
        self.pending = Some(handle);
        Ok(())
    }

    /// Write a block with the table's codec (or as built, if it would not
    /// shrink enough).
    fn write_compressed(&mut self, block: &[u8]) -> Result<(u64, u64)> {
        let mut packed = std::mem::take(&mut self.packed);
        let r = match compress::compress(self.compression, block, &mut packed) {
            Some(kind) => self.write_block_as(&packed, kind),
            None => self.write_block(block),
        };
        self.packed = packed;
        r
    }

    fn write_block(&mut self, block: &[u8]) -> Result<(u64, u64)> {
        self.write_block_as(block, compress::TYPE_NONE)
    }

    /// Write a block's stored bytes and its trailer (`kind`, CRC).
    fn write_block_as(&mut self, block: &[u8], kind: u8) -> Result<(u64, u64)> {
        let off = self.offset;
        let mut h = crc32fast::Hasher::new();
        h.update(block);
        h.update(&[kind]);
        let crc = h.finalize();
        self.w.write_all(block).ctx(&self.tmp)?;
        self.w.write_all(&[kind]).ctx(&self.tmp)?;
        self.w.write_all(&crc.to_le_bytes()).ctx(&self.tmp)?;
        self.offset += block.len() as u64 + super::BLOCK_TRAILER_LEN as u64;
        Ok((off, block.len() as u64))
    }

    /// Bytes written so far (an estimate of the final file size).
    pub fn file_size(&self) -> u64 {
        self.offset + self.data.estimated_size() as u64
    }

    /// Write the meta blocks and footer, fsync, and rename into place.
    /// Returns the final file size and the table's properties.
    pub fn finish(mut self) -> Result<(u64, Props)> {
        self.flush_data_block()?;
        if let Some((off, len)) = self.pending.take() {
            self.add_index_entry(off, len, None);
        }
        if self.props.entries == 0 {
            self.props.min_seq = 0;
        }
        self.props.data_size = self.offset;
        let filter = if self.bloom_bits > 0 {
            bloom::build(&self.hashes, self.bloom_bits)
        } else {
            Vec::new()
        };
        let filter_h = self.write_block(&filter)?;
        // The index is stored with the data blocks' codec, as RocksDB's
        // is: its separators' trailers are all alike.
        let index = self.index.finish();
        let index_h = self.write_compressed(&index)?;
        let props = self.props.encode();
        let props_h = self.write_block(&props)?;
        let mut footer = Vec::with_capacity(super::FOOTER_LEN);
        for (o, l) in [index_h, filter_h, props_h] {
            put_u64(&mut footer, o);
            put_u64(&mut footer, l);
        }
        put_u32(&mut footer, FORMAT_VERSION);
        let crc = crc32fast::hash(&footer);
        put_u32(&mut footer, crc);
        footer.extend_from_slice(&MAGIC);
        debug_assert_eq!(footer.len(), super::FOOTER_LEN);
        self.w.write_all(&footer).ctx(&self.tmp)?;
        self.offset += footer.len() as u64;
        let f = self
            .w
            .into_inner()
            .map_err(|e| crate::error::Error::io(&self.tmp, e.into_error()))?;
        synced(f.sync_all(), &self.tmp)?;
        drop(f);
        std::fs::rename(&self.tmp, &self.path).ctx(&self.path)?;
        Ok((self.offset, self.props))
    }

    /// Abandon the table and remove its temporary file.
    pub fn abandon(self) {
        let tmp = self.tmp.clone();
        drop(self);
        let _ = std::fs::remove_file(tmp);
    }
}

/// Into `out`, the shortest internal key that is >= `last` and < `next`
/// (both internal keys, `last` < `next`), as LevelDB's and RocksDB's index
/// keys are: a block's index entry need only separate it from the next
/// block, and a short user key (`b"\x12\x35"` between `\x12\x34\xab…` and
/// `\x12\x37…`) takes a third of the index's bytes a whole key takes. A
/// shortened user key gets the trailer that sorts first among its own
/// versions; where no shorter key fits, `last` itself.
fn separator(last: &[u8], next: &[u8], out: &mut Vec<u8>) {
    out.clear();
    let (a, b) = (key::user_key(last), key::user_key(next));
    let i = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    if i < a.len() && i < b.len() {
        // a[i] < b[i]. Bump a[i] if that stays below b[i]; otherwise bump
        // the first byte after i that can be (a[..=i] < b[..=i] holds).
        let j = if a[i] + 1 < b[i] {
            Some(i)
        } else {
            (i + 1..a.len()).find(|&j| a[j] < 0xff)
        };
        if let Some(j) = j {
            if j + 1 < a.len() {
                out.extend_from_slice(&a[..j]);
                out.push(a[j] + 1);
                out.extend_from_slice(&key::seek_trailer(key::MAX_SEQ).to_be_bytes());
                return;
            }
        }
    }
    out.extend_from_slice(last);
}

impl Props {
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [
            self.entries,
            self.deletes,
            self.min_seq,
            self.max_seq,
            self.raw_key_bytes,
            self.raw_value_bytes,
            self.data_size,
            self.data_blocks,
        ] {
            put_varint(&mut b, v);
        }
        put_bytes(&mut b, &self.first_key);
        put_bytes(&mut b, &self.last_key);
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::key::{encode, trailer, Kind};

    fn sep(a: &[u8], b: &[u8]) -> Vec<u8> {
        let (a, b) = (
            encode(a, trailer(7, Kind::Put)),
            encode(b, trailer(9, Kind::Put)),
        );
        let mut out = Vec::new();
        separator(&a, &b, &mut out);
        assert!(key::compare(&a, &out).is_le(), "{out:?} below {a:?}");
        assert!(key::compare(&out, &b).is_lt(), "{out:?} not below {b:?}");
        out
    }

    #[test]
    fn separators_are_short_and_between() {
        let t = || key::seek_trailer(key::MAX_SEQ).to_be_bytes();
        let with_t = |u: &[u8]| [u, &t()[..]].concat();
        assert_eq!(
            sep(b"\x12\x34\xab\xcd", b"\x12\x37\x00"),
            with_t(b"\x12\x35")
        );
        // b[i] = a[i] + 1: bump a later byte of `a`.
        assert_eq!(
            sep(b"\x12\x34\xab\xcd", b"\x12\x35\x00"),
            with_t(b"\x12\x34\xac")
        );
        assert_eq!(
            sep(b"\x12\x34\xff\xcd\x01", b"\x12\x35"),
            with_t(b"\x12\x34\xff\xce")
        );
        // Nothing shorter fits: the last key itself.
        let whole = |a: &[u8]| encode(a, trailer(7, Kind::Put));
        assert_eq!(sep(b"abc", b"abcd"), whole(b"abc"));
        assert_eq!(sep(b"abc", b"abd"), whole(b"abc"));
        assert_eq!(sep(b"ab\xff", b"ac"), whole(b"ab\xff"));
        assert_eq!(sep(b"", b"a"), whole(b""));
        // The same user key across two blocks.
        let (a, b) = (
            encode(b"k", trailer(9, Kind::Put)),
            encode(b"k", trailer(3, Kind::Put)),
        );
        let mut out = Vec::new();
        separator(&a, &b, &mut out);
        assert_eq!(out, a);
    }
}
