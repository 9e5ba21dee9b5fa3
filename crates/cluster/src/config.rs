//! A cluster's settings: members, replication, the secret, timeouts and
//! each subsystem's own configuration (anti-entropy's and the reaper's
//! here; hints' and transport's beside their code), as the node builds
//! them from its options. Owns the defaults; must not read files or the environment.

use std::path::PathBuf;
use std::time::Duration;

use crate::auth::Secret;
use crate::hints::HintsConfig;
use crate::hlc::WallClock;
use crate::transport::TransportConfig;

#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// Every member's advertised URL, this node's included. Empty: a
    /// cluster of one.
    pub members: Vec<String>,
    /// This node's entry in `members`.
    pub advertise: String,
    /// Replicas per key; default `min(3, members)`.
    pub replication: Option<usize>,
    /// Required when there is more than one member.
    pub secret: Option<Secret>,
    /// Time a coordinator waits for `ack` answers before it gives up
    /// (`ClusterError::NotEnoughReplicas`).
    pub timeout: Duration,
    pub hints: HintsConfig,
    pub transport: TransportConfig,
    /// Writes waiting for the local applier at most.
    pub apply_capacity: usize,
    /// Test only: shift this node's clock.
    pub clock_offset_ms: i64,
    /// How far ahead of our own clock a peer's timestamp is followed.
    pub max_clock_ahead_ms: u64,
    /// Where this node keeps `layout.json` (its data directory); `None`:
    /// nowhere (tests, the simulation).
    pub layout_dir: Option<PathBuf>,
    /// Start outside any layout and join through this member (`strata
    /// cluster join`); ignored once a layout is saved.
    pub seed: Option<String>,
    /// Test only, deliberately wrong: stamp writes with the bare wall clock
    /// and ignore newer versions held by replicas (last write wins on wall
    /// clocks, as the stores Jepsen broke). Exists to prove the
    /// consistency checker catches it.
    pub unsafe_wall_clock: bool,
    /// Learn a key's newest version from `ack` replicas before stamping a
    /// write past it (ABD), where `2·ack > from`, instead of stamping from
    /// the clock alone and stamping again when a replica holds something
    /// newer: no write is ever stamped twice, so many writers per key stay
    /// linearizable; one round trip more per write. On by default.
    pub versions_from_quorum: bool,
    /// Where hints live (`DATA/hints`).
    pub hints_dir: PathBuf,
    /// How durable the hint store's writes are (the node's own
    /// durability: a hint is kept as durably as the write it stands for).
    /// The hint store's other engine settings are the cluster's
    /// (`hints::engine_options`).
    pub hints_durability: strata_engine::Durability,
    /// When tombstones may be dropped.
    pub reaper: ReaperConfig,
    /// When and how fast replicas compare their Merkle trees.
    pub anti_entropy: AntiEntropyConfig,
    /// Bytes of table blocks the background scrub checks a second (0:
    /// none).
    pub scrub_rate: u64,
    /// The wall clock behind versions and hint ages (default: the
    /// system's). A deterministic simulation passes its simulated time.
    pub wall_clock: WallClock,
    /// Simulation only: apply writes, keep hints and read them back on the
    /// calling task instead of the applier thread, the hint writer thread
    /// and tokio's blocking pool (one write per engine commit, no group
    /// commit). Under a deterministic single-threaded runtime (the turmoil
    /// simulation) a node's work is then a function of its inputs; in
    /// production it would block the runtime on every fsync.
    #[doc(hidden)]
    pub inline_io: bool,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            members: Vec::new(),
            advertise: "http://127.0.0.1:8080".into(),
            replication: None,
            secret: None,
            timeout: Duration::from_millis(1000),
            hints: HintsConfig::default(),
            transport: TransportConfig::default(),
            apply_capacity: 1024,
            layout_dir: None,
            seed: None,
            clock_offset_ms: 0,
            max_clock_ahead_ms: 60_000,
            unsafe_wall_clock: false,
            versions_from_quorum: true,
            hints_dir: PathBuf::from("strata-data/hints"),
            hints_durability: strata_engine::Durability::Sync,
            reaper: ReaperConfig::default(),
            anti_entropy: AntiEntropyConfig::default(),
            scrub_rate: 8 << 20,
            wall_clock: WallClock::system(),
            inline_io: false,
        }
    }
}

/// Anti-entropy's rounds: how often, how fast, what it leaves out.
#[derive(Clone, Copy, Debug)]
pub struct AntiEntropyConfig {
    /// Time between scheduled rounds; zero: only on demand.
    pub interval: Duration,
    /// Bytes of records moved a second, at most (pulled and pushed).
    pub rate: u64,
    /// Records younger than this are left out of an exchange.
    pub settle: Duration,
}

impl Default for AntiEntropyConfig {
    fn default() -> Self {
        AntiEntropyConfig {
            interval: Duration::from_secs(600),
            rate: 16 << 20,
            settle: Duration::from_secs(5),
        }
    }
}

/// The reaper's passes over tombstones.
#[derive(Clone, Copy, Debug)]
pub struct ReaperConfig {
    /// Time since a delete before its tombstone may be dropped. Must
    /// exceed the hints' maximum age.
    pub grace: Duration,
    /// Time between passes over this node's store.
    pub interval: Duration,
    /// Tombstones examined per pass at most (the next pass goes on).
    pub max_per_pass: usize,
    /// Keys checked with the other members at once.
    pub concurrency: usize,
}

impl Default for ReaperConfig {
    fn default() -> Self {
        ReaperConfig {
            // Two hours: twice the hints' default maximum age (1 h), so
            // that no delivered hint can be older than a dropped
            // tombstone, with room for a slow restart.
            grace: Duration::from_secs(2 * 3600),
            interval: Duration::from_secs(60),
            max_per_pass: 10_000,
            concurrency: 16,
        }
    }
}
