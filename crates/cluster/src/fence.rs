//! Fencing a member that was removed while it was away. A member that is
//! down is taken out of the layout through another (`remove_member`); the
//! change skips it, so its `layout.json` still names it a member. Started
//! again with its old data, or back from a partition, it would coordinate
//! under a layout the others left behind: acknowledge writes on replicas
//! that no longer hold the key, answer reads from stale data, and push old
//! records (whose tombstones may already be gone elsewhere) into the
//! cluster.
//!
//! So a member asks the others for their layout before it serves anything
//! (at most `FIRST_CHECK` after its start; a node whose peers are all
//! silent serves after that, having nobody to learn from) and again every
//! `INTERVAL`. A member holding a newer layout without this node means it
//! was removed. From then on it refuses every client request
//! (`ClusterError::Removed`, with the reason; the node turns it into an
//! answer that sends clients to another member), sends no hints, runs no
//! anti-entropy and pushes nothing. The way back is an empty data
//! directory and a join.
//!
//! A member that left itself (`leave`) adopted the new layout and knows it
//! is out: it goes on serving as a proxy for the members until stopped, and
//! is not fenced. Owns the check and the fenced state; must not change the
//! layout (`rebalance` does).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::error::{ClusterError, Result};
use crate::layout::Stage;
use crate::shared::Shared;
use crate::wire::Request;

/// How long client requests wait for the first answer after a start.
pub(crate) const FIRST_CHECK: Duration = Duration::from_secs(3);
/// Between two checks while running.
pub(crate) const INTERVAL: Duration = Duration::from_secs(2);
/// One peer's answer to a layout question.
const ASK_TIMEOUT: Duration = Duration::from_secs(1);

/// The fence: whether this node may serve, and the check that decides it.
pub(crate) struct Fence {
    sh: Arc<Shared>,
    /// The first check is done (some peer answered, or `FIRST_CHECK` went
    /// by).
    checked: AtomicBool,
    /// Woken when `checked` turns true.
    ready: tokio::sync::Notify,
    /// Why this node is fenced, once it is.
    removed: parking_lot::Mutex<Option<String>>,
}

impl Fence {
    pub(crate) fn new(sh: Arc<Shared>) -> Fence {
        let f = Fence {
            checked: AtomicBool::new(false),
            ready: tokio::sync::Notify::new(),
            removed: parking_lot::Mutex::new(None),
            sh,
        };
        if f.sh.ctx.is_none() {
            // No peers, now or ever: nobody to ask, nothing to fence.
            f.checked();
        }
        f
    }

    /// The first check is done.
    fn checked(&self) {
        self.checked.store(true, Ordering::Release);
        self.ready.notify_waiters();
    }

    /// `Ok` when this node may serve client requests.
    pub(crate) fn check(&self) -> Result<()> {
        if let Some(why) = self.removed.lock().clone() {
            return Err(ClusterError::Removed(why));
        }
        if !self.checked.load(Ordering::Acquire) {
            return Err(ClusterError::Busy(
                "asking the other members for their layout before serving".into(),
            ));
        }
        Ok(())
    }

    /// Wait until the first check is done (at most `FIRST_CHECK` after
    /// the start), so that a request in the node's first moments waits
    /// rather than being refused.
    pub(crate) async fn ready(&self) {
        loop {
            let woken = self.ready.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.checked.load(Ordering::Acquire) {
                return;
            }
            woken.await;
        }
    }

    /// Why this node is fenced, if it is.
    pub(crate) fn removed(&self) -> Option<String> {
        self.removed.lock().clone()
    }

    /// Check at once, then every `INTERVAL`, until closed or fenced.
    pub(crate) async fn run(self: Arc<Self>) {
        let first = tokio::time::timeout(FIRST_CHECK, self.check_removed()).await;
        if first.is_err() {
            tracing::warn!("no member answered about the layout in {FIRST_CHECK:?}: serving");
        }
        self.checked();
        loop {
            if self.sh.closed.load(Ordering::Acquire) || self.removed().is_some() {
                return;
            }
            tokio::time::sleep(INTERVAL).await;
            self.check_removed().await;
        }
    }

    /// Ask the other members of this node's layout for theirs (side by
    /// side); fence this node if one holds a newer layout without it.
    async fn check_removed(self: &Arc<Self>) {
        let t = self.sh.topo();
        let mine = t.state.clone();
        let me = self.sh.cfg.advertise.clone();
        if mine.version == 0 || mine.stage != Stage::Stable || !mine.members.contains(&me) {
            // Joining, in the middle of a change, or already out by its
            // own leave: nothing to fence.
            return;
        }
        let mut asks = tokio::task::JoinSet::new();
        for u in mine.members.iter().filter(|u| **u != me) {
            let (s, u) = (self.clone(), u.clone());
            asks.spawn(async move {
                let r = tokio::time::timeout(ASK_TIMEOUT, s.sh.layout_call(&u, Request::LayoutGet))
                    .await;
                (u, r)
            });
        }
        while let Some(done) = asks.join_next().await {
            let Ok((url, Ok(Ok((theirs, _))))) = done else {
                continue;
            };
            if theirs.version > mine.version && !theirs.all_members().contains(&me) {
                let why = format!(
                    "this node was removed from the cluster while away: {url} holds layout version {} without it (this node's is {}); its data is stale. Stop it, empty its data directory and join again (strata cluster join)",
                    theirs.version, mine.version
                );
                tracing::error!("{why}");
                *self.removed.lock() = Some(why);
                return;
            }
        }
    }
}
