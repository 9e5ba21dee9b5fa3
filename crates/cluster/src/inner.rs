//! The state every subsystem of this node's cluster layer shares
//! (`Inner`: the configuration, the roster and layouts, connections, the
//! clock, the local store, hints, each subsystem's state and counters),
//! and the helpers that build a roster entry, check a layout and map keys
//! to their home sets. Owns that state's shape; must not act on it (the
//! subsystems do, each in its own file).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use tokio::time::Instant;

use crate::hints::Hints;
use crate::hlc::Hlc;
use crate::membership::{Detector, Member};
use crate::placement::Placement;
use crate::store::Store;
use crate::topology::Topology;
use crate::transport::{Ctx, Peer};
use crate::*;

pub(crate) struct Inner {
    pub(crate) cfg: ClusterConfig,
    /// This node's index in every topology's roster.
    pub(crate) me: usize,
    pub(crate) my_id: u64,
    /// The roster and the live layouts, swapped whole on a change.
    pub(crate) topo: parking_lot::RwLock<Arc<Topology>>,
    /// What every connection to a peer shares (`None`: no secret, a
    /// cluster of one for good).
    pub(crate) ctx: Option<Arc<Ctx>>,
    pub(crate) hlc: Arc<Hlc>,
    pub(crate) store: Store,
    pub(crate) hints: Option<Arc<Hints>>,
    pub(crate) hint_writer: Option<hints::HintWriter>,
    pub(crate) stats: Stats,
    pub(crate) reaper_stats: ReaperStats,
    pub(crate) anti_entropy: antientropy::AntiEntropyStats,
    /// One anti-entropy round at a time.
    pub(crate) ae_lock: tokio::sync::Mutex<()>,
    /// Layout changes: this node's stream and the change it drives.
    pub(crate) rebalance: rebalance::RebalanceState,
    /// One layout adopted at a time.
    pub(crate) layout_lock: tokio::sync::Mutex<()>,
    /// Whether this node was removed while away.
    pub(crate) fence: fence::FenceState,
    pub(crate) observer: Option<Arc<dyn Observer>>,
    pub(crate) closed: AtomicBool,
}

/// A layout's own rules: distinct members, a replication factor they can
/// hold.
pub(crate) fn check_layout(s: &LayoutState) -> std::result::Result<(), String> {
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
pub(crate) fn new_member(
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
pub(crate) fn home_fn(t: &Topology) -> store::HomeOf {
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
