//! Where keys live now: every node holds a `Topology`, the roster of
//! every member this process has known (indices never change, so an
//! index taken under one topology stays valid: failure detectors and
//! connections included) and the live layouts over it, one or, during a
//! change, two. Requests pin the topology they started under; a node
//! adopting the next stage of a change waits for requests pinned to the
//! one before to finish, so when every node has adopted a stage nothing
//! still runs under the stage before. Owns placement under the live
//! layouts and the pins; must not decide when a layout changes
//! (`rebalance`) or talk to other nodes.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::layout::{LayoutState, Stage};
use crate::membership::{Detector, Member};
use crate::transport::Peer;
use strata_api::placement::Placement;

/// One layout over the roster: member indices and their placement.
pub struct Layout {
    pub version: u64,
    pub members: Vec<usize>,
    placement: Placement,
}

impl Layout {
    fn new(version: u64, members: Vec<usize>, roster: &[Member]) -> Layout {
        let ids = members.iter().map(|&m| roster[m].id).collect();
        Layout {
            version,
            members,
            placement: Placement::new(ids),
        }
    }

    /// The first `n` members of `key`'s preference list (fewer if the
    /// layout is smaller), as roster indices.
    pub fn replicas(&self, key: &[u8], n: usize) -> Vec<usize> {
        if self.members.is_empty() {
            return Vec::new();
        }
        self.placement
            .replicas(key, n.min(self.members.len()))
            .into_iter()
            .map(|i| self.members[i])
            .collect()
    }

    pub fn contains(&self, m: usize) -> bool {
        self.members.contains(&m)
    }

    pub fn len(&self) -> usize {
        self.members.len()
    }

    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }
}

/// Everything placement needs, swapped whole when the layout changes.
pub struct Topology {
    /// Every member this process has known, this node included.
    pub members: Vec<Member>,
    pub detectors: Vec<Arc<Detector>>,
    /// `None` at this node's own index.
    pub peers: Vec<Option<Arc<Peer>>>,
    pub state: LayoutState,
    pub current: Layout,
    pub previous: Option<Layout>,
    /// Requests running under this topology.
    inflight: AtomicUsize,
}

/// A request pinned to a topology (released on drop).
pub struct Pinned(Arc<Topology>);

impl std::ops::Deref for Pinned {
    type Target = Topology;
    fn deref(&self) -> &Topology {
        &self.0
    }
}

impl Clone for Pinned {
    /// Background work a request leaves behind (its replicas' answers
    /// still on the way) stays pinned too.
    fn clone(&self) -> Pinned {
        self.0.pin()
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        self.0.inflight.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Topology {
    /// The topology for `state` over a roster (which must hold every
    /// member `state` names).
    pub fn new(
        members: Vec<Member>,
        detectors: Vec<Arc<Detector>>,
        peers: Vec<Option<Arc<Peer>>>,
        state: LayoutState,
    ) -> Topology {
        let index = |urls: &[String]| -> Vec<usize> {
            urls.iter()
                .map(|u| {
                    members
                        .iter()
                        .position(|m| m.url == *u)
                        .expect("the roster holds every member of the layout")
                })
                .collect()
        };
        let current = Layout::new(state.version, index(&state.members), &members);
        let previous = state
            .previous
            .as_ref()
            .map(|p| Layout::new(state.version.saturating_sub(1), index(p), &members));
        Topology {
            members,
            detectors,
            peers,
            state,
            current,
            previous,
            inflight: AtomicUsize::new(0),
        }
    }

    pub fn pin(self: &Arc<Self>) -> Pinned {
        self.inflight.fetch_add(1, Ordering::AcqRel);
        Pinned(self.clone())
    }

    /// Wait until no request pinned to this topology runs (at most
    /// `limit`); false if some still do.
    pub async fn drained(&self, limit: Duration) -> bool {
        let end = tokio::time::Instant::now() + limit;
        while self.inflight.load(Ordering::Acquire) > 0 {
            if tokio::time::Instant::now() >= end {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }

    pub fn replication(&self) -> usize {
        self.state.replication
    }

    /// The replica sets a write must reach `ack` of each: the key's
    /// first `from` members under every live layout.
    pub fn write_sets(&self, key: &[u8], from: usize) -> Vec<Vec<usize>> {
        let mut sets = vec![self.current.replicas(key, from)];
        if let Some(p) = &self.previous {
            let old = p.replicas(key, from);
            if old != sets[0] {
                sets.push(old);
            }
        }
        sets
    }

    /// The replicas a read asks: the previous layout's until the new one
    /// is synced.
    pub fn read_set(&self, key: &[u8], from: usize) -> Vec<usize> {
        match (&self.previous, self.state.stage) {
            (Some(p), Stage::Moving | Stage::Syncing) => p.replicas(key, from),
            _ => self.current.replicas(key, from),
        }
    }

    /// The largest `from` every live layout can serve.
    pub fn max_from(&self) -> usize {
        let n = self.current.len();
        self.previous.as_ref().map_or(n, |p| n.min(p.len()))
    }

    /// The members that gain `key` in this change (empty when stable).
    pub fn gainers(&self, key: &[u8]) -> (Vec<usize>, Vec<usize>) {
        let Some(p) = &self.previous else {
            return (Vec::new(), Vec::new());
        };
        let rf = self.replication();
        let old = p.replicas(key, rf);
        let new = self.current.replicas(key, rf);
        let gain = new.iter().copied().filter(|m| !old.contains(m)).collect();
        (old, gain)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roster(n: usize) -> Vec<Member> {
        (0..n)
            .map(|i| {
                let url = format!("http://127.0.0.1:{}", 7001 + i);
                Member {
                    id: strata_api::placement::member_id(&url),
                    url,
                    is_self: i == 0,
                }
            })
            .collect()
    }

    fn topo(n: usize, state: LayoutState) -> Topology {
        Topology::new(
            roster(n),
            (0..n).map(|_| Default::default()).collect(),
            (0..n).map(|_| None).collect(),
            state,
        )
    }

    fn urls(r: std::ops::Range<usize>) -> Vec<String> {
        r.map(|i| format!("http://127.0.0.1:{}", 7001 + i))
            .collect()
    }

    #[test]
    fn a_join_moves_about_a_quarter_of_the_replicas_and_only_to_the_new_member() {
        let t = topo(
            4,
            LayoutState {
                version: 2,
                replication: 3,
                members: urls(0..4),
                previous: Some(urls(0..3)),
                stage: Stage::Syncing,
            },
        );
        let (mut moved, n) = (0, 20_000);
        for k in 0..n as u32 {
            let key = k.to_be_bytes();
            let (old, gain) = t.gainers(&key);
            assert_eq!(old.len(), 3);
            assert!(gain.iter().all(|&g| g == 3), "only the new member gains");
            moved += gain.len();
            // A write reaches both layouts; a read the old one.
            let sets = t.write_sets(&key, 3);
            assert_eq!(sets.len(), if gain.is_empty() { 1 } else { 2 });
            assert_eq!(t.read_set(&key, 3), old);
        }
        // Ideal: rf/N of the replicas = 3/4 of the keys gain one copy.
        let share = moved as f64 / n as f64;
        assert!((share - 0.75).abs() < 0.02, "{share}");
    }
}
