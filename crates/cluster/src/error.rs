//! What can go wrong in the cluster layer, and how each error reads to a
//! peer. The node maps each to its HTTP status (`cluster_error` and
//! `write_error` in `node/src/api/errors.rs`); this module must not know HTTP.

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// `ack`/`from` out of range: the caller's mistake.
    #[error("{0}")]
    BadReplication(String),
    /// Fewer than `ack` replicas answered in time.
    #[error("not enough replicas: got {got} of {need}")]
    NotEnoughReplicas { got: usize, need: usize },
    /// The store refused for now (a write stall): worth retrying later.
    #[error("busy: {0}")]
    Busy(String),
    /// The store is closed (shutting down).
    #[error("store is closed")]
    Closed,
    #[error("storage error: {0}")]
    Storage(strata_engine::Error),
    /// A failure shared by every write of a failed group (already logged).
    #[error("storage error: {0}")]
    Failed(String),
    /// The local store refuses writes (an fsync or a background job
    /// failed: read-only until restarted; or the disk is full). Reads still
    /// work; coordinators send writes to other replicas meanwhile.
    #[error("storage refuses writes: {0}")]
    ReadOnly(String),
    /// This node is in no layout yet (started to join).
    #[error("this node is not a member of a cluster layout yet (strata cluster join)")]
    NotMember,
    /// This node was taken out of the cluster while away and is fenced
    /// (`fence`): the reason and the way back.
    #[error("{0}")]
    Removed(String),
}

impl ClusterError {
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
            ClusterError::ReadOnly(m) => ClusterError::ReadOnly(m.clone()),
            ClusterError::NotMember => ClusterError::NotMember,
            ClusterError::Removed(m) => ClusterError::Removed(m.clone()),
        }
    }
}

impl From<strata_engine::Error> for ClusterError {
    fn from(e: strata_engine::Error) -> Self {
        match e {
            strata_engine::Error::Busy(m) => ClusterError::Busy(m),
            strata_engine::Error::Closed => ClusterError::Closed,
            e @ (strata_engine::Error::SyncFailed { .. }
            | strata_engine::Error::Background(_)
            | strata_engine::Error::NoSpace(_)) => ClusterError::ReadOnly(e.to_string()),
            e => ClusterError::Storage(e),
        }
    }
}

pub type Result<T> = std::result::Result<T, ClusterError>;
