//! The scrub: every table's blocks read from the file (never the block
//! cache) and checked against their checksums, a step at a time, so that
//! a flipped bit is found before a read lands on it. A step checks at
//! most a given number of bytes and remembers where it stopped (table id,
//! block); a table that fails is set aside exactly as a read that met the
//! damage would set it aside (`Db::set_aside`: kept in `quarantine/`, the
//! event emitted), and the cluster above repairs from the replicas. Owns
//! the cursor and the counting; the pacing is the caller's.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::{Db, Inner};
use crate::error::Error;
use crate::sstable::Table;

/// Where the scrub stopped: the next block to check.
#[derive(Default, Debug)]
pub(super) struct Cursor {
    table: u64,
    block: usize,
}

/// What one step did.
#[derive(Debug, Default)]
pub struct ScrubStep {
    /// Bytes of blocks checked.
    pub bytes: u64,
    /// Blocks checked.
    pub blocks: u64,
    /// A table that failed its check and was set aside (file, offset and
    /// reason in the error).
    pub found: Option<Error>,
    /// The step reached the end of the last table: the next starts a new
    /// pass over every table.
    pub pass_done: bool,
}

impl Db {
    /// Check up to `budget` bytes of table blocks against their checksums,
    /// from where the last step stopped. Runs on the caller's thread.
    pub fn scrub_step(&self, budget: u64) -> ScrubStep {
        self.inner.scrub_step(budget)
    }
}

impl Inner {
    fn scrub_step(&self, budget: u64) -> ScrubStep {
        let mut step = ScrubStep::default();
        let mut cur = self.scrub.lock();
        let mut tables: Vec<Arc<Table>> = {
            let sv = self.sv.load();
            sv.version.levels.iter().flatten().cloned().collect()
        };
        tables.sort_by_key(|t| t.id());
        while step.bytes < budget {
            let Some(t) = tables.iter().find(|t| t.id() >= cur.table) else {
                *cur = Cursor::default();
                step.pass_done = true;
                break;
            };
            if t.id() != cur.table {
                *cur = Cursor {
                    table: t.id(),
                    block: 0,
                };
            }
            if cur.block >= t.blocks() {
                cur.table = t.id() + 1;
                cur.block = 0;
                continue;
            }
            match t.verify_block(cur.block) {
                Ok(n) => {
                    step.bytes += n;
                    step.blocks += 1;
                    cur.block += 1;
                }
                Err(e) => {
                    // A block the disk would not read (counted as a read
                    // error) is not known to be damaged: the table stays,
                    // and the next pass tries it again.
                    if matches!(e, Error::Corruption { .. }) {
                        self.stats.inc(&self.stats.scrub_corruptions);
                    }
                    // The table leaves the store (if a compaction has not
                    // taken it out meanwhile); the scrub goes on with the
                    // next.
                    self.set_aside(&e);
                    cur.table = t.id() + 1;
                    cur.block = 0;
                    step.found = Some(e);
                    break;
                }
            }
        }
        self.stats
            .scrub_bytes
            .fetch_add(step.bytes, Ordering::Relaxed);
        if step.pass_done {
            self.stats.inc(&self.stats.scrub_passes);
        }
        step
    }
}
