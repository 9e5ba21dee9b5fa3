//! The JSON bodies of the operator's endpoints (docs/api.md, "Extensions"),
//! typed once: the node serializes these, `strata-ctl` and the lab
//! deserialize them, and `crates/strata/tests/contracts.rs` holds a real
//! node's answers to them field by field. `GET /v0/cluster` in full
//! (`ClusterView`: the head clients route by, then ranges, this node's
//! stream and a change's progress), the answers of `POST
//! /v0/cluster/join` and `/leave` (`Started`), `POST /v0/cluster/repair`
//! (`Repaired`), `POST /v0/backup` and `GET /v0/backup/ID` (`BackupFiles`),
//! and `/debug/clock` (`Clock`). What an operator's tool can do without
//! defaults to absent (`#[serde(default)]`), so a reader tolerates a node
//! that leaves it out; the contract test checks that a node leaves out
//! nothing. Owns the shapes; must not fetch or serve them.

use serde::{Deserialize, Serialize};

use crate::view::{ClusterHead, Layout};

/// `GET /v0/cluster`, all of it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ClusterView {
    #[serde(flatten)]
    pub head: ClusterHead,
    /// The ranges this node holds a replica of.
    #[serde(default)]
    pub ranges: Vec<RangeView>,
    /// What this node streamed in the last layout change.
    #[serde(default)]
    pub stream: Stream,
    /// The change this node drives, if any.
    #[serde(default)]
    pub change: Option<Change>,
}

impl ClusterView {
    /// Each member's state as this node sees it, `self` for itself.
    pub fn states(&self) -> Vec<String> {
        self.head
            .members
            .iter()
            .map(|m| {
                if m.is_self {
                    "self".into()
                } else {
                    m.state.clone()
                }
            })
            .collect()
    }
}

/// One of a node's ranges: the keys whose replicas are exactly `members`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct RangeView {
    /// The replica set's name, 16 hex digits.
    pub set: String,
    pub members: Vec<String>,
    pub keys: u64,
    /// Whether the range's Merkle tree is built.
    #[serde(default)]
    pub tree_ready: bool,
    #[serde(default)]
    pub synced: Vec<Synced>,
}

/// When a range was last in sync with one other replica, and how.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Synced {
    pub peer: String,
    /// `None`: never since this node started.
    pub last_sync_ms_ago: Option<u64>,
    #[serde(default)]
    pub last: Option<Exchange>,
}

/// One anti-entropy exchange of a range with a peer.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Exchange {
    pub set: String,
    pub peer: String,
    pub local_keys: u64,
    pub peer_keys: u64,
    pub roots_equal: bool,
    pub leaves_differing: u64,
    pub keys_compared: u64,
    pub pulled: u64,
    pub pushed: u64,
    pub already_there: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub elapsed_ms: f64,
    pub error: Option<String>,
}

/// What one node streamed in a layout change (`node`: set in a change's
/// list of streams).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Stream {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    pub version: u64,
    pub done: bool,
    pub scanned: u64,
    pub keys: u64,
    pub copies: u64,
    pub records: u64,
    pub applied: u64,
    pub bytes: u64,
    pub removed: u64,
    pub error: Option<String>,
}

/// A layout change as the node driving it follows it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct Change {
    pub target: Layout,
    pub step: String,
    pub elapsed_ms: u64,
    pub done: bool,
    pub error: Option<String>,
    /// Members removed while down (not waited for).
    pub skipped: Vec<String>,
    pub streams: Vec<Stream>,
}

impl Change {
    fn sum(&self, f: impl Fn(&Stream) -> u64) -> u64 {
        self.streams.iter().map(f).sum()
    }
    /// Keys whose replica set changed (each counted once).
    pub fn keys(&self) -> u64 {
        self.sum(|s| s.keys)
    }
    /// Replica copies gained: the ideal amount of data to move.
    pub fn copies(&self) -> u64 {
        self.sum(|s| s.copies)
    }
    pub fn records(&self) -> u64 {
        self.sum(|s| s.records)
    }
    pub fn applied(&self) -> u64 {
        self.sum(|s| s.applied)
    }
    pub fn bytes(&self) -> u64 {
        self.sum(|s| s.bytes)
    }
    pub fn scanned(&self) -> u64 {
        self.sum(|s| s.scanned)
    }
}

/// `202` to `POST /v0/cluster/join` or `/leave`: the change's target.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Started {
    pub node: String,
    pub target: Layout,
}

/// `200` to `POST /v0/cluster/repair`: what each exchange did.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Repaired {
    pub node: String,
    pub exchanges: Vec<Exchange>,
    /// Exchanges that failed.
    pub failed: usize,
}

/// A backup's files: `201` to `POST /v0/backup` (with the node and what
/// the checkpoint did), `200` to `GET /v0/backup/ID`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct BackupFiles {
    pub id: String,
    pub files: Vec<FileEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Tables in the checkpoint, and how many were hard links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linked: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_segments: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_bytes: Option<u64>,
}

/// One file of a backup.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct FileEntry {
    pub name: String,
    pub bytes: u64,
}

/// `/debug/clock`: the wall clock behind versions.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Clock {
    /// Milliseconds since the Unix epoch, as this node's versions read it.
    pub wall_ms: u64,
    /// The test offset added to the system clock.
    pub offset_ms: i64,
    /// The hybrid logical clock's latest timestamp.
    pub hlc: u64,
    /// Whether `--test-clock-hook` lets a POST move the clock.
    pub hook: bool,
}
