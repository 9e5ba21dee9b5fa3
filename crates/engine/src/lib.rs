//! Strata's storage engine: a log-structured merge tree.
//!
//! Writes go to a write-ahead log (group commit, checksummed records) and a
//! lock-free skiplist memtable; full memtables are flushed in the background
//! to immutable sorted tables (SSTables with bloom filters and a block
//! index), which a leveled compaction merges down the levels. A manifest
//! records the live set of tables atomically. See `docs/architecture.md` for
//! the tour and `docs/engine.md` for the file formats.
//!
//! Modules, one concept each: the database and its read and write paths
//! (`db`), its options (`options`), errors (`error`), counters (`stats`)
//! and events (`events`); batches of writes (`batch`) and their log
//! records (`record`); internal keys (`key`) and varint coding (`coding`);
//! the memtable (`memtable`) over an arena skiplist (`skiplist`); tables
//! (`sstable`, their blocks stored plain, LZ4 or zstd per level), the live set of tables and its edits (`version`,
//! `manifest`), leveled compaction (`compaction`), merged iteration
//! (`iterator`), hard-link checkpoints for backups (`checkpoint`), and the
//! decoders' entry points for the fuzz targets (`fuzzing`), and the
//! memtable's for its micro-benchmark (`benching`).
//!
//! This crate must not know about HTTP, clusters or metrics formats: it
//! reports through [`Db::stats`] and an [`EventListener`].

mod batch;
#[doc(hidden)]
pub mod benching;
mod checkpoint;
mod coding;
mod compaction;
mod db;
mod error;
mod events;
#[doc(hidden)]
pub mod fuzzing;
mod iterator;
mod key;
mod manifest;
mod memtable;
mod options;
mod record;
mod skiplist;
mod sstable;
mod stats;
mod version;

pub use batch::WriteBatch;
pub use checkpoint::CheckpointInfo;
pub use db::{Db, ScrubStep};
pub use error::{Error, Result};
pub use events::{Event, EventListener, EventLog, StallReason};
pub use iterator::DbIterator;
pub use manifest::write_atomically;
pub use options::{Durability, Options};
pub use sstable::Compression;
pub use stats::{LevelStats, StatsSnapshot, WriteTiming};

/// Format constants, for tools and documentation tests.
pub mod format {
    pub use crate::record::HEADER_LEN as RECORD_HEADER_LEN;
    pub use crate::sstable::{BLOCK_TRAILER_LEN, FOOTER_LEN, FORMAT_VERSION, MAGIC};
}
