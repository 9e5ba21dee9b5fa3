//! Reads one SSTable: footer, index, filter and properties are loaded at
//! open; data blocks are read with positioned reads (`pread`) through the
//! shared block cache. Not a memory map: a failed read of a mapped page
//! (EIO from the disk) is a SIGBUS that kills the node, where a `pread`
//! returns an error the read reports (with file and offset) and a replica
//! answers instead; and the process's resident memory is then the cache
//! and the memtables, not whatever pages of the tables were touched. Owns
//! point lookups and iteration within a table and the deletion of its file
//! once it is obsolete and unused. Must not decide table placement.

use std::cmp::Ordering;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering as AtomicOrdering};
use std::sync::Arc;

use bytes::Bytes;

use crate::coding::{get_u32, get_u64, Reader};
use crate::error::{Error, IoContext, Result};
use crate::iterator::Lookup;
use crate::key::{self, Kind};
use crate::sstable::block::Block;
use crate::sstable::cache::BlockCache;
use crate::sstable::compress;
use crate::sstable::{bloom, BLOCK_TRAILER_LEN, FOOTER_LEN, FORMAT_VERSION, MAGIC};
use crate::stats::Stats;

/// Table properties, stored in the properties block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Props {
    pub entries: u64,
    pub deletes: u64,
    pub min_seq: u64,
    pub max_seq: u64,
    pub raw_key_bytes: u64,
    pub raw_value_bytes: u64,
    pub data_size: u64,
    pub data_blocks: u64,
    /// First and last internal keys.
    pub first_key: Vec<u8>,
    pub last_key: Vec<u8>,
}

/// One data block in the index: where its index key (a separator: >= its
/// last key, < the next block's first) lies in `index_keys`, and where the
/// block lies in the file.
pub(super) struct IndexEntry {
    key_start: usize,
    key_len: usize,
    pub(super) offset: u64,
    len: u64,
}

pub struct Table {
    id: u64,
    pub(super) path: PathBuf,
    /// Open for the table's life; blocks are read from it at their offset.
    file: File,
    size: u64,
    pub(super) index: Vec<IndexEntry>,
    /// `key::prefix8` of each index key's user key: a lookup binary-searches
    /// these 8 bytes an entry (a table of 64 MiB: 16k blocks, 128 KiB,
    /// which the caches keep) and compares whole keys only among equals.
    index_prefixes: Vec<u64>,
    /// The index keys of the data blocks, back to back.
    index_keys: Vec<u8>,
    filter: Vec<u8>,
    props: Props,
    cache: BlockCache,
    stats: Arc<Stats>,
    obsolete: AtomicBool,
}

impl std::fmt::Debug for Table {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Table({})", self.path.display())
    }
}

impl Table {
    pub fn open(path: &Path, id: u64, cache: BlockCache, stats: Arc<Stats>) -> Result<Table> {
        let file = File::open(path).ctx(path)?;
        let size = file.metadata().ctx(path)?.len();
        if size < FOOTER_LEN as u64 {
            return Err(Error::corruption(
                path,
                0,
                format!("file of {size} bytes is too short for a table"),
            ));
        }
        let foff = size - FOOTER_LEN as u64;
        let mut footer = [0u8; FOOTER_LEN];
        read_at(&file, path, &mut footer, foff)?;
        if footer[56..64] != MAGIC {
            return Err(Error::corruption(path, foff + 56, "bad table magic"));
        }
        if crc32fast::hash(&footer[..52]) != get_u32(&footer[52..56]) {
            return Err(Error::corruption(path, foff, "footer checksum mismatch"));
        }
        let version = get_u32(&footer[48..52]);
        // Version 1 is version 2 without compressed blocks: still read.
        if !(1..=FORMAT_VERSION).contains(&version) {
            return Err(Error::corruption(
                path,
                foff + 48,
                format!("unsupported table format version {version}"),
            ));
        }
        let h = |i: usize| (get_u64(&footer[16 * i..]), get_u64(&footer[16 * i + 8..]));
        let (index_h, filter_h, props_h) = (h(0), h(1), h(2));
        for (o, l) in [index_h, filter_h, props_h] {
            if o.checked_add(l)
                .and_then(|e| e.checked_add(BLOCK_TRAILER_LEN as u64))
                .is_none_or(|e| e > foff)
            {
                return Err(Error::corruption(
                    path,
                    foff,
                    "block handle points outside the file",
                ));
            }
        }
        let raw_index = read_block(&file, size, path, index_h.0, index_h.1)?;
        let filter = read_block(&file, size, path, filter_h.0, filter_h.1)?.to_vec();
        let raw_props = read_block(&file, size, path, props_h.0, props_h.1)?;
        let props = decode_props(&raw_props)
            .ok_or_else(|| Error::corruption(path, props_h.0, "malformed properties block"))?;
        let index_block = Block::new(raw_index)
            .ok_or_else(|| Error::corruption(path, index_h.0, "malformed index block"))?;
        let mut index = Vec::new();
        let mut index_prefixes = Vec::new();
        let mut index_keys = Vec::new();
        let mut it = index_block.iter();
        it.seek_to_first();
        while it.valid() {
            let mut r = Reader::new(it.value_ref());
            let (Some(offset), Some(len)) = (r.varint(), r.varint()) else {
                return Err(Error::corruption(path, index_h.0, "malformed index entry"));
            };
            if offset + len + BLOCK_TRAILER_LEN as u64 > foff {
                return Err(Error::corruption(
                    path,
                    index_h.0,
                    "index entry points outside the file",
                ));
            }
            index_prefixes.push(key::prefix8(key::user_key(it.key())));
            index.push(IndexEntry {
                key_start: index_keys.len(),
                key_len: it.key().len(),
                offset,
                len,
            });
            index_keys.extend_from_slice(it.key());
            it.next();
        }
        if it.corrupt() {
            return Err(Error::corruption(path, index_h.0, "malformed index block"));
        }
        Ok(Table {
            id,
            path: path.to_path_buf(),
            file,
            size,
            index,
            index_prefixes,
            index_keys,
            filter,
            props,
            cache,
            stats,
            obsolete: AtomicBool::new(false),
        })
    }

    pub fn id(&self) -> u64 {
        self.id
    }
    pub fn size(&self) -> u64 {
        self.size
    }
    pub fn props(&self) -> &Props {
        &self.props
    }
    pub fn first_user_key(&self) -> &[u8] {
        key::user_key(&self.props.first_key)
    }
    pub fn last_user_key(&self) -> &[u8] {
        key::user_key(&self.props.last_key)
    }

    /// Mark the file for deletion once the last reference is dropped.
    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, AtomicOrdering::Release);
    }

    pub(super) fn block(&self, i: usize, fill_cache: bool) -> Result<Block> {
        let e = &self.index[i];
        if let Some(b) = self.cache.get(&(self.id, e.offset)) {
            self.stats.inc(&self.stats.cache_hits);
            return Ok(b);
        }
        self.stats.inc(&self.stats.cache_misses);
        let raw = self.read_data_block(e)?;
        let b = Block::new(raw)
            .ok_or_else(|| Error::corruption(&self.path, e.offset, "malformed data block"))?;
        if fill_cache {
            self.cache.insert((self.id, e.offset), b.clone());
        }
        Ok(b)
    }

    /// A data block from the file, checksum checked; a read the disk failed
    /// is counted.
    fn read_data_block(&self, e: &IndexEntry) -> Result<Bytes> {
        let r = read_block(&self.file, self.size, &self.path, e.offset, e.len);
        if let Err(Error::Io { .. }) = r {
            self.stats.inc(&self.stats.read_errors);
        }
        r
    }

    /// Data blocks in the table.
    pub fn blocks(&self) -> usize {
        self.index.len()
    }

    /// Check data block `i` as the file holds it (not the cache): its
    /// checksum, and that its entries parse. The bytes checked.
    pub fn verify_block(&self, i: usize) -> Result<u64> {
        let e = &self.index[i];
        let raw = self.read_data_block(e)?;
        let b = Block::new(raw)
            .ok_or_else(|| Error::corruption(&self.path, e.offset, "malformed data block"))?;
        let mut it = b.iter();
        it.seek_to_first();
        while it.valid() {
            it.next();
        }
        if it.corrupt() {
            return Err(Error::corruption(
                &self.path,
                e.offset,
                "malformed data block entry",
            ));
        }
        Ok(e.len + BLOCK_TRAILER_LEN as u64)
    }

    /// Index of the first block whose index key is >= `target`.
    pub(super) fn find_block(&self, target: &[u8]) -> usize {
        let p = key::prefix8(key::user_key(target));
        let lo = self.index_prefixes.partition_point(|&x| x < p);
        let ties = self.index_prefixes[lo..].partition_point(|&x| x == p);
        lo + self.index[lo..lo + ties].partition_point(|e| {
            let k = &self.index_keys[e.key_start..e.key_start + e.key_len];
            key::compare(k, target) == Ordering::Less
        })
    }

    /// Newest version of `user` with sequence <= `snapshot`, consulting the
    /// bloom filter first.
    pub fn get(&self, user: &[u8], hash: u64, snapshot: u64) -> Result<Option<Lookup>> {
        if !self.filter.is_empty() {
            if !bloom::may_contain(&self.filter, hash) {
                self.stats.inc(&self.stats.bloom_negatives);
                return Ok(None);
            }
            self.stats.inc(&self.stats.bloom_positives);
        }
        let target = key::encode(user, key::seek_trailer(snapshot));
        let i = self.find_block(&target);
        if i >= self.index.len() {
            return Ok(None);
        }
        let b = self.block(i, true)?;
        let mut it = b.iter();
        it.seek(&target);
        if it.corrupt() {
            return Err(Error::corruption(
                &self.path,
                self.index[i].offset,
                "malformed data block entry",
            ));
        }
        if !it.valid() {
            return Ok(None);
        }
        let (u, t) = key::split(it.key());
        if u != user {
            return Ok(None);
        }
        Ok(Some(match key::trailer_kind(t) {
            Some(Kind::Put) => Lookup::Value(it.value()),
            Some(Kind::Delete) => Lookup::Deleted,
            None => {
                return Err(Error::corruption(
                    &self.path,
                    self.index[i].offset,
                    "unknown entry kind",
                ))
            }
        }))
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        if self.obsolete.load(AtomicOrdering::Acquire) {
            let _ = std::fs::remove_file(&self.path);
            // No read can ask for these blocks again: out of the cache
            // with them, or they would sit there until evicted, filling it
            // with dead data and making every later block's allocation
            // churn against their frees.
            for e in &self.index {
                self.cache.remove(&(self.id, e.offset));
            }
        }
    }
}

/// Fill `buf` from `file` at `off`; a failure (EIO from the disk, a file
/// cut short) names the file and the offset.
fn read_at(file: &File, path: &Path, buf: &mut [u8], off: u64) -> Result<()> {
    file.read_exact_at(buf, off).map_err(|e| {
        let what = format!("reading {} bytes at offset {off}: {e}", buf.len());
        Error::io(path, std::io::Error::new(e.kind(), what))
    })
}

/// Read `len` bytes at `off` plus the block trailer from a table of `size`
/// bytes, verify the checksum, and decompress what was stored compressed.
fn read_block(file: &File, size: u64, path: &Path, off: u64, len: u64) -> Result<Bytes> {
    off.checked_add(len)
        .and_then(|e| e.checked_add(BLOCK_TRAILER_LEN as u64))
        .filter(|&e| e <= size)
        .ok_or_else(|| Error::corruption(path, off, "block extends past end of file"))?;
    let len = len as usize;
    let mut buf = vec![0u8; len + BLOCK_TRAILER_LEN];
    read_at(file, path, &mut buf, off)?;
    let off = off as usize;
    let crc = get_u32(&buf[len + 1..]);
    if crc32fast::hash(&buf[..len + 1]) != crc {
        return Err(Error::corruption(
            path,
            off as u64,
            "block checksum mismatch",
        ));
    }
    match buf[len] {
        compress::TYPE_NONE => {
            buf.truncate(len);
            Ok(Bytes::from(buf))
        }
        kind => compress::decompress(kind, &buf[..len])
            .map(Bytes::from)
            .map_err(|what| Error::corruption(path, off as u64, what)),
    }
}

fn decode_props(b: &[u8]) -> Option<Props> {
    let mut r = Reader::new(b);
    let p = Props {
        entries: r.varint()?,
        deletes: r.varint()?,
        min_seq: r.varint()?,
        max_seq: r.varint()?,
        raw_key_bytes: r.varint()?,
        raw_value_bytes: r.varint()?,
        data_size: r.varint()?,
        data_blocks: r.varint()?,
        first_key: r.bytes()?.to_vec(),
        last_key: r.bytes()?.to_vec(),
    };
    if p.entries > 0 && (p.first_key.len() < 8 || p.last_key.len() < 8) {
        return None;
    }
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iterator::InternalIterator;
    use crate::key::{encode, seek_trailer, trailer};
    use crate::sstable::{Compression, TableBuilder};

    const CODECS: [Compression; 3] = [Compression::None, Compression::Lz4, Compression::Zstd(3)];

    fn build(dir: &Path, n: usize) -> PathBuf {
        build_with(dir, n, Compression::None)
    }

    fn build_with(dir: &Path, n: usize, c: Compression) -> PathBuf {
        let p = dir.join(format!("{}.sst", c.type_byte() + 1));
        let mut b = TableBuilder::create(&p, 256, 4, 10, c).unwrap();
        for i in 0..n {
            let kind = if i % 10 == 9 { Kind::Delete } else { Kind::Put };
            let v = if kind == Kind::Put {
                format!("value{i}")
            } else {
                String::new()
            };
            b.add(
                &encode(format!("k{i:06}").as_bytes(), trailer(i as u64 + 1, kind)),
                v.as_bytes(),
            )
            .unwrap();
        }
        b.finish().unwrap();
        p
    }

    fn open(p: &Path) -> Result<Arc<Table>> {
        Table::open(p, 1, BlockCache::new(1 << 20), Arc::new(Stats::default())).map(Arc::new)
    }

    #[test]
    fn get_and_iterate() {
        for c in CODECS {
            get_and_iterate_with(c);
        }
    }

    fn get_and_iterate_with(c: Compression) {
        let d = tempfile::tempdir().unwrap();
        let p = build_with(d.path(), 1000, c);
        let t = open(&p).unwrap();
        assert_eq!(t.props().entries, 1000);
        assert_eq!(t.props().deletes, 100);
        assert_eq!(t.first_user_key(), b"k000000");
        assert_eq!(t.last_user_key(), b"k000999");
        for i in [0usize, 1, 500, 998, 999] {
            let u = format!("k{i:06}");
            let got = t
                .get(u.as_bytes(), bloom::hash(u.as_bytes()), 1 << 40)
                .unwrap();
            if i % 10 == 9 {
                assert_eq!(got, Some(Lookup::Deleted));
            } else {
                assert_eq!(got, Some(Lookup::Value(Bytes::from(format!("value{i}")))));
            }
            // Invisible at an older snapshot.
            assert_eq!(
                t.get(u.as_bytes(), bloom::hash(u.as_bytes()), i as u64)
                    .unwrap(),
                None
            );
        }
        assert_eq!(t.get(b"nope", bloom::hash(b"nope"), 1 << 40).unwrap(), None);
        let mut it = t.iter(true);
        it.seek_to_first().unwrap();
        let mut n = 0;
        while it.valid() {
            n += 1;
            it.next().unwrap();
        }
        assert_eq!(n, 1000);
        it.seek(&encode(b"k000500", seek_trailer(1 << 40))).unwrap();
        assert_eq!(key::user_key(it.key()), b"k000500");
    }

    #[test]
    fn a_block_and_its_trailer_fit_the_block_size() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("000001.sst");
        let mut b = TableBuilder::create(&p, 4096, 16, 10, Compression::None).unwrap();
        for i in 0..5000u64 {
            let v = vec![b'v'; 60 + (i as usize * 37) % 120];
            b.add(
                &encode(format!("key{i:08}").as_bytes(), trailer(i + 1, Kind::Put)),
                &v,
            )
            .unwrap();
        }
        // A value larger than a block sits alone in its block.
        b.add(
            &encode(b"key99999999", trailer(9_999, Kind::Put)),
            &[b'x'; 9000],
        )
        .unwrap();
        b.finish().unwrap();
        let t = open(&p).unwrap();
        let (blocks, last) = t.index.split_at(t.index.len() - 1);
        assert!(blocks.len() > 100, "{} blocks", blocks.len());
        for (i, e) in blocks.iter().enumerate() {
            let taken = e.len as usize + BLOCK_TRAILER_LEN;
            assert!(taken <= 4096, "a block of {taken} bytes at {}", e.offset);
            // Full, but for the one the large value cut short.
            if i + 1 < blocks.len() {
                assert!(
                    taken > 3800,
                    "a block of only {taken} bytes at {}",
                    e.offset
                );
            }
        }
        assert!(last[0].len > 9000);
        let got = t.get(b"key99999999", bloom::hash(b"key99999999"), 1 << 40);
        assert_eq!(
            got.unwrap(),
            Some(Lookup::Value(Bytes::from(vec![b'x'; 9000])))
        );
    }

    #[test]
    fn compressed_blocks_take_less_room_and_scrub_clean() {
        let d = tempfile::tempdir().unwrap();
        let sizes: Vec<(u64, usize)> = CODECS
            .iter()
            .map(|&c| {
                let t = open(&build_with(d.path(), 3000, c)).unwrap();
                let stored = (0..t.blocks())
                    .filter(|&i| {
                        let e = &t.index[i];
                        let mut kind = [0u8];
                        t.file.read_exact_at(&mut kind, e.offset + e.len).unwrap();
                        kind[0] == c.type_byte()
                    })
                    .count();
                for i in 0..t.blocks() {
                    t.verify_block(i).unwrap();
                }
                (t.props().data_size, stored * 100 / t.blocks())
            })
            .collect();
        // The blocks shrank by the eighth that compression must save (all
        // but a short last one, perhaps).
        assert!(sizes[1].1 >= 95, "{sizes:?}");
        assert!(sizes[2].1 >= 95, "{sizes:?}");
        assert!(sizes[1].0 < sizes[0].0 * 7 / 8, "{sizes:?}");
        assert!(sizes[2].0 < sizes[1].0, "{sizes:?}");
    }

    /// Index keys are separators, not last keys: seeks and lookups of keys
    /// that fall between two blocks (above one block's last key, below
    /// the separator) land right.
    #[test]
    fn seeks_between_blocks_land_on_the_next_key() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("9.sst");
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut keys: Vec<Vec<u8>> = (0..4000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x.to_be_bytes()[..(3 + x as usize % 6)].to_vec()
            })
            .collect();
        keys.sort();
        keys.dedup();
        let mut b = TableBuilder::create(&p, 256, 4, 10, Compression::Lz4).unwrap();
        for (i, k) in keys.iter().enumerate() {
            b.add(&encode(k, trailer(i as u64 + 1, Kind::Put)), k)
                .unwrap();
        }
        b.finish().unwrap();
        let t = open(&p).unwrap();
        assert!(t.blocks() > 50);
        let shortened = t.index.iter().filter(|e| e.key_len < 8 + 3).count();
        assert!(
            shortened > t.blocks() / 4,
            "{shortened} of {} index keys shortened",
            t.blocks()
        );
        let mut it = t.iter(true);
        for probe in 0..3000u64 {
            let target: Vec<u8> =
                probe.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes()[..4].to_vec();
            let want = keys.iter().find(|k| k.as_slice() >= target.as_slice());
            it.seek(&encode(&target, seek_trailer(1 << 40))).unwrap();
            let got = it.valid().then(|| key::user_key(it.key()).to_vec());
            assert_eq!(got.as_ref(), want, "seek to {target:?}");
            let hit = t.get(&target, bloom::hash(&target), 1 << 40).unwrap();
            assert_eq!(hit.is_some(), keys.contains(&target), "get {target:?}");
        }
        for k in keys.iter().step_by(7) {
            let hit = t.get(k, bloom::hash(k), 1 << 40).unwrap();
            assert_eq!(hit, Some(Lookup::Value(Bytes::from(k.clone()))));
        }
    }

    #[test]
    fn a_table_of_format_version_1_still_opens() {
        let d = tempfile::tempdir().unwrap();
        let p = build(d.path(), 100);
        let mut bytes = std::fs::read(&p).unwrap();
        let f = bytes.len() - FOOTER_LEN;
        bytes[f + 48..f + 52].copy_from_slice(&1u32.to_le_bytes());
        let crc = crc32fast::hash(&bytes[f..f + 52]);
        bytes[f + 52..f + 56].copy_from_slice(&crc.to_le_bytes());
        std::fs::write(&p, &bytes).unwrap();
        let t = open(&p).unwrap();
        assert_eq!(t.props().entries, 100);
        bytes[f + 48..f + 52].copy_from_slice(&3u32.to_le_bytes());
        let crc = crc32fast::hash(&bytes[f..f + 52]);
        bytes[f + 52..f + 56].copy_from_slice(&crc.to_le_bytes());
        std::fs::write(&p, &bytes).unwrap();
        assert!(matches!(open(&p), Err(Error::Corruption { .. })));
    }

    #[test]
    fn flipped_bytes_are_reported_with_file_and_offset() {
        for c in CODECS {
            flipped_bytes_are_reported_with(c);
        }
    }

    fn flipped_bytes_are_reported_with(c: Compression) {
        let d = tempfile::tempdir().unwrap();
        let p = build_with(d.path(), 1000, c);
        let clean = std::fs::read(&p).unwrap();
        let len = clean.len();
        // Each position: early data block, meta region, footer.
        for pos in [10, len / 2, len - 100, len - 10, len - 30] {
            let mut bytes = clean.clone();
            bytes[pos] ^= 0x40;
            std::fs::write(&p, &bytes).unwrap();
            let result = open(&p).and_then(|t| {
                let mut it = t.iter(true);
                it.seek_to_first()?;
                while it.valid() {
                    it.next()?;
                }
                Ok(())
            });
            match result {
                Err(Error::Corruption { file, .. }) => assert_eq!(file, p),
                other => panic!("flip at {pos}: expected corruption, got {other:?}"),
            }
        }
    }
}
