//! Entry points for the fuzz targets (`fuzz/`) and their regression tests:
//! each takes arbitrary bytes, runs the engine's own decoding of one file
//! format on them and must return (an error is fine) without panicking,
//! hanging or allocating without bound. Owns nothing else; must not be used
//! by the engine itself.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;

use crate::iterator::InternalIterator;
use crate::memtable::Memtable;
use crate::record::{Next, RecordReader};
use crate::sstable::block::Block;
use crate::sstable::cache::BlockCache;
use crate::sstable::table::Table;
use crate::stats::Stats;

/// Walk past at most this many entries or records of one input.
const MAX_STEPS: usize = 100_000;

/// `bytes` as a WAL segment at `dir/000001.wal`: read every record and
/// replay it into a memtable, as recovery does.
pub fn wal(dir: &Path, bytes: &[u8]) {
    let path = dir.join("000001.wal");
    std::fs::write(&path, bytes).expect("write the input");
    let Ok(mut r) = RecordReader::open(&path) else {
        return;
    };
    let mem = Memtable::new(1, 1 << 20);
    for _ in 0..MAX_STEPS {
        match r.next() {
            Ok(Next::Record { offset, payload }) => {
                if crate::db::replay_record(&mem, &path, offset, payload).is_err() {
                    return;
                }
            }
            _ => return,
        }
    }
}

/// `bytes` as a table file: open it (footer, index, filter, properties),
/// scan it and look a few keys up.
pub fn table(dir: &Path, bytes: &[u8]) {
    let path = dir.join("000001.sst");
    std::fs::write(&path, bytes).expect("write the input");
    let Ok(t) = Table::open(
        &path,
        1,
        BlockCache::new(1 << 20),
        Arc::new(Stats::default()),
    ) else {
        return;
    };
    let t = Arc::new(t);
    let mut it = t.iter(false);
    if it.seek_to_first().is_err() {
        return;
    }
    let mut keys = Vec::new();
    for _ in 0..MAX_STEPS {
        if !it.valid() {
            break;
        }
        if keys.len() < 8 {
            keys.push(it.key().to_vec());
        }
        let _ = it.value_ref().len();
        if it.next().is_err() {
            break;
        }
    }
    // Look up what the scan found, and a key it may not hold (seek takes an
    // internal key: user key and trailer).
    let mut users: Vec<Vec<u8>> = keys
        .iter()
        .map(|k| k[..k.len().saturating_sub(8)].to_vec())
        .collect();
    users.push(b"k".to_vec());
    for user in &users {
        let _ = t.get(user, crate::memtable::key_hash(user), u64::MAX >> 8);
        let _ = it.seek(&crate::key::encode(user, u64::MAX));
    }
}

/// `bytes` as one data or index block, stored as built, and as the stored
/// bytes of an LZ4 and of a zstd block (decoded, then walked the same way).
pub fn block(bytes: &[u8]) {
    walk_block(bytes);
    for kind in [
        crate::sstable::compress::TYPE_LZ4,
        crate::sstable::compress::TYPE_ZSTD,
    ] {
        if let Ok(decoded) = crate::sstable::compress::decompress(kind, bytes) {
            walk_block(&decoded);
        }
    }
}

fn walk_block(bytes: &[u8]) {
    let Some(b) = Block::new(Bytes::copy_from_slice(bytes)) else {
        return;
    };
    let mut it = b.iter();
    it.seek_to_first();
    let mut first = None;
    for _ in 0..MAX_STEPS {
        if !it.valid() {
            break;
        }
        first.get_or_insert_with(|| it.key().to_vec());
        let _ = it.value_ref().len();
        it.next();
    }
    // seek takes an internal key (user key and an 8-byte trailer), as the
    // engine always passes it; the block's own keys are checked to be.
    if let Some(k) = first {
        it.seek(&k);
    }
    it.seek(&crate::key::encode(b"m", u64::MAX));
}

/// `bytes` as the manifest named by `CURRENT`: recover the set of tables.
pub fn manifest(dir: &Path, bytes: &[u8]) {
    std::fs::write(dir.join("MANIFEST-000001"), bytes).expect("write the input");
    std::fs::write(dir.join("CURRENT"), "MANIFEST-000001\n").expect("write CURRENT");
    let _ = crate::manifest::recover(dir, 7);
}

/// `data` as `Bytes` (for targets in crates that take them).
pub fn bytes(data: &[u8]) -> Bytes {
    Bytes::copy_from_slice(data)
}
