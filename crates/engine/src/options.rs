//! Tuning knobs of the engine with their defaults. Owns validation of
//! options; must not read environment variables or files (the binary does).

use std::sync::Arc;
use std::time::Duration;

use crate::events::EventListener;
use crate::sstable::Compression;

/// When a write counts as durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// A write returns only after its WAL record is fsynced (group commit
    /// shares one fsync among concurrent writers). The default.
    Sync,
    /// Every commit group reaches the OS at once (one `write`); a background
    /// thread fsyncs the WAL every given number of milliseconds. A process
    /// crash loses nothing; a machine crash may lose that window. (RocksDB's
    /// `sync=false` is this without the periodic fsync.)
    Interval(u64),
    /// No promise: WAL records are buffered in the process and handed to the
    /// OS in 64 KiB chunks (and at memtable switch, flush and close), never
    /// fsynced by the write path. A process crash may lose the last 64 KiB of
    /// writes, a machine crash more. (fjall's default journal behaves alike.)
    None,
}

impl std::str::FromStr for Durability {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        match s {
            "sync" => Ok(Durability::Sync),
            "none" => Ok(Durability::None),
            _ => {
                let inner = s
                    .strip_prefix("interval(")
                    .and_then(|r| r.strip_suffix(')'))
                    .or_else(|| s.strip_prefix("interval:"))
                    .ok_or_else(|| {
                        format!("durability must be sync, none or interval(MS), got {s:?}")
                    })?;
                let ms: u64 = inner
                    .trim()
                    .trim_end_matches("ms")
                    .parse()
                    .map_err(|_| format!("bad interval in {s:?}"))?;
                if ms == 0 {
                    return Err("interval must be at least 1 ms".into());
                }
                Ok(Durability::Interval(ms))
            }
        }
    }
}

impl std::fmt::Display for Durability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Durability::Sync => write!(f, "sync"),
            Durability::Interval(ms) => write!(f, "interval({ms})"),
            Durability::None => write!(f, "none"),
        }
    }
}

/// Options given to [`crate::Db::open`].
#[derive(Clone)]
pub struct Options {
    /// Create the directory if it does not exist.
    pub create_if_missing: bool,
    pub durability: Durability,
    /// A memtable becomes immutable once it holds this many bytes.
    pub memtable_size: usize,
    /// Writes stall while this many immutable memtables wait for flush.
    pub max_immutable_memtables: usize,
    /// Target size of an SSTable data block before compression.
    pub block_size: usize,
    /// Keys between restart points inside a data block.
    pub block_restart_interval: usize,
    /// Bloom filter bits per key; 0 disables filters.
    pub bloom_bits_per_key: u32,
    /// How data and index blocks are stored, per level from level 0; the last entry
    /// serves every deeper level (`[Lz4]`: LZ4 everywhere, the default;
    /// `[None, Lz4, Zstd(3)]`: level 0 plain, level 1 LZ4, deeper zstd).
    /// The block cache holds blocks decompressed.
    pub compression: Vec<Compression>,
    /// Capacity of the shared block cache in bytes.
    pub block_cache_size: usize,
    /// Level-0 table count that triggers an L0 -> L1 compaction.
    pub l0_compaction_trigger: usize,
    /// Level-0 table count at which each write is delayed by 1 ms.
    pub l0_slowdown_trigger: usize,
    /// Level-0 table count at which writes wait for compaction.
    pub l0_stop_trigger: usize,
    /// Bounded wait of a stalled write before it fails with `Busy`.
    pub stall_timeout: Duration,
    /// Target size of level 1 in bytes; each deeper level is `level_multiplier` times larger.
    pub level1_size: u64,
    pub level_multiplier: u64,
    pub num_levels: usize,
    /// Compaction output files are cut at this size.
    pub target_file_size: u64,
    /// The manifest is rewritten as a checkpoint once it grows past this size.
    pub manifest_checkpoint_size: u64,
    /// Receives flush, compaction and stall events.
    pub listener: Option<Arc<dyn EventListener>>,
    /// Test only, a fail point: sleep this long after each WAL fsync of
    /// the write path, as a slow disk would (the diagnosis tests' slow
    /// replica). Zero in every real use.
    pub test_sync_delay: Duration,
    /// Test only, a fail point: the committing thread spends this long on
    /// a CPU per write of each group, as an expensive step on one thread
    /// would (the diagnosis tests' one busy thread). Zero in every real
    /// use.
    pub test_write_spin: Duration,
    /// Test only, a fail point: a thread of the engine's own takes the
    /// WAL's lock 10 ms after it last let go and holds it this long, asleep, as a thread
    /// that holds a lock the writes need would (the diagnosis tests' held
    /// lock). Zero in every real use.
    pub test_lock_hold: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            create_if_missing: true,
            durability: Durability::Sync,
            memtable_size: 64 << 20,
            max_immutable_memtables: 2,
            block_size: 4096,
            block_restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: vec![Compression::Lz4],
            block_cache_size: 64 << 20,
            l0_compaction_trigger: 4,
            l0_slowdown_trigger: 12,
            l0_stop_trigger: 20,
            stall_timeout: Duration::from_secs(5),
            level1_size: 256 << 20,
            level_multiplier: 10,
            num_levels: 7,
            target_file_size: 64 << 20,
            manifest_checkpoint_size: 4 << 20,
            listener: None,
            test_sync_delay: Duration::ZERO,
            test_write_spin: Duration::ZERO,
            test_lock_hold: Duration::ZERO,
        }
    }
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("durability", &self.durability)
            .field("memtable_size", &self.memtable_size)
            .field("max_immutable_memtables", &self.max_immutable_memtables)
            .field("block_size", &self.block_size)
            .field("bloom_bits_per_key", &self.bloom_bits_per_key)
            .field(
                "compression",
                &crate::sstable::compress::per_level_string(&self.compression),
            )
            .field("block_cache_size", &self.block_cache_size)
            .field("l0_compaction_trigger", &self.l0_compaction_trigger)
            .field("l0_slowdown_trigger", &self.l0_slowdown_trigger)
            .field("l0_stop_trigger", &self.l0_stop_trigger)
            .field("stall_timeout", &self.stall_timeout)
            .field("level1_size", &self.level1_size)
            .field("target_file_size", &self.target_file_size)
            .finish_non_exhaustive()
    }
}

impl Options {
    pub(crate) fn validate(&self) -> crate::error::Result<()> {
        let bad = |m: &str| Err(crate::error::Error::InvalidArgument(m.to_string()));
        if self.memtable_size < 4096 {
            return bad("memtable_size must be at least 4096 bytes");
        }
        if self.block_size < 64 {
            return bad("block_size must be at least 64 bytes");
        }
        if self.block_restart_interval == 0 {
            return bad("block_restart_interval must be at least 1");
        }
        if self.max_immutable_memtables == 0 {
            return bad("max_immutable_memtables must be at least 1");
        }
        if self.num_levels < 2 || self.num_levels > 16 {
            return bad("num_levels must be between 2 and 16");
        }
        if self.l0_compaction_trigger == 0
            || self.l0_slowdown_trigger < self.l0_compaction_trigger
            || self.l0_stop_trigger < self.l0_slowdown_trigger
        {
            return bad("need 0 < l0_compaction_trigger <= l0_slowdown_trigger <= l0_stop_trigger");
        }
        if self.level_multiplier < 2 {
            return bad("level_multiplier must be at least 2");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_durability() {
        assert_eq!("sync".parse::<Durability>().unwrap(), Durability::Sync);
        assert_eq!("none".parse::<Durability>().unwrap(), Durability::None);
        assert_eq!(
            "interval(50)".parse::<Durability>().unwrap(),
            Durability::Interval(50)
        );
        assert_eq!(
            "interval:5ms".parse::<Durability>().unwrap(),
            Durability::Interval(5)
        );
        assert!("interval(0)".parse::<Durability>().is_err());
        assert!("fast".parse::<Durability>().is_err());
    }

    #[test]
    fn defaults_are_valid() {
        Options::default().validate().unwrap();
        let o = Options {
            l0_stop_trigger: 1,
            ..Options::default()
        };
        assert!(o.validate().is_err());
    }
}
