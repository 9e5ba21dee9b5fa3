//! The cluster layer between the node's HTTP API and the engine. Its
//! settings (`config`) and errors (`error`); members and their failure
//! detection (`membership`, `topology`), placement of keys by rendezvous
//! hashing (`placement`, shared with clients from `strata-api`), versions
//! from a hybrid logical clock (`hlc`, `record`), the local replica
//! (`store`), the coordinator of quorum reads and writes with read repair
//! (`coordinator`), hinted handoff (`hints`), tombstones dropped once every
//! replica agrees (`reaper`), anti-entropy by Merkle trees (`merkle`,
//! `antientropy`), the pace of the checksum scrub (`scrub`), layouts and
//! members joining and leaving (`layout`, `rebalance`), a member removed
//! while away refusing to serve (`fence`), merged cluster-wide ranges (`scan`), where each request's
//! time went (`trace`), what this node knows of the cluster (`view`), and
//! internal traffic (`wire`, `transport`, `auth`). A node without peers is
//! a cluster of one and takes the same path. Must not know about HTTP: the
//! node hands it upgraded connections and a `Dialer`.

pub mod antientropy;
pub mod auth;
mod config;
mod coordinator;
mod error;
mod fence;
pub mod hints;
pub mod hlc;
pub mod layout;
pub mod membership;
pub mod merkle;
pub use strata_api::placement;
mod reaper;
pub mod rebalance;
pub mod record;
pub mod scan;
mod scrub;
pub mod store;
pub mod topology;
pub mod trace;
pub mod transport;
mod view;
pub mod wire;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use strata_engine::Db;
use tokio::time::Instant;

pub use antientropy::{AntiEntropyConfig, Exchange};
pub use auth::Secret;
pub use config::ClusterConfig;
pub use error::{ClusterError, Result};
pub use hints::{HintsConfig, PeerHints};
pub use hlc::WallClock;
pub use layout::{LayoutState, Stage};
pub use membership::State;
pub use reaper::{ReaperConfig, ReaperStats};
pub use store::Outcome;
pub use transport::{BoxStream, DialFuture, Dialer, TransportConfig};
pub use view::{ClusterView, MemberView, RangeView};

use hints::Hints;
use hlc::Hlc;
use membership::{Detector, Member};
use placement::Placement;
use store::Store;
use topology::Topology;
use transport::{Ctx, Peer};

/// How many replicas a request goes to (`from`) and how many must answer
/// (`ack`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replication {
    pub ack: usize,
    pub from: usize,
}

/// A member's id, a hash of its advertised URL (it seeds its placement
/// scores and breaks version ties), and URLs compared without a trailing
/// slash: the placement the clients share (`strata_api::placement`).
pub use strata_api::placement::{member_id, normalize_url};

/// Kinds of replica operations, for observers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    Write,
    Read,
    Repair,
    Hint,
}

impl OpKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            OpKind::Write => "write",
            OpKind::Read => "read",
            OpKind::Repair => "repair",
            OpKind::Hint => "hint",
        }
    }
}

/// Told about every replica operation sent to a peer (the node turns them
/// into metrics and USDT probes). `id` is the client request's id (0 for
/// background work).
pub trait Observer: Send + Sync + 'static {
    fn replica_send(&self, _id: u64, _peer: &str, _op: OpKind) {}
    fn replica_answer(&self, _id: u64, _peer: &str, _op: OpKind, _elapsed: Duration, _ok: bool) {}
}

/// Counters of the coordinator's work.
#[derive(Debug, Default)]
pub struct Stats {
    pub not_enough_replicas: AtomicU64,
    pub read_repairs: AtomicU64,
    pub superseded_retries: AtomicU64,
}

/// The cluster as seen from one node.
pub struct Cluster {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    cfg: ClusterConfig,
    /// This node's index in every topology's roster.
    me: usize,
    my_id: u64,
    /// The roster and the live layouts, swapped whole on a change.
    topo: parking_lot::RwLock<Arc<Topology>>,
    /// What every connection to a peer shares (`None`: no secret, a
    /// cluster of one for good).
    ctx: Option<Arc<Ctx>>,
    hlc: Arc<Hlc>,
    store: Store,
    hints: Option<Arc<Hints>>,
    hint_writer: Option<hints::HintWriter>,
    stats: Stats,
    reaper_stats: ReaperStats,
    anti_entropy: antientropy::AntiEntropyStats,
    /// One anti-entropy round at a time.
    ae_lock: tokio::sync::Mutex<()>,
    /// Layout changes: this node's stream and the change it drives.
    rebalance: rebalance::RebalanceState,
    /// One layout adopted at a time.
    layout_lock: tokio::sync::Mutex<()>,
    /// Whether this node was removed while away.
    fence: fence::FenceState,
    observer: Option<Arc<dyn Observer>>,
    closed: AtomicBool,
}

impl Cluster {
    /// A cluster of one node: this node's engine.
    pub fn single(db: Arc<Db>) -> Self {
        Cluster::open(db, ClusterConfig::default(), None, None).expect("a cluster of one")
    }

    /// Join the configured cluster. Call `start` inside a tokio runtime to
    /// begin heartbeats and hint delivery.
    pub fn open(
        db: Arc<Db>,
        mut cfg: ClusterConfig,
        dialer: Option<Arc<dyn Dialer>>,
        observer: Option<Arc<dyn Observer>>,
    ) -> std::result::Result<Cluster, String> {
        cfg.advertise = normalize_url(&cfg.advertise).to_string();
        let urls: Vec<String> = cfg
            .members
            .iter()
            .map(|u| normalize_url(u).to_string())
            .collect();
        let saved = match &cfg.layout_dir {
            Some(d) => LayoutState::load(d)?,
            None => None,
        };
        let from_file = saved.is_some();
        let state = match (saved, &cfg.seed) {
            // The layout this node last adopted wins over --cluster.
            (Some(s), _) => {
                if !urls.is_empty() && s.version > 1 && s.members != urls {
                    tracing::info!(
                        version = s.version,
                        "layout.json names other members than --cluster; using layout.json"
                    );
                }
                s
            }
            (None, Some(_)) => LayoutState::none(),
            (None, None) => {
                let urls = if urls.is_empty() {
                    vec![cfg.advertise.clone()]
                } else {
                    urls
                };
                let rf = cfg.replication.unwrap_or(urls.len().min(3));
                LayoutState::first(urls, rf)
            }
        };
        check_layout(&state)?;
        // (A node that left keeps its layout.json and may restart.)
        if state.version > 0 && !from_file && !state.all_members().contains(&cfg.advertise) {
            return Err(format!(
                "this node's URL {} is not in the cluster list ({}); set --advertise to its entry",
                cfg.advertise,
                state.members.join(",")
            ));
        }
        if cfg.reaper.grace.as_millis() <= u128::from(cfg.hints.max_age_ms) {
            return Err(format!(
                "the tombstone grace period ({} ms) must exceed the hints' maximum age ({} ms): a hint delivered after a tombstone is dropped could bring a deleted key back",
                cfg.reaper.grace.as_millis(),
                cfg.hints.max_age_ms
            ));
        }
        if cfg.reaper.interval < cfg.timeout {
            return Err(format!(
                "the tombstone reaper's interval ({} ms) must be at least the replica timeout ({} ms): a read repair still in flight must not outlive a pass",
                cfg.reaper.interval.as_millis(),
                cfg.timeout.as_millis()
            ));
        }
        // The roster: this node, the live layouts' members, the seed.
        let mut roster = vec![cfg.advertise.clone()];
        let seed = cfg.seed.iter().map(|s| normalize_url(s).to_string());
        for u in state.all_members().into_iter().chain(seed) {
            if !roster.contains(&u) {
                roster.push(u);
            }
        }
        let hlc = Arc::new(Hlc::with_clock(
            cfg.clock_offset_ms,
            cfg.max_clock_ahead_ms,
            cfg.wall_clock.clone(),
        ));
        // A node with a secret can have peers, now or after a join.
        let ctx = match (&cfg.secret, dialer) {
            (Some(secret), Some(dialer)) => Some(Arc::new(Ctx {
                dialer,
                secret: secret.clone(),
                my_id: member_id(&cfg.advertise),
                hlc: hlc.clone(),
                cfg: cfg.transport,
            })),
            (None, _) if roster.len() > 1 => return Err(
                "a cluster of more than one node needs --cluster-secret or --cluster-secret-file"
                    .into(),
            ),
            (Some(_), None) if roster.len() > 1 => {
                return Err("a cluster of more than one node needs a dialer".into())
            }
            _ => None,
        };
        let hints = match &ctx {
            Some(_) => Some(Arc::new(
                Hints::open(
                    &cfg.hints_dir,
                    hints::engine_options(cfg.hints_durability),
                    cfg.hints,
                )
                .map_err(|e| format!("opening hints in {}: {e}", cfg.hints_dir.display()))?,
            )),
            None => None,
        };
        let mut members = Vec::new();
        let mut detectors = Vec::new();
        let mut peers = Vec::new();
        for u in &roster {
            let (m, d, p) = new_member(u, &cfg.advertise, ctx.as_ref());
            members.push(m);
            detectors.push(d);
            peers.push(p);
        }
        let topo = Topology::new(members, detectors, peers, state);
        // Anti-entropy's trees, kept by the applier (only where there can
        // be replicas to compare with).
        let clusterable = ctx.is_some();
        let merkle = clusterable.then(|| store::Merkle::new(home_fn(&topo)));
        let store = if cfg.inline_io {
            Store::open_inline(db, clusterable, merkle)
        } else {
            Store::open(db, cfg.apply_capacity, clusterable, merkle)
        };
        let hint_writer = hints.clone().map(|h| {
            if cfg.inline_io {
                hints::HintWriter::inline(h, cfg.wall_clock.clone())
            } else {
                hints::HintWriter::start(h, cfg.wall_clock.clone())
            }
        });
        let my_id = member_id(&cfg.advertise);
        let fence = fence::FenceState::default();
        if ctx.is_none() {
            // No peers, now or ever: nobody to ask, nothing to fence.
            fence.checked();
        }
        Ok(Cluster {
            inner: Arc::new(Inner {
                cfg,
                me: 0,
                my_id,
                topo: parking_lot::RwLock::new(Arc::new(topo)),
                ctx,
                hlc,
                store,
                hints,
                hint_writer,
                stats: Stats::default(),
                reaper_stats: ReaperStats::default(),
                anti_entropy: Default::default(),
                ae_lock: tokio::sync::Mutex::new(()),
                rebalance: Default::default(),
                layout_lock: tokio::sync::Mutex::new(()),
                fence,
                observer,
                closed: AtomicBool::new(false),
            }),
        })
    }

    /// Start heartbeats, hint delivery and the tombstone reaper (inside a
    /// tokio runtime).
    pub fn start(&self) {
        let inner = self.inner.clone();
        tokio::spawn(async move { inner.reaper_loop().await });
        if !self.inner.cfg.inline_io {
            tokio::spawn(scrub::run(self.inner.clone()));
        }
        if self.inner.store.merkle().is_some() {
            // Build the Merkle trees once (a scan of the store), then keep
            // them current; exchanges wait until they are ready.
            self.inner.spawn_tree_build(false);
            let inner = self.inner.clone();
            tokio::spawn(async move { inner.quarantine_loop().await });
            let inner = self.inner.clone();
            tokio::spawn(async move { inner.anti_entropy_loop().await });
        }
        let t = self.inner.topo();
        for (i, p) in t.peers.iter().enumerate() {
            if p.is_some() {
                self.inner.clone().watch_peer(i);
            }
        }
        // A change this node was part of when it stopped goes on.
        self.inner.clone().resume_layout();
        if self.inner.ctx.is_some() {
            tokio::spawn(self.inner.clone().fence_loop());
        }
    }

    /// Wait until this node has asked the other members for their layout
    /// after its start (at most a few seconds), before `replication` or
    /// `may_serve`.
    pub async fn ready(&self) {
        self.inner.fence_ready().await
    }

    /// `Ok` when this node may coordinate client requests: not removed
    /// while away, and its first layout check with the others done.
    pub fn may_serve(&self) -> Result<()> {
        self.inner.fence()
    }

    /// Why this node refuses to serve, if it was removed from the cluster
    /// while away.
    pub fn removed(&self) -> Option<String> {
        self.inner.removed()
    }

    /// Members of the current layout.
    pub fn size(&self) -> usize {
        self.inner.topo().current.len()
    }

    pub fn replication_factor(&self) -> usize {
        self.inner.topo().replication()
    }

    /// The layout this node holds now.
    pub fn layout(&self) -> LayoutState {
        self.inner.topo().state.clone()
    }

    /// The local engine (for stats and shutdown).
    pub fn local(&self) -> &Arc<Db> {
        self.inner.store.db()
    }

    pub fn stats(&self) -> &Stats {
        &self.inner.stats
    }

    /// Writes waiting on this node's applier and its WAL.
    pub fn writers_waiting(&self) -> usize {
        self.inner.store.writers_waiting()
    }

    pub fn reaper_stats(&self) -> &ReaperStats {
        &self.inner.reaper_stats
    }

    pub fn anti_entropy_stats(&self) -> &antientropy::AntiEntropyStats {
        &self.inner.anti_entropy
    }

    /// Compare every home set this node belongs to with each of its other
    /// members now and exchange what differs (`strata cluster repair`).
    /// Waits for a scheduled round in progress. Empty for a cluster of one.
    pub async fn repair_now(&self) -> Vec<Exchange> {
        if self.inner.store.merkle().is_none() {
            return Vec::new();
        }
        self.inner.anti_entropy_round(true).await
    }

    pub fn hlc(&self) -> &Hlc {
        &self.inner.hlc
    }

    /// This node's advertised URL.
    pub fn advertise(&self) -> &str {
        &self.inner.cfg.advertise
    }

    /// Resolve `ack`/`from` against the cluster: defaults are `from` = the
    /// replication factor and `ack` = `from / 2 + 1`.
    pub fn replication(&self, ack: Option<usize>, from: Option<usize>) -> Result<Replication> {
        let t = self.inner.topo();
        if t.current.is_empty() {
            return Err(ClusterError::NotMember);
        }
        self.inner.fence()?;
        let size = t.max_from();
        let from = from.unwrap_or(t.replication());
        let ack = ack.unwrap_or(from / 2 + 1);
        if from < 1 || ack < 1 {
            return Err(ClusterError::BadReplication(
                "ack and from must be at least 1".into(),
            ));
        }
        if ack > from {
            return Err(ClusterError::BadReplication(format!(
                "ack={ack} is more than from={from}"
            )));
        }
        if from > size {
            return Err(ClusterError::BadReplication(format!(
                "from={from} is more than the cluster's {size} node(s)"
            )));
        }
        Ok(Replication { ack, from })
    }

    /// Read a key: the newest version among `ack` replicas (read repair
    /// brings stale replicas level first). `id` is the request id.
    pub async fn get(&self, id: u64, key: &[u8], r: Replication) -> Result<Option<Bytes>> {
        self.get_traced(id, key, r).await.0
    }

    /// `get`, and where its time went (the critical path).
    pub async fn get_traced(
        &self,
        id: u64,
        key: &[u8],
        r: Replication,
    ) -> (Result<Option<Bytes>>, trace::Trace) {
        let mut t = trace::Trace::default();
        let r = self
            .inner
            .clone()
            .read(id, Bytes::copy_from_slice(key), r, &mut t)
            .await;
        (r, t)
    }

    /// Write a value; returns once `ack` replicas hold it durably.
    pub async fn put(&self, id: u64, key: Bytes, value: Bytes, r: Replication) -> Result<()> {
        self.write_traced(id, key, Some(value), r).await.0
    }

    /// Write a tombstone; returns once `ack` replicas hold it durably.
    pub async fn delete(&self, id: u64, key: Bytes, r: Replication) -> Result<()> {
        self.write_traced(id, key, None, r).await.0
    }

    /// A write (`None`: a tombstone), and where its time went (the
    /// critical path of its last attempt).
    pub async fn write_traced(
        &self,
        id: u64,
        key: Bytes,
        value: Option<Bytes>,
        r: Replication,
    ) -> (Result<()>, trace::Trace) {
        let mut t = trace::Trace::default();
        let r = self.inner.clone().write(id, key, value, r, &mut t).await;
        (r, t)
    }

    /// Live entries with `start <= key < end` on this node, streaming.
    pub fn scan(&self, start: &[u8], end: Option<&[u8]>) -> Result<scan::LiveIter> {
        Ok(scan::LiveIter::new(self.inner.store.scan(start, end)?))
    }

    /// Live entries with `start <= key < end` across the cluster, merged
    /// (newest version per key, tombstones hidden), through a bounded
    /// channel.
    pub fn scan_cluster(&self, start: Bytes, end: Option<Bytes>) -> scan::ClusterScan {
        scan::ClusterScan::start(self.inner.clone(), start, end)
    }

    /// Check the token on an internal upgrade request.
    pub fn check_upgrade(&self, from: &str, token: &str) -> bool {
        let from = normalize_url(from);
        // Any holder of the secret: a node about to join is not in the
        // layout yet, and the secret is what admits it.
        self.inner
            .cfg
            .secret
            .as_ref()
            .is_some_and(|s| s.check_upgrade_token(from, token))
    }

    /// This node's URL and a fresh token for its upgrade requests.
    pub fn upgrade_token(&self) -> Option<(String, String)> {
        let s = self.inner.cfg.secret.as_ref()?;
        Some((
            self.inner.cfg.advertise.clone(),
            s.upgrade_token(&self.inner.cfg.advertise),
        ))
    }

    /// Serve an internal connection handed over by the node (after its
    /// upgrade) until it closes.
    pub async fn serve_peer(&self, stream: BoxStream) -> std::result::Result<(), String> {
        let secret = self
            .inner
            .cfg
            .secret
            .clone()
            .ok_or("this node has no cluster secret")?;
        transport::serve(stream, &secret, self.inner.hlc.clone(), self.inner.clone()).await
    }

    /// This node's view: every member, its state, when it was last heard
    /// from, the hints waiting for it.
    pub fn view(&self) -> ClusterView {
        let now = Instant::now();
        let i = &self.inner;
        let t = i.topo();
        let live = t.state.all_members();
        ClusterView {
            node: i.cfg.advertise.clone(),
            replication: t.replication(),
            members: t
                .members
                .iter()
                .enumerate()
                .filter(|(_, m)| m.is_self || live.contains(&m.url))
                .map(|(n, m)| MemberView {
                    url: m.url.clone(),
                    id: m.id,
                    is_self: m.is_self,
                    state: if m.is_self {
                        State::Up
                    } else {
                        t.detectors[n].state(now)
                    },
                    last_heard: if m.is_self {
                        None
                    } else {
                        t.detectors[n]
                            .last_heard()
                            .map(|x| now.saturating_duration_since(x))
                    },
                    hints: i.hints.as_ref().map(|h| h.stats(m.id)).unwrap_or_default(),
                    connections: t.peers[n].as_ref().map_or(0, |p| p.open_connections()),
                })
                .collect(),
            ranges: self.ranges(),
            layout: t.state.clone(),
            stream: i.rebalance.stream.lock().clone(),
            change: i.rebalance.change.lock().clone(),
        }
    }

    fn ranges(&self) -> Vec<RangeView> {
        let i = &self.inner;
        let Some(m) = i.store.merkle() else {
            return Vec::new();
        };
        let t = i.topo();
        let sets = i.my_home_sets();
        let (ready, counts): (bool, Vec<u64>) = {
            let st = m.state.lock();
            (
                st.ready,
                sets.iter().map(|s| st.trees.keys(s.name)).collect(),
            )
        };
        let now_ms = i.hlc.wall_ms();
        let synced = i.anti_entropy.synced.lock();
        sets.into_iter()
            .zip(counts)
            .map(|(hs, keys)| RangeView {
                set: hs.name,
                members: hs
                    .members
                    .iter()
                    .map(|&n| t.members[n].url.clone())
                    .collect(),
                keys,
                ready,
                synced: hs
                    .members
                    .iter()
                    .filter(|&&n| n != i.me)
                    .map(|&n| {
                        let r = synced.get(&(hs.name, n));
                        (
                            t.members[n].url.clone(),
                            r.map(|r| Duration::from_millis(now_ms.saturating_sub(r.at_ms))),
                            r.map(|r| r.last.clone()),
                        )
                    })
                    .collect(),
            })
            .collect()
    }

    /// Stop background work and close the hint store (the caller closes
    /// the engine).
    pub async fn close(&self) -> Result<()> {
        self.inner.closed.store(true, Ordering::Release);
        for p in self.inner.topo().peers.iter().flatten() {
            p.close().await;
        }
        if let Some(h) = &self.inner.hints {
            h.close()?;
        }
        Ok(())
    }
}

/// A layout's own rules: distinct members, a replication factor they can
/// hold.
fn check_layout(s: &LayoutState) -> std::result::Result<(), String> {
    if s.version == 0 {
        return Ok(());
    }
    for list in std::iter::once(&s.members).chain(s.previous.iter()) {
        let mut ids: Vec<u64> = list.iter().map(|u| member_id(u)).collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != list.len() {
            return Err("the cluster list names a member twice".into());
        }
        if s.replication < 1 || s.replication > list.len() {
            return Err(format!(
                "replication factor {} must be between 1 and the cluster's {} member(s)",
                s.replication,
                list.len()
            ));
        }
    }
    Ok(())
}

/// A roster entry: the member, its failure detector, its connections.
fn new_member(
    url: &str,
    me: &str,
    ctx: Option<&Arc<Ctx>>,
) -> (Member, Arc<Detector>, Option<Arc<Peer>>) {
    let id = member_id(url);
    let is_self = url == me;
    let d = Arc::new(Detector::default());
    let peer = match (is_self, ctx) {
        (false, Some(ctx)) => {
            let heard = d.clone();
            Some(Arc::new(Peer::new(
                url.to_string(),
                id,
                ctx.clone(),
                Arc::new(move || heard.heard(Instant::now())),
            )))
        }
        _ => None,
    };
    (
        Member {
            url: url.to_string(),
            id,
            is_self,
        },
        d,
        peer,
    )
}

/// The home set of each key under a topology's current layout.
fn home_fn(t: &Topology) -> store::HomeOf {
    let ids: Vec<u64> = t.current.members.iter().map(|&m| t.members[m].id).collect();
    let p = Placement::new(ids.clone());
    let rf = t.replication();
    Arc::new(move |k: &[u8]| {
        if ids.is_empty() {
            0
        } else {
            antientropy::home_name(&p, &ids, rf, k)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn replication_rules_for_a_single_node() {
        let d = tempfile::tempdir().unwrap();
        let db = Arc::new(Db::open(d.path(), Default::default()).unwrap());
        let c = Cluster::single(db);
        assert_eq!(
            c.replication(None, None).unwrap(),
            Replication { ack: 1, from: 1 }
        );
        for (a, f) in [
            (Some(0), None),
            (None, Some(0)),
            (Some(2), Some(1)),
            (Some(1), Some(2)),
            (None, Some(2)),
        ] {
            assert!(
                matches!(c.replication(a, f), Err(ClusterError::BadReplication(_))),
                "{a:?} {f:?}"
            );
        }
        let r = c.replication(None, None).unwrap();
        c.put(1, Bytes::from_static(b"k"), Bytes::from_static(b"v"), r)
            .await
            .unwrap();
        assert_eq!(c.get(2, b"k", r).await.unwrap().unwrap(), "v".as_bytes());
        c.delete(3, Bytes::from_static(b"k"), r).await.unwrap();
        assert!(c.get(4, b"k", r).await.unwrap().is_none());
        c.put(5, Bytes::from_static(b"a"), Bytes::from_static(b"1"), r)
            .await
            .unwrap();
        c.put(6, Bytes::from_static(b"b"), Bytes::from_static(b"2"), r)
            .await
            .unwrap();
        let keys: Vec<_> = c
            .scan(b"a", Some(b"c"))
            .unwrap()
            .map(|x| x.unwrap().0)
            .collect();
        assert_eq!(keys, [Bytes::from_static(b"a"), Bytes::from_static(b"b")]);
        // The deleted key is a tombstone on disk, hidden from scans.
        assert!(c.scan(b"k", None).unwrap().next().is_none());
    }
}
