//! `strata worker`: a long-running load generator a controller (`strata
//! sweep --workers`, `strata soak --workers`) reaches over HTTP, in the
//! manner of Locust's and Gatling's workers. Each run the controller asks
//! for is its share of one trial (`load::segment`): the worker sends it
//! with the same driver as `strata load`, starting at the instant the
//! controller named, and answers with everything it measured, histograms
//! and all (`load::driver::wire`), for the controller to merge exactly.
//! One run at a time; bodies bounded; its own bearer token
//! (`--worker-token-file`, `--worker-token`, `STRATA_WORKER_TOKEN`) always
//! required, loopback included, and checked before a request is read: a
//! worker sends load anywhere at any rate with its own credentials for
//! the node (the global `--token`, never the same as its own), so only a
//! controller holding its token may order it. It reads no file a request
//! names: a workload file's contents come in the request, or the file
//! lies under the directory it was started with (`--workloads DIR`).
//! Owns the worker's protocol, both sides; must not judge a run (the
//! controller's sweep does) nor know the node's internals.
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
    /// worker's own, from its environment). A `target.workload` that is
    /// not a built-in names a file: its contents are `workload_toml`, or
    /// it lies under the worker's `--workloads`.
    pub target: TargetArgs,
    /// The workload file's contents, when `target.workload` names one
    /// (what a controller sends, so that workers need no copy of it).
    #[serde(default)]
    pub workload_toml: Option<String>,
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

/// The worker's token as `--worker-token-file` (which wins) or
/// `--worker-token` give it, trimmed; `None` when neither does. Both
/// sides read it so: the worker, and the controller that must show it.
fn given_token(
    token: &Option<String>,
    file: &Option<std::path::PathBuf>,
) -> Result<Option<String>, String> {
    Ok(match (token, file) {
        (_, Some(f)) => Some(
            std::fs::read_to_string(f)
                .map_err(|e| format!("--worker-token-file {}: {e}", f.display()))?
                .trim()
                .to_string(),
        ),
        (Some(t), None) => Some(t.trim().to_string()),
        (None, None) => None,
    })
}

/// Whether a token given equals the worker's, by their SHA-256 digests
/// (`want_digest` is the worker's, `strata_api::access::token_digest`)
/// compared with Strata's one constant-time comparison
/// (`strata_api::access::same`): digests all have one length, so the time
/// depends neither on where the tokens differ nor on their lengths.
fn same_token(given: &str, want_digest: &str) -> bool {
    let given = strata_api::access::token_digest(given);
    strata_api::access::same(given.as_bytes(), want_digest.as_bytes())
}
