//! `strata sim`: a discrete-event model of Strata run in virtual time,
//! deterministic for a seed, in two configurations of one model: one
//! node's request pipeline (clients, network hops, admission permits,
//! workers, a store or a WAL's group commit) and a cluster of such nodes
//! that replicate each request (`ack` of `from`, hops between nodes, a CPU
//! and a WAL per node or shared by one host). It reproduces the seed
//! report's system and prints the seed's own views next to what the seed
//! lacked (utilisation, queues, Little's law, the stage that saturates
//! first and the capacity in numbers); it sweeps any parameter; it asks
//! what-ifs of a cluster; and it builds either configuration from a live
//! node's or cluster's `/metrics`.
//!
//! Its command line is `cli` (`SimArgs`, `run`, `run_scenario`); the
//! work lives in the other modules, in this order: the event loop (`des`)
//! over virtual time (`timer`, `units`), seeded randomness and
//! distributions (`rng`, `dist`); a scenario file (`scenario`: the
//! configuration, `Config`, a node's or a cluster's); the model that runs
//! it (`model`: `node` and `cluster`); what a run shows (`report`, for each
//! configuration), a parameter swept (`sweep`), a prediction of the
//! breaking point (`predict`); and a scenario calibrated from metrics
//! (`calibrate`: a node's, a cluster's, what a write's value size costs).
//! The crate stands alone: it must not depend on any other Strata crate
//! but the contracts (`strata-api`: the metric names it reads and their
//! text format).

pub mod calibrate;
pub mod cli;
pub mod des;
pub mod dist;
pub mod model;
pub mod predict;
pub mod report;
pub mod rng;
pub mod scenario;
pub mod sweep;
pub mod timer;
pub mod units;

pub use calibrate::node::{scenario_from_metrics, CalibrateOptions};
pub use calibrate::CalibrationError;
pub use cli::{
    config_from_args, overrides, run, run_config, run_scenario, FetchMetrics, SimArgs, SimError,
    REPORT_METRICS_END, REPORT_METRICS_START,
};
pub use model::node::{Run, Sim};
pub use report::node::{analyse, simulate, Analysis};
pub use scenario::node::Scenario;
pub use scenario::Config;
pub use units::Dur;
