//! `strata sim`: a discrete-event model of a request pipeline (clients,
//! network hops, admission permits, workers, a store or a WAL's group
//! commit) run in virtual time, deterministic for a seed. It reproduces the
//! seed report's system and prints the seed's own views next to what the
//! seed lacked (utilisation, queues, Little's law, the stage that saturates
//! first and the capacity in numbers); it sweeps any parameter; and it
//! builds a model of a live Strata node from the node's `/metrics`.
//!
//! Its command line is `cli` (`SimArgs`, `run`, `run_scenario`); the
//! work lives in the other modules: the event loop (`des`) over virtual time
//! (`timer`, `units`), seeded randomness and distributions (`rng`,
//! `dist`); a scenario file (`scenario`) built into a model of one node
//! (`model`) or of a cluster (`cluster`); what a run shows (`analysis`,
//! `report`, `cluster_report`), a parameter swept (`sweep`), a
//! prediction of the breaking point (`predict`); and a model calibrated
//! from a live node's or cluster's metrics (`calibrate`,
//! `cluster_calibrate`, and what a write's value size costs:
//! `value_calibrate`). The crate stands alone: it must not
//! depend on any other Strata crate but the contracts (`strata-api`: the
//! metric names it reads and their text format).

pub mod analysis;
pub mod calibrate;
pub mod cli;
pub mod cluster;
pub mod cluster_calibrate;
pub mod cluster_report;
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
pub mod value_calibrate;

pub use analysis::{analyse, simulate, Analysis};
pub use calibrate::{scenario_from_metrics, CalibrateOptions, CalibrationError};
pub use cli::{
    cluster_from_args, overrides, run, run_scenario, scenario_from_args, FetchMetrics, SimArgs,
    SimError, REPORT_METRICS_END, REPORT_METRICS_START,
};
pub use model::{Run, Sim};
pub use scenario::Scenario;
pub use units::Dur;
