//! The storage-engine side of the benchmark: a small trait the driver calls,
//! and its implementation for Strata's engine. The fjall implementation
//! lives in `fjall_backend.rs` behind the `fjall` cargo feature.

use std::ops::Bound;
use std::path::Path;

use strata_engine::{Db, Durability, Options};

/// Settings every backend gets, taken from the db_bench-style flags, so that
/// the engines run with the same durability, memtable, cache and filters.
#[derive(Clone, Debug)]
pub struct BackendConfig {
    /// Fsync the log on every write (`--sync`).
    pub sync: bool,
    /// Strata's durability, if given; otherwise from `sync`.
    pub durability: Option<Durability>,
    /// Memtable size in bytes (`--write_buffer_size`).
    pub write_buffer_size: usize,
    /// Block cache capacity in bytes (`--cache_size`).
    pub cache_size: usize,
    /// Bloom filter bits per key, 0 = no filters (`--bloom_bits`).
    pub bloom_bits: u32,
    /// Block codec per level from level 0, the last for deeper levels
    /// (`--compression_type`, Strata's `--compression_per_level`).
    pub compression: Vec<strata_engine::Compression>,
    /// Open an existing database only; never create one.
    pub use_existing: bool,
}

/// What the driver needs from a storage engine. Every method may be called
/// from several threads at once.
pub trait Backend: Send + Sync {
    /// Engine name as printed in reports.
    fn name(&self) -> &'static str;
    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), String>;
    /// The value's length if the key is present.
    fn get(&self, key: &[u8]) -> Result<Option<usize>, String>;
    /// Visit entries in key order from `start` (inclusive; `None` = first
    /// key) up to `end` (exclusive; `None` = last key) until `visit` returns
    /// false.
    fn scan(
        &self,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), String>;
    /// Write the memtable out to tables and wait for it.
    fn flush(&self) -> Result<(), String>;
    /// Flush, then compact everything as far as the engine goes.
    fn compact(&self) -> Result<(), String>;
    /// Bytes the database occupies on disk now (tables and logs).
    fn disk_bytes(&self) -> Result<u64, String>;
    /// Write amplification by the engine's own accounting, if it keeps one.
    fn engine_write_amplification(&self) -> Option<f64> {
        None
    }
    /// User bytes written by the engine's own accounting, if it keeps one.
    fn engine_user_bytes_written(&self) -> Option<u64> {
        None
    }
    /// One line of engine-specific counters worth a look (stalls, levels).
    fn describe(&self) -> Option<String> {
        None
    }
    /// Make everything durable and stop background work.
    fn close(&self) -> Result<(), String>;
}

/// Strata's engine.
pub struct StrataBackend {
    db: Db,
}

impl StrataBackend {
    pub fn open(dir: &Path, cfg: &BackendConfig) -> Result<Self, String> {
        let opts = Options {
            create_if_missing: !cfg.use_existing,
            durability: cfg.durability.unwrap_or(if cfg.sync {
                Durability::Sync
            } else {
                Durability::None
            }),
            memtable_size: cfg.write_buffer_size,
            bloom_bits_per_key: cfg.bloom_bits,
            block_cache_size: cfg.cache_size,
            compression: cfg.compression.clone(),
            ..Options::default()
        };
        let db = Db::open(dir, opts).map_err(|e| format!("opening {}: {e}", dir.display()))?;
        Ok(StrataBackend { db })
    }

    pub fn db(&self) -> &Db {
        &self.db
    }
}

fn bound(b: Option<&[u8]>, included: bool) -> Bound<&[u8]> {
    match b {
        None => Bound::Unbounded,
        Some(k) if included => Bound::Included(k),
        Some(k) => Bound::Excluded(k),
    }
}

impl Backend for StrataBackend {
    fn name(&self) -> &'static str {
        "strata"
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<(), String> {
        self.db.put(key, value).map_err(|e| e.to_string())
    }

    fn get(&self, key: &[u8]) -> Result<Option<usize>, String> {
        self.db
            .get(key)
            .map(|v| v.map(|v| v.len()))
            .map_err(|e| e.to_string())
    }

    fn scan(
        &self,
        start: Option<&[u8]>,
        end: Option<&[u8]>,
        visit: &mut dyn FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<(), String> {
        let it = self
            .db
            .scan((bound(start, true), bound(end, false)))
            .map_err(|e| e.to_string())?;
        for kv in it {
            let (k, v) = kv.map_err(|e| e.to_string())?;
            if !visit(&k, &v) {
                break;
            }
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), String> {
        self.db.flush().map_err(|e| e.to_string())
    }

    fn compact(&self) -> Result<(), String> {
        self.db.compact().map_err(|e| e.to_string())
    }

    fn disk_bytes(&self) -> Result<u64, String> {
        Ok(self.db.stats().disk_bytes)
    }

    fn engine_write_amplification(&self) -> Option<f64> {
        Some(self.db.stats().write_amplification())
    }

    fn engine_user_bytes_written(&self) -> Option<u64> {
        Some(self.db.stats().user_bytes_written)
    }

    fn describe(&self) -> Option<String> {
        let s = self.db.stats();
        let levels: Vec<String> = s.levels.iter().map(|l| l.tables.to_string()).collect();
        let group = if s.commit_groups > 0 {
            s.commit_group_writes as f64 / s.commit_groups as f64
        } else {
            0.0
        };
        Some(format!(
            "tables per level [{}]; flushes {} ({:.1}s); compactions {} ({:.1}s, {} MiB written); \
             stalls {} ({:.2}s); slowdowns {}; wal syncs {}; mean commit group {:.1}; \
             cache hits {} misses {}; bloom negatives {}",
            levels.join(" "),
            s.flushes,
            s.flush_seconds,
            s.compactions,
            s.compaction_seconds,
            s.compaction_bytes_written >> 20,
            s.stalls,
            s.stall_seconds,
            s.slowdowns,
            s.wal_syncs,
            group,
            s.cache_hits,
            s.cache_misses,
            s.bloom_negatives,
        ))
    }

    fn close(&self) -> Result<(), String> {
        self.db.close().map_err(|e| e.to_string())
    }
}
