//! The cluster layer between the node's HTTP API and the engine: members
//! and their failure detection (`membership`), placement of keys by
//! rendezvous hashing (`placement`), versions from a hybrid logical clock
//! (`hlc`, `record`), the local replica (`store`), the coordinator of
//! quorum reads and writes with read repair (`coordinator`), hinted handoff
//! (`hints`), tombstones dropped once every replica agrees (`reaper`),
//! merged cluster-wide ranges (`scan`), and internal traffic
//! (`wire`, `transport`, `auth`). A node without peers is a cluster of one
//! and takes the same path. Must not know about HTTP: the node hands it
//! upgraded connections and a `Dialer`.

pub mod antientropy;
pub mod auth;
mod coordinator;
pub mod hints;
pub mod hlc;
pub mod membership;
pub mod merkle;
pub mod placement;
mod reaper;
pub mod record;
pub mod scan;
pub mod store;
pub mod transport;
pub mod wire;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use strata_engine::Db;
use tokio::time::Instant;

pub use antientropy::{AntiEntropyConfig, Exchange};
pub use auth::Secret;
pub use hints::{HintsConfig, PeerHints};
pub use hlc::WallClock;
pub use membership::State;
pub use reaper::{ReaperConfig, ReaperStats};
pub use store::Outcome;
pub use transport::{BoxStream, DialFuture, Dialer, TransportConfig};

use hints::Hints;
use hlc::Hlc;
use membership::{Detector, Member};
use placement::Placement;
use store::Store;
use transport::{Ctx, Peer};

/// How many replicas a request goes to (`from`) and how many must answer
/// (`ack`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replication {
    pub ack: usize,
    pub from: usize,
}

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// `ack`/`from` out of range; the node answers 400.
    #[error("{0}")]
    BadReplication(String),
    /// Fewer than `ack` replicas answered in time; the node answers 504.
    #[error("not enough replicas: got {got} of {need}")]
    NotEnoughReplicas { got: usize, need: usize },
    /// The store refused for now (write stall); the node answers 503.
    #[error("busy: {0}")]
    Busy(String),
    /// The store is closed (shutting down); the node answers 503.
    #[error("store is closed")]
    Closed,
    #[error("storage error: {0}")]
    Storage(strata_engine::Error),
    /// A failure shared by every write of a failed group (already logged).
    #[error("storage error: {0}")]
    Failed(String),
}

impl ClusterError {
    /// The error as an answer to a peer (`transient`: busy or closing).
    pub(crate) fn into_response(self) -> wire::Response {
        wire::Response::Error {
            transient: matches!(self, ClusterError::Busy(_) | ClusterError::Closed),
            message: self.to_string(),
        }
    }

    /// The same error for another member of a failed group.
    pub fn share(&self) -> ClusterError {
        match self {
            ClusterError::BadReplication(m) => ClusterError::BadReplication(m.clone()),
            ClusterError::NotEnoughReplicas { got, need } => ClusterError::NotEnoughReplicas {
                got: *got,
                need: *need,
            },
            ClusterError::Busy(m) => ClusterError::Busy(m.clone()),
            ClusterError::Closed => ClusterError::Closed,
            ClusterError::Storage(e) => ClusterError::Failed(e.to_string()),
            ClusterError::Failed(m) => ClusterError::Failed(m.clone()),
        }
    }
}

impl From<strata_engine::Error> for ClusterError {
    fn from(e: strata_engine::Error) -> Self {
        match e {
            strata_engine::Error::Busy(m) => ClusterError::Busy(m),
            strata_engine::Error::Closed => ClusterError::Closed,
            e => ClusterError::Storage(e),
        }
    }
}

pub type Result<T> = std::result::Result<T, ClusterError>;

/// A member's id: a hash of its advertised URL (seeds its placement
/// scores and breaks version ties).
pub fn member_id(url: &str) -> u64 {
    xxhash_rust::xxh3::xxh3_64(normalize_url(url).as_bytes())
}

/// URLs compare without a trailing slash.
pub fn normalize_url(url: &str) -> &str {
    url.trim().trim_end_matches('/')
}

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

#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// Every member's advertised URL, this node's included. Empty: a
    /// cluster of one.
    pub members: Vec<String>,
    /// This node's entry in `members`.
    pub advertise: String,
    /// Replicas per key; default `min(3, members)`.
    pub replication: Option<usize>,
    /// Required when there is more than one member.
    pub secret: Option<Secret>,
    /// Time a coordinator waits for `ack` answers before it answers 504.
    pub timeout: Duration,
    pub hints: HintsConfig,
    pub transport: TransportConfig,
    /// Writes waiting for the local applier at most.
    pub apply_capacity: usize,
    /// Test only: shift this node's clock.
    pub clock_offset_ms: i64,
    /// How far ahead of our own clock a peer's timestamp is followed.
    pub max_clock_ahead_ms: u64,
    /// Test only, deliberately wrong: stamp writes with the bare wall clock
    /// and ignore newer versions held by replicas (last write wins on wall
    /// clocks, as the stores Jepsen broke). Exists to prove the
    /// consistency checker catches it.
    pub unsafe_wall_clock: bool,
    /// Where hints live (`DATA/hints`).
    pub hints_dir: PathBuf,
    /// Engine options for the hint store.
    pub hints_engine: strata_engine::Options,
    /// When tombstones may be dropped.
    pub reaper: ReaperConfig,
    /// When and how fast replicas compare their Merkle trees.
    pub anti_entropy: AntiEntropyConfig,
    /// The wall clock behind versions and hint ages (default: the
    /// system's). A deterministic simulation passes its simulated time.
    pub wall_clock: WallClock,
    /// Simulation only: apply writes, keep hints and read them back on the
    /// calling task instead of the applier thread, the hint writer thread
    /// and tokio's blocking pool (one write per engine commit, no group
    /// commit). Under a deterministic single-threaded runtime (the turmoil
    /// simulation) a node's work is then a function of its inputs; in
    /// production it would block the runtime on every fsync.
    #[doc(hidden)]
    pub inline_io: bool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            members: Vec::new(),
            advertise: "http://127.0.0.1:8080".into(),
            replication: None,
            secret: None,
            timeout: Duration::from_millis(1000),
            hints: HintsConfig::default(),
            transport: TransportConfig::default(),
            apply_capacity: 1024,
            clock_offset_ms: 0,
            max_clock_ahead_ms: 60_000,
            unsafe_wall_clock: false,
            hints_dir: PathBuf::from("strata-data/hints"),
            hints_engine: Default::default(),
            reaper: ReaperConfig::default(),
            anti_entropy: AntiEntropyConfig::default(),
            wall_clock: WallClock::system(),
            inline_io: false,
        }
    }
}

/// Counters of the coordinator's work.
#[derive(Debug, Default)]
pub struct Stats {
    pub not_enough_replicas: AtomicU64,
    pub read_repairs: AtomicU64,
    pub superseded_retries: AtomicU64,
}

/// One member as this node sees it.
#[derive(Clone, Debug)]
pub struct MemberView {
    pub url: String,
    pub id: u64,
    pub is_self: bool,
    pub state: State,
    pub last_heard: Option<Duration>,
    pub hints: PeerHints,
    pub connections: usize,
}

#[derive(Clone, Debug)]
pub struct ClusterView {
    pub node: String,
    pub replication: usize,
    pub members: Vec<MemberView>,
    /// The home sets this node belongs to (anti-entropy's ranges: the
    /// keys whose replicas are exactly these members); empty for a
    /// cluster of one.
    pub ranges: Vec<RangeView>,
}

/// One home set as this node sees it.
#[derive(Clone, Debug)]
pub struct RangeView {
    /// Its name (a hash of its members' ids).
    pub set: u64,
    pub members: Vec<String>,
    /// Records this node counts in the set's tree, and whether the tree
    /// is built.
    pub keys: u64,
    pub ready: bool,
    /// Per other member: how long ago the last exchange with it
    /// completed (`None`: never, since this node started), and what it
    /// did.
    pub synced: Vec<(String, Option<Duration>, Option<Exchange>)>,
}

/// The cluster as seen from one node.
pub struct Cluster {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    cfg: ClusterConfig,
    me: usize,
    my_id: u64,
    members: Vec<Member>,
    detectors: Vec<Arc<Detector>>,
    placement: Placement,
    hlc: Arc<Hlc>,
    store: Store,
    /// `None` at this node's own index.
    peers: Vec<Option<Peer>>,
    hints: Option<Arc<Hints>>,
    hint_writer: Option<hints::HintWriter>,
    stats: Stats,
    reaper_stats: ReaperStats,
    anti_entropy: antientropy::AntiEntropyStats,
    /// One anti-entropy round at a time.
    ae_lock: tokio::sync::Mutex<()>,
    observer: Option<Arc<dyn Observer>>,
    rf: usize,
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
        if cfg.members.is_empty() {
            cfg.members = vec![cfg.advertise.clone()];
        }
        let urls: Vec<String> = cfg
            .members
            .iter()
            .map(|u| normalize_url(u).to_string())
            .collect();
        let me = urls
            .iter()
            .position(|u| *u == cfg.advertise)
            .ok_or_else(|| {
                format!(
                "this node's URL {} is not in the cluster list ({}); set --advertise to its entry",
                cfg.advertise,
                urls.join(",")
            )
            })?;
        let mut ids: Vec<u64> = urls.iter().map(|u| member_id(u)).collect();
        {
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            sorted.dedup();
            if sorted.len() != ids.len() {
                return Err("the cluster list names a member twice".into());
            }
        }
        let size = urls.len();
        let rf = cfg.replication.unwrap_or(size.min(3));
        if rf < 1 || rf > size {
            return Err(format!(
                "replication factor {rf} must be between 1 and the cluster's {size} member(s)"
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
        let hlc = Arc::new(Hlc::with_clock(
            cfg.clock_offset_ms,
            cfg.max_clock_ahead_ms,
            cfg.wall_clock.clone(),
        ));
        let detectors: Vec<Arc<Detector>> =
            (0..size).map(|_| Arc::new(Detector::default())).collect();
        let mut peers = Vec::with_capacity(size);
        let mut hints = None;
        if size > 1 {
            let secret = cfg.secret.clone().ok_or(
                "a cluster of more than one node needs --cluster-secret or --cluster-secret-file",
            )?;
            let dialer = dialer.ok_or("a cluster of more than one node needs a dialer")?;
            let ctx = Arc::new(Ctx {
                dialer,
                secret,
                my_id: ids[me],
                hlc: hlc.clone(),
                cfg: cfg.transport,
            });
            for (i, u) in urls.iter().enumerate() {
                if i == me {
                    peers.push(None);
                    continue;
                }
                let d = detectors[i].clone();
                peers.push(Some(Peer::new(
                    u.clone(),
                    ids[i],
                    ctx.clone(),
                    Arc::new(move || d.heard(Instant::now())),
                )));
            }
            hints = Some(Arc::new(
                Hints::open(&cfg.hints_dir, cfg.hints_engine.clone(), cfg.hints)
                    .map_err(|e| format!("opening hints in {}: {e}", cfg.hints_dir.display()))?,
            ));
        } else {
            peers.push(None);
        }
        let members = urls
            .iter()
            .enumerate()
            .map(|(i, u)| Member {
                url: u.clone(),
                id: ids[i],
                is_self: i == me,
            })
            .collect();
        // Anti-entropy's trees, kept by the applier (a cluster of one has
        // no replica to compare with).
        let merkle = (size > 1).then(|| {
            let p = Placement::new(ids.clone());
            let named = ids.clone();
            store::Merkle {
                home: Arc::new(move |k: &[u8]| antientropy::home_name(&p, &named, rf, k))
                    as store::HomeOf,
                state: Default::default(),
            }
        });
        let store = if cfg.inline_io {
            Store::open_inline(db, size > 1, merkle)
        } else {
            Store::open(db, cfg.apply_capacity, size > 1, merkle)
        };
        let hint_writer = hints.clone().map(|h| {
            if cfg.inline_io {
                hints::HintWriter::inline(h, cfg.wall_clock.clone())
            } else {
                hints::HintWriter::start(h, cfg.wall_clock.clone())
            }
        });
        let my_id = ids[me];
        let placement = Placement::new(std::mem::take(&mut ids));
        Ok(Cluster {
            inner: Arc::new(Inner {
                cfg,
                me,
                my_id,
                members,
                detectors,
                placement,
                hlc,
                store,
                peers,
                hints,
                hint_writer,
                stats: Stats::default(),
                reaper_stats: ReaperStats::default(),
                anti_entropy: Default::default(),
                ae_lock: tokio::sync::Mutex::new(()),
                observer,
                rf,
                closed: AtomicBool::new(false),
            }),
        })
    }

    /// Start heartbeats, hint delivery and the tombstone reaper (inside a
    /// tokio runtime).
    pub fn start(&self) {
        let inner = self.inner.clone();
        tokio::spawn(async move { inner.reaper_loop().await });
        if self.inner.store.merkle().is_some() {
            // Build the Merkle trees once (a scan of the store), then keep
            // them current; exchanges wait until they are ready.
            let inner = self.inner.clone();
            let build = move || match inner.store.build_trees() {
                Ok(n) => tracing::info!(records = n, "anti-entropy trees built"),
                Err(e) => tracing::warn!(error = %e, "building the anti-entropy trees failed"),
            };
            if self.inner.cfg.inline_io {
                build();
            } else {
                std::thread::Builder::new()
                    .name("strata-trees".into())
                    .spawn(build)
                    .expect("spawn the tree builder");
            }
            let inner = self.inner.clone();
            tokio::spawn(async move { inner.anti_entropy_loop().await });
        }
        for (i, p) in self.inner.peers.iter().enumerate() {
            if p.is_some() {
                let inner = self.inner.clone();
                tokio::spawn(async move { inner.heartbeat_loop(i).await });
                let inner = self.inner.clone();
                tokio::spawn(async move { inner.hint_loop(i).await });
            }
        }
    }

    pub fn size(&self) -> usize {
        self.inner.members.len()
    }

    pub fn replication_factor(&self) -> usize {
        self.inner.rf
    }

    /// The local engine (for stats and shutdown).
    pub fn local(&self) -> &Arc<Db> {
        self.inner.store.db()
    }

    pub fn stats(&self) -> &Stats {
        &self.inner.stats
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
        let size = self.size();
        let from = from.unwrap_or(self.inner.rf);
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
        self.inner
            .clone()
            .read(id, Bytes::copy_from_slice(key), r)
            .await
    }

    /// Write a value; returns once `ack` replicas hold it durably.
    pub async fn put(&self, id: u64, key: Bytes, value: Bytes, r: Replication) -> Result<()> {
        self.inner.clone().write(id, key, Some(value), r).await
    }

    /// Write a tombstone; returns once `ack` replicas hold it durably.
    pub async fn delete(&self, id: u64, key: Bytes, r: Replication) -> Result<()> {
        self.inner.clone().write(id, key, None, r).await
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
        self.inner.cfg.secret.as_ref().is_some_and(|s| {
            self.inner.members.iter().any(|m| m.url == from) && s.check_upgrade_token(from, token)
        })
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
        ClusterView {
            node: i.cfg.advertise.clone(),
            replication: i.rf,
            members: i
                .members
                .iter()
                .enumerate()
                .map(|(n, m)| MemberView {
                    url: m.url.clone(),
                    id: m.id,
                    is_self: m.is_self,
                    state: if m.is_self {
                        State::Up
                    } else {
                        i.detectors[n].state(now)
                    },
                    last_heard: if m.is_self {
                        None
                    } else {
                        i.detectors[n]
                            .last_heard()
                            .map(|t| now.saturating_duration_since(t))
                    },
                    hints: i.hints.as_ref().map(|h| h.stats(m.id)).unwrap_or_default(),
                    connections: i.peers[n].as_ref().map_or(0, |p| p.open_connections()),
                })
                .collect(),
            ranges: self.ranges(),
        }
    }

    fn ranges(&self) -> Vec<RangeView> {
        let i = &self.inner;
        let Some(m) = i.store.merkle() else {
            return Vec::new();
        };
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
                    .map(|&n| i.members[n].url.clone())
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
                            i.members[n].url.clone(),
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
        for p in self.inner.peers.iter().flatten() {
            p.close().await;
        }
        if let Some(h) = &self.inner.hints {
            h.close()?;
        }
        Ok(())
    }
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
