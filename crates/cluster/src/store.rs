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

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use strata_engine::{Db, DbIterator, WriteBatch};
use tokio::sync::{mpsc, oneshot};

use crate::error::{ClusterError, Result};
use crate::merkle::Trees;
use crate::record::{Record, Version};
use crate::trace::LocalTiming;

/// The home set (its `merkle::set_name`) of a key.
pub type HomeOf = Arc<dyn Fn(&[u8]) -> u64 + Send + Sync>;

/// The trees and whether they are kept and complete.
#[derive(Default)]
pub struct TreeState {
    pub trees: Trees,
    /// The applier toggles every change in (from the build's snapshot on).
    maintained: bool,
    /// The build's scan is done: the trees are exact.
    pub ready: bool,
}

/// Anti-entropy's view of the store: the trees and how keys map to them.
#[derive(Clone)]
pub struct Merkle {
    /// Replaced when the layout changes (then the trees are rebuilt).
    pub home: Arc<parking_lot::RwLock<HomeOf>>,
    pub state: Arc<parking_lot::Mutex<TreeState>>,
}

impl Merkle {
    pub fn new(home: HomeOf) -> Merkle {
        Merkle {
            home: Arc::new(parking_lot::RwLock::new(home)),
            state: Default::default(),
        }
    }

    pub fn home_of(&self, key: &[u8]) -> u64 {
        (self.home.read())(key)
    }

    /// Forget the trees and map keys to home sets anew (a new layout);
    /// `Store::build_trees` builds them again.
    pub fn reset(&self, home: HomeOf) {
        let mut st = self.state.lock();
        *self.home.write() = home;
        *st = TreeState::default();
    }

    /// Forget the trees (records vanished without the applier: a table
    /// set aside); `Store::build_trees` builds them again.
    pub fn clear(&self) {
        *self.state.lock() = TreeState::default();
    }
}

/// Writes taken into one group at most.
const MAX_GROUP: usize = 512;

/// What a replica did with a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Stored (or the same version was already stored).
    Applied,
    /// The replica holds a newer version; nothing was written.
    Superseded(Version),
}

enum Op {
    Apply(Record),
    /// Remove the key's record if it is still this tombstone.
    Purge(Version),
}

struct Job {
    key: Bytes,
    op: Op,
    /// When it was handed to the applier.
    queued_at: Instant,
    done: oneshot::Sender<(Result<Outcome>, LocalTiming)>,
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
    Thread {
        tx: mpsc::Sender<Msg>,
        check_versions: bool,
    },
    /// No thread: each write is applied on the caller's task, as a group
    /// of one (the deterministic simulation). The group lock keeps
    /// compare-then-write exclusive all the same.
    Inline { check_versions: bool },
}

impl Store {
    /// Start the applier. `check_versions` false skips the comparison: only
    /// for a cluster of one, where every write is stamped by this node's
    /// monotonic clock and arrives in order.
    /// `merkle`: the trees to keep current (anti-entropy), if any.
    pub fn open(
        db: Arc<Db>,
        capacity: usize,
        check_versions: bool,
        merkle: Option<Merkle>,
    ) -> Store {
        let (tx, mut rx) = mpsc::channel::<Msg>(capacity.max(1));
        let d = db.clone();
        let m = merkle.clone();
        let group = Arc::new(parking_lot::Mutex::new(()));
        let g = group.clone();
        std::thread::Builder::new()
            .name("strata-apply".into())
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
                    apply_group(&d, jobs, check_versions, m.as_ref());
                }
            })
            .expect("spawn applier thread");
        Store {
            db,
            applier: Applier::Thread { tx, check_versions },
            group,
            merkle,
            waiting: Default::default(),
            inline: Default::default(),
        }
    }

    /// No applier thread: `apply` and `purge` write on the caller's task
    /// before they return (one commit per write). For a deterministic
    /// simulation, where a thread's timing must not steer the run.
    pub fn open_inline(db: Arc<Db>, check_versions: bool, merkle: Option<Merkle>) -> Store {
        Store {
            db,
            applier: Applier::Inline { check_versions },
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
            Applier::Thread { tx, check_versions } => {
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
                    apply_group(&self.db, j, *check_versions, self.merkle.as_ref());
                }
                if let Some(job) = job {
                    if tx.send(Msg::Job(job)).await.is_err() {
                        return closed;
                    }
                }
            }
            Applier::Inline { check_versions } => {
                let _one = self.group.lock();
                apply_group(&self.db, vec![job], *check_versions, self.merkle.as_ref());
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
fn snapshot(db: &Db, merkle: Option<&Merkle>) -> Result<DbIterator> {
    if let Some(m) = merkle {
        m.state.lock().maintained = true;
    }
    Ok(db.scan(..)?)
}

/// A stored record's version and whether it is a tombstone.
type Meta = (Version, bool);

fn meta(r: &Option<Record>) -> Option<Meta> {
    r.as_ref().map(|r| (r.version, r.is_tombstone()))
}

/// What a replica does with an incoming record, given what it stores:
/// the outcome, and the record to store instead (`None`: nothing to
/// write). A write whose own mark (its client's name for it) the stored
/// record holds was applied here already, at whatever version: done,
/// never applied twice. A newer or equal stored version wins, and learns
/// the incoming record's marks it lacks (the write reached this replica,
/// ordered before what it holds); an older one is replaced, its marks
/// carried over.
fn decide(current: Option<&Record>, mut rec: Record) -> (Outcome, Option<Record>) {
    let own = rec
        .marks
        .iter()
        .find(|m| m.version == rec.version)
        .map(|m| m.id);
    match current {
        Some(c) if own.is_some_and(|id| c.applied(id).is_some()) => (Outcome::Applied, None),
        Some(c) if c.version >= rec.version => {
            let outcome = if c.version == rec.version {
                Outcome::Applied
            } else {
                Outcome::Superseded(c.version)
            };
            let missing: Vec<_> = rec
                .marks
                .iter()
                .filter(|m| c.applied(m.id).is_none())
                .copied()
                .collect();
            if missing.is_empty() {
                return (outcome, None);
            }
            let mut kept = c.clone();
            kept.absorb_marks(&missing);
            let changed = kept.marks != c.marks;
            (outcome, changed.then_some(kept))
        }
        _ => {
            if let Some(c) = current {
                rec.absorb_marks(&c.marks);
            }
            (Outcome::Applied, Some(rec))
        }
    }
}

fn apply_group(db: &Db, jobs: Vec<Job>, check: bool, merkle: Option<&Merkle>) {
    let began = Instant::now();
    // Records written earlier in this group, which the engine does not
    // show yet.
    let mut pending: HashMap<Bytes, Option<Record>> = HashMap::new();
    // Each change as (key, what it replaced, what it is now), in order.
    let mut changes: Vec<(Bytes, Option<Meta>, Option<Meta>)> = Vec::new();
    let mut batch = WriteBatch::new();
    let mut answers: Vec<(Reply, Result<Outcome>)> = Vec::with_capacity(jobs.len());
    let mut buf = Vec::new();
    for j in jobs {
        let current = if check || matches!(j.op, Op::Purge(_)) {
            match pending.get(&j.key) {
                Some(r) => Ok(r.clone()),
                None => db
                    .get(&j.key)
                    .map_err(ClusterError::from)
                    .and_then(|o| o.map(|b| decode(&j.key, &b)).transpose()),
            }
        } else {
            Ok(None)
        };
        let current = match current {
            Ok(c) => c,
            Err(e) => {
                answers.push(((j.done, j.queued_at), Err(e)));
                continue;
            }
        };
        let outcome = match j.op {
            Op::Apply(rec) => {
                let (outcome, write) = decide(current.as_ref(), rec);
                if let Some(w) = write {
                    buf.clear();
                    w.encode_into(&mut buf);
                    batch.put(&j.key, &buf);
                    let (was, now) = (meta(&current), Some((w.version, w.is_tombstone())));
                    if merkle.is_some() && was != now {
                        changes.push((j.key.clone(), was, now));
                    }
                    pending.insert(j.key.clone(), Some(w));
                }
                outcome
            }
            Op::Purge(v) => match meta(&current) {
                Some((c, _)) if c == v => {
                    batch.delete(&j.key);
                    pending.insert(j.key.clone(), None);
                    if merkle.is_some() {
                        changes.push((j.key.clone(), meta(&current), None));
                    }
                    Outcome::Applied
                }
                Some((c, _)) => Outcome::Superseded(c),
                None => Outcome::Applied,
            },
        };
        answers.push(((j.done, j.queued_at), Ok(outcome)));
    }
    let r = if batch.is_empty() {
        Ok(strata_engine::WriteTiming::default())
    } else {
        db.write_batches_timed(vec![batch])
            .map_err(ClusterError::from)
    };
    let took = began.elapsed();
    let w = r.as_ref().copied().unwrap_or_default();
    if let Err(e) = &r {
        tracing::warn!(error = %e, writes = answers.len(), "apply group failed");
    }
    if let (Ok(_), Some(m)) = (&r, merkle) {
        let mut st = m.state.lock();
        if st.maintained {
            for (key, was, now) in &changes {
                let set = m.home_of(key);
                if let Some((v, t)) = was {
                    st.trees.remove(set, key, *v, *t);
                }
                if let Some((v, t)) = now {
                    st.trees.add(set, key, *v, *t);
                }
            }
        }
    }
    for ((done, queued_at), a) in answers {
        let a = match &r {
            Ok(_) => a,
            Err(e) => a.and(Err(e.share())),
        };
        let timing = LocalTiming {
            queued: began.saturating_duration_since(queued_at) + w.queued,
            stall: w.stall,
            fsync: w.sync,
            apply: took.saturating_sub(w.stall + w.queued + w.sync),
        };
        let _ = done.send((a, timing));
    }
}

/// A job's answer channel and when it was queued.
type Reply = (oneshot::Sender<(Result<Outcome>, LocalTiming)>, Instant);

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(hlc: u64, v: Option<&'static [u8]>) -> Record {
        Record {
            version: Version { hlc, node: 1 },
            value: v.map(Bytes::from_static),
            marks: Vec::new(),
        }
    }

    #[tokio::test]
    async fn only_newer_versions_are_applied() {
        let d = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(d.path(), Default::default()).unwrap());
        let s = Store::open(db, 64, true, None);
        let k = Bytes::from_static(b"k");
        assert_eq!(
            s.apply(k.clone(), rec(10, Some(b"new"))).await.unwrap(),
            Outcome::Applied
        );
        // Older and equal versions: the newer stays.
        assert_eq!(
            s.apply(k.clone(), rec(5, Some(b"old"))).await.unwrap(),
            Outcome::Superseded(Version { hlc: 10, node: 1 })
        );
        assert_eq!(
            s.apply(k.clone(), rec(10, Some(b"new"))).await.unwrap(),
            Outcome::Applied
        );
        assert_eq!(s.read(b"k").unwrap().unwrap(), rec(10, Some(b"new")));
        // A tombstone is a record like any other.
        s.apply(k.clone(), rec(11, None)).await.unwrap();
        assert!(s.read(b"k").unwrap().unwrap().is_tombstone());
        assert_eq!(
            s.apply(k.clone(), rec(9, Some(b"zombie"))).await.unwrap(),
            Outcome::Superseded(Version { hlc: 11, node: 1 })
        );
        // Purge only the very tombstone.
        assert!(matches!(
            s.purge(k.clone(), Version { hlc: 3, node: 1 })
                .await
                .unwrap(),
            Outcome::Superseded(_)
        ));
        assert_eq!(
            s.purge(k.clone(), Version { hlc: 11, node: 1 })
                .await
                .unwrap(),
            Outcome::Applied
        );
        assert!(s.read(b"k").unwrap().is_none());
    }

    /// A named record: the write `id`, at `hlc`.
    fn named(hlc: u64, v: Option<&'static [u8]>, id: u128) -> Record {
        let mut r = rec(hlc, v);
        r.marks.push(crate::record::Mark {
            id: crate::record::WriteId(id),
            version: r.version,
        });
        r
    }

    #[tokio::test]
    async fn a_named_write_takes_effect_once_whatever_its_version() {
        use crate::record::WriteId;
        let d = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(d.path(), Default::default()).unwrap());
        let s = Store::open(db, 64, true, None);
        let k = Bytes::from_static(b"k");
        // Write 1 applied, then a later write 2 over it, unnamed.
        assert_eq!(
            s.apply(k.clone(), named(10, Some(b"one"), 1))
                .await
                .unwrap(),
            Outcome::Applied
        );
        assert_eq!(
            s.apply(k.clone(), rec(20, Some(b"two"))).await.unwrap(),
            Outcome::Applied
        );
        // Write 1 again, stamped anew past write 2 (a coordinator that did
        // not know): done here already, write 2 stays.
        assert_eq!(
            s.apply(k.clone(), named(30, Some(b"one"), 1))
                .await
                .unwrap(),
            Outcome::Applied
        );
        let now = s.read(b"k").unwrap().unwrap();
        assert_eq!(now.value.as_deref(), Some(&b"two"[..]));
        assert_eq!(now.applied(WriteId(1)), Some(Version { hlc: 10, node: 1 }));
        // A different write under the same key at that version is applied.
        assert_eq!(
            s.apply(k.clone(), named(30, Some(b"three"), 3))
                .await
                .unwrap(),
            Outcome::Applied
        );
        let now = s.read(b"k").unwrap().unwrap();
        assert_eq!(now.value.as_deref(), Some(&b"three"[..]));
        assert!(now.applied(WriteId(1)).is_some() && now.applied(WriteId(3)).is_some());
        // A named write that arrives after something newer is superseded,
        // and the replica remembers it reached it.
        assert_eq!(
            s.apply(k.clone(), named(25, Some(b"late"), 4))
                .await
                .unwrap(),
            Outcome::Superseded(Version { hlc: 30, node: 1 })
        );
        let now = s.read(b"k").unwrap().unwrap();
        assert_eq!(now.value.as_deref(), Some(&b"three"[..]));
        assert_eq!(now.applied(WriteId(4)), Some(Version { hlc: 25, node: 1 }));
        // Repeating a write the replica never saw applies it as usual; a
        // tombstone carries the marks on.
        assert_eq!(
            s.apply(k.clone(), named(40, None, 5)).await.unwrap(),
            Outcome::Applied
        );
        let now = s.read(b"k").unwrap().unwrap();
        assert!(now.is_tombstone());
        for id in [1, 3, 4, 5] {
            assert!(now.applied(WriteId(id)).is_some(), "write {id}");
        }
    }

    #[tokio::test]
    async fn a_group_sees_its_own_writes() {
        let d = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(d.path(), Default::default()).unwrap());
        let s = Arc::new(Store::open(db, 1024, true, None));
        highest_version_wins(&s).await;
    }

    /// Under `sync`, an idle store commits a write on its caller's thread,
    /// fsync and all, only while commits are quick: after one that took
    /// longer than INLINE_COMMIT_MAX (a slow disk), writes go to the
    /// applier, and the caller's thread is not held.
    #[tokio::test]
    async fn fsynced_writes_apply_inline_only_while_the_disk_is_quick() {
        let d = tempfile::tempdir().unwrap();
        let opts = strata_engine::Options {
            test_sync_delay: INLINE_COMMIT_MAX * 5,
            ..Default::default()
        };
        let db = Arc::new(Db::open(d.path(), opts).unwrap());
        let s = Arc::new(Store::open(db.clone(), 1024, true, None));
        // No commit yet: nothing says the disk is slow.
        s.apply(Bytes::from_static(b"a"), rec(1, Some(b"v")))
            .await
            .unwrap();
        assert_eq!(s.applied_inline(), 1);
        assert!(db.last_commit_time() > INLINE_COMMIT_MAX);
        for (i, k) in [b"b", b"c", b"d"].into_iter().enumerate() {
            s.apply(Bytes::from_static(k), rec(2 + i as u64, Some(b"v")))
                .await
                .unwrap();
        }
        assert_eq!(
            s.applied_inline(),
            1,
            "writes held the caller behind a slow disk"
        );
        for k in [b"a", b"b", b"c", b"d"] {
            assert!(s.read(k).unwrap().is_some());
        }
    }

    /// Without fsync, an idle applier lets writes apply on their caller's
    /// thread; concurrent writers (two runtime workers) mix that with the
    /// applier's groups, and compare-then-write still holds.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_apply_inline_when_idle_and_in_order_all_the_same() {
        let d = tempfile::tempdir().unwrap();
        let opts = strata_engine::Options {
            durability: strata_engine::Durability::None,
            ..Default::default()
        };
        let db = Arc::new(Db::open(d.path(), opts).unwrap());
        let s = Arc::new(Store::open(db, 1024, true, None));
        s.apply(Bytes::from_static(b"alone"), rec(1, Some(b"v")))
            .await
            .unwrap();
        assert_eq!(
            s.applied_inline(),
            1,
            "an idle store applies on the caller's thread"
        );
        highest_version_wins(&s).await;
        assert_eq!(
            s.apply(Bytes::from_static(b"x"), rec(5, Some(b"old")))
                .await
                .unwrap(),
            Outcome::Superseded(Version { hlc: 300, node: 1 })
        );
    }

    async fn highest_version_wins(s: &Arc<Store>) {
        // Many concurrent writes of one key in random version order: the
        // highest version wins whatever the grouping.
        let mut tasks = Vec::new();
        let mut hlcs: Vec<u64> = (1..=300).collect();
        use rand::seq::SliceRandom;
        hlcs.shuffle(&mut rand::rng());
        for h in hlcs {
            let s = s.clone();
            tasks.push(tokio::spawn(async move {
                s.apply(Bytes::from_static(b"x"), rec(h, Some(b"v")))
                    .await
                    .unwrap()
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(s.read(b"x").unwrap().unwrap().version.hlc, 300);
        let all: Vec<_> = s.scan(b"x", None).unwrap().map(|r| r.unwrap().0).collect();
        assert_eq!(all, [Bytes::from_static(b"x")]);
    }
}
