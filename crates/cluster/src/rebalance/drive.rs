//! The change this node drives: a member joining (sent to the joining
//! node) or leaving (sent to the leaving one, or to another for a member
//! that is down), each stage sent to every member of both layouts and
//! waited for, the streams waited for, then the cleanup; its progress as
//! `view().change` shows it. Owns the driving; must not stream keys (that
//! is `adopt`).

pub use crate::layout::StreamStats;
use crate::layout::{LayoutState, Stage};
use crate::wire::Request;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use super::{ChangeProgress, Rebalance, PATIENCE};

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
pub(super) fn next(cur: &LayoutState, members: Vec<String>) -> LayoutState {
    LayoutState {
        version: cur.version + 1,
        replication: cur.replication,
        members,
        previous: Some(cur.members.clone()),
        stage: Stage::Stable,
    }
}

/// The same change at its last stage.
pub(super) fn stable(s: &LayoutState) -> LayoutState {
    LayoutState {
        stage: Stage::Stable,
        ..s.clone()
    }
}

/// The change at `stage`; at `stable` the old layout is gone.
pub(super) fn at(s: &LayoutState, stage: Stage) -> LayoutState {
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

impl Rebalance {
    /// Start driving a change to `target` (its stable form), unless one
    /// is already driven here.
    pub(super) fn start_change(
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

    pub(super) fn progress(&self, f: impl FnOnce(&mut ChangeProgress)) {
        let started = *self.state.started.lock();
        if let Some(c) = self.state.change.lock().as_mut() {
            f(c);
            if let Some(s) = started {
                c.elapsed = s.elapsed();
            }
        }
    }

    pub(super) async fn drive(
        self: &Arc<Self>,
        target: &LayoutState,
        skip: &[String],
    ) -> Result<(), String> {
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
    pub(super) async fn push_all(
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
    pub(super) async fn wait_streams(
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
}
