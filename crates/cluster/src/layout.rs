//! Which members hold which keys, and how that changes: a layout is a
//! numbered list of members (placement is rendezvous hashing over them).
//! A change makes version v+1 and moves through stages in which two
//! layouts are live at once, so no acknowledged write is lost and no read
//! goes back in time while keys move (Garage's lesson from Jepsen):
//!
//! ```text
//! stable(v) → moving(v+1) → syncing(v+1) → reading-new(v+1) → stable(v+1)
//!             writes to both layouts (ack in each)      │
//!             reads from v                 reads from v+1
//!                         old members stream the keys whose replicas change
//! ```
//!
//! Owns the layout as data: its versions, stages and members, its file
//! (`DATA/layout.json`), and what a member reports of a change's stream;
//! must not hold connections or place keys (`topology` does) or move data
//! (`rebalance` does).

use std::path::Path;

use serde::{Deserialize, Serialize};

/// Where a layout change stands on one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Writes go to both layouts; reads to the previous one.
    Moving,
    /// As `Moving`, and the previous layout's members stream the keys
    /// whose replicas change to the members that gain them.
    Syncing,
    /// Writes go to both layouts; reads to the new one.
    ReadingNew,
    /// One layout.
    Stable,
}

impl Stage {
    pub fn as_str(&self) -> &'static str {
        match self {
            Stage::Moving => "moving",
            Stage::Syncing => "syncing",
            Stage::ReadingNew => "reading-new",
            Stage::Stable => "stable",
        }
    }

    pub(crate) fn code(&self) -> u8 {
        *self as u8
    }

    pub(crate) fn from_code(c: u8) -> Option<Stage> {
        [
            Stage::Moving,
            Stage::Syncing,
            Stage::ReadingNew,
            Stage::Stable,
        ]
        .get(c as usize)
        .copied()
    }
}

/// A layout as it is written to `layout.json` and sent between nodes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayoutState {
    /// 0: this node is in no layout yet (it waits to join).
    pub version: u64,
    /// Replicas per key.
    pub replication: usize,
    /// The members' URLs, normalized.
    pub members: Vec<String>,
    /// Version − 1's members while a change is under way.
    pub previous: Option<Vec<String>>,
    pub stage: Stage,
}

impl LayoutState {
    /// The first layout, from `--cluster`.
    pub fn first(members: Vec<String>, replication: usize) -> LayoutState {
        LayoutState {
            version: 1,
            replication,
            members,
            previous: None,
            stage: Stage::Stable,
        }
    }

    /// No layout: a node started to join a cluster.
    pub fn none() -> LayoutState {
        LayoutState {
            version: 0,
            replication: 0,
            members: Vec::new(),
            previous: None,
            stage: Stage::Stable,
        }
    }

    /// Order of progress: a later version, or a later stage of the same.
    pub fn rank(&self) -> (u64, Stage) {
        (self.version, self.stage)
    }

    /// Every URL of the live layouts.
    pub fn all_members(&self) -> Vec<String> {
        let mut all = self.members.clone();
        for u in self.previous.iter().flatten() {
            if !all.contains(u) {
                all.push(u.clone());
            }
        }
        all
    }

    /// The same change (version and members), whatever its stage (at
    /// `stable` the previous members are forgotten).
    pub fn same_change(&self, o: &LayoutState) -> bool {
        self.version == o.version
            && self.members == o.members
            && (self.previous.is_none() || o.previous.is_none() || self.previous == o.previous)
    }

    /// Read `dir/layout.json`, if there is one.
    pub fn load(dir: &Path) -> Result<Option<LayoutState>, String> {
        let p = dir.join(FILE);
        match std::fs::read(&p) {
            Ok(b) => serde_json::from_slice(&b)
                .map(Some)
                .map_err(|e| format!("{}: {e}", p.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("{}: {e}", p.display())),
        }
    }

    /// Write `dir/layout.json` durably (a new file renamed over the old).
    pub fn save(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let b = serde_json::to_vec_pretty(self).expect("a layout serializes");
        strata_engine::write_atomically(dir, FILE, &b).map_err(|e| e.to_string())
    }
}

const FILE: &str = "layout.json";

/// What one member streamed (and dropped) in the last change.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamStats {
    /// The layout version the stream was for (0: none yet).
    pub version: u64,
    pub done: bool,
    /// Records examined.
    pub scanned: u64,
    /// Keys whose replica set gains members, counted by the first old
    /// replica of each (so the cluster's sum counts each key once).
    pub keys: u64,
    /// Replica copies those keys gain (the ideal cost of the change).
    pub copies: u64,
    /// Records this node sent (every old replica sends its copy).
    pub records: u64,
    /// Of those, the ones the gainer stored (newer than what it held).
    pub applied: u64,
    pub bytes: u64,
    /// Records dropped after the change: keys this node no longer holds.
    pub removed: u64,
    pub error: Option<String>,
}
#[cfg(test)]
mod tests {
    use super::*;

    fn urls(r: std::ops::Range<usize>) -> Vec<String> {
        r.map(|i| format!("http://127.0.0.1:{}", 7001 + i))
            .collect()
    }

    #[test]
    fn stages_order_and_round_trip() {
        assert!(Stage::Moving < Stage::Syncing && Stage::ReadingNew < Stage::Stable);
        for s in [
            Stage::Moving,
            Stage::Syncing,
            Stage::ReadingNew,
            Stage::Stable,
        ] {
            assert_eq!(Stage::from_code(s.code()), Some(s));
        }
        let d = tempfile::tempdir().unwrap();
        assert_eq!(LayoutState::load(d.path()).unwrap(), None);
        let s = LayoutState {
            version: 7,
            replication: 3,
            members: urls(0..4),
            previous: Some(urls(1..4)),
            stage: Stage::ReadingNew,
        };
        s.save(d.path()).unwrap();
        assert_eq!(LayoutState::load(d.path()).unwrap(), Some(s));
        std::fs::write(d.path().join(FILE), b"{").unwrap();
        assert!(LayoutState::load(d.path())
            .unwrap_err()
            .contains("layout.json"));
    }
}
