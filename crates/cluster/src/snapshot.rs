//! What one node knows of the cluster at an instant (`Snapshot`), for its
//! operator endpoints and metrics: every member's state and hints, its
//! home sets and their exchanges, the layout and the change in progress.
//! The JSON the node serves from it is typed apart
//! (`strata_api::operate::ClusterView`). Plain data; must not act on the
//! cluster.

use std::time::Duration;

use crate::antientropy::Exchange;
use crate::hints::PeerHints;
use crate::layout::LayoutState;
use crate::membership::State;
use crate::rebalance;

/// One member as this node sees it.
#[derive(Clone, Debug)]
pub struct MemberSnapshot {
    pub url: String,
    pub id: u64,
    pub is_self: bool,
    pub state: State,
    pub last_heard: Option<Duration>,
    pub hints: PeerHints,
    pub connections: usize,
}

#[derive(Clone, Debug)]
pub struct Snapshot {
    pub node: String,
    pub replication: usize,
    pub members: Vec<MemberSnapshot>,
    /// The home sets this node belongs to (anti-entropy's ranges: the
    /// keys whose replicas are exactly these members); empty for a
    /// cluster of one.
    pub ranges: Vec<RangeSnapshot>,
    /// The layout this node holds, and its stage.
    pub layout: LayoutState,
    /// This node's part in the last change: what it streamed.
    pub stream: rebalance::StreamStats,
    /// The change this node drives (`strata cluster join`/`leave` sent
    /// to it), if any.
    pub change: Option<rebalance::ChangeProgress>,
}

/// One home set as this node sees it.
#[derive(Clone, Debug)]
pub struct RangeSnapshot {
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
