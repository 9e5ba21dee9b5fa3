//! The door: `Cluster`, what the node calls. Opening and starting the
//! cluster layer, a client's reads, writes and scans (handed to the
//! coordinator), the layout and membership operations (the rebalance's),
//! the views and counters the node reports. Owns that surface; must not
//! know HTTP (the node hands it upgraded connections and a `Dialer`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use strata_engine::Db;
use tokio::time::Instant;

use crate::antientropy::{self, Exchange};
use crate::config::ClusterConfig;
use crate::error::{ClusterError, Result};
use crate::hints::Hints;
use crate::hlc::Hlc;
use crate::layout::LayoutState;
use crate::membership::State;
use crate::ops::{Observer, Replication, Stats};
use crate::parts::Parts;
use crate::reaper::ReaperStats;
use crate::record::WriteId;
use crate::shared::Shared;
use crate::shared::{check_layout, home_fn, new_member};
use crate::snapshot::{MemberSnapshot, RangeSnapshot, Snapshot};
use crate::store::Store;
use crate::topology::Topology;
use crate::transport::Ctx;
use crate::transport::{self, BoxStream, Dialer};
use crate::{hints, scan, scrub, store, trace};
use strata_api::placement::{member_id, normalize_url};

/// The cluster as seen from one node.
pub struct Cluster {
    pub(crate) parts: Arc<Parts>,
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
            Store::open_inline(db, !clusterable, merkle)
        } else {
            Store::open(db, cfg.apply_capacity, !clusterable, merkle)
        };
        let hint_writer = hints.clone().map(|h| {
            if cfg.inline_io {
                hints::HintWriter::inline(h, cfg.wall_clock.clone())
            } else {
                hints::HintWriter::start(h, cfg.wall_clock.clone())
            }
        });
        let my_id = member_id(&cfg.advertise);
        let shared = Arc::new(Shared {
            cfg,
            me: 0,
            my_id,
            topo: parking_lot::RwLock::new(Arc::new(topo)),
            ctx,
            hlc,
            store,
            hints,
            hint_writer,
            observer,
            closed: AtomicBool::new(false),
        });
        Ok(Cluster {
            parts: Arc::new(Parts::new(shared)),
        })
    }

    /// Start heartbeats, hint delivery and the tombstone reaper (inside a
    /// tokio runtime).
    pub fn start(&self) {
        let p = &self.parts;
        tokio::spawn(p.reaper.clone().run());
        if !p.shared.cfg.inline_io {
            tokio::spawn(scrub::run(p.shared.clone()));
        }
        if p.shared.store.merkle().is_some() {
            // Build the Merkle trees once (a scan of the store), then keep
            // them current; exchanges wait until they are ready.
            p.rounds.spawn_tree_build(false);
            tokio::spawn(p.rounds.clone().quarantine_loop());
            tokio::spawn(p.rounds.clone().run());
        }
        let t = p.shared.topo();
        for (i, peer) in t.peers.iter().enumerate() {
            if peer.is_some() {
                p.rebalance.watch_peer(i);
            }
        }
        // A change this node was part of when it stopped goes on.
        p.rebalance.clone().resume_layout();
        if p.shared.ctx.is_some() {
            tokio::spawn(p.fence.clone().run());
        }
    }

    /// Wait until this node has asked the other members for their layout
    /// after its start (at most a few seconds), before `replication` or
    /// `may_serve`.
    pub async fn ready(&self) {
        self.parts.fence.ready().await
    }

    /// `Ok` when this node may coordinate client requests: not removed
    /// while away, and its first layout check with the others done.
    pub fn may_serve(&self) -> Result<()> {
        self.parts.fence.check()
    }

    /// Why this node refuses to serve, if it was removed from the cluster
    /// while away.
    pub fn removed(&self) -> Option<String> {
        self.parts.fence.removed()
    }

    /// Members of the current layout.
    pub fn size(&self) -> usize {
        self.parts.shared.topo().current.len()
    }

    pub fn replication_factor(&self) -> usize {
        self.parts.shared.topo().replication()
    }

    /// The layout this node holds now.
    pub fn layout(&self) -> LayoutState {
        self.parts.shared.topo().state.clone()
    }

    /// The local engine (for stats and shutdown).
    pub fn local(&self) -> &Arc<Db> {
        self.parts.shared.store.db()
    }

    pub fn stats(&self) -> &Stats {
        &self.parts.coord.stats
    }

    /// Writes waiting on this node's applier and its WAL.
    pub fn writers_waiting(&self) -> usize {
        self.parts.shared.store.writers_waiting()
    }

    pub fn reaper_stats(&self) -> &ReaperStats {
        &self.parts.reaper.stats
    }

    pub fn anti_entropy_stats(&self) -> &antientropy::AntiEntropyStats {
        &self.parts.ae.stats
    }

    /// Compare every home set this node belongs to with each of its other
    /// members now and exchange what differs (`strata cluster repair`).
    /// Waits for a scheduled round in progress. Empty for a cluster of one.
    pub async fn repair_now(&self) -> Vec<Exchange> {
        if self.parts.shared.store.merkle().is_none() {
            return Vec::new();
        }
        self.parts.rounds.round(true).await
    }

    pub fn hlc(&self) -> &Hlc {
        &self.parts.shared.hlc
    }

    /// This node's advertised URL.
    pub fn advertise(&self) -> &str {
        &self.parts.shared.cfg.advertise
    }

    /// Resolve `ack`/`from` against the cluster: defaults are `from` = the
    /// replication factor and `ack` = `from / 2 + 1`.
    pub fn replication(&self, ack: Option<usize>, from: Option<usize>) -> Result<Replication> {
        let t = self.parts.shared.topo();
        if t.current.is_empty() {
            return Err(ClusterError::NotMember);
        }
        self.parts.fence.check()?;
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
            .parts
            .coord
            .clone()
            .read(id, Bytes::copy_from_slice(key), r, &mut t)
            .await;
        (r, t)
    }

    /// Write a value; returns once `ack` replicas hold it durably.
    pub async fn put(&self, id: u64, key: Bytes, value: Bytes, r: Replication) -> Result<()> {
        self.write_traced(id, (key, None), Some(value), r).await.0
    }

    /// Write a tombstone; returns once `ack` replicas hold it durably.
    pub async fn delete(&self, id: u64, key: Bytes, r: Replication) -> Result<()> {
        self.write_traced(id, (key, None), None, r).await.0
    }

    /// A write (`None`: a tombstone), and where its time went (the
    /// critical path of its last attempt).
    /// `wid` names the write when its client may send it again
    /// (`record::WriteId`).
    pub async fn write_traced(
        &self,
        id: u64,
        key: (Bytes, Option<WriteId>),
        value: Option<Bytes>,
        r: Replication,
    ) -> (Result<()>, trace::Trace) {
        let mut t = trace::Trace::default();
        let r = self
            .parts
            .coord
            .clone()
            .write(id, key, value, r, &mut t)
            .await;
        (r, t)
    }

    /// Live entries with `start <= key < end` on this node, streaming.
    pub fn scan(&self, start: &[u8], end: Option<&[u8]>) -> Result<scan::LiveIter> {
        Ok(scan::LiveIter::new(
            self.parts.shared.store.scan(start, end)?,
        ))
    }

    /// Live entries with `start <= key < end` across the cluster, merged
    /// (newest version per key, tombstones hidden), through a bounded
    /// channel.
    pub fn scan_cluster(&self, start: Bytes, end: Option<Bytes>) -> scan::ClusterScan {
        scan::ClusterScan::start(self.parts.shared.clone(), start, end)
    }

    /// Check the token on an internal upgrade request.
    pub fn check_upgrade(&self, from: &str, token: &str) -> bool {
        let from = normalize_url(from);
        // Any holder of the secret: a node about to join is not in the
        // layout yet, and the secret is what admits it.
        self.parts
            .shared
            .cfg
            .secret
            .as_ref()
            .is_some_and(|s| s.check_upgrade_token(from, token))
    }

    /// This node's URL and a fresh token for its upgrade requests.
    pub fn upgrade_token(&self) -> Option<(String, String)> {
        let s = self.parts.shared.cfg.secret.as_ref()?;
        Some((
            self.parts.shared.cfg.advertise.clone(),
            s.upgrade_token(&self.parts.shared.cfg.advertise),
        ))
    }

    /// Serve an internal connection handed over by the node (after its
    /// upgrade) until it closes.
    pub async fn serve_peer(&self, stream: BoxStream) -> std::result::Result<(), String> {
        let secret = self
            .parts
            .shared
            .cfg
            .secret
            .clone()
            .ok_or("this node has no cluster secret")?;
        transport::serve(
            stream,
            &secret,
            self.parts.shared.hlc.clone(),
            self.parts.clone(),
        )
        .await
    }

    /// This node's view: every member, its state, when it was last heard
    /// from, the hints waiting for it.
    pub fn snapshot(&self) -> Snapshot {
        let now = Instant::now();
        let i = &self.parts.shared;
        let t = i.topo();
        let live = t.state.all_members();
        Snapshot {
            node: i.cfg.advertise.clone(),
            replication: t.replication(),
            members: t
                .members
                .iter()
                .enumerate()
                .filter(|(_, m)| m.is_self || live.contains(&m.url))
                .map(|(n, m)| MemberSnapshot {
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
            stream: self.parts.rebalance.state.stream.lock().clone(),
            change: self.parts.rebalance.state.change.lock().clone(),
        }
    }

    fn ranges(&self) -> Vec<RangeSnapshot> {
        let i = &self.parts.shared;
        let Some(m) = i.store.merkle() else {
            return Vec::new();
        };
        let t = i.topo();
        let sets = self.parts.rounds.my_home_sets();
        let (ready, counts): (bool, Vec<u64>) = {
            let st = m.state.lock();
            (
                st.ready,
                sets.iter().map(|s| st.trees.keys(s.name)).collect(),
            )
        };
        let now_ms = i.hlc.wall_ms();
        let synced = self.parts.ae.stats.synced.lock();
        sets.into_iter()
            .zip(counts)
            .map(|(hs, keys)| RangeSnapshot {
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
        self.parts.shared.closed.store(true, Ordering::Release);
        for p in self.parts.shared.topo().peers.iter().flatten() {
            p.close().await;
        }
        if let Some(h) = &self.parts.shared.hints {
            h.close()?;
        }
        Ok(())
    }

    /// Add this node (started with a seed, its store empty) to the
    /// seed's cluster. Returns the target layout once the change is under
    /// way; `view().change` follows it.
    pub async fn join(&self) -> std::result::Result<LayoutState, String> {
        self.parts.rebalance.join().await
    }

    /// Take this node out of the cluster: its keys move to the members
    /// that gain them. It goes on serving until stopped.
    pub async fn leave(&self) -> std::result::Result<LayoutState, String> {
        self.parts.rebalance.leave().await
    }

    /// Take `url` out of the cluster. This node itself, or a member the
    /// failure detector holds down (its disk gone, its machine dead):
    /// then the change skips it, and the other replicas of its keys
    /// stream them. A member that is up must leave itself (it holds
    /// writes the others may lack, and would go on serving under the old
    /// layout).
    pub async fn remove_member(&self, url: &str) -> std::result::Result<LayoutState, String> {
        self.parts.rebalance.remove_member(url).await
    }
}
