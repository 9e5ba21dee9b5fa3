//! Counters the engine keeps about itself, and the snapshot `Db::stats`
//! returns. Owns only numbers; must not decide anything from them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Where one write call's time went, for callers that report each
/// request's stages (`Db::write_batches_timed`). The parts add up to the
/// call's time, less the checks before them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteTiming {
    /// Held back while flush and compaction caught up (a stall or a
    /// slowdown).
    pub stall: Duration,
    /// Waiting for earlier commit groups (another caller's fsync); all of
    /// the rest when another caller committed this write.
    pub queued: Duration,
    /// The WAL's fsync of this call's group (zero unless `Sync`).
    pub sync: Duration,
    /// The group's WAL write and memtable inserts.
    pub commit: Duration,
}

/// Live counters, updated with relaxed atomics.
#[derive(Default, Debug)]
pub struct Stats {
    pub user_bytes_written: AtomicU64,
    pub writes: AtomicU64,
    pub wal_bytes: AtomicU64,
    pub wal_syncs: AtomicU64,
    pub wal_sync_nanos: AtomicU64,
    /// Time commit groups waited to take the WAL's lock while another
    /// thread held it.
    pub wal_lock_wait_nanos: AtomicU64,
    pub commit_groups: AtomicU64,
    /// Commit groups, flushes and compactions that found the disk full.
    pub no_space_errors: AtomicU64,
    /// Tables set aside after a failed checksum (`Db::set_aside`).
    pub tables_quarantined: AtomicU64,
    /// Bytes of table blocks the scrub checked (`Db::scrub_step`).
    pub scrub_bytes: AtomicU64,
    /// Passes the scrub finished over every table.
    pub scrub_passes: AtomicU64,
    /// Blocks the scrub found damaged.
    pub scrub_corruptions: AtomicU64,
    /// Reads of table blocks the disk failed (EIO), by a lookup, a scan or
    /// the scrub: reported to the caller, never served.
    pub read_errors: AtomicU64,
    pub commit_group_writes: AtomicU64,
    pub gets: AtomicU64,
    pub bloom_negatives: AtomicU64,
    pub bloom_positives: AtomicU64,
    pub cache_hits: AtomicU64,
    pub cache_misses: AtomicU64,
    pub flushes: AtomicU64,
    pub flush_bytes: AtomicU64,
    pub flush_nanos: AtomicU64,
    pub compactions: AtomicU64,
    pub compaction_bytes_read: AtomicU64,
    pub compaction_bytes_written: AtomicU64,
    pub compaction_nanos: AtomicU64,
    pub stalls: AtomicU64,
    pub stall_nanos: AtomicU64,
    pub slowdowns: AtomicU64,
    pub busy_errors: AtomicU64,
    pub torn_wal_records: AtomicU64,
}

impl Stats {
    #[inline]
    pub fn inc(&self, c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }
    #[inline]
    pub fn add(&self, c: &AtomicU64, v: u64) {
        c.fetch_add(v, Ordering::Relaxed);
    }
}

fn load(c: &AtomicU64) -> u64 {
    c.load(Ordering::Relaxed)
}

/// One level of the tree.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LevelStats {
    pub tables: usize,
    pub bytes: u64,
}

/// A point-in-time copy of the engine's counters and shape.
#[derive(Clone, Debug, Default)]
pub struct StatsSnapshot {
    pub user_bytes_written: u64,
    pub writes: u64,
    pub wal_bytes: u64,
    pub wal_syncs: u64,
    pub wal_sync_seconds: f64,
    /// Time commit groups waited for the WAL's lock, held by another
    /// thread (a rotation, a checkpoint, the test's held lock).
    pub wal_lock_wait_seconds: f64,
    pub commit_groups: u64,
    /// Commit groups (refused), flushes and compactions (each retried)
    /// that found the disk full.
    pub no_space_errors: u64,
    pub tables_quarantined: u64,
    pub scrub_bytes: u64,
    pub scrub_passes: u64,
    pub scrub_corruptions: u64,
    pub read_errors: u64,
    /// True while writes are refused because the disk was full at the last
    /// flush or compaction (until a retry succeeds).
    pub no_space: bool,
    /// Writes committed in groups; `commit_group_writes / commit_groups` is the
    /// mean group-commit batch size.
    pub commit_group_writes: u64,
    pub gets: u64,
    pub bloom_negatives: u64,
    pub bloom_positives: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub cache_usage_bytes: u64,
    pub cache_capacity_bytes: u64,
    pub flushes: u64,
    pub flush_bytes: u64,
    pub flush_seconds: f64,
    pub compactions: u64,
    pub compaction_bytes_read: u64,
    pub compaction_bytes_written: u64,
    pub compaction_seconds: f64,
    pub stalls: u64,
    pub stall_seconds: f64,
    pub slowdowns: u64,
    pub busy_errors: u64,
    pub torn_wal_records: u64,
    pub memtable_bytes: u64,
    pub immutable_memtables: usize,
    pub levels: Vec<LevelStats>,
    pub last_sequence: u64,
    /// Bytes of all live table files plus WAL files.
    pub disk_bytes: u64,
}

impl StatsSnapshot {
    pub(crate) fn from_counters(s: &Stats) -> Self {
        StatsSnapshot {
            user_bytes_written: load(&s.user_bytes_written),
            writes: load(&s.writes),
            wal_bytes: load(&s.wal_bytes),
            wal_syncs: load(&s.wal_syncs),
            wal_sync_seconds: load(&s.wal_sync_nanos) as f64 / 1e9,
            wal_lock_wait_seconds: load(&s.wal_lock_wait_nanos) as f64 / 1e9,
            commit_groups: load(&s.commit_groups),
            no_space_errors: load(&s.no_space_errors),
            tables_quarantined: load(&s.tables_quarantined),
            scrub_bytes: load(&s.scrub_bytes),
            scrub_passes: load(&s.scrub_passes),
            scrub_corruptions: load(&s.scrub_corruptions),
            read_errors: load(&s.read_errors),
            no_space: false,
            commit_group_writes: load(&s.commit_group_writes),
            gets: load(&s.gets),
            bloom_negatives: load(&s.bloom_negatives),
            bloom_positives: load(&s.bloom_positives),
            cache_hits: load(&s.cache_hits),
            cache_misses: load(&s.cache_misses),
            flushes: load(&s.flushes),
            flush_bytes: load(&s.flush_bytes),
            flush_seconds: load(&s.flush_nanos) as f64 / 1e9,
            compactions: load(&s.compactions),
            compaction_bytes_read: load(&s.compaction_bytes_read),
            compaction_bytes_written: load(&s.compaction_bytes_written),
            compaction_seconds: load(&s.compaction_nanos) as f64 / 1e9,
            stalls: load(&s.stalls),
            stall_seconds: load(&s.stall_nanos) as f64 / 1e9,
            slowdowns: load(&s.slowdowns),
            busy_errors: load(&s.busy_errors),
            torn_wal_records: load(&s.torn_wal_records),
            ..Default::default()
        }
    }

    /// Bytes written to disk (WAL, flushes, compactions) per user byte.
    pub fn write_amplification(&self) -> f64 {
        if self.user_bytes_written == 0 {
            return 0.0;
        }
        (self.wal_bytes + self.flush_bytes + self.compaction_bytes_written) as f64
            / self.user_bytes_written as f64
    }

    pub fn tables(&self) -> usize {
        self.levels.iter().map(|l| l.tables).sum()
    }
}
