//! This node's replica of its keys: versioned records in the local engine.
//! Every write to the engine goes through one applier thread, which takes
//! the writes of many requests (coordinated here, sent by peers, hint
//! deliveries, read repairs) as one commit group: for each it compares the
//! incoming version with the stored one and keeps only newer writes, so a
//! late, re-delivered or frozen-then-resumed write can never overwrite a
//! newer one; then one WAL write and one fsync for the group. Because the
//! applier is the only writer, compare-then-write needs no lock. (The
//! deterministic simulation's inline mode has no thread: each write is
//! applied on the caller's task as a group of one, under a lock.) Owns the
//! local apply rule and local reads; must not talk to other nodes.
//!
//! Here: the store, its applier's queue and local reads; `apply` the work
//! on one group, `trees` anti-entropy's view of the store.

use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use strata_engine::{Db, DbIterator};
use tokio::sync::{mpsc, oneshot};

use crate::error::{ClusterError, Result};
use crate::merkle::Trees;
use crate::record::{Record, Version};
use crate::trace::LocalTiming;

mod apply;
mod trees;

use apply::{apply_group, snapshot, Job, Op, MAX_GROUP};
pub use trees::{HomeOf, Merkle, TreeState};

/// What a replica did with a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Stored (or the same version was already stored).
    Applied,
    /// The replica holds a newer version; nothing was written.
    Superseded(Version),
}

/// The longest the last commit may have taken for the next write to be
/// committed on its caller's runtime thread when the applier is idle: every
/// other connection of that thread waits that long behind it. A fifth of
/// the node's default overload lag (5 ms, past which it turns work away),
/// and ten times a quick disk's fsync here (50–100 µs).
const INLINE_COMMIT_MAX: Duration = Duration::from_millis(1);

/// What the applier thread is sent.
enum Msg {
    Job(Job),
    /// Start maintaining the trees and answer a snapshot of the store as
    /// of that moment (between two groups).
    Snapshot(oneshot::Sender<Result<DbIterator>>),
}

pub struct Store {
    db: Arc<Db>,
    applier: Applier,
    /// Held while a group is applied, on the applier thread or inline:
    /// compare-then-write is exclusive either way.
    group: Arc<parking_lot::Mutex<()>>,
    merkle: Option<Merkle>,
    /// Writes handed to the applier and not yet answered.
    waiting: std::sync::atomic::AtomicUsize,
    /// Writes applied on their caller's thread (the applier idle).
    inline: std::sync::atomic::AtomicU64,
}

enum Applier {
    /// The applier thread's queue.
    Thread { tx: mpsc::Sender<Msg>, sole: bool },
    /// No thread: each write is applied on the caller's task, as a group
    /// of one (the deterministic simulation). The group lock keeps
    /// compare-then-write exclusive all the same.
    Inline { sole: bool },
}

impl Store {
    /// Start the applier. `sole`: this store is every key's only replica
    /// (a node without a cluster), where a named write's repeat is
    /// recognised by its mark alone (`apply::decide`).
    /// `merkle`: the trees to keep current (anti-entropy), if any.
    pub fn open(db: Arc<Db>, capacity: usize, sole: bool, merkle: Option<Merkle>) -> Store {
        let (tx, mut rx) = mpsc::channel::<Msg>(capacity.max(1));
        let d = db.clone();
        let m = merkle.clone();
        let group = Arc::new(parking_lot::Mutex::new(()));
        let g = group.clone();
        std::thread::Builder::new()
            .name(strata_api::threads::names::APPLY.into())
            .spawn(move || {
                let mut next = None;
                loop {
                    let first = match next.take() {
                        Some(m) => m,
                        None => match rx.blocking_recv() {
                            Some(m) => m,
                            None => return,
                        },
                    };
                    let first = match first {
                        Msg::Job(j) => j,
                        Msg::Snapshot(done) => {
                            let _one = g.lock();
                            let _ = done.send(snapshot(&d, m.as_ref()));
                            continue;
                        }
                    };
                    let mut jobs = vec![first];
                    while jobs.len() < MAX_GROUP {
                        match rx.try_recv() {
                            Ok(Msg::Job(j)) => jobs.push(j),
                            // After this group.
                            Ok(s) => {
                                next = Some(s);
                                break;
                            }
                            Err(_) => break,
                        }
                    }
                    let _one = g.lock();
                    apply_group(&d, jobs, sole, m.as_ref());
                }
            })
            .expect("spawn applier thread");
        Store {
            db,
            applier: Applier::Thread { tx, sole },
            group,
            merkle,
            waiting: Default::default(),
            inline: Default::default(),
        }
    }

    /// Whether this store is every key's only replica (`open`'s `sole`).
    pub fn is_sole(&self) -> bool {
        match &self.applier {
            Applier::Thread { sole, .. } | Applier::Inline { sole } => *sole,
        }
    }

    /// No applier thread: `apply` and `purge` write on the caller's task
    /// before they return (one commit per write). For a deterministic
    /// simulation, where a thread's timing must not steer the run.
    pub fn open_inline(db: Arc<Db>, sole: bool, merkle: Option<Merkle>) -> Store {
        Store {
            db,
            applier: Applier::Inline { sole },
            group: Default::default(),
            merkle,
            waiting: Default::default(),
            inline: Default::default(),
        }
    }

    /// The trees anti-entropy compares, if kept.
    pub fn merkle(&self) -> Option<&Merkle> {
        self.merkle.as_ref()
    }

    /// Build the trees: start maintaining them from a snapshot taken
    /// between two groups, then add the snapshot's records (blocking: run
    /// it on a thread of its own). Returns the records counted.
    pub fn build_trees(&self) -> Result<u64> {
        let Some(m) = &self.merkle else {
            return Ok(0);
        };
        let it = match &self.applier {
            Applier::Thread { tx, .. } => {
                let (done, wait) = oneshot::channel();
                tx.blocking_send(Msg::Snapshot(done))
                    .map_err(|_| ClusterError::Closed)?;
                wait.blocking_recv().map_err(|_| ClusterError::Closed)??
            }
            Applier::Inline { .. } => {
                let _one = self.group.lock();
                snapshot(&self.db, Some(m))?
            }
        };
        let mut built = Trees::default();
        let mut n = 0u64;
        for r in RecordIter(it, self.db.clone()) {
            let (k, rec) = r?;
            built.add(m.home_of(&k), &k, rec.version, rec.is_tombstone());
            n += 1;
        }
        let mut st = m.state.lock();
        st.trees.merge(built);
        st.ready = true;
        Ok(n)
    }

    pub fn db(&self) -> &Arc<Db> {
        &self.db
    }

    /// Apply a write if it is newer than what is stored; returns once it is
    /// durable as the engine is configured.
    pub async fn apply(&self, key: Bytes, record: Record) -> Result<Outcome> {
        self.submit(key, Op::Apply(record)).await.0
    }

    /// `apply`, and where its time went on this node.
    pub async fn apply_timed(&self, key: Bytes, record: Record) -> (Result<Outcome>, LocalTiming) {
        self.submit(key, Op::Apply(record)).await
    }

    /// Drop a tombstone if the key still holds exactly it.
    pub async fn purge(&self, key: Bytes, tombstone: Version) -> Result<Outcome> {
        self.submit(key, Op::Purge(tombstone)).await.0
    }

    /// Writes handed to the applier and not yet answered: the writers
    /// waiting on the WAL.
    pub fn writers_waiting(&self) -> usize {
        self.waiting.load(std::sync::atomic::Ordering::Relaxed)
    }

    async fn submit(&self, key: Bytes, op: Op) -> (Result<Outcome>, LocalTiming) {
        use std::sync::atomic::Ordering::Relaxed;
        /// Counts down when the caller stops waiting, answered or not.
        struct Waiting<'a>(&'a std::sync::atomic::AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Relaxed);
            }
        }
        self.waiting.fetch_add(1, Relaxed);
        let _w = Waiting(&self.waiting);
        self.submit_counted(key, op).await
    }

    /// Writes applied on their caller's thread because the applier was
    /// idle and the write would not wait (durability other than `sync`).
    pub fn applied_inline(&self) -> u64 {
        self.inline.load(std::sync::atomic::Ordering::Relaxed)
    }

    async fn submit_counted(&self, key: Bytes, op: Op) -> (Result<Outcome>, LocalTiming) {
        use std::sync::atomic::Ordering::Relaxed;
        let (done, wait) = oneshot::channel();
        let job = Job {
            key,
            op,
            queued_at: Instant::now(),
            done,
        };
        let closed = (Err(ClusterError::Closed), LocalTiming::default());
        match &self.applier {
            Applier::Thread { tx, sole } => {
                // Nothing queued, no group being applied, and a write that
                // will not hold this thread long: apply it here, on the
                // caller's thread, fsync and all (the group's leader syncs
                // on the thread that waits). Handing it over would cost two
                // thread wake-ups (the applier's, then the caller's), 7–17 %
                // of a fsynced PUT's CPU here; under load the
                // applier gathers the writes into groups, and while the
                // disk is slow (the last commit took longer than
                // INLINE_COMMIT_MAX) or flush and compaction are behind,
                // the write goes to the applier so that this runtime's
                // other connections are not held behind it.
                let quick = !self.db.would_wait()
                    || (!self.db.would_stall() && self.db.last_commit_time() <= INLINE_COMMIT_MAX);
                let idle = tx.capacity() == tx.max_capacity() && quick;
                let mut job = Some(job);
                if let Some(_one) = idle.then(|| self.group.try_lock()).flatten() {
                    self.inline.fetch_add(1, Relaxed);
                    let j = job.take().into_iter().collect();
                    apply_group(&self.db, j, *sole, self.merkle.as_ref());
                }
                if let Some(job) = job {
                    if tx.send(Msg::Job(job)).await.is_err() {
                        return closed;
                    }
                }
            }
            Applier::Inline { sole } => {
                let _one = self.group.lock();
                apply_group(&self.db, vec![job], *sole, self.merkle.as_ref());
            }
        }
        wait.await.unwrap_or(closed)
    }

    /// The stored record, tombstones included.
    pub fn read(&self, key: &[u8]) -> Result<Option<Record>> {
        match self.db.get(key)? {
            None => Ok(None),
            Some(b) => Ok(Some(decode(key, &b)?)),
        }
    }

    /// Up to `n` records from `start` on, tombstones included, and the
    /// key the next page starts at (`None`: the end).
    pub fn page(&self, start: &[u8], n: usize) -> Result<Page> {
        let mut it = self.scan(start, None)?;
        let mut out = Vec::with_capacity(n.min(4096));
        for r in it.by_ref() {
            out.push(r?);
            if out.len() == n {
                break;
            }
        }
        if out.len() < n {
            return Ok((out, None));
        }
        Ok((out, it.next().transpose()?.map(|(k, _)| k)))
    }

    /// Records with `start <= key < end`, tombstones included, streaming.
    pub fn scan(&self, start: &[u8], end: Option<&[u8]>) -> Result<RecordIter> {
        let end = end.map_or(Bound::Unbounded, Bound::Excluded);
        Ok(RecordIter(
            self.db.scan((Bound::Included(start), end))?,
            self.db.clone(),
        ))
    }
}

fn decode(key: &[u8], b: &Bytes) -> Result<Record> {
    Record::decode(b).map_err(|e| damaged(key, e))
}

fn damaged(key: &[u8], e: crate::record::BadRecord) -> ClusterError {
    ClusterError::Failed(format!(
        "stored record of key {:?} is damaged: {e}",
        String::from_utf8_lossy(key)
    ))
}

/// Records in key order, and the key the next page starts at.
pub type Page = (Vec<(Bytes, Record)>, Option<Bytes>);

/// A scan of stored records in key order. A table that fails its
/// checksum is set aside (`Db::set_aside`) before the error is yielded:
/// the next scan reads without it.
pub struct RecordIter(DbIterator, Arc<Db>);

impl Iterator for RecordIter {
    type Item = Result<(Bytes, Record)>;
    fn next(&mut self) -> Option<Self::Item> {
        Some(match self.0.next()? {
            Ok((k, v)) => decode(&k, &v).map(|r| (k, r)),
            Err(e) => {
                if let Some(to) = self.1.set_aside(&e) {
                    tracing::error!(error = %e, moved_to = %to.display(), "a damaged table was set aside; its keys come back from the replicas");
                }
                Err(e.into())
            }
        })
    }
}

/// Start maintaining the trees and take a snapshot: on the applier's
/// side, between groups.
#[cfg(test)]
mod tests;
