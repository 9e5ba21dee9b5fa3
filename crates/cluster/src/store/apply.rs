//! The applier's work on one group of writes: for each, compare the
//! incoming version with the stored one and keep only newer writes (a
//! named write once, whatever its version), then one engine batch (one WAL
//! write and one fsync) for the group, with the Merkle trees changed to
//! match; and a snapshot of the store between two groups. Owns the
//! compare-then-write; must not queue or schedule writes (that is `Store`).

use std::collections::HashMap;
use std::time::Instant;

use bytes::Bytes;
use strata_engine::{Db, DbIterator, WriteBatch};
use tokio::sync::oneshot;

use crate::error::{ClusterError, Result};
use crate::record::{Record, Version};
use crate::trace::LocalTiming;

use super::{decode, Merkle, Outcome};

/// Writes taken into one group at most.
pub(super) const MAX_GROUP: usize = 512;

pub(super) enum Op {
    Apply(Record),
    /// Remove the key's record if it is still this tombstone.
    Purge(Version),
}

pub(super) struct Job {
    pub(super) key: Bytes,
    pub(super) op: Op,
    /// When it was handed to the applier.
    pub(super) queued_at: Instant,
    pub(super) done: oneshot::Sender<(Result<Outcome>, LocalTiming)>,
}

pub(super) fn snapshot(db: &Db, merkle: Option<&Merkle>) -> Result<DbIterator> {
    if let Some(m) = merkle {
        m.state.lock().maintained = true;
    }
    Ok(db.scan(..)?)
}

/// A stored record's version and whether it is a tombstone.
type Meta = (Version, bool);

pub(super) fn meta(r: &Option<Record>) -> Option<Meta> {
    r.as_ref().map(|r| (r.version, r.is_tombstone()))
}

/// What a replica does with an incoming record, given what it stores:
/// the outcome, and the record to store instead (`None`: nothing to
/// write). Versions decide, and only versions: a newer or equal stored
/// version wins and learns the incoming record's marks it lacks (the
/// write reached this replica, ordered before what it holds); an older
/// one is replaced, its marks carried over. Every replica deciding so
/// holds the same record once the same writes reached it, in any order
/// (hints, read repair and anti-entropy included): a named write stamped
/// twice (a repeat whose coordinator did not learn of the first attempt)
/// is levelled like any two writes, never kept apart.
///
/// `sole`: this store is the key's only replica (a node without a
/// cluster). There nothing can diverge, so a write whose own mark the
/// stored record already holds, at another version, was applied here
/// before: done, never applied twice. In a cluster the coordinator's
/// lookup of the marks recognises a repeat before it is stamped
/// (`coordinator::Coordinator::write`).
pub(super) fn decide(
    current: Option<&Record>,
    mut rec: Record,
    sole: bool,
) -> (Outcome, Option<Record>) {
    let repeat = |c: &Record| {
        rec.own_id()
            .and_then(|id| c.applied(id))
            .is_some_and(|at| at != rec.version)
    };
    match current {
        Some(c) if sole && repeat(c) => (Outcome::Applied, None),
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

pub(super) fn apply_group(db: &Db, jobs: Vec<Job>, sole: bool, merkle: Option<&Merkle>) {
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
        // Read even in a cluster of one (whose own clock orders its
        // writes): a named write's repeat is found in the stored marks,
        // and a write of the key, named or not, carries them on.
        let current = match pending.get(&j.key) {
            Some(r) => Ok(r.clone()),
            None => db
                .get(&j.key)
                .map_err(ClusterError::from)
                .and_then(|o| o.map(|b| decode(&j.key, &b)).transpose()),
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
                let (outcome, write) = decide(current.as_ref(), rec, sole);
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
