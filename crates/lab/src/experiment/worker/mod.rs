//! `strata worker`: a long-running load generator a controller (`strata
//! sweep --workers`, `strata soak --workers`) reaches over HTTP, in the
//! manner of Locust's and Gatling's workers. Each run the controller asks
//! for is its share of one trial (`load::segment`): the worker sends it
//! with the same driver as `strata load`, starting at the instant the
//! controller named, and answers with everything it measured, histograms
//! and all (`load::driver::wire`), for the controller to merge exactly.
//! One run at a time; bodies bounded; a bearer token (`--token`,
//! `STRATA_WORKER_TOKEN`) required beyond loopback. Owns the worker's
//! protocol, both sides; must not judge a run (the controller's sweep
//! does) nor know the node's internals.
//!
//! | module | owns |
//! | --- | --- |
//! | `serve` | the worker's HTTP server and one run |
//! | `client` | the controller's side: the workers of a run, a trial split among them and merged |

use serde::{Deserialize, Serialize};

use crate::experiment::target::TargetArgs;
use crate::load::driver::Pace;

pub mod client;
pub mod serve;

pub use client::{WorkerReport, Workers, WorkersArgs};
pub use serve::{main, WorkerArgs};

/// The worker's status: `GET`.
pub const STATUS_ROUTE: &str = "/v0/worker";
/// One run: `POST` a [`RunRequest`], answered with a
/// [`PartWire`](crate::load::driver::wire::PartWire).
pub const RUN_ROUTE: &str = "/v0/worker/run";
/// The largest run request a worker reads.
pub const MAX_REQUEST: usize = 1 << 20;
/// The shortest token a worker takes.
pub const MIN_TOKEN: usize = 16;

/// What the controller asks a worker to send.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunRequest {
    /// The target, the workload and how it is sent, as `strata load`'s
    /// command line would give them (credentials and TLS are the
    /// worker's own, from its environment).
    pub target: TargetArgs,
    /// The whole trial's pace: the worker sends its share of it.
    pub pace: Pace,
    /// Counted seconds, after `target.warmup`.
    pub duration_s: f64,
    pub seed: u64,
    /// This worker's share: index from 0, count.
    pub segment: (u64, u64),
    /// When every worker's first send is due, milliseconds since the epoch.
    pub start_at_ms: u64,
}

/// `GET /v0/worker`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Status {
    pub version: String,
    /// A run is under way (another is refused with 409).
    pub busy: bool,
    /// The cores this worker may run on.
    pub cpus: usize,
}

/// Whether two tokens are equal, in time that does not depend on where
/// they differ.
fn same_token(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}
