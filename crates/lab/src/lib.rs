//! Strata's lab: load generation that measures what a user would see.
//! `load` runs the driver once (open loop at a constant or Poisson rate,
//! latency from each request's intended send time, or closed-loop
//! clients) against one node or several (`nodes`); `sweep` finds the
//! breaking point; `report` writes what they found. Must not know the
//! node's internals: it speaks HTTP and reads `/metrics` only.
//!
//! | module | owns |
//! | --- | --- |
//! | `load` | `strata load`, its arguments, a trial's report |
//! | `driver` | generator threads, pacing, recording (`worker`: one operation's requests; `record`: counting and merging seconds) (`schedule` says when, `workload` what, `timer` waits finely; `strata_client`'s connections speak HTTP, its sessions route and fail over) |
//! | `slowest` | each run's slowest 1 % and where their time went (the answers' `Server-Timing`) |
//! | `sweep`, `search` | `strata sweep`: its trials; which rate next, repeats, the breaking point's range |
//! | `slo` | objectives and judging a trial |
//! | `cpu` | the generator's and the machine's CPU |
//! | `verdict` | why the target broke, from the readings and the slowest requests |
//! | `nodes` | the node list and each connection's node |
//! | `preload`, `units` | YCSB's load phase; durations and sizes on the command line |
//! | `during`, `check`, `cluster` | faults during a run, the consistency checker, local clusters and their faults (operator commands are `strata-ctl`'s) |
//! | `demo`, `soak`, `calibrate` | `strata demo`, `strata soak`, `strata calibrate` |
//! | `report` | the report's model, renderings and the nodes' `/metrics` sampled during a run |

pub mod calibrate;
pub mod check;
pub mod cluster;
pub mod cpu;
pub mod demo;
pub mod driver;
pub mod during;
pub mod load;
pub mod nodes;
pub mod preload;
pub mod report;
pub mod schedule;
pub mod search;
pub mod slo;
pub mod slowest;
pub mod soak;
pub mod sweep;
pub mod timer;
pub mod units;
pub mod verdict;
pub mod workload;
