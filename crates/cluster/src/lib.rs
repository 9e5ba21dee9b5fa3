//! The cluster layer between the node's HTTP API and the engine. The door
//! is `Cluster` (`facade`); behind it, `Parts` (`parts`) holds what the
//! subsystems share (`Shared`, `shared`: the roster, connections, clock,
//! store, hint store, and the calls to a peer) and each subsystem, which
//! owns its state: the coordinator, anti-entropy and its rounds, the
//! reaper, the rebalance and the fence. What callers pass and observe
//! (`ops`), its settings (`config`) and errors (`error`).
//!
//! Behind the door: members and their failure detection (`membership`,
//! `topology`), placement of keys by rendezvous hashing (`placement`,
//! shared with clients from `strata-api`), versions from a hybrid logical
//! clock (`hlc`, `record`), the local replica (`store`), the coordinator
//! of quorum reads and writes with read repair (`coordinator`), hinted
//! handoff (`hints`), tombstones dropped once every replica agrees
//! (`reaper`), anti-entropy by Merkle trees (`merkle`, `antientropy`), the
//! pace of the checksum scrub (`scrub`), layouts and members joining and
//! leaving (`layout`, `rebalance`), a member removed while away refusing
//! to serve (`fence`), merged cluster-wide ranges (`scan`), where each
//! request's time went (`trace`), what this node knows of the cluster
//! (`snapshot`), and internal traffic (`wire`, `transport`, `auth`, with `strength`
//! refusing a secret no generator wrote, or a published one). A node
//! without peers is a cluster of one and takes the same path.
//!
//! Must not know about HTTP: the node hands it upgraded connections and a
//! `Dialer`. Must not decide what the node answers a client (status codes
//! are the node's).

pub mod antientropy;
pub mod auth;
mod config;
mod coordinator;
mod error;
mod facade;
mod fence;
pub mod hints;
pub mod hlc;
pub mod layout;
pub mod membership;
pub mod merkle;
mod ops;
mod parts;
pub use strata_api::placement;
mod reaper;
pub mod rebalance;
pub mod record;
pub mod scan;
mod scrub;
mod shared;
mod snapshot;
pub mod store;
pub mod strength;
pub mod topology;
pub mod trace;
pub mod transport;
pub mod wire;

pub use antientropy::{AntiEntropyConfig, Exchange};
pub use auth::Secret;
pub use config::ClusterConfig;
pub use error::{ClusterError, Result};
pub use facade::Cluster;
pub use hints::{HintsConfig, PeerHints};
pub use hlc::WallClock;
pub use layout::{LayoutState, Stage};
pub use membership::State;
pub use ops::{Observer, OpKind, Replication, Stats};
pub use reaper::{ReaperConfig, ReaperStats};
pub use snapshot::{MemberSnapshot, RangeSnapshot, Snapshot};
pub use store::Outcome;
pub use transport::{BoxStream, DialFuture, Dialer, TransportConfig};

/// A member's id, a hash of its advertised URL (it seeds its placement
/// scores and breaks version ties), and URLs compared without a trailing
/// slash: the placement the clients share (`strata_api::placement`).
pub use strata_api::placement::{member_id, normalize_url};

#[cfg(test)]
mod tests;
