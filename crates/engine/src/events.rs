//! Engine events for observers: flush, compaction and write-stall start and
//! end, and WAL recovery findings. Owns the event vocabulary; listeners must
//! return quickly and must not call back into the engine.

use std::path::PathBuf;
use std::time::Duration;

#[derive(Clone, Debug)]
pub enum Event {
    FlushStarted {
        job: u64,
        memtable_bytes: u64,
    },
    FlushFinished {
        job: u64,
        table: u64,
        bytes_written: u64,
        duration: Duration,
    },
    CompactionStarted {
        job: u64,
        input_level: usize,
        output_level: usize,
        input_tables: usize,
        input_bytes: u64,
    },
    CompactionFinished {
        job: u64,
        input_level: usize,
        output_level: usize,
        bytes_read: u64,
        bytes_written: u64,
        output_tables: usize,
        duration: Duration,
    },
    WriteStallStarted {
        reason: StallReason,
    },
    WriteStallFinished {
        reason: StallReason,
        duration: Duration,
    },
    /// One commit group reached the WAL: `writes` records (puts and
    /// deletes, of one batch or several) of `bytes` in one `write`, and
    /// (under `sync`) one fsync that took `sync`. Emitted on the
    /// commit path, so a listener must be quick (an atomic add or two).
    WalCommit {
        writes: usize,
        bytes: u64,
        sync: Option<Duration>,
    },
    /// A table failed a checksum and was set aside: moved under
    /// `quarantine/` and out of the store (`Db::set_aside`).
    TableQuarantined {
        file: PathBuf,
        offset: u64,
        reason: String,
        moved_to: PathBuf,
    },
    /// Recovery discarded an incomplete final WAL record.
    TornWalRecord {
        file: PathBuf,
        offset: u64,
        reason: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StallReason {
    TooManyImmutableMemtables,
    TooManyLevel0Tables,
}

impl std::fmt::Display for StallReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StallReason::TooManyImmutableMemtables => write!(f, "too many immutable memtables"),
            StallReason::TooManyLevel0Tables => write!(f, "too many level-0 tables"),
        }
    }
}

/// Receives engine events, on the thread that caused them.
pub trait EventListener: Send + Sync {
    fn on_event(&self, event: &Event);
}

/// A listener that keeps every event; handy in tests.
#[derive(Default)]
pub struct EventLog {
    pub events: parking_lot::Mutex<Vec<Event>>,
}

impl EventListener for EventLog {
    fn on_event(&self, event: &Event) {
        self.events.lock().push(event.clone());
    }
}
