//! Where one request's time went inside the cluster layer, for the node to
//! report (each answer's `Server-Timing`): this node's own part of a write
//! (the applier's queue, the engine's stall, the WAL's fsync, the rest of
//! the commit), and the peer whose answer completed the quorum, with the
//! stages that peer reported for its own part. Only the critical path is
//! kept: the stages add up to the time the coordinator waited. Owns the
//! shape of a trace; must not time anything itself or know HTTP.

use std::time::Duration;

/// One replica's own work on a write, as it measured it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LocalTiming {
    /// Waiting for the applier: in its queue, then behind earlier commit
    /// groups (the writers waiting on the WAL).
    pub queued: Duration,
    /// Held back by the engine while flush and compaction caught up.
    pub stall: Duration,
    /// The WAL's fsync of the write's group.
    pub fsync: Duration,
    /// The rest: version checks, the WAL write, memtable inserts.
    pub apply: Duration,
}

impl LocalTiming {
    pub fn total(&self) -> Duration {
        self.queued + self.stall + self.fsync + self.apply
    }
}

/// The peer whose answer completed the quorum.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PeerWait {
    /// Its URL, as the layout names it.
    pub url: String,
    /// How long the coordinator waited for it after its own part was
    /// done (all of the wait when its own part was not needed).
    pub waited: Duration,
    /// Its own stages of a write, as it reported them (none for reads).
    pub own: Option<LocalTiming>,
}

/// The critical path of one request through the cluster layer.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    /// This node's own write, when its answer counted toward `ack`.
    pub local: Option<LocalTiming>,
    /// This node's own read, when it counted.
    pub read: Option<Duration>,
    /// The peer answer the quorum waited for last, if a peer's.
    pub peer: Option<PeerWait>,
}
