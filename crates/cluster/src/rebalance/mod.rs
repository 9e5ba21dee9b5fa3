//! Nodes joining and leaving: a change of layout (`layout`) driven through
//! its stages by the node that was asked (`strata cluster join` is sent to
//! the joining node, `strata cluster leave` to the leaving one), the
//! stream of exactly the keys whose replicas change, and the cleanup of
//! keys a member no longer holds.
//!
//! The driver sends each stage to every member of both layouts and waits
//! until all have adopted it (a node adopts a stage once the requests it
//! coordinated under the stage before have finished), so no two nodes are
//! ever more than one stage apart:
//!
//! 1. `moving`: writes go to both layouts. Once all nodes are there, no
//!    write can be acknowledged by the old layout alone any more.
//! 2. `syncing`: every member of the old layout scans its store and pushes
//!    each key whose replica set gains members to those members (each old
//!    replica sends its copy, so a gainer ends with the newest of any
//!    write quorum; the receiver keeps the newer version). The driver
//!    waits until every old member has finished.
//! 3. `reading-new`: reads go to the new layout; writes still to both, for
//!    nodes still reading the old one.
//! 4. `stable`: the new layout alone. Then each member drops the keys it
//!    no longer replicates and rebuilds its Merkle trees.
//!
//! One change at a time: a node refuses a layout that conflicts with the
//! one it holds. A driver that stops (its node crashed) leaves the change
//! where it was; the same command sent again resumes it. Owns the change's
//! protocol and the stream; must not decide placement (`layout`) or how a
//! record is applied (`store`).
//!
//! Here: the state and the calls peers make; `drive` the change this node
//! drives, `adopt` each member's part (stages adopted, keys streamed,
//! cleanup).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use crate::antientropy::Rounds;
use crate::coordinator::Coordinator;
use crate::layout::{LayoutState, Stage};
use crate::shared::Shared;
use crate::wire::{Request, Response};

/// Records read from the store per step of a scan.
const PAGE: usize = 1024;
/// A push to one gainer carries at most this many records or bytes.
const PUSH_RECORDS: usize = 512;
const PUSH_BYTES: usize = 256 << 10;
/// How long the driver keeps trying a node that does not answer.
const PATIENCE: Duration = Duration::from_secs(60);

pub use crate::layout::StreamStats;

/// A change this node drives.
#[derive(Clone, Debug)]
pub struct ChangeProgress {
    /// The layout the change ends in.
    pub target: LayoutState,
    /// The step under way: a stage, `waiting for the stream`, `cleanup`,
    /// `done`, or `failed`.
    pub step: String,
    pub elapsed: Duration,
    pub done: bool,
    pub error: Option<String>,
    /// What each old member has streamed so far.
    pub streams: Vec<(String, StreamStats)>,
    /// Members removed while down: not sent the change, not waited for
    /// (the other replicas stream their keys).
    pub skipped: Vec<String>,
}

#[derive(Default)]
pub struct RebalanceState {
    pub(crate) stream: parking_lot::Mutex<StreamStats>,
    streaming: AtomicBool,
    pub(crate) change: parking_lot::Mutex<Option<ChangeProgress>>,
    started: parking_lot::Mutex<Option<Instant>>,
}

mod adopt;
mod drive;

/// The rebalance: the change this node drives, the stream of its keys,
/// one layout adopted at a time; new peers watched by the coordinator,
/// trees rebuilt by anti-entropy's schedule.
pub(crate) struct Rebalance {
    sh: Arc<Shared>,
    coord: Arc<Coordinator>,
    rounds: Arc<Rounds>,
    pub(crate) state: RebalanceState,
    /// One layout adopted at a time.
    lock: tokio::sync::Mutex<()>,
}

impl Rebalance {
    pub(crate) fn new(sh: Arc<Shared>, coord: Arc<Coordinator>, rounds: Arc<Rounds>) -> Rebalance {
        Rebalance {
            sh,
            coord,
            rounds,
            state: RebalanceState::default(),
            lock: tokio::sync::Mutex::new(()),
        }
    }

    /// Heartbeats and hint delivery for roster entry `i`.
    pub(crate) fn watch_peer(&self, i: usize) {
        let c = self.coord.clone();
        tokio::spawn(async move { c.heartbeat_loop(i).await });
        let c = self.coord.clone();
        tokio::spawn(async move { c.hint_loop(i).await });
    }

    /// After a restart: go on with this node's part of a change.
    pub(crate) fn resume_layout(self: Arc<Self>) {
        let t = self.sh.topo();
        if t.state.stage == Stage::Syncing
            && t.previous.as_ref().is_some_and(|p| p.contains(self.sh.me))
        {
            self.start_stream(t.state.version);
        }
    }

    /// A member's layout and stream (this node's own without a call).
    pub(crate) async fn layout_of(&self, url: &str) -> Result<(LayoutState, StreamStats), String> {
        if url == self.sh.cfg.advertise {
            return Ok((
                self.sh.topo().state.clone(),
                self.state.stream.lock().clone(),
            ));
        }
        self.sh.layout_call(url, Request::LayoutGet).await
    }

    /// Answer a peer's layout message.
    pub(crate) async fn answer_layout(
        self: Arc<Self>,
        req: Option<(LayoutState, bool)>,
    ) -> Response {
        let r = match req {
            Some((state, cleanup)) => self.clone().adopt(state, cleanup).await,
            None => Ok(self.sh.topo().state.clone()),
        };
        match r {
            Ok(state) => Response::Layout {
                state,
                stream: self.state.stream.lock().clone(),
            },
            Err(message) => Response::Error {
                transient: false,
                read_only: false,
                message,
            },
        }
    }
}
