//! What the cluster's callers pass and observe: how many replicas a request
//! goes to and must answer (`Replication`), the kinds of replica
//! operations (`OpKind`) an `Observer` is told of, and the coordinator's
//! counters (`Stats`). Owns those small types; must not act.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// How many replicas a request goes to (`from`) and how many must answer
/// (`ack`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Replication {
    pub ack: usize,
    pub from: usize,
}

/// Kinds of replica operations, for observers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OpKind {
    Write,
    Read,
    /// A write's first phase: the newest version a replica holds.
    Version,
    Repair,
    Hint,
}

impl OpKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            OpKind::Write => "write",
            OpKind::Read => "read",
            OpKind::Version => "version",
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

/// Counters of the coordinator's work.
#[derive(Debug, Default)]
pub struct Stats {
    pub not_enough_replicas: AtomicU64,
    pub read_repairs: AtomicU64,
    pub superseded_retries: AtomicU64,
    /// Writes stamped past a version newer than this node's clock that
    /// their first phase (versions from a quorum) found.
    pub stamped_past_newer: AtomicU64,
    /// Named writes whose first phase found an earlier attempt applied:
    /// finished at that attempt's version instead of applied again.
    pub repeated_writes: AtomicU64,
}
