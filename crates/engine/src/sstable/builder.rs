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
}

impl TableBuilder {
    pub fn create(
        path: &Path,
        block_size: usize,
        restart_interval: usize,
        bloom_bits: u32,
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
            index: BlockBuilder::new(1),
            hashes: Vec::new(),
            last_user: Vec::new(),
            props: Props {
                min_seq: u64::MAX,
                ..Props::default()
            },
            pending: None,
            scratch: Vec::new(),
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
            self.add_index_entry(off, len);
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

    fn add_index_entry(&mut self, off: u64, len: u64) {
        self.scratch.clear();
        put_varint(&mut self.scratch, off);
        put_varint(&mut self.scratch, len);
        let last = std::mem::take(&mut self.props.last_key);
        self.index.add(&last, &self.scratch);
        self.props.last_key = last;
    }

    fn flush_data_block(&mut self) -> Result<()> {
        if self.data.is_empty() {
            return Ok(());
        }
        self.props.last_key.clear();
        self.props.last_key.extend_from_slice(self.data.last_key());
        let block = self.data.finish();
        let handle = self.write_block(&block)?;
        self.props.data_blocks += 1;
        self.pending = Some(handle);
        Ok(())
    }

    fn write_block(&mut self, block: &[u8]) -> Result<(u64, u64)> {
        let off = self.offset;
        let mut h = crc32fast::Hasher::new();
        h.update(block);
        h.update(&[0u8]);
        let crc = h.finalize();
        self.w.write_all(block).ctx(&self.tmp)?;
        self.w.write_all(&[0u8]).ctx(&self.tmp)?;
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
            self.add_index_entry(off, len);
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
        let index = self.index.finish();
        let index_h = self.write_block(&index)?;
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
