//! Load: what is sent, when, to which node, and what came back, in the
//! manner of vegeta's pacer, targets and metrics kept apart. `schedule`
//! says when each request is due, `workload` what it does, `timer` waits
//! for it finely, `nodes` picks each connection's node, `driver` runs the
//! generator threads and records every answer against its intended send
//! time, `slowest` keeps the slowest 1 % and where their time went,
//! `preload` writes what a workload must find, `cpu` says where the
//! machine's CPU went. Owns generating and recording load; must not judge
//! it (the experiments do), inject faults (`nemesis`) nor know the node's
//! internals (HTTP only, through `strata_client`).
//!
//! | module | owns |
//! | --- | --- |
//! | `schedule` | intended send times: constant rate or Poisson arrivals |
//! | `workload` | operations, keys and values: built-in workloads and TOML files |
//! | `timer` | waiting finer than tokio's 1 ms wheel |
//! | `nodes` | the node list and each connection's node |
//! | `driver` | generator threads, pacing, recording (`worker`: one operation's requests; `record`: counting and merging seconds; `outcome`: an answer's class) |
//! | `slowest` | each run's slowest 1 % and their `Server-Timing` |
//! | `preload` | YCSB's load phase |
//! | `cpu` | the generator's and the machine's CPU |
//! | `segment` | a generator's share of a run cut over several machines: its slots of the schedule, its new keys |
//! | `search` | which rate a sweep offers next: doubling, bisection, repeats, the breaking point's range |

pub mod cpu;
pub mod driver;
pub mod nodes;
pub mod preload;
pub mod schedule;
pub mod search;
pub mod segment;
pub mod slowest;
pub mod timer;
pub mod workload;
