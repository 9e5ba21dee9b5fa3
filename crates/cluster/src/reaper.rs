//! The tombstone reaper. A delete leaves a tombstone with its version on
//! every replica, so that a replica that missed the delete cannot bring
//! the value back. This node drops its own copy of a tombstone only when
//! both hold: the grace period has passed since the delete was stamped,
//! and every other member answers that it holds that tombstone, something
//! newer, or nothing for the key. A member holding an older version is
//! sent the tombstone (a repair) and the key waits for the next pass; a
//! member that does not answer, or that the failure detector holds down,
//! keeps every tombstone where it is. Cassandra drops tombstones on the
//! grace period alone and resurrects deleted data when repairs lag; here
//! an away replica only delays the purge.
//!
//! The grace period also bounds what may arrive late: it exceeds the
//! hints' maximum age (a hint older than that is dropped, never
//! delivered), and replicas refuse a fresh write stamped longer ago than
//! the grace period (a coordinator frozen that long stamps again), so
//! nothing older than a purged tombstone can land after it.
//!
//! Owns when a tombstone may go; must not drop anything newer (the store's
//! purge is conditional on the exact version) nor decide replication.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use tokio::time::Instant;

use crate::fence::Fence;
use crate::hlc::LOGICAL_BITS;
use crate::ops::OpKind;
use crate::record::{Record, Version};
use crate::shared::Shared;
use crate::store::Outcome;

pub use crate::config::ReaperConfig;

/// What the reaper did.
#[derive(Debug, Default)]
pub struct ReaperStats {
    /// Tombstones dropped from this node's store.
    pub purged: AtomicU64,
    /// Tombstones past their grace period kept because a member was down,
    /// did not answer, or held an older version.
    pub kept: AtomicU64,
    /// Fresh writes refused because they were stamped longer ago than the
    /// grace period.
    pub refused_old: AtomicU64,
}

/// Tombstones found by one step of the scan, and where the next goes on.
type Found = (Vec<(Bytes, Version)>, Option<Bytes>);

/// Records read from the store per blocking step at most.
const SCAN_STEP: usize = 20_000;

/// The reaper: its counters, and the fence it obeys.
pub(crate) struct Reaper {
    sh: Arc<Shared>,
    fence: Arc<Fence>,
    pub(crate) stats: ReaperStats,
}

impl Reaper {
    pub(crate) fn new(sh: Arc<Shared>, fence: Arc<Fence>) -> Reaper {
        Reaper {
            sh,
            fence,
            stats: ReaperStats::default(),
        }
    }

    /// The oldest version a fresh write may carry: grace period before
    /// this node's clock. A write stamped earlier is answered with this
    /// version as "superseded", so its coordinator stamps it again.
    pub(crate) fn write_floor(&self) -> Version {
        let ms = self
            .sh
            .hlc
            .wall_ms()
            .saturating_sub(self.sh.cfg.reaper.grace.as_millis() as u64);
        Version {
            hlc: ms << LOGICAL_BITS,
            node: 0,
        }
    }

    /// Apply a fresh write (a coordinator's, or a hint) to this node's
    /// store, unless it was stamped before the grace period: then the
    /// floor comes back as the newer version held, and the coordinator
    /// stamps it again. Read repair does not come this way.
    pub(crate) async fn apply_fresh(
        &self,
        key: Bytes,
        rec: Record,
    ) -> (crate::error::Result<Outcome>, crate::trace::LocalTiming) {
        let floor = self.write_floor();
        if rec.version < floor {
            self.stats.refused_old.fetch_add(1, Ordering::Relaxed);
            return (Ok(Outcome::Superseded(floor)), Default::default());
        }
        self.sh.store.apply_timed(key, rec).await
    }

    pub(crate) async fn run(self: Arc<Self>) {
        let mut tick = tokio::time::interval(self.sh.cfg.reaper.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut cursor = Some(Bytes::new());
        loop {
            tick.tick().await;
            if self.sh.closed.load(Ordering::Acquire) {
                return;
            }
            if self.fence.check().is_err() {
                continue;
            }
            cursor = self.clone().reap_pass(cursor.unwrap_or_default()).await;
        }
    }

    /// One pass from `start`: tombstones past the grace period, checked
    /// with the other members and dropped where they agree. Returns where
    /// the next pass goes on (`None`: from the beginning).
    pub(crate) async fn reap_pass(self: Arc<Self>, start: Bytes) -> Option<Bytes> {
        let mut from = start;
        let mut examined = 0;
        loop {
            let floor = self.write_floor();
            let s = self.clone();
            let at = from.clone();
            let step = self
                .sh
                .blocking(move || s.tombstones_before(&at, floor, SCAN_STEP))
                .await?;
            let (found, next) = match step {
                Ok(x) => x,
                Err(e) => {
                    tracing::warn!("tombstone reaper: {e}");
                    return None;
                }
            };
            examined += found.len();
            self.clone().reap(found).await;
            match next {
                None => return None,
                Some(n) if examined >= self.sh.cfg.reaper.max_per_pass => return Some(n),
                Some(n) => from = n,
            }
            if self.sh.closed.load(Ordering::Acquire) {
                return None;
            }
        }
    }

    /// Up to `step` records from `from`: the tombstones among them older
    /// than `floor`, and the key to go on from (`None` at the end).
    fn tombstones_before(
        &self,
        from: &[u8],
        floor: Version,
        step: usize,
    ) -> crate::error::Result<Found> {
        let mut out = Vec::new();
        let mut it = self.sh.store.scan(from, None)?;
        for _ in 0..step {
            let Some(r) = it.next() else {
                return Ok((out, None));
            };
            let (k, rec) = r?;
            if rec.value.is_none() && rec.version < floor {
                out.push((k, rec.version));
            }
        }
        // Go on after the last key read.
        Ok((out, it.next().transpose()?.map(|(k, _)| k)))
    }

    /// Check each tombstone with the other members; drop the agreed ones.
    async fn reap(self: Arc<Self>, tombstones: Vec<(Bytes, Version)>) {
        let mut set = tokio::task::JoinSet::new();
        let mut it = tombstones.into_iter();
        loop {
            while set.len() < self.sh.cfg.reaper.concurrency.max(1) {
                let Some((k, v)) = it.next() else { break };
                let s = self.clone();
                set.spawn(async move { s.reap_one(k, v).await });
            }
            if set.join_next().await.is_none() {
                return;
            }
        }
    }

    async fn reap_one(self: Arc<Self>, key: Bytes, v: Version) {
        let now = Instant::now();
        let mut agreed = true;
        let t = self.sh.topo();
        if t.previous.is_some() {
            // Keys are moving: a replica may not hold the key yet.
            return;
        }
        let others: Vec<usize> = t
            .current
            .members
            .iter()
            .copied()
            .filter(|&m| m != self.sh.me)
            .collect();
        drop(t);
        for m in others {
            if self.sh.is_down(m, now) {
                agreed = false;
                break;
            }
            match self.sh.send_read(0, m, key.clone()).await {
                Ok(None) => {}
                Ok(Some(r)) if r.version >= v => {}
                Ok(Some(_)) => {
                    // An older version: send the tombstone; purge later.
                    let rec = Record {
                        version: v,
                        value: None,
                        marks: Vec::new(),
                    };
                    let _ = self
                        .sh
                        .send_write(0, m, key.clone(), rec, OpKind::Repair)
                        .await;
                    agreed = false;
                }
                Err(_) => agreed = false,
            }
        }
        if !agreed {
            self.stats.kept.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if let Ok(Outcome::Applied) = self.sh.store.purge(key, v).await {
            self.stats.purged.fetch_add(1, Ordering::Relaxed);
        }
    }
}
