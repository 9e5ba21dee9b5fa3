//! fjall (<https://crates.io/crates/fjall>) as a benchmark backend, for
//! comparison runs. Built only with the `fjall` cargo feature.
//!
//! Settings are matched to the flags: block cache = `--cache_size`, memtable
//! = `--write_buffer_size`, bloom filters of `--bloom_bits` bits per key in
//! every level (fjall's default uses a 0.01% false-positive rate in L0),
//! `--compression_type` none or lz4 for data and index blocks alike (fjall
//! has no zstd: asking for it is an error), 4 KiB blocks and restart
//! interval 16 like Strata and RocksDB. With `--sync` every write is a batch
//! committed with `PersistMode::SyncData` (fdatasync of the journal, as
//! Strata and RocksDB do); without it a write reaches the OS buffers and is
//! never fsynced by the write path.

use std::path::{Path, PathBuf};

use fjall::config::{
    BlockSizePolicy, BloomConstructionPolicy, CompressionPolicy, FilterPolicy, FilterPolicyEntry,
    RestartIntervalPolicy,
};
use fjall::{CompressionType, Database, Keyspace, KeyspaceCreateOptions, PersistMode};

use super::backend::{Backend, BackendConfig};

pub struct FjallBackend {
    dir: PathBuf,
    db: Database,
    ks: Keyspace,
    sync: bool,
}

fn err(e: fjall::Error) -> String {
    format!("fjall: {e}")
}

impl FjallBackend {
    pub fn open(dir: &Path, cfg: &BackendConfig) -> Result<Self, String> {
        use strata_engine::Compression;
        let codec = match cfg.compression.as_slice() {
            [Compression::None] => CompressionType::None,
            [Compression::Lz4] => CompressionType::Lz4,
            other => {
                return Err(format!(
                    "fjall stores blocks plain or with lz4 on every level, not {other:?}"
                ))
            }
        };
        let db = Database::builder(dir)
            .cache_size(cfg.cache_size as u64)
            .open()
            .map_err(|e| format!("opening fjall database in {}: {e}", dir.display()))?;
        let filter = if cfg.bloom_bits == 0 {
            FilterPolicy::disabled()
        } else {
            FilterPolicy::all(FilterPolicyEntry::Bloom(
                BloomConstructionPolicy::BitsPerKey(cfg.bloom_bits as f32),
            ))
        };
        let memtable = cfg.write_buffer_size as u64;
        let ks = db
            .keyspace("bench", || {
                KeyspaceCreateOptions::default()
                    .max_memtable_size(memtable)
                    .filter_policy(filter)
                    .data_block_compression_policy(CompressionPolicy::all(codec))
                    .index_block_compression_policy(CompressionPolicy::all(codec))
                    .data_block_size_policy(BlockSizePolicy::all(4096))
                    .data_block_restart_interval_policy(RestartIntervalPolicy::all(16))
            })
            .map_err(err)?;
        Ok(FjallBackend {
            dir: dir.to_path_buf(),
            db,
            ks,
            sync: cfg.sync,
        })
    }
}

impl Backend for FjallBackend {
    fn name(&self) -> &'static str {
        "fjall"
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), String> {
        if self.sync {
            let mut b = self.db.batch().durability(Some(PersistMode::SyncData));
            b.insert(&self.ks, key, value);
            b.commit().map_err(err)
        } else {
            self.ks.insert(key, value).map_err(err)
        }
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>, String> {
        self.ks.get(key).map(|v| v.map(|v| v.len())).map_err(err)
    }

    fn scan(
        &self,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), String> {
        use std::ops::Bound;
        let lo = start.map_or(Bound::Unbounded, Bound::Included);
        let hi = end.map_or(Bound::Unbounded, Bound::Excluded);
        for guard in self.ks.range::<&[u8], _>((lo, hi)) {
            let (k, v) = guard.into_inner().map_err(err)?;
            if !visit(&k, &v) {
                break;
            }
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), String> {
        self.ks.rotate_memtable_and_wait().map_err(err)
    }

    fn compact(&self) -> Result<(), String> {
        self.ks.rotate_memtable_and_wait().map_err(err)?;
        self.ks.major_compact().map_err(err)
    }

    /// Allocated bytes of the database directory: fjall's own
    /// `disk_space()` counts the journal at its preallocated length (64 MiB
    /// however little is in it).
    fn disk_bytes(&self) -> Result<u64, String> {
        super::report::dir_allocated_bytes(&self.dir)
            .map_err(|e| format!("{}: {e}", self.dir.display()))
    }

    fn describe(&self) -> Option<String> {
        Some(format!(
            "tables {} (L0 {}); compactions completed {}; journals {}",
            self.ks.table_count(),
            self.ks.l0_table_count(),
            self.db.compactions_completed(),
            self.db.journal_count(),
        ))
    }

    fn close(&self) -> Result<(), String> {
        self.db.persist(PersistMode::SyncAll).map_err(err)
    }
}
