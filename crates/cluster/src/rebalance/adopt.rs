//! Each member's part in a change: adopting a stage of the layout (one at
//! a time), the trees rebuilt, the stream of exactly the keys whose
//! replicas change pushed to their new holders a page at a time, and the
//! cleanup of keys this member no longer holds. Owns a member's side of a
//! change; must not drive one (that is `drive`).

pub use crate::layout::StreamStats;
use crate::layout::{LayoutState, Stage};
use crate::record::Record;
use crate::shared::new_member;
use crate::shared::LAYOUT_CALL;
use crate::topology::Topology;
use crate::wire::{Request, Response};
use bytes::Bytes;
use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use super::{Rebalance, PAGE, PATIENCE, PUSH_BYTES, PUSH_RECORDS};

impl Rebalance {
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
    pub(super) fn rebuild_trees(self: &Arc<Self>, t: &Topology) {
        let Some(m) = self.sh.store.merkle() else {
            return;
        };
        m.reset(crate::shared::home_fn(t));
        self.rounds.ae.stats.synced.lock().clear();
        self.rounds.spawn_tree_build(false);
    }

    /// Stream this node's keys for change `version`, unless it is already
    /// streaming or has finished.
    pub(super) fn start_stream(self: Arc<Self>, version: u64) {
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

    pub(super) async fn stream(self: &Arc<Self>, version: u64) -> Result<(), String> {
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
    pub(super) async fn stream_push(
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
    pub(super) async fn page(self: &Arc<Self>, at: Bytes) -> Result<crate::store::Page, String> {
        let s = self.clone();
        self.sh
            .blocking(move || s.sh.store.page(&at, PAGE))
            .await
            .ok_or("scanning the store failed")?
            .map_err(|e| e.to_string())
    }

    /// Drop the records of keys this node does not replicate under
    /// layout `version` (once every node has adopted it).
    pub(super) async fn cleanup(self: &Arc<Self>, version: u64) {
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
}
