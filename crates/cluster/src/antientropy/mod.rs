//! Anti-entropy: replicas compare what they hold, home set by home set,
//! with the Merkle trees the store keeps current (`merkle`), and exchange
//! only the records that differ. An exchange between this node and a peer
//! for one home set:
//!
//! 1. the roots (a few bytes each way); equal roots end it;
//! 2. the 256 branch hashes (2 KiB), then the leaves under the branches
//!    that differ (2 KiB a branch): the leaves that differ;
//! 3. the peer's keys and versions in those leaves, a page at a time in
//!    key order, merged against this node's own keys in the same range:
//!    where the peer's version is newer or only the peer holds the key,
//!    the record is fetched and applied here; where this node's is newer
//!    or only it holds the key, the record is pushed to the peer (both as
//!    repairs: newer version wins, any age). Equal versions send nothing.
//!
//! Records stamped within `settle` of now are left to the write path and
//! hints (they may be in flight); a tombstone past the reaper's grace
//! period is not sent to a replica that holds nothing for the key (the
//! reaper may have dropped it there on purpose). Records move at most at
//! `rate` bytes a second. Exchanges run one at a time: on a schedule
//! (every `interval`, each pair of replicas started by its member with the
//! lower id) and on demand (`repair_now`: this node with every peer of
//! every home set it belongs to).
//!
//! Here: the exchange and its figures (`AntiEntropy`); `answer` is the
//! peer's side of it, `schedule` when exchanges run and when the trees are
//! built (`Rounds`). Owns the
//! exchange, its schedule and its figures; must not change the trees (the
//! store's applier does) or know about HTTP.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use tokio::time::Instant;

use crate::error::ClusterError;
use crate::merkle::{self, set_name, LEAVES, LEAVES_PER_BRANCH};
use crate::reaper::Reaper;
use crate::record::{Record, Version};
use crate::shared::Shared;
use crate::store::Outcome;
use crate::wire::{Request, Response};

mod answer;
mod schedule;

pub use crate::config::AntiEntropyConfig;
pub(crate) use schedule::Rounds;

/// Keys and versions a peer sends in one page at most.
pub const KEYS_PAGE: u32 = 4096;
/// Records a `KEYS` request examines at most before it answers (the next
/// page goes on after the last one examined).
const KEYS_EXAMINE: usize = 200_000;
/// Records fetched or pushed per request at most, and their bytes.
const BATCH: usize = 256;
const BATCH_BYTES: usize = 4 << 20;
/// This node's entries of a range held in memory at once, at most.
const LOCAL_CHUNK: usize = 20_000;
/// Time a peer has to answer one anti-entropy request.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Branches asked for in one `HASHES` request (128 KiB of leaves).
const BRANCHES_PER_CALL: usize = 64;

/// What one exchange found and did.
#[derive(Clone, Debug, Default)]
pub struct Exchange {
    pub set: u64,
    pub peer: String,
    /// Records each side counted in the set's tree.
    pub local_keys: u64,
    pub peer_keys: u64,
    pub roots_equal: bool,
    pub leaves_differing: usize,
    /// Keys of the differing leaves compared (both sides).
    pub keys_compared: u64,
    /// Records fetched and applied here, pushed to the peer.
    pub pulled: u64,
    pub pushed: u64,
    /// Of those, records the receiving side already held (or held newer)
    /// by the time they arrived: overstreaming.
    pub already_there: u64,
    /// Bytes of anti-entropy frames sent and received, this exchange.
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub elapsed: Duration,
    pub error: Option<String>,
}

/// When a home set was last in sync with a peer, and how that went.
#[derive(Clone, Debug)]
pub struct SyncRecord {
    /// Wall-clock milliseconds of the last exchange that completed.
    pub at_ms: u64,
    pub last: Exchange,
}

/// Totals, for metrics.
#[derive(Debug, Default)]
pub struct AntiEntropyStats {
    pub exchanges: AtomicU64,
    pub failed: AtomicU64,
    pub pulled: AtomicU64,
    pub pushed: AtomicU64,
    pub already_there: AtomicU64,
    pub bytes_sent: AtomicU64,
    pub bytes_received: AtomicU64,
    /// Records pushed to this node by peers' exchanges.
    pub received: AtomicU64,
    /// Tables this node set aside (checksum failures) and repaired after.
    pub tables_set_aside: AtomicU64,
    /// Last completed exchange per (home set, peer index).
    pub(crate) synced: parking_lot::Mutex<HashMap<(u64, usize), SyncRecord>>,
}

/// A home set this node belongs to: its name and member indices.
#[derive(Clone, Debug)]
pub struct HomeSet {
    pub name: u64,
    pub members: Vec<usize>,
}

/// Every home set of `rf` members out of `ids` that contains `me`, in a
/// stable order.
pub fn home_sets(ids: &[u64], rf: usize, me: usize) -> Vec<HomeSet> {
    let mut out = Vec::new();
    let others: Vec<usize> = (0..ids.len()).filter(|&i| i != me).collect();
    let mut pick = Vec::new();
    fn walk(
        others: &[usize],
        from: usize,
        need: usize,
        pick: &mut Vec<usize>,
        me: usize,
        ids: &[u64],
        out: &mut Vec<HomeSet>,
    ) {
        if need == 0 {
            let mut members = pick.clone();
            members.push(me);
            members.sort_unstable();
            out.push(HomeSet {
                name: set_name(members.iter().map(|&m| ids[m])),
                members,
            });
            return;
        }
        for i in from..others.len() {
            pick.push(others[i]);
            walk(others, i + 1, need - 1, pick, me, ids, out);
            pick.pop();
        }
    }
    walk(
        &others,
        0,
        rf.saturating_sub(1),
        &mut pick,
        me,
        ids,
        &mut out,
    );
    out
}

/// Encoded size of a request or answer, for the byte counts.
fn req_len(req: &Request) -> u64 {
    let mut b = BytesMut::new();
    crate::wire::encode_request(&mut b, 0, 0, req);
    b.len() as u64
}

fn resp_len(resp: &Response) -> u64 {
    let mut b = BytesMut::new();
    crate::wire::encode_response(&mut b, 0, 0, resp);
    b.len() as u64
}

/// One key's state on one side.
type Entry = (Bytes, Version, bool);

/// Anti-entropy's exchanges, both sides: its counters, and the reaper's
/// floor it respects.
pub(crate) struct AntiEntropy {
    sh: Arc<Shared>,
    reaper: Arc<Reaper>,
    pub(crate) stats: AntiEntropyStats,
}

impl AntiEntropy {
    pub(crate) fn new(sh: Arc<Shared>, reaper: Arc<Reaper>) -> AntiEntropy {
        AntiEntropy {
            sh,
            reaper,
            stats: AntiEntropyStats::default(),
        }
    }

    /// The home set `key` belongs to (0 without trees).
    pub(crate) fn home_of(&self, key: &[u8]) -> u64 {
        self.sh.store.merkle().map_or(0, |m| m.home_of(key))
    }

    /// This node's records older than `settle` may be exchanged.
    fn settled(&self, v: Version) -> bool {
        let settle = self.sh.cfg.anti_entropy.settle.as_millis() as u64;
        v.millis() + settle <= self.sh.hlc.wall_ms()
    }

    /// A tombstone the reaper may have dropped elsewhere on purpose.
    fn past_grace(&self, v: Version, tombstone: bool) -> bool {
        tombstone && v < self.reaper.write_floor()
    }

    // ----- this node's side -----

    async fn ae_call(
        &self,
        m: usize,
        req: Request,
        x: &mut Exchange,
    ) -> crate::error::Result<Response> {
        let peer = self.sh.topo().peers[m]
            .clone()
            .expect("a peer, not this node");
        x.bytes_sent += req_len(&req);
        let r = peer
            .call(req, CALL_TIMEOUT)
            .await
            .map_err(|e| ClusterError::Failed(format!("{}: {e}", peer.url)))?;
        x.bytes_received += resp_len(&r);
        Ok(r)
    }

    fn local_hashes(
        &self,
        set: u64,
        level: u8,
        branches: &[u16],
    ) -> crate::error::Result<(u64, u64, Vec<u64>)> {
        hashes_of(
            self.answer_hashes(set, level, branches),
            "this node's",
            || ClusterError::Failed("anti-entropy is off on this node".into()),
        )
    }

    async fn peer_hashes(
        &self,
        m: usize,
        set: u64,
        level: u8,
        branches: Vec<u16>,
        x: &mut Exchange,
    ) -> crate::error::Result<(u64, u64, Vec<u64>)> {
        let req = Request::Hashes {
            set,
            level,
            branches,
        };
        let r = self.ae_call(m, req, x).await?;
        hashes_of(r, "the peer's", || self.unexpected_answer(m, "tree hashes"))
    }

    fn unexpected_answer(&self, m: usize, what: &str) -> ClusterError {
        let url = self.sh.topo().members[m].url.clone();
        ClusterError::Failed(format!("{url}: unexpected answer to {what}"))
    }

    /// Compare home set `set` with peer `m` and exchange what differs.
    pub(crate) async fn exchange(self: &Arc<Self>, set: u64, m: usize) -> Exchange {
        let started = Instant::now();
        let mut x = Exchange {
            set,
            peer: self.sh.topo().members[m].url.clone(),
            ..Exchange::default()
        };
        let r = self.exchange_inner(set, m, &mut x).await;
        x.elapsed = started.elapsed();
        let s = &self.stats;
        s.exchanges.fetch_add(1, Ordering::Relaxed);
        s.pulled.fetch_add(x.pulled, Ordering::Relaxed);
        s.pushed.fetch_add(x.pushed, Ordering::Relaxed);
        s.already_there
            .fetch_add(x.already_there, Ordering::Relaxed);
        s.bytes_sent.fetch_add(x.bytes_sent, Ordering::Relaxed);
        s.bytes_received
            .fetch_add(x.bytes_received, Ordering::Relaxed);
        match r {
            Ok(()) => {
                s.synced.lock().insert(
                    (set, m),
                    SyncRecord {
                        at_ms: self.sh.hlc.wall_ms(),
                        last: x.clone(),
                    },
                );
            }
            Err(e) => {
                s.failed.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(peer = %x.peer, set = %format!("{set:016x}"), error = %e, "anti-entropy exchange failed");
                x.error = Some(e.to_string());
            }
        }
        x
    }

    async fn exchange_inner(
        self: &Arc<Self>,
        set: u64,
        m: usize,
        x: &mut Exchange,
    ) -> crate::error::Result<()> {
        let (lk, lroot, _) = self.local_hashes(set, 0, &[])?;
        let (pk, proot, _) = self.peer_hashes(m, set, 0, vec![], x).await?;
        x.local_keys = lk;
        x.peer_keys = pk;
        if lroot == proot {
            x.roots_equal = true;
            return Ok(());
        }
        let (_, _, lb) = self.local_hashes(set, 1, &[])?;
        let (_, _, pb) = self.peer_hashes(m, set, 1, vec![], x).await?;
        let branches: Vec<u16> = merkle::differing(&lb, &pb)
            .into_iter()
            .map(|b| b as u16)
            .collect();
        let mut leaves: Vec<u16> = Vec::new();
        for chunk in branches.chunks(BRANCHES_PER_CALL) {
            let (_, _, ll) = self.local_hashes(set, 2, chunk)?;
            let (_, _, pl) = self.peer_hashes(m, set, 2, chunk.to_vec(), x).await?;
            if ll.len() != pl.len() {
                return Err(self.unexpected_answer(m, "tree leaves"));
            }
            for i in merkle::differing(&ll, &pl) {
                let b = chunk[i / LEAVES_PER_BRANCH] as usize;
                leaves.push((b * LEAVES_PER_BRANCH + i % LEAVES_PER_BRANCH) as u16);
            }
        }
        x.leaves_differing = leaves.len();
        if leaves.is_empty() {
            return Ok(());
        }
        let all = leaves.len() == LEAVES;
        let wanted = Leaves::new(all, &leaves);
        let sent_leaves = if all { Vec::new() } else { leaves };
        let mut budget = Budget::new(self.sh.cfg.anti_entropy.rate);
        let mut after: Option<Bytes> = None;
        loop {
            let req = Request::Keys {
                set,
                all,
                leaves: sent_leaves.clone(),
                after: after.clone(),
                limit: KEYS_PAGE,
            };
            let (theirs, resume) = match self.ae_call(m, req, x).await? {
                Response::Keys { entries, resume } => (entries, resume),
                _ => return Err(self.unexpected_answer(m, "a keys page")),
            };
            self.merge_range(
                set,
                m,
                &wanted,
                after.clone(),
                resume.clone(),
                theirs,
                x,
                &mut budget,
            )
            .await?;
            match resume {
                Some(r) => after = Some(r),
                None => return Ok(()),
            }
            if self.sh.closed.load(Ordering::Acquire) {
                return Err(ClusterError::Closed);
            }
        }
    }

    /// This node's entries of `set` in `wanted` with `after < key <= upto`
    /// (to the end when `upto` is None), in key order: blocking.
    /// At most `LOCAL_CHUNK` of them: then also the last key taken (the
    /// range this answer covers ends there).
    fn local_range(
        &self,
        set: u64,
        wanted: &Leaves,
        after: Option<&[u8]>,
        upto: Option<&[u8]>,
    ) -> crate::error::Result<(Vec<Entry>, Option<Bytes>)> {
        let mut out = Vec::new();
        for r in self.sh.store.scan(after.unwrap_or(b""), None)? {
            let (k, rec) = r?;
            if after == Some(&k[..]) {
                continue;
            }
            if upto.is_some_and(|u| &k[..] > u) {
                break;
            }
            if wanted.contains(merkle::leaf_of(&k)) && self.home_of(&k) == set {
                out.push((k.clone(), rec.version, rec.is_tombstone()));
                if out.len() >= LOCAL_CHUNK {
                    return Ok((out, Some(k)));
                }
            }
        }
        Ok((out, None))
    }

    /// Merge the peer's page with this node's keys of the same range, then
    /// pull and push what differs.
    #[allow(clippy::too_many_arguments)]
    async fn merge_range(
        self: &Arc<Self>,
        set: u64,
        m: usize,
        wanted: &Leaves,
        after: Option<Bytes>,
        upto: Option<Bytes>,
        theirs: Vec<Entry>,
        x: &mut Exchange,
        budget: &mut Budget,
    ) -> crate::error::Result<()> {
        // This node's side of the range, a bounded chunk at a time (a peer
        // that holds nothing covers the whole store in one page).
        let mut from = after;
        let mut rest = &theirs[..];
        loop {
            let s = self.clone();
            let w = wanted.clone();
            let (a, u) = (from.clone(), upto.clone());
            let (ours, stopped) = self
                .sh
                .blocking(move || s.local_range(set, &w, a.as_deref(), u.as_deref()))
                .await
                .ok_or(ClusterError::Closed)??;
            let bound = stopped.as_ref().or(upto.as_ref());
            let split = rest.partition_point(|e| bound.is_none_or(|b| e.0 <= *b));
            self.settle_range(m, &ours, &rest[..split], x, budget)
                .await?;
            rest = &rest[split..];
            match stopped {
                Some(k) => from = Some(k),
                None => return Ok(()),
            }
        }
    }

    /// Pull and push what differs between the two sides' entries of one
    /// range.
    async fn settle_range(
        self: &Arc<Self>,
        m: usize,
        ours: &[Entry],
        theirs: &[Entry],
        x: &mut Exchange,
        budget: &mut Budget,
    ) -> crate::error::Result<()> {
        x.keys_compared += (ours.len() + theirs.len()) as u64;
        let (pull, push) = self.plan(ours, theirs);
        for chunk in pull.chunks(BATCH) {
            let mut keys: Vec<Bytes> = chunk.to_vec();
            while !keys.is_empty() {
                let got = match self
                    .ae_call(m, Request::Fetch { keys: keys.clone() }, x)
                    .await?
                {
                    Response::Fetched(r) if !r.is_empty() || keys.is_empty() => r,
                    _ => return Err(self.unexpected_answer(m, "a fetch")),
                };
                let n = got.len().min(keys.len());
                let mut bytes = 0;
                let mut fetched = Vec::with_capacity(n);
                for (k, rec) in keys.drain(..n).zip(got) {
                    let Some(rec) = rec else { continue };
                    bytes += rec.encoded_len() + k.len();
                    fetched.push((k, rec));
                }
                let (applied, already) = self.apply_many(fetched).await?;
                x.pulled += applied;
                x.already_there += already;
                budget.spend(bytes as u64).await;
            }
        }
        let mut batch: Vec<(Bytes, Record)> = Vec::new();
        let mut bytes = 0;
        for k in push {
            let Some(rec) = self.sh.store.read(&k)? else {
                continue;
            };
            bytes += rec.encoded_len() + k.len();
            batch.push((k, rec));
            if batch.len() >= BATCH || bytes >= BATCH_BYTES {
                self.push_batch(m, std::mem::take(&mut batch), x).await?;
                budget.spend(bytes as u64).await;
                bytes = 0;
            }
        }
        if !batch.is_empty() {
            self.push_batch(m, batch, x).await?;
            budget.spend(bytes as u64).await;
        }
        Ok(())
    }

    async fn push_batch(
        &self,
        m: usize,
        entries: Vec<(Bytes, Record)>,
        x: &mut Exchange,
    ) -> crate::error::Result<()> {
        let n = entries.len() as u64;
        match self.ae_call(m, Request::Push { entries }, x).await? {
            Response::Pushed { applied } => {
                x.pushed += applied as u64;
                x.already_there += n.saturating_sub(applied as u64);
                Ok(())
            }
            _ => Err(self.unexpected_answer(m, "a push")),
        }
    }

    /// Which keys to pull and which to push, from both sides' sorted
    /// entries of one range.
    fn plan(&self, ours: &[Entry], theirs: &[Entry]) -> (Vec<Bytes>, Vec<Bytes>) {
        let (mut pull, mut push) = (Vec::new(), Vec::new());
        let (mut i, mut j) = (0, 0);
        loop {
            let (o, t) = (ours.get(i), theirs.get(j));
            let (mine, peers) = match (o, t) {
                (None, None) => break,
                (Some(a), Some(b)) if a.0 == b.0 => {
                    i += 1;
                    j += 1;
                    (Some(a), Some(b))
                }
                (Some(a), Some(b)) if a.0 < b.0 => {
                    i += 1;
                    (Some(a), None)
                }
                (Some(_), Some(b)) => {
                    j += 1;
                    (None, Some(b))
                }
                (Some(a), None) => {
                    i += 1;
                    (Some(a), None)
                }
                (None, Some(b)) => {
                    j += 1;
                    (None, Some(b))
                }
            };
            match (mine, peers) {
                (Some(a), Some(b)) if a.1 == b.1 => {}
                (Some(a), Some(b)) if a.1 > b.1 => {
                    if self.settled(a.1) {
                        push.push(a.0.clone());
                    }
                }
                (Some(_), Some(b)) => {
                    if self.settled(b.1) {
                        pull.push(b.0.clone());
                    }
                }
                (Some(a), None) => {
                    if self.settled(a.1) && !self.past_grace(a.1, a.2) {
                        push.push(a.0.clone());
                    }
                }
                (None, Some(b)) => {
                    if self.settled(b.1) && !self.past_grace(b.1, b.2) {
                        pull.push(b.0.clone());
                    }
                }
                (None, None) => unreachable!(),
            }
        }
        (pull, push)
    }
}

/// (keys, root, hashes) of a tree level answered by `whose` trees.
fn hashes_of(
    r: Response,
    whose: &str,
    other: impl FnOnce() -> ClusterError,
) -> crate::error::Result<(u64, u64, Vec<u64>)> {
    match r {
        Response::Hashes {
            ready: true,
            keys,
            root,
            hashes,
        } => Ok((keys, root, hashes)),
        Response::Hashes { ready: false, .. } => Err(ClusterError::Busy(format!(
            "{whose} Merkle trees are still being built"
        ))),
        _ => Err(other()),
    }
}

fn not_kept() -> Response {
    Response::Error {
        transient: false,
        read_only: false,
        message: "this node keeps no Merkle trees (a cluster of one)".into(),
    }
}

/// A set of leaves to look at: all, or some.
#[derive(Clone, Debug)]
pub enum Leaves {
    All,
    Some(Arc<HashSet<u32>>),
}

impl Leaves {
    pub fn new(all: bool, leaves: &[u16]) -> Leaves {
        if all {
            Leaves::All
        } else {
            Leaves::Some(Arc::new(leaves.iter().map(|&l| l as u32).collect()))
        }
    }

    fn contains(&self, leaf: u32) -> bool {
        match self {
            Leaves::All => true,
            Leaves::Some(s) => s.contains(&leaf),
        }
    }
}

/// Paces records moved to `rate` bytes a second.
pub(crate) struct Budget {
    rate: u64,
    started: Instant,
    spent: u64,
}

impl Budget {
    pub(crate) fn new(rate: u64) -> Budget {
        Budget {
            rate: rate.max(1),
            started: Instant::now(),
            spent: 0,
        }
    }

    pub(crate) async fn spend(&mut self, bytes: u64) {
        self.spent += bytes;
        let due = Duration::from_secs_f64(self.spent as f64 / self.rate as f64);
        let at = self.started + due;
        if at > Instant::now() {
            tokio::time::sleep_until(at).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_sets_are_every_combination_with_me() {
        let ids = [10, 20, 30, 40, 50];
        let sets = home_sets(&ids, 3, 1);
        // C(4, 2) = 6, each with member 1.
        assert_eq!(sets.len(), 6);
        assert!(sets
            .iter()
            .all(|s| s.members.len() == 3 && s.members.contains(&1)));
        let names: HashSet<u64> = sets.iter().map(|s| s.name).collect();
        assert_eq!(names.len(), 6);
        // The same set seen from another member has the same name.
        let from3 = home_sets(&ids, 3, 3);
        let shared: Vec<_> = sets
            .iter()
            .filter(|s| s.members.contains(&3))
            .map(|s| s.name)
            .collect();
        assert_eq!(shared.len(), 3);
        assert!(shared.iter().all(|n| from3.iter().any(|s| s.name == *n)));
        assert_eq!(home_sets(&ids[..3], 3, 0).len(), 1);
        assert_eq!(merkle::BRANCHES * LEAVES_PER_BRANCH, LEAVES);
    }
}
