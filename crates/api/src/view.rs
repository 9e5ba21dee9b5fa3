//! The cluster as one node sees it, the head of `GET /v0/cluster`'s JSON:
//! the node, the replication factor, every member with its state, and the
//! layout (who holds keys now, and before a change in progress). The node
//! writes it, clients read it to learn the members and route keys; the
//! rest of that answer (ranges, streams, a change's progress) is for
//! operators (`operate::ClusterView`). Owns the shape; must not fetch it.

use serde::{Deserialize, Serialize};

/// The head of `GET /v0/cluster`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ClusterHead {
    /// The answering node's advertised URL.
    pub node: String,
    pub replication: usize,
    pub members: Vec<Member>,
    pub layout: Layout,
}

/// One member as the answering node sees it (fields a reader may do
/// without default when absent).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Member {
    pub url: String,
    /// Its id (`placement::member_id` of its URL), 16 hex digits.
    #[serde(default)]
    pub id: String,
    /// Whether it is the answering node.
    #[serde(rename = "self", default)]
    pub is_self: bool,
    /// `up`, `suspect` or `down`.
    pub state: String,
    /// How long ago it was last heard from, ms (`None`: never).
    pub last_heard_ms: Option<u64>,
    /// Open connections to it.
    #[serde(default)]
    pub connections: usize,
    /// Hints held for it.
    #[serde(default)]
    pub hints: Hints,
}

/// Writes held for a member until it comes back.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(default)]
pub struct Hints {
    pub count: u64,
    pub bytes: u64,
    pub written: u64,
    pub delivered: u64,
    pub dropped: u64,
}

/// Which members hold keys: the layout's members (normalized URLs, the
/// order of their ids' placement), and while a change is under way the
/// previous layout's, which reads still use until the change is synced.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Layout {
    /// 0: the node is in no layout yet (it waits to join).
    pub version: u64,
    /// `stable`, `moving`, `syncing` or `reading-new`.
    pub stage: String,
    pub replication: usize,
    pub members: Vec<String>,
    pub previous: Option<Vec<String>>,
}

impl Layout {
    /// The members reads go to now: the previous layout's while keys are
    /// moving or syncing, else the current one's.
    pub fn read_members(&self) -> &[String] {
        match (&self.previous, self.stage.as_str()) {
            (Some(p), "moving" | "syncing") => p,
            _ => &self.members,
        }
    }
}
