//! The coordinator: the node that receives a request sends it to the key's
//! `from` replicas in parallel (itself directly, others over the internal
//! transport) and answers once `ack` of them succeed. Writes are stamped
//! with the hybrid logical clock; a replica that holds a newer version says
//! so, and the coordinator moves its clock past it and writes again, so a
//! write acknowledged before this one began can never win over it, whatever
//! the clocks say. A replica that misses a write gets a durable hint. Reads
//! take the newest of `ack` answers and write it back to stale replicas
//! before answering (read repair). A replica the failure detector holds
//! down is not waited for: if `ack` is out of reach the answer is at once.
//! Also heartbeats and hint delivery (the peer-facing handler is
//! `parts.rs`'s). Owns the
//! replication protocol; must not know about HTTP or how bytes are stored.
//!
//! Here: the coordinator and a write's way (stamp, first phase, fan-out);
//! `read` a read, its repair and a peer's scan page; `peers` heartbeats
//! and hint delivery.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::error::{ClusterError, Result};
use crate::fence::Fence;
use crate::membership::State;
use crate::ops::{OpKind, Replication, Stats};
use crate::reaper::Reaper;
use crate::record::{Mark, Record, Version, WriteId};
use crate::shared::{record_bytes, Shared};
use crate::store::Outcome;
use crate::topology::Pinned;
use crate::trace::{LocalTiming, PeerWait, Trace};

mod peers;
mod read;

/// Attempts of a write that replicas keep answering with newer versions.
pub(crate) const MAX_ATTEMPTS: usize = 4;
/// Hints read and delivered per round.
const HINT_BATCH: usize = 256;

/// Largest scan page a peer serves.
pub(crate) const MAX_PAGE: u32 = 4096;

/// Every replica of `sets` (one set per live layout), once each, in order.
fn union(sets: &[Vec<usize>]) -> Vec<usize> {
    let mut replicas: Vec<usize> = Vec::with_capacity(sets[0].len() + 1);
    for &m in sets.iter().flatten() {
        if !replicas.contains(&m) {
            replicas.push(m);
        }
    }
    replicas
}

enum Replicated {
    Done,
    Superseded(Version),
    Short(usize, Option<ClusterError>),
}

/// The coordinator: its counters, the fence it obeys, the reaper's floor
/// its writes meet on this node.
pub(crate) struct Coordinator {
    sh: Arc<Shared>,
    fence: Arc<Fence>,
    reaper: Arc<Reaper>,
    pub(crate) stats: Stats,
}

impl Coordinator {
    pub(crate) fn new(sh: Arc<Shared>, fence: Arc<Fence>, reaper: Arc<Reaper>) -> Coordinator {
        Coordinator {
            sh,
            fence,
            reaper,
            stats: Stats::default(),
        }
    }

    fn stamp(&self) -> Version {
        let hlc = if self.sh.cfg.unsafe_wall_clock {
            (self.sh.hlc.wall_ms() << crate::hlc::LOGICAL_BITS) | (self.sh.hlc.now() & 0xffff)
        } else {
            self.sh.hlc.now()
        };
        Version {
            hlc,
            node: self.sh.my_id,
        }
    }

    /// A write (`None`: a tombstone); `wid` names it when the client may
    /// send it again (`record`'s write marks): a named write whose mark
    /// one of the `ack` replicas it first asks holds is finished at the
    /// version it was applied at, never stamped anew. One that none of
    /// them remembers is stamped as a new write, and the replicas level it
    /// by version like any other (`store::apply::decide`).
    pub(crate) async fn write(
        self: Arc<Self>,
        id: u64,
        (key, wid): (Bytes, Option<WriteId>),
        value: Option<Bytes>,
        r: Replication,
        trace: &mut Trace,
    ) -> Result<()> {
        let t = self.sh.topo().pin();
        if t.current.is_empty() {
            return Err(ClusterError::NotMember);
        }
        let sets = t.write_sets(&key, r.from);
        // After a replica answered that it holds something newer, the next
        // stamp exceeds that version even where the clock will not follow
        // it (a peer's clock jumped further ahead than `max_clock_ahead_ms`):
        // per key, a write that starts after another one ended is stamped
        // later, whatever the wall clocks say.
        let mut floor: Option<Version> = None;
        // A write to a single replica needs no first phase: it is never
        // half-applied, so stamping it again past a newer version is safe.
        let first = self.first_phase(r) && sets.iter().flatten().any(|&m| m != sets[0][0]);
        // A replica holding a newer version counts as having taken the
        // write (ordered just before that version) only after the first
        // phase, where the newer one can only be a concurrent write's, and
        // in the deliberately broken wall-clock mode.
        let keep = first || self.sh.cfg.unsafe_wall_clock;
        // A named write is looked up before it is stamped, at any
        // `ack`/`from`: in the first phase where there is one, alone where
        // there is not (a cluster of one's store finds a repeat itself).
        // A repeat found applied is never stamped anew.
        let lookup = wid.is_some() && !self.sh.store.is_sole();
        if first || lookup {
            let (newest, applied) = self.clone().newest(id, (&key, wid), &sets, r.ack).await?;
            if first {
                // ABD's first phase: the newest version `ack` replicas of
                // each live layout hold; this write is stamped past it, once.
                floor = newest;
                if let Some(v) = floor {
                    self.sh.hlc.observe(v.hlc);
                }
            }
            if let (Some(v), Some(w)) = (applied, wid) {
                // An earlier attempt of this write was applied at `v`: make
                // sure `ack` replicas hold it (those with anything newer
                // took it, ordered before that), as a read repair would.
                self.stats.repeated_writes.fetch_add(1, Ordering::Relaxed);
                let record = Record {
                    version: v,
                    value,
                    marks: vec![Mark { id: w, version: v }],
                };
                return match self
                    .clone()
                    .replicate(id, (key, record), &sets, (r.ack, true), &t, trace)
                    .await
                {
                    Replicated::Done | Replicated::Superseded(_) => Ok(()),
                    Replicated::Short(got, _) => Err(self.not_enough(got, r.ack)),
                };
            }
        }
        for _ in 0..MAX_ATTEMPTS {
            let mut version = self.stamp();
            if let Some(f) = floor.filter(|f| f.hlc >= version.hlc) {
                version.hlc = f.hlc + 1;
                self.stats
                    .stamped_past_newer
                    .fetch_add(1, Ordering::Relaxed);
            }
            let record = Record {
                version,
                value: value.clone(),
                marks: wid.map(|id| Mark { id, version }).into_iter().collect(),
            };
            match self
                .clone()
                .replicate(id, (key.clone(), record), &sets, (r.ack, keep), &t, trace)
                .await
            {
                Replicated::Done => return Ok(()),
                Replicated::Superseded(v) => {
                    self.sh.hlc.observe(v.hlc);
                    floor = Some(v);
                    self.stats
                        .superseded_retries
                        .fetch_add(1, Ordering::Relaxed);
                }
                Replicated::Short(got, err) => {
                    if let Some(e) = err {
                        if sets == [vec![self.sh.me]] || !matches!(e, ClusterError::Failed(_)) {
                            return Err(e);
                        }
                    }
                    return Err(self.not_enough(got, r.ack));
                }
            }
        }
        Err(self.not_enough(0, r.ack))
    }

    /// Whether a write at `r` first learns the newest version from `ack`
    /// replicas (ABD's first phase): with versions from a quorum, where
    /// `ack` replicas meet every set of `ack` that took an earlier write
    /// (`2·ack > from`). Below that, the first phase could miss a finished
    /// write, and the retry past a newer version keeps a later write from
    /// losing to it. Never in the deliberately broken wall-clock mode,
    /// which must stay broken for the checker to catch it.
    fn first_phase(&self, r: Replication) -> bool {
        self.sh.cfg.versions_from_quorum && 2 * r.ack > r.from && !self.sh.cfg.unsafe_wall_clock
    }

    /// The newest version of `key` held by `ack` replicas of each of
    /// `sets` (a replica holding nothing counts, as no version), and the
    /// version the named write `wid` was applied at, if any replica that
    /// answered holds its mark.
    async fn newest(
        self: Arc<Self>,
        id: u64,
        (key, wid): (&Bytes, Option<WriteId>),
        sets: &[Vec<usize>],
        ack: usize,
    ) -> Result<(Option<Version>, Option<Version>)> {
        let replicas = union(sets);
        let reach = self.reachable(&replicas);
        type Answer = Result<(Option<Version>, Option<Version>)>;
        let (tx, mut rx) = mpsc::channel::<(usize, Answer)>(replicas.len());
        let mut answered: Vec<usize> = Vec::with_capacity(replicas.len());
        let mut newest: Option<Version> = None;
        let mut applied: Option<Version> = None;
        let mut outstanding = 0;
        let enough = |answered: &[usize]| {
            sets.iter()
                .all(|s| s.iter().filter(|m| answered.contains(m)).count() >= ack)
        };
        if replicas.contains(&self.sh.me) {
            if let Ok(rec) = self.sh.store.read(key) {
                newest = rec.as_ref().map(|r| r.version);
                applied = wid.and_then(|w| rec.as_ref()?.applied(w));
                answered.push(self.sh.me);
            }
            // This node's answer is enough (`ack` = 1): no peer asked.
            if enough(&answered) {
                return Ok((newest, applied));
            }
        }
        for (&m, &reach) in replicas.iter().zip(&reach) {
            if m == self.sh.me {
                continue;
            } else if reach {
                let (s, tx, k) = (self.clone(), tx.clone(), key.clone());
                tokio::spawn(async move {
                    let r = s.sh.send_version(id, m, k, wid).await;
                    let _ = tx.send((m, r)).await;
                });
                outstanding += 1;
            }
        }
        drop(tx);
        let deadline = tokio::time::Instant::now() + self.sh.timeout_for(0);
        while !enough(&answered) && outstanding > 0 {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some((m, res))) => {
                    outstanding -= 1;
                    if let Ok((v, a)) = res {
                        newest = newest.max(v);
                        applied = applied.max(a);
                        answered.push(m);
                    }
                }
                _ => break,
            }
        }
        if !enough(&answered) {
            let got = sets
                .iter()
                .map(|s| s.iter().filter(|m| answered.contains(m)).count())
                .min()
                .unwrap_or(0);
            return Err(self.not_enough(got, ack));
        }
        Ok((newest, applied))
    }

    /// The not-enough-replicas error, counted.
    fn not_enough(&self, got: usize, need: usize) -> ClusterError {
        self.stats
            .not_enough_replicas
            .fetch_add(1, Ordering::Relaxed);
        ClusterError::NotEnoughReplicas { got, need }
    }

    /// Send a write (`key` and its `record`) to every replica of `sets`
    /// (one set per live layout) and wait until `ack` of each set hold it
    /// (with `keep`, a replica holding a newer version counts); `trace`
    /// gets where the time went.
    async fn replicate(
        self: Arc<Self>,
        id: u64,
        (key, record): (Bytes, Record),
        sets: &[Vec<usize>],
        (ack, keep): (usize, bool),
        pin: &Pinned,
        trace: &mut Trace,
    ) -> Replicated {
        *trace = Trace::default();
        // The common single-replica case on this node: no task, no channel.
        if sets.len() == 1 && sets[0] == [self.sh.me] {
            let (r, timing) = self.reaper.apply_fresh(key, record).await;
            trace.local = Some(timing);
            return match r {
                Ok(Outcome::Applied) => Replicated::Done,
                Ok(Outcome::Superseded(_)) if keep => Replicated::Done,
                Ok(Outcome::Superseded(v)) => Replicated::Superseded(v),
                Err(e) => Replicated::Short(0, Some(e)),
            };
        }
        let replicas = union(sets);
        // The failure detector already knows `ack` is out of reach in
        // some set: answer at once and write nothing (no partial write,
        // no hints), with the number of replicas that could have answered.
        // A peer whose store refuses writes counts as out of reach.
        let reach = self.writable(&replicas);
        let pos = |m: usize| replicas.iter().position(|&x| x == m).expect("in the union");
        let live = sets
            .iter()
            .map(|s| s.iter().filter(|&&m| reach[pos(m)]).count())
            .min()
            .unwrap_or(0);
        if live < ack {
            return Replicated::Short(live, None);
        }
        let (tx, mut rx) = mpsc::channel::<(usize, Result<Outcome>, LocalTiming)>(replicas.len());
        // Per replica: 0 not asked, 1 waiting, 2 applied, 3 failed.
        let mut status = vec![0u8; replicas.len()];
        for (n, (&m, &reach)) in replicas.iter().zip(&reach).enumerate() {
            // Each send holds the topology pinned until it is answered,
            // after the write has returned.
            let pin = pin.clone();
            if m == self.sh.me {
                let (s, tx, k, rec) = (self.clone(), tx.clone(), key.clone(), record.clone());
                tokio::spawn(async move {
                    let (r, timing) = s.reaper.apply_fresh(k, rec).await;
                    let _ = tx.send((m, r, timing)).await;
                    drop(pin);
                });
            } else if !reach {
                self.sh.keep_hint(m, key.clone(), record.clone());
                continue;
            } else {
                let (s, tx, k, rec) = (self.clone(), tx.clone(), key.clone(), record.clone());
                tokio::spawn(async move {
                    let r =
                        s.sh.send_write_timed(id, m, k.clone(), rec.clone(), OpKind::Write)
                            .await;
                    let failed = r.is_err();
                    let (r, timing) = match r {
                        Ok((o, t)) => (Ok(o), t),
                        Err(e) => (Err(e), LocalTiming::default()),
                    };
                    let _ = tx.send((m, r, timing)).await;
                    if failed {
                        s.sh.keep_hint(m, k, rec);
                    }
                    drop(pin);
                });
            }
            status[n] = 1;
        }
        drop(tx);
        let count = |status: &[u8], set: &[usize], want: &[u8]| {
            set.iter()
                .filter(|&&m| want.contains(&status[pos(m)]))
                .count()
        };
        let began = tokio::time::Instant::now();
        let deadline = began + self.sh.timeout_for(record_bytes(&key, &record));
        let mut local_err = None;
        // This node's own part, when it answered, and when.
        let mut local_done = None;
        let mut last: Option<(usize, LocalTiming)> = None;
        loop {
            let applied = sets
                .iter()
                .map(|s| count(&status, s, &[2]))
                .min()
                .unwrap_or(0);
            if applied >= ack {
                // The answer that completed the quorum was a peer's: the
                // wait after this node's own part is that peer's.
                if let Some((m, timing)) = last.filter(|(m, _)| *m != self.sh.me) {
                    let since = local_done.unwrap_or(began);
                    trace.peer = Some(PeerWait {
                        url: self.sh.member_url(m),
                        waited: since.elapsed(),
                        own: Some(timing),
                    });
                }
                return Replicated::Done;
            }
            if sets.iter().any(|s| count(&status, s, &[1, 2]) < ack) {
                return Replicated::Short(applied, local_err);
            }
            let got = match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(g)) => g,
                _ => return Replicated::Short(applied, local_err),
            };
            let at = pos(got.0);
            status[at] = 3;
            if got.0 == self.sh.me {
                local_done = Some(tokio::time::Instant::now());
                trace.local = Some(got.2);
            }
            last = Some((got.0, got.2));
            match got.1 {
                Ok(Outcome::Applied) => status[at] = 2,
                Ok(Outcome::Superseded(_)) if keep => status[at] = 2,
                Ok(Outcome::Superseded(v)) => return Replicated::Superseded(v),
                Err(e) if got.0 == self.sh.me => local_err = Some(e),
                Err(_) => {}
            }
        }
    }

    /// Which of `replicas` a write goes to: those `reachable` says, less
    /// the peers whose store refused a write lately (`READ_ONLY_FOR`).
    fn writable(&self, replicas: &[usize]) -> Vec<bool> {
        let now = Instant::now();
        // One read guard for every member: on the path of every write.
        let t = self.sh.topo.read();
        replicas
            .iter()
            .map(|&m| {
                let d = &t.detectors[m];
                m == self.sh.me || (d.state(now) != State::Down && !d.refuses_writes(now))
            })
            .collect()
    }

    /// Which of `replicas` to contact: this node, and every peer the failure
    /// detector does not hold down.
    fn reachable(&self, replicas: &[usize]) -> Vec<bool> {
        let now = Instant::now();
        replicas
            .iter()
            .map(|&m| m == self.sh.me || !self.sh.is_down(m, now))
            .collect()
    }
}
