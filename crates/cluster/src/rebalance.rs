//! Nodes joining and leaving: a change of layout (`layout`) driven through
//! its stages by the node that was asked (`strata cluster join` is sent to
//! the joining node, `strata cluster leave` to the leaving one), the
//! stream of exactly the keys whose replicas change, and the cleanup of
//! keys a member no longer holds.
//!
//! The driver sends each stage to every member of both layouts and waits
//! until all have adopted it (a node adopts a stage once the requests it
//! coordinated under the stage before have finished), so no two nodes are
//! ever more than one stage apart:
//!
//! 1. `moving`: writes go to both layouts. Once all nodes are there, no
//!    write can be acknowledged by the old layout alone any more.
//! 2. `syncing`: every member of the old layout scans its store and pushes
//!    each key whose replica set gains members to those members (each old
//!    replica sends its copy, so a gainer ends with the newest of any
//!    write quorum; the receiver keeps the newer version). The driver
//!    waits until every old member has finished.
//! 3. `reading-new`: reads go to the new layout; writes still to both, for
//!    nodes still reading the old one.
//! 4. `stable`: the new layout alone. Then each member drops the keys it
//!    no longer replicates and rebuilds its Merkle trees.
//!
//! One change at a time: a node refuses a layout that conflicts with the
//! one it holds. A driver that stops (its node crashed) leaves the change
//! where it was; the same command sent again resumes it. Owns the change's
//! protocol and the stream; must not decide placement (`layout`) or how a
//! record is applied (`store`).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use crate::antientropy::Rounds;
use crate::coordinator::Coordinator;
use crate::layout::{LayoutState, Stage};
use crate::record::Record;
use crate::shared::new_member;
use crate::shared::Shared;
use crate::shared::LAYOUT_CALL;
use crate::topology::Topology;
use crate::wire::{Request, Response};

/// Records read from the store per step of a scan.
const PAGE: usize = 1024;
/// A push to one gainer carries at most this many records or bytes.
const PUSH_RECORDS: usize = 512;
const PUSH_BYTES: usize = 256 << 10;
/// How long the driver keeps trying a node that does not answer.
const PATIENCE: Duration = Duration::from_secs(60);

pub use crate::layout::StreamStats;

/// A change this node drives.
#[derive(Clone, Debug)]
pub struct ChangeProgress {
    /// The layout the change ends in.
    pub target: LayoutState,
    /// The step under way: a stage, `waiting for the stream`, `cleanup`,
    /// `done`, or `failed`.
    pub step: String,
    pub elapsed: Duration,
    pub done: bool,
    pub error: Option<String>,
    /// What each old member has streamed so far.
    pub streams: Vec<(String, StreamStats)>,
    /// Members removed while down: not sent the change, not waited for
    /// (the other replicas stream their keys).
    pub skipped: Vec<String>,
}

#[derive(Default)]
pub struct RebalanceState {
    pub(crate) stream: parking_lot::Mutex<StreamStats>,
    streaming: AtomicBool,
    pub(crate) change: parking_lot::Mutex<Option<ChangeProgress>>,
    started: parking_lot::Mutex<Option<Instant>>,
}

/// Joining and leaving, as `Cluster::join`, `leave` and `remove_member`
/// ask for them.
impl Rebalance {
    /// Add this node (started with a seed, its store empty) to the
    /// seed's cluster. Returns the target layout once the change is under
    /// way; `view().change` follows it.
    pub(crate) async fn join(self: &Arc<Self>) -> Result<LayoutState, String> {
        let i = self;
        if i.sh.ctx.is_none() {
            return Err("joining needs a cluster secret".into());
        }
        let me = i.sh.cfg.advertise.clone();
        let mine = i.sh.topo().state.clone();
        if mine.version > 0 {
            if mine.stage != Stage::Stable && mine.members.contains(&me) {
                return i.clone().start_change(stable(&mine), Vec::new());
            }
            if mine.members.contains(&me) {
                return Err(format!(
                    "already a member (layout version {})",
                    mine.version
                ));
            }
        }
        let seed =
            i.sh.cfg
                .seed
                .as_deref()
                .map(strata_api::placement::normalize_url)
                .ok_or("this node was started without --seed: it does not know whom to join")?;
        let store = i.sh.store.db().clone();
        let empty =
            i.sh.blocking(move || store.scan(..).map(|mut it| it.next().is_none()))
                .await
                .ok_or("scanning the store failed")?
                .map_err(|e| e.to_string())?;
        if !empty {
            return Err(
                "this node's store is not empty: a node joins with an empty data directory".into(),
            );
        }
        let (theirs, _) = i.layout_of(seed).await?;
        if theirs.version == 0 {
            return Err(format!("{seed} is not a member of a layout either"));
        }
        if theirs.stage != Stage::Stable {
            if theirs.members.contains(&me) {
                return i.clone().start_change(stable(&theirs), Vec::new());
            }
            return Err(format!(
                "the cluster is changing to layout version {}; try again when it is stable",
                theirs.version
            ));
        }
        let mut members = theirs.members.clone();
        members.push(me);
        i.clone().start_change(next(&theirs, members), Vec::new())
    }

    /// Take this node out of the cluster: its keys move to the members
    /// that gain them. It goes on serving until stopped.
    pub(crate) async fn leave(self: &Arc<Self>) -> Result<LayoutState, String> {
        let me = self.sh.cfg.advertise.clone();
        self.remove_member(&me).await
    }

    /// Take `url` out of the cluster. This node itself, or a member the
    /// failure detector holds down (its disk gone, its machine dead):
    /// then the change skips it, and the other replicas of its keys
    /// stream them. A member that is up must leave itself (it holds
    /// writes the others may lack, and would go on serving under the old
    /// layout).
    pub(crate) async fn remove_member(self: &Arc<Self>, url: &str) -> Result<LayoutState, String> {
        let i = self;
        let url = strata_api::placement::normalize_url(url).to_string();
        let me = url == i.sh.cfg.advertise;
        let skip = if me { Vec::new() } else { vec![url.clone()] };
        let mine = i.sh.topo().state.clone();
        if mine.stage != Stage::Stable {
            if mine.previous.as_ref().is_some_and(|p| p.contains(&url))
                && !mine.members.contains(&url)
            {
                return i.clone().start_change(stable(&mine), skip);
            }
            return Err(format!(
                "the cluster is changing to layout version {}; try again when it is stable",
                mine.version
            ));
        }
        if !mine.members.contains(&url) {
            return Err(format!("{url} is not a member of the current layout"));
        }
        if !me {
            let m =
                i.sh.index_of(&url)
                    .ok_or_else(|| format!("{url} is not in this node's roster"))?;
            if !i.sh.is_down(m, Instant::now()) {
                return Err(format!(
                    "{url} is up: send the leave to it (strata cluster leave {url}), so that it streams its keys; only a member that is down is removed through another"
                ));
            }
        }
        let members: Vec<String> = mine
            .members
            .iter()
            .filter(|u| **u != url)
            .cloned()
            .collect();
        if members.len() < mine.replication {
            return Err(format!(
                "{} member(s) would be left for a replication factor of {}",
                members.len(),
                mine.replication
            ));
        }
        i.clone().start_change(next(&mine, members), skip)
    }
}

/// The change from `cur` to `members` (as the driver holds it).
fn next(cur: &LayoutState, members: Vec<String>) -> LayoutState {
    LayoutState {
        version: cur.version + 1,
        replication: cur.replication,
        members,
        previous: Some(cur.members.clone()),
        stage: Stage::Stable,
    }
}

/// The same change at its last stage.
fn stable(s: &LayoutState) -> LayoutState {
    LayoutState {
        stage: Stage::Stable,
        ..s.clone()
    }
}

/// The change at `stage`; at `stable` the old layout is gone.
fn at(s: &LayoutState, stage: Stage) -> LayoutState {
    LayoutState {
        stage,
        previous: if stage == Stage::Stable {
            None
        } else {
            s.previous.clone()
        },
        ..s.clone()
    }
}

/// The rebalance: the change this node drives, the stream of its keys,
/// one layout adopted at a time; new peers watched by the coordinator,
/// trees rebuilt by anti-entropy's schedule.
pub(crate) struct Rebalance {
    sh: Arc<Shared>,
    coord: Arc<Coordinator>,
    rounds: Arc<Rounds>,
    pub(crate) state: RebalanceState,
    /// One layout adopted at a time.
    lock: tokio::sync::Mutex<()>,
}

impl Rebalance {
    pub(crate) fn new(sh: Arc<Shared>, coord: Arc<Coordinator>, rounds: Arc<Rounds>) -> Rebalance {
        Rebalance {
            sh,
            coord,
            rounds,
            state: RebalanceState::default(),
            lock: tokio::sync::Mutex::new(()),
        }
    }

    /// Heartbeats and hint delivery for roster entry `i`.
    pub(crate) fn watch_peer(&self, i: usize) {
        let c = self.coord.clone();
        tokio::spawn(async move { c.heartbeat_loop(i).await });
        let c = self.coord.clone();
        tokio::spawn(async move { c.hint_loop(i).await });
    }

    /// After a restart: go on with this node's part of a change.
    pub(crate) fn resume_layout(self: Arc<Self>) {
        let t = self.sh.topo();
        if t.state.stage == Stage::Syncing
            && t.previous.as_ref().is_some_and(|p| p.contains(self.sh.me))
        {
            self.start_stream(t.state.version);
        }
    }

    /// A member's layout and stream (this node's own without a call).
    pub(crate) async fn layout_of(&self, url: &str) -> Result<(LayoutState, StreamStats), String> {
        if url == self.sh.cfg.advertise {
            return Ok((
                self.sh.topo().state.clone(),
                self.state.stream.lock().clone(),
            ));
        }
        self.sh.layout_call(url, Request::LayoutGet).await
    }

    /// Start driving a change to `target` (its stable form), unless one
    /// is already driven here.
    fn start_change(
        self: Arc<Self>,
        target: LayoutState,
        skip: Vec<String>,
    ) -> Result<LayoutState, String> {
        crate::shared::check_layout(&target)?;
        {
            let mut c = self.state.change.lock();
            if let Some(c) = c.as_ref() {
                if !c.done && c.error.is_none() {
                    if c.target.same_change(&target) {
                        return Ok(target);
                    }
                    return Err(format!(
                        "this node is driving a change to layout version {}",
                        c.target.version
                    ));
                }
            }
            *c = Some(ChangeProgress {
                target: target.clone(),
                step: "starting".into(),
                elapsed: Duration::ZERO,
                done: false,
                error: None,
                streams: Vec::new(),
                skipped: skip.clone(),
            });
            *self.state.started.lock() = Some(Instant::now());
        }
        let s = self.clone();
        let t = target.clone();
        tokio::spawn(async move {
            let r = s.drive(&t, &skip).await;
            s.progress(|c| match r {
                Ok(()) => {
                    c.done = true;
                    c.step = "done".into();
                }
                Err(e) => {
                    tracing::warn!(version = t.version, error = %e, "layout change stopped");
                    c.error = Some(e);
                    c.step = "failed".into();
                }
            });
        });
        Ok(target)
    }

    fn progress(&self, f: impl FnOnce(&mut ChangeProgress)) {
        let started = *self.state.started.lock();
        if let Some(c) = self.state.change.lock().as_mut() {
            f(c);
            if let Some(s) = started {
                c.elapsed = s.elapsed();
            }
        }
    }

    async fn drive(self: &Arc<Self>, target: &LayoutState, skip: &[String]) -> Result<(), String> {
        let live = |urls: Vec<String>| -> Vec<String> {
            urls.into_iter().filter(|u| !skip.contains(u)).collect()
        };
        let all = live(target.all_members());
        let old = live(target.previous.clone().unwrap_or_default());
        tracing::info!(version = target.version, members = ?target.members, "layout change starts");
        for stage in [Stage::Moving, Stage::Syncing] {
            self.progress(|c| c.step = stage.as_str().into());
            self.push_all(&all, &at(target, stage), false).await?;
        }
        self.progress(|c| c.step = "waiting for the stream".into());
        self.wait_streams(&old, target).await?;
        for stage in [Stage::ReadingNew, Stage::Stable] {
            self.progress(|c| c.step = stage.as_str().into());
            self.push_all(&all, &at(target, stage), false).await?;
        }
        self.progress(|c| c.step = "cleanup".into());
        self.push_all(&target.members, &at(target, Stage::Stable), true)
            .await?;
        tracing::info!(version = target.version, "layout change done");
        Ok(())
    }

    /// Send a stage to every node (this one first) until each has it.
    async fn push_all(
        self: &Arc<Self>,
        urls: &[String],
        state: &LayoutState,
        cleanup: bool,
    ) -> Result<(), String> {
        // This node first: adopting extends its roster to every member.
        if urls.contains(&self.sh.cfg.advertise) {
            self.clone().adopt(state.clone(), cleanup).await?;
        }
        let mut set = tokio::task::JoinSet::new();
        for u in urls.iter().filter(|u| **u != self.sh.cfg.advertise) {
            let (s, u, st) = (self.clone(), u.clone(), state.clone());
            set.spawn(async move {
                let end = Instant::now() + PATIENCE;
                loop {
                    let req = Request::Layout {
                        state: st.clone(),
                        cleanup,
                    };
                    match s.sh.layout_call(&u, req).await {
                        Ok((got, _)) if got.rank() >= st.rank() => return Ok(()),
                        Ok((got, _)) => {
                            return Err(format!(
                                "{u} holds layout {} ({}), not {} ({})",
                                got.version,
                                got.stage.as_str(),
                                st.version,
                                st.stage.as_str()
                            ))
                        }
                        Err(e) if Instant::now() >= end => return Err(e),
                        Err(e) if e.contains("conflict") => return Err(e),
                        Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
                    }
                }
            });
        }
        let mut first = None;
        while let Some(r) = set.join_next().await {
            if let Ok(Err(e)) = r {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Wait until every old member has streamed its keys for `target`.
    async fn wait_streams(
        self: &Arc<Self>,
        old: &[String],
        target: &LayoutState,
    ) -> Result<(), String> {
        let mut retries: HashMap<String, usize> = HashMap::new();
        let mut silent_since: HashMap<String, Instant> = HashMap::new();
        loop {
            let mut all_done = true;
            let mut streams = Vec::new();
            for u in old {
                match self.layout_of(u).await {
                    Ok((_, st)) => {
                        silent_since.remove(u);
                        let done = st.version == target.version && st.done;
                        if st.version == target.version && st.error.is_some() {
                            // Start it again (the node restarts a failed
                            // stream on a repeated stage).
                            let n = retries.entry(u.clone()).or_default();
                            *n += 1;
                            if *n > 5 {
                                return Err(format!(
                                    "{u}: streaming failed: {}",
                                    st.error.clone().unwrap_or_default()
                                ));
                            }
                            self.push_all(
                                std::slice::from_ref(u),
                                &at(target, Stage::Syncing),
                                false,
                            )
                            .await?;
                        }
                        all_done &= done;
                        streams.push((u.clone(), st));
                    }
                    Err(e) => {
                        all_done = false;
                        let since = *silent_since.entry(u.clone()).or_insert_with(Instant::now);
                        if since.elapsed() > PATIENCE {
                            return Err(e);
                        }
                        streams.push((u.clone(), StreamStats::default()));
                    }
                }
            }
            self.progress(|c| c.streams = streams);
            if all_done {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Take `new` (a stage of a change, or the same again): swap the
    /// topology, wait for requests under the one before, save it, start
    /// this node's part. Answers the layout held afterwards.
    pub(crate) async fn adopt(
        self: Arc<Self>,
        new: LayoutState,
        cleanup: bool,
    ) -> Result<LayoutState, String> {
        let _one = self.lock.lock().await;
        let old = self.sh.topo();
        let cur = old.state.clone();
        if new.version == cur.version && cur.version > 0 && !new.same_change(&cur) {
            return Err(format!(
                "a conflicting layout: version {} here names other members",
                cur.version
            ));
        }
        if new.rank() < cur.rank() {
            return Ok(cur);
        }
        if new.version > cur.version && cur.stage != Stage::Stable && cur.version > 0 {
            return Err(format!(
                "a conflicting layout: the change to version {} is not finished here",
                cur.version
            ));
        }
        crate::shared::check_layout(&new)?;
        let me = self.sh.me;
        if new.rank() > cur.rank() {
            // The roster grows by the members it did not know.
            let mut members = Vec::new();
            let mut detectors = old.detectors.clone();
            let mut peers = old.peers.clone();
            for m in &old.members {
                members.push(crate::membership::Member {
                    url: m.url.clone(),
                    id: m.id,
                    is_self: m.is_self,
                });
            }
            let mut added = Vec::new();
            for u in new.all_members() {
                if !members.iter().any(|m| m.url == u) {
                    let (m, d, p) = new_member(&u, &self.sh.cfg.advertise, self.sh.ctx.as_ref());
                    if p.is_none() && !m.is_self {
                        return Err("this node has no cluster secret".into());
                    }
                    added.push(members.len());
                    members.push(m);
                    detectors.push(d);
                    peers.push(p);
                }
            }
            let t = Arc::new(Topology::new(members, detectors, peers, new.clone()));
            *self.sh.topo.write() = t.clone();
            for i in added {
                self.clone().watch_peer(i);
            }
            // Nothing may still run under the stage before once this
            // node says it has this one.
            let limit = self.sh.cfg.timeout * (crate::coordinator::MAX_ATTEMPTS as u32 + 2);
            if !old.drained(limit).await {
                tracing::warn!("requests under the previous layout stage still run");
            }
            if let Some(dir) = self.sh.cfg.layout_dir.clone() {
                let s = new.clone();
                self.sh
                    .blocking(move || s.save(&dir))
                    .await
                    .ok_or("saving layout.json failed")??;
            }
            tracing::info!(
                version = new.version,
                stage = new.stage.as_str(),
                "layout adopted"
            );
            if new.stage == Stage::Stable && cur.stage != Stage::Stable {
                self.rebuild_trees(&t);
            }
        }
        let t = self.sh.topo();
        let old_member = t.previous.as_ref().is_some_and(|p| p.contains(me));
        if new.stage == Stage::Syncing && old_member {
            self.clone().start_stream(new.version);
        }
        if cleanup && new.stage == Stage::Stable && t.current.contains(me) {
            // Before answering: the driver's last step waits for it.
            self.cleanup(new.version).await;
        }
        Ok(t.state.clone())
    }

    /// New home sets: forget the trees and the exchanges' records, build
    /// the trees again.
    fn rebuild_trees(self: &Arc<Self>, t: &Topology) {
        let Some(m) = self.sh.store.merkle() else {
            return;
        };
        m.reset(crate::shared::home_fn(t));
        self.rounds.ae.stats.synced.lock().clear();
        self.rounds.spawn_tree_build(false);
    }

    /// Stream this node's keys for change `version`, unless it is already
    /// streaming or has finished.
    fn start_stream(self: Arc<Self>, version: u64) {
        {
            let st = self.state.stream.lock();
            if st.version == version && st.done {
                return;
            }
        }
        if self.state.streaming.swap(true, Ordering::AcqRel) {
            return;
        }
        *self.state.stream.lock() = StreamStats {
            version,
            ..Default::default()
        };
        tokio::spawn(async move {
            let r = self.stream(version).await;
            {
                let mut st = self.state.stream.lock();
                match r {
                    Ok(()) => st.done = true,
                    Err(e) => {
                        tracing::warn!(error = %e, "streaming keys for the new layout failed");
                        st.error = Some(e);
                    }
                }
            }
            self.state.streaming.store(false, Ordering::Release);
        });
    }

    async fn stream(self: &Arc<Self>, version: u64) -> Result<(), String> {
        let t = self.sh.topo();
        if t.state.version != version {
            return Err("the layout moved on".into());
        }
        let mut budget = crate::antientropy::Budget::new(self.sh.cfg.anti_entropy.rate);
        let mut batches: HashMap<usize, (Vec<(Bytes, Record)>, usize)> = HashMap::new();
        let mut from = Some(Bytes::new());
        while let Some(at) = from.take() {
            let (page, next) = self.page(at).await?;
            from = next;
            let mut scanned = 0;
            let (mut keys, mut copies) = (0, 0);
            for (k, rec) in page {
                scanned += 1;
                let (old, gain) = t.gainers(&k);
                if gain.is_empty() || !old.contains(&self.sh.me) {
                    continue;
                }
                if old[0] == self.sh.me {
                    keys += 1;
                    copies += gain.len() as u64;
                }
                for g in gain {
                    let b = batches.entry(g).or_default();
                    b.1 += k.len() + rec.encoded_len();
                    b.0.push((k.clone(), rec.clone()));
                    if b.0.len() >= PUSH_RECORDS || b.1 >= PUSH_BYTES {
                        let (entries, bytes) = std::mem::take(b);
                        self.stream_push(&t, g, entries, bytes, &mut budget).await?;
                    }
                }
            }
            let mut st = self.state.stream.lock();
            st.scanned += scanned;
            st.keys += keys;
            st.copies += copies;
        }
        for (g, (entries, bytes)) in batches {
            if !entries.is_empty() {
                self.stream_push(&t, g, entries, bytes, &mut budget).await?;
            }
        }
        Ok(())
    }

    /// One push to a gainer, tried again while it does not answer.
    async fn stream_push(
        &self,
        t: &Topology,
        g: usize,
        entries: Vec<(Bytes, Record)>,
        bytes: usize,
        budget: &mut crate::antientropy::Budget,
    ) -> Result<(), String> {
        budget.spend(bytes as u64).await;
        let peer = t.peers[g].clone().ok_or("a gainer without a connection")?;
        let n = entries.len() as u64;
        let req = Request::Push { entries };
        let end = Instant::now() + PATIENCE;
        loop {
            if self.sh.closed.load(Ordering::Acquire) {
                return Err("closing".into());
            }
            let last = match peer.call(req.clone(), LAYOUT_CALL).await {
                Ok(Response::Pushed { applied }) => {
                    let mut st = self.state.stream.lock();
                    st.records += n;
                    st.applied += u64::from(applied);
                    st.bytes += bytes as u64;
                    return Ok(());
                }
                Ok(_) => return Err(format!("{}: unexpected answer to a push", peer.url)),
                Err(e) => e.to_string(),
            };
            if Instant::now() >= end {
                return Err(format!("{}: {last}", peer.url));
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// A page of this node's records from `at` on, read off the runtime.
    async fn page(self: &Arc<Self>, at: Bytes) -> Result<crate::store::Page, String> {
        let s = self.clone();
        self.sh
            .blocking(move || s.sh.store.page(&at, PAGE))
            .await
            .ok_or("scanning the store failed")?
            .map_err(|e| e.to_string())
    }

    /// Drop the records of keys this node does not replicate under
    /// layout `version` (once every node has adopted it).
    async fn cleanup(self: &Arc<Self>, version: u64) {
        let t = self.sh.topo();
        if t.state.version != version || t.state.stage != Stage::Stable {
            return;
        }
        let rf = t.replication();
        let mut from = Some(Bytes::new());
        let mut removed = 0u64;
        while let Some(at) = from.take() {
            let page = match self.page(at).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(error = %e, "cleanup after the layout change stopped");
                    return;
                }
            };
            from = page.1;
            let mut set = tokio::task::JoinSet::new();
            for (k, rec) in page.0 {
                if t.current.replicas(&k, rf).contains(&self.sh.me) {
                    continue;
                }
                let s = self.clone();
                set.spawn(async move { s.sh.store.purge(k, rec.version).await });
            }
            while let Some(r) = set.join_next().await {
                if let Ok(Ok(crate::store::Outcome::Applied)) = r {
                    removed += 1;
                }
            }
        }
        self.state.stream.lock().removed += removed;
        tracing::info!(removed, version, "keys this node no longer holds dropped");
    }

    /// Answer a peer's layout message.
    pub(crate) async fn answer_layout(
        self: Arc<Self>,
        req: Option<(LayoutState, bool)>,
    ) -> Response {
        let r = match req {
            Some((state, cleanup)) => self.clone().adopt(state, cleanup).await,
            None => Ok(self.sh.topo().state.clone()),
        };
        match r {
            Ok(state) => Response::Layout {
                state,
                stream: self.state.stream.lock().clone(),
            },
            Err(message) => Response::Error {
                transient: false,
                read_only: false,
                message,
            },
        }
    }
}
